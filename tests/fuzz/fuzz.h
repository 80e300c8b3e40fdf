// Shared by the libFuzzer targets (built by `make fuzz`, see the Makefile):
// the model the debug-state target reads against, and the reader contract's
// checks on an error (one line, naming the file).
#ifndef FUZZ_H
#define FUZZ_H

#include <stdlib.h>
#include <string.h>
#include "../../core/fileio.h"

#define FUZZ_NAME "fuzz.bin"
// maxT, V, Vp, L, NH, C: 300 parameters (tests/fuzz/make_corpus.py writes files for it)
static const GPT2Config FUZZ_CONFIG = {4, 5, 8, 1, 2, 4};
// the vocabulary the token-file target checks against
#define FUZZ_VOCAB 512

// An error must be one line starting with the file's name.
static inline void fuzz_check_error(const Error *err) {
    size_t n = strlen(FUZZ_NAME);
    if (strncmp(err->message, FUZZ_NAME ": ", n + 2) != 0 || strchr(err->message, '\n') ||
        strlen(err->message) <= n + 2)
        abort();
}

#endif
