// peakflops: the machine's peak single-precision FLOP/s per vector width,
// the compute ceiling of the roofline.
//
// Each thread runs NCHAINS independent fused-multiply-add chains
//     acc_k = acc_k * mul + add
// on registers only. One chain alone runs at one FMA per FMA latency; the
// FMA units stay full only when (latency x FMA ports) chains are in flight:
// 4 cycles x 2 ports = 8 on Zen 3 and Skylake-X, so 12 chains leave margin
// for every current x86 core while fitting 12 + 2 constants in the 16
// registers AVX2 has. One FMA counts as 2 FLOPs per lane.
//
// Which vector widths are measured is decided at compile time by the target
// (-march=native: exactly this machine's): AVX-512 needs __AVX512F__, the
// 256- and 128-bit FMA kernels need __FMA__; without FMA the 128-bit and
// scalar kernels use a multiply and an add (still 2 FLOPs, "fma": false).
// A width the target lacks is simply absent from the results, so the binary
// can never execute an instruction the CPU does not have.
//
// The accumulators start from a value read through a volatile, and their
// sum is printed, so the compiler can neither precompute nor drop the work.
// mul = 1 - 1e-6 and add = seed * 1e-6 keep each chain near `seed`: no
// overflow, no denormals, whatever the iteration count.
//
// Placement: each thread records the logical CPU it ran its last repetition on (sched_getcpu),
// printed as "thread_cpus", so that the harness can check against the machine's topology that N
// threads really ran on N distinct cores (two hardware threads of one core share its FMA units,
// and such a figure is not N cores' peak).
//
// Thread speeds: each thread also times its own chains, and "thread_gflops" gives each thread's
// median rate over the repetitions. All threads run the same chains at once, so a thread well below
// the others is a slower place to run, not less work: two vCPUs the host put on one physical core,
// say. The harness measures this beside every run of a sweep (`[analysis] peak_beside`), with
// `--isa widest`, the width the kernels of a native build use: the probe takes a fraction of a second.
//
// Usage: peakflops [--threads N] [--reps N] [--iterations N] [--isa avx512|avx2|sse|scalar|widest] [--json]
// Errors: one line "peakflops: <option>: <problem>", exit status 2.

#define _GNU_SOURCE  // sched_getcpu
#include <errno.h>
#include <sched.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define BENCH_PROGRAM "peakflops"
#include "cli.h"
#endif

#define NCHAINS 12
#define DEFAULT_REPS 10
#define DEFAULT_ITERATIONS 10000000LL

// Expands X(k) for the 12 chains; one line per kernel instead of twelve.
#define FOR_EACH_CHAIN(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

