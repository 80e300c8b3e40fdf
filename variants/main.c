// The command-line front shared by every variant: options, model and data
// loading, the training loop's reporting (--json), verification against a
// debug state (--verify) and per-kernel traces (--trace). The variant itself
// is the executor linked in (seq.c, forkjoin.c, tasks.c or taskiter.c).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#include <sched.h>
#endif
#include "../core/data.h"
#include "../core/fileio.h"
#include "../core/model.h"
#include "../core/step.h"
#include "../core/trace.h"
#include "../core/traffic.h"
#include "executor.h"

#ifndef KERNELS_NAME
#define KERNELS_NAME "fast"
#endif
#ifdef __clang__
#define COMPILER_NAME "clang"
#else
#define COMPILER_NAME "gcc"
#endif

#define EXIT_BAD_INPUT 2

typedef struct {
    const char *model_path, *config_name, *data_path, *verify_path, *trace_path, *save_path;
    const char *expect_losses_path;
    int B, T, steps;
    float lr, weight_decay, tolerance;
    long long seed;
    int json;
    int describe; // print the step's operations with FLOPs and bytes instead of training
    ExecOptions exec;
} Options;

static char program[64] = "gpt2";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "%s: ", program);
    vfprintf(stderr, fmt, args);
    fprintf(stderr, "\n");
    va_end(args);
    exit(EXIT_BAD_INPUT);
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: %s [options]\n"
            "  --config NAME        embedded model configuration (%s; default d12)\n"
            "  --model FILE         llm.c checkpoint (magic 20240326 v3) instead of --config\n"
            "  --data FILE          llm.c token file (magic 20240520 v1); default: synthetic stream\n"
            "  -B N, -T N           batch size and sequence length (default 4 and 64)\n"
            "  --steps N            training steps (default 10)\n"
            "  --lr X, --wd X       AdamW learning rate and weight decay (default 1e-4 and 0)\n"
            "  --seed N             seed of random weights and synthetic data (default 1337)\n"
            "  --threads N          threads of parallel variants (default OMP_NUM_THREADS)\n"
            "  --batch-subsize N    sequences per chunk (tasks, taskiter)\n"
            "  --token-chunk K      tokens per chunk (tasks, taskiter)\n"
            "  --channel-chunk N    channels per chunk of channel-split operations (tasks, taskiter)\n"
            "  --json               one JSON object per line on stdout\n"
            "  --trace FILE         write per-kernel timing records (CSV)\n"
            "  --describe           print each operation of the step with its FLOPs and compulsory\n"
            "                       bytes (one JSON object per line) instead of training\n"
            "  --verify FILE        check logits, loss and gradients against an llm.c debug state,\n"
            "                       then train --steps steps on its batch\n"
            "  --expect-losses FILE with --verify: expected per-step losses (whitespace separated)\n"
            "  --tolerance X        with --verify: largest accepted absolute difference (default 1e-4)\n"
            "  --save FILE          write a checkpoint after training\n",
            program, gpt2_named_config_list());
}

static long long parse_int(const char *option, const char *text, long long lo, long long hi) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end) die("%s: '%s' is not an integer", option, text);
    if (v < lo || v > hi) die("%s: %lld is out of range [%lld, %lld]", option, v, lo, hi);
    return v;
}

static float parse_float(const char *option, const char *text) {
    char *end;
    errno = 0;
    float v = strtof(text, &end);
    if (errno || end == text || *end || !isfinite(v)) die("%s: '%s' is not a finite number", option, text);
    return v;
}

