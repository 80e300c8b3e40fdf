// The process layer of a program that is one process (distributed.h): rank 0
// of 1, which trains on the whole batch and prints everything. Weak
// definitions: gpt2-mpi links its own over them (mpi_ranks.c, mpi.c), every
// other variant these.
#include <stdlib.h>
#include <string.h>
#include "distributed.h"

#define ONE_PROCESS __attribute__((weak))

ONE_PROCESS void dist_init(int *argc, char ***argv) { (void)argc, (void)argv; }
ONE_PROCESS int dist_front(void) { return 0; }
ONE_PROCESS FILE *dist_output(void) { return stdout; }
ONE_PROCESS int dist_simulated(void) { return 0; }
ONE_PROCESS void dist_finalize(void) {}
ONE_PROCESS int dist_rank(void) { return 0; }
ONE_PROCESS int dist_ranks(void) { return 1; }

ONE_PROCESS void dist_abort(int status) {
    fflush(stderr);
    exit(status);
}

// with no other rank to agree with, the verdict is this one's
ONE_PROCESS int dist_agree(int state, const char *failure, const DistSetting *settings, int n, char *line,
                           size_t line_len) {
    (void)settings, (void)n;
    snprintf(line, line_len, "%s", state == DIST_FAILED && failure ? failure : "");
    return state == DIST_FAILED ? 2 : state == DIST_LEAVING ? 0 : DIST_AGREED;
}

ONE_PROCESS void dist_share(int B, int rank, int ranks, int *b0, int *b1) {
    (void)rank, (void)ranks;
    *b0 = 0;
    *b1 = B;
}

ONE_PROCESS void dist_set_global_batch(int B) { (void)B; }
ONE_PROCESS int dist_packs_weights(const ExecOptions *options) {
    (void)options;
    return EXECUTOR_PACKS_WEIGHTS;
}
ONE_PROCESS int dist_check_executor(const ExecOptions *options, Error *err) {
    (void)options, (void)err;
    return 0;
}

ONE_PROCESS void dist_info_json(FILE *out, const ExecOptions *options, const Executor *ex, int b0, int b1,
                                void (*placement)(FILE *out, int threads), int threads) {
    (void)out, (void)options, (void)ex, (void)b0, (void)b1, (void)placement, (void)threads;
}
ONE_PROCESS void dist_step_json(FILE *out, const StepReport *report) { (void)out, (void)report; }

ONE_PROCESS void dist_settle(Executor *ex) { (void)ex; }
ONE_PROCESS void dist_gather_gradients(Executor *ex) { (void)ex; }

ONE_PROCESS float *dist_gather_sequences(const float *mine, size_t seq_floats, int B) {
    float *all = malloc((size_t)B * seq_floats * sizeof(float));
    if (all) memcpy(all, mine, (size_t)B * seq_floats * sizeof(float));
    return all;
}

ONE_PROCESS void dist_reset_moments(Executor *ex, GPT2 *model) {
    (void)ex;
    memset(model->m_memory, 0, model->num_parameters * sizeof(float));
    memset(model->v_memory, 0, model->num_parameters * sizeof(float));
}

ONE_PROCESS void dist_sync_trace_origin(Trace *trace) { (void)trace; }
ONE_PROCESS void dist_gather_trace(Trace *trace, int threads_per_rank) { (void)trace, (void)threads_per_rank; }
