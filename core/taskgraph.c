#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gemm.h"
#include "taskgraph.h"

static int min_int(int a, int b) { return a < b ? a : b; }
static int max_int(int a, int b) { return a > b ? a : b; }
static int ceil_div(int a, int b) { return (a + b - 1) / b; }
static int gcd_int(int a, int b) { return b ? gcd_int(b, a % b) : a; }

int chunking_widest_product(const StepDescription *s, int output_columns) {
    int widest = 0;
    for (int i = 0; i < s->n_ops; i++)
        widest = max_int(widest, output_columns ? s->ops[i].cut_columns : s->ops[i].cut_input_channels);
    return widest;
}

// The narrowest of the products that tile_columns (1) or tile_in_channels (0) cuts; 0 without one.
static int narrowest_product(const StepDescription *s, int output_columns) {
    int narrowest = 0;
    for (int i = 0; i < s->n_ops; i++) {
        int w = output_columns ? s->ops[i].cut_columns : s->ops[i].cut_input_channels;
        if (w > 0 && (narrowest == 0 || w < narrowest)) narrowest = w;
    }
    return narrowest;
}

// The panel width tiles are cut in: whole vectors where the kernels have no panels.
static int tile_panel(void) { return max_int(matmul_panel_columns(), 16); }

// The unit of a tile's width where each product is cut into tiles_per_product
// tiles: whole panels where the products' rows are cut (each row chunk reads
// the panels of its columns from the packed weight, and a tile that ends
// inside a panel shares it with its neighbour's pack chunk); 16 columns, as
// fork-join cuts its shares, where the rows are whole and each tile packs its
// own columns: at d12 and 16 threads, panels of 32 would give the 768-wide
// products 12 tiles of 64 (4 threads idle), 16-column units 16 tiles of 48.
static int tile_unit(int rows_whole) { return rows_whole ? 16 : tile_panel(); }

// Width of `tiles` equal tiles of `columns` columns in whole units (the last one narrower).
static int equal_tile_width(int columns, int tiles, int unit) {
    return ceil_div(ceil_div(columns, tiles), unit) * unit;
}

// Tile width of a row-split product of `columns` output columns.
static int product_tile_width(const Chunking *c, const StepDescription *s, int columns) {
    int w = c->tile_columns;
    if (c->tiles_per_product > 0)
        w = equal_tile_width(columns, c->tiles_per_product, tile_unit(chunking_product_rows_whole(c, s->B, s->T)));
    return w > 0 && w < columns ? w : columns;
}

// Granularity for the machine: the knobs left at 0 (BATCH_SUBSIZE, k, the two
// tile widths, the products' row chunks), chosen from the thread count P, in
// one of three regimes (docs/variants.md, "The automatic chunking"):
//
// One thread: one chunk of every operation's rows and products uncut. There is
// nothing to run side by side, and every cut costs: a row chunk reads the
// packed weight again, a column tile packs its rows of the input again, and a
// task more is a task more to schedule.
//
// Whole rows (P >= 2, the batch has no more rows, B x T, than the narrowest
// product has columns, C; or the rows are given whole): no pass packs the
// weights, every product is cut into P equal tiles of 16-column units as
// fork-join cuts it, a weight gradient's input channels in tiles of C, and the
// other row operations get row chunks of their own (rows_of_the_other_ops).
//
// Tiles (P >= 2 otherwise): rows and columns cut until the narrowest product
// has CHUNK_TILES_PER_THREAD x P tiles, or both reach their floors
// (cut_rows_and_columns).

// Where the rule stands while it chooses: the row chunk (bs sequences of k
// tokens) and the narrowest row-split product's cut (parts tiles of `width`
// columns), with what it may change (the knobs given as 0) and its bounds.
typedef struct {
    int bs, k, parts, width;
    int free_bs, free_k, free_cols, free_in, free_seq;
    int narrow, narrow_in, widest, panel, min_columns;
    long target; // tiles of the narrowest product that keep every thread fed
} Granularity;

static Granularity granularity_start(const Chunking *c, const StepDescription *s, int threads) {
    Granularity g = {0};
    int B = s->B, T = s->T;
    g.panel = tile_panel();
    g.min_columns = CHUNK_MIN_TILE_PANELS * g.panel;
    g.narrow = narrowest_product(s, 1);
    g.narrow_in = narrowest_product(s, 0);
    g.free_bs = c->batch_subsize == 0;
    g.free_k = c->token_chunk == 0;
    g.free_cols = c->tile_columns == 0 && c->tiles_per_product == 0;
    g.free_in = c->tile_in_channels == 0;
    g.free_seq = c->tile_sequences == 0;
    g.bs = g.free_bs ? B : min_int(c->batch_subsize, B);
    g.k = g.free_k ? T : min_int(c->token_chunk, T);
    // the narrowest product whole to start with (the wider ones in tiles as wide), or every product
    // whole where that is narrower than the floor
    g.widest = max_int(chunking_widest_product(s, 1), 1);
    g.parts = 1;
    g.width = g.narrow >= g.min_columns ? g.narrow : g.widest;
    if (!g.free_cols && c->tiles_per_product > 0) // in the unit of the rows as they stand before any cut
        g.width = min_int(equal_tile_width(g.narrow, c->tiles_per_product,
                                           tile_unit(g.free_seq ? g.bs >= B && g.k >= T : c->tile_sequences >= B)),
                          g.narrow);
    else if (!g.free_cols)
        g.width = c->tile_columns;
    g.target = (long)CHUNK_TILES_PER_THREAD * threads;
    return g;
}

