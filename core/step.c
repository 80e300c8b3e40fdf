// The description of one training step and the dispatch of an operation's
// range to its kernel.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"
#include "step.h"

static const char *OP_KIND_NAMES[NUM_OP_KINDS] = {
    "load_batch", "encoder_fwd", "layernorm_fwd", "pack_weight_fwd", "matmul_fwd", "attention_fwd",
    "residual_fwd", "gelu_fwd", "crossentropy_fwd", "loss_mean",
    "crossentropy_bwd", "pack_weight_bwd_input", "matmul_bwd_input", "matmul_bwd_weight",
    "layernorm_bwd_input", "layernorm_bwd_params", "gelu_bwd", "attention_bwd", "encoder_bwd", "adamw",
    "comm",
};

const char *op_kind_name(OpKind kind) { return OP_KIND_NAMES[kind]; }
const char *phase_name(Phase phase) {
    static const char *names[NUM_PHASES] = {"forward", "backward", "update"};
    return names[phase];
}
const char *split_name(SplitKind split) {
    static const char *names[] = {"none", "rows", "heads", "channels"};
    return names[split];
}

// ----------------------------------------------------------------------------
// building the description

typedef struct {
    StepDescription *s;
    Phase phase;          // of the operations being added
    int failed;           // an allocation failed
    int n_tensors;        // the largest tensor enum, for the buffer index
    int *buffer_index;    // (kind, tensor, layer + 1) -> buffer id, or -1
    int inputs, targets;  // BUF_BATCH buffers
    int loss;             // BUF_LOSS buffer
    // packed weights (step.h): off when pack_slots is 0; per ring, indexed by packed_tensor()
    int pack_slots;                                                   // slots per ring
    int ring_columns[NUM_PACKED_LAYOUTS * NUM_PACKED_PRODUCTS];       // a slot's columns (dim[2])
    size_t ring_offset[NUM_PACKED_LAYOUTS * NUM_PACKED_PRODUCTS];     // each ring in packed_memory, in floats
    size_t ring_slot_floats[NUM_PACKED_LAYOUTS * NUM_PACKED_PRODUCTS];// one slot, in floats
} Builder;

// The buffer of one layer (-1: none) of a tensor, added on first use; buffers
// are found through an index, so describing a step is linear in its layers.
static int buf(Builder *b, BufferKind kind, int tensor, int layer) {
    StepDescription *s = b->s;
    const GPT2 *m = s->model;
    int per_layer = 0;
    if (kind == BUF_PARAM || kind == BUF_GRAD) per_layer = m->param_shape[tensor].per_layer;
    if (kind == BUF_ACT) per_layer = m->act_shape[tensor].per_layer;
    if (kind == BUF_DACT) per_layer = m->dact_shape[tensor].per_layer;
    if (kind == BUF_PACKED) per_layer = 1; // the layer is the ring's slot
    if (!per_layer) layer = -1;
    int *id = &b->buffer_index[((size_t)kind * b->n_tensors + tensor) * (m->config.num_layers + 1) + layer + 1];
    if (*id >= 0) return *id;
    if (s->n_buffers == s->cap_buffers) {
        int cap = s->cap_buffers ? 2 * s->cap_buffers : 64;
        Buffer *grown = realloc(s->buffers, cap * sizeof(Buffer));
        if (!grown) {
            b->failed = 1;
            return 0;
        }
        s->buffers = grown;
        s->cap_buffers = cap;
    }
    Buffer buffer = {kind, tensor, layer, {1, 1, 1}, COLUMNS_WHOLE, 0};
    switch (kind) {
    case BUF_PARAM:
    case BUF_GRAD:
        buffer.dim[1] = m->param_shape[tensor].rows;
        buffer.dim[2] = m->param_shape[tensor].cols;
        break;
    case BUF_ACT:
    case BUF_DACT:
        buffer.dim[0] = s->B;
        buffer.dim[1] = s->T;
        buffer.dim[2] = (int)(kind == BUF_ACT ? m->act_shape[tensor] : m->dact_shape[tensor]).width;
        break;
    case BUF_BATCH:
        buffer.dim[0] = s->B;
        buffer.dim[1] = s->T;
        break;
    case BUF_PACKED:
        buffer.dim[2] = b->ring_columns[tensor];
        break;
    case BUF_LOSS:
    case BUF_COMM:
    case NUM_BUFFER_KINDS:
        break;
    }
    s->buffers[s->n_buffers] = buffer;
    *id = s->n_buffers;
    return s->n_buffers++;
}

// A tensor: its buffer and the pointer to its layer's slice. NONE stands for
// an absent optional argument (no bias, no residual gradient).
typedef struct {
    int buffer;
    float *ptr;
} Ref;
static const Ref NONE = {-1, NULL};

static Ref act(Builder *b, int t, int l) { return (Ref){buf(b, BUF_ACT, t, l), act_slice(b->s->model, t, l)}; }
static Ref dact(Builder *b, int t, int l) { return (Ref){buf(b, BUF_DACT, t, l), dact_slice(b->s->model, t, l)}; }
static Ref param(Builder *b, int t, int l) {
    return (Ref){buf(b, BUF_PARAM, t, l), param_slice(b->s->model, &b->s->model->params, t, l)};
}
static Ref grad(Builder *b, int t, int l) {
    return (Ref){buf(b, BUF_GRAD, t, l), param_slice(b->s->model, &b->s->model->grads, t, l)};
}
// The slot of product p's ring of packed weights in `layout` that layer l
// uses; NONE when the step packs no weights.
static Ref packed(Builder *b, PackedLayout layout, PackedProduct p, int l) {
    if (!b->pack_slots) return NONE;
    int slot = l % b->pack_slots, ring = packed_tensor(layout, p);
    return (Ref){buf(b, BUF_PACKED, ring, slot),
                 b->s->packed_memory + b->ring_offset[ring] + (size_t)slot * b->ring_slot_floats[ring]};
}

// Appends an operation of the current phase; NULL (and the builder marked
// failed) when memory is short. The binding functions below accept NULL.
static Op *add_op(Builder *b, OpKind kind, int layer, SplitKind split, const char *what) {
    StepDescription *s = b->s;
    if (s->n_ops == s->cap_ops) {
        int cap = s->cap_ops ? 2 * s->cap_ops : 256;
        Op *grown = realloc(s->ops, cap * sizeof(Op));
        if (!grown) {
            b->failed = 1;
            return NULL;
        }
        s->ops = grown;
        s->cap_ops = cap;
    }
    Op *op = &s->ops[s->n_ops++];
    memset(op, 0, sizeof(*op));
    op->kind = kind;
    op->phase = b->phase;
    op->layer = layer;
    op->split = split;
    if (layer >= 0)
        snprintf(op->label, sizeof(op->label), "%s %s L%d", op_kind_name(kind), what, layer);
    else
        snprintf(op->label, sizeof(op->label), "%s %s", op_kind_name(kind), what);
    return op;
}

