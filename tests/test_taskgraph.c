// The task graph against the data its tasks touch, for chunkings with and
// without tiles: every two tasks whose regions overlap (one writing) are
// ordered by a path, within an iteration and from one iteration into the
// next, and every edge joins two such tasks (the graph's blocks add no
// dependency of their own: a row chunk waits for the tiles of its own rows
// only). The regions are the exact boxes of access_boxes, compared element by
// element, not the blocks the graph is built on. Then the block lists the
// `tasks` executor hands to OpenMP (taskgraph_phase_depends) against the whole
// graph: within every phase they must order exactly the pairs of tasks the
// full lists order, while naming fewer blocks. Prints one line per failed
// check and "N passed, N failed" last; exits 1 on any failure.
//
// Build: `make unit-tests` (target build/tests/test_taskgraph-<compiler>);
// tests/test_units.py runs it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/gemm.h"
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

// One region a task touches: a box of a buffer, read or written.
typedef struct {
    int task, buffer, writes;
    Box box;
} Touch;

static int boxes_overlap(const Box *a, const Box *b) {
    for (int d = 0; d < 3; d++)
        if (a->hi[d] <= b->lo[d] || b->hi[d] <= a->lo[d]) return 0;
    return 1;
}

static int touch_order(const void *a, const void *b) {
    const Touch *x = a, *y = b;
    return x->buffer != y->buffer ? x->buffer - y->buffer : x->task - y->task;
}

// Tasks u < v (v in [n, 2n): the next iteration's v - n) of the doubled
// sequence that touch overlapping regions, one of them writing, are joined by
// a path of the graph; every edge of one iteration joins such tasks. Returns
// the count of violations, printing the first few.
static long check_conflicts(const char *what, const StepDescription *s, const TaskGraph *g) {
    int n = g->n_tasks;
    long n_touch = 0, cap = 1024;
    Touch *touch = malloc(cap * sizeof(Touch));
    for (int t = 0; t < n && touch; t++) {
        const Op *op = &s->ops[g->tasks[t].op];
        for (int a = 0; a < op->n_access; a++) {
            Box boxes[MAX_BOXES];
            int nbox = access_boxes(s, &op->access[a], g->tasks[t].range, boxes);
            for (int k = 0; k < nbox; k++) {
                if (n_touch == cap && !(touch = realloc(touch, (cap *= 2) * sizeof(Touch)))) break;
                touch[n_touch++] = (Touch){t, op->access[a].buffer, op->access[a].writes, boxes[k]};
            }
        }
    }
    // reachability over two iterations, tasks in sequence order: row u holds the tasks u reaches
    size_t words = (2 * (size_t)n + 63) / 64;
    unsigned long long *reach = calloc(2 * (size_t)n * words, sizeof(unsigned long long));
    unsigned char *conflict = calloc((size_t)n * n, 1); // conflict[u * n + v]: u and v (any order) overlap
    if (!touch || !reach || !conflict) {
        printf("FAIL %s: out of memory\n", what);
        exit(1);
    }
    qsort(touch, n_touch, sizeof(Touch), touch_order);
    for (long i = 0; i < n_touch; i++)
        for (long j = i + 1; j < n_touch && touch[j].buffer == touch[i].buffer; j++)
            if ((touch[i].writes || touch[j].writes) && touch[i].task != touch[j].task &&
                boxes_overlap(&touch[i].box, &touch[j].box)) {
                conflict[(size_t)touch[i].task * n + touch[j].task] = 1;
                conflict[(size_t)touch[j].task * n + touch[i].task] = 1;
            }
    for (int u = 2 * n - 1; u >= 0; u--) {
        unsigned long long *row = reach + (size_t)u * words;
        int t = u % n;
        for (int e = g->succ_first[t]; e < g->succ_first[t + 1]; e++) {
            int v = g->succ[e] + (u >= n ? n : 0);
            if (v <= u) return printf("FAIL %s: edge %d -> %d goes backwards\n", what, t, g->succ[e]), 1;
            row[v / 64] |= 1ull << (v % 64);
            for (size_t w = 0; w < words; w++) row[w] |= reach[(size_t)v * words + w];
        }
        if (u < n)
            for (int e = g->next_succ_first[t]; e < g->next_succ_first[t + 1]; e++) {
                int v = g->next_succ[e] + n;
                row[v / 64] |= 1ull << (v % 64);
                for (size_t w = 0; w < words; w++) row[w] |= reach[(size_t)v * words + w];
            }
    }
    long missing = 0, needless = 0;
    for (int u = 0; u < n; u++)
        for (int v = 0; v < 2 * n; v++) {
            if (v <= u || !conflict[(size_t)u * n + v % n]) continue;
            if (!(reach[(size_t)u * words + v / 64] >> (v % 64) & 1) && missing++ < 5)
                printf("  %s: %s [%d] and %s [%d]%s overlap but are not ordered\n", what,
                       s->ops[g->tasks[u].op].label, u, s->ops[g->tasks[v % n].op].label, v % n,
                       v >= n ? " (next iteration)" : "");
        }
    for (int t = 0; t < n; t++)
        for (int e = g->succ_first[t]; e < g->succ_first[t + 1]; e++)
            if (!conflict[(size_t)t * n + g->succ[e]] && needless++ < 5)
                printf("  %s: edge %s [%d] -> %s [%d] orders tasks that share no data\n", what,
                       s->ops[g->tasks[t].op].label, t, s->ops[g->tasks[g->succ[e]].op].label, g->succ[e]);
    char line[320];
    snprintf(line, sizeof(line), "%s: every two tasks that share data are ordered (%ld are not)", what, missing);
    expect(line, missing == 0);
    snprintf(line, sizeof(line), "%s: every edge joins tasks that share data (%ld do not)", what, needless);
    expect(line, needless == 0);
    free(touch);
    free(reach);
    free(conflict);
    return missing + needless;
}

