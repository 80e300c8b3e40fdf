// Fast versions of the three linear-layer products of gemm.h.
//
// All three are one general product C(M,N) = init + A(M,K) B(K,N), computed
// Goto-style: a block of A (mc x kc) is packed into micro-panels of MR rows,
// B is packed into panels of kc x NR (zero-padded past the last column), and
// a register tile of MR x NR accumulators walks the reduction index k
// upwards. Each vector lane holds one output element and each step is one
// FMA, so every element is exactly the fma chain of gemm_naive.c. K is cut
// into blocks: between blocks the partial sums sit in C itself (a float
// stored and reloaded is the same float), so blocking changes where the chain
// pauses, never its order. Ragged edges run the same tile code (fewer rows,
// or a full-width tile on a copy), so they give the interior's bits.
//
//   product                   M        N    K     A(m,k)           B(k,n)
//   forward                   rows     OC   IC    inp[m*IC+k]      w[n*IC+k]
//   backward, input           rows     IC   OC    dout[m*OC+k]     w[k*IC+n]
//   backward, weight          chans    IC   rows  dout[k*OC+m]     inp[k*IC+n]
//
// The micro-kernel is chosen at build time: AVX-512 (8 x 32 tile), AVX2+FMA
// (6 x 16 tile), or plain C with fmaf (4 x 16 tile) that compilers vectorize;
// -DGEMM_MR (up to 14) and -DGEMM_NV (1 to 4 vectors a row) give other tiles. Scratch lives on the stack, about
// 870 KB per call at most (packed A <= 768 KB, packed B <= 96 KB; OpenMP's
// worker threads get 4 MB (LLVM) or the process's stack limit, 8 MB, unless
// OMP_STACKSIZE says otherwise); there is no global state, so calls on
// disjoint ranges may run concurrently from any number of threads.
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE  // sysconf's cache sizes under -std=c11
#endif
#include <math.h>
#include <stddef.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif
#include "gemm.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

// GEMM_VBITS: the vector width of the micro-kernel (512, 256, or 0 for the
// portable one).
#if defined(__AVX512F__)
#define GEMM_VBITS 512
#elif defined(__AVX2__) && defined(__FMA__)
#define GEMM_VBITS 256
#else
#define GEMM_VBITS 0
#endif

#if GEMM_VBITS == 512
#ifndef GEMM_MR
#define GEMM_MR 8
#endif
#ifndef GEMM_NV
#define GEMM_NV 2
#endif
#define GEMM_NR (16 * GEMM_NV)
#elif GEMM_VBITS == 256
#ifndef GEMM_MR
#define GEMM_MR 6
#endif
#ifndef GEMM_NV
#define GEMM_NV 2
#endif
#define GEMM_NR (8 * GEMM_NV)
#else
#define GEMM_MR 4
#define GEMM_NR 16
#endif

// Blocking. K is cut into equal blocks of at most GEMM_KC (multiples of 8
// where possible; less on a small L2), so the block size kc depends on K
// alone (gemm_kstep). A block of A, mc x kc, is packed and kept in L2; the
// rows are cut into as few equal blocks as the budget allows (row_block;
// a_budget_floats: the L2 size that sysconf reports less 256 KB, at most
// GEMM_A_FLOATS, the stack buffer's size), because each extra row block
// means packing all of B again. B is packed kc x NB at
// a time, in panels of kc x NR that every row tile of the A block sweeps.
// NC columns of C are finished over all of K before moving on, so those
// partial sums stay in cache between K blocks.
//
// Measured on Zen 4 (1 MB L2; gemm products of d12 at 256 rows, variants
// interleaved): kc 160 -> 384 (A budget 165 KB -> 384 KB, set for Zen 3's
// 512 KB L2) took the forward and input-gradient products from 5 to 2 K
// blocks at K = 768 (each block reads and writes all of C again, C from L3
// when N >= 2304) and gained 2-10% on every shape but the weight gradient
// (fc forward +9%, fcproj input gradient +8%); kc 512 and 768 gave the same
// as 384 within noise, 192-320 less. A budget 768 KB (mc 768 at K = 256)
// for the weight gradients, which pack all of B (the input, K x N) again
// for each block of mc channels: fcproj's (M = 768) +9% with its one row
// block, lmhead's +3-5%; 512 KB gained nothing over 384 KB there. Later,
// with the prefetch working: kc 768 (K = 768 in one block) +1% on the
// forward products, +1-3% on fcproj's input gradient, the rest even; not
// taken for a 192 KB larger stack frame and all of L2 for A. B blocks of
// 128 or 32 columns (GEMM_NB) instead of 64: even.
#ifndef GEMM_KC
#define GEMM_KC 384
#endif
// A reduction of at most this length is one K block (kc = K) where the A
// budget holds GEMM_KC_ROWS rows of it: C is then read and written once.
// Measured on Zen 5 (48 KB L1, 1 MB L2), builds interleaved, 4 rounds,
// median ratio against kc 384 at K = 768: lmhead forward +5.5%, attproj
// input gradient +4.2%, qkv forward +3.5%, attproj and fc forward +2.2%,
// fcproj input gradient -3.4%; the longer reductions keep GEMM_KC (fcproj
// forward, K = 3072, was 4.7% slower in blocks of 768). On Zen 4 the same
// had been +1% (see above).
#ifndef GEMM_KC_ONE_BLOCK
#define GEMM_KC_ONE_BLOCK 768
#endif
#define GEMM_KC_MAX (GEMM_KC_ONE_BLOCK > GEMM_KC ? GEMM_KC_ONE_BLOCK : GEMM_KC)
#ifndef GEMM_A_FLOATS
#define GEMM_A_FLOATS (768 * 256)
#endif
#if GEMM_A_FLOATS < GEMM_KC * 16
#error "GEMM_A_FLOATS must hold at least 16 rows of GEMM_KC"
#endif
// The L2 size assumed where sysconf does not report one; the part of L2 left
// to other data than packed A; the row count kc is sized for.
#ifndef GEMM_L2_DEFAULT
#define GEMM_L2_DEFAULT (512 * 1024)
#endif
#ifndef GEMM_L2_RESERVE
#define GEMM_L2_RESERVE (256 * 1024)
#endif
#ifndef GEMM_KC_ROWS
#define GEMM_KC_ROWS 256
#endif
#ifndef GEMM_NB
#if 64 % GEMM_NR == 0
#define GEMM_NB 64
#else
#define GEMM_NB (2 * GEMM_NR)
#endif
#endif
#ifndef GEMM_NC
#define GEMM_NC 3072
#endif
#ifndef GEMM_A_COLS_GROUP
#define GEMM_A_COLS_GROUP 4
#endif
// Rows of B that pack_b_rows fetches ahead of the one it copies. There B
// comes from memory in short runs (a block is kc rows of NB floats at the
// weight's row stride), too short for the hardware prefetchers, and the copy
// alone keeps too few misses in flight; the block-ahead prefetch below did
// not cover it (it was not running then: see PREFETCH_BLOCK). Measured (perf, 64-row calls of fc's input gradient): packing
// went from 28-36% to 19-26% of the call's time. The same look-ahead in the
// transposing packer (pack_b_cols), and transposing 16 k at a time there,
// showed no gain and are not done.
#ifndef GEMM_PACK_AHEAD_ROWS
#define GEMM_PACK_AHEAD_ROWS 8
#endif

#if defined(__GNUC__)
#define GEMM_INLINE static inline __attribute__((always_inline))
#else
#define GEMM_INLINE static inline
#endif

enum { A_ROWS = 0, A_COLS = 1 };

