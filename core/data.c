#include <stdio.h>
#include <string.h>
#include "data.h"

int batches_from_tokens(BatchSource *source, const char *path, int B, int T, int vocab_size, Error *err) {
    memset(source, 0, sizeof(*source));
    source->kind = BATCHES_TOKENS;
    source->B = B;
    source->T = T;
    source->vocab_size = vocab_size;
    if (tokens_read(path, vocab_size, &source->file, err) != 0) return -1;
    size_t needed = (size_t)B * T + 1;
    if (source->file.count < needed) {
        snprintf(err->message, sizeof(err->message), "%s: %zu tokens, fewer than the B*T+1 = %zu one batch needs",
                 path, source->file.count, needed);
        tokens_free(&source->file);
        return -1;
    }
    return 0;
}

// A learnable synthetic language: each token follows from the previous one
// through a fixed affine map plus one of four random offsets, so a model can
// drive the loss from log(V) towards log(4).
static int synthetic_next(BatchSource *s) {
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    int noise = (int)(s->rng >> 62);
    s->previous = (int)(((long long)s->previous * 1103 + 17 + noise) % s->vocab_size);
    return s->previous;
}

void batches_synthetic(BatchSource *source, int B, int T, int vocab_size, uint64_t seed) {
    memset(source, 0, sizeof(*source));
    source->kind = BATCHES_SYNTHETIC;
    source->B = B;
    source->T = T;
    source->vocab_size = vocab_size;
    source->rng = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
    if (source->rng == 0) source->rng = 1;
    source->previous = (int)(seed % (uint64_t)vocab_size);
}

void batches_fixed(BatchSource *source, int B, int T, const int *inputs, const int *targets) {
    memset(source, 0, sizeof(*source));
    source->kind = BATCHES_FIXED;
    source->B = B;
    source->T = T;
    source->fixed_inputs = inputs;
    source->fixed_targets = targets;
}

void batches_free(BatchSource *source) {
    if (source->kind == BATCHES_TOKENS) tokens_free(&source->file);
}

void batch_source_next(BatchSource *s, int *inputs, int *targets) {
    size_t n = (size_t)s->B * s->T;
    switch (s->kind) {
    case BATCHES_TOKENS:
        if (s->position + n + 1 > s->file.count) s->position = 0;
        for (size_t i = 0; i < n; i++) {
            inputs[i] = s->file.tokens[s->position + i];
            targets[i] = s->file.tokens[s->position + i + 1];
        }
        s->position += n;
        break;
    case BATCHES_SYNTHETIC: {
        // consecutive batches continue the same stream, like a file would
        int current = s->previous;
        for (size_t i = 0; i < n; i++) {
            inputs[i] = current;
            current = synthetic_next(s);
            targets[i] = current;
        }
        break;
    }
    case BATCHES_FIXED:
        memcpy(inputs, s->fixed_inputs, n * sizeof(int));
        memcpy(targets, s->fixed_targets, n * sizeof(int));
        break;
    }
}