// Whether the products keep their rows whole. A product of M rows, K inputs and
// N outputs in P column tiles packs its input (M x K) P times; cut into R row
// chunks, it needs a pass that writes its packed weight (K x N) and R chunks
// that read it, R + 1 trips of the weight where fork-join's packing stays in
// cache. With R about P, whole rows move fewer bytes where M <= N, at any P.
static int rows_stay_whole(const Chunking *c, const StepDescription *s, const Granularity *g, int threads) {
    int B = s->B, T = s->T;
    int given_whole = g->free_seq ? !g->free_bs && !g->free_k && g->bs >= B && g->k >= T : c->tile_sequences >= B;
    int may_be_whole = g->free_seq ? (g->free_bs || g->bs >= B) && (g->free_k || g->k >= T) : given_whole;
    return threads > 1 && g->narrow > 0 && may_be_whole && (given_whole || (long)B * T <= g->narrow);
}

// The row operations' own chunks (LayerNorm, GELU, residuals, attention, the
// loss), where the products' rows are chunked apart from them: by sequences,
// then by halving k down to CHUNK_MIN_ROW_CHUNK_TOKENS, until there are
// CHUNK_WHOLE_ROW_TILES_PER_THREAD x P of them. In one chunk each they would
// run on one thread while the others idle.
static void rows_of_the_other_ops(Granularity *g, const StepDescription *s, int threads) {
    while ((long)ceil_div(s->B, g->bs) * ceil_div(s->T, g->k) < (long)CHUNK_WHOLE_ROW_TILES_PER_THREAD * threads) {
        if (g->free_bs && g->bs > 1) g->bs = ceil_div(g->bs, 2);
        else if (g->free_k && ceil_div(g->k, 2) >= CHUNK_MIN_ROW_CHUNK_TOKENS) g->k = ceil_div(g->k, 2);
        else break;
    }
}

// The tiles regime: cut until the narrowest row-split product has `target`
// tiles, so that every thread finds ready tiles while the last ones of a
// product run and the next operation's first rows become ready early, or
// until the tiles reach their floors:
//   rows: at least CHUNK_MIN_TILE_ROWS (two to three register tiles of the
//         micro-kernel; each row chunk reads the whole packed weight, so fewer
//         rows read it more often per FLOP); cut by sequences first
//         (BATCH_SUBSIZE halved), then by tokens (k halved), which also lets
//         the layers of one sequence overlap;
//   columns: at least CHUNK_MIN_TILE_PANELS panels of the micro-kernel (each
//         column tile packs its rows of the input again), C cut into n equal
//         parts in whole panels.
// Each step cuts the dimension with more room above its floor, rows on a tie
// (a row cut repeats no packing of the input).
static void cut_rows_and_columns(Granularity *g, const Chunking *c, const StepDescription *s) {
    int B = s->B, T = s->T, narrow = g->narrow;
    for (;;) {
        // the products' row chunks: tile_sequences given, or the row chunks (which cutting rows cuts)
        long product_rows = g->free_seq ? (long)ceil_div(B, g->bs) * ceil_div(T, g->k) : ceil_div(B, c->tile_sequences);
        if (product_rows * ceil_div(narrow, min_int(g->width, narrow)) >= g->target) return;
        // the next cut of each dimension, if it stays above its floor
        int next_bs = g->bs, next_k = g->k;
        if (g->free_seq && g->free_bs && g->bs > 1) next_bs = ceil_div(g->bs, 2);
        else if (g->free_seq && g->free_k && ceil_div(g->k, 2) >= CHUNK_MIN_TILE_ROWS) next_k = ceil_div(g->k, 2);
        int can_rows = (next_bs != g->bs || next_k != g->k) && next_bs * next_k >= min_int(CHUNK_MIN_TILE_ROWS, B * T);
        int next_parts = g->parts, next_width = g->width;
        while (g->free_cols && next_width == g->width && next_parts < narrow)
            next_width = ceil_div(ceil_div(narrow, ++next_parts), g->panel) * g->panel;
        int can_cols = next_width < g->width && next_width >= g->min_columns;
        if (!can_rows && !can_cols) return;
        // room above the floors, compared as ratios (rows x min_columns against width x min_rows)
        if (can_rows && (!can_cols || (long)g->bs * g->k * g->min_columns >= (long)g->width * CHUNK_MIN_TILE_ROWS)) {
            g->bs = next_bs;
            g->k = next_k;
        } else {
            g->parts = next_parts;
            g->width = next_width;
        }
    }
}