static inline int min_int(int a, int b) { return a < b ? a : b; }

// Software prefetches. On x86 they are asm statements: gcc takes
// __builtin_prefetch for an operation without side effects, and may find the
// block prefetch below (a static function that does nothing else) "const"
// and delete its calls. PREFETCH_BLOCK fetches into L2 (prefetcht1: into L1
// the lines would displace the panel in use); PREFETCH_W is prefetchw where
// the target has it.
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define GEMM_PF_ASM(insn, p) __asm__ volatile(insn " %0" : : "m"(*(const char *)(p)))
#define PREFETCH_R(p) GEMM_PF_ASM("prefetcht0", p)
#if defined(__PRFCHW__)
#define PREFETCH_W(p) GEMM_PF_ASM("prefetchw", p)
#else
#define PREFETCH_W(p) GEMM_PF_ASM("prefetcht0", p)
#endif
#define PREFETCH_BLOCK(p) GEMM_PF_ASM("prefetcht1", p)
#elif defined(__GNUC__)
#define PREFETCH_R(p) __builtin_prefetch(p, 0, 3)
#define PREFETCH_W(p) __builtin_prefetch(p, 1, 3)
#define PREFETCH_BLOCK(p) __builtin_prefetch(p, 0, 2)
#else
#define PREFETCH_R(p) ((void)(p))
#define PREFETCH_W(p) ((void)(p))
#define PREFETCH_BLOCK(p) ((void)(p))
#endif

static inline void prefetch_read(const float *p) { PREFETCH_R(p); }

// ----------------------------------------------------------------------------
// Micro-kernels: C(mr x NR) = Cin + A(mr x kc) * P(kc x NR), P packed with row
// stride NR. Cin is read with row stride ldcin (0 = the same init row for every
// row: the bias). mr is a compile-time constant in every instantiation.

#if GEMM_VBITS > 0

// NV vectors per row (NR = NV * lanes; 2 by default). The accumulators are
// named variables, not an array: compilers keep arrays of vectors on the
// stack, which costs a store per FMA.
//
// Tile shapes measured on Zen 4 (AVX-512 on 256-bit pipes). Alone, on data
// in L1 or L2, every shape tried runs at 97-100% of peak: zmm 8x32, 12x32,
// 14x32, 10x32, 8x48, 6x64, 8x64 and ymm 6x16, 12x16, 8x24, 6x32, 14x16,
// with the broadcast as its own instruction or folded into the FMA. In the
// products (d12, 256 rows, interleaved runs): 12x32 -1% overall, 14x32 -3%,
// 8x48 +1% within noise (better on the input gradients, worse on the weight
// gradients), ymm 12x16 -15%. 8x32 is kept.
#if GEMM_VBITS == 512
typedef __m512 vec;
#define VLANES 16
#define vload(p) _mm512_load_ps(p)
#define vloadu(p) _mm512_loadu_ps(p)
#define vstoreu(p, x) _mm512_storeu_ps(p, x)
#define vbcast(p) _mm512_set1_ps(*(p))
#define vfma(x, y, z) _mm512_fmadd_ps(x, y, z)
#define vzero() _mm512_setzero_ps()
#else
typedef __m256 vec;
#define VLANES 8
#define vload(p) _mm256_load_ps(p)
#define vloadu(p) _mm256_loadu_ps(p)
#define vstoreu(p, x) _mm256_storeu_ps(p, x)
#define vbcast(p) _mm256_broadcast_ss(p)
#define vfma(x, y, z) _mm256_fmadd_ps(x, y, z)
#define vzero() _mm256_setzero_ps()
#endif

#define GEMM_CAT_(a, b) a##b
#define GEMM_CAT(a, b) GEMM_CAT_(a, b)
#define ROWS_1(X) X(0)
#define ROWS_2(X) ROWS_1(X) X(1)
#define ROWS_3(X) ROWS_2(X) X(2)
#define ROWS_4(X) ROWS_3(X) X(3)
#define ROWS_5(X) ROWS_4(X) X(4)
#define ROWS_6(X) ROWS_5(X) X(5)
#define ROWS_7(X) ROWS_6(X) X(6)
#define ROWS_8(X) ROWS_7(X) X(7)
#define ROWS_9(X) ROWS_8(X) X(8)
#define ROWS_10(X) ROWS_9(X) X(9)
#define ROWS_11(X) ROWS_10(X) X(10)
#define ROWS_12(X) ROWS_11(X) X(11)
#define ROWS_13(X) ROWS_12(X) X(12)
#define ROWS_14(X) ROWS_13(X) X(13)
#define FOR_ROWS(X) GEMM_CAT(ROWS_, GEMM_MR)(X)

// Per row i of the tile: accumulators c<i>0 .. c<i>(NV-1).
#define VECS_1(X, i) X(i, 0)
#define VECS_2(X, i) VECS_1(X, i) X(i, 1)
#define VECS_3(X, i) VECS_2(X, i) X(i, 2)
#define VECS_4(X, i) VECS_3(X, i) X(i, 3)
#define ROW_VECS(X, i) GEMM_CAT(VECS_, GEMM_NV)(X, i)

GEMM_INLINE void tile(int mr, int kc, const float *a, const float *p,
                      const float *cin, ptrdiff_t ldcin, float *c, ptrdiff_t ldc) {
#define DECLARE1(i, v) vec c##i##v = vzero();
#define LOAD1(i, v) c##i##v = vloadu(cin + i * ldcin + v * VLANES);
#define FMA1(i, v) c##i##v = vfma(x, b##v, c##i##v);
#define STORE1(i, v) vstoreu(c + i * ldc + v * VLANES, c##i##v);
#define BLOAD1(v) vec b##v = vload(p + (ptrdiff_t)k * GEMM_NR + v * VLANES);
#define BLOADS_1 BLOAD1(0)
#define BLOADS_2 BLOADS_1 BLOAD1(1)
#define BLOADS_3 BLOADS_2 BLOAD1(2)
#define BLOADS_4 BLOADS_3 BLOAD1(3)
#define DECLARE(i) ROW_VECS(DECLARE1, i)
#define LOAD(i) if (mr > i) { ROW_VECS(LOAD1, i) }
#define UPDATE(i)                                                   \
    if (mr > i) {                                                   \
        vec x = vbcast(a + (ptrdiff_t)k * GEMM_MR + i);             \
        ROW_VECS(FMA1, i)                                           \
    }
#define STORE(i) if (mr > i) { ROW_VECS(STORE1, i) }
    FOR_ROWS(DECLARE)
    FOR_ROWS(LOAD)
    // Unrolled by 4: the loop's own add/compare/branch otherwise takes issue
    // slots from the FMAs (measured: about 90% -> 99% of peak on Zen 3).
#pragma GCC unroll 4
    for (int k = 0; k < kc; k++) {
        GEMM_CAT(BLOADS_, GEMM_NV)
        FOR_ROWS(UPDATE)
    }
    FOR_ROWS(STORE)
#undef DECLARE1
#undef LOAD1
#undef FMA1
#undef STORE1
#undef BLOAD1
#undef BLOADS_1
#undef BLOADS_2
#undef BLOADS_3
#undef BLOADS_4
#undef DECLARE
#undef LOAD
#undef UPDATE
#undef STORE
}

#else

