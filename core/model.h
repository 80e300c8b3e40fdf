// GPT-2 model state: configuration, parameters, gradients, optimizer moments
// and activations, each one allocation made once (llm.c's layout and order).
#ifndef MODEL_H
#define MODEL_H

#include <stddef.h>
#include <stdint.h>

// Limits on every dimension, each checked on its own (gpt2_config_check,
// gpt2_state_bytes) before any size is computed from it. They keep every
// product the code forms in `int` (3C, 4C, NH*T, B*T, a chunk's extents)
// far from overflow, and every byte count in 64 bits; the totals are then
// checked against the file's size and GPT2_MAX_STATE_BYTES / the machine's
// memory. GPT-2 XL (maxT 1024, V 50257, L 48, NH 25, C 1600) is well inside.
#define GPT2_MAX_SEQ_LEN 65536        // maxT, and so T
#define GPT2_MAX_VOCAB (1 << 20)      // V and Vp
#define GPT2_MAX_LAYERS 1024          // L
#define GPT2_MAX_HEADS 1024           // NH
#define GPT2_MAX_CHANNELS 16384       // C
#define GPT2_MAX_BATCH (1 << 20)      // B
#define GPT2_MAX_ROWS (1 << 24)       // B*T
#define GPT2_MAX_STATE_BYTES (1ull << 40) // parameters, gradients, moments, activations: 1 TiB

typedef struct {
    int max_seq_len;       // maxT
    int vocab_size;        // V
    int padded_vocab_size; // Vp, V rounded up to a multiple of 128
    int num_layers;        // L
    int num_heads;         // NH
    int channels;          // C
} GPT2Config;

// Parameter tensors in checkpoint order. The union lets the step description
// name a tensor by index while kernels read it by name.
enum {
    PARAM_WTE, PARAM_WPE, PARAM_LN1W, PARAM_LN1B, PARAM_QKVW, PARAM_QKVB,
    PARAM_ATTPROJW, PARAM_ATTPROJB, PARAM_LN2W, PARAM_LN2B, PARAM_FCW, PARAM_FCB,
    PARAM_FCPROJW, PARAM_FCPROJB, PARAM_LNFW, PARAM_LNFB, NUM_PARAM_TENSORS
};

typedef union {
    struct {
        float *wte;      // (Vp, C)
        float *wpe;      // (maxT, C)
        float *ln1w;     // (L, C)
        float *ln1b;     // (L, C)
        float *qkvw;     // (L, 3C, C)
        float *qkvb;     // (L, 3C)
        float *attprojw; // (L, C, C)
        float *attprojb; // (L, C)
        float *ln2w;     // (L, C)
        float *ln2b;     // (L, C)
        float *fcw;      // (L, 4C, C)
        float *fcb;      // (L, 4C)
        float *fcprojw;  // (L, C, 4C)
        float *fcprojb;  // (L, C)
        float *lnfw;     // (C)
        float *lnfb;     // (C)
    };
    float *tensor[NUM_PARAM_TENSORS];
} ParameterTensors;

// Per-layer shape of a parameter tensor as a matrix: rows (output channels)
// by cols (input channels); 1-D tensors have cols = 1. `per_layer` is 0 for
// the tensors outside the transformer blocks.
typedef struct {
    const char *name;
    int rows, cols;
    int per_layer;
} ParamShape;

// Activations: everything the backward pass needs from the forward pass.
enum {
    ACT_ENCODED, ACT_LN1, ACT_LN1_MEAN, ACT_LN1_RSTD, ACT_QKV, ACT_ATTY, ACT_ATT,
    ACT_ATTPROJ, ACT_RESIDUAL2, ACT_LN2, ACT_LN2_MEAN, ACT_LN2_RSTD, ACT_FCH,
    ACT_FCH_GELU, ACT_FCPROJ, ACT_RESIDUAL3, ACT_LNF, ACT_LNF_MEAN, ACT_LNF_RSTD,
    ACT_LOGITS, ACT_PROBS, ACT_LOSSES, NUM_ACT_TENSORS
};

typedef union {
    struct {
        float *encoded;   // (B, T, C)
        float *ln1;       // (L, B, T, C)
        float *ln1_mean;  // (L, B, T)
        float *ln1_rstd;  // (L, B, T)
        float *qkv;       // (L, B, T, 3C)
        float *atty;      // (L, B, T, C)
        float *att;       // (L, B, T, NH, T) softmax weights; row (b,t) holds every head
        float *attproj;   // (L, B, T, C)
        float *residual2; // (L, B, T, C)
        float *ln2;       // (L, B, T, C)
        float *ln2_mean;  // (L, B, T)
        float *ln2_rstd;  // (L, B, T)
        float *fch;       // (L, B, T, 4C)
        float *fch_gelu;  // (L, B, T, 4C)
        float *fcproj;    // (L, B, T, C)
        float *residual3; // (L, B, T, C)
        float *lnf;       // (B, T, C)
        float *lnf_mean;  // (B, T)
        float *lnf_rstd;  // (B, T)
        float *logits;    // (B, T, Vp)
        float *probs;     // (B, T, Vp); the backward pass overwrites it with dlogits
        float *losses;    // (B, T)
    };
    float *tensor[NUM_ACT_TENSORS];
} ActivationTensors;

