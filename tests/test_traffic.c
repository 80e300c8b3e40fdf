// The traffic model (core/traffic.h) against counts made by hand for a tiny
// configuration. Prints one line per failed check and "N passed, N failed"
// last; exits 1 on any failure.
//
// Build: `make unit-tests` (target build/tests/test_traffic-<compiler>: this
// file, the core sources but core/taskgraph.c, and the fast kernel set);
// tests/test_units.py runs it.
//
// Configuration: L=1, NH=2, C=8 (hs=4), V=16 (Vp=128), maxT=4, batch B=2, T=3,
// so N = B*T = 6 rows. Floats and token ids are 4 bytes.
#include <stdio.h>
#include <string.h>
#include "../core/gemm.h"
#include "../core/model.h"
#include "../core/step.h"
#include "../core/traffic.h"

static int passed, failed;

static void expect(const char *what, long long got, long long want) {
    if (got == want) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s: got %lld, expected %lld\n", what, got, want);
    }
}

static const Op *find(const StepDescription *s, const char *label) {
    for (int i = 0; i < s->n_ops; i++)
        if (!strcmp(s->ops[i].label, label)) return &s->ops[i];
    printf("FAIL no operation labelled '%s'\n", label);
    failed++;
    return NULL;
}

// Checks the whole operation's flops, bytes read and bytes written.
static void full(const StepDescription *s, const char *label, long long flops, long long read, long long written) {
    const Op *op = find(s, label);
    if (!op) return;
    Traffic t = op_traffic_full(s, op);
    char what[96];
    snprintf(what, sizeof(what), "%s flops", label);
    expect(what, t.flops, flops);
    snprintf(what, sizeof(what), "%s bytes read", label);
    expect(what, t.bytes_read, read);
    snprintf(what, sizeof(what), "%s bytes written", label);
    expect(what, t.bytes_written, written);
}

static void chunk(const StepDescription *s, const char *label, Range r, long long flops, long long read,
                  long long written) {
    const Op *op = find(s, label);
    if (!op) return;
    Traffic t = op_traffic(s, op, r);
    char what[128];
    snprintf(what, sizeof(what), "%s (%d,%d,%d,%d) flops", label, r.b0, r.b1, r.x0, r.x1);
    expect(what, t.flops, flops);
    snprintf(what, sizeof(what), "%s (%d,%d,%d,%d) bytes read", label, r.b0, r.b1, r.x0, r.x1);
    expect(what, t.bytes_read, read);
    snprintf(what, sizeof(what), "%s (%d,%d,%d,%d) bytes written", label, r.b0, r.b1, r.x0, r.x1);
    expect(what, t.bytes_written, written);
}

