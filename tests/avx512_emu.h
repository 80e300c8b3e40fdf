// Runs the AVX-512 branch of core/gemm.c on a machine without AVX-512, for
// tests only. Force-included (-include) into an AVX2+FMA build, it claims
// __AVX512F__ and renames the few 512-bit intrinsics gemm.c uses to plain C
// stand-ins with the documented semantics: one fmaf per lane, and
// _mm512_load_ps checks its 64-byte alignment like the real instruction
// would fault. What this checks is the AVX-512 branch's tiling, indexing and
// edge logic (8 x 32 tiles), not the compiler's code generation for it.
#ifndef AVX512_EMU_H
#define AVX512_EMU_H
#if !defined(__AVX2__) || !defined(__FMA__) || defined(__AVX512F__)
#error "avx512_emu.h: build with -mavx2 -mfma and without AVX-512"
#endif
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define __AVX512F__ 1

typedef struct {
    float f[16];
} emu512;

static inline emu512 emu512_loadu_ps(const float *p) {
    emu512 r;
    for (int i = 0; i < 16; i++) r.f[i] = p[i];
    return r;
}

static inline emu512 emu512_load_ps(const float *p) {
    if ((uintptr_t)p % 64 != 0) {
        fprintf(stderr, "avx512_emu: _mm512_load_ps on an address not 64-byte aligned: %p\n", (const void *)p);
        abort();
    }
    return emu512_loadu_ps(p);
}

static inline void emu512_storeu_ps(float *p, emu512 x) {
    for (int i = 0; i < 16; i++) p[i] = x.f[i];
}

static inline emu512 emu512_set1_ps(float x) {
    emu512 r;
    for (int i = 0; i < 16; i++) r.f[i] = x;
    return r;
}

static inline emu512 emu512_setzero_ps(void) { return emu512_set1_ps(0.0f); }

static inline emu512 emu512_fmadd_ps(emu512 a, emu512 b, emu512 c) {
    emu512 r;
    for (int i = 0; i < 16; i++) r.f[i] = fmaf(a.f[i], b.f[i], c.f[i]);
    return r;
}

#define __m512 emu512
#define _mm512_load_ps emu512_load_ps
#define _mm512_loadu_ps emu512_loadu_ps
#define _mm512_storeu_ps emu512_storeu_ps
#define _mm512_set1_ps emu512_set1_ps
#define _mm512_setzero_ps emu512_setzero_ps
#define _mm512_fmadd_ps emu512_fmadd_ps

#endif
