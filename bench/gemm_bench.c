// GFLOP/s of the three linear-layer products of core/gemm.c against OpenBLAS's
// cblas_sgemm on the same shapes and transposes, single thread, full range.
// Shapes are GPT-2 124M (d12) at B*T = rows. Each timing is the best of
// --reps repetitions, the two libraries alternating within each repetition;
// the median of the per-repetition ratios is printed beside the ratio of bests. Usage:
//   gemm_bench [--rows N] [--reps N] [--peak GFLOPS] [--json] [--skip-openblas] [--cpu-time] [--chunk N]
//   gemm_bench --task-form N [--rows N] [--reps N] [--layers L] [--json] [--cpu-time]
// (--chunk N calls the project's products on pieces of N rows/channels, as
// the task variants do, while OpenBLAS still does the whole product;
// --task-form N compares, instead of OpenBLAS, the project's products in the
// two forms the variants run them in, with chunks of N rows: see task_form();
// --cpu-time times by thread CPU time; --skip-openblas times only the project's kernels, for tuning; ratios are then 1.)
// With --json each line is one object: {"layer", "product", "M", "N", "K",
// "gemm_gflops", "openblas_gflops", "ratio"}, then one {"total": ...} line (with
// "openblas_core": the core type whose kernels OpenBLAS ran, which
// OPENBLAS_CORETYPE chooses at load time).
#define _POSIX_C_SOURCE 199309L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../core/gemm.h"

// Wall-clock by default; --cpu-time measures this thread's CPU time instead,
// which leaves out the time the thread was descheduled on a busy machine.
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now(void) {
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static float *random_floats(size_t n, unsigned *state) {
    float *p = malloc(n * sizeof(float));
    if (!p) {
        fprintf(stderr, "gemm_bench: out of memory (%zu floats)\n", n);
        exit(2);
    }
    for (size_t i = 0; i < n; i++) {
        *state = *state * 1664525u + 1013904223u;
        p[i] = (float)(*state >> 8) / 16777216.0f - 0.5f;
    }
    return p;
}

enum { FORWARD, BACKWARD_INPUT, BACKWARD_WEIGHT };
static const char *product_names[] = {"forward", "backward_input", "backward_weight"};

typedef struct {
    int rows, IC, OC;
    float *inp, *w, *bias, *out, *dout, *dinp, *dw, *dbias;
} Layer;

// With --chunk C the project's products are called on consecutive pieces
// of C rows (forward, input gradient) or C output channels (weight gradient),
// one after another, as the task-parallel variants call them.
static int chunk = 0;

static void run_gemm(Layer *L, int product) {
    int n = product == BACKWARD_WEIGHT ? L->OC : L->rows;
    int step = chunk > 0 ? chunk : n;
    for (int lo = 0; lo < n; lo += step) {
        int hi = lo + step < n ? lo + step : n;
        switch (product) {
        case FORWARD:
            matmul_forward_rows(L->out, L->inp, L->w, L->bias, lo, hi, L->IC, L->OC);
            break;
        case BACKWARD_INPUT:
            matmul_backward_input_rows(L->dinp, L->dout, L->w, lo, hi, L->IC, L->OC);
            break;
        default:
            matmul_backward_weight_channels(L->dw, L->dbias, L->dout, L->inp, lo, hi, L->rows, L->IC,
                                            L->OC);
        }
    }
}

static void run_openblas(Layer *L, int product) {
    int R = L->rows, IC = L->IC, OC = L->OC;
    switch (product) {
    case FORWARD:  // out(R,OC) = inp(R,IC) w(OC,IC)^T
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, OC, IC, 1.0f, L->inp, IC, L->w, IC,
                    0.0f, L->out, OC);
        break;
    case BACKWARD_INPUT:  // dinp(R,IC) = dout(R,OC) w(OC,IC)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, IC, OC, 1.0f, L->dout, OC, L->w, IC,
                    0.0f, L->dinp, IC);
        break;
    default:  // dw(OC,IC) = dout(R,OC)^T inp(R,IC)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, R, 1.0f, L->dout, OC, L->inp, IC,
                    0.0f, L->dw, IC);
    }
}

