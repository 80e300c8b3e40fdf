// Hardware-counter regions around kernels: the measured side of "is this
// kernel memory bound?". Executors bracket each kernel call with
// counters_region_begin/end(name); what that costs and measures depends on
// one build option:
//
//   (none)        every function is an empty static inline: zero cost, the
//                 default build and the one every timing is taken with.
//   -DUSE_LIKWID  LIKWID marker API (link -llikwid; run under
//                 `likwid-perfctr -m -g GROUP ...`, which sets the events and
//                 writes the per-region results; see harness/pstudy/counters.py).
//   -DUSE_PAPI    PAPI, one event set per thread (link -lpapi). Events come
//                 from $PERFSTUDY_PAPI_EVENTS (comma-separated PAPI preset or
//                 native names), default PAPI_TOT_CYC,PAPI_TOT_INS.
//                 counters_finish prints the per-region counts in the format
//                 below, parsed by harness/pstudy/counters.py.
//
// Calling protocol, the same in every build:
//   struct counters ctr;
//   counters_init(&ctr, max_threads);            // once, serial, before any region
//   #pragma omp parallel
//   counters_thread_init(&ctr);                  // once per thread (optional with PAPI)
//   ... counters_region_begin(&ctr, "matmul_forward"); kernel(); counters_region_end(&ctr, "matmul_forward");
//   counters_finish(&ctr, stderr);               // once, serial, after the last region
// Region names are kernel names: no spaces, no '=', at most
// COUNTERS_NAME_LEN-1 characters. A thread may nest different regions but
// not reopen one it has open. Failure to set up counters is never fatal:
// counters_init returns -1, the regions cost a branch, and counters_finish
// prints why.
//
// PAPI output format (one line each, space-separated key=value fields):
//   papi events=<EV1>,<EV2>,... threads=<T>
//   papi region=<name> thread=<t> calls=<n> <EV1>=<count> <EV2>=<count> ...
//   papi unavailable: <reason>          (instead of the lines above)
// One region line per (region, thread) that entered the region; counts are
// summed over all calls of that region on that thread.
//
// Global state: the LIKWID marker API keeps everything (event sets, region
// hash tables, the result file named by $LIKWID_FILEPATH) inside liblikwid,
// so with USE_LIKWID struct counters holds nothing. PAPI's library and
// thread registration (PAPI_library_init, PAPI_thread_init) are process-wide
// too; everything this layer adds (event-set ids, region table, counts)
// lives in the caller's struct counters.
#ifndef COUNTERS_H
#define COUNTERS_H

#include <stdio.h>

#if defined(USE_LIKWID) && defined(USE_PAPI)
#error "counters.h: define at most one of USE_LIKWID and USE_PAPI"
#endif

#define COUNTERS_NAME_LEN 64
#define COUNTERS_MAX_EVENTS 8
#define COUNTERS_MAX_REGIONS 64

#if defined(USE_PAPI)
#include <pthread.h>

struct counters {
    _Atomic int enabled;         // 0 once any thread failed; read by all threads
    char reason[256];            // why not enabled
    int max_threads;             // rows of the per-thread arrays below
    int nevents;
    char event_names[COUNTERS_MAX_EVENTS][COUNTERS_NAME_LEN];
    int event_codes[COUNTERS_MAX_EVENTS];
    int *eventsets;              // (max_threads) PAPI event set per thread, PAPI_NULL until started
    pthread_mutex_t lock;        // guards adding a region name, nothing else
    int nregions;
    char region_names[COUNTERS_MAX_REGIONS][COUNTERS_NAME_LEN];
    // per (region, thread): calls, summed counts, and the reading at begin
    long long *calls;            // (COUNTERS_MAX_REGIONS, max_threads)
    long long *totals;           // (COUNTERS_MAX_REGIONS, max_threads, COUNTERS_MAX_EVENTS)
    long long *at_begin;         // (COUNTERS_MAX_REGIONS, max_threads, COUNTERS_MAX_EVENTS)
};
#else
struct counters {
    int enabled;  // LIKWID keeps its state inside the library; see above
};
#endif

#if defined(USE_LIKWID) || defined(USE_PAPI)
int counters_init(struct counters *ctr, int max_threads);
void counters_thread_init(struct counters *ctr);
void counters_region_begin(struct counters *ctr, const char *name);
void counters_region_end(struct counters *ctr, const char *name);
void counters_finish(struct counters *ctr, FILE *out);
#else
static inline int counters_init(struct counters *ctr, int max_threads) {
    (void)max_threads;
    ctr->enabled = 0;
    return 0;
}
static inline void counters_thread_init(struct counters *ctr) { (void)ctr; }
static inline void counters_region_begin(struct counters *ctr, const char *name) { (void)ctr; (void)name; }
static inline void counters_region_end(struct counters *ctr, const char *name) { (void)ctr; (void)name; }
static inline void counters_finish(struct counters *ctr, FILE *out) { (void)ctr; (void)out; }
#endif

#endif
