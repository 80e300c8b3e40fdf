// mpi: data-parallel training over MPI processes (ranks). Each rank trains on
// its share of the global batch (B sequences split over R ranks, unevenly when
// R does not divide B) with one of the node-level executors inside it
// (--executor forkjoin|tasks|taskiter, --threads per rank); the gradients are
// then averaged across ranks and the parameters updated, in one of two ways
// (--update):
//   replicated  reduce-scatter the gradients, all-gather them, and every rank
//               runs AdamW on every parameter with its own full m and v
//   sharded     ZeRO stage 1: reduce-scatter the gradients, each rank runs
//               AdamW on its shard of the parameters and keeps only that
//               shard's m and v, then all-gather the parameters
//
// The step description is the core's. With --overlap off (the default) the
// chosen node executor runs it in two parts: its forward and backward
// operations, and its AdamW operations (copies cut to this rank's shard when
// sharded); between them the main thread reduces the whole gradient buffer,
// and two OP_COMM operations appended to the description name the
// communication in traces. The description itself stays the same on every
// rank, so that one rank can write every rank's trace records against it.
//
// --overlap on: the gradients are reduced in buckets, one per transformer
// block and one for wte, wpe and the final LayerNorm (llm.c keeps each
// tensor's layers contiguous, so a block's bucket is 12 pieces of memory),
// last block first, each as soon as the backward pass has written it for the
// last time (wte's after the encoder's backward pass: the language-model head
// writes it first). The node executor runs one description: the forward and
// backward operations with each bucket's "start" operation (OP_COMM) right
// after the last operation that writes its gradients, then per bucket a
// "wait" operation and the bucket's AdamW operations. op_run calls the
// description's comm callback for them: start hands the bucket to a
// communication thread of this executor, wait returns once the thread has
// reduced it. Their accesses make the graph executors order them: start
// writes the bucket's gradients (after every chunk that writes them), wait
// writes them too (before every AdamW chunk that reads them: an update chunk
// starts once its own bucket is reduced), and all starts write one token
// buffer, which the waits read, so the buckets are handed over in one order on
// every rank, whatever the executor, and no wait (which blocks its thread) runs
// before the last start. The executors know nothing of MPI.
//
// Bucket k is cut into R sub-shards (its tensors' elements counted one after
// the other, R nearly equal parts cut at parameter rows); rank r owns sub-
// shard r of every bucket, so the reduce-scatter of a bucket is the ring (or
// direct) collective below over its sub-shards, every link busy at once and
// (R-1)/R of the bucket sent by every rank. The sharded update runs AdamW on
// the union of this rank's sub-shards; the parameters' all-gather after it
// moves every rank's union. With the replicated update, the thread all-gathers
// each bucket's gradients right after its reduce-scatter.
//
// The collectives (--collective):
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
// summation order) the library picks. With w_r = B_r / B, the rank's share of
// the batch (each g_r is the gradient of rank r's mean loss, so the weighted
// sum is the gradient of the mean loss over the whole batch, as one process
// computes it, up to float rounding), element i of shard q is
//   ring:   w_{q+1} g_{q+1}[i] + w_{q+2} g_{q+2}[i] + ... + w_q g_q[i]
//           summed left to right from rank q+1 around the ring (mod R) to q
//   direct: w_0 g_0[i] + w_1 g_1[i] + ... + w_{R-1} g_{R-1}[i]
//           summed left to right in rank order on rank q
// (each partial sum travels as a float, so where it is added does not
// matter). With --overlap on, q is the sub-shard of element i's bucket
// (bucket_cuts) instead of its shard of the whole buffer: the same sums, each
// starting at the rank after the one that owns the element. The order depends
// on R, the collective and --overlap only: a run is bit-identical to a repeat
// with the same rank count whatever the executor and the threads per rank
// (within a rank every executor is bit-identical to seq); at R <= 2 the two
// collectives and the two --overlap settings give the same bits (a sum of two
// terms does not depend on their order), and the direct collective gives the
// same bits with either --overlap at any R (its order is the ranks'). The
// all-gathers only copy. The losses: every rank sends its mean loss to every
// other, which sum them in rank order.
//
// Built for SimGrid's SMPI (-DGPT2_SMPI, `make smpi`), the rank's node compute
// is not run: each step stands in for the forward and backward operations and
// for AdamW with simulated delays that the harness gives it (from the replay of
// the traced chunk times), and for each add of the reduce-scatter with its bytes
// executed at the simulated host's speed (the rank's memory bandwidth). The
// messages, their sizes and their order are the ones above.
#define _GNU_SOURCE
#include <mpi.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "distributed.h"
#include "executor.h"
#ifdef GPT2_SMPI
#include <errno.h>
#include <math.h>
#include <smpi/smpi.h>
#endif

const char *const EXECUTOR_NAME = "mpi";
const int EXECUTOR_WHOLE_LOOP = 0;
// Not read: the front describes the step for the node-level executor (dist_packs_weights).
const int EXECUTOR_PACKS_WEIGHTS = 0;

// ----------------------------------------------------------------------------
// the node-level executors: the threads and chunked variants of variants/LIST,
// compiled a second time with their entry points prefixed by their name
// (the Makefile's -Dexecutor_create=forkjoin_executor_create ..., and the list
// INNER_EXECUTORS = INNER(forkjoin) INNER(tasks) ...)

typedef struct {
    const char *name;
    const int *packs_weights; // its EXECUTOR_PACKS_WEIGHTS
    void *(*create)(StepDescription *step, const ExecOptions *options, Error *err);
    void (*info)(const void *ex, ExecutorInfo *info);
    void (*train)(void *ex, int first, int n, float *losses, StepReport *reports, Trace *trace);
    void (*destroy)(void *ex);
} Inner;

#define INNER(name)                                                                                              \
    typedef struct name##_Executor name##_Executor;                                                              \
    extern const int name##_EXECUTOR_PACKS_WEIGHTS;                                                              \
    name##_Executor *name##_executor_create(StepDescription *step, const ExecOptions *options, Error *err);      \
    void name##_executor_info(const name##_Executor *ex, ExecutorInfo *info);                                    \
    void name##_executor_train(name##_Executor *ex, int first, int n, float *losses, StepReport *reports,        \
                               Trace *trace);                                                                    \
    void name##_executor_destroy(name##_Executor *ex);                                                           \
    static void *name##_create(StepDescription *step, const ExecOptions *options, Error *err) {                  \
        return name##_executor_create(step, options, err);                                                       \
    }                                                                                                            \
    static void name##_info(const void *ex, ExecutorInfo *info) { name##_executor_info(ex, info); }             \
    static void name##_train(void *ex, int first, int n, float *losses, StepReport *reports, Trace *trace) {     \
        name##_executor_train(ex, first, n, losses, reports, trace);                                             \
    }                                                                                                            \
    static void name##_destroy(void *ex) { name##_executor_destroy(ex); }
INNER_EXECUTORS
#undef INNER

static const Inner INNERS[] = {
#define INNER(name) {#name, &name##_EXECUTOR_PACKS_WEIGHTS, name##_create, name##_info, name##_train, name##_destroy},
    INNER_EXECUTORS
#undef INNER
};
#define N_INNERS ((int)(sizeof(INNERS) / sizeof(INNERS[0])))

// ----------------------------------------------------------------------------
// the process layer

static int world_rank, world_size = 1, global_B, thread_level;

void dist_init(int *argc, char ***argv) {
    // MPI is called from the main thread, outside parallel regions, and with
    // --overlap on from the communication thread while the main thread makes no
    // call: never from two threads at once (Debian 12's Open MPI 4.1 gives
    // MPI_THREAD_MULTIPLE, more than this asks)
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &thread_level);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
}

void dist_finalize(void) { MPI_Finalize(); }
int dist_rank(void) { return world_rank; }
int dist_ranks(void) { return world_size; }

void dist_abort(int status) {
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
    exit(status); // not reached: MPI_Abort does not return
}

// One rank's part of the agreement, sent to every rank.
typedef struct {
    int state, n;
    char failure[512];
    DistSetting settings[DIST_MAX_SETTINGS];
} Agreement;

