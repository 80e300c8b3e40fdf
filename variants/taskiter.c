// taskiter: the whole training loop as one task graph, recorded once and
// replayed every iteration with no barrier between phases or iterations, as
// OmpSs-2's taskiter does. GCC and clang have no taskiter, so this executor
// replays the graph itself on OpenMP threads: the chunk tasks and their
// dependencies (within an iteration and into the next) come from
// core/taskgraph.c once; each iteration only counts predecessors down.
//
// Per-iteration dependency counters live in two slots, used by even and odd
// iterations. A task of iteration i+2 can only be decremented after the same
// task of iteration i ran (every task writes something, so the graph orders
// its instances through the iteration in between), and a slot is re-armed
// when its task is dispatched, so two slots suffice and nothing is allocated
// per iteration.
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "../core/schedule.h"
#include "../core/taskgraph.h"
#include "executor.h"
#include "iteration_spans.h"

const char *const EXECUTOR_NAME = "taskiter";
const int EXECUTOR_WHOLE_LOOP = 1;
const int EXECUTOR_PACKS_WEIGHTS = 1; // row chunks share one packing of each weight

typedef struct {
    int iteration, task;
} Ready;

struct Executor {
    StepDescription *step;
    TaskGraph graph;
    int threads;
    int *counters[2];   // predecessors still to finish, per task, per slot
    int *armed;         // counter value a task starts an iteration with (beyond the first)
    Ready *queue;       // ready tasks, a binary min-heap in ready_before order
    long queue_cap, queue_size; // written under queue_lock; idle threads peek at queue_size
    // An adaptive mutex (spins briefly, then sleeps in the kernel) rather than
    // an OpenMP lock: libomp's default lock hands itself over in FIFO order,
    // and when threads outnumber cores the next owner is often descheduled,
    // so every hand-over waits for a time slice. At 4 threads on 2 busy cores
    // that convoy ran a fine-grained graph 100 times slower than usual.
    pthread_mutex_t queue_lock;
};

Executor *executor_create(StepDescription *step, const ExecOptions *options, Error *err) {
    Executor *ex = calloc(1, sizeof(*ex));
    if (!ex) {
        snprintf(err->message, sizeof(err->message), "out of memory creating the executor");
        return NULL;
    }
    ex->step = step;
    ex->threads = options->threads > 0 ? options->threads : omp_get_max_threads();
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&ex->queue_lock, &attr);
    pthread_mutexattr_destroy(&attr);
    Chunking requested = options->chunking;
    if (taskgraph_for_executor(&ex->graph, step, &requested, ex->threads, 1, err->message, sizeof(err->message)) != 0) {
        executor_destroy(ex);
        return NULL;
    }
    int n = ex->graph.n_tasks;
    ex->counters[0] = malloc(n * sizeof(int));
    ex->counters[1] = malloc(n * sizeof(int));
    ex->armed = malloc(n * sizeof(int));
    // at most two iterations are in flight, each task at most once in the queue per iteration
    ex->queue_cap = 2L * n + 1;
    ex->queue = malloc(ex->queue_cap * sizeof(Ready));
    if (!ex->counters[0] || !ex->counters[1] || !ex->armed || !ex->queue) goto oom;
    for (int t = 0; t < n; t++) ex->armed[t] = ex->graph.n_pred[t] + ex->graph.n_next_pred[t];
    return ex;
oom:
    snprintf(err->message, sizeof(err->message), "out of memory building the task graph");
    executor_destroy(ex);
    return NULL;
}

void executor_info(const Executor *ex, ExecutorInfo *info) {
    *info = graph_executor_info(&ex->graph, ex->threads, ex->graph.n_edges + ex->graph.n_next_edges);
}

// Counts one predecessor of (iteration, task) down; returns 1 when it became
// ready, re-arming its slot for iteration + 2.
static int release(Executor *ex, int iteration, int task) {
    int *counter = &ex->counters[iteration & 1][task];
    if (__atomic_sub_fetch(counter, 1, __ATOMIC_ACQ_REL) != 0) return 0;
    __atomic_store_n(counter, ex->armed[task], __ATOMIC_RELAXED);
    return 1;
}

// The order ready tasks are taken in: earlier iteration first, then the
// order the step lists them in (operation by operation, chunk by chunk). A
// thread that finishes a task so takes the oldest ready work, which keeps the
// chunks of one product together in time (they share its weight, which is
// read from memory once for all of them instead of once per chunk) and lets
// the next iteration's tasks fill only the gaps the current one leaves.
static int ready_before(Ready a, Ready b) {
    return a.iteration != b.iteration ? a.iteration < b.iteration : a.task < b.task;
}

static void queue_push(Executor *ex, Ready r) {
    long i = ex->queue_size;
    __atomic_store_n(&ex->queue_size, i + 1, __ATOMIC_RELAXED);
    while (i > 0 && ready_before(r, ex->queue[(i - 1) / 2])) {
        ex->queue[i] = ex->queue[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    ex->queue[i] = r;
}

static Ready queue_pop(Executor *ex) {
    long n = ex->queue_size - 1;
    __atomic_store_n(&ex->queue_size, n, __ATOMIC_RELAXED);
    Ready top = ex->queue[0], last = ex->queue[n];
    long i = 0;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ready_before(ex->queue[c + 1], ex->queue[c])) c++;
        if (!ready_before(ex->queue[c], last)) break;
        ex->queue[i] = ex->queue[c];
        i = c;
    }
    ex->queue[i] = last;
    return top;
}

