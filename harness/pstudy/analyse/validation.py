"""`predict` against recorded measurements (store/validationdata.py): per point, the predicted and
the measured step time and the error, with the target each is held to.

Targets (issue 34): every variant at 1 and 2 threads within 5% of its measured median step time;
the 1-thread step beside bench/thief within 10% at every duty cycle. The thief is the contention
model's background stream of duty x B(1) (harness/README.md, "The contention model"); runs in the
thief's cache mode are left out (the model has no cache to steal from).

pack() turns results directories (a sweep with 1-thread traces and, where run, its sensitivity/
experiment) into a recording; validate() predicts every recorded point from it.
"""

import datetime
import shutil

from pstudy.analyse import prediction
from pstudy.errors import StudyError
from pstudy.measure import ceilings as ceilingsmod
from pstudy.store import machinefiles, resultsdir, validationdata, vocabulary

TARGET_SWEEP = 0.05
TARGET_THIEF = 0.10
THIEF_MODE = "dram"
NO_THIEF = "none"
COLUMNS = ["kind", "study", "variant", "compiler", "kernels", "threads", "batch_subsize", "k", "mode", "duty",
           "measured_step_s", "predicted_step_s", "error", "target"]


class RecordedGraphs:
    """prediction.Graphs' get() over a recording's graphs."""

    def __init__(self, recording, study):
        self.recording, self.study, self.cache = recording, study, {}

    def get(self, ck, threads):
        point = prediction.graph_point(ck, threads)
        if point not in self.cache:
            graph = validationdata.read_graph(self.recording.directory, self.study, point)
            if graph.variant != ck[0]:
                raise StudyError(f"{graph.path}: describes variant {graph.variant}, expected {ck[0]}")
            self.cache[point] = graph
        return self.cache[point]


