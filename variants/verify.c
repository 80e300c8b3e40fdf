// --verify and --expect-losses: see verify.h.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "verify.h"

double max_abs_diff(const float *a, const float *b, size_t n, size_t *where) {
    double worst = 0.0;
    *where = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > worst || isnan(d)) {
            worst = isnan(d) ? INFINITY : d;
            *where = i;
        }
    }
    return worst;
}

// A number as JSON writes it: a NaN or infinite one (a diverged run, a NaN difference) as null.
static const char *json_number(double v, const char *fmt, char *buf, size_t len) {
    if (isfinite(v)) snprintf(buf, len, fmt, v);
    else snprintf(buf, len, "null");
    return buf;
}

// One line per comparison: `label` names it in JSON, `text_label` (padded) in text.
static int report(int json, const char *label, const char *text_label, double diff, size_t at, float tol) {
    int ok = diff <= tol;
    char num[32];
    if (json)
        printf("{\"verify\": \"%s\", \"max_abs_diff\": %s, \"at\": %zu, \"ok\": %s}\n", label,
               json_number(diff, "%.6g", num, sizeof(num)), at, ok ? "true" : "false");
    else
        fprintf(stderr, "verify %s max |diff| %.3e at %zu %s\n", text_label, diff, at, ok ? "ok" : "FAIL");
    return !ok;
}

int verify_debug_state(const GPT2 *model, const DebugState *state, float loss, float tol, int json) {
    int failures = 0;
    int V = model->config.vocab_size, Vp = model->config.padded_vocab_size;
    size_t BT = (size_t)state->B * state->T, where = 0;

    // logits: the model's rows are padded to Vp, the state's are not
    double worst = 0.0;
    size_t worst_at = 0;
    for (size_t r = 0; r < BT; r++) {
        double d = max_abs_diff(model->acts.logits + r * Vp, state->logits + r * V, V, &where);
        if (d > worst) {
            worst = d;
            worst_at = r * V + where;
        }
    }
    failures += report(json, "logits", "logits    ", worst, worst_at, tol);

    double loss_diff = max_abs_diff(&loss, &state->loss, 1, &where);
    int loss_ok = loss_diff <= tol;
    char num[3][32];
    if (json)
        printf("{\"verify\": \"loss\", \"value\": %s, \"expected\": %s, \"max_abs_diff\": %s, \"ok\": %s}\n",
               json_number(loss, "%.9g", num[0], 32), json_number(state->loss, "%.9g", num[1], 32),
               json_number(loss_diff, "%.6g", num[2], 32), loss_ok ? "true" : "false");
    else
        fprintf(stderr, "verify %-10s %.7f expected %.7f |diff| %.3e %s\n", "loss", loss, state->loss, loss_diff,
                loss_ok ? "ok" : "FAIL");
    failures += !loss_ok;

    size_t offset = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        size_t n = model->param_sizes[t];
        double d = max_abs_diff(model->grads.tensor[t], state->grads + offset, n, &where);
        char label[64], text_label[64];
        snprintf(label, sizeof(label), "grad %s", model->param_shape[t].name);
        snprintf(text_label, sizeof(text_label), "grad %-8s", model->param_shape[t].name);
        failures += report(json, label, text_label, d, where, tol);
        offset += n;
    }
    return failures;
}

int verify_losses(const char *path, const float *losses, int steps, float tol, int json, Error *err) {
    // read through the readers' contract (fileio.h): a regular file only, one-line errors
    float *expected = malloc(((size_t)steps + 1) * sizeof(float));
    int n = 0;
    err->message[0] = '\0';
    if (!expected) {
        snprintf(err->message, sizeof(err->message), "%s: out of memory for expected losses", path);
        return -1;
    }
    if (expected_losses_read(path, expected, steps + 1, &n, err) != 0) {
        free(expected);
        return -1;
    }
    if (n < steps) {
        snprintf(err->message, sizeof(err->message), "%s: %d expected losses, fewer than the %d steps run", path, n,
                 steps);
        free(expected);
        return -1;
    }
    size_t at = 0;
    double worst = steps > 0 ? max_abs_diff(losses, expected, (size_t)steps, &at) : 0.0;
    free(expected);
    int ok = worst <= tol;
    char num[32];
    if (json)
        printf("{\"verify\": \"losses\", \"max_abs_diff\": %s, \"at\": %zu, \"ok\": %s}\n",
               json_number(worst, "%.6g", num, sizeof(num)), at, ok ? "true" : "false");
    else
        fprintf(stderr, "verify %-10s max |diff| %.3e at step %zu %s\n", "losses", worst, at, ok ? "ok" : "FAIL");
    return !ok;
}
