// starpu: the tasks variant's graph on StarPU, a mainstream task runtime,
// instead of on the compiler's OpenMP runtime. Every chunk of every operation
// is a StarPU task; as in `tasks`, the forward pass, the backward pass and the
// update each end in a wait for all their tasks (each phase is timed, as in
// the reference study), and the dependencies within a phase come from the
// graph (core/taskgraph.c) as explicit task dependencies
// (starpu_task_declare_deps_array), not from data handles: StarPU would
// otherwise register, and may copy, the model's buffers.
//
// The scheduler is StarPU's choice of STARPU_SCHED (eager, lws, dmda, ...),
// which a sweep sets per point; a name StarPU does not know is refused here,
// where StarPU itself would fall back to its default with a warning. The
// library is opened at run time, so that a machine without it gets one line
// and exit status 2 rather than the loader's refusal to start.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <omp.h>
#include <starpu.h>
#include <stdlib.h>
#include <string.h>
#include "../core/schedule.h"
#include "../core/taskgraph.h"
#include "executor.h"

const char *const EXECUTOR_NAME = "starpu";
const int EXECUTOR_WHOLE_LOOP = 0;
const int EXECUTOR_PACKS_WEIGHTS = 1; // row chunks share one packing of each weight

// Debian's libstarpu-1.3 (its soname, then the development link).
static const char *const LIBRARY_NAMES[] = {"libstarpu-1.3.so.9", "libstarpu-1.3.so"};

// The entry points this executor calls, looked up in the library.
typedef struct {
    void *handle;
    int (*conf_init)(struct starpu_conf *);
    int (*init)(struct starpu_conf *);
    void (*shutdown)(void);
    struct starpu_sched_policy **(*predefined_policies)(void);
    void (*task_init)(struct starpu_task *);
    void (*task_clean)(struct starpu_task *);
    void (*declare_deps_array)(struct starpu_task *, unsigned, struct starpu_task *[]);
    int (*task_submit)(struct starpu_task *);
    int (*task_wait_for_all)(void);
    int (*worker_get_id)(void);
    unsigned (*worker_get_count)(void);
    int (*worker_get_bindid)(int);
    struct starpu_sched_policy *(*ctx_policy)(unsigned);
    void (*codelet_init)(struct starpu_codelet *);
} Api;

typedef struct Executor Executor;

// What a StarPU task carries (cl_arg): the chunk task and the step.
typedef struct {
    Executor *ex;
    int task;
} Instance;

struct Executor {
    StepDescription *step;
    TaskGraph graph;
    int threads;
    int workers;                // StarPU's CPU workers
    Api api;
    int initialised;            // starpu_init succeeded: starpu_shutdown is owed
    struct starpu_codelet codelet;
    struct starpu_task *tasks;  // one per chunk task, initialised again each step
    Instance *instances;
    int *pred_first, *pred;     // CSR: the predecessors of each task within its phase
    struct starpu_task **deps;  // scratch: one task's predecessors
    long n_phase_edges;
    // the step in progress
    float *losses;
    Trace *trace;
    int iteration;
    char placement[384];
};

static void run_task(void *buffers[], void *arg) {
    (void)buffers;
    const Instance *in = arg;
    Executor *ex = in->ex;
    const ChunkTask *t = &ex->graph.tasks[in->task];
    run_chunk(ex->step, t->op, t->range, ex->iteration, ex->losses, ex->trace, ex->api.worker_get_id());
}

