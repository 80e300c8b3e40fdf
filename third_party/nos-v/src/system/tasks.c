/*
	This file is part of nOS-V and is licensed under the terms contained in the COPYING file.

	Copyright (C) 2021-2026 Barcelona Supercomputing Center (BSC)
*/

#include "generic/clock.h"
#include "generic/cpuset.h"
#include "generic/list.h"
#include "hardware/pids.h"
#include "hardware/topology.h"
#include "hwcounters/hwcounters.h"
#include "instr.h"
#include "memory/slab.h"
#include "monitoring/monitoring.h"
#include "nosv-internal.h"
#include "scheduler/scheduler.h"
#include "support/affinity.h"
#include "system/tasks.h"
#include "system/taskgroup.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/errno.h>

__internal task_type_manager_t *task_type_manager;
__internal thread_local int32_t rt_attach_refcount = 0;
__internal thread_local uint8_t rt_attach_instr = 0;

// Start the taskid and typeid counters at 1 so we have the same
// identifiers in Paraver. It is also used to check for overflows.
static atomic_uint64_t taskid_counter = 1;
static atomic_uint32_t typeid_counter = 1;

extern __internal thread_local struct kinstr *kinstr;

static nosv_affinity_t default_affinity;

#define LABEL_MAX_CHAR 128

//! \brief Initialize the manager of task types
void task_type_manager_init(void)
{
	task_type_manager = (task_type_manager_t *) malloc(sizeof(task_type_manager_t));
	assert(task_type_manager != NULL);

	// Initialize the list of tasktypes and the spinlock
	list_init(&task_type_manager->types);
	nosv_spin_init(&task_type_manager->lock);
}

static inline nosv_affinity_t parse_affinity_from_config(void)
{
	nosv_affinity_t ret;
	const char *affinity = nosv_config.task_affinity_default;

	// Start by splitting the prefix and the index
	const char *sep = strchr(affinity, '-');

	// Check if sep is NULL (not found)
	if (!sep)
		nosv_abort("Malformed default_affinity string");

	const char *index = sep + 1;
	size_t prefix_len = sep - affinity;

	if (prefix_len == strlen("cpu") && !strncmp(affinity, "cpu", prefix_len))
		ret.level = NOSV_AFFINITY_LEVEL_CPU;
	else if (prefix_len == strlen("numa") && !strncmp(affinity, "numa", prefix_len))
		ret.level = NOSV_AFFINITY_LEVEL_NUMA;
	else
		nosv_abort("Unknown default affinity level");

	errno = 0;
	unsigned long parsed_index = strtoul(index, NULL, 10);

	if (errno)
		nosv_abort("Invalid default affinity index");

	ret.index = parsed_index;

	if (!strcmp(nosv_config.task_affinity_default_policy, "strict"))
		ret.type = NOSV_AFFINITY_TYPE_STRICT;
	else
		ret.type = NOSV_AFFINITY_TYPE_PREFERRED;

	return ret;
}

// Initialize the task default affinity parsing the configuration
void task_affinity_init(void)
{
	if (!strcmp(nosv_config.task_affinity_default, "all")) {
		default_affinity.index = 0;
		default_affinity.level = NOSV_AFFINITY_LEVEL_NONE;
		default_affinity.type = 0;
	} else {
		default_affinity = parse_affinity_from_config();
	}
}

list_head_t *task_type_manager_get_list(void)
{
	return &(task_type_manager->types);
}

void task_attach_refcount_init(void)
{
	rt_attach_refcount = 0;
}

//! \brief Shutdown the manager of task types
void task_type_manager_shutdown(void)
{
	// Destroy the spinlock and the manager
	nosv_spin_destroy(&task_type_manager->lock);

	list_head_t *list = task_type_manager_get_list();
	list_head_t *head;
	list_for_each_pop(head, list) {
		nosv_task_type_t type = list_elem(head, struct nosv_task_type, list_hook);
		if (type != NULL) {
			if (type->label)
				free((void *)type->label);

			sfree(type, sizeof(struct nosv_task_type) + monitoring_get_tasktype_size(), cpu_get_current());
		}
	}

	free(task_type_manager);
}

/* Create a task type with certain run/end callbacks and a label */
int nosv_type_init(
	nosv_task_type_t *type /* out */,
	nosv_task_run_callback_t run_callback,
	nosv_task_end_callback_t end_callback,
	nosv_task_completed_callback_t completed_callback,
	const char *label,
	void *metadata,
	nosv_cost_function_t cost_function,
	nosv_flags_t flags)
{
	if (unlikely(!type))
		return NOSV_ERR_INVALID_PARAMETER;

	if (unlikely(!run_callback && !(flags & NOSV_TYPE_INIT_EXTERNAL)))
		return NOSV_ERR_INVALID_CALLBACK;

	nosv_task_type_t res = salloc(
		sizeof(struct nosv_task_type) +
		monitoring_get_tasktype_size(),
		cpu_get_current()
	);

	if (!res)
		return NOSV_ERR_OUT_OF_MEMORY;

	res->run_callback = run_callback;
	res->end_callback = end_callback;
	res->completed_callback = completed_callback;
	res->metadata = metadata;
	res->pid = logic_pid;
	res->typeid = atomic_fetch_add_explicit(&typeid_counter, 1, memory_order_relaxed);
	res->get_cost = cost_function;
	list_init(&(res->list_hook));

	// Monitoring type statistics are right after the type's memory
	res->stats = (tasktype_stats_t *) (((char *) res) + sizeof(struct nosv_task_type));

	if (label) {
		res->label = strndup(label, LABEL_MAX_CHAR - 1);
		assert(res->label);
	} else {
		res->label = NULL;
	}

	instr_type_create(res->typeid, res->label);

	// Add the task type to the list of registered task types
	nosv_spin_lock(&task_type_manager->lock);
	list_add_tail(&task_type_manager->types, &(res->list_hook));
	nosv_spin_unlock(&task_type_manager->lock);

	// Entry point - A type has just been created
	monitoring_type_created(res);

	*type = res;

	return NOSV_SUCCESS;
}

/* Getters and setters */
nosv_task_run_callback_t nosv_get_task_type_run_callback(nosv_task_type_t type)
{
	return type->run_callback;
}

