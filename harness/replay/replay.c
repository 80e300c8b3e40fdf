/* The replay engine of pstudy.analyse.simulate, in C.
 *
 * simulate.py is the reference: it states the rules (static schedules, phases, iterations, the
 * contention model of pstudy.analyse.contention) and this file follows it event for event, with the
 * same floating-point operations in the same order, so that both give the same step times bit for
 * bit (tests/harness/test_replay.py holds them to it on hand-made and on described graphs).
 * It exists for speed: `perfstudy predict --best` replays some 400 graphs of up to 140,000 tasks on
 * up to 112 simulated cores, which took 10 minutes in Python.
 *
 * Built with -ffp-contract=off and no -march: a fused multiply-add would round differently from
 * Python's two operations.
 *
 * The caller (pstudy.analyse.replay) passes plain arrays:
 *   graph  the tasks of one step: per task its operation and static thread (static schedules),
 *          its phase (phases), and its successors in the same and in the next iteration as
 *          compressed rows (start[n + 1], list);
 *   work   per task its duration alone (s), its memory demand (DRAM bytes / duration) and its
 *          compute demand (share of one thread's peak);
 *   node   per busy-thread count its bandwidth (index 0..cores + 1), per busy-core count its clock
 *          factor (0..cores), per simulated thread its core, the hardware-thread throughput psi,
 *          a constant background stream (the thief), and per simulated thread its measured speed
 *          (NULL: none; contention.py's thread speeds).
 */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { REPLAY_STATIC = 0, REPLAY_PHASES = 1, REPLAY_ITERATIONS = 2 };
enum { REPLAY_OK = 0, REPLAY_DEADLOCK = 1, REPLAY_NO_MEMORY = 2 };
enum { HELD_NONE = 0, HELD_BANDWIDTH = 1, HELD_COMPUTE = 2 };

#define EPS 1e-12

struct replay_graph {
    int64_t n_tasks;
    int32_t mode;
    int32_t iterations;
    const int32_t *op;
    const int32_t *thread;
    const int32_t *phase;
    const int32_t *succ_start;
    const int32_t *succ;
    const int32_t *next_start;
    const int32_t *next_succ;
};

struct replay_work {
    const double *duration;
    const double *memory_demand;
    const double *compute_demand;
};

struct replay_node {
    int32_t cores;
    int32_t shared;
    const double *bandwidth;
    const double *phi;
    const int32_t *core_of;
    double psi;
    double background;
    const double *speed; /* [cores] or NULL */
};

struct replay_result {
    double makespan;
    double nominal;
    double stretch_bandwidth;
    double stretch_compute;
    double *busy;          /* [cores] */
    double *iteration_end; /* [iterations]: the last end of each iteration's tasks */
};

/* ---- max-min fair shares (contention.maxmin) ---- */

struct demand_order {
    double demand;
    int index;
};

static int by_demand_then_index(const void *a, const void *b)
{
    const struct demand_order *x = a, *y = b;
    if (x->demand < y->demand) return -1;
    if (x->demand > y->demand) return 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* rates[i] for demands[0..n): 1 where met; `order` is scratch of n entries */
static void maxmin(const double *demands, int n, double capacity, double *rates, struct demand_order *order)
{
    double total = 0.0;
    for (int i = 0; i < n; i++) total += demands[i];
    for (int i = 0; i < n; i++) rates[i] = 1.0;
    if (total <= capacity || total <= 0.0) return;
    for (int i = 0; i < n; i++) order[i] = (struct demand_order){demands[i], i};
    qsort(order, (size_t)n, sizeof *order, by_demand_then_index);
    double left = capacity;
    for (int pos = 0; pos < n; pos++) {
        double fair = left / (double)(n - pos);
        double d = order[pos].demand;
        if (d <= fair) {
            left -= d;
        } else {
            for (int j = pos; j < n; j++) {
                double dj = order[j].demand;
                rates[order[j].index] = dj > 0.0 ? fair / dj : 1.0;
            }
            return;
        }
    }
}

/* ---- the policies: who takes what (simulate.StaticOp, simulate.Dataflow) ---- */

struct policy {
    int dataflow;
    /* static: per core a queue [queue_pos[c], queue_end[c]) in `queue` */
    int64_t *queue, *queue_pos, *queue_end;
    int64_t queued;
    /* dataflow: a min-heap of keys iteration * n + task */
    int64_t *heap;
    int64_t heap_size;
    int32_t *preds;          /* per key: predecessors not yet done */
    int64_t first, end;      /* phases: the segment's tasks; successors outside it are not members */
    int32_t last_iteration;
    /* both */
    int64_t left;
};

static void heap_push(struct policy *p, int64_t key)
{
    int64_t i = p->heap_size++;
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (p->heap[parent] <= key) break;
        p->heap[i] = p->heap[parent];
        i = parent;
    }
    p->heap[i] = key;
}

