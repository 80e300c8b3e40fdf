// Backends of counters.h. Without USE_LIKWID or USE_PAPI this file defines
// nothing: the header's empty inline functions are the whole layer.

#define _POSIX_C_SOURCE 200809L  // strtok_r, pthreads under -std=c11
#include "counters.h"

#if defined(USE_LIKWID)

#ifndef LIKWID_PERFMON
#define LIKWID_PERFMON  // makes the LIKWID_MARKER_* macros call the library
#endif
#include <likwid.h>

#include <stdlib.h>

// likwid-perfctr -m passes the event group through the environment
// (LIKWID_EVENTS, LIKWID_FILEPATH, ...) and reads the result file after
// exit; the library holds all the state. Outside likwid-perfctr the markers
// are no-ops, which counters_init reports as -1.
int counters_init(struct counters *ctr, int max_threads) {
    (void)max_threads;
    LIKWID_MARKER_INIT;
    ctr->enabled = getenv("LIKWID_EVENTS") != NULL;
    return ctr->enabled ? 0 : -1;
}

void counters_thread_init(struct counters *ctr) {
    (void)ctr;
    LIKWID_MARKER_THREADINIT;
}

void counters_region_begin(struct counters *ctr, const char *name) {
    (void)ctr;
    LIKWID_MARKER_START(name);
}

void counters_region_end(struct counters *ctr, const char *name) {
    (void)ctr;
    LIKWID_MARKER_STOP(name);
}

void counters_finish(struct counters *ctr, FILE *out) {
    // likwid-perfctr prints the regions from the marker file; say so only
    // when nothing was measured, so a run's report is never silently empty.
    if (!ctr->enabled) fprintf(out, "likwid unavailable: not run under likwid-perfctr -m (LIKWID_EVENTS unset)\n");
    LIKWID_MARKER_CLOSE;
    ctr->enabled = 0;
}

#elif defined(USE_PAPI)

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <papi.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define DEFAULT_EVENTS "PAPI_TOT_CYC,PAPI_TOT_INS"
#define THREAD_FAILED (-2)  // eventsets[t] after that thread could not start counting

static unsigned long papi_thread_id(void) { return (unsigned long)pthread_self(); }

