#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "data.h"

#define MT_N 624
#define MT_M 397

void mt19937_seed(Mt19937 *mt, uint32_t seed) {
    mt->state[0] = seed;
    for (uint32_t i = 1; i < MT_N; i++)
        mt->state[i] = 1812433253u * (mt->state[i - 1] ^ (mt->state[i - 1] >> 30)) + i;
    mt->index = MT_N; // the first draw regenerates the whole state
}

uint32_t mt19937_next(Mt19937 *mt) {
    if (mt->index >= MT_N) {
        for (int i = 0; i < MT_N; i++) {
            uint32_t y = (mt->state[i] & 0x80000000u) | (mt->state[(i + 1) % MT_N] & 0x7fffffffu);
            mt->state[i] = mt->state[(i + MT_M) % MT_N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        }
        mt->index = 0;
    }
    uint32_t y = mt->state[mt->index++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

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
    source->samples = (source->file.count - 1) / ((size_t)B * T); // llm.c's shard_num_samples
    return 0;
}

int batches_shuffle(BatchSource *source, uint32_t seed, Error *err) {
    source->order = malloc(source->samples * sizeof(uint32_t));
    if (!source->order) {
        snprintf(err->message, sizeof(err->message), "out of memory for the order of %zu samples", source->samples);
        return -1;
    }
    mt19937_seed(&source->shuffle_rng, seed);
    source->sample = source->samples; // the first batch draws the first pass's permutation
    return 0;
}

// A new pass over the samples: llm.c's random_permutation of the identity.
static void shuffle_pass(BatchSource *s) {
    for (size_t i = 0; i < s->samples; i++) s->order[i] = (uint32_t)i;
    for (size_t i = s->samples - 1; i > 0; i--) {
        size_t j = mt19937_next(&s->shuffle_rng) % (uint32_t)(i + 1);
        uint32_t swap = s->order[i];
        s->order[i] = s->order[j];
        s->order[j] = swap;
    }
    s->sample = 0;
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

int batches_share(BatchSource *source, int b0, int b1, Error *err) {
    source->whole = malloc(2 * (size_t)source->B * source->T * sizeof(int));
    if (!source->whole) {
        snprintf(err->message, sizeof(err->message), "out of memory for a batch");
        return -1;
    }
    source->share_b0 = b0;
    source->share_b1 = b1;
    return 0;
}

void batches_free(BatchSource *source) {
    free(source->whole);
    source->whole = NULL;
    if (source->kind == BATCHES_TOKENS) {
        tokens_free(&source->file);
        free(source->order);
        source->order = NULL;
    }
}

static void next_whole(BatchSource *s, int *inputs, int *targets);

void batch_source_next(BatchSource *s, int *inputs, int *targets) {
    if (!s->whole) {
        next_whole(s, inputs, targets);
        return;
    }
    // the whole batch, then this share's rows (B, T) -> (b1 - b0, T)
    size_t n = (size_t)s->B * s->T, first = (size_t)s->share_b0 * s->T;
    size_t count = (size_t)(s->share_b1 - s->share_b0) * s->T;
    next_whole(s, s->whole, s->whole + n);
    memcpy(inputs, s->whole + first, count * sizeof(int));
    memcpy(targets, s->whole + n + first, count * sizeof(int));
}

static void next_whole(BatchSource *s, int *inputs, int *targets) {
    size_t n = (size_t)s->B * s->T;
    switch (s->kind) {
    case BATCHES_TOKENS: {
        size_t start;
        if (s->order) {
            if (s->sample == s->samples) shuffle_pass(s);
            start = (size_t)s->order[s->sample++] * n;
        } else {
            if (s->position + n + 1 > s->file.count) s->position = 0;
            start = s->position;
            s->position += n;
        }
        for (size_t i = 0; i < n; i++) {
            inputs[i] = s->file.tokens[start + i];
            targets[i] = s->file.tokens[start + i + 1];
        }
        s->last_offset = start;
        break;
    }
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
