// gpt2-mpi --overlap on: the gradients are reduced in buckets, one per
// transformer block and one for wte, wpe and the final LayerNorm (llm.c keeps
// each tensor's layers contiguous, so a block's bucket is 12 pieces of
// memory), last block first, each as soon as the backward pass has written it
// for the last time (wte's after the encoder's backward pass: the
// language-model head writes it first). The node executor runs one
// description: the forward and backward operations with each bucket's "start"
// operation (OP_COMM) right after the last operation that writes its
// gradients, then per bucket a "wait" operation and the bucket's AdamW
// operations. op_run calls the description's comm callback for them: start
// hands the bucket to the communication thread, wait returns once the thread
// has reduced it. Their accesses make the graph executors order them: start
// writes the bucket's gradients (after every chunk that writes them), wait
// writes them too (before every AdamW chunk that reads them: an update chunk
// starts once its own bucket is reduced), and all starts write one token
// buffer, which the waits read, so the buckets are handed over in one order on
// every rank, whatever the executor, and no wait (which blocks its thread)
// runs before the last start. The executors know nothing of MPI.
//
// Bucket k is cut into R sub-shards (its tensors' elements counted one after
// the other, R nearly equal parts cut at parameter rows); rank r owns sub-
// shard r of every bucket, so the reduce-scatter of a bucket is the collective
// (mpi_collectives.c) over its sub-shards, every link busy at once and (R-1)/R
// of the bucket sent by every rank; the sums are the collective's, q being the
// sub-shard of element i's bucket. The sharded update runs AdamW on the union
// of this rank's sub-shards; the parameters' all-gather after it moves every
// rank's union. With the replicated update, the thread all-gathers each
// bucket's gradients right after its reduce-scatter.
//
// With the sharded update, each bucket's parameters are all-gathered by the
// thread too, beside the next step's forward pass: after the update, a
// "gather start" operation per bucket (after its AdamW operations, writing its
// parameters, in the order the forward pass reads them: wte's bucket, then the
// blocks from the first; a second token chain keeps that order on every
// rank), and in the next step a "gather wait" operation before the first
// operation that reads the bucket's parameters, which returns once the
// previous step's all-gather of them is done. The step's mean loss is summed
// across ranks by the thread too, before the first bucket's reduce-scatter
// (every start operation reads it), so that the main thread calls MPI only
// after overlap_settle.
//
// With --comm-threads K there are K communication threads, one per channel
// (mpi_collectives.c): each runs its channel of every job, in the order the
// jobs are handed over, and a job is done once all K have run it. Channel 0's
// thread sums the losses.
//
// Built for SMPI (simulation.h) no thread is started: the rank's own actor,
// the one SimGrid delivers its messages to, runs the jobs (one channel), in
// overlap_run_beside while another actor walks the step, and in
// overlap_settle; the jobs, their order and their messages are the thread's.
#define _GNU_SOURCE
#include "mpi_overlap.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The same cut as the whole buffer's shards, for a bucket: cut[q] is where
// sub-shard q starts among the spans' elements counted one after the other.
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

