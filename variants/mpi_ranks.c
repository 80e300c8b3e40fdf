// The process layer of gpt2-mpi (distributed.h): MPI's start and end, the
// ranks' agreement before any collective work, each rank's share of the
// batch, and the collective steps the front takes besides training (the info
// line's placement, the trace's gathering).
#define _GNU_SOURCE
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "distributed.h"
#include "mpi_collectives.h"
#include "simulation.h"

static int world_rank, world_size = 1, global_B;

void dist_init(int *argc, char ***argv) {
    // MPI is called from the main thread, outside parallel regions, and with
    // --overlap on from the communication thread while the main thread makes no
    // call: never from two threads at once (MPI_THREAD_SERIALIZED), unless
    // --comm-threads runs several channels, each on a thread calling MPI
    // (MPI_THREAD_MULTIPLE). The options are read after this call, so it asks
    // for the most; dist_check_executor refuses a run needing more than given.
    int level;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
}

int dist_front(void) { return 1; }
int dist_simulated(void) { return SIMULATED; }

FILE *dist_output(void) {
    if (world_rank == 0) return stdout;
    // the ranks of an SMPI run are threads of one process with one stdout, which freopen on rank 1
    // would take from rank 0 too; elsewhere the whole stream goes, what libraries print included
    if (SIMULATED) return fopen("/dev/null", "w");
    return freopen("/dev/null", "w", stdout);
}

void dist_finalize(void) { MPI_Finalize(); }
int dist_rank(void) { return world_rank; }
int dist_ranks(void) { return world_size; }

void dist_abort(int status) {
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
    exit(status); // not reached: MPI_Abort does not return
}

void dist_set_global_batch(int B) { global_B = B; }
int dist_global_batch(void) { return global_B; }

void dist_share(int B, int rank, int ranks, int *b0, int *b1) {
    *b0 = (int)((long)B * rank / ranks);
    *b1 = (int)((long)B * (rank + 1) / ranks);
}

// One rank's part of the agreement, sent to every rank.
typedef struct {
    int state, n;
    char failure[512];
    DistSetting settings[DIST_MAX_SETTINGS];
} Agreement;

// The verdict on every rank's part; the same on every rank, which sees them all.
static int verdict(const Agreement *all, int R, char *line, size_t len) {
    line[0] = '\0';
    int failed = -1, same = 1;
    for (int q = 0; q < R; q++)
        if (all[q].state == DIST_FAILED) {
            if (failed < 0) failed = q;
            else if (strcmp(all[q].failure, all[failed].failure) != 0) same = 0;
        } else {
            same = 0;
        }
    if (failed >= 0) {
        // one input shared by every rank (a missing model on all of them) needs no rank in its line
        if (same || R == 1) snprintf(line, len, "%s", all[failed].failure);
        else snprintf(line, len, "rank %d: %s", failed, all[failed].failure);
        return 2;
    }
    for (int q = 1; q < R; q++)
        if (all[q].state != all[0].state) {
            int leaving = all[q].state == DIST_LEAVING ? q : 0;
            snprintf(line, len, "rank %d stops before training (--help or --list-configs) while rank %d would run: "
                     "give every rank the same options", leaving, leaving ? 0 : q);
            return 2;
        }
    if (all[0].state == DIST_LEAVING) return 0;
    for (int q = 1; q < R; q++) {
        if (all[q].n != all[0].n) {
            snprintf(line, len, "rank %d runs a different build of gpt2-mpi than rank 0 (%d settings to agree on, "
                     "not %d)", q, all[q].n, all[0].n);
            return 2;
        }
        for (int i = 0; i < all[0].n; i++) {
            const DistSetting *mine = &all[0].settings[i], *theirs = &all[q].settings[i];
            if (strcmp(mine->name, theirs->name) != 0 || strcmp(mine->value, theirs->value) != 0) {
                snprintf(line, len, "rank %d disagrees with rank 0 on %s: %s there, %s on rank 0 (every rank "
                         "must be given the same options and data)", q, mine->name, theirs->value, mine->value);
                return 2;
            }
        }
    }
    return DIST_AGREED;
}

int dist_agree(int state, const char *failure, const DistSetting *settings, int n, char *line, size_t line_len) {
    Agreement mine;
    memset(&mine, 0, sizeof(mine));
    mine.state = state;
    mine.n = n < DIST_MAX_SETTINGS ? n : DIST_MAX_SETTINGS;
    snprintf(mine.failure, sizeof(mine.failure), "%s", failure ? failure : "");
    for (int i = 0; i < mine.n; i++) mine.settings[i] = settings[i];
    Agreement *all = malloc((size_t)world_size * sizeof(Agreement));
    if (!all) {
        fprintf(stderr, "gpt2-mpi: rank %d: out of memory for the ranks' agreement\n", world_rank);
        dist_abort(2);
    }
    // a collective every rank reaches exactly once, whether its checks passed or not: no rank
    // waits on one that has given up
    MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE, MPI_COMM_WORLD);
    int status = verdict(all, world_size, line, line_len);
    free(all);
    return status;
}

