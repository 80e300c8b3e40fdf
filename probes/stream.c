// stream: the machine's sustainable memory bandwidth, measured the way
// McCalpin's STREAM measures it, as the memory ceiling of the roofline.
//
//   copy   c[i] = a[i]                 2 arrays moved
//   scale  b[i] = s * c[i]             2 arrays moved
//   add    c[i] = a[i] + b[i]          3 arrays moved
//   triad  a[i] = b[i] + s * c[i]      3 arrays moved
//
// Arrays are double, as in STREAM, so one element moves 8 bytes; bytes are
// counted as STREAM counts them: the arrays named in the kernel, once each.
// Write-allocate traffic (the store target being read first) is NOT counted,
// so on a machine without streaming stores the hardware moves up to 1.5x
// (copy, scale) or 1.33x (add, triad) the bytes reported here.
//
// Each array is at least 4x the largest cache of cpu0, so no kernel runs
// from cache. Arrays are first touched by the same static schedule the
// kernels use, so every page lives next to the thread that uses it.
// One untimed pass of all four kernels warms TLBs and page tables; then each
// kernel's best time over --reps passes is reported, as STREAM does.
//
// Usage: stream [--threads N] [--elements N] [--reps N] [--json]
// Errors: one line "stream: <option>: <problem>", exit status 2.

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#define BENCH_PROGRAM "stream"
#include "cli.h"

#define FALLBACK_LLC_BYTES (32ull << 20)
#define ARRAY_OVER_LLC 4
#define DEFAULT_REPS 10
// Validation replays the kernels on one scalar, which grows 15x per pass;
// beyond ~260 passes it overflows a double, so reps are capped well below.
#define MAX_REPS 200
#define SCALAR 3.0

enum { COPY, SCALE, ADD, TRIAD, NKERNELS };
static const char *const kernel_names[NKERNELS] = {"copy", "scale", "add", "triad"};
static const int arrays_moved[NKERNELS] = {2, 2, 3, 3};

// The four kernels. restrict lets the compiler vectorise without overlap
// checks; schedule(static) matches the first-touch loop in main.
static void kernel_copy(double *restrict c, const double *restrict a, long long n) {
    #pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; i++) c[i] = a[i];
}

static void kernel_scale(double *restrict b, const double *restrict c, double s, long long n) {
    #pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; i++) b[i] = s * c[i];
}

static void kernel_add(double *restrict c, const double *restrict a, const double *restrict b,
                       long long n) {
    #pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; i++) c[i] = a[i] + b[i];
}

