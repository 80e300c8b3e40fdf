// Kernels of the `fast` set that differ from the `reference` set (besides the
// matrix products, in gemm.c).
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "extra_work.h"
#include "kernels.h"

// Reductions in this file are written as LANES interleaved partial results
// combined by a fixed tree (sum_lanes), and every element-wise loop is plain
// C on restrict pointers: compilers vectorise them (16 floats per AVX-512
// register), and whether they do or not, each result is the same sequence of
// IEEE operations, so gcc and clang give the same bits (-ffp-contract=off
// keeps a*b+c two roundings). No result depends on the range a call is given.
#define LANES 16

// lane[0] + ... + lane[15] in a fixed pairwise order.
static inline float sum_lanes(const float lane[LANES]) {
    float s8[8], s4[4];
    for (int l = 0; l < 8; l++) s8[l] = lane[l] + lane[l + 8];
    for (int l = 0; l < 4; l++) s4[l] = s8[l] + s8[l + 4];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

// The largest of x[0..n) (exact in any order; NaN-free input).
static inline float max_of(const float *x, int n) {
    float lane[LANES];
    for (int l = 0; l < LANES; l++) lane[l] = -INFINITY;
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) lane[l] = x[i + l] > lane[l] ? x[i + l] : lane[l];
    for (int l = 0; i + l < n; l++) lane[l] = x[i + l] > lane[l] ? x[i + l] : lane[l];
    float m = lane[0];
    for (int l = 1; l < LANES; l++) m = lane[l] > m ? lane[l] : m;
    return m;
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

// In two passes over blocks of GELU_BLOCK elements: the denominators, then
// the quotients. The same operations in one loop (x / (1 + e), or x * s)
// ran 3.7x slower (Zen 5, gcc 12: 1.27 against 0.34 ms for 786,432
// elements, the same bits), while storing the sigmoid alone ran at the
// two-pass speed; the backward pass, which does more per element, ran at
// 0.5 ms in one loop.
#define GELU_BLOCK 256

// d[i] = 1 + e^(-2y) for the m <= GELU_BLOCK inputs x: the denominator of
// sigmoid(2y), y = sqrt(2/pi) (x + 0.044715 x^3); both passes divide by it.
static inline void gelu_denominators(float *d, const float *x, size_t m) {
    for (size_t i = 0; i < m; i++) {
        float y = GELU_SCALING_FACTOR * (x[i] + 0.044715f * x[i] * x[i] * x[i]);
        d[i] = 1.0f + exp_poly(-2.0f * y);
    }
}

static inline void gelu_forward_elements(float *o, const float *in, size_t n) {
    float denominator[GELU_BLOCK];
    for (size_t i0 = 0; i0 < n; i0 += GELU_BLOCK) {
        size_t m = n - i0 < GELU_BLOCK ? n - i0 : GELU_BLOCK;
        gelu_denominators(denominator, in + i0, m);
        for (size_t i = 0; i < m; i++) o[i0 + i] = in[i0 + i] / denominator[i];
    }
}

void gelu_forward(float *out, const float *inp, int r0, int r1, int N) {
    const float *in = inp + (size_t)r0 * N;
    float *o = out + (size_t)r0 * N;
    size_t n = (size_t)(r1 - r0) * N;
    gelu_forward_elements(o, in, n);
#ifdef EXTRA_WORK_ELEMENTS
    // test builds only (extra_work.h); a compile-time 0 leaves no second call site, which would
    // change how the other kernel's loop is inlined (and its instruction count)
    if (EXTRA_WORK_ELEMENTS("gelu_fwd", n)) gelu_forward_elements(o, in, EXTRA_WORK_ELEMENTS("gelu_fwd", n));
#endif
}

static inline void gelu_backward_elements(float *d, const float *in, const float *g, size_t n) {
    float denominator[GELU_BLOCK];
    for (size_t i0 = 0; i0 < n; i0 += GELU_BLOCK) {
        size_t m = n - i0 < GELU_BLOCK ? n - i0 : GELU_BLOCK;
        const float *x = in + i0;
        gelu_denominators(denominator, x, m);
        for (size_t i = 0; i < m; i++) {
            float s = 1.0f / denominator[i];
            float local_grad = s + 2.0f * x[i] * s * (1.0f - s) * GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x[i] * x[i]);
            d[i0 + i] = local_grad * g[i0 + i];
        }
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, int r0, int r1, int N) {
    const float *in = inp + (size_t)r0 * N, *g = dout + (size_t)r0 * N;
    float *d = dinp + (size_t)r0 * N;
    size_t n = (size_t)(r1 - r0) * N;
    gelu_backward_elements(d, in, g, n);
#ifdef EXTRA_WORK_ELEMENTS
    if (EXTRA_WORK_ELEMENTS("gelu_bwd", n)) // test builds only (extra_work.h), as above
        gelu_backward_elements(d, in, g, EXTRA_WORK_ELEMENTS("gelu_bwd", n));
#endif
}

// ----------------------------------------------------------------------------
// Softmax pieces: e^(x - shift) through exp_poly (vectorised with the loop),
// the sum in LANES partial sums combined by sum_lanes.

// out[i] = e^(in[i] - shift) for i < n; returns their sum.
static inline float exp_shifted_sum(float *restrict out, const float *restrict in, int n, float shift) {
    float lane[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) {
            float e = exp_poly(in[i + l] - shift);
            out[i + l] = e;
            lane[l] += e;
        }
    for (int l = 0; i + l < n; l++) {
        float e = exp_poly(in[i + l] - shift);
        out[i + l] = e;
        lane[l] += e;
    }
    return sum_lanes(lane);
}

// The same in place.
static inline float exp_shifted_sum_inplace(float *x, int n, float shift) {
    float lane[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) {
            float e = exp_poly(x[i + l] - shift);
            x[i + l] = e;
            lane[l] += e;
        }
    for (int l = 0; i + l < n; l++) {
        float e = exp_poly(x[i + l] - shift);
        x[i + l] = e;
        lane[l] += e;
    }
    return sum_lanes(lane);
}

static inline void scale_inplace(float *x, int n, float a) {
    for (int i = 0; i < n; i++) x[i] *= a;
}

// Three sweeps of a row: its maximum (from memory), the exponentials and
// their sum (the row, 200 KB at V = 50257, is in L2 from here on), the
// normalisation. The loss is log(sum) - (z_target - max), which needs no
// logarithm of a rounded probability.
void crossentropy_softmax_forward(float *probs, float *losses, const float *logits,
                                  const int *targets, int r0, int r1, int V, int Vp) {
    for (int r = r0; r < r1; r++) {
        const float *z = logits + (size_t)r * Vp;
        float *p = probs + (size_t)r * Vp;
        float maxval = max_of(z, V);
        float sum = exp_shifted_sum(p, z, V, maxval);
        scale_inplace(p, V, 1.0f / sum);
        for (int i = V; i < Vp; i++) p[i] = 0.0f;
        losses[r] = logf(sum) - (z[targets[r]] - maxval);
    }
}

// ----------------------------------------------------------------------------
// Attention. Per (sequence, head) the scores are a small matrix product
// Q K^T: the keys of the head are packed transposed (kt[i*ld + t2]), so that
// one vector holds the scores of LANES keys and each score is the chain
// dot = 0; dot += q[i]*k[i] for i increasing (the reference's order) with
// every key's chain in its own lane. The weighted sums of values are axpys
// over the head's channels.

// Keys (or values) [0, n) of one head, transposed: dst[i*ld + t2] = src[t2*stride + i],
// columns n .. round-up(n, LANES) zeroed.
static void pack_transposed(float *dst, int ld, const float *src, size_t stride, int n, int hs) {
    int npad = (n + LANES - 1) / LANES * LANES;
    for (int t2 = 0; t2 < n; t2++) {
        const float *s = src + (size_t)t2 * stride;
        for (int i = 0; i < hs; i++) dst[(size_t)i * ld + t2] = s[i];
    }
    for (int i = 0; i < hs; i++)
        for (int t2 = n; t2 < npad; t2++) dst[(size_t)i * ld + t2] = 0.0f;
}

// Rows [0, n) of one head, contiguous: dst[t2*hs + i] = src[t2*stride + i]. Packed rows
// are read without the cache-set conflicts of rows 3C floats apart.
static void pack_rows(float *dst, const float *src, size_t stride, int n, int hs) {
    for (int t2 = 0; t2 < n; t2++) memcpy(dst + (size_t)t2 * hs, src + (size_t)t2 * stride, (size_t)hs * sizeof(float));
}

// dots[t2] = chain over i < hs of x[i] * kt[i*ld + t2], for t2 < n (kt padded to LANES).
// NB lanes of LANES keys at a time, each lane its own chain.
#define DOTS_BLOCK(NB)                                                                  \
    static inline void dots_block##NB(float *dots, const float *x, const float *kt,     \
                                      int ld, int hs) {                                 \
        float acc[NB * LANES] = {0};                                                    \
        for (int i = 0; i < hs; i++) {                                                  \
            float xi = x[i];                                                            \
            const float *k = kt + (size_t)i * ld;                                       \
            for (int l = 0; l < NB * LANES; l++) acc[l] += xi * k[l];                   \
        }                                                                               \
        memcpy(dots, acc, sizeof acc);                                                  \
    }