// Records that a chunk of the operation reads (is_write 0) or writes, and
// possibly also reads (is_write 1), the region `rule` of a buffer.
static void access(Op *op, int buffer, int is_write, RegionRule rule) {
    if (!op) return;
    if (op->n_access == MAX_ACCESSES) {
        fprintf(stderr, "step.c: %s has more than %d accesses\n", op->label, MAX_ACCESSES);
        abort();
    }
    op->access[op->n_access++] = (Access){buffer, is_write, rule};
}

// Binds the kernel's argument `slot` to tensor t and records, in the same
// call, the region of t a chunk reads or writes through it. An absent
// optional tensor (NONE) leaves the slot NULL and records nothing.
static void bind(Op *op, int slot, Ref t, int is_write, RegionRule rule) {
    if (!op || !t.ptr) return;
    op->arg[slot] = t.ptr;
    access(op, t.buffer, is_write, rule);
}
static void reads(Op *op, int slot, Ref t, RegionRule rule) { bind(op, slot, t, 0, rule); }
static void writes(Op *op, int slot, Ref t, RegionRule rule) { bind(op, slot, t, 1, rule); }

// State a kernel reaches through the model rather than an argument slot:
// the batch's token ids, the mean loss.
static void reads_state(Op *op, int buffer, RegionRule rule) { access(op, buffer, 0, rule); }
static void writes_state(Op *op, int buffer, RegionRule rule) { access(op, buffer, 1, rule); }

// Binds state that only this operation ever touches (AdamW's moments): no
// other operation to be ordered against, so no access.
static void owns(Op *op, int slot, float *ptr) {
    if (op) op->arg[slot] = ptr;
}

// ----------------------------------------------------------------------------
// the layers: one or two operations each, llm.c's functions as data

// Packs the weight w (OC, IC) of a product into the slot `slot` (a packed()
// Ref), for the forward product (kind OP_PACK_WEIGHT_FWD: columns are output
// channels, rows of w) or the input gradient (OP_PACK_WEIGHT_BWD_INPUT:
// columns are input channels, columns of w). Split along those columns.
static void pack_weight_op(Builder *b, OpKind kind, int layer, const char *what, Ref slot, Ref w, int IC, int OC) {
    Op *op = add_op(b, kind, layer, SPLIT_CHANNELS, what);
    if (!op) return;
    int forward = kind == OP_PACK_WEIGHT_FWD;
    op->in_channels = IC;
    op->out_channels = OC;
    op->split_channels = forward ? OC : IC;
    op->chunk_width = CHUNK_PRODUCT_COLUMNS;
    writes(op, PACK_OUT, slot, REGION_COLS);
    reads(op, PACK_W, w, forward ? REGION_PARAM_ROWS : REGION_COLS);
}

// out (B,T,OC) = inp (B,T,IC) @ w (OC,IC)^T + bias (OC). Split along rows
// (chunks of sequences x tokens; fork-join may cut the output columns
// instead), or, with by_columns, along output columns over every row: the
// language-model head's weight is 150 times its input, and each row chunk
// would stream all of it from memory again. A row-split product given a
// packed slot (not NONE) is preceded by the operation that packs w into it,
// and reads the slot instead of w.
static void matmul_forward_op(Builder *b, int layer, const char *what, Ref out, Ref inp, Ref w, Ref bias,
                              int IC, int OC, int by_columns, Ref slot) {
    if (!by_columns && slot.ptr) pack_weight_op(b, OP_PACK_WEIGHT_FWD, layer, what, slot, w, IC, OC);
    Op *op = add_op(b, OP_MATMUL_FWD, layer, by_columns ? SPLIT_CHANNELS : SPLIT_ROWS, what);
    if (!op) return;
    op->in_channels = IC;
    op->out_channels = OC;
    if (by_columns) {
        op->split_channels = OC;
        op->chunk_width = CHUNK_PRODUCT_COLUMNS;
        writes(op, MATMUL_OUT, out, REGION_COLS);
        reads(op, MATMUL_INP, inp, REGION_ALL);
        reads(op, MATMUL_W, w, REGION_PARAM_ROWS);
        reads(op, MATMUL_BIAS, bias, REGION_PARAM_ROWS);
        return;
    }
    op->cut_columns = OC;
    writes(op, MATMUL_OUT, out, REGION_ROWS_TILE);
    reads(op, MATMUL_INP, inp, REGION_ROWS);
    if (slot.ptr) reads(op, MATMUL_W_PACKED, slot, REGION_PACKED_COLS);
    else reads(op, MATMUL_W, w, REGION_ALL);
    reads(op, MATMUL_BIAS, bias, REGION_ALL);
}

