// Kernels of the `fast` set that differ from the `reference` set (besides the
// matrix products, in gemm.c).
#include <math.h>
#include <string.h>
#include "kernels.h"

// The softmax gradient in O(T) per query row: dpre_j = att_j * (datt_j - sum_i att_i datt_i).
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                        int p0, int p1, int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    float datt[T]; // one row of attention-weight gradients
    for (int p = p0; p < p1; p++) {
        int b = p / NH, h = p % NH;
        const float *seq = qkv + (size_t)b * T * 3 * C;
        float *dseq = dqkv + (size_t)b * T * 3 * C;
        for (int t = 0; t < T; t++) {
            float *row = dseq + (size_t)t * 3 * C + h * hs;
            memset(row, 0, hs * sizeof(float));
            memset(row + C, 0, hs * sizeof(float));
            memset(row + 2 * C, 0, hs * sizeof(float));
        }
        for (int t = 0; t < T; t++) {
            const float *w = att + (((size_t)b * T + t) * NH + h) * T;
            const float *g = dout + ((size_t)b * T + t) * C + h * hs;
            const float *q = seq + (size_t)t * 3 * C + h * hs;
            float *dq = dseq + (size_t)t * 3 * C + h * hs;
            // through the weighted sum of values
            for (int t2 = 0; t2 <= t; t2++) {
                const float *v = seq + (size_t)t2 * 3 * C + 2 * C + h * hs;
                float *dv = dseq + (size_t)t2 * 3 * C + 2 * C + h * hs;
                float d = 0.0f;
                for (int i = 0; i < hs; i++) {
                    d += g[i] * v[i];
                    dv[i] += w[t2] * g[i];
                }
                datt[t2] = d;
            }
            // through the softmax: dpre_j = att_j * (datt_j - sum_i att_i datt_i),
            // O(T) per row instead of the O(T^2) Jacobian loop
            float wsum = 0.0f;
            for (int t2 = 0; t2 <= t; t2++) wsum += w[t2] * datt[t2];
            // through the scaled scores q.k
            for (int t2 = 0; t2 <= t; t2++) {
                float dpre = w[t2] * (datt[t2] - wsum) * scale;
                const float *k = seq + (size_t)t2 * 3 * C + C + h * hs;
                float *dk = dseq + (size_t)t2 * 3 * C + C + h * hs;
                for (int i = 0; i < hs; i++) {
                    dq[i] += dpre * k[i];
                    dk[i] += dpre * q[i];
                }
            }
        }
    }
}

