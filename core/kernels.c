// Layer kernels common to both sets. The matrix products live in gemm.c (and
// kernels_reference.c); LayerNorm's row passes, attention, GELU, the
// cross-entropy softmax and AdamW have one version per set (kernels_fast.c,
// kernels_reference.c).
#include <math.h>
#include <string.h>
#include "kernels.h"

void encoder_forward(float *out, const int *inp, const float *wte, const float *wpe,
                     int r0, int r1, int T, int C) {
    for (int r = r0; r < r1; r++) {
        const float *tok = wte + (size_t)inp[r] * C;
        const float *pos = wpe + (size_t)(r % T) * C;
        float *o = out + (size_t)r * C;
        for (int i = 0; i < C; i++) o[i] = tok[i] + pos[i];
    }
}

void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp,
                      int c0, int c1, int B, int T, int C) {
    for (int t = 0; t < T; t++) {
        float *dpos = dwpe + (size_t)t * C;
        for (int c = c0; c < c1; c++) dpos[c] = 0.0f;
        for (int b = 0; b < B; b++) {
            const float *g = dout + ((size_t)b * T + t) * C;
            for (int c = c0; c < c1; c++) dpos[c] += g[c];
        }
    }
    for (int r = 0; r < B * T; r++) {
        const float *g = dout + (size_t)r * C;
        float *dtok = dwte + (size_t)inp[r] * C;
        for (int c = c0; c < c1; c++) dtok[c] += g[c];
    }
}

// A chunk of a few channels reads a short piece of every row, rows C floats
// apart: too far apart for the hardware prefetchers, so each row waited on
// memory (Zen 3, d12, chunks of 64 channels: 25 us a chunk, 1.5 ns per
// element, against 0.2 for whole rows). The rows LN_PARAMS_AHEAD_ROWS ahead
// are fetched while this one is summed.
#define LN_PARAMS_AHEAD_ROWS 8
void layernorm_backward_params(float *dweight, float *dbias, const float *dout,
                               const float *inp, const float *mean, const float *rstd,
                               int c0, int c1, int rows, int C) {
    for (int c = c0; c < c1; c++) {
        dweight[c] = 0.0f;
        dbias[c] = 0.0f;
    }
    int piece = c1 - c0 < C;
    for (int r = 0; r < rows; r++) {
        const float *g = dout + (size_t)r * C;
        const float *x = inp + (size_t)r * C;
        if (piece && r + LN_PARAMS_AHEAD_ROWS < rows)
            for (int c = c0; c < c1; c += 16) {
                __builtin_prefetch(g + (size_t)LN_PARAMS_AHEAD_ROWS * C + c);
                __builtin_prefetch(x + (size_t)LN_PARAMS_AHEAD_ROWS * C + c);
            }
        float m = mean[r], s = rstd[r];
        for (int c = c0; c < c1; c++) {
            float norm = (x[c] - m) * s;
            dweight[c] += norm * g[c];
            dbias[c] += g[c];
        }
    }
}

void zero_head_gradients(float *dqkv_seq, int T, int C, int hs, int h) {
    for (int t = 0; t < T; t++) {
        float *row = dqkv_seq + (size_t)t * 3 * C + h * hs;
        memset(row, 0, hs * sizeof(float));
        memset(row + C, 0, hs * sizeof(float));
        memset(row + 2 * C, 0, hs * sizeof(float));
    }
}

void residual_forward(float *out, const float *a, const float *b, int r0, int r1, int N) {
    for (size_t i = (size_t)r0 * N; i < (size_t)r1 * N; i++) out[i] = a[i] + b[i];
}

void crossentropy_softmax_backward(float *dlogits, const float *probs, const int *targets,
                                   float dloss, int r0, int r1, int V, int Vp) {
    for (int r = r0; r < r1; r++) {
        const float *p = probs + (size_t)r * Vp;
        float *d = dlogits + (size_t)r * Vp;
        int target = targets[r];
        for (int i = 0; i < V; i++) d[i] = (p[i] - (i == target ? 1.0f : 0.0f)) * dloss;
        for (int i = V; i < Vp; i++) d[i] = 0.0f;
    }
}

float mean_loss(const float *losses, int n) {
    float sum = 0.0f;
    for (int i = 0; i < n; i++) sum += losses[i];
    return sum / n;
}
