"""Predicted step times of a results directory's variants on P simulated cores (`perfstudy
predict`): task durations from the measured 1-thread traces, the schedule from each binary's
--describe-graph, the replay from pstudy.simulate, and the check against every measured point.

Durations. For each (variant, compiler, kernels, chunking) with 1-thread traces, a chunk's duration
is the median over the measured iterations (warm-up left out) and repetitions of its records,
scaled so that the configuration's chunks add up to its median iteration's busy time (trace_stats),
plus its variant's runtime cost per task (RuntimeOverheads).
A chunk of a P-thread schedule that no 1-thread record matches (forkjoin cuts an operation into P
pieces, at 1 thread into one) gets its operation's measured 1-thread time times its share of the
operation's FLOPs (of its bytes, for operations without FLOPs).

Another machine. Durations are scaled by (source peak per core / target peak per core), and a
chunk's DRAM bytes are its compulsory bytes, capped at what the source machine's one-core
bandwidth could move in its measured time (the rest came from cache); the target's bandwidth
curve then stretches chunks that run together (pstudy.simulate).
"""


import json
import math
import os
import statistics
from dataclasses import dataclass
from pathlib import Path

from pstudy.store import resultsdir, taskgraph, traceformats, vocabulary
from pstudy.analyse import contention, simulate
from pstudy.store import topology
from pstudy import common
from pstudy.errors import StudyError

REPO_ROOT = vocabulary.REPO_ROOT
UPDATE = "update"  # the optimizer's phase in a graph
ITERATIONS = 4  # iterations simulated for schedules without a barrier between steps


def _median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def config_key(point):
    """The point without its thread count, its ranks (distributed points are not predicted) and its
    StarPU scheduler: the configuration whose 1-thread traces give the chunk times at every count."""
    return vocabulary.as_point(point)._replace(threads=None, ranks=None, starpu_sched=None)


def recorded_config_key(values):
    """A config key as recorded (a JSON list: variant, compiler, kernels and the chunk keys, fewer
    of them where it was recorded before they existed)."""
    # the recorded layout is a file format (validation.json): the one place it is read by position
    names = ("variant", "compiler", "kernels") + vocabulary.CHUNK_KEYS
    return vocabulary.Point(**dict(zip(names, values)))


def recording_of(ck):
    """Config key `ck` as recorded_config_key reads it."""
    return [ck.variant, ck.compiler, ck.kernels, *ck.chunks()]


def config_point(ck, threads):
    """The point of config key `ck` at `threads` threads (not distributed: no ranks; no StarPU
    scheduler)."""
    return ck._replace(threads=threads)


def chunk_columns(ck):
    """{chunk key: value} of config key `ck`: its chunk columns in a table."""
    return dict(zip(vocabulary.CHUNK_KEYS, ck.chunks()))


@dataclass
class TraceStats:
    """What the 1-thread traces of a results directory give the replay, each keyed by config key
    (trace_stats):

    raw: {chunk key: median seconds} over the measured iterations (warm-up left out) and
        repetitions of the chunk's records;
    scales: the median iteration's busy time (its chunks' times summed, the median over the
        iterations and repetitions) over the sum of its chunks' medians. A short chunk's times are
        skewed (an interrupt or a page fault makes one slower, nothing makes one faster), so the
        sum of the medians falls short of a typical iteration's: 0.2% for 232 chunks, 3% for
        1,505 on the small model (the 2-vCPU Xeon VM); `medians` multiplies by it;
    costs: seconds per task of what the variant's runtime does between its chunks,
        measured directly. At one thread an iteration's chunks run one after another, so the time
        from an iteration's first chunk start to the next iteration's, less its chunks' traced
        times, is what happens between them (taking the next task, releasing successors, a
        barrier, the step's own bookkeeping, reading the clock and writing the trace record);
        over the iteration's chunks, its median over the iterations after the warm-up that have a
        next one. Configurations with fewer than two such iterations get none;
    noise: {operation label: sorted relative deviations of its chunks' times from their means}
        (barrier_jitter);
    iterations: [({chunk key: seconds}, busy seconds, run)] per kept iteration of each 1-thread
        run, `run` naming the run it was measured in: what the prediction intervals resample
        (bootstrap_medians)."""
    raw: dict
    scales: dict
    costs: dict
    noise: dict
    iterations: dict = None

    @property
    def medians(self):
        """{config key: {chunk key: seconds}}: each chunk's median times its configuration's scale,
        the durations the replay runs."""
        return {ck: {chunk: d * self.scales.get(ck, 1.0) for chunk, d in per.items()}
                for ck, per in self.raw.items()}


WALL, CPU = "wall", "cpu"  # the clocks a replay takes its chunk times from (`clock`)
DISTURBED_CHUNK = 0.05  # a chunk whose wall time exceeds its time on the CPU by more than this was descheduled
DISTURBED_RUN = 0.01  # a run that lost this share of its chunks' wall time off the CPU is reported


def dedicated_durations(frame, wall, path):
    """Per record, the time its chunk would have taken on a CPU of its own: its CPU time (cpu_s)
    plus the clocks' own cost inside its wall interval, never more than its wall time, as Dimemas
    replays a process's CPU bursts rather than its elapsed time. The thread CPU clock is a system
    call read between the two wall-clock reads, so even an undisturbed chunk's wall time exceeds its
    CPU time by about one such call; that part is the run's 10th percentile of wall - cpu over its
    records (most chunks of a run are not descheduled). StudyError naming the file where the trace
    has no CPU times."""
    cpu = traceformats.cpu_times(frame, path)
    gap = (wall - cpu).clip(lower=0.0)
    return (cpu + float(gap.quantile(0.1))).where(lambda d: d < wall, wall)


def _kept_records(path, warmup, clock=WALL):
    """A --trace file's records after the warm-up iterations (col0, col1 = 0 in a trace from before
    tiles) and their durations (their wall times, or with `clock` CPU their dedicated_durations);
    StudyError naming the file where it is unreadable or not a trace."""
    # the reader report uses: a time that is not a finite non-negative number is refused here too
    frame = traceformats.read_chunks(path, ("iteration", "op", "b0", "b1", "x0", "x1", "start_s", "end_s"))
    if "col0" not in frame.columns:  # a trace from before tiles: no chunk cuts columns
        frame = frame.assign(col0=0, col1=0)
    frame = frame[frame["iteration"] >= warmup]
    if frame.empty:
        raise StudyError(f"{path}: no records after the {warmup} warm-up iteration(s)")
    dur = frame["end_s"] - frame["start_s"]
    if not (dur >= 0).all():
        raise StudyError(f"{path}: a record ends before it starts")
    if clock == CPU:
        frame = frame.assign(wall=dur)
        dur = dedicated_durations(frame, dur, path)
    return frame, dur


