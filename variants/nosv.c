// nosv: taskiter's recorded graph replayed on nOS-V, BSC's tasking runtime
// under OmpSs-2, instead of on a scheduler of the variant's own. The chunk
// tasks and their dependencies (within an iteration and into the next) come
// from core/taskgraph.c once, as for taskiter; every chunk of an iteration is
// a nOS-V task, and there is no barrier between phases or iterations.
//
// nOS-V tracks no dependencies: a task is submitted when its predecessors are
// done. A task that finishes counts its successors' predecessors down and
// submits those it made ready, the first of them with NOSV_SUBMIT_IMMEDIATE,
// so that it runs next on the same CPU without going through the scheduler
// (OmpSs-2's immediate-successor policy), the others through nOS-V's
// scheduler. nOS-V's CPU manager runs one worker per CPU of its binding and
// places them itself; the info line records where.
//
// Counters and tasks live in two slots, used by even and odd iterations, as
// in taskiter: a task of iteration i+2 is released only after the same task
// of iteration i completed (the graph orders every task's instances through
// the iteration in between), so each slot's nOS-V task is created once and
// resubmitted, and nothing is allocated per iteration. The release happens in
// the completed callback, after nOS-V has reset the task for resubmission.
//
// PERFSTUDY_OVNI_TRACE=DIR records an ovni trace of the runtime into DIR
// (ovniemu turns it into Paraver's: docs/traces.md), where nOS-V was built
// with ovni (WITH_OVNI). nOS-V itself starts ovni's process and the threads it
// runs or that call nosv_init, and finishes them in nosv_shutdown: a second
// ovni_proc_init here would abort. What is left to the program is asking
// nOS-V for it before nosv_init and checking that the libovni it runs with
// is the one it was compiled for and that the trace began.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <nosv.h>
#include <nosv/hwinfo.h>
#include <omp.h>
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef WITH_OVNI
#include <ovni.h>
#endif
#include "../core/schedule.h"
#include "../core/taskgraph.h"
#include "executor.h"
#include "iteration_spans.h"

const char *const EXECUTOR_NAME = "nosv";
const int EXECUTOR_WHOLE_LOOP = 1;
const int EXECUTOR_PACKS_WEIGHTS = 1; // row chunks share one packing of each weight

typedef struct Executor Executor;

// What a nOS-V task carries: which chunk task, in which slot, and the
// iteration it runs for (set before each submission).
typedef struct {
    Executor *ex;
    int task, iteration;
} Instance;

struct Executor {
    StepDescription *step;
    TaskGraph graph;
    int threads;        // the thread count the graph is chunked for
    int workers;        // nOS-V's CPUs: the threads, or every CPU of the process where it has fewer
    int *counters[2];   // predecessors still to finish, per task, per slot
    int *armed;         // counter value a task starts an iteration with (beyond the first)
    // one task type per operation kind, named as the kind (matmul_fwd, adamw, ...), so that the
    // runtime's own trace (ovni's Paraver views) says which operation each worker ran
    nosv_task_type_t types[NUM_OP_KINDS];
    nosv_task_t *tasks[2]; // one nOS-V task per chunk task and slot
    int initialised;    // nosv_init succeeded: nosv_shutdown is owed
    const char *ovni;   // the version of the libovni recording the runtime, or NULL
    // the run in progress (executor_train)
    float *losses;
    Trace *trace;
    int first, last;
    long remaining;     // task instances still to complete
    PhaseSpan *spans;   // spans[worker * n + (iteration - first)]
    long *left;         // per iteration, its task instances still to complete
    Disturbance *marks; // marks[i + 1]: read as iteration i ended; marks[0] at the start
    sem_t done;         // posted when the last instance completes
    char placement[384];
};

static Instance *instance_of(nosv_task_t task) { return nosv_get_task_metadata(task); }

