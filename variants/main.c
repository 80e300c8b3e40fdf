// The command-line front shared by every variant: options, model and data
// loading, the training loop's reporting (--json), per-kernel traces (--trace)
// and checkpoints (--save); verification (--verify, --expect-losses) is in
// verify.c. The variant itself is the executor linked in (seq.c, forkjoin.c,
// tasks.c, taskiter.c: variants/LIST). The processes it runs in are
// distributed.h's: one (single.c), or gpt2-mpi's ranks, each running this
// front on its share of each batch, only rank 0 speaking.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#include <sched.h>
#endif
#include "../core/data.h"
#include "../core/fileio.h"
#include "../core/model.h"
#include "../core/schedule.h"
#include "../core/step.h"
#include "../core/trace.h"
#include "../core/traffic.h"
#include "executor.h"
#include "options.h"
#include "distributed.h"
#include "verify.h"

#ifndef KERNELS_NAME
#define KERNELS_NAME "fast"
#endif
#ifdef __clang__
#define COMPILER_NAME "clang"
#else
#define COMPILER_NAME "gcc"
#endif

#define EXIT_BAD_INPUT 2

static char program[64] = "gpt2";
// ranks other than 0 of a distributed run print nothing: their `out` goes nowhere (dist_output)
static int silent;
static FILE *out;
// whether the ranks have agreed to run (dist_agree); before that, a rank that stops tells the
// others through the agreement, after it, it ends the job (MPI_Abort)
static int agreed;

// Exits with `status`, ending the process layer first.
static void leave(int status) __attribute__((noreturn));
static void leave(int status) {
    if (out) fflush(out);
    if (!agreed) { // a rank stopping early (--help, --list-configs) must not leave the others waiting
        char line[DIST_LINE];
        int all = dist_agree(DIST_LEAVING, NULL, NULL, 0, line, sizeof(line));
        if (all != DIST_AGREED && all != status) {
            if (!silent) fprintf(stderr, "%s: %s\n", program, line);
            status = all;
        }
    }
    dist_finalize();
    exit(status);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    char line[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(line, sizeof(line), fmt, args);
    va_end(args);
    for (char *c = line; *c; c++) // one line, whatever a file name held
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    if (!agreed) {
        // every rank learns of this rank's failure at the agreement, and rank 0 prints it
        char all[DIST_LINE];
        dist_agree(DIST_FAILED, line, NULL, 0, all, sizeof(all));
        if (!silent) fprintf(stderr, "%s: %s\n", program, all);
        if (out) fflush(out);
        dist_finalize();
        exit(EXIT_BAD_INPUT);
    }
    if (dist_ranks() > 1) { // one rank cannot go on alone: its line, then the whole job ends
        fprintf(stderr, "%s: rank %d: %s\n", program, dist_rank(), line);
        if (out) fflush(out);
        dist_abort(EXIT_BAD_INPUT);
    }
    if (!silent) fprintf(stderr, "%s: %s\n", program, line);
    leave(EXIT_BAD_INPUT);
}

static Options parse_options(int argc, char **argv) {
    Options o;
    char err[512];
    int parsed = options_parse(argc, argv, dist_front(), &o, err, sizeof(err));
    if (parsed == OPTIONS_ERROR) die("%s", err);
    if (parsed == OPTIONS_HELP) {
        if (!silent) options_usage(out, program, dist_front());
        leave(0);
    }
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

static void print_placement_json(FILE *f, int threads) {
    const char *bind = getenv("OMP_PROC_BIND"), *places = getenv("OMP_PLACES");
    fprintf(f, "\"proc_bind\": \"%s\", \"places\": \"%s\", \"thread_cpus\": [", bind ? bind : "",
            places ? places : "");
#ifdef _OPENMP
    int cpus[4096];
    int n = threads < 4096 ? threads : 4096;
#pragma omp parallel num_threads(n)
    {
        int t = omp_get_thread_num();
        if (t < n) cpus[t] = sched_getcpu();
    }
    for (int t = 0; t < n; t++) fprintf(f, "%s%d", t ? ", " : "", cpus[t]);
#else
    (void)threads;
    fprintf(f, "%d", -1);
#endif
    fprintf(f, "]");
}

static void print_step(const Options *o, int step, const StepReport *r) {
    // a diverged run's loss (NaN, infinity) is JSON's null: the line stays valid JSON and the
    // harness records the divergence
    char loss[32];
    if (isfinite(r->loss)) snprintf(loss, sizeof(loss), "%.9g", r->loss);
    else snprintf(loss, sizeof(loss), "null");
    // what disturbed the step, null where it could not be read
    char steal[32], switches[32];
    if (r->steal_s >= 0) snprintf(steal, sizeof(steal), "%.2f", r->steal_s);
    else snprintf(steal, sizeof(steal), "null");
    if (r->involuntary_switches >= 0) snprintf(switches, sizeof(switches), "%ld", r->involuntary_switches);
    else snprintf(switches, sizeof(switches), "null");
    if (o->json) {
        fprintf(out, "{\"step\": %d, \"loss\": %s, \"forward_s\": %.9f, \"backward_s\": %.9f, \"update_s\": %.9f, ",
                step, loss, r->phase_s[PHASE_FORWARD], r->phase_s[PHASE_BACKWARD], r->phase_s[PHASE_UPDATE]);
        dist_step_json(out, r);
        fprintf(out, "\"step_s\": %.9f, \"steal_s\": %s, \"involuntary_switches\": %s}\n", r->step_s, steal,
                switches);
    } else if (!silent)
        fprintf(stderr, "step %4d  loss %.6f  (forward %.3f s, backward %.3f s, update %.3f s, step %.3f s)\n",
                step, r->loss, r->phase_s[PHASE_FORWARD], r->phase_s[PHASE_BACKWARD], r->phase_s[PHASE_UPDATE],
                r->step_s);
    fflush(out);
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
            // a whole-loop executor reads these at its iterations' ends itself
            Disturbance before, after;
            disturbance_now(&before);
            executor_train(ex, first + i, 1, losses, &reports[i], trace);
            disturbance_now(&after);
            report_disturbance(&reports[i], &before, &after);
            print_step(o, first + i, &reports[i]);
        }
    }
}