// The arguments move with the rows; m and v stay where the model keeps them,
// so the other shards' moments are never touched (the model's zeroed pages of
// them never become resident).
int cut_op(const StepDescription *s, int i, const Span *ranges, int n_ranges, Op *out, int *origin, int *row0) {
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

void trace_comm(Trace *trace, int iteration, int op, int thread, double start, double end) {
    if (!trace || !trace->records) return;
    size_t slot = __atomic_fetch_add(&trace->count, 1, __ATOMIC_RELAXED);
    if (slot < trace->capacity)
        trace->records[slot] =
            (TraceRecord){iteration, op, thread, (Range){0, 1, 0, 1, 0, 0}, start - trace->origin,
                          end - trace->origin, -1.0}; // no CPU time: a wait for messages, not a kernel
}

// Channel c's part of a job on its communication thread: a bucket's reduce-scatter (first, on
// channel 0, the ranks' losses, for the step's first), and with the replicated update its
// gradients' all-gather; or, sharded, its parameters' all-gather.
static void run_job(Overlap *ov, const Job *job, int c) {
    const Where thread = {1, 1};
    const Collective *coll = &ov->coll[c];
    const Bucket *b = &ov->buckets[job->bucket];
    const GPT2 *model = ov->step->model;
    if (job->gather) {
        all_gather(coll, model->params_memory, &b->gather, thread);
        return;
    }
    if (c == 0 && ov->loss_generation != job->generation) {
        reduce_losses(coll, &job->losses[job->iteration]);
        ov->loss_generation = job->generation;
    }
    reduce_scatter(coll, model->grads_memory, &b->reduce, thread);
    if (!ov->sharded) all_gather(coll, model->grads_memory, &b->gather, thread);
}

// Under the lock: channel `thread`'s part of the job in `slot` ran from t0 to t1; the last
// channel's marks it done, traced from the first one's start to the last one's end.
static void job_finished(Overlap *ov, CommThread *thread, Job *slot, double t0, double t1) {
    thread->busy_s += t1 - t0;
    if (!slot->finished++ || t0 < slot->start) slot->start = t0;
    if (t1 > slot->end) slot->end = t1;
    if (slot->finished < ov->coll->channels) return;
    const Bucket *b = &ov->buckets[slot->bucket];
    trace_comm(slot->trace, slot->iteration, slot->gather ? b->op_gather_comm : b->op_comm, -1, slot->start,
               slot->end);
    if (slot->gather) ov->gathered[slot->bucket] = slot->generation;
    else ov->done[slot->bucket] = slot->generation;
    condition_broadcast(&ov->done_cond);
}

// Under the lock: runs the next job handed over to `thread`'s channel without the lock, and
// records it.
static void take_job(Overlap *ov, CommThread *thread) {
    Job *slot = &ov->queue[thread->next++ % (2 * ov->n_buckets)], job = *slot;
    lock_release(&ov->lock);
    double t0 = now_seconds();
    run_job(ov, &job, thread->channel);
    double t1 = now_seconds();
    lock_acquire(&ov->lock);
    job_finished(ov, thread, slot, t0, t1);
}

// A communication thread: runs its channel of the jobs in the order the start
// operations hand them over, which the step's tokens make the same on every
// rank. It calls MPI only while the main thread makes no call (it waits in the
// node executor, or trains, until overlap_settle), so with one channel
// MPI_THREAD_SERIALIZED is enough. A job's slot is handed over again only
// once every channel has run it: the waits hold the jobs under way to a step's
// reductions and all-gathers.
static void *communicate(void *arg) {
    CommThread *thread = arg;
    Overlap *ov = thread->ov;
    lock_acquire(&ov->lock);
    for (;;) {
        while (thread->next == ov->handed && !ov->stop) condition_wait(&ov->wake, &ov->lock);
        if (thread->next == ov->handed) break;
        take_job(ov, thread);
    }
    lock_release(&ov->lock);
    return NULL;
}

// The step's OP_COMM operations (StepDescription.comm), bucket b's: comm 4b
// hands its reduction to the communication threads, 4b + 1 waits until it is
// done; 4b + 2 hands over its parameters' all-gather, 4b + 3 waits until the
// previous step's is done.
static void comm_op(void *context, const Op *op, int iteration) {
    Overlap *ov = context;
    (void)iteration;
    int b = op->comm / 4, what = op->comm % 4;
    lock_acquire(&ov->lock);
    if (what == 0 || what == 2) {
        ov->queue[ov->handed++ % (2 * ov->n_buckets)] =
            (Job){b, what == 2, ov->generation, ov->iteration, ov->trace, ov->losses, 0, 0.0, 0.0};
        condition_broadcast(&ov->wake);
    } else if (what == 1) {
        while (ov->done[b] != ov->generation) condition_wait(&ov->done_cond, &ov->lock);
    } else {
        while (ov->gathered[b] < ov->generation - 1) condition_wait(&ov->done_cond, &ov->lock);
    }
    lock_release(&ov->lock);
}

static int bucket_of_layer(const Overlap *ov, int layer) {
    return layer >= 0 ? ov->step->model->config.num_layers - 1 - layer : ov->n_buckets - 1;
}

// What an OP_COMM operation of a bucket does, for its label and accesses.
typedef struct {
    const char *what;  // the label's end
    int comm;          // StepDescription.comm's code (comm_op); < 0: the thread's record, no accesses
    BufferKind kind;   // the bucket's tensors it writes: BUF_GRAD or BUF_PARAM
    int token;         // which token it uses (0: the reductions', 1: the parameters' all-gathers; -1: none)
    int token_writes;  // 1: writes it, 0: reads it
    int reads_loss;    // 1: after the step's mean loss
} BucketOp;

// Appends an OP_COMM operation of bucket b to the step. Returns its index, or -1 (memory).
static int add_bucket_op(Overlap *ov, const Bucket *b, Phase phase, BucketOp o) {
    StepDescription *s = ov->step;
    char label[48];
    const char *verb = o.kind == BUF_PARAM ? "param all-gather" : ov->sharded ? "grad reduce-scatter" : "grad all-reduce";
    if (b->layer >= 0) snprintf(label, sizeof(label), "%s L%d%s", verb, b->layer, o.what);
    else snprintf(label, sizeof(label), "%s wte+wpe+lnf%s", verb, o.what);
    int i = step_add_comm(s, phase, label);
    if (i < 0) return -1;
    s->ops[i].layer = b->layer;
    s->ops[i].comm = o.comm;
    if (o.comm < 0) return i;
    const GPT2 *model = s->model;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++)
        if ((b->layer >= 0) == (model->param_shape[t].per_layer != 0) &&
            step_comm_access(s, i, o.kind, t, b->layer, 1) != 0)
            return -1;
    if (o.reads_loss && step_comm_access(s, i, BUF_LOSS, 0, -1, 0) != 0) return -1;
    if (o.token >= 0 && step_comm_access(s, i, BUF_COMM, o.token, -1, o.token_writes) != 0) return -1;
    return i;
}

