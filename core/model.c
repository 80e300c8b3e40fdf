// Allocation, shapes and deterministic initialisation of the GPT-2 state.
#define _DEFAULT_SOURCE // madvise under -std=c11
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "checked.h"
#include "model.h"
#ifdef GPT2_SMPI
#include <smpi/smpi.h>
#endif

typedef struct {
    const char *name;
    GPT2Config config;
} NamedConfig;

// maxT, V, Vp (filled in), L, NH, C
static const NamedConfig NAMED_CONFIGS[] = {
    {"d12", {1024, 50257, 0, 12, 12, 768}},   // GPT-2 124M
    {"d6", {1024, 50257, 0, 6, 6, 384}},
    {"small", {256, 8192, 0, 4, 4, 256}},
    {"tiny", {64, 512, 0, 2, 2, 64}},
};
#define NUM_NAMED_CONFIGS (sizeof(NAMED_CONFIGS) / sizeof(NAMED_CONFIGS[0]))

int gpt2_padded_vocab(int vocab_size) { return (vocab_size + 127) / 128 * 128; }

int gpt2_named_config(const char *name, GPT2Config *config) {
    for (size_t i = 0; i < NUM_NAMED_CONFIGS; i++) {
        if (strcmp(NAMED_CONFIGS[i].name, name) == 0) {
            *config = NAMED_CONFIGS[i].config;
            config->padded_vocab_size = gpt2_padded_vocab(config->vocab_size);
            return 0;
        }
    }
    return -1;
}

const char *gpt2_named_config_name(size_t i) { return i < NUM_NAMED_CONFIGS ? NAMED_CONFIGS[i].name : NULL; }

const char *gpt2_named_config_list(void) {
    static char list[256];
    if (!list[0]) {
        size_t used = 0;
        for (size_t i = 0; i < NUM_NAMED_CONFIGS && used < sizeof(list); i++)
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", NAMED_CONFIGS[i].name);
    }
    return list;
}

int gpt2_config_check(const GPT2Config *c, char *err, size_t err_len) {
    const struct {
        const char *name;
        int value, limit;
    } dims[] = {
        {"maxT", c->max_seq_len, GPT2_MAX_SEQ_LEN}, {"V", c->vocab_size, GPT2_MAX_VOCAB},
        {"Vp", c->padded_vocab_size, GPT2_MAX_VOCAB}, {"L", c->num_layers, GPT2_MAX_LAYERS},
        {"NH", c->num_heads, GPT2_MAX_HEADS}, {"C", c->channels, GPT2_MAX_CHANNELS},
    };
    for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) {
        if (dims[i].value <= 0) {
            snprintf(err, err_len, "%s=%d must be positive", dims[i].name, dims[i].value);
            return -1;
        }
        if (dims[i].value > dims[i].limit) {
            snprintf(err, err_len, "%s=%d exceeds the limit %d", dims[i].name, dims[i].value, dims[i].limit);
            return -1;
        }
    }
    if (c->padded_vocab_size < c->vocab_size) {
        snprintf(err, err_len, "padded vocab Vp=%d smaller than vocab V=%d", c->padded_vocab_size, c->vocab_size);
        return -1;
    }
    if (c->channels % c->num_heads != 0) {
        snprintf(err, err_len, "C=%d not divisible by NH=%d", c->channels, c->num_heads);
        return -1;
    }
    return 0;
}

