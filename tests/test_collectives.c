// The collectives of gpt2-mpi (variants/mpi_collectives.c) without a model, under a real mpirun at
// any rank count (tests/test_collectives.py): on buffers of awkward sizes (zero, fewer elements
// than ranks, not divisible by them, larger than the parallel adds' threshold), cut into shards of
// one piece or of two pieces apart in memory, in messages of one element, a few or the collective's
// own size, in one channel or in 2 and 3 run at once by threads of their own, every result must
// equal, bit for bit, the sum in the order mpi_collectives.c documents:
//   ring:   w_{q+1} g_{q+1}[i] + w_{q+2} g_{q+2}[i] + ... + w_q g_q[i]   (ranks mod R)
//           on even channels, w_{q-1} g_{q-1}[i] + w_{q-2} g_{q-2}[i] + ... + w_q g_q[i] on odd ones
//   direct: w_0 g_0[i] + ... + w_{R-1} g_{R-1}[i]
// for element i of shard q, and every all-gather must copy every shard whole. The channels' slices
// must be the shards' elements in order, cut into K nearly equal consecutive parts. Values are not
// small integers, so that a sum in another order gives other bits. Prints a line for each of a rank's
// first failed checks and "collectives: R ranks, N checks, F failed" on rank 0; exits 1 when any
// failed.
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../variants/mpi_collectives.h"