GEMM_INLINE void tile(int mr, int kc, const float *a, const float *p,
                      const float *cin, ptrdiff_t ldcin, float *c, ptrdiff_t ldc) {
    float acc[GEMM_MR][GEMM_NR];
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < GEMM_NR; j++) acc[i][j] = cin[i * ldcin + j];
    for (int k = 0; k < kc; k++) {
        const float *b = p + (ptrdiff_t)k * GEMM_NR;
        for (int i = 0; i < mr; i++) {
            float x = a[(ptrdiff_t)k * GEMM_MR + i];
            for (int j = 0; j < GEMM_NR; j++) acc[i][j] = fmaf(x, b[j], acc[i][j]);
        }
    }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < GEMM_NR; j++) c[i * ldc + j] = acc[i][j];
}

#endif

// One instantiation per row count, so every loop above has constant bounds
// and the accumulators live in registers.
#define GEMM_TILE_FN(name, mr)                                                               \
    static void name(int kc, const float *a, const float *p, const float *cin, ptrdiff_t ldcin, \
                     float *c, ptrdiff_t ldc) {                                              \
        tile(mr, kc, a, p, cin, ldcin, c, ldc);                                              \
    }
typedef void (*tile_fn)(int, const float *, const float *, const float *, ptrdiff_t, float *,
                        ptrdiff_t);
GEMM_TILE_FN(tile_1, 1)
#if GEMM_MR >= 2
GEMM_TILE_FN(tile_2, 2)
#endif
#if GEMM_MR >= 3
GEMM_TILE_FN(tile_3, 3)
#endif
#if GEMM_MR >= 4
GEMM_TILE_FN(tile_4, 4)
#endif
#if GEMM_MR >= 5
GEMM_TILE_FN(tile_5, 5)
#endif
#if GEMM_MR >= 6
GEMM_TILE_FN(tile_6, 6)
#endif
#if GEMM_MR >= 7
GEMM_TILE_FN(tile_7, 7)
#endif
#if GEMM_MR >= 8
GEMM_TILE_FN(tile_8, 8)
#endif
#if GEMM_MR >= 9
GEMM_TILE_FN(tile_9, 9)
#endif
#if GEMM_MR >= 10
GEMM_TILE_FN(tile_10, 10)
#endif
#if GEMM_MR >= 11
GEMM_TILE_FN(tile_11, 11)
#endif
#if GEMM_MR >= 12
GEMM_TILE_FN(tile_12, 12)
#endif
#if GEMM_MR >= 13
GEMM_TILE_FN(tile_13, 13)
#endif
#if GEMM_MR >= 14
GEMM_TILE_FN(tile_14, 14)
#endif
static const tile_fn tiles[GEMM_MR + 1] = {
    NULL, tile_1,
#if GEMM_MR >= 2
    tile_2,
#endif
#if GEMM_MR >= 3
    tile_3,
#endif
#if GEMM_MR >= 4
    tile_4,
#endif
#if GEMM_MR >= 5
    tile_5,
#endif
#if GEMM_MR >= 6
    tile_6,
#endif
#if GEMM_MR >= 7
    tile_7,
#endif
#if GEMM_MR >= 8
    tile_8,
#endif
#if GEMM_MR >= 9
    tile_9,
#endif
#if GEMM_MR >= 10
    tile_10,
#endif
#if GEMM_MR >= 11
    tile_11,
#endif
#if GEMM_MR >= 12
    tile_12,
#endif
#if GEMM_MR >= 13
    tile_13,
#endif
#if GEMM_MR >= 14
    tile_14,
#endif
};