// dinp (B,T,IC) = dout (B,T,OC) @ w (OC,IC), split like the forward product
// (with a packed slot: after the operation that packs w for it, reading the
// slot instead of w); then dw (OC,IC) = dout^T @ inp and dbias (OC) = sum of
// dout over rows, a reduction over every row split along output channels and,
// but for the language-model head (by_columns), into tiles along input
// channels too, the tiles of the first input channels also summing dbias.
static void matmul_backward_ops(Builder *b, int layer, const char *what, Ref dinp, Ref dout, Ref inp, Ref w,
                                Ref dw, Ref dbias, int IC, int OC, int by_columns, Ref slot) {
    if (!by_columns && slot.ptr) pack_weight_op(b, OP_PACK_WEIGHT_BWD_INPUT, layer, what, slot, w, IC, OC);
    Op *op = add_op(b, OP_MATMUL_BWD_INPUT, layer, by_columns ? SPLIT_CHANNELS : SPLIT_ROWS, what);
    if (op) {
        op->in_channels = IC;
        op->out_channels = OC;
        if (by_columns) {
            op->split_channels = IC;
            op->chunk_width = CHUNK_PRODUCT_COLUMNS;
            writes(op, MATMUL_BWD_INPUT_DINP, dinp, REGION_COLS);
            reads(op, MATMUL_BWD_INPUT_DOUT, dout, REGION_ALL);
            reads(op, MATMUL_BWD_INPUT_W, w, REGION_COLS);
        } else {
            op->cut_columns = IC;
            writes(op, MATMUL_BWD_INPUT_DINP, dinp, REGION_ROWS_TILE);
            reads(op, MATMUL_BWD_INPUT_DOUT, dout, REGION_ROWS);
            if (slot.ptr) reads(op, MATMUL_BWD_INPUT_W_PACKED, slot, REGION_PACKED_COLS);
            else reads(op, MATMUL_BWD_INPUT_W, w, REGION_ALL);
        }
    }

    op = add_op(b, OP_MATMUL_BWD_WEIGHT, layer, SPLIT_CHANNELS, what);
    if (!op) return;
    op->in_channels = IC;
    op->out_channels = OC;
    op->split_channels = OC;
    // each chunk packs all of inp (every row) as its operand B: chunks of at least 256 channels.
    // One packing of inp shared by the chunks, as the weights' are, was measured and not taken:
    // at d12, 1 thread (Zen 3, the chunks run in turn reusing the first one's packing), tasks
    // 2.337-2.360 -> 2.313-2.349 s a step and taskiter even, for a ring and an operation more.
    op->chunk_width = CHUNK_PRODUCT_COLUMNS;
    // the language-model head's has 197 chunks of output channels at d12 already, and its dw
    // (dwte) is cut in channel chunks by the encoder's backward pass
    if (!by_columns) op->cut_input_channels = IC;
    writes(op, MATMUL_BWD_WEIGHT_DW, dw, REGION_PARAM_TILE);
    writes(op, MATMUL_BWD_WEIGHT_DBIAS, dbias, REGION_BIAS_TILE);
    reads(op, MATMUL_BWD_WEIGHT_DOUT, dout, REGION_COLS);
    reads(op, MATMUL_BWD_WEIGHT_INP, inp, REGION_TILE_COLS);
}

// out (B,T,C) = normalised inp (B,T,C) * w (C) + bias (C); mean, rstd (B,T) saved.
static void layernorm_forward_op(Builder *b, int layer, const char *what, Ref out, Ref mean, Ref rstd, Ref inp,
                                 Ref w, Ref bias, int C) {
    Op *op = add_op(b, OP_LAYERNORM_FWD, layer, SPLIT_ROWS, what);
    if (!op) return;
    op->width = C;
    writes(op, LN_OUT, out, REGION_ROWS);
    writes(op, LN_MEAN, mean, REGION_ROWS);
    writes(op, LN_RSTD, rstd, REGION_ROWS);
    reads(op, LN_INP, inp, REGION_ROWS);
    reads(op, LN_WEIGHT, w, REGION_ALL);
    reads(op, LN_BIAS, bias, REGION_ALL);
}

// dinp (B,T,C) = dresidual (may be NONE) + LayerNorm's input gradient; then
// dw, dbias (C) as a separate reduction over every row, split along channels.
static void layernorm_backward_ops(Builder *b, int layer, const char *what, Ref dinp, Ref dresidual, Ref dout,
                                   Ref inp, Ref w, Ref mean, Ref rstd, Ref dw, Ref dbias, int C) {
    Op *op = add_op(b, OP_LAYERNORM_BWD_INPUT, layer, SPLIT_ROWS, what);
    if (op) {
        op->width = C;
        writes(op, LN_BWD_DINP, dinp, REGION_ROWS);
        reads(op, LN_BWD_DRESIDUAL, dresidual, REGION_ROWS);
        reads(op, LN_BWD_DOUT, dout, REGION_ROWS);
        reads(op, LN_BWD_INP, inp, REGION_ROWS);
        reads(op, LN_BWD_WEIGHT, w, REGION_ALL);
        reads(op, LN_BWD_MEAN, mean, REGION_ROWS);
        reads(op, LN_BWD_RSTD, rstd, REGION_ROWS);
    }

    op = add_op(b, OP_LAYERNORM_BWD_PARAMS, layer, SPLIT_CHANNELS, what);
    if (!op) return;
    op->width = C;
    op->split_channels = C;
    writes(op, LN_BWD_PARAMS_DWEIGHT, dw, REGION_PARAM_ROWS);
    writes(op, LN_BWD_PARAMS_DBIAS, dbias, REGION_PARAM_ROWS);
    reads(op, LN_BWD_PARAMS_DOUT, dout, REGION_COLS);
    reads(op, LN_BWD_PARAMS_INP, inp, REGION_COLS);
    reads(op, LN_BWD_PARAMS_MEAN, mean, REGION_ALL);
    reads(op, LN_BWD_PARAMS_RSTD, rstd, REGION_ALL);
}

// out (B,T,C) = a + b
static void residual_forward_op(Builder *b, int layer, const char *what, Ref out, Ref in_a, Ref in_b, int C) {
    Op *op = add_op(b, OP_RESIDUAL_FWD, layer, SPLIT_ROWS, what);
    if (!op) return;
    op->width = C;
    writes(op, RESIDUAL_OUT, out, REGION_ROWS);
    reads(op, RESIDUAL_A, in_a, REGION_ROWS);
    reads(op, RESIDUAL_B, in_b, REGION_ROWS);
}

// ----------------------------------------------------------------------------
// the step

