// libFuzzer target: checkpoint_parse on arbitrary bytes. On success the
// config must describe exactly the parameters read, and the state size of a
// small batch must be computable (or refused) without overflow.
#include <stdint.h>
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Error err = {{0}};
    GPT2Config config;
    float *params;
    size_t n;
    if (checkpoint_parse(data, size, FUZZ_NAME, &config, &params, &n, &err) != 0) {
        fuzz_check_error(&err);
        return 0;
    }
    GPT2 model;
    if (gpt2_describe(&model, config) != 0 || model.num_parameters != n || size != HEADER_BYTES + 4 * n) abort();
    size_t sum = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) sum += model.param_sizes[t];
    if (sum != n) abort();
    volatile float x = 0; // touch the first and last parameter
    x += params[0] + params[n - 1];
    char why[256];
    uint64_t bytes;
    int T = config.max_seq_len < 8 ? config.max_seq_len : 8;
    (void)gpt2_state_bytes(&config, 2, T, &bytes, why, sizeof(why));
    (void)gpt2_state_bytes(&config, GPT2_MAX_BATCH, config.max_seq_len, &bytes, why, sizeof(why));
    free(params);
    return 0;
}