def traced_step_s(path, warmup):
    """Median over the kept iterations of a --trace file of each iteration's span (first start to
    last end)."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, usecols=["iteration", "start_s", "end_s"])
    except (OSError, ValueError) as err:
        raise StudyError(f"{path}: unreadable trace: {err}") from None
    frame = frame[frame["iteration"] >= warmup]
    if frame.empty:
        raise StudyError(f"{path}: no records after the {warmup} warm-up iteration(s)")
    spans = frame.groupby("iteration").agg(start=("start_s", "min"), end=("end_s", "max"))
    return float((spans["end"] - spans["start"]).median())


def pack(studies, out, command, notes=()):
    """Writes the recording of `studies` ({name: results directory}) into `out`; returns its path."""
    import pandas as pd

    points, chunks, thief, meta_studies = [], [], [], []
    machine_written = False
    for study, directory in studies.items():
        meta = resultsdir.read_meta(directory)
        medians = prediction.trace_medians(directory, meta.warmup)
        graphs = prediction.Graphs(directory, meta)
        steps = resultsdir.read_steps(directory)
        steps = steps[~steps["warmup"]]
        for key, group in steps.groupby(vocabulary.POINT_KEYS, dropna=False):
            point = vocabulary.point_key(dict(zip(vocabulary.POINT_KEYS, key)))
            if vocabulary.is_distributed(point[0]):
                continue
            points.append({"study": study, **dict(zip(vocabulary.POINT_KEYS[:6], point[:6])),
                           "measured_step_s": float(group["step_s"].median()), "steps": len(group)})
            ck = prediction.config_key(point)
            if ck in medians:
                graph = graphs.get(ck, point[3])
                validationdata.write_graph(out, study, prediction.graph_point(ck, point[3]), graph.path)
        for ck, per in medians.items():
            for chunk, seconds in sorted(per.items()):
                chunks.append({"study": study, **dict(zip(validationdata.CONFIG_COLUMNS[1:], ck)),
                               **dict(zip(("op", "b0", "b1", "x0", "x1"), chunk)), "seconds": seconds})
        sens = resultsdir.sensitivity_dir(directory)
        if (sens / "runs.csv").is_file():
            runs = resultsdir.read_csv(sens / "runs.csv", ["variant", "threads", "mode", "duty", "status", "trace"])
            for r in runs.itertuples(index=False):
                if r.status != "ok" or r.mode not in (NO_THIEF, THIEF_MODE):
                    continue
                thief.append({"study": study, "variant": r.variant, "compiler": r.compiler, "kernels": r.kernels,
                              "threads": int(r.threads), "mode": r.mode, "duty": float(r.duty),
                              "repetition": int(r.repetition), "stolen_GBs": float(r.stolen_GBs or 0.0),
                              "step_s": traced_step_s(sens / r.trace, meta.warmup)})
        if not machine_written and resultsdir.ceilings_path(directory).is_file():
            try:
                data = ceilingsmod.load_ceilings(resultsdir.ceilings_path(directory))
            except ceilingsmod.CeilingsError as err:
                raise StudyError(str(err)) from None
            out.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(resultsdir.ceilings_path(directory), out / validationdata.CEILINGS)
            machine = machinefiles.from_ceilings(data, "recorded")
            resultsdir.atomic_write(out / validationdata.MACHINE, machinefiles.to_toml(machine))
            machine_written = True
        meta_studies.append({"name": study, "results": str(directory), "config_text": meta.get("config_text"),
                             "model": meta.model, "commit": meta.get("git", {}).get("commit_full"),
                             "cpu": meta.get("cpu", {}).get("model"), "topology": meta.get("topology")})
    if not machine_written:
        raise StudyError("no ceilings.json in the results: the recording needs the measured machine "
                         "([analysis] ceilings = true)")
    meta = {"recorded": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": command, "studies": meta_studies, "machine": validationdata.MACHINE, "notes": list(notes)}
    validationdata.write(out, meta, pd.DataFrame(points, columns=validationdata.POINT_COLUMNS),
                         pd.DataFrame(chunks, columns=validationdata.CHUNK_COLUMNS),
                         pd.DataFrame(thief, columns=validationdata.THIEF_COLUMNS))
    return out


def validate(recording, machine=None):
    """Per recorded point: predicted and measured step time, error, target (a pandas frame, COLUMNS)."""
    import pandas as pd

    source = machine or machinefiles.load(recording.directory / validationdata.MACHINE)
    rows = []
    for study in recording.studies():
        medians = recording.medians(study)
        graphs = RecordedGraphs(recording, study)
        measured = recording.measured(study)
        for point in sorted(measured, key=vocabulary.point_sort_key):
            ck = prediction.config_key(point)
            if ck not in medians:
                continue
            step, _ = prediction.predict_point(graphs, medians, ck, point[3], source, source)
            meas = measured[point]
            rows.append({"kind": "sweep", "study": study, **dict(zip(vocabulary.POINT_KEYS[:6], point[:6])),
                         "mode": None, "duty": None, "measured_step_s": meas, "predicted_step_s": step,
                         "error": step / meas - 1, "target": TARGET_SWEEP})
        runs = recording.thief[recording.thief["study"] == study]
        for (variant, compiler, kernels, threads, mode, duty), group in runs.groupby(
                ["variant", "compiler", "kernels", "threads", "mode", "duty"]):
            ck = (variant, compiler, kernels, None, None)
            if ck not in medians:
                raise StudyError(f"{recording.directory / validationdata.THIEF}: {variant} {compiler}/{kernels}: "
                                 "no 1-thread chunk times of that configuration in chunks.csv")
            background = float(duty) * source.bandwidth(1) if mode == THIEF_MODE else 0.0
            step, _ = prediction.predict_point(graphs, medians, ck, int(threads), source, source, background)
            meas = float(group["step_s"].median())
            rows.append({"kind": "thief", "study": study, "variant": variant, "compiler": compiler,
                         "kernels": kernels, "threads": int(threads), "batch_subsize": None, "k": None,
                         "mode": mode, "duty": float(duty), "measured_step_s": meas, "predicted_step_s": step,
                         "error": step / meas - 1, "target": TARGET_THIEF})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    for col in ("batch_subsize", "k"):
        frame[col] = frame[col].astype("Int64")
    return frame


def report_lines(frame, title):
    """The per-point errors as lines, the worst first in its group, and a verdict line."""
    out = [title]
    for _, r in frame.iterrows():
        label = f"{r['study']}: {r['variant']}"
        if str(r["batch_subsize"]) != "<NA>":
            label += f" bs={r['batch_subsize']} k={r['k']}"
        label += f" {r['compiler']}/{r['kernels']} t={r['threads']}"
        if r["kind"] == "thief":
            label += f" beside thief {r['mode']} d={r['duty']:g}"
        flag = "ok" if abs(r["error"]) <= r["target"] else "BEYOND TARGET"
        out.append(f"  {label:<58} measured {r['measured_step_s']:.5f} s  predicted {r['predicted_step_s']:.5f} s  "
                   f"error {100 * r['error']:+6.2f}% (target {100 * r['target']:.0f}%) {flag}")
    if len(frame):
        bad = frame[frame["error"].abs() > frame["target"]]
        out.append(f"  {len(frame)} points, mean |error| {100 * frame['error'].abs().mean():.2f}%, largest "
                   f"{100 * frame['error'].abs().max():.2f}%; {len(bad)} beyond their target")
    return out