def trace_stats(directory, warmup, clock=WALL):
    """TraceStats of the 1-thread traces of a results directory, each chunk at its wall time or, with
    `clock` CPU, at its dedicated_durations (the runtime cost per task is measured on the wall clock
    either way: what happens between chunks has no CPU time of its own in the trace)."""
    samples, busy, gaps, labels, iterations = {}, {}, {}, {}, {}
    for path, key, _rep in resultsdir.ResultsDir(directory).traces():
        if key.threads != 1 or vocabulary.is_distributed(key.variant):  # one process's graph only
            continue
        frame, dur = _kept_records(path, warmup, clock)
        wall = frame["wall"] if clock == CPU else dur
        ck = config_key(key)
        if "label" in frame.columns:
            labels.setdefault(ck, {}).update(zip(frame["op"], frame["label"]))
        per = samples.setdefault(ck, {})
        per_iteration = {}
        for row, it, d in zip(frame[["op", "b0", "b1", "x0", "x1", "col0", "col1"]].itertuples(index=False),
                              frame["iteration"], dur):
            chunk = taskgraph.chunk_key(*row)
            per.setdefault(chunk, []).append(float(d))
            one = per_iteration.setdefault(int(it), {})
            one[chunk] = one.get(chunk, 0.0) + float(d)
        its = frame.assign(d=dur, w=wall).groupby("iteration").agg(start=("start_s", "min"), busy=("d", "sum"),
                                                                    wall=("w", "sum"), n=("d", "size"))
        busy.setdefault(ck, []).extend(float(b) for b in its["busy"])
        iterations.setdefault(ck, []).extend((per_iteration[int(i)], float(its.at[i, "busy"]), str(path))
                                             for i in its.index)
        index = its.index.tolist()
        for i, j in zip(index, index[1:]):
            if j == i + 1:
                gaps.setdefault(ck, []).append(float(its.at[j, "start"] - its.at[i, "start"] - its.at[i, "wall"])
                                               / int(its.at[i, "n"]))
    medians = {ck: {chunk: _median(v) for chunk, v in chunks.items()} for ck, chunks in samples.items()}
    scales = {}
    for ck, per in medians.items():
        total = sum(per.values())
        scales[ck] = _median(busy[ck]) / total if total > 0 else 1.0
    costs = {ck: _median(v) for ck, v in gaps.items() if len(v) >= 2}
    noise = {}
    for ck, per in samples.items():
        by_op = {}
        for chunk, values in per.items():
            if len(values) < 2:
                continue
            mean = sum(values) / len(values)
            if mean > 0:
                label = labels.get(ck, {}).get(chunk[0], str(chunk[0]))
                by_op.setdefault(label, []).extend(v / mean - 1.0 for v in values)
        noise[ck] = {label: sorted(v) for label, v in by_op.items()}
    return TraceStats(medians, scales, costs, noise, iterations)


INTERVAL = 0.90  # the prediction intervals' coverage
Z_INTERVAL = statistics.NormalDist().inv_cdf(0.5 + INTERVAL / 2)  # 1.645: its normal quantile
REPLICATES = 40  # bootstrap replicates of each interval


def bootstrap_medians(stats, replicates=REPLICATES):
    """[{config key: {chunk key: seconds}}]: `replicates` sets of the durations the replay runs, each
    from the kept iterations of each configuration's 1-thread runs drawn again with replacement,
    medians and scale recomputed as trace_stats computes them: how far the durations move with the
    runs and the iterations that happened to be measured. The draw has two levels, as the data
    has: the runs (as many as there are, with replacement), then within each drawn run its
    iterations (as many as it has). A run is one start of the binary, and on a shared machine its
    speed is the host's at that time: iterations of one run agree with each other more than with
    another run's, and resampling them alone would give intervals as narrow as one run's
    iterations are alike (the run-to-run spread is what moves the measured points). Iterations
    without a run (older entries of two fields) count as one run. Seeded by the configuration, so
    that the same traces give the same intervals whatever else is predicted. A configuration with
    one kept iteration (or none in `stats.iterations`) keeps its durations in every replicate."""
    import random
    import zlib

    out = [dict() for _ in range(replicates)]
    for ck, per in stats.medians.items():
        its = (stats.iterations or {}).get(ck) or []
        runs = {}
        for entry in its:
            runs.setdefault(entry[2] if len(entry) > 2 else None, []).append(entry[:2])
        runs = list(runs.values())
        # seeded by the recorded layout's text, which the committed studies' intervals were drawn with
        rng = random.Random(zlib.crc32(repr(tuple(recording_of(ck))).encode()))
        for b in range(replicates):
            if len(its) < 2:
                out[b][ck] = per
                continue
            draw = []
            for _ in runs:
                run = runs[rng.randrange(len(runs))]
                draw.extend(run[rng.randrange(len(run))] for _ in run)
            samples = {}
            for chunks, _busy in draw:
                for chunk, d in chunks.items():
                    samples.setdefault(chunk, []).append(d)
            medians = {chunk: _median(v) for chunk, v in samples.items()}
            total = sum(medians.values())
            scale = _median([busy for _, busy in draw]) / total if total > 0 else 1.0
            out[b][ck] = {chunk: medians.get(chunk, d) * scale for chunk, d in per.items()}
    return out


def percentile(values, q):
    """The q-quantile (0..1) of `values`, linear between order statistics."""
    v = sorted(values)
    if not v:
        return math.nan
    x = q * (len(v) - 1)
    i = int(math.floor(x))
    return v[i] if i + 1 >= len(v) else v[i] + (x - i) * (v[i + 1] - v[i])


def interval(step, replicate_steps):
    """(low, high): the INTERVAL quantiles of the replicates' steps, widened to hold `step` (the
    replicates' medians scatter around the full sample's)."""
    if not replicate_steps:
        return step, step
    tail = (1 - INTERVAL) / 2
    return min(step, percentile(replicate_steps, tail)), max(step, percentile(replicate_steps, 1 - tail))


def run_step_medians(steps, column="step_s"):
    """{point key: [each run's median of `column` over its kept steps]} of a steps frame
    (resultsdir.read_steps)."""
    steps = steps[~steps["warmup"]]
    out = {}
    for key, group in steps.groupby(vocabulary.POINT_KEYS + ["repetition"], dropna=False):
        point = vocabulary.point_key(dict(zip(vocabulary.POINT_KEYS, key)))  # zip leaves out the repetition
        out.setdefault(point, []).append(float(group[column].astype(float).median()))
    return out


