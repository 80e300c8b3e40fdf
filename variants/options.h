// The command line of every variant (main.c), parsed and checked up to the
// point where a run would start: the options on their own (options_parse),
// then against the model's shapes (options_check_model). Neither exits or
// prints: a refusal is one line in `err`, which main.c prints and turns into
// exit status 2, and tests/fuzz/fuzz_options.c checks on arbitrary argument
// vectors.
#ifndef OPTIONS_H
#define OPTIONS_H

#include <stddef.h>
#include <stdio.h>
#include "../core/model.h"
#include "executor.h"

typedef struct {
    const char *model_path, *config_name, *data_path, *verify_path, *trace_path, *save_path;
    const char *expect_losses_path;
    const char *graph_path; // --describe-graph: write the step's schedule (core/schedule.h) instead of training
    int B, T, steps;
    int B_given, T_given;
    float lr, weight_decay, tolerance;
    long long seed;
    int json;
    int describe;     // print the step's operations with FLOPs and bytes instead of training
    int list_configs; // print the embedded configurations' names instead of training
    int list_knobs;   // print the chunking knobs instead of training (options_list_knobs)
    int shuffle;      // llm.c's shuffled batch order (--data)
    int data_order;   // print each step's batch offset instead of training (--data)
    int check;        // --check: stop where the run would start, after every check
    ExecOptions exec; // with the distributed variants' --executor and --update
} Options;

// The documented limits of the numeric options (docs/variants.md, "Options").
#define OPTION_MAX_B CHUNK_MAX_SEQUENCES
#define OPTION_MAX_T CHUNK_MAX_TOKENS
#define OPTION_MAX_STEPS (1 << 24)
#define OPTION_MAX_THREADS 4096
#define OPTION_MAX_COMM_THREADS 64
#define OPTION_MAX_SEED (1ll << 62)

enum { OPTIONS_RUN = 0, OPTIONS_HELP = 1, OPTIONS_ERROR = -1 };

// Parses argv (argv[0] is the program). `distributed` admits --executor and
// --update. Returns OPTIONS_RUN with *o filled, OPTIONS_HELP for --help, or
// OPTIONS_ERROR with one line (no program name, no newline) in err. Uses
// getopt_long, restarted on every call; argv may be permuted.
int options_parse(int argc, char **argv, int distributed, Options *o, char *err, size_t err_len);

// The options against the model's configuration, for `ranks` processes
// sharing the batch: T within the model's context, at least one sequence per
// rank, the chunk sizes within B and T, and the model state of the largest
// share of the batch within the memory limit (gpt2_state_bytes; nothing is
// allocated). 0, or -1 with one line in err.
int options_check_model(const Options *o, const GPT2Config *config, int ranks, char *err, size_t err_len);

void options_usage(FILE *out, const char *program, int distributed);
// The chunking knobs (core/taskgraph.h, chunk_knobs), one a line: the name, the least and the largest
// value the option takes ("batch_subsize 1 1048576"), for the tests and the harness to compare.
void options_list_knobs(FILE *out);

#endif
