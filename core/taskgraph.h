// The step description cut into chunk tasks, and the dependencies between
// them, computed once.
//
// Each operation is cut along its split dimension: rows into chunks of
// BATCH_SUBSIZE sequences x k tokens, attention's backward pass into
// BATCH_SUBSIZE sequences x one head, channel-split operations into chunks of
// channels. The transformer blocks' matrix products are cut further into
// tiles: a row chunk of the forward product or the input gradient into
// tiles of its output columns, a chunk of output channels of the weight
// gradient into tiles of its input channels (Range.col0, col1). Every buffer
// is divided into a grid of blocks that matches that chunking (the products'
// outputs also by tile columns, so that the next operation's row chunk waits
// for the tiles of its own rows only); a task's accesses become lists of the
// blocks it reads and writes.
// The `tasks` variant hands those lists to OpenMP `depend` clauses; the
// `taskiter` variant derives the dependency graph from them once, inside an
// iteration and from one iteration to the next.
#ifndef TASKGRAPH_H
#define TASKGRAPH_H

#include <stddef.h>
#include <stdio.h>
#include "step.h"

// The most chunk tasks per step a graph may hold (ids are int, and taskiter
// tracks two iterations' worth).
#define TASKGRAPH_MAX_TASKS (1 << 22)

typedef struct {
    int batch_subsize;  // sequences per row chunk
    int token_chunk;    // tokens per row chunk
    int channel_chunk;  // channels per chunk of channel-split operations (at least)
    int max_channel_chunks; // a channel-split operation is cut into at most this many chunks
    int max_product_chunks; // and a product split along its output columns into at most this many
    int product_chunk_multiple; // and, where it has fewer, into a multiple of this many (the threads;
                                // 0 or 1: any count)
    int tile_columns;   // output columns per tile of a row-split product (Op.cut_columns); at
                        // least the product's width: one tile, its whole rows
    int tiles_per_product; // > 0: instead, each row-split product's columns in this many equal tiles
                           // of whole panels (the automatic rule's choice where the products' rows
                           // are whole: one tile per thread, fork-join's cut); tile_columns is then
                           // the narrowest product's tile
    int tile_in_channels; // input channels per tile of a weight gradient (Op.cut_input_channels)
    int tile_sequences; // > 0: a row-split product's row chunks are this many sequences and every token,
                        // however the other row operations are chunked (their chunks, BATCH_SUBSIZE
                        // sequences x k tokens, stay as given); 0: its row chunks are theirs
    int chosen;         // CHOSEN_* bits: the knobs the automatic rule picked (they were 0)
} Chunking;

enum { CHOSEN_BATCH_SUBSIZE = 1, CHOSEN_TOKEN_CHUNK = 2, CHOSEN_TILE_COLUMNS = 4, CHOSEN_TILE_IN_CHANNELS = 8,
       CHOSEN_TILE_SEQUENCES = 16 };

// The largest sequences, tokens and channels the command line takes (docs/variants.md, "Options").
#define CHUNK_MAX_SEQUENCES (1 << 20)
#define CHUNK_MAX_TOKENS (1 << 20)
#define CHUNK_MAX_CHANNELS (1 << 24)

// What a knob may not exceed once the model's shapes and the batch are known
// (variants/options.c, options_check_model): one chunk of that size is already
// the whole extent, and a larger one would be reported as given but not used.
typedef enum {
    KNOB_UNBOUNDED,       // larger values mean one chunk
    KNOB_AT_MOST_B,       // the batch's sequences
    KNOB_AT_MOST_T,       // the sequence's tokens
    KNOB_AT_MOST_COLUMNS, // the widest product's output columns (4C)
    KNOB_AT_MOST_INPUTS,  // the widest weight gradient's input channels (4C)
    KNOB_AT_MOST_TILES,   // the tiles of whole vectors the widest product holds (4C/16)
} KnobBound;

// The knobs of the chunking a user may give: every one is a Chunking field, a
// command-line option (the name with '-' for '_': --batch-subsize) taking
// [1, max], a key of the info line, and 0 when left to the executor.
typedef struct {
    const char *name;
    const char *value_name; // what --help calls the value
    int max;
    size_t offset;          // offsetof(Chunking, the field)
    KnobBound bound;
    int chosen;             // its CHOSEN_* bit; 0: the automatic rule never reports it
    const char *help;       // --help's text; a newline starts an indented line
} ChunkKnob;