static int open_library(Api *api, char *err, size_t err_len) {
    for (size_t i = 0; i < sizeof(LIBRARY_NAMES) / sizeof(LIBRARY_NAMES[0]) && !api->handle; i++)
        api->handle = dlopen(LIBRARY_NAMES[i], RTLD_NOW | RTLD_LOCAL);
    if (!api->handle) {
        const char *why = dlerror(); // the loader's reason, one line: not found, not a library, ...
        snprintf(err, err_len, "starpu: cannot load %s (Debian: libstarpu-dev): %.200s", LIBRARY_NAMES[0],
                 why ? why : "not found");
        return -1;
    }
    struct {
        void **slot;
        const char *name;
    } entries[] = {
        {(void **)&api->conf_init, "starpu_conf_init"},
        {(void **)&api->init, "starpu_init"},
        {(void **)&api->shutdown, "starpu_shutdown"},
        {(void **)&api->predefined_policies, "starpu_sched_get_predefined_policies"},
        {(void **)&api->task_init, "starpu_task_init"},
        {(void **)&api->task_clean, "starpu_task_clean"},
        {(void **)&api->declare_deps_array, "starpu_task_declare_deps_array"},
        {(void **)&api->task_submit, "starpu_task_submit"},
        {(void **)&api->task_wait_for_all, "starpu_task_wait_for_all"},
        {(void **)&api->worker_get_id, "starpu_worker_get_id"},
        {(void **)&api->worker_get_count, "starpu_worker_get_count"},
        {(void **)&api->worker_get_bindid, "starpu_worker_get_bindid"},
        {(void **)&api->ctx_policy, "starpu_sched_ctx_get_sched_policy"},
        {(void **)&api->codelet_init, "starpu_codelet_init"},
    };
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
        if (!(*entries[i].slot = dlsym(api->handle, entries[i].name))) {
            snprintf(err, err_len, "starpu: %s has no %s (StarPU 1.3 expected)", LIBRARY_NAMES[0], entries[i].name);
            return -1;
        }
    return 0;
}

// STARPU_SCHED, when set, must name one of StarPU's schedulers. The message
// lists them as StarPU has them (the harness's list, vocabulary.py's
// STARPU_SCHEDULERS, is checked against the library's by the tests), the
// modular ones folded into one entry: all of them would not fit one line.
static int check_scheduler(const Api *api, char *err, size_t err_len) {
    const char *wanted = getenv("STARPU_SCHED");
    if (!wanted) return 0;
    struct starpu_sched_policy **policies = api->predefined_policies();
    char known[400] = "";
    size_t used = 0;
    int modular = 0;
    for (int i = 0; policies && policies[i]; i++) {
        const char *name = policies[i]->policy_name;
        if (strcmp(name, wanted) == 0) return 0;
        if (strncmp(name, "modular-", 8) == 0) {
            modular++;
        } else if (used + strlen(name) + 8 < sizeof(known)) {
            used += snprintf(known + used, sizeof(known) - used, "%s%s", used ? ", " : "", name);
        }
    }
    if (modular && used + 32 < sizeof(known))
        snprintf(known + used, sizeof(known) - used, "%smodular-* (%d of them)", used ? ", " : "", modular);
    snprintf(err, err_len, "STARPU_SCHED: unknown scheduler '%.64s' (known: %s)", wanted, known);
    return -1;
}

extern char **environ;

// StarPU reads its numeric settings from STARPU_* variables (starpu_get_env_number)
// and aborts, with an assertion and a core, on a negative one or, for the counts
// below, one that is not an integer: both are refused here first, as other bad
// input is.
static const char *const STARPU_COUNTS[] = {"STARPU_NCPU", "STARPU_NCPUS", "STARPU_NCUDA", "STARPU_NOPENCL",
                                            "STARPU_NMPI_MS", "STARPU_CALIBRATE", "STARPU_BUS_CALIBRATE",
                                            "STARPU_PREFETCH", "STARPU_WORKERS_NOBIND", "STARPU_SILENT"};

static int check_environment(char *err, size_t err_len) {
    for (char **entry = environ; entry && *entry; entry++) {
        const char *eq = strchr(*entry, '=');
        if (strncmp(*entry, "STARPU_", 7) != 0 || !eq || !eq[1]) continue; // empty: StarPU reads 0
        int name_len = (int)(eq - *entry);
        const char *value = eq + 1;
        char *end;
        errno = 0;
        long number = strtol(value, &end, 10);
        int integer = !*end && !errno;
        if (integer && number < 0) {
            snprintf(err, err_len, "%.*s: %.40s: StarPU takes no negative value", name_len, *entry, value);
            return -1;
        }
        for (size_t i = 0; !integer && i < sizeof(STARPU_COUNTS) / sizeof(STARPU_COUNTS[0]); i++)
            if ((int)strlen(STARPU_COUNTS[i]) == name_len && strncmp(*entry, STARPU_COUNTS[i], name_len) == 0) {
                snprintf(err, err_len, "%.*s: '%.40s' is not a count (a non-negative integer)", name_len, *entry,
                         value);
                return -1;
            }
    }
    return 0;
}