static void describe_forward(Builder *b) {
    const GPT2 *model = b->s->model;
    int L = model->config.num_layers, C = model->config.channels;
    b->phase = PHASE_FORWARD;

    Op *op = add_op(b, OP_LOAD_BATCH, -1, SPLIT_NONE, "inputs+targets");
    writes_state(op, b->inputs, REGION_ALL);
    writes_state(op, b->targets, REGION_ALL);

    // encoded (B,T,C) = wte[inputs] + wpe[t]
    op = add_op(b, OP_ENCODER_FWD, -1, SPLIT_ROWS, "wte+wpe");
    if (op) op->width = C;
    writes(op, ENCODER_OUT, act(b, ACT_ENCODED, -1), REGION_ROWS);
    reads(op, ENCODER_WTE, param(b, PARAM_WTE, -1), REGION_ALL);
    reads(op, ENCODER_WPE, param(b, PARAM_WPE, -1), REGION_ALL);
    reads_state(op, b->inputs, REGION_ROWS);

    for (int l = 0; l < L; l++) {
        Ref residual = l == 0 ? act(b, ACT_ENCODED, -1) : act(b, ACT_RESIDUAL3, l - 1); // (B,T,C)
        layernorm_forward_op(b, l, "ln1", act(b, ACT_LN1, l), act(b, ACT_LN1_MEAN, l), act(b, ACT_LN1_RSTD, l),
                             residual, param(b, PARAM_LN1W, l), param(b, PARAM_LN1B, l), C);
        // qkv (B,T,3C)
        matmul_forward_op(b, l, "qkv", act(b, ACT_QKV, l), act(b, ACT_LN1, l), param(b, PARAM_QKVW, l),
                          param(b, PARAM_QKVB, l), C, 3 * C, 0, packed(b, PACKED_FORWARD, PACKED_QKV, l));
        // atty (B,T,C), att (B,T,NH,T); a query row needs the keys and values of the rows before it
        op = add_op(b, OP_ATTENTION_FWD, l, SPLIT_ROWS, "causal");
        if (op) op->cyclic = 1;
        writes(op, ATTENTION_OUT, act(b, ACT_ATTY, l), REGION_ROWS);
        writes(op, ATTENTION_ATT, act(b, ACT_ATT, l), REGION_ROWS);
        reads(op, ATTENTION_QKV, act(b, ACT_QKV, l), REGION_ROWS_CAUSAL);
        matmul_forward_op(b, l, "attproj", act(b, ACT_ATTPROJ, l), act(b, ACT_ATTY, l), param(b, PARAM_ATTPROJW, l),
                          param(b, PARAM_ATTPROJB, l), C, C, 0, packed(b, PACKED_FORWARD, PACKED_ATTPROJ, l));
        residual_forward_op(b, l, "residual2", act(b, ACT_RESIDUAL2, l), residual, act(b, ACT_ATTPROJ, l), C);
        layernorm_forward_op(b, l, "ln2", act(b, ACT_LN2, l), act(b, ACT_LN2_MEAN, l), act(b, ACT_LN2_RSTD, l),
                             act(b, ACT_RESIDUAL2, l), param(b, PARAM_LN2W, l), param(b, PARAM_LN2B, l), C);
        // fch, fch_gelu (B,T,4C)
        matmul_forward_op(b, l, "fc", act(b, ACT_FCH, l), act(b, ACT_LN2, l), param(b, PARAM_FCW, l),
                          param(b, PARAM_FCB, l), C, 4 * C, 0, packed(b, PACKED_FORWARD, PACKED_FC, l));
        op = add_op(b, OP_GELU_FWD, l, SPLIT_ROWS, "fc");
        if (op) op->width = 4 * C;
        writes(op, GELU_OUT, act(b, ACT_FCH_GELU, l), REGION_ROWS);
        reads(op, GELU_INP, act(b, ACT_FCH, l), REGION_ROWS);
        matmul_forward_op(b, l, "fcproj", act(b, ACT_FCPROJ, l), act(b, ACT_FCH_GELU, l), param(b, PARAM_FCPROJW, l),
                          param(b, PARAM_FCPROJB, l), 4 * C, C, 0, packed(b, PACKED_FORWARD, PACKED_FCPROJ, l));
        residual_forward_op(b, l, "residual3", act(b, ACT_RESIDUAL3, l), act(b, ACT_RESIDUAL2, l),
                            act(b, ACT_FCPROJ, l), C);
    }
    layernorm_forward_op(b, -1, "lnf", act(b, ACT_LNF, -1), act(b, ACT_LNF_MEAN, -1), act(b, ACT_LNF_RSTD, -1),
                         act(b, ACT_RESIDUAL3, L - 1), param(b, PARAM_LNFW, -1), param(b, PARAM_LNFB, -1), C);
    // logits (B,T,Vp) = lnf @ wte^T: the token embedding is the output head
    matmul_forward_op(b, -1, "lm_head", act(b, ACT_LOGITS, -1), act(b, ACT_LNF, -1), param(b, PARAM_WTE, -1), NONE,
                      C, model->config.padded_vocab_size, 1, NONE);
    // probs (B,T,Vp), losses (B,T), then their mean
    op = add_op(b, OP_CROSSENTROPY_FWD, -1, SPLIT_ROWS, "softmax");
    if (op) {
        op->vocab = model->config.vocab_size;
        op->padded_vocab = model->config.padded_vocab_size;
    }
    writes(op, CE_PROBS, act(b, ACT_PROBS, -1), REGION_ROWS);
    writes(op, CE_LOSSES, act(b, ACT_LOSSES, -1), REGION_ROWS);
    reads(op, CE_LOGITS, act(b, ACT_LOGITS, -1), REGION_ROWS);
    reads_state(op, b->targets, REGION_ROWS);
    op = add_op(b, OP_LOSS_MEAN, -1, SPLIT_NONE, "mean");
    reads(op, LOSS_LOSSES, act(b, ACT_LOSSES, -1), REGION_ALL);
    writes_state(op, b->loss, REGION_ALL);
}