// A weight gradient's input channels: whole (C) with the rows whole; else, its
// output channels coming in chunks of at least 256 (chunking_product_columns),
// the fewest equal parts in whole panels, at least CHUNK_MIN_TILE_PANELS wide,
// that give the narrowest (C x C, attproj's) the target.
static int input_channel_tile(const Chunking *c, const StepDescription *s, const Granularity *g, int whole_rows,
                              int threads) {
    int widest_in = max_int(chunking_widest_product(s, 0), 1), narrow_in = g->narrow_in;
    if (whole_rows && narrow_in > 0) return narrow_in;
    if (threads <= 1 || narrow_in <= 0) return widest_in;
    int out_chunks = INT_MAX; // output-channel chunks of the narrowest weight gradient
    for (int i = 0; i < s->n_ops; i++)
        if (s->ops[i].cut_input_channels == narrow_in)
            out_chunks = min_int(out_chunks, ceil_div(s->ops[i].split_channels,
                                                      chunking_product_columns(c, s->ops[i].split_channels)));
    int tile = widest_in;
    for (int n = 1; n <= narrow_in; n++) {
        int w = ceil_div(ceil_div(narrow_in, n), g->panel) * g->panel;
        if (w < g->min_columns) break;
        tile = min_int(w, widest_in);
        if ((long)out_chunks * ceil_div(narrow_in, w) >= g->target) break;
    }
    return tile;
}

static void choose_granularity(Chunking *c, const StepDescription *s, int threads) {
    Granularity g = granularity_start(c, s, threads);
    c->chosen = (g.free_bs ? CHOSEN_BATCH_SUBSIZE : 0) | (g.free_k ? CHOSEN_TOKEN_CHUNK : 0) |
                (g.free_cols ? CHOSEN_TILE_COLUMNS : 0) | (g.free_in ? CHOSEN_TILE_IN_CHANNELS : 0) |
                (g.free_seq ? CHOSEN_TILE_SEQUENCES : 0);
    int whole_rows = rows_stay_whole(c, s, &g, threads);
    if (whole_rows && g.free_cols) g.width = equal_tile_width(g.narrow, threads, tile_unit(1));
    if ((whole_rows || !g.free_seq) && threads > 1) rows_of_the_other_ops(&g, s, threads);
    if (!whole_rows && threads > 1 && g.narrow > 0) cut_rows_and_columns(&g, c, s);
    if (g.free_bs) c->batch_subsize = g.bs;
    if (g.free_k) c->token_chunk = g.k;
    if (g.free_cols) c->tile_columns = threads > 1 && g.narrow > 0 ? g.width : g.widest;
    // With the rows whole, every product in one tile per thread, as fork-join cuts it, rather than
    // in tiles as wide as the narrowest product's: each tile packs every row of its input again, so
    // a product of 4C columns in 4P tiles would pack them 4P times where fork-join packs them P times.
    if (g.free_cols && whole_rows) c->tiles_per_product = threads;
    if (g.free_seq) c->tile_sequences = whole_rows ? s->B : 0;
    // the narrowest product's tile, as reported, in the unit of the rows as they now are
    if (c->tiles_per_product > 0) c->tile_columns = product_tile_width(c, s, max_int(g.narrow, 1));
    if (g.free_in) c->tile_in_channels = input_channel_tile(c, s, &g, whole_rows, threads);
}

int chunking_resolve(Chunking *c, const StepDescription *s, int threads, char *err, size_t err_len) {
    if (c->batch_subsize < 0 || c->token_chunk < 0 || c->channel_chunk < 0 || c->tile_columns < 0 ||
        c->tiles_per_product < 0 || c->tile_in_channels < 0 || c->tile_sequences < 0) {
        snprintf(err, err_len, "chunk sizes must be positive");
        return -1;
    }
    int widest_out = chunking_widest_product(s, 1), widest_in = chunking_widest_product(s, 0);
    if (widest_out > 0 && c->tile_columns > widest_out) {
        snprintf(err, err_len, "--tile-columns: %d is wider than the widest product it cuts (%d output columns)",
                 c->tile_columns, widest_out);
        return -1;
    }
    if (widest_in > 0 && c->tile_in_channels > widest_in) {
        snprintf(err, err_len,
                 "--tile-in-channels: %d is wider than the widest weight gradient it cuts (%d input channels)",
                 c->tile_in_channels, widest_in);
        return -1;
    }
    // Products split along their output columns (the weight gradients' output channels, the
    // language-model head's two products) in at most CHUNK_TILES_PER_THREAD chunks per thread, one
    // at 1 thread, unless a channel chunk is given: each chunk packs every row of its other operand
    // again (for the head's input gradient all 50304 columns of the logits' gradient), so chunks
    // beyond what the threads need are paid for in packing. At d12, 1 thread, chunks of 256
    // channels cost tasks 40 ms a step in the products against fork-join (bench/variants.py).
    if (c->max_product_chunks == 0)
        c->max_product_chunks = c->channel_chunk ? INT_MAX : threads > 1 ? CHUNK_TILES_PER_THREAD * threads : 1;
    if (c->product_chunk_multiple == 0) c->product_chunk_multiple = c->channel_chunk ? 1 : max_int(threads, 1);
    if (c->channel_chunk == 0) c->channel_chunk = 64;
    if (c->max_channel_chunks == 0) c->max_channel_chunks = 64;
    choose_granularity(c, s, threads > 0 ? threads : 1);
    c->batch_subsize = min_int(c->batch_subsize, s->B);
    c->token_chunk = min_int(c->token_chunk, s->T);
    c->tile_sequences = min_int(c->tile_sequences, s->B);
    return 0;
}

