// thief: steals memory bandwidth (or cache) from whatever runs beside it, at a chosen pressure,
// and reports what it took. The interference method of Eklov et al., "Bandwidth Bandit" (CGO
// 2013): the program under study runs beside the thief, and its slowdown against the thief's
// achieved GB/s says how much it depends on the memory system.
//
//   a[i] = b[i] + s * c[i]   (STREAM triad on doubles, 24 bytes per element, STREAM counting:
//                             each array named once, write-allocate not counted)
//
// Pressure: --duty D in [0, 1]. Time is cut into periods of --period-us microseconds; in each
// the thief streams for D of the period and sleeps the rest (D = 1: it never sleeps, the most it
// can take from one core; D = 0: it only sleeps). Its achieved bandwidth is reported, never
// assumed from D.
//
// Modes: --mode dram: the three arrays together are 8x the last-level cache (sysfs, cpu0), so
// every pass goes to DRAM. --mode cache: the arrays together are 3/4 of the last-level cache, so
// the thief runs from L3 and takes cache capacity (and L3 bandwidth) but little DRAM bandwidth.
// --bytes N overrides the total size.
//
// It runs for --seconds S (default: until SIGTERM or SIGINT), then prints one JSON object:
//   {"mode": ..., "duty": D, "buffer_bytes": N, "llc_bytes": N, "bytes": moved, "seconds": s,
//    "GBs": moved / s / 1e9, "passes": n}
// "ready" is printed on stderr once the arrays are touched and streaming starts.
//
// Usage: thief [--mode dram|cache] [--duty D] [--seconds S] [--bytes N] [--period-us P]
// Errors: one line "thief: <option>: <problem>", exit status 2.

#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_PROGRAM "thief"
#include "cli.h"

#define FALLBACK_LLC_BYTES (32ull << 20)
#define DRAM_OVER_LLC 8
#define CHUNK_ELEMENTS 4096  // streamed between two looks at the clock (96 KiB)

static volatile sig_atomic_t stop_requested = 0;
static void on_signal(int sig) { (void)sig; stop_requested = 1; }

static void sleep_s(double s) {
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);  // an interrupting signal ends the sleep early; the loop then stops
}

int main(int argc, char **argv) {
    const char *mode = "dram";
    double duty = 1.0, seconds = 0.0, period_us = 1000.0, bytes_opt = 0.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = option_value(argc, argv, &i, "usage: thief [--mode dram|cache] [--duty D] [--seconds S] [--bytes N] [--period-us P]");
        if (strcmp(a, "--mode") == 0) {
            if (strcmp(v, "dram") != 0 && strcmp(v, "cache") != 0) usage_error(a, "expected dram or cache");
            mode = v;
        } else if (strcmp(a, "--duty") == 0) {
            duty = parse_number(a, v, 0.0, 1.0);
        } else if (strcmp(a, "--seconds") == 0) {
            seconds = parse_number(a, v, 0.001, 1e6);
        } else if (strcmp(a, "--bytes") == 0) {
            bytes_opt = parse_number(a, v, 3 * 8 * CHUNK_ELEMENTS, 1e12);
        } else if (strcmp(a, "--period-us") == 0) {
            period_us = parse_number(a, v, 10.0, 1e6);
        } else {
            usage_error(a, "unknown option");
        }
    }
    unsigned long long llc = largest_cache_bytes();
    if (llc == 0) llc = FALLBACK_LLC_BYTES;
    double total = bytes_opt > 0 ? bytes_opt
                   : strcmp(mode, "dram") == 0 ? (double)llc * DRAM_OVER_LLC : (double)llc * 0.75;
    size_t n = (size_t)(total / 24.0);
    n -= n % CHUNK_ELEMENTS;
    if (n == 0) usage_error("--bytes", "too small");
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) usage_error("--bytes", "cannot allocate the arrays");
    for (size_t i = 0; i < n; i++) { a[i] = 0.0; b[i] = 1.0; c[i] = 2.0; }
    // One untimed pass of the kernel before streaming starts. Touching the
    // arrays is not enough in a VM: the host may have merged their pages
    // (same-content pages, KSM), and the first write to each then costs a
    // copy on the host. Seen on a 2-vCPU Xeon VM with a 480 MiB L3 (a 4 GB
    // buffer): the thief moved 1.1 GB/s in its first 0.6 s against STREAM's
    // 15.9, and 13-25 GB/s once its buffer had been written once.
    for (size_t i = 0; i < n; i++) a[i] = b[i] + 3.0 * c[i];

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    fprintf(stderr, "ready\n");
    fflush(stderr);

    const double s = 3.0, period = period_us * 1e-6;
    double moved = 0.0;
    long long passes = 0;
    size_t pos = 0;
    double start = now_s(), end = start;
    while (!stop_requested) {
        double p0 = now_s();
        if (seconds > 0 && p0 - start >= seconds) break;
        double busy_until = p0 + duty * period;
        if (duty > 0) {
            do {
                for (size_t i = pos; i < pos + CHUNK_ELEMENTS; i++) a[i] = b[i] + s * c[i];
                moved += 24.0 * CHUNK_ELEMENTS;
                pos += CHUNK_ELEMENTS;
                if (pos >= n) { pos = 0; passes++; }
            } while (now_s() < busy_until && !stop_requested);
        }
        if (duty < 1.0) sleep_s(p0 + period - now_s());
    }
    end = now_s();
    // a checksum the compiler cannot drop, so the stores are kept
    double check = a[n / 2] + a[n - 1];
    printf("{\"mode\": \"%s\", \"duty\": %g, \"buffer_bytes\": %.0f, \"llc_bytes\": %llu, \"bytes\": %.0f, "
           "\"seconds\": %.6f, \"GBs\": %.4f, \"passes\": %lld, \"check\": %g}\n",
           mode, duty, 24.0 * (double)n, llc, moved, end - start, moved / (end - start) / 1e9, passes,
           isfinite(check) ? check : 0.0);
    free(a);
    free(b);
    free(c);
    return 0;
}
