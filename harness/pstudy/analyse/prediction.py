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

import math
from dataclasses import dataclass
from pathlib import Path

from pstudy.store import resultsdir, vocabulary
from pstudy.errors import StudyError
from pstudy.analyse.chunktimes import WALL, chunk_columns, config_key, config_point, measured_points, slowest_threads, thread_peaks_of, trace_stats
from pstudy.analyse.intervals import REPLICATES, RunSpread, bootstrap_medians, cross_validated, run_step_medians, source_runs
from pstudy.store.graphcache import Graphs
from pstudy.analyse.stepreplay import predict_measured, predict_point, predicted_interval, replay_own_times
from pstudy.analyse.runtimecost import runtime_overheads


@dataclass
class Replay:
    """What predict and validate replay from, gathered once (replay_inputs): the 1-thread traces'
    TraceStats (of `clock`), the measured points, the task graphs, the runtime costs per task, the
    bootstrap replicates and the checked points' run-to-run spread."""
    directory: Path
    meta: object
    source: object  # the machine the directory was measured on
    stats: object
    measured: dict
    graphs: Graphs
    overheads: object  # RuntimeOverheads
    draws: list
    spread: RunSpread
    clock: str
    against: object  # the results directory the validation checks, or None for `directory` itself

    def bounds(self, ck, p, target, step, **kw):
        """(low, high) of a predicted step from the bootstrap replicates; NaN without any."""
        if not self.draws:
            return math.nan, math.nan
        return predicted_interval(self.graphs, self.draws, ck, p, self.source, target, step, **kw)


def replay_inputs(directory, meta, source, build_dir=None, stats=None, clock=WALL, against=None,
                  replicates=REPLICATES):
    """The Replay of a results directory measured on `source`. `stats`: the directory's trace_stats
    where the caller has them already (of `clock`). `clock` CPU: every chunk time (the 1-thread
    sources and the own-times replays) is its dedicated_durations, the machine without what
    descheduled the runs. `against`: another results directory whose measured points validate()
    compares with (the same machine, quiet). Every predicted step has an INTERVAL interval from
    `replicates` bootstrap replicates of the source iterations (bootstrap_medians; NaN with 0
    replicates)."""
    stats = stats or trace_stats(directory, meta.warmup, clock)
    if not stats.medians:
        raise StudyError(f"{directory}: no 1-thread traces (traces/*_t1_*.csv); run the sweep with "
                         "[analysis] trace = true and threads including 1")
    measured = measured_points(directory)
    graphs = Graphs(directory, meta, build_dir)
    overheads = runtime_overheads(graphs, stats.medians, measured, source, stats.costs)
    draws = bootstrap_medians(stats, replicates) if replicates else []
    checked_runs = run_step_medians(resultsdir.read_steps(directory if against is None else against))
    spread = RunSpread([checked_runs], {point: len(v) for point, v in checked_runs.items()})
    return Replay(Path(directory), meta, source, stats, measured, graphs, overheads, draws, spread, clock, against)


def predict(replay, target, threads, progress=None):
    """One row per (variant, compiler, kernels, chunking, P) of `threads` (P=1 alone for sequential
    variants) on `target`, as a pandas frame: predicted step_s and its interval (predicted_low,
    predicted_high: the source's sampling alone), speedup and efficiency against the same
    variant's predicted 1-core time, POP factors, and the measured step_s where the directory has
    the point and `target` is the machine it was measured on."""
    import pandas as pd

    stats, medians, overheads, source = replay.stats, replay.stats.medians, replay.overheads, replay.source
    order = sorted(medians, key=lambda ck: (vocabulary.variant_order(ck.variant),
                                            vocabulary.point_sort_key(ck)))
    rows = []
    for ck in order:
        counts = [1] if vocabulary.is_sequential(ck.variant) else sorted(set(threads) | {1})
        base = None
        for p in counts:
            kw = {"overhead": overheads.of(ck.variant, config=ck), "noise": stats.noise.get(ck) if target is source else None}
            step, pop = predict_point(replay.graphs, medians, ck, p, source, target, **kw)
            low, high = replay.spread.widen(step, *replay.bounds(ck, p, target, step, **kw), config_point(ck, p),
                                            source_runs(stats, ck), measured=False)
            if progress:
                progress(ck, p, step)
            base = step if p == 1 else base
            meas = replay.measured.get(config_point(ck, p)) if target is source else None
            rows.append({"variant": ck.variant, "compiler": ck.compiler, "kernels": ck.kernels, "threads": p, **chunk_columns(ck),
                         "predicted_step_s": step, "predicted_low": low, "predicted_high": high,
                         "predicted_speedup": base / step, "predicted_efficiency": base / step / p,
                         **{f"predicted_{name}": v for name, v in pop.items()},
                         "measured_step_s": meas, "runtime_overhead_s": overheads.of(ck.variant, config=ck),
                         "machine": target.name})
    frame = pd.DataFrame(rows)
    for col in vocabulary.CHUNK_KEYS:
        frame[col] = frame[col].astype("Int64")
    return frame