#define N_CHUNK_KNOBS 7
// The table the binaries' options, validation, info line and --list-knobs
// are made from, in the info line's order. A function so that the table is
// written once, in the header that defines the fields it names.
static inline const ChunkKnob *chunk_knobs(void) {
    static const ChunkKnob knobs[] = {
        {"batch_subsize", "N", CHUNK_MAX_SEQUENCES, offsetof(Chunking, batch_subsize), KNOB_AT_MOST_B,
         CHOSEN_BATCH_SUBSIZE, "sequences per chunk (tasks, taskiter; at most B)"},
        {"token_chunk", "K", CHUNK_MAX_TOKENS, offsetof(Chunking, token_chunk), KNOB_AT_MOST_T, CHOSEN_TOKEN_CHUNK,
         "tokens per chunk (tasks, taskiter; at most T)"},
        {"channel_chunk", "N", CHUNK_MAX_CHANNELS, offsetof(Chunking, channel_chunk), KNOB_UNBOUNDED, 0,
         "channels per chunk of channel-split operations (tasks, taskiter)"},
        {"tile_columns", "N", CHUNK_MAX_CHANNELS, offsetof(Chunking, tile_columns), KNOB_AT_MOST_COLUMNS,
         CHOSEN_TILE_COLUMNS, "output columns per tile of the transformer blocks' products and\n"
         "input gradients (tasks, taskiter; at most the widest, 4C)"},
        {"tile_in_channels", "N", CHUNK_MAX_CHANNELS, offsetof(Chunking, tile_in_channels), KNOB_AT_MOST_INPUTS,
         CHOSEN_TILE_IN_CHANNELS, "input channels per tile of their weight gradients (tasks, taskiter;\n"
         "at most the widest, 4C)"},
        {"tile_sequences", "N", CHUNK_MAX_SEQUENCES, offsetof(Chunking, tile_sequences), KNOB_AT_MOST_B,
         CHOSEN_TILE_SEQUENCES, "sequences per row chunk of those products, every token (tasks,\n"
         "taskiter; at most B; default: the row chunks, BATCH_SUBSIZE x k)"},
        {"tiles_per_product", "N", CHUNK_MAX_CHANNELS, offsetof(Chunking, tiles_per_product), KNOB_AT_MOST_TILES, 0,
         "instead of --tile-columns: each of those products in N equal tiles\n"
         "(tasks, taskiter; at most 4C/16)"},
    };
    _Static_assert(sizeof(knobs) / sizeof(knobs[0]) == N_CHUNK_KNOBS, "N_CHUNK_KNOBS counts the table");
    return knobs;
}

// The field of `c` that knob `k` names.
static inline int *chunk_knob_field(Chunking *c, const ChunkKnob *k) { return (int *)((char *)c + k->offset); }
static inline int chunk_knob_value(const Chunking *c, const ChunkKnob *k) {
    return *(const int *)((const char *)c + k->offset);
}
// The knobs as members of a JSON object: "batch_subsize": 1, "token_chunk": 64, ...
void chunking_write_json(FILE *out, const Chunking *c);

// The automatic rule's floors and target (chunking_resolve): where the batch
// has no more rows (B x T) than the narrowest product has columns, the
// products' rows in one chunk (no pass packs the weights; every product in one
// tile per thread, in units of 16 columns) and the other row operations in
// CHUNK_WHOLE_ROW_TILES_PER_THREAD chunks per thread, each at least
// CHUNK_MIN_ROW_CHUNK_TOKENS tokens; otherwise tiles of at least
// CHUNK_MIN_TILE_ROWS rows (unless B x T is smaller) and at least
// CHUNK_MIN_TILE_PANELS panels of the micro-kernel wide, and at least
// CHUNK_TILES_PER_THREAD tiles per thread of the narrowest product.
#define CHUNK_MIN_TILE_ROWS 16
#define CHUNK_MIN_TILE_PANELS 4
#define CHUNK_TILES_PER_THREAD 4
#define CHUNK_WHOLE_ROW_TILES_PER_THREAD 2
#define CHUNK_MIN_ROW_CHUNK_TOKENS 8

typedef struct {
    int op;
    Range range;
    int in_first, n_in;    // slice of TaskGraph.block_ids: blocks only read
    int out_first, n_out;  // blocks written (and possibly read)
} ChunkTask;