static void run_task(nosv_task_t task) {
    Instance *in = instance_of(task);
    Executor *ex = in->ex;
    const StepDescription *s = ex->step;
    const ChunkTask *t = &ex->graph.tasks[in->task];
    int me = nosv_get_current_logical_cpu();
    double t0 = now_seconds();
    run_chunk(s, t->op, t->range, in->iteration, ex->losses, ex->trace, me);
    double t1 = now_seconds();
    Phase phase = s->ops[t->op].phase;
    span_add(&ex->spans[(size_t)me * (ex->last - ex->first) + (in->iteration - ex->first)], phase, t0, t1);
    if (__atomic_sub_fetch(&ex->left[in->iteration - ex->first], 1, __ATOMIC_ACQ_REL) == 0)
        disturbance_now(&ex->marks[in->iteration - ex->first + 1]);
}

// Counts one predecessor of (iteration, task) down; when it became ready,
// re-arms its slot for iteration + 2 and submits it (the first one a
// finished task readies as its immediate successor).
static void release(Executor *ex, int iteration, int task, int *readied) {
    int slot = iteration & 1;
    int *counter = &ex->counters[slot][task];
    if (__atomic_sub_fetch(counter, 1, __ATOMIC_ACQ_REL) != 0) return;
    __atomic_store_n(counter, ex->armed[task], __ATOMIC_RELAXED);
    nosv_task_t next = ex->tasks[slot][task];
    instance_of(next)->iteration = iteration;
    nosv_submit(next, (*readied)++ == 0 ? NOSV_SUBMIT_IMMEDIATE : NOSV_SUBMIT_NONE);
}

static void task_completed(nosv_task_t task) {
    Instance *in = instance_of(task);
    Executor *ex = in->ex;
    const TaskGraph *g = &ex->graph;
    int t = in->task, iteration = in->iteration, readied = 0;
    for (int k = g->succ_first[t]; k < g->succ_first[t + 1]; k++) release(ex, iteration, g->succ[k], &readied);
    if (iteration + 1 < ex->last)
        for (int k = g->next_succ_first[t]; k < g->next_succ_first[t + 1]; k++)
            release(ex, iteration + 1, g->next_succ[k], &readied);
    if (__atomic_sub_fetch(&ex->remaining, 1, __ATOMIC_ACQ_REL) == 0) sem_post(&ex->done);
}

// The CPUs nOS-V's workers get: one of each of the `threads` places OpenMP
// would bind as many threads to (OMP_PLACES, from this thread's place on, as
// OMP_PROC_BIND=close does), so that a placement setting means the same for
// nosv as for the OpenMP variants. The thread's own mask cannot say it: under
// OMP_PROC_BIND libgomp binds this initial thread to its first place alone,
// and nOS-V would then run one worker. Without places: the first `threads`
// CPUs of the thread's mask. Fewer places than threads: every CPU of them.
// Returns the count taken.
static int worker_cpus(int threads, const cpu_set_t *mine, cpu_set_t *bound) {
    CPU_ZERO(bound);
    int taken = 0, places = omp_get_num_places();
    if (places > 0) {
        int first = omp_get_place_num() >= 0 ? omp_get_place_num() : 0;
        for (int pass = 0; pass < 2 && taken < threads; pass++)
            for (int i = 0; i < places && taken < threads; i++) {
                int place = (first + i) % places, n = omp_get_place_num_procs(place);
                int *ids = n > 0 ? malloc((size_t)n * sizeof(int)) : NULL;
                if (!ids) continue;
                omp_get_place_proc_ids(place, ids);
                // the first pass takes a place's first CPU, the second the rest
                for (int k = pass == 0 ? 0 : 1; k < (pass == 0 ? 1 : n) && taken < threads; k++)
                    if (ids[k] >= 0 && ids[k] < CPU_SETSIZE && !CPU_ISSET(ids[k], bound)) {
                        CPU_SET(ids[k], bound);
                        taken++;
                    }
                free(ids);
            }
        if (taken > 0) return taken;
    }
    for (int c = 0; c < CPU_SETSIZE && taken < threads; c++)
        if (CPU_ISSET(c, mine)) {
            CPU_SET(c, bound);
            taken++;
        }
    return taken;
}

