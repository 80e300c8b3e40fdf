// libFuzzer target: tokens_parse on arbitrary bytes; on success every token
// is inside the vocabulary and the count matches the size.
#include <stdint.h>
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Error err = {{0}};
    TokenFile file;
    if (tokens_parse(data, size, FUZZ_NAME, FUZZ_VOCAB, &file, &err) != 0) {
        fuzz_check_error(&err);
        if (file.tokens) abort(); // nothing left allocated on failure
        return 0;
    }
    if (file.count == 0 || size != HEADER_BYTES + 2 * file.count) abort();
    for (size_t i = 0; i < file.count; i++)
        if (file.tokens[i] >= FUZZ_VOCAB) abort();
    tokens_free(&file);
    return 0;
}
