// The description of one training step and the dispatch of an operation's
// range to its kernel.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"
#include "step.h"

static const char *OP_KIND_NAMES[NUM_OP_KINDS] = {
    "load_batch", "encoder_fwd", "layernorm_fwd", "matmul_fwd", "attention_fwd",
    "residual_fwd", "gelu_fwd", "crossentropy_fwd", "loss_mean",
    "crossentropy_bwd", "matmul_bwd_input", "matmul_bwd_weight", "layernorm_bwd_input",
    "layernorm_bwd_params", "gelu_bwd", "attention_bwd", "encoder_bwd", "adamw",
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

static int find_or_add_buffer(StepDescription *s, BufferKind kind, int tensor, int layer) {
    for (int i = 0; i < s->n_buffers; i++) {
        const Buffer *b = &s->buffers[i];
        if (b->kind == kind && b->tensor == tensor && b->layer == layer) return i;
    }
    if (s->n_buffers == s->cap_buffers) {
        int cap = s->cap_buffers ? 2 * s->cap_buffers : 64;
        Buffer *grown = realloc(s->buffers, cap * sizeof(Buffer));
        if (!grown) return -1;
        s->buffers = grown;
        s->cap_buffers = cap;
    }
    const GPT2 *m = s->model;
    Buffer b = {kind, tensor, layer, {1, 1, 1}, 0};
    switch (kind) {
    case BUF_PARAM:
    case BUF_GRAD:
        b.dim[1] = m->param_shape[tensor].rows;
        b.dim[2] = m->param_shape[tensor].cols;
        // the encoder's backward pass writes column ranges of these gradients
        if (kind == BUF_GRAD && (tensor == PARAM_WTE || tensor == PARAM_WPE)) b.col_block = -1;
        break;
    case BUF_ACT:
    case BUF_DACT: {
        const ActShape *shape = kind == BUF_ACT ? &m->act_shape[tensor] : &m->dact_shape[tensor];
        b.dim[0] = s->B;
        b.dim[1] = s->T;
        b.dim[2] = (int)shape->width;
        // attention's backward pass writes one head's columns of the qkv gradient
        if (kind == BUF_DACT && tensor == DACT_QKV) b.col_block = m->config.channels / m->config.num_heads;
        // the language-model head writes column chunks of these (-1: the
        // executor's chunk width for a product's columns)
        if ((kind == BUF_ACT && tensor == ACT_LOGITS) || (kind == BUF_DACT && tensor == DACT_LNF)) b.col_block = -1;
        break;
    }
    case BUF_BATCH:
        b.dim[0] = s->B;
        b.dim[1] = s->T;
        break;
    case BUF_LOSS:
        break;
    }
    if (b.col_block == 0) b.col_block = b.dim[2];
    s->buffers[s->n_buffers] = b;
    return s->n_buffers++;
}

static Op *add_op(StepDescription *s, OpKind kind, Phase phase, int layer, SplitKind split,
                  const char *what) {
    if (s->n_ops == s->cap_ops) {
        int cap = s->cap_ops ? 2 * s->cap_ops : 256;
        Op *grown = realloc(s->ops, cap * sizeof(Op));
        if (!grown) return NULL;
        s->ops = grown;
        s->cap_ops = cap;
    }
    Op *op = &s->ops[s->n_ops++];
    memset(op, 0, sizeof(*op));
    op->kind = kind;
    op->phase = phase;
    op->layer = layer;
    op->split = split;
    op->param_tensor = -1;
    if (layer >= 0)
        snprintf(op->label, sizeof(op->label), "%s %s L%d", op_kind_name(kind), what, layer);
    else
        snprintf(op->label, sizeof(op->label), "%s %s", op_kind_name(kind), what);
    return op;
}

static void access(Op *op, int buffer, int writes, RegionRule rule, int parts) {
    Access *a = &op->access[op->n_access++];
    a->buffer = buffer;
    a->writes = writes;
    a->rule = rule;
    a->parts = parts;
}

typedef struct {
    StepDescription *s;
    int failed;
} Builder;

static int buf(Builder *b, BufferKind kind, int tensor, int layer) {
    const GPT2 *m = b->s->model;
    int per_layer = 1;
    if (kind == BUF_PARAM || kind == BUF_GRAD) per_layer = m->param_shape[tensor].per_layer;
    if (kind == BUF_ACT) per_layer = m->act_shape[tensor].per_layer;
    if (kind == BUF_DACT) per_layer = m->dact_shape[tensor].per_layer;
    int id = find_or_add_buffer(b->s, kind, tensor, per_layer ? layer : -1);
    if (id < 0) b->failed = 1;
    return id < 0 ? 0 : id;
}

// A tensor reference: which buffer and the pointer to its layer's slice.
typedef struct {
    int buffer;
    float *ptr;
} Ref;

static Ref act(Builder *b, int t, int l) { return (Ref){buf(b, BUF_ACT, t, l), act_slice(b->s->model, t, l)}; }
static Ref dact(Builder *b, int t, int l) { return (Ref){buf(b, BUF_DACT, t, l), dact_slice(b->s->model, t, l)}; }
static Ref param(Builder *b, int t, int l) {
    return (Ref){buf(b, BUF_PARAM, t, l), param_slice(b->s->model, &b->s->model->params, t, l)};
}
static Ref grad(Builder *b, int t, int l) {
    return (Ref){buf(b, BUF_GRAD, t, l), param_slice(b->s->model, &b->s->model->grads, t, l)};
}

// A product is split along rows (chunks of sequences x tokens), or, with
// by_columns, along its output columns over every row: the language-model
// head's weight is 150 times its input, and each row chunk would stream all
// of it from memory again.
static void matmul_forward_op(Builder *b, int layer, const char *what, Ref out, Ref inp, Ref w,
                              const Ref *bias, int IC, int OC, int by_columns) {
    Op *op = add_op(b->s, OP_MATMUL_FWD, PHASE_FORWARD, layer, by_columns ? SPLIT_CHANNELS : SPLIT_ROWS, what);
    if (!op) { b->failed = 1; return; }
    op->out[0] = out.ptr;
    op->in[0] = inp.ptr;
    op->in[1] = w.ptr;
    op->in[2] = bias ? bias->ptr : NULL;
    op->n = IC;
    op->k = OC;
    if (by_columns) {
        op->extent = OC;
        access(op, inp.buffer, 0, REGION_ALL, 1);
        access(op, w.buffer, 0, REGION_PARAM_ROWS, 1);
        if (bias) access(op, bias->buffer, 0, REGION_PARAM_ROWS, 1);
        access(op, out.buffer, 1, REGION_COLS, 1);
        return;
    }
    op->columns = OC;
    access(op, inp.buffer, 0, REGION_ROWS, 1);
    access(op, w.buffer, 0, REGION_ALL, 1);
    if (bias) access(op, bias->buffer, 0, REGION_ALL, 1);
    access(op, out.buffer, 1, REGION_ROWS, 1);
}

static void matmul_backward_ops(Builder *b, int layer, const char *what, Ref dinp, Ref dout,
                                Ref inp, Ref w, Ref dw, const Ref *dbias, int IC, int OC, int by_columns) {
    Op *op = add_op(b->s, OP_MATMUL_BWD_INPUT, PHASE_BACKWARD, layer, by_columns ? SPLIT_CHANNELS : SPLIT_ROWS,
                    what);
    if (!op) { b->failed = 1; return; }
    op->out[0] = dinp.ptr;
    op->in[0] = dout.ptr;
    op->in[1] = w.ptr;
    op->n = IC;
    op->k = OC;
    if (by_columns) {
        op->extent = IC;
        access(op, dout.buffer, 0, REGION_ALL, 1);
        access(op, w.buffer, 0, REGION_COLS, 1);
        access(op, dinp.buffer, 1, REGION_COLS, 1);
    } else {
        op->columns = IC;
        access(op, dout.buffer, 0, REGION_ROWS, 1);
        access(op, w.buffer, 0, REGION_ALL, 1);
        access(op, dinp.buffer, 1, REGION_ROWS, 1);
    }

    op = add_op(b->s, OP_MATMUL_BWD_WEIGHT, PHASE_BACKWARD, layer, SPLIT_CHANNELS, what);
    if (!op) { b->failed = 1; return; }
    op->out[0] = dw.ptr;
    op->out[1] = dbias ? dbias->ptr : NULL;
    op->in[0] = dout.ptr;
    op->in[1] = inp.ptr;
    op->n = IC;
    op->k = OC;
    op->extent = OC;
    access(op, dout.buffer, 0, REGION_COLS, 1);
    access(op, inp.buffer, 0, REGION_ALL, 1);
    access(op, dw.buffer, 1, REGION_PARAM_ROWS, 1);
    if (dbias) access(op, dbias->buffer, 1, REGION_PARAM_ROWS, 1);
}

static void layernorm_forward_op(Builder *b, int layer, const char *what, Ref out, Ref mean,
                                 Ref rstd, Ref inp, Ref w, Ref bias, int C) {
    Op *op = add_op(b->s, OP_LAYERNORM_FWD, PHASE_FORWARD, layer, SPLIT_ROWS, what);
    if (!op) { b->failed = 1; return; }
    op->out[0] = out.ptr;
    op->out[1] = mean.ptr;
    op->out[2] = rstd.ptr;
    op->in[0] = inp.ptr;
    op->in[1] = w.ptr;
    op->in[2] = bias.ptr;
    op->n = C;
    access(op, inp.buffer, 0, REGION_ROWS, 1);
    access(op, w.buffer, 0, REGION_ALL, 1);
    access(op, bias.buffer, 0, REGION_ALL, 1);
    access(op, out.buffer, 1, REGION_ROWS, 1);
    access(op, mean.buffer, 1, REGION_ROWS, 1);
    access(op, rstd.buffer, 1, REGION_ROWS, 1);
}

// dinp = dresidual (may be absent) + LayerNorm's input gradient; then the
// parameter gradients as a separate, channel-split reduction over rows.
static void layernorm_backward_ops(Builder *b, int layer, const char *what, Ref dinp,
                                   const Ref *dresidual, Ref dout, Ref inp, Ref w, Ref mean,
                                   Ref rstd, Ref dw, Ref dbias, int C) {
    Op *op = add_op(b->s, OP_LAYERNORM_BWD_INPUT, PHASE_BACKWARD, layer, SPLIT_ROWS, what);
    if (!op) { b->failed = 1; return; }
    op->out[0] = dinp.ptr;
    op->in[0] = dout.ptr;
    op->in[1] = inp.ptr;
    op->in[2] = w.ptr;
    op->in[3] = mean.ptr;
    op->in[4] = rstd.ptr;
    op->in[5] = dresidual ? dresidual->ptr : NULL;
    op->n = C;
    access(op, dout.buffer, 0, REGION_ROWS, 1);
    access(op, inp.buffer, 0, REGION_ROWS, 1);
    access(op, w.buffer, 0, REGION_ALL, 1);
    access(op, mean.buffer, 0, REGION_ROWS, 1);
    access(op, rstd.buffer, 0, REGION_ROWS, 1);
    if (dresidual) access(op, dresidual->buffer, 0, REGION_ROWS, 1);
    access(op, dinp.buffer, 1, REGION_ROWS, 1);

    op = add_op(b->s, OP_LAYERNORM_BWD_PARAMS, PHASE_BACKWARD, layer, SPLIT_CHANNELS, what);
    if (!op) { b->failed = 1; return; }
    op->out[0] = dw.ptr;
    op->out[1] = dbias.ptr;
    op->in[0] = dout.ptr;
    op->in[1] = inp.ptr;
    op->in[2] = mean.ptr;
    op->in[3] = rstd.ptr;
    op->n = C;
    op->extent = C;
    access(op, dout.buffer, 0, REGION_COLS, 1);
    access(op, inp.buffer, 0, REGION_COLS, 1);
    access(op, mean.buffer, 0, REGION_ALL, 1);
    access(op, rstd.buffer, 0, REGION_ALL, 1);
    access(op, dw.buffer, 1, REGION_PARAM_ROWS, 1);
    access(op, dbias.buffer, 1, REGION_PARAM_ROWS, 1);
}

static void rows_op(Builder *b, OpKind kind, Phase phase, int layer, const char *what, Ref out,
                    Ref in0, const Ref *in1, int width) {
    Op *op = add_op(b->s, kind, phase, layer, SPLIT_ROWS, what);
    if (!op) { b->failed = 1; return; }
    op->out[0] = out.ptr;
    op->in[0] = in0.ptr;
    op->in[1] = in1 ? in1->ptr : NULL;
    op->n = width;
    access(op, in0.buffer, 0, REGION_ROWS, 1);
    if (in1) access(op, in1->buffer, 0, REGION_ROWS, 1);
    access(op, out.buffer, 1, REGION_ROWS, 1);
}

int step_describe(StepDescription *s, GPT2 *model, AdamWSettings adamw, BatchSource *batches) {
    memset(s, 0, sizeof(*s));
    char why[160]; if (gpt2_state_bytes(&model->config, model->B, model->T, NULL, why, sizeof(why)) != 0) return -1; // sizes in bounds (model.h)
    s->model = model;
    s->B = model->B;
    s->T = model->T;
    s->adamw = adamw;
    s->batches = batches;
    Builder bld = {s, 0};
    Builder *b = &bld;
    const GPT2Config *c = &model->config;
    int L = c->num_layers, C = c->channels, V = c->vocab_size, Vp = c->padded_vocab_size;
    int inputs = buf(b, BUF_BATCH, 0, -1), targets = buf(b, BUF_BATCH, 1, -1);
    int loss = buf(b, BUF_LOSS, 0, -1);

    Op *op = add_op(s, OP_LOAD_BATCH, PHASE_FORWARD, -1, SPLIT_NONE, "inputs+targets");
    if (!op) return -1;
    access(op, inputs, 1, REGION_ALL, 1);
    access(op, targets, 1, REGION_ALL, 1);

    // ---------------- forward
    Ref encoded = act(b, ACT_ENCODED, -1);
    op = add_op(s, OP_ENCODER_FWD, PHASE_FORWARD, -1, SPLIT_ROWS, "wte+wpe");
    if (!op) return -1;
    op->out[0] = encoded.ptr;
    op->in[0] = param(b, PARAM_WTE, -1).ptr;
    op->in[1] = param(b, PARAM_WPE, -1).ptr;
    op->n = C;
    access(op, inputs, 0, REGION_ROWS, 1);
    access(op, param(b, PARAM_WTE, -1).buffer, 0, REGION_ALL, 1);
    access(op, param(b, PARAM_WPE, -1).buffer, 0, REGION_ALL, 1);
    access(op, encoded.buffer, 1, REGION_ROWS, 1);

    for (int l = 0; l < L; l++) {
        Ref residual = l == 0 ? encoded : act(b, ACT_RESIDUAL3, l - 1);
        Ref qkvb = param(b, PARAM_QKVB, l), attprojb = param(b, PARAM_ATTPROJB, l);
        Ref fcb = param(b, PARAM_FCB, l), fcprojb = param(b, PARAM_FCPROJB, l);
        layernorm_forward_op(b, l, "ln1", act(b, ACT_LN1, l), act(b, ACT_LN1_MEAN, l),
                             act(b, ACT_LN1_RSTD, l), residual, param(b, PARAM_LN1W, l),
                             param(b, PARAM_LN1B, l), C);
        matmul_forward_op(b, l, "qkv", act(b, ACT_QKV, l), act(b, ACT_LN1, l),
                          param(b, PARAM_QKVW, l), &qkvb, C, 3 * C, 0);
        op = add_op(s, OP_ATTENTION_FWD, PHASE_FORWARD, l, SPLIT_ROWS, "causal");
        if (!op) return -1;
        op->out[0] = act(b, ACT_ATTY, l).ptr;
        op->out[1] = act(b, ACT_ATT, l).ptr;
        op->in[0] = act(b, ACT_QKV, l).ptr;
        op->n = C;
        access(op, act(b, ACT_QKV, l).buffer, 0, REGION_ROWS_CAUSAL, 1);
        access(op, act(b, ACT_ATTY, l).buffer, 1, REGION_ROWS, 1);
        access(op, act(b, ACT_ATT, l).buffer, 1, REGION_ROWS, 1);
        matmul_forward_op(b, l, "attproj", act(b, ACT_ATTPROJ, l), act(b, ACT_ATTY, l),
                          param(b, PARAM_ATTPROJW, l), &attprojb, C, C, 0);
        Ref attproj = act(b, ACT_ATTPROJ, l);
        rows_op(b, OP_RESIDUAL_FWD, PHASE_FORWARD, l, "residual2", act(b, ACT_RESIDUAL2, l),
                residual, &attproj, C);
        layernorm_forward_op(b, l, "ln2", act(b, ACT_LN2, l), act(b, ACT_LN2_MEAN, l),
                             act(b, ACT_LN2_RSTD, l), act(b, ACT_RESIDUAL2, l),
                             param(b, PARAM_LN2W, l), param(b, PARAM_LN2B, l), C);
        matmul_forward_op(b, l, "fc", act(b, ACT_FCH, l), act(b, ACT_LN2, l),
                          param(b, PARAM_FCW, l), &fcb, C, 4 * C, 0);
        rows_op(b, OP_GELU_FWD, PHASE_FORWARD, l, "fc", act(b, ACT_FCH_GELU, l), act(b, ACT_FCH, l),
                NULL, 4 * C);
        matmul_forward_op(b, l, "fcproj", act(b, ACT_FCPROJ, l), act(b, ACT_FCH_GELU, l),
                          param(b, PARAM_FCPROJW, l), &fcprojb, 4 * C, C, 0);
        Ref fcproj = act(b, ACT_FCPROJ, l);
        rows_op(b, OP_RESIDUAL_FWD, PHASE_FORWARD, l, "residual3", act(b, ACT_RESIDUAL3, l),
                act(b, ACT_RESIDUAL2, l), &fcproj, C);
    }
    Ref last = act(b, ACT_RESIDUAL3, L - 1);
    layernorm_forward_op(b, -1, "lnf", act(b, ACT_LNF, -1), act(b, ACT_LNF_MEAN, -1),
                         act(b, ACT_LNF_RSTD, -1), last, param(b, PARAM_LNFW, -1),
                         param(b, PARAM_LNFB, -1), C);
    matmul_forward_op(b, -1, "lm_head", act(b, ACT_LOGITS, -1), act(b, ACT_LNF, -1),
                      param(b, PARAM_WTE, -1), NULL, C, Vp, 1);
    Ref probs = act(b, ACT_PROBS, -1), losses = act(b, ACT_LOSSES, -1);
    op = add_op(s, OP_CROSSENTROPY_FWD, PHASE_FORWARD, -1, SPLIT_ROWS, "softmax");
    if (!op) return -1;
    op->out[0] = probs.ptr;
    op->out[1] = losses.ptr;
    op->in[0] = act(b, ACT_LOGITS, -1).ptr;
    op->n = V;
    op->k = Vp;
    access(op, act(b, ACT_LOGITS, -1).buffer, 0, REGION_ROWS, 1);
    access(op, targets, 0, REGION_ROWS, 1);
    access(op, probs.buffer, 1, REGION_ROWS, 1);
    access(op, losses.buffer, 1, REGION_ROWS, 1);
    op = add_op(s, OP_LOSS_MEAN, PHASE_FORWARD, -1, SPLIT_NONE, "mean");
    if (!op) return -1;
    op->in[0] = losses.ptr;
    access(op, losses.buffer, 0, REGION_ALL, 1);
    access(op, loss, 1, REGION_ALL, 1);

    // ---------------- backward
    // dlogits overwrite probs in place
    op = add_op(s, OP_CROSSENTROPY_BWD, PHASE_BACKWARD, -1, SPLIT_ROWS, "softmax");
    if (!op) return -1;
    op->out[0] = probs.ptr;
    op->in[0] = probs.ptr;
    op->n = V;
    op->k = Vp;
    access(op, targets, 0, REGION_ROWS, 1);
    access(op, probs.buffer, 1, REGION_ROWS, 1);
    matmul_backward_ops(b, -1, "lm_head", dact(b, DACT_LNF, -1), probs, act(b, ACT_LNF, -1),
                        param(b, PARAM_WTE, -1), grad(b, PARAM_WTE, -1), NULL, C, Vp, 1);
    layernorm_backward_ops(b, -1, "lnf", dact(b, DACT_RESIDUAL3, L - 1), NULL, dact(b, DACT_LNF, -1),
                           last, param(b, PARAM_LNFW, -1), act(b, ACT_LNF_MEAN, -1),
                           act(b, ACT_LNF_RSTD, -1), grad(b, PARAM_LNFW, -1),
                           grad(b, PARAM_LNFB, -1), C);
    for (int l = L - 1; l >= 0; l--) {
        Ref residual = l == 0 ? encoded : act(b, ACT_RESIDUAL3, l - 1);
        Ref dresidual = l == 0 ? dact(b, DACT_ENCODED, -1) : dact(b, DACT_RESIDUAL3, l - 1);
        Ref dres3 = dact(b, DACT_RESIDUAL3, l), dres2 = dact(b, DACT_RESIDUAL2, l);
        Ref dfcprojb = grad(b, PARAM_FCPROJB, l), dfcb = grad(b, PARAM_FCB, l);
        Ref dattprojb = grad(b, PARAM_ATTPROJB, l), dqkvb = grad(b, PARAM_QKVB, l);
        // residual3 = residual2 + fcproj: dfcproj is dres3 itself
        matmul_backward_ops(b, l, "fcproj", dact(b, DACT_FCH_GELU, l), dres3, act(b, ACT_FCH_GELU, l),
                            param(b, PARAM_FCPROJW, l), grad(b, PARAM_FCPROJW, l), &dfcprojb, 4 * C, C, 0);
        Ref dgelu = dact(b, DACT_FCH_GELU, l);
        rows_op(b, OP_GELU_BWD, PHASE_BACKWARD, l, "fc", dact(b, DACT_FCH, l), act(b, ACT_FCH, l),
                &dgelu, 4 * C);
        matmul_backward_ops(b, l, "fc", dact(b, DACT_LN2, l), dact(b, DACT_FCH, l), act(b, ACT_LN2, l),
                            param(b, PARAM_FCW, l), grad(b, PARAM_FCW, l), &dfcb, C, 4 * C, 0);
        layernorm_backward_ops(b, l, "ln2", dres2, &dres3, dact(b, DACT_LN2, l), act(b, ACT_RESIDUAL2, l),
                               param(b, PARAM_LN2W, l), act(b, ACT_LN2_MEAN, l), act(b, ACT_LN2_RSTD, l),
                               grad(b, PARAM_LN2W, l), grad(b, PARAM_LN2B, l), C);
        // residual2 = residual + attproj: dattproj is dres2 itself
        matmul_backward_ops(b, l, "attproj", dact(b, DACT_ATTY, l), dres2, act(b, ACT_ATTY, l),
                            param(b, PARAM_ATTPROJW, l), grad(b, PARAM_ATTPROJW, l), &dattprojb, C, C, 0);
        op = add_op(s, OP_ATTENTION_BWD, PHASE_BACKWARD, l, SPLIT_HEADS, "causal");
        if (!op) return -1;
        op->out[0] = dact(b, DACT_QKV, l).ptr;
        op->in[0] = dact(b, DACT_ATTY, l).ptr;
        op->in[1] = act(b, ACT_QKV, l).ptr;
        op->in[2] = act(b, ACT_ATT, l).ptr;
        op->n = C;
        access(op, dact(b, DACT_ATTY, l).buffer, 0, REGION_SEQ_HEADS, 1);
        access(op, act(b, ACT_QKV, l).buffer, 0, REGION_SEQ_HEADS, 3);
        access(op, act(b, ACT_ATT, l).buffer, 0, REGION_SEQ_HEADS, 1);
        access(op, dact(b, DACT_QKV, l).buffer, 1, REGION_SEQ_HEADS, 3);
        matmul_backward_ops(b, l, "qkv", dact(b, DACT_LN1, l), dact(b, DACT_QKV, l), act(b, ACT_LN1, l),
                            param(b, PARAM_QKVW, l), grad(b, PARAM_QKVW, l), &dqkvb, C, 3 * C, 0);
        layernorm_backward_ops(b, l, "ln1", dresidual, &dres2, dact(b, DACT_LN1, l), residual,
                               param(b, PARAM_LN1W, l), act(b, ACT_LN1_MEAN, l), act(b, ACT_LN1_RSTD, l),
                               grad(b, PARAM_LN1W, l), grad(b, PARAM_LN1B, l), C);
    }
    op = add_op(s, OP_ENCODER_BWD, PHASE_BACKWARD, -1, SPLIT_CHANNELS, "wte+wpe");
    if (!op) return -1;
    op->out[0] = grad(b, PARAM_WTE, -1).ptr;
    op->out[1] = grad(b, PARAM_WPE, -1).ptr;
    op->in[0] = dact(b, DACT_ENCODED, -1).ptr;
    op->n = C;
    op->extent = C;
    access(op, dact(b, DACT_ENCODED, -1).buffer, 0, REGION_COLS, 1);
    access(op, inputs, 0, REGION_ALL, 1);
    access(op, grad(b, PARAM_WTE, -1).buffer, 1, REGION_COLS, 1);
    access(op, grad(b, PARAM_WPE, -1).buffer, 1, REGION_WPE_ROWS, 1);

    // ---------------- update: one operation per tensor and layer, so that a
    // layer's update can start as soon as its own gradients are final
    for (int l = L - 1; l >= -1; l--) {
        for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
            const ParamShape *shape = &model->param_shape[t];
            if ((l >= 0) != (shape->per_layer != 0)) continue;
            op = add_op(s, OP_ADAMW, PHASE_UPDATE, l, SPLIT_CHANNELS, shape->name);
            if (!op) return -1;
            op->param_tensor = t;
            op->extent = shape->rows;
            op->n = shape->cols;
            access(op, grad(b, t, l).buffer, 0, REGION_PARAM_ROWS, 1);
            access(op, param(b, t, l).buffer, 1, REGION_PARAM_ROWS, 1);
        }
    }
    return bld.failed ? -1 : 0;
}