static int64_t heap_pop(struct policy *p)
{
    int64_t top = p->heap[0], key = p->heap[--p->heap_size], i = 0;
    for (;;) {
        int64_t child = 2 * i + 1;
        if (child >= p->heap_size) break;
        if (child + 1 < p->heap_size && p->heap[child + 1] < p->heap[child]) child++;
        if (key <= p->heap[child]) break;
        p->heap[i] = p->heap[child];
        i = child;
    }
    if (p->heap_size > 0) p->heap[i] = key;
    return top;
}

static int policy_ready(const struct policy *p)
{
    return p->dataflow ? p->heap_size > 0 : p->queued > 0;
}

/* the key taken by `core`, or -1 */
static int64_t policy_take(struct policy *p, int core)
{
    if (p->dataflow) return p->heap_size > 0 ? heap_pop(p) : -1;
    if (p->queue_pos[core] >= p->queue_end[core]) return -1;
    p->queued--;
    return p->queue[p->queue_pos[core]++];
}

static void release(struct policy *p, int64_t key)
{
    if (--p->preds[key] == 0) heap_push(p, key);
}

static void policy_done(struct policy *p, const struct replay_graph *g, int64_t key, double time,
                        double *iteration_end)
{
    p->left--;
    if (!p->dataflow) return;
    int64_t n = g->n_tasks, it = key / n, task = key % n;
    if (iteration_end && time > iteration_end[it]) iteration_end[it] = time;
    for (int32_t s = g->succ_start[task]; s < g->succ_start[task + 1]; s++) {
        int64_t succ = g->succ[s];
        if (g->mode == REPLAY_PHASES && (succ < p->first || succ >= p->end)) continue;
        release(p, it * n + succ);
    }
    if (g->mode == REPLAY_ITERATIONS && it < p->last_iteration)
        for (int32_t s = g->next_start[task]; s < g->next_start[task + 1]; s++)
            release(p, (it + 1) * n + g->next_succ[s]);
}

/* ---- the engine (simulate.Engine) ---- */

struct engine {
    const struct replay_graph *graph;
    const struct replay_work *work;
    const struct replay_node *node;
    int cores;
    double time, nominal, stretch[3];
    double *busy;
    /* per core: what it runs */
    char *active;
    int64_t *key;
    double *remaining, *duration, *memory, *compute, *start;
    /* per event, over the running tasks */
    int *threads, *held;
    double *mem, *cmp, *shares, *core_rates, *rates, *until, *group_demand, *group_rate;
    int *group;
    struct demand_order *order;
};

struct core_member {
    int core, index;
};

static int by_core_then_index(const void *a, const void *b)
{
    const struct core_member *x = a, *y = b;
    if (x->core != y->core) return (x->core > y->core) - (x->core < y->core);
    return (x->index > y->index) - (x->index < y->index);
}

/* contention.Node.rates over the n running tasks (threads ascending) */
static void node_rates(struct engine *e, int n, struct core_member *members)
{
    const struct replay_node *node = e->node;
    if (node->background > 0.0) {
        e->mem[n] = node->background;
        maxmin(e->mem, n + 1, node->bandwidth[n + 1], e->shares, e->order);
    } else {
        maxmin(e->mem, n, node->bandwidth[n], e->shares, e->order);
    }
    for (int i = 0; i < n; i++) e->core_rates[i] = 1.0;
    int busy_cores = n;
    if (node->shared) {
        for (int i = 0; i < n; i++) members[i] = (struct core_member){node->core_of[e->threads[i]], i};
        qsort(members, (size_t)n, sizeof *members, by_core_then_index);
        busy_cores = 0;
        for (int a = 0; a < n;) {
            int b = a;
            while (b < n && members[b].core == members[a].core) b++;
            busy_cores++;
            if (b - a > 1) {
                for (int j = a; j < b; j++) e->group_demand[j - a] = e->cmp[members[j].index];
                maxmin(e->group_demand, b - a, node->psi, e->group_rate, e->order);
                for (int j = a; j < b; j++) e->core_rates[members[j].index] = e->group_rate[j - a];
            }
            a = b;
        }
    }
    double phi = node->phi[busy_cores];
    double lowest = INFINITY;
    for (int i = 0; i < n; i++) lowest = e->shares[i] < lowest ? e->shares[i] : lowest;
    if (!node->speed && phi >= 1.0 && !node->shared && lowest >= 1.0) {
        for (int i = 0; i < n; i++) {
            e->rates[i] = e->shares[i];
            e->held[i] = HELD_NONE;
        }
        return;
    }
    for (int i = 0; i < n; i++) {
        double s = e->shares[i], in_core = phi * e->core_rates[i];
        if (node->speed) in_core = in_core * node->speed[e->threads[i]];
        double rate = s <= in_core ? s : in_core;
        e->rates[i] = rate;
        e->held[i] = rate >= 1.0 ? HELD_NONE : (s <= in_core ? HELD_BANDWIDTH : HELD_COMPUTE);
    }
}