static void describe_backward(Builder *b) {
    const GPT2 *model = b->s->model;
    int L = model->config.num_layers, C = model->config.channels;
    b->phase = PHASE_BACKWARD;

    // dlogits (B,T,Vp) overwrite probs in place
    Ref probs = act(b, ACT_PROBS, -1);
    Op *op = add_op(b, OP_CROSSENTROPY_BWD, -1, SPLIT_ROWS, "softmax");
    if (op) {
        op->vocab = model->config.vocab_size;
        op->padded_vocab = model->config.padded_vocab_size;
    }
    writes(op, CE_BWD_DLOGITS, probs, REGION_ROWS);
    reads(op, CE_BWD_PROBS, probs, REGION_ROWS);
    reads_state(op, b->targets, REGION_ROWS);
    matmul_backward_ops(b, -1, "lm_head", dact(b, DACT_LNF, -1), probs, act(b, ACT_LNF, -1), param(b, PARAM_WTE, -1),
                        grad(b, PARAM_WTE, -1), NONE, C, model->config.padded_vocab_size, 1, NONE);
    layernorm_backward_ops(b, -1, "lnf", dact(b, DACT_RESIDUAL3, L - 1), NONE, dact(b, DACT_LNF, -1),
                           act(b, ACT_RESIDUAL3, L - 1), param(b, PARAM_LNFW, -1), act(b, ACT_LNF_MEAN, -1),
                           act(b, ACT_LNF_RSTD, -1), grad(b, PARAM_LNFW, -1), grad(b, PARAM_LNFB, -1), C);

    for (int l = L - 1; l >= 0; l--) {
        Ref residual = l == 0 ? act(b, ACT_ENCODED, -1) : act(b, ACT_RESIDUAL3, l - 1);
        Ref dresidual = l == 0 ? dact(b, DACT_ENCODED, -1) : dact(b, DACT_RESIDUAL3, l - 1);
        Ref dres3 = dact(b, DACT_RESIDUAL3, l), dres2 = dact(b, DACT_RESIDUAL2, l); // (B,T,C)
        // residual3 = residual2 + fcproj: dfcproj is dres3 itself
        matmul_backward_ops(b, l, "fcproj", dact(b, DACT_FCH_GELU, l), dres3, act(b, ACT_FCH_GELU, l),
                            param(b, PARAM_FCPROJW, l), grad(b, PARAM_FCPROJW, l), grad(b, PARAM_FCPROJB, l), 4 * C, C,
                            0, packed(b, PACKED_BACKWARD_INPUT, PACKED_FCPROJ, l));
        // dfch (B,T,4C)
        op = add_op(b, OP_GELU_BWD, l, SPLIT_ROWS, "fc");
        if (op) op->width = 4 * C;
        writes(op, GELU_BWD_DINP, dact(b, DACT_FCH, l), REGION_ROWS);
        reads(op, GELU_BWD_INP, act(b, ACT_FCH, l), REGION_ROWS);
        reads(op, GELU_BWD_DOUT, dact(b, DACT_FCH_GELU, l), REGION_ROWS);
        matmul_backward_ops(b, l, "fc", dact(b, DACT_LN2, l), dact(b, DACT_FCH, l), act(b, ACT_LN2, l),
                            param(b, PARAM_FCW, l), grad(b, PARAM_FCW, l), grad(b, PARAM_FCB, l), C, 4 * C, 0,
                            packed(b, PACKED_BACKWARD_INPUT, PACKED_FC, l));
        layernorm_backward_ops(b, l, "ln2", dres2, dres3, dact(b, DACT_LN2, l), act(b, ACT_RESIDUAL2, l),
                               param(b, PARAM_LN2W, l), act(b, ACT_LN2_MEAN, l), act(b, ACT_LN2_RSTD, l),
                               grad(b, PARAM_LN2W, l), grad(b, PARAM_LN2B, l), C);
        // residual2 = residual + attproj: dattproj is dres2 itself
        matmul_backward_ops(b, l, "attproj", dact(b, DACT_ATTY, l), dres2, act(b, ACT_ATTY, l),
                            param(b, PARAM_ATTPROJW, l), grad(b, PARAM_ATTPROJW, l), grad(b, PARAM_ATTPROJB, l), C, C,
                            0, packed(b, PACKED_BACKWARD_INPUT, PACKED_ATTPROJ, l));
        // dqkv (B,T,3C), per (sequence, head): a head's q, k and v columns of every token
        op = add_op(b, OP_ATTENTION_BWD, l, SPLIT_HEADS, "causal");
        if (op) op->cyclic = 1;
        writes(op, ATTENTION_BWD_DQKV, dact(b, DACT_QKV, l), REGION_SEQ_HEADS_QKV);
        reads(op, ATTENTION_BWD_DOUT, dact(b, DACT_ATTY, l), REGION_SEQ_HEADS);
        reads(op, ATTENTION_BWD_QKV, act(b, ACT_QKV, l), REGION_SEQ_HEADS_QKV);
        reads(op, ATTENTION_BWD_ATT, act(b, ACT_ATT, l), REGION_SEQ_HEADS);
        matmul_backward_ops(b, l, "qkv", dact(b, DACT_LN1, l), dact(b, DACT_QKV, l), act(b, ACT_LN1, l),
                            param(b, PARAM_QKVW, l), grad(b, PARAM_QKVW, l), grad(b, PARAM_QKVB, l), C, 3 * C, 0,
                            packed(b, PACKED_BACKWARD_INPUT, PACKED_QKV, l));
        layernorm_backward_ops(b, l, "ln1", dresidual, dres2, dact(b, DACT_LN1, l), residual, param(b, PARAM_LN1W, l),
                               act(b, ACT_LN1_MEAN, l), act(b, ACT_LN1_RSTD, l), grad(b, PARAM_LN1W, l),
                               grad(b, PARAM_LN1B, l), C);
    }
    // dwte (Vp,C) += per-token rows of dencoded (on top of the output head's
    // gradient), dwpe (maxT,C): column ranges of both
    op = add_op(b, OP_ENCODER_BWD, -1, SPLIT_CHANNELS, "wte+wpe");
    if (op) {
        op->width = C;
        op->split_channels = C;
    }
    writes(op, ENCODER_BWD_DWTE, grad(b, PARAM_WTE, -1), REGION_COLS);
    writes(op, ENCODER_BWD_DWPE, grad(b, PARAM_WPE, -1), REGION_WPE_ROWS);
    reads(op, ENCODER_BWD_DOUT, dact(b, DACT_ENCODED, -1), REGION_COLS);
    reads_state(op, b->inputs, REGION_ALL);
}

// One operation per tensor and layer, last layer first, so that a layer's
// update can start as soon as its own gradients are final.
static void describe_update(Builder *b) {
    GPT2 *model = b->s->model;
    b->phase = PHASE_UPDATE;
    for (int l = model->config.num_layers - 1; l >= -1; l--) {
        for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
            const ParamShape *shape = &model->param_shape[t];
            if ((l >= 0) != (shape->per_layer != 0)) continue;
            Op *op = add_op(b, OP_ADAMW, l, SPLIT_CHANNELS, shape->name);
            if (op) {
                op->split_channels = shape->rows;
                op->width = shape->cols;
                op->chunk_width = CHUNK_PARAM_ELEMENTS;
            }
            writes(op, ADAMW_PARAMS, param(b, t, l), REGION_PARAM_ROWS);
            reads(op, ADAMW_GRADS, grad(b, t, l), REGION_PARAM_ROWS);
            owns(op, ADAMW_M, param_slice(model, &model->m, t, l));
            owns(op, ADAMW_V, param_slice(model, &model->v, t, l));
        }
    }
}

// Columns of one head in a buffer that REGION_SEQ_HEADS(_QKV) cuts.
static int head_width(const StepDescription *s, const Buffer *buffer, RegionRule rule) {
    int parts = rule == REGION_SEQ_HEADS_QKV ? 3 : 1;
    return buffer->dim[2] / parts / s->model->config.num_heads;
}

