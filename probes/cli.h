// What the probes (stream, peakflops, thief, reread, disturb) and the C benchmarks of bench/ share: a
// one-line error naming the option and exit status 2, option values checked against their range, a
// monotonic clock, a median and the size of the largest cache sysfs reports. Header-only, so that
// each program stays one compilation unit built with `$(CC) ... probes/NAME.c`. Define BENCH_PROGRAM
// (its name, a string literal) before including it.
#ifndef PROBES_CLI_H
#define PROBES_CLI_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef BENCH_PROGRAM
#error "define BENCH_PROGRAM before including cli.h"
#endif

static inline void usage_error(const char *what, const char *problem) {
    fprintf(stderr, BENCH_PROGRAM ": %s: %s\n", what, problem);
    exit(2);
}

// Whether argv[i] is `flag`, an option without a value. Any other argument must be an option with
// a value after it: where it is the last one, a one-line error (a missing value, or an argument
// that is no option at all).
static inline int is_flag(int argc, char **argv, int i, const char *flag) {
    if (!strcmp(argv[i], flag)) return 1;
    if (i + 1 >= argc) usage_error(argv[i], strncmp(argv[i], "--", 2) ? "unknown argument" : "missing value");
    return 0;
}

// The value of the option argv[*i], *i moved onto it. --help or -h prints `usage` and exits 0; an
// option with nothing after it is a one-line error.
static inline const char *option_value(int argc, char **argv, int *i, const char *usage) {
    const char *option = argv[*i];
    if (strcmp(option, "--help") == 0 || strcmp(option, "-h") == 0) {
        printf("%s\n", usage);
        exit(0);
    }
    if (*i + 1 >= argc) usage_error(option, "needs a value (or unknown option)");
    return argv[++*i];
}

// An integer option value in [lo, hi], or a one-line error naming the option.
static inline long long parse_integer(const char *option, const char *text, long long lo, long long hi) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
        char msg[160];
        if (lo == 1)
            snprintf(msg, sizeof msg, "expected a positive integer up to %lld, got '%s'", hi, text);
        else
            snprintf(msg, sizeof msg, "expected an integer in [%lld, %lld], got '%s'", lo, hi, text);
        usage_error(option, msg);
    }
    return v;
}

// A real option value in [lo, hi], or a one-line error naming the option.
static inline double parse_number(const char *option, const char *text, double lo, double hi) {
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !(v >= lo && v <= hi)) {
        char msg[160];
        snprintf(msg, sizeof msg, "expected a number in [%g, %g], got '%s'", lo, hi, text);
        usage_error(option, msg);
    }
    return v;
}

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// The median of v[0..n) (n > 0), sorting v in place.
static inline double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Size of the largest cache cpu0 sees ("32768K", "1M", or plain bytes), or 0 if sysfs does not say.
static inline unsigned long long largest_cache_bytes(void) {
    unsigned long long largest = 0;
    for (int index = 0; index < 16; index++) {
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
        FILE *f = fopen(path, "r");
        if (!f) continue;  // indices need not be contiguous on every kernel
        unsigned long long value = 0;
        char unit = '\0';
        int got = fscanf(f, "%llu%c", &value, &unit);
        fclose(f);
        if (got < 1) continue;
        if (unit == 'K') value <<= 10;
        else if (unit == 'M') value <<= 20;
        else if (unit == 'G') value <<= 30;
        if (value > largest) largest = value;
    }
    return largest;
}

#endif
