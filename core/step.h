// The training step as data: an ordered list of operations, each naming its
// kernel, its layer, the buffer regions it reads and writes, and the dimension
// along which it may be split. Executors (variants/) run this list; none of
// them knows the model.
#ifndef STEP_H
#define STEP_H

#include <stdint.h>
#include "model.h"

typedef enum { PHASE_FORWARD, PHASE_BACKWARD, PHASE_UPDATE, NUM_PHASES } Phase;

typedef enum {
    OP_LOAD_BATCH, OP_ENCODER_FWD, OP_LAYERNORM_FWD, OP_PACK_WEIGHT_FWD, OP_MATMUL_FWD, OP_ATTENTION_FWD,
    OP_RESIDUAL_FWD, OP_GELU_FWD, OP_CROSSENTROPY_FWD, OP_LOSS_MEAN,
    OP_CROSSENTROPY_BWD, OP_PACK_WEIGHT_BWD_INPUT, OP_MATMUL_BWD_INPUT, OP_MATMUL_BWD_WEIGHT,
    OP_LAYERNORM_BWD_INPUT, OP_LAYERNORM_BWD_PARAMS, OP_GELU_BWD, OP_ATTENTION_BWD, OP_ENCODER_BWD, OP_ADAMW,
    OP_COMM, // communication between processes (gpt2-mpi); no kernel: its executor runs it
    NUM_OP_KINDS
} OpKind;

// How an operation's work may be divided. A range names a piece of it along
// two dimensions, b and x, whose meaning depends on the split (the trace's
// b0, b1, x0, x1 columns are these fields):
//   SPLIT_ROWS      sequences [b0,b1) x tokens [x0,x1) of the (B, T) rows
//   SPLIT_HEADS     sequences [b0,b1) x heads [x0,x1)
//   SPLIT_CHANNELS  channels [x0,x1): output channels, parameter rows, or for
//                   the language-model head's products output columns over
//                   every row; b is (0, 1), unused
//   SPLIT_NONE      one indivisible piece, (0, 1, 0, 1)
// A matrix product may in addition be cut along the columns of the matrix it
// writes, Range.col0, col1: a row-split product along its output columns
// (Op.cut_columns > 0; the forward product's output channels, the input
// gradient's input channels), a weight gradient along dw's columns, its input
// channels (Op.cut_input_channels > 0). A chunk of rows (or output channels) x
// columns is a tile.
typedef enum { SPLIT_NONE, SPLIT_ROWS, SPLIT_HEADS, SPLIT_CHANNELS } SplitKind;

typedef struct {
    int b0, b1;     // first dimension of the split: sequences [b0, b1)
    int x0, x1;     // second dimension: tokens, heads or channels [x0, x1)
    int col0, col1; // matrix products only: columns [col0, col1) of the matrix written;
                    // col1 == 0 means every column (a zeroed pair is the whole width)
} Range;

// Buffers that dependencies are tracked on. A buffer is one layer of one
// tensor, viewed as a 3-D box (d0, d1, d2): (B, T, width) for activations and
// their gradients, (1, rows, cols) for parameters and gradients of parameters,
// (B, T, 1) for the batch's token ids, (1, 1, 1) for the mean loss, and
// (1, 1, N) for a slot of a product's ring of packed weights (BUF_PACKED:
// `tensor` is packed_tensor(layout, product), `layer` the slot; N the packed
// operand's columns: OC in the forward layout, IC in the input gradient's),
// and (1, 1, 1) for BUF_COMM, no data: a token that communication operations
// write (step_comm_access), so that any executor runs them one at a time, in
// the order the description lists them.
typedef enum { BUF_PARAM, BUF_GRAD, BUF_ACT, BUF_DACT, BUF_BATCH, BUF_LOSS, BUF_PACKED, BUF_COMM,
               NUM_BUFFER_KINDS } BufferKind;

