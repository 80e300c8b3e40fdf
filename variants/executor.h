// What every variant provides to the shared command-line front (main.c):
// an executor that runs the step description for a number of iterations.
#ifndef EXECUTOR_H
#define EXECUTOR_H

#include "../core/fileio.h"
#include "../core/step.h"
#include "../core/taskgraph.h"
#include "../core/trace.h"

typedef struct {
    int threads;        // 0: the OpenMP default (OMP_NUM_THREADS)
    Chunking chunking;  // the knobs given (chunked variants; 0: chosen by the executor for its thread
                        // count), the rest 0; tasks, taskiter and the front (whether the step packs
                        // weights) read it the same way
    // distributed variants (gpt2-mpi) only
    const char *executor; // the node-level executor inside each process; NULL: forkjoin
    int sharded_update;   // 1: ZeRO-1 (each process updates its shard), 0: replicated update
    int direct_collective; // 1: every rank sends each shard straight to its owner (--collective direct); 0: ring
    int overlap;          // 1: gradients reduced in buckets during the backward pass (--overlap on)
    int comm_threads;     // the collectives' channels, each on a thread of its own (--comm-threads; 0: 1)
} ExecOptions;

typedef struct {
    float loss;
    double phase_s[NUM_PHASES];
    double step_s;
    double comm_s;      // time in communication between processes (distributed variants; else 0)
    // what disturbed the step from outside (the difference of two Disturbance
    // readings around it; negative: not known)
    double steal_s;
    long involuntary_switches;
} StepReport;

// Fills a report's disturbance from readings before and after its step.
static inline void report_disturbance(StepReport *r, const Disturbance *before, const Disturbance *after) {
    int steal = before->steal_s >= 0 && after->steal_s >= 0;
    int switches = before->involuntary_switches >= 0 && after->involuntary_switches >= 0;
    r->steal_s = steal ? (after->steal_s > before->steal_s ? after->steal_s - before->steal_s : 0.0) : -1.0;
    r->involuntary_switches = !switches ? -1
        : after->involuntary_switches > before->involuntary_switches
        ? after->involuntary_switches - before->involuntary_switches : 0;
}

typedef struct {
    int threads;
    Chunking chunking;    // the graph's, resolved (Chunking.chosen: the knobs the executor chose); all 0
                          // when the executor does not chunk
    long chunks_per_step; // kernel calls (tasks) in one step
    long edges_per_step;  // dependency edges (taskiter; else 0)
    // An executor on a task runtime of its own (nosv, starpu): members of a JSON object saying
    // which runtime and how it placed its workers ("\"name\": \"nosv\", \"cpus\": [0, 1]"), for
    // the info line; empty for the OpenMP executors, whose placement the front reads itself.
    char runtime_json[512];
} ExecutorInfo;

// What an executor of a chunk graph (tasks, taskiter, nosv, starpu) reports:
// the graph's chunking, its chunks and the edges it waits on per step.
static inline ExecutorInfo graph_executor_info(const TaskGraph *g, int threads, long edges_per_step) {
    return (ExecutorInfo){.threads = threads, .chunking = g->chunking, .chunks_per_step = g->n_tasks,
                          .edges_per_step = edges_per_step};
}

typedef struct Executor Executor;

extern const char *const EXECUTOR_NAME;
// Whether executor_train must be given every step at once (taskiter runs the
// loop as one graph); otherwise the front calls it one step at a time.
extern const int EXECUTOR_WHOLE_LOOP;
// Whether the step this executor runs is described with pack operations
// (step_describe's pack_weights; core/step.h, "Packed weights"): 1 for an
// executor that cuts the transformer blocks' products into row chunks, each of
// which would otherwise pack all of the weight again; 0 for one that runs a
// product whole or cut along its output columns, whose calls each pack their
// own part of the weight, in cache, fused with the product (a separate pack
// pass would add a write and a read of every weight).
extern const int EXECUTOR_PACKS_WEIGHTS;

Executor *executor_create(StepDescription *step, const ExecOptions *options, Error *err);
void executor_info(const Executor *ex, ExecutorInfo *info);
// Runs iterations [first, first + n); losses[i] and reports[i - first] are filled.
void executor_train(Executor *ex, int first, int n, float *losses, StepReport *reports, Trace *trace);
void executor_destroy(Executor *ex);

#endif