class RunSpread:
    """How far a point's step moves from one run (one start of the binary) to the next on the
    machine that measured it: the pooled standard deviation of the log of each run's median step
    around its point's mean log, over the points with at least two runs, per thread count (a shared
    host moves a wide team more) and over all thread counts.

    A prediction interval that a measurement is held to must hold the measurement's own scatter:
    the bootstrap (bootstrap_medians) sees how the source durations move, not that the measured
    median of n runs scatters by about sigma / sqrt(n) around the step, nor, where a single run fed
    the source, that run's own speed. `widen` adds both in quadrature, in log space.

    `pooled`: {point: [run medians]} dicts to estimate sigma from (the checked directory's, and
    whatever else the same machine measured the same day); `runs`: {point: number of runs}
    of the checked points (1 where a point is not there)."""

    def __init__(self, pooled, runs):
        sums = {}
        for per_point in pooled:
            for point, medians in per_point.items():
                logs = [math.log(v) for v in medians if v > 0]
                if len(logs) < 2:
                    continue
                mean = sum(logs) / len(logs)
                ss = sum((v - mean) ** 2 for v in logs)
                for key in (point.threads, None):
                    total, dof = sums.get(key, (0.0, 0))
                    sums[key] = (total + ss, dof + len(logs) - 1)
        self._sums = sums
        self.runs = dict(runs)

    def sigma(self, threads):
        """The pooled log standard deviation at `threads` (over every thread count where that one
        has fewer than 2 degrees of freedom); None where no point had two runs."""
        for key in (threads, None):
            total, dof = self._sums.get(key, (0.0, 0))
            if dof >= (2 if key is not None else 1):
                return math.sqrt(total / dof)
        return None

    def widen(self, step, low, high, point, source_runs, measured=True):
        """(low, high) of the interval a measurement of `point` is held to: the bootstrap's
        [low, high] around `step`, with the measured median's run-to-run scatter (`measured`: False
        for the step itself, the source's sampling alone), and the source's where fewer than two
        runs fed it (`source_runs`), added in quadrature."""
        if low is None or high is None or not (low == low and high == high) or step <= 0:
            return low, high
        spread, single = self.sigma(point.threads) if measured else None, self.sigma(1)
        var = (spread ** 2 / max(1, self.runs.get(point, 1)) if spread else 0.0) \
            + (single ** 2 if source_runs < 2 and single else 0.0)
        if var <= 0:
            return low, high
        extra = Z_INTERVAL * math.sqrt(var)
        below = math.log(step / low) if low > 0 else 0.0
        above = math.log(high / step) if high > 0 else 0.0
        return step * math.exp(-math.hypot(below, extra)), step * math.exp(math.hypot(above, extra))


# the fewest other configurations' points at a thread count that make that count's own pool of
# errors (cross_validated); with fewer, the pool is every other multi-thread point
CONFORMAL_MINIMUM = 3


def cross_validated(validation):
    """The validation frame with each multi-thread point's interval widened, where it is narrower,
    to the prediction's error measured on the other configurations: the INTERVAL quantile of
    |log(measured / predicted)| over the points of every other configuration at the same thread
    count (each configuration has its own 1-thread source, so its points' errors share that
    source's and are left out together), as the jackknife+ of Barber et al. (Ann. Statist. 2021)
    holds out each point and takes the ceil(INTERVAL (n + 1))-th smallest of the others' residuals;
    with too few others for that rank, the largest. The pool is per thread count (a Mondrian
    split, Vovk et al. 2005) because the error grows with the team: what a shared host takes
    from 16 threads it does not take from 2; with fewer than CONFORMAL_MINIMUM such points, every
    other configuration's multi-thread points. The modelled interval (the bootstrap, RunSpread)
    holds what the model knows of its inputs; this one what the machine did to predictions like
    it. 1-thread
    points replay their own runs and are neither widened nor part of the pool; a frame without an
    interval column, or with one configuration, is returned as it is."""
    if "predicted_low" not in validation.columns or not len(validation):
        return validation
    frame = validation.copy()
    points = [vocabulary.point_key(r) for r in frame.to_dict("records")]
    measured, predicted = frame["measured_step_s"].astype(float).tolist(), frame["predicted_step_s"].astype(float).tolist()
    low, high = frame["predicted_low"].astype(float).tolist(), frame["predicted_high"].astype(float).tolist()
    usable = [p.threads > 1 and not vocabulary.is_distributed(p.variant) and m > 0 and s > 0 and lo == lo
              for p, m, s, lo in zip(points, measured, predicted, low)]
    residual = [abs(math.log(m / s)) if ok else math.nan for ok, m, s in zip(usable, measured, predicted)]
    configs = [config_key(p) for p in points]
    for i, ok in enumerate(usable):
        if not ok:
            continue
        others = [j for j in range(len(points)) if usable[j] and configs[j] != configs[i]]
        alike = [j for j in others if points[j].threads == points[i].threads]
        others = sorted(residual[j] for j in (alike if len(alike) >= CONFORMAL_MINIMUM else others))
        if not others:
            continue
        q = others[min(len(others), math.ceil(INTERVAL * (len(others) + 1))) - 1]
        low[i], high[i] = min(low[i], predicted[i] * math.exp(-q)), max(high[i], predicted[i] * math.exp(q))
    frame["predicted_low"], frame["predicted_high"] = low, high
    return frame


def source_runs(stats, ck):
    """How many runs fed configuration `ck`'s durations (distinct run names of its kept
    iterations; entries without one count as one run)."""
    return len({entry[2] if len(entry) > 2 else None for entry in (stats.iterations or {}).get(ck) or []})


def predicted_interval(graphs, draws, ck, threads, source, target, step, **kw):
    """(low, high) of the step `step` of config key `ck` at `threads`: predict_point (its keyword
    arguments `kw`) with each of the bootstrap replicates `draws` (bootstrap_medians), interval()."""
    return interval(step, [predict_point(graphs, m, ck, threads, source, target, **kw)[0] for m in draws])


def iterations_of(runs):
    """TraceStats.iterations' entries [({chunk key: seconds}, busy seconds, run name)] of kept runs
    ((name, frame of iteration, op, b0, b1, x0, x1, col0, col1 and d), as own_frames gives them):
    what a recording that keeps each run's chunk times gives the prediction intervals."""
    out = []
    for name, frame in runs:
        for _, it in frame.groupby("iteration"):
            per = {}
            for row, d in zip(it[["op", "b0", "b1", "x0", "x1", "col0", "col1"]].itertuples(index=False), it["d"]):
                key = taskgraph.chunk_key(*row)
                per[key] = per.get(key, 0.0) + float(d)
            out.append((per, float(it["d"].sum()), str(name)))
    return out


def disturbance(directory, warmup):
    """One row per traced run with CPU times: how much of its chunks' wall time was not on the CPU
    (wall - dedicated_durations, over the wall time), how many chunks lost more than DISTURBED_CHUNK
    of theirs, and where the most was lost (the operation label and the thread). Runs traced
    without CPU times are left out; a damaged cpu_s column is a StudyError."""
    rows = []
    for path, key, rep_ in resultsdir.ResultsDir(directory).traces():
        frame = traceformats.read_chunks(path, ("iteration", "op", "thread", "start_s", "end_s"))
        if traceformats.CPU_COLUMN not in frame.columns:
            continue
        frame = frame[frame["iteration"] >= warmup]
        if frame.empty or frame[traceformats.CPU_COLUMN].isna().all():
            continue
        if vocabulary.is_distributed(key.variant):  # its communication records have no CPU time
            frame = frame[frame[traceformats.CPU_COLUMN].notna()]
        wall = frame["end_s"] - frame["start_s"]
        lost = (wall - dedicated_durations(frame, wall, path)).clip(lower=0.0)
        total = float(wall.sum())
        by_label = lost.groupby(frame["label"] if "label" in frame.columns else frame["op"]).sum()
        by_thread = lost.groupby(frame["thread"]).sum()
        rows.append({"point": key, "repetition": rep_, "share": float(lost.sum()) / total if total > 0 else 0.0,
                     "lost_s": float(lost.sum()),
                     "chunks": int((lost > DISTURBED_CHUNK * wall).sum()), "of": int(len(frame)),
                     "where": str(by_label.idxmax()) if len(by_label) and by_label.max() > 0 else "",
                     "thread": int(by_thread.idxmax()) if len(by_thread) and by_thread.max() > 0 else -1,
                     "thread_share": float(by_thread.max()) / float(lost.sum()) if lost.sum() > 0 else 0.0})
    return rows


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


