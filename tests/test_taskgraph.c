// The block lists the `tasks` executor hands to OpenMP (taskgraph_phase_depends)
// against the whole graph: within every phase they must order exactly the
// pairs of tasks the full lists order, while naming fewer blocks. Prints one
// line per failed check and "N passed, N failed" last; exits 1 on any failure.
//
// Build: `make unit-tests` (target build/tests/test_taskgraph-<compiler>);
// tests/test_units.py runs it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/model.h"
#include "../core/step.h"
#include "../core/taskgraph.h"

static int passed, failed;

static void expect(const char *what, int ok) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s\n", what);
    }
}

static Phase phase_of(const StepDescription *s, const TaskGraph *g, int task) { return s->ops[g->tasks[task].op].phase; }

// Edges of one iteration between tasks of the same phase, as (from, to) pairs
// sorted; returns their count, -1 out of memory.
static long same_phase_edges(const StepDescription *s, const TaskGraph *g, long **pairs) {
    long n = 0;
    *pairs = malloc((g->succ_first[g->n_tasks] + 1) * 2 * sizeof(long));
    if (!*pairs) return -1;
    for (int t = 0; t < g->n_tasks; t++)
        for (int e = g->succ_first[t]; e < g->succ_first[t + 1]; e++) {
            int u = g->succ[e];
            if (phase_of(s, g, t) != phase_of(s, g, u)) continue;
            (*pairs)[2 * n] = t;
            (*pairs)[2 * n + 1] = u;
            n++;
        }
    return n;
}

static int edge_order(const void *a, const void *b) {
    const long *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

static void check(const char *config_name, int B, int T, int batch_subsize, int token_chunk, int channel_chunk) {
    char what[128], err[256];
    snprintf(what, sizeof(what), "%s B=%d T=%d chunks (%d, %d, %d)", config_name, B, T, batch_subsize, token_chunk,
             channel_chunk);
    GPT2Config config;
    GPT2 model;
    StepDescription s;
    TaskGraph g;
    if (gpt2_named_config(config_name, &config) != 0 || gpt2_describe(&model, config) != 0 ||
        gpt2_allocate(&model, B, T, err, sizeof(err)) != 0) {
        printf("FAIL %s: cannot allocate the model\n", what);
        failed++;
        return;
    }
    AdamWSettings adamw = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
    if (step_describe(&s, &model, adamw, NULL, 1) != 0 ||
        taskgraph_for_executor(&g, &s, batch_subsize, token_chunk, channel_chunk, 1, err, sizeof(err)) != 0) {
        printf("FAIL %s: cannot build the graph: %s\n", what, err);
        failed++;
        gpt2_free(&model);
        return;
    }
    ChunkTask *tasks = NULL;
    int *ids = NULL;
    if (taskgraph_phase_depends(&g, &s, &tasks, &ids) != 0) {
        printf("FAIL %s: out of memory\n", what);
        failed++;
        exit(1);
    }

    // Each task keeps its operation, range and a subset of its blocks, written
    // blocks still written.
    long kept = 0;
    int subset = 1, same_task = 1, adamw_named = 0;
    for (int t = 0; t < g.n_tasks; t++) {
        same_task &= tasks[t].op == g.tasks[t].op && !memcmp(&tasks[t].range, &g.tasks[t].range, sizeof(Range));
        for (int k = 0; k < tasks[t].n_out; k++) {
            int found = 0;
            for (int j = 0; j < g.tasks[t].n_out; j++) found |= g.block_ids[g.tasks[t].out_first + j] == ids[tasks[t].out_first + k];
            subset &= found;
        }
        for (int k = 0; k < tasks[t].n_in; k++) {
            int found = 0;
            for (int j = 0; j < g.tasks[t].n_in; j++) found |= g.block_ids[g.tasks[t].in_first + j] == ids[tasks[t].in_first + k];
            subset &= found;
        }
        kept += tasks[t].n_in + tasks[t].n_out;
        if (s.ops[g.tasks[t].op].kind == OP_ADAMW) adamw_named += tasks[t].n_in + tasks[t].n_out;
    }
    char line[320];
    snprintf(line, sizeof(line), "%s: tasks keep their operation and range", what);
    expect(line, same_task);
    snprintf(line, sizeof(line), "%s: kept blocks are blocks of the task, reads as reads, writes as writes", what);
    expect(line, subset);
    snprintf(line, sizeof(line), "%s: fewer blocks named (%ld of %ld)", what, kept, g.n_block_ids);
    expect(line, kept < g.n_block_ids);
    // The update's chunks touch disjoint parameters, and read gradients the
    // backward pass finished before its wait: nothing to name.
    snprintf(line, sizeof(line), "%s: the update names no block (%d)", what, adamw_named);
    expect(line, adamw_named == 0);

    // The graph of the kept lists has the same edges within each phase.
    TaskGraph cut = g;
    cut.tasks = tasks;
    cut.block_ids = ids;
    cut.n_block_ids = kept;
    cut.succ_first = cut.succ = cut.n_pred = cut.next_succ_first = cut.next_succ = cut.n_next_pred = NULL;
    long *full_edges = NULL, *cut_edges = NULL;
    long n_full = -1, n_cut = -2;
    if (taskgraph_analyse(&cut) == 0) {
        n_full = same_phase_edges(&s, &g, &full_edges);
        n_cut = same_phase_edges(&s, &cut, &cut_edges);
    }
    if (n_full >= 0 && n_full == n_cut) {
        qsort(full_edges, n_full, 2 * sizeof(long), edge_order);
        qsort(cut_edges, n_cut, 2 * sizeof(long), edge_order);
    }
    snprintf(line, sizeof(line), "%s: the same %ld edges within phases (the kept lists give %ld)", what, n_full, n_cut);
    expect(line, n_full > 0 && n_full == n_cut && !memcmp(full_edges, cut_edges, n_full * 2 * sizeof(long)));
    free(full_edges);
    free(cut_edges);
    free(cut.succ_first); free(cut.succ); free(cut.n_pred);
    free(cut.next_succ_first); free(cut.next_succ); free(cut.n_next_pred);
    free(tasks);
    free(ids);
    taskgraph_free(&g);
    step_free(&s);
    gpt2_free(&model);
}

int main(void) {
    // chunkings: one sequence a chunk, sequences and tokens, one chunk per operation, narrow channels
    check("tiny", 4, 16, 1, 0, 0);
    check("tiny", 4, 16, 2, 8, 16);
    check("tiny", 3, 16, 4, 16, 64);
    check("tiny", 2, 8, 1, 3, 8);
    check("small", 4, 32, 1, 0, 0);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
