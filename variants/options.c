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

// getopt_long's codes of the options without a one-letter form
enum {
    OPT_CONFIG = 256, OPT_LIST_CONFIGS, OPT_MODEL, OPT_DATA, OPT_SHUFFLE, OPT_DATA_ORDER, OPT_STEPS, OPT_LR, OPT_WD,
    OPT_SEED, OPT_THREADS, OPT_BATCH_SUBSIZE, OPT_TOKEN_CHUNK, OPT_CHANNEL_CHUNK, OPT_TILE_COLUMNS,
    OPT_TILE_IN_CHANNELS, OPT_TILE_SEQUENCES, OPT_TILES_PER_PRODUCT, OPT_JSON, OPT_TRACE, OPT_DESCRIBE,
    OPT_DESCRIBE_GRAPH, OPT_VERIFY, OPT_EXPECT_LOSSES, OPT_TOLERANCE, OPT_SAVE, OPT_CHECK, OPT_EXECUTOR, OPT_UPDATE,
    OPT_COLLECTIVE, OPT_OVERLAP, OPT_END
};

// The distributed variants' options come last: the others' table ends before them.
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
    {"tile-sequences", required_argument, NULL, OPT_TILE_SEQUENCES},
    {"tiles-per-product", required_argument, NULL, OPT_TILES_PER_PRODUCT},
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
    {NULL, 0, NULL, 0},
};
#define N_LONG_OPTIONS ((int)(sizeof(LONG_OPTIONS) / sizeof(LONG_OPTIONS[0])) - 1)
#define N_DISTRIBUTED_OPTIONS 4
#define SHORT_OPTIONS ":hB:T:" // leading ':': a missing value is told apart from an unknown option

// The option of getopt_long code `code` as written on the command line ("-B", "--steps").
static const char *option_name(int code, char *name, size_t len) {
    snprintf(name, len, "-%c", code < 256 && code > ' ' && code < 0x7f ? code : '?');
    if (code >= 256)
        for (const struct option *o = LONG_OPTIONS; o->name; o++)
            if (o->val == code) snprintf(name, len, "--%s", o->name);
    return name;
}