DOTS_BLOCK(1)
DOTS_BLOCK(4)

// Into a buffer of round-up(n, LANES) floats.
static void dots_packed(float *dots, const float *x, const float *kt, int ld, int hs, int n) {
    int j = 0;
    for (; j + 4 * LANES <= n; j += 4 * LANES) dots_block4(dots + j, x, kt + j, ld, hs);
    for (; j < n; j += LANES) dots_block1(dots + j, x, kt + j, ld, hs);
}

// The same dot products, unpacked (the fallback if there is no memory for packing).
static void dots_plain(float *dots, const float *x, const float *keys, size_t stride, int hs, int n) {
    for (int t2 = 0; t2 < n; t2++) {
        const float *k = keys + (size_t)t2 * stride;
        float dot = 0.0f;
        for (int i = 0; i < hs; i++) dot += x[i] * k[i];
        dots[t2] = dot;
    }
}

// out[i] = chain over j < n of coef[j*cs] * rows[j*rs + i], from 0, for i < width: a
// weighted sum of rows, each output element one chain in increasing j. Blocks
// of WSUM_BLOCK columns keep their sums in registers.
#define WSUM_BLOCK 64
static void weighted_rows(float *out, const float *coef, ptrdiff_t cs, const float *rows, ptrdiff_t rs,
                          int n, int width) {
    int i0 = 0;
    for (; i0 + WSUM_BLOCK <= width; i0 += WSUM_BLOCK) {
        float acc[WSUM_BLOCK] = {0};
        for (int j = 0; j < n; j++) {
            float c = coef[j * cs];
            const float *r = rows + j * rs + i0;
            for (int l = 0; l < WSUM_BLOCK; l++) acc[l] += c * r[l];
        }
        memcpy(out + i0, acc, sizeof acc);
    }
    if (i0 < width) {
        float acc[WSUM_BLOCK] = {0};
        int w = width - i0;
        for (int j = 0; j < n; j++) {
            float c = coef[j * cs];
            const float *r = rows + j * rs + i0;
            for (int l = 0; l < w; l++) acc[l] += c * r[l];
        }
        memcpy(out + i0, acc, (size_t)w * sizeof(float));
    }
}