// Each bucket's operations, appended to the step.
static int add_bucket_ops(Overlap *ov) {
    for (int k = 0; k < ov->n_buckets; k++) {
        Bucket *b = &ov->buckets[k];
        if ((b->op_start = add_bucket_op(ov, b, PHASE_BACKWARD, (BucketOp){" start", 4 * k, BUF_GRAD, 0, 1, 1})) < 0 ||
            (b->op_wait = add_bucket_op(ov, b, PHASE_UPDATE, (BucketOp){" wait", 4 * k + 1, BUF_GRAD, 0, 0, 0})) < 0 ||
            (b->op_comm = add_bucket_op(ov, b, PHASE_BACKWARD, (BucketOp){"", -1, BUF_GRAD, -1, 0, 0})) < 0)
            return -1;
        if (!ov->sharded) continue;
        if ((b->op_gather_start =
                 add_bucket_op(ov, b, PHASE_UPDATE, (BucketOp){" start", 4 * k + 2, BUF_PARAM, 1, 1, 0})) < 0 ||
            (b->op_gather_wait =
                 add_bucket_op(ov, b, PHASE_FORWARD, (BucketOp){" wait", 4 * k + 3, BUF_PARAM, -1, 0, 0})) < 0 ||
            (b->op_gather_comm = add_bucket_op(ov, b, PHASE_UPDATE, (BucketOp){"", -1, BUF_PARAM, -1, 0, 0})) < 0)
            return -1;
    }
    return 0;
}

// The collectives' partitions (either NULL: not made) of shards pieces of[q][0 .. n[q]). 0, or -1.
static int channel_partitions(const Overlap *ov, Span **of, const int *n, Partition *reduce, Partition *gather) {
    Partition shards = {0};
    int status = partition_of(&shards, ov->coll->ranks, of, n, BLOCK_FLOATS) == 0 &&
                         collective_partitions(ov->coll, &shards, reduce, gather) == 0
                     ? 0
                     : -1;
    partition_free(&shards);
    return status;
}

// Bucket k's tensors, and its sub-shards: pieces of[q][0 .. n[q]) for each rank q.
static int bucket_partitions(Overlap *ov, Bucket *b, Span **of, int *n, size_t *cut) {
    const GPT2 *model = ov->step->model;
    int R = ov->coll->ranks;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        const ParamShape *shape = &model->param_shape[t];
        if ((b->layer >= 0) != (shape->per_layer != 0)) continue;
        size_t lo = (size_t)(param_slice(model, &model->grads, t, b->layer) - model->grads_memory);
        b->spans[b->n_spans++] = (Span){lo, lo + (size_t)shape->rows * shape->cols, (size_t)shape->cols};
    }
    bucket_cuts(b, R, cut);
    for (int q = 0; q < R; q++) n[q] = bucket_pieces(b, cut[q], cut[q + 1], of[q]);
    return channel_partitions(ov, of, n, &b->reduce, &b->gather);
}