// Packed weights (gemm.h). An executor that cuts the transformer blocks'
// products into row chunks gets a step in which each product's weight is packed
// once per step by an operation of its own (OP_PACK_WEIGHT_FWD for the forward
// product, OP_PACK_WEIGHT_BWD_INPUT for the input gradient; split along the
// packed columns, reading the weight and writing a slot), and the product's
// chunks read the packed slot instead of the weight. Each product has a ring of
// PACK_RING_SLOTS slots per layout, layer l using slot l % PACK_RING_SLOTS:
// layer l+2's packing waits for layer l's chunks through the ordinary
// write-after-read dependencies. The language-model head is split by columns
// already (each chunk packs only its columns) and has no packed copy.
//
// A tile of a product (Range.col0, col1) reads only the panels of its columns
// (REGION_PACKED_COLS), so it waits only for the pack chunks that write them,
// and a pack chunk only for the tiles that read its columns. That needs one
// ring per layout: the two layouts put a column's floats in different places,
// so a slot shared by both (as it was, 28 MB less at d12) would let the
// input gradient's pack chunk of some columns overwrite floats that a forward
// tile of other columns still reads (in taskiter, where the next iteration's
// forward pass overlaps the backward pass, and at the forward/backward turn).
//
// Measured and not taken (d12, B=4, T=64, 1 thread, Zen 3, per-kernel times
// from traces): (1) no pack operation, the product's first row chunk packing
// into the slot as it computes (its column pieces shared among threads): the
// first chunk paid 0.47 ns per packed float, what the separate pass pays, and
// products plus packing took 1484 ms a step against 1477; (2) one ring of two
// slots for all products in turn (19 MB, so that a slot is rewritten while
// still in L3, without fetching it from memory): pack operations 79 -> 75 ms,
// within the noise. What the pass costs is reading every weight from memory
// twice a step with nothing to overlap it with, which fork-join's products do
// under their arithmetic. Alone, with the weight and the slot both in memory,
// a pack runs as fast as a memcpy of the same floats (0.40-0.52 ns a float,
// the memcpy 0.42-0.46, on that VM); with both in L3, at 0.16-0.48. Trying to
// get there:
// (3) each row chunk of the preceding product prefetching its share of the
// next pack's weight (prefetcht1) and slot (prefetchw), spread over its tile
// calls: pack operations 74 -> 68 ms a step, the step no faster (1 thread, 3
// alternating runs: 2.377-2.405 s without, 2.402-2.411 s with); (4) at 2
// threads, pack operations in one chunk or in chunks of 1024 columns instead
// of 256, or (tasks) their tasks created before the preceding product's:
// steps within 0.5% of the present ones (1.211-1.219 s; forkjoin 1.184-1.194);
// (5) (1) again, with the weight's lines of the next panel prefetched and its
// slot lines prefetched for writing over the tiles of the present one, as
// gemm() fetches its next B block: the first chunks took 35 ms (forward) and
// 42 ms (input gradient) a step longer than the others, what the pack
// operations take (33.5 and 36.2 ms): no overlap, and the step no faster.
typedef enum { PACKED_QKV, PACKED_ATTPROJ, PACKED_FC, PACKED_FCPROJ, NUM_PACKED_PRODUCTS } PackedProduct;
typedef enum { PACKED_FORWARD, PACKED_BACKWARD_INPUT, NUM_PACKED_LAYOUTS } PackedLayout;
#define PACK_RING_SLOTS 2
// BUF_PACKED's tensor index of a product's ring in one layout
static inline int packed_tensor(PackedLayout layout, PackedProduct product) {
    return (int)layout * NUM_PACKED_PRODUCTS + (int)product;
}

// How a chunked executor's dependency blocks cut a buffer's columns: as
// finely as the operations that write column ranges of it cut them (derived
// from the accesses when the step is described), whole rows otherwise.
typedef enum {
    COLUMNS_WHOLE,          // one block spans every column
    COLUMNS_HEADS,          // one head's columns (Buffer.head_width; in each of q, k, v)
    COLUMNS_CHANNEL_CHUNKS, // the executor's channel chunks (taskgraph.h: chunking_channels)
    COLUMNS_PRODUCT_CHUNKS, // its chunks of a product's output columns (chunking_product_columns)
    COLUMNS_PRODUCT_TILES,  // its tiles of a row-split product's output columns (Chunking.tile_columns)
    COLUMNS_WEIGHT_TILES,   // its tiles of a weight gradient's input channels (Chunking.tile_in_channels)
} ColumnBlocks;