void chunking_write_json(FILE *out, const Chunking *c) {
    for (int k = 0; k < N_CHUNK_KNOBS; k++)
        fprintf(out, "%s\"%s\": %d", k ? ", " : "", chunk_knobs()[k].name, chunk_knob_value(c, &chunk_knobs()[k]));
}

int chunking_product_rows_whole(const Chunking *c, int B, int T) {
    return c->tile_sequences > 0 ? c->tile_sequences >= B : c->batch_subsize >= B && c->token_chunk >= T;
}

// The channel chunk (at most max_channel_chunks chunks), at least `floor`
// channels, in whole vectors, at most the extent.
static int channels_at_least(const Chunking *c, int extent, int floor) {
    int size = max_int(max_int(c->channel_chunk, ceil_div(extent, c->max_channel_chunks)), floor);
    size = ceil_div(size, 16) * 16; // whole vectors
    return min_int(size, extent);
}

int chunking_channels(const Chunking *c, int extent) { return channels_at_least(c, extent, 0); }

// Chunks of a matrix product cut along its output columns are at least 256
// wide up to 2 threads (and wherever a channel chunk is given): each such
// chunk packs every row of its input (for the language-model head's input
// gradient, all 50304 columns of the logits' gradient), so a narrow chunk
// would spend its time packing. With more threads, one chunk per thread where
// that is 64 columns or more: the head's input gradient (768 columns at d12, a
// tenth of the step's FLOPs at 16 threads' share) in 3 chunks of 256 bounded
// every step past 4 threads (predicted for mn5-gpp: 37 ms a chunk, on the
// critical path), and each extra chunk's packing is a few milliseconds.
int chunking_product_columns(const Chunking *c, int extent) {
    int block = chunking_channels(c, extent);
    int narrowest = 256;
    if (c->max_product_chunks > 2 * CHUNK_TILES_PER_THREAD && c->max_product_chunks != INT_MAX)
        narrowest = max_int(64, ceil_div(extent * CHUNK_TILES_PER_THREAD, c->max_product_chunks));
    int size = max_int(channels_at_least(c, extent, narrowest), ceil_div(extent, max_int(c->max_product_chunks, 1)));
    size = min_int(ceil_div(size, block) * block, extent);
    // Where the chunks are unequal or their count is not a multiple of the threads: the largest
    // multiple of the threads below the count that cuts the extent into equal chunks of whole
    // blocks, if one does. At 2 threads the 256-column floor made 3 chunks of the 768-wide
    // products (attproj's and fcproj's weight gradients, the head's input gradient) and 7 of 320
    // and one of 64 of qkv's 2304 channels: one thread ran the odd chunk while the other found
    // other work or idled, and each chunk beyond fork-join's one a thread packs every row of the
    // other operand again (for the head's input gradient all 50304 columns of the logits'
    // gradient: 7.8 thread-ms a step at d12, 2 threads, traced). Now 2 of 384 and 6 of 384.
    int m = c->product_chunk_multiple, n = ceil_div(extent, size);
    if (m > 1 && n > m && (n % m != 0 || extent % size != 0))
        for (int count = n / m * m; count >= m; count -= m)
            if (extent % count == 0 && extent / count % block == 0) return extent / count;
    return size;
}

int chunking_param_elements(const Chunking *c, int extent, int width) {
    return channels_at_least(c, extent, ceil_div(CHUNK_MIN_PARAM_ELEMENTS, max_int(width, 1)));
}

// Block sizes of a buffer's grid, chosen to match the chunks that touch it.
static void grid_for_buffer(const Chunking *c, const StepDescription *s, const Buffer *b, int grid[3]) {
    switch (b->kind) {
    case BUF_ACT:
    case BUF_DACT:
    case BUF_BATCH:
        // blocks fine enough for both the row chunks and the products' (tile_sequences x every token)
        grid[0] = c->tile_sequences > 0 ? gcd_int(c->batch_subsize, c->tile_sequences) : c->batch_subsize;
        grid[1] = c->token_chunk;
        break;
    case BUF_PARAM:
    case BUF_GRAD:
        grid[0] = 1;
        grid[1] = chunking_channels(c, b->dim[1]);
        break;
    case BUF_PACKED: // (1, 1, columns): blocks of the pack operations' column chunks
    case BUF_LOSS:
    case BUF_COMM:
    case NUM_BUFFER_KINDS:
        grid[0] = grid[1] = 1;
        break;
    }
    switch (b->column_blocks) {
    case COLUMNS_WHOLE: grid[2] = b->dim[2]; break;
    case COLUMNS_HEADS: grid[2] = b->head_width; break;
    case COLUMNS_CHANNEL_CHUNKS: grid[2] = chunking_channels(c, b->dim[2]); break;
    case COLUMNS_PRODUCT_CHUNKS: grid[2] = chunking_product_columns(c, b->dim[2]); break;
    case COLUMNS_PRODUCT_TILES: grid[2] = product_tile_width(c, s, b->dim[2]); break;
    case COLUMNS_WEIGHT_TILES: grid[2] = c->tile_in_channels; break;
    }
    for (int d = 0; d < 3; d++) grid[d] = max_int(1, min_int(grid[d], b->dim[d]));
}