// The parameter tensors' shapes of a checked config (every product below is
// at most 4 * GPT2_MAX_CHANNELS).
static void param_shapes(const GPT2Config *config, ParamShape shapes[NUM_PARAM_TENSORS]) {
    int Vp = config->padded_vocab_size, C = config->channels;
    const ParamShape s[NUM_PARAM_TENSORS] = {
        {"wte", Vp, C, 0},          {"wpe", config->max_seq_len, C, 0},
        {"ln1w", C, 1, 1},          {"ln1b", C, 1, 1},
        {"qkvw", 3 * C, C, 1},      {"qkvb", 3 * C, 1, 1},
        {"attprojw", C, C, 1},      {"attprojb", C, 1, 1},
        {"ln2w", C, 1, 1},          {"ln2b", C, 1, 1},
        {"fcw", 4 * C, C, 1},       {"fcb", 4 * C, 1, 1},
        {"fcprojw", C, 4 * C, 1},   {"fcprojb", C, 1, 1},
        {"lnfw", C, 1, 0},          {"lnfb", C, 1, 0},
    };
    memcpy(shapes, s, sizeof(s));
}

// The activations' and their gradients' shapes; attention's row width is
// NH*T (0 while T is 0).
static void act_shapes(const GPT2Config *config, int T, ActShape acts[NUM_ACT_TENSORS],
                       ActShape dacts[NUM_DACT_TENSORS]) {
    size_t C = (size_t)config->channels, Vp = (size_t)config->padded_vocab_size;
    const ActShape a[NUM_ACT_TENSORS] = {
        {"encoded", C, 0},      {"ln1", C, 1},          {"ln1_mean", 1, 1},
        {"ln1_rstd", 1, 1},     {"qkv", 3 * C, 1},      {"atty", C, 1},
        {"att", (size_t)config->num_heads * (size_t)T, 1}, {"attproj", C, 1},      {"residual2", C, 1},
        {"ln2", C, 1},          {"ln2_mean", 1, 1},     {"ln2_rstd", 1, 1},
        {"fch", 4 * C, 1},      {"fch_gelu", 4 * C, 1}, {"fcproj", C, 1},
        {"residual3", C, 1},    {"lnf", C, 0},          {"lnf_mean", 1, 0},
        {"lnf_rstd", 1, 0},     {"logits", Vp, 0},      {"probs", Vp, 0},
        {"losses", 1, 0},
    };
    memcpy(acts, a, sizeof(a));
    const ActShape d[NUM_DACT_TENSORS] = {
        {"encoded", C, 0},   {"ln1", C, 1},       {"qkv", 3 * C, 1},
        {"atty", C, 1},      {"residual2", C, 1}, {"ln2", C, 1},
        {"fch", 4 * C, 1},   {"fch_gelu", 4 * C, 1}, {"residual3", C, 1},
        {"lnf", C, 0},
    };
    memcpy(dacts, d, sizeof(d));
}

int gpt2_num_parameters(const GPT2Config *config, uint64_t *count, char *err, size_t err_len) {
    if (gpt2_config_check(config, err, err_len) != 0) return -1;
    ParamShape shapes[NUM_PARAM_TENSORS];
    param_shapes(config, shapes);
    int ok = 1;
    uint64_t n = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++)
        n = ck_add(n, ck_mul3(ck_u64(shapes[t].rows, &ok), ck_u64(shapes[t].cols, &ok),
                              shapes[t].per_layer ? (uint64_t)config->num_layers : 1, &ok), &ok);
    if (!ok) {
        snprintf(err, err_len, "the parameter count overflows 64 bits");
        return -1;
    }
    *count = n;
    return 0;
}

uint64_t gpt2_memory_limit(void) {
    uint64_t limit = GPT2_MAX_STATE_BYTES;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) {
        int ok = 1;
        uint64_t physical = ck_mul((uint64_t)pages, (uint64_t)page, &ok);
        if (ok && physical < limit) limit = physical;
    }
    return limit;
}

// alignment and rounding slack of one block (zeroed_floats): a huge page each
#define BLOCK_SLACK ((uint64_t)4 << 20)

