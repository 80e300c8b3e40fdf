// The collectives of gpt2-mpi over MPI point-to-point messages (--collective):
//   ring    (default) the ranks form a ring, r sending to r+1 and receiving
//           from r-1. Reduce-scatter: R-1 steps; at step s rank r sends its
//           partial sum of shard r-s-1 (mod R) to r+1 and receives that of
//           shard r-s-2 from r-1, adding its own share; after the last step
//           it holds shard r whole. All-gather: R-1 steps; at step s rank r
//           sends shard r-s to r+1 and receives shard r-s-1. Every rank sends
//           (R-1)/R of the buffer and every link carries the same at the same
//           time: the bandwidth bound of Thakur, Rabenseifner and Gropp (2005).
//           MPICH takes the ring for long all-gathers and a pairwise exchange
//           for long reduce-scatters (the same bytes); the ring serves both
//           here because its partial sums travel in one fixed order around it,
//           with two blocks of scratch, where a pairwise exchange would hold
//           every rank's block at once to sum them in a fixed order.
//   direct  every rank sends each shard straight to its owner, which receives
//           rank 0's block, then rank 1's, ... : the same bytes, but the
//           receivers pull from one sender at a time, so the time grows with R
//           on a network (kept to show the difference).
//
// Determinism: every reduction is driven by point-to-point messages in a
// fixed order, never by a library collective whose algorithm (and so whose
// summation order) the library picks. With w_r the weight of rank r, element
// i of shard q is
//   ring:   w_{q+1} g_{q+1}[i] + w_{q+2} g_{q+2}[i] + ... + w_q g_q[i]
//           summed left to right from rank q+1 around the ring (mod R) to q
//   direct: w_0 g_0[i] + w_1 g_1[i] + ... + w_{R-1} g_{R-1}[i]
//           summed left to right in rank order on rank q
// (each partial sum travels as a float, so where it is added does not
// matter). The order depends on R, the collective and the partition's shards
// only, never on the threads that add; at R <= 2 the two collectives give the
// same bits (a sum of two terms does not depend on their order). The
// all-gathers only copy. The losses: every rank sends its own to every other,
// which sum them weighted in rank order.
//
// Channels (--comm-threads K): every collective runs as K channels at once,
// each on a thread and a communicator of its own; channel c moves slice c of
// every shard (partition_channels). One thread adding, and the ring's bytes
// going one way round, bound a collective by one core's adds and one
// direction of each link; with channels the adds spread over K cores and the
// odd channels go round the ring backward (r sends to r-1 and receives from
// r+1), so that both directions of every link carry half the bytes, as NCCL's
// and oneCCL's rings do. On a backward channel element i of shard q is
//   ring backward: w_{q-1} g_{q-1}[i] + w_{q-2} g_{q-2}[i] + ... + w_q g_q[i]
//           summed left to right from rank q-1 down around the ring to q
// and on a forward one as above; direct sums in rank order on every channel.
// So the order depends on R, K and the collective only: at R <= 2 every K
// gives the same bits, and direct gives the same bits for every K at any R.
#define _GNU_SOURCE
#include "mpi_collectives.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "simulation.h"

// the ring's reduce-scatter cuts each shard into at least this many messages,
// so that receiving, adding and forwarding overlap (a shard of one message
// would be received whole, then added, then sent: three times the time)
#define RING_DEPTH 8
// blocks of at least this many floats are added by the rank's threads
#define PARALLEL_ADD ((size_t)1 << 16)
// a polling wait's pause between two tests of its messages: from the first,
// doubled after each test that finds them unfinished up to the last, so that
// a thread waiting for a slower rank wakes (and takes its core from the
// compute threads) a thousand times a second, not fifty thousand, while
// messages that are under way are seen within 20 us
#define POLL_FIRST_NS 20000
#define POLL_LAST_NS 1000000

void partition_free(Partition *p) {
    free(p->blocks);
    free(p->first);
    p->blocks = NULL;
    p->first = NULL;
    p->channels = 0;
}

