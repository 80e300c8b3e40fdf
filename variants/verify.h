// Verification for the command-line front (--verify, --expect-losses): the
// state after a step against an llm.c debug state, and per-step losses against
// a list. Every comparison goes through max_abs_diff; results are printed one
// per line (JSON objects on stdout with --json, text on stderr otherwise).
#ifndef VERIFY_H
#define VERIFY_H

#include <stddef.h>
#include "../core/fileio.h"
#include "../core/model.h"

// The largest |a[i] - b[i]| over n elements (infinity when any is NaN), and
// its index in *where.
double max_abs_diff(const float *a, const float *b, size_t n, size_t *where);

// Compares the logits, loss and gradients after one forward and backward pass
// with the debug state. Returns the number of comparisons beyond tol.
int verify_debug_state(const GPT2 *model, const DebugState *state, float loss, float tol, int json);

// Compares the first `steps` losses with the expected ones in the file at
// `path` (numbers separated by whitespace or commas). Returns the number of
// comparisons beyond tol (0 or 1), or -1 with err set when the file cannot be
// read, holds something that is not a number, or holds fewer than `steps`.
int verify_losses(const char *path, const float *losses, int steps, float tol, int json, Error *err);

#endif