typedef struct {
    BufferKind kind;
    int tensor;   // index in its kind's enum (BUF_BATCH: 0 inputs, 1 targets)
    int layer;    // -1 when the tensor is not per layer
    int dim[3];
    ColumnBlocks column_blocks;
    int head_width; // COLUMNS_HEADS: columns of one head
} Buffer;

// How a chunk's range maps onto a buffer region.
typedef enum {
    REGION_ALL,          // the whole buffer
    REGION_ROWS,         // rows of the chunk, every column
    REGION_ROWS_CAUSAL,  // sequences of the chunk, tokens [0, x1): keys and values a causal chunk needs
    REGION_SEQ_HEADS,    // every token of the chunk's sequences, the columns of heads [x0,x1)
    REGION_SEQ_HEADS_QKV,// the same in each of three C-wide parts (q, k, v)
    REGION_PARAM_ROWS,   // parameter rows [x0,x1) (dimension 1), every column
    REGION_COLS,         // every row, columns [x0,x1)
    REGION_WPE_ROWS,     // position-embedding rows [0,T), columns [x0,x1)
    // tiles of matrix products (Range.col0, col1; col1 == 0: every column)
    REGION_ROWS_TILE,    // rows of the chunk, columns [col0,col1): a product's output tile
    REGION_PARAM_TILE,   // parameter rows [x0,x1), columns [col0,col1): a weight gradient's tile
    REGION_TILE_COLS,    // every row, columns [col0,col1): the input a weight-gradient tile reads
    REGION_PACKED_COLS,  // columns [col0,col1) of a packed operand, widened to whole panels
                         // (matmul_panel_columns): what a tile reads of a packed weight
    REGION_BIAS_TILE,    // parameter rows [x0,x1) for the tiles whose columns start at 0, nothing
                         // for the others: the bias gradient, summed by one tile per row block
} RegionRule;

typedef struct {
    int buffer;       // index into StepDescription.buffers
    int writes;       // 0: read only, 1: written (possibly also read)
    RegionRule rule;
} Access;

#define MAX_ACCESSES 16 // a communication operation names a layer's 12 gradients and the token
#define MAX_ARGS 7

// Argument slots: a kernel's tensor arguments are Op.arg[slot], named after
// the kernel's parameters (kernels.h, gemm.h), outputs first. step.c binds
// each slot together with the region of the buffer that a chunk touches
// through it, so a kernel cannot see a tensor its accesses do not name.
// encoder_forward, layernorm_forward, matmul_forward_block, attention_forward,
// residual_forward, gelu_forward, crossentropy_softmax_forward, mean_loss
enum { ENCODER_OUT, ENCODER_WTE, ENCODER_WPE };
enum { LN_OUT, LN_MEAN, LN_RSTD, LN_INP, LN_WEIGHT, LN_BIAS };
// (a product reads its weight as w, or packed as MATMUL_W_PACKED; never both)
enum { MATMUL_OUT, MATMUL_INP, MATMUL_W, MATMUL_BIAS, MATMUL_W_PACKED };
enum { ATTENTION_OUT, ATTENTION_ATT, ATTENTION_QKV };
enum { RESIDUAL_OUT, RESIDUAL_A, RESIDUAL_B };
enum { GELU_OUT, GELU_INP };
enum { CE_PROBS, CE_LOSSES, CE_LOGITS };
enum { LOSS_LOSSES };
// crossentropy_softmax_backward, matmul_backward_input_block,
// matmul_backward_weight_block, layernorm_backward_input,
// layernorm_backward_params, gelu_backward, attention_backward, encoder_backward
enum { CE_BWD_DLOGITS, CE_BWD_PROBS };
enum { MATMUL_BWD_INPUT_DINP, MATMUL_BWD_INPUT_DOUT, MATMUL_BWD_INPUT_W, MATMUL_BWD_INPUT_W_PACKED };
enum { MATMUL_BWD_WEIGHT_DW, MATMUL_BWD_WEIGHT_DBIAS, MATMUL_BWD_WEIGHT_DOUT, MATMUL_BWD_WEIGHT_INP };
enum { LN_BWD_DINP, LN_BWD_DRESIDUAL, LN_BWD_DOUT, LN_BWD_INP, LN_BWD_WEIGHT, LN_BWD_MEAN, LN_BWD_RSTD };
enum { LN_BWD_PARAMS_DWEIGHT, LN_BWD_PARAMS_DBIAS, LN_BWD_PARAMS_DOUT, LN_BWD_PARAMS_INP, LN_BWD_PARAMS_MEAN,
       LN_BWD_PARAMS_RSTD };