void attention_forward(float *out, float *att, const float *qkv, int r0, int r1,
                       int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    int ld = (T + LANES - 1) / LANES * LANES;
    float *kt = malloc((size_t)hs * ld * sizeof(float));
    float *s = malloc(((size_t)ld + (size_t)T * hs) * sizeof(float));
    if (!s) free(kt), kt = NULL;
    float *vbuf = s ? s + ld : NULL;
    for (int r = r0; r < r1;) {
        int b = r / T, t_first = r % T;
        int rend = (b + 1) * T < r1 ? (b + 1) * T : r1; // this sequence's rows of the range
        int nkeys = rend - b * T;                      // keys [0, last token]
        const float *seq = qkv + (size_t)b * T * 3 * C;
        for (int h = 0; h < NH; h++) {
            const float *keys = seq + C + h * hs;
            const float *values = seq + 2 * C + h * hs;
            ptrdiff_t vstride = 3 * (ptrdiff_t)C;
            if (kt) {
                pack_transposed(kt, ld, keys, 3 * (size_t)C, nkeys, hs);
                pack_rows(vbuf, values, 3 * (size_t)C, nkeys, hs);
                values = vbuf, vstride = hs;
            }
            for (int t = t_first; t < t_first + (rend - r); t++) {
                size_t row = (size_t)b * T + t;
                const float *q = qkv + row * 3 * C + h * hs;
                float *w = att + (row * NH + h) * T;
                int n = t + 1;
                if (kt) {
                    dots_packed(s, q, kt, ld, hs, n);
                    for (int t2 = 0; t2 < n; t2++) w[t2] = s[t2] * scale;
                } else {
                    dots_plain(w, q, keys, 3 * (size_t)C, hs, n);
                    for (int t2 = 0; t2 < n; t2++) w[t2] = w[t2] * scale;
                }
                float maxval = max_of(w, n);
                float sum = exp_shifted_sum_inplace(w, n, maxval);
                scale_inplace(w, n, 1.0f / sum);
                weighted_rows(out + row * C + h * hs, w, 1, values, vstride, n, hs);
            }
        }
        r = rend;
    }
    free(kt);
    free(s);
}

