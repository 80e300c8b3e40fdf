// tasks: every chunk of every operation is an OpenMP task whose `depend`
// clauses name the blocks of data it reads and writes (core/taskgraph.h), so
// the OpenMP runtime resolves the dependencies each step and chunks of
// different layers overlap. The forward pass, the backward pass and the
// update each run in their own parallel region, whose closing barrier waits
// for all their tasks, so that each phase can be timed, as in the reference
// study. Since those waits order everything across phases, the clauses name
// only the blocks shared within a phase (taskgraph_phase_depends).
//
// Why a barrier and not a taskwait: with one region and a taskwait per
// phase, libgomp's creating thread, waiting in the taskwait, ran one sequence
// up to a layer ahead of the others, and the other thread idled 16.6 ms a
// step before the language-model head, which needs every sequence (traced,
// d12, 2 threads, Zen 3 VM). At a region's barrier every thread takes ready
// tasks from the team's queue: idle time fell from about 50 to 11 thread-ms a
// step.
#include <omp.h>
#include <stdlib.h>
#include "../core/schedule.h"
#include "../core/taskgraph.h"
#include "executor.h"

const char *const EXECUTOR_NAME = "tasks";
const int EXECUTOR_WHOLE_LOOP = 0;
const int EXECUTOR_PACKS_WEIGHTS = 1; // row chunks share one packing of each weight

struct Executor {
    StepDescription *step;
    TaskGraph graph;
    ChunkTask *depends;   // the graph's tasks with the blocks their clauses name
    int *depend_blocks;
    int threads;
    char *sentinels; // one byte per block: the addresses the depend clauses name
};

Executor *executor_create(StepDescription *step, const ExecOptions *options, Error *err) {
    Executor *ex = calloc(1, sizeof(*ex));
    if (!ex) {
        snprintf(err->message, sizeof(err->message), "out of memory creating the executor");
        return NULL;
    }
    ex->step = step;
    ex->threads = options->threads > 0 ? options->threads : omp_get_max_threads();
    Chunking requested = options->chunking;
    if (taskgraph_for_executor(&ex->graph, step, &requested, ex->threads, 0, err->message, sizeof(err->message)) != 0) {
        executor_destroy(ex);
        return NULL;
    }
    if (taskgraph_phase_depends(&ex->graph, step, &ex->depends, &ex->depend_blocks) != 0 ||
        !(ex->sentinels = calloc(ex->graph.n_blocks, 1))) {
        snprintf(err->message, sizeof(err->message), "out of memory for the depend clauses' block lists");
        executor_destroy(ex);
        return NULL;
    }
    return ex;
}

void executor_info(const Executor *ex, ExecutorInfo *info) {
    *info = graph_executor_info(&ex->graph, ex->threads, 0);
}

void executor_train(Executor *ex, int first, int n, float *losses, StepReport *reports, Trace *trace) {
    const StepDescription *s = ex->step;
    const TaskGraph *g = &ex->graph;
    const int *depend_blocks = ex->depend_blocks;
    char *sentinels = ex->sentinels;
    for (int it = first; it < first + n; it++) {
        StepReport *report = &reports[it - first];
        *report = (StepReport){0};
        double step_start = now_seconds(), phase_start = step_start;
        for (int begin = 0, end; begin < g->n_tasks; begin = end) {
            Phase phase = s->ops[g->tasks[begin].op].phase;
            end = taskgraph_phase_end(g, s, begin);
#pragma omp parallel num_threads(ex->threads)
#pragma omp single nowait
            for (int i = begin; i < end; i++) {
                const ChunkTask *t = &ex->depends[i];
                const int *in = depend_blocks + t->in_first, *out = depend_blocks + t->out_first;
                int n_in = t->n_in, n_out = t->n_out;
                // GCC does not count uses inside depend iterators (-Wunused-but-set-variable)
                (void)n_in, (void)n_out, (void)in, (void)out, (void)sentinels;
#pragma omp task firstprivate(t, it) depend(iterator(j = 0 : n_in), in : sentinels[in[j]]) \
    depend(iterator(j = 0 : n_out), inout : sentinels[out[j]])
                run_chunk(s, t->op, t->range, it, losses, trace, omp_get_thread_num());
            }
            double now = now_seconds();
            report->phase_s[phase] += now - phase_start;
            phase_start = now;
        }
        report->step_s = now_seconds() - step_start;
        report->loss = losses[it];
    }
}

// The chunk tasks and the dependencies on blocks (read-after-write,
// write-after-read and write-after-write), with a wait after every phase:
// the depend clauses express the edges within a phase, the waits the rest.
int executor_schedule(Executor *ex, Schedule *out, char *err, size_t err_len) {
    *out = (Schedule){SCHEDULE_DATAFLOW, ex->threads, 1, 0, 0, NULL, &ex->graph};
    if (!ex->graph.succ_first && taskgraph_analyse(&ex->graph) != 0) {
        snprintf(err, err_len, "out of memory analysing the task graph");
        return -1;
    }
    return 0;
}

void executor_destroy(Executor *ex) {
    if (!ex) return;
    taskgraph_free(&ex->graph);
    free(ex->depends);
    free(ex->depend_blocks);
    free(ex->sentinels);
    free(ex);
}
