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

// A bucket's reduction, on the communication thread: its reduce-scatter, and
// with the replicated update its all-gather too.
static void reduce_bucket(const Overlap *ov, const Bucket *b) {
    const Where thread = {1, 1};
    float *grads = ov->step->model->grads_memory;
    reduce_scatter(ov->coll, grads, &b->reduce, thread);
    if (!ov->sharded) all_gather(ov->coll, grads, &b->gather, thread);
}

// The communication thread: reduces the buckets in the order the start
// operations hand them over, which the step's token makes the same on every
// rank. It calls MPI only while the main thread waits in the node executor
// (whose wait operations return once it is done), so MPI_THREAD_SERIALIZED is
// enough.
static void *communicate(void *arg) {
    Overlap *ov = arg;
    pthread_mutex_lock(&ov->lock);
    for (;;) {
        while (!ov->queue_count && !ov->stop) pthread_cond_wait(&ov->wake, &ov->lock);
        if (!ov->queue_count) break;
        int b = ov->queue[ov->queue_head];
        ov->queue_head = (ov->queue_head + 1) % ov->n_buckets;
        ov->queue_count--;
        Trace *trace = ov->trace;
        int iteration = ov->iteration;
        long generation = ov->generation;
        pthread_mutex_unlock(&ov->lock);
        double t0 = now_seconds();
        reduce_bucket(ov, &ov->buckets[b]);
        double t1 = now_seconds();
        trace_comm(trace, iteration, ov->buckets[b].op_comm, -1, t0, t1);
        pthread_mutex_lock(&ov->lock);
        ov->busy_s += t1 - t0;
        ov->done[b] = generation;
        pthread_cond_broadcast(&ov->done_cond);
    }
    pthread_mutex_unlock(&ov->lock);
    return NULL;
}

// The step's OP_COMM operations (StepDescription.comm): comm 2b hands bucket b
// to the communication thread, comm 2b + 1 waits until it is reduced.
static void comm_op(void *context, const Op *op, int iteration) {
    Overlap *ov = context;
    (void)iteration;
    int b = op->comm / 2;
    pthread_mutex_lock(&ov->lock);
    if (op->comm % 2 == 0) {
        ov->queue[(ov->queue_head + ov->queue_count++) % ov->n_buckets] = b;
        pthread_cond_signal(&ov->wake);
    } else {
        while (ov->done[b] != ov->generation) pthread_cond_wait(&ov->done_cond, &ov->lock);
    }
    pthread_mutex_unlock(&ov->lock);
}

static int bucket_of_layer(const Overlap *ov, int layer) {
    return layer >= 0 ? ov->step->model->config.num_layers - 1 - layer : ov->n_buckets - 1;
}

// Appends an OP_COMM operation of bucket b to the step: comm < 0 for the
// communication thread's record (no accesses: no executor runs it); else with
// write accesses to the bucket's gradients, and to the token (`token_writes`)
// or reading it.
static int add_bucket_op(Overlap *ov, const Bucket *b, Phase phase, const char *what, int comm, int token_writes) {
    StepDescription *s = ov->step;
    char label[48];
    const char *verb = ov->sharded ? "grad reduce-scatter" : "grad all-reduce";
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
    size_t widest = 0;
    for (int q = 0; q < R; q++) {
        if (cut[q + 1] - cut[q] > widest) widest = cut[q + 1] - cut[q];
        n[q] = bucket_pieces(b, cut[q], cut[q + 1], of[q]);
    }
    return partition_of(&b->reduce, R, of, n, reduce_block_floats(widest, ov->coll->direct)) == 0 &&
                   (ov->sharded || partition_of(&b->gather, R, of, n, BLOCK_FLOATS) == 0)
               ? 0
               : -1;
}