static int engine_run(struct engine *e, struct policy *p, double *iteration_end, struct core_member *members)
{
    const struct replay_work *w = e->work;
    int64_t n_tasks = e->graph->n_tasks;
    for (;;) {
        int progress = 1, idle = 0;
        for (int c = 0; c < e->cores; c++) idle += !e->active[c];
        while (progress && idle && policy_ready(p)) {
            progress = 0;
            for (int c = 0; c < e->cores; c++) {
                if (e->active[c]) continue;
                int64_t key = policy_take(p, c);
                if (key < 0) continue;
                progress = 1;
                int64_t task = key % n_tasks;
                double d = w->duration[task];
                e->nominal += d;
                if (d <= 0.0) {
                    policy_done(p, e->graph, key, e->time, iteration_end);
                    continue;
                }
                e->active[c] = 1;
                idle--;
                e->key[c] = key;
                e->remaining[c] = 1.0;
                e->duration[c] = d;
                e->memory[c] = w->memory_demand[task];
                e->compute[c] = w->compute_demand[task];
                e->start[c] = e->time;
            }
        }
        int n = 0;
        for (int c = 0; c < e->cores; c++)
            if (e->active[c]) {
                e->threads[n] = c;
                e->mem[n] = e->memory[c];
                e->cmp[n] = e->compute[c];
                n++;
            }
        if (n == 0) return p->left > 0 ? REPLAY_DEADLOCK : REPLAY_OK;
        node_rates(e, n, members);
        double dt = INFINITY;
        for (int i = 0; i < n; i++) {
            int c = e->threads[i];
            e->until[i] = e->remaining[c] * e->duration[c] / e->rates[i];
            if (e->until[i] < dt) dt = e->until[i];
        }
        e->time += dt;
        for (int i = 0; i < n; i++)
            if (e->held[i] != HELD_NONE) e->stretch[e->held[i]] += dt * (1.0 - e->rates[i]);
        double tolerance = EPS * (e->time > 1.0 ? e->time : 1.0);
        for (int i = 0; i < n; i++) {
            int c = e->threads[i];
            if (e->until[i] - dt <= tolerance) {
                e->held[i] = -1; /* finished */
            } else {
                e->remaining[c] -= dt * e->rates[i] / e->duration[c];
            }
        }
        for (int i = 0; i < n; i++) /* lowest core first */
            if (e->held[i] == -1) {
                int c = e->threads[i];
                e->active[c] = 0;
                e->busy[c] += e->time - e->start[c];
                policy_done(p, e->graph, e->key[c], e->time, iteration_end);
            }
    }
}

/* ---- the three schedules (simulate.run_static, run_phases, run_iterations) ---- */

struct op_task {
    int32_t op;
    int64_t index;
};

static int by_op_then_index(const void *a, const void *b)
{
    const struct op_task *x = a, *y = b;
    if (x->op != y->op) return (x->op > y->op) - (x->op < y->op);
    return (x->index > y->index) - (x->index < y->index);
}

static int run_static(struct engine *e, struct core_member *members)
{
    const struct replay_graph *g = e->graph;
    int64_t n = g->n_tasks;
    int cores = e->cores, status = REPLAY_OK;
    struct op_task *sorted = malloc((size_t)n * sizeof *sorted);
    struct policy p = {0};
    p.queue = malloc((size_t)n * sizeof *p.queue);
    p.queue_pos = calloc((size_t)cores, sizeof *p.queue_pos);
    p.queue_end = calloc((size_t)cores, sizeof *p.queue_end);
    int64_t *count = calloc((size_t)cores, sizeof *count);
    if (!sorted || !p.queue || !p.queue_pos || !p.queue_end || !count) {
        status = REPLAY_NO_MEMORY;
        goto out;
    }
    for (int64_t t = 0; t < n; t++) sorted[t] = (struct op_task){g->op[t], t};
    qsort(sorted, (size_t)n, sizeof *sorted, by_op_then_index);
    for (int64_t a = 0; a < n && status == REPLAY_OK;) {
        int64_t b = a;
        while (b < n && sorted[b].op == sorted[a].op) b++;
        /* one operation: its chunks queued per thread in listing order */
        memset(count, 0, (size_t)cores * sizeof *count);
        for (int64_t i = a; i < b; i++) count[g->thread[sorted[i].index]]++;
        int64_t at = 0;
        for (int c = 0; c < cores; c++) {
            p.queue_pos[c] = p.queue_end[c] = at;
            at += count[c];
        }
        for (int64_t i = a; i < b; i++) {
            int c = g->thread[sorted[i].index];
            p.queue[p.queue_end[c]++] = sorted[i].index;
        }
        p.queued = p.left = b - a;
        status = engine_run(e, &p, NULL, members);
        a = b;
    }
out:
    free(sorted);
    free(p.queue);
    free(p.queue_pos);
    free(p.queue_end);
    free(count);
    return status;
}

