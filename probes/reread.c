// reread: one core's rate for the input a matrix product reads again when it
// is cut into column pieces. Each piece of a product cut along its output
// columns packs every row of its input (operand A, rows x K) into the
// micro-kernel's layout again: a transposing copy, not a stream, which runs
// slower than STREAM's copy. `perfstudy predict` charges the bytes a finer cut
// reads again at this rate (machine files' `reread_GBs`); without it, at one
// core's STREAM bandwidth.
//
// Run rules:
//   - one thread, pinned nowhere (the harness runs it under the study's
//     placement); the product is core/gemm.c's input gradient
//     (matmul_backward_input_block), the fast kernels the variants run;
//   - default shape: the language-model head's input gradient of d12 at B=4,
//     T=64 (rows 256, reduction 50,304: A is the logits' gradient, 51.5 MB,
//     more than any core's private caches), cut to 256 output columns so that
//     the packing is a large share of a call;
//   - a round times the whole product on all columns (one call), then the same
//     product as --pieces calls of equal column ranges one after another, in
//     alternating order from round to round; the extra time of the pieces is
//     (pieces - 1) re-packings of A;
//   - the first WARMUP_ROUNDS rounds are left out; the figure is the median
//     over rounds of (pieces - 1) x rows x K x 4 bytes / (pieces' time - whole
//     time); rounds where the pieces were not slower (noise) count as no figure
//     and are reported; fewer than half the rounds with a figure is an error;
//   - the outputs of both forms are compared bit for bit (the column cut must
//     not change a result; core/gemm.h's contract), and summed into a printed
//     checksum, so that no call can be dropped.
//
// Usage: reread [--rows M] [--reduction K] [--columns N] [--pieces P] [--rounds R] [--json]
// Errors: one line "reread: <option>: <problem>", exit status 2.
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/gemm.h"

#define BENCH_PROGRAM "reread"
#include "cli.h"

#define WARMUP_ROUNDS 2

static float *random_floats(size_t n, unsigned *state) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!p) usage_error("memory", "out of memory");
    for (size_t i = 0; i < n; i++) {
        *state = *state * 1664525u + 1013904223u;
        p[i] = (float)(*state >> 8) / 16777216.0f - 0.5f;
    }
    return p;
}

// The input gradient on columns [0, N) of dinp (rows x N) in `pieces` equal
// ranges, one call each (one call for 1). Returns the seconds it took.
static double product(float *dinp, const float *dout, const float *w, int rows, int K, int N, int pieces) {
    double t0 = now_s();
    for (int p = 0; p < pieces; p++) {
        int c0 = (int)((long)N * p / pieces), c1 = (int)((long)N * (p + 1) / pieces);
        matmul_backward_input_block(dinp, dout, w, 0, rows, c0, c1, N, K);
    }
    return now_s() - t0;
}

int main(int argc, char **argv) {
    int rows = 256, K = 50304, N = 256, pieces = 4, rounds = 17, json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_flag(argc, argv, i, "--json")) json = 1;
        else if (!strcmp(a, "--rows")) rows = (int)parse_integer(a, argv[++i], 1, 1 << 16);
        else if (!strcmp(a, "--reduction")) K = (int)parse_integer(a, argv[++i], 1, 1 << 20);
        else if (!strcmp(a, "--columns")) N = (int)parse_integer(a, argv[++i], 16, 1 << 16);
        else if (!strcmp(a, "--pieces")) pieces = (int)parse_integer(a, argv[++i], 2, 1 << 10);
        else if (!strcmp(a, "--rounds")) rounds = (int)parse_integer(a, argv[++i], WARMUP_ROUNDS + 1, 100000);
        else usage_error(a, "unknown option");
    }
    if (pieces > N / 16) usage_error("--pieces", "more pieces than the columns hold 16 wide (--columns / 16)");
    if ((double)rows * K > 1.5e9 || (double)K * N > 1.5e9) usage_error("--reduction", "operands over 6 GB");

    unsigned state = 12345u;
    float *dout = random_floats((size_t)rows * K, &state);  // A: what every piece packs again
    float *w = random_floats((size_t)K * N, &state);        // (K x N): each piece packs only its columns
    float *whole = random_floats((size_t)rows * N, &state), *cut = random_floats((size_t)rows * N, &state);
    double *rate = malloc((size_t)rounds * sizeof(double)), *t_whole = malloc((size_t)rounds * sizeof(double)),
           *t_cut = malloc((size_t)rounds * sizeof(double));
    if (!rate || !t_whole || !t_cut) usage_error("memory", "out of memory");

    double reread_bytes = (double)(pieces - 1) * rows * K * sizeof(float);
    int kept = 0, rated = 0;
    for (int r = 0; r < rounds; r++) {
        double a, b;
        if (r % 2 == 0) {
            a = product(whole, dout, w, rows, K, N, 1);
            b = product(cut, dout, w, rows, K, N, pieces);
        } else {
            b = product(cut, dout, w, rows, K, N, pieces);
            a = product(whole, dout, w, rows, K, N, 1);
        }
        if (memcmp(whole, cut, (size_t)rows * N * sizeof(float)) != 0) {
            fprintf(stderr, "reread: the product cut into %d column pieces differs from the whole one\n", pieces);
            return 1;
        }
        if (r < WARMUP_ROUNDS) continue;
        t_whole[kept] = a;
        t_cut[kept] = b;
        kept++;
        if (b > a) rate[rated++] = reread_bytes / (b - a) / 1e9;
    }
    if (2 * rated < kept) {
        fprintf(stderr, "reread: the pieces were slower than the whole product in only %d of %d rounds: "
                        "too noisy to give a rate (try --rounds, or a quieter machine)\n", rated, kept);
        return 1;
    }
    double checksum = 0;
    for (size_t i = 0; i < (size_t)rows * N; i++) checksum += whole[i];
    double *rates_sorted = malloc((size_t)rated * sizeof(double));
    if (!rates_sorted) usage_error("memory", "out of memory");
    memcpy(rates_sorted, rate, (size_t)rated * sizeof(double));
    double g = median(rates_sorted, rated), tw = median(t_whole, kept), tc = median(t_cut, kept);
    if (json) {
        printf("{\"rows\": %d, \"reduction\": %d, \"columns\": %d, \"pieces\": %d, \"rounds\": %d, "
               "\"warmup_rounds\": %d, \"panel_columns\": %d, \"reread_bytes\": %.0f, \"whole_s\": %.6g, "
               "\"pieces_s\": %.6g, \"rounds_without_figure\": %d, \"reread_GBs\": %.4g, \"reread_rep_GBs\": [",
               rows, K, N, pieces, rounds, WARMUP_ROUNDS, matmul_panel_columns(), reread_bytes, tw, tc, kept - rated,
               g);
        for (int i = 0; i < rated; i++) printf("%s%.4g", i ? ", " : "", rate[i]);
        printf("], \"checksum\": %.6g}\n", checksum);
    } else {
        printf("input gradient %d x %d x %d (A %.1f MB): whole %.4f s, in %d column pieces %.4f s (medians of %d "
               "rounds)\n", rows, N, K, (double)rows * K * sizeof(float) / 1e6, tw, pieces, tc, kept);
        printf("re-read rate %.2f GB/s (%d of %d rounds gave a figure); checksum %.6g\n", g, rated, kept, checksum);
    }
    free(dout);
    free(w);
    free(whole);
    free(cut);
    free(rate);
    free(t_whole);
    free(t_cut);
    free(rates_sorted);
    return 0;
}
