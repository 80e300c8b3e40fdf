// seq: the step description executed in order, each operation on its whole
// range, on one thread. The baseline every parallel variant must match bit
// for bit.
#include <stdlib.h>
#include "../core/schedule.h"
#include "executor.h"

const char *const EXECUTOR_NAME = "seq";
const int EXECUTOR_WHOLE_LOOP = 0;
const int EXECUTOR_PACKS_WEIGHTS = 0; // each product whole: one packing per product already

struct Executor {
    StepDescription *step;
};

Executor *executor_create(StepDescription *step, const ExecOptions *options, Error *err) {
    (void)options;
    Executor *ex = malloc(sizeof(*ex));
    if (!ex) {
        snprintf(err->message, sizeof(err->message), "out of memory creating the executor");
        return NULL;
    }
    ex->step = step;
    return ex;
}

void executor_info(const Executor *ex, ExecutorInfo *info) {
    *info = (ExecutorInfo){.threads = 1, .chunks_per_step = ex->step->n_ops};
}

void executor_train(Executor *ex, int first, int n, float *losses, StepReport *reports, Trace *trace) {
    const StepDescription *s = ex->step;
    for (int it = first; it < first + n; it++) {
        StepReport *report = &reports[it - first];
        *report = (StepReport){0};
        double step_start = now_seconds();
        for (int i = 0; i < s->n_ops; i++) {
            double start = now_seconds();
            run_chunk(s, i, op_full_range(s, &s->ops[i]), it, losses, trace, 0);
            report->phase_s[s->ops[i].phase] += now_seconds() - start;
        }
        report->step_s = now_seconds() - step_start;
        report->loss = losses[it];
    }
}

// One thread, each operation whole, in order.
int executor_schedule(Executor *ex, Schedule *out, char *err, size_t err_len) {
    const StepDescription *s = ex->step;
    *out = (Schedule){SCHEDULE_STATIC, 1, 1, 0, 0, NULL, NULL};
    for (int i = 0; i < s->n_ops; i++)
        if (schedule_add(out, i, op_full_range(s, &s->ops[i]), 0) != 0) {
            snprintf(err, err_len, "out of memory describing the schedule");
            schedule_free(out);
            return -1;
        }
    return 0;
}

void executor_destroy(Executor *ex) { free(ex); }
