// Where batches come from: a token file read llm.c's way (inputs are B*T
// consecutive tokens, targets the same shifted by one, wrapping at the end),
// a deterministic synthetic stream, or one fixed batch (--verify).
#ifndef DATA_H
#define DATA_H

#include <stdint.h>
#include "fileio.h"
#include "step.h"

typedef enum { BATCHES_TOKENS, BATCHES_SYNTHETIC, BATCHES_FIXED } BatchKind;

struct BatchSource {
    BatchKind kind;
    int B, T, vocab_size;
    TokenFile file;          // BATCHES_TOKENS
    size_t position;
    uint64_t rng;            // BATCHES_SYNTHETIC
    int previous;
    const int *fixed_inputs; // BATCHES_FIXED
    const int *fixed_targets;
};

// Returns 0, or -1 with err set when the file holds fewer than B*T+1 tokens.
int batches_from_tokens(BatchSource *source, const char *path, int B, int T, int vocab_size, Error *err);
void batches_synthetic(BatchSource *source, int B, int T, int vocab_size, uint64_t seed);
void batches_fixed(BatchSource *source, int B, int T, const int *inputs, const int *targets);
void batches_free(BatchSource *source);

#endif
