// llm.c's file formats: checkpoints (magic 20240326, version 3), token files
// (20240520, version 1) and debug states (20240327, version 2), and the
// expected-losses text file of --expect-losses.
//
// The readers' contract:
//   - every reader and parser returns 0, or -1 with err->message set to one
//     line "NAME: problem" naming the file and what is wrong with it; none
//     prints, exits or aborts, and on failure nothing is left allocated;
//   - a path that is not a regular file (a FIFO, a device, a socket, a
//     directory) is refused at once, without blocking (fileio_open_regular);
//   - a header is validated before anything is computed from it: each
//     dimension against its own limit (model.h: GPT2_MAX_*), every size in
//     64-bit checked arithmetic (checked.h), the total against the file's
//     size and the memory limit, all before any allocation;
//   - the parsers work on memory buffers (*_parse: the whole file's bytes),
//     so fuzz targets call them directly (tests/fuzz/); the file readers
//     (*_read) share their validation and read the payload straight into its
//     destination.
// The front end (variants/main.c) turns err into one line on stderr and exit
// status 2.
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
#define HEADER_BYTES (HEADER_INTS * 4)
// An --expect-losses file larger than this is refused.
#define EXPECTED_LOSSES_MAX_BYTES (1 << 20)

typedef struct {
    char message[512];
} Error;

// Sets err->message to "name: <formatted>" and returns -1.
int error_set(Error *err, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

// Opens path for reading without blocking (O_NONBLOCK, cleared once the
// file is known to be regular) and refuses anything that is not a regular
// file. `what` names the expected content in messages ("checkpoint").
// Returns the descriptor (size in *size), or -1 with err set.
int fileio_open_regular(const char *path, const char *what, uint64_t *size, Error *err);
// The same check, the descriptor closed again: 0 or -1 with err set.
int fileio_check_regular(const char *path, const char *what, Error *err);

// ---- checkpoints
// Validates a checkpoint header: `header` holds the file's first `len` bytes
// (at least HEADER_BYTES, or the file is truncated), `file_size` is the
// whole file's size. Fills config; 0, or -1 with err set.
int checkpoint_parse_header(const void *header, size_t len, uint64_t file_size, const char *name,
                            GPT2Config *config, Error *err);
// A whole checkpoint in memory: the config and a malloc'd copy of its
// parameters (*params, *num_parameters; free() them).
int checkpoint_parse(const void *data, size_t size, const char *name, GPT2Config *config, float **params,
                     size_t *num_parameters, Error *err);
// Reads and validates a checkpoint's header into config. 0, or -1 with err set.
int checkpoint_read_config(const char *path, GPT2Config *config, Error *err);
// Reads the parameters of a checkpoint whose config matches model->config.
int checkpoint_read_params(const char *path, GPT2 *model, Error *err);
// Checks, before training, that a checkpoint can be written to path: its
// directory exists and takes a new file, and path is not a directory or
// other non-regular file; or path is /dev/null (fileio_check_destination).
int checkpoint_check_destination(const char *path, Error *err);
// The same check for any output file (`what` names it in the message: "trace", ...).
// Every output follows one rule: a regular file, existing or new, or /dev/null
// (the same device, under any name) to discard it; a directory, a FIFO, a
// socket or any other device is refused.
int fileio_check_destination(const char *path, const char *what, Error *err);
// Whether path is /dev/null (the device, under any name).
int fileio_is_dev_null(const char *path);
// Writes atomically: a temporary file in path's directory, fsync, rename
// over path, fsync of the directory. A crash leaves either the old file or
// the complete new one under path (and possibly a ".NAME.tmp-XXXXXX" beside it).
// /dev/null takes nothing: the checkpoint is discarded.
int checkpoint_write(const char *path, const GPT2 *model, Error *err);

// ---- token files
typedef struct {
    uint16_t *tokens;
    size_t count;
} TokenFile;
// Validates a token file header (as checkpoint_parse_header); *count tokens.
int tokens_parse_header(const void *header, size_t len, uint64_t file_size, const char *name, size_t *count,
                        Error *err);
// Every token below vocab_size.
int tokens_check(const uint16_t *tokens, size_t count, int vocab_size, const char *name, Error *err);
int tokens_parse(const void *data, size_t size, const char *name, int vocab_size, TokenFile *out, Error *err);
// Reads all tokens; each must be below vocab_size.
int tokens_read(const char *path, int vocab_size, TokenFile *out, Error *err);
void tokens_free(TokenFile *tokens);

// ---- debug states
typedef struct {
    int B, T;
    int *inputs, *targets;  // (B, T)
    float *logits;          // (B, T, V), unpadded
    float loss;
    float *grads;           // num_parameters, checkpoint order
} DebugState;
// Validates a debug state header against the model (config, num_parameters)
// and the file size; *B and *T receive the batch shape.
int debug_state_parse_header(const void *header, size_t len, uint64_t file_size, const char *name,
                             const GPT2Config *config, size_t num_parameters, int *B, int *T, Error *err);
int debug_state_parse(const void *data, size_t size, const char *name, const GPT2Config *config,
                      size_t num_parameters, DebugState *out, Error *err);
int debug_state_read(const char *path, const GPT2Config *config, size_t num_parameters,
                     DebugState *out, Error *err);
void debug_state_free(DebugState *state);

// ---- expected losses (--expect-losses): numbers separated by whitespace or
// commas; at most `max` are read into losses, *count receives how many.
int expected_losses_parse(const char *text, size_t len, const char *name, float *losses, int max, int *count,
                          Error *err);
int expected_losses_read(const char *path, float *losses, int max, int *count, Error *err);

#endif
