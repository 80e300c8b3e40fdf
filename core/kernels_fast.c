// Kernels of the `fast` set that differ from the `reference` set (besides the
// matrix products, in gemm.c).
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "extra_work.h"
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
        zero_head_gradients(dseq, T, C, hs, h);
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

// GELU without libm calls, so that the compiler vectorises it (tanhf and
// coshf are scalar calls that cost more than the rest of the layer).
// 0.5 x (1 + tanh(y)) is x * sigmoid(2y), and the derivative's
// 0.5 sech^2(y) is 2 sigmoid(2y) (1 - sigmoid(2y)), so one exponential per
// element serves both passes.
#define GELU_SCALING_FACTOR 0.7978845608028654f // sqrt(2/pi)

// e^x for x in [-87, 87] to within 2 ulp: x = n ln2 + r with |r| <= ln2/2,
// e^r by its degree-6 Taylor polynomial, 2^n through the exponent bits.
static inline float exp_poly(float x) {
    x = x > -87.0f ? x : -87.0f;
    x = x < 87.0f ? x : 87.0f;
    // round to nearest: adding 1.5 * 2^23 pushes the fraction bits out
    float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693359375f;          // ln2 split in two for an exact product
    r = r - n * -2.12194440e-4f;
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    union {
        int32_t i;
        float f;
    } scale = {.i = ((int32_t)n + 127) * (1 << 23)};
    return p * scale.f;
}

static inline void gelu_forward_elements(float *o, const float *in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = in[i];
        float y = GELU_SCALING_FACTOR * (x + 0.044715f * x * x * x);
        o[i] = x / (1.0f + exp_poly(-2.0f * y));
    }
}

void gelu_forward(float *out, const float *inp, int r0, int r1, int N) {
    const float *in = inp + (size_t)r0 * N;
    float *o = out + (size_t)r0 * N;
    size_t n = (size_t)(r1 - r0) * N;
    gelu_forward_elements(o, in, n);
#ifdef EXTRA_WORK_ELEMENTS
    gelu_forward_elements(o, in, EXTRA_WORK_ELEMENTS("gelu_fwd", n)); // test builds only (extra_work.h)
#endif
}

static inline void gelu_backward_elements(float *d, const float *in, const float *g, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = in[i];
        float y = GELU_SCALING_FACTOR * (x + 0.044715f * x * x * x);
        float s = 1.0f / (1.0f + exp_poly(-2.0f * y));
        float local_grad = s + 2.0f * x * s * (1.0f - s) * GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
        d[i] = local_grad * g[i];
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, int r0, int r1, int N) {
    const float *in = inp + (size_t)r0 * N, *g = dout + (size_t)r0 * N;
    float *d = dinp + (size_t)r0 * N;
    size_t n = (size_t)(r1 - r0) * N;
    gelu_backward_elements(d, in, g, n);
#ifdef EXTRA_WORK_ELEMENTS
    gelu_backward_elements(d, in, g, EXTRA_WORK_ELEMENTS("gelu_bwd", n)); // test builds only (extra_work.h)
#endif
}
