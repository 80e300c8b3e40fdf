// forkjoin: every operation is an OpenMP worksharing loop over its split
// dimension, with the loop's implied barrier before the next operation, as
// llm.c does, but for every operation that has a parallel dimension.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include "../core/schedule.h"
#include "executor.h"

const char *const EXECUTOR_NAME = "forkjoin";
const int EXECUTOR_WHOLE_LOOP = 0;
const int EXECUTOR_PACKS_WEIGHTS = 0; // products cut along output columns: each thread packs its share once

struct Executor {
    StepDescription *step;
    int threads;
};

Executor *executor_create(StepDescription *step, const ExecOptions *options, Error *err) {
    Executor *ex = malloc(sizeof(*ex));
    if (!ex) {
        snprintf(err->message, sizeof(err->message), "out of memory creating the executor");
        return NULL;
    }
    ex->step = step;
    ex->threads = options->threads > 0 ? options->threads : omp_get_max_threads();
    return ex;
}

// How many pieces the worksharing loop of an operation has: one per thread
// for evenly divisible work; one per (sequence, thread) for a row split marked
// cyclic (causal attention, whose cost grows along the sequence: each piece a
// contiguous run of tokens holding an equal share of the causal triangle, see
// triangle_share); one per (sequence, head) pair for a head split.
// Matrix products that may be cut along their output columns (cut_columns)
// are: each thread then packs only its share of the weight instead of all of it.
static int pieces(const Executor *ex, const Op *op) {
    const StepDescription *s = ex->step;
    switch (op->split) {
    case SPLIT_ROWS: return op->cyclic ? s->B * ex->threads : ex->threads;  // also column cuts
    case SPLIT_HEADS: return s->B * s->model->config.num_heads;
    case SPLIT_CHANNELS: return ex->threads;
    case SPLIT_NONE: return 1;
    }
    return 1;
}

void executor_info(const Executor *ex, ExecutorInfo *info) {
    long chunks = 0;
    for (int i = 0; i < ex->step->n_ops; i++) {
        const Op *op = &ex->step->ops[i];
        // an even share of rows can span up to three per-sequence ranges
        chunks += (long)pieces(ex, op) * (op->split == SPLIT_ROWS && !op->cyclic ? 3 : 1);
    }
    *info = (ExecutorInfo){.threads = ex->threads, .chunks_per_step = chunks};
}

// Piece p of n of [0, extent), with boundaries on multiples of 16 so that
// vectors stay whole.
static void share_of_16s(int extent, int p, int n, int *lo, int *hi) {
    int units = (extent + 15) / 16;
    *lo = (int)((long)units * p / n) * 16;
    *hi = (int)((long)units * (p + 1) / n) * 16;
    if (*hi > extent) *hi = extent;
    if (*lo > extent) *lo = extent;
}

// The first token of share q of n of a sequence of T tokens whose token t
// costs t + 1 (a causal attention row): the shares hold equal parts of the
// triangle, so share q starts at T sqrt(q / n). Single rows dealt round robin
// balance as well, but attention packs the keys and values of its range once
// per head and call, so single rows re-pack them for every row (4x the time of
// a whole sequence at d12, measured).
static int triangle_share(int T, int q, int n) {
    return (int)lround(T * sqrt((double)q / n));
}