// The tiles of the blocks' products: how many tasks cut columns, and whether
// a task of the operation after a product waits for tiles of other rows.
static void check_tiles(const char *what, const StepDescription *s, const TaskGraph *g) {
    int tiled = g->chunking.tile_columns < chunking_widest_product(s, 1);
    int tiled_in = g->chunking.tile_in_channels < chunking_widest_product(s, 0);
    int tiles = 0, wgrad_tiles = 0, other_rows = 0;
    for (int t = 0; t < g->n_tasks; t++) {
        const ChunkTask *task = &g->tasks[t];
        const Op *op = &s->ops[task->op];
        if (task->range.col1 > 0) {
            if (op->kind == OP_MATMUL_BWD_WEIGHT) wgrad_tiles++;
            else tiles++;
        }
        // a forward tile's successors of the next row operation (GELU, attention, the residual)
        if (op->kind != OP_MATMUL_FWD || op->split != SPLIT_ROWS) continue;
        for (int e = g->succ_first[t]; e < g->succ_first[t + 1]; e++) {
            const ChunkTask *next = &g->tasks[g->succ[e]];
            const Op *next_op = &s->ops[next->op];
            if (next_op->split != SPLIT_ROWS || next_op->kind == OP_MATMUL_FWD || next_op->cyclic) continue;
            // rows shared with the tile's (the same rows, or some of them where the products' row
            // chunks are tile_sequences sequences of every token and the row chunks are cut otherwise)
            if (next->range.b1 <= task->range.b0 || next->range.b0 >= task->range.b1 ||
                next->range.x1 <= task->range.x0 || next->range.x0 >= task->range.x1)
                other_rows++;
        }
    }
    char line[320];
    snprintf(line, sizeof(line), "%s: %d product tiles and %d weight-gradient tiles", what, tiles, wgrad_tiles);
    expect(line, (tiles > 0) == tiled && (wgrad_tiles > 0) == tiled_in);
    snprintf(line, sizeof(line), "%s: the row operation after a product waits for tiles of its own rows only (%d)",
             what, other_rows);
    expect(line, other_rows == 0);
}