int main(void) {
    GPT2Config config = {4, 16, 128, 1, 2, 8}; // maxT, V, Vp, L, NH, C
    GPT2 model;
    gpt2_describe(&model, config);
    char err[256];
    if (gpt2_allocate(&model, 2, 3, err, sizeof(err)) != 0) {
        printf("cannot allocate the tiny model: %s\n0 passed, 1 failed\n", err);
        return 1;
    }
    AdamWSettings adamw = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
    StepDescription s;
    if (step_describe(&s, &model, adamw, NULL, 0) != 0) {
        printf("cannot describe the step\n0 passed, 1 failed\n");
        return 1;
    }

    // load: inputs and targets written, 2*6 ids = 48 bytes
    full(&s, "load_batch inputs+targets", 0, 0, 48);
    // encoder: 6 rows x 8 adds = 48; read ids 6 + wte rows 6*8 + wpe rows 3*8 = 78 -> 312 B; write 48 -> 192 B
    full(&s, "encoder_fwd wte+wpe", 48, 312, 192);
    // layernorm: per row 8C+5 = 69 -> 414; read x 48 + w 8 + b 8 = 64 -> 256 B;
    // write out 48 + mean 6 + rstd 6 = 60 -> 240 B
    full(&s, "layernorm_fwd ln1 L0", 414, 256, 240);
    // qkv: 2*6*8*24 = 2304; read x 48 + W 24*8 = 192 + b 24 = 264 -> 1056 B; write 6*24 = 144 -> 576 B
    full(&s, "matmul_fwd qkv L0", 2304, 1056, 576);
    // attproj: 2*6*8*8 = 768; read 48 + 64 + 8 = 120 -> 480 B; write 48 -> 192 B
    full(&s, "matmul_fwd attproj L0", 768, 480, 192);
    // fc: 2*6*8*32 = 3072; read 48 + 256 + 32 = 336 -> 1344 B; write 192 -> 768 B
    full(&s, "matmul_fwd fc L0", 3072, 1344, 768);
    // fcproj: 2*6*32*8 = 3072; read 192 + 256 + 8 = 456 -> 1824 B; write 48 -> 192 B
    full(&s, "matmul_fwd fcproj L0", 3072, 1824, 192);
    // lm_head, no bias: 2*6*8*128 = 12288; read 48 + 128*8 = 1072 -> 4288 B; write 6*128 = 768 -> 3072 B
    full(&s, "matmul_fwd lm_head", 12288, 4288, 3072);
    // attention, per query at token t and head: scores 9(t+1), softmax 4(t+1)+1, weighted sum 8(t+1),
    // i.e. 21(t+1)+1; over t = 0,1,2: 21*6 + 3 = 129; times 2 sequences x 2 heads = 516.
    // read q 2*3*8 = 48 + k,v 2*3*16 = 96 -> 576 B; write out 48 + weights 2*2*(1+2+3) = 24 -> 288 B
    full(&s, "attention_fwd causal L0", 516, 576, 288);
    // residual: 48 adds; read 96 -> 384 B; write 48 -> 192 B
    full(&s, "residual_fwd residual2 L0", 48, 384, 192);
    // gelu: 6*32 = 192 elements x 9 = 1728; read 192 -> 768 B; write 768 B
    full(&s, "gelu_fwd fc L0", 1728, 768, 768);
    // cross-entropy: per row 4*16+2 = 66 -> 396; read logits 6*16 + targets 6 = 102 -> 408 B;
    // write probs 6*128 + losses 6 = 774 -> 3096 B
    full(&s, "crossentropy_fwd softmax", 396, 408, 3096);
    // mean of 6 losses: 6 adds + 1 div = 7; read 24 B; write 4 B
    full(&s, "loss_mean mean", 7, 24, 4);
    // dlogits in place: 6*16*(sub, mul) = 192; read probs 96 + targets 6 -> 408 B; write 6*128 -> 3072 B
    full(&s, "crossentropy_bwd softmax", 192, 408, 3072);
    // lm_head backward, input: 12288; read dlogits 768 + W 1024 = 1792 -> 7168 B; write 48 -> 192 B
    full(&s, "matmul_bwd_input lm_head", 12288, 7168, 192);
    // weight, 128 channels, no bias: 2*6*128*8 = 12288; read dlogits 768 + x 48 = 816 -> 3264 B;
    // write dW 1024 -> 4096 B
    full(&s, "matmul_bwd_weight lm_head", 12288, 3264, 4096);
    // qkv weight with bias: 2*6*24*8 = 2304 + dbias 6*24 = 144 -> 2448; read dout 144 + x 48 = 192 -> 768 B;
    // write dW 192 + db 24 = 216 -> 864 B
    full(&s, "matmul_bwd_weight qkv L0", 2448, 768, 864);
    // lnf backward, no residual gradient: per row 13*8+2 = 106 -> 636; read dout 48 + x 48 + w 8 +
    // mean 6 + rstd 6 = 116 -> 464 B; write 48 -> 192 B
    full(&s, "layernorm_bwd_input lnf", 636, 464, 192);
    // ln2 backward with the residual gradient: 636 + 48 = 684; read 116 + 48 = 164 -> 656 B; write 192 B
    full(&s, "layernorm_bwd_input ln2 L0", 684, 656, 192);
    // parameters: 5*6*8 = 240; read dout, x 96 + mean, rstd 12 = 108 -> 432 B; write 16 -> 64 B
    full(&s, "layernorm_bwd_params ln2 L0", 240, 432, 64);
    // gelu backward: 192 x 20 = 3840; read 384 -> 1536 B; write 768 B
    full(&s, "gelu_bwd fc L0", 3840, 1536, 768);
    // attention backward, per (t, t2 <= t): 8+8+2+3+8+8 = 37; 6 pairs per (sequence, head), 4 of them:
    // 888; read dout 48 + qkv 144 + weights 24 = 216 -> 864 B; write dqkv 144 -> 576 B
    full(&s, "attention_bwd causal L0", 888, 864, 576);
    // encoder backward: 2*6*8 = 96; read dout 48 + ids 6 + dwte rows 48 = 102 -> 408 B;
    // write dwpe 3*8 + dwte rows 48 = 72 -> 288 B
    full(&s, "encoder_bwd wte+wpe", 96, 408, 288);
    // AdamW on wte (128 x 8 = 1024 elements): 16 each = 16384; read 4 arrays -> 16384 B; write 3 -> 12288 B
    full(&s, "adamw wte", 16384, 16384, 12288);
    // qkvw 24 x 8 = 192 elements: 3072; read 3072 B; write 2304 B
    full(&s, "adamw qkvw L0", 3072, 3072, 2304);

    // chunks
    // attention, tokens [0,1) of both sequences: per sequence and head 21*1+1 = 22 -> 88;
    // read q 2*1*8 = 16 + k,v of token 0: 2*1*16 = 32 -> 192 B; write 16 + weights 2*2*1 = 20 -> 80 B
    chunk(&s, "attention_fwd causal L0", (Range){0, 2, 0, 1, 0, 0}, 88, 192, 80);
    // tokens [1,3) of sequence 0: per head 21*(2+3)+2 = 107 -> 214; read q 16 + k,v of tokens 0..2: 48
    // = 64 -> 256 B; write 16 + 2*5 = 26 -> 104 B
    chunk(&s, "attention_fwd causal L0", (Range){0, 1, 1, 3, 0, 0}, 214, 256, 104);
    // attention backward, sequence 1, head 1: 6*37 = 222; read dout 3*4 + qkv 3*12 + weights 6 = 54 -> 216 B;
    // write 36 -> 144 B
    chunk(&s, "attention_bwd causal L0", (Range){1, 2, 1, 2, 0, 0}, 222, 216, 144);
    // qkv weight, channels [0,12): 2*6*12*8 + 6*12 = 1224; read dout columns 72 + all of x 48 = 120 -> 480 B;
    // write 96 + 12 = 108 -> 432 B
    chunk(&s, "matmul_bwd_weight qkv L0", (Range){0, 1, 0, 12, 0, 0}, 1224, 480, 432);
    // AdamW on wte rows [0,10): 80 elements -> 1280 flops, 1280 B read, 960 B written
    chunk(&s, "adamw wte", (Range){0, 1, 0, 10, 0, 0}, 1280, 1280, 960);
    // encoder, sequence 1, tokens [2,3): one row: 8 flops; read 1 + 8 + 8 = 17 -> 68 B; write 32 B
    chunk(&s, "encoder_fwd wte+wpe", (Range){1, 2, 2, 3, 0, 0}, 8, 68, 32);

    // FLOPs are additive over a split: halves of every operation's split dimension add up to the whole
    for (int i = 0; i < s.n_ops; i++) {
        const Op *op = &s.ops[i];
        Range r = op_full_range(&s, op);
        if (r.x1 - r.x0 < 2) continue;
        int mid = (r.x0 + r.x1) / 2;
        Range a = r, b = r;
        a.x1 = mid;
        b.x0 = mid;
        char what[96];
        snprintf(what, sizeof(what), "%s: flops of two halves", op->label);
        expect(what, op_traffic(&s, op, a).flops + op_traffic(&s, op, b).flops, op_traffic_full(&s, op).flops);
    }

    // The matrix products of the step: forward, input and weight gradients are 2 FLOPs per parameter
    // and row each, 6*N*P for P = 12*C*C*L + Vp*C = 768 + 1024 = 1792 matmul weights: 64512;
    // plus the bias gradients, N*(3C + C + 4C + C) = 432.
    long long matmul = 0;
    for (int i = 0; i < s.n_ops; i++) {
        OpKind k = s.ops[i].kind;
        if (k == OP_MATMUL_FWD || k == OP_MATMUL_BWD_INPUT || k == OP_MATMUL_BWD_WEIGHT)
            matmul += op_traffic_full(&s, &s.ops[i]).flops;
    }
    expect("matmul flops of the step", matmul, 64512 + 432);
    step_free(&s);

    // The step with packed weights (step.h): the fast set packs (gemm.h), with a panel width
    // that depends on the build, so the padded column counts come from matmul_packed_floats.
    // The products' FLOPs are the same; a product reads the packed weight instead of w.
    if (step_describe(&s, &model, adamw, NULL, 1) != 0) {
        printf("cannot describe the step with packed weights\n0 passed, 1 failed\n");
        return 1;
    }
    long long qkv_pad = (long long)matmul_packed_floats(8, 24) / 8;  // forward: depth IC = 8, 24 columns
    long long qkv_t_pad = (long long)matmul_packed_floats(24, 8) / 24; // input gradient: depth OC = 24, 8 columns
    expect("packed qkv weight covers its columns", qkv_pad >= 24 && qkv_t_pad >= 8, 1);
    // qkv, forward layout: read w 24*8 = 192 floats; write 8 * qkv_pad
    full(&s, "pack_weight_fwd qkv L0", 0, 192 * 4, 8 * qkv_pad * 4);
    // output channels [0, 16) of it: read 16 rows of w; write 16 columns, 8 deep, no padding
    chunk(&s, "pack_weight_fwd qkv L0", (Range){0, 1, 0, 16, 0, 0}, 0, 128 * 4, 128 * 4);
    // [16, 24), the last columns: 8 columns and the padding
    chunk(&s, "pack_weight_fwd qkv L0", (Range){0, 1, 16, 24, 0, 0}, 0, 64 * 4, 8 * (8 + qkv_pad - 24) * 4);
    // input-gradient layout: 8 columns (input channels), 24 deep
    full(&s, "pack_weight_bwd_input qkv L0", 0, 192 * 4, 24 * qkv_t_pad * 4);
    // the forward product reads x 48 + the packed weight + b 24; writes 144 as before
    full(&s, "matmul_fwd qkv L0", 2304, (48 + 8 * qkv_pad + 24) * 4, 576);
    // the input gradient reads dout 144 + the packed weight; writes 48
    full(&s, "matmul_bwd_input qkv L0", 2304, (144 + 24 * qkv_t_pad) * 4, 192);
    // the language-model head has no packed copy: as above
    full(&s, "matmul_fwd lm_head", 12288, 4288, 3072);
    int packs = 0;
    long long matmul_packed = 0;
    for (int i = 0; i < s.n_ops; i++) {
        OpKind k = s.ops[i].kind;
        packs += k == OP_PACK_WEIGHT_FWD || k == OP_PACK_WEIGHT_BWD_INPUT;
        if (k == OP_MATMUL_FWD || k == OP_MATMUL_BWD_INPUT || k == OP_MATMUL_BWD_WEIGHT)
            matmul_packed += op_traffic_full(&s, &s.ops[i]).flops;
    }
    // four products of one layer, forward and input gradient
    expect("pack operations of the step", packs, 8);
    expect("matmul flops of the step with packed weights", matmul_packed, 64512 + 432);

    step_free(&s);
    gpt2_free(&model);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
