// The command line shared by every variant (options.h). Kept apart from
// main.c, and free of exit() and printing, so that the fuzz target
// (tests/fuzz/fuzz_options.c) runs exactly the parsing the binaries run.
#define _GNU_SOURCE
#include "options.h"
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// The refusal: one line in err, always returned as OPTIONS_ERROR.
static int refuse(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *err, size_t err_len, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(err, err_len, fmt, args);
    va_end(args);
    return OPTIONS_ERROR;
}

// A value from the command line as it may appear in a one-line message: at
// most 64 bytes, a control character or a non-ASCII byte written as '?'.
static const char *shown(const char *text, char *buf, size_t buf_len) {
    size_t n = 0;
    for (; text[n] && n + 4 < buf_len && n < 64; n++) {
        unsigned char c = (unsigned char)text[n];
        buf[n] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
    }
    if (text[n]) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

// strtoll and strtof skip leading white space but stop at trailing white
// space; a number is refused with either, so that " 3" and "3 " read alike.
static int starts_like_a_number(const char *text) {
    return text[0] != '\0' && text[0] != ' ' && !(text[0] >= '\t' && text[0] <= '\r');
}

static int parse_int(const char *option, const char *text, long long lo, long long hi, long long *out, char *err,
                     size_t err_len) {
    char *end, buf[80];
    errno = 0;
    long long v = starts_like_a_number(text) ? strtoll(text, &end, 10) : 0;
    if (!starts_like_a_number(text) || errno || end == text || *end)
        return refuse(err, err_len, "%s: '%s' is not an integer", option, shown(text, buf, sizeof(buf)));
    if (v < lo || v > hi) return refuse(err, err_len, "%s: %lld is out of range [%lld, %lld]", option, v, lo, hi);
    *out = v;
    return 0;
}

static int parse_float(const char *option, const char *text, float *out, char *err, size_t err_len) {
    char *end, buf[80];
    errno = 0;
    float v = starts_like_a_number(text) ? strtof(text, &end) : 0.0f;
    if (!starts_like_a_number(text) || errno || end == text || *end || !isfinite(v))
        return refuse(err, err_len, "%s: '%s' is not a finite number", option, shown(text, buf, sizeof(buf)));
    *out = v;
    return 0;
}

// getopt_long's codes of the options without a one-letter form; the chunking
// knobs' are OPT_KNOB + their index in chunk_knobs()
enum {
    OPT_CONFIG = 256, OPT_LIST_CONFIGS, OPT_LIST_KNOBS, OPT_MODEL, OPT_DATA, OPT_SHUFFLE, OPT_DATA_ORDER, OPT_STEPS,
    OPT_LR, OPT_WD, OPT_SEED, OPT_THREADS, OPT_JSON, OPT_TRACE, OPT_DESCRIBE, OPT_DESCRIBE_GRAPH, OPT_VERIFY,
    OPT_EXPECT_LOSSES, OPT_TOLERANCE, OPT_SAVE, OPT_CHECK, OPT_EXECUTOR, OPT_UPDATE, OPT_COLLECTIVE, OPT_OVERLAP,
    OPT_COMM_THREADS, OPT_KNOB, OPT_END = OPT_KNOB + N_CHUNK_KNOBS
};

// The options besides the knobs. The distributed variants' come last: the others' table ends before them.
static const struct option LONG_OPTIONS[] = {
    {"help", no_argument, NULL, 'h'},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"list-configs", no_argument, NULL, OPT_LIST_CONFIGS},
    {"list-knobs", no_argument, NULL, OPT_LIST_KNOBS},
    {"model", required_argument, NULL, OPT_MODEL},
    {"data", required_argument, NULL, OPT_DATA},
    {"shuffle", no_argument, NULL, OPT_SHUFFLE},
    {"data-order", no_argument, NULL, OPT_DATA_ORDER},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"lr", required_argument, NULL, OPT_LR},
    {"wd", required_argument, NULL, OPT_WD},
    {"seed", required_argument, NULL, OPT_SEED},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"json", no_argument, NULL, OPT_JSON},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"describe", no_argument, NULL, OPT_DESCRIBE},
    {"describe-graph", required_argument, NULL, OPT_DESCRIBE_GRAPH},
    {"verify", required_argument, NULL, OPT_VERIFY},
    {"expect-losses", required_argument, NULL, OPT_EXPECT_LOSSES},
    {"tolerance", required_argument, NULL, OPT_TOLERANCE},
    {"save", required_argument, NULL, OPT_SAVE},
    {"check", no_argument, NULL, OPT_CHECK},
    {"executor", required_argument, NULL, OPT_EXECUTOR},
    {"update", required_argument, NULL, OPT_UPDATE},
    {"collective", required_argument, NULL, OPT_COLLECTIVE},
    {"overlap", required_argument, NULL, OPT_OVERLAP},
    {"comm-threads", required_argument, NULL, OPT_COMM_THREADS},
    {NULL, 0, NULL, 0},
};
#define N_LONG_OPTIONS ((int)(sizeof(LONG_OPTIONS) / sizeof(LONG_OPTIONS[0])) - 1)
#define N_DISTRIBUTED_OPTIONS 5
#define SHORT_OPTIONS ":hB:T:" // leading ':': a missing value is told apart from an unknown option
#define KNOB_OPTION_LEN 32