static void check_with(const char *config_name, int B, int T, int threads, int batch_subsize, int token_chunk,
                       int channel_chunk, int tile_columns, int tile_in_channels, int tile_sequences) {
    char what[160], err[256];
    snprintf(what, sizeof(what), "%s B=%d T=%d P=%d chunks (%d, %d, %d) tiles (%d, %d, %d)", config_name, B, T,
             threads, batch_subsize, token_chunk, channel_chunk, tile_columns, tile_in_channels, tile_sequences);
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
        taskgraph_for_executor(&g, &s, &(Chunking){.batch_subsize = batch_subsize, .token_chunk = token_chunk,
                                                   .channel_chunk = channel_chunk, .tile_columns = tile_columns,
                                                   .tile_in_channels = tile_in_channels,
                                                   .tile_sequences = tile_sequences},
                               threads, 1, err, sizeof(err)) != 0) {
        printf("FAIL %s: cannot build the graph: %s\n", what, err);
        failed++;
        gpt2_free(&model);
        return;
    }
    check_conflicts(what, &s, &g);
    check_tiles(what, &s, &g);

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

// The automatic chunking (taskgraph.c, "Granularity for the machine") for
static void check(const char *config_name, int B, int T, int threads, int batch_subsize, int token_chunk,
                  int channel_chunk, int tile_columns, int tile_in_channels) {
    check_with(config_name, B, T, threads, batch_subsize, token_chunk, channel_chunk, tile_columns, tile_in_channels, 0);
}