int partition_of(Partition *p, int R, Span *const *pieces, const int *n, size_t block) {
    p->channels = 1;
    p->first = malloc((size_t)(R + 1) * sizeof(int));
    if (!p->first) return -1;
    long count = 0;
    for (int pass = 0; pass < 2; pass++) {
        count = 0;
        for (int q = 0; q < R; q++) {
            p->first[q] = (int)count;
            for (int i = 0; i < n[q];) {
                size_t lo = pieces[q][i].lo, hi = pieces[q][i].hi;
                for (i++; i < n[q] && pieces[q][i].lo == hi; i++) hi = pieces[q][i].hi;
                for (size_t at = lo; at < hi; at += block, count++)
                    if (pass) p->blocks[count] = (Block){at, (int)(hi - at < block ? hi - at : block)};
            }
        }
        if (!pass && !(p->blocks = malloc((size_t)(count > 0 ? count : 1) * sizeof(Block)))) return -1;
    }
    p->first[R] = (int)count;
    return 0;
}

int partition_of_ranges(Partition *p, int R, const size_t *cut, size_t block) {
    Span *range = malloc((size_t)R * sizeof(Span)), **pieces = malloc((size_t)R * sizeof(Span *));
    int *n = malloc((size_t)R * sizeof(int)), status = -1;
    if (range && pieces && n) {
        for (int q = 0; q < R; q++) {
            range[q] = (Span){cut[q], cut[q + 1], 1};
            pieces[q] = &range[q];
            n[q] = 1;
        }
        status = partition_of(p, R, pieces, n, block);
    }
    free(range);
    free(pieces);
    free(n);
    return status;
}

int partition_blocks(const Partition *p, int R) { return p->first ? p->first[p->channels * R] : 0; }

// The elements of channel ch's part of shard q.
static size_t slice_elements(const Partition *p, int R, int ch, int q) {
    size_t n = 0;
    for (int b = p->first[ch * R + q]; b < p->first[ch * R + q + 1]; b++) n += (size_t)p->blocks[b].count;
    return n;
}

size_t partition_shard_elements(const Partition *p, int R, int q) {
    size_t n = 0;
    for (int ch = 0; ch < p->channels; ch++) n += slice_elements(p, R, ch, q);
    return n;
}

// Elements [v0, v1) of whole's shard q (of one channel), counted one after the
// other in its block order, as pieces of memory (out: at most the shard's
// blocks). Returns how many.
static int slice_pieces(const Partition *whole, int q, size_t v0, size_t v1, Span *out) {
    int n = 0;
    size_t offset = 0;
    for (int b = whole->first[q]; b < whole->first[q + 1]; offset += (size_t)whole->blocks[b++].count) {
        size_t at = whole->blocks[b].at, end = offset + (size_t)whole->blocks[b].count;
        size_t lo = v0 > offset ? v0 : offset, hi = v1 < end ? v1 : end;
        if (lo < hi) out[n++] = (Span){at + (lo - offset), at + (hi - offset), 1};
    }
    return n;
}

// Channel c's partition of whole's slices c, in parts[c].
static int cut_slices(Partition *parts, const Partition *whole, int R, int K, size_t block) {
    int most = partition_blocks(whole, R), *n = malloc((size_t)R * sizeof(int)), status = 0;
    Span *pieces = malloc((size_t)(most > 0 ? most : 1) * sizeof(Span)), **of = malloc((size_t)R * sizeof(Span *));
    if (!n || !pieces || !of) status = -1;
    for (int c = 0; status == 0 && c < K; c++) {
        size_t widest = 0;
        for (int q = 0; q < R; q++) {
            size_t all = partition_shard_elements(whole, R, q), v0 = all * c / K, v1 = all * (c + 1) / K;
            of[q] = pieces + whole->first[q];
            n[q] = slice_pieces(whole, q, v0, v1, of[q]);
            if (v1 - v0 > widest) widest = v1 - v0;
        }
        status = partition_of(&parts[c], R, of, n, block == RING_BLOCKS ? reduce_block_floats(widest, 0) : block);
    }
    free(n);
    free(pieces);
    free(of);
    return status;
}

int partition_channels(Partition *p, const Partition *whole, int R, int K, size_t block) {
    Partition *parts = calloc((size_t)K, sizeof(Partition));
    *p = (Partition){NULL, malloc((size_t)(K * R + 1) * sizeof(int)), K};
    int status = parts && p->first ? cut_slices(parts, whole, R, K, block) : -1, total = 0;
    for (int c = 0; status == 0 && c < K; c++) total += parts[c].first[R];
    if (status == 0 && !(p->blocks = malloc((size_t)(total > 0 ? total : 1) * sizeof(Block)))) status = -1;
    // the channels' blocks one after the other
    for (int c = 0, at = 0; status == 0 && c < K; at += parts[c++].first[R]) {
        memcpy(p->blocks + at, parts[c].blocks, (size_t)parts[c].first[R] * sizeof(Block));
        for (int q = 0; q < R; q++) p->first[c * R + q] = at + parts[c].first[q];
    }
    if (status == 0) p->first[K * R] = total;
    for (int c = 0; parts && c < K; c++) partition_free(&parts[c]);
    free(parts);
    return status;
}