// A knob's option without its dashes: its name with '-' for '_' ("batch-subsize").
static const char *knob_option(const ChunkKnob *k, char *option) {
    size_t n = 0;
    for (; k->name[n] && n + 1 < KNOB_OPTION_LEN; n++) option[n] = k->name[n] == '_' ? '-' : k->name[n];
    option[n] = '\0';
    return option;
}

// getopt_long's table for a front: LONG_OPTIONS, the knobs' options before the distributed ones,
// which only `distributed` has. `names` holds the knobs' option names.
static void long_options(int distributed, struct option *options, char names[][KNOB_OPTION_LEN]) {
    int n = N_LONG_OPTIONS - N_DISTRIBUTED_OPTIONS;
    memcpy(options, LONG_OPTIONS, (size_t)n * sizeof(struct option));
    for (int k = 0; k < N_CHUNK_KNOBS; k++)
        options[n++] = (struct option){knob_option(&chunk_knobs()[k], names[k]), required_argument, NULL, OPT_KNOB + k};
    if (distributed)
        for (int d = N_LONG_OPTIONS - N_DISTRIBUTED_OPTIONS; d < N_LONG_OPTIONS; d++) options[n++] = LONG_OPTIONS[d];
    options[n] = (struct option){NULL, 0, NULL, 0};
}

// The option of getopt_long code `code` as written on the command line ("-B", "--steps").
static const char *option_name(int code, char *name, size_t len) {
    char option[KNOB_OPTION_LEN];
    snprintf(name, len, "-%c", code < 256 && code > ' ' && code < 0x7f ? code : '?');
    if (code >= OPT_KNOB && code < OPT_END)
        snprintf(name, len, "--%s", knob_option(&chunk_knobs()[code - OPT_KNOB], option));
    if (code >= 256)
        for (const struct option *o = LONG_OPTIONS; o->name; o++)
            if (o->val == code) snprintf(name, len, "--%s", o->name);
    return name;
}

static void options_defaults(Options *o) {
    *o = (Options){0};
    o->B = 4;
    o->T = 64;
    o->steps = 10;
    o->lr = 1e-4f;
    o->weight_decay = 0.0f;
    o->tolerance = 1e-4f;
    o->seed = 1337;
    o->exec.sharded_update = 1;
    o->exec.comm_threads = 1;
}

// Which of two words `v` is: 0 for word0, 1 for word1, or -1 with the refusal in err.
static int choice(const char *name, const char *v, const char *word0, const char *word1, char *err, size_t err_len) {
    char buf[80];
    if (strcmp(v, word0) == 0) return 0;
    if (strcmp(v, word1) == 0) return 1;
    return refuse(err, err_len, "%s: '%s' is neither %s nor %s", name, shown(v, buf, sizeof(buf)), word0, word1);
}