// P threads, with the knobs of `given` fixed: what it must hold, and for d12
// at 2 threads what it picks. Prints the choice (docs/variants.md quotes it).
static void check_auto(const char *config_name, int B, int T, int threads, Chunking given) {
    char what[160], err[256];
    snprintf(what, sizeof(what), "auto %s B=%d T=%d P=%d given (%d, %d, %d, %d, %d)", config_name, B, T, threads,
             given.batch_subsize, given.token_chunk, given.tile_columns, given.tile_in_channels, given.tile_sequences);
    GPT2Config config;
    GPT2 model;
    StepDescription s;
    AdamWSettings adamw = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
    if (gpt2_named_config(config_name, &config) != 0 || gpt2_describe(&model, config) != 0 ||
        gpt2_allocate(&model, B, T, err, sizeof(err)) != 0 || step_describe(&s, &model, adamw, NULL, 1) != 0) {
        printf("FAIL %s: cannot describe the step\n", what);
        failed++;
        return;
    }
    Chunking c = given;
    int ok = chunking_resolve(&c, &s, threads, err, sizeof(err)) == 0;
    int C = config.channels, panel = matmul_panel_columns() > 16 ? matmul_panel_columns() : 16;
    int min_cols = CHUNK_MIN_TILE_PANELS * panel;
    int widest = chunking_widest_product(&s, 1), widest_in = chunking_widest_product(&s, 0);
    printf("%s: batch subsize %d, token chunk %d, tiles of %d columns, %d input channels, %d sequences\n", what,
           c.batch_subsize, c.token_chunk, c.tile_columns, c.tile_in_channels, c.tile_sequences);
    char line[320];
    int mask = (given.batch_subsize ? 0 : CHOSEN_BATCH_SUBSIZE) | (given.token_chunk ? 0 : CHOSEN_TOKEN_CHUNK) |
               (given.tile_columns ? 0 : CHOSEN_TILE_COLUMNS) | (given.tile_in_channels ? 0 : CHOSEN_TILE_IN_CHANNELS) |
               (given.tile_sequences ? 0 : CHOSEN_TILE_SEQUENCES);
    snprintf(line, sizeof(line), "%s: resolves, says what it chose, keeps what was given", what);
    expect(line, ok && c.chosen == mask && (!given.batch_subsize || c.batch_subsize == given.batch_subsize) &&
                     (!given.token_chunk || c.token_chunk == given.token_chunk) &&
                     (!given.tile_columns || c.tile_columns == given.tile_columns) &&
                     (!given.tile_in_channels || c.tile_in_channels == given.tile_in_channels) &&
                     (!given.tile_sequences || c.tile_sequences == given.tile_sequences));
    int narrow_tile = c.tile_columns < C ? c.tile_columns : C;
    long row_chunks = (long)((B + c.batch_subsize - 1) / c.batch_subsize) * ((T + c.token_chunk - 1) / c.token_chunk);
    long product_rows = c.tile_sequences > 0 ? (B + c.tile_sequences - 1) / c.tile_sequences : row_chunks;
    long tiles = product_rows * ((C + narrow_tile - 1) / narrow_tile);
    if (threads == 1) {
        snprintf(line, sizeof(line), "%s: one chunk, whole products at 1 thread", what);
        expect(line, (given.batch_subsize || c.batch_subsize == B) && (given.token_chunk || c.token_chunk == T) &&
                         (given.tile_columns || c.tile_columns == widest) &&
                         (given.tile_in_channels || c.tile_in_channels == widest_in));
    } else if (chunking_product_rows_whole(&c, B, T)) {
        // the products' rows whole: where the batch has no more rows than the narrowest product has
        // columns (or they were given whole), and then every product in one tile per thread in
        // units of 16 columns, a weight gradient's input channels whole (C), the other row
        // operations in CHUNK_WHOLE_ROW_TILES_PER_THREAD chunks per thread or as many as the token
        // floor allows
        int given_whole = given.tile_sequences ? given.tile_sequences >= B
                                               : given.batch_subsize >= B && given.token_chunk >= T;
        snprintf(line, sizeof(line), "%s: rows whole only where B x T <= C or given whole", what);
        expect(line, (long)B * T <= C || given_whole);
        int unit_tile = ((C + threads - 1) / threads + 15) / 16 * 16;
        snprintf(line, sizeof(line), "%s: rows whole: one tile per thread (the narrowest's %d columns), input "
                 "channels whole", what, unit_tile < C ? unit_tile : C);
        expect(line, (given.tile_columns || (c.tiles_per_product == threads && narrow_tile == (unit_tile < C ? unit_tile : C))) &&
                         (given.tile_in_channels || c.tile_in_channels == C));
        snprintf(line, sizeof(line), "%s: rows whole: %ld row chunks of the other operations (%d per thread, or at "
                 "the floor of %d tokens)", what, row_chunks, CHUNK_WHOLE_ROW_TILES_PER_THREAD, CHUNK_MIN_ROW_CHUNK_TOKENS);
        expect(line, row_chunks >= (long)CHUNK_WHOLE_ROW_TILES_PER_THREAD * threads || given.batch_subsize ||
                         given.token_chunk ||
                         (c.batch_subsize == 1 && (c.token_chunk + 1) / 2 < CHUNK_MIN_ROW_CHUNK_TOKENS));
        expect(line, given.token_chunk || c.token_chunk >= CHUNK_MIN_ROW_CHUNK_TOKENS || c.token_chunk == T);
    } else {
        snprintf(line, sizeof(line), "%s: rows cut only where B x T > C", what);
        expect(line, (long)B * T > C || (given.batch_subsize && given.batch_subsize < B) ||
                         (given.token_chunk && given.token_chunk < T) ||
                         (given.tile_sequences && given.tile_sequences < B));
        // floors: rows, and columns in whole panels of at least CHUNK_MIN_TILE_PANELS (or whole)
        int rows_floor = CHUNK_MIN_TILE_ROWS < B * T ? CHUNK_MIN_TILE_ROWS : B * T;
        snprintf(line, sizeof(line), "%s: tiles above their floors (%d rows, %d columns)", what, rows_floor, min_cols);
        expect(line, (given.batch_subsize || given.token_chunk || c.batch_subsize * c.token_chunk >= rows_floor) &&
                         (given.tile_columns || c.tile_columns >= widest ||
                          (c.tile_columns >= min_cols && c.tile_columns % panel == 0)) &&
                         (given.tile_in_channels || c.tile_in_channels >= widest_in ||
                          (c.tile_in_channels >= min_cols && c.tile_in_channels % panel == 0)));
        // enough tiles of the narrowest product, or no cut left: rows at their floor, columns too
        int rows_left = !given.tile_sequences && ((!given.batch_subsize && c.batch_subsize > 1 &&
                         (c.batch_subsize + 1) / 2 * c.token_chunk >= rows_floor) ||
                        (!given.token_chunk && (c.token_chunk + 1) / 2 >= CHUNK_MIN_TILE_ROWS &&
                         c.batch_subsize * ((c.token_chunk + 1) / 2) >= rows_floor));
        int cols_left = 0; // a narrower cut of C into equal parts in whole panels that stays above the floor
        for (int n = 1; n <= C && !given.tile_columns; n++) {
            int w = ((C + n - 1) / n + panel - 1) / panel * panel;
            if (w < narrow_tile) {
                cols_left = w >= min_cols;
                break;
            }
        }
        snprintf(line, sizeof(line), "%s: %ld tiles of the narrowest product (target %d)", what, tiles,
                 CHUNK_TILES_PER_THREAD * threads);
        expect(line, tiles >= (long)CHUNK_TILES_PER_THREAD * threads || (!rows_left && !cols_left));
    }
    if (!strcmp(config_name, "d12") && B == 4 && T == 64 && threads == 2 && !given.batch_subsize &&
        !given.token_chunk && !given.tile_columns && !given.tile_in_channels && !given.tile_sequences) {
        snprintf(line, sizeof(line), "%s: d12 at 2 threads: the products' rows whole (4 sequences), tiles of 384 "
                 "and 768, the other row operations by sequence", what);
        expect(line, c.batch_subsize == 1 && c.token_chunk == 64 && c.tile_columns == 384 && c.tile_in_channels == 768 &&
                         c.tile_sequences == 4);
    }
    if (!strcmp(config_name, "d12") && B == 4 && T == 64 && threads == 16 && !given.batch_subsize &&
        !given.token_chunk && !given.tile_columns && !given.tile_in_channels && !given.tile_sequences) {
        snprintf(line, sizeof(line), "%s: d12 at 16 threads: the products' rows whole, 16 tiles of 48 columns, the "
                 "other row operations in 32 chunks of 8 tokens", what);
        expect(line, c.tile_sequences == 4 && c.tiles_per_product == 16 && c.tile_columns == 48 &&
                         c.batch_subsize == 1 && c.token_chunk == 8);
    }
    step_free(&s);
    gpt2_free(&model);
}

