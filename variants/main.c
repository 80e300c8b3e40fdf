// The command-line front shared by every variant: options, model and data
// loading, the training loop's reporting (--json), per-kernel traces (--trace)
// and checkpoints (--save); verification (--verify, --expect-losses) is in
// verify.c. The variant itself is the executor linked in (seq.c, forkjoin.c,
// tasks.c, taskiter.c: variants/LIST). Built with -DDISTRIBUTED for the
// distributed variants (mpi.c: distributed.h): every rank runs this front on
// its share of each batch, and only rank 0 speaks.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
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
#include "verify.h"
#ifdef DISTRIBUTED
#include "distributed.h"
#endif

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
    const char *graph_path; // --describe-graph: write the step's schedule (core/schedule.h) instead of training
    int B, T, steps;
    float lr, weight_decay, tolerance;
    long long seed;
    int json;
    int describe;     // print the step's operations with FLOPs and bytes instead of training
    int list_configs; // print the embedded configurations' names instead of training
    int shuffle;      // llm.c's shuffled batch order (--data)
    int data_order;   // print each step's batch offset instead of training (--data)
    ExecOptions exec; // with the distributed variants' --executor and --update

} Options;

static char program[64] = "gpt2";
// ranks other than 0 of a distributed run print nothing (their stdout is /dev/null)
static int silent;

// Exits with `status`, ending the process layer first in a distributed run.
static void leave(int status) __attribute__((noreturn));
static void leave(int status) {
#ifdef DISTRIBUTED
    fflush(stdout);
    dist_finalize();
#endif
    exit(status);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    if (!silent) { // every rank finds the same bad input: one line, from rank 0
        fprintf(stderr, "%s: ", program);
        vfprintf(stderr, fmt, args);
        fprintf(stderr, "\n");
    }
    va_end(args);
    leave(EXIT_BAD_INPUT);
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: %s [options]\n"
            "  --config NAME        embedded model configuration (%s; default d12)\n"
            "  --list-configs       print the embedded configurations' names, one per line\n"
            "  --model FILE         llm.c checkpoint (magic 20240326 v3) instead of --config\n"
            "  --data FILE          llm.c token file (magic 20240520 v1); default: synthetic stream\n"
            "  --shuffle            with --data: llm.c's shuffled batch order (seed 42, reshuffled each pass)\n"
            "  --data-order         with --data: print where each step's batch starts (token offset,\n"
            "                       one per line) instead of training\n"
            "  -B N, -T N           batch size and sequence length (default 4 and 64)\n"
            "  --steps N            training steps (default 10)\n"
            "  --lr X, --wd X       AdamW learning rate and weight decay (default 1e-4 and 0)\n"
            "  --seed N             seed of random weights and synthetic data (default 1337)\n"
            "  --threads N          threads of parallel variants (default OMP_NUM_THREADS)\n"
            "  --batch-subsize N    sequences per chunk (tasks, taskiter)\n"
            "  --token-chunk K      tokens per chunk (tasks, taskiter)\n"
            "  --channel-chunk N    channels per chunk of channel-split operations (tasks, taskiter)\n"
            "  --tile-columns N     output columns per tile of the transformer blocks' products and\n"
            "                       input gradients (tasks, taskiter; at most the widest, 4C)\n"
            "  --tile-in-channels N input channels per tile of their weight gradients (tasks, taskiter;\n"
            "                       at most the widest, 4C)\n"
            "  --json               one JSON object per line on stdout\n"
            "  --trace FILE         write per-kernel timing records (CSV)\n"
            "  --describe-graph FILE write the chunk tasks of one step, their order and dependencies,\n"
            "                       FLOPs and bytes as JSON (README: task graph export) instead of training\n"
            "  --describe           print each operation of the step with its FLOPs and compulsory\n"
            "                       bytes (one JSON object per line) instead of training\n"
            "  --verify FILE        check logits, loss and gradients against an llm.c debug state,\n"
            "                       then train --steps steps on its batch\n"
            "  --expect-losses FILE with --verify: expected per-step losses (whitespace separated)\n"
            "  --tolerance X        with --verify: largest accepted absolute difference (default 1e-4)\n"
            "  --save FILE          write a checkpoint after training\n",
            program, gpt2_named_config_list());
#ifdef DISTRIBUTED
    fprintf(out,
            "  --executor NAME      node-level executor inside each rank: forkjoin, tasks, taskiter\n"
            "                       (default forkjoin)\n"
            "  --update MODE        replicated (all-reduce, full AdamW on every rank) or sharded\n"
            "                       (ZeRO-1: AdamW on this rank's shard, then all-gather; default)\n"
            "  The global batch (-B) is split over the ranks (mpirun -np R): rank r gets\n"
            "  sequences [B*r/R, B*(r+1)/R).\n");
