// gpt2-mpi --overlap on: the gradients reduced in buckets by a communication
// thread while the backward pass goes on (mpi_overlap.c).
#ifndef MPI_OVERLAP_H
#define MPI_OVERLAP_H

#include "../core/step.h"
#include "../core/trace.h"
#include "mpi_collectives.h"
#include "simulation.h"

// The gradients of one transformer block (or of the embeddings and the final
// LayerNorm), reduced as soon as the backward pass has written them for the
// last time.
typedef struct {
    int layer;                      // -1: wte, wpe, lnfw, lnfb
    int n_spans;
    Span spans[NUM_PARAM_TENSORS];  // its tensors' elements, in memory order
    Partition reduce;               // its R sub-shards in the reduce-scatter's messages
    Partition gather;               // and in the all-gather's: of its gradients (replicated update),
                                    // or of its parameters after this rank's AdamW (sharded)
    int op_start, op_wait, op_comm; // in the whole step: the operations that hand it to the
                                    // communication thread and wait for it, and the thread's record
    int op_gather_start, op_gather_wait, op_gather_comm; // the same for its parameters' all-gather (sharded)
} Bucket;

// What the communication threads are handed: a bucket's reduction, or its parameters' all-gather,
// for one step; each runs its channel of it.
typedef struct {
    int bucket, gather;
    long generation;
    int iteration;
    Trace *trace;
    float *losses;
    int finished;               // channels that have run it
    double start, end;          // the first one's start and the last one's end
} Job;

typedef struct Overlap Overlap;

// A communication thread: the one of channel `channel`.
typedef struct {
    Overlap *ov;
    int channel;
    Thread thread;
    double busy_s;              // this step's time in its collectives
    long next;                  // the jobs handed over that it has taken
} CommThread;

struct Overlap {
    StepDescription *step;      // the whole step, which the buckets' operations are appended to
    const Collective *coll;     // (coll->channels) one per channel
    int sharded;                // each rank updates its sub-shards alone, then the parameters' all-gather
    int n_buckets;
    Bucket *buckets;            // in the order the backward pass finishes them: last layer first
    Span *mine;                 // (n_mine) this rank's sub-shards: the parameters it updates (sharded)
    int n_mine;
    Partition params;           // the parameters' all-gather: shard q is rank q's sub-shards
    // what the node executor runs: the step with the buckets' communication in it
    StepDescription run;
    Op *run_ops;
    int *run_origin, *run_row0; // each run operation's index and first row in the whole step
    // the communication threads and what the comm operations hand them
    CommThread *threads;        // (coll->channels)
    int threads_started, sync_ready;
    Lock lock;
    Condition wake, done_cond;
    Job *queue;                 // (2 n_buckets) handed over, until every channel has run it
    long handed;                // jobs handed over so far: job j in queue[j % (2 n_buckets)]
    long generation;            // steps so far: done[b] == generation once bucket b is reduced in
    long *done;                 // this step, gathered[b] once its parameters of that step are
    long *gathered;             // all-gathered
    long loss_generation;       // the last step whose loss channel 0's thread has summed
    int stop;
    int walking;                // built for SMPI: the step's walk goes on (overlap_run_beside)
    Trace *trace;               // this step's, its iteration and its losses: what the jobs it hands
    int iteration;              // over carry
    float *losses;
};

// The buckets, the step the node executor runs (ov->run) and the thread.
// `first_update`: the step's first AdamW operation. 0, or -1 with `why` set.
int overlap_create(Overlap *ov, StepDescription *step, const Collective *c, int sharded, int first_update,
                   const char **why);
// Before a step's run of ov->run: the thread's records go to `trace` under `iteration`, and the
// ranks' losses[iteration] are summed there.
void overlap_begin_step(Overlap *ov, Trace *trace, int iteration, float *losses);
// Built for SMPI, instead of a run of ov->run by the node executor: `walk(arg)` runs it on another
// actor of the rank's host while this, the rank's own actor, runs the jobs it hands over (the one
// actor of the rank that may exchange messages: simulation.h); no thread is started. Returns once
// the walk has ended, leaving the parameters' all-gathers it handed over for the next step's run
// (beside its forward pass, as the thread runs them) or overlap_settle. 0, or -1 (memory).
int overlap_run_beside(Overlap *ov, void *(*walk)(void *), void *arg);
// Returns once every job handed over has been done: the parameters whole again (sharded).
void overlap_settle(Overlap *ov);
// After it (every wait operation has returned): the seconds the busiest communication thread spent
// in collectives.
double overlap_busy_s(Overlap *ov);
// Floats this rank sends per step, and the most blocks of any of its partitions.
size_t overlap_sent(const Overlap *ov);
int overlap_most_blocks(const Overlap *ov);
void overlap_destroy(Overlap *ov);

// The copy of the step's AdamW operation i cut to its rows in `ranges`
// (sorted, disjoint), one copy per range that holds some of them, into out[],
// origin[] and row0[] (when out is not NULL). Returns how many.
int cut_op(const StepDescription *s, int i, const Span *ranges, int n_ranges, Op *out, int *origin, int *row0);
// A trace record of a communication operation, as run_chunk makes for kernels,
// on `thread` (-1: the communication thread, numbered by dist_gather_trace).
void trace_comm(Trace *trace, int iteration, int op, int thread, double start, double end);

#endif