// Asks nOS-V for an ovni trace into PERFSTUDY_OVNI_TRACE's directory, if set:
// through its configuration override (after any the caller gave, which it
// keeps) and ovni's OVNI_TRACEDIR. ovni aborts on a directory it cannot
// create and on a library of another major or minor version: both are
// refused here first, as other bad input is.
static int request_ovni_trace(Executor *ex, char *err, size_t err_len) {
    const char *dir = getenv("PERFSTUDY_OVNI_TRACE");
    if (!dir) return 0;
#ifndef WITH_OVNI
    (void)ex;
    snprintf(err, err_len, "PERFSTUDY_OVNI_TRACE: this gpt2-nosv was built without ovni (make ovni; it needs cmake)");
    return -1;
#else
    const char *version, *commit;
    ovni_version_get(&version, &commit);
    size_t same = strlen(OVNI_LIB_VERSION) - strlen(strrchr(OVNI_LIB_VERSION, '.'));
    if (strncmp(version, OVNI_LIB_VERSION, same) != 0 || version[same] != '.') {
        snprintf(err, err_len, "PERFSTUDY_OVNI_TRACE: libovni %.40s was loaded, built for %s", version, OVNI_LIB_VERSION);
        return -1;
    }
    struct stat st;
    const char *why = NULL;
    if (!*dir) why = "empty name";
    else if (mkdir(dir, 0777) != 0 && errno != EEXIST) why = strerror(errno);
    else if (stat(dir, &st) != 0) why = strerror(errno);
    else if (!S_ISDIR(st.st_mode)) why = "not a directory";
    else if (access(dir, W_OK | X_OK) != 0) why = strerror(errno);
    if (why) {
        snprintf(err, err_len, "PERFSTUDY_OVNI_TRACE: cannot write a trace into '%.200s': %s", dir, why);
        return -1;
    }
    const char *given = getenv("NOSV_CONFIG_OVERRIDE");
    char override[1024];
    if ((size_t)snprintf(override, sizeof(override), "%s%sinstrumentation.version=ovni", given ? given : "",
                         given && *given ? "," : "") >= sizeof(override)) {
        snprintf(err, err_len, "NOSV_CONFIG_OVERRIDE: too long to add the ovni trace to");
        return -1;
    }
    setenv("NOSV_CONFIG_OVERRIDE", override, 1);
    setenv("OVNI_TRACEDIR", dir, 1);
    setenv("NOSV_APPID", "1", 0); // nOS-V warns without one, and takes 1
    ex->ovni = version;
    return 0;
#endif
}

