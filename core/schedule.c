#include <stdlib.h>
#include <string.h>
#include "schedule.h"
#include "traffic.h"

int schedule_add(Schedule *s, int op, Range range, int thread) {
    if (s->n_chunks == s->cap_chunks) {
        int cap = s->cap_chunks ? 2 * s->cap_chunks : 64;
        ScheduledChunk *grown = realloc(s->chunks, (size_t)cap * sizeof(ScheduledChunk));
        if (!grown) return -1;
        s->chunks = grown;
        s->cap_chunks = cap;
    }
    s->chunks[s->n_chunks++] = (ScheduledChunk){op, range, thread};
    return 0;
}

void schedule_free(Schedule *s) {
    free(s->chunks);
    s->chunks = NULL;
    s->n_chunks = s->cap_chunks = 0;
}

// A variant without its own executor_schedule links this one (a weak symbol).
__attribute__((weak)) int executor_schedule(struct Executor *ex, Schedule *out, char *err, size_t err_len) {
    (void)ex;
    memset(out, 0, sizeof(*out));
    snprintf(err, err_len, "this variant does not describe its schedule (executor_schedule, core/schedule.h)");
    return -1;
}

// FLOPs and compulsory bytes of a chunk. A chunk cut along a product's output
// columns (forkjoin, the task variants' tiles) gets its share of the whole
// rows' figures, proportional to its columns. A weight gradient's tile of input
// channels is op_traffic's own range: passing it on counts only those channels.
static Traffic chunk_traffic(const StepDescription *s, const Op *op, Range r) {
    if (op->cut_columns == 0) return op_traffic(s, op, r);
    Range rows = r;
    rows.col0 = rows.col1 = 0;
    Traffic t = op_traffic(s, op, rows);
    if (op->cut_columns > 0 && r.col1 > 0 && r.col1 - r.col0 < op->cut_columns) {
        double share = (double)(r.col1 - r.col0) / op->cut_columns;
        t.flops = (int64_t)(t.flops * share + 0.5);
        t.bytes_read = (int64_t)(t.bytes_read * share + 0.5);
        t.bytes_written = (int64_t)(t.bytes_written * share + 0.5);
    }
    return t;
}

// A JSON list of integers: [v0,v1,...].
static void write_ints(FILE *out, const int64_t *values, long n) {
    fputc('[', out);
    for (long i = 0; i < n; i++) fprintf(out, "%s%lld", i ? "," : "", (long long)values[i]);
    fputc(']', out);
}

// Successor lists (CSR first/items) as runs of consecutive task ids: per task
// its number of runs, then each run's first id and length. A product's tiles
// all precede every row chunk of the next operation (P x 2P edges, about a
// million for d12 at 112 threads), and those are consecutive ids: the runs are
// some 20 times fewer than the edges, and reading them is what --best waits on.
static int write_runs(FILE *out, const char *name, const int *first, const int *items, int n) {
    int64_t *runs = calloc((size_t)n, sizeof(int64_t));
    int64_t *starts = malloc(((size_t)first[n] + 1) * sizeof(int64_t));
    int64_t *lengths = malloc(((size_t)first[n] + 1) * sizeof(int64_t));
    if (!runs || !starts || !lengths) {
        free(runs), free(starts), free(lengths);
        return -1;
    }
    long n_runs = 0;
    for (int t = 0; t < n; t++)
        for (int k = first[t]; k < first[t + 1]; k++) {
            if (k > first[t] && items[k] == items[k - 1] + 1) {
                lengths[n_runs - 1]++;
                continue;
            }
            starts[n_runs] = items[k];
            lengths[n_runs++] = 1;
            runs[t]++;
        }
    fprintf(out, ",\n\"%s\": {\"runs\": ", name);
    write_ints(out, runs, n);
    fprintf(out, ",\n \"first\": ");
    write_ints(out, starts, n_runs);
    fprintf(out, ",\n \"length\": ");
    write_ints(out, lengths, n_runs);
    fputc('}', out);
    free(runs), free(starts), free(lengths);
    return 0;
}

enum { COL_OP, COL_B0, COL_B1, COL_X0, COL_X1, COL_COL0, COL_COL1, COL_THREAD, COL_FLOPS, COL_BYTES, NUM_COLUMNS };
static const char *const column_names[NUM_COLUMNS] = {"op",   "b0",     "b1",    "x0",   "x1",
                                                      "col0", "col1", "thread", "flops", "bytes"};

int schedule_write_json(const Schedule *sched, const StepDescription *s, const char *variant, FILE *out) {
    const TaskGraph *g = sched->graph;
    int dataflow = sched->kind == SCHEDULE_DATAFLOW;
    fprintf(out,
            "{\"format\": \"gpt2-perfstudy-graph\", \"version\": 2, \"variant\": \"%s\", \"schedule\": \"%s\", "
            "\"threads\": %d, \"barrier_per_phase\": %s, \"barrier_per_op\": %s, \"B\": %d, \"T\": %d",
            variant, dataflow ? "dataflow" : "static", sched->threads,
            !dataflow || sched->barrier_per_phase ? "true" : "false", dataflow ? "false" : "true", s->B, s->T);
    if (dataflow) {
        fprintf(out, ", \"chunking\": {");
        chunking_write_json(out, &g->chunking);
        fprintf(out, "}");
    }
    fprintf(out, ",\n\"ops\": [\n");
    for (int i = 0; i < s->n_ops; i++) {
        const Op *op = &s->ops[i];
        Traffic t = op_traffic_full(s, op);
        fprintf(out,
                "{\"op\": %d, \"kernel\": \"%s\", \"label\": \"%s\", \"layer\": %d, \"phase\": \"%s\", "
                "\"split\": \"%s\", \"cut_columns\": %d, \"flops\": %lld, \"bytes\": %lld}%s\n",
                i, op_kind_name(op->kind), op->label, op->layer, phase_name(op->phase), split_name(op->split),
                op->cut_columns, (long long)t.flops, (long long)traffic_bytes(t), i + 1 < s->n_ops ? "," : "");
    }
    // the chunks as columns, task i at index i of each
    int n = dataflow ? g->n_tasks : sched->n_chunks;
    int64_t *columns = malloc((size_t)NUM_COLUMNS * (size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (!columns) return -1;
    for (int i = 0; i < n; i++) {
        int op_index = dataflow ? g->tasks[i].op : sched->chunks[i].op;
        Range r = dataflow ? g->tasks[i].range : sched->chunks[i].range;
        Traffic t = chunk_traffic(s, &s->ops[op_index], r);
        int64_t row[NUM_COLUMNS] = {op_index, r.b0,  r.b1, r.x0, r.x1, r.col0, r.col1,
                                    dataflow ? -1 : sched->chunks[i].thread, t.flops, traffic_bytes(t)};
        for (int c = 0; c < NUM_COLUMNS; c++) columns[(size_t)c * n + i] = row[c];
    }
    fprintf(out, "],\n\"chunks\": {\"count\": %d", n);
    for (int c = 0; c < NUM_COLUMNS; c++) {
        fprintf(out, ",\n\"%s\": ", column_names[c]);
        write_ints(out, columns + (size_t)c * n, n);
    }
    free(columns);
    if (dataflow && (write_runs(out, "succ", g->succ_first, g->succ, n) != 0 ||
                     write_runs(out, "next_succ", g->next_succ_first, g->next_succ, n) != 0))
        return -1;
    fprintf(out, "}}\n");
    return ferror(out) ? -1 : 0;
}
