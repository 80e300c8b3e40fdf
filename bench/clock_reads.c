// clock_reads: what one read of each clock a trace takes per chunk costs, in nanoseconds. A traced
// chunk reads the wall clock (CLOCK_MONOTONIC, served by the vDSO without entering the kernel)
// and the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID, a system call on Linux) at its start and
// end (core/trace.c); the cost of tracing a step is about 2 x (the two costs) x its chunks.
// Every step, traced or not, also reads what disturbed it (core/disturbance.c: /proc/stat and
// getrusage) twice, timed here as "disturbance_ns".
//
// Usage: clock_reads [--calls N] [--repeats R]
// Prints one JSON object: {"calls": N, "repeats": R, "monotonic_ns": ..., "thread_cputime_ns": ...,
//   "process_cputime_ns": ..., "disturbance_ns": ...}, each the median over R repeats of N back-to-back reads, timed by the
// thread's own CPU clock (on a shared machine the wall clock would count the time the benchmark was
// descheduled as the reads' cost), and the same timed by the wall clock ("*_wall_ns").
// Errors: one line "clock_reads: <option>: <problem>", exit status 2.

#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_PROGRAM "clock_reads"
#include "../probes/cli.h"
#include "../core/disturbance.h"

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// What is timed: one read of a clock, or one disturbance reading; the value is returned for the
// sink, so that no read is left out.
static long read_clock(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_nsec;
}
static long read_disturbance(clockid_t unused) {
    (void)unused;
    Disturbance d;
    disturbance_now(&d);
    return d.involuntary_switches;
}

// Nanoseconds per call of `read` (with `clock`) on the thread's CPU clock, and on the wall clock
// in *wall_ns: the medians over `repeats` runs of `calls` calls.
static double per_call_ns(long (*read)(clockid_t), clockid_t clock, long long calls, int repeats, double *times,
                          double *wall_ns) {
    volatile long sink = 0;
    double *walls = times + repeats;
    for (int r = 0; r < repeats; r++) {
        double c0 = thread_cpu_s(), t0 = now_s();
        for (long long i = 0; i < calls; i++) sink += read(clock);
        walls[r] = (now_s() - t0) / (double)calls * 1e9;
        times[r] = (thread_cpu_s() - c0) / (double)calls * 1e9;
    }
    (void)sink;
    qsort(times, (size_t)repeats, sizeof(double), bench_by_value);
    qsort(walls, (size_t)repeats, sizeof(double), bench_by_value);
    *wall_ns = walls[repeats / 2];
    return times[repeats / 2];
}

int main(int argc, char **argv) {
    long long calls = 200000;
    int repeats = 11;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = option_value(argc, argv, &i, "usage: clock_reads [--calls N] [--repeats R]");
        if (strcmp(a, "--calls") == 0) calls = parse_integer(a, v, 1, 1000000000LL);
        else if (strcmp(a, "--repeats") == 0) repeats = (int)parse_integer(a, v, 1, 1001);
        else usage_error(a, "unknown option");
    }
    double *times = malloc(2 * (size_t)repeats * sizeof(double));
    if (!times) usage_error("memory", "cannot allocate");
    double mono_w, thread_w, process_w;
    double mono = per_call_ns(read_clock, CLOCK_MONOTONIC, calls, repeats, times, &mono_w);
    double thread = per_call_ns(read_clock, CLOCK_THREAD_CPUTIME_ID, calls, repeats, times, &thread_w);
    double process = per_call_ns(read_clock, CLOCK_PROCESS_CPUTIME_ID, calls, repeats, times, &process_w);
    // a file read costs about a thousand clock reads: a hundredth of the calls
    double dist_w, dist = per_call_ns(read_disturbance, CLOCK_MONOTONIC, calls / 100 > 0 ? calls / 100 : 1, repeats,
                                      times, &dist_w);
    printf("{\"calls\": %lld, \"repeats\": %d, \"monotonic_ns\": %.2f, \"thread_cputime_ns\": %.2f, "
           "\"process_cputime_ns\": %.2f, \"disturbance_ns\": %.2f, \"monotonic_wall_ns\": %.2f, "
           "\"thread_cputime_wall_ns\": %.2f, \"process_cputime_wall_ns\": %.2f, \"disturbance_wall_ns\": %.2f}\n",
           calls, repeats, mono, thread, process, dist, mono_w, thread_w, process_w, dist_w);
    free(times);
    return 0;
}