// Makes room for one more element in a growable array of `count` elements
// with capacity *cap (doubling, from 1024). Returns 0, or -1 when memory is short.
static int reserve(void **items, long count, long *cap, size_t size) {
    if (count < *cap) return 0;
    long grown_cap = *cap ? 2 * *cap : 1024;
    void *grown = realloc(*items, (size_t)grown_cap * size);
    if (!grown) return -1;
    *items = grown;
    *cap = grown_cap;
    return 0;
}

typedef struct {
    Range *items;
    long n, cap;
} RangeList;

static int push_range(RangeList *l, Range r) {
    if (reserve((void **)&l->items, l->n, &l->cap, sizeof(Range))) return -1;
    l->items[l->n++] = r;
    return 0;
}

// The chunk size of an operation along its two range dimensions.
static void op_steps(const StepDescription *s, const Chunking *c, const Op *op, int *eb_, int *ex_, int *step_b_,
                     int *step_x_) {
    int eb, ex;
    op_extents(s, op, &eb, &ex);
    int step_b = 1, step_x = ex;
    switch (op->split) {
    case SPLIT_ROWS:
        step_b = c->batch_subsize;
        step_x = c->token_chunk;
        if (op->cut_columns > 0 && c->tile_sequences > 0) { // a product's rows in tiles of their own
            step_b = c->tile_sequences;
            step_x = ex;
        }
        break;
    case SPLIT_HEADS: step_b = c->batch_subsize; step_x = 1; break;
    case SPLIT_CHANNELS:
        step_b = 1;
        step_x = op->chunk_width == CHUNK_PRODUCT_COLUMNS  ? chunking_product_columns(c, ex)
                 : op->chunk_width == CHUNK_PARAM_ELEMENTS ? chunking_param_elements(c, ex, op->width)
                                                           : chunking_channels(c, ex);
        break;
    case SPLIT_NONE: step_b = 1; step_x = 1; break;
    }
    *eb_ = eb;
    *ex_ = ex;
    *step_b_ = step_b;
    *step_x_ = step_x;
}

// A matrix product's tiles: the columns its chunks may be cut along (0: none)
// and the tile width; one tile (width = columns) where the tile is as wide.
static int op_tile_columns(const Chunking *c, const StepDescription *s, const Op *op, int *width) {
    int columns = op->split == SPLIT_ROWS ? op->cut_columns : op->split == SPLIT_CHANNELS ? op->cut_input_channels : 0;
    if (op->split == SPLIT_ROWS) {
        *width = columns > 0 ? product_tile_width(c, s, columns) : columns;
        return columns;
    }
    int w = c->tile_in_channels;
    *width = columns > 0 && w < columns ? w : columns;
    return columns;
}

// Tasks per step, counted in 64 bits before anything is built (task and
// block ids are int).
static long long count_tasks(const StepDescription *s, const Chunking *c) {
    long long total = 0;
    for (int o = 0; o < s->n_ops; o++) {
        int eb, ex, step_b, step_x, width;
        op_steps(s, c, &s->ops[o], &eb, &ex, &step_b, &step_x);
        int columns = op_tile_columns(c, s, &s->ops[o], &width);
        total += (long long)ceil_div(eb, step_b) * ceil_div(ex, step_x) * (columns > 0 ? ceil_div(columns, width) : 1);
    }
    return total;
}

static int op_chunks(const StepDescription *s, const Chunking *c, const Op *op, RangeList *out) {
    out->n = 0;
    int eb, ex, step_b, step_x, width;
    op_steps(s, c, op, &eb, &ex, &step_b, &step_x);
    int columns = op_tile_columns(c, s, op, &width);
    int ntiles = columns > 0 && width < columns ? ceil_div(columns, width) : 1;
    // Heads are listed head by head across the sequences, so that tasks
    // started one after another work on different sequences: neighbouring
    // heads of the same tokens share gradient rows, and two threads writing
    // them slow each other down (see variants/forkjoin.c). Everything else
    // is listed sequence by sequence, a chunk's tiles one after another: the
    // tiles of the first rows come first, so that the next operation's first
    // row chunk is ready as early as it can be.
    int nb = ceil_div(eb, step_b), nx = ceil_div(ex, step_x);
    for (int i = 0; i < nb * nx; i++) {
        int bi = op->split == SPLIT_HEADS ? i % nb : i / nx, xi = op->split == SPLIT_HEADS ? i / nb : i % nx;
        int b0 = bi * step_b, x0 = xi * step_x;
        Range r = {b0, min_int(b0 + step_b, eb), x0, min_int(x0 + step_x, ex), 0, 0};
        for (int j = 0; j < ntiles; j++) {
            if (ntiles > 1) {
                r.col0 = j * width;
                r.col1 = min_int(r.col0 + width, columns);
            }
            if (push_range(out, r)) return -1;
        }
    }
    return 0;
}

