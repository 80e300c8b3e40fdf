// Per-task overhead of the task runtimes the variants run on: empty tasks, in
// a chain (each task depends on the one before: the latency of a release and a
// dispatch) and in a wide fan-out (one root, N independent tasks: the
// throughput of submission and scheduling), timed from the first submission to
// the last completion, in ns per task.
//
//   runtime_overhead RUNTIME SHAPE TASKS THREADS REPEATS
//     RUNTIME: omp (the compiler's OpenMP runtime: libgomp with gcc, libomp
//              with clang; depend clauses), replay (the built-in scheduler of
//              variants/taskiter.c: predecessor counters, one binary heap
//              behind one adaptive mutex, sched_yield while idle), nosv (the
//              successor submitted by the completed task, NOSV_SUBMIT_IMMEDIATE
//              as variants/nosv.c does), starpu (explicit task dependencies;
//              the scheduler from STARPU_SCHED)
//     SHAPE:   chain or fanout
// Prints one line: RUNTIME SHAPE TASKS THREADS median_ns_per_task min_ns_per_task.
#define _GNU_SOURCE
#define BENCH_PROGRAM "runtime_overhead"
#include <dlfcn.h>
#include <nosv.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <starpu.h>
#include <stdlib.h>
#include <string.h>
#include "../probes/cli.h"

enum { CHAIN, FANOUT };

// Something a task does that the compiler cannot remove: one store.
static void touch(volatile long *sink) { *sink += 1; }

// ---- OpenMP tasks ----
static double run_omp(int shape, int n, int threads) {
    volatile long sink = 0;
    char dep = 0;
    (void)dep; // GCC does not count its use in a depend clause
    double t0 = now_s();
#pragma omp parallel num_threads(threads)
#pragma omp single
    {
        if (shape == CHAIN) {
            for (int i = 0; i < n; i++) {
#pragma omp task depend(inout : dep) shared(sink)
                touch(&sink);
            }
        } else {
            for (int i = 0; i < n; i++) {
#pragma omp task shared(sink)
                touch(&sink);
            }
        }
#pragma omp taskwait
    }
    return now_s() - t0;
}

// ---- the built-in replay (taskiter's scheduler, reduced to its graph walk) ----
typedef struct {
    int n, shape;
    int *counter;
    int *heap;
    long heap_size, remaining;
    pthread_mutex_t lock;
    volatile long sink;
} Replay;

static void heap_push(Replay *r, int t) {
    long i = r->heap_size;
    __atomic_store_n(&r->heap_size, i + 1, __ATOMIC_RELAXED);
    while (i > 0 && t < r->heap[(i - 1) / 2]) {
        r->heap[i] = r->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    r->heap[i] = t;
}

static int heap_pop(Replay *r) {
    long n = r->heap_size - 1;
    __atomic_store_n(&r->heap_size, n, __ATOMIC_RELAXED);
    int top = r->heap[0], last = r->heap[n];
    long i = 0;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && r->heap[c + 1] < r->heap[c]) c++;
        if (r->heap[c] >= last) break;
        r->heap[i] = r->heap[c];
        i = c;
    }
    r->heap[i] = last;
    return top;
}

// The successors of task t: chain, t + 1; fan-out, every task after the root.
static void replay_release(Replay *r, int t, int *locked) {
    int first = t + 1, last = r->shape == CHAIN ? t + 1 : t == 0 ? r->n - 1 : t;
    for (int s = first; s <= last && s < r->n; s++) {
        if (__atomic_sub_fetch(&r->counter[s], 1, __ATOMIC_ACQ_REL) != 0) continue;
        if (!*locked) {
            pthread_mutex_lock(&r->lock);
            *locked = 1;
        }
        heap_push(r, s);
    }
}

