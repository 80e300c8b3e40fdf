// The point-to-point bandwidth between two MPI ranks, in the pattern of gpt2-mpi's ring at 2 ranks:
// both send and receive `--bytes` at once, in messages of `--block` bytes, all posted together.
// Prints one JSON line from rank 0: the median and best exchange time over `--repeats` rounds
// (after one warm-up) and the bandwidth per direction they give. bench/mpi_overlap.py holds the
// gradient exchange's time against it.
//
//   mpirun -np 2 build/bench/mpi_bandwidth [--bytes N] [--block N] [--repeats N]
#define _POSIX_C_SOURCE 200809L
#define BENCH_PROGRAM "mpi_bandwidth"
#include <mpi.h>
#include <string.h>
#include "../probes/cli.h"

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    long long bytes = 256LL << 20, block = 4LL << 20, repeats = 10;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage_error(argv[i], "missing value");
        if (strcmp(argv[i], "--bytes") == 0) bytes = parse_integer("--bytes", argv[++i], 1, 1LL << 34);
        else if (strcmp(argv[i], "--block") == 0) block = parse_integer("--block", argv[++i], 1, 1LL << 30);
        else if (strcmp(argv[i], "--repeats") == 0) repeats = parse_integer("--repeats", argv[++i], 1, 1000);
        else usage_error(argv[i], "unknown option (--bytes, --block, --repeats)");
    }
    if (ranks != 2) {
        if (rank == 0) fprintf(stderr, BENCH_PROGRAM ": needs exactly 2 ranks (mpirun -np 2), got %d\n", ranks);
        MPI_Finalize();
        return 2;
    }
    long long n_blocks = (bytes + block - 1) / block;
    char *out = malloc((size_t)bytes), *in = malloc((size_t)bytes);
    MPI_Request *requests = malloc(2 * (size_t)n_blocks * sizeof(MPI_Request));
    double *seconds = malloc((size_t)repeats * sizeof(double));
    if (!out || !in || !requests || !seconds) {
        fprintf(stderr, BENCH_PROGRAM ": rank %d: out of memory for %lld bytes\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    // every page touched before timing, as the gradients' are
    memset(out, 1, (size_t)bytes);
    memset(in, 0, (size_t)bytes);
    int peer = 1 - rank;
    for (long long r = -1; r < repeats; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        int n = 0;
        for (long long at = 0; at < bytes; at += block) {
            int count = (int)(bytes - at < block ? bytes - at : block);
            MPI_Irecv(in + at, count, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &requests[n++]);
            MPI_Isend(out + at, count, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &requests[n++]);
        }
        MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
        double t = MPI_Wtime() - t0, slowest;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r >= 0) seconds[r] = slowest;
    }
    qsort(seconds, (size_t)repeats, sizeof(double), compare_doubles);
    double median = repeats % 2 ? seconds[repeats / 2] : 0.5 * (seconds[repeats / 2 - 1] + seconds[repeats / 2]);
    if (rank == 0)
        printf("{\"bytes\": %lld, \"block\": %lld, \"repeats\": %lld, \"median_s\": %.6f, \"best_s\": %.6f, "
               "\"median_GBs\": %.3f, \"best_GBs\": %.3f}\n",
               bytes, block, repeats, median, seconds[0], bytes / median / 1e9, bytes / seconds[0] / 1e9);
    free(out);
    free(in);
    free(requests);
    free(seconds);
    MPI_Finalize();
    return 0;
}