int collective_partitions(const Collective *c, const Partition *shards, Partition *reduce, Partition *gather) {
    int R = c->ranks, K = c->channels;
    if (reduce && partition_channels(reduce, shards, R, K, c->direct ? BLOCK_FLOATS : RING_BLOCKS) != 0) return -1;
    return gather ? partition_channels(gather, shards, R, K, BLOCK_FLOATS) : 0;
}

Collective *channels_create(const Collective *base, int K, size_t scratch_floats) {
    Collective *channels = malloc((size_t)K * sizeof(Collective));
    if (!channels) return NULL;
    int ok = 1;
    for (int c = 0; c < K; c++) {
        channels[c] = *base;
        channels[c].channel = c;
        channels[c].channels = K;
        channels[c].comm = MPI_COMM_WORLD;
        if (K > 1) MPI_Comm_dup(MPI_COMM_WORLD, &channels[c].comm);
        channels[c].acc = scratch_malloc(scratch_floats * sizeof(float));
        channels[c].recv = scratch_malloc(scratch_floats * sizeof(float));
        channels[c].requests = NULL;
        ok = ok && channels[c].acc && channels[c].recv;
    }
    if (ok) return channels;
    channels_free(channels);
    return NULL;
}

void channels_free(Collective *channels) {
    for (int c = 0; channels && c < channels[0].channels; c++) {
        if (channels[c].comm != MPI_COMM_WORLD) MPI_Comm_free(&channels[c].comm);
        scratch_free(channels[c].acc);
        scratch_free(channels[c].recv);
        free(channels[c].requests);
    }
    free(channels);
}

// The rank (or shard) `steps` places from `me` round channel `channel`'s ring:
// r + 1 follows r on even channels, r - 1 on odd ones.
static int around(int channel, int R, int me, int steps) {
    int s = channel % 2 ? -steps : steps;
    return ((me + s) % R + R) % R;
}

// Where c's channel's part of each shard of p starts: its shard q is blocks [first[q], first[q + 1]).
static const int *channel_first(const Collective *c, const Partition *p) { return p->first + c->channel * c->ranks; }

size_t reduce_block_floats(size_t widest, int direct) {
    if (direct) return BLOCK_FLOATS;
    size_t block = (widest + RING_DEPTH - 1) / RING_DEPTH;
    return block > BLOCK_FLOATS ? BLOCK_FLOATS : block < 1 ? 1 : block;
}

// a send and a receive of every block, and the losses'
size_t collective_requests(int most_blocks, int ranks) { return 2 * (size_t)most_blocks + 4 * (size_t)ranks + 8; }

static void wait_all(int n, MPI_Request *requests, Where where) {
    // simulated (simulation.h), a wait takes no core from the compute's actor, and SMPI would charge
    // every MPI_Testall a fixed delay of its own (smpi/test): no polling there, neither engine models it
    if (!where.poll || SIMULATED) {
        MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
        return;
    }
    for (long ns = POLL_FIRST_NS;; ns = 2 * ns < POLL_LAST_NS ? 2 * ns : POLL_LAST_NS) {
        int done;
        MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
        if (done) return;
        struct timespec pause = {0, ns};
        nanosleep(&pause, NULL);
    }
}

void reduce_losses(const Collective *c, float *loss) {
    int R = c->ranks, me = c->rank, n_req = 0;
    float losses[R > 0 ? R : 1];
    losses[me] = *loss;
    for (int q = 0; q < R; q++) {
        if (q == me) continue;
        MPI_Isend(loss, 1, MPI_FLOAT, q, TAG_LOSS, c->comm, &c->requests[n_req++]);
        MPI_Irecv(&losses[q], 1, MPI_FLOAT, q, TAG_LOSS, c->comm, &c->requests[n_req++]);
    }
    MPI_Waitall(n_req, c->requests, MPI_STATUSES_IGNORE);
    float sum = 0.0f;
    for (int q = 0; q < R; q++) sum += c->weights[q] * losses[q];
    *loss = sum;
}