nosv_task_end_callback_t nosv_get_task_type_end_callback(nosv_task_type_t type)
{
	return type->end_callback;
}

nosv_task_completed_callback_t nosv_get_task_type_completed_callback(nosv_task_type_t type)
{
	return type->completed_callback;
}

const char *nosv_get_task_type_label(nosv_task_type_t type)
{
	return type->label;
}

// TODO: Maybe it's worth it to place the metadata at the top to prevent continuous calls to nOS-V
void *nosv_get_task_type_metadata(nosv_task_type_t type)
{
	return type->metadata;
}

int nosv_type_destroy(
	nosv_task_type_t type,
	nosv_flags_t flags)
{
	// Empty, used for API completeness. Types are destroyed in
	// task_type_manager_shutdown
	return NOSV_SUCCESS;
}

static inline nosv_flags_t task_get_internal_flags(nosv_flags_t flags)
{
	nosv_flags_t internal_flags = 0;

	if (flags & NOSV_CREATE_PARALLEL)
		internal_flags |= TASK_FLAG_CREATE_PARALLEL;

	if (flags & NOSV_CREATE_JOINABLE)
		internal_flags |= TASK_FLAG_CREATE_JOINABLE;

	return internal_flags;
}

static inline int nosv_create_internal(nosv_task_t *task /* out */,
	nosv_task_type_t type,
	size_t metadata_size,
	nosv_flags_t flags)
{
	nosv_task_t res = salloc(
		sizeof(struct nosv_task) +   /* Size of the struct itself */
		metadata_size +              /* The size needed to allocate the task's metadata */
		hwcounters_get_task_size() + /* Size needed to allocate hardware counter for the task */
		monitoring_get_task_size(),  /* Size needed to allocate monitoring stats for the task */
		cpu_get_current()
	);

	if (!res)
		return NOSV_ERR_OUT_OF_MEMORY;

	res->type = type;
	res->metadata = metadata_size;
	res->worker = NULL;
	atomic_init(&res->event_count, 1);
	atomic_init(&res->blocking_count, 1);
	res->affinity = default_affinity;
	res->priority = 0;
	res->had_events = 0;
	list_init(&res->list_hook);
	list_init(&res->list_hook_cond);

	res->deadline = 0;
	atomic_init(&res->deadline_state, NOSV_DEADLINE_NONE);
	res->yield = 0;
	res->wakeup = NULL;
	res->to_join = NULL;
	res->taskid = atomic_fetch_add_explicit(&taskid_counter, 1, memory_order_relaxed);
	res->counters = (task_hwcounters_t *) (((char *) res) + sizeof(struct nosv_task) + metadata_size);
	res->stats = (task_stats_t *) (((char *) res) + sizeof(struct nosv_task) + metadata_size + hwcounters_get_task_size());

	atomic_store_explicit(&(res->degree), 1, memory_order_relaxed);
	res->scheduled_count = 0;
	res->flags = task_get_internal_flags(flags);

	task_group_init(&res->submit_window);
	res->submit_window_maxsize = 1;

	res->suspend_args = 0;
	atomic_init(&res->resval, (uintptr_t)NULL);
	nosv_spin_init(&res->join_lock);

	// Initialize hardware counters and monitoring for the task
	hwcounters_task_created(res, /* enabled */ 1);
	monitoring_task_created(res);

	*task = res;

	if (flags & NOSV_CREATE_PARALLEL)
		instr_task_create_par((uint32_t)res->taskid, res->type->typeid);
	else
		instr_task_create((uint32_t)res->taskid, res->type->typeid);

	return NOSV_SUCCESS;
}

/* May return NOSV_ERR_OUT_OF_MEMORY. 0 on success */
/* Callable from everywhere */
int nosv_create(
	nosv_task_t *task /* out */,
	nosv_task_type_t type,
	size_t metadata_size,
	nosv_flags_t flags)
{
	if (unlikely(!task))
		return NOSV_ERR_INVALID_PARAMETER;

	if (unlikely(!type))
		return NOSV_ERR_INVALID_PARAMETER;

	if (unlikely(metadata_size > NOSV_MAX_METADATA_SIZE))
		return NOSV_ERR_INVALID_METADATA_SIZE;

	instr_create_enter();

	// Update the counters of the current task if it exists, as we don't want
	// the creation to be accounted in this task's counters
	nosv_task_t current_task = worker_current_task();
	if (current_task) {
		hwcounters_update_task_counters(current_task);
		monitoring_task_changed_status(current_task, paused_status);
	}

	int ret = nosv_create_internal(task, type, metadata_size, flags);

	if (current_task) {
		hwcounters_update_runtime_counters();
		monitoring_task_changed_status(current_task, executing_status);
	}

	instr_create_exit();

	return ret;
}

/* Getters and setters */
/* Read-only task attributes */
void *nosv_get_task_metadata(nosv_task_t task)
{
	// Check if any metadata was allocated
	if (task->metadata)
		return ((char *) task) + sizeof(struct nosv_task);

	return NULL;
}

nosv_task_type_t nosv_get_task_type(nosv_task_t task)
{
	return task->type;
}

/* Read-write task attributes */
int nosv_get_task_priority(nosv_task_t task)
{
	return task->priority;
}

void nosv_set_task_priority(nosv_task_t task, int priority)
{
	task->priority = priority;
}

