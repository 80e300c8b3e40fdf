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

static void write_ints(FILE *out, const int *first, const int *items, int task) {
    fputc('[', out);
    for (int k = first[task]; k < first[task + 1]; k++) fprintf(out, "%s%d", k > first[task] ? "," : "", items[k]);
    fputc(']', out);
}

static void write_task(FILE *out, const StepDescription *s, int id, int op_index, Range r, int thread) {
    const Op *op = &s->ops[op_index];
    Traffic t = chunk_traffic(s, op, r);
    fprintf(out,
            "{\"id\": %d, \"op\": %d, \"phase\": \"%s\", \"b0\": %d, \"b1\": %d, \"x0\": %d, \"x1\": %d, "
            "\"col0\": %d, \"col1\": %d, \"thread\": %d, \"flops\": %lld, \"bytes\": %lld",
            id, op_index, phase_name(op->phase), r.b0, r.b1, r.x0, r.x1, r.col0, r.col1, thread,
            (long long)t.flops, (long long)traffic_bytes(t));
}

int schedule_write_json(const Schedule *sched, const StepDescription *s, const char *variant, FILE *out) {
    const TaskGraph *g = sched->graph;
    int dataflow = sched->kind == SCHEDULE_DATAFLOW;
    fprintf(out,
            "{\"format\": \"gpt2-perfstudy-graph\", \"version\": 1, \"variant\": \"%s\", \"schedule\": \"%s\", "
            "\"threads\": %d, \"barrier_per_phase\": %s, \"barrier_per_op\": %s, \"B\": %d, \"T\": %d",
            variant, dataflow ? "dataflow" : "static", sched->threads,
            !dataflow || sched->barrier_per_phase ? "true" : "false", dataflow ? "false" : "true", s->B, s->T);
    if (dataflow)
        fprintf(out,
                ", \"chunking\": {\"batch_subsize\": %d, \"token_chunk\": %d, \"channel_chunk\": %d, "
                "\"tile_columns\": %d, \"tile_in_channels\": %d, \"tile_sequences\": %d, \"tiles_per_product\": %d}",
                g->chunking.batch_subsize, g->chunking.token_chunk, g->chunking.channel_chunk,
                g->chunking.tile_columns, g->chunking.tile_in_channels, g->chunking.tile_sequences,
                g->chunking.tiles_per_product);
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
    fprintf(out, "],\n\"chunks\": [\n");
    int n = dataflow ? g->n_tasks : sched->n_chunks;
    for (int i = 0; i < n; i++) {
        if (dataflow) {
            write_task(out, s, i, g->tasks[i].op, g->tasks[i].range, -1);
            fprintf(out, ", \"succ\": ");
            write_ints(out, g->succ_first, g->succ, i);
            fprintf(out, ", \"next_succ\": ");
            write_ints(out, g->next_succ_first, g->next_succ, i);
        } else {
            const ScheduledChunk *c = &sched->chunks[i];
            write_task(out, s, i, c->op, c->range, c->thread);
        }
        fprintf(out, "}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(out, "]}\n");
    return ferror(out) ? -1 : 0;
}
