// libFuzzer target: debug_state_parse on arbitrary bytes against the fixed
// model FUZZ_CONFIG; on success the batch fits the model and every token is
// inside the vocabulary.
#include <stdint.h>
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    GPT2 model;
    if (gpt2_describe(&model, FUZZ_CONFIG) != 0) abort();
    Error err = {{0}};
    DebugState state;
    if (debug_state_parse(data, size, FUZZ_NAME, &FUZZ_CONFIG, model.num_parameters, &state, &err) != 0) {
        fuzz_check_error(&err);
        if (state.inputs || state.logits || state.grads) abort();
        return 0;
    }
    if (state.B < 1 || state.T < 1 || state.T > FUZZ_CONFIG.max_seq_len) abort();
    for (int i = 0; i < state.B * state.T; i++)
        if (state.inputs[i] < 0 || state.inputs[i] >= FUZZ_CONFIG.vocab_size || state.targets[i] < 0 ||
            state.targets[i] >= FUZZ_CONFIG.vocab_size)
            abort();
    volatile float x = state.logits[(size_t)state.B * state.T * FUZZ_CONFIG.vocab_size - 1] +
                       state.grads[model.num_parameters - 1];
    (void)x;
    char why[256];
    (void)gpt2_state_bytes(&FUZZ_CONFIG, state.B, state.T, NULL, why, sizeof(why));
    debug_state_free(&state);
    return 0;
}
