// The three matrix products of a linear layer, on explicit ranges.
//
// Every output element is ONE fused-multiply-add chain over the reduction
// index in increasing order, starting from the stated initial value. This
// contract is what makes a step bit-identical however its work is split or
// tiled: a tile boundary, a thread boundary or a vector width never changes
// the order in which an element's products are added. Fast implementations
// (register tiles, packed panels, AVX-512) must reproduce the plain loops of
// gemm_naive.c bit for bit; tests/test_gemm checks that.
//
// Shapes (row-major):
//   inp  (rows, IC)   input activations, rows = B*T
//   w    (OC, IC)     weight, PyTorch's nn.Linear layout
//   bias (OC)         may be NULL
//   out  (rows, OC)
#ifndef GEMM_H
#define GEMM_H

#include <stddef.h>

// out[r,o] = fma-chain over i = 0..IC-1 of inp[r,i]*w[o,i], starting from bias[o] (0 if no bias)
// for rows r in [r0, r1) and every output channel o.
void matmul_forward_rows(float *out, const float *inp, const float *w, const float *bias,
                         int r0, int r1, int IC, int OC);

// dinp[r,i] = fma-chain over o = 0..OC-1 of dout[r,o]*w[o,i], starting from 0,
// for rows r in [r0, r1). dinp is overwritten, not accumulated.
void matmul_backward_input_rows(float *dinp, const float *dout, const float *w,
                                int r0, int r1, int IC, int OC);

// The same two products on a block: rows [r0, r1) and output columns [c0, c1)
// (output channels o of the forward product, input channels i of the input
// gradient). Each element's chain is the one above, so any block split gives
// the same bits; a split along columns lets threads share the packing of w.
void matmul_forward_block(float *out, const float *inp, const float *w, const float *bias,
                          int r0, int r1, int c0, int c1, int IC, int OC);
void matmul_backward_input_block(float *dinp, const float *dout, const float *w,
                                 int r0, int r1, int c0, int c1, int IC, int OC);

// Packed weights: the chunks of one product share one packing of its weight.
//
// The fast products read their weight as an operand B (K x N) packed into
// panels; a call that is given w packs B itself, all of it, however few rows
// it computes. A product cut into row chunks can instead pack its weight once
// into a buffer and give every chunk the packed form:
//   forward         K = IC, N = OC, B(k,n) = w[n*IC + k]
//   input gradient  K = OC, N = IC, B(k,n) = w[k*IC + n]
// The packed form does not depend on the rows a call computes: K is cut into
// blocks from K alone, and for each block, for each panel of the kernel set's
// panel width (NR) of N, the block's rows of the panel are contiguous, zero past
// column N-1. It can be packed by column ranges (pieces of it in parallel, each
// writing only its columns' floats), and a product on it gives exactly the bits
// of the product on w (the contract above: blocking only pauses a chain).
//
// Floats of the packed form of a (K x N) operand: of the forward product's
// weight matmul_packed_floats(IC, OC), of the input gradient's
// matmul_packed_floats(OC, IC). 0 when the kernel set has no packed form (the
// reference set, whose loops read w as it is): then nothing below may be called.
size_t matmul_packed_floats(int K, int N);
// Columns of one panel of the packed form (the kernels' NR; 1 for a set
// without one): a product on columns [c0, c1) of a packed operand reads every
// float of the panels those columns fall in, so its data dependencies are on
// whole panels.
int matmul_panel_columns(void);
// Packs output channels [n0, n1) of the forward product's weight (rows of w) /
// input channels [n0, n1) of the input gradient's (columns of w) into `packed`
// (64-byte aligned, matmul_packed_floats floats). The range that ends at N also
// writes the last panel's zero padding. Ranges that share a panel write disjoint
// floats of it.
void matmul_pack_forward_weight(float *packed, const float *w, int n0, int n1, int IC, int OC);
void matmul_pack_backward_input_weight(float *packed, const float *w, int n0, int n1, int IC, int OC);
// matmul_forward_block and matmul_backward_input_block on the packed weight:
// the same bits.
void matmul_forward_packed(float *out, const float *inp, const float *packed, const float *bias,
                           int r0, int r1, int c0, int c1, int IC, int OC);
void matmul_backward_input_packed(float *dinp, const float *dout, const float *packed,
                                  int r0, int r1, int c0, int c1, int IC, int OC);

// dw[o,i] = fma-chain over r = 0..rows-1 of dout[r,o]*inp[r,i], starting from 0;
// dbias[o] = sum over r = 0..rows-1 of dout[r,o] in increasing r (plain adds), if dbias != NULL;
// for output channels o in [o0, o1). dw and dbias are overwritten.
void matmul_backward_weight_channels(float *dw, float *dbias, const float *dout, const float *inp,
                                     int o0, int o1, int rows, int IC, int OC);
// The same on a block of dw: output channels [o0, o1) x input channels [i0, i1)
// (dw's rows and columns). Each element's chain is the one above, so a tile
// of dw gives the bits of the whole; dbias (if not NULL) gets its sums for
// [o0, o1), whatever the input channels: give it to one tile per row block.
void matmul_backward_weight_block(float *dw, float *dbias, const float *dout, const float *inp,
                                  int o0, int o1, int i0, int i1, int rows, int IC, int OC);

#endif
