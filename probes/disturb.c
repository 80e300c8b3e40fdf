// disturb: a CPU-bound co-runner that takes a share of chosen cores, the way the noise-injection
// studies of the HPC literature disturb an application (Ferreira et al., SC08; Hoefler et al.,
// SC10): one thread pinned to each CPU given, busy for --duty of every period of --period-us
// microseconds and asleep the rest, the periods of all its threads aligned. Whatever runs on those
// CPUs beside it is descheduled while it spins, which the traces' CPU times (cpu_s) tell from slow
// code and their wall times do not.
//
// It spins on arithmetic in registers (no memory traffic: the disturbance is time on the core, not
// bandwidth; probes/thief takes bandwidth), runs for --seconds S (default: until SIGTERM or SIGINT),
// then prints one JSON object:
//   {"cpus": [..], "duty": D, "period_us": P, "seconds": s, "busy_s": b, "achieved_duty": b / (s x cpus)}
// "ready" is printed on stderr once every thread is pinned and running. It stops as on SIGTERM when
// the process that started it exits: a co-runner left behind by a killed driver would disturb
// every run after it, the quiet ones too.
//
// Usage: disturb --cpus LIST [--duty D] [--period-us P] [--seconds S]     (LIST: 0,1 or 0-3)
// Errors: one line "disturb: <option>: <problem>", exit status 2.

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define BENCH_PROGRAM "disturb"
#include "cli.h"

#define MAX_CPUS 1024

// The one flag a signal handler may set: it cannot reach anything but a global.
static volatile sig_atomic_t stop_requested = 0;
static void on_signal(int sig) { (void)sig; stop_requested = 1; }

typedef struct {
    int cpu;
    double duty, period_s, origin, end; // end: 0 runs until a signal
    double busy_s;                      // out: the time it spun
    int pinned;                         // out: 1 once pinned, -1 where pinning failed
    pthread_barrier_t *started;
} Spinner;

static void sleep_until(double t) {
    struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stop_requested) {
    }
}

static void *spin(void *arg) {
    Spinner *s = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(s->cpu, &set);
    s->pinned = pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 ? 1 : -1;
    pthread_barrier_wait(s->started);
    if (s->pinned < 0) return NULL;
    volatile double x = 1.0;
    for (long k = 0; !stop_requested; k++) {
        double start = s->origin + (double)k * s->period_s;
        if (s->end > 0 && start >= s->end) break;
        double stop = start + s->duty * s->period_s, now = now_s();
        if (now > stop) continue; // a period missed (this thread was descheduled): the next one
        double from = now > start ? now : start;
        if (now < start) sleep_until(start);
        while (!stop_requested && (now = now_s()) < stop)
            for (int i = 0; i < 256; i++) x = x * 1.0000001 + 1e-9;
        s->busy_s += now - from;
        if (s->duty < 1.0) sleep_until(start + s->period_s);
    }
    return NULL;
}

// The CPUs of a list such as "0,2-3" into cpus; their count.
static int parse_cpus(const char *text, int *cpus) {
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || errno || a < 0 || a >= CPU_SETSIZE) usage_error("--cpus", "expected a list such as 0,2-3");
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a || b >= CPU_SETSIZE) usage_error("--cpus", "expected a list such as 0,2-3");
            p = end;
        }
        for (long c = a; c <= b; c++) {
            if (n >= MAX_CPUS) usage_error("--cpus", "too many CPUs");
            // two spinners on one CPU would take twice the duty there and be recorded as two CPUs
            for (int i = 0; i < n; i++)
                if (cpus[i] == c) usage_error("--cpus", "a CPU given twice");
            cpus[n++] = (int)c;
        }
        if (*p == ',') p++;
        else if (*p) usage_error("--cpus", "expected a list such as 0,2-3");
    }
    if (n == 0) usage_error("--cpus", "no CPU given");
    return n;
}

int main(int argc, char **argv) {
    static int cpus[MAX_CPUS];
    int n = 0;
    double duty = 0.5, period_us = 10000.0, seconds = 0.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = option_value(argc, argv, &i, "usage: disturb --cpus LIST [--duty D] [--period-us P] [--seconds S]");
        if (strcmp(a, "--cpus") == 0) n = parse_cpus(v, cpus);
        else if (strcmp(a, "--duty") == 0) duty = parse_number(a, v, 0.0, 1.0);
        else if (strcmp(a, "--period-us") == 0) period_us = parse_number(a, v, 100.0, 1e7);
        else if (strcmp(a, "--seconds") == 0) seconds = parse_number(a, v, 0.001, 1e6);
        else usage_error(a, "unknown option");
    }
    if (n == 0) usage_error("--cpus", "required");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    // the parent read before asking: one that exited in between is seen as a changed parent
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) stop_requested = 1;

    Spinner *spinners = calloc((size_t)n, sizeof(Spinner));
    pthread_t *threads = calloc((size_t)n, sizeof(pthread_t));
    pthread_barrier_t started;
    if (!spinners || !threads || pthread_barrier_init(&started, NULL, (unsigned)n + 1) != 0)
        usage_error("memory", "cannot allocate");
    double origin = now_s() + 0.01; // every thread's first period starts together
    for (int i = 0; i < n; i++) {
        spinners[i] = (Spinner){cpus[i], duty, period_us * 1e-6, origin, seconds > 0 ? origin + seconds : 0.0,
                                0.0, 0, &started};
        if (pthread_create(&threads[i], NULL, spin, &spinners[i]) != 0) usage_error("threads", "cannot start one");
    }
    pthread_barrier_wait(&started);
    for (int i = 0; i < n; i++)
        if (spinners[i].pinned < 0) {
            stop_requested = 1;
            char msg[64];
            snprintf(msg, sizeof msg, "cannot pin a thread to CPU %d", cpus[i]);
            usage_error("--cpus", msg);
        }
    fprintf(stderr, "ready\n");
    double busy = 0.0;
    for (int i = 0; i < n; i++) {
        pthread_join(threads[i], NULL);
        busy += spinners[i].busy_s;
    }
    double ran = now_s() - origin;
    printf("{\"cpus\": [");
    for (int i = 0; i < n; i++) printf("%s%d", i ? ", " : "", cpus[i]);
    printf("], \"duty\": %g, \"period_us\": %g, \"seconds\": %.3f, \"busy_s\": %.3f, \"achieved_duty\": %.4f}\n",
           duty, period_us, ran, busy, ran > 0 ? busy / (ran * n) : 0.0);
    pthread_barrier_destroy(&started);
    free(spinners);
    free(threads);
    return 0;
}