// Posts sends of shard q's blocks of buf to rank `to`, into c->requests from *n_req.
static void send_shard(const Collective *c, const float *buf, const Partition *p, int q, int to, int tag,
                       int *n_req) {
    const int *first = channel_first(c, p);
    for (int b = first[q]; b < first[q + 1]; b++)
        MPI_Isend(buf + p->blocks[b].at, p->blocks[b].count, MPI_FLOAT, to, tag, c->comm,
                  &c->requests[(*n_req)++]);
}

// acc = w g (the first rank's block), else acc += w g
static void direct_add(float *acc, const float *g, size_t count, float w, int first) {
    if (SIMULATED) {
        simulate_bytes(12.0 * (double)count); // acc += w * g: g read, acc read and written
    } else if (first) {
        for (size_t i = 0; i < count; i++) acc[i] = w * g[i];
    } else {
        for (size_t i = 0; i < count; i++) acc[i] += w * g[i];
    }
}

// direct: blocks of shard q go from every rank to rank q, which sums them in rank order.
static void reduce_scatter_direct(const Collective *c, float *buf, const Partition *p, Where where) {
    int R = c->ranks, me = c->rank, n_req = 0;
    const int *first = channel_first(c, p);
    for (int q = 0; q < R; q++)
        if (q != me) send_shard(c, buf, p, q, q, TAG_REDUCE, &n_req);
    // messages from one rank with one tag arrive in the order sent: block after block
    for (int b = first[me]; b < first[me + 1]; b++) {
        size_t at = p->blocks[b].at, count = (size_t)p->blocks[b].count;
        for (int q = 0; q < R; q++) {
            const float *g = buf + at;
            if (q != me) {
                if (where.poll) {
                    MPI_Request request;
                    MPI_Irecv(c->recv, (int)count, MPI_FLOAT, q, TAG_REDUCE, c->comm, &request);
                    wait_all(1, &request, where);
                } else {
                    MPI_Recv(c->recv, (int)count, MPI_FLOAT, q, TAG_REDUCE, c->comm, MPI_STATUS_IGNORE);
                }
                g = c->recv;
            }
            direct_add(c->acc, g, count, c->weights[q], q == 0);
        }
        // this shard's blocks are not among the ones being sent
        if (SIMULATED) simulate_bytes(8.0 * (double)count);
        else memcpy(buf + at, c->acc, count * sizeof(float));
    }
    wait_all(n_req, c->requests, where);
}

// g = w_prev in + w_me g (the first step: `in` holds the previous rank's raw
// values), else g = in + w_me g. Elementwise: the threads change no sum's order.
static void ring_add(float *g, const float *in, size_t count, float w_prev, float w_me, int first, int threads) {
    if (SIMULATED) {
        simulate_bytes(12.0 * (double)count); // g = in + w g: in read, g read and written
    } else if (threads > 1 && count >= PARALLEL_ADD) {
        if (first) {
#pragma omp parallel for schedule(static) num_threads(threads)
            for (size_t i = 0; i < count; i++) g[i] = w_prev * in[i] + w_me * g[i];
        } else {
#pragma omp parallel for schedule(static) num_threads(threads)
            for (size_t i = 0; i < count; i++) g[i] = in[i] + w_me * g[i];
        }
    } else if (first) {
        for (size_t i = 0; i < count; i++) g[i] = w_prev * in[i] + w_me * g[i];
    } else {
        for (size_t i = 0; i < count; i++) g[i] = in[i] + w_me * g[i];
    }
}