static double run_replay(int shape, int n, int threads) {
    Replay r = {.n = n, .shape = shape};
    r.counter = malloc(n * sizeof(int));
    r.heap = malloc((n + 1) * sizeof(int));
    if (!r.counter || !r.heap) usage_error("TASKS", "out of memory");
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&r.lock, &attr);
    for (int t = 0; t < n; t++) r.counter[t] = t == 0 ? 0 : 1;
    r.remaining = n;
    heap_push(&r, 0);
    double t0 = now_s();
#pragma omp parallel num_threads(threads)
    {
        int job = -1;
        for (;;) {
            if (job < 0) {
                if (__atomic_load_n(&r.remaining, __ATOMIC_ACQUIRE) == 0) break;
                if (__atomic_load_n(&r.heap_size, __ATOMIC_RELAXED) == 0) {
                    sched_yield();
                    continue;
                }
                pthread_mutex_lock(&r.lock);
                if (r.heap_size > 0) job = heap_pop(&r);
                pthread_mutex_unlock(&r.lock);
                continue;
            }
            touch(&r.sink);
            int locked = 0;
            replay_release(&r, job, &locked);
            __atomic_sub_fetch(&r.remaining, 1, __ATOMIC_ACQ_REL);
            job = -1;
            if (locked) {
                if (r.heap_size > 0) job = heap_pop(&r);
                pthread_mutex_unlock(&r.lock);
            }
        }
    }
    double elapsed = now_s() - t0;
    pthread_mutex_destroy(&r.lock);
    free(r.counter);
    free(r.heap);
    return elapsed;
}

// ---- nOS-V ----
typedef struct {
    int shape, n;
    nosv_task_t *tasks;
    long remaining;
    sem_t done;
    volatile long sink;
} NosvRun;

typedef struct {
    NosvRun *run;
    int index;
} NosvMeta;

static void nosv_body(nosv_task_t task) {
    NosvMeta *m = nosv_get_task_metadata(task);
    touch(&m->run->sink);
}

static void nosv_completed(nosv_task_t task) {
    NosvMeta *m = nosv_get_task_metadata(task);
    NosvRun *r = m->run;
    if (r->shape == CHAIN && m->index + 1 < r->n) nosv_submit(r->tasks[m->index + 1], NOSV_SUBMIT_IMMEDIATE);
    if (r->shape == FANOUT && m->index == 0)
        for (int t = 1; t < r->n; t++) nosv_submit(r->tasks[t], t == 1 ? NOSV_SUBMIT_IMMEDIATE : NOSV_SUBMIT_NONE);
    if (__atomic_sub_fetch(&r->remaining, 1, __ATOMIC_ACQ_REL) == 0) sem_post(&r->done);
}

static double run_nosv(int shape, int n, int threads) {
    // nOS-V runs one worker per CPU of the initialising thread's mask
    cpu_set_t mine, bound;
    sched_getaffinity(0, sizeof(mine), &mine);
    CPU_ZERO(&bound);
    for (int c = 0, taken = 0; c < CPU_SETSIZE && taken < threads; c++)
        if (CPU_ISSET(c, &mine)) CPU_SET(c, &bound), taken++;
    sched_setaffinity(0, sizeof(bound), &bound);
    if (nosv_init() != 0) usage_error("nosv", "nosv_init failed");
    sched_setaffinity(0, sizeof(mine), &mine);
    nosv_task_type_t type;
    nosv_type_init(&type, nosv_body, NULL, nosv_completed, "empty", NULL, NULL, NOSV_TYPE_INIT_NONE);
    NosvRun r = {.shape = shape, .n = n, .remaining = n};
    sem_init(&r.done, 0, 0);
    r.tasks = malloc(n * sizeof(nosv_task_t));
    if (!r.tasks) usage_error("TASKS", "out of memory");
    for (int t = 0; t < n; t++) {
        if (nosv_create(&r.tasks[t], type, sizeof(NosvMeta), NOSV_CREATE_NONE) != 0) usage_error("TASKS", "nosv_create failed");
        *(NosvMeta *)nosv_get_task_metadata(r.tasks[t]) = (NosvMeta){&r, t};
    }
    double t0 = now_s();
    nosv_submit(r.tasks[0], NOSV_SUBMIT_NONE);
    while (sem_wait(&r.done) != 0) continue;
    double elapsed = now_s() - t0;
    for (int t = 0; t < n; t++) nosv_destroy(r.tasks[t], NOSV_DESTROY_NONE);
    nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE);
    nosv_shutdown();
    free(r.tasks);
    sem_destroy(&r.done);
    return elapsed;
}