// The softmax gradient in O(T) per query row: dpre_j = att_j * (datt_j - sum_i att_i datt_i).
// Per (sequence, head): datt = G V^T (the values packed transposed), the
// pre-softmax gradients of every row into a T x T scratch, then
// dQ = dPre K, dK = dPre^T Q and dV = Att^T G as weighted sums of rows, each
// gradient row written once (chains in increasing token order).
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                        int p0, int p1, int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    int ld = (T + LANES - 1) / LANES * LANES;
    // scratch: dPre and the head's attention weights (T x ld each), V^T (hs x ld), one row of
    // datt, and the head's q, k and dout rows (T x hs each)
    float *dp = malloc(((size_t)2 * T * ld + (size_t)(hs + 1) * ld + (size_t)3 * T * hs) * sizeof(float));
    if (!dp) abort();
    float *aw = dp + (size_t)T * ld, *vt = aw + (size_t)T * ld, *datt = vt + (size_t)hs * ld;
    float *qb = datt + ld, *kb = qb + (size_t)T * hs, *gb = kb + (size_t)T * hs;
    ptrdiff_t rs = 3 * (ptrdiff_t)C;
    for (int p = p0; p < p1; p++) {
        int b = p / NH, h = p % NH;
        const float *seq = qkv + (size_t)b * T * 3 * C;
        float *dseq = dqkv + (size_t)b * T * 3 * C;
        const float *g0 = dout + (size_t)b * T * C + h * hs;
        const float *w0 = att + ((size_t)b * T * NH + h) * T;
        const float *q0 = seq + h * hs, *k0 = seq + C + h * hs, *v0 = seq + 2 * C + h * hs;
        pack_transposed(vt, ld, v0, rs, T, hs);
        pack_rows(qb, q0, rs, T, hs);
        pack_rows(kb, k0, rs, T, hs);
        pack_rows(gb, g0, C, T, hs);
        for (int t = 0; t < T; t++) memcpy(aw + (size_t)t * ld, w0 + (size_t)t * NH * T, (size_t)(t + 1) * sizeof(float));
        for (int t = 0; t < T; t++) {
            const float *w = w0 + (size_t)t * NH * T;
            int n = t + 1;
            dots_packed(datt, gb + (size_t)t * hs, vt, ld, hs, n);
            float lane[LANES] = {0};
            int j = 0;
            for (; j + LANES <= n; j += LANES)
                for (int l = 0; l < LANES; l++) lane[l] += w[j + l] * datt[j + l];
            for (int l = 0; j + l < n; l++) lane[l] += w[j + l] * datt[j + l];
            float wsum = sum_lanes(lane);
            float *dpre = dp + (size_t)t * ld;
            for (int t2 = 0; t2 < n; t2++) dpre[t2] = w[t2] * (datt[t2] - wsum) * scale;
        }
        for (int t = 0; t < T; t++) {
            float *drow = dseq + (size_t)t * rs + h * hs;
            // dq[t] = sum over keys t2 <= t; dk[t] and dv[t] = sums over queries t' >= t
            weighted_rows(drow, dp + (size_t)t * ld, 1, kb, hs, t + 1, hs);
            weighted_rows(drow + C, dp + (size_t)t * ld + t, ld, qb + (size_t)t * hs, hs, T - t, hs);
            weighted_rows(drow + 2 * C, aw + (size_t)t * ld + t, ld, gb + (size_t)t * hs, hs, T - t, hs);
        }
    }
    free(dp);
}