typedef struct {
    int *items;
    long n, cap;
} IntList;

static int push_int(IntList *l, int v) {
    if (l->n >= INT_MAX) return -1; // slices of the list are addressed with int
    if (reserve((void **)&l->items, l->n, &l->cap, sizeof(int))) return -1;
    l->items[l->n++] = v;
    return 0;
}

// Appends the blocks of `box` that task `task` has not listed yet (seen_by: per
// block, the last task that listed it; a scan of the task's list instead was
// quadratic in its blocks, most of describing a graph at 112 threads).
static int push_box_blocks(const TaskGraph *g, int buffer, const int dim[3], const Box *box, IntList *ids,
                           int *seen_by, int task) {
    const int *grid = g->block_grid[buffer];
    int nb[3];
    for (int d = 0; d < 3; d++) nb[d] = ceil_div(dim[d], grid[d]);
    for (int d = 0; d < 3; d++)
        if (box->hi[d] <= box->lo[d]) return 0;
    for (int i0 = box->lo[0] / grid[0]; i0 <= (box->hi[0] - 1) / grid[0]; i0++)
        for (int i1 = box->lo[1] / grid[1]; i1 <= (box->hi[1] - 1) / grid[1]; i1++)
            for (int i2 = box->lo[2] / grid[2]; i2 <= (box->hi[2] - 1) / grid[2]; i2++) {
                int id = (int)(g->buffer_first_block[buffer] + ((long)i0 * nb[1] + i1) * nb[2] + i2);
                if (seen_by[id] == task) continue;
                seen_by[id] = task;
                if (push_int(ids, id)) return -1;
            }
    return 0;
}

int taskgraph_build(TaskGraph *g, const StepDescription *s, const Chunking *chunking) {
    memset(g, 0, sizeof(*g));
    g->chunking = *chunking;
    g->buffer_first_block = malloc((s->n_buffers + 1) * sizeof(long));
    g->block_grid = malloc(s->n_buffers * sizeof(*g->block_grid));
    if (!g->buffer_first_block || !g->block_grid) return -1;
    long total = 0;
    for (int i = 0; i < s->n_buffers; i++) {
        grid_for_buffer(chunking, s, &s->buffers[i], g->block_grid[i]);
        g->buffer_first_block[i] = total;
        long n = 1;
        for (int d = 0; d < 3; d++) n *= ceil_div(s->buffers[i].dim[d], g->block_grid[i][d]);
        total += n;
        if (total > INT_MAX) return -1; // block ids are int
    }
    g->buffer_first_block[s->n_buffers] = total;
    g->n_blocks = total;

    RangeList ranges = {0};
    IntList ids = {0};
    long cap = 0;
    int *seen_by = malloc((total > 0 ? total : 1) * sizeof(int));
    if (!seen_by) return -1;
    for (long b = 0; b < total; b++) seen_by[b] = -1;
    for (int o = 0; o < s->n_ops; o++) {
        const Op *op = &s->ops[o];
        if (op_chunks(s, chunking, op, &ranges)) goto oom;
        for (int r = 0; r < ranges.n; r++) {
            if (reserve((void **)&g->tasks, g->n_tasks, &cap, sizeof(ChunkTask))) goto oom;
            ChunkTask *t = &g->tasks[g->n_tasks++];
            t->op = o;
            t->range = ranges.items[r];
            // written blocks first, then read blocks that are not also written
            t->out_first = (int)ids.n;
            for (int a = 0; a < op->n_access; a++) {
                if (!op->access[a].writes) continue;
                Box boxes[MAX_BOXES];
                int nbox = access_boxes(s, &op->access[a], t->range, boxes);
                for (int k = 0; k < nbox; k++)
                    if (push_box_blocks(g, op->access[a].buffer, s->buffers[op->access[a].buffer].dim, &boxes[k],
                                        &ids, seen_by, g->n_tasks - 1))
                        goto oom;
            }
            t->n_out = (int)(ids.n - t->out_first);
            t->in_first = (int)ids.n;
            for (int a = 0; a < op->n_access; a++) {
                if (op->access[a].writes) continue;
                Box boxes[MAX_BOXES];
                int nbox = access_boxes(s, &op->access[a], t->range, boxes);
                for (int k = 0; k < nbox; k++)
                    if (push_box_blocks(g, op->access[a].buffer, s->buffers[op->access[a].buffer].dim, &boxes[k],
                                        &ids, seen_by, g->n_tasks - 1))
                        goto oom;
            }
            t->n_in = (int)(ids.n - t->in_first);
        }
    }
    free(ranges.items);
    free(seen_by);
    g->block_ids = ids.items;
    g->n_block_ids = ids.n;
    return 0;
oom:
    free(ranges.items);
    free(ids.items);
    free(seen_by);
    return -1;
}

