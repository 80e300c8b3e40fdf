// Work and compulsory memory traffic of an operation of the step: the model
// side of "is this kernel memory bound?". The counts describe the kernels of
// kernels.c and gemm.h as written, not a cache simulation.
//
// FLOPs: a fused multiply-add counts 2; add, subtract, multiply, divide,
// sqrt, exp, log, tanh and cosh 1 each. Comparisons (the max of a softmax),
// selects, negations, zero fills and loop-invariant scalars (1/sqrt(hs),
// AdamW's bias corrections, (1 - beta)) count 0. The build uses
// -ffp-contract=off, so `a += b * c` outside gemm.h is a multiply and an add:
// 2 either way.
//
// Bytes: compulsory traffic, 4 bytes per float and per token id. Every
// element a kernel reads is read once and every element it writes is written
// once, however often the loops touch it (the re-reads of a matmul's weight
// for every row, of attention's keys for every query, are reuse a cache could
// hold, so they are not compulsory). Conventions:
//   - read-modify-write (`+=` into memory that holds a value from before the
//     kernel: AdamW's params, m and v, encoder_bwd's dwte rows) counts a read
//     and a write;
//   - an output that the kernel first overwrites and then accumulates into
//     (attention_bwd's dqkv, matmul_bwd_weight's dw, layernorm_bwd_params)
//     counts one write;
//   - in place (crossentropy_bwd writes dlogits over probs): the read of the
//     V real entries and the write of all Vp entries, as if they were two
//     buffers;
//   - gathers (encoder rows wte[token]) count one row per token, i.e. assume
//     the batch's tokens are distinct: an upper bound of the compulsory
//     traffic, exact for batches without repeated tokens;
//   - write-allocate (reading a line before writing it) is not counted, as in
//     STREAM's own byte counting that the ceilings use.
//
// Per kernel, for a range of the operation (step.h); R = rows of the range
// (sequences x tokens), X = tokens of the range, nb = sequences of the range,
// K = channels of a channel range, N = B*T all rows, S = sum over the range's
// tokens t of (t+1) (causal keys per query), S_T = T(T+1)/2, hs = C/NH:
//
//   load_batch            flops 0;  bytes: write inputs and targets 8*B*T
//   encoder_fwd           flops R*C (one add);
//                         read tokens R, wte rows R*C, wpe rows X*C; write R*C
//   layernorm_fwd         flops R*(8C + 5): mean C adds + 1 div, variance C
//                         subtracts + C FMAs + 1 div, rstd add + sqrt + div,
//                         output 4 per element (sub, mul, mul, add);
//                         read R*C + weight C + bias C; write R*C + mean R + rstd R
//   pack_weight_fwd,      flops 0; for K columns of the packed operand (output
//   pack_weight_bwd_input channels of the forward product: rows of w; input channels
//                         of the input gradient: columns of w), each D floats deep
//                         (D = IC forward, OC for the input gradient): read D*K;
//                         write D*K, and the chunk that ends at the last column also
//                         D*(padded - columns): the zero padding up to the kernels'
//                         panel width (gemm.h: matmul_packed_floats / D)
//   matmul_fwd            flops 2*R*IC*OC (the bias is the FMA chain's initial
//                         value: no extra operation);
//                         read inp R*IC + weight OC*IC + bias OC; write R*OC;
//                         on a packed weight, its packed floats instead of OC*IC
//   matmul_bwd_input      flops 2*R*IC*OC; read dout R*OC + weight OC*IC (or its
//                         packed floats); write R*IC
//   matmul_bwd_weight     flops 2*N*K*IC + (bias) N*K adds for dbias;
//                         read dout columns N*K + inp N*IC; write dw K*IC + (bias) dbias K
//   attention_fwd         per (row, head): scores (t+1)*(2hs FMA + 1 scale),
//                         softmax 3(t+1) (sub, exp, add) + 1 div + (t+1) mul,
//                         weighted sum 2hs(t+1) (mul, add) =>
//                         flops nb*NH*(S*(4hs + 5) + X);
//                         read q nb*X*C, k and v of tokens [0, x1) nb*x1*2C;
//                         write out nb*X*C and the causal weights nb*NH*S
//   attention_bwd         per (sequence, head) and per causal pair (t, t2):
//                         datt 2hs, dv 2hs, wsum 2, dpre 3, dq 2hs, dk 2hs =>
//                         flops nb*nh*S_T*(8hs + 5) for nh heads of the range;
//                         read dout nb*T*nh*hs, q,k,v nb*T*3*nh*hs, weights nb*nh*S_T;
//                         write dqkv nb*T*3*nh*hs
//   residual_fwd          flops R*W; read 2*R*W; write R*W (W = width)
//   gelu_fwd              flops 9*R*W: per element 0.044715*x*x*x 3 mul, x + cube,
//                         * sqrt(2/pi), tanh, 1 + tanh, 0.5*x, final mul;
//                         read R*W; write R*W
//   gelu_bwd              flops 20*R*W: per element cube 3, tanh argument 2, tanh,
//                         cosh, cosh^2, 1/cosh^2, 0.5*(1 + tanh) 2, the sech^2 term
//                         7 (x*0.5, *sech2, *sqrt(2/pi), 3*0.044715*x*x 2 (constant
//                         folded), 1 + ., *), sum of the two terms, * dout;
//                         read inp and dout 2*R*W; write R*W
//   crossentropy_fwd      flops R*(4V + 2): exp loop 3V (sub, exp, add), 1 div,
//                         V normalising muls, 1 log;
//                         read logits R*V (the padding is not read) + targets R;
//                         write probs R*Vp (padding zeroed) + losses R
//   loss_mean             flops N + 1; read losses N; write the mean 1
//   crossentropy_bwd      flops 2*R*V (sub, mul); read probs R*V + targets R;
//                         write dlogits R*Vp (in place, see above)
//   layernorm_bwd_input   flops R*(13C + 2) (+ R*C adds with a residual gradient):
//                         first pass 6 per element, 2 divs, second pass 7 per
//                         element; read dout R*C + inp R*C + weight C + mean R +
//                         rstd R (+ dresidual R*C); write R*C
//   layernorm_bwd_params  flops 5*N*K (norm 2, dweight 2, dbias 1);
//                         read dout and inp columns 2*N*K + mean and rstd 2N;
//                         write dweight K + dbias K
//   encoder_bwd           flops 2*N*K (one add into dwpe, one into dwte per
//                         element); read dout columns N*K + tokens N; write dwpe
//                         T*K; read-modify-write dwte rows N*K (read and write)
//   adamw                 per element E of the range: 16 flops (m 3, v 4, two
//                         bias-correction divs, sqrt, add eps, div, weight decay
//                         mul and add, lr mul, subtract); read grads E,
//                         read-modify-write params, m, v 3E: 28 bytes per element
//
// A range's traffic is that of the chunk alone: a matmul_bwd_weight chunk reads
// all of inp, so the chunks of one operation add up to more bytes than the
// whole operation (and to exactly its FLOPs).
#ifndef TRAFFIC_H
#define TRAFFIC_H

#include <stdint.h>
#include <stdio.h>
#include "step.h"

typedef struct {
    int64_t flops;
    int64_t bytes_read;
    int64_t bytes_written;
} Traffic;

// FLOPs and compulsory bytes of `op` on `range` (a range of op_extents()).
Traffic op_traffic(const StepDescription *step, const Op *op, Range range);
// The same for the whole operation.
Traffic op_traffic_full(const StepDescription *step, const Op *op);

static inline int64_t traffic_bytes(Traffic t) { return t.bytes_read + t.bytes_written; }

// One JSON object per line for every operation of the step:
// {"op", "kernel", "label", "layer", "phase", "split", "flops", "bytes",
//  "bytes_read", "bytes_written", "intensity"} (intensity = flops / bytes).
// Returns 0, or -1 when writing failed.
int traffic_write_json(const StepDescription *step, FILE *out);

#endif