static double time_once(Layer *L, int product, int use_openblas) {
    double t0 = now();
    if (use_openblas) run_openblas(L, product);
    else run_gemm(L, product);
    return now() - t0;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// The median of n > 0 values (sorts them).
static double median_of(double *x, int n) {
    qsort(x, n, sizeof(double), compare_doubles);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

// The two libraries timed alternately, repetition by repetition (which goes
// first alternates too), so that a drift of the machine hits both alike.
// Returns the best time of each and the median of the per-repetition ratios
// of OpenBLAS's time to ours (above 1: ours is faster).
static void time_interleaved(Layer *L, int product, int reps, int skip_openblas, double *best_gemm,
                             double *best_blas, double *median_ratio) {
    double ratios[1024];
    int n = reps < 1024 ? reps : 1024;
    *best_gemm = *best_blas = 1e30;
    time_once(L, product, 0);  // warm-up of both
    if (!skip_openblas) time_once(L, product, 1);
    for (int r = 0; r < n; r++) {
        double tg, tb;
        if (r % 2 == 0 || skip_openblas) {
            tg = time_once(L, product, 0);
            tb = skip_openblas ? tg : time_once(L, product, 1);
        } else {
            tb = time_once(L, product, 1);
            tg = time_once(L, product, 0);
        }
        if (tg < *best_gemm) *best_gemm = tg;
        if (tb < *best_blas) *best_blas = tb;
        ratios[r] = tb / tg;
    }
    *median_ratio = median_of(ratios, n);
}

static int parse_int(const char *opt, const char *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v <= 0 || v > 1000000) {
        fprintf(stderr, "gemm_bench: %s: expected a positive integer, got '%s'\n", opt, s);
        exit(2);
    }
    return (int)v;
}

// ----------------------------------------------------------------------------
// --task-form N: the products of the transformer blocks in the two forms the
// variants run them in, on this machine, single thread:
//   fork-join form  one call over all rows (forward, input gradient) or all
//                   output channels (weight gradient); the call packs the
//                   weight block by block as it goes, into a buffer that stays
//                   in L2 (forkjoin, seq);
//   task form       forward and input gradient: the weight packed once into a
//                   buffer of its whole packed size, in pieces of 256 columns
//                   (the pack operations of core/step.h), then row chunks of N
//                   rows on it; weight gradient: chunks of TASK_FORM_CHANNELS
//                   output channels, each packing the layer's input (tasks and
//                   taskiter with BATCH_SUBSIZE * T = N).
// Run rules: the L layers (--layers, d12's 12) each have their own weight, and
// one timing covers all L in turn, as a step does, so that each weight comes
// from memory (L weights of one shape are 28 to 340 MB); the two forms
// alternate within a repetition, which goes first alternating too; best of
// --reps, and the median of the per-repetition ratios task / fork-join. The
// pack's time is also timed alone (per packed float), beside a copy floor:
// memcpy of each weight into the packed buffer (per float), the least that
// writing a packed copy of a weight from memory costs here.
#define TASK_FORM_CHANNELS 256 // core/taskgraph.c: product column chunks are at least 256 wide
#define TASK_FORM_PACK_PIECE 256

typedef struct {
    int layers, rows, IC, OC;
    float **w, **dw;
    float *inp, *bias, *out, *dout, *dinp, *dbias, *packed;
} TaskFormShape;

static double time_forkjoin_form(TaskFormShape *S, int product) {
    double t0 = now();
    for (int l = 0; l < S->layers; l++) switch (product) {
        case FORWARD: matmul_forward_rows(S->out, S->inp, S->w[l], S->bias, 0, S->rows, S->IC, S->OC); break;
        case BACKWARD_INPUT: matmul_backward_input_rows(S->dinp, S->dout, S->w[l], 0, S->rows, S->IC, S->OC); break;
        default: matmul_backward_weight_channels(S->dw[l], S->dbias, S->dout, S->inp, 0, S->OC, S->rows, S->IC, S->OC);
        }
    return now() - t0;
}

// Returns the whole time; *pack_s gets the part spent packing.
static double time_task_form(TaskFormShape *S, int product, int chunk_rows, double *pack_s) {
    double t0 = now(), packing = 0;
    for (int l = 0; l < S->layers; l++) {
        if (product == BACKWARD_WEIGHT) {
            for (int o = 0; o < S->OC; o += TASK_FORM_CHANNELS)
                matmul_backward_weight_channels(S->dw[l], S->dbias, S->dout, S->inp, o,
                                                o + TASK_FORM_CHANNELS < S->OC ? o + TASK_FORM_CHANNELS : S->OC,
                                                S->rows, S->IC, S->OC);
            continue;
        }
        double p0 = now();
        int n = product == FORWARD ? S->OC : S->IC;
        for (int c = 0; c < n; c += TASK_FORM_PACK_PIECE) {
            int c1 = c + TASK_FORM_PACK_PIECE < n ? c + TASK_FORM_PACK_PIECE : n;
            if (product == FORWARD) matmul_pack_forward_weight(S->packed, S->w[l], c, c1, S->IC, S->OC);
            else matmul_pack_backward_input_weight(S->packed, S->w[l], c, c1, S->IC, S->OC);
        }
        packing += now() - p0;
        for (int r = 0; r < S->rows; r += chunk_rows) {
            int r1 = r + chunk_rows < S->rows ? r + chunk_rows : S->rows;
            if (product == FORWARD)
                matmul_forward_packed(S->out, S->inp, S->packed, S->bias, r, r1, 0, S->OC, S->IC, S->OC);
            else
                matmul_backward_input_packed(S->dinp, S->dout, S->packed, r, r1, 0, S->IC, S->IC, S->OC);
        }
    }
    *pack_s = packing;
    return now() - t0;
}

static double time_copy_floor(TaskFormShape *S) {
    double t0 = now();
    for (int l = 0; l < S->layers; l++) memcpy(S->packed, S->w[l], (size_t)S->IC * S->OC * sizeof(float));
    return now() - t0;
}

static int task_form(int rows, int chunk_rows, int layers, int reps, int json) {
    static const struct { const char *name; int IC, OC; } shapes[] = {
        {"qkv", 768, 2304}, {"attproj", 768, 768}, {"fc", 768, 3072}, {"fcproj", 3072, 768},
    };
    if (!json) {
        printf("task form (a packing of each weight + chunks of %d rows; weight gradient: chunks of %d channels) "
               "against fork-join form (one call), %d rows, %d layers a timing, best of %d, the forms alternating (%s)\n",
               chunk_rows, TASK_FORM_CHANNELS, rows, layers, reps,
               bench_clock == CLOCK_MONOTONIC ? "wall clock" : "thread CPU time");
        printf("%-8s %-16s %10s %10s %9s %7s %7s %10s %10s\n", "layer", "product", "forkjoin ms", "task ms",
               "pack ms", "ratio", "median", "pack ns/f", "copy ns/f");
    }
    double sum_fj = 0, sum_task = 0, sum_pack = 0, packed_floats = 0;
    unsigned state = 4242;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        TaskFormShape S = {layers, rows, shapes[s].IC, shapes[s].OC, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
        size_t n_w = (size_t)S.IC * S.OC;
        S.w = malloc(layers * sizeof(float *));
        S.dw = malloc(layers * sizeof(float *));
        if (!S.w || !S.dw) {
            fprintf(stderr, "gemm_bench: out of memory (%d layers)\n", layers);
            exit(2);
        }
        for (int l = 0; l < layers; l++) S.w[l] = random_floats(n_w, &state), S.dw[l] = random_floats(n_w, &state);
        S.inp = random_floats((size_t)rows * S.IC, &state), S.dinp = random_floats((size_t)rows * S.IC, &state);
        S.out = random_floats((size_t)rows * S.OC, &state), S.dout = random_floats((size_t)rows * S.OC, &state);
        S.bias = random_floats(S.OC, &state), S.dbias = random_floats(S.OC, &state);
        // the larger packed layout (forward, input gradient), and room for the copy floor's memcpy
        size_t n_packed = n_w;
        if (matmul_packed_floats(S.IC, S.OC) > n_packed) n_packed = matmul_packed_floats(S.IC, S.OC);
        if (matmul_packed_floats(S.OC, S.IC) > n_packed) n_packed = matmul_packed_floats(S.OC, S.IC);
        S.packed = aligned_alloc(64, (n_packed * sizeof(float) + 63) / 64 * 64);
        if (!S.packed) {
            fprintf(stderr, "gemm_bench: out of memory (%zu floats)\n", n_packed);
            exit(2);
        }
        memset(S.packed, 0, n_packed * sizeof(float));
        for (int p = 0; p < 3; p++) {
            double best_fj = 1e30, best_task = 1e30, best_pack = 1e30, best_copy = 1e30, ratios[1024];
            int n = reps < 1024 ? reps : 1024;
            double pack_s;
            time_forkjoin_form(&S, p), time_task_form(&S, p, chunk_rows, &pack_s); // warm-up of both
            for (int r = 0; r < n; r++) {
                double tf, tt;
                if (r % 2 == 0) tf = time_forkjoin_form(&S, p), tt = time_task_form(&S, p, chunk_rows, &pack_s);
                else tt = time_task_form(&S, p, chunk_rows, &pack_s), tf = time_forkjoin_form(&S, p);
                if (p != BACKWARD_WEIGHT) {
                    double tc = time_copy_floor(&S);
                    if (tc < best_copy) best_copy = tc;
                    if (pack_s < best_pack) best_pack = pack_s;
                }
                if (tf < best_fj) best_fj = tf;
                if (tt < best_task) best_task = tt;
                ratios[r] = tt / tf;
            }
            double median = median_of(ratios, n);
            double floats = (double)layers * n_w;
            int has_pack = p != BACKWARD_WEIGHT;
            sum_fj += best_fj, sum_task += best_task;
            if (has_pack) sum_pack += best_pack, packed_floats += floats;
            if (json) {
                printf("{\"layer\": \"%s\", \"product\": \"%s\", \"rows\": %d, \"chunk\": %d, \"layers\": %d, "
                       "\"forkjoin_s\": %.9f, \"task_s\": %.9f, \"ratio\": %.4f, \"median_ratio\": %.4f",
                       shapes[s].name, product_names[p], rows, p == BACKWARD_WEIGHT ? TASK_FORM_CHANNELS : chunk_rows,
                       layers, best_fj, best_task, best_task / best_fj, median);
                if (has_pack)
                    printf(", \"pack_s\": %.9f, \"pack_ns_per_float\": %.4f, \"copy_ns_per_float\": %.4f",
                           best_pack, best_pack / floats * 1e9, best_copy / floats * 1e9);
                printf("}\n");
            } else {
                printf("%-8s %-16s %10.2f %10.2f ", shapes[s].name, product_names[p], best_fj * 1e3, best_task * 1e3);
                if (has_pack) printf("%9.2f ", best_pack * 1e3);
                else printf("%9s ", "-");
                printf("%7.3f %7.3f ", best_task / best_fj, median);
                if (has_pack) printf("%10.3f %10.3f\n", best_pack / floats * 1e9, best_copy / floats * 1e9);
                else printf("%10s %10s\n", "-", "-");
            }
        }
        for (int l = 0; l < layers; l++) free(S.w[l]), free(S.dw[l]);
        free(S.w), free(S.dw), free(S.inp), free(S.dinp), free(S.out), free(S.dout), free(S.bias), free(S.dbias),
            free(S.packed);
    }
    if (json)
        printf("{\"total\": {\"rows\": %d, \"chunk\": %d, \"layers\": %d, \"forkjoin_s\": %.9f, \"task_s\": %.9f, "
               "\"ratio\": %.4f, \"pack_s\": %.9f, \"pack_ns_per_float\": %.4f}}\n",
               rows, chunk_rows, layers, sum_fj, sum_task, sum_task / sum_fj, sum_pack, sum_pack / packed_floats * 1e9);
    else
        printf("%-8s %-16s %10.2f %10.2f %9.2f %7.3f\n\n", "all", "(sum of bests)", sum_fj * 1e3, sum_task * 1e3,
               sum_pack * 1e3, sum_task / sum_fj);
    return 0;
}

int main(int argc, char **argv) {
    int rows = 256, reps = 5, json = 0, skip_openblas = 0, task_form_rows = 0, n_layers = 12;
    double peak = 0.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--skip-openblas")) skip_openblas = 1;
        else if (!strcmp(argv[i], "--cpu-time")) bench_clock = CLOCK_THREAD_CPUTIME_ID;
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc) chunk = parse_int("--chunk", argv[++i]);
        else if (!strcmp(argv[i], "--task-form") && i + 1 < argc) task_form_rows = parse_int("--task-form", argv[++i]);
        else if (!strcmp(argv[i], "--layers") && i + 1 < argc) n_layers = parse_int("--layers", argv[++i]);
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = parse_int("--rows", argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = parse_int("--reps", argv[++i]);
        else if (!strcmp(argv[i], "--peak") && i + 1 < argc) peak = parse_int("--peak", argv[++i]);
        else {
            fprintf(stderr, "gemm_bench: %s: unknown option (use --rows N --reps N --chunk N --peak GFLOPS --json --skip-openblas --cpu-time --task-form N --layers L)\n",
                    argv[i]);
            return 2;
        }
    }
    if (task_form_rows) return task_form(rows, task_form_rows, n_layers, reps, json);
    // GPT-2 124M: C = 768, padded vocabulary Vp = 50304.
    static const struct { const char *name; int IC, OC, has_bias; } layers[] = {
        {"qkv", 768, 2304, 1},  {"attproj", 768, 768, 1}, {"fc", 768, 3072, 1},
        {"fcproj", 3072, 768, 1}, {"lmhead", 768, 50304, 0},
    };
    const char *isa =
#if defined(__AVX512F__)
        "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
        "avx2+fma";
#else
        "portable";
#endif
    if (!json) {
        printf("gemm kernels: %s; rows = %d; chunk = %d; best of %d, the libraries alternating (%s); "
               "median: of the per-repetition ratios; OpenBLAS %s\n", isa, rows, chunk, reps,
               bench_clock == CLOCK_MONOTONIC ? "wall clock" : "thread CPU time", openblas_get_config());
        printf("%-8s %-16s %6s %6s %6s %10s %10s %7s %7s\n", "layer", "product", "M", "N", "K", "gemm GF/s",
               "oblas GF/s", "ratio", "median");
    }
    double total_flops = 0, total_gemm = 0, total_blas = 0;
    unsigned state = 12345;
    for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++) {
        Layer L = {rows, layers[l].IC, layers[l].OC, 0, 0, 0, 0, 0, 0, 0, 0};
        size_t n_in = (size_t)rows * L.IC, n_w = (size_t)L.OC * L.IC, n_out = (size_t)rows * L.OC;
        L.inp = random_floats(n_in, &state);
        L.w = random_floats(n_w, &state);
        L.bias = layers[l].has_bias ? random_floats(L.OC, &state) : NULL;
        L.dbias = layers[l].has_bias ? random_floats(L.OC, &state) : NULL;
        L.out = random_floats(n_out, &state);
        L.dout = random_floats(n_out, &state);
        L.dinp = random_floats(n_in, &state);
        L.dw = random_floats(n_w, &state);
        for (int p = 0; p < 3; p++) {
            int M = p == BACKWARD_WEIGHT ? L.OC : rows;
            int N = p == FORWARD ? L.OC : L.IC;
            int K = p == FORWARD ? L.IC : p == BACKWARD_INPUT ? L.OC : rows;
            double flops = 2.0 * rows * L.IC * L.OC;
            double tg, tb, median_ratio;
            time_interleaved(&L, p, reps, skip_openblas, &tg, &tb, &median_ratio);
            total_flops += flops, total_gemm += tg, total_blas += tb;
            double gg = flops / tg * 1e-9, gb = flops / tb * 1e-9;
            if (json)
                printf("{\"layer\": \"%s\", \"product\": \"%s\", \"M\": %d, \"N\": %d, \"K\": %d, "
                       "\"gemm_gflops\": %.2f, \"openblas_gflops\": %.2f, \"ratio\": %.3f, "
                       "\"median_ratio\": %.3f}\n",
                       layers[l].name, product_names[p], M, N, K, gg, gb, gg / gb, median_ratio);
            else
                printf("%-8s %-16s %6d %6d %6d %10.1f %10.1f %7.2f %7.2f\n", layers[l].name, product_names[p], M,
                       N, K, gg, gb, gg / gb, median_ratio);
        }
        free(L.inp), free(L.w), free(L.bias), free(L.dbias), free(L.out), free(L.dout), free(L.dinp),
            free(L.dw);
    }
    double gg = total_flops / total_gemm * 1e-9, gb = total_flops / total_blas * 1e-9;
    if (json) {
        printf("{\"total\": {\"isa\": \"%s\", \"rows\": %d, \"chunk\": %d, \"gemm_gflops\": %.2f, "
               "\"openblas_gflops\": %.2f, \"ratio\": %.3f, \"openblas_core\": \"%s\"", isa, rows, chunk, gg, gb,
               gg / gb, openblas_get_corename());
        if (peak > 0) printf(", \"peak_gflops\": %.1f, \"fraction_of_peak\": %.3f", peak, gg / peak);
        printf("}}\n");
    } else {
        printf("%-8s %-16s %6s %6s %6s %10.1f %10.1f %7.2f\n", "all", "(time-weighted)", "", "", "", gg, gb,
               gg / gb);
        if (peak > 0) printf("gemm: %.1f%% of the given peak %.0f GFLOP/s\n", 100 * gg / peak, peak);
    }
    return 0;
}