static void kernel_triad(double *restrict a, const double *restrict b, const double *restrict c,
                         double s, long long n) {
    #pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

// Runs one kernel and returns its wall time in seconds.
static double timed_kernel(int k, double *a, double *b, double *c, long long n) {
    double t0 = omp_get_wtime();
    switch (k) {
    case COPY:  kernel_copy(c, a, n); break;
    case SCALE: kernel_scale(b, c, SCALAR, n); break;
    case ADD:   kernel_add(c, a, b, n); break;
    case TRIAD: kernel_triad(a, b, c, SCALAR, n); break;
    }
    return omp_get_wtime() - t0;
}

// Replays `passes` rounds of the four kernels on one scalar element per
// array and compares every element against it, as STREAM's checkSTREAMresults
// does. Returns 0 if the arrays hold what the kernels must have written.
static int validate(const double *a, const double *b, const double *c, long long n, int passes) {
    double aj = 1.0, bj = 2.0, cj = 0.0;
    for (int p = 0; p < passes; p++) {
        cj = aj;
        bj = SCALAR * cj;
        cj = aj + bj;
        aj = bj + SCALAR * cj;
    }
    const double expected[3] = {aj, bj, cj};
    const double *arrays[3] = {a, b, c};
    const char *names[3] = {"a", "b", "c"};
    int ok = 1;
    for (int x = 0; x < 3; x++) {
        double sum_abs_err = 0.0;
        for (long long i = 0; i < n; i++) sum_abs_err += fabs(arrays[x][i] - expected[x]);
        double avg_rel_err = sum_abs_err / (double)n / fabs(expected[x]);
        if (!(avg_rel_err <= 1e-13)) {
            fprintf(stderr, "stream: validation: array %s average relative error %.3e (expected %.6e)\n",
                    names[x], avg_rel_err, expected[x]);
            ok = 0;
        }
    }
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    int threads = omp_get_max_threads();
    long long elements = 0;  // 0: derive from the cache size
    int reps = DEFAULT_REPS;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--json") == 0) {
            json = 1;
        } else if (strcmp(arg, "--threads") == 0 || strcmp(arg, "--elements") == 0 ||
                   strcmp(arg, "--reps") == 0) {
            if (i + 1 >= argc) usage_error(arg, "missing value");
            const char *value = argv[++i];
            if (strcmp(arg, "--threads") == 0) threads = (int)parse_integer(arg, value, 1, 4096);
            else if (strcmp(arg, "--elements") == 0) elements = parse_integer(arg, value, 1, 1ll << 36);
            else reps = (int)parse_integer(arg, value, 1, MAX_REPS);
        } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            printf("usage: stream [--threads N] [--elements N] [--reps N] [--json]\n");
            return 0;
        } else {
            usage_error(arg, "unknown option (expected --threads, --elements, --reps, --json)");
        }
    }

    unsigned long long llc = largest_cache_bytes();
    const char *llc_source = "sysfs";
    if (llc == 0) {
        llc = FALLBACK_LLC_BYTES;
        llc_source = "fallback";
    }
    if (elements == 0) elements = (long long)(ARRAY_OVER_LLC * llc / sizeof(double));
    size_t bytes_per_array = (size_t)elements * sizeof(double);

    omp_set_num_threads(threads);
    double *a = malloc(bytes_per_array);
    double *b = malloc(bytes_per_array);
    double *c = malloc(bytes_per_array);
    if (!a || !b || !c) {
        fprintf(stderr, "stream: --elements: cannot allocate 3 arrays of %zu bytes\n", bytes_per_array);
        free(a); free(b); free(c);
        return 2;
    }
    #pragma omp parallel for schedule(static)
    for (long long i = 0; i < elements; i++) {
        a[i] = 1.0;
        b[i] = 2.0;
        c[i] = 0.0;
    }

    for (int k = 0; k < NKERNELS; k++) timed_kernel(k, a, b, c, elements);  // warm-up pass
    double best[NKERNELS];
    // every pass's time, for the harness's spread and outlier checks (pstudy/ceilings.py)
    double *times = malloc(sizeof(double) * (size_t)NKERNELS * (size_t)reps);
    if (!times) {
        fprintf(stderr, "stream: out of memory for %d repetitions\n", reps);
        return 1;
    }
    for (int k = 0; k < NKERNELS; k++) best[k] = INFINITY;
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < NKERNELS; k++) {
            double t = timed_kernel(k, a, b, c, elements);
            times[(size_t)k * reps + r] = t;
            if (t < best[k]) best[k] = t;
        }
    }
    int bad = validate(a, b, c, elements, reps + 1);
    free(a); free(b); free(c);
    if (bad) free(times);
    if (bad) return 1;

    // A tiny array can finish below the clock's resolution; never divide by 0.
    double tick = omp_get_wtick();
    double gbs[NKERNELS];
    for (int k = 0; k < NKERNELS; k++) {
        double t = best[k] > tick ? best[k] : tick;
        gbs[k] = (double)arrays_moved[k] * (double)bytes_per_array / t * 1e-9;
    }

    fprintf(stderr, "stream: %d threads, %lld doubles per array (%.1f MiB), largest cache %.1f MiB (%s), best of %d\n",
            threads, elements, bytes_per_array / 1048576.0, llc / 1048576.0, llc_source, reps);
    fprintf(stderr, "%-8s %12s %14s\n", "kernel", "GB/s", "best time [s]");
    for (int k = 0; k < NKERNELS; k++)
        fprintf(stderr, "%-8s %12.2f %14.6f\n", kernel_names[k], gbs[k], best[k]);

    if (json) {
        printf("{\"threads\":%d,\"elements\":%lld,\"element_type\":\"double\",\"bytes_per_array\":%zu,"
               "\"llc_bytes\":%llu,\"llc_source\":\"%s\",\"reps\":%d",
               threads, elements, bytes_per_array, llc, llc_source, reps);
        for (int k = 0; k < NKERNELS; k++) printf(",\"%s_GBs\":%.3f", kernel_names[k], gbs[k]);
        for (int k = 0; k < NKERNELS; k++) {
            printf(",\"%s_rep_GBs\":[", kernel_names[k]);
            for (int r = 0; r < reps; r++) {
                double t = times[(size_t)k * reps + r];
                printf("%s%.3f", r ? "," : "", (double)arrays_moved[k] * (double)bytes_per_array / (t > tick ? t : tick) * 1e-9);
            }
            printf("]");
        }
        printf("}\n");
    }
    free(times);
    return 0;
}
