// Exercises core/counters.h the way an executor does: two kernels as two
// regions, called on every OpenMP thread, then the report. Built once per
// backend by tests/harness/test_counters.py; its output feeds the parsers.
//
// Usage: counters_demo [calls]   (default 3 calls of each region per thread)

#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include "counters.h"

// Enough work per call that cycle counts are far above read overhead.
static double sum_of_squares(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}

static void scale(double *x, int n, double by) {
    for (int i = 0; i < n; i++) x[i] *= by;
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 3;
    if (calls <= 0) {
        fprintf(stderr, "counters_demo: calls: expected a positive integer, got '%s'\n", argv[1]);
        return 2;
    }
    enum { N = 1 << 16 };
    struct counters ctr;
    int ready = counters_init(&ctr, omp_get_max_threads());
    double total = 0.0;
    #pragma omp parallel reduction(+ : total)
    {
        double *x = malloc(N * sizeof *x);
        for (int i = 0; i < N; i++) x[i] = 1.0 + i % 7;
        counters_thread_init(&ctr);
        for (int c = 0; c < calls; c++) {
            counters_region_begin(&ctr, "sum_of_squares");
            total += sum_of_squares(x, N);
            counters_region_end(&ctr, "sum_of_squares");
            counters_region_begin(&ctr, "scale");
            scale(x, N, 0.5);
            counters_region_end(&ctr, "scale");
        }
        free(x);
    }
    counters_finish(&ctr, stdout);
    fprintf(stderr, "counters_demo: init %s, checksum %.3f\n", ready == 0 ? "ok" : "failed", total);
    return 0;
}