/* Callable from everywhere */
int nosv_submit(
	nosv_task_t task,
	nosv_flags_t flags)
{
	if (unlikely(!task))
		return NOSV_ERR_INVALID_PARAMETER;

	const bool is_blocking = (flags & NOSV_SUBMIT_BLOCKING);
	const bool is_immediate = (flags & NOSV_SUBMIT_IMMEDIATE) && nosv_config.sched_immediate_successor;
	const bool is_inline = (flags & NOSV_SUBMIT_INLINE);
	const bool is_dl_wake = (flags & NOSV_SUBMIT_DEADLINE_WAKE);

	// These submit modes are mutually exclusive
	if (unlikely(is_immediate + is_blocking + is_inline + is_dl_wake > 1))
		return NOSV_ERR_INVALID_OPERATION;

	if (is_blocking || is_inline) {
		// These submit modes cannot be used from outside a task context
		if (!worker_is_in_task())
			return NOSV_ERR_OUTSIDE_TASK;
	}

	// This combination would make no sense
	if (is_inline && task_is_parallel(task))
		return NOSV_ERR_INVALID_OPERATION;

	// Parallel tasks cannot block
	if (is_dl_wake && task_is_parallel(task))
		return NOSV_ERR_INVALID_OPERATION;
	if (is_blocking && task_is_parallel(worker_current_task()))
		return NOSV_ERR_INVALID_OPERATION;

	// If the task was completed and resubmitted, reset to_join
	if (task_is_joinable(task) && task->to_join == TASK_TO_JOIN_COMPLETED_TASK) {
		task->to_join = NULL;
	}

	// If we're in a task context, update task counters now since we don't want
	// the creation to be added to the counters of the task
	nosv_task_t current_task = worker_current_task();
	if (current_task) {
		hwcounters_update_task_counters(current_task);
		monitoring_task_changed_status(current_task, paused_status);
	}

	instr_submit_enter();
	monitoring_task_submitted(task);

	nosv_worker_t *worker = worker_current();
	if (is_blocking)
		task->wakeup = worker->handle.task;

	int32_t count;

	// Entry point - The task became ready
	monitoring_task_changed_status(task, ready_status);

	// If we have an immediate successor we don't place the task into the scheduler
	// However, if we're not in a worker context, or we are currently executing a task,
	// we will ignore the request, as it would hang the program.
	// Additionally, we will reject to place as IS parallel tasks
	if (is_immediate && worker && !task_is_parallel(task)) {
		count = atomic_fetch_sub_explicit(&task->blocking_count, 1, memory_order_relaxed) - 1;
		if (count == 0) {
			if (worker_get_immediate()) {
				// Setting a new immediate successor, but there was already one.
				// Place the new one and send the old one to the scheduler
				scheduler_batch_submit(worker_get_immediate());
			}
			worker_set_immediate(task);
		}
	} else if (is_inline) {
		nosv_flush_submit_window();

		nosv_worker_t *worker = worker_current();
		assert(worker);

		count = atomic_fetch_sub_explicit(&task->blocking_count, 1, memory_order_relaxed) - 1;
		assert(count == 0);

		task_execution_handle_t old_handle = worker->handle;
		assert(old_handle.task);

		uint32_t old_bodyid = instr_get_bodyid(old_handle);
		instr_task_pause((uint32_t)old_handle.task->taskid, old_bodyid);

		task_execution_handle_t handle = {
			.task = task,
			.execution_id = 1
		};
		task_execute(handle);

		instr_task_resume((uint32_t)old_handle.task->taskid, old_bodyid);

		// Restore old task
		worker->handle = old_handle;
	} else if (is_dl_wake) {
		deadline_state_t state = atomic_exchange_explicit(&task->deadline_state, NOSV_DEADLINE_READY, memory_order_relaxed);
		if (state == NOSV_DEADLINE_WAITING)
			scheduler_request_deadline_purge();
	} else {
		count = atomic_fetch_sub_explicit(&task->blocking_count, 1, memory_order_relaxed) - 1;

		if (count == 0)
			scheduler_batch_submit(task);
	}

	if (is_blocking)
		task_pause(current_task, /* use_blocking_count */ 1);

	if (current_task) {
		hwcounters_update_runtime_counters();
		monitoring_task_changed_status(current_task, executing_status);
	}

	instr_submit_exit();

	return NOSV_SUCCESS;
}

void task_pause(
	nosv_task_t task,
	int blocking_count)
{
	nosv_worker_t *worker = worker_current();

	assert(task);
	assert(task == worker_current_task());
	assert(!task_is_parallel(task));

	nosv_flush_submit_window();

	// Thread might yield, read and accumulate hardware counters for the task that blocks
	hwcounters_update_task_counters(task);
	monitoring_task_changed_status(task, paused_status);

	uint32_t bodyid = instr_get_bodyid(worker->handle);
	instr_task_pause((uint32_t)task->taskid, bodyid);

	int32_t count = 1;
	if (blocking_count > 0)
		count = atomic_fetch_add_explicit(&task->blocking_count, blocking_count, memory_order_relaxed) + blocking_count;

	// If r < 1, we have already been unblocked
	if (count > 0)
		worker_yield_pausing_task(task);

	assert(atomic_load_explicit(&task->blocking_count, memory_order_relaxed) <= 0);

	// Thread might have been resumed here, read and accumulate hardware counters for the CPU
	hwcounters_update_runtime_counters();
	monitoring_task_changed_status(task, executing_status);

	instr_task_resume((uint32_t)task->taskid, bodyid);
}

/* Blocking, yield operation */
/* Callable from a task context ONLY */
int nosv_pause(
	nosv_flags_t flags)
{
	// We have to be inside a worker
	nosv_worker_t *worker = worker_current();
	if (!worker || !worker->handle.task)
		return NOSV_ERR_OUTSIDE_TASK;

	if (kinstr)
		instr_kernel_flush(kinstr);

	nosv_flush_submit_window();

	nosv_task_t task = worker_current_task();
	assert(task);

	// Parallel tasks cannot be blocked
	if (task_is_parallel(task))
		return NOSV_ERR_INVALID_OPERATION;

	instr_pause_enter();

	task_pause(task, /* use_blocking_count */1);

	instr_pause_exit();

	return NOSV_SUCCESS;
}

int nosv_cancel(
	nosv_flags_t flags)
{
	if (!worker_is_in_task())
		return NOSV_ERR_OUTSIDE_TASK;

	nosv_task_t task = worker_current_task();
	assert(task);

	int32_t degree = task_get_degree(task);
	assert(degree != 0);

	do {
		if (degree < 0)
			return NOSV_ERR_INVALID_OPERATION;
	} while (!atomic_compare_exchange_weak_explicit(&(task->degree), &degree, -degree, memory_order_relaxed, memory_order_relaxed));

	return NOSV_SUCCESS;
}

