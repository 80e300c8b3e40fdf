// Readers and writers of llm.c's binary files.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fileio.h"

static int fail(Error *err, const char *path, const char *fmt, ...) {
    char detail[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(detail, sizeof(detail), fmt, args);
    va_end(args);
    snprintf(err->message, sizeof(err->message), "%s: %s", path, detail);
    return -1;
}

// Opens path and reads the 256-int header; checks magic and version.
static FILE *open_with_header(const char *path, int magic, int version, const char *what,
                              int header[HEADER_INTS], long long *file_size, Error *err) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fail(err, path, "cannot open %s: %s", what, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        fail(err, path, "is a directory, expected a %s", what);
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        fail(err, path, "cannot open %s: %s", what, strerror(errno));
        return NULL;
    }
    *file_size = (long long)st.st_size;
    if (fread(header, sizeof(int), HEADER_INTS, f) != HEADER_INTS) {
        fail(err, path, "truncated %s: %lld bytes, shorter than the %d-byte header", what, *file_size,
             (int)(HEADER_INTS * sizeof(int)));
        fclose(f);
        return NULL;
    }
    if (header[0] != magic) {
        fail(err, path, "not a %s: magic number %d, expected %d", what, header[0], magic);
        fclose(f);
        return NULL;
    }
    if (header[1] != version) {
        fail(err, path, "unsupported %s version %d, expected %d", what, header[1], version);
        fclose(f);
        return NULL;
    }
    return f;
}

static size_t count_parameters(const GPT2Config *c) {
    GPT2 sizing;
    gpt2_describe(&sizing, *c);
    return sizing.num_parameters;
}

int checkpoint_read_config(const char *path, GPT2Config *config, Error *err) {
    int h[HEADER_INTS];
    long long size;
    FILE *f = open_with_header(path, CHECKPOINT_MAGIC, CHECKPOINT_VERSION, "checkpoint", h, &size, err);
    if (!f) return -1;
    fclose(f);
    GPT2Config c = {h[2], h[3], h[7], h[4], h[5], h[6]};
    if (c.max_seq_len <= 0 || c.vocab_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 || c.channels <= 0)
        return fail(err, path, "invalid checkpoint header: maxT=%d V=%d L=%d NH=%d C=%d must all be positive",
                    c.max_seq_len, c.vocab_size, c.num_layers, c.num_heads, c.channels);
    if (c.padded_vocab_size < c.vocab_size)
        return fail(err, path, "invalid checkpoint header: padded vocab %d smaller than vocab %d",
                    c.padded_vocab_size, c.vocab_size);
    if (c.channels % c.num_heads != 0)
        return fail(err, path, "invalid checkpoint header: C=%d not divisible by NH=%d", c.channels, c.num_heads);
    if ((long long)c.channels * c.padded_vocab_size > (1ll << 34) || c.num_layers > 4096)
        return fail(err, path, "invalid checkpoint header: implausible sizes");
    long long expected = (long long)sizeof(int) * HEADER_INTS + (long long)sizeof(float) * count_parameters(&c);
    if (size != expected)
        return fail(err, path, "checkpoint header inconsistent with file size: header implies %lld bytes, file has %lld",
                    expected, size);
    *config = c;
    return 0;
}

int checkpoint_read_params(const char *path, GPT2 *model, Error *err) {
    int h[HEADER_INTS];
    long long size;
    FILE *f = open_with_header(path, CHECKPOINT_MAGIC, CHECKPOINT_VERSION, "checkpoint", h, &size, err);
    if (!f) return -1;
    size_t got = fread(model->params_memory, sizeof(float), model->num_parameters, f);
    fclose(f);
    if (got != model->num_parameters)
        return fail(err, path, "truncated checkpoint: %zu of %zu parameters", got, model->num_parameters);
    return 0;
}

int checkpoint_write(const char *path, const GPT2 *model, Error *err) {
    int h[HEADER_INTS] = {0};
    const GPT2Config *c = &model->config;
    h[0] = CHECKPOINT_MAGIC;
    h[1] = CHECKPOINT_VERSION;
    h[2] = c->max_seq_len;
    h[3] = c->vocab_size;
    h[4] = c->num_layers;
    h[5] = c->num_heads;
    h[6] = c->channels;
    h[7] = c->padded_vocab_size;
    FILE *f = fopen(path, "wb");
    if (!f) return fail(err, path, "cannot write checkpoint: %s", strerror(errno));
    int ok = fwrite(h, sizeof(int), HEADER_INTS, f) == HEADER_INTS &&
             fwrite(model->params_memory, sizeof(float), model->num_parameters, f) == model->num_parameters;
    if (fclose(f) != 0) ok = 0;
    if (!ok) return fail(err, path, "cannot write checkpoint: %s", strerror(errno));
    return 0;
}