// Dependency blocks cut a buffer's columns as its column-writing operations
// do: per head (attention backward's qkv gradient), per channel chunk (the
// encoder's backward pass into dwte and dwpe), per product column chunk (the
// language-model head's logits and input gradient), per tile (the outputs of
// the transformer blocks' products, their weight gradients).
static void derive_column_blocks(StepDescription *s) {
    for (int i = 0; i < s->n_ops; i++) {
        const Op *op = &s->ops[i];
        for (int a = 0; a < op->n_access; a++) {
            const Access *access = &op->access[a];
            Buffer *buffer = &s->buffers[access->buffer];
            if (!access->writes) continue;
            switch (access->rule) {
            case REGION_SEQ_HEADS:
            case REGION_SEQ_HEADS_QKV:
                buffer->column_blocks = COLUMNS_HEADS;
                buffer->head_width = head_width(s, buffer, access->rule);
                break;
            case REGION_COLS:
            case REGION_WPE_ROWS:
                buffer->column_blocks =
                    op->chunk_width == CHUNK_PRODUCT_COLUMNS ? COLUMNS_PRODUCT_CHUNKS : COLUMNS_CHANNEL_CHUNKS;
                break;
            case REGION_ROWS_TILE:
                buffer->column_blocks = COLUMNS_PRODUCT_TILES;
                break;
            case REGION_PARAM_TILE:
                buffer->column_blocks = COLUMNS_WEIGHT_TILES;
                break;
            default:
                break;
            }
        }
    }
}

// The rings of packed weights (one per product and layout): their shapes, and
// one allocation for all of them.
static int allocate_rings(Builder *b) {
    StepDescription *s = b->s;
    int L = s->model->config.num_layers, C = s->model->config.channels;
    // (IC, OC) of each product in units of C
    static const int in_c[NUM_PACKED_PRODUCTS] = {1, 1, 1, 4}, out_c[NUM_PACKED_PRODUCTS] = {3, 1, 4, 1};
    b->pack_slots = L < PACK_RING_SLOTS ? L : PACK_RING_SLOTS;
    size_t total = 0;
    for (int layout = 0; layout < NUM_PACKED_LAYOUTS; layout++)
        for (int p = 0; p < NUM_PACKED_PRODUCTS; p++) {
            int IC = in_c[p] * C, OC = out_c[p] * C, ring = packed_tensor(layout, p);
            // the packed operand is K x N: (IC, OC) forward, (OC, IC) for the input gradient
            int K = layout == PACKED_FORWARD ? IC : OC, N = layout == PACKED_FORWARD ? OC : IC;
            b->ring_columns[ring] = N;
            b->ring_slot_floats[ring] = matmul_packed_floats(K, N);
            b->ring_offset[ring] = total;
            total += (size_t)b->pack_slots * b->ring_slot_floats[ring];
        }
    s->packed_memory = zeroed_floats(total, &s->packed_allocation);
    s->packed_floats = total;
    return s->packed_memory ? 0 : -1;
}

int step_describe(StepDescription *s, GPT2 *model, AdamWSettings adamw, BatchSource *batches, int pack_weights) {
    memset(s, 0, sizeof(*s));
    char why[160];  // every size below is in bounds (model.h's limits) once this accepts them
    if (gpt2_state_bytes(&model->config, model->B, model->T, NULL, why, sizeof(why)) != 0) return -1;
    s->model = model;
    s->B = model->B;
    s->T = model->T;
    s->adamw = adamw;
    s->batches = batches;
    Builder b = {.s = s, .phase = PHASE_FORWARD, .n_tensors = NUM_PARAM_TENSORS};
    // packing needs a kernel set with a packed form
    if (pack_weights && matmul_packed_floats(model->config.channels, model->config.channels) > 0 &&
        allocate_rings(&b) != 0) {
        step_free(s);
        return -1;
    }
    if (NUM_ACT_TENSORS > b.n_tensors) b.n_tensors = NUM_ACT_TENSORS;
    if (NUM_DACT_TENSORS > b.n_tensors) b.n_tensors = NUM_DACT_TENSORS;
    size_t n_index = (size_t)NUM_BUFFER_KINDS * b.n_tensors * (model->config.num_layers + 1);
    b.buffer_index = malloc(n_index * sizeof(int));
    if (!b.buffer_index) {
        step_free(s);
        return -1;
    }
    for (size_t i = 0; i < n_index; i++) b.buffer_index[i] = -1;
    b.inputs = buf(&b, BUF_BATCH, 0, -1);
    b.targets = buf(&b, BUF_BATCH, 1, -1);
    b.loss = buf(&b, BUF_LOSS, 0, -1);

    describe_forward(&b);
    describe_backward(&b);
    describe_update(&b);
    free(b.buffer_index);
    if (b.failed) {
        step_free(s);
        return -1;
    }
    derive_column_blocks(s);
    return 0;
}

int step_add_comm(StepDescription *s, Phase phase, const char *label) {
    Builder b = {.s = s, .phase = phase};
    Op *op = add_op(&b, OP_COMM, -1, SPLIT_NONE, label);
    return op ? s->n_ops - 1 : -1;
}

int step_comm_access(StepDescription *s, int op, BufferKind kind, int tensor, int layer, int writes) {
    if (op < 0 || op >= s->n_ops || s->ops[op].kind != OP_COMM || s->ops[op].n_access == MAX_ACCESSES) return -1;
    int id = -1;
    for (int i = 0; i < s->n_buffers && id < 0; i++)
        if (s->buffers[i].kind == kind && s->buffers[i].tensor == tensor && s->buffers[i].layer == layer) id = i;
    if (id < 0) {
        if (kind != BUF_COMM) return -1;
        if (s->n_buffers == s->cap_buffers) {
            int cap = s->cap_buffers ? 2 * s->cap_buffers : 64;
            Buffer *grown = realloc(s->buffers, cap * sizeof(Buffer));
            if (!grown) return -1;
            s->buffers = grown;
            s->cap_buffers = cap;
        }
        s->buffers[s->n_buffers] = (Buffer){BUF_COMM, tensor, -1, {1, 1, 1}, COLUMNS_WHOLE, 0};
        id = s->n_buffers++;
    }
    Op *o = &s->ops[op];
    o->access[o->n_access++] = (Access){id, writes != 0, REGION_ALL};
    return 0;
}

void step_free(StepDescription *s) {
    free(s->ops);
    free(s->buffers);
    free(s->packed_allocation);
    s->ops = NULL;
    s->buffers = NULL;
    s->packed_allocation = NULL;
    s->packed_memory = NULL;
    s->packed_floats = 0;
    s->n_ops = s->n_buffers = 0;
}

// ----------------------------------------------------------------------------
// ranges and regions