static inline int set_task_deadline(nosv_task_t task, const uint64_t start_time, uint64_t timeout)
{
	task->deadline = start_time + timeout;
	deadline_state_t expected = NOSV_DEADLINE_NONE;
	deadline_state_t desired = NOSV_DEADLINE_PENDING;
	if (!atomic_compare_exchange_strong_explicit(&task->deadline_state, &expected, desired, memory_order_relaxed, memory_order_relaxed)) {
		assert(expected == NOSV_DEADLINE_READY);
		atomic_store_explicit(&task->deadline_state, NOSV_DEADLINE_NONE, memory_order_relaxed);
		// Unblocked
		task->deadline = 0;
		return 0;
	}
	return 1;
}

static inline int task_waitfor(
	nosv_task_t task,
	uint64_t target_ns,
	uint64_t *actual_ns /* out */)
{
	nosv_worker_t *worker = worker_current();

	assert(task);
	assert(task == worker_current_task());
	assert(!task_is_parallel(task));

	// Thread is gonna yield, read and accumulate hardware counters for the task
	hwcounters_update_task_counters(task);
	monitoring_task_changed_status(task, ready_status);

	uint32_t bodyid = instr_get_bodyid(worker->handle);
	instr_task_pause((uint32_t)task->taskid, bodyid);

	const uint64_t start_ns = clock_ns();
	int res = set_task_deadline(task, start_ns, target_ns);

	if (res) {
		// Submit the task to re-schedule when the deadline is done
		// Forego the current
		scheduler_submit_single(task);
		// Block until the deadline expires
		worker_yield();
	}

	// Thread has been resumed, read and accumulate hardware counters for the CPU
	hwcounters_update_runtime_counters();
	monitoring_task_changed_status(task, executing_status);

	if (actual_ns)
		*actual_ns = clock_ns() - start_ns;

	instr_task_resume((uint32_t)task->taskid, bodyid);

	return NOSV_SUCCESS;
}

/* Deadline tasks */
int nosv_waitfor(
	uint64_t target_ns,
	uint64_t *actual_ns /* out */)
{
	// We have to be inside a worker
	nosv_worker_t *worker = worker_current();
	if (!worker || !worker->handle.task)
		return NOSV_ERR_OUTSIDE_TASK;

	if (kinstr)
		instr_kernel_flush(kinstr);

	nosv_task_t task = worker->handle.task;

	// Parallel tasks cannot be blocked
	if (task_is_parallel(task))
		return NOSV_ERR_INVALID_OPERATION;

	instr_waitfor_enter();

	nosv_flush_submit_window();

	int err = task_waitfor(task, target_ns, actual_ns);
	instr_waitfor_exit();

	return err;
}

/* Yield operation */
/* Restriction: Can only be called from a task context */
int nosv_yield(
	nosv_flags_t flags)
{
	nosv_task_t task = worker_current_task();
	if (!task)
		return NOSV_ERR_OUTSIDE_TASK;

	// Parallel tasks cannot be blocked
	if (task_is_parallel(task))
		return NOSV_ERR_INVALID_OPERATION;

	// Only constant time checks before emitting the instrumentation event
	instr_yield_enter();

	if (kinstr)
		instr_kernel_flush(kinstr);

	if (!(flags & NOSV_YIELD_NOFLUSH))
		nosv_flush_submit_window();

	// Thread is gonna yield, read and accumulate hardware counters for the task
	hwcounters_update_task_counters(task);
	monitoring_task_changed_status(task, ready_status);

	// Mark the task as yield
	task->yield = -1;

	// Yield the CPU if there is available work in the scheduler
	worker_yield_yielding_task(task);

	// Unmark the task as yield
	task->yield = 0;

	// Thread has been resumed, read and accumulate hardware counters for the CPU
	hwcounters_update_runtime_counters();
	monitoring_task_changed_status(task, executing_status);

	instr_yield_exit();

	return NOSV_SUCCESS;
}

int nosv_schedpoint(
	nosv_flags_t flags)
{
	int pid, yield, cpuid;
	uint64_t ts;

	if (kinstr)
		instr_kernel_flush(kinstr);

	if (!worker_is_in_task())
		return NOSV_ERR_OUTSIDE_TASK;

	nosv_flush_submit_window();

	nosv_task_t task = worker_current_task();
	assert(task);

	// Parallel tasks cannot be blocked
	if (task_is_parallel(task))
		return NOSV_ERR_INVALID_OPERATION;

	// Thread is gonna yield, read and accumulate hardware counters for the task
	hwcounters_update_task_counters(task);
	monitoring_task_changed_status(task, ready_status);

	instr_schedpoint_enter();

	cpuid = cpu_get_current();
	pid = cpu_get_pid(cpuid);

	// Check if the current PID's quantum is exceeded
	yield = scheduler_should_yield(pid, cpuid, &ts);

	if (yield) {
		// Yield the CPU if there is available work in the scheduler
		worker_yield_yielding_task(task);

		cpuid = cpu_get_current();

		// Give a new quantum to the process because it may have returned
		// to this same task directly if there are no other ready tasks
		scheduler_reset_accounting(pid, cpuid);
	}

	// Thread has been resumed, read and accumulate hardware counters for the CPU
	hwcounters_update_runtime_counters();
	monitoring_task_changed_status(task, executing_status);

	instr_schedpoint_exit();

	return NOSV_SUCCESS;
}

/* Callable from everywhere */
int nosv_destroy(
	nosv_task_t task,
	nosv_flags_t flags)
{
	if (unlikely(!task))
		return NOSV_ERR_INVALID_PARAMETER;

	if (task_is_joinable(task) && (task == worker_current_task()))
		return NOSV_ERR_INVALID_PARAMETER;

	instr_destroy_enter();

	sfree(task, sizeof(struct nosv_task) +
		task->metadata +
		hwcounters_get_task_size() +
		monitoring_get_task_size(),
		cpu_get_current()
	);

	instr_destroy_exit();

	return NOSV_SUCCESS;
}

