// Step times of an executor that runs iterations into each other (taskiter,
// nosv): no barrier ends a phase or a step, so a phase's time is the span from
// its first chunk's start to its last chunk's end over every worker, and a
// step's time the interval between the completions of consecutive iterations.
// Each worker keeps its own spans, so that recording one takes no lock.
#ifndef ITERATION_SPANS_H
#define ITERATION_SPANS_H

#include <stdio.h>
#include <stdlib.h>
#include "executor.h"

// Per worker, per iteration of the run: the earliest start and latest end of
// each phase's chunks.
typedef struct {
    double start[NUM_PHASES], end[NUM_PHASES];
} PhaseSpan;

// spans[worker * n + (iteration - first)], every span empty; exits with status
// 2 and one line, naming the program, when memory runs out.
static inline PhaseSpan *spans_new(int workers, int n, const char *program) {
    PhaseSpan *spans = malloc((size_t)workers * n * sizeof(PhaseSpan));
    if (!spans) {
        fprintf(stderr, "%s: out of memory for per-iteration timings\n", program);
        exit(2);
    }
    for (long i = 0; i < (long)workers * n; i++)
        for (int p = 0; p < NUM_PHASES; p++) {
            spans[i].start[p] = 1e300;
            spans[i].end[p] = -1e300;
        }
    return spans;
}

static inline void span_add(PhaseSpan *span, Phase phase, double t0, double t1) {
    if (t0 < span->start[phase]) span->start[phase] = t0;
    if (t1 > span->end[phase]) span->end[phase] = t1;
}

// reports[0..n) of iterations first..first+n from the workers' spans, the
// run's start, the losses and the disturbance read at each iteration's end
// (marks[i + 1]; marks[0] at the start).
static inline void spans_report(const PhaseSpan *spans, int workers, int first, int n, double start_time,
                                const float *losses, const Disturbance *marks, StepReport *reports) {
    double previous_end = start_time;
    for (int i = 0; i < n; i++) {
        StepReport *report = &reports[i];
        *report = (StepReport){0};
        double end = start_time;
        for (int p = 0; p < NUM_PHASES; p++) {
            double lo = 1e300, hi = -1e300;
            for (int w = 0; w < workers; w++) {
                const PhaseSpan *span = &spans[(size_t)w * n + i];
                if (span->start[p] < lo) lo = span->start[p];
                if (span->end[p] > hi) hi = span->end[p];
            }
            report->phase_s[p] = hi > lo ? hi - lo : 0.0;
            if (hi > end) end = hi;
        }
        report->step_s = end - previous_end;
        previous_end = end;
        report->loss = losses[first + i];
        report_disturbance(report, &marks[i], &marks[i + 1]);
    }
}

#endif