// The verdict on every rank's part; the same on every rank, which sees them all.
static int verdict(const Agreement *all, int R, char *line, size_t len) {
    line[0] = '\0';
    int failed = -1, same = 1;
    for (int q = 0; q < R; q++)
        if (all[q].state == DIST_FAILED) {
            if (failed < 0) failed = q;
            else if (strcmp(all[q].failure, all[failed].failure) != 0) same = 0;
        } else {
            same = 0;
        }
    if (failed >= 0) {
        // one input shared by every rank (a missing model on all of them) needs no rank in its line
        if (same || R == 1) snprintf(line, len, "%s", all[failed].failure);
        else snprintf(line, len, "rank %d: %s", failed, all[failed].failure);
        return 2;
    }
    for (int q = 1; q < R; q++)
        if (all[q].state != all[0].state) {
            int leaving = all[q].state == DIST_LEAVING ? q : 0;
            snprintf(line, len, "rank %d stops before training (--help or --list-configs) while rank %d would run: "
                     "give every rank the same options", leaving, leaving ? 0 : q);
            return 2;
        }
    if (all[0].state == DIST_LEAVING) return 0;
    for (int q = 1; q < R; q++) {
        if (all[q].n != all[0].n) {
            snprintf(line, len, "rank %d runs a different build of gpt2-mpi than rank 0 (%d settings to agree on, "
                     "not %d)", q, all[q].n, all[0].n);
            return 2;
        }
        for (int i = 0; i < all[0].n; i++) {
            const DistSetting *mine = &all[0].settings[i], *theirs = &all[q].settings[i];
            if (strcmp(mine->name, theirs->name) != 0 || strcmp(mine->value, theirs->value) != 0) {
                snprintf(line, len, "rank %d disagrees with rank 0 on %s: %s there, %s on rank 0 (every rank "
                         "must be given the same options and data)", q, mine->name, theirs->value, mine->value);
                return 2;
            }
        }
    }
    return DIST_AGREED;
}

int dist_agree(int state, const char *failure, const DistSetting *settings, int n, char *line, size_t line_len) {
    Agreement mine;
    memset(&mine, 0, sizeof(mine));
    mine.state = state;
    mine.n = n < DIST_MAX_SETTINGS ? n : DIST_MAX_SETTINGS;
    snprintf(mine.failure, sizeof(mine.failure), "%s", failure ? failure : "");
    for (int i = 0; i < mine.n; i++) mine.settings[i] = settings[i];
    Agreement *all = malloc((size_t)world_size * sizeof(Agreement));
    if (!all) {
        fprintf(stderr, "gpt2-mpi: rank %d: out of memory for the ranks' agreement\n", world_rank);
        dist_abort(2);
    }
    // a collective every rank reaches exactly once, whether its checks passed or not: no rank
    // waits on one that has given up
    MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE, MPI_COMM_WORLD);
    int status = verdict(all, world_size, line, line_len);
    free(all);
    return status;
}

void dist_share(int B, int rank, int ranks, int *b0, int *b1) {
    *b0 = (int)((long)B * rank / ranks);
    *b1 = (int)((long)B * (rank + 1) / ranks);
}

void dist_set_global_batch(int B) { global_B = B; }

// The node-level executor of that name, or NULL.
static const Inner *inner_named(const char *name) {
    for (int i = 0; i < N_INNERS; i++)
        if (strcmp(INNERS[i].name, name) == 0) return &INNERS[i];
    return NULL;
}

int dist_packs_weights(const ExecOptions *options) {
    const Inner *inner = inner_named(options->executor ? options->executor : "forkjoin");
    return inner ? *inner->packs_weights : 0;
}

enum { TAG_REDUCE = 1, TAG_GATHER, TAG_LOSS, TAG_TEXT, TAG_TRACE };

// messages carry at most this many floats, so that the reduction needs two
// blocks of scratch memory instead of a shard's worth, and counts fit an int
#define BLOCK_FLOATS ((size_t)1 << 20)
// the ring's reduce-scatter cuts each shard into at least this many messages,
// so that receiving, adding and forwarding overlap (a shard of one message
// would be received whole, then added, then sent: three times the time)
#define RING_DEPTH 8
// blocks of at least this many floats are added by the rank's threads
#define PARALLEL_ADD ((size_t)1 << 16)
// the communication thread's pause between two tests of its messages: from
// the first, doubled after each test that finds them unfinished up to the
// last, so that a thread waiting for a slower rank to reach a bucket wakes
// (and takes its core from the compute thread) a thousand times a second,
// not fifty thousand, while messages that are under way are seen within 20 us
#define POLL_FIRST_NS 20000
#define POLL_LAST_NS 1000000

// Parameter elements [lo, hi) of one tensor, whose rows are `cols` wide.
typedef struct {
    size_t lo, hi, cols;
} Span;

// One message: elements [at, at + count) of a buffer.
typedef struct {
    size_t at;
    int count;
} Block;

// What a collective moves: a buffer's elements in R shards, shard q the
// blocks [first[q], first[q + 1]) in memory order. The same on every rank, so
// that a receiver cuts a shard where its sender does.
typedef struct {
    Block *blocks;
    int *first; // (R + 1)
} Partition;

// Where a collective runs. On the main thread, between the node executor's
// runs: the rank's threads add, and MPI's waits spin. On the communication
// thread, beside the compute threads: it adds alone, and polls its messages
// with short sleeps, since MPI's busy wait would take a core from them.
typedef struct {
    int threads, poll;
} Where;

// --overlap on: the gradients of one transformer block (or of the embeddings
// and the final LayerNorm), reduced as soon as the backward pass has written
// them for the last time.
typedef struct {
    int layer;                      // -1: wte, wpe, lnfw, lnfb
    int n_spans;
    Span spans[NUM_PARAM_TENSORS];  // its tensors' elements, in memory order
    Partition reduce;               // its R sub-shards in the reduce-scatter's messages
    Partition gather;               // and in the all-gather's (--update replicated)
    int op_start, op_wait, op_comm; // in the whole step: the operations that hand it to the
                                    // communication thread and wait for it, and the thread's record
} Bucket;

struct Executor {
    StepDescription *step;      // the whole step: forward, backward, AdamW (this rank's shard), comm
    StepDescription compute;    // view: the forward and backward operations
    StepDescription update;     // the AdamW operations that follow them, on this rank's part
    Op *update_ops;             // (update.n_ops) what update runs: the step's AdamW operations, or their shard
    int *update_origin;         // (update.n_ops) each one's index in the whole step
    int *update_row0;           // (update.n_ops) its first row in the whole step's operation
    int n_compute;              // operations before the update's
    int op_reduce, op_gather;   // the OP_COMM operations, for traces
    const Inner *inner;
    void *compute_ex, *update_ex;
    int sharded;
    int direct;                 // --collective direct
    int threads;                // the rank's threads, for the reduction's adds
    int rank, ranks;
    float *weights;             // (R) B_r / B
    size_t *shard;              // (R + 1) shard q is parameter elements [shard[q], shard[q+1])
    Partition reduce_blocks;    // the shards in the reduce-scatter's messages
    Partition gather_blocks;    // and in the all-gathers'
    float *acc, *recv;          // (BLOCK_FLOATS) reduction scratch
    MPI_Request *requests;
    long long bytes_per_step;   // sent by this rank

    // --overlap on: one node executor runs `run`, the step with the buckets' communication in it
    int overlap;
    int n_buckets;
    Bucket *buckets;            // in the order the backward pass finishes them: last layer first
    Span *mine;                 // (n_mine) this rank's sub-shards: the parameters it updates (sharded)
    int n_mine;
    Partition params;           // the parameters' all-gather: shard q is rank q's sub-shards
    StepDescription run;
    Op *run_ops;
    int *run_origin, *run_row0; // each run operation's index and first row in the whole step
    void *run_ex;
    // the communication thread and what the comm operations hand it
    pthread_t comm_thread;
    int comm_started;
    pthread_mutex_t comm_lock;
    pthread_cond_t comm_wake, comm_done;
    int *queue, queue_head, queue_count; // buckets handed over, not yet taken
    long generation;            // the executor's steps so far: done[b] == generation once bucket b is
    long *done;                 // reduced in this step
    int stop;
    Trace *trace;               // this step's, and its iteration: the thread's records
    int iteration;
    double comm_busy_s;         // this step's time in the thread's collectives
};