// Defines `static float NAME(float seed, long long iterations)` running the
// 12 chains on vectors of type VEC with LANES floats (SET1 broadcasts a
// float), and returning the sum of every lane of every chain. Each kernel
// defines three per-chain macros first: DECLARE_ACC_NAME(k) starts chain k
// at seed + k/64, STEP_ACC_NAME(k) is its multiply-add, SUM_ACC_NAME(k)
// adds its lanes to `total`.
#define DEFINE_CHAINS(NAME, VEC, LANES, SET1)                                     \
    static float NAME(float seed, long long iterations) {                        \
        const VEC mul = SET1(1.0f - 1e-6f);                                      \
        const VEC add = SET1(seed * 1e-6f);                                      \
        FOR_EACH_CHAIN(DECLARE_ACC_##NAME)                                       \
        for (long long i = 0; i < iterations; i++) {                             \
            FOR_EACH_CHAIN(STEP_ACC_##NAME)                                      \
        }                                                                        \
        float lanes[LANES];                                                      \
        float total = 0.0f;                                                      \
        FOR_EACH_CHAIN(SUM_ACC_##NAME)                                           \
        return total;                                                            \
    }

#if defined(__AVX512F__)
#define DECLARE_ACC_chains_avx512(k) __m512 acc##k = _mm512_set1_ps(seed + (k) / 64.0f);
#define STEP_ACC_chains_avx512(k) acc##k = _mm512_fmadd_ps(acc##k, mul, add);
#define SUM_ACC_chains_avx512(k) \
    _mm512_storeu_ps(lanes, acc##k); for (int j = 0; j < 16; j++) total += lanes[j];
DEFINE_CHAINS(chains_avx512, __m512, 16, _mm512_set1_ps)
#endif

#if defined(__AVX__) && defined(__FMA__)
#define DECLARE_ACC_chains_avx2(k) __m256 acc##k = _mm256_set1_ps(seed + (k) / 64.0f);
#define STEP_ACC_chains_avx2(k) acc##k = _mm256_fmadd_ps(acc##k, mul, add);
#define SUM_ACC_chains_avx2(k) \
    _mm256_storeu_ps(lanes, acc##k); for (int j = 0; j < 8; j++) total += lanes[j];
DEFINE_CHAINS(chains_avx2, __m256, 8, _mm256_set1_ps)
#endif

#if defined(__SSE__)
#define DECLARE_ACC_chains_sse(k) __m128 acc##k = _mm_set1_ps(seed + (k) / 64.0f);
#if defined(__FMA__)
#define STEP_ACC_chains_sse(k) acc##k = _mm_fmadd_ps(acc##k, mul, add);
#else
#define STEP_ACC_chains_sse(k) acc##k = _mm_add_ps(_mm_mul_ps(acc##k, mul), add);
#endif
#define SUM_ACC_chains_sse(k) \
    _mm_storeu_ps(lanes, acc##k); for (int j = 0; j < 4; j++) total += lanes[j];
DEFINE_CHAINS(chains_sse, __m128, 4, _mm_set1_ps)
#endif

// Scalar: fmaf compiles to one instruction only when the target has FMA;
// otherwise it would be a libm call, so use a multiply and an add instead.
#define SCALAR_SET1(x) (x)
#define DECLARE_ACC_chains_scalar(k) float acc##k = seed + (k) / 64.0f;
#if defined(__FMA__)
#define STEP_ACC_chains_scalar(k) acc##k = fmaf(acc##k, mul, add);
#else
#define STEP_ACC_chains_scalar(k) acc##k = acc##k * mul + add;
#endif
#define SUM_ACC_chains_scalar(k) lanes[0] = acc##k; total += lanes[0];
DEFINE_CHAINS(chains_scalar, float, 1, SCALAR_SET1)

#if defined(__FMA__)
#define HAS_FMA 1
#else
#define HAS_FMA 0
#endif

struct isa_kernel {
    const char *isa;
    int vector_bits;
    int fma;  // 1 if one instruction does the multiply-add
    float (*chains)(float seed, long long iterations);
};

static const struct isa_kernel kernels[] = {
#if defined(__AVX512F__)
    {"avx512", 512, 1, chains_avx512},
#endif
#if defined(__AVX__) && defined(__FMA__)
    {"avx2", 256, 1, chains_avx2},
#endif
#if defined(__SSE__)
    {"sse", 128, HAS_FMA, chains_sse},
#endif
    {"scalar", 32, HAS_FMA, chains_scalar},
};
#define NKERNELS ((int)(sizeof kernels / sizeof kernels[0]))

// Best wall time over `reps` runs of the kernel on every thread at once;
// every run's time goes to times[0..reps-1], so that the harness can judge
// the spread and use a statistic one outlier cannot move (pstudy/ceilings.py).
// The first, untimed run brings the threads up and the clock out of idle.
// *checksum receives the sum over threads of the last run's results; cpus[t] (threads entries)
// the CPU thread t was on at the end of the last run, -1 where the team had fewer threads;
// thread_times[r * threads + t] thread t's own time in repetition r (0 where the team was smaller).
static double best_time(const struct isa_kernel *kernel, int threads, long long iterations,
                        int reps, float seed, double *checksum, double *times, int *cpus,
                        double *thread_times) {
    double best = INFINITY;
    for (int r = 0; r <= reps; r++) {
        double sum = 0.0;
        for (int t = 0; t < threads; t++) cpus[t] = -1;
        double *own = r > 0 ? thread_times + (size_t)(r - 1) * (size_t)threads : NULL;
        if (own) for (int t = 0; t < threads; t++) own[t] = 0.0;
        double t0 = omp_get_wtime();
        #pragma omp parallel num_threads(threads) reduction(+ : sum)
        {
            double start = omp_get_wtime();
            sum += kernel->chains(seed, iterations);
            if (own) own[omp_get_thread_num()] = omp_get_wtime() - start;
            cpus[omp_get_thread_num()] = sched_getcpu();
        }
        double t = omp_get_wtime() - t0;
        if (r > 0) {
            times[r - 1] = t;
            if (t < best) best = t;
        }
        *checksum = sum;
    }
    return best;
}

// Thread t's median own time over the repetitions (0 if it never ran: a smaller team).
static double median_thread_time(const double *thread_times, int threads, int reps, int t, double *scratch) {
    for (int r = 0; r < reps; r++) scratch[r] = thread_times[(size_t)r * (size_t)threads + (size_t)t];
    return median(scratch, reps);
}

int main(int argc, char **argv) {
    int threads = omp_get_max_threads();
    int reps = DEFAULT_REPS;
    long long iterations = DEFAULT_ITERATIONS;
    int json = 0;
    const char *only_isa = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--json") == 0) {
            json = 1;
        } else if (strcmp(arg, "--threads") == 0 || strcmp(arg, "--reps") == 0 ||
                   strcmp(arg, "--iterations") == 0 || strcmp(arg, "--isa") == 0) {
            if (i + 1 >= argc) usage_error(arg, "missing value");
            const char *value = argv[++i];
            if (strcmp(arg, "--threads") == 0) threads = (int)parse_integer(arg, value, 1, 4096);
            else if (strcmp(arg, "--reps") == 0) reps = (int)parse_integer(arg, value, 1, 100000);
            else if (strcmp(arg, "--isa") == 0) only_isa = value;
            else iterations = parse_integer(arg, value, 1, 1ll << 40);
        } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            printf("usage: peakflops [--threads N] [--reps N] [--iterations N] [--isa avx512|avx2|sse|scalar] "
                   "[--json]\n");
            return 0;
        } else {
            usage_error(arg, "unknown option (expected --threads, --reps, --iterations, --isa, --json)");
        }
    }
    int first = 0, count = NKERNELS;  // the kernels measured: every width built, or the one --isa names
    if (only_isa && strcmp(only_isa, "widest") == 0) {
        count = 1;  // kernels[] lists the widths widest first
    } else if (only_isa) {
        while (first < NKERNELS && strcmp(kernels[first].isa, only_isa) != 0) first++;
        if (first == NKERNELS) {
            static const char *const known[] = {"avx512", "avx2", "sse", "scalar"};
            int valid = 0;
            for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) valid |= strcmp(known[k], only_isa) == 0;
            char problem[160];
            snprintf(problem, sizeof problem, "%s: %s", only_isa,
                     valid ? "not in this build (made for a CPU without that width)"
                           : "unknown width (expected avx512, avx2, sse, scalar or widest)");
            usage_error("--isa", problem);
        }
        count = 1;
    }

    volatile float seed_source = 0.75f;
    const float seed = seed_source;
    double gflops[NKERNELS], checksum[NKERNELS], flops[NKERNELS];
    double *times = malloc(sizeof(double) * (size_t)NKERNELS * (size_t)reps);
    double *thread_times = malloc(sizeof(double) * (size_t)reps * (size_t)threads);
    double *thread_gflops = malloc(sizeof(double) * (size_t)NKERNELS * (size_t)threads);
    double *scratch = malloc(sizeof(double) * (size_t)reps);
    int *cpus = malloc(sizeof(int) * (size_t)threads);
    if (!times || !thread_times || !thread_gflops || !scratch || !cpus) {
        fprintf(stderr, "peakflops: out of memory for %d threads and %d repetitions\n", threads, reps);
        return 1;
    }
    double tick = omp_get_wtick();
    for (int k = first; k < first + count; k++) {
        double t = best_time(&kernels[k], threads, iterations, reps, seed, &checksum[k], times + (size_t)k * reps,
                             cpus, thread_times);
        if (t < tick) t = tick;
        double lanes = kernels[k].vector_bits / 32;
        flops[k] = 2.0 * NCHAINS * lanes * (double)iterations * threads;
        gflops[k] = flops[k] / t * 1e-9;
        for (int th = 0; th < threads; th++) {
            double own = median_thread_time(thread_times, threads, reps, th, scratch);
            thread_gflops[(size_t)k * threads + th] = own > 0 ? flops[k] / threads / (own > tick ? own : tick) * 1e-9 : 0;
        }
        if (!isfinite(checksum[k])) {
            fprintf(stderr, "peakflops: %s: checksum is not finite (%g)\n", kernels[k].isa, checksum[k]);
            return 1;
        }
    }

    fprintf(stderr, "peakflops: %d threads, %d FMA chains, %lld iterations, best of %d\n",
            threads, NCHAINS, iterations, reps);
    fprintf(stderr, "%-8s %5s %4s %12s %18s %14s\n", "isa", "bits", "fma", "GFLOP/s", "checksum", "slowest thread");
    for (int k = first; k < first + count; k++) {
        double fastest = 0, slowest = INFINITY;
        for (int th = 0; th < threads; th++) {
            double g = thread_gflops[(size_t)k * threads + th];
            if (g > fastest) fastest = g;
            if (g < slowest) slowest = g;
        }
        fprintf(stderr, "%-8s %5d %4s %12.2f %18.6f %13.2fx\n", kernels[k].isa, kernels[k].vector_bits,
                kernels[k].fma ? "yes" : "no", gflops[k], checksum[k], slowest > 0 ? fastest / slowest : 0.0);
    }

    if (json) {
        printf("{\"threads\":%d,\"chains\":%d,\"iterations\":%lld,\"reps\":%d,\"thread_cpus\":[",
               threads, NCHAINS, iterations, reps);
        for (int t = 0; t < threads; t++) printf("%s%d", t ? "," : "", cpus[t]);
        printf("],\"results\":[");
        for (int k = first; k < first + count; k++) {
            printf("%s{\"isa\":\"%s\",\"vector_bits\":%d,\"fma\":%s,\"gflops\":%.3f,\"checksum\":%.6f,"
                   "\"rep_gflops\":[",
                   k > first ? "," : "", kernels[k].isa, kernels[k].vector_bits,
                   kernels[k].fma ? "true" : "false", gflops[k], checksum[k]);
            for (int r = 0; r < reps; r++) {
                double t = times[(size_t)k * reps + r];
                printf("%s%.3f", r ? "," : "", flops[k] / (t > tick ? t : tick) * 1e-9);
            }
            printf("],\"thread_gflops\":[");
            for (int th = 0; th < threads; th++)
                printf("%s%.3f", th ? "," : "", thread_gflops[(size_t)k * threads + th]);
            printf("]}");
        }
        printf("]}\n");
    }
    free(times);
    free(thread_times);
    free(thread_gflops);
    free(scratch);
    free(cpus);
    return 0;
}
