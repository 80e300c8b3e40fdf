// libFuzzer target: the command line (variants/options.c) as every binary
// parses it, up to the point where a run would start: options_parse, then,
// for an embedded configuration, options_check_model against its shapes.
//
// Input: the first byte picks the front (bit 0: the distributed one, with
// --executor and --update) and the rank count (bits 1-2: 1 to 4 ranks); the
// rest is the argument vector, arguments separated by NUL bytes (at most 64).
// Invariants: no crash or sanitizer report; a refusal is one printable line;
// an accepted vector's values are within the documented limits (options.h,
// docs/variants.md, "Options"), and a run the model check accepts fits the model.
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../../variants/options.h"

#define FUZZ_MAX_ARGS 64

static void check_refusal(const char *err) {
    size_t n = strlen(err);
    if (n == 0 || n > 400) abort();
    for (size_t i = 0; i < n; i++)
        if (!isprint((unsigned char)err[i])) abort(); // a newline, a control byte: not one line
}

static void check_accepted(const Options *o, int distributed) {
    if (o->B < 1 || o->B > OPTION_MAX_B || o->T < 1 || o->T > OPTION_MAX_T) abort();
    if (o->steps < 0 || o->steps > OPTION_MAX_STEPS || o->seed < 0 || o->seed > OPTION_MAX_SEED) abort();
    if (o->exec.threads < 0 || o->exec.threads > OPTION_MAX_THREADS) abort();
    for (int k = 0; k < N_CHUNK_KNOBS; k++) {
        int v = chunk_knob_value(&o->exec.chunking, &chunk_knobs()[k]);
        if (v < 0 || v > chunk_knobs()[k].max) abort();
    }
    if (!isfinite(o->lr) || !isfinite(o->weight_decay) || !isfinite(o->tolerance)) abort();
    if (!o->config_name == !o->model_path) abort(); // exactly one source of the model
    if (o->verify_path && (o->data_path || o->B_given || o->T_given)) abort();
    if ((o->expect_losses_path && !o->verify_path) || ((o->shuffle || o->data_order) && !o->data_path)) abort();
    if (o->graph_path && !o->describe) abort();
    if (!distributed && (o->exec.executor || !o->exec.sharded_update || o->exec.direct_collective)) abort();
}

// Whether every knob is within its bound on the model's shapes (taskgraph.h, KnobBound).
static int within_bounds(const Chunking *c, const Options *o, const GPT2Config *config) {
    int widest = 4 * config->channels;
    for (int k = 0; k < N_CHUNK_KNOBS; k++) {
        const ChunkKnob *knob = &chunk_knobs()[k];
        int v = chunk_knob_value(c, knob);
        int limit = knob->bound == KNOB_AT_MOST_B ? o->B : knob->bound == KNOB_AT_MOST_T ? o->T
                  : knob->bound == KNOB_AT_MOST_TILES ? widest / 16 : knob->bound == KNOB_UNBOUNDED ? knob->max
                  : widest;
        if (v > limit) return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int distributed = data[0] & 1, ranks = 1 + ((data[0] >> 1) & 3);
    // a NUL-terminated copy: the last argument ends at the end of the input
    char *text = malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    char *argv[FUZZ_MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "gpt2-fuzz";
    for (size_t at = 0; at < size - 1 && argc <= FUZZ_MAX_ARGS; at += strlen(text + at) + 1) argv[argc++] = text + at;
    argv[argc] = NULL;

    Options o;
    char err[512];
    memset(err, 0, sizeof(err));
    int parsed = options_parse(argc, argv, distributed, &o, err, sizeof(err));
    if (parsed == OPTIONS_ERROR) {
        check_refusal(err);
    } else if (parsed == OPTIONS_RUN) {
        check_accepted(&o, distributed);
        GPT2Config config;
        if (o.config_name && gpt2_named_config(o.config_name, &config) == 0) {
            if (options_check_model(&o, &config, ranks, err, sizeof(err)) != 0) {
                check_refusal(err);
            } else if (o.T > config.max_seq_len || ranks > o.B || !within_bounds(&o.exec.chunking, &o, &config)) {
                abort();
            }
        }
    } else if (parsed != OPTIONS_HELP) {
        abort();
    }
    free(text);
    return 0;
}
