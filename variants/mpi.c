// mpi: data-parallel training over MPI processes (ranks). Each rank trains on
// its share of the global batch (B sequences split over R ranks, unevenly when
// R does not divide B) with one of the node-level executors inside it
// (--executor, --threads per rank); the gradients are then averaged across
// ranks and the parameters updated, in one of two ways (--update):
//   replicated  reduce-scatter the gradients, all-gather them, and every rank
//               runs AdamW on every parameter with its own full m and v
//   sharded     ZeRO stage 1: reduce-scatter the gradients, each rank runs
//               AdamW on its shard of the parameters and keeps only that
//               shard's m and v, then all-gather the parameters
// The collectives (--collective ring|direct) and the order of their sums are
// mpi_collectives.c's; each rank's gradients weigh w_r = B_r / B, its share of
// the batch (each g_r is the gradient of rank r's mean loss, so the weighted
// sum is the gradient of the mean loss over the whole batch, as one process
// computes it, up to float rounding).
//
// The step description is the core's. With --overlap off (the default) the
// chosen node executor runs it in two parts: its forward and backward
// operations, and its AdamW operations (copies cut to this rank's shard when
// sharded); between them the main thread reduces the whole gradient buffer,
// and two OP_COMM operations appended to the description name the
// communication in traces. The description itself stays the same on every
// rank, so that one rank can write every rank's trace records against it.
// --overlap on reduces the gradients in buckets during the backward pass
// (mpi_overlap.c).
//
// --comm-threads K cuts every collective into K channels, each run by a
// thread of its own (mpi_collectives.c): with --overlap on, K communication
// threads; with --overlap off, the main thread's exchange on a team of K.
//
// The sums' order depends on R, K, the collective and --overlap only: a run is
// bit-identical to a repeat with the same rank and channel counts whatever the
// executor and the threads per rank (within a rank every executor is
// bit-identical to seq); at R <= 2 the two collectives, the two --overlap
// settings and every K give the same bits, and the direct collective gives the
// same bits with either --overlap and every K at any R (its order is the
// ranks').
//
// Built for SimGrid's SMPI, the node compute is simulated (simulation.h): with --overlap off the
// forward and backward operations are one delay and AdamW another (GPT2_SMPI_COMPUTE_S,
// GPT2_SMPI_UPDATE_S); with --overlap on each operation of ov.run is a delay of its own, read from
// the file GPT2_SMPI_OP_SECONDS names, walked in ov.run's order beside the buckets' collectives.
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "distributed.h"
#include "executor.h"
#include "mpi_collectives.h"
#include "mpi_overlap.h"
#include "simulation.h"

const char *const EXECUTOR_NAME = "mpi";
const int EXECUTOR_WHOLE_LOOP = 0;
// Not read: the front describes the step for the node-level executor (dist_packs_weights).
const int EXECUTOR_PACKS_WEIGHTS = 0;

// ----------------------------------------------------------------------------
// the node-level executors: the threads and chunked variants of variants/LIST,
// compiled a second time with their entry points prefixed by their name and
// their executor type named NodeExecutor (the Makefile's
// -Dexecutor_create=forkjoin_executor_create ... -DExecutor=NodeExecutor, and
// the list INNER_EXECUTORS = INNER(forkjoin) INNER(tasks) ...)

typedef struct NodeExecutor NodeExecutor;

typedef struct {
    const char *name;
    const int *packs_weights; // its EXECUTOR_PACKS_WEIGHTS
    NodeExecutor *(*create)(StepDescription *step, const ExecOptions *options, Error *err);
    void (*info)(const NodeExecutor *ex, ExecutorInfo *info);
    void (*train)(NodeExecutor *ex, int first, int n, float *losses, StepReport *reports, Trace *trace);
    void (*destroy)(NodeExecutor *ex);
} Inner;

#define INNER(name)                                                                                              \
    extern const int name##_EXECUTOR_PACKS_WEIGHTS;                                                              \
    NodeExecutor *name##_executor_create(StepDescription *step, const ExecOptions *options, Error *err);         \
    void name##_executor_info(const NodeExecutor *ex, ExecutorInfo *info);                                       \
    void name##_executor_train(NodeExecutor *ex, int first, int n, float *losses, StepReport *reports,           \
                               Trace *trace);                                                                    \
    void name##_executor_destroy(NodeExecutor *ex);
INNER_EXECUTORS
#undef INNER

