"""One point's step replayed: its graph (pstudy.store.graphcache), its tasks' durations
(machinescaling) and the machine in pstudy.simulate, with the barriers' noise; and a measured
run replayed with its own chunk times."""

from pstudy.store import taskgraph, topology
from pstudy.analyse import contention, simulate
from pstudy.errors import StudyError
from pstudy.analyse.chunktimes import WALL, config_point, iteration_times, kept_records, median
from pstudy.analyse.intervals import interval
from pstudy.analyse.machinescaling import reference_config, replay_work, source_durations, with_overhead


ITERATIONS = 4  # iterations simulated for schedules without a barrier between steps


def predicted_interval(graphs, draws, ck, threads, source, target, step, **kw):
    """(low, high) of the step `step` of config key `ck` at `threads`: predict_point (its keyword
    arguments `kw`) with each of the bootstrap replicates `draws` (bootstrap_medians), interval()."""
    return interval(step, [predict_point(graphs, m, ck, threads, source, target, **kw)[0] for m in draws])


def expected_max_deviation(deviations, n):
    """E[max of n independent draws] of the empirical distribution `deviations` (sorted): the sum
    over the order statistics x_(j) of x_(j) [(j/m)^n - ((j-1)/m)^n]."""
    m = len(deviations)
    if m == 0 or n < 1:
        return 0.0
    return sum(x * ((j / m) ** n - ((j - 1) / m) ** n) for j, x in enumerate(deviations, 1))


def barrier_jitter(graph, work, noise):
    """Seconds a static schedule's step loses at its barriers to the chunks' run-to-run noise, which
    the replay (every chunk its typical time) does not see: per operation, its longest thread's share
    w (its pieces' durations summed) times E[max of n] - E[one] of the operation's relative
    deviations from its mean, measured at 1 thread (`noise`: {operation label: sorted deviations},
    trace_stats'), n its threads with pieces. Each thread's piece is taken to vary as the whole
    operation did at 1 thread, independently of the others. 0 at one thread, for dataflow
    schedules (a late chunk delays only its own successors, and idle threads take other work), and
    without noise samples."""
    if graph.schedule != taskgraph.STATIC or not noise or graph.threads < 2:
        return 0.0
    shares = {}
    for t in range(graph.n_tasks):
        op = shares.setdefault(graph.op[t], {})
        op[graph.thread[t]] = op.get(graph.thread[t], 0.0) + work.duration[t]
    total = 0.0
    for op, per_thread in sorted(shares.items()):
        deviations = noise.get(graph.ops[op]["label"])
        n = len(per_thread)
        if deviations and n > 1:
            total += max(per_thread.values()) * (expected_max_deviation(deviations, n)
                                                 - expected_max_deviation(deviations, 1))
    return total


def predict_point(graphs, medians, ck, threads, source, target, background_Bs=0.0, overhead=0.0, noise=None,
                  beside=None):
    """(step seconds, POP factors) of config key `ck` on `threads` cores of `target` (beside a
    constant stream of `background_Bs` bytes/s on another core: a bandwidth thief), each task
    `overhead` seconds longer (runtime_overheads), plus what a static schedule loses at its barriers
    to the chunks' noise measured at 1 thread (`noise`, barrier_jitter; give it only where the target
    is the machine it was measured on). `beside`: (work scale, thread speeds) from the peaks measured
    beside the runs (speeds_beside), which replace the machine's clock curve and topology."""
    graph = graphs.get(ck, threads)
    work = replay_work(graphs, medians, ck, threads, source, target, overhead=overhead)
    cores = graph.threads if graph.schedule == taskgraph.STATIC else threads
    speeds = None
    if beside is not None:
        scale, speeds = beside
        work.duration = [d * scale for d in work.duration]
    try:
        node = contention.Node(target, cores, background_Bs, speeds=speeds)
    except topology.TopologyError as err:  # a placement the topology cannot hold
        raise StudyError(f"{target.path or target.name}: {err}") from None
    try:
        step, outcome = simulate.step_time(graph, work, target, cores, ITERATIONS, node)
    except RuntimeError as err:
        raise StudyError(f"{graph.path}: {err}") from None
    return step + barrier_jitter(graph, work, noise), simulate.pop_factors(outcome, cores)