// Everything one run holds, built up step by step by main().
typedef struct {
    GPT2Config config;
    GPT2 model;
    DebugState state;  // --verify
    BatchSource batches;
    AdamWSettings adamw;
    StepDescription step;
    Executor *ex;
    ExecutorInfo info;
    float *losses;
    StepReport *reports;
    Trace trace;
    int failures;      // verification comparisons beyond the tolerance
    int b0, b1;        // the sequences of each batch this process trains on: [0, B) but in a distributed run
    Schedule schedule; // --describe-graph
    int has_schedule;
} Run;

static void list_configs(void) {
    for (size_t i = 0; gpt2_named_config_name(i); i++) fprintf(out, "%s\n", gpt2_named_config_name(i));
    if (fflush(out) != 0) die("stdout: cannot write the configurations");
}

// The model's configuration and shapes (from --model or --config) and, with
// --verify, the debug state, which sets B and T.
static void load_model(Options *o, Run *run) {
    Error err = {{0}};
    if (o->model_path) {
        if (checkpoint_read_config(o->model_path, &run->config, &err) != 0) die("%s", err.message);
    } else if (gpt2_named_config(o->config_name, &run->config) != 0) {
        die("--config: unknown configuration '%s' (known: %s)", o->config_name, gpt2_named_config_list());
    }
    gpt2_describe(&run->model, run->config);
    if (o->verify_path) {
        if (debug_state_read(o->verify_path, &run->config, run->model.num_parameters, &run->state, &err) != 0)
            die("%s", err.message);
        o->B = run->state.B;
        o->T = run->state.T;
    }
    int ranks = dist_ranks();
    char why[512];
    if (options_check_model(o, &run->config, ranks, why, sizeof(why)) != 0) die("%s", why);
    if (dist_check_executor(&o->exec, &err) != 0) die("%s", err.message);
    // the global batch split over the ranks, each rank at least one sequence
    dist_set_global_batch(o->B);
    dist_share(o->B, dist_rank(), ranks, &run->b0, &run->b1);
}

