"""`predict` against recorded measurements (store/validationdata.py): per point, the predicted and
the measured step time and the error, with the target each is held to.

Targets: every variant at 1 and 2 threads within 5% of its measured median step time, and
within 10% at more threads (a multi-core study, docs/studies/<date>-<machine>/, whose mean |error|
is held to 5% as well: MULTICORE_MEAN);
the 1-thread step beside probes/thief within 10% at every duty cycle; gpt2-mpi at 1 and 2 local ranks
within 10% (pstudy.analyse.distributed, the node executor's 1-thread traces of the same study). The thief is the contention
model's background stream of duty x B(1) (docs/prediction.md, "The contention model"); runs in the
thief's cache mode are left out (the model has no cache to steal from).

Where the recording keeps the runs' own chunk times (own_chunks.csv.xz) or their traces, each point is also
replayed with its run's own chunk times: the measured step against the schedule model alone, which
tells a miss of the speed model (how fast a chunk runs beside the others) from one of the schedule
(dependencies, barriers, the runtime's cost a task).

pack() turns results directories (a sweep with 1-thread traces and, where run, its sensitivity/
experiment) into a recording; validate() predicts every recorded point from it.
"""

import datetime
import shutil

from pstudy.analyse import chunktimes, distributed, intervals, runtimecost, stepreplay
from pstudy.errors import StudyError
from pstudy.measure import ceilings as ceilingsmod
from pstudy.store import graphcache, machinefiles, resultsdir, taskgraph, traceformats, validationdata, vocabulary

TARGET_SWEEP = 0.05
TARGET_MULTICORE = 0.10   # a sweep point at more than 2 threads
MULTICORE_MEAN = 0.05     # the mean |error| over a multi-core study's points
TARGET_THIEF = 0.10
TARGET_MPI = 0.10
# each run replayed with its own chunk times (stepreplay.replay_own_frames), on the recordings that
# keep them: the schedule model alone, held to the 1- and 2-thread target at every point
# and to 1% on the mean
TARGET_SCHEDULE = 0.05
SCHEDULE_MEAN = 0.01
THIEF_MODE = "dram"
NO_THIEF = "none"
COLUMNS = ["kind", "study", "variant", "compiler", "kernels", "threads", *vocabulary.CHUNK_KEYS, "mode", "duty",
           "measured_step_s", "predicted_step_s", "error", "target", "predicted_beside_s", "error_beside",
           "replayed_own_s", "error_own", "predicted_low", "predicted_high"]


class RecordedGraphs:
    """graphcache.Graphs' get() over a recording's graphs."""

    def __init__(self, recording, study):
        self.recording, self.study, self.cache = recording, study, {}
        model = recording.study_meta(study).get("model") or {}
        self.batch = int(model.get("B", 0)) or None

    def get(self, ck, threads, batch=None):
        point = graphcache.graph_point(ck, threads)
        batch = None if batch == self.batch else batch
        if (point, batch) not in self.cache:
            graph = validationdata.read_graph(self.recording.directory, self.study, point, batch)
            if graph.variant != ck.variant:
                raise StudyError(f"{graph.path}: describes variant {graph.variant}, expected {ck.variant}")
            self.cache[(point, batch)] = graph
        return self.cache[(point, batch)]


def traced_step_s(path, warmup):
    """Median over the kept iterations of a --trace file of each iteration's span (first start to
    last end)."""
    frame = traceformats.read_chunks(path, ("iteration", "start_s", "end_s"))
    frame = frame[frame["iteration"] >= warmup]
    if frame.empty:
        raise StudyError(f"{path}: no records after the {warmup} warm-up iteration(s)")
    spans = frame.groupby("iteration").agg(start=("start_s", "min"), end=("end_s", "max"))
    return float((spans["end"] - spans["start"]).median())