static const Inner INNERS[] = {
#define INNER(name)                                                                                              \
    {#name, &name##_EXECUTOR_PACKS_WEIGHTS, name##_executor_create, name##_executor_info, name##_executor_train, \
     name##_executor_destroy},
    INNER_EXECUTORS
#undef INNER
};
#define N_INNERS ((int)(sizeof(INNERS) / sizeof(INNERS[0])))

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

static void set_error(Error *err, const char *message) {
    snprintf(err->message, sizeof(err->message), "%s", message);
}

// built for SMPI, the simulated seconds of a step's forward and backward operations and of its
// AdamW operations
static double simulated_compute_s, simulated_update_s;
// and with --overlap on, each operation's and its label (simulated_ops of them: the step's, in its
// order, which gpt2-mpi --describe lists before its communication operations), from the file
// GPT2_SMPI_OP_SECONDS names
typedef struct {
    double seconds;
    char label[sizeof(((Op *)0)->label)];
} OpSeconds;
static OpSeconds *simulated_op;
static int simulated_ops;
static const char *simulated_op_path;

// Seconds from the environment variable `name` (0 when unset), or -1 with err set. The harness
// sets them in smpirun's environment, which every rank sees.
static double seconds_from_environment(const char *name, Error *err) {
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

// One line of the operations' seconds: "SECONDS LABEL". 0, or -1 with err set.
static int parse_op_seconds(const char *line, int number, OpSeconds *op, Error *err) {
    char *end;
    errno = 0;
    op->seconds = strtod(line, &end);
    const char *label = end + strspn(end, " \t");
    size_t n = strcspn(label, "\r\n");
    if (end == line || errno || !isfinite(op->seconds) || op->seconds < 0 || label == end || n == 0 ||
        n >= sizeof(op->label) || label[n + strspn(label + n, "\r\n")] != '\0') {
        int shown = (int)strcspn(line, "\r\n");
        snprintf(err->message, sizeof(err->message),
                 "GPT2_SMPI_OP_SECONDS: %.200s line %d: expected seconds (a number, 0 or more), a space and the "
                 "operation's label, got '%.*s'", simulated_op_path, number, shown < 80 ? shown : 80, line);
        return -1;
    }
    memcpy(op->label, label, n);
    op->label[n] = '\0';
    return 0;
}

// Built for SMPI with --overlap on: the seconds of each of the step's operations (simulated_op), from
// the file GPT2_SMPI_OP_SECONDS names, one line an operation in the step's order. 0, or -1 with err set.
static int read_op_seconds(Error *err) {
    simulated_op_path = getenv("GPT2_SMPI_OP_SECONDS");
    if (!simulated_op_path || !*simulated_op_path) {
        set_error(err, "--overlap on: GPT2_SMPI_OP_SECONDS must name the file of the operations' simulated seconds "
                       "(perfstudy predict --engine smpi writes it)");
        return -1;
    }
    FILE *f = fopen(simulated_op_path, "r");
    if (!f) {
        snprintf(err->message, sizeof(err->message), "GPT2_SMPI_OP_SECONDS: %.200s: %s", simulated_op_path,
                 strerror(errno));
        return -1;
    }
    char line[256];
    int capacity = 0, failed = 0;
    while (!failed && fgets(line, sizeof(line), f)) {
        if (simulated_ops == capacity) {
            capacity = capacity ? 2 * capacity : 256;
            OpSeconds *grown = realloc(simulated_op, (size_t)capacity * sizeof(OpSeconds));
            if (!grown) {
                set_error(err, "out of memory reading GPT2_SMPI_OP_SECONDS");
                failed = 1;
                break;
            }
            simulated_op = grown;
        }
        failed = parse_op_seconds(line, simulated_ops + 1, &simulated_op[simulated_ops], err) != 0;
        simulated_ops++;
    }
    fclose(f);
    if (!failed && simulated_ops == 0) {
        snprintf(err->message, sizeof(err->message), "GPT2_SMPI_OP_SECONDS: %.200s: no operations", simulated_op_path);
        failed = 1;
    }
    return failed ? -1 : 0;
}

int dist_check_executor(const ExecOptions *options, Error *err) {
    const char *name = options->executor ? options->executor : "forkjoin";
    if (SIMULATED) {
        // read here, before the ranks agree, so that a bad value is one line and exit status 2
        if ((simulated_compute_s = seconds_from_environment("GPT2_SMPI_COMPUTE_S", err)) < 0 ||
            (simulated_update_s = seconds_from_environment("GPT2_SMPI_UPDATE_S", err)) < 0 ||
            (options->overlap && read_op_seconds(err) != 0))
            return -1;
        if (options->comm_threads > 1) {
            set_error(err, "--comm-threads: more than 1 is not simulated (under SMPI one actor of a rank "
                           "exchanges messages: one channel)");
            return -1;
        }
    }
    int level;
    MPI_Query_thread(&level);
    // under SMPI one actor of a rank calls MPI (simulation.h), whatever level it gives
    if (!SIMULATED && options->comm_threads > 1 && level < MPI_THREAD_MULTIPLE) {
        snprintf(err->message, sizeof(err->message), "--comm-threads: the MPI library does not give "
                 "MPI_THREAD_MULTIPLE, which %d channels' threads calling it at once need", options->comm_threads);
        return -1;
    }
    if (!SIMULATED && options->overlap && level < MPI_THREAD_SERIALIZED) {
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
// the executor

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
    NodeExecutor *compute_ex, *update_ex, *run_ex;
    int sharded;
    int overlap;                // --overlap on: one node executor runs ov.run, the step with the buckets in it
    int threads;                // the rank's threads, for the reduction's adds
    Collective *coll;           // (options' comm_threads) one per channel
    float *weights;             // (R) B_r / B
    size_t *shard;              // (R + 1) shard q is parameter elements [shard[q], shard[q+1])
    Partition reduce_blocks;    // the shards in the reduce-scatter's messages
    Partition gather_blocks;    // and in the all-gathers'
    long long bytes_per_step;   // sent by this rank
    Overlap ov;
    double *run_seconds;        // built for SMPI: (ov.run.n_ops) each one's simulated seconds
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

// Each rank's share of the batch (the weights of its gradients in the average), the shards of the
// parameters, the scratch of the collectives and their partitions into messages. -1 when out of memory.
static int shard_the_parameters(Executor *ex, const StepDescription *step, Collective *base, int K) {
    const GPT2 *model = step->model;
    int R = base->ranks;
    ex->weights = malloc(R * sizeof(float));
    ex->shard = malloc((R + 1) * sizeof(size_t));
    size_t scratch = model->num_parameters > BLOCK_FLOATS ? BLOCK_FLOATS : model->num_parameters;
    base->weights = ex->weights;
    if (!ex->weights || !ex->shard || !(ex->coll = channels_create(base, K, scratch))) return -1;
    int B = dist_global_batch() > 0 ? dist_global_batch() : step->B;
    for (int q = 0; q < R; q++) {
        int b0, b1;
        dist_share(B, q, R, &b0, &b1);
        ex->weights[q] = (float)(b1 - b0) / (float)B;
    }
    shard_boundaries(model, R, ex->shard);
    // the same on every rank: the receiver cuts a shard where its sender does
    Partition shards = {0};
    int status = partition_of_ranges(&shards, R, ex->shard, BLOCK_FLOATS) == 0 &&
                         collective_partitions(ex->coll, &shards, &ex->reduce_blocks, &ex->gather_blocks) == 0
                     ? 0
                     : -1;
    partition_free(&shards);
    return status;
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

// Built for SMPI: each operation of ov.run's seconds, from the step's (simulated_op, checked against
// the step's first n_step operations). Sharded, an AdamW operation cut to this rank's rows takes their
// elements' share of the whole update's seconds: every rank updates 1/R of the parameters in 1/R of
// them, as the replay has it, whichever tensors its sub-shards fall in. 0, or -1 with `err` set.
static int simulated_run_seconds(Executor *ex, int n_step, Error *err) {
    const StepDescription *s = ex->step, *run = &ex->ov.run;
    if (simulated_ops != n_step) {
        snprintf(err->message, sizeof(err->message), "GPT2_SMPI_OP_SECONDS: %.200s: %d operations, where the step "
                 "has %d", simulated_op_path, simulated_ops, n_step);
        return -1;
    }
    double update_s = 0.0;
    for (int i = 0; i < n_step; i++) {
        if (strcmp(simulated_op[i].label, s->ops[i].label) != 0) {
            snprintf(err->message, sizeof(err->message), "GPT2_SMPI_OP_SECONDS: %.200s line %d: '%s', where the "
                     "step's operation %d is '%s'", simulated_op_path, i + 1, simulated_op[i].label, i, s->ops[i].label);
            return -1;
        }
        if (s->ops[i].kind == OP_ADAMW) update_s += simulated_op[i].seconds;
    }
    if (!(ex->run_seconds = malloc((size_t)run->n_ops * sizeof(double)))) {
        set_error(err, "out of memory creating the executor");
        return -1;
    }
    for (int i = 0; i < run->n_ops; i++) {
        const Op *op = &run->ops[i];
        double elements = (double)op->split_channels * op->width;
        ex->run_seconds[i] = op->kind == OP_COMM                  ? 0.0
                             : ex->sharded && op->kind == OP_ADAMW ? update_s * elements / s->model->num_parameters
                                                                   : simulated_op[ex->ov.run_origin[i]].seconds;
    }
    return 0;
}

// --overlap on: the buckets, their communication thread and one run of the inner executor over
// the whole step with the buckets' operations in it. 0, or -1 with `err` set.
static int create_overlapped(Executor *ex, const ExecOptions *options, int first_update, Error *err) {
    const char *why;
    int n_step = ex->step->n_ops;
    if (overlap_create(&ex->ov, ex->step, ex->coll, ex->sharded, first_update, &why) != 0) {
        set_error(err, why);
        return -1;
    }
    if (SIMULATED && simulated_run_seconds(ex, n_step, err) != 0) return -1;
    if (!(ex->run_ex = ex->inner->create(&ex->ov.run, options, err))) return -1;
    ex->bytes_per_step = (long long)overlap_sent(&ex->ov) * (long long)sizeof(float);
    return 0;
}

// --overlap off: the forward and backward passes, then the exchange, then the update (of this rank's
// shard where it is sharded), each run by an inner executor of its own. 0, or -1 with `err` set.
static int create_after_backward(Executor *ex, StepDescription *step, const ExecOptions *options, int first_update,
                                 Error *err) {
    int n_update = step->n_ops - first_update, me = ex->coll->rank;
    ex->update_ops = malloc((n_update > 0 ? n_update : 1) * sizeof(Op));
    ex->update_origin = malloc((n_update > 0 ? n_update : 1) * sizeof(int));
    ex->update_row0 = malloc((n_update > 0 ? n_update : 1) * sizeof(int));
    if (!ex->update_ops || !ex->update_origin || !ex->update_row0) {
        set_error(err, "out of memory creating the executor");
        return -1;
    }
    ex->update = *step;
    if (ex->sharded)
        cut_update(ex, first_update, ex->shard[me], ex->shard[me + 1]);
    else
        cut_update(ex, first_update, 0, step->model->num_parameters);
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
    size_t sent = reduce_scatter_sent(ex->coll, &ex->reduce_blocks) + all_gather_sent(ex->coll, &ex->gather_blocks);
    ex->bytes_per_step = (long long)sent * (long long)sizeof(float);
    return 0;
}

// Each channel's requests of the largest exchange. -1 when out of memory.
static int allocate_requests(Executor *ex) {
    int R = ex->coll->ranks, most = partition_blocks(&ex->reduce_blocks, R);
    if (partition_blocks(&ex->gather_blocks, R) > most) most = partition_blocks(&ex->gather_blocks, R);
    if (ex->overlap && overlap_most_blocks(&ex->ov) > most) most = overlap_most_blocks(&ex->ov);
    for (int c = 0; c < ex->coll->channels; c++)
        if (!(ex->coll[c].requests = malloc(collective_requests(most, R) * sizeof(MPI_Request)))) return -1;
    return 0;
}

// Where executor_create fails: its error, and NULL.
static Executor *refuse(Executor *ex, Error *err, const char *message) {
    if (message) set_error(err, message);
    executor_destroy(ex);
    return NULL;
}

Executor *executor_create(StepDescription *step, const ExecOptions *options, Error *err) {
    const Inner *inner = inner_named(options->executor ? options->executor : "forkjoin");
    if (!inner) {
        dist_check_executor(options, err);
        return NULL;
    }
    Executor *ex = calloc(1, sizeof(*ex));
    if (!ex) return refuse(NULL, err, "out of memory creating the executor");
    ex->step = step;
    ex->inner = inner;
    ex->sharded = options->sharded_update;
    ex->overlap = options->overlap;
    ex->threads = options->threads > 0 ? options->threads : omp_get_max_threads();
    Collective base = {.rank = dist_rank(), .ranks = dist_ranks(), .direct = options->direct_collective};
    if (shard_the_parameters(ex, step, &base, options->comm_threads > 1 ? options->comm_threads : 1) != 0)
        return refuse(ex, err, "out of memory creating the executor");
    int first_update = first_update_op(step);
    if (first_update < 0) return refuse(ex, err, "the step's update phase holds an operation other than AdamW");
    ex->n_compute = first_update;
    if ((ex->overlap ? create_overlapped(ex, options, first_update, err)
                     : create_after_backward(ex, step, options, first_update, err)) != 0)
        return refuse(ex, err, NULL);
    ex->bytes_per_step += (long long)(ex->coll->ranks - 1) * (long long)sizeof(float); // the losses
    if (allocate_requests(ex) != 0) return refuse(ex, err, "out of memory creating the executor");
    return ex;
}

void executor_info(const Executor *ex, ExecutorInfo *info) {
    if (ex->overlap) {
        ex->inner->info(ex->run_ex, info);
        // and the communication thread's records: each bucket's reduction and, sharded, its all-gather
        info->chunks_per_step += ex->ov.n_buckets * (ex->sharded ? 2 : 1);
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

static size_t trace_mark(const Trace *trace) { return trace && trace->records ? trace->count : 0; }

// On the main thread (the communication threads idle): the reduce-scatter of buf over `reduce` and
// then its all-gather over `gather` (either NULL: not run). One channel runs on the main thread,
// the rank's threads adding; K channels on a team of K threads, channel c on thread c, each adding
// alone (a team given fewer threads runs the rest in turn: every rank runs its channels in the
// same order, and channel c never waits on a higher one).
static void exchange(Executor *ex, float *buf, const Partition *reduce, const Partition *gather) {
    int K = ex->coll->channels;
    if (K == 1) {
        Where adds = ex->coll->direct ? MAIN_THREAD_WAITS : (Where){ex->threads, 0};
        if (reduce) reduce_scatter(ex->coll, buf, reduce, adds);
        if (gather) all_gather(ex->coll, buf, gather, MAIN_THREAD_WAITS);
        return;
    }
    const Where alone = {1, 0};
#pragma omp parallel num_threads(K)
    for (int c = omp_get_thread_num(); c < K; c += omp_get_num_threads()) {
        if (reduce) reduce_scatter(&ex->coll[c], buf, reduce, alone);
        if (gather) all_gather(&ex->coll[c], buf, gather, alone);
    }
}

// The parameters' all-gather after a sharded update, on the main thread, traced.
static void gather_parameters(Executor *ex, const Partition *p, int it, StepReport *report, Trace *trace) {
    double t0 = now_seconds();
    exchange(ex, ex->step->model->params_memory, NULL, p);
    double t1 = now_seconds();
    trace_comm(trace, it, ex->op_gather, 0, t0, t1);
    report->comm_s += t1 - t0;
}

// What a walk of ov.run is given.
typedef struct {
    const Executor *ex;
    int iteration;
    StepReport *report;
} Walk;

// Built for SMPI: what the node executor would run, ov.run, one operation after the other in its
// order (the order any of them starts the buckets in), each compute operation a delay of its
// seconds, the bucket operations handing over to the rank's actor and waiting for it.
static void *simulate_walk(void *arg) {
    const Walk *w = arg;
    const StepDescription *run = &w->ex->ov.run;
    for (int i = 0; i < run->n_ops; i++) {
        double t0 = now_seconds();
        if (run->ops[i].kind == OP_COMM) run->comm(run->comm_context, &run->ops[i], w->iteration);
        else simulate_seconds(w->ex->run_seconds[i]);
        w->report->phase_s[run->ops[i].phase] += now_seconds() - t0;
    }
    return NULL;
}

// --overlap on: one run of the node executor does the forward and backward
// passes, the buckets' reductions beside them, and the update; the ranks'
// losses and, sharded, the parameters' all-gathers are the communication
// thread's too, the latter beside the next step's forward pass.
static void train_overlapped(Executor *ex, int it, float *losses, StepReport *report, Trace *trace) {
    StepReport part;
    ex->ov.run.adamw = ex->step->adamw;
    overlap_begin_step(&ex->ov, trace, it, losses);
    if (SIMULATED) {
        Walk walk = {ex, it, report};
        losses[it] = 0.0f;
        if (overlap_run_beside(&ex->ov, simulate_walk, &walk) != 0) {
            fprintf(stderr, "gpt2-mpi: rank %d: out of memory starting the step's walk\n", ex->coll->rank);
            dist_abort(2);
        }
        report->comm_s = overlap_busy_s(&ex->ov);
        return;
    }
    size_t before = trace_mark(trace);
    ex->inner->train(ex->run_ex, it, 1, losses, &part, trace);
    trace_to_step(trace, before, ex->ov.run_origin, ex->ov.run_row0);
    for (int p = 0; p < NUM_PHASES; p++) report->phase_s[p] = part.phase_s[p];
    report->comm_s = overlap_busy_s(&ex->ov);
}

// --overlap off: the forward and backward passes, the exchange, the update (of this rank's shard
// where sharded) and the parameters' all-gather.
static void train_after_backward(Executor *ex, int it, float *losses, StepReport *report, Trace *trace) {
    StepReport part;
    double step_start = now_seconds();
    // the front may change the settings between steps (--verify's probe step)
    ex->update.adamw = ex->step->adamw;
    if (SIMULATED) {
        simulate_seconds(simulated_compute_s);
        losses[it] = 0.0f;
        report->phase_s[PHASE_FORWARD] = now_seconds() - step_start;
    } else {
        ex->inner->train(ex->compute_ex, it, 1, losses, &part, trace);
        report->phase_s[PHASE_FORWARD] = part.phase_s[PHASE_FORWARD];
        report->phase_s[PHASE_BACKWARD] = part.phase_s[PHASE_BACKWARD];
    }
    float *grads = ex->step->model->grads_memory;
    double t0 = now_seconds();
    reduce_losses(ex->coll, &losses[it]);
    exchange(ex, grads, &ex->reduce_blocks, ex->sharded ? NULL : &ex->gather_blocks);
    double t1 = now_seconds();
    trace_comm(trace, it, ex->op_reduce, 0, t0, t1);
    report->comm_s += t1 - t0;
    size_t before = trace_mark(trace);
    if (SIMULATED) {
        simulate_seconds(simulated_update_s);
        report->phase_s[PHASE_UPDATE] = now_seconds() - t1;
    } else {
        ex->inner->train(ex->update_ex, it, 1, losses, &part, trace);
        report->phase_s[PHASE_UPDATE] = part.phase_s[PHASE_UPDATE];
    }
    trace_to_step(trace, before, ex->update_origin, ex->update_row0);
    if (ex->sharded) gather_parameters(ex, &ex->gather_blocks, it, report, trace);
}

void executor_train(Executor *ex, int first, int n, float *losses, StepReport *reports, Trace *trace) {
    for (int it = first; it < first + n; it++) {
        StepReport *report = &reports[it - first];
        *report = (StepReport){0};
        double step_start = now_seconds();
        if (ex->overlap) train_overlapped(ex, it, losses, report, trace);
        else train_after_backward(ex, it, losses, report, trace);
        report->step_s = now_seconds() - step_start;
        report->loss = losses[it];
    }
}

void executor_destroy(Executor *ex) {
    if (!ex) return;
    overlap_destroy(&ex->ov); // first: its thread may be waiting for work
    if (ex->compute_ex) ex->inner->destroy(ex->compute_ex);
    if (ex->update_ex) ex->inner->destroy(ex->update_ex);
    if (ex->run_ex) ex->inner->destroy(ex->run_ex);
    partition_free(&ex->reduce_blocks);
    partition_free(&ex->gather_blocks);
    free(ex->update_ops);
    free(ex->update_origin);
    free(ex->update_row0);
    free(ex->run_seconds);
    free(ex->weights);
    free(ex->shard);
    channels_free(ex->coll);
    free(ex);
}

// ----------------------------------------------------------------------------
// what the front needs besides training

long long dist_comm_bytes_per_step(const Executor *ex) { return ex->bytes_per_step; }

void dist_settle(Executor *ex) {
    if (ex->overlap) overlap_settle(&ex->ov);
}

long long dist_comm_message_bytes(void) { return (long long)(BLOCK_FLOATS * sizeof(float)); }

void dist_gather_gradients(Executor *ex) {
    if (ex->sharded)
        exchange(ex, ex->step->model->grads_memory, NULL, ex->overlap ? &ex->ov.params : &ex->gather_blocks);
}

void dist_reset_moments(Executor *ex, GPT2 *model) {
    int me = ex->coll->rank;
    Span whole = {ex->sharded ? ex->shard[me] : 0, ex->sharded ? ex->shard[me + 1] : model->num_parameters, 1};
    const Span *kept = ex->sharded && ex->overlap ? ex->ov.mine : &whole;
    for (int i = 0; i < (ex->sharded && ex->overlap ? ex->ov.n_mine : 1); i++) {
        memset(model->m_memory + kept[i].lo, 0, (kept[i].hi - kept[i].lo) * sizeof(float));
        memset(model->v_memory + kept[i].lo, 0, (kept[i].hi - kept[i].lo) * sizeof(float));
    }
}
