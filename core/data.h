// Where batches come from: a token file read llm.c's way (inputs are B*T
// consecutive tokens, targets the same shifted by one, wrapping at the end),
// a deterministic synthetic stream, or one fixed batch (--verify).
//
// A token file of N tokens holds S = (N - 1) / (B*T) samples; sample i is the
// B*T+1 tokens from offset i*B*T. In order, batches are samples 0, 1, ..., S-1,
// then again from 0 (llm.c's DataLoader without shuffling). Shuffled
// (batches_shuffle, llm.c's should_shuffle=1 for one file and one process),
// each pass over the S samples takes them in a fresh random permutation: the
// Fisher-Yates shuffle of llm.c's random_permutation (index j = draw % (i+1)
// for i = S-1 down to 1) on an identity array, drawn from MT19937 seeded as
// llm.c's manual_seed (and torch's) with seed 42, the generator carried over
// from one pass to the next.
#ifndef DATA_H
#define DATA_H

#include <stdint.h>
#include "fileio.h"
#include "step.h"

typedef enum { BATCHES_TOKENS, BATCHES_SYNTHETIC, BATCHES_FIXED } BatchKind;

// llm.c's train loader seed: manual_seed(42 + process_rank), one process here
#define LLMC_SHUFFLE_SEED 42u

// MT19937 (Matsumoto and Nishimura), seeded by init_genrand as llm.c's
// manual_seed and torch.manual_seed seed it.
typedef struct {
    uint32_t state[624];
    int index;
} Mt19937;
void mt19937_seed(Mt19937 *mt, uint32_t seed);
uint32_t mt19937_next(Mt19937 *mt);

struct BatchSource {
    BatchKind kind;
    int B, T, vocab_size;
    TokenFile file;          // BATCHES_TOKENS
    size_t position;         //   where the next batch starts, in order
    size_t last_offset;      //   where the last batch served started
    size_t samples;          //   shuffled: samples per pass (S above)
    size_t sample;           //   shuffled: the next one's index in `order`
    uint32_t *order;         //   shuffled: this pass's permutation of [0, S)
    Mt19937 shuffle_rng;
    uint64_t rng;            // BATCHES_SYNTHETIC
    int previous;
    const int *fixed_inputs; // BATCHES_FIXED
    const int *fixed_targets;
    int share_b0, share_b1;  // batches_share: the sequences served; (0, 0): all B
    int *whole;              //   the whole batch's inputs then targets, 2*B*T
};

// Returns 0, or -1 with err set when the file holds fewer than B*T+1 tokens.
int batches_from_tokens(BatchSource *source, const char *path, int B, int T, int vocab_size, Error *err);
// Serves the token file's samples in llm.c's shuffled order from now on (see
// above). Returns 0, or -1 with err set when memory is short.
int batches_shuffle(BatchSource *source, uint32_t seed, Error *err);
void batches_synthetic(BatchSource *source, int B, int T, int vocab_size, uint64_t seed);
void batches_fixed(BatchSource *source, int B, int T, const int *inputs, const int *targets);
// From now on each batch served is only sequences [b0, b1) of the B the
// source makes (one process's share of a global batch: gpt2-mpi), so that the
// processes together see exactly the batches one process would. Returns 0, or
// -1 with err set when memory is short.
int batches_share(BatchSource *source, int b0, int b1, Error *err);
void batches_free(BatchSource *source);

#endif
