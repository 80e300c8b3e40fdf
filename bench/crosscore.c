// crosscore: what it costs a core to read data that another core has just
// written, against reading data it wrote itself: the traffic a parallel step
// pays when an operation's chunk runs on another core than the chunks that
// produced its inputs (fork-join's column halves always do; a task scheduler
// may or may not), and that a replay from 1-thread traces never sees.
//
// Run rules, per buffer size:
//   - two threads, the writer pinned to --writer-cpu and the reader to
//     --reader-cpu (default: the last two CPUs this process may run on);
//   - each round the writer fills the buffer, then the reader sums it twice:
//     the first pass reads the other core's lines (timed as "other"), the
//     second its own cached copy (timed as "own"); the rounds alternate
//     through a flag in shared memory, so the two never run together;
//   - the first WARMUP_ROUNDS rounds are left out; the figure is the median
//     round's bandwidth (bytes summed / seconds) of each pass;
//   - the sums go into a printed checksum, so the reads cannot be dropped.
// Sizes that fit the reader's private caches show the gap; past the last
// level cache both passes come from memory and meet.
//
// Usage: crosscore [--kib N] [--rounds N] [--writer-cpu C --reader-cpu C] [--json]
//   (--kib repeatable; default 256, 1024, 4096 and 16384 KiB; 200 rounds)
// Errors: one line "crosscore: <option>: <problem>", exit status 2.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_PROGRAM "crosscore"
#include "../probes/cli.h"

#define MAX_SIZES 16
#define WARMUP_ROUNDS 10

typedef struct {
    float *buffer;
    size_t floats;
    int rounds;
    int cpu;
    atomic_int turn;  // 2r: the writer's turn in round r; 2r + 1: the reader's
} Shared;

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc != 0) {
        char what[32];
        snprintf(what, sizeof what, "cpu %d", cpu);
        usage_error(what, strerror(rc));
    }
}

static void *writer(void *arg) {
    Shared *s = arg;
    pin(s->cpu);
    for (int r = 0; r < s->rounds; r++) {
        while (atomic_load_explicit(&s->turn, memory_order_acquire) != 2 * r) sched_yield();
        for (size_t i = 0; i < s->floats; i++) s->buffer[i] = (float)(i & 1023) + (float)r;
        atomic_store_explicit(&s->turn, 2 * r + 1, memory_order_release);
    }
    return NULL;
}

// Eight independent partial sums, so that the loop is bound by loads, not by
// the latency of one chain of additions.
static float sum(const float *x, size_t n) {
    float acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += x[i + k];
    for (; i < n; i++) acc[0] += x[i];
    float total = 0;
    for (int k = 0; k < 8; k++) total += acc[k];
    return total;
}

int main(int argc, char **argv) {
    long sizes[MAX_SIZES];
    int n_sizes = 0, rounds = 200, json = 0, writer_cpu = -1, reader_cpu = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_flag(argc, argv, i, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--kib")) {
            if (n_sizes == MAX_SIZES) usage_error(a, "at most 16 sizes");
            sizes[n_sizes++] = parse_integer(a, argv[++i], 4, 1L << 20);
        } else if (!strcmp(a, "--rounds")) {
            rounds = (int)parse_integer(a, argv[++i], WARMUP_ROUNDS + 1, 1000000);
        } else if (!strcmp(a, "--writer-cpu")) {
            writer_cpu = (int)parse_integer(a, argv[++i], 0, CPU_SETSIZE - 1);
        } else if (!strcmp(a, "--reader-cpu")) {
            reader_cpu = (int)parse_integer(a, argv[++i], 0, CPU_SETSIZE - 1);
        } else {
            usage_error(a, "unknown option");
        }
    }
    if (n_sizes == 0) {
        const long defaults[] = {256, 1024, 4096, 16384};
        for (int k = 0; k < 4; k++) sizes[n_sizes++] = defaults[k];
    }
    if ((writer_cpu < 0) != (reader_cpu < 0)) usage_error("--writer-cpu", "give it with --reader-cpu");
    if (writer_cpu < 0) {  // the last two CPUs this process may run on
        cpu_set_t allowed;
        if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) usage_error("sched_getaffinity", strerror(errno));
        for (int c = CPU_SETSIZE - 1; c >= 0; c--) {
            if (!CPU_ISSET(c, &allowed)) continue;
            if (reader_cpu < 0) reader_cpu = c;
            else if (writer_cpu < 0) writer_cpu = c;
        }
        if (writer_cpu < 0) usage_error("cpus", "needs two CPUs to run on, this process may use one");
    }
    if (writer_cpu == reader_cpu) usage_error("--writer-cpu", "must differ from --reader-cpu");

    double checksum = 0;
    if (json) printf("{\"writer_cpu\": %d, \"reader_cpu\": %d, \"rounds\": %d, \"sizes\": [", writer_cpu, reader_cpu, rounds);
    for (int k = 0; k < n_sizes; k++) {
        Shared s = {.floats = (size_t)sizes[k] * 256, .rounds = rounds, .cpu = writer_cpu};
        s.buffer = aligned_alloc(64, s.floats * sizeof(float));
        double *other = malloc((size_t)rounds * sizeof(double)), *own = malloc((size_t)rounds * sizeof(double));
        if (!s.buffer || !other || !own) usage_error("--kib", "out of memory");
        memset(s.buffer, 0, s.floats * sizeof(float));
        atomic_init(&s.turn, 0);
        pthread_t w;
        if (pthread_create(&w, NULL, writer, &s) != 0) usage_error("pthread_create", strerror(errno));
        pin(reader_cpu);
        int kept = 0;
        for (int r = 0; r < rounds; r++) {
            while (atomic_load_explicit(&s.turn, memory_order_acquire) != 2 * r + 1) sched_yield();
            double t0 = now_s();
            float a = sum(s.buffer, s.floats);
            double t1 = now_s();
            float b = sum(s.buffer, s.floats);
            double t2 = now_s();
            checksum += (double)a + (double)b;
            if (r >= WARMUP_ROUNDS) {
                double bytes = (double)s.floats * sizeof(float);
                other[kept] = bytes / (t1 - t0) / 1e9;
                own[kept] = bytes / (t2 - t1) / 1e9;
                kept++;
            }
            atomic_store_explicit(&s.turn, 2 * r + 2, memory_order_release);
        }
        pthread_join(w, NULL);
        double g_other = median(other, kept), g_own = median(own, kept);
        if (json)
            printf("%s{\"kib\": %ld, \"other_core_GBs\": %.3f, \"own_cache_GBs\": %.3f}", k ? ", " : "", sizes[k],
                   g_other, g_own);
        else
            printf("%8ld KiB: written by cpu %d, read by cpu %d at %7.2f GB/s; again from its own cache %7.2f GB/s "
                   "(%.2fx)\n",
                   sizes[k], writer_cpu, reader_cpu, g_other, g_own, g_own / g_other);
        free(s.buffer);
        free(other);
        free(own);
    }
    if (json) printf("], \"checksum\": %.6g}\n", checksum);
    else printf("checksum %.6g\n", checksum);
    return 0;
}