// nOS-V's CPU manager takes the CPUs of the thread that initialises it
// (binding "inherit"): this thread is bound to worker_cpus' for nosv_init,
// then its own mask is restored.
static int start_runtime(Executor *ex, char *err, size_t err_len) {
    // nOS-V aborts (two lines and a core) on a configuration file it cannot
    // open or parse: one it cannot read, or that is not a file (a directory), is
    // refused here instead, as other bad input is
    const char *given = getenv("NOSV_CONFIG");
    struct stat config_st;
    if (given && (access(given, R_OK) != 0 || stat(given, &config_st) != 0)) {
        snprintf(err, err_len, "NOSV_CONFIG: cannot read '%.200s': %s", given, strerror(errno));
        return -1;
    }
    if (given && !S_ISREG(config_st.st_mode)) {
        snprintf(err, err_len, "NOSV_CONFIG: '%.200s' is not a regular file", given);
        return -1;
    }
    // libomp binds this thread on its first call into OpenMP's places, not at start: that call
    // comes first, so that the mask read and restored below is the one OpenMP keeps
    (void)omp_get_num_places();
    cpu_set_t mine, bound;
    if (sched_getaffinity(0, sizeof(mine), &mine) != 0) {
        snprintf(err, err_len, "nosv: cannot read this thread's CPU affinity");
        return -1;
    }
    int taken = worker_cpus(ex->threads, &mine, &bound);
    int rebind = !CPU_EQUAL(&bound, &mine);
    if (rebind && sched_setaffinity(0, sizeof(bound), &bound) != 0) {
        snprintf(err, err_len, "nosv: cannot bind to %d CPUs", taken);
        return -1;
    }
    // nOS-V reads its configuration file from where it was installed, an
    // absolute path in the build tree; the copy beside the library this
    // process loaded still holds where that tree has moved
    Dl_info lib;
    char config[4096];
    if (!getenv("NOSV_CONFIG") && dladdr((void *)nosv_init, &lib) && lib.dli_fname &&
        (size_t)snprintf(config, sizeof(config), "%s", lib.dli_fname) < sizeof(config)) {
        char *slash = strrchr(config, '/');
        if (slash && (size_t)(slash - config) + sizeof("/../share/nosv.toml") <= sizeof(config)) {
            strcpy(slash, "/../share/nosv.toml");
            if (access(config, R_OK) == 0) setenv("NOSV_CONFIG", config, 0);
        }
    }
    if (request_ovni_trace(ex, err, err_len) != 0) return -1;
    int rc = nosv_init();
    if (rebind) sched_setaffinity(0, sizeof(mine), &mine);
    if (rc != 0) {
        snprintf(err, err_len, "nosv: nosv_init failed: %s", nosv_get_error_string(rc));
        return -1;
    }
    ex->initialised = 1;
#ifdef WITH_OVNI
    // nosv_init instruments this thread when its configuration asks for ovni: a file under
    // NOSV_CONFIG cannot undo the override, but a trace that did not begin is said, not missed
    if (ex->ovni && !ovni_thread_isready()) {
        snprintf(err, err_len, "PERFSTUDY_OVNI_TRACE: nOS-V did not start an ovni trace");
        return -1;
    }
#endif
    ex->workers = nosv_get_num_cpus();
    // the system ids of nOS-V's CPUs, in its logical order (a worker's index in the trace)
    int *cpus = nosv_get_available_domains(NOSV_TOPO_LEVEL_CPU);
    size_t used = snprintf(ex->placement, sizeof(ex->placement),
                           "\"name\": \"nosv\", \"version\": \"4.1.0\", \"workers\": %d, \"immediate_successor\": true, "
                           "\"cpus\": [", ex->workers);
    for (int w = 0; cpus && w < ex->workers && used < sizeof(ex->placement) - 16; w++)
        used += snprintf(ex->placement + used, sizeof(ex->placement) - used, "%s%d", w ? ", " : "", cpus[w]);
    snprintf(ex->placement + used, sizeof(ex->placement) - used, "]%s%s%s", ex->ovni ? ", \"ovni\": \"" : "",
             ex->ovni ? ex->ovni : "", ex->ovni ? "\"" : "");
    free(cpus);
    for (int kind = 0; kind < NUM_OP_KINDS && rc == 0; kind++)
        rc = nosv_type_init(&ex->types[kind], run_task, NULL, task_completed, op_kind_name((OpKind)kind), NULL, NULL,
                            NOSV_TYPE_INIT_NONE);
    if (rc != 0) {
        snprintf(err, err_len, "nosv: nosv_type_init failed: %s", nosv_get_error_string(rc));
        return -1;
    }
    return 0;
}

Executor *executor_create(StepDescription *step, const ExecOptions *options, Error *err) {
    Executor *ex = calloc(1, sizeof(*ex));
    if (!ex) {
        snprintf(err->message, sizeof(err->message), "out of memory creating the executor");
        return NULL;
    }
    ex->step = step;
    ex->threads = options->threads > 0 ? options->threads : omp_get_max_threads();
    if (sem_init(&ex->done, 0, 0) != 0) {
        snprintf(err->message, sizeof(err->message), "nosv: cannot create a semaphore");
        free(ex);
        return NULL;
    }
    Chunking requested = options->chunking;
    if (taskgraph_for_executor(&ex->graph, step, &requested, ex->threads, 1, err->message, sizeof(err->message)) != 0 ||
        start_runtime(ex, err->message, sizeof(err->message)) != 0) {
        executor_destroy(ex);
        return NULL;
    }
    int n = ex->graph.n_tasks;
    ex->counters[0] = malloc(n * sizeof(int));
    ex->counters[1] = malloc(n * sizeof(int));
    ex->armed = malloc(n * sizeof(int));
    ex->tasks[0] = calloc(n, sizeof(nosv_task_t));
    ex->tasks[1] = calloc(n, sizeof(nosv_task_t));
    if (!ex->counters[0] || !ex->counters[1] || !ex->armed || !ex->tasks[0] || !ex->tasks[1]) goto oom;
    for (int t = 0; t < n; t++) ex->armed[t] = ex->graph.n_pred[t] + ex->graph.n_next_pred[t];
    for (int slot = 0; slot < 2; slot++)
        for (int t = 0; t < n; t++) {
            nosv_task_type_t type = ex->types[step->ops[ex->graph.tasks[t].op].kind];
            if (nosv_create(&ex->tasks[slot][t], type, sizeof(Instance), NOSV_CREATE_NONE) != 0) goto oom;
            *instance_of(ex->tasks[slot][t]) = (Instance){ex, t, -1};
        }
    return ex;
oom:
    snprintf(err->message, sizeof(err->message), "out of memory creating the nOS-V tasks");
    executor_destroy(ex);
    return NULL;
}