// The buckets, their partitions, this rank's sub-shards and the parameters'
// all-gather. Sub-shard q of a bucket: elements [cut[q], cut[q + 1]) of its
// tensors counted one after the other, R nearly equal parts cut at rows.
static int build_buckets(Overlap *ov) {
    int L = ov->step->model->config.num_layers, R = ov->coll->ranks, me = ov->coll->rank, nb = L + 1;
    ov->n_buckets = nb;
    ov->buckets = calloc((size_t)nb, sizeof(Bucket));
    ov->mine = malloc((size_t)nb * NUM_PARAM_TENSORS * sizeof(Span));
    ov->queue = malloc((size_t)2 * nb * sizeof(Job));
    ov->done = calloc((size_t)nb, sizeof(long));
    ov->gathered = calloc((size_t)nb, sizeof(long));
    // pieces[(q * nb + k) * NUM_PARAM_TENSORS ...]: bucket k's sub-shard q, n_qk[q * nb + k] of them
    Span *pieces = malloc((size_t)R * nb * NUM_PARAM_TENSORS * sizeof(Span));
    Span *joined = malloc((size_t)R * nb * NUM_PARAM_TENSORS * sizeof(Span));
    int *n_qk = calloc((size_t)R * nb, sizeof(int)), *n = malloc((size_t)R * sizeof(int));
    Span **of = malloc((size_t)R * sizeof(Span *));
    size_t *cut = malloc((size_t)(R + 1) * sizeof(size_t));
    int ok = ov->buckets && ov->mine && ov->queue && ov->done && ov->gathered && pieces && joined && n_qk && n && of && cut;
    for (int k = 0; ok && k < nb; k++) {
        Bucket *b = &ov->buckets[k];
        b->layer = k < L ? L - 1 - k : -1;
        for (int q = 0; q < R; q++) of[q] = pieces + ((size_t)q * nb + k) * NUM_PARAM_TENSORS;
        ok = bucket_partitions(ov, b, of, n, cut) == 0;
        for (int q = 0; q < R; q++) n_qk[q * nb + k] = n[q];
        for (int i = 0; ok && i < n[me]; i++) ov->mine[ov->n_mine++] = of[me][i];
    }
    // the parameters' all-gather: shard q is rank q's sub-shards of every bucket, bucket by bucket
    for (int q = 0; ok && q < R; q++) {
        of[q] = joined + (size_t)q * nb * NUM_PARAM_TENSORS;
        n[q] = 0;
        for (int k = 0; k < nb; k++)
            for (int i = 0; i < n_qk[q * nb + k]; i++)
                of[q][n[q]++] = pieces[((size_t)q * nb + k) * NUM_PARAM_TENSORS + i];
    }
    ok = ok && (!ov->sharded || channel_partitions(ov, of, n, NULL, &ov->params) == 0);
    free(pieces);
    free(joined);
    free(n_qk);
    free(n);
    free(of);
    free(cut);
    return ok ? 0 : -1;
}

// Where each bucket's start operation goes: after the last of the forward and
// backward operations that writes its gradients (out: n_buckets).
static void last_writers(const Overlap *ov, int first_update, int *last) {
    const StepDescription *s = ov->step;
    for (int k = 0; k < ov->n_buckets; k++) last[k] = first_update - 1;
    for (int i = 0; i < first_update; i++)
        for (int a = 0; a < s->ops[i].n_access; a++) {
            const Access *access = &s->ops[i].access[a];
            const Buffer *buffer = &s->buffers[access->buffer];
            if (access->writes && buffer->kind == BUF_GRAD) last[bucket_of_layer(ov, buffer->layer)] = i;
        }
}

// The run's operations as they are appended: each with its index and first row in the whole step.
typedef struct {
    Overlap *ov;
    int m;
} Emitter;

static void emit(Emitter *e, int i) {
    Overlap *ov = e->ov;
    ov->run_ops[e->m] = ov->step->ops[i];
    ov->run_origin[e->m] = i;
    ov->run_row0[e->m++] = 0;
}

// Sharded: the gather wait of each bucket whose parameters operation i reads first.
static void emit_gather_waits(Emitter *e, int i, int *waited) {
    const StepDescription *s = e->ov->step;
    for (int a = 0; a < s->ops[i].n_access; a++) {
        const Access *access = &s->ops[i].access[a];
        const Buffer *buffer = &s->buffers[access->buffer];
        int k = buffer->kind == BUF_PARAM ? bucket_of_layer(e->ov, buffer->layer) : -1;
        if (k >= 0 && !waited[k]) {
            waited[k] = 1;
            emit(e, e->ov->buckets[k].op_gather_wait);
        }
    }
}