void op_extents(const StepDescription *s, const Op *op, int *extent_b, int *extent_x) {
    *extent_b = 1;
    *extent_x = 1;
    switch (op->split) {
    case SPLIT_ROWS: *extent_b = s->B; *extent_x = s->T; break;
    case SPLIT_HEADS: *extent_b = s->B; *extent_x = s->model->config.num_heads; break;
    case SPLIT_CHANNELS: *extent_b = 1; *extent_x = op->split_channels; break;
    case SPLIT_NONE: *extent_b = 1; *extent_x = 1; break;
    }
}

Range op_full_range(const StepDescription *s, const Op *op) {
    int eb, ex;
    op_extents(s, op, &eb, &ex);
    return (Range){0, eb, 0, ex, 0, 0};
}

// A tile's columns [col0, col1) of a box (col1 == 0: all of them).
static void tile_columns(Box *box, Range r) {
    if (r.col1 <= 0) return;
    box->lo[2] = r.col0;
    box->hi[2] = r.col1;
}

int access_boxes(const StepDescription *s, const Access *a, Range r, Box boxes[MAX_BOXES]) {
    const Buffer *buffer = &s->buffers[a->buffer];
    Box box = {{0, 0, 0}, {buffer->dim[0], buffer->dim[1], buffer->dim[2]}};
    switch (a->rule) {
    case REGION_ALL:
        break;
    case REGION_ROWS:
        box.lo[0] = r.b0; box.hi[0] = r.b1;
        box.lo[1] = r.x0; box.hi[1] = r.x1;
        break;
    case REGION_ROWS_CAUSAL:
        box.lo[0] = r.b0; box.hi[0] = r.b1;
        box.hi[1] = r.x1;
        break;
    case REGION_SEQ_HEADS:
    case REGION_SEQ_HEADS_QKV: {
        // every token of the sequences; in each C-wide part (q, k, v), the
        // columns of heads [x0, x1)
        int parts = a->rule == REGION_SEQ_HEADS_QKV ? 3 : 1;
        int width = buffer->dim[2] / parts, per_head = head_width(s, buffer, a->rule);
        for (int p = 0; p < parts; p++) {
            boxes[p] = box;
            boxes[p].lo[0] = r.b0; boxes[p].hi[0] = r.b1;
            boxes[p].lo[2] = p * width + r.x0 * per_head;
            boxes[p].hi[2] = p * width + r.x1 * per_head;
        }
        return parts;
    }
    case REGION_PARAM_ROWS:
        box.lo[1] = r.x0; box.hi[1] = r.x1;
        break;
    case REGION_COLS:
        box.lo[2] = r.x0; box.hi[2] = r.x1;
        break;
    case REGION_WPE_ROWS:
        box.hi[1] = s->T;
        box.lo[2] = r.x0; box.hi[2] = r.x1;
        break;
    case REGION_ROWS_TILE:
        box.lo[0] = r.b0; box.hi[0] = r.b1;
        box.lo[1] = r.x0; box.hi[1] = r.x1;
        tile_columns(&box, r);
        break;
    case REGION_PARAM_TILE:
        box.lo[1] = r.x0; box.hi[1] = r.x1;
        tile_columns(&box, r);
        break;
    case REGION_TILE_COLS:
        tile_columns(&box, r);
        break;
    case REGION_PACKED_COLS:
        if (r.col1 > 0) {
            int panel = matmul_panel_columns();
            box.lo[2] = r.col0 / panel * panel;
            box.hi[2] = (r.col1 + panel - 1) / panel * panel;
            if (box.hi[2] > buffer->dim[2]) box.hi[2] = buffer->dim[2];
        }
        break;
    case REGION_BIAS_TILE:
        if (r.col1 > 0 && r.col0 > 0) return 0;
        box.lo[1] = r.x0; box.hi[1] = r.x1;
        break;
    }
    boxes[0] = box;
    return 1;
}

// ----------------------------------------------------------------------------
// running an operation on a range

// Calls fn on contiguous row ranges covering sequences [b0,b1) x tokens [x0,x1).
#define FOR_ROW_RANGES(s, r, r0, r1, body)                                        \
    do {                                                                          \
        if ((r).x0 == 0 && (r).x1 == (s)->T) {                                    \
            int r0 = (r).b0 * (s)->T, r1 = (r).b1 * (s)->T;                       \
            body;                                                                 \
        } else {                                                                  \
            for (int b_ = (r).b0; b_ < (r).b1; b_++) {                            \
                int r0 = b_ * (s)->T + (r).x0, r1 = b_ * (s)->T + (r).x1;         \
                body;                                                             \
            }                                                                     \
        }                                                                         \
    } while (0)

// The rows (as a row range) and output columns [*c0, *c1) of a matrix
// product's block: a row split names rows and, optionally, columns (col1 == 0:
// all `columns`); a channel split names columns, over every row.
static Range product_block(const StepDescription *s, const Op *op, Range r, int columns, int *c0, int *c1) {
    if (op->split == SPLIT_CHANNELS) {
        *c0 = r.x0;
        *c1 = r.x1;
        return (Range){0, s->B, 0, s->T, 0, 0};
    }
    *c0 = r.col1 > 0 ? r.col0 : 0;
    *c1 = r.col1 > 0 ? r.col1 : columns;
    return r;
}