// Sets what option `code` (named `name` in messages) with value `v` says: OPTIONS_RUN, OPTIONS_HELP,
// or OPTIONS_ERROR with the refusal in err.
static int take_option(int code, const char *name, const char *v, Options *o, char *err, size_t err_len) {
    long long i = 0;
    int on = 0;
    if (code >= OPT_KNOB && code < OPT_END) {
        const ChunkKnob *knob = &chunk_knobs()[code - OPT_KNOB];
        if (parse_int(name, v, 1, knob->max, &i, err, err_len)) return OPTIONS_ERROR;
        *chunk_knob_field(&o->exec.chunking, knob) = (int)i;
        return OPTIONS_RUN;
    }
    switch (code) {
    case 'h': return OPTIONS_HELP;
    case OPT_CONFIG: o->config_name = v; break;
    case OPT_LIST_CONFIGS: o->list_configs = 1; break;
    case OPT_LIST_KNOBS: o->list_knobs = 1; break;
    case OPT_MODEL: o->model_path = v; break;
    case OPT_DATA: o->data_path = v; break;
    case OPT_SHUFFLE: o->shuffle = 1; break;
    case OPT_DATA_ORDER: o->data_order = 1; break;
    case OPT_JSON: o->json = 1; break;
    case OPT_TRACE: o->trace_path = v; break;
    case OPT_DESCRIBE: o->describe = 1; break;
    case OPT_DESCRIBE_GRAPH: o->graph_path = v; break;
    case OPT_VERIFY: o->verify_path = v; break;
    case OPT_EXPECT_LOSSES: o->expect_losses_path = v; break;
    case OPT_SAVE: o->save_path = v; break;
    case OPT_CHECK: o->check = 1; break;
    case OPT_EXECUTOR: o->exec.executor = v; break;
    case 'B':
        if (parse_int(name, v, 1, OPTION_MAX_B, &i, err, err_len)) return OPTIONS_ERROR;
        o->B = (int)i;
        o->B_given = 1;
        break;
    case 'T':
        if (parse_int(name, v, 1, OPTION_MAX_T, &i, err, err_len)) return OPTIONS_ERROR;
        o->T = (int)i;
        o->T_given = 1;
        break;
    case OPT_STEPS:
        if (parse_int(name, v, 0, OPTION_MAX_STEPS, &i, err, err_len)) return OPTIONS_ERROR;
        o->steps = (int)i;
        break;
    case OPT_SEED: return parse_int(name, v, 0, OPTION_MAX_SEED, &o->seed, err, err_len);
    case OPT_THREADS:
        if (parse_int(name, v, 1, OPTION_MAX_THREADS, &i, err, err_len)) return OPTIONS_ERROR;
        o->exec.threads = (int)i;
        break;
    case OPT_LR: return parse_float(name, v, &o->lr, err, err_len);
    case OPT_WD: return parse_float(name, v, &o->weight_decay, err, err_len);
    case OPT_TOLERANCE: return parse_float(name, v, &o->tolerance, err, err_len);
    case OPT_UPDATE:
        if ((on = choice(name, v, "replicated", "sharded", err, err_len)) < 0) return OPTIONS_ERROR;
        o->exec.sharded_update = on;
        break;
    case OPT_COLLECTIVE:
        if ((on = choice(name, v, "ring", "direct", err, err_len)) < 0) return OPTIONS_ERROR;
        o->exec.direct_collective = on;
        break;
    case OPT_OVERLAP:
        if ((on = choice(name, v, "on", "off", err, err_len)) < 0) return OPTIONS_ERROR;
        o->exec.overlap = !on;
        break;
    case OPT_COMM_THREADS:
        if (parse_int(name, v, 1, OPTION_MAX_COMM_THREADS, &i, err, err_len)) return OPTIONS_ERROR;
        o->exec.comm_threads = (int)i;
        break;
    }
    return OPTIONS_RUN;
}

// What getopt_long could not take: a missing value (':'), an unknown option, or a value given to
// one that takes none ('?'; optopt names it).
static int refuse_unparsed(int code, char **argv, char *err, size_t err_len) {
    char name[64], buf[80];
    if (code == ':') return refuse(err, err_len, "%s: missing value", option_name(optopt, name, sizeof(name)));
    if (optopt >= 256) return refuse(err, err_len, "%s: takes no value", option_name(optopt, name, sizeof(name)));
    if (optopt > 0)
        return refuse(err, err_len, "unknown option '%s' (see --help)", option_name(optopt, name, sizeof(name)));
    return refuse(err, err_len, "unknown option '%s' (see --help)", shown(argv[optind - 1], buf, sizeof(buf)));
}

// The options that need or exclude others, once all are read.
static int check_combinations(Options *o, char *err, size_t err_len) {
    if (o->model_path && o->config_name) return refuse(err, err_len, "--model and --config exclude each other");
    if (!o->model_path && !o->config_name) o->config_name = "d12";
    if (o->graph_path) o->describe = 1;
    if (o->verify_path && o->data_path)
        return refuse(err, err_len, "--verify trains on the debug state's batch; --data does not apply");
    if (o->expect_losses_path && !o->verify_path) return refuse(err, err_len, "--expect-losses needs --verify");
    if (o->verify_path && (o->B_given || o->T_given))
        return refuse(err, err_len, "--verify takes B and T from the debug state; drop -B/-T");
    if (o->shuffle && !o->data_path)
        return refuse(err, err_len, "--shuffle needs --data (it orders a token file's batches)");
    if (o->data_order && !o->data_path) return refuse(err, err_len, "--data-order needs --data");
    return OPTIONS_RUN;
}