// Dependency tracking per block: the last writer and the readers since.
typedef struct {
    int *last_writer;     // per block, task id in the doubled sequence or -1
    int *reader_head;     // per block, head of a linked list of readers
    int *reader_task, *reader_next;
    long n_readers, cap_task, cap_next;
} Tracker;

typedef struct {
    int *from, *to;
    long n, cap_from, cap_to;
} EdgeList;

static int push_edge(EdgeList *e, int from, int to) {
    if (reserve((void **)&e->from, e->n, &e->cap_from, sizeof(int)) ||
        reserve((void **)&e->to, e->n, &e->cap_to, sizeof(int)))
        return -1;
    e->from[e->n] = from;
    e->to[e->n] = to;
    e->n++;
    return 0;
}

static int add_reader(Tracker *tr, int block, int task) {
    if (reserve((void **)&tr->reader_task, tr->n_readers, &tr->cap_task, sizeof(int)) ||
        reserve((void **)&tr->reader_next, tr->n_readers, &tr->cap_next, sizeof(int)))
        return -1;
    tr->reader_task[tr->n_readers] = task;
    tr->reader_next[tr->n_readers] = tr->reader_head[block];
    tr->reader_head[block] = (int)tr->n_readers++;
    return 0;
}

// Builds CSR successor lists from an edge list over n tasks.
static int to_csr(const EdgeList *e, int n, int **first_out, int **succ_out, int **npred_out) {
    int *first = calloc(n + 1, sizeof(int)), *succ = malloc((e->n + 1) * sizeof(int));
    int *npred = calloc(n, sizeof(int)), *fill = calloc(n, sizeof(int));
    if (!first || !succ || !npred || !fill) {
        free(first); free(succ); free(npred); free(fill);
        return -1;
    }
    for (long i = 0; i < e->n; i++) {
        first[e->from[i] + 1]++;
        npred[e->to[i]]++;
    }
    for (int i = 0; i < n; i++) first[i + 1] += first[i];
    for (long i = 0; i < e->n; i++) succ[first[e->from[i]] + fill[e->from[i]]++] = e->to[i];
    free(fill);
    *first_out = first;
    *succ_out = succ;
    *npred_out = npred;
    return 0;
}

int taskgraph_analyse(TaskGraph *g) {
    int n = g->n_tasks;
    Tracker tr = {0};
    EdgeList same = {0}, next = {0};
    int *stamp = malloc(2 * (size_t)n * sizeof(int));
    tr.last_writer = malloc(g->n_blocks * sizeof(int));
    tr.reader_head = malloc(g->n_blocks * sizeof(int));
    int rc = -1;
    if (!stamp || !tr.last_writer || !tr.reader_head) goto done;
    for (long b = 0; b < g->n_blocks; b++) tr.last_writer[b] = tr.reader_head[b] = -1;
    for (int i = 0; i < 2 * n; i++) stamp[i] = -1;
    // Two passes over the task sequence: the first yields the edges within an
    // iteration, the second (continuing from the state the first left) the
    // edges from one iteration into the next.
    for (int seq = 0; seq < 2 * n; seq++) {
        const ChunkTask *t = &g->tasks[seq % n];
        EdgeList *edges = seq < n ? &same : &next;
#define DEPEND_ON(pred)                                                                  \
    do {                                                                                 \
        int p_ = (pred);                                                                 \
        if (p_ >= 0 && p_ != seq && stamp[p_] != seq && (seq < n || p_ < n)) {           \
            stamp[p_] = seq;                                                             \
            if (push_edge(edges, p_ % n, seq % n)) goto done;                            \
        }                                                                                \
    } while (0)
        for (int k = 0; k < t->n_in; k++) {
            int block = g->block_ids[t->in_first + k];
            DEPEND_ON(tr.last_writer[block]);
        }
        for (int k = 0; k < t->n_out; k++) {
            int block = g->block_ids[t->out_first + k];
            DEPEND_ON(tr.last_writer[block]);
            for (int r = tr.reader_head[block]; r >= 0; r = tr.reader_next[r]) DEPEND_ON(tr.reader_task[r]);
        }
#undef DEPEND_ON
        for (int k = 0; k < t->n_in; k++)
            if (add_reader(&tr, g->block_ids[t->in_first + k], seq)) goto done;
        for (int k = 0; k < t->n_out; k++) {
            int block = g->block_ids[t->out_first + k];
            tr.last_writer[block] = seq;
            tr.reader_head[block] = -1;
        }
    }
    if (to_csr(&same, n, &g->succ_first, &g->succ, &g->n_pred)) goto done;
    if (to_csr(&next, n, &g->next_succ_first, &g->next_succ, &g->n_next_pred)) goto done;
    g->n_edges = same.n;
    g->n_next_edges = next.n;
    rc = 0;
done:
    free(stamp);
    free(tr.last_writer);
    free(tr.reader_head);
    free(tr.reader_task);
    free(tr.reader_next);
    free(same.from); free(same.to);
    free(next.from); free(next.to);
    return rc;
}