void op_run(const StepDescription *s, const Op *op, Range r, int iteration, float *loss_out) {
    const GPT2 *m = s->model;
    int T = s->T, C = m->config.channels, NH = m->config.num_heads;
    int rows = s->B * s->T;
    float *const *a = op->arg;
    switch (op->kind) {
    case OP_LOAD_BATCH:
        batch_source_next(s->batches, m->inputs, m->targets);
        break;
    case OP_ENCODER_FWD:
        FOR_ROW_RANGES(s, r, r0, r1,
                       encoder_forward(a[ENCODER_OUT], m->inputs, a[ENCODER_WTE], a[ENCODER_WPE], r0, r1, T, C));
        break;
    case OP_LAYERNORM_FWD:
        FOR_ROW_RANGES(s, r, r0, r1,
                       layernorm_forward(a[LN_OUT], a[LN_MEAN], a[LN_RSTD], a[LN_INP], a[LN_WEIGHT], a[LN_BIAS], r0,
                                         r1, op->width));
        break;
    case OP_PACK_WEIGHT_FWD:
        matmul_pack_forward_weight(a[PACK_OUT], a[PACK_W], r.x0, r.x1, op->in_channels, op->out_channels);
        break;
    case OP_MATMUL_FWD: {
        int c0, c1;
        r = product_block(s, op, r, op->out_channels, &c0, &c1);
        if (a[MATMUL_W_PACKED])
            FOR_ROW_RANGES(s, r, r0, r1,
                           matmul_forward_packed(a[MATMUL_OUT], a[MATMUL_INP], a[MATMUL_W_PACKED], a[MATMUL_BIAS], r0,
                                                 r1, c0, c1, op->in_channels, op->out_channels));
        else
            FOR_ROW_RANGES(s, r, r0, r1,
                           matmul_forward_block(a[MATMUL_OUT], a[MATMUL_INP], a[MATMUL_W], a[MATMUL_BIAS], r0, r1, c0,
                                                c1, op->in_channels, op->out_channels));
        break;
    }
    case OP_ATTENTION_FWD:
        FOR_ROW_RANGES(s, r, r0, r1,
                       attention_forward(a[ATTENTION_OUT], a[ATTENTION_ATT], a[ATTENTION_QKV], r0, r1, T, C, NH));
        break;
    case OP_RESIDUAL_FWD:
        FOR_ROW_RANGES(s, r, r0, r1,
                       residual_forward(a[RESIDUAL_OUT], a[RESIDUAL_A], a[RESIDUAL_B], r0, r1, op->width));
        break;
    case OP_GELU_FWD:
        FOR_ROW_RANGES(s, r, r0, r1, gelu_forward(a[GELU_OUT], a[GELU_INP], r0, r1, op->width));
        break;
    case OP_CROSSENTROPY_FWD:
        FOR_ROW_RANGES(s, r, r0, r1,
                       crossentropy_softmax_forward(a[CE_PROBS], a[CE_LOSSES], a[CE_LOGITS], m->targets, r0, r1,
                                                    op->vocab, op->padded_vocab));
        break;
    case OP_LOSS_MEAN: {
        float loss = mean_loss(a[LOSS_LOSSES], rows);
        if (loss_out) *loss_out = loss;
        break;
    }
    case OP_CROSSENTROPY_BWD:
        FOR_ROW_RANGES(s, r, r0, r1,
                       crossentropy_softmax_backward(a[CE_BWD_DLOGITS], a[CE_BWD_PROBS], m->targets, 1.0f / rows, r0,
                                                     r1, op->vocab, op->padded_vocab));
        break;
    case OP_PACK_WEIGHT_BWD_INPUT:
        matmul_pack_backward_input_weight(a[PACK_OUT], a[PACK_W], r.x0, r.x1, op->in_channels, op->out_channels);
        break;
    case OP_MATMUL_BWD_INPUT: {
        int c0, c1;
        r = product_block(s, op, r, op->in_channels, &c0, &c1);
        if (a[MATMUL_BWD_INPUT_W_PACKED])
            FOR_ROW_RANGES(s, r, r0, r1,
                           matmul_backward_input_packed(a[MATMUL_BWD_INPUT_DINP], a[MATMUL_BWD_INPUT_DOUT],
                                                        a[MATMUL_BWD_INPUT_W_PACKED], r0, r1, c0, c1,
                                                        op->in_channels, op->out_channels));
        else
            FOR_ROW_RANGES(s, r, r0, r1,
                           matmul_backward_input_block(a[MATMUL_BWD_INPUT_DINP], a[MATMUL_BWD_INPUT_DOUT],
                                                       a[MATMUL_BWD_INPUT_W], r0, r1, c0, c1, op->in_channels,
                                                       op->out_channels));
        break;
    }
    case OP_MATMUL_BWD_WEIGHT: {
        // output channels [x0, x1) x input channels [i0, i1); dbias by the tiles of the first input channels
        int i0 = r.col1 > 0 ? r.col0 : 0, i1 = r.col1 > 0 ? r.col1 : op->in_channels;
        matmul_backward_weight_block(a[MATMUL_BWD_WEIGHT_DW], i0 == 0 ? a[MATMUL_BWD_WEIGHT_DBIAS] : NULL,
                                     a[MATMUL_BWD_WEIGHT_DOUT], a[MATMUL_BWD_WEIGHT_INP], r.x0, r.x1, i0, i1,
                                     rows, op->in_channels, op->out_channels);
        break;
    }
    case OP_LAYERNORM_BWD_INPUT:
        FOR_ROW_RANGES(s, r, r0, r1,
                       layernorm_backward_input(a[LN_BWD_DINP], a[LN_BWD_DRESIDUAL], a[LN_BWD_DOUT], a[LN_BWD_INP],
                                                a[LN_BWD_WEIGHT], a[LN_BWD_MEAN], a[LN_BWD_RSTD], r0, r1, op->width));
        break;
    case OP_LAYERNORM_BWD_PARAMS:
        layernorm_backward_params(a[LN_BWD_PARAMS_DWEIGHT], a[LN_BWD_PARAMS_DBIAS], a[LN_BWD_PARAMS_DOUT],
                                  a[LN_BWD_PARAMS_INP], a[LN_BWD_PARAMS_MEAN], a[LN_BWD_PARAMS_RSTD], r.x0, r.x1, rows,
                                  op->width);
        break;
    case OP_GELU_BWD:
        FOR_ROW_RANGES(s, r, r0, r1,
                       gelu_backward(a[GELU_BWD_DINP], a[GELU_BWD_INP], a[GELU_BWD_DOUT], r0, r1, op->width));
        break;
    case OP_ATTENTION_BWD:
        for (int b = r.b0; b < r.b1; b++)
            attention_backward(a[ATTENTION_BWD_DQKV], a[ATTENTION_BWD_DOUT], a[ATTENTION_BWD_QKV],
                               a[ATTENTION_BWD_ATT], b * NH + r.x0, b * NH + r.x1, T, C, NH);
        break;
    case OP_ENCODER_BWD:
        encoder_backward(a[ENCODER_BWD_DWTE], a[ENCODER_BWD_DWPE], a[ENCODER_BWD_DOUT], m->inputs, r.x0, r.x1, s->B,
                         T, C);
        break;
    case OP_ADAMW: {
        // parameter rows [x0, x1) of width `width`
        size_t e0 = (size_t)r.x0 * op->width, e1 = (size_t)r.x1 * op->width;
        const AdamWSettings *w = &s->adamw;
        adamw_update(a[ADAMW_PARAMS], a[ADAMW_GRADS], a[ADAMW_M], a[ADAMW_V], e0, e1, w->lr, w->beta1, w->beta2,
                     w->eps, w->weight_decay, iteration + 1);
        break;
    }
    case OP_COMM: // the distributed executor's (variants/mpi.c), through the description's callback
        if (s->comm) s->comm(s->comm_context, op, iteration);
        break;
    case NUM_OP_KINDS:
        break;
    }
}