def speeds_beside(thread_peaks, graphs, medians, ck, point):
    """(work scale, thread speeds) for predicting measured point `point` of config key `ck` as the
    machine was when it ran, or None where the probes are missing: `thread_peaks` {point key: each
    thread's peak GFLOP/s measured beside the run} (`[analysis] peak_beside`, thread_peaks_of).

    The chunk times come from the 1-thread run of the configuration that replays `ck`
    (reference_config) at that run's speed g_src; thread t of the predicted run ran at g_t. Both
    are measured by the same probe, so only their ratios count: with G the largest of them, the
    work is scaled by g_src / G and thread t runs at s_t = g_t / G (contention.Node's thread
    speeds, in (0, 1]). A host that put two vCPUs on one core, or slowed the whole VM while the
    1-thread run was measured, shows in these probes and nowhere in a machine file."""
    threads = point.threads
    ref = reference_config(medians, ck, graphs, threads) or ck
    run, src = thread_peaks.get(point), thread_peaks.get(config_point(ref, 1))
    if not run or not src or len(run) < threads or min(run[:threads] + src[:1]) <= 0:
        return None  # no probe, or one whose team had fewer threads than asked (a thread at 0)
    g_src, run = src[0], run[:threads]
    top = max(g_src, *run)
    return g_src / top, [g / top for g in run]


def predict_measured(graphs, medians, ck, point, source, overhead, noise, thread_peaks):
    """(predicted step, the same with the machine as the probes beside its runs found it, or None
    where they are missing) of measured point `point`, on `source`, the machine it ran on: what
    a validation compares with the measured step."""
    step, _ = predict_point(graphs, medians, ck, point.threads, source, source, overhead=overhead, noise=noise)
    beside = speeds_beside(thread_peaks, graphs, medians, ck, point) if thread_peaks else None
    if beside is None:
        return step, None
    step_beside, _ = predict_point(graphs, medians, ck, point.threads, source, source, overhead=overhead, noise=noise,
                                   beside=beside)
    return step, step_beside


def replay_own_times(graph, traces, warmup, machine, overhead=0.0, clock=WALL):
    """The step replayed with every task at the time it took in the run itself (with `clock` CPU, at
    its dedicated_durations: the run as it would have gone without being descheduled), or None where
    `traces` (the --trace files of the runs of `graph`'s point) is empty: replay_own_frames of each
    trace's records after the warm-up."""
    runs = []
    for path in traces:
        frame, dur = kept_records(path, warmup, clock)
        runs.append((str(path), frame.assign(d=dur)))
    return replay_own_frames(graph, runs, machine, overhead)


def replay_own_frames(graph, runs, machine, overhead=0.0):
    """Per kept iteration of each run ((name, frame) as own_frames gives them), the graph replayed
    with that iteration's chunk times and `overhead` seconds a task; the median over the iterations,
    or None where there is no run. The chunk times already hold whatever slowed them (the host, a
    sibling thread, the memory interface, another core's cache), so nothing is shared in the replay:
    what is left between it and the measured step is the schedule model's own error (dependencies,
    barriers, the runtime's cost a task), apart from the speed model's. A task without a record in
    an iteration takes its share of its operation's recorded time (source_durations)."""
    steps = []
    for name, frame in runs:
        for _, it in frame.groupby("iteration"):
            durations = source_durations(graph, iteration_times(it), name, machine)
            work = with_overhead(simulate.Work(durations, [0.0] * graph.n_tasks), overhead)
            try:
                step, _ = simulate.step_time(graph, work, machine, graph.threads, ITERATIONS, None)
            except RuntimeError as err:
                raise StudyError(f"{graph.path}: {err}") from None
            steps.append(step)
    return median(steps) if steps else None