int taskgraph_phase_end(const TaskGraph *g, const StepDescription *step, int begin) {
    int end = begin;
    while (end < g->n_tasks && step->ops[g->tasks[end].op].phase == step->ops[g->tasks[begin].op].phase) end++;
    return end;
}

// Per block, its accesses within a phase's run of tasks (0, 1 or 2 meaning
// more) and whether one of them writes.
enum { TOUCHED_ONCE = 1, TOUCHED_MORE = 2, TOUCH_COUNT = 3, WRITTEN = 4 };

int taskgraph_phase_depends(const TaskGraph *g, const StepDescription *step, ChunkTask **tasks_out, int **ids) {
    unsigned char *touch = calloc(g->n_blocks > 0 ? g->n_blocks : 1, 1);
    int *kept = malloc((g->n_block_ids > 0 ? g->n_block_ids : 1) * sizeof(int));
    ChunkTask *tasks = malloc((g->n_tasks > 0 ? g->n_tasks : 1) * sizeof(ChunkTask));
    if (!touch || !kept || !tasks) {
        free(touch);
        free(kept);
        free(tasks);
        return -1;
    }
    int n_kept = 0;
    for (int first = 0, last; first < g->n_tasks; first = last) {
        last = taskgraph_phase_end(g, step, first);
        for (int i = first; i < last; i++) {
            const ChunkTask *t = &g->tasks[i];
            for (int k = 0; k < t->n_out + t->n_in; k++) {
                int block = g->block_ids[k < t->n_out ? t->out_first + k : t->in_first + k - t->n_out];
                int count = touch[block] & TOUCH_COUNT;
                touch[block] = (unsigned char)((touch[block] & WRITTEN) | (count ? TOUCHED_MORE : TOUCHED_ONCE) |
                                               (k < t->n_out ? WRITTEN : 0));
            }
        }
        for (int i = first; i < last; i++) {
            const ChunkTask *t = &g->tasks[i];
            tasks[i] = *t;
            tasks[i].out_first = n_kept;
            for (int k = 0; k < t->n_out; k++) {
                int block = g->block_ids[t->out_first + k];
                if ((touch[block] & TOUCH_COUNT) == TOUCHED_MORE) kept[n_kept++] = block;
            }
            tasks[i].n_out = n_kept - tasks[i].out_first;
            tasks[i].in_first = n_kept;
            for (int k = 0; k < t->n_in; k++) {
                int block = g->block_ids[t->in_first + k];
                if (touch[block] == (TOUCHED_MORE | WRITTEN)) kept[n_kept++] = block;
            }
            tasks[i].n_in = n_kept - tasks[i].in_first;
        }
        for (int i = first; i < last; i++) {
            const ChunkTask *t = &g->tasks[i];
            for (int k = 0; k < t->n_out; k++) touch[g->block_ids[t->out_first + k]] = 0;
            for (int k = 0; k < t->n_in; k++) touch[g->block_ids[t->in_first + k]] = 0;
        }
    }
    free(touch);
    *tasks_out = tasks;
    *ids = kept;
    return 0;
}

void taskgraph_free(TaskGraph *g) {
    free(g->tasks);
    free(g->block_ids);
    free(g->buffer_first_block);
    free(g->block_grid);
    free(g->succ_first); free(g->succ); free(g->n_pred);
    free(g->next_succ_first); free(g->next_succ); free(g->n_next_pred);
    memset(g, 0, sizeof(*g));
}

int taskgraph_check_chunking(const StepDescription *step, const Chunking *requested, int threads, Chunking *resolved,
                             char *err, size_t err_len) {
    Chunking chunking = *requested;
    if (chunking_resolve(&chunking, step, threads, err, err_len) != 0) return -1;
    long long tasks = count_tasks(step, &chunking);
    if (tasks > TASKGRAPH_MAX_TASKS) {
        snprintf(err, err_len, "%lld tasks per step exceed the limit %d: use larger chunks", tasks, TASKGRAPH_MAX_TASKS);
        return -1;
    }
    if (resolved) *resolved = chunking;
    return 0;
}

int taskgraph_for_executor(TaskGraph *g, const StepDescription *step, const Chunking *requested, int threads,
                           int analyse, char *err, size_t err_len) {
    Chunking chunking;
    if (taskgraph_check_chunking(step, requested, threads, &chunking, err, err_len) != 0) return -1;
    if (taskgraph_build(g, step, &chunking) != 0 || (analyse && taskgraph_analyse(g) != 0)) {
        snprintf(err, err_len, "out of memory building the task graph");
        return -1;
    }
    return 0;
}