// Shard boundaries: R nearly equal ranges of the parameters in memory order,
// each boundary moved down to the start of the parameter row it falls in, so
// that the AdamW operations (which cut parameters by rows) cut along them.
static void shard_boundaries(const GPT2 *model, int ranks, size_t *shard) {
    size_t n = model->num_parameters;
    for (int q = 0; q <= ranks; q++) {
        size_t target = n * (size_t)q / (size_t)ranks, offset = 0;
        shard[q] = target;
        for (int t = 0; t < NUM_PARAM_TENSORS && q < ranks; t++) {
            if (target < offset + model->param_sizes[t]) {
                size_t cols = (size_t)model->param_shape[t].cols;
                shard[q] = offset + (target - offset) / cols * cols;
                break;
            }
            offset += model->param_sizes[t];
        }
    }
}

// The same for a bucket: cut[q] is where sub-shard q starts among the
// spans' elements counted one after the other.
static void bucket_cuts(const Bucket *b, int ranks, size_t *cut) {
    size_t total = 0;
    for (int i = 0; i < b->n_spans; i++) total += b->spans[i].hi - b->spans[i].lo;
    for (int q = 0; q <= ranks; q++) {
        size_t target = total * (size_t)q / (size_t)ranks, offset = 0;
        cut[q] = target;
        for (int i = 0; i < b->n_spans && q < ranks; i++) {
            const Span *s = &b->spans[i];
            if (target < offset + (s->hi - s->lo)) {
                cut[q] = offset + (target - offset) / s->cols * s->cols;
                break;
            }
            offset += s->hi - s->lo;
        }
    }
}

// The elements [v0, v1) of the spans counted one after the other, as pieces
// of memory (out: at most b->n_spans). Returns how many.
static int bucket_pieces(const Bucket *b, size_t v0, size_t v1, Span *out) {
    int n = 0;
    size_t offset = 0;
    for (int i = 0; i < b->n_spans; i++) {
        const Span *s = &b->spans[i];
        size_t size = s->hi - s->lo, lo = v0 > offset ? v0 - offset : 0, hi = v1 - offset < size ? v1 - offset : size;
        if (v1 > offset && lo < hi) out[n++] = (Span){s->lo + lo, s->lo + hi, s->cols};
        offset += size;
    }
    return n;
}

static void partition_free(Partition *p) {
    free(p->blocks);
    free(p->first);
    p->blocks = NULL;
    p->first = NULL;
}