#if defined(__AVX2__)
// In-register transpose of an 8 x 8 block: r[j][q] -> r[q][j].
GEMM_INLINE void transpose8(__m256 r[8]) {
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// dst[q*lds + j] = src[j*ldsrc + q] for an 8 x 8 block (dst 32-byte aligned).
GEMM_INLINE void transpose8x8(float *dst, ptrdiff_t lds, const float *src, ptrdiff_t ldsrc) {
    __m256 r[8];
    for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(src + j * ldsrc);
    transpose8(r);
    for (int q = 0; q < 8; q++) _mm256_store_ps(dst + q * lds, r[q]);
}
#endif

// ----------------------------------------------------------------------------
// Packing a block of A (mc x kc) into micro-panels of MR rows:
// Q[t*MR*kc + k*MR + i] = A(m0 + t*MR + i, k0 + k), so the kernel's broadcasts
// walk one contiguous stream. Rows past the end of a short last panel are
// left unwritten; the kernel for that row count never reads them.

// A(m,k) = a[m*lda + k] (activations, output gradients): a transpose, done
// 8 k at a time in registers where AVX2 is there. Each k's MR values are
// stored as 8 floats; with MR = 6 the two extra lanes land on the next k's
// slots and are overwritten by the next store (or, past a panel's end, by
// the next panel or never read), which is why apack has 8 floats of slack.
static void pack_a_rows(float *q, const float *a, ptrdiff_t lda, int m0, int mc, int k0, int kc) {
    for (int t0 = 0; t0 < mc; t0 += GEMM_MR) {
        int mr = mc - t0 < GEMM_MR ? mc - t0 : GEMM_MR;
        float *dst = q + (ptrdiff_t)t0 * kc;
        const float *src = a + (ptrdiff_t)(m0 + t0) * lda + k0;
        int k = 0;
#if defined(__AVX2__)
        if (mr == GEMM_MR) {
            for (; k + 8 <= kc; k += 8) {
                // Groups of 8 rows, the last group first: its 8-float
                // stores spill into the next k's first slots, which the
                // earlier groups then overwrite.
                for (int i0 = (GEMM_MR - 1) / 8 * 8; i0 >= 0; i0 -= 8) {
                    __m256 r[8];
                    for (int i = 0; i < 8; i++)
                        r[i] = i0 + i < GEMM_MR ? _mm256_loadu_ps(src + (i0 + i) * lda + k) : _mm256_setzero_ps();
                    transpose8(r);
                    for (int j = 0; j < 8; j++) _mm256_storeu_ps(dst + (k + j) * GEMM_MR + i0, r[j]);
                }
            }
        }
#endif
        for (int i = 0; i < mr; i++)
            for (int kk = k; kk < kc; kk++) dst[kk * GEMM_MR + i] = src[i * lda + kk];
    }
}

// A(m,k) = a[k*lda + m] (the output gradient read as dout^T): a copy of MR
// consecutive floats per k. Full panels copy with a constant size, which
// compilers turn into one vector move (a variable-length copy of 8 floats
// became `rep movs`, whose start-up cost made this packing about a sixth of
// the weight-gradient products' time). Full panels go in groups of
// GEMM_A_COLS_GROUP, k outer within a group: one panel at a time read 32
// bytes of each of kc rows and came back for the rest of the line after a
// sweep of all rows, by when rows OC floats apart (OC*4 a multiple of 4 KB)
// had evicted it from L1. Measured alone (384 x 256 blocks): 0.19 -> 0.11
// ns per float at OC = 768, 0.66 -> 0.19 at OC = 3072; 8 panels a group
// were slower at OC = 768 (their 8 destinations 8 KB apart share a set).
//
// With colsum (the weight gradient's bias gradient), each copied value is
// also added to colsum[m - m0], in increasing k: the sum over rows that
// otherwise took a second pass over dout (1-2% of the product).
static void pack_a_cols(float *q, const float *a, ptrdiff_t lda, int m0, int mc, int k0, int kc,
                        float *colsum) {
    int full = mc / GEMM_MR;
    for (int t0 = 0; t0 < full; t0 += GEMM_A_COLS_GROUP) {
        int g = min_int(full - t0, GEMM_A_COLS_GROUP);
        const float *src = a + (ptrdiff_t)k0 * lda + m0 + t0 * GEMM_MR;
        float *dst = q + (ptrdiff_t)t0 * GEMM_MR * kc;
        if (colsum) {
            float *cs = colsum + t0 * GEMM_MR;
            for (int k = 0; k < kc; k++)
                for (int t = 0; t < g; t++) {
                    const float *s = src + (ptrdiff_t)k * lda + t * GEMM_MR;
                    float *d = dst + (ptrdiff_t)t * GEMM_MR * kc + k * GEMM_MR;
                    for (int i = 0; i < GEMM_MR; i++) {
                        d[i] = s[i];
                        cs[t * GEMM_MR + i] += s[i];
                    }
                }
            continue;
        }
        for (int k = 0; k < kc; k++)
            for (int t = 0; t < g; t++)
                memcpy(dst + (ptrdiff_t)t * GEMM_MR * kc + k * GEMM_MR, src + (ptrdiff_t)k * lda + t * GEMM_MR,
                       GEMM_MR * sizeof(float));
    }
    int t0 = full * GEMM_MR, mr = mc - t0;
    if (mr > 0) {
        float *dst = q + (ptrdiff_t)t0 * kc;
        for (int k = 0; k < kc; k++) {
            const float *src = a + (ptrdiff_t)(k0 + k) * lda + m0 + t0;
            for (int i = 0; i < mr; i++) dst[k * GEMM_MR + i] = src[i];
            if (colsum)
                for (int i = 0; i < mr; i++) colsum[t0 + i] += src[i];
        }
    }
}

// ----------------------------------------------------------------------------
// Packing a block of B (kc x nb, nb <= NB) into panels of NR columns:
// P[q*kc*NR + k*NR + j] = B(k0 + k, n0 + q*NR + j), and 0 for columns past
// nb (those lanes compute zeros that are never stored). Packing several
// panels at once reads B in longer contiguous runs, which is what keeps the
// memory side of this (B is the weight, the operand read from memory) fast.

// B(k,n) = b[k*ldb + n]: rows of B are contiguous, so this is a row copy.
static void pack_b_rows(float *p, const float *b, ptrdiff_t ldb, int k0, int kc, int n0, int nb) {
    for (int k = 0; k < kc; k++) {
        const float *src = b + (ptrdiff_t)(k0 + k) * ldb + n0;
        if (k + GEMM_PACK_AHEAD_ROWS < kc)
            for (int j = 0; j < nb; j += 16) prefetch_read(src + GEMM_PACK_AHEAD_ROWS * ldb + j);
        for (int q = 0; q * GEMM_NR < nb; q++) {
            float *dst = p + (ptrdiff_t)q * kc * GEMM_NR + (ptrdiff_t)k * GEMM_NR;
            int nr = min_int(nb - q * GEMM_NR, GEMM_NR);
            if (nr == GEMM_NR) {
                memcpy(dst, src + q * GEMM_NR, GEMM_NR * sizeof(float));
            } else {
                memcpy(dst, src + q * GEMM_NR, (size_t)nr * sizeof(float));
                memset(dst + nr, 0, (size_t)(GEMM_NR - nr) * sizeof(float));
            }
        }
    }
}


// B(k,n) = b[n*ldb + k]: the weight read as w^T. Each panel is a transpose,
// done in 8 x 8 blocks where AVX2 is there.
//
// Eight rows of the weight at a time, along all of kc (rows outer, k inner).
// With k outer the 32 rows of a panel were read in turn, and rows 12 KB
// apart (IC = 3072) all fall in one 8-way L1 set: measured alone, packing a
// 384 x 64 block took 0.56 ns per float from L2 that way and 0.18 this way
// (0.13 for both at IC = 768); fcproj's forward product gained 6%.
static void pack_b_panel_cols(float *p, const float *b, ptrdiff_t ldb, int k0, int kc, int n0, int nr) {
    int k = 0;
#if defined(__AVX2__)
    if (nr == GEMM_NR) {
        int k8 = kc / 8 * 8;
        for (int j = 0; j < GEMM_NR; j += 8)
            for (int kk = 0; kk < k8; kk += 8)
                transpose8x8(p + (ptrdiff_t)kk * GEMM_NR + j, GEMM_NR,
                             b + (ptrdiff_t)(n0 + j) * ldb + k0 + kk, ldb);
        k = k8;
    }
#endif
    for (; k < kc; k++) {
        float *dst = p + (ptrdiff_t)k * GEMM_NR;
        for (int j = 0; j < nr; j++) dst[j] = b[(ptrdiff_t)(n0 + j) * ldb + k0 + k];
        for (int j = nr; j < GEMM_NR; j++) dst[j] = 0.0f;
    }
}

static void pack_b_cols(float *p, const float *b, ptrdiff_t ldb, int k0, int kc, int n0, int nb) {
    for (int q = 0; q * GEMM_NR < nb; q++)
        pack_b_panel_cols(p + (ptrdiff_t)q * kc * GEMM_NR, b, ldb, k0, kc, n0 + q * GEMM_NR,
                          min_int(nb - q * GEMM_NR, GEMM_NR));
}

// Software prefetch of the next B block while the current one is computed,
// and of the next K block of A: B (the weight) is read from memory once per
// call, in pieces too short and too far apart for the hardware prefetchers
// to run ahead of, and A's rows are as short. The block is
// nseg segments of len floats, segment s at base + s*stride; its lines are
// numbered 0 .. nseg*(len/16 + 1) - 1 and fetched a few per tile.
//
// Measured once it ran (Zen 4, d12 at 256 rows): into L2 (prefetcht1) the
// forward products gained 4-13% (lmhead +12%,
// fc +13% with the other changes of that commit); into L1 (prefetcht0) about
// half that, the lines displacing the panel in use. For the row-copied B of
// the input and weight gradients it depends on the pages: with 4 KB pages
// (gemm_bench's malloc) it is within +-3% either way from run to run (one
// run looked 1-3% slower with it, the next even); with 2 MB pages, as
// model.c allocates its tensors, the input gradients are 2-6% faster with it
// (three runs): it stays on. Issuing the lines from within the
// tile, one every 4 k instead of a burst before it, was 0.7% slower.
// Ordinary loads in place of prefetches cost 3-12% (a load that misses
// holds up retirement). Prefetching only every 2nd, 4th or 8th line of a
// segment, leaving the rest to the hardware prefetchers, cost 2-5%. The
// look-ahead of pack_b_rows at 0, 2, 4 or 16 rows instead of 8: even.
typedef struct {
    const float *base;
    ptrdiff_t stride;
    int nseg, len;
} BlockLines;

static BlockLines block_lines(const float *b, ptrdiff_t ldb, int b_cols, int k0, int kc, int n0, int nb) {
    BlockLines bl;
    if (b_cols) bl = (BlockLines){b + (ptrdiff_t)n0 * ldb + k0, ldb, nb, kc};
    else bl = (BlockLines){b + (ptrdiff_t)k0 * ldb + n0, ldb, kc, nb};
    if (bl.len <= 0) bl.nseg = 0;
    return bl;
}

static int block_line_count(const BlockLines *bl) { return bl->nseg * (bl->len / 16 + 1); }

static void prefetch_block_lines(const BlockLines *bl, int from, int to) {
    int per = bl->len / 16 + 1;
    to = min_int(to, block_line_count(bl));
    if (from >= to) return;
    // One division per call: the (segment, line) pair is stepped.
    int s = from / per, q = from % per;
    for (int l = from; l < to; l++) {
        PREFETCH_BLOCK(bl->base + s * bl->stride + min_int(q * 16, bl->len - 1));
        if (++q == per) q = 0, s++;
    }
}

static void prefetch_rows(const float *c, ptrdiff_t ldc, int rows) {
    // Every line a row of the tile touches (NR floats span one more line
    // than NR/16 where the row is not 64-byte aligned).
    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < GEMM_NR; j += 16) PREFETCH_W(c + i * ldc + j);
        PREFETCH_W(c + i * ldc + GEMM_NR - 1);
    }
}