static inline void task_complete(nosv_task_t task)
{
	// Entry point - A task has just completed its execution
	monitoring_task_completed(task);

	nosv_task_t wakeup = task->wakeup;
	task->wakeup = NULL;

	atomic_store_explicit(&task->event_count, 1, memory_order_relaxed);
	task->scheduled_count = 0;

	int is_joinable = task_is_joinable(task);

	if (task->type->completed_callback) {
		atomic_thread_fence(memory_order_acquire);
		task->type->completed_callback(task);
		atomic_thread_fence(memory_order_release);
	}
	// From here, task may be freed!

	if (is_joinable) {
		nosv_spin_lock(&task->join_lock);
		uint32_t timeout_join = task->flags & TASK_FLAG_JOIN_TIMEOUT;
		nosv_task_t to_join = task->to_join;
		assert(to_join != TASK_TO_JOIN_COMPLETED_TASK);
		task->to_join = TASK_TO_JOIN_COMPLETED_TASK;
		nosv_spin_unlock(&task->join_lock);

		if (to_join) {
			if (timeout_join)
				nosv_submit(to_join, NOSV_SUBMIT_DEADLINE_WAKE);
			else
				nosv_submit(to_join, NOSV_SUBMIT_NONE);
		}
	}

	if (wakeup)
		nosv_submit(wakeup, NOSV_SUBMIT_UNLOCKED);
}

static inline void task_suspend(nosv_task_t task)
{
	uint32_t res = 0;

	nosv_flags_t flags = task->flags & TASK_FLAG_SUSPEND_MODE_MASK;
	uint64_t args =  task->suspend_args;
	int32_t count;

	task->suspend_args = 0;
	task->flags &= ~TASK_FLAG_SUSPEND_MODE_MASK;
	task->flags &= ~TASK_FLAG_SUSPEND;

	switch (flags) {
		case 0: // NOSV_SUSPEND_NONE
			count = atomic_fetch_add_explicit(&task->blocking_count, 1, memory_order_relaxed) + 1;

			// If blocking_count was <= -1, some task tried resubmit the current task and was not able to do it, instead resubmit the task here
			if (count <= 0)
				scheduler_submit_single(task);
			break;
		case TASK_FLAG_SUSPEND_MODE_TIMEOUT:
			// Independently of the result of this operation the task must be resubmitted
			res = set_task_deadline(task, clock_ns(), args);
			assert(res);
			scheduler_submit_single(task);
			break;
		case TASK_FLAG_SUSPEND_MODE_SUBMIT:
			assert(args == 1 || args == 0);
			// If args = 1, it is a yield
			task->yield = args;
			scheduler_submit_single(task);
			break;
		case TASK_FLAG_SUSPEND_MODE_EVENT:
			res = atomic_fetch_or_explicit(&task->event_count, TASK_WAITING_FOR_EVENTS, memory_order_relaxed);
			res = res & ~TASK_WAITING_FOR_EVENTS;

			// If res (old value) is 1, it wasn't waiting for events and we have to re-submit here
			if (res == 1) {
				// Remove the flag from the event_count
				atomic_fetch_and_explicit(&task->event_count, ~TASK_WAITING_FOR_EVENTS, memory_order_relaxed);
				scheduler_submit_single(task);
			}
			break;
	}
}

void task_execute(task_execution_handle_t handle)
{
	nosv_task_t task = handle.task;
	assert(task);
	nosv_worker_t *worker = worker_current();
	assert(worker);

	if (!task_is_parallel(task)) {
		assert(!task->worker);
		task->worker = worker;
	}
	worker->handle = handle;

	// Task is about to execute, update runtime counters
	hwcounters_update_runtime_counters();
	monitoring_task_changed_status(task, executing_status);

	const uint32_t taskid = (uint32_t) task->taskid;
	const uint32_t bodyid = instr_get_bodyid(handle);
	instr_task_execute(taskid, bodyid);

	worker->in_task_body = 1;

	atomic_thread_fence(memory_order_acquire);
	task->type->run_callback(task);
	atomic_thread_fence(memory_order_release);

	worker->in_task_body = 0;

	if (!task_should_suspend(task) && task->type->end_callback) {
		atomic_thread_fence(memory_order_acquire);
		task->type->end_callback(task);
		atomic_thread_fence(memory_order_release);
	}

	instr_task_end(taskid, bodyid);

	nosv_flush_submit_window();

	// Task just completed, read and accumulate hardware counters for the task
	hwcounters_update_task_counters(task);
	monitoring_task_changed_status(task, paused_status);

	// After the run and end callbacks, we can safely reset the task in case it has to be re-entrant
	// Remove stack frame
	// Remove the worker assigned to this task
	task->worker = NULL;
	// Remove the task assigned to the worker as well
	worker->handle = EMPTY_TASK_EXECUTION_HANDLE;

	if (task_should_suspend(task)) {
		task_suspend(task);
	} else {
		// Reset the blocking count
		atomic_store_explicit(&task->blocking_count, 1, memory_order_relaxed);

		uint32_t res = atomic_fetch_sub_explicit(&task->event_count, 1, memory_order_relaxed) - 1;
		if (!res) {
			task_complete(task);
		}
		// Warning: from this point forward, "task" may have been freed, and thus it is not safe to access
	}
}

/* Events API */
/* Restriction: Can only be called from a task context */
int nosv_increase_event_counter(
	uint64_t increment)
{
	if (!increment)
		return NOSV_ERR_INVALID_PARAMETER;

	nosv_task_t current = worker_current_task();
	if (!current)
		return NOSV_ERR_OUTSIDE_TASK;

	current->had_events = 1;
	atomic_fetch_add_explicit(&current->event_count, increment, memory_order_relaxed);

	return NOSV_SUCCESS;
}

/* Return if the current task has events */
/* This call is intended as a hint */
/* Another thread can decrease the events at any time */
/* The only case where the result is guaranteed to be correct is when there are no events */
/* Restriction: Can only be called from a task context */
int nosv_has_events(void)
{
	nosv_task_t current = worker_current_task();
	if (!current)
		return NOSV_ERR_OUTSIDE_TASK;

	uint32_t res = atomic_load_explicit(&current->event_count, memory_order_relaxed);
	// Remove events waiting flag
	res = res & ~TASK_WAITING_FOR_EVENTS;
	return (res > 1);
}