int tokens_read(const char *path, int vocab_size, TokenFile *out, Error *err) {
    int h[HEADER_INTS];
    long long size;
    memset(out, 0, sizeof(*out));
    FILE *f = open_with_header(path, TOKENS_MAGIC, TOKENS_VERSION, "token file", h, &size, err);
    if (!f) return -1;
    long long count = h[2];
    long long expected = (long long)sizeof(int) * HEADER_INTS + 2 * count;
    if (count <= 0 || size != expected) {
        fclose(f);
        return fail(err, path, "token file header inconsistent with file size: %lld tokens imply %lld bytes, file has %lld",
                    count, expected, size);
    }
    out->tokens = malloc((size_t)count * sizeof(uint16_t));
    if (!out->tokens) {
        fclose(f);
        return fail(err, path, "out of memory for %lld tokens", count);
    }
    size_t got = fread(out->tokens, sizeof(uint16_t), (size_t)count, f);
    fclose(f);
    if (got != (size_t)count) {
        tokens_free(out);
        return fail(err, path, "truncated token file: %zu of %lld tokens", got, count);
    }
    out->count = (size_t)count;
    for (size_t i = 0; i < out->count; i++) {
        if (out->tokens[i] >= vocab_size) {
            int bad = out->tokens[i];
            tokens_free(out);
            return fail(err, path, "token %d at position %zu is outside the vocabulary (V=%d)", bad, i, vocab_size);
        }
    }
    return 0;
}

void tokens_free(TokenFile *tokens) {
    free(tokens->tokens);
    tokens->tokens = NULL;
    tokens->count = 0;
}

int debug_state_read(const char *path, const GPT2Config *config, size_t num_parameters,
                     DebugState *out, Error *err) {
    int h[HEADER_INTS];
    long long size;
    memset(out, 0, sizeof(*out));
    FILE *f = open_with_header(path, DEBUG_STATE_MAGIC, DEBUG_STATE_VERSION, "debug state", h, &size, err);
    if (!f) return -1;
    int B = h[2], T = h[3], V = config->vocab_size;
    if (B <= 0 || T <= 0) {
        fclose(f);
        return fail(err, path, "invalid debug state header: B=%d T=%d must be positive", B, T);
    }
    if (T > config->max_seq_len) {
        fclose(f);
        return fail(err, path, "debug state T=%d exceeds the model's max_seq_len %d", T, config->max_seq_len);
    }
    long long BT = (long long)B * T;
    long long expected = 4ll * HEADER_INTS + 4ll * 2 * BT + 4ll * BT * V + 4 + 4ll * (long long)num_parameters;
    if (size != expected) {
        fclose(f);
        return fail(err, path, "debug state header inconsistent with file size (or with the model): expected %lld bytes, file has %lld",
                    expected, size);
    }
    out->B = B;
    out->T = T;
    out->inputs = malloc((size_t)BT * sizeof(int));
    out->targets = malloc((size_t)BT * sizeof(int));
    out->logits = malloc((size_t)BT * V * sizeof(float));
    out->grads = malloc(num_parameters * sizeof(float));
    if (!out->inputs || !out->targets || !out->logits || !out->grads) {
        fclose(f);
        debug_state_free(out);
        return fail(err, path, "out of memory reading debug state");
    }
    int ok = fread(out->inputs, sizeof(int), (size_t)BT, f) == (size_t)BT &&
             fread(out->targets, sizeof(int), (size_t)BT, f) == (size_t)BT &&
             fread(out->logits, sizeof(float), (size_t)(BT * V), f) == (size_t)(BT * V) &&
             fread(&out->loss, sizeof(float), 1, f) == 1 &&
             fread(out->grads, sizeof(float), num_parameters, f) == num_parameters;
    fclose(f);
    if (!ok) {
        debug_state_free(out);
        return fail(err, path, "truncated debug state");
    }
    for (long long i = 0; i < BT; i++) {
        if (out->inputs[i] < 0 || out->inputs[i] >= V || out->targets[i] < 0 || out->targets[i] >= V) {
            int bad = out->inputs[i] < 0 || out->inputs[i] >= V ? out->inputs[i] : out->targets[i];
            debug_state_free(out);
            return fail(err, path, "token %d at position %lld is outside the vocabulary (V=%d)", bad, i, V);
        }
    }
    return 0;
}

void debug_state_free(DebugState *state) {
    free(state->inputs);
    free(state->targets);
    free(state->logits);
    free(state->grads);
    memset(state, 0, sizeof(*state));
}