// The step the node executor runs, in ov->run:
//   the forward and backward operations, each bucket's start operation right
//   after the last one that writes its gradients (wte's: the encoder's
//   backward pass; the language-model head writes them first), and, sharded,
//   its gather wait right before the first one that reads its parameters;
//   then per bucket its wait operation and its AdamW operations (cut to this
//   rank's sub-shards when sharded);
//   then, sharded, the buckets' gather starts in the order the forward pass
//   reads them.
// The start operations write the token, the waits read it: every executor
// runs the starts in this order, and no wait (which blocks its thread) before
// the last start, so that no compute thread waits while backward work remains.
// Returns 0 or -1 (memory).
static int build_run(Overlap *ov, int first_update) {
    StepDescription *s = ov->step;
    int nb = ov->n_buckets;
    if (add_bucket_ops(ov) != 0) return -1;
    int *last = malloc((size_t)nb * sizeof(int)), *waited = calloc((size_t)nb, sizeof(int));
    Span everything = {0, s->model->num_parameters, 1};
    const Span *ranges = ov->sharded ? ov->mine : &everything;
    int n_ranges = ov->sharded ? ov->n_mine : 1;
    int n = first_update + 4 * nb;
    for (int i = first_update; i < s->n_ops; i++)
        if (s->ops[i].kind == OP_ADAMW) n += cut_op(s, i, ranges, n_ranges, NULL, NULL, NULL);
    ov->run_ops = malloc((size_t)n * sizeof(Op));
    ov->run_origin = malloc((size_t)n * sizeof(int));
    ov->run_row0 = malloc((size_t)n * sizeof(int));
    if (!last || !waited || !ov->run_ops || !ov->run_origin || !ov->run_row0) {
        free(last);
        free(waited);
        return -1;
    }
    last_writers(ov, first_update, last);
    Emitter e = {ov, 0};
    for (int i = 0; i < first_update; i++) {
        if (ov->sharded) emit_gather_waits(&e, i, waited);
        emit(&e, i);
        for (int k = 0; k < nb; k++)
            if (last[k] == i) emit(&e, ov->buckets[k].op_start);
    }
    for (int k = 0; k < nb; k++) {
        if (ov->sharded && !waited[k]) emit(&e, ov->buckets[k].op_gather_wait); // read by no operation
        emit(&e, ov->buckets[k].op_wait);
        for (int i = first_update; i < s->n_ops; i++)
            if (s->ops[i].kind == OP_ADAMW && bucket_of_layer(ov, s->ops[i].layer) == k)
                e.m += cut_op(s, i, ranges, n_ranges, ov->run_ops + e.m, ov->run_origin + e.m, ov->run_row0 + e.m);
    }
    // wte's bucket (the last) first, then the blocks' from the first (bucket k holds block L-1-k)
    for (int k = nb - 1; ov->sharded && k >= 0; k--) emit(&e, ov->buckets[k].op_gather_start);
    free(last);
    free(waited);
    ov->run = *s; // after the appends: ops and buffers may have moved
    ov->run.ops = ov->run_ops;
    ov->run.n_ops = e.m;
    ov->run.comm = comm_op;
    ov->run.comm_context = ov;
    return 0;
}

// Starts the communication threads, one per channel (built for SMPI, none: the rank's own actor
// runs channel 0's jobs, overlap_run_beside). 0, or -1 when one cannot be started.
static int start_threads(Overlap *ov) {
    if (!(ov->threads = calloc((size_t)ov->coll->channels, sizeof(CommThread)))) return -1;
    for (int c = 0; c < ov->coll->channels; c++) ov->threads[c] = (CommThread){.ov = ov, .channel = c};
    for (int c = 0; !SIMULATED && c < ov->coll->channels; c++) {
        if (thread_start(&ov->threads[c].thread, communicate, &ov->threads[c]) != 0) return -1;
        ov->threads_started++;
    }
    return 0;
}

// Ends the threads started, once every job handed over is done.
static void stop_threads(Overlap *ov) {
    if (!ov->threads_started) return;
    lock_acquire(&ov->lock);
    ov->stop = 1;
    condition_broadcast(&ov->wake);
    lock_release(&ov->lock);
    for (int c = 0; c < ov->threads_started; c++) thread_join(&ov->threads[c].thread);
}

int overlap_create(Overlap *ov, StepDescription *step, const Collective *c, int sharded, int first_update,
                   const char **why) {
    ov->step = step;
    ov->coll = c;
    ov->sharded = sharded;
    lock_init(&ov->lock);
    condition_init(&ov->wake);
    condition_init(&ov->done_cond);
    ov->sync_ready = 1;
    if (build_buckets(ov) != 0 || build_run(ov, first_update) != 0) {
        *why = "out of memory creating the executor";
        return -1;
    }
    if (start_threads(ov) != 0) {
        *why = "cannot start the communication thread";
        return -1;
    }
    return 0;
}