// The ranges of piece p of n of an operation (at most three: an even share
// of rows spans up to three per-sequence ranges). Returns how many.
static int piece_ranges(const StepDescription *s, const Op *op, int p, int n, Range out[3]) {
    int eb, ex;
    op_extents(s, op, &eb, &ex);
    if (op->cut_columns > 0) {
        int c0, c1;
        share_of_16s(op->cut_columns, p, n, &c0, &c1);
        out[0] = (Range){0, s->B, 0, s->T, c0, c1};
        return c0 < c1;
    }
    switch (op->split) {
    case SPLIT_ROWS: {
        if (op->cyclic) {
            // piece p: sequence p / shares, its share p % shares (shares = n / B
            // pieces per sequence), so that round robin gives each thread one
            // share of every sequence
            int shares = n / s->B, b = p / shares, q = p % shares;
            int t0 = triangle_share(s->T, q, shares), t1 = triangle_share(s->T, q + 1, shares);
            out[0] = (Range){b, b + 1, t0, t1, 0, 0};
            return t0 < t1;
        }
        // rows [lo, hi) of the flattened (B, T) space, as per-sequence ranges
        long rows = (long)s->B * s->T;
        int lo = (int)(rows * p / n), hi = (int)(rows * (p + 1) / n), count = 0;
        while (lo < hi) {
            int b = lo / s->T, t0 = lo % s->T;
            if (t0 == 0 && hi - lo >= s->T) {
                int b1 = hi / s->T;
                out[count++] = (Range){b, b1, 0, s->T, 0, 0};
                lo = b1 * s->T;
            } else {
                int t1 = hi - b * s->T < s->T ? hi - b * s->T : s->T;
                out[count++] = (Range){b, b + 1, t0, t1, 0, 0};
                lo = b * s->T + t1;
            }
        }
        return count;
    }
    case SPLIT_HEADS: {
        // Consecutive pieces (one per thread under schedule(static, 1)) are
        // in different sequences: threads working on neighbouring heads of
        // the same tokens write neighbouring lines of each gradient row, and
        // the prefetchers pull each other's lines away (measured at 2
        // threads: 0.23 ms per head this way round, 0.18 ms the other).
        int b = p % s->B, h = p / s->B;
        out[0] = (Range){b, b + 1, h, h + 1, 0, 0};
        return 1;
    }
    case SPLIT_CHANNELS: {
        int x0, x1;
        share_of_16s(ex, p, n, &x0, &x1);
        out[0] = (Range){0, 1, x0, x1, 0, 0};
        return x0 < x1;
    }
    case SPLIT_NONE:
        out[0] = op_full_range(s, op);
        return 1;
    }
    return 0;
}

// Runs piece p of n of an operation.
static void run_piece(const StepDescription *s, int op_index, int p, int n, int it, float *losses, Trace *trace) {
    Range ranges[3];
    int count = piece_ranges(s, &s->ops[op_index], p, n, ranges);
    for (int i = 0; i < count; i++) run_chunk(s, op_index, ranges[i], it, losses, trace, omp_get_thread_num());
}

// The thread that runs piece p of n under the loop's schedule: schedule(static, 1)
// deals pieces round robin; schedule(static) gives each thread one contiguous
// block, the first n % threads blocks one piece longer (as libgomp and LLVM's
// libomp divide it).
static int piece_thread(const Op *op, int p, int n, int threads) {
    if (op->cyclic) return p % threads;
    int q = n / threads, r = n % threads;
    return p < r * (q + 1) ? p / (q + 1) : r + (p - r * (q + 1)) / q;
}

int executor_schedule(Executor *ex, Schedule *out, char *err, size_t err_len) {
    const StepDescription *s = ex->step;
    *out = (Schedule){SCHEDULE_STATIC, ex->threads, 1, 0, 0, NULL, NULL};
    for (int i = 0; i < s->n_ops; i++) {
        const Op *op = &s->ops[i];
        int count = pieces(ex, op);
        for (int p = 0; p < count; p++) {
            Range ranges[3];
            int nr = piece_ranges(s, op, p, count, ranges);
            for (int k = 0; k < nr; k++)
                if (schedule_add(out, i, ranges[k], piece_thread(op, p, count, ex->threads)) != 0) {
                    snprintf(err, err_len, "out of memory describing the schedule");
                    schedule_free(out);
                    return -1;
                }
        }
    }
    return 0;
}

void executor_train(Executor *ex, int first, int n, float *losses, StepReport *reports, Trace *trace) {
    const StepDescription *s = ex->step;
    for (int it = first; it < first + n; it++) {
        StepReport *report = &reports[it - first];
        *report = (StepReport){0};
        double step_start = now_seconds();
#pragma omp parallel num_threads(ex->threads)
        {
            double phase_start = step_start;
            for (int i = 0; i < s->n_ops; i++) {
                int count = pieces(ex, &s->ops[i]);
                if (s->ops[i].cyclic) {
#pragma omp for schedule(static, 1)
                    for (int p = 0; p < count; p++) run_piece(s, i, p, count, it, losses, trace);
                } else {
#pragma omp for schedule(static)
                    for (int p = 0; p < count; p++) run_piece(s, i, p, count, it, losses, trace);
                }
                // the implied barrier has passed: every thread sees the op done
                if (omp_get_thread_num() == 0 && (i + 1 == s->n_ops || s->ops[i + 1].phase != s->ops[i].phase)) {
                    double t = now_seconds();
                    report->phase_s[s->ops[i].phase] += t - phase_start;
                    phase_start = t;
                }
            }
        }
        report->step_s = now_seconds() - step_start;
        report->loss = losses[it];
    }
}

void executor_destroy(Executor *ex) { free(ex); }