// Products split by output columns (weight gradients, the language-model head's two): equal chunks in a
// multiple of the threads wherever whole blocks allow one, fewer and wider rather than more; a chunk
// size that is given is kept.
static void check_product_columns(void) {
    static const int extents[] = {768, 2304, 3072, 50304};
    static const int thread_counts[] = {2, 3, 4, 8, 16, 112};
    char line[200], err[256];
    GPT2Config config;
    GPT2 model;
    StepDescription s;
    AdamWSettings adamw = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
    if (gpt2_named_config("d12", &config) != 0 || gpt2_describe(&model, config) != 0 ||
        gpt2_allocate(&model, 4, 64, err, sizeof(err)) != 0 || step_describe(&s, &model, adamw, NULL, 1) != 0) {
        printf("FAIL product columns: cannot describe the step\n");
        failed++;
        return;
    }
    for (size_t t = 0; t < sizeof thread_counts / sizeof thread_counts[0]; t++) {
        int P = thread_counts[t];
        Chunking c = {0};
        if (chunking_resolve(&c, &s, P, err, sizeof(err)) != 0) {
            printf("FAIL product columns P=%d: %s\n", P, err);
            failed++;
            continue;
        }
        for (size_t e = 0; e < sizeof extents / sizeof extents[0]; e++) {
            int extent = extents[e], width = chunking_product_columns(&c, extent);
            int n = (extent + width - 1) / width, block = chunking_channels(&c, extent);
            int even = n % P == 0 && extent % width == 0, possible = 0;
            for (int count = n / P * P; count >= P && !possible; count -= P)
                possible = extent % count == 0 && extent / count % block == 0;
            snprintf(line, sizeof(line), "product columns P=%d extent %d: %d chunks of %d (blocks of %d)", P, extent,
                     n, width, block);
            expect(line, width > 0 && width % block == 0 && (n <= P || even || !possible));
        }
    }
    Chunking two = {0}, given = {.channel_chunk = 64};
    chunking_resolve(&two, &s, 2, err, sizeof(err));
    chunking_resolve(&given, &s, 2, err, sizeof(err));
    expect("product columns at 2 threads: 768 in 2 of 384, qkv's 2304 in 6 of 384, 3072 in 8 of 384",
           chunking_product_columns(&two, 768) == 384 && chunking_product_columns(&two, 2304) == 384 &&
               chunking_product_columns(&two, 3072) == 384);
    expect("product columns with a channel chunk given: 768 in 3 of 256, as given",
           chunking_product_columns(&given, 768) == 256);
    step_free(&s);
    gpt2_free(&model);
}

