// FLOP and compulsory-byte counts of the step's operations; the formulas and
// their conventions are in traffic.h, and tests/test_traffic.c checks them
// against counts made by hand.
#include "gemm.h"
#include "traffic.h"

#define F 4 // bytes per float and per token id

// sum over t in [x0, x1) of (t + 1): the keys a causal query at token t sees
static int64_t causal_pairs(int64_t x0, int64_t x1) { return (x1 * (x1 + 1) - x0 * (x0 + 1)) / 2; }

Traffic op_traffic(const StepDescription *s, const Op *op, Range r) {
    const GPT2Config *c = &s->model->config;
    const int64_t B = s->B, T = s->T, C = c->channels, NH = c->num_heads, hs = C / NH;
    const int64_t N = B * T;
    // a range's sizes under each split rule (step.h)
    const int64_t nb = r.b1 - r.b0, X = r.x1 - r.x0;
    const int64_t R = nb * X;     // SPLIT_ROWS: rows of the range
    const int64_t K = X;          // SPLIT_CHANNELS: channels (or parameter rows)
    const int64_t W = op->width;  // row kernels: floats per row; AdamW: per parameter row
    Traffic t = {0, 0, 0};
    switch (op->kind) {
    case OP_LOAD_BATCH:
        t.bytes_written = 2 * N * F;
        break;
    case OP_ENCODER_FWD:
        t.flops = R * C;
        t.bytes_read = (R + R * C + X * C) * F;
        t.bytes_written = R * C * F;
        break;
    case OP_LAYERNORM_FWD:
        t.flops = R * (8 * C + 5);
        t.bytes_read = (R * C + 2 * C) * F;
        t.bytes_written = (R * C + 2 * R) * F;
        break;
    case OP_PACK_WEIGHT_FWD:
    case OP_PACK_WEIGHT_BWD_INPUT: {
        // K columns of the packed operand, each `depth` floats (the product's reduction length);
        // the chunk that ends at the last column also writes the padding to the panel width
        int forward = op->kind == OP_PACK_WEIGHT_FWD;
        int64_t depth = forward ? op->in_channels : op->out_channels, columns = op->split_channels;
        int64_t padded = (int64_t)matmul_packed_floats((int)depth, (int)columns) / depth;
        t.bytes_read = depth * K * F;
        t.bytes_written = depth * (K + (r.x1 == columns ? padded - columns : 0)) * F;
        break;
    }
    case OP_MATMUL_FWD: {
        // split along rows: R rows x all OC columns; along channels: all N rows x K columns
        int64_t IC = op->in_channels, bias = op->arg[MATMUL_BIAS] != NULL;
        int64_t rows = op->split == SPLIT_CHANNELS ? N : R, OC = op->split == SPLIT_CHANNELS ? K : op->out_channels;
        // the weight, or its packed form (the columns padded to the panel width)
        int64_t weight = op->arg[MATMUL_W_PACKED] ? (int64_t)matmul_packed_floats((int)IC, (int)OC) : OC * IC;
        t.flops = 2 * rows * IC * OC;
        t.bytes_read = (rows * IC + weight + bias * OC) * F;
        t.bytes_written = rows * OC * F;
        break;
    }
    case OP_MATMUL_BWD_INPUT: {
        // split along rows: R rows x all IC columns; along channels: all N rows x K columns
        int64_t OC = op->out_channels;
        int64_t rows = op->split == SPLIT_CHANNELS ? N : R, IC = op->split == SPLIT_CHANNELS ? K : op->in_channels;
        int64_t weight =
            op->arg[MATMUL_BWD_INPUT_W_PACKED] ? (int64_t)matmul_packed_floats((int)OC, (int)IC) : OC * IC;
        t.flops = 2 * rows * IC * OC;
        t.bytes_read = (rows * OC + weight) * F;
        t.bytes_written = rows * IC * F;
        break;
    }
    case OP_MATMUL_BWD_WEIGHT: {
        // K output channels x input channels [col0, col1) (every one when col1 == 0); the bias
        // gradient with the tile of the first input channels
        int64_t IC = r.col1 > 0 ? r.col1 - r.col0 : op->in_channels;
        int64_t bias = op->arg[MATMUL_BWD_WEIGHT_DBIAS] != NULL && (r.col1 == 0 || r.col0 == 0);
        t.flops = 2 * N * K * IC + bias * N * K;
        t.bytes_read = (N * K + N * IC) * F;
        t.bytes_written = (K * IC + bias * K) * F;
        break;
    }
    case OP_ATTENTION_FWD: {
        int64_t S = causal_pairs(r.x0, r.x1);
        t.flops = nb * NH * (S * (4 * hs + 5) + X);
        t.bytes_read = (nb * X * C + nb * (int64_t)r.x1 * 2 * C) * F;
        t.bytes_written = (nb * X * C + nb * NH * S) * F;
        break;
    }
    case OP_ATTENTION_BWD: {
        int64_t nh = X, ST = causal_pairs(0, T), cols = nh * hs;
        t.flops = nb * nh * ST * (8 * hs + 5);
        t.bytes_read = (nb * T * cols + nb * T * 3 * cols + nb * nh * ST) * F;
        t.bytes_written = nb * T * 3 * cols * F;
        break;
    }
    case OP_RESIDUAL_FWD:
        t.flops = R * W;
        t.bytes_read = 2 * R * W * F;
        t.bytes_written = R * W * F;
        break;
    case OP_GELU_FWD:
        t.flops = 9 * R * W;
        t.bytes_read = R * W * F;
        t.bytes_written = R * W * F;
        break;
    case OP_GELU_BWD:
        t.flops = 20 * R * W;
        t.bytes_read = 2 * R * W * F;
        t.bytes_written = R * W * F;
        break;
    case OP_CROSSENTROPY_FWD: {
        int64_t V = op->vocab, Vp = op->padded_vocab;
        t.flops = R * (4 * V + 2);
        t.bytes_read = (R * V + R) * F;
        t.bytes_written = (R * Vp + R) * F;
        break;
    }
    case OP_LOSS_MEAN:
        t.flops = N + 1;
        t.bytes_read = N * F;
        t.bytes_written = F;
        break;
    case OP_CROSSENTROPY_BWD: {
        int64_t V = op->vocab, Vp = op->padded_vocab;
        t.flops = 2 * R * V;
        t.bytes_read = (R * V + R) * F;
        t.bytes_written = R * Vp * F;
        break;
    }
    case OP_LAYERNORM_BWD_INPUT: {
        int64_t dres = op->arg[LN_BWD_DRESIDUAL] != NULL;
        t.flops = R * (13 * C + 2) + dres * R * C;
        t.bytes_read = (2 * R * C + C + 2 * R + dres * R * C) * F;
        t.bytes_written = R * C * F;
        break;
    }
    case OP_LAYERNORM_BWD_PARAMS:
        t.flops = 5 * N * K;
        t.bytes_read = (2 * N * K + 2 * N) * F;
        t.bytes_written = 2 * K * F;
        break;
    case OP_ENCODER_BWD:
        t.flops = 2 * N * K;
        t.bytes_read = (N * K + N + N * K) * F; // dout columns, tokens, dwte rows (read-modify-write)
        t.bytes_written = (T * K + N * K) * F;  // dwpe, dwte rows
        break;
    case OP_ADAMW: {
        int64_t E = K * W; // parameter rows x columns
        t.flops = 16 * E;
        t.bytes_read = 4 * E * F;  // grads, params, m, v
        t.bytes_written = 3 * E * F;
        break;
    }
    case OP_COMM: // messages between processes: no memory traffic modelled
    case NUM_OP_KINDS:
        break;
    }
    return t;
}

Traffic op_traffic_full(const StepDescription *s, const Op *op) { return op_traffic(s, op, op_full_range(s, op)); }

int traffic_write_json(const StepDescription *s, FILE *out) {
    for (int i = 0; i < s->n_ops; i++) {
        const Op *op = &s->ops[i];
        Traffic t = op_traffic_full(s, op);
        int64_t bytes = traffic_bytes(t);
        fprintf(out,
                "{\"op\": %d, \"kernel\": \"%s\", \"label\": \"%s\", \"layer\": %d, \"phase\": \"%s\", "
                "\"split\": \"%s\", \"flops\": %lld, \"bytes\": %lld, \"bytes_read\": %lld, "
                "\"bytes_written\": %lld, \"intensity\": %.6g}\n",
                i, op_kind_name(op->kind), op->label, op->layer, phase_name(op->phase), split_name(op->split),
                (long long)t.flops, (long long)bytes, (long long)t.bytes_read, (long long)t.bytes_written,
                bytes > 0 ? (double)t.flops / (double)bytes : 0.0);
    }
    return ferror(out) ? -1 : 0;
}