static Options parse_options(int argc, char **argv) {
    Options o = {0};
    o.B = 4;
    o.T = 64;
    o.steps = 10;
    o.lr = 1e-4f;
    o.weight_decay = 0.0f;
    o.tolerance = 1e-4f;
    o.seed = 1337;
    int B_given = 0, T_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(a, "--json")) {
            o.json = 1;
            continue;
        }
        if (!strcmp(a, "--describe")) {
            o.describe = 1;
            continue;
        }
        if (a[0] != '-') die("unexpected argument '%s' (see --help)", a);
        if (i + 1 >= argc) {
            if (!strcmp(a, "--config") || !strcmp(a, "--model") || !strcmp(a, "--data") || !strcmp(a, "-B") ||
                !strcmp(a, "-T") || !strcmp(a, "--steps") || !strcmp(a, "--lr") || !strcmp(a, "--wd") ||
                !strcmp(a, "--seed") || !strcmp(a, "--threads") || !strcmp(a, "--batch-subsize") ||
                !strcmp(a, "--token-chunk") || !strcmp(a, "--channel-chunk") || !strcmp(a, "--trace") ||
                !strcmp(a, "--verify") || !strcmp(a, "--expect-losses") || !strcmp(a, "--tolerance") ||
                !strcmp(a, "--save"))
                die("%s: missing value", a);
            die("unknown option '%s' (see --help)", a);
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--config")) o.config_name = v;
        else if (!strcmp(a, "--model")) o.model_path = v;
        else if (!strcmp(a, "--data")) o.data_path = v;
        else if (!strcmp(a, "-B")) { o.B = (int)parse_int(a, v, 1, 1 << 20); B_given = 1; }
        else if (!strcmp(a, "-T")) { o.T = (int)parse_int(a, v, 1, 1 << 20); T_given = 1; }
        else if (!strcmp(a, "--steps")) o.steps = (int)parse_int(a, v, 0, 1 << 24);
        else if (!strcmp(a, "--lr")) o.lr = parse_float(a, v);
        else if (!strcmp(a, "--wd")) o.weight_decay = parse_float(a, v);
        else if (!strcmp(a, "--seed")) o.seed = parse_int(a, v, 0, (1ll << 62));
        else if (!strcmp(a, "--threads")) o.exec.threads = (int)parse_int(a, v, 1, 4096);
        else if (!strcmp(a, "--batch-subsize")) o.exec.batch_subsize = (int)parse_int(a, v, 1, 1 << 20);
        else if (!strcmp(a, "--token-chunk")) o.exec.token_chunk = (int)parse_int(a, v, 1, 1 << 20);
        else if (!strcmp(a, "--channel-chunk")) o.exec.channel_chunk = (int)parse_int(a, v, 1, 1 << 24);
        else if (!strcmp(a, "--trace")) o.trace_path = v;
        else if (!strcmp(a, "--verify")) o.verify_path = v;
        else if (!strcmp(a, "--expect-losses")) o.expect_losses_path = v;
        else if (!strcmp(a, "--tolerance")) o.tolerance = parse_float(a, v);
        else if (!strcmp(a, "--save")) o.save_path = v;
        else die("unknown option '%s' (see --help)", a);
    }
    if (o.model_path && o.config_name) die("--model and --config exclude each other");
    if (!o.model_path && !o.config_name) o.config_name = "d12";
    if (o.verify_path && o.data_path) die("--verify trains on the debug state's batch; --data does not apply");
    if (o.expect_losses_path && !o.verify_path) die("--expect-losses needs --verify");
    if (o.verify_path && (B_given || T_given)) die("--verify takes B and T from the debug state; drop -B/-T");
    return o;
}

// Which OpenMP runtime library this process actually runs on.
static const char *openmp_runtime(void) {
#ifdef _OPENMP
    Dl_info info;
    if (dladdr((void *)omp_get_num_threads, &info) && info.dli_fname) {
        if (strstr(info.dli_fname, "gomp")) return "libgomp";
        if (strstr(info.dli_fname, "libomp") || strstr(info.dli_fname, "libiomp")) return "libomp";
        return info.dli_fname;
    }
    return "unknown";
#else
    return "none";
#endif
}

static void print_placement_json(FILE *out, int threads) {
    const char *bind = getenv("OMP_PROC_BIND"), *places = getenv("OMP_PLACES");
    fprintf(out, "\"proc_bind\": \"%s\", \"places\": \"%s\", \"thread_cpus\": [", bind ? bind : "",
            places ? places : "");
#ifdef _OPENMP
    int cpus[4096];
    int n = threads < 4096 ? threads : 4096;
#pragma omp parallel num_threads(n)
    {
        int t = omp_get_thread_num();
        if (t < n) cpus[t] = sched_getcpu();
    }
    for (int t = 0; t < n; t++) fprintf(out, "%s%d", t ? ", " : "", cpus[t]);
#else
    (void)threads;
    fprintf(out, "%d", -1);
#endif
    fprintf(out, "]");
}