#endif
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

// getopt_long's codes of the options without a one-letter form
enum {
    OPT_CONFIG = 256, OPT_LIST_CONFIGS, OPT_MODEL, OPT_DATA, OPT_SHUFFLE, OPT_DATA_ORDER, OPT_STEPS, OPT_LR, OPT_WD,
    OPT_SEED, OPT_THREADS, OPT_BATCH_SUBSIZE, OPT_TOKEN_CHUNK, OPT_CHANNEL_CHUNK, OPT_TILE_COLUMNS,
    OPT_TILE_IN_CHANNELS, OPT_JSON, OPT_TRACE, OPT_DESCRIBE,
    OPT_DESCRIBE_GRAPH, OPT_VERIFY, OPT_EXPECT_LOSSES, OPT_TOLERANCE, OPT_SAVE, OPT_EXECUTOR, OPT_UPDATE,
};

static const struct option LONG_OPTIONS[] = {
    {"help", no_argument, NULL, 'h'},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"list-configs", no_argument, NULL, OPT_LIST_CONFIGS},
    {"model", required_argument, NULL, OPT_MODEL},
    {"data", required_argument, NULL, OPT_DATA},
    {"shuffle", no_argument, NULL, OPT_SHUFFLE},
    {"data-order", no_argument, NULL, OPT_DATA_ORDER},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"lr", required_argument, NULL, OPT_LR},
    {"wd", required_argument, NULL, OPT_WD},
    {"seed", required_argument, NULL, OPT_SEED},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"batch-subsize", required_argument, NULL, OPT_BATCH_SUBSIZE},
    {"token-chunk", required_argument, NULL, OPT_TOKEN_CHUNK},
    {"channel-chunk", required_argument, NULL, OPT_CHANNEL_CHUNK},
    {"tile-columns", required_argument, NULL, OPT_TILE_COLUMNS},
    {"tile-in-channels", required_argument, NULL, OPT_TILE_IN_CHANNELS},
    {"json", no_argument, NULL, OPT_JSON},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"describe", no_argument, NULL, OPT_DESCRIBE},
    {"describe-graph", required_argument, NULL, OPT_DESCRIBE_GRAPH},
    {"verify", required_argument, NULL, OPT_VERIFY},
    {"expect-losses", required_argument, NULL, OPT_EXPECT_LOSSES},
    {"tolerance", required_argument, NULL, OPT_TOLERANCE},
    {"save", required_argument, NULL, OPT_SAVE},
#ifdef DISTRIBUTED
    {"executor", required_argument, NULL, OPT_EXECUTOR},
    {"update", required_argument, NULL, OPT_UPDATE},
#endif
    {NULL, 0, NULL, 0},
};
#define SHORT_OPTIONS ":hB:T:" // leading ':': a missing value is told apart from an unknown option