int options_parse(int argc, char **argv, int distributed, Options *o, char *err, size_t err_len) {
    *o = (Options){0};
    o->B = 4;
    o->T = 64;
    o->steps = 10;
    o->lr = 1e-4f;
    o->weight_decay = 0.0f;
    o->tolerance = 1e-4f;
    o->seed = 1337;
    o->exec.sharded_update = 1;
    struct option options[N_LONG_OPTIONS + 1];
    int n = N_LONG_OPTIONS - (distributed ? 0 : N_DISTRIBUTED_OPTIONS);
    memcpy(options, LONG_OPTIONS, (size_t)n * sizeof(struct option));
    options[n] = (struct option){NULL, 0, NULL, 0};
    unsigned char given[OPT_END] = {0}; // a repeated option is refused, not silently overridden
    opterr = 0; // every message is ours: one line
    optind = 0; // glibc: a full restart, whatever an earlier call left behind
    int code;
    while ((code = getopt_long(argc, argv, SHORT_OPTIONS, options, NULL)) != -1) {
        char name[64], buf[80];
        option_name(code, name, sizeof(name));
        const char *v = optarg;
        long long i = 0;
        if (code > 0 && code < OPT_END && code != ':' && code != '?') {
            if (given[code]) return refuse(err, err_len, "%s: given more than once", name);
            given[code] = 1;
        }
        switch (code) {
        case 'h': return OPTIONS_HELP;
        case OPT_CONFIG: o->config_name = v; break;
        case OPT_LIST_CONFIGS: o->list_configs = 1; break;
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
        case OPT_SEED:
            if (parse_int(name, v, 0, OPTION_MAX_SEED, &o->seed, err, err_len)) return OPTIONS_ERROR;
            break;
        case OPT_THREADS:
            if (parse_int(name, v, 1, OPTION_MAX_THREADS, &i, err, err_len)) return OPTIONS_ERROR;
            o->exec.threads = (int)i;
            break;
        case OPT_BATCH_SUBSIZE:
            if (parse_int(name, v, 1, OPTION_MAX_B, &i, err, err_len)) return OPTIONS_ERROR;
            o->exec.batch_subsize = (int)i;
            break;
        case OPT_TOKEN_CHUNK:
            if (parse_int(name, v, 1, OPTION_MAX_T, &i, err, err_len)) return OPTIONS_ERROR;
            o->exec.token_chunk = (int)i;
            break;
        case OPT_CHANNEL_CHUNK:
            if (parse_int(name, v, 1, OPTION_MAX_CHANNEL_CHUNK, &i, err, err_len)) return OPTIONS_ERROR;
            o->exec.channel_chunk = (int)i;
            break;
        case OPT_TILE_COLUMNS:
            if (parse_int(name, v, 1, OPTION_MAX_CHANNEL_CHUNK, &i, err, err_len)) return OPTIONS_ERROR;
            o->exec.tile_columns = (int)i;
            break;
        case OPT_TILE_IN_CHANNELS:
            if (parse_int(name, v, 1, OPTION_MAX_CHANNEL_CHUNK, &i, err, err_len)) return OPTIONS_ERROR;
            o->exec.tile_in_channels = (int)i;
            break;
        case OPT_TILE_SEQUENCES:
            if (parse_int(name, v, 1, OPTION_MAX_B, &i, err, err_len)) return OPTIONS_ERROR;
            o->exec.tile_sequences = (int)i;
            break;
        case OPT_TILES_PER_PRODUCT:
            if (parse_int(name, v, 1, OPTION_MAX_CHANNEL_CHUNK, &i, err, err_len)) return OPTIONS_ERROR;
            o->exec.tiles_per_product = (int)i;
            break;
        case OPT_LR:
            if (parse_float(name, v, &o->lr, err, err_len)) return OPTIONS_ERROR;
            break;
        case OPT_WD:
            if (parse_float(name, v, &o->weight_decay, err, err_len)) return OPTIONS_ERROR;
            break;
        case OPT_TOLERANCE:
            if (parse_float(name, v, &o->tolerance, err, err_len)) return OPTIONS_ERROR;
            break;
        case OPT_UPDATE:
            if (strcmp(v, "replicated") != 0 && strcmp(v, "sharded") != 0)
                return refuse(err, err_len, "%s: '%s' is neither replicated nor sharded", name,
                              shown(v, buf, sizeof(buf)));
            o->exec.sharded_update = strcmp(v, "sharded") == 0;
            break;
        case OPT_COLLECTIVE:
            if (strcmp(v, "ring") != 0 && strcmp(v, "direct") != 0)
                return refuse(err, err_len, "%s: '%s' is neither ring nor direct", name, shown(v, buf, sizeof(buf)));
            o->exec.direct_collective = strcmp(v, "direct") == 0;
            break;
        case OPT_OVERLAP:
            if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
                return refuse(err, err_len, "%s: '%s' is neither on nor off", name, shown(v, buf, sizeof(buf)));
            o->exec.overlap = strcmp(v, "on") == 0;
            break;
        case ':': return refuse(err, err_len, "%s: missing value", option_name(optopt, name, sizeof(name)));
        default: // '?': an unknown option, or a value given to one that takes none (optopt names it)
            if (optopt >= 256)
                return refuse(err, err_len, "%s: takes no value", option_name(optopt, name, sizeof(name)));
            if (optopt > 0)
                return refuse(err, err_len, "unknown option '%s' (see --help)", option_name(optopt, name, sizeof(name)));
            return refuse(err, err_len, "unknown option '%s' (see --help)",
                          shown(argv[optind - 1], buf, sizeof(buf)));
        }
    }
    char buf[80];
    if (optind < argc)
        return refuse(err, err_len, "unexpected argument '%s' (see --help)", shown(argv[optind], buf, sizeof(buf)));
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

int options_check_model(const Options *o, const GPT2Config *config, int ranks, char *err, size_t err_len) {
    if (o->T > config->max_seq_len)
        return refuse(err, err_len, "-T: %d exceeds the model's max_seq_len %d", o->T, config->max_seq_len);
    if (ranks > o->B) {
        char buf[80];
        return refuse(err, err_len, "%s: a batch of %d sequences cannot be split over %d ranks (at most one rank "
                      "per sequence)", o->verify_path ? shown(o->verify_path, buf, sizeof(buf)) : "-B", o->B, ranks);
    }
    // the executors would cut a chunk to the batch or the sequence; refused instead, so that the
    // chunk sizes a run reports are the ones it was given (the harness refuses them too)
    if (o->exec.batch_subsize > o->B)
        return refuse(err, err_len, "--batch-subsize: %d is larger than the batch of %d sequences",
                      o->exec.batch_subsize, o->B);
    if (o->exec.token_chunk > o->T)
        return refuse(err, err_len, "--token-chunk: %d is larger than the sequence length of %d tokens",
                      o->exec.token_chunk, o->T);
    if (o->exec.tile_sequences > o->B)
        return refuse(err, err_len, "--tile-sequences: %d is larger than the batch of %d sequences",
                      o->exec.tile_sequences, o->B);
    // a tile wider than the widest product it cuts (the MLP's 4C) would cut nothing
    int widest = 4 * config->channels;
    if (o->exec.tile_columns > widest)
        return refuse(err, err_len, "--tile-columns: %d is wider than the widest product's %d output columns",
                      o->exec.tile_columns, widest);
    if (o->exec.tiles_per_product > 0 && o->exec.tile_columns > 0)
        return refuse(err, err_len, "--tiles-per-product: give it or --tile-columns, not both (each sets the "
                      "products' tile widths)");
    // tiles are whole vectors: more than the widest product (4C columns) has would cut nothing more; the
    // narrower ones stop at theirs (C/16 tiles of the C-wide products), as fork-join's shares do past C/16 threads
    if (o->exec.tiles_per_product > widest / 16)
        return refuse(err, err_len, "--tiles-per-product: %d tiles is more than the widest product's %d "
                      "columns hold (at most %d)", o->exec.tiles_per_product, widest, widest / 16);
    if (o->exec.tile_in_channels > widest)
        return refuse(err, err_len, "--tile-in-channels: %d is wider than the widest weight gradient's %d input "
                      "channels", o->exec.tile_in_channels, widest);
    // the largest share of the batch a rank trains on (ranks > 0: checked above)
    int share = ranks > 1 ? (o->B + ranks - 1) / ranks : o->B;
    char why[256];
    if (gpt2_state_bytes(config, share, o->T, NULL, why, sizeof(why)) != 0)
        return refuse(err, err_len, "-B/-T: %s", why);
    return 0;
}

void options_usage(FILE *out, const char *program, int distributed) {
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
            "  --batch-subsize N    sequences per chunk (tasks, taskiter; at most B)\n"
            "  --token-chunk K      tokens per chunk (tasks, taskiter; at most T)\n"
            "  --channel-chunk N    channels per chunk of channel-split operations (tasks, taskiter)\n"
            "  --tile-columns N     output columns per tile of the transformer blocks' products and\n"
            "                       input gradients (tasks, taskiter; at most the widest, 4C)\n"
            "  --tile-in-channels N input channels per tile of their weight gradients (tasks, taskiter;\n"
            "                       at most the widest, 4C)\n"
            "  --tile-sequences N   sequences per row chunk of those products, every token (tasks,\n"
            "                       taskiter; at most B; default: the row chunks, BATCH_SUBSIZE x k)\n"
            "  --tiles-per-product N instead of --tile-columns: each of those products in N equal tiles\n"
            "                       (tasks, taskiter; at most 4C/16)\n"
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
            "  regular file, existing or new, or /dev/null to discard.\n",
            program, gpt2_named_config_list());
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
                "  The global batch (-B) is split over the ranks (mpirun -np R): rank r gets\n"
                "  sequences [B*r/R, B*(r+1)/R). Every rank must be given the same options and data.\n");
}