typedef struct {
    Chunking chunking;
    int n_tasks;
    ChunkTask *tasks;
    int *block_ids;
    long n_block_ids;
    long n_blocks;        // blocks over all buffers
    long *buffer_first_block;
    int (*block_grid)[3]; // per buffer: block size along each dimension
    // the dependency graph (after taskgraph_analyse); CSR successor lists
    int *succ_first, *succ;       // same iteration: task -> successors
    int *n_pred;                  // same iteration: predecessor counts
    int *next_succ_first, *next_succ; // task in iteration i -> tasks in iteration i + 1
    int *n_next_pred;             // predecessors a task has in the previous iteration
    long n_edges, n_next_edges;
} TaskGraph;

// Fills in what is 0: channel_chunk, max_channel_chunks and
// max_product_chunks with their defaults, BATCH_SUBSIZE, k and the tile widths by the automatic rule for
// `threads` threads (taskgraph.c, "Granularity for the machine"; the bits of
// `chosen` say which), the knobs given staying as they are. Values larger than
// B, T or a channel extent mean one chunk; a tile width larger than the widest
// product it cuts is rejected (it would cut nothing). Returns 0, or -1 with a
// message.
int chunking_resolve(Chunking *c, const StepDescription *step, int threads, char *err, size_t err_len);
// The widest of the products that tile_columns (1) or tile_in_channels (0)
// cuts: the largest Op.cut_columns or Op.cut_input_channels; 0 without one.
int chunking_widest_product(const StepDescription *step, int output_columns);
// Whether the row-split products' row chunks hold every row of the batch (B
// sequences of T tokens): then no pass packs their weights (variants/main.c).
int chunking_product_rows_whole(const Chunking *c, int B, int T);
// Channels per chunk for an operation of `extent` channels.
int chunking_channels(const Chunking *c, int extent);
// Chunk width of a matrix product split along its output columns: at least
// 256, at most max_product_chunks chunks, in whole blocks of the dependency
// grid of its output's rows (chunking_channels), so that two chunks never
// share a block.
int chunking_product_columns(const Chunking *c, int extent);
// Rows per chunk of an update over rows `width` elements wide: the channel
// chunk, or more rows where that holds fewer than CHUNK_MIN_PARAM_ELEMENTS.
#define CHUNK_MIN_PARAM_ELEMENTS 32768
int chunking_param_elements(const Chunking *c, int extent, int width);

// Cuts every operation into chunk tasks and maps their accesses to blocks.
int taskgraph_build(TaskGraph *g, const StepDescription *step, const Chunking *chunking);
// Computes the dependency edges (read-after-write, write-after-read and
// write-after-write on blocks), within an iteration and into the next one.
int taskgraph_analyse(TaskGraph *g);
void taskgraph_free(TaskGraph *g);
// The block lists an executor that waits at the end of every phase must hand
// to its runtime: only the blocks that two or more tasks of one phase touch,
// one of them writing. A wait already orders every other pair, so naming such
// blocks costs the runtime work and orders nothing (in d12, B=4, T=64 with
// one sequence a chunk, 34,552 of the 49,680 blocks the tasks name). Sets
// `*tasks` (the graph's g->n_tasks tasks with their lists cut) and `*ids`
// (the lists), both freed by the caller. Returns 0, or -1 out of memory.
int taskgraph_phase_depends(const TaskGraph *g, const StepDescription *step, ChunkTask **tasks, int **ids);
// The end of the run of tasks of one phase that starts at `begin` (the tasks
// are listed phase by phase; an executor waits where the phase changes).
int taskgraph_phase_end(const TaskGraph *g, const StepDescription *step, int begin);
// What a chunked executor starts with: the chunking resolved from its options
// (`requested`, 0: chosen for `threads` threads), the tasks built, and, with
// `analyse`, their dependency graph. Returns 0, or -1 with a message in err.
// What taskgraph_for_executor refuses, without building anything: the chunking resolved for
// `threads` (into *resolved, when not NULL) and its task count against TASKGRAPH_MAX_TASKS; -1 with
// the reason in err otherwise. For --check, which must refuse what a run would.
int taskgraph_check_chunking(const StepDescription *step, const Chunking *requested, int threads, Chunking *resolved,
                             char *err, size_t err_len);
int taskgraph_for_executor(TaskGraph *g, const StepDescription *step, const Chunking *requested, int threads,
                           int analyse, char *err, size_t err_len);

#endif