int options_parse(int argc, char **argv, int distributed, Options *o, char *err, size_t err_len) {
    options_defaults(o);
    struct option options[N_LONG_OPTIONS + N_CHUNK_KNOBS + 1];
    char knob_names[N_CHUNK_KNOBS][KNOB_OPTION_LEN];
    long_options(distributed, options, knob_names);
    unsigned char given[OPT_END] = {0}; // a repeated option is refused, not silently overridden
    opterr = 0; // every message is ours: one line
    optind = 0; // glibc: a full restart, whatever an earlier call left behind
    int code;
    while ((code = getopt_long(argc, argv, SHORT_OPTIONS, options, NULL)) != -1) {
        char name[64];
        option_name(code, name, sizeof(name));
        if (code == ':' || code == '?') return refuse_unparsed(code, argv, err, err_len);
        if (code > 0 && code < OPT_END) {
            if (given[code]) return refuse(err, err_len, "%s: given more than once", name);
            given[code] = 1;
        }
        int taken = take_option(code, name, optarg, o, err, err_len);
        if (taken != OPTIONS_RUN) return taken;
    }
    char buf[80];
    if (optind < argc)
        return refuse(err, err_len, "unexpected argument '%s' (see --help)", shown(argv[optind], buf, sizeof(buf)));
    return check_combinations(o, err, err_len);
}

// A knob beyond what its bound allows on the model's shapes: OPTIONS_ERROR with the refusal in err.
static int refuse_beyond_bound(const ChunkKnob *knob, const Options *o, const GPT2Config *config, char *err,
                               size_t err_len) {
    char option[KNOB_OPTION_LEN];
    const char *name = knob_option(knob, option);
    int v = chunk_knob_value(&o->exec.chunking, knob);
    int widest = 4 * config->channels; // the MLP's products
    switch (knob->bound) {
    case KNOB_UNBOUNDED: break;
    case KNOB_AT_MOST_B:
        if (v > o->B) return refuse(err, err_len, "--%s: %d is larger than the batch of %d sequences", name, v, o->B);
        break;
    case KNOB_AT_MOST_T:
        if (v > o->T)
            return refuse(err, err_len, "--%s: %d is larger than the sequence length of %d tokens", name, v, o->T);
        break;
    case KNOB_AT_MOST_COLUMNS: // a tile wider than the widest product it cuts would cut nothing
        if (v > widest)
            return refuse(err, err_len, "--%s: %d is wider than the widest product's %d output columns", name, v,
                          widest);
        break;
    case KNOB_AT_MOST_INPUTS:
        if (v > widest)
            return refuse(err, err_len, "--%s: %d is wider than the widest weight gradient's %d input channels",
                          name, v, widest);
        break;
    case KNOB_AT_MOST_TILES:
        // tiles are whole vectors: more than the widest product has would cut nothing more; the narrower
        // ones stop at theirs (C/16 tiles of the C-wide products), as fork-join's shares do past C/16 threads
        if (v > widest / 16)
            return refuse(err, err_len, "--%s: %d tiles is more than the widest product's %d columns hold (at "
                          "most %d)", name, v, widest, widest / 16);
        break;
    }
    return 0;
}

int options_check_model(const Options *o, const GPT2Config *config, int ranks, char *err, size_t err_len) {
    if (o->T > config->max_seq_len)
        return refuse(err, err_len, "-T: %d exceeds the model's max_seq_len %d", o->T, config->max_seq_len);
    if (ranks > o->B) {
        char buf[80];
        return refuse(err, err_len, "%s: a batch of %d sequences cannot be split over %d ranks (at most one rank "
                      "per sequence)", o->verify_path ? shown(o->verify_path, buf, sizeof(buf)) : "-B", o->B, ranks);
    }
    // the executors would cut a chunk to the batch, the sequence or a product; refused instead, so
    // that the chunk sizes a run reports are the ones it was given (the harness refuses them too)
    if (o->exec.chunking.tiles_per_product > 0 && o->exec.chunking.tile_columns > 0)
        return refuse(err, err_len, "--tiles-per-product: give it or --tile-columns, not both (each sets the "
                      "products' tile widths)");
    for (int k = 0; k < N_CHUNK_KNOBS; k++)
        if (refuse_beyond_bound(&chunk_knobs()[k], o, config, err, err_len)) return OPTIONS_ERROR;
    // the largest share of the batch a rank trains on (ranks > 0: checked above)
    int share = ranks > 1 ? (o->B + ranks - 1) / ranks : o->B;
    char why[256];
    if (gpt2_state_bytes(config, share, o->T, NULL, why, sizeof(why)) != 0)
        return refuse(err, err_len, "-B/-T: %s", why);
    return 0;
}

