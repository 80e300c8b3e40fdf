// Per-chunk timing records: which operation, which range, which thread, when,
// and how much of that time the thread was on a CPU. Executors run every chunk
// through run_chunk; with tracing off it costs one branch, with tracing on four
// clock reads (wall and thread CPU time at both ends) and one atomic increment.
#ifndef TRACE_H
#define TRACE_H

#include <stddef.h>
#include <stdio.h>
#include "counters.h"
#include "disturbance.h"
#include "step.h"

typedef struct {
    int iteration, op, thread;
    Range range;
    double start, end; // seconds since the trace's origin
    // The thread's CPU seconds during the chunk (CLOCK_THREAD_CPUTIME_ID): less
    // than end - start where the thread was descheduled (a neighbour, the
    // hypervisor), which wall time alone cannot tell from slow code. Negative:
    // not measured (a record that is not a kernel's, or no thread clock).
    double cpu;
} TraceRecord;

typedef struct {
    TraceRecord *records;
    size_t capacity;
    size_t count;      // updated atomically; may exceed capacity (records dropped)
    double origin;
    // hardware-counter regions per kernel kind; only in builds with
    // -DUSE_LIKWID or -DUSE_PAPI (core/counters.h), NULL otherwise
    struct counters *counters;
} Trace;

double now_seconds(void);
// The calling thread's CPU time in seconds; -1 where the clock is unavailable.
double thread_cpu_seconds(void);
// Reserves room for `capacity` records (0: tracing off). Returns 0 or -1.
int trace_init(Trace *trace, size_t capacity);
void trace_free(Trace *trace);

// Runs op `op_index` on `range` for `iteration`; the mean loss, if the op
// computes it, goes to losses[iteration]. Records timing when trace is on.
void run_chunk(const StepDescription *step, int op_index, Range range, int iteration,
               float *losses, Trace *trace, int thread);

// Writes the records as CSV (one row per chunk).
int trace_write_csv(const Trace *trace, const StepDescription *step, FILE *out);

#endif
