// What differs in gpt2-mpi built for SimGrid's SMPI (-DGPT2_SMPI, `make smpi`), in one place.
// There the rank's node compute is not run: each step stands in for the forward and backward
// operations and for AdamW with simulated delays that the harness gives it (from the replay of
// the traced chunk times), and for each add of the reduce-scatter with its bytes executed at the
// simulated host's speed (the rank's memory bandwidth). The messages, their sizes and their order
// are the real build's. The ranks are threads of one process there, sharing its stdout.
//
// The threads a rank starts besides its own and their locks are SimGrid's there (an actor on the
// rank's host, its mutexes and condition variables): a pthread primitive that blocks would block
// the one thread every actor runs on. An actor started so holds the rank's SMPI context (its
// clock, its shared memory) but cannot exchange messages: SimGrid 3.32 posts a message from, and
// delivers it to, the actor that calls MPI, and matches it to the rank's own actor only. So the
// rank's own actor is the one that communicates (mpi_overlap.c: overlap_run_beside).
//
// Everything else reads SIMULATED as an ordinary constant, so that both builds compile every line.
#ifndef SIMULATION_H
#define SIMULATION_H

#include <pthread.h>
#include <stdlib.h>

#ifdef GPT2_SMPI
#include <simgrid/actor.h>
#include <simgrid/cond.h>
#include <simgrid/host.h>
#include <simgrid/mutex.h>
#include <smpi/smpi.h>
enum { SIMULATED = 1 };
// `seconds` on one core of the simulated host, however short (smpi_execute drops what is under
// smpi/cpu-threshold)
static inline void simulate_seconds(double seconds) { smpi_execute_flops(seconds * sg_host_get_speed(sg_host_self())); }
// `bytes` of memory traffic at the simulated host's speed
static inline void simulate_bytes(double bytes) { smpi_execute_flops(bytes); }
// scratch that no rank reads back: shared among the ranks as the gradients are (core/model.c)
static inline void *scratch_malloc(size_t bytes) { return SMPI_SHARED_MALLOC(bytes); }
static inline void scratch_free(void *p) {
    if (p) SMPI_SHARED_FREE(p);
}

typedef sg_actor_t Thread;
typedef sg_mutex_t Lock;
typedef sg_cond_t Condition;
typedef struct {
    void *(*body)(void *);
    void *arg;
} ActorStart;
static inline void actor_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    SMPI_thread_create(); // the rank's context: its clock and its shared memory
    ActorStart *start = sg_actor_self_get_data(), copy = *start;
    free(start);
    copy.body(copy.arg);
}
// 0, or -1 (memory)
static inline int thread_start(Thread *thread, void *(*body)(void *), void *arg) {
    ActorStart *start = malloc(sizeof(*start));
    if (!start) return -1;
    *start = (ActorStart){body, arg};
    *thread = sg_actor_init("gpt2-mpi thread", sg_host_self());
    sg_actor_ref(*thread); // alive until joined, however soon it ends
    sg_actor_set_data(*thread, start);
    sg_actor_start(*thread, actor_main, 0, NULL);
    return 0;
}
static inline void thread_join(Thread *thread) {
    sg_actor_join(*thread, -1.0);
    sg_actor_unref(*thread);
}
static inline void lock_init(Lock *lock) { *lock = sg_mutex_init(); }
static inline void lock_destroy(Lock *lock) { sg_mutex_destroy(*lock); }
static inline void lock_acquire(Lock *lock) { sg_mutex_lock(*lock); }
static inline void lock_release(Lock *lock) { sg_mutex_unlock(*lock); }
static inline void condition_init(Condition *c) { *c = sg_cond_init(); }
static inline void condition_destroy(Condition *c) { sg_cond_destroy(*c); }
static inline void condition_wait(Condition *c, Lock *lock) { sg_cond_wait(*c, *lock); }
static inline void condition_signal(Condition *c) { sg_cond_notify_one(*c); }
static inline void condition_broadcast(Condition *c) { sg_cond_notify_all(*c); }
#else
enum { SIMULATED = 0 };
static inline void simulate_seconds(double seconds) { (void)seconds; }
static inline void simulate_bytes(double bytes) { (void)bytes; }
static inline void *scratch_malloc(size_t bytes) { return malloc(bytes); }
static inline void scratch_free(void *p) { free(p); }

typedef pthread_t Thread;
typedef pthread_mutex_t Lock;
typedef pthread_cond_t Condition;
static inline int thread_start(Thread *thread, void *(*body)(void *), void *arg) {
    return pthread_create(thread, NULL, body, arg) == 0 ? 0 : -1;
}
static inline void thread_join(Thread *thread) { pthread_join(*thread, NULL); }
static inline void lock_init(Lock *lock) { pthread_mutex_init(lock, NULL); }
static inline void lock_destroy(Lock *lock) { pthread_mutex_destroy(lock); }
static inline void lock_acquire(Lock *lock) { pthread_mutex_lock(lock); }
static inline void lock_release(Lock *lock) { pthread_mutex_unlock(lock); }
static inline void condition_init(Condition *c) { pthread_cond_init(c, NULL); }
static inline void condition_destroy(Condition *c) { pthread_cond_destroy(c); }
static inline void condition_wait(Condition *c, Lock *lock) { pthread_cond_wait(c, lock); }
static inline void condition_signal(Condition *c) { pthread_cond_signal(c); }
static inline void condition_broadcast(Condition *c) { pthread_cond_broadcast(c); }
#endif

#endif