enum { GELU_BWD_DINP, GELU_BWD_INP, GELU_BWD_DOUT };
enum { ATTENTION_BWD_DQKV, ATTENTION_BWD_DOUT, ATTENTION_BWD_QKV, ATTENTION_BWD_ATT };
enum { ENCODER_BWD_DWTE, ENCODER_BWD_DWPE, ENCODER_BWD_DOUT };
// matmul_pack_forward_weight, matmul_pack_backward_input_weight
enum { PACK_OUT, PACK_W };
// adamw_update (m and v: the optimizer's moments, touched by this operation only)
enum { ADAMW_PARAMS, ADAMW_GRADS, ADAMW_M, ADAMW_V };

// How executors that cut channel-split operations into chunks size them.
typedef enum {
    CHUNK_CHANNELS,        // Chunking.channel_chunk channels (taskgraph.h: chunking_channels)
    CHUNK_PRODUCT_COLUMNS, // a product's output columns over every row: each chunk packs all of
                           // its input, so at least 256 wide (chunking_product_columns); also the
                           // columns of a packed weight (a pack operation's chunk: 256 columns of
                           // d12's weights are 0.8 to 3 MB, well above a task's own cost)
    CHUNK_PARAM_ELEMENTS,  // AdamW over a parameter tensor's rows: at least CHUNK_MIN_PARAM_ELEMENTS
                           // elements a chunk (chunking_param_elements), so that a bias or a
                           // LayerNorm weight (rows one element wide) is one chunk, not 12 to 48
                           // chunks of 64 elements, each updated in less time than a task costs
} ChunkWidth;

typedef struct {
    OpKind kind;
    Phase phase;
    int layer;           // -1 outside the transformer blocks
    SplitKind split;
    int split_channels;  // SPLIT_CHANNELS: how many channels the split covers; others derive from B, T, NH
    int n_access;
    Access access[MAX_ACCESSES];
    float *arg[MAX_ARGS];  // tensor arguments, by slot; NULL for an absent optional one (a bias)
    // sizes the kernel is called with
    int width;           // row kernels: floats per row (C; 4C for GELU); AdamW: per parameter row
    int in_channels;     // matrix products and pack operations: IC; the weight is (OC, IC)
    int out_channels;    // matrix products and pack operations: OC
    int vocab;           // cross-entropy: V real entries per row of logits
    int padded_vocab;    // cross-entropy: Vp stored entries per row
    // scheduling hints, set once with the operation; executors read these
    // instead of testing kernel kinds
    int cyclic;          // pieces differ in cost or disturb their neighbours (causal attention: a
                         // row's cost grows with its token; attention backward: neighbouring heads
                         // of one sequence write the same gradient rows): executors sharing the
                         // finest pieces deal them round robin or in balanced shares
    int cut_columns;     // > 0: a row-split matrix product whose output columns (this many) may be
                         // cut instead of its rows, so that each thread packs only its share of the
                         // weight (forkjoin), or as well as its rows, into tiles (tasks, taskiter)
    int cut_input_channels; // > 0: a weight gradient whose input channels (this many, dw's columns)
                         // chunking executors may cut as well as its output channels, into tiles
    ChunkWidth chunk_width; // SPLIT_CHANNELS: how chunking executors size its chunks
    int comm;            // OP_COMM: what StepDescription.comm is to do, in its owner's numbering
    char label[48];      // e.g. "matmul_fwd qkv L3"
} Op;