static int thread_index(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

// Records why counting is off; the first reason wins, it is the root cause.
static void disable(struct counters *ctr, const char *fmt, ...) {
    pthread_mutex_lock(&ctr->lock);
    if (ctr->enabled || ctr->reason[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctr->reason, sizeof ctr->reason, fmt, ap);
        va_end(ap);
    }
    ctr->enabled = 0;
    pthread_mutex_unlock(&ctr->lock);
}

// A started event set with all configured events, or a PAPI error code.
static int start_eventset(const struct counters *ctr, int *eventset, const char **failed_event) {
    *eventset = PAPI_NULL;
    *failed_event = "";
    int rc = PAPI_create_eventset(eventset);
    if (rc != PAPI_OK) return rc;
    for (int e = 0; e < ctr->nevents; e++) {
        rc = PAPI_add_event(*eventset, ctr->event_codes[e]);
        if (rc != PAPI_OK) {
            *failed_event = ctr->event_names[e];
            break;
        }
    }
    if (rc == PAPI_OK) rc = PAPI_start(*eventset);
    if (rc != PAPI_OK) {
        PAPI_cleanup_eventset(*eventset);
        PAPI_destroy_eventset(eventset);
    }
    return rc;
}

// Splits $PERFSTUDY_PAPI_EVENTS into names and PAPI codes; 0 or -1.
static int parse_events(struct counters *ctr) {
    const char *spec = getenv("PERFSTUDY_PAPI_EVENTS");
    if (spec == NULL || spec[0] == '\0') spec = DEFAULT_EVENTS;
    char buf[COUNTERS_MAX_EVENTS * COUNTERS_NAME_LEN];
    if (strlen(spec) >= sizeof buf) {
        disable(ctr, "PERFSTUDY_PAPI_EVENTS: longer than %zu characters", sizeof buf - 1);
        return -1;
    }
    strcpy(buf, spec);
    for (char *save = NULL, *name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        if (ctr->nevents == COUNTERS_MAX_EVENTS) {
            disable(ctr, "PERFSTUDY_PAPI_EVENTS: more than %d events", COUNTERS_MAX_EVENTS);
            return -1;
        }
        if (strlen(name) >= COUNTERS_NAME_LEN) {
            disable(ctr, "PERFSTUDY_PAPI_EVENTS: event name '%s' too long", name);
            return -1;
        }
        strcpy(ctr->event_names[ctr->nevents], name);
        int rc = PAPI_event_name_to_code(ctr->event_names[ctr->nevents], &ctr->event_codes[ctr->nevents]);
        if (rc != PAPI_OK) {
            disable(ctr, "event %s: %s", name, PAPI_strerror(rc));
            return -1;
        }
        ctr->nevents++;
    }
    if (ctr->nevents == 0) {
        disable(ctr, "PERFSTUDY_PAPI_EVENTS: no events named");
        return -1;
    }
    return 0;
}

int counters_init(struct counters *ctr, int max_threads) {
    memset(ctr, 0, sizeof *ctr);
    pthread_mutex_init(&ctr->lock, NULL);
    ctr->max_threads = max_threads > 0 ? max_threads : 1;
    ctr->enabled = 1;
    int rc = PAPI_library_init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT) {
        disable(ctr, "PAPI_library_init: %s", rc < 0 ? PAPI_strerror(rc) : "header and library versions differ");
        return -1;
    }
    rc = PAPI_thread_init(papi_thread_id);
    if (rc != PAPI_OK) {
        disable(ctr, "PAPI_thread_init: %s", PAPI_strerror(rc));
        return -1;
    }
    if (PAPI_num_cmp_hwctrs(0) <= 0) {
        disable(ctr, "the perf_event component has no hardware counters");
        return -1;
    }
    if (parse_events(ctr) != 0) return -1;
    // Try the event set once here, so a machine whose PMU is missing (a VM)
    // says so at start-up rather than once per thread.
    int trial;
    const char *failed_event;
    rc = start_eventset(ctr, &trial, &failed_event);
    if (rc != PAPI_OK) {
        disable(ctr, "starting events%s%s: %s", failed_event[0] ? " at " : "", failed_event, PAPI_strerror(rc));
        return -1;
    }
    long long discard[COUNTERS_MAX_EVENTS];
    PAPI_stop(trial, discard);
    PAPI_cleanup_eventset(trial);
    PAPI_destroy_eventset(&trial);

    size_t slots = (size_t)COUNTERS_MAX_REGIONS * (size_t)ctr->max_threads;
    ctr->eventsets = malloc((size_t)ctr->max_threads * sizeof *ctr->eventsets);
    ctr->calls = calloc(slots, sizeof *ctr->calls);
    ctr->totals = calloc(slots * COUNTERS_MAX_EVENTS, sizeof *ctr->totals);
    ctr->at_begin = calloc(slots * COUNTERS_MAX_EVENTS, sizeof *ctr->at_begin);
    if (!ctr->eventsets || !ctr->calls || !ctr->totals || !ctr->at_begin) {
        disable(ctr, "out of memory for %d threads", ctr->max_threads);
        return -1;
    }
    for (int t = 0; t < ctr->max_threads; t++) ctr->eventsets[t] = PAPI_NULL;
    return 0;
}

// This thread's event set, started on first use; -1 if it cannot count.
static int thread_eventset(struct counters *ctr) {
    if (!ctr->enabled) return -1;
    int t = thread_index();
    if (t >= ctr->max_threads) {
        disable(ctr, "thread %d: counters_init was told of only %d threads", t, ctr->max_threads);
        return -1;
    }
    if (ctr->eventsets[t] == PAPI_NULL) {
        const char *failed_event;
        int rc = start_eventset(ctr, &ctr->eventsets[t], &failed_event);
        if (rc != PAPI_OK) {
            ctr->eventsets[t] = THREAD_FAILED;
            disable(ctr, "thread %d: starting events: %s", t, PAPI_strerror(rc));
        }
    }
    return ctr->eventsets[t] == THREAD_FAILED ? -1 : t;
}