/* Restriction: Can only be called from a nOS-V Worker */
int nosv_decrease_event_counter(
	nosv_task_t task,
	uint64_t decrement)
{
	if (!task)
		return NOSV_ERR_INVALID_PARAMETER;

	if (!decrement)
		return NOSV_ERR_INVALID_PARAMETER;

	// If a task is in here, make sure this is not accounted as executing
	nosv_task_t current = worker_current_task();
	if (current) {
		hwcounters_update_task_counters(current);
		monitoring_task_changed_status(current, paused_status);
	}

	uint32_t r = atomic_fetch_sub_explicit(&task->event_count, decrement, memory_order_relaxed) - decrement;
	const uint32_t r_count = r & ~TASK_WAITING_FOR_EVENTS;
	const uint32_t r_flag = r & TASK_WAITING_FOR_EVENTS;

	if (r_flag) {
		if (r_count == 1) {
			atomic_fetch_and_explicit(&task->event_count, ~TASK_WAITING_FOR_EVENTS, memory_order_relaxed);
			scheduler_submit_single(task);
		}
	}

	if (!r) {
		task_complete(task);
	}

	if (current) {
		hwcounters_update_runtime_counters();
		monitoring_task_changed_status(current, executing_status);
	}

	return NOSV_SUCCESS;
}

int nosv_task_had_events(nosv_task_t task)
{
	if (!task)
		return NOSV_ERR_INVALID_PARAMETER;

	return task->had_events;
}

/*
	Attach "adopts" an external thread. We have to create a nosv_worker to represent this thread,
	and create an implicit task. Note that the task's callbacks will not be called, and we will
	consider it an error.
	The task will be placed with an attached worker into the scheduler, and the worker will be blocked.
*/
int nosv_attach(
	nosv_task_t *task /* out */,
	nosv_affinity_t *affinity,
	const char * label,
	nosv_flags_t flags)
{
	if (flags & ~NOSV_ATTACH_INSTRUMENT)
		return NOSV_ERR_INVALID_PARAMETER;

	if (flags & NOSV_ATTACH_INSTRUMENT) {
		if (is_init_thread()) {
			nosv_abort("cannot use flag NOSV_ATTACH_INSTRUMENT (instrumented by nosv_init)");
		} else if (rt_attach_refcount) {
			nosv_abort("cannot use flag NOSV_ATTACH_INSTRUMENT (we are a nested attach -> thread is already instrumented)");
		} else if (instr_thread_isready()) {
			nosv_abort("cannot use flag NOSV_ATTACH_INSTRUMENT (thread is already instrumented externally)");
		} else {
			instr_thread_init();
			instr_thread_execute(-1, -1, 0);
			rt_attach_instr = 1;
		}
	}

	instr_attach_enter();

	if (unlikely(!task)) {
		instr_attach_exit();
		return NOSV_ERR_INVALID_PARAMETER;
	}

	// Mind nested nosv_attach and nosv_detach
	if (rt_attach_refcount++) {
		// Check that between nosv_attaches turbo has not changed
		worker_check_turbo();
		instr_attach_exit();
		return NOSV_SUCCESS;
	}

	assert(!worker_current());

	nosv_task_type_t type;
	int ret = nosv_type_init(&type, NULL, NULL, NULL, label, NULL, NULL, NOSV_TYPE_INIT_EXTERNAL);
	if (ret != NOSV_SUCCESS) {
		instr_attach_exit();
		return ret;
	}

	nosv_worker_t *worker = worker_create_external();
	assert(worker);

	ret = nosv_create_internal(task, type, 0, NOSV_CREATE_NONE);
	if (ret) {
		worker_free_external(worker);
		instr_attach_exit();
		return ret;
	}

	// We created the task fine. Now map the task to the worker
	nosv_task_t t = *task;
	task_execution_handle_t handle = {
		.task = t,
		.execution_id = 1
	};

	t->worker = worker;
	worker->handle = handle;

	// Set the affinity if required
	if (affinity != NULL) {
		t->affinity = *affinity;
	}

	atomic_fetch_sub_explicit(&t->blocking_count, 1, memory_order_relaxed);

	// Register worker in the affinity support facility
	affinity_support_register_worker(worker, 0);

	// Entry point - A task becomes ready
	monitoring_task_changed_status(t, ready_status);

	// Submit task for scheduling at an actual CPU
	scheduler_submit_single(t);

	// Block the worker
	worker_swap(NULL, NULL, 0);
	// Now we have been scheduled, return

	// Task is about to execute, update runtime counters
	hwcounters_update_runtime_counters();
	monitoring_task_changed_status(t, executing_status);

	instr_attach_exit();

	// Inform the instrumentation about the new task being in
	// execution, as it won't pass via task_execute()
	instr_task_execute((uint32_t)t->taskid, instr_get_bodyid(handle));

	return NOSV_SUCCESS;
}

/*
	Detach removes the external thread. We must free the associated worker and task,
	and restore a different worker in the current CPU.
*/
int nosv_detach(
	nosv_flags_t flags)
{
	if (flags & ~(NOSV_DETACH_NO_RESTORE_AFFINITY | NOSV_DETACH_INSTRUMENT))
		return NOSV_ERR_INVALID_PARAMETER;

	// First, make sure we are on a worker context
	nosv_worker_t *worker = worker_current();
	if (!worker || !worker->handle.task)
		return NOSV_ERR_OUTSIDE_TASK;

	// Check that between nosv_detaches or between
	// attach/detach turbo has not changed
	worker_check_turbo();

	// Mind nested nosv_attach and nosv_detach
	if (--rt_attach_refcount) {
		if (flags & NOSV_DETACH_INSTRUMENT)
			nosv_abort("cannot use flag NOSV_DETACH_INSTRUMENT (nested detach)");
		return NOSV_SUCCESS;
	}

	nosv_task_t task = worker->handle.task;

	// Before detaching, flush IS and submit_window
	if (worker_get_immediate()) {
		scheduler_batch_submit(worker_get_immediate());
		worker_set_immediate(NULL);
	}
	nosv_flush_submit_window();

	// Task just completed, read and accumulate hardware counters for the task
	hwcounters_update_task_counters(task);
	monitoring_task_completed(task);

	instr_task_end((uint32_t)task->taskid, instr_get_bodyid(worker->handle));

	// Delay detach enter event, so we finish the "in task body" state first
	instr_detach_enter();

	// First, free both the task and the type
	nosv_task_type_t type = task->type;
	assert(type);
	nosv_destroy(task, NOSV_DESTROY_NONE);
	nosv_type_destroy(type, NOSV_DESTROY_NONE);

	cpu_t *cpu = worker->cpu;
	assert(cpu);

	// This thread is no longer controlled by nosv, and from now on it might
	// overlap with other nosv threads. Therefore, we mark is as a "cooling"
	// thread.
	instr_thread_cool();

	affinity_support_unregister_worker(worker, !(flags & NOSV_DETACH_NO_RESTORE_AFFINITY));

	// Now free the worker
	// We have to free before waking up another worker on the current CPU
	// Otherwise the sfree inside worker_free_external does not have exclusive access to the cpu buckets
	worker_free_external(worker);

	// Now before waking another thread, let's unset our cpu
	// Otherwise following operations after this thread has detached may use the wrong CPU when accessing
	// the SLAB allocator
	cpu_set_current(-1);

	// Then resume a thread on the current cpu
	task_execution_handle_t handle = EMPTY_TASK_EXECUTION_HANDLE;
	worker_swap_idle(logic_pid, cpu, handle, WS_NOBLOCK);

	instr_detach_exit();

	if (flags & NOSV_DETACH_INSTRUMENT) {
		if (rt_attach_instr) {
			instr_thread_end();
			rt_attach_instr = 0;
		} else {
			nosv_abort("cannot use flag NOSV_DETACH_INSTRUMENT (thread was not instrumented by nosv_attach)");
		}
	}

	return NOSV_SUCCESS;
}