// ----------------------------------------------------------------------------
// Block sizes.

// Floats of packed A per call: the L2 cache (per core, as sysconf reports
// it; GEMM_L2_DEFAULT where it does not) less GEMM_L2_RESERVE for what
// else passes through it (the B panel in use, the next B block being
// prefetched, C's lines), or half of it where L2 is smaller than twice
// that; at most the stack buffer's GEMM_A_FLOATS. glibc answers from values
// it read at start-up. 1 MB L2: 768 KB (the measured setting); 512 KB (Zen
// 3): 256 KB, where 3/4 of L2 would leave too little for the rest.
static long a_budget_floats(void) {
    long l2 = 0;
#if defined(_SC_LEVEL2_CACHE_SIZE)
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    if (l2 <= 0) l2 = GEMM_L2_DEFAULT;
    long bytes = l2 >= 2 * GEMM_L2_RESERVE ? l2 - GEMM_L2_RESERVE : l2 / 2;
    long floats = bytes / (long)sizeof(float);
    return floats < GEMM_A_FLOATS ? floats : GEMM_A_FLOATS;
}

// The largest K block: GEMM_KC, or less where the A budget does not hold
// GEMM_KC_ROWS rows of it (a 512 KB L2 gets 256), so that a typical call's
// rows stay in one row block (each more packs all of B again).
static int kc_max(void) {
    long k = a_budget_floats() / GEMM_KC_ROWS / 8 * 8;
    int floor = min_int(GEMM_KC, 64);
    return k >= GEMM_KC ? GEMM_KC : k < floor ? floor : (int)k;
}

// kc for a reduction of length K: equal blocks of at most kc_max(), rounded
// up to a multiple of 8 where that stays within it. Depends on K alone (and
// the machine), so that a weight can be packed in its K blocks ahead.
static int gemm_kstep(int K) {
    int kmax = kc_max();
    if (K <= kmax) return K;
    if (K <= GEMM_KC_ONE_BLOCK && a_budget_floats() / K >= GEMM_KC_ROWS) return K;
    int kblocks = (K + kmax - 1) / kmax;
    int kstep = (K + kblocks - 1) / kblocks;
    return min_int((kstep + 7) / 8 * 8, kmax);
}

// Rows of A per row block for M rows and K blocks of kstep: the fewest blocks
// the A budget allows, equal in size, in whole tiles (at most what the stack
// buffer holds). Each row block packs all of B again, so the count matters,
// not the budget's last rows: rounding the budget's rows down to whole tiles
// first made 256 rows on a 512 KB L2 (budget 256 rows of kc 256) a block of
// 252 and one of 4, which re-packed B for 4 rows (every d12 product 3-6%
// slower on Zen 3).
static int row_block(int M, int kstep) {
    long fit = a_budget_floats() / (kstep > 0 ? kstep : 1);
    long most = (long)GEMM_A_FLOATS / (kstep > 0 ? kstep : 1) / GEMM_MR * GEMM_MR;
    if (fit < GEMM_MR) fit = GEMM_MR;
    if (most < GEMM_MR) most = GEMM_MR;
    long blocks = (M + fit - 1) / fit;
    long mc = (M + blocks - 1) / blocks;
    mc = (mc + GEMM_MR - 1) / GEMM_MR * GEMM_MR;
    if (mc > most) mc = most;
    return mc > M ? M : (int)mc;
}

// A's column sums alone (a_cols: A(m,k) is a[k*lda + m]), in increasing k: the
// driver's colsum where there is no product to fuse them with.
static void column_sums(int M, int K, const float *a, ptrdiff_t lda, float *colsum) {
    for (int m = 0; m < M; m++) colsum[m] = 0.0f;
    for (int k = 0; k < K; k++)
        for (int m = 0; m < M; m++) colsum[m] += a[(ptrdiff_t)k * lda + m];
}

// One tile of C: mr rows of the panel whose column 0 is at cp, its columns
// [ja, jb), become init (the first K block: the initial values of one panel
// row, else NULL: C's own) plus the packed A tile times the packed B panel over
// kc. Part of a panel runs the full-width tile on a copy in `edge`, zero
// outside the columns, then keeps those columns.
static inline void run_tile(int mr, int ja, int jb, int kc, const float *ap, const float *panel, const float *init,
                            float *cp, ptrdiff_t ldc, float *edge) {
    if (ja == 0 && jb == GEMM_NR) {
        if (init) tiles[mr](kc, ap, panel, init, 0, cp, ldc);
        else tiles[mr](kc, ap, panel, cp, ldc, cp, ldc);
        return;
    }
    for (int i = 0; i < mr; i++) {
        const float *src = init ? init : cp + (ptrdiff_t)i * ldc;
        memset(edge + i * GEMM_NR, 0, GEMM_NR * sizeof(float));
        memcpy(edge + i * GEMM_NR + ja, src + ja, (size_t)(jb - ja) * sizeof(float));
    }
    tiles[mr](kc, ap, panel, edge, GEMM_NR, edge, GEMM_NR);
    for (int i = 0; i < mr; i++)
        memcpy(cp + (ptrdiff_t)i * ldc + ja, edge + i * GEMM_NR + ja, (size_t)(jb - ja) * sizeof(float));
}