void executor_info(const Executor *ex, ExecutorInfo *info) {
    *info = graph_executor_info(&ex->graph, ex->threads, ex->graph.n_edges + ex->graph.n_next_edges);
    snprintf(info->runtime_json, sizeof(info->runtime_json), "%s", ex->placement);
}

void executor_train(Executor *ex, int first, int n, float *losses, StepReport *reports, Trace *trace) {
    const TaskGraph *g = &ex->graph;
    int n_tasks = g->n_tasks;
    ex->losses = losses;
    ex->trace = trace;
    ex->first = first;
    ex->last = first + n;
    ex->remaining = (long)n * n_tasks;
    // spans are indexed by nOS-V's logical CPU, below its CPU count
    ex->spans = spans_new(ex->workers, n, "gpt2-nosv");
    ex->left = malloc(n * sizeof(long));
    ex->marks = malloc((n + 1) * sizeof(Disturbance));
    if (!ex->left || !ex->marks) {
        fprintf(stderr, "gpt2-nosv: out of memory for per-iteration timings\n");
        exit(2);
    }
    // the first iteration of this run has no predecessors in a previous one
    for (int t = 0; t < n_tasks; t++) {
        ex->counters[first & 1][t] = g->n_pred[t];
        ex->counters[(first + 1) & 1][t] = ex->armed[t];
    }
    for (int i = 0; i < n; i++) ex->left[i] = n_tasks;
    disturbance_now(&ex->marks[0]);
    double start_time = now_seconds();
    for (int t = 0; t < n_tasks; t++)
        if (g->n_pred[t] == 0) {
            ex->counters[first & 1][t] = ex->armed[t];
            nosv_task_t task = ex->tasks[first & 1][t];
            instance_of(task)->iteration = first;
            nosv_submit(task, NOSV_SUBMIT_NONE);
        }
    while (sem_wait(&ex->done) != 0) continue; // EINTR

    spans_report(ex->spans, ex->workers, first, n, start_time, losses, ex->marks, reports);
    free(ex->spans);
    ex->spans = NULL;
    free(ex->left);
    ex->left = NULL;
    free(ex->marks);
    ex->marks = NULL;
}

// The graph the loop replays: no wait between phases or iterations.
int executor_schedule(Executor *ex, Schedule *out, char *err, size_t err_len) {
    (void)err, (void)err_len;
    *out = (Schedule){SCHEDULE_DATAFLOW, ex->threads, 0, 0, 0, NULL, &ex->graph};
    return 0;
}

void executor_destroy(Executor *ex) {
    if (!ex) return;
    for (int slot = 0; slot < 2; slot++) {
        for (int t = 0; ex->tasks[slot] && t < ex->graph.n_tasks && ex->tasks[slot][t]; t++)
            nosv_destroy(ex->tasks[slot][t], NOSV_DESTROY_NONE);
        free(ex->tasks[slot]);
    }
    for (int kind = 0; kind < NUM_OP_KINDS; kind++)
        if (ex->types[kind]) nosv_type_destroy(ex->types[kind], NOSV_TYPE_DESTROY_NONE);
    if (ex->initialised) nosv_shutdown();
    taskgraph_free(&ex->graph);
    free(ex->counters[0]);
    free(ex->counters[1]);
    free(ex->armed);
    sem_destroy(&ex->done);
    free(ex);
}