def measured_points(directory):
    """{point key: median measured step_s} over the measured (not warm-up) steps."""
    steps = resultsdir.read_steps(directory)
    steps = steps[~steps["warmup"]]
    out = {}
    for key, group in steps.groupby(vocabulary.POINT_KEYS, dropna=False):
        point = vocabulary.point_key(dict(zip(vocabulary.POINT_KEYS, key)))
        if not vocabulary.is_distributed(point.variant):  # one process's graph only
            out[point] = float(group["step_s"].median())
    return out


def _by_label(medians, traced):
    """`medians` keyed by (operation label, bounds) instead of the traced graph's operation index:
    a chunking that packs the weights in operations of its own at one thread count and not at
    another numbers the same operations differently (the automatic chunking at 1 and at 4 threads)."""
    out = {}
    for chunk, d in medians.items():
        if not 0 <= chunk[0] < len(traced.ops):
            raise StudyError(f"{traced.path}: a trace record of operation {chunk[0]}, which the graph of "
                             f"{len(traced.ops)} operations does not have")
        out[(traced.ops[chunk[0]]["label"],) + tuple(chunk[1:])] = d
    return out


def source_durations(graph, medians, where, source=None, traced=None):
    """Per task of `graph`, its duration on the machine the traces come from (`source`), from
    `medians`, the chunk times of `traced` (the graph the traces ran; `graph` itself by default),
    operations matched by label: a task's record where the graph cuts its operation into the chunks
    the trace has, else its share of the operation's recorded time (by FLOPs; by bytes for
    operations without FLOPs) plus, for a product cut finer than its trace, the compulsory bytes it
    moves beyond its share of the traced chunks', at the machine's re-read rate (Machine.reread_bandwidth:
    `reread_GBs`, else one core's bandwidth; each column chunk reads
    every row of its input again: fork-join's chunks of the language-model head's input gradient
    each read the whole 51 MB logits gradient at d12). A task whose operation moves bytes and does
    no arithmetic, and has no record in the trace, takes its bytes at the source's one-core
    bandwidth: the pack operations, which a chunking describes only where it cuts the products'
    rows (the automatic chunking at 4 threads and more, not at 1)."""
    return _source_parts(graph, medians, where, source, traced)[0]


def _traced_bytes(traced):
    """Per operation label, the compulsory bytes of the traced graph's chunks."""
    out = {}
    for t in range(traced.n_tasks):
        label = traced.ops[traced.op[t]]["label"]
        out[label] = out.get(label, 0) + traced.bytes[t]
    return out


def _reread(task_bytes, share, traced_op_bytes):
    """The compulsory bytes a task of a product moves beyond its share of the traced chunks'."""
    return max(0.0, task_bytes - share * traced_op_bytes)


def _source_parts(graph, medians, where, source=None, traced=None):
    """source_durations' durations, and per task the bytes read again that they include."""
    medians = _by_label(medians, traced or graph)
    labels = [o["label"] for o in graph.ops]
    op_time, op_bytes = {}, {}
    for chunk, d in medians.items():
        op_time[chunk[0]] = op_time.get(chunk[0], 0.0) + d
    for t in range(graph.n_tasks):
        op_bytes[graph.op[t]] = op_bytes.get(graph.op[t], 0) + graph.bytes[t]
    traced_bytes = _traced_bytes(traced or graph)
    # An operation takes its recorded chunk times only where the graph cuts it as the trace did:
    # cut otherwise, a chunk that happens to share a record's bounds would be counted beside the
    # shares of the whole operation's time that the others get.
    keys, as_traced = [], {}
    for t in range(graph.n_tasks):
        op = graph.op[t]
        key = None if graph.key[t] is None else (labels[op],) + tuple(graph.key[t][1:])
        keys.append(key)
        as_traced[op] = as_traced.get(op, True) and key in medians
    out, reread = [], [0.0] * graph.n_tasks
    for t in range(graph.n_tasks):
        op, label = graph.op[t], labels[graph.op[t]]
        if as_traced[op]:
            out.append(medians[keys[t]])
            continue
        if label not in op_time and source is not None and graph.ops[op]["flops"] == 0 and graph.bytes[t] > 0:
            out.append(graph.bytes[t] / source.bandwidth(1))
            continue
        if label not in op_time:
            raise StudyError(f"{where}: no 1-thread trace record of operation {op} "
                             f"({label}); is the trace complete?")
        total_flops = graph.ops[op]["flops"]
        if total_flops > 0:
            share = graph.flops[t] / total_flops
        else:
            share = graph.bytes[t] / op_bytes[op] if op_bytes[op] > 0 else 1.0 / graph.op.count(op)
        d = op_time[label] * share
        if source is not None and total_flops > 0 and traced_bytes.get(label):
            reread[t] = _reread(graph.bytes[t], share, traced_bytes[label])
            d += reread[t] / source.reread_bandwidth()
        out.append(d)
    return out, reread


def scaled_work(graph, traced, medians, source, target, where, update_share=1.0, reread=True):
    """simulate.Work of `graph` (another chunking, or a rank's batch) from the 1-thread times of
    `traced`: per task, its operation's traced time (operations matched by label) times its share
    of the traced operation's FLOPs (bytes without FLOPs); update tasks times `update_share`. An
    operation the trace does not have that does no arithmetic (a pack pass) takes its bytes at the
    source's one-core bandwidth. With `reread`, a product cut finer than the traced one pays, as in
    source_durations, the compulsory bytes beyond its share of the traced chunks' at the re-read
    rate (its tiles read their inputs again); a rank's batch (pstudy.analyse.distributed) is
    not a finer cut of the same rows, and is replayed without it."""
    per_task = source_durations(traced, medians, where)
    per_op, ref = {}, {}
    for t, d in enumerate(per_task):
        label = traced.ops[traced.op[t]]["label"]
        per_op[label] = per_op.get(label, 0.0) + d
    for o in traced.ops:
        ref[o["label"]] = o
    traced_bytes = _traced_bytes(traced)
    one_core, again_rate = source.bandwidth(1), source.reread_bandwidth()
    d_src, moved, reread_bytes = [], [], [0.0] * graph.n_tasks
    for t in range(graph.n_tasks):
        op = graph.ops[graph.op[t]]
        r = ref.get(op["label"])
        scale = update_share if graph.phase[t] == UPDATE else 1.0
        if r is None:
            if op["flops"] > 0 or graph.bytes[t] == 0:
                raise StudyError(f"{where}: operation {op['label']} is not in the traced graph {traced.path}")
            d_src.append(graph.bytes[t] * scale / one_core)
        else:
            if r["flops"] > 0:
                share = graph.flops[t] / r["flops"]
            elif r["bytes"] > 0:
                share = graph.bytes[t] / r["bytes"]
            else:
                share = 1.0 / max(1, graph.op.count(graph.op[t]))
            d = per_op.get(op["label"], 0.0) * share
            if reread and r["flops"] > 0 and traced_bytes.get(op["label"]):  # its inputs read again
                again = _reread(graph.bytes[t], share, traced_bytes[op["label"]])
                d += again / again_rate
                reread_bytes[t] = again * scale
            d_src.append(d * scale)
        moved.append(float(graph.bytes[t]) * scale)
    return _work(graph, d_src, moved, source, target, reread_bytes)


