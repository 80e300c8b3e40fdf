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
// The step description is the core's, run in two parts by the chosen node
// executor: its forward and backward operations, and its AdamW operations
// (copies cut to this rank's shard when sharded); two OP_COMM operations
// appended to it name the communication in traces and in --describe. The
// description itself stays the same on every rank, so that one rank can write
// every rank's trace records against it.
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
// matter). The order depends on R and the collective only: a run is
// bit-identical to a repeat with the same rank count whatever the executor
// and the threads per rank (within a rank every executor is bit-identical to
// seq); at R <= 2 the two collectives give the same bits. The all-gathers
// only copy. The losses: every rank sends its mean loss to every other, which
// sum them in rank order.
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
#include <stdlib.h>
#include <string.h>
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

static int world_rank, world_size = 1, global_B;

void dist_init(int *argc, char ***argv) {
    int provided;
    // MPI is called from the main thread only, outside parallel regions
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
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
    size_t ring_block;          // floats a message of the ring's reduce-scatter carries at most
    int threads;                // the rank's threads, for the reduction's adds
    int rank, ranks;
    float *weights;             // (R) B_r / B
    size_t *shard;              // (R + 1) shard q is parameter elements [shard[q], shard[q+1])
    float *acc, *recv;          // (BLOCK_FLOATS) reduction scratch
    MPI_Request *requests;
    long long bytes_per_step;   // sent by this rank
};

static size_t blocks_of(size_t n) { return (n + BLOCK_FLOATS - 1) / BLOCK_FLOATS; }

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

// The update's operations: copies of the step's AdamW operations from
// `first` on, each cut to the rows of [lo, hi) it holds (and dropped when it
// holds none), in the step's order. The arguments move with the rows; m and v
// stay where the model keeps them, so the other shards' moments are never
// touched (the model's zeroed pages of them never become resident).
static void cut_update(Executor *ex, int first, size_t lo, size_t hi) {
    const StepDescription *s = ex->step;
    const float *base = s->model->params_memory;
    int kept = 0;
    for (int i = first; i < s->n_ops; i++) {
        Op op = s->ops[i];
        size_t width = (size_t)op.width;
        size_t s0 = (size_t)(op.arg[ADAMW_PARAMS] - base), s1 = s0 + (size_t)op.split_channels * width;
        size_t i0 = s0 > lo ? s0 : lo, i1 = s1 < hi ? s1 : hi;
        if (i0 >= i1) continue;
        size_t skip = i0 - s0;
        for (int a = ADAMW_PARAMS; a <= ADAMW_V; a++) op.arg[a] += skip;
        op.split_channels = (int)((i1 - i0) / width);
        ex->update_origin[kept] = i;
        ex->update_row0[kept] = (int)(skip / width);
        ex->update_ops[kept++] = op;
    }
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
#endif
    if (inner_named(name)) return 0;
    int at = snprintf(err->message, sizeof(err->message), "--executor: unknown executor '%s' (known:", name);
    for (int i = 0; i < N_INNERS && at < (int)sizeof(err->message); i++)
        at += snprintf(err->message + at, sizeof(err->message) - at, "%s %s", i ? "," : "", INNERS[i].name);
    if (at < (int)sizeof(err->message)) snprintf(err->message + at, sizeof(err->message) - at, ")");
    return -1;
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
    ex->threads = options->threads > 0 ? options->threads : omp_get_max_threads();
    ex->rank = world_rank;
    ex->ranks = world_size;
    const GPT2 *model = step->model;
    int R = ex->ranks;
    ex->weights = malloc(R * sizeof(float));
    ex->shard = malloc((R + 1) * sizeof(size_t));
    size_t scratch = blocks_of(model->num_parameters) > 1 ? BLOCK_FLOATS : model->num_parameters;
#ifdef GPT2_SMPI
    // shared among the ranks as the gradients are (core/model.c): nothing is added
    ex->acc = SMPI_SHARED_MALLOC(scratch * sizeof(float));
    ex->recv = SMPI_SHARED_MALLOC(scratch * sizeof(float));
#else
    ex->acc = malloc(scratch * sizeof(float));
    ex->recv = malloc(scratch * sizeof(float));
#endif
    // at most: a send and a receive of every block of every shard, and the losses; the ring's sends
    ex->requests = malloc((2 * (blocks_of(model->num_parameters) + R) + 2 * R + (size_t)RING_DEPTH * R + R) *
                          sizeof(MPI_Request));
    if (!ex->weights || !ex->shard || !ex->acc || !ex->recv || !ex->requests) goto oom;
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
    ex->ring_block = (widest + RING_DEPTH - 1) / RING_DEPTH;
    if (ex->ring_block > BLOCK_FLOATS) ex->ring_block = BLOCK_FLOATS;
    if (ex->ring_block < 1) ex->ring_block = 1;

    // the update's operations follow every forward and backward one (step.c: describe_update comes last)
    int first_update = step->n_ops;
    for (int i = 0; i < step->n_ops; i++)
        if (step->ops[i].phase == PHASE_UPDATE) {
            first_update = i;
            break;
        }
    for (int i = first_update; i < step->n_ops; i++)
        if (step->ops[i].kind != OP_ADAMW) {
            set_error(err, "the step's update phase holds an operation other than AdamW");
            executor_destroy(ex);
            return NULL;
        }
    ex->n_compute = first_update;
    int n_update = step->n_ops - first_update;
    ex->update_ops = malloc((n_update > 0 ? n_update : 1) * sizeof(Op));
    ex->update_origin = malloc((n_update > 0 ? n_update : 1) * sizeof(int));
    ex->update_row0 = malloc((n_update > 0 ? n_update : 1) * sizeof(int));
    if (!ex->update_ops || !ex->update_origin || !ex->update_row0) goto oom;
    ex->update = *step;
    if (ex->sharded)
        cut_update(ex, first_update, ex->shard[ex->rank], ex->shard[ex->rank + 1]);
    else
        cut_update(ex, first_update, 0, model->num_parameters);
    ex->op_reduce = step_add_comm(step, PHASE_UPDATE, "grad reduce-scatter");
    ex->op_gather = step_add_comm(step, PHASE_UPDATE, ex->sharded ? "param all-gather" : "grad all-gather");
    if (ex->op_reduce < 0 || ex->op_gather < 0) goto oom;
    ex->compute = *step; // after the appends: ops may have moved
    ex->compute.n_ops = ex->n_compute;
    if (!(ex->compute_ex = inner->create(&ex->compute, options, err)) ||
        !(ex->update_ex = inner->create(&ex->update, options, err))) {
        executor_destroy(ex);
        return NULL;
    }
    // floats sent per step. direct: every other shard's gradients, then this shard (parameters or
    // reduced gradients) to every other rank. ring: every shard but this rank's in the reduce-scatter,
    // every shard but the next rank's in the all-gather.
    size_t n = model->num_parameters, mine = ex->shard[ex->rank + 1] - ex->shard[ex->rank];
    int next = (ex->rank + 1) % R;
    size_t sent = ex->direct ? (n - mine) + mine * (size_t)(R - 1)
                             : R == 1 ? 0 : (n - mine) + (n - (ex->shard[next + 1] - ex->shard[next]));
    ex->bytes_per_step = (long long)sent * (long long)sizeof(float)
                         + (long long)(R - 1) * (long long)sizeof(float); // the losses
    return ex;
oom:
    set_error(err, "out of memory creating the executor");
    executor_destroy(ex);
    return NULL;
}