// ----------------------------------------------------------------------------
// The driver. C(m,n) for m < M, n < N (row stride ldc) becomes
// init[n] (0 if init is NULL) + sum over k < K of A(m,k) B(k,n), each element
// one fma chain in increasing k. A(m,k) is a[m*lda + k], or a[k*lda + m] if
// a_cols; B(k,n) is b[k*ldb + n], or b[n*ldb + k] if b_cols.
static void gemm(int M, int N, int K, const float *a, ptrdiff_t lda, int a_cols,
                 const float *b, ptrdiff_t ldb, int b_cols, const float *init,
                 float *c, ptrdiff_t ldc, float *colsum) {
    _Alignas(64) float apack[GEMM_A_FLOATS + 8];
    _Alignas(64) float bpack[GEMM_KC_MAX * GEMM_NB];
    _Alignas(64) float init_row[GEMM_NR];
    _Alignas(64) float edge[GEMM_MR * GEMM_NR];
    if (M <= 0) return;
    if (N <= 0) {  // no product, but the column sums
        if (colsum && a_cols) column_sums(M, K, a, lda, colsum);
        return;
    }

    int kstep = gemm_kstep(K);
    int mcap = row_block(M, kstep);

    for (int m0 = 0; m0 < M; m0 += mcap) {
        int mc = min_int(M - m0, mcap);
        int ntiles = (mc + GEMM_MR - 1) / GEMM_MR;
        for (int n0 = 0; n0 < N; n0 += GEMM_NC) {
            int nc = min_int(N - n0, GEMM_NC);
            // K == 0 still needs one pass to write the initial values.
            for (int k0 = 0; k0 < K || k0 == 0; k0 += kstep) {
                int kc = min_int(K - k0, kstep);
                // colsum[m] (a_cols only) = sum over k of A(m,k), in
                // increasing k, accumulated as A is packed the first time.
                float *cs = colsum && n0 == 0 ? colsum + m0 : NULL;
                if (cs && k0 == 0)
                    for (int i = 0; i < mc; i++) cs[i] = 0.0f;
                if (a_cols) pack_a_cols(apack, a, lda, m0, mc, k0, kc, K > 0 ? cs : NULL);
                else pack_a_rows(apack, a, lda, m0, mc, k0, kc);
                // The block of A packed next (the next K block, else the
                // first of the next column block, else of the next row
                // block) and the first B block after this K block's last
                // one are fetched over all tiles of this one.
                int nk0 = k0 + kc, nm0 = m0, nn0 = n0;
                if (nk0 >= K) {
                    nk0 = 0;
                    if (n0 + nc < N) nn0 = n0 + nc;
                    else nm0 = m0 + mc, nn0 = 0;
                }
                int nkc = min_int(K - nk0, kstep), nmc = min_int(M - nm0, mcap);
                int more = nm0 < M && K > 0;
                BlockLines anext = {NULL, 0, 0, 0};
                if (more && (nk0 != k0 || nm0 != m0)) {
                    if (a_cols) anext = (BlockLines){a + (ptrdiff_t)nk0 * lda + nm0, lda, nkc, nmc};
                    else anext = (BlockLines){a + (ptrdiff_t)nm0 * lda + nk0, lda, nmc, nkc};
                }
                int acalls = ntiles * ((nc + GEMM_NR - 1) / GEMM_NR), acall = 0;
                int aper_call = (block_line_count(&anext) + acalls - 1) / acalls;
                for (int jb = n0; jb < n0 + nc; jb += GEMM_NB) {
                  int nb = min_int(n0 + nc - jb, GEMM_NB);
                  if (b_cols) pack_b_cols(bpack, b, ldb, k0, kc, jb, nb);
                  else pack_b_rows(bpack, b, ldb, k0, kc, jb, nb);
                  // The next block: the next columns, else the next K block.
                  BlockLines next = {NULL, 0, 0, 0};
                  if (jb + GEMM_NB < n0 + nc)
                      next = block_lines(b, ldb, b_cols, k0, kc, jb + GEMM_NB,
                                         min_int(n0 + nc - jb - GEMM_NB, GEMM_NB));
                  else if (more)
                      next = block_lines(b, ldb, b_cols, nk0, nkc, nn0, min_int(N - nn0, GEMM_NB));
                  int calls = ntiles * ((nb + GEMM_NR - 1) / GEMM_NR);
                  int per_call = (block_line_count(&next) + calls - 1) / calls, call = 0;
                  for (int j0 = jb; j0 < jb + nb; j0 += GEMM_NR) {
                    int nr = min_int(jb + nb - j0, GEMM_NR);
                    const float *panel = bpack + (ptrdiff_t)(j0 - jb) * kc;
                    if (k0 == 0) {
                        for (int j = 0; j < GEMM_NR; j++)
                            init_row[j] = (init && j < nr) ? init[j0 + j] : 0.0f;
                    }
                    for (int t = 0; t < ntiles; t++) {
                        int t0 = t * GEMM_MR, mr = min_int(mc - t0, GEMM_MR);
                        const float *ap = apack + (ptrdiff_t)t0 * kc;
                        float *cp = c + (ptrdiff_t)(m0 + t0) * ldc + j0;
                        prefetch_block_lines(&next, call * per_call, (call + 1) * per_call);
                        prefetch_block_lines(&anext, acall * aper_call, (acall + 1) * aper_call);
                        call++, acall++;
                        // The C rows of the next tile (after a panel's last
                        // tile, the next panel's first), which come from L3
                        // on every K block but the first; on the first the
                        // stores need the lines too (measured: the weight
                        // gradients, one K block, 4-6% slower without).
                        if (t + 1 < ntiles) prefetch_rows(cp + GEMM_MR * ldc, ldc, min_int(mc - t0 - GEMM_MR, GEMM_MR));
                        else if (j0 + GEMM_NR < n0 + nc) prefetch_rows(c + (ptrdiff_t)m0 * ldc + j0 + GEMM_NR, ldc, min_int(mc, GEMM_MR));
                        run_tile(mr, 0, nr, kc, ap, panel, k0 == 0 ? init_row : NULL, cp, ldc, edge);
                    }
                  }
                }
                if (K == 0) break;
            }
        }
    }
}

// The weight gradient where its channels take several row blocks and the
// reduction (the batch's rows) is one K block: gemm() packs all of B (the
// input, K x N) again for every row block of channels (lmhead's 50304
// channels: 197 times), while here each column block of B is packed once and
// every row block sweeps it from L2 or L3. The panels are exactly gemm()'s,
// walked in the same order per element, so the bits are gemm()'s. A(m,k) =
// a[k*lda + m] (dout^T), B(k,n) = b[k*ldb + n], C starts from 0; colsum as
// in gemm().
#ifndef GEMM_SHARED_B_FLOATS
#define GEMM_SHARED_B_FLOATS (768 * 256)
#endif
static void gemm_shared_b(int M, int N, int K, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb,
                          float *c, ptrdiff_t ldc, float *colsum) {
    _Alignas(64) float apack[GEMM_A_FLOATS + 8];
    _Alignas(64) float bshared[GEMM_SHARED_B_FLOATS];
    _Alignas(64) float zeros[GEMM_NR] = {0};
    _Alignas(64) float edge[GEMM_MR * GEMM_NR];
    int kc = K, mcap = row_block(M, kc);
    int ncap = GEMM_SHARED_B_FLOATS / kc / GEMM_NR * GEMM_NR;
    if (colsum)
        for (int m = 0; m < M; m++) colsum[m] = 0.0f;
    for (int n0 = 0; n0 < N; n0 += ncap) {
        int nc = min_int(N - n0, ncap), npanels = (nc + GEMM_NR - 1) / GEMM_NR;
        for (int jb = 0; jb < nc; jb += GEMM_NB)
            pack_b_rows(bshared + (ptrdiff_t)jb * kc, b, ldb, 0, kc, n0 + jb, min_int(nc - jb, GEMM_NB));
        for (int m0 = 0; m0 < M; m0 += mcap) {
            int mc = min_int(M - m0, mcap), ntiles = (mc + GEMM_MR - 1) / GEMM_MR;
            pack_a_cols(apack, a, lda, m0, mc, 0, kc, colsum && n0 == 0 ? colsum + m0 : NULL);
            for (int q = 0; q < npanels; q++) {
                const float *panel = bshared + (ptrdiff_t)q * kc * GEMM_NR;
                int j0 = n0 + q * GEMM_NR, nr = min_int(n0 + nc - j0, GEMM_NR);
                // the next panel, from L2 or L3, fetched over this one's tiles
                BlockLines next = {NULL, 0, 0, 0};
                if (q + 1 < npanels) next = (BlockLines){panel + (ptrdiff_t)kc * GEMM_NR, 0, 1, kc * GEMM_NR};
                int per_call = (block_line_count(&next) + ntiles - 1) / ntiles;
                for (int t = 0; t < ntiles; t++) {
                    int t0 = t * GEMM_MR, mr = min_int(mc - t0, GEMM_MR);
                    const float *ap = apack + (ptrdiff_t)t0 * kc;
                    float *cp = c + (ptrdiff_t)(m0 + t0) * ldc + j0;
                    prefetch_block_lines(&next, t * per_call, (t + 1) * per_call);
                    if (t + 1 < ntiles)
                        prefetch_rows(cp + GEMM_MR * ldc, ldc, min_int(mc - t0 - GEMM_MR, GEMM_MR));
                    if (nr == GEMM_NR) {
                        tiles[mr](kc, ap, panel, zeros, 0, cp, ldc);
                    } else {
                        tiles[mr](kc, ap, panel, zeros, 0, edge, GEMM_NR);
                        for (int i = 0; i < mr; i++)
                            memcpy(cp + (ptrdiff_t)i * ldc, edge + i * GEMM_NR, (size_t)nr * sizeof(float));
                    }
                }
            }
        }
    }
}