def reference_config(medians, ck, graphs, P=1):
    """reference_match's config."""
    return reference_match(medians, ck, graphs, P)[0]


def reference_match(medians, ck, graphs, P=1):
    """(reference_config, whether its traced operations are those of ck's graph at P): False where the
    times are borrowed (ck's own traces of other operations); (None, False) where there is none.

    The traced config whose 1-thread times `ck`'s graph at P threads replays: ck itself where its
    graph at P has the operations of its traced graph, else a traced config of the same variant
    (else of the same kind, chunked or not) that has them; ck itself where none has (its pack
    operations then take their bytes at one core's bandwidth). None when ck has no trace and no
    config matches. (The operations differ where one chunking packs the weights in a pass of its
    own and the other does not: a traced chunk time of a product that packs inside is not the
    product's time beside a pass of its own.)"""
    want = [o["label"] for o in graphs.get(ck, P).ops]
    if ck in medians and [o["label"] for o in graphs.get(ck, 1).ops] == want:
        return ck, True
    same_kind = [r for r in sorted(medians, key=vocabulary.point_sort_key)
                 if (r.compiler, r.kernels) == (ck.compiler, ck.kernels)
                 and vocabulary.is_chunked(r.variant) == vocabulary.is_chunked(ck.variant)]
    for r in sorted(same_kind, key=lambda r: r.variant != ck.variant):
        if [o["label"] for o in graphs.get(r, 1).ops] == want:
            return r, True
    return (ck, False) if ck in medians else (None, False)


def _work(graph, d_src, moved, source, target, reread=None):
    """simulate.Work on `target` of `graph`'s tasks, from their durations on `source`, the bytes
    each moves and the bytes among them read again (`reread`, included in the durations at the
    source's re-read rate). On another machine a task's duration is its operation's roofline
    ratio, max(FLOPs / peak, bytes / one-core bandwidth) on the target over the same on the source,
    whole operations' FLOPs and compulsory bytes as the graph gives them (a product's goes by the
    peaks, a pack pass's or AdamW's by the bandwidths: scaling these by the peaks as well made them
    1.9x slower on mn5-gpp than on the 2-vCPU Xeon whose traces it replayed), times its time
    without the bytes read again, plus those bytes at the target's re-read rate. DRAM bytes
    are the moved ones capped at what one source core could stream in the task's time (the rest
    came from cache)."""
    one_core = source.bandwidth(1)
    if source is target:
        durations = list(d_src)
    else:
        ps, pt = source.peak_gflops_per_core * 1e9, target.peak_gflops_per_core * 1e9
        bt, again_src, again_tgt = target.bandwidth(1), source.reread_bandwidth(), target.reread_bandwidth()
        ratio = []
        for o in graph.ops:
            floor = max(o["flops"] / ps, o["bytes"] / one_core)
            ratio.append(max(o["flops"] / pt, o["bytes"] / bt) / floor if floor > 0 else ps / pt)
        reread = reread or [0.0] * len(d_src)
        durations = [(d - e / again_src) * ratio[op] + e / again_tgt for d, e, op in zip(d_src, reread, graph.op)]
    dram = [min(b, one_core * d) for b, d in zip(moved, d_src)]
    return simulate.Work(durations, dram, compute_demands(graph.flops, durations, target))


def work_for(graph, medians, source, target, where, traced=None):
    """simulate.Work of `graph` on `target` from durations measured on `source` (the chunk times
    of `traced`, `graph` itself by default)."""
    d_src, reread = _source_parts(graph, medians, where, source, traced)
    return _work(graph, d_src, [float(b) for b in graph.bytes], source, target, reread)


def replay_work(graphs, medians, ck, threads, source, target, ref=None, overhead=0.0):
    """simulate.Work of `ck`'s graph at `threads` threads from the traced config that replays it
    (`ref`, reference_config's when not given), each task `overhead` seconds longer (its variant's
    runtime cost per task, runtime_overheads)."""
    graph = graphs.get(ck, threads)
    ref = ref or reference_config(medians, ck, graphs, threads)
    if ref is None:
        raise StudyError(f"{graph.path}: no 1-thread trace of this configuration, nor of one with its operations")
    if ref == ck:
        work = work_for(graph, medians[ck], source, target, graph.path, graphs.get(ck, 1))
    else:
        work = scaled_work(graph, graphs.get(ref, 1), medians[ref], source, target, graph.path)
    return with_overhead(work, overhead)


def with_overhead(work, overhead):
    """`work` with each task `overhead` seconds longer. The kernels' demands stay those of their own
    time: the runtime's part uses no FMA units and moves none of the task's bytes."""
    if overhead > 0:
        work.duration = [d + overhead for d in work.duration]
    return work


MIN_OVERHEAD_CONFIGS = 2  # traced configurations a variant's runtime cost is fitted from, at least


class RuntimeOverheads:
    """What a variant's runtime costs each task beyond its kernel, fitted from the variant's 1-thread
    runs (runtime_overheads). At one thread nothing waits and nothing runs beside, so a measured
    step is its chunks' traced times plus what happens between them (taking the next task,
    releasing its successors, a barrier, reading the clock and writing the trace record): per
    traced configuration c with a measured 1-thread step S_c, its replay R_c (the chunk times
    alone) and n_c tasks a step, S_c - R_c = n_c x delta + noise. The noise of a median step is
    taken as proportional to the step, so delta is the weighted least-squares fit, weights
    (n_c / S_c)^2: many short tasks in a short step tell more than a long step whose gap is within
    its noise. A variant gets a cost only from at least MIN_OVERHEAD_CONFIGS configurations (one
    run's noise would pass for a cost), and a negative fit (noise) counts as 0."""

    def __init__(self, gaps, traced=None):
        self.gaps = gaps  # {config key: (S_c - R_c, n_c, S_c)}
        self.traced = traced or {}  # {config key: seconds per task measured in its traces}

    def of(self, variant, leave_out=None, config=None):
        """Seconds per task of `variant`: `config`'s own, measured in its traces, where it has one;
        else the median of the variant's traced configurations'; else fitted from the measured steps
        without `leave_out`'s configuration (a point is validated against a cost not fitted from
        itself)."""
        if config in self.traced:
            return max(0.0, self.traced[config])
        own = [c for ck, c in self.traced.items() if ck.variant == variant]
        if own:
            return max(0.0, _median(own))
        fit = [g for ck, g in self.gaps.items() if ck.variant == variant and ck != leave_out]
        if len(fit) < MIN_OVERHEAD_CONFIGS:
            return 0.0
        weighted = sum(gap * n / step ** 2 for gap, n, step in fit)
        weight = sum((n / step) ** 2 for _, n, step in fit)
        return max(0.0, weighted / weight)

    def configurations(self, variant):
        """How many measured configurations of `variant` the fit has."""
        return sum(ck.variant == variant for ck in self.gaps)

    def variants(self):
        """{variant: seconds per task} over every configuration, in the variants' order."""
        names = sorted({ck.variant for ck in (*self.gaps, *self.traced)}, key=vocabulary.variant_order)
        return {v: self.of(v) for v in names}

    def line(self):
        """One line for the output: each variant's cost, where it comes from, or why it has none."""
        parts = []
        for v, cost in self.variants().items():
            if any(ck.variant == v for ck in self.traced):
                parts.append(f"{v} {1e6 * cost:.2f} us (traced)")
            elif self.configurations(v) >= MIN_OVERHEAD_CONFIGS:
                parts.append(f"{v} {1e6 * cost:.2f} us (fitted)")
            else:
                parts.append(f"{v} none (no trace with two iterations to measure it, and fitted from "
                             f"{MIN_OVERHEAD_CONFIGS} configurations at least; it has {self.configurations(v)})")
        return ("runtime cost per task (at 1 thread, added to every task): "
                + (", ".join(parts) or "no measured 1-thread point"))