// Fills p with shard q = pieces[q][0 .. n[q]), pieces that meet in memory
// joined and cut into blocks of at most `block` elements. Returns 0 or -1.
static int partition_of(Partition *p, int R, Span *const *pieces, const int *n, size_t block) {
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

// A partition of one range per shard: [cut[q], cut[q + 1]).
static int partition_of_ranges(Partition *p, int R, const size_t *cut, size_t block) {
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

static int blocks_in(const Partition *p, int R) { return p->first ? p->first[R] : 0; }

// Elements of shard q.
static size_t shard_elements(const Partition *p, int q) {
    size_t n = 0;
    for (int b = p->first[q]; b < p->first[q + 1]; b++) n += (size_t)p->blocks[b].count;
    return n;
}

// The copy of the step's operation i cut to its rows in `ranges` (sorted,
// disjoint), one copy per range that holds some of them, into out[],
// origin[] and row0[] (when out is not NULL). The arguments move with the
// rows; m and v stay where the model keeps them, so the other shards'
// moments are never touched (the model's zeroed pages of them never become
// resident). Returns how many.
static int cut_op(const StepDescription *s, int i, const Span *ranges, int n_ranges, Op *out, int *origin,
                  int *row0) {
    const float *base = s->model->params_memory;
    const Op *whole = &s->ops[i];
    size_t width = (size_t)whole->width;
    size_t s0 = (size_t)(whole->arg[ADAMW_PARAMS] - base), s1 = s0 + (size_t)whole->split_channels * width;
    int kept = 0;
    for (int k = 0; k < n_ranges; k++) {
        size_t i0 = s0 > ranges[k].lo ? s0 : ranges[k].lo, i1 = s1 < ranges[k].hi ? s1 : ranges[k].hi;
        if (i0 >= i1) continue;
        if (out) {
            Op op = *whole;
            size_t skip = i0 - s0;
            for (int a = ADAMW_PARAMS; a <= ADAMW_V; a++) op.arg[a] += skip;
            op.split_channels = (int)((i1 - i0) / width);
            origin[kept] = i;
            row0[kept] = (int)(skip / width);
            out[kept] = op;
        }
        kept++;
    }
    return kept;
}

// The update's operations: the step's AdamW operations from `first` on, cut
// to [lo, hi), in the step's order.
static void cut_update(Executor *ex, int first, size_t lo, size_t hi) {
    const StepDescription *s = ex->step;
    Span range = {lo, hi, 1};
    int kept = 0;
    for (int i = first; i < s->n_ops; i++)
        kept += cut_op(s, i, &range, 1, ex->update_ops + kept, ex->update_origin + kept, ex->update_row0 + kept);
    ex->update.ops = ex->update_ops;
    ex->update.n_ops = kept;
}

static void set_error(Error *err, const char *message) {
    snprintf(err->message, sizeof(err->message), "%s", message);
}

#ifdef GPT2_SMPI
// the simulated seconds of a step's forward and backward operations and of its AdamW operations
static double smpi_compute_s, smpi_update_s;

// Seconds from the environment variable `name` (0 when unset), or -1 with err set. The harness
// sets them in smpirun's environment, which every rank sees.
static double smpi_seconds(const char *name, Error *err) {
    const char *text = getenv(name);
    if (!text || !*text) return 0.0;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || *end || !isfinite(v) || v < 0) {
        snprintf(err->message, sizeof(err->message), "%s: expected seconds (a number, 0 or more), got '%.100s'",
                 name, text);
        return -1.0;
    }
    return v;
}
#endif

int dist_check_executor(const ExecOptions *options, Error *err) {
    const char *name = options->executor ? options->executor : "forkjoin";
#ifdef GPT2_SMPI
    // read here, before the ranks agree, so that a bad value is one line and exit status 2
    if ((smpi_compute_s = smpi_seconds("GPT2_SMPI_COMPUTE_S", err)) < 0 ||
        (smpi_update_s = smpi_seconds("GPT2_SMPI_UPDATE_S", err)) < 0)
        return -1;
    if (options->overlap) {
        set_error(err, "--overlap on: not simulated (its compute is one delay, with no backward pass to overlap)");
        return -1;
    }
#endif
    if (options->overlap && thread_level < MPI_THREAD_SERIALIZED) {
        set_error(err, "--overlap on: the MPI library does not give MPI_THREAD_SERIALIZED, which the "
                       "communication thread needs");
        return -1;
    }
    if (inner_named(name)) return 0;
    int at = snprintf(err->message, sizeof(err->message), "--executor: unknown executor '%s' (known:", name);
    for (int i = 0; i < N_INNERS && at < (int)sizeof(err->message); i++)
        at += snprintf(err->message + at, sizeof(err->message) - at, "%s %s", i ? "," : "", INNERS[i].name);
    if (at < (int)sizeof(err->message)) snprintf(err->message + at, sizeof(err->message) - at, ")");
    return -1;
}

// ----------------------------------------------------------------------------
// communication: point-to-point, in a fixed order

static void wait_all(int n, MPI_Request *requests, Where where) {
    if (!where.poll) {
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

// The ranks' mean losses into *loss: every rank's to every other, summed in rank order.
static void reduce_losses(Executor *ex, float *loss) {
    int R = ex->ranks, me = ex->rank, n_req = 0;
    float losses[R > 0 ? R : 1];
    losses[me] = *loss;
    for (int q = 0; q < R; q++) {
        if (q == me) continue;
        MPI_Isend(loss, 1, MPI_FLOAT, q, TAG_LOSS, MPI_COMM_WORLD, &ex->requests[n_req++]);
        MPI_Irecv(&losses[q], 1, MPI_FLOAT, q, TAG_LOSS, MPI_COMM_WORLD, &ex->requests[n_req++]);
    }
    MPI_Waitall(n_req, ex->requests, MPI_STATUSES_IGNORE);
    float sum = 0.0f;
    for (int q = 0; q < R; q++) sum += ex->weights[q] * losses[q];
    *loss = sum;
}

// Posts sends of shard q's blocks of buf to rank `to`, into ex->requests from *n_req.
static void send_shard(Executor *ex, const float *buf, const Partition *p, int q, int to, int tag, int *n_req) {
    for (int b = p->first[q]; b < p->first[q + 1]; b++)
        MPI_Isend(buf + p->blocks[b].at, p->blocks[b].count, MPI_FLOAT, to, tag, MPI_COMM_WORLD,
                  &ex->requests[(*n_req)++]);
}

// direct: averages the ranks' gradients into this rank's shard of grads (the
// other shards keep this rank's own gradients). Blocks of shard q go from
// every rank to rank q, which sums them in rank order (the module comment).
static void reduce_scatter_direct(Executor *ex, float *grads, const Partition *p, Where where) {
    int R = ex->ranks, me = ex->rank, n_req = 0;
    for (int q = 0; q < R; q++)
        if (q != me) send_shard(ex, grads, p, q, q, TAG_REDUCE, &n_req);
    // messages from one rank with one tag arrive in the order sent: block after block
    for (int b = p->first[me]; b < p->first[me + 1]; b++) {
        size_t at = p->blocks[b].at, count = (size_t)p->blocks[b].count;
        for (int q = 0; q < R; q++) {
            const float *g = grads + at;
            if (q != me) {
                if (where.poll) {
                    MPI_Request request;
                    MPI_Irecv(ex->recv, (int)count, MPI_FLOAT, q, TAG_REDUCE, MPI_COMM_WORLD, &request);
                    wait_all(1, &request, where);
                } else {
                    MPI_Recv(ex->recv, (int)count, MPI_FLOAT, q, TAG_REDUCE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
                g = ex->recv;
            }
#ifdef GPT2_SMPI
            (void)g;
            smpi_execute_flops(12.0 * (double)count); // acc += w * g: g read, acc read and written
        }
        smpi_execute_flops(8.0 * (double)count); // the copy back
#else
            float w = ex->weights[q];
            if (q == 0)
                for (size_t i = 0; i < count; i++) ex->acc[i] = w * g[i];
            else
                for (size_t i = 0; i < count; i++) ex->acc[i] += w * g[i];
        }
        // this shard's blocks are not among the ones being sent
        memcpy(grads + at, ex->acc, count * sizeof(float));
#endif
    }
    wait_all(n_req, ex->requests, where);
}

#ifndef GPT2_SMPI
// g = w_prev in + w_me g (the first step: `in` holds the previous rank's raw
// gradients), else g = in + w_me g. Elementwise: the threads change no sum's order.
static void ring_add(float *g, const float *in, size_t count, float w_prev, float w_me, int first, int threads) {
    if (threads > 1 && count >= PARALLEL_ADD) {
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
#endif

// ring: averages the ranks' gradients into this rank's shard of grads; the
// other shards end up holding partial sums. Step s receives the partial sum of
// shard me-s-2 from the previous rank block by block (the next block's
// receive posted before this one is added: two buffers) and adds this rank's
// weighted gradients in place; that shard is the one step s+1 forwards, so
// each block goes on to the next rank as soon as it is added: the steps
// pipeline, and the link never waits for a whole shard's adds. Step 0 sends
// the raw gradients of shard me-1 (the receiver weighs them). A block being
// sent is never written again.
static void reduce_scatter_ring(Executor *ex, float *grads, const Partition *p, Where where) {
    int R = ex->ranks, me = ex->rank, next = (me + 1) % R, prev = (me + R - 1) % R, n_req = 0;
    float w_me = ex->weights[me], w_prev = ex->weights[prev];
    if (R == 1) {
        for (int b = p->first[0]; b < p->first[1]; b++)
            for (size_t i = p->blocks[b].at; i < p->blocks[b].at + (size_t)p->blocks[b].count; i++)
                grads[i] = w_me * grads[i];
        return;
    }
    send_shard(ex, grads, p, (me + R - 1) % R, next, TAG_REDUCE, &n_req);
    float *buf[2] = {ex->recv, ex->acc};
    for (int s = 0; s < R - 1; s++) {
        int recv_q = ((me - s - 2) % R + R) % R, b0 = p->first[recv_q], b1 = p->first[recv_q + 1];
        MPI_Request pending[2];
        if (b0 < b1)
            MPI_Irecv(buf[0], p->blocks[b0].count, MPI_FLOAT, prev, TAG_REDUCE, MPI_COMM_WORLD, &pending[0]);
        int x = 0;
        for (int b = b0; b < b1; b++, x ^= 1) {
            size_t count = (size_t)p->blocks[b].count;
            if (b + 1 < b1)
                MPI_Irecv(buf[x ^ 1], p->blocks[b + 1].count, MPI_FLOAT, prev, TAG_REDUCE, MPI_COMM_WORLD,
                          &pending[x ^ 1]);
            wait_all(1, &pending[x], where);
            float *g = grads + p->blocks[b].at;
#ifdef GPT2_SMPI
            (void)w_prev;
            smpi_execute_flops(12.0 * (double)count); // g = in + w g: in read, g read and written
#else
            ring_add(g, buf[x], count, w_prev, w_me, s == 0, where.threads);
#endif
            if (s + 1 < R - 1)
                MPI_Isend(g, (int)count, MPI_FLOAT, next, TAG_REDUCE, MPI_COMM_WORLD, &ex->requests[n_req++]);
        }
    }
    wait_all(n_req, ex->requests, where);
}

// Every rank's shard of buf to every other rank, in place. direct: every
// shard to every rank at once; ring: R-1 steps around the ring, each
// receiving straight into buf the shard the next step forwards.
static void all_gather(Executor *ex, float *buf, const Partition *p, Where where) {
    int R = ex->ranks, me = ex->rank;
    if (ex->direct) {
        int n_req = 0;
        for (int q = 0; q < R; q++) {
            if (q == me) continue;
            send_shard(ex, buf, p, me, q, TAG_GATHER, &n_req);
            for (int b = p->first[q]; b < p->first[q + 1]; b++)
                MPI_Irecv(buf + p->blocks[b].at, p->blocks[b].count, MPI_FLOAT, q, TAG_GATHER, MPI_COMM_WORLD,
                          &ex->requests[n_req++]);
        }
        wait_all(n_req, ex->requests, where);
        return;
    }
    int next = (me + 1) % R, prev = (me + R - 1) % R;
    for (int s = 0; s < R - 1; s++) {
        int send_q = ((me - s) % R + R) % R, recv_q = ((me - s - 1) % R + R) % R, n_req = 0;
        for (int b = p->first[recv_q]; b < p->first[recv_q + 1]; b++)
            MPI_Irecv(buf + p->blocks[b].at, p->blocks[b].count, MPI_FLOAT, prev, TAG_GATHER, MPI_COMM_WORLD,
                      &ex->requests[n_req++]);
        send_shard(ex, buf, p, send_q, next, TAG_GATHER, &n_req);
        wait_all(n_req, ex->requests, where);
    }
}

static const Where MAIN_THREAD_WAITS = {0, 0};

// A trace record of a communication operation, as run_chunk makes for kernels,
// on `thread` (-1: the communication thread, numbered by dist_gather_trace).
static void trace_comm(Trace *trace, int iteration, int op, int thread, double start, double end) {
    if (!trace || !trace->records) return;
    size_t slot = __atomic_fetch_add(&trace->count, 1, __ATOMIC_RELAXED);
    if (slot < trace->capacity)
        trace->records[slot] =
            (TraceRecord){iteration, op, thread, (Range){0, 1, 0, 1, 0, 0}, start - trace->origin,
                          end - trace->origin, -1.0}; // no CPU time: a wait for messages, not a kernel
}

// ----------------------------------------------------------------------------
// --overlap on: the buckets, the communication thread, and the step that hands
// buckets to it

// A bucket's reduction, on the communication thread: its reduce-scatter, and
// with the replicated update its all-gather too.
static void reduce_bucket(Executor *ex, const Bucket *b) {
    const Where thread = {1, 1};
    float *grads = ex->step->model->grads_memory;
    if (ex->direct) reduce_scatter_direct(ex, grads, &b->reduce, thread);
    else reduce_scatter_ring(ex, grads, &b->reduce, thread);
    if (!ex->sharded) all_gather(ex, grads, &b->gather, thread);
}

// The communication thread: reduces the buckets in the order the start
// operations hand them over, which the step's token makes the same on every
// rank. It calls MPI only while the main thread waits in the node executor
// (whose wait operations return once it is done), so MPI_THREAD_SERIALIZED is
// enough.
static void *communicate(void *arg) {
    Executor *ex = arg;
    pthread_mutex_lock(&ex->comm_lock);
    for (;;) {
        while (!ex->queue_count && !ex->stop) pthread_cond_wait(&ex->comm_wake, &ex->comm_lock);
        if (!ex->queue_count) break;
        int b = ex->queue[ex->queue_head];
        ex->queue_head = (ex->queue_head + 1) % ex->n_buckets;
        ex->queue_count--;
        Trace *trace = ex->trace;
        int iteration = ex->iteration;
        long generation = ex->generation;
        pthread_mutex_unlock(&ex->comm_lock);
        double t0 = now_seconds();
        reduce_bucket(ex, &ex->buckets[b]);
        double t1 = now_seconds();
        trace_comm(trace, iteration, ex->buckets[b].op_comm, -1, t0, t1);
        pthread_mutex_lock(&ex->comm_lock);
        ex->comm_busy_s += t1 - t0;
        ex->done[b] = generation;
        pthread_cond_broadcast(&ex->comm_done);
    }
    pthread_mutex_unlock(&ex->comm_lock);
    return NULL;
}

// The step's OP_COMM operations (StepDescription.comm): comm 2b hands bucket b
// to the communication thread, comm 2b + 1 waits until it is reduced.
static void comm_op(void *context, const Op *op, int iteration) {
    Executor *ex = context;
    (void)iteration;
    int b = op->comm / 2;
    pthread_mutex_lock(&ex->comm_lock);
    if (op->comm % 2 == 0) {
        ex->queue[(ex->queue_head + ex->queue_count++) % ex->n_buckets] = b;
        pthread_cond_signal(&ex->comm_wake);
    } else {
        while (ex->done[b] != ex->generation) pthread_cond_wait(&ex->comm_done, &ex->comm_lock);
    }
    pthread_mutex_unlock(&ex->comm_lock);
}

static int bucket_of_layer(const Executor *ex, int layer) {
    return layer >= 0 ? ex->step->model->config.num_layers - 1 - layer : ex->n_buckets - 1;
}

// Appends an OP_COMM operation of bucket b to the step: comm < 0 for the
// communication thread's record (no accesses: no executor runs it); else with
// write accesses to the bucket's gradients, and to the token (`token_writes`)
// or reading it.
static int add_bucket_op(Executor *ex, const Bucket *b, Phase phase, const char *what, int comm, int token_writes) {
    StepDescription *s = ex->step;
    char label[48];
    const char *verb = ex->sharded ? "grad reduce-scatter" : "grad all-reduce";
    if (b->layer >= 0) snprintf(label, sizeof(label), "%s L%d%s", verb, b->layer, what);
    else snprintf(label, sizeof(label), "%s wte+wpe+lnf%s", verb, what);
    int i = step_add_comm(s, phase, label);
    if (i < 0) return -1;
    s->ops[i].layer = b->layer;
    s->ops[i].comm = comm;
    if (comm < 0) return i;
    const GPT2 *model = s->model;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++)
        if ((b->layer >= 0) == (model->param_shape[t].per_layer != 0) &&
            step_comm_access(s, i, BUF_GRAD, t, b->layer, 1) != 0)
            return -1;
    return step_comm_access(s, i, BUF_COMM, 0, -1, token_writes) != 0 ? -1 : i;
}

// The buckets, their partitions, this rank's sub-shards and the parameters'
// all-gather. Sub-shard q of a bucket: elements [cut[q], cut[q + 1]) of its
// tensors counted one after the other, R nearly equal parts cut at rows.
static int build_buckets(Executor *ex) {
    const GPT2 *model = ex->step->model;
    int L = model->config.num_layers, R = ex->ranks, me = ex->rank, nb = L + 1;
    ex->n_buckets = nb;
    ex->buckets = calloc((size_t)nb, sizeof(Bucket));
    ex->mine = malloc((size_t)nb * NUM_PARAM_TENSORS * sizeof(Span));
    ex->queue = malloc((size_t)nb * sizeof(int));
    ex->done = calloc((size_t)nb, sizeof(long));
    // pieces[(q * nb + k) * NUM_PARAM_TENSORS ...]: bucket k's sub-shard q, n_qk[q * nb + k] of them
    Span *pieces = malloc((size_t)R * nb * NUM_PARAM_TENSORS * sizeof(Span));
    Span *joined = malloc((size_t)R * nb * NUM_PARAM_TENSORS * sizeof(Span));
    int *n_qk = calloc((size_t)R * nb, sizeof(int)), *n = malloc((size_t)R * sizeof(int));
    Span **of = malloc((size_t)R * sizeof(Span *));
    size_t *cut = malloc((size_t)(R + 1) * sizeof(size_t));
    int ok = ex->buckets && ex->mine && ex->queue && ex->done && pieces && joined && n_qk && n && of && cut;
    for (int k = 0; ok && k < nb; k++) {
        Bucket *b = &ex->buckets[k];
        b->layer = k < L ? L - 1 - k : -1;
        for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
            const ParamShape *shape = &model->param_shape[t];
            if ((b->layer >= 0) != (shape->per_layer != 0)) continue;
            size_t lo = (size_t)(param_slice(model, &model->grads, t, b->layer) - model->grads_memory);
            b->spans[b->n_spans++] = (Span){lo, lo + (size_t)shape->rows * shape->cols, (size_t)shape->cols};
        }
        bucket_cuts(b, R, cut);
        size_t widest = 0;
        for (int q = 0; q < R; q++) {
            if (cut[q + 1] - cut[q] > widest) widest = cut[q + 1] - cut[q];
            of[q] = pieces + ((size_t)q * nb + k) * NUM_PARAM_TENSORS;
            n[q] = n_qk[q * nb + k] = bucket_pieces(b, cut[q], cut[q + 1], of[q]);
        }
        size_t ring_block = (widest + RING_DEPTH - 1) / RING_DEPTH;
        ring_block = ring_block > BLOCK_FLOATS ? BLOCK_FLOATS : ring_block < 1 ? 1 : ring_block;
        ok = partition_of(&b->reduce, R, of, n, ex->direct ? BLOCK_FLOATS : ring_block) == 0 &&
             (ex->sharded || partition_of(&b->gather, R, of, n, BLOCK_FLOATS) == 0);
        for (int i = 0; i < n[me]; i++) ex->mine[ex->n_mine++] = of[me][i];
    }
    // the parameters' all-gather: shard q is rank q's sub-shards of every bucket, bucket by bucket
    for (int q = 0; ok && q < R; q++) {
        of[q] = joined + (size_t)q * nb * NUM_PARAM_TENSORS;
        n[q] = 0;
        for (int k = 0; k < nb; k++)
            for (int i = 0; i < n_qk[q * nb + k]; i++)
                of[q][n[q]++] = pieces[((size_t)q * nb + k) * NUM_PARAM_TENSORS + i];
    }
    ok = ok && (!ex->sharded || partition_of(&ex->params, R, of, n, BLOCK_FLOATS) == 0);
    free(pieces);
    free(joined);
    free(n_qk);
    free(n);
    free(of);
    free(cut);
    return ok ? 0 : -1;
}

// The step the node executor runs with --overlap on, in ex->run:
//   the forward and backward operations, each bucket's start operation right
//   after the last one that writes its gradients (wte's: the encoder's
//   backward pass; the language-model head writes them first);
//   then per bucket its wait operation and its AdamW operations (cut to this
//   rank's sub-shards when sharded).
// The start operations write the token, the waits read it: every executor
// runs the starts in this order, and no wait (which blocks its thread) before
// the last start, so that no compute thread waits while backward work remains.
// Returns 0 or -1 (memory).
static int build_run(Executor *ex, int first_update) {
    StepDescription *s = ex->step;
    for (int k = 0; k < ex->n_buckets; k++) {
        Bucket *b = &ex->buckets[k];
        if ((b->op_start = add_bucket_op(ex, b, PHASE_BACKWARD, " start", 2 * k, 1)) < 0 ||
            (b->op_wait = add_bucket_op(ex, b, PHASE_UPDATE, " wait", 2 * k + 1, 0)) < 0 ||
            (b->op_comm = add_bucket_op(ex, b, PHASE_BACKWARD, "", -1, 0)) < 0)
            return -1;
    }
    if (ex->sharded && (ex->op_gather = step_add_comm(s, PHASE_UPDATE, "param all-gather")) < 0) return -1;
    int *last = malloc((size_t)ex->n_buckets * sizeof(int));
    if (!last) return -1;
    for (int k = 0; k < ex->n_buckets; k++) last[k] = first_update - 1;
    for (int i = 0; i < first_update; i++)
        for (int a = 0; a < s->ops[i].n_access; a++) {
            const Access *access = &s->ops[i].access[a];
            const Buffer *buffer = &s->buffers[access->buffer];
            if (access->writes && buffer->kind == BUF_GRAD) last[bucket_of_layer(ex, buffer->layer)] = i;
        }
    Span everything = {0, s->model->num_parameters, 1};
    const Span *ranges = ex->sharded ? ex->mine : &everything;
    int n_ranges = ex->sharded ? ex->n_mine : 1;
    int n = first_update + 2 * ex->n_buckets;
    for (int i = first_update; i < s->n_ops; i++)
        if (s->ops[i].kind == OP_ADAMW) n += cut_op(s, i, ranges, n_ranges, NULL, NULL, NULL);
    ex->run_ops = malloc((size_t)n * sizeof(Op));
    ex->run_origin = malloc((size_t)n * sizeof(int));
    ex->run_row0 = malloc((size_t)n * sizeof(int));
    if (!ex->run_ops || !ex->run_origin || !ex->run_row0) {
        free(last);
        return -1;
    }
    int m = 0;
#define EMIT(i) (ex->run_ops[m] = s->ops[i], ex->run_origin[m] = (i), ex->run_row0[m++] = 0)
    for (int i = 0; i < first_update; i++) {
        EMIT(i);
        for (int k = 0; k < ex->n_buckets; k++)
            if (last[k] == i) EMIT(ex->buckets[k].op_start);
    }
    for (int k = 0; k < ex->n_buckets; k++) {
        EMIT(ex->buckets[k].op_wait);
        for (int i = first_update; i < s->n_ops; i++)
            if (s->ops[i].kind == OP_ADAMW && bucket_of_layer(ex, s->ops[i].layer) == k)
                m += cut_op(s, i, ranges, n_ranges, ex->run_ops + m, ex->run_origin + m, ex->run_row0 + m);
    }
#undef EMIT
    free(last);
    ex->run = *s; // after the appends: ops and buffers may have moved
    ex->run.ops = ex->run_ops;
    ex->run.n_ops = m;
    ex->run.comm = comm_op;
    ex->run.comm_context = ex;
    return 0;
}

// Floats this rank sends in one bucketed collective of partition p: every
// shard but its own (reduce-scatter), or, all-gather, every shard but the
// next rank's (ring) or its own to every other rank (direct).
static size_t sent_reduce(const Executor *ex, const Partition *p) {
    size_t all = 0;
    for (int q = 0; q < ex->ranks; q++) all += shard_elements(p, q);
    return ex->ranks == 1 ? 0 : all - shard_elements(p, ex->rank);
}
static size_t sent_gather(const Executor *ex, const Partition *p) {
    int R = ex->ranks;
    if (R == 1) return 0;
    if (ex->direct) return shard_elements(p, ex->rank) * (size_t)(R - 1);
    size_t all = 0;
    for (int q = 0; q < R; q++) all += shard_elements(p, q);
    return all - shard_elements(p, (ex->rank + 1) % R);
}

// Each rank's share of the batch (the weights of its gradients in the average), the shards of the
// parameters, the scratch of the collectives and their partitions into messages. -1 when out of memory.
static int shard_the_parameters(Executor *ex, const StepDescription *step) {
    const GPT2 *model = step->model;
    int R = ex->ranks;
    ex->weights = malloc(R * sizeof(float));
    ex->shard = malloc((R + 1) * sizeof(size_t));
    size_t scratch = model->num_parameters > BLOCK_FLOATS ? BLOCK_FLOATS : model->num_parameters;
#ifdef GPT2_SMPI
    // shared among the ranks as the gradients are (core/model.c): nothing is added
    ex->acc = SMPI_SHARED_MALLOC(scratch * sizeof(float));
    ex->recv = SMPI_SHARED_MALLOC(scratch * sizeof(float));
#else
    ex->acc = malloc(scratch * sizeof(float));
    ex->recv = malloc(scratch * sizeof(float));
#endif
    if (!ex->weights || !ex->shard || !ex->acc || !ex->recv) return -1;
    int B = global_B > 0 ? global_B : step->B;
    for (int q = 0; q < R; q++) {
        int b0, b1;
        dist_share(B, q, R, &b0, &b1);
        ex->weights[q] = (float)(b1 - b0) / (float)B;
    }
    shard_boundaries(model, R, ex->shard);
    // the same on every rank: the receiver cuts a shard where its sender does
    size_t widest = 0;
    for (int q = 0; q < R; q++)
        if (ex->shard[q + 1] - ex->shard[q] > widest) widest = ex->shard[q + 1] - ex->shard[q];
    size_t ring_block = (widest + RING_DEPTH - 1) / RING_DEPTH;
    ring_block = ring_block > BLOCK_FLOATS ? BLOCK_FLOATS : ring_block < 1 ? 1 : ring_block;
    if (partition_of_ranges(&ex->reduce_blocks, R, ex->shard, ex->direct ? BLOCK_FLOATS : ring_block) != 0 ||
        partition_of_ranges(&ex->gather_blocks, R, ex->shard, BLOCK_FLOATS) != 0)
        return -1;
    return 0;
}

// The first of the update's operations, which follow every forward and backward one (step.c:
// describe_update comes last); -1 when the update holds anything but AdamW.
static int first_update_op(const StepDescription *step) {
    int first_update = step->n_ops;
    for (int i = 0; i < step->n_ops; i++)
        if (step->ops[i].phase == PHASE_UPDATE) {
            first_update = i;
            break;
        }
    for (int i = first_update; i < step->n_ops; i++)
        if (step->ops[i].kind != OP_ADAMW) return -1;
    return first_update;
}

// --overlap on: the buckets, their communication thread and one run of the inner executor over
// the whole step with the buckets' operations in it. 0, or -1 with `err` set.
static int create_overlapped(Executor *ex, const ExecOptions *options, int first_update, Error *err) {
    if (build_buckets(ex) != 0 || build_run(ex, first_update) != 0) {
        set_error(err, "out of memory creating the executor");
        return -1;
    }
    if (pthread_create(&ex->comm_thread, NULL, communicate, ex) != 0) {
        set_error(err, "cannot start the communication thread");
        return -1;
    }
    ex->comm_started = 1;
    if (!(ex->run_ex = ex->inner->create(&ex->run, options, err))) return -1;
    size_t sent = ex->sharded ? sent_gather(ex, &ex->params) : 0;
    for (int k = 0; k < ex->n_buckets; k++)
        sent += sent_reduce(ex, &ex->buckets[k].reduce) + (ex->sharded ? 0 : sent_gather(ex, &ex->buckets[k].gather));
    ex->bytes_per_step = (long long)sent * (long long)sizeof(float);
    return 0;
}

// --overlap off: the forward and backward passes, then the exchange, then the update (of this rank's
// shard where it is sharded), each run by an inner executor of its own. 0, or -1 with `err` set.
static int create_after_backward(Executor *ex, StepDescription *step, const ExecOptions *options, int first_update,
                                 Error *err) {
    const GPT2 *model = step->model;
    int R = ex->ranks, n_update = step->n_ops - first_update, next = (ex->rank + 1) % R;
    ex->update_ops = malloc((n_update > 0 ? n_update : 1) * sizeof(Op));
    ex->update_origin = malloc((n_update > 0 ? n_update : 1) * sizeof(int));
    ex->update_row0 = malloc((n_update > 0 ? n_update : 1) * sizeof(int));
    if (!ex->update_ops || !ex->update_origin || !ex->update_row0) {
        set_error(err, "out of memory creating the executor");
        return -1;
    }
    ex->update = *step;
    if (ex->sharded)
        cut_update(ex, first_update, ex->shard[ex->rank], ex->shard[ex->rank + 1]);
    else
        cut_update(ex, first_update, 0, model->num_parameters);
    ex->op_reduce = step_add_comm(step, PHASE_UPDATE, "grad reduce-scatter");
    ex->op_gather = step_add_comm(step, PHASE_UPDATE, ex->sharded ? "param all-gather" : "grad all-gather");
    if (ex->op_reduce < 0 || ex->op_gather < 0) {
        set_error(err, "out of memory creating the executor");
        return -1;
    }
    ex->compute = *step; // after the appends: ops may have moved
    ex->compute.n_ops = ex->n_compute;
    if (!(ex->compute_ex = ex->inner->create(&ex->compute, options, err)) ||
        !(ex->update_ex = ex->inner->create(&ex->update, options, err)))
        return -1;
    // floats sent per step. direct: every other shard's gradients, then this shard (parameters or
    // reduced gradients) to every other rank. ring: every shard but this rank's in the reduce-scatter,
    // every shard but the next rank's in the all-gather.
    size_t n = model->num_parameters, mine = ex->shard[ex->rank + 1] - ex->shard[ex->rank];
    size_t sent = ex->direct ? (n - mine) + mine * (size_t)(R - 1)
                             : R == 1 ? 0 : (n - mine) + (n - (ex->shard[next + 1] - ex->shard[next]));
    ex->bytes_per_step = (long long)sent * (long long)sizeof(float);
    return 0;
}

// The requests of the largest exchange: a send and a receive of every block of every shard, and the
// losses. -1 when out of memory.
static int allocate_requests(Executor *ex) {
    int R = ex->ranks;
    int most = blocks_in(&ex->reduce_blocks, R) > blocks_in(&ex->gather_blocks, R) ? blocks_in(&ex->reduce_blocks, R)
                                                                                   : blocks_in(&ex->gather_blocks, R);
    for (int k = 0; k < ex->n_buckets; k++) {
        if (blocks_in(&ex->buckets[k].reduce, R) > most) most = blocks_in(&ex->buckets[k].reduce, R);
        if (blocks_in(&ex->buckets[k].gather, R) > most) most = blocks_in(&ex->buckets[k].gather, R);
    }
    if (blocks_in(&ex->params, R) > most) most = blocks_in(&ex->params, R);
    ex->requests = malloc((2 * (size_t)most + 4 * (size_t)R + 8) * sizeof(MPI_Request));
    return ex->requests ? 0 : -1;
}

Executor *executor_create(StepDescription *step, const ExecOptions *options, Error *err) {
    const char *name = options->executor ? options->executor : "forkjoin";
    const Inner *inner = inner_named(name);
    if (!inner) {
        dist_check_executor(options, err);
        return NULL;
    }
    Executor *ex = calloc(1, sizeof(*ex));
    if (!ex) {
        set_error(err, "out of memory creating the executor");
        return NULL;
    }
    ex->step = step;
    ex->inner = inner;
    ex->sharded = options->sharded_update;
    ex->direct = options->direct_collective;
    ex->overlap = options->overlap;
    ex->threads = options->threads > 0 ? options->threads : omp_get_max_threads();
    ex->rank = world_rank;
    ex->ranks = world_size;
    if (ex->overlap) {
        pthread_mutex_init(&ex->comm_lock, NULL);
        pthread_cond_init(&ex->comm_wake, NULL);
        pthread_cond_init(&ex->comm_done, NULL);
    }
    if (shard_the_parameters(ex, step) != 0) {
        set_error(err, "out of memory creating the executor");
        executor_destroy(ex);
        return NULL;
    }
    int first_update = first_update_op(step);
    if (first_update < 0) {
        set_error(err, "the step's update phase holds an operation other than AdamW");
        executor_destroy(ex);
        return NULL;
    }
    ex->n_compute = first_update;
    if ((ex->overlap ? create_overlapped(ex, options, first_update, err)
                     : create_after_backward(ex, step, options, first_update, err)) != 0) {
        executor_destroy(ex);
        return NULL;
    }
    ex->bytes_per_step += (long long)(ex->ranks - 1) * (long long)sizeof(float); // the losses
    if (allocate_requests(ex) != 0) {
        set_error(err, "out of memory creating the executor");
        executor_destroy(ex);
        return NULL;
    }
    return ex;
}

void executor_info(const Executor *ex, ExecutorInfo *info) {
    if (ex->overlap) {
        ex->inner->info(ex->run_ex, info);
        // and the communication thread's records
        info->chunks_per_step += ex->n_buckets + (ex->sharded ? 1 : 0);
        return;
    }
    ExecutorInfo c, u;
    ex->inner->info(ex->compute_ex, &c);
    ex->inner->info(ex->update_ex, &u);
    *info = c;
    info->chunks_per_step = c.chunks_per_step + u.chunks_per_step + 2; // and the two comm records
    info->edges_per_step = c.edges_per_step + u.edges_per_step;
}

// The records of one node executor's run since `before` name its own
// operations: make them the whole step's, rows and all. The communication
// thread's (thread -1) name the whole step's already.
static void trace_to_step(Trace *trace, size_t before, const int *origin, const int *row0) {
    if (!trace || !trace->records) return;
    for (size_t i = before; i < trace->count && i < trace->capacity; i++) {
        TraceRecord *r = &trace->records[i];
        if (r->thread < 0) continue;
        r->range.x0 += row0[r->op];
        r->range.x1 += row0[r->op];
        r->op = origin[r->op];
    }
}

// --overlap on: one run of the node executor does the forward and backward
// passes, the buckets' reductions beside them, and the update.
static void train_overlapped(Executor *ex, int it, float *losses, StepReport *report, Trace *trace) {
    GPT2 *model = ex->step->model;
    StepReport part;
    ex->run.adamw = ex->step->adamw;
    pthread_mutex_lock(&ex->comm_lock);
    ex->generation++;
    ex->trace = trace;
    ex->iteration = it;
    ex->comm_busy_s = 0.0;
    pthread_mutex_unlock(&ex->comm_lock);
    size_t before = trace && trace->records ? trace->count : 0;
    ex->inner->train(ex->run_ex, it, 1, losses, &part, trace);
    trace_to_step(trace, before, ex->run_origin, ex->run_row0);
    for (int p = 0; p < NUM_PHASES; p++) report->phase_s[p] = part.phase_s[p];
    // every wait operation has returned: the communication thread is idle
    pthread_mutex_lock(&ex->comm_lock);
    report->comm_s = ex->comm_busy_s;
    pthread_mutex_unlock(&ex->comm_lock);
    double t0 = now_seconds();
    reduce_losses(ex, &losses[it]);
    if (ex->sharded) all_gather(ex, model->params_memory, &ex->params, MAIN_THREAD_WAITS);
    double t1 = now_seconds();
    if (ex->sharded) trace_comm(trace, it, ex->op_gather, 0, t0, t1);
    report->comm_s += t1 - t0;
}

void executor_train(Executor *ex, int first, int n, float *losses, StepReport *reports, Trace *trace) {
    GPT2 *model = ex->step->model;
    for (int it = first; it < first + n; it++) {
        StepReport *report = &reports[it - first], part;
        *report = (StepReport){0};
        double step_start = now_seconds();
        if (ex->overlap) {
            train_overlapped(ex, it, losses, report, trace);
            report->step_s = now_seconds() - step_start;
            report->loss = losses[it];
            continue;
        }
        // the front may change the settings between steps (--verify's probe step)
        ex->update.adamw = ex->step->adamw;

#ifdef GPT2_SMPI
        (void)part;
        smpi_execute(smpi_compute_s);
        losses[it] = 0.0f;
        report->phase_s[PHASE_FORWARD] = now_seconds() - step_start;
#else
        ex->inner->train(ex->compute_ex, it, 1, losses, &part, trace);
        report->phase_s[PHASE_FORWARD] = part.phase_s[PHASE_FORWARD];
        report->phase_s[PHASE_BACKWARD] = part.phase_s[PHASE_BACKWARD];
#endif

        double t0 = now_seconds();
        reduce_losses(ex, &losses[it]);
        if (ex->direct) reduce_scatter_direct(ex, model->grads_memory, &ex->reduce_blocks, MAIN_THREAD_WAITS);
        else reduce_scatter_ring(ex, model->grads_memory, &ex->reduce_blocks, (Where){ex->threads, 0});
        if (!ex->sharded) all_gather(ex, model->grads_memory, &ex->gather_blocks, MAIN_THREAD_WAITS);
        double t1 = now_seconds();
        trace_comm(trace, it, ex->op_reduce, 0, t0, t1);
        report->comm_s += t1 - t0;

#ifdef GPT2_SMPI
        smpi_execute(smpi_update_s);
        report->phase_s[PHASE_UPDATE] = now_seconds() - t1;
        size_t before = trace && trace->records ? trace->count : 0;
#else
        size_t before = trace && trace->records ? trace->count : 0;
        ex->inner->train(ex->update_ex, it, 1, losses, &part, trace);
        report->phase_s[PHASE_UPDATE] = part.phase_s[PHASE_UPDATE];
#endif
        trace_to_step(trace, before, ex->update_origin, ex->update_row0);

        if (ex->sharded) {
            double t2 = now_seconds();
            all_gather(ex, model->params_memory, &ex->gather_blocks, MAIN_THREAD_WAITS);
            double t3 = now_seconds();
            trace_comm(trace, it, ex->op_gather, 0, t2, t3);
            report->comm_s += t3 - t2;
        }
        report->step_s = now_seconds() - step_start;
        report->loss = losses[it];
    }
}

void executor_destroy(Executor *ex) {
    if (!ex) return;
    if (ex->comm_started) {
        pthread_mutex_lock(&ex->comm_lock);
        ex->stop = 1;
        pthread_cond_signal(&ex->comm_wake);
        pthread_mutex_unlock(&ex->comm_lock);
        pthread_join(ex->comm_thread, NULL);
    }
    if (ex->overlap) {
        pthread_mutex_destroy(&ex->comm_lock);
        pthread_cond_destroy(&ex->comm_wake);
        pthread_cond_destroy(&ex->comm_done);
    }
    if (ex->compute_ex) ex->inner->destroy(ex->compute_ex);
    if (ex->update_ex) ex->inner->destroy(ex->update_ex);
    if (ex->run_ex) ex->inner->destroy(ex->run_ex);
    for (int k = 0; ex->buckets && k < ex->n_buckets; k++) {
        partition_free(&ex->buckets[k].reduce);
        partition_free(&ex->buckets[k].gather);
    }
    partition_free(&ex->reduce_blocks);
    partition_free(&ex->gather_blocks);
    partition_free(&ex->params);
    free(ex->buckets);
    free(ex->mine);
    free(ex->queue);
    free(ex->done);
    free(ex->run_ops);
    free(ex->run_origin);
    free(ex->run_row0);
    free(ex->update_ops);
    free(ex->update_origin);
    free(ex->update_row0);
    free(ex->weights);
    free(ex->shard);
    free(ex->acc);
    free(ex->recv);
    free(ex->requests);
    free(ex);
}

// what the front needs besides training

long long dist_comm_bytes_per_step(const Executor *ex) { return ex->bytes_per_step; }

long long dist_comm_message_bytes(void) { return (long long)(BLOCK_FLOATS * sizeof(float)); }

void dist_gather_gradients(Executor *ex) {
    if (ex->sharded)
        all_gather(ex, ex->step->model->grads_memory, ex->overlap ? &ex->params : &ex->gather_blocks,
                   MAIN_THREAD_WAITS);
}

float *dist_gather_sequences(const float *mine, size_t seq_floats) {
    int R = world_size, n_req = 0;
    float *all = malloc((size_t)global_B * seq_floats * sizeof(float));
    MPI_Request *requests = malloc(2 * (size_t)R * sizeof(MPI_Request));
    if (!all || !requests) {
        free(all);
        free(requests);
        return NULL;
    }
    int b0, b1;
    dist_share(global_B, world_rank, R, &b0, &b1);
    memcpy(all + (size_t)b0 * seq_floats, mine, (size_t)(b1 - b0) * seq_floats * sizeof(float));
    for (int q = 0; q < R; q++) {
        if (q == world_rank) continue;
        int q0, q1;
        dist_share(global_B, q, R, &q0, &q1);
        MPI_Isend(mine, (int)((size_t)(b1 - b0) * seq_floats), MPI_FLOAT, q, TAG_GATHER, MPI_COMM_WORLD,
                  &requests[n_req++]);
        MPI_Irecv(all + (size_t)q0 * seq_floats, (int)((size_t)(q1 - q0) * seq_floats), MPI_FLOAT, q, TAG_GATHER,
                  MPI_COMM_WORLD, &requests[n_req++]);
    }
    MPI_Waitall(n_req, requests, MPI_STATUSES_IGNORE);
    free(requests);
    return all;
}

void dist_reset_moments(Executor *ex) {
    const GPT2 *model = ex->step->model;
    Span whole = {ex->sharded ? ex->shard[ex->rank] : 0,
                  ex->sharded ? ex->shard[ex->rank + 1] : model->num_parameters, 1};
    const Span *kept = ex->sharded && ex->overlap ? ex->mine : &whole;
    for (int i = 0; i < (ex->sharded && ex->overlap ? ex->n_mine : 1); i++) {
        memset(model->m_memory + kept[i].lo, 0, (kept[i].hi - kept[i].lo) * sizeof(float));
        memset(model->v_memory + kept[i].lo, 0, (kept[i].hi - kept[i].lo) * sizeof(float));
    }
}

void dist_placement_json(FILE *out, const char *fragment) {
    char text[4096];
    if (world_rank != 0) {
        snprintf(text, sizeof(text), "%s", fragment);
        MPI_Send(text, (int)strlen(text) + 1, MPI_CHAR, 0, TAG_TEXT, MPI_COMM_WORLD);
        return;
    }
    fprintf(out, "\"rank_placement\": [%s", fragment);
    for (int q = 1; q < world_size; q++) {
        MPI_Recv(text, (int)sizeof(text), MPI_CHAR, q, TAG_TEXT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        text[sizeof(text) - 1] = '\0';
        fprintf(out, ", %s", text);
    }
    fprintf(out, "]");
}

void dist_sync_trace_origin(Trace *trace) {
    MPI_Barrier(MPI_COMM_WORLD);
    trace->origin = now_seconds();
}

void dist_gather_trace(Trace *trace, int threads_per_rank) {
    long long count = (long long)(trace->count < trace->capacity ? trace->count : trace->capacity);
    // the communication thread's records (thread -1): rank r's as thread R x threads + r, after every worker
    for (long long i = 0; i < count; i++)
        if (trace->records[i].thread < 0) trace->records[i].thread = world_size * threads_per_rank + world_rank;
    if (world_rank != 0) {
        MPI_Send(&count, 1, MPI_LONG_LONG, 0, TAG_TRACE, MPI_COMM_WORLD);
        MPI_Send(trace->records, (int)(count * (long long)sizeof(TraceRecord)), MPI_BYTE, 0, TAG_TRACE,
                 MPI_COMM_WORLD);
        trace->count = 0;
        return;
    }
    trace->count = (size_t)count;
    for (int q = 1; q < world_size; q++) {
        long long more;
        MPI_Recv(&more, 1, MPI_LONG_LONG, q, TAG_TRACE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        // at least one record: with nothing traced (--steps 0) realloc of 0 bytes may return NULL
        size_t records = trace->count + (size_t)more > 0 ? trace->count + (size_t)more : 1;
        TraceRecord *grown = realloc(trace->records, records * sizeof(TraceRecord));
        if (!grown) {
            fprintf(stderr, "gpt2-mpi: out of memory gathering the trace\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        trace->records = grown;
        MPI_Recv(trace->records + trace->count, (int)(more * (long long)sizeof(TraceRecord)), MPI_BYTE, q, TAG_TRACE,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t i = trace->count; i < trace->count + (size_t)more; i++)
            if (trace->records[i].thread < world_size * threads_per_rank)
                trace->records[i].thread += q * threads_per_rank;
        trace->count += (size_t)more;
    }
    trace->capacity = trace->count;
}