static int start_runtime(Executor *ex, char *err, size_t err_len) {
    Api *api = &ex->api;
    if (check_environment(err, err_len) != 0) return -1;
    if (open_library(api, err, err_len) != 0 || check_scheduler(api, err, err_len) != 0) return -1;
    // StarPU prints a banner and statistics unless told otherwise
    setenv("STARPU_SILENT", "1", 0);
    struct starpu_conf conf;
    api->conf_init(&conf);
    conf.ncpus = ex->threads;
    conf.ncuda = 0;
    conf.nopencl = 0;
    int rc = api->init(&conf);
    if (rc != 0) {
        snprintf(err, err_len, "starpu: starpu_init failed (%d) with %d CPU workers", rc, ex->threads);
        return -1;
    }
    ex->initialised = 1;
    ex->workers = (int)api->worker_get_count();
    const struct starpu_sched_policy *policy = api->ctx_policy(0);
    size_t used = snprintf(ex->placement, sizeof(ex->placement),
                           "\"name\": \"starpu\", \"version\": \"%d.%d.%d\", \"scheduler\": \"%s\", \"workers\": %d, "
                           "\"cpus\": [", STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION, STARPU_RELEASE_VERSION,
                           policy && policy->policy_name ? policy->policy_name : "?", ex->workers);
    for (int w = 0; w < ex->workers && used < sizeof(ex->placement) - 16; w++)
        used += snprintf(ex->placement + used, sizeof(ex->placement) - used, "%s%d", w ? ", " : "",
                         api->worker_get_bindid(w));
    snprintf(ex->placement + used, sizeof(ex->placement) - used, "]");
    api->codelet_init(&ex->codelet);
    ex->codelet.where = STARPU_CPU;
    ex->codelet.cpu_funcs[0] = run_task;
    ex->codelet.nbuffers = 0;
    ex->codelet.name = "chunk";
    return 0;
}

// The predecessors each task has within its phase (the wait at a phase's end
// orders everything else).
static int phase_predecessors(Executor *ex) {
    const TaskGraph *g = &ex->graph;
    const StepDescription *s = ex->step;
    int n = g->n_tasks;
    int *phase_end = malloc(n * sizeof(int));
    ex->pred_first = calloc(n + 1, sizeof(int));
    if (!phase_end || !ex->pred_first) {
        free(phase_end);
        return -1;
    }
    for (int begin = 0, end; begin < n; begin = end) {
        end = taskgraph_phase_end(g, s, begin);
        for (int t = begin; t < end; t++) phase_end[t] = end;
    }
    for (int t = 0; t < n; t++)
        for (int k = g->succ_first[t]; k < g->succ_first[t + 1]; k++)
            if (g->succ[k] < phase_end[t]) ex->pred_first[g->succ[k] + 1]++;
    int widest = 0;
    for (int t = 0; t < n; t++) {
        if (ex->pred_first[t + 1] > widest) widest = ex->pred_first[t + 1];
        ex->pred_first[t + 1] += ex->pred_first[t];
    }
    ex->n_phase_edges = ex->pred_first[n];
    ex->pred = malloc((ex->n_phase_edges + 1) * sizeof(int));
    ex->deps = malloc((widest + 1) * sizeof(*ex->deps));
    int *fill = calloc(n, sizeof(int));
    if (!ex->pred || !ex->deps || !fill) {
        free(phase_end);
        free(fill);
        return -1;
    }
    for (int t = 0; t < n; t++)
        for (int k = g->succ_first[t]; k < g->succ_first[t + 1]; k++) {
            int v = g->succ[k];
            if (v < phase_end[t]) ex->pred[ex->pred_first[v] + fill[v]++] = t;
        }
    free(phase_end);
    free(fill);
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
    Chunking requested = options->chunking;
    if (taskgraph_for_executor(&ex->graph, step, &requested, ex->threads, 1, err->message, sizeof(err->message)) != 0 ||
        start_runtime(ex, err->message, sizeof(err->message)) != 0) {
        executor_destroy(ex);
        return NULL;
    }
    int n = ex->graph.n_tasks;
    ex->tasks = calloc(n, sizeof(*ex->tasks));
    ex->instances = calloc(n, sizeof(*ex->instances));
    if (!ex->tasks || !ex->instances || phase_predecessors(ex) != 0) {
        snprintf(err->message, sizeof(err->message), "out of memory for the StarPU tasks");
        executor_destroy(ex);
        return NULL;
    }
    for (int t = 0; t < n; t++) ex->instances[t] = (Instance){ex, t};
    return ex;
}

