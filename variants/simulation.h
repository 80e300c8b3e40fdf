// What differs in gpt2-mpi built for SimGrid's SMPI (-DGPT2_SMPI, `make smpi`), in one place.
// There the rank's node compute is not run: each step stands in for the forward and backward
// operations and for AdamW with simulated delays that the harness gives it (from the replay of
// the traced chunk times), and for each add of the reduce-scatter with its bytes executed at the
// simulated host's speed (the rank's memory bandwidth). The messages, their sizes and their order
// are the real build's. The ranks are threads of one process there, sharing its stdout.
//
// Everything else reads SIMULATED as an ordinary constant, so that both builds compile every line.
#ifndef SIMULATION_H
#define SIMULATION_H

#include <stdlib.h>

#ifdef GPT2_SMPI
#include <smpi/smpi.h>
enum { SIMULATED = 1 };
static inline void simulate_seconds(double seconds) { smpi_execute(seconds); }
// `bytes` of memory traffic at the simulated host's speed
static inline void simulate_bytes(double bytes) { smpi_execute_flops(bytes); }
// scratch that no rank reads back: shared among the ranks as the gradients are (core/model.c)
static inline void *scratch_malloc(size_t bytes) { return SMPI_SHARED_MALLOC(bytes); }
static inline void scratch_free(void *p) {
    if (p) SMPI_SHARED_FREE(p);
}
#else
enum { SIMULATED = 0 };
static inline void simulate_seconds(double seconds) { (void)seconds; }
static inline void simulate_bytes(double bytes) { (void)bytes; }
static inline void *scratch_malloc(size_t bytes) { return malloc(bytes); }
static inline void scratch_free(void *p) { free(p); }
#endif

#endif