// Gradients of activations. Only the ones the backward pass writes exist;
// each layer has its own so that layers can overlap without false sharing.
enum {
    DACT_ENCODED, DACT_LN1, DACT_QKV, DACT_ATTY, DACT_RESIDUAL2, DACT_LN2,
    DACT_FCH, DACT_FCH_GELU, DACT_RESIDUAL3, DACT_LNF, NUM_DACT_TENSORS
};

typedef union {
    struct {
        float *encoded;   // (B, T, C)
        float *ln1;       // (L, B, T, C)
        float *qkv;       // (L, B, T, 3C)
        float *atty;      // (L, B, T, C)
        float *residual2; // (L, B, T, C)
        float *ln2;       // (L, B, T, C)
        float *fch;       // (L, B, T, 4C)
        float *fch_gelu;  // (L, B, T, 4C)
        float *residual3; // (L, B, T, C)
        float *lnf;       // (B, T, C)
    };
    float *tensor[NUM_DACT_TENSORS];
} ActivationGradTensors;

// Per-layer shape of an activation tensor: (B, T, width) with the width
// given in terms of the configuration; per_layer says whether L copies exist.
typedef struct {
    const char *name;
    size_t width;
    int per_layer;
} ActShape;

typedef struct {
    GPT2Config config;
    int B, T;                          // the batch shape the activations were sized for
    ParamShape param_shape[NUM_PARAM_TENSORS];
    size_t param_sizes[NUM_PARAM_TENSORS];
    size_t num_parameters;
    float *params_memory;              // one allocation each
    float *grads_memory;
    float *m_memory;
    float *v_memory;
    ParameterTensors params, grads, m, v;
    ActShape act_shape[NUM_ACT_TENSORS];
    ActShape dact_shape[NUM_DACT_TENSORS];
    float *acts_memory;
    float *dacts_memory;
    void *allocations[6];              // the six blocks above as calloc returned them, for free()
    ActivationTensors acts;
    ActivationGradTensors dacts;
    int *inputs;                       // (B, T)
    int *targets;                      // (B, T)
    float mean_loss;
} GPT2;

// Checks each dimension against its limit (GPT2_MAX_*), Vp >= V and NH
// dividing C. Returns 0, or -1 with a message in err (err_len bytes) naming
// the dimension, e.g. "C=536870912 exceeds the limit 16384".
int gpt2_config_check(const GPT2Config *config, char *err, size_t err_len);
// The parameter count of a checked config, in 64-bit checked arithmetic.
// Returns 0, or -1 with a message when the config fails gpt2_config_check or
// the count overflows.
int gpt2_num_parameters(const GPT2Config *config, uint64_t *count, char *err, size_t err_len);
// Bytes gpt2_allocate would allocate for batch (B, T): parameters, gradients,
// both moments, activations, their gradients, inputs and targets, with the
// blocks' alignment. Checks the config, 1 <= B <= GPT2_MAX_BATCH,
// 1 <= T <= maxT, B*T <= GPT2_MAX_ROWS, every product in checked 64-bit
// arithmetic, and the total against gpt2_memory_limit(). Returns 0 (bytes,
// when not NULL, receives the total), or -1 with a message in err.
int gpt2_state_bytes(const GPT2Config *config, int B, int T, uint64_t *bytes, char *err, size_t err_len);
// The most model state this process will allocate: GPT2_MAX_STATE_BYTES, or
// the machine's physical memory when that is smaller.
uint64_t gpt2_memory_limit(void);
// Fills the shape tables and sizes from the config (no allocation). Returns
// 0, or -1 (model zeroed) when the config fails gpt2_config_check.
int gpt2_describe(GPT2 *model, GPT2Config config);
// Allocates parameters, gradients, moments and activations for batch (B, T),
// after gpt2_state_bytes accepted them. Returns 0, or -1 with a message in err
// (err_len bytes) when a size is out of bounds or memory is short.
int gpt2_allocate(GPT2 *model, int B, int T, char *err, size_t err_len);
void gpt2_free(GPT2 *model);
// Deterministic GPT-2 style initialisation (std 0.02, residual projections
// scaled by 1/sqrt(2L), LayerNorm weights 1, biases 0, padded vocab rows 0).
void gpt2_init_random(GPT2 *model, uint64_t seed);

// Named configurations: d12 (GPT-2 124M), d6, small, tiny. Returns 0 when found.
int gpt2_named_config(const char *name, GPT2Config *config);
// The i-th configuration's name, in the table's order; NULL when i is past the last.
const char *gpt2_named_config_name(size_t i);
// Every name, comma separated ("d12, d6, small, tiny").
const char *gpt2_named_config_list(void);
int gpt2_padded_vocab(int vocab_size);

// n floats, zeroed lazily (calloc), 64-byte aligned, and on a 2 MB boundary
// marked for transparent huge pages when at least 2 MB; NULL when memory is
// short. *block receives what to free(). (The model state's blocks, and the
// step's rings of packed weights.)
float *zeroed_floats(size_t n, void **block);

// Pointer to layer `layer` of parameter tensor `t` in a ParameterTensors set.
float *param_slice(const GPT2 *model, const ParameterTensors *set, int t, int layer);
float *act_slice(const GPT2 *model, int t, int layer);
float *dact_slice(const GPT2 *model, int t, int layer);

#endif
