// libFuzzer target: expected_losses_parse (--expect-losses) on arbitrary
// bytes; at most `max` numbers are stored, and an error is one line.
#include <stdint.h>
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    float losses[9];
    losses[8] = 12345.0f; // canary: max is 8
    Error err = {{0}};
    int n = -1;
    if (expected_losses_parse((const char *)data, size, FUZZ_NAME, losses, 8, &n, &err) != 0) {
        fuzz_check_error(&err);
        return 0;
    }
    if (n < 0 || n > 8 || losses[8] != 12345.0f) abort();
    return 0;
}
