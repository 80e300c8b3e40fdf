"""The chunk times a prediction replays, from a results directory's 1-thread traces, keyed by config key
(a point without its thread count), and what else the traces tell: the runtime's cost per task,
each operation's noise, how far the host descheduled the runs."""

from dataclasses import dataclass
from pathlib import Path

from pstudy.store import resultsdir, taskgraph, traceformats, vocabulary
from pstudy.errors import StudyError


def median(values):
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


def kept_records(path, warmup, clock=WALL):
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
        frame, dur = kept_records(path, warmup, clock)
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
    medians = {ck: {chunk: median(v) for chunk, v in chunks.items()} for ck, chunks in samples.items()}
    scales = {}
    for ck, per in medians.items():
        total = sum(per.values())
        scales[ck] = median(busy[ck]) / total if total > 0 else 1.0
    costs = {ck: median(v) for ck, v in gaps.items() if len(v) >= 2}
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


def iterations_of(runs):
    """TraceStats.iterations' entries [({chunk key: seconds}, busy seconds, run name)] of kept runs
    ((name, frame of iteration, op, b0, b1, x0, x1, col0, col1 and d), as own_frames gives them):
    what a recording that keeps each run's chunk times gives the prediction intervals."""
    return [(iteration_times(it), float(it["d"].sum()), str(name))
            for name, frame in runs for _, it in frame.groupby("iteration")]


def iteration_times(it):
    """{chunk key: seconds} of one iteration's records (a frame with op, b0, b1, x0, x1, col0, col1
    and d, their durations), a chunk recorded twice summed."""
    out = {}
    for row, d in zip(it[["op", "b0", "b1", "x0", "x1", "col0", "col1"]].itertuples(index=False), it["d"]):
        key = taskgraph.chunk_key(*row)
        out[key] = out.get(key, 0.0) + float(d)
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


def own_frames(traces, warmup):
    """[(trace name, frame of iteration, op, b0, b1, x0, x1, col0, col1 and d, its duration)] of
    --trace files, after the warm-up: what a recording keeps of them (own_chunks.csv.xz)."""
    runs = []
    for path in traces:
        frame, dur = kept_records(path, warmup)
        runs.append((Path(path).name.split(".")[0],
                     frame[["iteration", "op", "b0", "b1", "x0", "x1", "col0", "col1"]].assign(d=dur)))
    return runs


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