nosv_affinity_t nosv_get_task_affinity(nosv_task_t task)
{
	return task->affinity;
}

void nosv_set_task_affinity(nosv_task_t task, nosv_affinity_t *affinity)
{
	assert(affinity != NULL);

	task->affinity = *affinity;
}

void nosv_set_task_degree(nosv_task_t task, int32_t degree)
{
	assert(degree > 0);
	assert(task);
	assert(task->flags & TASK_FLAG_CREATE_PARALLEL);
	atomic_store_explicit(&(task->degree), degree, memory_order_relaxed);
}

int32_t nosv_get_task_degree(nosv_task_t task)
{
	return task_get_degree(task);
}

uint32_t nosv_get_execution_id(void)
{
	if (!worker_is_in_task())
		return NOSV_ERR_OUTSIDE_TASK;

	nosv_worker_t *worker = worker_current();
	assert(worker);

	return worker->handle.execution_id - 1;
}

nosv_affinity_t nosv_get_default_affinity(void)
{
	return default_affinity;
}

nosv_task_t nosv_self(void)
{
	return worker_current_task();
}

int nosv_flush_submit_window(void)
{
	nosv_task_t current_task = worker_current_task();
	if (!current_task)
		return NOSV_ERR_OUTSIDE_TASK;

	if (!task_group_empty(&current_task->submit_window)) {
		scheduler_submit_group(&current_task->submit_window);
		task_group_clear(&current_task->submit_window);
	}

	return NOSV_SUCCESS;
}

int nosv_set_submit_window_size(size_t submit_window_size)
{
	if (unlikely(submit_window_size == 0))
		return NOSV_ERR_INVALID_PARAMETER;

	nosv_task_t current_task = worker_current_task();
	if (!current_task)
		return NOSV_ERR_OUTSIDE_TASK;

	current_task->submit_window_maxsize = submit_window_size;

	if (submit_window_size == 1)
		nosv_flush_submit_window();

	return NOSV_SUCCESS;
}

int nosv_set_suspend_mode(nosv_suspend_mode_t suspend_mode, uint64_t args)
{
	nosv_task_t current = worker_current_task();
	if (!current)
		return NOSV_ERR_OUTSIDE_TASK;

	current->flags &= ~TASK_FLAG_SUSPEND_MODE_MASK;
	switch (suspend_mode) {
		case NOSV_SUSPEND_MODE_NONE:
			break;
		case NOSV_SUSPEND_MODE_SUBMIT:
			if (args != 1 && args != 0)
				return NOSV_ERR_INVALID_PARAMETER;
			current->flags |= TASK_FLAG_SUSPEND_MODE_SUBMIT;
			break;
		case NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT:
			current->flags |= TASK_FLAG_SUSPEND_MODE_TIMEOUT;
			break;
		case NOSV_SUSPEND_MODE_EVENT_SUBMIT:
			current->flags |= TASK_FLAG_SUSPEND_MODE_EVENT;
			break;
		default:
			return NOSV_ERR_INVALID_PARAMETER;
	}

	current->suspend_args = args;

	return NOSV_SUCCESS;
}

int nosv_suspend(void)
{
	nosv_worker_t *worker = worker_current();
	nosv_task_t current = worker_current_task();

	if (!current)
		return NOSV_ERR_OUTSIDE_TASK;

	if (!worker->in_task_body)
		return NOSV_ERR_OUTSIDE_TASK;

	current->flags |= TASK_FLAG_SUSPEND;

	return NOSV_SUCCESS;
}