// Where the batches come from: the debug state's batch, a token file, or the synthetic stream.
static void load_data(const Options *o, Run *run) {
    Error err = {{0}};
    if (o->verify_path) {
        batches_fixed(&run->batches, o->B, o->T, run->state.inputs, run->state.targets);
    } else if (o->data_path) {
        if (batches_from_tokens(&run->batches, o->data_path, o->B, o->T, run->config.vocab_size, &err) != 0)
            die("%s", err.message);
        if (o->shuffle && batches_shuffle(&run->batches, LLMC_SHUFFLE_SEED, &err) != 0) die("%s", err.message);
    } else {
        batches_synthetic(&run->batches, o->B, o->T, run->config.vocab_size, (uint64_t)o->seed);
    }
    if ((run->b0 != 0 || run->b1 != o->B) && batches_share(&run->batches, run->b0, run->b1, &err) != 0)
        die("%s", err.message);
}

// 64-bit FNV-1a of n bytes: a token file's or a debug state's batch, compared across ranks.
static uint64_t fnv1a(const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

// Before any collective work: every rank has checked its own options and inputs, and now all
// of them compare what must match (docs/mpi.md, "Ranks that disagree"). A rank that failed got
// here through die(), with its line instead of these settings. One process agrees with itself.
static void agree(const Options *o, const Run *run) {
    if (dist_ranks() == 1) {
        agreed = 1;
        return;
    }
    DistSetting s[DIST_MAX_SETTINGS];
    int n = 0;
#define SETTING(label, ...) snprintf(s[n].name, sizeof(s[n].name), "%s", label), \
                            snprintf(s[n].value, sizeof(s[n].value), __VA_ARGS__), n++
    const GPT2Config *c = &run->config;
    SETTING("the model (--config, --model)", "L=%d NH=%d C=%d V=%d Vp=%d maxT=%d, %zu parameters", c->num_layers,
            c->num_heads, c->channels, c->vocab_size, c->padded_vocab_size, c->max_seq_len,
            run->model.num_parameters);
    SETTING("-B", "%d", o->B);
    SETTING("-T", "%d", o->T);
    SETTING("--steps", "%d", o->steps);
    if (o->verify_path) {
        size_t bytes = (size_t)o->B * o->T * sizeof(int);
        SETTING("--verify", "a debug state whose batch hashes to %016llx, loss %.9g",
                (unsigned long long)(fnv1a(run->state.inputs, bytes) ^ fnv1a(run->state.targets, bytes)),
                run->state.loss);
    } else if (o->data_path) {
        SETTING("--data", "%zu tokens hashing to %016llx", run->batches.file.count,
                (unsigned long long)fnv1a(run->batches.file.tokens, run->batches.file.count * sizeof(uint16_t)));
    } else {
        SETTING("--data", "none (synthetic tokens)");
    }
    SETTING("--shuffle", "%s", o->shuffle ? "given" : "not given");
    SETTING("--seed", "%lld", o->seed);
    SETTING("--lr", "%.9g", o->lr);
    SETTING("--wd", "%.9g", o->weight_decay);
    SETTING("--update", "%s", o->exec.sharded_update ? "sharded" : "replicated");
    SETTING("--collective", "%s", o->exec.direct_collective ? "direct" : "ring");
    SETTING("--overlap", "%s", o->exec.overlap ? "on" : "off");
    SETTING("--comm-threads", "%d", o->exec.comm_threads);
    SETTING("what to run", "%s", o->check ? "--check" : o->data_order ? "--data-order" : o->graph_path ?
            "--describe-graph" : o->describe ? "--describe" : "training");
    // the ones that add collective steps (the info line's placement, the trace's gathering)
    SETTING("--json", "%s", o->json ? "given" : "not given");
    SETTING("--trace", "%s", o->trace_path ? "given" : "not given");
    SETTING("--expect-losses", "%s", o->expect_losses_path ? "given" : "not given");
    SETTING("--tolerance", "%.9g", o->tolerance);
#undef SETTING
    char line[DIST_LINE];
    int status = dist_agree(DIST_READY, NULL, s, n, line, sizeof(line));
    if (status != DIST_AGREED) {
        if (!silent && line[0]) fprintf(stderr, "%s: %s\n", program, line);
        fflush(out);
        dist_finalize();
        exit(status);
    }
    agreed = 1;
}

// --data-order: the token offset of each step's batch, one per line.
static void print_data_order(const Options *o, Run *run) {
    size_t n = (size_t)o->B * o->T;
    int *inputs = malloc(n * sizeof(int)), *targets = malloc(n * sizeof(int));
    if (!inputs || !targets) die("out of memory for a batch");
    for (int i = 0; i < o->steps; i++) {
        batch_source_next(&run->batches, inputs, targets);
        fprintf(out, "%zu\n", run->batches.last_offset);
    }
    free(inputs);
    free(targets);
    if (fflush(out) != 0) die("stdout: cannot write the data order");
}

// The parameters' memory, filled from the checkpoint or the seeded initialisation.
static void load_parameters(const Options *o, Run *run) {
    Error err = {{0}};
    char alloc_err[256];
    if (gpt2_allocate(&run->model, run->b1 - run->b0, o->T, alloc_err, sizeof(alloc_err)) != 0) die("%s", alloc_err);
    if (o->model_path) {
        if (checkpoint_read_params(o->model_path, &run->model, &err) != 0) die("%s", err.message);
    } else if (!o->describe) {
        // where the compute is simulated the values are never read, and every rank would draw them
        if (!dist_simulated()) gpt2_init_random(&run->model, (uint64_t)o->seed); // --describe needs shapes only
    }
}

static void print_info(const Options *o, const Run *run) {
    const GPT2Config *c = &run->config;
    const ExecutorInfo *info = &run->info;
    const char *model = o->model_path ? o->model_path : o->config_name;
    if (o->json) {
        fprintf(out, "{\"info\": {\"variant\": \"%s\", \"compiler\": \"%s\", \"kernels\": \"%s\", \"threads\": %d, "
               "\"omp_runtime\": \"%s\", ",
               EXECUTOR_NAME, COMPILER_NAME, KERNELS_NAME, info->threads, openmp_runtime());
        print_placement_json(out, info->threads);
        if (info->runtime_json[0]) fprintf(out, ", \"runtime\": {%s}", info->runtime_json);
        fprintf(out, ", ");
        dist_info_json(out, &o->exec, run->ex, run->b0, run->b1, print_placement_json, info->threads);
        chunking_write_json(out, &info->chunking);
        fprintf(out, ", \"chunking_auto\": ["); // the knobs the executor chose for its thread count
        for (int k = 0, n = 0; k < N_CHUNK_KNOBS; k++) {
            const ChunkKnob *knob = &chunk_knobs()[k];
            if (info->chunking.chosen & knob->chosen) fprintf(out, "%s\"%s\"", n++ ? ", " : "", knob->name);
        }
        fprintf(out, "], \"chunked\": %s, \"weights_packed_per_step\": %s, "
               "\"tasks_per_step\": %ld, \"edges_per_step\": %ld, \"ops_per_step\": %d, \"config\": \"%s\", "
               "\"B\": %d, \"T\": %d, \"L\": %d, \"NH\": %d, \"C\": %d, \"V\": %d, \"Vp\": %d, "
               "\"num_parameters\": %zu}}\n",
               info->chunking.batch_subsize > 0 ? "true" : "false", run->step.packed_floats > 0 ? "true" : "false",
               info->chunks_per_step, info->edges_per_step, run->step.n_ops, model, o->B, o->T, c->num_layers,
               c->num_heads, c->channels, c->vocab_size, c->padded_vocab_size, run->model.num_parameters);
        fflush(out);
    } else if (!silent) {
        fprintf(stderr, "%s: %s, B=%d T=%d, %zu parameters, %d threads, %ld chunks per step", program, model, o->B,
                o->T, run->model.num_parameters, info->threads, info->chunks_per_step);
        const Chunking *ch = &info->chunking;
        if (ch->batch_subsize > 0) {
            char rows[64] = "the row chunks'";
            if (ch->tile_sequences > 0) snprintf(rows, sizeof(rows), "%d sequences'", ch->tile_sequences);
            char tiles[80];
            if (ch->tiles_per_product > 0)
                snprintf(tiles, sizeof(tiles), "%d tiles a product (the narrowest's %d columns)", ch->tiles_per_product,
                         ch->tile_columns);
            else
                snprintf(tiles, sizeof(tiles), "tiles of %d columns", ch->tile_columns);
            fprintf(stderr, " (batch subsize %d, token chunk %d, %s, %d input channels, of %s rows%s)",
                    ch->batch_subsize, ch->token_chunk, tiles, ch->tile_in_channels, rows,
                    ch->chosen ? "; chosen for the thread count where not given" : "");
        }
        fprintf(stderr, "\n");
    }
}

// Whether the step is described with pack operations. An executor that cuts
// the products' rows into chunks (EXECUTOR_PACKS_WEIGHTS) shares one packing
// of each weight among them; but where its chunking leaves a product's rows in
// one chunk (the chunking chosen at 1 to 3 threads at d12, or given), each column
// tile packs its own columns as it runs, as fork-join's threads do, and a
// separate pass would only add a write and a read of every weight. The
// chunking is resolved here on a description without packs (it depends on the
// products' shapes, not on the pack operations), so the executor, given the
// step, resolves the same one, and is created once.
static int step_packs_weights(const Options *o, Run *run, int executor_packs) {
    if (!executor_packs) return 0;
    StepDescription probe;
    if (step_describe(&probe, &run->model, run->adamw, &run->batches, 0) != 0)
        die("out of memory describing the step");
    Chunking chunking = o->exec.chunking;
    int threads = o->exec.threads;
#ifdef _OPENMP
    if (threads <= 0) threads = omp_get_max_threads();
#endif
    char why[256];
    // a chunking that cannot be resolved is refused by the executor, with this same message
    int rows_cut = chunking_resolve(&chunking, &probe, threads, why, sizeof(why)) != 0 ||
                   !chunking_product_rows_whole(&chunking, probe.B, probe.T);
    step_free(&probe);
    return rows_cut;
}

// The step as data, the executor that runs it, and the info line.
// The step's description and the executor that runs it: where the executor refuses the options
// (a chunking whose tasks exceed the limit), die with its message. With `check_only` (--check),
// the description and what a task-graph executor would refuse, without building its graph.
static void make_executor(const Options *o, Run *run, int check_only) {
    Error err = {{0}};
    run->adamw = (AdamWSettings){o->lr, 0.9f, 0.999f, 1e-8f, o->weight_decay};
    int executor_packs = dist_packs_weights(&o->exec); // a distributed variant's: its node-level executor's
    int pack_weights = step_packs_weights(o, run, executor_packs);
    if (step_describe(&run->step, &run->model, run->adamw, &run->batches, pack_weights) != 0)
        die("out of memory describing the step");
    if (check_only) {
        // the executors that pack weights once per row chunk are the task-graph ones
        Chunking requested = o->exec.chunking;
        int threads = o->exec.threads;
#ifdef _OPENMP
        if (threads <= 0) threads = omp_get_max_threads();
#endif
        if (executor_packs && taskgraph_check_chunking(&run->step, &requested, threads, NULL, err.message,
                                                       sizeof(err.message)) != 0)
            die("%s", err.message);
        return;
    }
    run->ex = executor_create(&run->step, &o->exec, &err);
    if (!run->ex) die("%s", err.message);
}

static void describe_step(const Options *o, Run *run) {
    make_executor(o, run, 0);
    executor_info(run->ex, &run->info);
    if (o->graph_path) { // a variant that cannot describe its schedule says so before anything is printed
        char why[256];
        if (executor_schedule(run->ex, &run->schedule, why, sizeof(why)) != 0) die("--describe-graph: %s", why);
        run->has_schedule = 1;
    }
    print_info(o, run);
}

// --describe: each operation with its FLOPs and compulsory bytes.
static void print_step_description(const Run *run) {
    if (traffic_write_json(&run->step, out) != 0 || fflush(out) != 0)
        die("stdout: cannot write the step description");
}

// --describe-graph FILE: the step's chunk tasks as this variant schedules them (run->schedule,
// asked of the executor by describe_step before the info line).
static void write_schedule(const Options *o, Run *run) {
    FILE *f = fopen(o->graph_path, "w");
    if (!f || schedule_write_json(&run->schedule, &run->step, EXECUTOR_NAME, f) != 0 || fclose(f) != 0)
        die("%s: cannot write the task graph: %s", o->graph_path, strerror(errno));
}

// The training loop; with --verify, first a probe step checked against the debug state.
static void run_training(const Options *o, Run *run) {
    int total_steps = o->steps + (o->verify_path ? 1 : 0);
    run->losses = calloc((size_t)total_steps + 1, sizeof(float));
    run->reports = calloc((size_t)total_steps + 1, sizeof(StepReport));
    size_t trace_capacity = o->trace_path ? (size_t)run->info.chunks_per_step * (size_t)(total_steps + 1) : 0;
    if (!run->losses || !run->reports || trace_init(&run->trace, trace_capacity) != 0)
        die("out of memory for per-step records");
#if defined(USE_LIKWID) || defined(USE_PAPI)
    // kernel regions for hardware counters; failing to set them up is not fatal
    static struct counters counters;
    if (counters_init(&counters, run->info.threads) == 0) {
#ifdef _OPENMP
#pragma omp parallel num_threads(run->info.threads)
#endif
        counters_thread_init(&counters);
    }
    run->trace.counters = &counters;
#endif
    if (o->verify_path) {
        // A probe step with a zero learning rate leaves the parameters as they
        // were and the step-0 logits, loss and gradients in place; the moments
        // it touched are reset so that training starts from step 1.
        run->step.adamw.lr = 0.0f;
        run->step.adamw.weight_decay = 0.0f;
        StepReport probe;
        executor_train(run->ex, 0, 1, run->losses, &probe, NULL);
        dist_settle(run->ex);
        // the whole batch's logits and the whole averaged gradient, as one process has them
        GPT2 whole = run->model;
        whole.acts.logits = dist_gather_sequences(run->model.acts.logits,
                                                  (size_t)o->T * run->config.padded_vocab_size, o->B);
        if (!whole.acts.logits) die("out of memory gathering the logits");
        dist_gather_gradients(run->ex);
        run->failures += verify_debug_state(&whole, &run->state, run->losses[0], o->tolerance, o->json);
        free(whole.acts.logits);
        dist_reset_moments(run->ex, &run->model); // only this rank's: the others' are never touched
        run->step.adamw = run->adamw;
    }
    if (o->trace_path) dist_sync_trace_origin(&run->trace);
    train(run->ex, o, 0, o->steps, run->losses, run->reports, &run->trace);
    dist_settle(run->ex);
#if defined(USE_LIKWID) || defined(USE_PAPI)
    counters_finish(&counters, stderr);
#endif
}

// --expect-losses: the losses of the steps run against the expected ones.
static void verify(const Options *o, Run *run) {
    if (!o->expect_losses_path) return;
    Error err = {{0}};
    int failed = verify_losses(o->expect_losses_path, run->losses, o->steps, o->tolerance, o->json, &err);
    if (failed < 0) die("%s", err.message);
    run->failures += failed;
}

// --trace and --save.
static void save(const Options *o, Run *run) {
    Error err = {{0}};
    // one trace of every rank, written by rank 0; one checkpoint (the ranks' parameters are equal)
    if (o->trace_path) dist_gather_trace(&run->trace, run->info.threads);
    if (silent) return;
    if (o->trace_path) {
        FILE *f = fopen(o->trace_path, "w");
        if (!f || trace_write_csv(&run->trace, &run->step, f) != 0 || fclose(f) != 0)
            die("%s: cannot write trace: %s", o->trace_path, strerror(errno));
    }
    if (o->save_path && checkpoint_write(o->save_path, &run->model, &err) != 0) die("%s", err.message);
}

// Frees what the run holds; the exit status: 1 when a verification failed, else 0.
static int report(const Options *o, Run *run) {
    trace_free(&run->trace);
    if (run->has_schedule) schedule_free(&run->schedule);
    free(run->losses);
    free(run->reports);
    if (run->ex) executor_destroy(run->ex);
    step_free(&run->step);
    batches_free(&run->batches);
    debug_state_free(&run->state);
    gpt2_free(&run->model);
    if (run->failures && !silent)
        fprintf(stderr, "%s: verification failed: %d comparison(s) beyond tolerance %g\n", program, run->failures,
                o->tolerance);
    return run->failures ? 1 : 0;
}

// Before any work: a checkpoint, trace or task graph that could not be written (a missing
// directory, a FIFO that would block), or a file of expected losses that is not a regular file,
// is found now, not after every step has run.
static void check_outputs(const Options *o) {
    Error err = {{0}};
    if (o->save_path && checkpoint_check_destination(o->save_path, &err) != 0) die("%s", err.message);
    if (o->trace_path && fileio_check_destination(o->trace_path, "trace", &err) != 0) die("%s", err.message);
    if (o->graph_path && fileio_check_destination(o->graph_path, "task graph", &err) != 0) die("%s", err.message);
    if (o->expect_losses_path && fileio_check_regular(o->expect_losses_path, "file of expected losses", &err) != 0)
        die("%s", err.message);
}

int main(int argc, char **argv) {
    snprintf(program, sizeof(program), "gpt2-%s", EXECUTOR_NAME);
    dist_init(&argc, &argv);
    silent = dist_rank() != 0;
    if (!(out = dist_output())) die("/dev/null: cannot open");
    Options o = parse_options(argc, argv);
    if (o.list_configs) {
        list_configs();
        leave(0);
    }
    if (o.list_knobs) {
        options_list_knobs(out);
        if (fflush(out) != 0) die("stdout: cannot write the knobs");
        leave(0);
    }
    check_outputs(&o);
    static Run run; // zeroed: what a step has not built yet frees as nothing
    load_model(&o, &run);
    load_data(&o, &run);
    agree(&o, &run);
    if (o.check) {
        // every refusal a run would make, its executor's included, on the model's shapes: the
        // parameters are allocated, not initialised (untouched pages cost nothing)
        char alloc_err[256];
        if (gpt2_allocate(&run.model, run.b1 - run.b0, o.T, alloc_err, sizeof(alloc_err)) != 0) die("%s", alloc_err);
        make_executor(&o, &run, 1);
        leave(report(&o, &run));
    }
    if (o.data_order) {
        print_data_order(&o, &run);
        leave(report(&o, &run));
    }
    load_parameters(&o, &run);
    describe_step(&o, &run);
    if (o.graph_path) {
        write_schedule(&o, &run);
        leave(report(&o, &run));
    }
    if (o.describe) {
        print_step_description(&run);
        leave(report(&o, &run));
    }
    run_training(&o, &run);
    verify(&o, &run);
    save(&o, &run);
    leave(report(&o, &run));
}