def validate(replay):
    """One row per measured point (of `replay.against`, else of the directory itself) with a 1-thread
    trace for its configuration, as a pandas frame: measured and predicted (on the machine it was
    measured on) step_s, the relative error, the measured run's slowest thread (slowest_threads: a
    model of one machine cannot match a run whose threads ran at different speeds), and, where the
    sweep probed its runs (`[analysis] peak_beside`), the prediction with the machine as those
    probes found it (speeds_beside) and its error; NaN elsewhere; and the point's runs replayed
    with their own chunk times (replay_own_times: the schedule model alone) and its error, where
    the point was traced. The intervals also hold the measured points' own run-to-run scatter
    (RunSpread.widen) and, at more than one thread, the error of the other configurations'
    predictions (cross_validated). The probes beside the runs are not used across directories.
    The frame carries `attrs["unmatched"]`: one line per point of `against` without a source here,
    and per point measured here that `against` lacks."""
    import pandas as pd

    stats, medians, overheads, source = replay.stats, replay.stats.medians, replay.overheads, replay.source
    directory, against, measured = replay.directory, replay.against, replay.measured
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
        step, step_beside = predict_measured(replay.graphs, medians, ck, point, source, overhead, stats.noise.get(ck),
                                             peaks)
        low, high = replay.spread.widen(step, *replay.bounds(ck, point.threads, source, step, overhead=overhead,
                                                             noise=stats.noise.get(ck)),
                                        point, source_runs(stats, ck))
        step_beside = math.nan if step_beside is None else step_beside
        replayed = replay_own_times(replay.graphs.get(ck, point.threads), own.get(point, []), replay.meta.warmup,
                                    source, overhead, replay.clock)
        replayed = math.nan if replayed is None else replayed
        meas = checked[point]
        validation.append({**point._asdict(), "measured_step_s": meas,
                           "predicted_step_s": step, "error": (step - meas) / meas,
                           "predicted_low": low, "predicted_high": high,
                           "slowest_thread_time": slow.get(point, math.nan),
                           "predicted_beside_s": step_beside, "error_beside": (step_beside - meas) / meas,
                           "replayed_own_s": replayed, "error_own": (replayed - meas) / meas})
    vframe = pd.DataFrame(validation, columns=vocabulary.POINT_KEYS + ["measured_step_s", "predicted_step_s",
                                                                        "error", "predicted_low", "predicted_high",
                                                                        "slowest_thread_time",
                                                                        "predicted_beside_s", "error_beside",
                                                                        "replayed_own_s", "error_own"])
    for col in vocabulary.CHUNK_KEYS:
        vframe[col] = vframe[col].astype("Int64")
    vframe = cross_validated(vframe)
    vframe.attrs["unmatched"] = unmatched
    return vframe


def series_label(row):
    label = row["variant"]
    if not (isinstance(row["batch_subsize"], float) and math.isnan(row["batch_subsize"])) and \
            row["batch_subsize"] is not None and str(row["batch_subsize"]) != "<NA>":
        label += " " + vocabulary.chunking_label(*(row.get(c) for c in vocabulary.CHUNK_KEYS))
    return label