def runtime_overheads(graphs, medians, measured, source, traced=None):
    """RuntimeOverheads of the traced configurations of `medians` that have a measured 1-thread step
    in `measured`, replayed on `source` (the machine they were measured on), with the costs
    measured in the traces (`traced`, TraceStats.costs) where there are some."""
    gaps = {}
    measured_variants = {ck.variant for ck in traced or {}}
    for ck in sorted(medians, key=vocabulary.point_sort_key):
        # a variant measured in its traces needs no fit (and its 1-thread replays are skipped)
        if vocabulary.is_distributed(ck.variant) or ck.variant in measured_variants:
            continue
        step = measured.get(config_point(ck, 1))
        if not step or step <= 0:
            continue
        replayed, _ = predict_point(graphs, medians, ck, 1, source, source)
        gaps[ck] = (step - replayed, graphs.get(ck, 1).n_tasks, step)
    return RuntimeOverheads(gaps, traced)


def compute_demands(flops, durations, machine):
    """Per task, the share of one thread's peak FLOP/s of `machine` it uses alone (0..1)."""
    peak = machine.peak_gflops_per_core * 1e9
    return [min(1.0, f / (d * peak)) if d > 0 else 0.0 for f, d in zip(flops, durations)]


def graph_point(ck, threads):
    """The point whose graph config key `ck` replays at `threads` threads: the sequential variant's
    is the same at every thread count (described at 1). A chunked variant's depends on the thread
    count even where every chunk size is given: a product split along its output columns (a weight
    gradient's output channels, the language-model head) comes in at most 4 chunks per thread, one
    at 1 thread (core/taskgraph.c), so it is described at `threads`."""
    return config_point(ck, 1 if vocabulary.is_sequential(ck.variant) else threads)


