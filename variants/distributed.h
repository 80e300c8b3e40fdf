// What the shared command-line front (main.c) asks of the processes it runs
// in: the ranks of the run, each rank's share of the global batch, the
// stream it prints on, and the collective steps the front needs besides
// training. One program, one process: variants/single.c, whose weak
// definitions every binary links. gpt2-mpi (variants/mpi.c, mpi_ranks.c)
// defines them all again for MPI processes (ranks), each running the whole
// front on its share of each batch, only rank 0 speaking.
#ifndef DISTRIBUTED_H
#define DISTRIBUTED_H

#include <stdio.h>
#include "executor.h"

// In one process every function below has the obvious meaning: rank 0 of 1, its share the whole
// batch, every collective step nothing or a copy.

// Starts the process layer (MPI_Init_thread); every rank runs the whole front.
void dist_init(int *argc, char ***argv);
// 1 in a distributed variant: its options (options_parse's `distributed`), its lines' fields.
int dist_front(void);
// Where this rank writes what a run prints on its standard output: stdout on rank 0, a stream
// to nowhere on the others (NULL when it cannot be opened). Called once.
FILE *dist_output(void);
// 1 where the ranks' node compute is simulated (simulation.h): the parameters' values are never read.
int dist_simulated(void);
// Ends it (MPI_Finalize); every rank calls it once before exiting.
void dist_finalize(void);
int dist_rank(void);
// Ends every rank of the job at once with `status` (MPI_Abort): for a failure
// on one rank after the ranks agreed, which the others cannot learn of.
void dist_abort(int status) __attribute__((noreturn));

// The agreement before any collective work. Every rank calls dist_agree once,
// after checking its own options and inputs: DIST_READY with the settings
// that must match across ranks (each a name and its value as text), or
// DIST_FAILED with its one-line error, or DIST_LEAVING when it stops early
// with status 0 (--help, --list-configs). Every rank gets the same verdict:
// DIST_AGREED when all are ready and every setting equals rank 0's; else the
// status every rank exits with (0 when all are leaving, 2 otherwise), with the
// line naming the rank and the problem in `line` (empty for 0).
enum { DIST_READY, DIST_FAILED, DIST_LEAVING };
#define DIST_AGREED (-1)
#define DIST_LINE 768
#define DIST_MAX_SETTINGS 24
typedef struct {
    char name[40];
    char value[120];
} DistSetting;
int dist_agree(int state, const char *failure, const DistSetting *settings, int n, char *line, size_t line_len);

int dist_ranks(void);

// Rank `rank`'s share of a batch of B sequences: [*b0, *b1), contiguous and as
// even as it goes (B = 3 over 2 ranks: 1 and 2); empty when ranks > B.
void dist_share(int B, int rank, int ranks, int *b0, int *b1);
// Declares the global batch size before executor_create: the executor weighs
// each rank's gradients by its share of it.
void dist_set_global_batch(int B);
int dist_global_batch(void);
// The EXECUTOR_PACKS_WEIGHTS of the node-level executor that options->executor
// names (0 for an unknown name, which executor_create then reports): the step
// is described for the executor that runs it.
int dist_packs_weights(const ExecOptions *options);

// 0 when options->executor names a node-level executor, else -1 with err set:
// checked before the ranks agree, as every option is.
int dist_check_executor(const ExecOptions *options, Error *err);

// The info line's members of a distributed run, each followed by ", " (ranks, executor, update,
// collective, overlap, comm_threads, bytes sent, "rank_placement": where each rank ran: its host, its sequences
// [b0, b1) of the batch and what `placement` writes of its `threads` threads); rank 0 writes them,
// every rank calls it. Nothing in one process.
void dist_info_json(FILE *out, const ExecOptions *options, const Executor *ex, int b0, int b1,
                    void (*placement)(FILE *out, int threads), int threads);
// A step line's members of a distributed run, each followed by ", " ("comm_s").
void dist_step_json(FILE *out, const StepReport *report);
// Bytes this rank sends per step (rank 0's figure on rank 0).
long long dist_comm_bytes_per_step(const Executor *ex);
// The largest message the reduce-scatter and the all-gathers send: a shard goes in blocks of it.
long long dist_comm_message_bytes(void);
// Returns once the communication the last step left under way (--overlap on: the parameters'
// all-gathers beside the next step) is done: before the front reads the parameters or calls on the
// ranks itself.
void dist_settle(Executor *ex);
// The whole averaged gradient on every rank (after a step of the sharded
// update each rank holds only its shard's): for --verify.
void dist_gather_gradients(Executor *ex);
// Every rank's sequences of a per-sequence tensor (seq_floats floats per
// sequence; this rank's first) in one malloc'd array of the global batch's B
// sequences, on every rank: the whole batch's logits for --verify. NULL when
// memory is short.
float *dist_gather_sequences(const float *mine, size_t seq_floats, int B);
// Zeroes the AdamW moments this rank keeps of the model's (after --verify's probe step).
void dist_reset_moments(Executor *ex, GPT2 *model);
// Sets every rank's trace origin to the same instant; every rank calls it
// before training.
void dist_sync_trace_origin(Trace *trace);
// Moves every rank's trace records to rank 0, their thread renumbered
// rank * threads_per_rank + thread; every rank calls it.
void dist_gather_trace(Trace *trace, int threads_per_rank);

#endif