// ----------------------------------------------------------------------------
// AdamW: a stream over four arrays (about 28 bytes moved per parameter), so
// the loop only has to vectorise and stay off the dividers: the bias
// corrections are applied as products with their reciprocals.
void adamw_update(float *params, const float *grads, float *m, float *v, size_t e0, size_t e1,
                  float lr, float beta1, float beta2, float eps, float weight_decay, int step) {
    float m_scale = 1.0f / (1.0f - powf(beta1, step));
    float v_scale = 1.0f / (1.0f - powf(beta2, step));
    float *restrict p = params + e0, *restrict pm = m + e0, *restrict pv = v + e0;
    const float *restrict g = grads + e0;
    size_t n = e1 - e0;
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = beta1 * pm[i] + (1.0f - beta1) * gi;
        float vi = beta2 * pv[i] + (1.0f - beta2) * gi * gi;
        pm[i] = mi;
        pv[i] = vi;
        p[i] -= lr * ((mi * m_scale) / (sqrtf(vi * v_scale) + eps) + weight_decay * p[i]);
    }
}

// ----------------------------------------------------------------------------
// LayerNorm's row passes: the row sums in LANES partial sums (sum_lanes), so
// that they are not one chain of C dependent additions.

static inline float row_sum(const float *x, int n) {
    float lane[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) lane[l] += x[i + l];
    for (int l = 0; i + l < n; l++) lane[l] += x[i + l];
    return sum_lanes(lane);
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                       const float *weight, const float *bias, int r0, int r1, int C) {
    const float eps = 1e-5f;
    for (int r = r0; r < r1; r++) {
        const float *x = inp + (size_t)r * C;
        float m = row_sum(x, C) / C;
        float lane[LANES] = {0};
        int i = 0;
        for (; i + LANES <= C; i += LANES)
            for (int l = 0; l < LANES; l++) {
                float d = x[i + l] - m;
                lane[l] += d * d;
            }
        for (int l = 0; i + l < C; l++) {
            float d = x[i + l] - m;
            lane[l] += d * d;
        }
        float var = sum_lanes(lane) / C;
        float s = 1.0f / sqrtf(var + eps);
        float *o = out + (size_t)r * C;
        for (int j = 0; j < C; j++) o[j] = (s * (x[j] - m)) * weight[j] + bias[j];
        mean[r] = m;
        rstd[r] = s;
    }
}

void layernorm_backward_input(float *dinp, const float *dresidual, const float *dout,
                              const float *inp, const float *weight, const float *mean,
                              const float *rstd, int r0, int r1, int C) {
    for (int r = r0; r < r1; r++) {
        const float *g = dout + (size_t)r * C;
        const float *x = inp + (size_t)r * C;
        float m = mean[r], s = rstd[r];
        // the two row means the LayerNorm gradient needs
        float l1[LANES] = {0}, l2[LANES] = {0};
        int i = 0;
        for (; i + LANES <= C; i += LANES)
            for (int l = 0; l < LANES; l++) {
                float norm = (x[i + l] - m) * s;
                float dnorm = weight[i + l] * g[i + l];
                l1[l] += dnorm;
                l2[l] += dnorm * norm;
            }
        for (int l = 0; i + l < C; l++) {
            float norm = (x[i + l] - m) * s;
            float dnorm = weight[i + l] * g[i + l];
            l1[l] += dnorm;
            l2[l] += dnorm * norm;
        }
        float dnorm_mean = sum_lanes(l1) / C;
        float dnorm_norm_mean = sum_lanes(l2) / C;
        float *dx = dinp + (size_t)r * C;
        for (int j = 0; j < C; j++) {
            float norm = (x[j] - m) * s;
            float dnorm = weight[j] * g[j];
            float d = ((dnorm - dnorm_mean) - norm * dnorm_norm_mean) * s;
            dx[j] = dresidual ? dresidual[(size_t)r * C + j] + d : d;
        }
    }
}