float *dist_gather_sequences(const float *mine, size_t seq_floats, int B) {
    int R = world_size, me = world_rank, n_req = 0;
    float *all = malloc((size_t)B * seq_floats * sizeof(float));
    MPI_Request *requests = malloc(2 * (size_t)R * sizeof(MPI_Request));
    if (!all || !requests) {
        free(all);
        free(requests);
        return NULL;
    }
    int b0, b1;
    dist_share(B, me, R, &b0, &b1);
    memcpy(all + (size_t)b0 * seq_floats, mine, (size_t)(b1 - b0) * seq_floats * sizeof(float));
    for (int q = 0; q < R; q++) {
        if (q == me) continue;
        int q0, q1;
        dist_share(B, q, R, &q0, &q1);
        MPI_Isend(mine, (int)((size_t)(b1 - b0) * seq_floats), MPI_FLOAT, q, TAG_GATHER, MPI_COMM_WORLD,
                  &requests[n_req++]);
        MPI_Irecv(all + (size_t)q0 * seq_floats, (int)((size_t)(q1 - q0) * seq_floats), MPI_FLOAT, q, TAG_GATHER,
                  MPI_COMM_WORLD, &requests[n_req++]);
    }
    MPI_Waitall(n_req, requests, MPI_STATUSES_IGNORE);
    free(requests);
    return all;
}

// On rank 0, writes `"rank_placement": [...]` built from every rank's `fragment` (a JSON object, at
// most 4095 characters).
static void placement_json(FILE *out, const char *fragment) {
    char text[4096];
    if (world_rank != 0) {
        snprintf(text, sizeof(text), "%s", fragment);
        MPI_Send(text, (int)strlen(text) + 1, MPI_CHAR, 0, TAG_TEXT, MPI_COMM_WORLD);
        return;
    }
    fprintf(out, "\"rank_placement\": [%s", fragment);
    for (int q = 1; q < world_size; q++) {
        MPI_Recv(text, (int)sizeof(text), MPI_CHAR, q, TAG_TEXT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        text[sizeof(text) - 1] = '\0';
        fprintf(out, ", %s", text);
    }
    fprintf(out, "]");
}

void dist_info_json(FILE *out, const ExecOptions *options, const Executor *ex, int b0, int b1,
                    void (*placement)(FILE *out, int threads), int threads) {
    char *fragment = NULL, host[256] = "";
    size_t fragment_len = 0;
    FILE *f = open_memstream(&fragment, &fragment_len);
    if (!f) {
        fprintf(stderr, "gpt2-mpi: rank %d: out of memory for the info line\n", world_rank);
        dist_abort(2);
    }
    gethostname(host, sizeof(host) - 1);
    fprintf(f, "{\"rank\": %d, \"host\": \"%s\", \"sequences\": [%d, %d], ", world_rank, host, b0, b1);
    placement(f, threads);
    fprintf(f, "}");
    fclose(f);
    fprintf(out, "\"ranks\": %d, \"executor\": \"%s\", \"update\": \"%s\", \"collective\": \"%s\", "
            "\"overlap\": \"%s\", \"comm_threads\": %d, \"comm_bytes_per_step\": %lld, \"comm_message_bytes\": %lld, ",
            world_size, options->executor ? options->executor : "forkjoin",
            options->sharded_update ? "sharded" : "replicated", options->direct_collective ? "direct" : "ring",
            options->overlap ? "on" : "off", options->comm_threads > 1 ? options->comm_threads : 1,
            dist_comm_bytes_per_step(ex), dist_comm_message_bytes());
    placement_json(out, fragment);
    fprintf(out, ", ");
    free(fragment);
}

void dist_step_json(FILE *out, const StepReport *report) { fprintf(out, "\"comm_s\": %.9f, ", report->comm_s); }

void dist_sync_trace_origin(Trace *trace) {
    MPI_Barrier(MPI_COMM_WORLD);
    trace->origin = now_seconds();
}

void dist_gather_trace(Trace *trace, int threads_per_rank) {
    long long count = (long long)(trace->count < trace->capacity ? trace->count : trace->capacity);
    // the communication thread's records (thread -1): rank r's as thread R x threads + r, after every worker
    for (long long i = 0; i < count; i++)
        if (trace->records[i].thread < 0) trace->records[i].thread = world_size * threads_per_rank + world_rank;
    if (world_rank != 0) {
        MPI_Send(&count, 1, MPI_LONG_LONG, 0, TAG_TRACE, MPI_COMM_WORLD);
        MPI_Send(trace->records, (int)(count * (long long)sizeof(TraceRecord)), MPI_BYTE, 0, TAG_TRACE,
                 MPI_COMM_WORLD);
        trace->count = 0;
        return;
    }
    trace->count = (size_t)count;
    for (int q = 1; q < world_size; q++) {
        long long more;
        MPI_Recv(&more, 1, MPI_LONG_LONG, q, TAG_TRACE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        // at least one record: with nothing traced (--steps 0) realloc of 0 bytes may return NULL
        size_t records = trace->count + (size_t)more > 0 ? trace->count + (size_t)more : 1;
        TraceRecord *grown = realloc(trace->records, records * sizeof(TraceRecord));
        if (!grown) {
            fprintf(stderr, "gpt2-mpi: out of memory gathering the trace\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        trace->records = grown;
        MPI_Recv(trace->records + trace->count, (int)(more * (long long)sizeof(TraceRecord)), MPI_BYTE, q, TAG_TRACE,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t i = trace->count; i < trace->count + (size_t)more; i++)
            if (trace->records[i].thread < world_size * threads_per_rank)
                trace->records[i].thread += q * threads_per_rank;
        trace->count += (size_t)more;
    }
    trace->capacity = trace->count;
}