static inline int wait_tasks(nosv_task_t *tasks, size_t ntasks, uint64_t timeout)
{
	nosv_task_t to_join = NULL;
	nosv_task_t current_task = worker_current_task();

	nosv_flush_submit_window();

	if (timeout == 0) {
		for (int i = 0; i < ntasks; i++) {
			// Try wait
			nosv_spin_lock(&tasks[i]->join_lock);
			to_join = tasks[i]->to_join;
			nosv_spin_unlock(&tasks[i]->join_lock);

			if (to_join == NULL) {
				return NOSV_ERR_TIMEOUT;
			} else if (to_join != TASK_TO_JOIN_COMPLETED_TASK) {
				return NOSV_ERR_INVALID_PARAMETER;
			}
		}
	} else if (timeout == (uint64_t) -1) {
		int waiting_for = 0;
		for (int i = 0; i < ntasks; i++) {

			nosv_spin_lock(&tasks[i]->join_lock);

			to_join = tasks[i]->to_join;

			if (to_join == NULL) {
				tasks[i]->to_join = current_task;
				tasks[i]->flags &= ~TASK_FLAG_JOIN_TIMEOUT;

				nosv_spin_unlock(&tasks[i]->join_lock);

				waiting_for++;
			} else {
				nosv_spin_unlock(&tasks[i]->join_lock);
				if (to_join != TASK_TO_JOIN_COMPLETED_TASK)
					return NOSV_ERR_INVALID_PARAMETER;
			}
		}

		if (waiting_for > 0)
			task_pause(current_task, /* blocking_count */ waiting_for);

	} else {
		for (int i = 0; i < ntasks; i++) {
			if (timeout > 0) {
				const uint64_t start_ns = clock_ns();

				nosv_spin_lock(&tasks[i]->join_lock);

				to_join = tasks[i]->to_join;

				if (to_join == NULL) {
					tasks[i]->to_join = current_task;
					tasks[i]->flags |= TASK_FLAG_JOIN_TIMEOUT;

					nosv_spin_unlock(&tasks[i]->join_lock);

					task_waitfor(current_task, timeout, NULL);

					// Check if the task reached the deadline or was resubmitted
					nosv_spin_lock(&tasks[i]->join_lock);

					to_join = tasks[i]->to_join;

					if (to_join == current_task) {
						tasks[i]->to_join = NULL;
						nosv_spin_unlock(&tasks[i]->join_lock);
						return NOSV_ERR_TIMEOUT;
					} else {
						nosv_spin_unlock(&tasks[i]->join_lock);
						uint64_t delay = clock_ns() - start_ns;
						if (delay > timeout)
							timeout = 0;
						else
							timeout -= delay;
					}
				} else {
					nosv_spin_unlock(&tasks[i]->join_lock);
					if (to_join != TASK_TO_JOIN_COMPLETED_TASK)
						return NOSV_ERR_INVALID_PARAMETER;
				}

			} else {
				// We exhausted the timeout (but the last task finished within the deadline), check the remaining tasks
				nosv_spin_lock(&tasks[i]->join_lock);
				to_join = tasks[i]->to_join;
				nosv_spin_unlock(&tasks[i]->join_lock);

				if (to_join == NULL) {
					return NOSV_ERR_TIMEOUT;
				} else if (to_join != TASK_TO_JOIN_COMPLETED_TASK) {
					return NOSV_ERR_INVALID_PARAMETER;
				}
			}
		}
	}

	return NOSV_SUCCESS;
}

int nosv_wait(nosv_task_t task, uint64_t timeout)
{
	int err = NOSV_SUCCESS;
	nosv_task_t current_task = worker_current_task();
	if (unlikely(!task))
		return NOSV_ERR_INVALID_PARAMETER;

	if (!current_task)
		return NOSV_ERR_OUTSIDE_TASK;

	if (task == current_task)
		return NOSV_ERR_INVALID_PARAMETER;

	if (!task_is_joinable(task))
		return NOSV_ERR_INVALID_PARAMETER;

	instr_wait_enter();

	err = wait_tasks(&task, 1, timeout);

	instr_wait_exit();

	return err;
}

int nosv_wait_all(nosv_task_t *tasks, size_t ntasks, uint64_t timeout)
{
	int err = NOSV_SUCCESS;
	nosv_task_t current_task = worker_current_task();

	if (unlikely(!tasks))
		return NOSV_ERR_INVALID_PARAMETER;

	if (!current_task)
		return NOSV_ERR_OUTSIDE_TASK;

	for (int i = 0; i < ntasks; i++) {
		if (unlikely(!tasks[i]))
			return NOSV_ERR_INVALID_PARAMETER;

		if (tasks[i] == current_task)
			return NOSV_ERR_INVALID_PARAMETER;

		if (!task_is_joinable(tasks[i]))
			return NOSV_ERR_INVALID_PARAMETER;
	}

	instr_wait_all_enter();

	err = wait_tasks(tasks, ntasks, timeout);

	instr_wait_all_exit();

	return err;
}

int nosv_join(nosv_task_t task, void **resval, uint64_t timeout)
{
	nosv_task_t current_task = worker_current_task();

	if (unlikely(!task))
		return NOSV_ERR_INVALID_PARAMETER;

	if (!current_task)
		return NOSV_ERR_OUTSIDE_TASK;

	if (task == current_task)
		return NOSV_ERR_INVALID_PARAMETER;

	if (!task_is_joinable(task))
		return NOSV_ERR_INVALID_PARAMETER;

	instr_join_enter();

	int res = wait_tasks(&task, 1, timeout);
	if (res != NOSV_SUCCESS) {
		instr_join_exit();
		return res;
	}

	if (resval != NULL)
		*resval = (void *) atomic_load_explicit(&task->resval, memory_order_relaxed);

	nosv_destroy(task, NOSV_DESTROY_NONE);

	instr_join_exit();

	return NOSV_SUCCESS;
}

int nosv_join_all(nosv_task_t *tasks, void **resvals, size_t ntasks, uint64_t timeout)
{
	nosv_task_t current_task = worker_current_task();

	if (unlikely(!tasks))
		return NOSV_ERR_INVALID_PARAMETER;

	if (!current_task)
		return NOSV_ERR_OUTSIDE_TASK;

	for (int i = 0; i < ntasks; i++) {
		if (unlikely(!tasks[i]))
			return NOSV_ERR_INVALID_PARAMETER;

		if (tasks[i] == current_task)
			return NOSV_ERR_INVALID_PARAMETER;

		if (!task_is_joinable(tasks[i]))
			return NOSV_ERR_INVALID_PARAMETER;
	}

	instr_join_all_enter();

	int res = wait_tasks(tasks, ntasks, timeout);
	if (res != NOSV_SUCCESS) {
		instr_join_all_exit();
		return res;
	}

	if (resvals != NULL) {
		for (int i = 0; i < ntasks; i++) {
			resvals[i] = (void *) atomic_load_explicit(&tasks[i]->resval, memory_order_relaxed);
		}
	}

	for (int i = 0; i < ntasks; i++) {
		nosv_destroy(tasks[i], NOSV_DESTROY_NONE);
	}

	instr_join_all_exit();

	return NOSV_SUCCESS;
}

int nosv_set_result(void *resval)
{
	nosv_task_t current_task = worker_current_task();
	if (!current_task)
		return NOSV_ERR_OUTSIDE_TASK;

	atomic_store_explicit(&current_task->resval, (uintptr_t) resval, memory_order_relaxed);

	return NOSV_SUCCESS;
}