// ----------------------------------------------------------------------------
// The three products of gemm.h.

void matmul_forward_block(float *out, const float *inp, const float *w, const float *bias,
                          int r0, int r1, int c0, int c1, int IC, int OC) {
    gemm(r1 - r0, c1 - c0, IC, inp + (ptrdiff_t)r0 * IC, IC, A_ROWS, w + (ptrdiff_t)c0 * IC, IC, 1,
         bias ? bias + c0 : NULL, out + (ptrdiff_t)r0 * OC + c0, OC, NULL);
}

void matmul_forward_rows(float *out, const float *inp, const float *w, const float *bias,
                         int r0, int r1, int IC, int OC) {
    matmul_forward_block(out, inp, w, bias, r0, r1, 0, OC, IC, OC);
}

void matmul_backward_input_block(float *dinp, const float *dout, const float *w,
                                 int r0, int r1, int c0, int c1, int IC, int OC) {
    gemm(r1 - r0, c1 - c0, OC, dout + (ptrdiff_t)r0 * OC, OC, A_ROWS, w + c0, IC, 0, NULL,
         dinp + (ptrdiff_t)r0 * IC + c0, IC, NULL);
}

void matmul_backward_input_rows(float *dinp, const float *dout, const float *w,
                                int r0, int r1, int IC, int OC) {
    matmul_backward_input_block(dinp, dout, w, r0, r1, 0, IC, IC, OC);
}

void matmul_backward_weight_block(float *dw, float *dbias, const float *dout, const float *inp,
                                  int o0, int o1, int i0, int i1, int rows, int IC, int OC) {
    // dbias[o]: plain adds in increasing row order, made while dout^T is
    // packed (pack_a_cols). B is the input's columns [i0, i1): N = i1 - i0.
    int M = o1 - o0, N = i1 - i0;
    if (M > 0 && N > 0 && rows > 0 && gemm_kstep(rows) == rows && row_block(M, rows) < M &&
        GEMM_SHARED_B_FLOATS / rows >= GEMM_NR)
        gemm_shared_b(M, N, rows, dout + o0, OC, inp + i0, IC, dw + (ptrdiff_t)o0 * IC + i0, IC,
                      dbias ? dbias + o0 : NULL);
    else
        gemm(M, N, rows, dout + o0, OC, A_COLS, inp + i0, IC, 0, NULL, dw + (ptrdiff_t)o0 * IC + i0, IC,
             dbias ? dbias + o0 : NULL);
}

void matmul_backward_weight_channels(float *dw, float *dbias, const float *dout, const float *inp,
                                     int o0, int o1, int rows, int IC, int OC) {
    matmul_backward_weight_block(dw, dbias, dout, inp, o0, o1, 0, IC, rows, IC, OC);
}

// ----------------------------------------------------------------------------
// Packed weights (gemm.h): B packed once, for every call that computes rows of
// the same product.
//
// Layout of a packed K x N operand. K is cut into blocks of kstep floats
// (packed_kstep: from K alone, gemm()'s own cut, gemm_kstep); N is
// padded to npad, a multiple of NR. The block of k in [k0, k0 + kc) starts at
// float k0 * npad; its panel q (columns [q*NR, q*NR + NR)) at
// k0*npad + q*kc*NR, and row k of that panel at + (k - k0)*NR: each panel is
// exactly what pack_b_rows and pack_b_cols make for one call, zero past
// column N-1, so the micro-kernels read it as they read theirs, and a call on
// the packed form walks the same K blocks and row blocks as gemm().

static int packed_kstep(int K) { return K > 0 ? gemm_kstep(K) : 1; }

static int padded_columns(int N) { return (N + GEMM_NR - 1) / GEMM_NR * GEMM_NR; }

static inline int max_int(int a, int b) { return a > b ? a : b; }

size_t matmul_packed_floats(int K, int N) {
    return K > 0 && N > 0 ? (size_t)K * (size_t)padded_columns(N) : 0;
}

int matmul_panel_columns(void) { return GEMM_NR; }

// Columns [n0, n1) of rows [k0, k0 + kc) of B(k,n) = b[k*ldb + n] (contiguous
// rows: a copy) into the block at `block`, then zeros in columns [n1, zero_to).
// GEMM_PACK_ROWS_GROUP panels at a time, k inner: with every panel of the
// range per row (16 for a chunk of 256 columns) the copies went to 16 places
// kc*NR floats apart, all in one L1 set. Measured alone on Zen 3 (d12's weights
// from memory, chunks of 256 columns): 0.53-0.67 -> 0.31-0.50 ns per float;
// groups of 1 or 2 panels were slower than all 16, 8 the same as 4.
#ifndef GEMM_PACK_ROWS_GROUP
#define GEMM_PACK_ROWS_GROUP 4
#endif
static void pack_range_rows(float *block, const float *b, ptrdiff_t ldb, int K, int k0, int kc, int n0, int n1,
                            int zero_to) {
    int q_end = (zero_to + GEMM_NR - 1) / GEMM_NR;
    for (int g0 = n0 / GEMM_NR; g0 < q_end; g0 += GEMM_PACK_ROWS_GROUP) {
        int g1 = min_int(g0 + GEMM_PACK_ROWS_GROUP, q_end);
        int lo = max_int(n0, g0 * GEMM_NR), hi = min_int(n1, g1 * GEMM_NR);
        for (int k = 0; k < kc; k++) {
            const float *src = b + (ptrdiff_t)(k0 + k) * ldb;
            if (k0 + k + GEMM_PACK_AHEAD_ROWS < K)
                for (int j = lo; j < hi; j += 16) prefetch_read(src + GEMM_PACK_AHEAD_ROWS * ldb + j);
            for (int q = g0; q < g1; q++) {
                int base = q * GEMM_NR;
                int ja = max_int(n0 - base, 0), jb = max_int(min_int(n1 - base, GEMM_NR), ja);
                int jz = max_int(min_int(zero_to - base, GEMM_NR), jb);
                float *dst = block + (ptrdiff_t)q * kc * GEMM_NR + (ptrdiff_t)k * GEMM_NR;
                if (ja == 0 && jb == GEMM_NR) {
                    memcpy(dst, src + base, GEMM_NR * sizeof(float));
                } else {
                    if (jb > ja) memcpy(dst + ja, src + base + ja, (size_t)(jb - ja) * sizeof(float));
                    if (jz > jb) memset(dst + jb, 0, (size_t)(jz - jb) * sizeof(float));
                }
            }
        }
    }
}