// Where the automatic rule keeps the products' rows whole (d12 at B=4, T=64, every P >= 2), every
// row-split product, however wide, is cut into one tile per thread in 16-column units, as fork-join
// cuts it; the dependencies stay complete (check_conflicts).
static void check_tiles_per_product(int threads) {
    char what[96], line[320], err[256];
    snprintf(what, sizeof(what), "auto d12 B=4 T=64 P=%d", threads);
    GPT2Config config;
    GPT2 model;
    StepDescription s;
    TaskGraph g;
    AdamWSettings adamw = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
    if (gpt2_named_config("d12", &config) != 0 || gpt2_describe(&model, config) != 0 ||
        gpt2_allocate(&model, 4, 64, err, sizeof(err)) != 0 || step_describe(&s, &model, adamw, NULL, 1) != 0 ||
        taskgraph_for_executor(&g, &s, &(Chunking){0}, threads, 1, err, sizeof(err)) != 0) {
        printf("FAIL %s: cannot build the graph: %s\n", what, err);
        failed++;
        return;
    }
    check_conflicts(what, &s, &g);
    int products = 0, wrong = 0;
    for (int o = 0; o < s.n_ops; o++) {
        if (s.ops[o].split != SPLIT_ROWS || s.ops[o].cut_columns <= 0) continue;
        int tiles = 0;
        for (int t = 0; t < g.n_tasks; t++)
            if (g.tasks[t].op == o && g.tasks[t].range.b0 == 0 && g.tasks[t].range.x0 == 0) tiles++;
        products++;
        // equal tiles of whole 16-column units, as few as give at most one per thread: exactly one
        // per thread where the units allow it (every product up to 16 threads at d12); a unit less
        // would give more tiles than threads
        int columns = s.ops[o].cut_columns, width = 0;
        for (int t = 0; t < g.n_tasks; t++)
            if (g.tasks[t].op == o && g.tasks[t].range.col0 == 0 && g.tasks[t].range.b0 == 0 &&
                g.tasks[t].range.x0 == 0)
                width = g.tasks[t].range.col1 - g.tasks[t].range.col0;
        int fewest = width > 16 ? (columns + width - 17) / (width - 16) : columns;
        if (tiles > threads || width % 16 || (width < columns && fewest <= threads) ||
            (columns % (16 * threads) == 0 && tiles != threads)) {
            if (!wrong) printf("  %s: %s (%d columns) in %d tiles of %d\n", what, s.ops[o].label, columns, tiles, width);
            wrong++;
        }
    }
    snprintf(line, sizeof(line), "%s: the products' rows whole, each of the %d row-split products in at most %d "
             "tiles of whole 16-column units, the fewest units that allow it (%d not)", what, products, threads, wrong);
    expect(line, g.chunking.tiles_per_product == threads && chunking_product_rows_whole(&g.chunking, 4, 64) &&
                     products > 0 && wrong == 0);
    taskgraph_free(&g);
    step_free(&s);
    gpt2_free(&model);
}