def distributed_facts(graphs, medians, point, meta):
    """What predicting a study's gpt2-mpi points needs beyond its traces: the node executor's config
    key (forkjoin, the binary's default executor), the parameter count, the message size, the
    sweep's scaling and the update mode (the binary's default, sharded)."""
    executor = vocabulary.FORKJOIN
    cks = sorted((ck for ck in medians if ck.variant == executor), key=vocabulary.point_sort_key)
    if not cks:
        raise StudyError(f"{graphs.directory}: gpt2-mpi points but no 1-thread traces of {executor} (its node "
                         "executor) to predict them from; add it to the sweep at 1 thread")
    ck = cks[0]
    graphs.get(ck, 1)  # the traced graph, recorded with the sweep's
    facts = distributed.binary_facts(graphs, point.variant, point.compiler, point.kernels)
    params = int(distributed.binary_facts(graphs, ck.variant, ck.compiler, ck.kernels)["num_parameters"])
    return {"config_key": ck, "executor": executor, "num_parameters": params,
            "comm_message_bytes": int(facts.get("comm_message_bytes") or 0),
            "scaling": meta.sweep.get("scaling") or "strong", "update": "sharded",
            "collective": facts.get("collective", "direct")}


def pack(studies, out, command, notes=()):
    """Writes the recording of `studies` ({name: results directory}) into `out`; returns its path."""
    import pandas as pd

    points, chunks, thief, runtime, jitter, meta_studies, peaks, own = [], [], [], [], [], [], [], []
    machine_written = False
    for study, directory in studies.items():
        meta = resultsdir.read_meta(directory)
        stats = chunktimes.trace_stats(directory, meta.warmup)
        medians = stats.medians
        graphs = graphcache.Graphs(directory, meta)
        steps = resultsdir.read_steps(directory)
        steps = steps[~steps["warmup"]]
        dist = None
        for key, group in steps.groupby(vocabulary.POINT_KEYS, dropna=False):
            point = vocabulary.point_key(dict(zip(vocabulary.POINT_KEYS, key)))
            points.append({"study": study, **point._asdict(),
                           "measured_step_s": float(group["step_s"].median()), "steps": len(group)})
            if vocabulary.is_distributed(point.variant):
                dist = dist or distributed_facts(graphs, medians, point, meta)
                ck = dist["config_key"]
                B, R, T = int(meta.model.get("B", 4)), point.ranks, point.threads
                batches = {distributed.dist_share(B, r, R)[1] - distributed.dist_share(B, r, R)[0] for r in range(R)}
                for b in sorted(batches | {max(1, B // R)}):
                    if b > 0:
                        rank_ck = distributed.rank_config(ck, b)
                        graph = graphs.get(rank_ck, T, b)
                        validationdata.write_graph(out, study, graphcache.graph_point(rank_ck, T), graph.path,
                                                   None if b == B else b)
                continue
            ck = chunktimes.config_key(point)
            if ck in medians:
                graph = graphs.get(ck, point.threads)
                validationdata.write_graph(out, study, graphcache.graph_point(ck, point.threads), graph.path)
        for ck, per in stats.raw.items():  # as measured: runtime.csv keeps the scale
            for chunk, seconds in sorted(per.items()):
                chunks.append({"study": study, **{c: getattr(ck, c) for c in validationdata.CONFIG_COLUMNS[1:]},
                               **dict(zip(("op", "b0", "b1", "x0", "x1", "col0", "col1"), chunk)), "seconds": seconds})
        for ck in sorted(stats.raw, key=vocabulary.point_sort_key):
            runtime.append({"study": study, **{c: getattr(ck, c) for c in validationdata.CONFIG_COLUMNS[1:]},
                            "busy_scale": stats.scales[ck], "seconds_per_task": stats.costs.get(ck)})
        for ck in sorted(stats.noise, key=vocabulary.point_sort_key):
            if graphs.get(ck, 1).schedule != taskgraph.STATIC:  # only a static schedule has barriers to wait at
                continue
            for label, deviations in sorted(stats.noise[ck].items()):
                jitter += [{"study": study, **{c: getattr(ck, c) for c in validationdata.CONFIG_COLUMNS[1:]}, "label": label,
                            "deviation": float(f"{d:.5g}")} for d in deviations]  # 5 digits: a third of the file
        sens = resultsdir.ResultsDir(directory).sensitivity
        if (sens / "runs.csv").is_file():
            runs = resultsdir.read_csv(sens / "runs.csv", ["variant", "threads", "mode", "duty", "status", "trace"])
            for r in runs.itertuples(index=False):
                if r.status != "ok" or r.mode not in (NO_THIEF, THIEF_MODE):
                    continue
                thief.append({"study": study, "variant": r.variant, "compiler": r.compiler, "kernels": r.kernels,
                              "threads": int(r.threads), "mode": r.mode, "duty": float(r.duty),
                              "repetition": int(r.repetition), "stolen_GBs": float(r.stolen_GBs or 0.0),
                              "step_s": traced_step_s(sens / r.trace, meta.warmup)})
        # every traced run's chunks, so that the recording replays each run alone without its traces
        for point, traces in resultsdir.ResultsDir(directory).traces_by_point().items():
            keys = point._asdict()
            for run, frame in chunktimes.own_frames(traces, meta.warmup):
                ns = (frame["d"] * 1e9).round().astype("int64")
                own.append(frame.drop(columns=["d"]).assign(ns=ns, run=run, study=study, **keys))
        probes = resultsdir.thread_peaks(directory)  # `[analysis] peak_beside`: empty without it
        peaks += [{"study": study, **r} for r in probes.to_dict("records")]
        if not machine_written and resultsdir.ResultsDir(directory).ceilings.is_file():
            try:
                data = ceilingsmod.load_ceilings(resultsdir.ResultsDir(directory).ceilings)
            except ceilingsmod.CeilingsError as err:
                raise StudyError(str(err)) from None
            out.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(resultsdir.ResultsDir(directory).ceilings, out / validationdata.CEILINGS)
            machine = machinefiles.from_ceilings(data, "recorded")
            resultsdir.atomic_write(out / validationdata.MACHINE, machinefiles.to_toml(machine))
            machine_written = True
        entry = {"name": study, "results": str(directory), "config_text": meta.get("config_text"),
                 "model": meta.model, "commit": meta.get("git", {}).get("commit_full"),
                 "cpu": meta.get("cpu", {}).get("model"), "topology": meta.get("topology")}
        if dist:
            entry["distributed"] = {k: v for k, v in dist.items() if k != "config_key"}
            entry["distributed"]["config_key"] = chunktimes.recording_of(dist["config_key"])
        meta_studies.append(entry)
    if not machine_written:
        raise StudyError("no ceilings.json in the results: the recording needs the measured machine "
                         "([analysis] ceilings = true)")
    meta = {"recorded": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": command, "studies": meta_studies, "machine": validationdata.MACHINE, "notes": list(notes)}
    validationdata.write(out, meta, pd.DataFrame(points, columns=validationdata.POINT_COLUMNS),
                         pd.DataFrame(chunks, columns=validationdata.CHUNK_COLUMNS),
                         pd.DataFrame(thief, columns=validationdata.THIEF_COLUMNS),
                         pd.DataFrame(runtime, columns=validationdata.RUNTIME_COLUMNS),
                         pd.DataFrame(jitter, columns=validationdata.NOISE_COLUMNS),
                         pd.DataFrame(peaks, columns=validationdata.THREAD_PEAK_COLUMNS),
                         pd.concat(own)[validationdata.OWN_CHUNK_COLUMNS] if own else None)
    return out


def run_spread(recording, study, own):
    """intervals.RunSpread of a recording's study: sigma pooled over the repeated points of every
    results directory the recording keeps (the same machine, measured the same day), the run counts
    of the study's points from its kept results, else from its runs' own chunk times."""
    kept = sorted(p.parent for p in (recording.directory / "results").glob("*/steps.csv"))
    results = recording.results_of(study)
    if results is not None and results not in kept:
        kept.append(results)
    pooled = [intervals.run_step_medians(resultsdir.read_steps(d)) for d in kept]
    if results is not None:
        runs = {point: len(v) for point, v in intervals.run_step_medians(resultsdir.read_steps(results)).items()}
    else:
        runs = {point: len(v) for point, v in (own or {}).items()}
    return intervals.RunSpread(pooled, runs)


def validate(recording, machine=None, with_intervals=False):
    """Per recorded point: predicted and measured step time, error, target (a pandas frame, COLUMNS).
    With `with_intervals`, each sweep point's prediction interval (predicted_low, predicted_high:
    intervals.bootstrap_medians over the kept iterations of the 1-thread runs, where the recording
    keeps each run's chunk times, widened by the measured point's run-to-run scatter (run_spread)
    and by the other configurations' errors (intervals.cross_validated); NA elsewhere)."""
    import pandas as pd

    source = machine or machinefiles.load(recording.directory / validationdata.MACHINE)
    rows = []
    for study in recording.studies():
        medians = recording.medians(study)
        graphs = RecordedGraphs(recording, study)
        measured = recording.measured(study)
        overheads = runtimecost.runtime_overheads(graphs, medians, measured, source, recording.runtime_costs(study))
        # the chunks' noise is the recording machine's: held to another machine, none
        noise = recording.noise(study) if machine is None else {}
        peaks = chunktimes.thread_peaks_of(recording.thread_peaks(study)) if machine is None else {}
        # each run's own chunk times: packed in the recording, or the traces of the results it keeps
        own = recording.own_chunks(study) if machine is None else None
        kept = recording.results_of(study) if machine is None and own is None else None
        if kept is not None:
            warmup = resultsdir.read_meta(kept).warmup
            own = {point: chunktimes.own_frames(traces, warmup)
                   for point, traces in resultsdir.ResultsDir(kept).traces_by_point().items()}
        draws = []
        if with_intervals and own:
            its = {}
            for point, runs in own.items():
                if point.threads == 1 and not vocabulary.is_distributed(point.variant):
                    its.setdefault(chunktimes.config_key(point), []).extend(chunktimes.iterations_of(runs))
            draws = intervals.bootstrap_medians(chunktimes.TraceStats(medians, {}, {}, {}, its))
            spread = run_spread(recording, study, own)
            runs_fed = {ck: len({entry[2] for entry in entries}) for ck, entries in its.items()}
        for point in sorted(measured, key=vocabulary.point_sort_key):
            ck = chunktimes.config_key(point)
            if vocabulary.is_distributed(point.variant) or ck not in medians:
                continue
            # and again with the machine as the probes beside the runs found it, where they exist
            overhead = overheads.of(ck.variant, leave_out=ck, config=ck)
            step, step_beside = stepreplay.predict_measured(graphs, medians, ck, point, source, overhead,
                                                            noise.get(ck), peaks)
            meas = measured[point]
            replayed = stepreplay.replay_own_frames(graphs.get(ck, point.threads), (own or {}).get(point, []), source,
                                                    overhead)
            low, high = spread.widen(step, *stepreplay.predicted_interval(
                graphs, draws, ck, point.threads, source, source, step, overhead=overhead, noise=noise.get(ck)),
                point, runs_fed.get(ck, 0)) if draws else (None, None)
            rows.append({"kind": "sweep", "study": study, **point._asdict(),
                         "predicted_low": low, "predicted_high": high,
                         "mode": None, "duty": None, "measured_step_s": meas, "predicted_step_s": step,
                         "error": step / meas - 1,
                         "target": TARGET_SWEEP if point.threads <= 2 else TARGET_MULTICORE,
                         "predicted_beside_s": step_beside,
                         "error_beside": None if step_beside is None else step_beside / meas - 1,
                         "replayed_own_s": replayed, "error_own": None if replayed is None else replayed / meas - 1})
        dist = recording.study_meta(study).get("distributed")
        mpi_points = [p for p in sorted(measured, key=vocabulary.point_sort_key) if vocabulary.is_distributed(p.variant)]
        if mpi_points:
            if not dist:
                raise StudyError(f"{recording.directory / validationdata.META}: study {study}: gpt2-mpi points "
                                 "but no distributed facts")
            ck = chunktimes.recorded_config_key(dist["config_key"])
            B = int((recording.study_meta(study).get("model") or {}).get("B", 4))
            # a recording from before the ring measured the direct collective
            lays = [distributed.Layout(p.ranks, p.threads, p.ranks, dist["update"], dist.get("collective", "direct"))
                    for p in mpi_points]
            batches = [B * p.ranks if dist["scaling"] == "weak" else B for p in mpi_points]
            results = distributed.predict(graphs, medians, ck, lays, batches, dist["num_parameters"],
                                          dist["comm_message_bytes"], source, source,
                                          overheads.of(ck.variant, config=ck))
            for p, r in zip(mpi_points, results):
                meas = measured[p]
                rows.append({"kind": "distributed", "study": study, **p._asdict(),
                             "mode": f"{p.ranks} ranks", "duty": None, "measured_step_s": meas,
                             "predicted_step_s": r["predicted_step_s"], "error": r["predicted_step_s"] / meas - 1,
                             "target": TARGET_MPI})
        runs = recording.thief[recording.thief["study"] == study]
        for (variant, compiler, kernels, threads, mode, duty), group in runs.groupby(
                ["variant", "compiler", "kernels", "threads", "mode", "duty"]):
            ck = vocabulary.Point(variant, compiler, kernels)
            if ck not in medians:
                raise StudyError(f"{recording.directory / validationdata.THIEF}: {variant} {compiler}/{kernels}: "
                                 f"no 1-thread chunk times of that configuration in {validationdata.CHUNKS}")
            background = float(duty) * source.bandwidth(1) if mode == THIEF_MODE else 0.0
            step, _ = stepreplay.predict_point(graphs, medians, ck, int(threads), source, source, background,
                                               overheads.of(ck.variant, config=ck))
            meas = float(group["step_s"].median())
            rows.append({"kind": "thief", "study": study, "variant": variant, "compiler": compiler,
                         "kernels": kernels, "threads": int(threads), "mode": mode, "duty": float(duty),
                         "measured_step_s": meas, "predicted_step_s": step,
                         "error": step / meas - 1, "target": TARGET_THIEF})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    for col in vocabulary.CHUNK_KEYS:
        frame[col] = frame[col].astype("Int64")
    if with_intervals:  # each study's sweep intervals, widened by the other configurations' errors
        for study in frame["study"].dropna().unique():
            rows_of = (frame["study"] == study) & (frame["kind"] == "sweep") & frame["predicted_low"].notna()
            if rows_of.any():
                widened = intervals.cross_validated(frame[rows_of].astype({"predicted_low": float,
                                                                             "predicted_high": float}))
                frame.loc[rows_of, ["predicted_low", "predicted_high"]] = \
                    widened[["predicted_low", "predicted_high"]].to_numpy()
    return frame


def row_label(r):
    """A validated point's name, unique within its recording: 'predict-d12: tasks bs=1 k=64 gcc/fast t=2',
    'default: seq gcc/fast t=1 beside thief dram d=0.25', 'predict-mpi: mpi gcc/fast t=1 x 2 ranks'."""
    label = f"{r['study']}: {r['variant']}"
    if str(r["batch_subsize"]) != "<NA>":
        label += " " + vocabulary.chunking_label(*(r[c] for c in vocabulary.CHUNK_KEYS))
    label += f" {r['compiler']}/{r['kernels']} t={r['threads']}"
    if r["kind"] == "thief":
        label += f" beside thief {r['mode']} d={r['duty']:g}"
    elif r["kind"] == "distributed":
        label += f" x {r['mode']}"
    return label


def report_lines(frame, title):
    """The per-point errors as lines, the worst first in its group, and a verdict line."""
    out = [title]
    for _, r in frame.iterrows():
        label = row_label(r)
        flag = "ok" if abs(r["error"]) <= r["target"] else "BEYOND TARGET"
        beside = ""
        if _known(r.get("error_beside")):
            beside = (f"; beside its probes {r['predicted_beside_s']:.5f} s {100 * r['error_beside']:+6.2f}% "
                      f"{'ok' if abs(r['error_beside']) <= r['target'] else 'BEYOND'}")
        if _known(r.get("error_own")):
            beside += f"; own chunk times {r['replayed_own_s']:.5f} s {100 * r['error_own']:+6.2f}%"
        out.append(f"  {label:<58} measured {r['measured_step_s']:.5f} s  predicted {r['predicted_step_s']:.5f} s  "
                   f"error {100 * r['error']:+6.2f}% (target {100 * r['target']:.0f}%) {flag}{beside}")
    if len(frame):
        for line in (_error_line(frame, "error", ""),
                     _error_line(frame, "error_beside", "with the machine as the probes beside the runs found it "
                                 "([analysis] peak_beside), "),
                     _error_line(frame, "error_own", "replayed with each run's own chunk times (the schedule model "
                                 "alone, the speed model left out), ", against_target=False)):
            if line:
                out.append(line)
    return out


def _error_line(frame, column, what, against_target=True):
    """'  <what>N points: mean |error| ..., largest ...[; K beyond their target]' over the rows whose
    `column` is known; None where none is."""
    known = frame[frame[column].map(_known)] if column in frame else frame.iloc[:0]
    if not len(known):
        return None
    errors = known[column].astype(float).abs()
    line = f"  {what}{len(known)} points: mean |error| {100 * errors.mean():.2f}%, largest {100 * errors.max():.2f}%"
    return line + (f"; {int((errors > known['target']).sum())} beyond their target" if against_target else "")


def _known(value):
    return value is not None and value == value