void executor_info(const Executor *ex, ExecutorInfo *info) {
    ExecutorInfo c, u;
    ex->inner->info(ex->compute_ex, &c);
    ex->inner->info(ex->update_ex, &u);
    *info = c;
    info->chunks_per_step = c.chunks_per_step + u.chunks_per_step + 2; // and the two comm records
    info->edges_per_step = c.edges_per_step + u.edges_per_step;
}

// ----------------------------------------------------------------------------
// communication: point-to-point, in a fixed order

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

static size_t block_count(size_t at, size_t end) { return end - at < BLOCK_FLOATS ? end - at : BLOCK_FLOATS; }

// Posts sends of floats [lo, hi) of buf to rank `to`, block by block, into ex->requests from *n_req.
static void send_blocks(Executor *ex, const float *buf, size_t lo, size_t hi, int to, int tag, int *n_req) {
    for (size_t at = lo; at < hi; at += BLOCK_FLOATS)
        MPI_Isend(buf + at, (int)block_count(at, hi), MPI_FLOAT, to, tag, MPI_COMM_WORLD, &ex->requests[(*n_req)++]);
}

// direct: averages the ranks' gradients into this rank's shard of grads (the
// other shards keep this rank's own gradients). Blocks of shard q go from
// every rank to rank q, which sums them in rank order (the module comment).
static void reduce_scatter_direct(Executor *ex, float *grads) {
    int R = ex->ranks, me = ex->rank, n_req = 0;
    for (int q = 0; q < R; q++)
        if (q != me) send_blocks(ex, grads, ex->shard[q], ex->shard[q + 1], q, TAG_REDUCE, &n_req);
    // messages from one rank with one tag arrive in the order sent: block after block
    for (size_t at = ex->shard[me]; at < ex->shard[me + 1]; at += BLOCK_FLOATS) {
        size_t count = block_count(at, ex->shard[me + 1]);
        for (int q = 0; q < R; q++) {
            const float *g = grads + at;
            if (q != me) {
                MPI_Recv(ex->recv, (int)count, MPI_FLOAT, q, TAG_REDUCE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
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
    MPI_Waitall(n_req, ex->requests, MPI_STATUSES_IGNORE);
}

// ring: averages the ranks' gradients into this rank's shard of grads; the
// other shards end up holding partial sums. Step s receives the partial sum of
// shard me-s-2 from the previous rank block by block (the next block's
// receive posted before this one is added: two buffers) and adds this rank's
// weighted gradients in place; that shard is the one step s+1 forwards, so
// each block goes on to the next rank as soon as it is added: the steps
// pipeline, and the link never waits for a whole shard's adds. Step 0 sends
// the raw gradients of shard me-1 (the receiver weighs them). A block being
// sent is never written again.
static void reduce_scatter_ring(Executor *ex, float *grads) {
    int R = ex->ranks, me = ex->rank, next = (me + 1) % R, prev = (me + R - 1) % R, n_req = 0;
    float w_me = ex->weights[me], w_prev = ex->weights[prev];
    if (R == 1) {
        for (size_t i = ex->shard[0]; i < ex->shard[1]; i++) grads[i] = w_me * grads[i];
        return;
    }
    size_t block = ex->ring_block;
    int first = (me + R - 1) % R;
    for (size_t at = ex->shard[first]; at < ex->shard[first + 1]; at += block)
        MPI_Isend(grads + at, (int)(ex->shard[first + 1] - at < block ? ex->shard[first + 1] - at : block), MPI_FLOAT,
                  next, TAG_REDUCE, MPI_COMM_WORLD, &ex->requests[n_req++]);
    float *buf[2] = {ex->recv, ex->acc};
    for (int s = 0; s < R - 1; s++) {
        int recv_q = ((me - s - 2) % R + R) % R;
        size_t lo = ex->shard[recv_q], hi = ex->shard[recv_q + 1];
        MPI_Request pending[2];
        if (lo < hi)
            MPI_Irecv(buf[0], (int)(hi - lo < block ? hi - lo : block), MPI_FLOAT, prev, TAG_REDUCE, MPI_COMM_WORLD,
                      &pending[0]);
        int b = 0;
        for (size_t at = lo; at < hi; at += block, b ^= 1) {
            size_t count = hi - at < block ? hi - at : block, after = at + count;
            if (after < hi)
                MPI_Irecv(buf[b ^ 1], (int)(hi - after < block ? hi - after : block), MPI_FLOAT, prev, TAG_REDUCE,
                          MPI_COMM_WORLD, &pending[b ^ 1]);
            MPI_Wait(&pending[b], MPI_STATUS_IGNORE);
            const float *in = buf[b];
            float *g = grads + at;
#ifdef GPT2_SMPI
            (void)in;
            (void)w_prev;
            smpi_execute_flops(12.0 * (double)count); // g = in + w g: in read, g read and written
#else
            // elementwise: the rank's threads change no sum's order
            if (s == 0) {
#pragma omp parallel for schedule(static) num_threads(ex->threads) if (count >= PARALLEL_ADD)
                for (size_t i = 0; i < count; i++) g[i] = w_prev * in[i] + w_me * g[i];
            } else {
#pragma omp parallel for schedule(static) num_threads(ex->threads) if (count >= PARALLEL_ADD)
                for (size_t i = 0; i < count; i++) g[i] = in[i] + w_me * g[i];
            }
#endif
            if (s + 1 < R - 1)
                MPI_Isend(g, (int)count, MPI_FLOAT, next, TAG_REDUCE, MPI_COMM_WORLD, &ex->requests[n_req++]);
        }
    }
    MPI_Waitall(n_req, ex->requests, MPI_STATUSES_IGNORE);
}

// Averages the ranks' gradients into this rank's shard of grads and their mean losses into *loss.
static void reduce_scatter(Executor *ex, float *grads, float *loss) {
    reduce_losses(ex, loss);
    if (ex->direct) reduce_scatter_direct(ex, grads);
    else reduce_scatter_ring(ex, grads);
}

// Every rank's shard of buf to every other rank, in place. direct: every
// shard to every rank at once; ring: R-1 steps around the ring, each
// receiving straight into buf the shard the next step forwards.
static void all_gather(Executor *ex, float *buf) {
    int R = ex->ranks, me = ex->rank;
    if (ex->direct) {
        int n_req = 0;
        for (int q = 0; q < R; q++) {
            if (q == me) continue;
            send_blocks(ex, buf, ex->shard[me], ex->shard[me + 1], q, TAG_GATHER, &n_req);
            for (size_t at = ex->shard[q]; at < ex->shard[q + 1]; at += BLOCK_FLOATS)
                MPI_Irecv(buf + at, (int)block_count(at, ex->shard[q + 1]), MPI_FLOAT, q, TAG_GATHER,
                          MPI_COMM_WORLD, &ex->requests[n_req++]);
        }
        MPI_Waitall(n_req, ex->requests, MPI_STATUSES_IGNORE);
        return;
    }
    int next = (me + 1) % R, prev = (me + R - 1) % R;
    for (int s = 0; s < R - 1; s++) {
        int send_q = ((me - s) % R + R) % R, recv_q = ((me - s - 1) % R + R) % R, n_req = 0;
        for (size_t at = ex->shard[recv_q]; at < ex->shard[recv_q + 1]; at += BLOCK_FLOATS)
            MPI_Irecv(buf + at, (int)block_count(at, ex->shard[recv_q + 1]), MPI_FLOAT, prev, TAG_GATHER,
                      MPI_COMM_WORLD, &ex->requests[n_req++]);
        send_blocks(ex, buf, ex->shard[send_q], ex->shard[send_q + 1], next, TAG_GATHER, &n_req);
        MPI_Waitall(n_req, ex->requests, MPI_STATUSES_IGNORE);
    }
}

// A trace record of a communication operation, as run_chunk makes for kernels.
static void trace_comm(Trace *trace, int iteration, int op, double start, double end) {
    if (!trace || !trace->records) return;
    size_t slot = __atomic_fetch_add(&trace->count, 1, __ATOMIC_RELAXED);
    if (slot < trace->capacity)
        trace->records[slot] =
            (TraceRecord){iteration, op, 0, (Range){0, 1, 0, 1, 0, 0}, start - trace->origin, end - trace->origin,
                          -1.0}; // no CPU time: a wait for messages, not a kernel
}

void executor_train(Executor *ex, int first, int n, float *losses, StepReport *reports, Trace *trace) {
    GPT2 *model = ex->step->model;
    for (int it = first; it < first + n; it++) {
        StepReport *report = &reports[it - first], part;
        *report = (StepReport){0};
        double step_start = now_seconds();
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
        reduce_scatter(ex, model->grads_memory, &losses[it]);
        if (!ex->sharded) all_gather(ex, model->grads_memory);
        double t1 = now_seconds();
        trace_comm(trace, it, ex->op_reduce, t0, t1);
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
        // the update's records name its own operations: make them the whole step's, rows and all
        if (trace && trace->records)
            for (size_t i = before; i < trace->count && i < trace->capacity; i++) {
                TraceRecord *r = &trace->records[i];
                int row0 = ex->update_row0[r->op];
                r->op = ex->update_origin[r->op];
                r->range.x0 += row0;
                r->range.x1 += row0;
            }

        if (ex->sharded) {
            double t2 = now_seconds();
            all_gather(ex, model->params_memory);
            double t3 = now_seconds();
            trace_comm(trace, it, ex->op_gather, t2, t3);
            report->comm_s += t3 - t2;
        }
        report->step_s = now_seconds() - step_start;
        report->loss = losses[it];
    }
}

void executor_destroy(Executor *ex) {
    if (!ex) return;
    if (ex->compute_ex) ex->inner->destroy(ex->compute_ex);
    if (ex->update_ex) ex->inner->destroy(ex->update_ex);
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

// ----------------------------------------------------------------------------
// what the front needs besides training

long long dist_comm_bytes_per_step(const Executor *ex) { return ex->bytes_per_step; }

long long dist_comm_message_bytes(void) { return (long long)(BLOCK_FLOATS * sizeof(float)); }

void dist_gather_gradients(Executor *ex) {
    if (ex->sharded) all_gather(ex, ex->step->model->grads_memory);
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
    size_t lo = ex->sharded ? ex->shard[ex->rank] : 0;
    size_t hi = ex->sharded ? ex->shard[ex->rank + 1] : model->num_parameters;
    memset(model->m_memory + lo, 0, (hi - lo) * sizeof(float));
    memset(model->v_memory + lo, 0, (hi - lo) * sizeof(float));
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
        TraceRecord *grown = realloc(trace->records, (trace->count + (size_t)more) * sizeof(TraceRecord));
        if (!grown) {
            fprintf(stderr, "gpt2-mpi: out of memory gathering the trace\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        trace->records = grown;
        MPI_Recv(trace->records + trace->count, (int)(more * (long long)sizeof(TraceRecord)), MPI_BYTE, q, TAG_TRACE,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t i = trace->count; i < trace->count + (size_t)more; i++)
            trace->records[i].thread += q * threads_per_rank;
        trace->count += (size_t)more;
    }
    trace->capacity = trace->count;
}
