// The layers of GPT-2, forward and backward, each on an explicit range of its
// parallel dimension. Every function computes each output element with the
// same sequence of operations whatever range it is given, so splitting the
// work among threads or tasks never changes a result bit.
//
// Notation: rows are the B*T token positions, row r = b*T + t; C channels,
// NH heads of hs = C/NH channels, Vp padded vocabulary, V real vocabulary.
#ifndef KERNELS_H
#define KERNELS_H

#include "gemm.h"

// out (B,T,C) = wte[inp] + wpe[t], rows [r0, r1).
void encoder_forward(float *out, const int *inp, const float *wte, const float *wpe,
                     int r0, int r1, int T, int C);
// For channels [c0, c1): dwpe[t,c] = sum over b of dout[b,t,c] (overwritten, t < T);
// dwte[inp[r],c] += dout[r,c] over rows r in increasing order (accumulated on top of
// the language-model head's contribution).
void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp,
                      int c0, int c1, int B, int T, int C);

// out (rows,C) = (inp - mean) * rstd * weight + bias; mean and rstd (rows) saved. Rows [r0, r1).
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                       const float *weight, const float *bias, int r0, int r1, int C);
// dinp (rows,C) = dresidual + d(layernorm)/d(inp) . dout for rows [r0, r1); dresidual is
// the gradient arriving through the residual connection (NULL when there is none).
void layernorm_backward_input(float *dinp, const float *dresidual, const float *dout,
                              const float *inp, const float *weight, const float *mean,
                              const float *rstd, int r0, int r1, int C);
// dweight[c] = sum_r norm[r,c]*dout[r,c], dbias[c] = sum_r dout[r,c] over all rows in
// increasing order, for channels [c0, c1); overwritten.
void layernorm_backward_params(float *dweight, float *dbias, const float *dout,
                               const float *inp, const float *mean, const float *rstd,
                               int c0, int c1, int rows, int C);

// Causal self-attention for query rows [r0, r1) and every head.
// qkv (B,T,3C) = [q | k | v]; att (B,T,NH,T) softmax weights (entries t2 <= t written);
// out (B,T,C).
void attention_forward(float *out, float *att, const float *qkv, int r0, int r1,
                       int T, int C, int NH);
// For (sequence, head) pairs p in [p0, p1), p = b*NH + h: the gradients of that head's
// q, k and v columns of every row of sequence b (overwritten) from dout (B,T,C).
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                        int p0, int p1, int T, int C, int NH);

// Zeroes head h's q, k and v columns of every row of one sequence's qkv
// gradient (T, 3C), before attention_backward accumulates into them.
void zero_head_gradients(float *dqkv_seq, int T, int C, int hs, int h);

// out = gelu(inp) (tanh approximation) on rows [r0, r1) of width N.
void gelu_forward(float *out, const float *inp, int r0, int r1, int N);
// dinp = gelu'(inp) * dout, overwritten, rows [r0, r1) of width N.
void gelu_backward(float *dinp, const float *inp, const float *dout, int r0, int r1, int N);

// out = a + b on rows [r0, r1) of width N.
void residual_forward(float *out, const float *a, const float *b, int r0, int r1, int N);

// probs (rows,Vp) = softmax over the first V logits (padded entries 0);
// losses[r] = -log probs[r, targets[r]]. Rows [r0, r1).
void crossentropy_softmax_forward(float *probs, float *losses, const float *logits,
                                  const int *targets, int r0, int r1, int V, int Vp);
// dlogits = (probs - onehot(target)) * dloss, written over probs (same buffer allowed).
void crossentropy_softmax_backward(float *dlogits, const float *probs, const int *targets,
                                   float dloss, int r0, int r1, int V, int Vp);
// Mean of losses[0..n), summed in increasing order.
float mean_loss(const float *losses, int n);

// AdamW with bias correction and decoupled weight decay on elements [e0, e1).
// step is 1 for the first update.
void adamw_update(float *params, const float *grads, float *m, float *v, size_t e0, size_t e1,
                  float lr, float beta1, float beta2, float eps, float weight_decay, int step);

#endif