int gpt2_state_bytes(const GPT2Config *config, int B, int T, uint64_t *bytes, char *err, size_t err_len) {
    uint64_t n;
    if (gpt2_num_parameters(config, &n, err, err_len) != 0) return -1;
    if (B < 1 || B > GPT2_MAX_BATCH) {
        snprintf(err, err_len, "B=%d is out of range [1, %d]", B, GPT2_MAX_BATCH);
        return -1;
    }
    if (T < 1 || T > config->max_seq_len) {
        snprintf(err, err_len, "T=%d is out of range [1, max_seq_len %d]", T, config->max_seq_len);
        return -1;
    }
    if ((long long)B * T > GPT2_MAX_ROWS) {
        snprintf(err, err_len, "B*T=%lld exceeds the limit %d", (long long)B * T, GPT2_MAX_ROWS);
        return -1;
    }
    ActShape acts[NUM_ACT_TENSORS], dacts[NUM_DACT_TENSORS];
    act_shapes(config, T, acts, dacts);
    int ok = 1;
    uint64_t rows = ck_mul((uint64_t)B, (uint64_t)T, &ok), L = (uint64_t)config->num_layers;
    uint64_t floats = ck_mul(n, 4, &ok); // parameters, gradients, two moments
    for (int t = 0; t < NUM_ACT_TENSORS; t++)
        floats = ck_add(floats, ck_mul3(rows, acts[t].width, acts[t].per_layer ? L : 1, &ok), &ok);
    for (int t = 0; t < NUM_DACT_TENSORS; t++)
        floats = ck_add(floats, ck_mul3(rows, dacts[t].width, dacts[t].per_layer ? L : 1, &ok), &ok);
    uint64_t total = ck_add(ck_mul(floats, sizeof(float), &ok), ck_mul(6, BLOCK_SLACK, &ok), &ok);
    total = ck_add(total, ck_mul3(2, rows, sizeof(int), &ok), &ok); // inputs, targets
    uint64_t limit = gpt2_memory_limit();
    if (!ok || total > limit) {
        if (ok)
            snprintf(err, err_len, "model state for B=%d T=%d needs %.1f GB, more than the limit of %.1f GB",
                     B, T, total / 1e9, limit / 1e9);
        else
            snprintf(err, err_len, "model state for B=%d T=%d overflows 64 bits", B, T);
        return -1;
    }
    if (bytes) *bytes = total;
    return 0;
}

int gpt2_describe(GPT2 *model, GPT2Config config) {
    memset(model, 0, sizeof(*model));
    char err[128];
    uint64_t n;
    if (gpt2_num_parameters(&config, &n, err, sizeof(err)) != 0 || n > SIZE_MAX) return -1;
    model->config = config;
    int L = config.num_layers;
    ParamShape shapes[NUM_PARAM_TENSORS];
    param_shapes(&config, shapes);
    model->num_parameters = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        model->param_shape[t] = shapes[t];
        model->param_sizes[t] = (size_t)shapes[t].rows * (size_t)shapes[t].cols * (size_t)(shapes[t].per_layer ? L : 1);
        model->num_parameters += model->param_sizes[t];
    }
    // the attention weights' row width depends on T; gpt2_allocate sets it
    act_shapes(&config, 0, model->act_shape, model->dact_shape);
    return 0;
}

static void point_parameters(const GPT2 *model, ParameterTensors *set, float *memory) {
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        set->tensor[t] = memory;
        memory += model->param_sizes[t];
    }
}

static size_t act_tensor_size(const GPT2 *model, const ActShape *shape) {
    return (size_t)model->B * model->T * shape->width * (shape->per_layer ? model->config.num_layers : 1);
}