static int run_dataflow(struct engine *e, double *iteration_end, struct core_member *members)
{
    const struct replay_graph *g = e->graph;
    int64_t n = g->n_tasks;
    int iterations = g->mode == REPLAY_ITERATIONS ? g->iterations : 1, status = REPLAY_OK;
    struct policy p = {.dataflow = 1, .last_iteration = iterations - 1};
    p.preds = calloc((size_t)(n * iterations), sizeof *p.preds);
    p.heap = malloc((size_t)(n * iterations) * sizeof *p.heap);
    if (!p.preds || !p.heap) {
        status = REPLAY_NO_MEMORY;
        goto out;
    }
    if (g->mode == REPLAY_ITERATIONS) {
        for (int it = 0; it < iterations; it++)
            for (int64_t t = 0; t < n; t++) {
                for (int32_t s = g->succ_start[t]; s < g->succ_start[t + 1]; s++) p.preds[it * n + g->succ[s]]++;
                if (it + 1 < iterations)
                    for (int32_t s = g->next_start[t]; s < g->next_start[t + 1]; s++)
                        p.preds[(it + 1) * n + g->next_succ[s]]++;
            }
        p.first = 0;
        p.end = n;
        for (int64_t k = 0; k < n * iterations; k++)
            if (p.preds[k] == 0) heap_push(&p, k);
        p.left = n * iterations;
        status = engine_run(e, &p, iteration_end, members);
    } else {
        /* phases: consecutive runs of one phase, in listing order, a wait after each */
        for (int64_t first = 0; first < n && status == REPLAY_OK;) {
            int64_t end = first;
            while (end < n && g->phase[end] == g->phase[first]) end++;
            p.first = first;
            p.end = end;
            for (int64_t t = first; t < end; t++)
                for (int32_t s = g->succ_start[t]; s < g->succ_start[t + 1]; s++)
                    if (g->succ[s] >= first && g->succ[s] < end) p.preds[g->succ[s]]++;
            p.heap_size = 0;
            for (int64_t t = first; t < end; t++)
                if (p.preds[t] == 0) heap_push(&p, t);
            p.left = end - first;
            status = engine_run(e, &p, NULL, members);
            first = end;
        }
    }
out:
    free(p.preds);
    free(p.heap);
    return status;
}

int replay_step(const struct replay_graph *graph, const struct replay_work *work, const struct replay_node *node,
                struct replay_result *result)
{
    int cores = node->cores;
    struct engine e = {.graph = graph, .work = work, .node = node, .cores = cores, .busy = result->busy};
    size_t nc = (size_t)cores + 1;
    e.active = calloc(nc, 1);
    e.key = calloc(nc, sizeof *e.key);
    double **doubles[] = {&e.remaining, &e.duration, &e.memory, &e.compute, &e.start, &e.mem, &e.cmp, &e.shares,
                          &e.core_rates, &e.rates, &e.until, &e.group_demand, &e.group_rate};
    int ok = e.active && e.key;
    for (size_t i = 0; i < sizeof doubles / sizeof *doubles; i++) {
        *doubles[i] = calloc(nc, sizeof(double));
        ok = ok && *doubles[i];
    }
    e.threads = calloc(nc, sizeof *e.threads);
    e.held = calloc(nc, sizeof *e.held);
    e.order = calloc(nc, sizeof *e.order);
    struct core_member *members = calloc(nc, sizeof *members);
    ok = ok && e.threads && e.held && e.order && members;
    int status = REPLAY_NO_MEMORY;
    if (ok) {
        for (int c = 0; c < cores; c++) result->busy[c] = 0.0;
        if (graph->mode == REPLAY_ITERATIONS)
            for (int i = 0; i < graph->iterations; i++) result->iteration_end[i] = -INFINITY;
        status = graph->mode == REPLAY_STATIC ? run_static(&e, members)
                                              : run_dataflow(&e, result->iteration_end, members);
        result->makespan = e.time;
        result->nominal = e.nominal;
        result->stretch_bandwidth = e.stretch[HELD_BANDWIDTH];
        result->stretch_compute = e.stretch[HELD_COMPUTE];
    }
    free(e.active);
    free(e.key);
    for (size_t i = 0; i < sizeof doubles / sizeof *doubles; i++) free(*doubles[i]);
    free(e.threads);
    free(e.held);
    free(e.order);
    free(members);
    return status;
}