void executor_info(const Executor *ex, ExecutorInfo *info) {
    *info = graph_executor_info(&ex->graph, ex->threads, ex->n_phase_edges);
    snprintf(info->runtime_json, sizeof(info->runtime_json), "%s", ex->placement);
}

void executor_train(Executor *ex, int first, int n, float *losses, StepReport *reports, Trace *trace) {
    const StepDescription *s = ex->step;
    const TaskGraph *g = &ex->graph;
    const Api *api = &ex->api;
    ex->losses = losses;
    ex->trace = trace;
    for (int it = first; it < first + n; it++) {
        StepReport *report = &reports[it - first];
        *report = (StepReport){0};
        ex->iteration = it;
        double step_start = now_seconds(), phase_start = step_start;
        for (int begin = 0, end; begin < g->n_tasks; begin = end) {
            Phase phase = s->ops[g->tasks[begin].op].phase;
            end = taskgraph_phase_end(g, s, begin);
            // every task of the phase, with its dependencies, before any is
            // submitted: a task declared as a dependency must still exist
            for (int t = begin; t < end; t++) {
                struct starpu_task *task = &ex->tasks[t];
                api->task_init(task);
                task->cl = &ex->codelet;
                task->cl_arg = &ex->instances[t];
                task->destroy = 0;
                int n_deps = ex->pred_first[t + 1] - ex->pred_first[t];
                for (int k = 0; k < n_deps; k++) ex->deps[k] = &ex->tasks[ex->pred[ex->pred_first[t] + k]];
                if (n_deps) api->declare_deps_array(task, n_deps, ex->deps);
            }
            for (int t = begin; t < end; t++)
                if (api->task_submit(&ex->tasks[t]) != 0) {
                    fprintf(stderr, "gpt2-starpu: StarPU refused a task\n");
                    exit(2);
                }
            api->task_wait_for_all();
            for (int t = begin; t < end; t++) api->task_clean(&ex->tasks[t]);
            double now = now_seconds();
            report->phase_s[phase] += now - phase_start;
            phase_start = now;
        }
        report->step_s = now_seconds() - step_start;
        report->loss = losses[it];
    }
}

// The chunk tasks and their dependencies within each phase, with a wait after
// every phase, as for `tasks`.
int executor_schedule(Executor *ex, Schedule *out, char *err, size_t err_len) {
    (void)err, (void)err_len;
    *out = (Schedule){SCHEDULE_DATAFLOW, ex->threads, 1, 0, 0, NULL, &ex->graph};
    return 0;
}

void executor_destroy(Executor *ex) {
    if (!ex) return;
    if (ex->initialised) ex->api.shutdown();
    if (ex->api.handle) dlclose(ex->api.handle);
    taskgraph_free(&ex->graph);
    free(ex->tasks);
    free(ex->instances);
    free(ex->pred_first);
    free(ex->pred);
    free(ex->deps);
    free(ex);
}