// rank r's value of element i: a float in [-1, 1) with all its mantissa bits in use
static float value(int r, size_t i) {
    unsigned long long x = (unsigned long long)(r + 1) * 0x9E3779B97F4A7C15ull ^ (unsigned long long)i * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

// The documented sum of element i of shard q, on a forward or a backward ring.
static float expected_sum(const float *w, int R, int q, size_t i, int direct, int backward) {
    if (direct) {
        float sum = w[0] * value(0, i);
        for (int r = 1; r < R; r++) sum += w[r] * value(r, i);
        return sum;
    }
    if (R == 1) return w[0] * value(0, i);
    int d = backward ? R - 1 : 1, first = (q + d) % R, second = (q + 2 * d) % R;
    float sum = w[first] * value(first, i) + w[second] * value(second, i);
    for (int s = 3; s <= R; s++) sum = sum + w[(q + s * d) % R] * value((q + s * d) % R, i);
    return sum;
}

typedef struct {
    int rank, ranks, checks, failed;
} Tally;

static void check(Tally *t, int ok, const char *what, size_t n, size_t block, int pieces, size_t at, float got,
                  float want) {
    t->checks++;
    if (ok) return;
    if (t->failed++ >= 20) return; // the first failures say enough
    printf("rank %d: %s, %zu elements, blocks of %zu, %d piece(s) a shard: element %zu is %.9g, not %.9g\n", t->rank,
           what, n, block, pieces, at, got, want);
}

// Shard q: [cut[q], cut[q+1]) (pieces 1), or that range's two halves, the second moved to the
// buffer's second half (pieces 2): element i of the first half of the buffer belongs to the shard
// of i, element n/2 + i to that same shard. owner[i] is the shard of element i.
static int make_partition(Partition *p, int R, size_t n, size_t block, int pieces, int *owner) {
    size_t half = pieces == 2 ? n / 2 : n;
    Span *spans = malloc((size_t)(2 * R + 1) * sizeof(Span)), **of = malloc((size_t)R * sizeof(Span *));
    int *count = malloc((size_t)R * sizeof(int));
    for (int q = 0; q < R; q++) {
        size_t lo = half * (size_t)q / (size_t)R, hi = half * (size_t)(q + 1) / (size_t)R;
        of[q] = &spans[2 * q];
        of[q][0] = (Span){lo, hi, 1};
        count[q] = 1;
        if (pieces == 2) of[q][count[q]++] = (Span){half + lo, q + 1 == R ? n : half + hi, 1};
        for (int k = 0; k < count[q]; k++)
            for (size_t i = of[q][k].lo; i < of[q][k].hi; i++) owner[i] = q;
    }
    int status = partition_of(p, R, of, count, block);
    free(spans);
    free(of);
    free(count);
    return status;
}

static void *allocated(void *p) {
    if (!p) {
        fprintf(stderr, "test_collectives: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

// The channels' partition of `whole`: shard q's elements in whole's order must be channel 0's part
// of it, then channel 1's, ..., channel c's holding n (c + 1) / K - n c / K of them, in blocks of
// at most `block` (RING_BLOCKS: at least one). Marks each element's channel in channel_of.
static void check_slices(Tally *t, const Partition *whole, const Partition *p, int R, int K, size_t block,
                         int *channel_of) {
    for (int q = 0; q < R; q++) {
        size_t n = partition_shard_elements(whole, R, q), seen = 0;
        int b_whole = whole->first[q];
        size_t in_block = 0; // elements of whole's block b_whole already matched
        for (int c = 0; c < K; c++) {
            size_t mine = 0;
            for (int b = p->first[c * R + q]; b < p->first[c * R + q + 1]; b++) {
                int fits = p->blocks[b].count >= 1 && (block == RING_BLOCKS || (size_t)p->blocks[b].count <= block);
                check(t, fits, "channel block size", n, block, 0, p->blocks[b].at, (float)p->blocks[b].count, 0.0f);
                for (int k = 0; k < p->blocks[b].count; k++, mine++, seen++) {
                    size_t at = p->blocks[b].at + (size_t)k;
                    channel_of[at] = c;
                    while (b_whole < whole->first[q + 1] && in_block == (size_t)whole->blocks[b_whole].count) {
                        b_whole++;
                        in_block = 0;
                    }
                    int same = b_whole < whole->first[q + 1] && whole->blocks[b_whole].at + in_block++ == at;
                    check(t, same, "channel slice order", n, block, 0, at, (float)c, (float)q);
                }
            }
            size_t want = n * (size_t)(c + 1) / (size_t)K - n * (size_t)c / (size_t)K;
            check(t, mine == want, "channel slice size", n, block, 0, (size_t)c, (float)mine, (float)want);
        }
        check(t, seen == n, "channel slices cover the shard", n, block, 0, (size_t)q, (float)seen, (float)n);
    }
}

// The reduce-scatter of every rank's values, then the all-gather of the reduced shards, on K
// channels at once (K threads; one: the caller's) over partition p; channel_of[i]: element i's.
static void run_case(Tally *t, Collective *c, const Partition *p, const int *owner, const int *channel_of,
                     size_t n, size_t block, int pieces, Where where, int K) {
    int R = c->ranks;
    Collective *channels = allocated(channels_create(c, K, BLOCK_FLOATS));
    for (int k = 0; k < K; k++)
        channels[k].requests = allocated(malloc(collective_requests(partition_blocks(p, R), R) * sizeof(MPI_Request)));
    float *buf = allocated(malloc((n ? n : 1) * sizeof(float)));
    for (size_t i = 0; i < n; i++) buf[i] = value(c->rank, i);
#pragma omp parallel for num_threads(K) schedule(static, 1)
    for (int k = 0; k < K; k++) reduce_scatter(&channels[k], buf, p, where);
    char name[64];
    snprintf(name, sizeof(name), "%s reduce-scatter on %d channel(s)", c->direct ? "direct" : "ring", K);
    for (size_t i = 0; i < n; i++)
        if (owner[i] == c->rank) {
            float want = expected_sum(c->weights, R, owner[i], i, c->direct, channel_of[i] % 2);
            check(t, memcmp(&buf[i], &want, sizeof(float)) == 0, name, n, block, pieces, i, buf[i], want);
        }
    // every shard but this rank's to NaN: the all-gather must overwrite each
    for (size_t i = 0; i < n; i++)
        if (owner[i] != c->rank) buf[i] = NAN;
#pragma omp parallel for num_threads(K) schedule(static, 1)
    for (int k = 0; k < K; k++) all_gather(&channels[k], buf, p, where);
    snprintf(name, sizeof(name), "%s all-gather on %d channel(s)", c->direct ? "direct" : "ring", K);
    for (size_t i = 0; i < n; i++) {
        float want = expected_sum(c->weights, R, owner[i], i, c->direct, channel_of[i] % 2);
        check(t, memcmp(&buf[i], &want, sizeof(float)) == 0, name, n, block, pieces, i, buf[i], want);
    }
    channels_free(channels);
    free(buf);
}

// One case: in one channel, shards cut into blocks of `block`; in K > 1, whole shards cut into
// the channels' slices, in blocks of `block` (RING_BLOCKS: the ring's).
static void all_reduce_case(Tally *t, Collective *c, size_t n, size_t block, int pieces, Where where, int K) {
    int R = c->ranks, *owner = allocated(malloc((n ? n : 1) * sizeof(int)));
    int *channel_of = allocated(calloc(n ? n : 1, sizeof(int)));
    Partition whole, p;
    if (make_partition(&whole, R, n, K > 1 ? BLOCK_FLOATS : block, pieces, owner) != 0) allocated(NULL);
    if (K > 1) {
        if (partition_channels(&p, &whole, R, K, block) != 0) allocated(NULL);
        check_slices(t, &whole, &p, R, K, block, channel_of);
        run_case(t, c, &p, owner, channel_of, n, block, pieces, where, K);
        partition_free(&p);
    } else {
        run_case(t, c, &whole, owner, channel_of, n, block, pieces, where, 1);
    }
    partition_free(&whole);
    free(owner);
    free(channel_of);
}

static void losses_case(Tally *t, Collective *c) {
    c->requests = malloc(collective_requests(0, c->ranks) * sizeof(MPI_Request));
    float loss = value(c->rank, 7), want = c->weights[0] * value(0, 7);
    for (int r = 1; r < c->ranks; r++) want += c->weights[r] * value(r, 7);
    reduce_losses(c, &loss);
    check(t, memcmp(&loss, &want, sizeof(float)) == 0, "losses", (size_t)c->ranks, 1, 1, 0, loss, want);
    free(c->requests);
}

int main(int argc, char **argv) {
    int level;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
    if (level < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "test_collectives: the MPI library does not give MPI_THREAD_MULTIPLE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    Tally t = {0, 1, 0, 0};
    MPI_Comm_rank(MPI_COMM_WORLD, &t.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t.ranks);
    int R = t.ranks;
    // uneven weights, as B = 2R + 1 sequences split over R ranks gives them
    float *weights = malloc((size_t)R * sizeof(float));
    for (int r = 0; r < R; r++) {
        int b0 = (2 * R + 1) * r / R, b1 = (2 * R + 1) * (r + 1) / R;
        weights[r] = (float)(b1 - b0) / (float)(2 * R + 1);
    }
    Collective c = {.rank = t.rank, .ranks = R, .weights = weights, .channels = 1, .comm = MPI_COMM_WORLD};
    const size_t sizes[] = {0, 1, 2, (size_t)R - 1, (size_t)R, (size_t)R + 1, 13, 1000, 3 * 65536 + 7};
    const Where wheres[] = {MAIN_THREAD_WAITS, {2, 0}, {1, 1}};
    for (c.direct = 0; c.direct <= 1; c.direct++) {
        losses_case(&t, &c);
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
            for (int pieces = 1; pieces <= 2; pieces++)
                for (int w = 0; w < 3; w++) {
                    size_t n = sizes[s], widest = (n + (size_t)R - 1) / (size_t)R;
                    size_t own = reduce_block_floats(widest, c.direct), small = n > 1000 ? 4099 : 3;
                    all_reduce_case(&t, &c, n, own, pieces, wheres[w], 1);
                    all_reduce_case(&t, &c, n, small, pieces, wheres[w], 1);
                    if (n <= 13) all_reduce_case(&t, &c, n, 1, pieces, wheres[w], 1);
                }
        // channels: each thread adds alone, polling (--overlap on) or not (off)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
            for (int pieces = 1; pieces <= 2; pieces++)
                for (int K = 2; K <= 3; K++)
                    for (int poll = 0; poll <= 1; poll++) {
                        size_t n = sizes[s], small = n > 1000 ? 4099 : 3;
                        all_reduce_case(&t, &c, n, c.direct ? BLOCK_FLOATS : RING_BLOCKS, pieces, (Where){1, poll}, K);
                        all_reduce_case(&t, &c, n, small, pieces, (Where){1, poll}, K);
                    }
    }
    int totals[2] = {t.checks, t.failed}, all[2];
    MPI_Reduce(totals, all, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (t.rank == 0) printf("collectives: %d ranks, %d checks, %d failed\n", R, all[0], all[1]);
    fflush(stdout);
    MPI_Bcast(all, 2, MPI_INT, 0, MPI_COMM_WORLD);
    free(weights);
    MPI_Finalize();
    return all[1] ? 1 : 0;
}
