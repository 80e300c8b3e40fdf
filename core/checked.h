// Checked size arithmetic for everything computed from untrusted numbers
// (file headers, options). Sizes are uint64_t; an operation that overflows
// saturates at UINT64_MAX and clears *ok, so a chain of operations needs one
// test at its end:
//
//     int ok = 1;
//     uint64_t bytes = ck_add(HEADER, ck_mul(4, ck_mul(B, T, &ok), &ok), &ok);
//     if (!ok) ... overflow ...
//
// Negative inputs are the caller's to refuse first (ck_u64 clears ok for them).
#ifndef CHECKED_H
#define CHECKED_H

#include <stdint.h>

static inline uint64_t ck_mul(uint64_t a, uint64_t b, int *ok) {
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        *ok = 0;
        return UINT64_MAX;
    }
    return r;
}

static inline uint64_t ck_add(uint64_t a, uint64_t b, int *ok) {
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        *ok = 0;
        return UINT64_MAX;
    }
    return r;
}

static inline uint64_t ck_mul3(uint64_t a, uint64_t b, uint64_t c, int *ok) { return ck_mul(ck_mul(a, b, ok), c, ok); }

// A signed value as a size: negative values clear ok and give 0.
static inline uint64_t ck_u64(long long v, int *ok) {
    if (v < 0) {
        *ok = 0;
        return 0;
    }
    return (uint64_t)v;
}

#endif