// The option of getopt_long code `code` as written on the command line ("-B", "--steps").
static const char *option_name(int code) {
    static char name[64];
    if (code < 256) {
        snprintf(name, sizeof(name), "-%c", code);
        return name;
    }
    for (const struct option *o = LONG_OPTIONS; o->name; o++)
        if (o->val == code) snprintf(name, sizeof(name), "--%s", o->name);
    return name;
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
    o.exec.sharded_update = 1;
    int B_given = 0, T_given = 0;
    opterr = 0; // every message is ours: one line, then exit 2
    int code;
    while ((code = getopt_long(argc, argv, SHORT_OPTIONS, LONG_OPTIONS, NULL)) != -1) {
        const char *name = option_name(code), *v = optarg;
        switch (code) {
        case 'h':
            if (!silent) usage(stdout);
            leave(0);
        case OPT_CONFIG: o.config_name = v; break;
        case OPT_LIST_CONFIGS: o.list_configs = 1; break;
        case OPT_MODEL: o.model_path = v; break;
        case OPT_DATA: o.data_path = v; break;
        case OPT_SHUFFLE: o.shuffle = 1; break;
        case OPT_DATA_ORDER: o.data_order = 1; break;
        case 'B': o.B = (int)parse_int(name, v, 1, 1 << 20); B_given = 1; break;
        case 'T': o.T = (int)parse_int(name, v, 1, 1 << 20); T_given = 1; break;
        case OPT_STEPS: o.steps = (int)parse_int(name, v, 0, 1 << 24); break;
        case OPT_LR: o.lr = parse_float(name, v); break;
        case OPT_WD: o.weight_decay = parse_float(name, v); break;
        case OPT_SEED: o.seed = parse_int(name, v, 0, (1ll << 62)); break;
        case OPT_THREADS: o.exec.threads = (int)parse_int(name, v, 1, 4096); break;
        case OPT_BATCH_SUBSIZE: o.exec.batch_subsize = (int)parse_int(name, v, 1, 1 << 20); break;
        case OPT_TOKEN_CHUNK: o.exec.token_chunk = (int)parse_int(name, v, 1, 1 << 20); break;
        case OPT_CHANNEL_CHUNK: o.exec.channel_chunk = (int)parse_int(name, v, 1, 1 << 24); break;
        case OPT_TILE_COLUMNS: o.exec.tile_columns = (int)parse_int(name, v, 1, 1 << 24); break;
        case OPT_TILE_IN_CHANNELS: o.exec.tile_in_channels = (int)parse_int(name, v, 1, 1 << 24); break;
        case OPT_JSON: o.json = 1; break;
        case OPT_TRACE: o.trace_path = v; break;
        case OPT_DESCRIBE: o.describe = 1; break;
        case OPT_DESCRIBE_GRAPH: o.graph_path = v; o.describe = 1; break;
        case OPT_VERIFY: o.verify_path = v; break;
        case OPT_EXPECT_LOSSES: o.expect_losses_path = v; break;
        case OPT_TOLERANCE: o.tolerance = parse_float(name, v); break;
        case OPT_SAVE: o.save_path = v; break;
        case OPT_EXECUTOR: o.exec.executor = v; break;
        case OPT_UPDATE:
            if (strcmp(v, "replicated") != 0 && strcmp(v, "sharded") != 0)
                die("%s: '%s' is neither replicated nor sharded", name, v);
            o.exec.sharded_update = strcmp(v, "sharded") == 0;
            break;
        case ':': die("%s: missing value", option_name(optopt));
        default: // '?': an unknown option, or a value given to one that takes none (optopt names it)
            if (optopt >= 256) die("%s: takes no value", option_name(optopt));
            if (optopt > 0) die("unknown option '-%c' (see --help)", optopt);
            die("unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) die("unexpected argument '%s' (see --help)", argv[optind]);
    if (o.model_path && o.config_name) die("--model and --config exclude each other");
    if (!o.model_path && !o.config_name) o.config_name = "d12";
    if (o.verify_path && o.data_path) die("--verify trains on the debug state's batch; --data does not apply");
    if (o.expect_losses_path && !o.verify_path) die("--expect-losses needs --verify");
    if (o.verify_path && (B_given || T_given)) die("--verify takes B and T from the debug state; drop -B/-T");
    if (o.shuffle && !o.data_path) die("--shuffle needs --data (it orders a token file's batches)");
    if (o.data_order && !o.data_path) die("--data-order needs --data");
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

static void print_step(const Options *o, int step, const StepReport *r) {
#ifdef DISTRIBUTED
    if (o->json)
        printf("{\"step\": %d, \"loss\": %.9g, \"forward_s\": %.9f, \"backward_s\": %.9f, \"update_s\": %.9f, "
               "\"comm_s\": %.9f, \"step_s\": %.9f}\n",
               step, r->loss, r->phase_s[PHASE_FORWARD], r->phase_s[PHASE_BACKWARD], r->phase_s[PHASE_UPDATE],
               r->comm_s, r->step_s);
#else
    if (o->json)
        printf("{\"step\": %d, \"loss\": %.9g, \"forward_s\": %.9f, \"backward_s\": %.9f, \"update_s\": %.9f, "
               "\"step_s\": %.9f}\n",
               step, r->loss, r->phase_s[PHASE_FORWARD], r->phase_s[PHASE_BACKWARD], r->phase_s[PHASE_UPDATE],
               r->step_s);
#endif
    else if (!silent)
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
} Run;

static void list_configs(void) {
    for (size_t i = 0; gpt2_named_config_name(i); i++) printf("%s\n", gpt2_named_config_name(i));
    if (fflush(stdout) != 0) die("stdout: cannot write the configurations");
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
    if (o->T > run->config.max_seq_len) die("-T: %d exceeds the model's max_seq_len %d", o->T, run->config.max_seq_len);
    run->b0 = 0;
    run->b1 = o->B;
#ifdef DISTRIBUTED
    // the global batch split over the ranks, each rank at least one sequence
    int ranks = dist_ranks();
    if (ranks > o->B)
        die("%s: a batch of %d sequences cannot be split over %d ranks (at most one rank per sequence)",
            o->verify_path ? o->verify_path : "-B", o->B, ranks);
    dist_set_global_batch(o->B);
    dist_share(o->B, dist_rank(), ranks, &run->b0, &run->b1);
#endif
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

// --data-order: the token offset of each step's batch, one per line.
static void print_data_order(const Options *o, Run *run) {
    size_t n = (size_t)o->B * o->T;
    int *inputs = malloc(n * sizeof(int)), *targets = malloc(n * sizeof(int));
    if (!inputs || !targets) die("out of memory for a batch");
    for (int i = 0; i < o->steps; i++) {
        batch_source_next(&run->batches, inputs, targets);
        printf("%zu\n", run->batches.last_offset);
    }
    free(inputs);
    free(targets);
    if (fflush(stdout) != 0) die("stdout: cannot write the data order");
}

// The parameters' memory, filled from the checkpoint or the seeded initialisation.
static void load_parameters(const Options *o, Run *run) {
    Error err = {{0}};
    char alloc_err[256];
    if (gpt2_allocate(&run->model, run->b1 - run->b0, o->T, alloc_err, sizeof(alloc_err)) != 0) die("%s", alloc_err);
    if (o->model_path) {
        if (checkpoint_read_params(o->model_path, &run->model, &err) != 0) die("%s", err.message);
    } else if (!o->describe) {
        gpt2_init_random(&run->model, (uint64_t)o->seed); // --describe needs shapes only
    }
}

static void print_info(const Options *o, const Run *run) {
    const GPT2Config *c = &run->config;
    const ExecutorInfo *info = &run->info;
    const char *model = o->model_path ? o->model_path : o->config_name;
    if (o->json) {
        printf("{\"info\": {\"variant\": \"%s\", \"compiler\": \"%s\", \"kernels\": \"%s\", \"threads\": %d, "
               "\"omp_runtime\": \"%s\", ",
               EXECUTOR_NAME, COMPILER_NAME, KERNELS_NAME, info->threads, openmp_runtime());
        print_placement_json(stdout, info->threads);
#ifdef DISTRIBUTED
        // where each rank ran: its host, its sequences of the batch, the CPUs of its threads
        char *fragment = NULL, host[256] = "";
        size_t fragment_len = 0;
        FILE *f = open_memstream(&fragment, &fragment_len);
        if (!f) die("out of memory for the info line");
        gethostname(host, sizeof(host) - 1);
        fprintf(f, "{\"rank\": %d, \"host\": \"%s\", \"sequences\": [%d, %d], ", dist_rank(), host, run->b0,
                run->b1);
        print_placement_json(f, info->threads);
        fprintf(f, "}");
        fclose(f);
        printf(", \"ranks\": %d, \"executor\": \"%s\", \"update\": \"%s\", \"comm_bytes_per_step\": %lld, ",
               dist_ranks(), o->exec.executor ? o->exec.executor : "forkjoin",
               o->exec.sharded_update ? "sharded" : "replicated", dist_comm_bytes_per_step(run->ex));
        dist_placement_json(stdout, fragment);
        free(fragment);
#endif
        printf(", \"batch_subsize\": %d, \"token_chunk\": %d, \"channel_chunk\": %d, \"tile_columns\": %d, "
               "\"tile_in_channels\": %d, \"chunking_auto\": [", info->batch_subsize, info->token_chunk,
               info->channel_chunk, info->tile_columns, info->tile_in_channels);
        // the knobs the executor chose for its thread count (taskgraph.h: CHOSEN_*)
        static const struct { int bit; const char *name; } knobs[] = {
            {CHOSEN_BATCH_SUBSIZE, "batch_subsize"}, {CHOSEN_TOKEN_CHUNK, "token_chunk"},
            {CHOSEN_TILE_COLUMNS, "tile_columns"}, {CHOSEN_TILE_IN_CHANNELS, "tile_in_channels"}};
        for (int k = 0, n = 0; k < 4; k++)
            if (info->chunking_chosen & knobs[k].bit) printf("%s\"%s\"", n++ ? ", " : "", knobs[k].name);
        printf("], \"chunked\": %s, "
               "\"tasks_per_step\": %ld, \"edges_per_step\": %ld, \"ops_per_step\": %d, \"config\": \"%s\", "
               "\"B\": %d, \"T\": %d, \"L\": %d, \"NH\": %d, \"C\": %d, \"V\": %d, \"Vp\": %d, "
               "\"num_parameters\": %zu}}\n",
               info->batch_subsize > 0 ? "true" : "false",
               info->chunks_per_step, info->edges_per_step, run->step.n_ops, model, o->B, o->T, c->num_layers,
               c->num_heads, c->channels, c->vocab_size, c->padded_vocab_size, run->model.num_parameters);
        fflush(stdout);
    } else if (!silent) {
        fprintf(stderr, "%s: %s, B=%d T=%d, %zu parameters, %d threads, %ld chunks per step", program, model, o->B,
                o->T, run->model.num_parameters, info->threads, info->chunks_per_step);
        if (info->batch_subsize > 0)
            fprintf(stderr, " (batch subsize %d, token chunk %d, tiles of %d columns, %d input channels%s)",
                    info->batch_subsize, info->token_chunk, info->tile_columns, info->tile_in_channels,
                    info->chunking_chosen ? "; chosen for the thread count where not given" : "");
        fprintf(stderr, "\n");
    }
}

// The step as data, the executor that runs it, and the info line.
static void describe_step(const Options *o, Run *run) {
    Error err = {{0}};
    run->adamw = (AdamWSettings){o->lr, 0.9f, 0.999f, 1e-8f, o->weight_decay};
#ifdef DISTRIBUTED
    int pack_weights = dist_packs_weights(&o->exec); // the node-level executor's declaration
#else
    int pack_weights = EXECUTOR_PACKS_WEIGHTS;
#endif
    if (step_describe(&run->step, &run->model, run->adamw, &run->batches, pack_weights) != 0)
        die("out of memory describing the step");
    run->ex = executor_create(&run->step, &o->exec, &err);
    if (!run->ex) die("%s", err.message);
    executor_info(run->ex, &run->info);
    print_info(o, run);
}

// --describe: each operation with its FLOPs and compulsory bytes.
static void print_step_description(const Run *run) {
    if (traffic_write_json(&run->step, stdout) != 0 || fflush(stdout) != 0)
        die("stdout: cannot write the step description");
}

// --describe-graph FILE: the step's chunk tasks as this variant schedules them.
static void write_schedule(const char *path, Run *run) {
    char err[256];
    Schedule sched;
    if (executor_schedule(run->ex, &sched, err, sizeof(err)) != 0) die("--describe-graph: %s", err);
    FILE *f = fopen(path, "w");
    if (!f || schedule_write_json(&sched, &run->step, EXECUTOR_NAME, f) != 0 || fclose(f) != 0)
        die("%s: cannot write the task graph: %s", path, strerror(errno));
    schedule_free(&sched);
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
#ifdef DISTRIBUTED
        // the whole batch's logits and the whole averaged gradient, as one process has them
        GPT2 whole = run->model;
        whole.acts.logits = dist_gather_sequences(run->model.acts.logits,
                                                  (size_t)o->T * run->config.padded_vocab_size);
        if (!whole.acts.logits) die("out of memory gathering the logits");
        dist_gather_gradients(run->ex);
        run->failures += verify_debug_state(&whole, &run->state, run->losses[0], o->tolerance, o->json);
        free(whole.acts.logits);
#else
        run->failures += verify_debug_state(&run->model, &run->state, run->losses[0], o->tolerance, o->json);
#endif
#ifdef DISTRIBUTED
        dist_reset_moments(run->ex); // only this rank's: the others' are never touched
#else
        memset(run->model.m_memory, 0, run->model.num_parameters * sizeof(float));
        memset(run->model.v_memory, 0, run->model.num_parameters * sizeof(float));
#endif
        run->step.adamw = run->adamw;
    }
#ifdef DISTRIBUTED
    if (o->trace_path) dist_sync_trace_origin(&run->trace);
#endif
    train(run->ex, o, 0, o->steps, run->losses, run->reports, &run->trace);
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
#ifdef DISTRIBUTED
    // one trace of every rank, written by rank 0; one checkpoint (the ranks' parameters are equal)
    if (o->trace_path) dist_gather_trace(&run->trace, run->info.threads);
    if (silent) return;
#endif
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
#ifdef DISTRIBUTED
    dist_init(&argc, &argv);
    silent = dist_rank() != 0;
    if (silent && !freopen("/dev/null", "w", stdout)) die("/dev/null: cannot open");
#endif
    Options o = parse_options(argc, argv);
    if (o.list_configs) {
        list_configs();
        leave(0);
    }
    check_outputs(&o);
    static Run run; // zeroed: what a step has not built yet frees as nothing
    load_model(&o, &run);
    load_data(&o, &run);
    if (o.data_order) {
        print_data_order(&o, &run);
        leave(report(&o, &run));
    }
    load_parameters(&o, &run);
    describe_step(&o, &run);
    if (o.graph_path) {
        write_schedule(o.graph_path, &run);
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
