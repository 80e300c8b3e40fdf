// Oracle versions of the gemm.h products (same contract, plain loops).
#ifndef GEMM_NAIVE_H
#define GEMM_NAIVE_H
void matmul_forward_rows_naive(float *out, const float *inp, const float *w, const float *bias,
                               int r0, int r1, int IC, int OC);
void matmul_backward_input_rows_naive(float *dinp, const float *dout, const float *w,
                                      int r0, int r1, int IC, int OC);
void matmul_backward_weight_channels_naive(float *dw, float *dbias, const float *dout,
                                           const float *inp, int o0, int o1, int rows,
                                           int IC, int OC);
#endif