// Releases the successors of `task` (CSR lists first/succ) in `iteration`
// into the ready queue. The lock is taken at the first successor that became
// ready and kept (*locked) so that one acquisition covers every push of a
// finished task and the pop of the thread's next one.
static void release_all(Executor *ex, const int *first, const int *succ, int task, int iteration, int *locked) {
    for (int k = first[task]; k < first[task + 1]; k++) {
        Ready r = {iteration, succ[k]};
        if (!release(ex, r.iteration, r.task)) continue;
        if (!*locked) {
            pthread_mutex_lock(&ex->queue_lock);
            *locked = 1;
        }
        queue_push(ex, r);
    }
}

void executor_train(Executor *ex, int first, int n, float *losses, StepReport *reports, Trace *trace) {
    const StepDescription *s = ex->step;
    const TaskGraph *g = &ex->graph;
    int n_tasks = g->n_tasks, last = first + n;
    // the first iteration of this run has no predecessors in a previous one
    for (int t = 0; t < n_tasks; t++) {
        ex->counters[first & 1][t] = g->n_pred[t];
        ex->counters[(first + 1) & 1][t] = ex->armed[t];
    }
    ex->queue_size = 0;
    for (int t = 0; t < n_tasks; t++)
        if (g->n_pred[t] == 0) {
            queue_push(ex, (Ready){first, t});
            ex->counters[first & 1][t] = ex->armed[t];
        }
    long remaining = (long)n * n_tasks;
    PhaseSpan *spans = spans_new(ex->threads, n, "gpt2-taskiter");
    // the thread that runs an iteration's last task reads the disturbance
    // counters: marks[i + 1] at iteration i's end, marks[0] at the start
    long *left = malloc(n * sizeof(long));
    Disturbance *marks = malloc((n + 1) * sizeof(Disturbance));
    if (!left || !marks) {
        fprintf(stderr, "gpt2-taskiter: out of memory for per-iteration timings\n");
        exit(2);
    }
    for (int i = 0; i < n; i++) left[i] = n_tasks;
    disturbance_now(&marks[0]);
    double start_time = now_seconds();

#pragma omp parallel num_threads(ex->threads)
    {
        int me = omp_get_thread_num();
        Ready job = {-1, -1};
        for (;;) {
            if (job.task < 0) {
                // Nothing in hand: wait without the lock, so that idle threads
                // do not stand in the way of those releasing work, and let a
                // thread that has work run (threads may outnumber cores).
                if (__atomic_load_n(&remaining, __ATOMIC_ACQUIRE) == 0) break;
                if (__atomic_load_n(&ex->queue_size, __ATOMIC_RELAXED) == 0) {
                    sched_yield();
                    continue;
                }
                pthread_mutex_lock(&ex->queue_lock);
                if (ex->queue_size > 0) job = queue_pop(ex);
                pthread_mutex_unlock(&ex->queue_lock);
                continue;
            }
            const ChunkTask *t = &g->tasks[job.task];
            Phase phase = s->ops[t->op].phase;
            double t0 = now_seconds();
            run_chunk(s, t->op, t->range, job.iteration, losses, trace, me);
            double t1 = now_seconds();
            span_add(&spans[(size_t)me * n + (job.iteration - first)], phase, t0, t1);
            if (__atomic_sub_fetch(&left[job.iteration - first], 1, __ATOMIC_ACQ_REL) == 0)
                disturbance_now(&marks[job.iteration - first + 1]);
            // release successors in this iteration, then in the next one, and
            // take the next job in the same hold of the lock
            int locked = 0;
            release_all(ex, g->succ_first, g->succ, job.task, job.iteration, &locked);
            if (job.iteration + 1 < last)
                release_all(ex, g->next_succ_first, g->next_succ, job.task, job.iteration + 1, &locked);
            __atomic_sub_fetch(&remaining, 1, __ATOMIC_ACQ_REL);
            job = (Ready){-1, -1};
            if (locked) {
                if (ex->queue_size > 0) job = queue_pop(ex);
                pthread_mutex_unlock(&ex->queue_lock);
            }
        }
    }

    spans_report(spans, ex->threads, first, n, start_time, losses, marks, reports);
    free(spans);
    free(left);
    free(marks);
}

// The graph the loop replays: no wait between phases or iterations.
int executor_schedule(Executor *ex, Schedule *out, char *err, size_t err_len) {
    (void)err, (void)err_len;
    *out = (Schedule){SCHEDULE_DATAFLOW, ex->threads, 0, 0, 0, NULL, &ex->graph};
    return 0;
}

void executor_destroy(Executor *ex) {
    if (!ex) return;
    taskgraph_free(&ex->graph);
    free(ex->counters[0]);
    free(ex->counters[1]);
    free(ex->armed);
    free(ex->queue);
    pthread_mutex_destroy(&ex->queue_lock);
    free(ex);
}