// ---- StarPU ----
static void starpu_body(void *buffers[], void *arg) {
    (void)buffers;
    touch(arg);
}

static double run_starpu(int shape, int n, int threads) {
    struct starpu_conf conf;
    starpu_conf_init(&conf);
    conf.ncpus = threads;
    conf.ncuda = 0;
    conf.nopencl = 0;
    if (starpu_init(&conf) != 0) usage_error("starpu", "starpu_init failed");
    struct starpu_codelet cl;
    starpu_codelet_init(&cl);
    cl.where = STARPU_CPU;
    cl.cpu_funcs[0] = starpu_body;
    cl.nbuffers = 0;
    volatile long sink = 0;
    struct starpu_task *tasks = calloc(n, sizeof(*tasks));
    if (!tasks) usage_error("TASKS", "out of memory");
    for (int t = 0; t < n; t++) {
        starpu_task_init(&tasks[t]);
        tasks[t].cl = &cl;
        tasks[t].cl_arg = (void *)&sink;
        tasks[t].destroy = 0;
        struct starpu_task *pred = &tasks[shape == CHAIN ? t - 1 : 0];
        if (t > 0) starpu_task_declare_deps_array(&tasks[t], 1, &pred);
    }
    double t0 = now_s();
    for (int t = 0; t < n; t++)
        if (starpu_task_submit(&tasks[t]) != 0) usage_error("starpu", "task submission failed");
    starpu_task_wait_for_all();
    double elapsed = now_s() - t0;
    for (int t = 0; t < n; t++) starpu_task_clean(&tasks[t]);
    free(tasks);
    starpu_shutdown();
    return elapsed;
}

int main(int argc, char **argv) {
    if (argc != 6) usage_error("usage", "runtime_overhead omp|replay|nosv|starpu chain|fanout TASKS THREADS REPEATS");
    const char *runtime = argv[1];
    int shape = strcmp(argv[2], "chain") == 0 ? CHAIN : strcmp(argv[2], "fanout") == 0 ? FANOUT : -1;
    if (shape < 0) usage_error("SHAPE", "expected chain or fanout");
    int n = (int)parse_integer("TASKS", argv[3], 2, 1 << 24);
    int threads = (int)parse_integer("THREADS", argv[4], 1, 1024);
    int repeats = (int)parse_integer("REPEATS", argv[5], 1, 10000);
    double (*run)(int, int, int) = strcmp(runtime, "omp") == 0      ? run_omp
                                   : strcmp(runtime, "replay") == 0 ? run_replay
                                   : strcmp(runtime, "nosv") == 0   ? run_nosv
                                   : strcmp(runtime, "starpu") == 0 ? run_starpu
                                                                    : NULL;
    if (!run) usage_error("RUNTIME", "expected omp, replay, nosv or starpu");
    if (strcmp(runtime, "starpu") == 0) setenv("STARPU_SILENT", "1", 0);
    double *times = malloc(repeats * sizeof(double));
    if (!times) usage_error("REPEATS", "out of memory");
    run(shape, n < 1000 ? n : 1000, threads); // warm-up: threads started, pages touched
    for (int r = 0; r < repeats; r++) times[r] = run(shape, n, threads);
    qsort(times, repeats, sizeof(double), bench_by_value);
    printf("%s %s %d %d %.1f %.1f\n", runtime, argv[2], n, threads, times[repeats / 2] * 1e9 / n, times[0] * 1e9 / n);
    free(times);
    return 0;
}