def stale_graphs(directory):
    """One line per binary that described some of a results directory's kept task graphs and has
    been rebuilt since (its SHA-256 differs): those graphs are reused as they are, which after a
    change to the chunking rules predicts the old rules (graphs without an origin record, from
    before they were kept, are not checked)."""
    rd = resultsdir.ResultsDir(directory)
    described, current = {}, {}
    for path in rd.graph_origins():
        try:
            record = json.loads(path.read_text())
            binary, sha = str(record["binary"]), str(record["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            return [f"{path}: unreadable graph origin record (move {rd.graphs} aside to "
                    "describe the graphs again)"]
        if binary not in current:
            try:
                current[binary] = common.file_sha256(binary)
            except OSError:
                current[binary] = None
        if current[binary] != sha:
            described[binary] = described.get(binary, 0) + 1
    return [f"{rd.graphs}: {n} task graph(s) were described by another build of {binary}"
            f"{'' if current[binary] else ' (now missing)'}; they are reused as they are (move the folder aside "
            "to describe them with this build)" for binary, n in sorted(described.items())]


class Graphs:
    """The task graphs of a results directory's binaries, described once and kept in graphs/."""

    def __init__(self, directory, meta, build_dir=None):
        self.directory = Path(directory)
        self.meta = meta
        model = meta.model
        if not model:
            raise StudyError(f"{meta.path}: config.model: missing (cannot tell which model to describe)")
        self.args = ["-B", str(model.get("B", 4)), "-T", str(model.get("T", 64))]
        if model.get("config"):
            self.args += ["--config", str(model["config"])]
        elif model.get("checkpoint"):
            p = os.path.expanduser(str(model["checkpoint"]))
            self.args += ["--model", p if os.path.isabs(p) else str(REPO_ROOT / p)]
        else:
            raise StudyError(f"{meta.path}: config.model: neither config nor checkpoint")
        run = meta.run_settings
        tree = build_dir or os.environ.get("PERFSTUDY_BUILD_DIR") or run.get("build_dir") or "build"
        tree = Path(os.path.expanduser(str(tree)))
        self.build = tree if tree.is_absolute() else REPO_ROOT / tree
        self.binary_pattern = run.get("binary") or "{build_dir}/{compiler}/{kernels}/gpt2-{variant}"
        self.cache = {}
        self.sha256 = {}

    def binary(self, variant, compiler, kernels):
        text = os.path.expanduser(self.binary_pattern.format(build_dir=str(self.build), compiler=compiler,
                                                             kernels=kernels, variant=variant))
        return text if os.path.isabs(text) else str(REPO_ROOT / text)

    def get(self, ck, threads, batch=None):
        """The graph of config key `ck` at `threads` threads (dataflow graphs do not depend on it),
        of the results' batch size or of `batch` sequences (a rank's share)."""
        point, batch = self._point(ck, threads, batch)
        if (point, batch) in self.cache:
            return self.cache[(point, batch)]
        path = resultsdir.ResultsDir(self.directory).graph(point, batch)
        graph = taskgraph.load(path) if path.is_file() else self._describe(ck, point, batch, path)
        if graph.variant != ck.variant:
            raise StudyError(f"{path}: describes variant {graph.variant}, expected {ck.variant}")
        self.cache[(point, batch)] = graph
        return graph

    def where(self, ck, threads, batch=None):
        """((point, batch), file) of the graph of `ck` at `threads` threads: the same key, the same
        graph."""
        point, batch = self._point(ck, threads, batch)
        return (point, batch), resultsdir.ResultsDir(self.directory).graph(point, batch)

    def ensure(self, ck, threads, batch=None):
        """Describes the graph of `ck` at `threads` threads into graphs/ unless it is there (without
        reading a kept one: --best has its worker processes read them)."""
        (point, batch), path = self.where(ck, threads, batch)
        if (point, batch) not in self.cache and not path.is_file():
            self._describe(ck, point, batch, path, keep=False)  # hundreds of graphs for --best

    def _point(self, ck, threads, batch):
        if batch is not None and batch == int(self.meta.model.get("B", 4)):
            batch = None
        return graph_point(ck, threads), batch

    def _describe(self, ck, point, batch, path, keep=True):
        args = list(self.args) + ["--threads", str(point.threads)]
        if batch is not None:
            args[args.index("-B") + 1] = str(batch)
        for key, value in chunk_columns(ck).items():  # AUTO: chosen by the binary for `threads`
            if value is not None and value != vocabulary.AUTO:
                args += [vocabulary.CHUNK_OPTIONS[key][0], str(value)]
        binary = self.binary(ck.variant, ck.compiler, ck.kernels)
        graph = taskgraph.describe(binary, args, path, keep=keep)
        if binary not in self.sha256:  # once per binary: describing hundreds of graphs (--best)
            self.sha256[binary] = common.file_sha256(binary)
        resultsdir.atomic_write(resultsdir.ResultsDir(self.directory).graph_origin(path),
                                json.dumps({"binary": binary, "sha256": self.sha256[binary]}) + "\n")
        return graph


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
        frame, dur = _kept_records(path, warmup, clock)
        runs.append((str(path), frame.assign(d=dur)))
    return replay_own_frames(graph, runs, machine, overhead)


def own_frames(traces, warmup):
    """[(trace name, frame of iteration, op, b0, b1, x0, x1, col0, col1 and d, its duration)] of
    --trace files, after the warm-up: what a recording keeps of them (own_chunks.csv.xz)."""
    runs = []
    for path in traces:
        frame, dur = _kept_records(path, warmup)
        runs.append((Path(path).name.split(".")[0],
                     frame[["iteration", "op", "b0", "b1", "x0", "x1", "col0", "col1"]].assign(d=dur)))
    return runs


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
            times = {}
            for row, d in zip(it[["op", "b0", "b1", "x0", "x1", "col0", "col1"]].itertuples(index=False), it["d"]):
                key = taskgraph.chunk_key(*row)
                times[key] = times.get(key, 0.0) + float(d)
            durations = source_durations(graph, times, name, machine)
            work = with_overhead(simulate.Work(durations, [0.0] * graph.n_tasks), overhead)
            try:
                step, _ = simulate.step_time(graph, work, machine, graph.threads, ITERATIONS, None)
            except RuntimeError as err:
                raise StudyError(f"{graph.path}: {err}") from None
            steps.append(step)
    return _median(steps) if steps else None


SOURCE_SPREAD = 0.05  # the 1-thread source runs' host speeds this far apart: predict for another machine warns


def source_spread(stats, peaks):
    """Lines saying how far apart the host was while the 1-thread runs that give the chunk times ran
    (empty where within SOURCE_SPREAD or unknown). A prediction for another machine takes each
    configuration's chunk times from its own 1-thread run, so a host that was slower during one of
    them (a shared VM's: in docs/studies/2026-11-27-xeon-emr-vm16-c, seq's run 25% slower than forkjoin's, the
    same kernels) shows as that configuration being slower everywhere. Told two ways: the probes
    beside those runs (`thread_peaks_of`, thread 0; a run's mean of its two probes), and, with or
    without probes, the busy time of the sequential variant's run against forkjoin's, the same work."""
    lines = []
    probed = {ck: peaks[config_point(ck, 1)][0] for ck in stats.raw if peaks.get(config_point(ck, 1))}
    if len(probed) >= 2:
        (slow, g_lo), (fast, g_hi) = min(probed.items(), key=lambda kv: kv[1]), max(probed.items(), key=lambda kv: kv[1])
        if g_hi > (1 + SOURCE_SPREAD) * g_lo:
            lines.append(f"the 1-thread runs that give the chunk times ran at {g_lo:.0f} to {g_hi:.0f} GFLOP/s by the "
                         f"probes beside them ({100 * (g_hi / g_lo - 1):.0f}% apart: {vocabulary.point_label(config_point(slow, 1))} "
                         f"against {vocabulary.point_label(config_point(fast, 1))}); the predicted ratios between "
                         "configurations carry that")
    busy = {ck: sum(per.values()) * stats.scales.get(ck, 1.0) for ck, per in stats.raw.items()}
    seq = [ck for ck in busy if vocabulary.is_sequential(ck.variant)]
    fj = [ck for ck in busy if ck.variant == vocabulary.FORKJOIN]
    if seq and fj:
        a, b = busy[seq[0]], busy[fj[0]]
        if max(a, b) > (1 + SOURCE_SPREAD) * min(a, b):
            lines.append(f"{seq[0][0]}'s and {vocabulary.FORKJOIN}'s 1-thread runs, the same kernels on the same "
                         f"work, took {a:.3f} and {b:.3f} s of chunk time a step ({100 * (max(a, b) / min(a, b) - 1):.0f}% "
                         "apart): the host moved between the source runs; trace them again on a quieter machine, "
                         "or with more repetitions")
    return lines


def thread_peaks_of(frame):
    """{point key: each thread's peak GFLOP/s} from a thread_peaks table (resultsdir.thread_peaks;
    empty when it has no rows): in each run, the mean of the probe right before it and the one
    right after it (the speed at the run's two ends, for a host that moves or slows a vCPU while
    the run goes on; the one before alone where the record has no other), then the median over the
    point's runs."""
    import statistics

    runs = {}
    for r in frame.to_dict("records"):
        run = (vocabulary.point_key(r), int(r["repetition"]))
        runs.setdefault(run, {}).setdefault(int(r["thread"]), []).append(float(r["gflops"]))
    out = {}
    for (key, _), per in sorted(runs.items()):
        for thread, probes in per.items():
            out.setdefault(key, {}).setdefault(thread, []).append(statistics.fmean(probes))
    return {key: [statistics.median(v) for _, v in sorted(per.items())] for key, per in out.items()}


def slowest_threads(directory):
    """{point key: the mean slowest_thread_time of its traced runs} from the results directory's
    efficiency.csv (pstudy.analyse.efficiency: a thread's chunk time on equal work over the
    others'); empty where there is none, or one made before the thread speeds."""
    path = resultsdir.ResultsDir(directory).efficiency_csv
    if not path.is_file():
        return {}
    points = resultsdir.read_csv(path)
    if "slowest_thread_time" not in points.columns:
        return {}
    return {vocabulary.point_key(r): float(r["slowest_thread_time"]) for _, r in points.iterrows()
            if r["slowest_thread_time"] == r["slowest_thread_time"]}


def predict(directory, meta, source, target, threads, build_dir=None, progress=None, stats=None, clock=WALL,
            against=None, replicates=REPLICATES):
    """(predictions, validation, RuntimeOverheads): the first two as pandas frames.

    predictions: one row per (variant, compiler, kernels, chunking, P) of `threads` (P=1 alone for
    sequential variants): predicted step_s, speedup and efficiency against the same variant's
    predicted 1-core time, POP factors, and the measured step_s where the directory has the point.
    validation: one row per measured point with a 1-thread trace for its configuration: measured and
    predicted (on `source`, the machine it was measured on) step_s, the relative error, the
    measured run's slowest thread (slowest_threads: a model of one machine cannot match a run whose
    threads ran at different speeds), and, where the sweep probed its runs (`[analysis]
    peak_beside`), the prediction with the machine as those probes found it (speeds_beside) and its
    error; NaN elsewhere; and the point's runs replayed with their own chunk times (replay_own_times:
    the schedule model alone) and its error, where the point was traced. `stats`: the directory's
    trace_stats where the caller has them already (of `clock`).

    `clock` CPU: every chunk time (the 1-thread sources and the own-times replays) is its
    dedicated_durations, the machine without what descheduled the runs. `against`: another results
    directory whose measured points the validation compares with (the same machine, quiet), matched
    by point key; the probes beside the runs are then not used. Every predicted step has an
    INTERVAL interval (predicted_low, predicted_high) from `replicates` bootstrap replicates of the
    source iterations (bootstrap_medians; NaN with 0 replicates); the validation's intervals also
    hold the measured points' own run-to-run scatter (RunSpread.widen, from the checked directory's
    repeated points) and, at more than one thread, the error of the other configurations'
    predictions (cross_validated). The validation's frame carries
    `attrs["unmatched"]`: one line per point of `against` without a source here, and per point
    measured here that `against` lacks."""
    import pandas as pd

    stats = stats or trace_stats(directory, meta.warmup, clock)
    medians = stats.medians
    if not medians:
        raise StudyError(f"{directory}: no 1-thread traces (traces/*_t1_*.csv); run the sweep with "
                         "[analysis] trace = true and threads including 1")
    measured = measured_points(directory)
    graphs = Graphs(directory, meta, build_dir)
    overheads = runtime_overheads(graphs, medians, measured, source, stats.costs)
    draws = bootstrap_medians(stats, replicates) if replicates else []

    checked_runs = run_step_medians(resultsdir.read_steps(directory if against is None else against))
    spread = RunSpread([checked_runs], {point: len(v) for point, v in checked_runs.items()})

    def bounds(ck, p, step, **kw):
        if not draws:
            return math.nan, math.nan
        return predicted_interval(graphs, draws, ck, p, source, target, step, **kw)
    order = sorted(medians, key=lambda ck: (vocabulary.variant_order(ck.variant),
                                            vocabulary.point_sort_key(ck)))
    rows = []
    for ck in order:
        counts = [1] if vocabulary.is_sequential(ck.variant) else sorted(set(threads) | {1})
        base = None
        for p in counts:
            kw = {"overhead": overheads.of(ck.variant, config=ck), "noise": stats.noise.get(ck) if target is source else None}
            step, pop = predict_point(graphs, medians, ck, p, source, target, **kw)
            low, high = spread.widen(step, *bounds(ck, p, step, **kw), config_point(ck, p), source_runs(stats, ck),
                                     measured=False)
            if progress:
                progress(ck, p, step)
            base = step if p == 1 else base
            meas = measured.get(config_point(ck, p)) if target is source else None
            rows.append({"variant": ck.variant, "compiler": ck.compiler, "kernels": ck.kernels, "threads": p, **chunk_columns(ck),
                         "predicted_step_s": step, "predicted_low": low, "predicted_high": high,
                         "predicted_speedup": base / step, "predicted_efficiency": base / step / p,
                         **{f"predicted_{name}": v for name, v in pop.items()},
                         "measured_step_s": meas, "runtime_overhead_s": overheads.of(ck.variant, config=ck),
                         "machine": target.name})
    validation, unmatched = [], []
    checked = measured if against is None else measured_points(against)
    slow = slowest_threads(directory if against is None else against)
    # `[analysis] peak_beside`, else empty; not across directories (the probes are of other runs)
    peaks = thread_peaks_of(resultsdir.thread_peaks(directory)) if against is None else {}
    own = resultsdir.ResultsDir(directory).traces_by_point()
    if against is not None:
        unmatched += [f"{vocabulary.point_label(point)}: measured in {Path(against).name}, no 1-thread trace of its "
                      f"configuration in {Path(directory).name}" for point in sorted(checked, key=vocabulary.point_sort_key)
                      if config_key(point) not in medians]
        unmatched += [f"{vocabulary.point_label(point)}: measured in {Path(directory).name}, not in {Path(against).name}"
                      for point in sorted(measured, key=vocabulary.point_sort_key) if point not in checked]
    for point in sorted(checked, key=vocabulary.point_sort_key):
        ck = config_key(point)
        if ck not in medians:
            continue
        overhead = overheads.of(ck.variant, leave_out=ck, config=ck)
        step, step_beside = predict_measured(graphs, medians, ck, point, source, overhead, stats.noise.get(ck), peaks)
        low, high = spread.widen(step, *bounds(ck, point.threads, step, overhead=overhead, noise=stats.noise.get(ck)),
                                 point, source_runs(stats, ck))
        step_beside = math.nan if step_beside is None else step_beside
        replayed = replay_own_times(graphs.get(ck, point.threads), own.get(point, []), meta.warmup, source, overhead,
                                    clock)
        replayed = math.nan if replayed is None else replayed
        meas = checked[point]
        validation.append({**point._asdict(), "measured_step_s": meas,
                           "predicted_step_s": step, "error": (step - meas) / meas,
                           "predicted_low": low, "predicted_high": high,
                           "slowest_thread_time": slow.get(point, math.nan),
                           "predicted_beside_s": step_beside, "error_beside": (step_beside - meas) / meas,
                           "replayed_own_s": replayed, "error_own": (replayed - meas) / meas})
    frame = pd.DataFrame(rows)
    for col in vocabulary.CHUNK_KEYS:
        frame[col] = frame[col].astype("Int64")
    vframe = pd.DataFrame(validation, columns=vocabulary.POINT_KEYS + ["measured_step_s", "predicted_step_s",
                                                                        "error", "predicted_low", "predicted_high",
                                                                        "slowest_thread_time",
                                                                        "predicted_beside_s", "error_beside",
                                                                        "replayed_own_s", "error_own"])
    for col in vocabulary.CHUNK_KEYS:
        vframe[col] = vframe[col].astype("Int64")
    vframe = cross_validated(vframe)
    vframe.attrs["unmatched"] = unmatched
    return frame, vframe, overheads


def coverage(validation):
    """(share of the measured points inside [predicted_low, predicted_high], median relative width
    (high - low) / predicted, points) of a validation frame; None where it has no interval."""
    v = validation.dropna(subset=["predicted_low", "predicted_high", "measured_step_s"]) \
        if "predicted_low" in validation.columns else validation.iloc[0:0]
    if not len(v):
        return None
    inside = (v["measured_step_s"] >= v["predicted_low"]) & (v["measured_step_s"] <= v["predicted_high"])
    width = ((v["predicted_high"] - v["predicted_low"]) / v["predicted_step_s"]).tolist()
    return float(inside.mean()), _median(width), len(v)


def series_label(row):
    label = row["variant"]
    if not (isinstance(row["batch_subsize"], float) and math.isnan(row["batch_subsize"])) and \
            row["batch_subsize"] is not None and str(row["batch_subsize"]) != "<NA>":
        label += " " + vocabulary.chunking_label(*(row.get(c) for c in vocabulary.CHUNK_KEYS))
    return label