// n floats, zeroed, starting on a 64-byte boundary; NULL when memory is short.
// calloc (rather than aligned_alloc and memset) keeps the kernel's lazily
// zeroed pages: nothing is written at start-up. *block receives what calloc
// returned, for free().
//
// Blocks of at least one huge page start on a 2 MB boundary and are marked
// for transparent huge pages (Debian's default is "madvise": only marked
// memory gets them). With 4 KB pages d12's 2.4 GB took 850,000 page faults,
// about 11 s of system time in the first step on the development VM; with
// huge pages about 4,000. Where THP is off madvise fails and the block keeps
// small pages; nothing else changes.
//
// Such a block is rounded up to whole huge pages, so that its last bytes get
// one too. On the development VM (a KVM guest) the 4 KB pages of a tail were
// 100 times slower to stream than huge pages: AdamW's last 64 rows of
// fcprojw L11 (the last 0.9 MB of parameters, gradients and moments) took
// 18-28 ms a step where every other 64 rows took 0.2 ms, in every variant.
float *zeroed_floats(size_t n, void **block) {
    const size_t huge = (size_t)2 << 20;
    size_t bytes = n * sizeof(float);
    size_t align = bytes >= huge ? huge : 64;
    if (align == huge) bytes = (bytes + huge - 1) / huge * huge;
    *block = calloc(bytes + align, 1);
    if (!*block) return NULL;
    uintptr_t address = ((uintptr_t)*block + align - 1) & ~(uintptr_t)(align - 1);
#if defined(MADV_HUGEPAGE)
    if (align == huge) madvise((void *)address, bytes, MADV_HUGEPAGE);
#endif
    return (float *)address;
}

int gpt2_allocate(GPT2 *model, int B, int T, char *err, size_t err_len) {
    if (gpt2_state_bytes(&model->config, B, T, NULL, err, err_len) != 0) return -1;
    model->B = B;
    model->T = T;
    // the attention weights' row width depends on T, so it is set here
    model->act_shape[ACT_ATT].width = (size_t)model->config.num_heads * T;
    size_t n = model->num_parameters;
    size_t acts_total = 0, dacts_total = 0;
    for (int t = 0; t < NUM_ACT_TENSORS; t++) acts_total += act_tensor_size(model, &model->act_shape[t]);
    for (int t = 0; t < NUM_DACT_TENSORS; t++) dacts_total += act_tensor_size(model, &model->dact_shape[t]);
    // Zeroed: gradients of never-written regions (padded vocab rows, wpe rows
    // beyond T) must read as zero, and moments start at zero. Cache-line
    // aligned: calloc's large blocks start 16 bytes into a page, so every
    // tensor slice straddled lines, and two threads writing neighbouring
    // heads' columns of one row shared a line (attention's backward pass ran
    // 1.8x slower per head at 2 threads).
#ifdef GPT2_SMPI
    // gpt2-mpi built for SMPI runs every rank in one process and computes nothing: the parameters'
    // and gradients' contents, which its messages carry, are never read, so the ranks share one
    // block of each (SimGrid's shared malloc maps one small file over it), which holds many ranks
    // of d12 in memory and spares SMPI copying the messages' bytes. The other blocks are never
    // touched, so never resident. SMPI's own free of a shared block unmaps nothing: none is kept.
    model->params_memory = SMPI_SHARED_MALLOC(n * sizeof(float));
    model->grads_memory = SMPI_SHARED_MALLOC(n * sizeof(float));
#else
    model->params_memory = zeroed_floats(n, &model->allocations[0]);
    model->grads_memory = zeroed_floats(n, &model->allocations[1]);
#endif
    model->m_memory = zeroed_floats(n, &model->allocations[2]);
    model->v_memory = zeroed_floats(n, &model->allocations[3]);
    model->acts_memory = zeroed_floats(acts_total, &model->allocations[4]);
    model->dacts_memory = zeroed_floats(dacts_total, &model->allocations[5]);
    model->inputs = calloc((size_t)B * T, sizeof(int));
    model->targets = calloc((size_t)B * T, sizeof(int));
    if (!model->params_memory || !model->grads_memory || !model->m_memory || !model->v_memory ||
        !model->acts_memory || !model->dacts_memory || !model->inputs || !model->targets) {
        snprintf(err, err_len, "out of memory allocating %.2f GB of model state",
                 (4.0 * n * 4 + 4.0 * (acts_total + dacts_total)) / 1e9);
        gpt2_free(model);
        return -1;
    }
    point_parameters(model, &model->params, model->params_memory);
    point_parameters(model, &model->grads, model->grads_memory);
    point_parameters(model, &model->m, model->m_memory);
    point_parameters(model, &model->v, model->v_memory);
    float *p = model->acts_memory;
    for (int t = 0; t < NUM_ACT_TENSORS; t++) {
        model->acts.tensor[t] = p;
        p += act_tensor_size(model, &model->act_shape[t]);
    }
    p = model->dacts_memory;
    for (int t = 0; t < NUM_DACT_TENSORS; t++) {
        model->dacts.tensor[t] = p;
        p += act_tensor_size(model, &model->dact_shape[t]);
    }
    return 0;
}