static double max_abs_diff(const float *a, const float *b, size_t n, size_t *where) {
    double worst = 0.0;
    *where = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > worst || isnan(d)) {
            worst = isnan(d) ? INFINITY : d;
            *where = i;
        }
    }
    return worst;
}

// Compares the state after one step's forward and backward with the debug
// state; prints one line per tensor. Returns the number of failures.
static int compare_with_state(const GPT2 *model, const DebugState *state, float loss, float tol, int json) {
    int failures = 0;
    int V = model->config.vocab_size, Vp = model->config.padded_vocab_size;
    size_t BT = (size_t)state->B * state->T, where = 0;
    double worst_logit = 0.0;
    size_t worst_at = 0;
    for (size_t r = 0; r < BT; r++) {
        double d = max_abs_diff(model->acts.logits + r * Vp, state->logits + r * V, V, &where);
        if (d > worst_logit) {
            worst_logit = d;
            worst_at = r * V + where;
        }
    }
    double loss_diff = fabs((double)loss - state->loss);
    FILE *out = json ? stdout : stderr;
    if (json)
        fprintf(out, "{\"verify\": \"logits\", \"max_abs_diff\": %.6g, \"at\": %zu, \"ok\": %s}\n", worst_logit,
                worst_at, worst_logit <= tol ? "true" : "false");
    else
        fprintf(out, "verify %-10s max |diff| %.3e at %zu %s\n", "logits", worst_logit, worst_at,
                worst_logit <= tol ? "ok" : "FAIL");
    failures += !(worst_logit <= tol);
    if (json)
        fprintf(out, "{\"verify\": \"loss\", \"value\": %.9g, \"expected\": %.9g, \"max_abs_diff\": %.6g, \"ok\": %s}\n",
                loss, state->loss, loss_diff, loss_diff <= tol ? "true" : "false");
    else
        fprintf(out, "verify %-10s %.7f expected %.7f |diff| %.3e %s\n", "loss", loss, state->loss, loss_diff,
                loss_diff <= tol ? "ok" : "FAIL");
    failures += !(loss_diff <= tol);
    size_t offset = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        size_t n = model->param_sizes[t];
        double d = max_abs_diff(model->grads.tensor[t], state->grads + offset, n, &where);
        const char *name = model->param_shape[t].name;
        if (json)
            fprintf(out, "{\"verify\": \"grad %s\", \"max_abs_diff\": %.6g, \"at\": %zu, \"ok\": %s}\n", name, d,
                    where, d <= tol ? "true" : "false");
        else
            fprintf(out, "verify grad %-8s max |diff| %.3e at %zu %s\n", name, d, where, d <= tol ? "ok" : "FAIL");
        failures += !(d <= tol);
        offset += n;
    }
    return failures;
}

static int read_expected_losses(const char *path, float *losses, int max) {
    Error err;
    int n;
    if (expected_losses_read(path, losses, max, &n, &err) != 0) die("%s", err.message);
    return n;
}

static void print_step(const Options *o, int step, const StepReport *r) {
    if (o->json)
        printf("{\"step\": %d, \"loss\": %.9g, \"forward_s\": %.9f, \"backward_s\": %.9f, \"update_s\": %.9f, "
               "\"step_s\": %.9f}\n",
               step, r->loss, r->phase_s[PHASE_FORWARD], r->phase_s[PHASE_BACKWARD], r->phase_s[PHASE_UPDATE],
               r->step_s);
    else
        fprintf(stderr, "step %4d  loss %.6f  (forward %.3f s, backward %.3f s, update %.3f s, step %.3f s)\n",
                step, r->loss, r->phase_s[PHASE_FORWARD], r->phase_s[PHASE_BACKWARD], r->phase_s[PHASE_UPDATE],
                r->step_s);
    fflush(stdout);
}

