#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <time.h>
#include "trace.h"
#ifdef GPT2_SMPI
// gpt2-mpi built for SMPI (Makefile, `make smpi`): its steps are timed on the simulated clock
#include <smpi/smpi.h>
#define clock_gettime smpi_clock_gettime
#endif

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double thread_cpu_seconds(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1.0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int trace_init(Trace *trace, size_t capacity) {
    trace->records = NULL;
    trace->capacity = capacity;
    trace->count = 0;
    trace->origin = now_seconds();
    trace->counters = NULL;
    if (capacity == 0) return 0;
    trace->records = malloc(capacity * sizeof(TraceRecord));
    return trace->records ? 0 : -1;
}

void trace_free(Trace *trace) {
    free(trace->records);
    trace->records = NULL;
    trace->capacity = 0;
}

void run_chunk(const StepDescription *step, int op_index, Range range, int iteration,
               float *losses, Trace *trace, int thread) {
    const Op *op = &step->ops[op_index];
#if defined(USE_LIKWID) || defined(USE_PAPI)
    if (trace && trace->counters) counters_region_begin(trace->counters, op_kind_name(op->kind));
#endif
    int on = trace && trace->records;
    // the CPU clock is read inside the wall interval, so that cpu <= end - start
    // but for the clocks' resolution
    double start = on ? now_seconds() : 0.0;
    double cpu0 = on ? thread_cpu_seconds() : 0.0;
    op_run(step, op, range, iteration, losses ? &losses[iteration] : NULL);
    double cpu1 = on ? thread_cpu_seconds() : 0.0;
    double end = on ? now_seconds() : 0.0;
#if defined(USE_LIKWID) || defined(USE_PAPI)
    if (trace && trace->counters) counters_region_end(trace->counters, op_kind_name(op->kind));
#endif
    if (!on) return;
    size_t slot = __atomic_fetch_add(&trace->count, 1, __ATOMIC_RELAXED);
    if (slot < trace->capacity)
        trace->records[slot] = (TraceRecord){iteration, op_index, thread, range, start - trace->origin,
                                             end - trace->origin, cpu0 < 0 || cpu1 < 0 ? -1.0 : cpu1 - cpu0};
}

int trace_write_csv(const Trace *trace, const StepDescription *step, FILE *out) {
    fprintf(out, "iteration,op,kernel,layer,phase,label,b0,b1,x0,x1,thread,start_s,end_s,col0,col1,cpu_s\n");
    size_t n = trace->count < trace->capacity ? trace->count : trace->capacity;
    for (size_t i = 0; i < n; i++) {
        const TraceRecord *r = &trace->records[i];
        const Op *op = &step->ops[r->op];
        fprintf(out, "%d,%d,%s,%d,%s,%s,%d,%d,%d,%d,%d,%.9f,%.9f,%d,%d,", r->iteration, r->op,
                op_kind_name(op->kind), op->layer, phase_name(op->phase), op->label, r->range.b0,
                r->range.b1, r->range.x0, r->range.x1, r->thread, r->start, r->end, r->range.col0, r->range.col1);
        if (r->cpu < 0) fputs("NA\n", out); // not measured: the results' word for a missing value
        else fprintf(out, "%.9f\n", r->cpu);
    }
    return ferror(out) ? -1 : 0;
}
