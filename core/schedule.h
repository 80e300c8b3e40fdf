// The schedule of one training step as a variant runs it, written out for a
// simulator (`--describe-graph FILE`): the chunk tasks, the rule that orders
// them, and their FLOPs and compulsory bytes (traffic.h). The format is
// documented in docs/variants.md ("Task graph export") and read by
// harness/pstudy/taskgraph.py.
//
// Two kinds of schedule cover every variant:
//   SCHEDULE_STATIC    each operation's chunks are dealt to the threads
//                      before the step runs (chunk.thread), and a barrier
//                      follows every operation (seq: one thread, one chunk
//                      per operation; forkjoin: its worksharing loops)
//   SCHEDULE_DATAFLOW  the chunk tasks of taskgraph.h with their
//                      dependencies within an iteration and into the next;
//                      any thread runs any ready task. `barrier_per_phase`:
//                      a wait closes every phase and every step (tasks), or
//                      none does and iterations overlap (taskiter)
#ifndef SCHEDULE_H
#define SCHEDULE_H

#include <stdio.h>
#include "step.h"
#include "taskgraph.h"

typedef enum { SCHEDULE_STATIC, SCHEDULE_DATAFLOW } ScheduleKind;

typedef struct {
    int op;
    Range range;
    int thread; // SCHEDULE_STATIC: the thread that runs it; -1 otherwise
} ScheduledChunk;

typedef struct {
    ScheduleKind kind;
    int threads;           // the thread count the schedule was made for
    int barrier_per_phase; // SCHEDULE_DATAFLOW: 1 for a wait after each phase
    // SCHEDULE_STATIC: the chunks, operation by operation (owned, freed by schedule_free)
    int n_chunks, cap_chunks;
    ScheduledChunk *chunks;
    // SCHEDULE_DATAFLOW: an analysed task graph (taskgraph_analyse), owned by the executor
    const TaskGraph *graph;
} Schedule;

// Appends a chunk to a static schedule. Returns 0, or -1 when memory is short.
int schedule_add(Schedule *s, int op, Range range, int thread);
void schedule_free(Schedule *s);

// Writes the schedule as one JSON document. Returns 0, or -1 when writing failed.
int schedule_write_json(const Schedule *sched, const StepDescription *step, const char *variant, FILE *out);

// Implemented by every executor that can describe its schedule (variants/);
// a variant that does not gets a default that fails with a message.
struct Executor;
int executor_schedule(struct Executor *ex, Schedule *out, char *err, size_t err_len);

#endif