// The buckets, their partitions, this rank's sub-shards and the parameters'
// all-gather. Sub-shard q of a bucket: elements [cut[q], cut[q + 1]) of its
// tensors counted one after the other, R nearly equal parts cut at rows.
static int build_buckets(Overlap *ov) {
    int L = ov->step->model->config.num_layers, R = ov->coll->ranks, me = ov->coll->rank, nb = L + 1;
    ov->n_buckets = nb;
    ov->buckets = calloc((size_t)nb, sizeof(Bucket));
    ov->mine = malloc((size_t)nb * NUM_PARAM_TENSORS * sizeof(Span));
    ov->queue = malloc((size_t)nb * sizeof(int));
    ov->done = calloc((size_t)nb, sizeof(long));
    // pieces[(q * nb + k) * NUM_PARAM_TENSORS ...]: bucket k's sub-shard q, n_qk[q * nb + k] of them
    Span *pieces = malloc((size_t)R * nb * NUM_PARAM_TENSORS * sizeof(Span));
    Span *joined = malloc((size_t)R * nb * NUM_PARAM_TENSORS * sizeof(Span));
    int *n_qk = calloc((size_t)R * nb, sizeof(int)), *n = malloc((size_t)R * sizeof(int));
    Span **of = malloc((size_t)R * sizeof(Span *));
    size_t *cut = malloc((size_t)(R + 1) * sizeof(size_t));
    int ok = ov->buckets && ov->mine && ov->queue && ov->done && pieces && joined && n_qk && n && of && cut;
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
    ok = ok && (!ov->sharded || partition_of(&ov->params, R, of, n, BLOCK_FLOATS) == 0);
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

// The step the node executor runs, in ov->run:
//   the forward and backward operations, each bucket's start operation right
//   after the last one that writes its gradients (wte's: the encoder's
//   backward pass; the language-model head writes them first);
//   then per bucket its wait operation and its AdamW operations (cut to this
//   rank's sub-shards when sharded).
// The start operations write the token, the waits read it: every executor
// runs the starts in this order, and no wait (which blocks its thread) before
// the last start, so that no compute thread waits while backward work remains.
// Returns 0 or -1 (memory).
static int build_run(Overlap *ov, int first_update) {
    StepDescription *s = ov->step;
    for (int k = 0; k < ov->n_buckets; k++) {
        Bucket *b = &ov->buckets[k];
        if ((b->op_start = add_bucket_op(ov, b, PHASE_BACKWARD, " start", 2 * k, 1)) < 0 ||
            (b->op_wait = add_bucket_op(ov, b, PHASE_UPDATE, " wait", 2 * k + 1, 0)) < 0 ||
            (b->op_comm = add_bucket_op(ov, b, PHASE_BACKWARD, "", -1, 0)) < 0)
            return -1;
    }
    if (ov->sharded && (ov->op_gather = step_add_comm(s, PHASE_UPDATE, "param all-gather")) < 0) return -1;
    int *last = malloc((size_t)ov->n_buckets * sizeof(int));
    if (!last) return -1;
    last_writers(ov, first_update, last);
    Span everything = {0, s->model->num_parameters, 1};
    const Span *ranges = ov->sharded ? ov->mine : &everything;
    int n_ranges = ov->sharded ? ov->n_mine : 1;
    int n = first_update + 2 * ov->n_buckets;
    for (int i = first_update; i < s->n_ops; i++)
        if (s->ops[i].kind == OP_ADAMW) n += cut_op(s, i, ranges, n_ranges, NULL, NULL, NULL);
    ov->run_ops = malloc((size_t)n * sizeof(Op));
    ov->run_origin = malloc((size_t)n * sizeof(int));
    ov->run_row0 = malloc((size_t)n * sizeof(int));
    if (!ov->run_ops || !ov->run_origin || !ov->run_row0) {
        free(last);
        return -1;
    }
    int m = 0;
#define EMIT(i) (ov->run_ops[m] = s->ops[i], ov->run_origin[m] = (i), ov->run_row0[m++] = 0)
    for (int i = 0; i < first_update; i++) {
        EMIT(i);
        for (int k = 0; k < ov->n_buckets; k++)
            if (last[k] == i) EMIT(ov->buckets[k].op_start);
    }
    for (int k = 0; k < ov->n_buckets; k++) {
        EMIT(ov->buckets[k].op_wait);
        for (int i = first_update; i < s->n_ops; i++)
            if (s->ops[i].kind == OP_ADAMW && bucket_of_layer(ov, s->ops[i].layer) == k)
                m += cut_op(s, i, ranges, n_ranges, ov->run_ops + m, ov->run_origin + m, ov->run_row0 + m);
    }
#undef EMIT
    free(last);
    ov->run = *s; // after the appends: ops and buffers may have moved
    ov->run.ops = ov->run_ops;
    ov->run.n_ops = m;
    ov->run.comm = comm_op;
    ov->run.comm_context = ov;
    return 0;
}

int overlap_create(Overlap *ov, StepDescription *step, const Collective *c, int sharded, int first_update,
                   const char **why) {
    ov->step = step;
    ov->coll = c;
    ov->sharded = sharded;
    pthread_mutex_init(&ov->lock, NULL);
    pthread_cond_init(&ov->wake, NULL);
    pthread_cond_init(&ov->done_cond, NULL);
    ov->sync_ready = 1;
    if (build_buckets(ov) != 0 || build_run(ov, first_update) != 0) {
        *why = "out of memory creating the executor";
        return -1;
    }
    if (pthread_create(&ov->thread, NULL, communicate, ov) != 0) {
        *why = "cannot start the communication thread";
        return -1;
    }
    ov->thread_started = 1;
    return 0;
}

void overlap_begin_step(Overlap *ov, Trace *trace, int iteration) {
    pthread_mutex_lock(&ov->lock);
    ov->generation++;
    ov->trace = trace;
    ov->iteration = iteration;
    ov->busy_s = 0.0;
    pthread_mutex_unlock(&ov->lock);
}

double overlap_busy_s(Overlap *ov) {
    pthread_mutex_lock(&ov->lock);
    double busy = ov->busy_s;
    pthread_mutex_unlock(&ov->lock);
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
    if (ov->thread_started) {
        pthread_mutex_lock(&ov->lock);
        ov->stop = 1;
        pthread_cond_signal(&ov->wake);
        pthread_mutex_unlock(&ov->lock);
        pthread_join(ov->thread, NULL);
    }
    if (ov->sync_ready) {
        pthread_mutex_destroy(&ov->lock);
        pthread_cond_destroy(&ov->wake);
        pthread_cond_destroy(&ov->done_cond);
    }
    for (int k = 0; ov->buckets && k < ov->n_buckets; k++) {
        partition_free(&ov->buckets[k].reduce);
        partition_free(&ov->buckets[k].gather);
    }
    partition_free(&ov->params);
    void *owned[] = {ov->buckets, ov->mine, ov->queue, ov->done, ov->run_ops, ov->run_origin, ov->run_row0};
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) free(owned[i]);
}
