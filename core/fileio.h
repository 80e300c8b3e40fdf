// llm.c's file formats: checkpoints (magic 20240326, version 3), token files
// (20240520, version 1) and debug states (20240327, version 2). Every reader
// validates the header against the file's size before trusting it and
// reports problems as one line naming the file.
#ifndef FILEIO_H
#define FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

#define CHECKPOINT_MAGIC 20240326
#define CHECKPOINT_VERSION 3
#define TOKENS_MAGIC 20240520
#define TOKENS_VERSION 1
#define DEBUG_STATE_MAGIC 20240327
#define DEBUG_STATE_VERSION 2
#define HEADER_INTS 256

typedef struct {
    char message[512];
} Error;

// Reads and validates a checkpoint's header into config. 0, or -1 with err set.
int checkpoint_read_config(const char *path, GPT2Config *config, Error *err);
// Reads the parameters of a checkpoint whose config matches model->config.
int checkpoint_read_params(const char *path, GPT2 *model, Error *err);
int checkpoint_write(const char *path, const GPT2 *model, Error *err);

typedef struct {
    uint16_t *tokens;
    size_t count;
} TokenFile;
// Reads all tokens; each must be below vocab_size.
int tokens_read(const char *path, int vocab_size, TokenFile *out, Error *err);
void tokens_free(TokenFile *tokens);

typedef struct {
    int B, T;
    int *inputs, *targets;  // (B, T)
    float *logits;          // (B, T, V), unpadded
    float loss;
    float *grads;           // num_parameters, checkpoint order
} DebugState;
int debug_state_read(const char *path, const GPT2Config *config, size_t num_parameters,
                     DebugState *out, Error *err);
void debug_state_free(DebugState *state);

#endif