int main(void) {
    // chunkings: one sequence a chunk, sequences and tokens, one chunk per operation, narrow channels
    // chunkings: one sequence a chunk, sequences and tokens, one chunk per operation, narrow channels;
    // then tiles (tiny: C = 64, the products 64 to 256 columns wide) of whole panels, of ragged
    // widths that cut panels, one tile per product, and with the rows cut every way
    check("tiny", 4, 16, 1, 1, 0, 0, 0, 0);
    check("tiny", 4, 16, 1, 2, 8, 16, 0, 0);
    check("tiny", 3, 16, 1, 4, 16, 64, 0, 0);
    check("tiny", 2, 8, 1, 1, 3, 8, 0, 0);
    check("small", 4, 32, 1, 1, 0, 0, 0, 0);
    check("tiny", 4, 16, 1, 1, 0, 0, 32, 32);
    check("tiny", 4, 16, 1, 2, 8, 16, 16, 48);
    check("tiny", 3, 16, 1, 1, 5, 0, 40, 24);
    check("tiny", 2, 8, 1, 1, 3, 8, 7, 100);
    check("tiny", 4, 16, 1, 4, 16, 64, 64, 16);
    check("small", 4, 32, 1, 1, 16, 0, 256, 128);
    // products' rows in tiles of their own: whole, fewer sequences than the batch, more sequences than
    // the row chunks (and a count that is no multiple of them), with tokens cut for the rest
    check_with("tiny", 4, 16, 1, 1, 16, 0, 32, 32, 4);
    check_with("tiny", 4, 16, 1, 1, 8, 16, 16, 48, 2);
    check_with("tiny", 4, 16, 1, 2, 4, 0, 40, 24, 3);
    check_with("small", 3, 32, 1, 1, 16, 0, 0, 0, 2);
    // the automatic chunking (every knob 0) at several thread counts, and with some knobs given
    check("tiny", 4, 16, 2, 0, 0, 0, 0, 0);
    check("small", 4, 32, 3, 0, 0, 0, 0, 0);
    check("small", 4, 64, 16, 0, 0, 0, 0, 0);
    check("small", 2, 64, 8, 1, 0, 0, 0, 0);
    check("small", 4, 64, 8, 0, 0, 0, 128, 0);
    static const int thread_counts[] = {1, 2, 4, 8, 16, 32, 112};
    for (size_t i = 0; i < sizeof thread_counts / sizeof thread_counts[0]; i++) {
        check_auto("d12", 4, 64, thread_counts[i], (Chunking){0});
        check_auto("tiny", 2, 8, thread_counts[i], (Chunking){0});
    }
    check_auto("d12", 4, 64, 16, (Chunking){.batch_subsize = 1, .token_chunk = 64});
    check_auto("d12", 4, 64, 16, (Chunking){.tile_columns = 768});
    check_auto("d12", 4, 64, 2, (Chunking){.tile_sequences = 2});
    check_auto("d12", 4, 64, 2, (Chunking){.batch_subsize = 4, .token_chunk = 64});
    check_auto("d12", 8, 1024, 16, (Chunking){0});
    check_auto("small", 1, 7, 4, (Chunking){0});
    check_product_columns();
    check_tiles_per_product(2);
    check_tiles_per_product(3);
    check_tiles_per_product(7);
    check_tiles_per_product(16);
    check_tiles_per_product(112);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