// A knob's lines of --help: the option and its value, then its help, each further line indented.
static void usage_knob(FILE *out, const ChunkKnob *knob) {
    char option[KNOB_OPTION_LEN], usage[KNOB_OPTION_LEN + 16];
    snprintf(usage, sizeof(usage), "--%s %s", knob_option(knob, option), knob->value_name);
    fprintf(out, "  %-20s ", usage);
    for (const char *c = knob->help; *c; c++)
        if (*c == '\n') fprintf(out, "\n%23s", "");
        else fputc(*c, out);
    fputc('\n', out);
}

void options_list_knobs(FILE *out) {
    for (int k = 0; k < N_CHUNK_KNOBS; k++) fprintf(out, "%s 1 %d\n", chunk_knobs()[k].name, chunk_knobs()[k].max);
}

void options_usage(FILE *out, const char *program, int distributed) {
    fprintf(out,
            "usage: %s [options]\n"
            "  --config NAME        embedded model configuration (%s; default d12)\n"
            "  --list-configs       print the embedded configurations' names, one per line\n"
            "  --list-knobs         print the chunking knobs, one per line: name, least and largest value\n"
            "  --model FILE         llm.c checkpoint (magic 20240326 v3) instead of --config\n"
            "  --data FILE          llm.c token file (magic 20240520 v1); default: synthetic stream\n"
            "  --shuffle            with --data: llm.c's shuffled batch order (seed 42, reshuffled each pass)\n"
            "  --data-order         with --data: print where each step's batch starts (token offset,\n"
            "                       one per line) instead of training\n"
            "  -B N, -T N           batch size and sequence length (default 4 and 64)\n"
            "  --steps N            training steps (default 10)\n"
            "  --lr X, --wd X       AdamW learning rate and weight decay (default 1e-4 and 0)\n"
            "  --seed N             seed of random weights and synthetic data (default 1337)\n"
            "  --threads N          threads of parallel variants (default OMP_NUM_THREADS)\n",
            program, gpt2_named_config_list());
    for (int k = 0; k < N_CHUNK_KNOBS; k++) usage_knob(out, &chunk_knobs()[k]);
    fprintf(out,
            "  --json               one JSON object per line on stdout\n"
            "  --trace FILE         write per-kernel timing records (CSV)\n"
            "  --describe-graph FILE write the chunk tasks of one step, their order and dependencies,\n"
            "                       FLOPs and bytes as JSON (docs/variants.md) instead of training\n"
            "  --describe           print each operation of the step with its FLOPs and compulsory\n"
            "                       bytes (one JSON object per line) instead of training\n"
            "  --verify FILE        check logits, loss and gradients against an llm.c debug state,\n"
            "                       then train --steps steps on its batch\n"
            "  --expect-losses FILE with --verify: expected per-step losses (whitespace separated)\n"
            "  --tolerance X        with --verify: largest accepted absolute difference (default 1e-4)\n"
            "  --save FILE          write a checkpoint after training\n"
            "  --check              check the options, model, data, outputs and memory, then exit 0\n"
            "                       without training (exit 2 with the one-line error otherwise)\n"
            "  Each option is given at most once. FILE outputs (--save, --trace, --describe-graph) are a\n"
            "  regular file, existing or new, or /dev/null to discard.\n");
    if (distributed)
        fprintf(out,
                "  --executor NAME      node-level executor inside each rank: forkjoin, tasks, taskiter,\n"
                "                       nosv, starpu (those this build has; default forkjoin)\n"
                "  --update MODE        replicated (all-reduce, full AdamW on every rank) or sharded\n"
                "                       (ZeRO-1: AdamW on this rank's shard, then all-gather; default)\n"
                "  --collective ALG     ring (reduce-scatter and all-gather around the ranks: each rank\n"
                "                       sends (R-1)/R of the gradients; default) or direct (every shard\n"
                "                       sent straight to its owner, summed there in rank order)\n"
                "  --overlap on|off     on: reduce the gradients layer by layer, from the last, while the\n"
                "                       backward pass goes on (a communication thread); off: after it\n"
                "                       (default off)\n"
                "  --comm-threads K     communication channels (1 to 64, default 1): each collective cut\n"
                "                       into K parts, each run by a thread of its own, odd ones round the\n"
                "                       ring backward; K > 1 needs MPI_THREAD_MULTIPLE\n"
                "  The global batch (-B) is split over the ranks (mpirun -np R): rank r gets\n"
                "  sequences [B*r/R, B*(r+1)/R). Every rank must be given the same options and data.\n");
}