void step_free(StepDescription *s) {
    free(s->ops);
    free(s->buffers);
    s->ops = NULL;
    s->buffers = NULL;
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
    case SPLIT_CHANNELS: *extent_b = 1; *extent_x = op->extent; break;
    case SPLIT_NONE: *extent_b = 1; *extent_x = 1; break;
    }
}

Range op_full_range(const StepDescription *s, const Op *op) {
    int eb, ex;
    op_extents(s, op, &eb, &ex);
    return (Range){0, eb, 0, ex, 0, 0};
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
    case REGION_SEQ_HEADS: {
        // every token of the sequences; in each C-wide part (q, k, v), the
        // columns of heads [x0, x1)
        int width = buffer->dim[2] / a->parts;
        int per_head = width / s->model->config.num_heads;
        for (int p = 0; p < a->parts; p++) {
            boxes[p] = box;
            boxes[p].lo[0] = r.b0; boxes[p].hi[0] = r.b1;
            boxes[p].lo[2] = p * width + r.x0 * per_head;
            boxes[p].hi[2] = p * width + r.x1 * per_head;
        }
        return a->parts;
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
// product's block: a row split names rows and, optionally, columns (c1 == 0:
// all `columns`); a channel split names columns, over every row.
static Range product_block(const StepDescription *s, const Op *op, Range r, int columns, int *c0, int *c1) {
    if (op->split == SPLIT_CHANNELS) {
        *c0 = r.x0;
        *c1 = r.x1;
        return (Range){0, s->B, 0, s->T, 0, 0};
    }
    *c0 = r.c1 > 0 ? r.c0 : 0;
    *c1 = r.c1 > 0 ? r.c1 : columns;
    return r;
}

void op_run(const StepDescription *s, const Op *op, Range r, int iteration, float *loss_out) {
    const GPT2 *m = s->model;
    int T = s->T, C = m->config.channels, NH = m->config.num_heads;
    int rows = s->B * s->T;
    switch (op->kind) {
    case OP_LOAD_BATCH:
        batch_source_next(s->batches, m->inputs, m->targets);
        break;
    case OP_ENCODER_FWD:
        FOR_ROW_RANGES(s, r, r0, r1, encoder_forward(op->out[0], m->inputs, op->in[0], op->in[1], r0, r1, T, C));
        break;
    case OP_LAYERNORM_FWD:
        FOR_ROW_RANGES(s, r, r0, r1,
                       layernorm_forward(op->out[0], op->out[1], op->out[2], op->in[0], op->in[1], op->in[2],
                                         r0, r1, op->n));
        break;
    case OP_MATMUL_FWD: {
        int c0, c1;
        r = product_block(s, op, r, op->k, &c0, &c1);
        FOR_ROW_RANGES(s, r, r0, r1,
                       matmul_forward_block(op->out[0], op->in[0], op->in[1], op->in[2], r0, r1, c0, c1, op->n, op->k));
        break;
    }
    case OP_ATTENTION_FWD:
        FOR_ROW_RANGES(s, r, r0, r1, attention_forward(op->out[0], op->out[1], op->in[0], r0, r1, T, C, NH));
        break;
    case OP_RESIDUAL_FWD:
        FOR_ROW_RANGES(s, r, r0, r1, residual_forward(op->out[0], op->in[0], op->in[1], r0, r1, op->n));
        break;
    case OP_GELU_FWD:
        FOR_ROW_RANGES(s, r, r0, r1, gelu_forward(op->out[0], op->in[0], r0, r1, op->n));
        break;
    case OP_CROSSENTROPY_FWD:
        FOR_ROW_RANGES(s, r, r0, r1,
                       crossentropy_softmax_forward(op->out[0], op->out[1], op->in[0], m->targets, r0, r1,
                                                    op->n, op->k));
        break;
    case OP_LOSS_MEAN: {
        float loss = mean_loss(op->in[0], rows);
        if (loss_out) *loss_out = loss;
        break;
    }
    case OP_CROSSENTROPY_BWD:
        FOR_ROW_RANGES(s, r, r0, r1,
                       crossentropy_softmax_backward(op->out[0], op->in[0], m->targets, 1.0f / rows, r0, r1,
                                                     op->n, op->k));
        break;
    case OP_MATMUL_BWD_INPUT: {
        int c0, c1;
        r = product_block(s, op, r, op->n, &c0, &c1);
        FOR_ROW_RANGES(s, r, r0, r1,
                       matmul_backward_input_block(op->out[0], op->in[0], op->in[1], r0, r1, c0, c1, op->n, op->k));
        break;
    }
    case OP_MATMUL_BWD_WEIGHT:
        matmul_backward_weight_channels(op->out[0], op->out[1], op->in[0], op->in[1], r.x0, r.x1, rows,
                                        op->n, op->k);
        break;
    case OP_LAYERNORM_BWD_INPUT:
        FOR_ROW_RANGES(s, r, r0, r1,
                       layernorm_backward_input(op->out[0], op->in[5], op->in[0], op->in[1], op->in[2],
                                                op->in[3], op->in[4], r0, r1, op->n));
        break;
    case OP_LAYERNORM_BWD_PARAMS:
        layernorm_backward_params(op->out[0], op->out[1], op->in[0], op->in[1], op->in[2], op->in[3], r.x0,
                                  r.x1, rows, op->n);
        break;
    case OP_GELU_BWD:
        FOR_ROW_RANGES(s, r, r0, r1, gelu_backward(op->out[0], op->in[0], op->in[1], r0, r1, op->n));
        break;
    case OP_ATTENTION_BWD:
        for (int b = r.b0; b < r.b1; b++)
            attention_backward(op->out[0], op->in[0], op->in[1], op->in[2], b * NH + r.x0, b * NH + r.x1, T, C, NH);
        break;
    case OP_ENCODER_BWD:
        encoder_backward(op->out[0], op->out[1], op->in[0], m->inputs, r.x0, r.x1, s->B, T, C);
        break;
    case OP_ADAMW: {
        int t = op->param_tensor, layer = op->layer;
        size_t e0 = (size_t)r.x0 * op->n, e1 = (size_t)r.x1 * op->n;
        const AdamWSettings *a = &s->adamw;
        adamw_update(param_slice(m, &m->params, t, layer), param_slice(m, &m->grads, t, layer),
                     param_slice(m, &m->m, t, layer), param_slice(m, &m->v, t, layer), e0, e1, a->lr,
                     a->beta1, a->beta2, a->eps, a->weight_decay, iteration + 1);
        break;
    }
    case NUM_OP_KINDS:
        break;
    }
}
