// Checks the fast products of core/gemm.c against the oracle loops of
// core/gemm_naive.c, bit for bit (memcmp), over many shapes and range splits.
// Each product is run on a split of its range into pieces; the pieces must
// together write exactly the oracle's bytes and touch nothing outside their
// range. The products on packed weights (gemm.h) are checked the same way,
// and against the fused path. The last line printed is "N passed, M failed";
// exit status 1 on any failure.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/gemm.h"
#include "../core/gemm_naive.h"

static int passed, failed;

static void check(int ok, const char *what, int rows, int IC, int OC, const char *split) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s rows=%d IC=%d OC=%d split=%s\n", what, rows, IC, OC, split);
    }
}

// xorshift64*: deterministic inputs without global state.
static uint64_t next_u64(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

// Values of mixed magnitude and sign, with some exact zeros and small
// integers so that cancellations (and signed zeros) happen too.
static void fill(float *x, size_t n, uint64_t *s) {
    for (size_t i = 0; i < n; i++) {
        uint64_t u = next_u64(s);
        int kind = (int)(u & 15);
        float f = (float)((u >> 20) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
        if (kind == 0) f = 0.0f;
        else if (kind == 1) f = (float)((int)((u >> 8) & 7) - 3);
        else if (kind == 2) f *= 1024.0f;
        else if (kind == 3) f *= 1e-3f;
        x[i] = f;
    }
}

static float *alloc_floats(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        fprintf(stderr, "test_gemm: out of memory\n");
        exit(2);
    }
    return p;
}

// Fill with a sentinel bit pattern (a NaN no product can produce).
static void poison(float *x, size_t n) {
    uint32_t bits = 0x7fc0dead;
    for (size_t i = 0; i < n; i++) memcpy(&x[i], &bits, sizeof bits);
}

// Split points of [0, n): cuts at the given fractions-in-elements, sorted.
typedef struct {
    const char *name;
    int cuts[6];  // absolute cut points, terminated by -1; clipped to (0, n)
} Split;

static const Split splits[] = {
    {"whole", {-1}},
    {"0-5-rest", {5, -1}},
    {"1-2-3", {1, 3, 6, -1}},
    {"odd", {7, 13, 29, 64, -1}},
    {"8s", {8, 16, 24, 32, 40, -1}},
    {"big", {100, 200, 300, 700, -1}},
};
#define NSPLITS (int)(sizeof splits / sizeof splits[0])

// Builds the range boundaries [b0=0, b1, ..., bk=n] for a split.
static int bounds(const Split *sp, int n, int *b) {
    int nb = 0;
    b[nb++] = 0;
    for (int i = 0; sp->cuts[i] >= 0; i++)
        if (sp->cuts[i] > b[nb - 1] && sp->cuts[i] < n) b[nb++] = sp->cuts[i];
    b[nb++] = n;
    return nb;
}

static void test_shape(int rows, int IC, int OC, uint64_t *seed) {
    size_t n_inp = (size_t)rows * IC, n_w = (size_t)OC * IC, n_out = (size_t)rows * OC;
    float *inp = alloc_floats(n_inp), *w = alloc_floats(n_w), *bias = alloc_floats(OC);
    float *dout = alloc_floats(n_out);
    float *ref = alloc_floats(n_out > n_w ? (n_out > n_inp ? n_out : n_inp) : (n_w > n_inp ? n_w : n_inp));
    float *got = alloc_floats(n_out > n_w ? (n_out > n_inp ? n_out : n_inp) : (n_w > n_inp ? n_w : n_inp));
    float *ref_db = alloc_floats(OC), *got_db = alloc_floats(OC);
    fill(inp, n_inp, seed);
    fill(w, n_w, seed);
    fill(bias, OC, seed);
    fill(dout, n_out, seed);
    int b[8];

    for (int use_bias = 0; use_bias < 2; use_bias++) {
        const float *bp = use_bias ? bias : NULL;
        matmul_forward_rows_naive(ref, inp, w, bp, 0, rows, IC, OC);
        for (int s = 0; s < NSPLITS; s++) {
            int nb = bounds(&splits[s], rows, b);
            poison(got, n_out);
            for (int p = 0; p + 1 < nb; p++) matmul_forward_rows(got, inp, w, bp, b[p], b[p + 1], IC, OC);
            check(memcmp(ref, got, n_out * sizeof(float)) == 0,
                  use_bias ? "forward(bias)" : "forward(no bias)", rows, IC, OC, splits[s].name);
        }
    }

    matmul_backward_input_rows_naive(ref, dout, w, 0, rows, IC, OC);
    for (int s = 0; s < NSPLITS; s++) {
        int nb = bounds(&splits[s], rows, b);
        poison(got, n_inp);
        for (int p = 0; p + 1 < nb; p++) matmul_backward_input_rows(got, dout, w, b[p], b[p + 1], IC, OC);
        check(memcmp(ref, got, n_inp * sizeof(float)) == 0, "backward input", rows, IC, OC,
              splits[s].name);
    }

    for (int use_db = 0; use_db < 2; use_db++) {
        matmul_backward_weight_channels_naive(ref, ref_db, dout, inp, 0, OC, rows, IC, OC);
        for (int s = 0; s < NSPLITS; s++) {
            int nb = bounds(&splits[s], OC, b);
            poison(got, n_w);
            poison(got_db, OC);
            for (int p = 0; p + 1 < nb; p++)
                matmul_backward_weight_channels(got, use_db ? got_db : NULL, dout, inp, b[p], b[p + 1],
                                                rows, IC, OC);
            int ok = memcmp(ref, got, n_w * sizeof(float)) == 0;
            if (use_db) ok = ok && memcmp(ref_db, got_db, OC * sizeof(float)) == 0;
            check(ok, use_db ? "backward weight(dbias)" : "backward weight(no dbias)", rows, IC, OC,
                  splits[s].name);
        }
    }

    // Tiles of dw: output-channel pieces x input-channel pieces, dbias given
    // to the tiles of the first input-channel piece only (as the task
    // variants cut it).
    matmul_backward_weight_channels_naive(ref, ref_db, dout, inp, 0, OC, rows, IC, OC);
    static const int tile_grids[][2] = {{0, 3}, {3, 0}, {2, 3}, {4, 5}, {5, 2}};
    for (size_t g = 0; g < sizeof tile_grids / sizeof tile_grids[0]; g++) {
        const Split *os = &splits[tile_grids[g][0]], *is = &splits[tile_grids[g][1]];
        int ib[8], ni = bounds(is, IC, ib), nb = bounds(os, OC, b);
        poison(got, n_w);
        poison(got_db, OC);
        for (int j = ni - 2; j >= 0; j--) // the first input-channel piece last: dbias does not need it first
            for (int p = 0; p + 1 < nb; p++)
                matmul_backward_weight_block(got, ib[j] == 0 ? got_db : NULL, dout, inp, b[p], b[p + 1], ib[j],
                                             ib[j + 1], rows, IC, OC);
        char name[96];
        snprintf(name, sizeof name, "backward weight tiles %s x %s", os->name, is->name);
        int ok = memcmp(ref, got, n_w * sizeof(float)) == 0 && (OC == 0 || IC == 0 ||
                                                                memcmp(ref_db, got_db, OC * sizeof(float)) == 0);
        check(ok, name, rows, IC, OC, "tiles");
    }
    // a tile in the middle writes its block of dw and nothing else, and no dbias when given none
    if (OC >= 3 && IC >= 3) {
        int o0 = OC / 3, o1 = 2 * OC / 3 + 1, i0 = IC / 3, i1 = 2 * IC / 3 + 1;
        poison(got, n_w);
        poison(got_db, OC);
        matmul_backward_weight_block(got, NULL, dout, inp, o0, o1, i0, i1, rows, IC, OC);
        float sentinel;
        poison(&sentinel, 1);
        int ok = 1;
        for (int o = 0; o < OC; o++) {
            for (int i = 0; i < IC; i++) {
                size_t e = (size_t)o * IC + i;
                int in = o >= o0 && o < o1 && i >= i0 && i < i1;
                if (memcmp(in ? &ref[e] : &sentinel, &got[e], sizeof(float)) != 0) ok = 0;
            }
            if (memcmp(&sentinel, &got_db[o], sizeof(float)) != 0) ok = 0;
        }
        check(ok, "backward weight tile writes only its block", rows, IC, OC, "middle");
    }

    // A piece in the middle writes its own range and nothing else.
    if (rows >= 3 && OC >= 3) {
        int lo = rows / 3, hi = 2 * rows / 3 + 1;
        poison(got, n_out);
        matmul_forward_rows(got, inp, w, bias, lo, hi, IC, OC);
        matmul_forward_rows_naive(ref, inp, w, bias, 0, rows, IC, OC);
        int ok = 1;
        float sentinel;
        poison(&sentinel, 1);
        for (size_t e = 0; e < n_out; e++) {
            int r = (int)(e / OC);
            const float *want = (r >= lo && r < hi) ? &ref[e] : &sentinel;
            if (memcmp(want, &got[e], sizeof(float)) != 0) ok = 0;
        }
        check(ok, "forward writes only its rows", rows, IC, OC, "middle");

        lo = OC / 3, hi = 2 * OC / 3 + 1;
        poison(got, n_w);
        poison(got_db, OC);
        matmul_backward_weight_channels(got, got_db, dout, inp, lo, hi, rows, IC, OC);
        matmul_backward_weight_channels_naive(ref, ref_db, dout, inp, 0, OC, rows, IC, OC);
        ok = 1;
        for (int o = 0; o < OC; o++) {
            int in = o >= lo && o < hi;
            for (int i = 0; i < IC; i++) {
                size_t e = (size_t)o * IC + i;
                if (memcmp(in ? &ref[e] : &sentinel, &got[e], sizeof(float)) != 0) ok = 0;
            }
            if (memcmp(in ? &ref_db[o] : &sentinel, &got_db[o], sizeof(float)) != 0) ok = 0;
        }
        check(ok, "backward weight writes only its channels", rows, IC, OC, "middle");
    }

    free(inp), free(w), free(bias), free(dout), free(ref), free(got), free(ref_db), free(got_db);
}

// A packed weight buffer: 64-byte aligned (the kernels load it with aligned loads).
static float *alloc_packed(size_t n) {
    size_t bytes = ((n ? n : 1) * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes);
    if (!p) {
        fprintf(stderr, "test_gemm: out of memory\n");
        exit(2);
    }
    return p;
}

// Packs columns [0, N) of a weight in the pieces of a split (the pieces in
// reverse order, so that no piece relies on another having run first).
static void pack_split(float *packed, size_t n_packed, int forward, const float *w, const Split *sp, int IC,
                       int OC) {
    int b[8], N = forward ? OC : IC;
    int nb = bounds(sp, N, b);
    poison(packed, n_packed);
    for (int p = nb - 2; p >= 0; p--) {
        if (forward) matmul_pack_forward_weight(packed, w, b[p], b[p + 1], IC, OC);
        else matmul_pack_backward_input_weight(packed, w, b[p], b[p + 1], IC, OC);
    }
}

// One product on the packed weight over a grid of row pieces x column pieces.
static void packed_grid(int forward, float *out, const float *in, const float *packed, const float *bias,
                        const Split *rows_split, const Split *cols_split, int rows, int IC, int OC) {
    int rb[8], cb[8], N = forward ? OC : IC;
    int nr = bounds(rows_split, rows, rb), nc = bounds(cols_split, N, cb);
    for (int i = 0; i + 1 < nr; i++)
        for (int j = 0; j + 1 < nc; j++) {
            if (forward) matmul_forward_packed(out, in, packed, bias, rb[i], rb[i + 1], cb[j], cb[j + 1], IC, OC);
            else matmul_backward_input_packed(out, in, packed, rb[i], rb[i + 1], cb[j], cb[j + 1], IC, OC);
        }
}

// The packed path (gemm.h: one packing of the weight for every row chunk) against the
// oracle and the fused path, bit for bit: the weight packed whole or in column pieces
// (the same packed bytes, padding included), then the product over row pieces, column
// pieces and grids of both; a block in the middle writes only its rows and columns.
static void test_packed_shape(int rows, int IC, int OC, uint64_t *seed) {
    if (IC < 1 || OC < 1) return; // a product with an empty weight has no packed form
    size_t n_inp = (size_t)rows * IC, n_w = (size_t)OC * IC, n_out = (size_t)rows * OC;
    size_t n_big = n_out > n_inp ? n_out : n_inp;
    float *inp = alloc_floats(n_inp), *w = alloc_floats(n_w), *bias = alloc_floats(OC);
    float *dout = alloc_floats(n_out), *ref = alloc_floats(n_big), *fused = alloc_floats(n_big);
    float *got = alloc_floats(n_big);
    fill(inp, n_inp, seed);
    fill(w, n_w, seed);
    fill(bias, OC, seed);
    fill(dout, n_out, seed);
    static const Split *pack_splits[] = {&splits[0], &splits[3], &splits[4], &splits[5]};
    for (int forward = 1; forward >= 0; forward--) {
        int K = forward ? IC : OC, N = forward ? OC : IC;
        size_t n_res = forward ? n_out : n_inp, n_packed = matmul_packed_floats(K, N);
        const float *in = forward ? inp : dout, *bp = forward ? bias : NULL;
        const char *what = forward ? "packed forward" : "packed backward input";
        char name[96];
        if (n_packed < (size_t)K * N) {
            snprintf(name, sizeof name, "%s: matmul_packed_floats", what);
            check(0, name, rows, IC, OC, "-");
            continue;
        }
        float *whole = alloc_packed(n_packed), *pieces = alloc_packed(n_packed);
        pack_split(whole, n_packed, forward, w, &splits[0], IC, OC);
        if (forward) matmul_forward_rows_naive(ref, inp, w, bias, 0, rows, IC, OC);
        else matmul_backward_input_rows_naive(ref, dout, w, 0, rows, IC, OC);
        if (forward) matmul_forward_rows(fused, inp, w, bias, 0, rows, IC, OC);
        else matmul_backward_input_rows(fused, dout, w, 0, rows, IC, OC);
        snprintf(name, sizeof name, "%s: fused path = oracle", what);
        check(memcmp(ref, fused, n_res * sizeof(float)) == 0, name, rows, IC, OC, "whole");
        for (size_t s = 1; s < sizeof pack_splits / sizeof pack_splits[0]; s++) {
            pack_split(pieces, n_packed, forward, w, pack_splits[s], IC, OC);
            snprintf(name, sizeof name, "%s: packed in column pieces = packed whole", what);
            check(memcmp(whole, pieces, n_packed * sizeof(float)) == 0, name, rows, IC, OC, pack_splits[s]->name);
        }
        // rows split, every column; columns split, every row; a grid of both
        for (int s = 0; s < NSPLITS; s++) {
            poison(got, n_res);
            packed_grid(forward, got, in, whole, bp, &splits[s], &splits[0], rows, IC, OC);
            snprintf(name, sizeof name, "%s, row pieces", what);
            check(memcmp(ref, got, n_res * sizeof(float)) == 0, name, rows, IC, OC, splits[s].name);
            poison(got, n_res);
            packed_grid(forward, got, in, whole, bp, &splits[0], &splits[s], rows, IC, OC);
            snprintf(name, sizeof name, "%s, column pieces", what);
            check(memcmp(ref, got, n_res * sizeof(float)) == 0, name, rows, IC, OC, splits[s].name);
        }
        poison(got, n_res);
        packed_grid(forward, got, in, whole, bp, &splits[3], &splits[2], rows, IC, OC);
        snprintf(name, sizeof name, "%s, grid of row and column pieces", what);
        check(memcmp(ref, got, n_res * sizeof(float)) == 0, name, rows, IC, OC, "odd x 1-2-3");
        poison(got, n_res);
        packed_grid(forward, got, in, whole, bp, &splits[4], &splits[3], rows, IC, OC);
        check(memcmp(ref, got, n_res * sizeof(float)) == 0, name, rows, IC, OC, "8s x odd");
        // a block in the middle writes its rows and columns and nothing else
        if (rows >= 3 && N >= 3) {
            int r0 = rows / 3, r1 = 2 * rows / 3 + 1, c0 = N / 3, c1 = 2 * N / 3 + 1;
            poison(got, n_res);
            if (forward) matmul_forward_packed(got, in, whole, bp, r0, r1, c0, c1, IC, OC);
            else matmul_backward_input_packed(got, in, whole, r0, r1, c0, c1, IC, OC);
            float sentinel;
            poison(&sentinel, 1);
            int ok = 1;
            for (size_t e = 0; e < n_res; e++) {
                int r = (int)(e / N), col = (int)(e % N);
                int in_block = r >= r0 && r < r1 && col >= c0 && col < c1;
                if (memcmp(in_block ? &ref[e] : &sentinel, &got[e], sizeof(float)) != 0) ok = 0;
            }
            snprintf(name, sizeof name, "%s writes only its block", what);
            check(ok, name, rows, IC, OC, "middle");
        }
        free(whole), free(pieces);
    }
    free(inp), free(w), free(bias), free(dout), free(ref), free(fused), free(got);
}

int main(void) {
    // (rows, IC, OC): tiny and ragged sizes, sizes that cross the blocking
    // boundaries of gemm.c (several K blocks: K > 384; several row blocks:
    // rows x K block above the packed-A budget, at most 196,608 floats, as
    // in (600, 768, 40)'s forward and (256, 40, 1000)'s weight gradient; B
    // blocks of 64 columns, column blocks of 3072), and small versions of the
    // GPT-2 layer shapes. The smallblocks build cuts all of these finer. Every
    // shape runs through the fused products (test_shape) and the packed ones
    // (test_packed_shape).
    static const int shapes[][3] = {
        {1, 1, 1},      {1, 7, 3},     {2, 1, 17},    {3, 5, 16},     {5, 16, 32},
        {13, 36, 108},  {7, 20, 301},  {9, 33, 47},   {16, 64, 96},   {17, 100, 33},
        {13, 257, 31},  {31, 300, 70}, {6, 511, 513}, {200, 40, 24},  {64, 768, 48},
        {40, 96, 1100}, {300, 48, 40}, {257, 19, 23}, {24, 768, 768}, {16, 3072, 128},
        {64, 128, 3072}, {300, 40, 520}, {400, 300, 20}, {8, 0, 5},    {0, 4, 4},
        {600, 768, 40}, {256, 40, 1000},
        // the packed path: K blocks cut into shorter pieces for 200 rows, columns past GEMM_NC
        {200, 768, 40},  {9, 40, 3200},
    };
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        test_shape(shapes[s][0], shapes[s][1], shapes[s][2], &seed);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        test_packed_shape(shapes[s][0], shapes[s][1], shapes[s][2], &seed);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