// The same for B(k,n) = b[n*ldb + k] (the weight read as w^T): per panel, a
// transpose, in 8 x 8 blocks where AVX2 is there and the panel's part of the
// range is whole groups of 8 columns.
//
// Both run at 0.33-0.46 ns per packed float on Zen 3 with the weight from
// memory, where memcpy of the same floats takes 0.25 (gemm_bench --task-form):
// each destination line is fetched before it is written. Non-temporal stores,
// which skip that fetch, measured (Zen 3, d12): the transpose with 16 columns
// at a time and whole-line streaming stores 0.32-0.33 against 0.36-0.41 alone
// but no change in the step (its slots are rewritten every other layer, while
// still in L3); the row copy with streaming stores, 4 panels a group 37 -> 49
// ms a step in the pack operations, every panel of the range per row 0.72 ns
// per float. Not taken.
static void pack_range_cols(float *block, const float *b, ptrdiff_t ldb, int k0, int kc, int n0, int n1,
                            int zero_to) {
    for (int q = n0 / GEMM_NR; q * GEMM_NR < zero_to; q++) {
        int base = q * GEMM_NR;
        int ja = max_int(n0 - base, 0), jb = max_int(min_int(n1 - base, GEMM_NR), ja);
        int jz = max_int(min_int(zero_to - base, GEMM_NR), jb);
        float *p = block + (ptrdiff_t)q * kc * GEMM_NR;
        int k = 0;
#if defined(__AVX2__)
        if (ja % 8 == 0 && jb % 8 == 0 && jb > ja)
            for (; k + 8 <= kc; k += 8)
                for (int j = ja; j < jb; j += 8)
                    transpose8x8(p + (ptrdiff_t)k * GEMM_NR + j, GEMM_NR, b + (ptrdiff_t)(base + j) * ldb + k0 + k,
                                 ldb);
#endif
        for (; k < kc; k++) {
            float *dst = p + (ptrdiff_t)k * GEMM_NR;
            for (int j = ja; j < jb; j++) dst[j] = b[(ptrdiff_t)(base + j) * ldb + k0 + k];
        }
        if (jz > jb)
            for (k = 0; k < kc; k++) memset(p + (ptrdiff_t)k * GEMM_NR + jb, 0, (size_t)(jz - jb) * sizeof(float));
    }
}

// Columns [n0, n1) of a K x N operand B into its packed form (b_cols: B(k,n)
// = b[n*ldb + k], else b[k*ldb + n]); the range that ends at N also zeroes the
// padding columns [N, npad).
static void pack_columns(float *packed, const float *b, ptrdiff_t ldb, int b_cols, int K, int N, int n0, int n1) {
    if (K <= 0 || N <= 0) return;
    int kstep = packed_kstep(K), npad = padded_columns(N);
    int zero_to = n1 == N ? npad : n1;
    for (int k0 = 0; k0 < K; k0 += kstep) {
        int kc = min_int(K - k0, kstep);
        float *block = packed + (ptrdiff_t)k0 * npad;
        if (b_cols) pack_range_cols(block, b, ldb, k0, kc, n0, n1, zero_to);
        else pack_range_rows(block, b, ldb, K, k0, kc, n0, n1, zero_to);
    }
}

void matmul_pack_forward_weight(float *packed, const float *w, int n0, int n1, int IC, int OC) {
    pack_columns(packed, w, IC, 1, IC, OC, n0, n1);
}

void matmul_pack_backward_input_weight(float *packed, const float *w, int n0, int n1, int IC, int OC) {
    pack_columns(packed, w, IC, 0, OC, IC, n0, n1);
}

// The driver on a packed B: C(m,n) for m < M and columns n in [c0, c1) (C and
// init indexed by the column itself) becomes init[n] (0 if init is NULL) +
// sum over k < K of A(m,k) B(k,n), A(m,k) = a[m*lda + k]. The loops are
// gemm()'s, with B's packing gone: the same K blocks (the packed ones) and
// row blocks, every column block finished over all of K before the next. Columns of a panel
// outside [c0, c1) are computed on a copy and not stored, like a ragged edge.
static void gemm_packed(int M, int K, int N, int c0, int c1, const float *a, ptrdiff_t lda, const float *packed,
                        const float *init, float *c, ptrdiff_t ldc) {
    _Alignas(64) float apack[GEMM_A_FLOATS + 8];
    _Alignas(64) float init_row[GEMM_NR];
    _Alignas(64) float edge[GEMM_MR * GEMM_NR];
    if (M <= 0 || c1 <= c0) return;
    if (K <= 0) { // every chain is its initial value
        for (int m = 0; m < M; m++)
            for (int n = c0; n < c1; n++) c[(ptrdiff_t)m * ldc + n] = init ? init[n] : 0.0f;
        return;
    }
    int kstep = packed_kstep(K);
    ptrdiff_t npad = padded_columns(N);
    int mcap = row_block(M, kstep); // gemm()'s row blocks

    for (int m0 = 0; m0 < M; m0 += mcap) {
        int mc = min_int(M - m0, mcap);
        int ntiles = (mc + GEMM_MR - 1) / GEMM_MR;
        for (int n0 = c0; n0 < c1; n0 += GEMM_NC) {
            int n1 = min_int(c1, n0 + GEMM_NC);
            int q0 = n0 / GEMM_NR, q1 = (n1 + GEMM_NR - 1) / GEMM_NR;
            for (int k0 = 0; k0 < K; k0 += kstep) {
                int kc = min_int(K - k0, kstep);
                const float *block = packed + (ptrdiff_t)k0 * npad;
                pack_a_rows(apack, a, lda, m0, mc, k0, kc);
                // the next K block of A is fetched over all tiles of this one
                BlockLines anext = {NULL, 0, 0, 0};
                if (k0 + kc < K)
                    anext = (BlockLines){a + (ptrdiff_t)m0 * lda + k0 + kc, lda, mc, min_int(K - k0 - kc, kstep)};
                int acalls = ntiles * (q1 - q0), acall = 0;
                int aper_call = (block_line_count(&anext) + acalls - 1) / acalls;
                for (int q = q0; q < q1; q++) {
                    int base = q * GEMM_NR;
                    int ja = max_int(n0 - base, 0), jb = min_int(n1 - base, GEMM_NR);
                    const float *panel = block + (ptrdiff_t)q * kc * GEMM_NR;
                    // this K block of the next panel, fetched over the tiles of this one
                    BlockLines next = {NULL, 0, 0, 0};
                    if (q + 1 < q1) next = (BlockLines){panel + (ptrdiff_t)kc * GEMM_NR, 0, 1, kc * GEMM_NR};
                    int per_call = (block_line_count(&next) + ntiles - 1) / ntiles;
                    if (k0 == 0)
                        for (int j = 0; j < GEMM_NR; j++)
                            init_row[j] = (init && j >= ja && j < jb) ? init[base + j] : 0.0f;
                    for (int t = 0; t < ntiles; t++) {
                        int t0 = t * GEMM_MR, mr = min_int(mc - t0, GEMM_MR);
                        const float *ap = apack + (ptrdiff_t)t0 * kc;
                        float *cp = c + (ptrdiff_t)(m0 + t0) * ldc + base;
                        prefetch_block_lines(&next, t * per_call, (t + 1) * per_call);
                        prefetch_block_lines(&anext, acall * aper_call, (acall + 1) * aper_call);
                        acall++;
                        if (t + 1 < ntiles)
                            prefetch_rows(cp + GEMM_MR * ldc + ja, ldc, min_int(mc - t0 - GEMM_MR, GEMM_MR));
                        run_tile(mr, ja, jb, kc, ap, panel, k0 == 0 ? init_row : NULL, cp, ldc, edge);
                    }
                }
            }
        }
    }
}

void matmul_forward_packed(float *out, const float *inp, const float *packed, const float *bias,
                           int r0, int r1, int c0, int c1, int IC, int OC) {
    gemm_packed(r1 - r0, IC, OC, c0, c1, inp + (ptrdiff_t)r0 * IC, IC, packed, bias, out + (ptrdiff_t)r0 * OC, OC);
}

void matmul_backward_input_packed(float *dinp, const float *dout, const float *packed,
                                  int r0, int r1, int c0, int c1, int IC, int OC) {
    gemm_packed(r1 - r0, OC, IC, c0, c1, dout + (ptrdiff_t)r0 * OC, OC, packed, NULL, dinp + (ptrdiff_t)r0 * IC, IC);
}