// ring (forward; a backward channel mirrors it, next and previous swapped):
// step s receives the partial sum of shard me-s-2 from the previous
// rank block by block (the next block's receive posted before this one is
// added: two buffers) and adds this rank's weighted values in place; that
// shard is the one step s+1 forwards, so each block goes on to the next rank
// as soon as it is added: the steps pipeline, and the link never waits for a
// whole shard's adds. Step 0 sends the raw values of shard me-1 (the receiver
// weighs them). A block being sent is never written again.
static void reduce_scatter_ring(const Collective *c, float *buf, const Partition *p, Where where) {
    int R = c->ranks, me = c->rank, n_req = 0;
    int next = around(c->channel, R, me, 1), prev = around(c->channel, R, me, -1);
    float w_me = c->weights[me], w_prev = c->weights[prev];
    const int *first = channel_first(c, p);
    if (R == 1) {
        for (int b = first[0]; b < first[1]; b++)
            for (size_t i = p->blocks[b].at; i < p->blocks[b].at + (size_t)p->blocks[b].count; i++)
                buf[i] = w_me * buf[i];
        return;
    }
    send_shard(c, buf, p, prev, next, TAG_REDUCE, &n_req);
    float *scratch[2] = {c->recv, c->acc};
    for (int s = 0; s < R - 1; s++) {
        int recv_q = around(c->channel, R, me, -s - 2), b0 = first[recv_q], b1 = first[recv_q + 1];
        MPI_Request pending[2];
        if (b0 < b1)
            MPI_Irecv(scratch[0], p->blocks[b0].count, MPI_FLOAT, prev, TAG_REDUCE, c->comm, &pending[0]);
        int x = 0;
        for (int b = b0; b < b1; b++, x ^= 1) {
            size_t count = (size_t)p->blocks[b].count;
            if (b + 1 < b1)
                MPI_Irecv(scratch[x ^ 1], p->blocks[b + 1].count, MPI_FLOAT, prev, TAG_REDUCE, c->comm,
                          &pending[x ^ 1]);
            wait_all(1, &pending[x], where);
            float *g = buf + p->blocks[b].at;
            ring_add(g, scratch[x], count, w_prev, w_me, s == 0, where.threads);
            if (s + 1 < R - 1)
                MPI_Isend(g, (int)count, MPI_FLOAT, next, TAG_REDUCE, c->comm, &c->requests[n_req++]);
        }
    }
    wait_all(n_req, c->requests, where);
}

void reduce_scatter(const Collective *c, float *buf, const Partition *p, Where where) {
    if (c->direct) reduce_scatter_direct(c, buf, p, where);
    else reduce_scatter_ring(c, buf, p, where);
}

// direct: every shard to every rank at once; ring: R-1 steps around the ring,
// each receiving straight into buf the shard the next step forwards.
void all_gather(const Collective *c, float *buf, const Partition *p, Where where) {
    int R = c->ranks, me = c->rank;
    const int *first = channel_first(c, p);
    if (c->direct) {
        int n_req = 0;
        for (int q = 0; q < R; q++) {
            if (q == me) continue;
            send_shard(c, buf, p, me, q, TAG_GATHER, &n_req);
            for (int b = first[q]; b < first[q + 1]; b++)
                MPI_Irecv(buf + p->blocks[b].at, p->blocks[b].count, MPI_FLOAT, q, TAG_GATHER, c->comm,
                          &c->requests[n_req++]);
        }
        wait_all(n_req, c->requests, where);
        return;
    }
    int next = around(c->channel, R, me, 1), prev = around(c->channel, R, me, -1);
    for (int s = 0; s < R - 1; s++) {
        int send_q = around(c->channel, R, me, -s), recv_q = around(c->channel, R, me, -s - 1), n_req = 0;
        for (int b = first[recv_q]; b < first[recv_q + 1]; b++)
            MPI_Irecv(buf + p->blocks[b].at, p->blocks[b].count, MPI_FLOAT, prev, TAG_GATHER, c->comm,
                      &c->requests[n_req++]);
        send_shard(c, buf, p, send_q, next, TAG_GATHER, &n_req);
        wait_all(n_req, c->requests, where);
    }
}

// reduce-scatter: every shard but its own; all-gather: on each channel every
// shard but the next rank's round its ring (ring) or its own to every other
// rank (direct)
size_t reduce_scatter_sent(const Collective *c, const Partition *p) {
    size_t all = 0;
    for (int q = 0; q < c->ranks; q++) all += partition_shard_elements(p, c->ranks, q);
    return c->ranks == 1 ? 0 : all - partition_shard_elements(p, c->ranks, c->rank);
}

size_t all_gather_sent(const Collective *c, const Partition *p) {
    int R = c->ranks;
    if (R == 1) return 0;
    if (c->direct) return partition_shard_elements(p, R, c->rank) * (size_t)(R - 1);
    size_t sent = 0;
    for (int ch = 0; ch < p->channels; ch++)
        for (int q = 0; q < R; q++)
            if (q != around(ch, R, c->rank, 1)) sent += slice_elements(p, R, ch, q);
    return sent;
}