void counters_thread_init(struct counters *ctr) { thread_eventset(ctr); }

// Index of a region name, added if `create`; -1 if absent or the table is full.
static int find_region(struct counters *ctr, const char *name, int create) {
    pthread_mutex_lock(&ctr->lock);
    int found = -1;
    for (int r = 0; r < ctr->nregions && found < 0; r++)
        if (strcmp(ctr->region_names[r], name) == 0) found = r;
    if (found < 0 && create && ctr->nregions < COUNTERS_MAX_REGIONS && strlen(name) < COUNTERS_NAME_LEN) {
        found = ctr->nregions++;
        strcpy(ctr->region_names[found], name);
    }
    pthread_mutex_unlock(&ctr->lock);
    if (found < 0 && create) disable(ctr, "region '%s': name too long or more than %d regions", name, COUNTERS_MAX_REGIONS);
    return found;
}

static long long *slot(long long *array, const struct counters *ctr, int region, int thread) {
    return array + ((size_t)region * (size_t)ctr->max_threads + (size_t)thread) * COUNTERS_MAX_EVENTS;
}

void counters_region_begin(struct counters *ctr, const char *name) {
    int t = thread_eventset(ctr);
    if (t < 0) return;
    int r = find_region(ctr, name, 1);
    if (r < 0) return;
    int rc = PAPI_read(ctr->eventsets[t], slot(ctr->at_begin, ctr, r, t));
    if (rc != PAPI_OK) disable(ctr, "PAPI_read at begin of %s: %s", name, PAPI_strerror(rc));
}

void counters_region_end(struct counters *ctr, const char *name) {
    int t = thread_eventset(ctr);
    if (t < 0) return;
    int r = find_region(ctr, name, 0);
    if (r < 0) return;  // end without begin: nothing to attribute
    long long now[COUNTERS_MAX_EVENTS];
    int rc = PAPI_read(ctr->eventsets[t], now);
    if (rc != PAPI_OK) {
        disable(ctr, "PAPI_read at end of %s: %s", name, PAPI_strerror(rc));
        return;
    }
    long long *total = slot(ctr->totals, ctr, r, t);
    const long long *begin = slot(ctr->at_begin, ctr, r, t);
    for (int e = 0; e < ctr->nevents; e++) total[e] += now[e] - begin[e];
    ctr->calls[(size_t)r * (size_t)ctr->max_threads + (size_t)t]++;
}

void counters_finish(struct counters *ctr, FILE *out) {
    if (ctr->enabled) {
        fprintf(out, "papi events=");
        for (int e = 0; e < ctr->nevents; e++) fprintf(out, "%s%s", e ? "," : "", ctr->event_names[e]);
        fprintf(out, " threads=%d\n", ctr->max_threads);
        for (int r = 0; r < ctr->nregions; r++) {
            for (int t = 0; t < ctr->max_threads; t++) {
                long long calls = ctr->calls[(size_t)r * (size_t)ctr->max_threads + (size_t)t];
                if (calls == 0) continue;
                fprintf(out, "papi region=%s thread=%d calls=%lld", ctr->region_names[r], t, calls);
                const long long *total = slot(ctr->totals, ctr, r, t);
                for (int e = 0; e < ctr->nevents; e++) fprintf(out, " %s=%lld", ctr->event_names[e], total[e]);
                fprintf(out, "\n");
            }
        }
    } else {
        fprintf(out, "papi unavailable: %s\n", ctr->reason[0] ? ctr->reason : "counters_init was not called");
    }
    // Event sets are bound to their threads and cannot be stopped from here;
    // PAPI_shutdown releases them all.
    free(ctr->eventsets);
    free(ctr->calls);
    free(ctr->totals);
    free(ctr->at_begin);
    ctr->eventsets = NULL;
    ctr->calls = ctr->totals = ctr->at_begin = NULL;
    ctr->enabled = 0;
    if (PAPI_is_initialized()) PAPI_shutdown();
    pthread_mutex_destroy(&ctr->lock);
}

#else

// ISO C wants at least one declaration in a translation unit.
typedef int counters_c_has_no_backend_in_this_build;

#endif