void overlap_begin_step(Overlap *ov, Trace *trace, int iteration, float *losses) {
    lock_acquire(&ov->lock);
    ov->generation++;
    ov->trace = trace;
    ov->iteration = iteration;
    ov->losses = losses;
    for (int c = 0; ov->threads && c < ov->coll->channels; c++) ov->threads[c].busy_s = 0.0;
    lock_release(&ov->lock);
}

// What overlap_run_beside gives the walk's actor.
typedef struct {
    Overlap *ov;
    void *(*walk)(void *);
    void *arg;
} Beside;

static void *walk_then_leave(void *arg) {
    Beside *beside = arg;
    beside->walk(beside->arg);
    lock_acquire(&beside->ov->lock);
    beside->ov->walking = 0;
    condition_broadcast(&beside->ov->wake);
    lock_release(&beside->ov->lock);
    return NULL;
}

// The next job of `thread` is the parameters' all-gather handed over at this step's end, which
// a thread would run beside the next step's forward pass: not this step's.
static int next_steps(const Overlap *ov, const CommThread *thread) {
    const Job *job = &ov->queue[thread->next % (2 * ov->n_buckets)];
    return job->gather && job->generation == ov->generation;
}

int overlap_run_beside(Overlap *ov, void *(*walk)(void *), void *arg) {
    Beside beside = {ov, walk, arg};
    CommThread *mine = &ov->threads[0];
    Thread walker;
    ov->walking = 1; // before the walk's actor runs: it alone clears it
    if (thread_start(&walker, walk_then_leave, &beside) != 0) return -1;
    lock_acquire(&ov->lock);
    for (;;) {
        while (ov->walking && !(mine->next < ov->handed && !next_steps(ov, mine)))
            condition_wait(&ov->wake, &ov->lock);
        if (!ov->walking) break; // its wait operations have seen this step's reductions done
        take_job(ov, mine);
    }
    lock_release(&ov->lock);
    thread_join(&walker);
    return 0;
}

void overlap_settle(Overlap *ov) {
    lock_acquire(&ov->lock);
    // no thread there: what is left is this actor's
    while (SIMULATED && ov->threads[0].next < ov->handed) take_job(ov, &ov->threads[0]);
    for (int k = 0; ov->sharded && k < ov->n_buckets; k++)
        while (ov->gathered[k] != ov->generation) condition_wait(&ov->done_cond, &ov->lock);
    lock_release(&ov->lock);
}

double overlap_busy_s(Overlap *ov) {
    lock_acquire(&ov->lock);
    double busy = 0.0;
    for (int c = 0; ov->threads && c < ov->coll->channels; c++)
        if (ov->threads[c].busy_s > busy) busy = ov->threads[c].busy_s;
    lock_release(&ov->lock);
    return busy;
}

size_t overlap_sent(const Overlap *ov) {
    size_t sent = ov->sharded ? all_gather_sent(ov->coll, &ov->params) : 0;
    for (int k = 0; k < ov->n_buckets; k++)
        sent += reduce_scatter_sent(ov->coll, &ov->buckets[k].reduce) +
                (ov->sharded ? 0 : all_gather_sent(ov->coll, &ov->buckets[k].gather));
    return sent;
}

int overlap_most_blocks(const Overlap *ov) {
    int R = ov->coll->ranks, most = partition_blocks(&ov->params, R);
    for (int k = 0; k < ov->n_buckets; k++) {
        if (partition_blocks(&ov->buckets[k].reduce, R) > most) most = partition_blocks(&ov->buckets[k].reduce, R);
        if (partition_blocks(&ov->buckets[k].gather, R) > most) most = partition_blocks(&ov->buckets[k].gather, R);
    }
    return most;
}

void overlap_destroy(Overlap *ov) {
    stop_threads(ov);
    if (ov->sync_ready) {
        lock_destroy(&ov->lock);
        condition_destroy(&ov->wake);
        condition_destroy(&ov->done_cond);
    }
    for (int k = 0; ov->buckets && k < ov->n_buckets; k++) {
        partition_free(&ov->buckets[k].reduce);
        partition_free(&ov->buckets[k].gather);
    }
    partition_free(&ov->params);
    void *owned[] = {ov->buckets, ov->mine, ov->queue, ov->done, ov->gathered, ov->run_ops, ov->run_origin,
                     ov->run_row0, ov->threads};
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) free(owned[i]);
}