// Hyper-parameters of the update and where per-step results go.
typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
} AdamWSettings;

// Where the next batch comes from; implemented by the front end (data.h).
typedef struct BatchSource BatchSource;
void batch_source_next(BatchSource *source, int *inputs, int *targets);

typedef struct {
    GPT2 *model;
    int B, T;
    AdamWSettings adamw;
    BatchSource *batches;
    int n_ops, cap_ops;
    Op *ops;
    int n_buffers, cap_buffers;
    Buffer *buffers;
    // the rings of packed weights (pack operations only; else NULL, 0)
    float *packed_memory;
    size_t packed_floats;
    void *packed_allocation; // for free()
    // Runs an OP_COMM operation (op_run calls it): a distributed executor's
    // communication, which the node-level executors schedule as any other
    // operation without knowing what it does. NULL: OP_COMM does nothing.
    void (*comm)(void *context, const Op *op, int iteration);
    void *comm_context;
} StepDescription;

// Builds the description of one training step (batch load, forward, loss,
// backward, AdamW) for the model's allocated batch shape, as llm.c's
// gpt2_forward, gpt2_backward and gpt2_update run it. With pack_weights, and
// a kernel set that has a packed form (gemm.h: matmul_packed_floats), the
// transformer blocks' products read weights packed once per step by pack
// operations (above), and the rings are allocated (zeroed lazily: untouched
// pages cost nothing); otherwise every product call packs its own part of the
// weight. The results are the same bits either way. Returns 0 or -1 on
// allocation failure.
int step_describe(StepDescription *step, GPT2 *model, AdamWSettings adamw, BatchSource *batches, int pack_weights);
void step_free(StepDescription *step);
// Appends an operation of kind OP_COMM (one indivisible piece, no buffer
// accesses) labelled "comm LABEL", so that traces and --describe name the
// communication a distributed executor runs around the step's operations.
// Returns its index, or -1 on allocation failure.
int step_add_comm(StepDescription *step, Phase phase, const char *label);
// Gives the OP_COMM operation `op` an access to the whole of buffer (kind,
// tensor, layer): the gradients it sends, so that it follows the operations
// that write them and precedes those that read them; with kind BUF_COMM, the
// token (added on first use). Returns 0, or -1 when the step has no such
// buffer, the operation has no room left, or memory is short.
int step_comm_access(StepDescription *step, int op, BufferKind kind, int tensor, int layer, int writes);

// Size of the split dimension: (dim0 extent, dim1 extent) of ranges;
// a full range is (0, extent_b, 0, extent_x).
void op_extents(const StepDescription *step, const Op *op, int *extent_b, int *extent_x);
Range op_full_range(const StepDescription *step, const Op *op);

// Runs one operation on one range. `iteration` counts steps from 0 (AdamW's
// bias correction uses iteration + 1). losses_out, when not NULL, receives the
// step's mean loss from OP_LOSS_MEAN.
void op_run(const StepDescription *step, const Op *op, Range range, int iteration, float *losses_out);

// Region of a buffer that a chunk touches: a 3-D box [lo, hi) per dimension.
typedef struct {
    int lo[3], hi[3];
} Box;
#define MAX_BOXES 3
// Fills the boxes a chunk with this range touches through `access` and
// returns how many (REGION_SEQ_HEADS_QKV: a head's q, k and v columns are three boxes).
int access_boxes(const StepDescription *step, const Access *access, Range range, Box boxes[MAX_BOXES]);

const char *op_kind_name(OpKind kind);
const char *phase_name(Phase phase);
const char *split_name(SplitKind split);

#endif