// Runs n steps from `first`, one call per step unless the executor runs the
// whole loop as one graph; prints each step.
static void train(Executor *ex, const Options *o, int first, int n, float *losses, StepReport *reports,
                  Trace *trace) {
    if (n <= 0) return;
    if (EXECUTOR_WHOLE_LOOP) {
        executor_train(ex, first, n, losses, reports, trace);
        for (int i = 0; i < n; i++) print_step(o, first + i, &reports[i]);
    } else {
        for (int i = 0; i < n; i++) {
            executor_train(ex, first + i, 1, losses, &reports[i], trace);
            print_step(o, first + i, &reports[i]);
        }
    }
}

int main(int argc, char **argv) {
    snprintf(program, sizeof(program), "gpt2-%s", EXECUTOR_NAME);
    Options o = parse_options(argc, argv);
    Error err = {{0}};
    if (o.save_path && checkpoint_check_destination(o.save_path, &err) != 0) die("%s", err.message);
    if (o.expect_losses_path && fileio_check_regular(o.expect_losses_path, "losses file", &err) != 0)
        die("%s", err.message);

    GPT2Config config;
    if (o.model_path) {
        if (checkpoint_read_config(o.model_path, &config, &err) != 0) die("%s", err.message);
    } else if (gpt2_named_config(o.config_name, &config) != 0) {
        die("--config: unknown configuration '%s' (known: %s)", o.config_name, gpt2_named_config_list());
    }
    GPT2 model;
    gpt2_describe(&model, config);

    DebugState state = {0};
    if (o.verify_path) {
        if (debug_state_read(o.verify_path, &config, model.num_parameters, &state, &err) != 0) die("%s", err.message);
        o.B = state.B;
        o.T = state.T;
    }
    if (o.T > config.max_seq_len) die("-T: %d exceeds the model's max_seq_len %d", o.T, config.max_seq_len);

    BatchSource batches;
    if (o.verify_path) batches_fixed(&batches, o.B, o.T, state.inputs, state.targets);
    else if (o.data_path) {
        if (batches_from_tokens(&batches, o.data_path, o.B, o.T, config.vocab_size, &err) != 0) die("%s", err.message);
    } else batches_synthetic(&batches, o.B, o.T, config.vocab_size, (uint64_t)o.seed);

    char alloc_err[256];
    if (gpt2_allocate(&model, o.B, o.T, alloc_err, sizeof(alloc_err)) != 0) die("%s", alloc_err);
    if (o.model_path) {
        if (checkpoint_read_params(o.model_path, &model, &err) != 0) die("%s", err.message);
    } else if (!o.describe) gpt2_init_random(&model, (uint64_t)o.seed); // --describe needs shapes only

    AdamWSettings adamw = {o.lr, 0.9f, 0.999f, 1e-8f, o.weight_decay};
    StepDescription step;
    if (step_describe(&step, &model, adamw, &batches) != 0) die("out of memory describing the step");
    Executor *ex = executor_create(&step, &o.exec, &err);
    if (!ex) die("%s", err.message);
    ExecutorInfo info;
    executor_info(ex, &info);

    if (o.json) {
        printf("{\"info\": {\"variant\": \"%s\", \"compiler\": \"%s\", \"kernels\": \"%s\", \"threads\": %d, "
               "\"omp_runtime\": \"%s\", ",
               EXECUTOR_NAME, COMPILER_NAME, KERNELS_NAME, info.threads, openmp_runtime());
        print_placement_json(stdout, info.threads);
        printf(", \"batch_subsize\": %d, \"token_chunk\": %d, \"channel_chunk\": %d, \"tasks_per_step\": %ld, "
               "\"edges_per_step\": %ld, \"ops_per_step\": %d, \"config\": \"%s\", \"B\": %d, \"T\": %d, "
               "\"L\": %d, \"NH\": %d, \"C\": %d, \"V\": %d, \"Vp\": %d, \"num_parameters\": %zu}}\n",
               info.batch_subsize, info.token_chunk, info.channel_chunk, info.chunks_per_step, info.edges_per_step,
               step.n_ops, o.model_path ? o.model_path : o.config_name, o.B, o.T, config.num_layers,
               config.num_heads, config.channels, config.vocab_size, config.padded_vocab_size,
               model.num_parameters);
        fflush(stdout);
    } else {
        fprintf(stderr, "%s: %s, B=%d T=%d, %zu parameters, %d threads, %ld chunks per step\n", program,
                o.model_path ? o.model_path : o.config_name, o.B, o.T, model.num_parameters, info.threads,
                info.chunks_per_step);
    }

    if (o.describe) {
        int failed = traffic_write_json(&step, stdout) != 0 || fflush(stdout) != 0;
        executor_destroy(ex);
        step_free(&step);
        batches_free(&batches);
        debug_state_free(&state);
        gpt2_free(&model);
        if (failed) die("stdout: cannot write the step description");
        return 0;
    }

    int total_steps = o.steps + (o.verify_path ? 1 : 0);
    float *losses = calloc((size_t)total_steps + 1, sizeof(float));
    StepReport *reports = calloc((size_t)total_steps + 1, sizeof(StepReport));
    Trace trace;
    size_t trace_capacity = o.trace_path ? (size_t)info.chunks_per_step * (size_t)(total_steps + 1) : 0;
    if (!losses || !reports || trace_init(&trace, trace_capacity) != 0) die("out of memory for per-step records");
#if defined(USE_LIKWID) || defined(USE_PAPI)
    // kernel regions for hardware counters; failing to set them up is not fatal
    struct counters counters;
    if (counters_init(&counters, info.threads) == 0) {
#ifdef _OPENMP
#pragma omp parallel num_threads(info.threads)
#endif
        counters_thread_init(&counters);
    }
    trace.counters = &counters;
#endif

    int failures = 0;
    int first = 0;
    if (o.verify_path) {
        // A probe step with a zero learning rate leaves the parameters as they
        // were and the step-0 logits, loss and gradients in place; the moments
        // it touched are reset so that training starts from step 1.
        step.adamw.lr = 0.0f;
        step.adamw.weight_decay = 0.0f;
        StepReport probe;
        executor_train(ex, 0, 1, losses, &probe, NULL);
        failures += compare_with_state(&model, &state, losses[0], o.tolerance, o.json);
        memset(model.m_memory, 0, model.num_parameters * sizeof(float));
        memset(model.v_memory, 0, model.num_parameters * sizeof(float));
        step.adamw = adamw;
    }
    train(ex, &o, first, o.steps, losses, reports, &trace);
#if defined(USE_LIKWID) || defined(USE_PAPI)
    counters_finish(&counters, stderr);
#endif

    if (o.expect_losses_path) {
        float expected[4096];
        int n = read_expected_losses(o.expect_losses_path, expected, 4096);
        if (n < o.steps)
            die("%s: %d expected losses, fewer than the %d steps run", o.expect_losses_path, n, o.steps);
        double worst = 0.0;
        int worst_step = 0;
        for (int i = 0; i < o.steps; i++) {
            double d = fabs((double)losses[i] - expected[i]);
            if (d > worst || isnan(d)) {
                worst = isnan(d) ? INFINITY : d;
                worst_step = i;
            }
        }
        int ok = worst <= o.tolerance;
        if (o.json)
            printf("{\"verify\": \"losses\", \"max_abs_diff\": %.6g, \"at\": %d, \"ok\": %s}\n", worst, worst_step,
                   ok ? "true" : "false");
        else
            fprintf(stderr, "verify %-10s max |diff| %.3e at step %d %s\n", "losses", worst, worst_step,
                    ok ? "ok" : "FAIL");
        failures += !ok;
    }
    if (o.trace_path) {
        FILE *f = fopen(o.trace_path, "w");
        if (!f || trace_write_csv(&trace, &step, f) != 0 || fclose(f) != 0)
            die("%s: cannot write trace: %s", o.trace_path, strerror(errno));
    }
    if (o.save_path && checkpoint_write(o.save_path, &model, &err) != 0) die("%s", err.message);

    trace_free(&trace);
    free(losses);
    free(reports);
    executor_destroy(ex);
    step_free(&step);
    batches_free(&batches);
    debug_state_free(&state);
    gpt2_free(&model);
    if (failures) {
        fprintf(stderr, "%s: verification failed: %d comparison(s) beyond tolerance %g\n", program, failures,
                o.tolerance);
        return 1;
    }
    return 0;
}
