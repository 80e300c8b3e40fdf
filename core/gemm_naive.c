// The specification of gemm.h as plain loops: the slowest correct version,
// kept as the oracle that every fast kernel must match bit for bit.
#include <math.h>
#include <stddef.h>
#include "gemm_naive.h"

void matmul_forward_rows_naive(float *out, const float *inp, const float *w, const float *bias,
                               int r0, int r1, int IC, int OC) {
    for (int r = r0; r < r1; r++) {
        const float *x = inp + (size_t)r * IC;
        for (int o = 0; o < OC; o++) {
            const float *wrow = w + (size_t)o * IC;
            float acc = bias ? bias[o] : 0.0f;
            for (int i = 0; i < IC; i++) acc = fmaf(x[i], wrow[i], acc);
            out[(size_t)r * OC + o] = acc;
        }
    }
}

void matmul_backward_input_rows_naive(float *dinp, const float *dout, const float *w,
                                      int r0, int r1, int IC, int OC) {
    for (int r = r0; r < r1; r++) {
        float *dx = dinp + (size_t)r * IC;
        const float *g = dout + (size_t)r * OC;
        for (int i = 0; i < IC; i++) dx[i] = 0.0f;
        for (int o = 0; o < OC; o++) {
            const float *wrow = w + (size_t)o * IC;
            for (int i = 0; i < IC; i++) dx[i] = fmaf(g[o], wrow[i], dx[i]);
        }
    }
}

void matmul_backward_weight_channels_naive(float *dw, float *dbias, const float *dout,
                                           const float *inp, int o0, int o1, int rows,
                                           int IC, int OC) {
    for (int o = o0; o < o1; o++) {
        float *dwrow = dw + (size_t)o * IC;
        for (int i = 0; i < IC; i++) dwrow[i] = 0.0f;
        float db = 0.0f;
        for (int r = 0; r < rows; r++) {
            float g = dout[(size_t)r * OC + o];
            const float *x = inp + (size_t)r * IC;
            for (int i = 0; i < IC; i++) dwrow[i] = fmaf(g, x[i], dwrow[i]);
            db += g;
        }
        if (dbias) dbias[o] = db;
    }
}