void gpt2_free(GPT2 *model) {
    for (size_t i = 0; i < sizeof(model->allocations) / sizeof(model->allocations[0]); i++) {
        free(model->allocations[i]);
        model->allocations[i] = NULL;
    }
    free(model->inputs);
    free(model->targets);
    model->params_memory = model->grads_memory = model->m_memory = model->v_memory = NULL;
    model->acts_memory = model->dacts_memory = NULL;
    model->inputs = model->targets = NULL;
}

float *param_slice(const GPT2 *model, const ParameterTensors *set, int t, int layer) {
    const ParamShape *s = &model->param_shape[t];
    size_t per_layer = (size_t)s->rows * s->cols;
    return set->tensor[t] + (s->per_layer ? (size_t)layer * per_layer : 0);
}

float *act_slice(const GPT2 *model, int t, int layer) {
    const ActShape *s = &model->act_shape[t];
    size_t per_layer = (size_t)model->B * model->T * s->width;
    return model->acts.tensor[t] + (s->per_layer ? (size_t)layer * per_layer : 0);
}

float *dact_slice(const GPT2 *model, int t, int layer) {
    const ActShape *s = &model->dact_shape[t];
    size_t per_layer = (size_t)model->B * model->T * s->width;
    return model->dacts.tensor[t] + (s->per_layer ? (size_t)layer * per_layer : 0);
}

// splitmix64: a small, well-mixed generator whose whole state is one integer
// the caller owns, so initialisation is reproducible on every platform.
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *state) { return ((splitmix64(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

static void fill_normal(float *x, size_t n, float std, uint64_t *state) {
    for (size_t i = 0; i < n; i += 2) {
        double u1 = uniform01(state), u2 = uniform01(state);
        double r = sqrt(-2.0 * log(u1));
        x[i] = (float)(std * r * cos(6.283185307179586 * u2));
        if (i + 1 < n) x[i + 1] = (float)(std * r * sin(6.283185307179586 * u2));
    }
}

void gpt2_init_random(GPT2 *model, uint64_t seed) {
    const GPT2Config *c = &model->config;
    uint64_t state = seed * 0x2545F4914F6CDD1Dull + 1;
    ParameterTensors *p = &model->params;
    float residual_std = 0.02f / sqrtf(2.0f * c->num_layers);
    memset(model->params_memory, 0, model->num_parameters * sizeof(float));
    fill_normal(p->wte, (size_t)c->vocab_size * c->channels, 0.02f, &state); // padded rows stay 0
    fill_normal(p->wpe, model->param_sizes[PARAM_WPE], 0.01f, &state);
    fill_normal(p->qkvw, model->param_sizes[PARAM_QKVW], 0.02f, &state);
    fill_normal(p->attprojw, model->param_sizes[PARAM_ATTPROJW], residual_std, &state);
    fill_normal(p->fcw, model->param_sizes[PARAM_FCW], 0.02f, &state);
    fill_normal(p->fcprojw, model->param_sizes[PARAM_FCPROJW], residual_std, &state);
    const int ones[] = {PARAM_LN1W, PARAM_LN2W, PARAM_LNFW};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < model->param_sizes[ones[k]]; i++) p->tensor[ones[k]][i] = 1.0f;
}
