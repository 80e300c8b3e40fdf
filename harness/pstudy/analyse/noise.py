"""The noise study checked (`perfstudy noise check`): three predictions of each quiet point against
its measurement,
  from quiet      perfstudy predict QUIET                          (chunk wall times)
  from disturbed  perfstudy predict DISTURBED --against QUIET      (chunk wall times)
  dedicated       perfstudy predict DISTURBED --dedicated --against QUIET   (chunk CPU times)
and each variant's slowdown beside the co-runner (its disturbed median step over its quiet one; the
sensitivity to noise), with why (the runs' POP factors). Every round of a study is pooled: the quiet
step of a point is the median over all its quiet runs' steps; each prediction is the median over
the rounds' predictions. Target: the dedicated prediction within TARGET of the quiet step at every
point, and closer than the disturbed wall-time prediction on the mean."""

import statistics
from pathlib import Path

from pstudy.analyse import efficiency, intervals
from pstudy.errors import StudyError
from pstudy.measure import subcommands
from pstudy.store import noisestudy, resultsdir, vocabulary

TARGET = 0.05
# a quiet run is taken for a disturbed one where its median step had this many times the
# involuntary context switches of the directory's median run, and at least UNQUIET_SWITCHES: a
# pinned team on an otherwise idle machine is preempted a few times a step at most
UNQUIET_FACTOR, UNQUIET_SWITCHES = 4, 10


def median(values):
    values = [v for v in values if v is not None and v == v]
    return statistics.median(values) if values else None


def validation(directory, *options, out, machine=None):
    """{point key: (measured, predicted)} of perfstudy predict's validation.csv."""
    import pandas as pd

    subcommands.perfstudy("predict", directory, *options, *(("--source-machine", machine) if machine else ()),
                          "--out", out, quiet=True)
    frame = pd.read_csv(Path(out) / "validation.csv", na_values=["NA"], keep_default_na=False)
    return {vocabulary.point_key(row): (row["measured_step_s"], row["predicted_step_s"])
            for row in frame.to_dict("records")}


def run_medians(directories):
    """{point key: [each run's median measured step]} over the runs of all `directories`."""
    out = {}
    for d in directories:
        for point, values in intervals.run_step_medians(resultsdir.read_steps(d)).items():
            out.setdefault(point, []).extend(values)
    return out


def why(directories):
    """{point key: (parallel efficiency, idle share waiting inside parallel operations, idle share
    in the runtime)}: the runs' POP factors (pstudy.analyse.efficiency, from their traces), mean
    over the runs of all `directories`. The two idle shares are of the threads' time (p x runtime):
    load imbalance (a thread in a kernel of a parallel operation while others wait: fork-join's
    barrier waiting for a descheduled thread) and scheduling (no thread in a kernel)."""
    import pandas as pd

    frames = []
    for d in directories:
        meta = resultsdir.read_meta(d)
        runs, _ = efficiency.directory_factors(d, meta.warmup, efficiency.ok_runs(resultsdir.read_runs(d)))
        if len(runs):
            frames.append(runs)
    if not frames:
        return {}
    runs = pd.concat(frames, ignore_index=True)
    out = {}
    for _, r in runs.iterrows():
        key = vocabulary.point_key(r)
        busy = vocabulary.workers(key) * r["runtime_s"]
        out.setdefault(key, []).append((r["parallel_efficiency"], r["imbalance_s"] / busy, r["scheduling_s"] / busy))
    return {point: tuple(float(sum(v[i] for v in values) / len(values)) for i in range(3))
            for point, values in out.items()}


def slowdown_interval(disturbed, quiet):
    """(median(disturbed) / median(quiet), low, high): the ratio of the two groups' medians of run
    medians, with a 95% percentile-bootstrap interval resampling each group's runs (scipy.stats)."""
    import numpy as np
    from scipy import stats

    d, q = np.asarray(disturbed, dtype=float), np.asarray(quiet, dtype=float)
    ratio = float(np.median(d) / np.median(q))
    if len(d) < 2 or len(q) < 2:
        return ratio, float("nan"), float("nan")
    res = stats.bootstrap((d, q), lambda a, b, axis: np.median(a, axis=axis) / np.median(b, axis=axis),
                          vectorized=True, paired=False, confidence_level=0.95, n_resamples=2000,
                          method="percentile", random_state=np.random.default_rng(20081115))
    return ratio, float(res.confidence_interval.low), float(res.confidence_interval.high)


def disturbed_quiet_runs(directory):
    """One line per point of a quiet sweep some of whose runs were not quiet: their steps' median
    involuntary context switches (core/disturbance.c's, in steps.csv) against the sweep's. The
    co-runner is not beside a quiet sweep; something else was (another process, the host), and
    the pooled quiet step and every prediction checked against it carry it: rerun the round. None
    for sweeps recorded without the column."""
    steps = resultsdir.read_steps(directory)
    if "involuntary_switches" not in steps.columns:
        return []
    runs = intervals.run_step_medians(steps[steps["involuntary_switches"].notna()], "involuntary_switches")
    every = [v for values in runs.values() for v in values]
    if not every:
        return []
    typical = median(every)
    limit = max(UNQUIET_SWITCHES, UNQUIET_FACTOR * typical)
    lines = []
    for point in sorted(runs, key=vocabulary.point_sort_key):
        over = [v for v in runs[point] if v > limit]
        if over:
            lines.append(f"{vocabulary.point_label(point)}: {len(over)} run(s) with {min(over):g}-{max(over):g} "
                         f"involuntary switches a step, the sweep's runs {typical:g}: not quiet, rerun the round")
    return lines


def reproducibility(study, quiet, machine=None):
    """The machine's own floor: each quiet round's CPU-time prediction of every other quiet round's
    measured points (perfstudy predict Q_a --dedicated --against Q_b), and the rounds' measured
    medians against each other. Nothing was disturbed on purpose between them, so what separates
    them is the machine's drift, the limit of what any prediction here can be checked to. [(study,
    point, |prediction error|, |measured a / measured b - 1|)]."""
    out, medians = [], {r: run_medians([q]) for r, q in quiet.items()}
    for a, qa in sorted(quiet.items()):
        for b, qb in sorted(quiet.items()):
            if a == b:
                continue
            for key, (measured, predicted) in validation(qa, "--dedicated", "--against", qb,
                                                         out=qa / f"predict-dedicated-against-quiet-r{b}",
                                                         machine=machine).items():
                out.append((study, key, abs(predicted / measured - 1), None))
            if a < b:
                ma, mb = medians[a], medians[b]
                out.extend((study, key, None, abs(median(ma[key]) / median(mb[key]) - 1))
                           for key in set(ma) & set(mb))
    return out


def _quiet_steps(quiet):
    """{point key: the median over every quiet round's measured steps}."""
    steps_of = {}
    for q in quiet.values():
        steps = resultsdir.read_steps(q)
        for key, g in steps[~steps["warmup"]].groupby(vocabulary.POINT_KEYS, dropna=False):
            steps_of.setdefault(vocabulary.point_key(dict(zip(vocabulary.POINT_KEYS, key))), []).extend(
                g["step_s"].tolist())
    return {point: statistics.median(v) for point, v in steps_of.items()}


def _from_quiet(quiet, machine):
    """({point key: the rounds' wall-time predictions from the quiet runs}, {point key: their
    CPU-time ones})."""
    wall, cpu = {}, {}
    for q in quiet.values():
        for key, (_, predicted) in validation(q, out=q / "predict-quiet", machine=machine).items():
            wall.setdefault(key, []).append(predicted)
        for key, (_, predicted) in validation(q, "--dedicated", out=q / "predict-dedicated", machine=machine).items():
            cpu.setdefault(key, []).append(predicted)
    return wall, cpu


def check(out, machine=None):
    """(rows, noise, floor, unquiet) of a noise study's directory: a row per point, duty and period
    with its measured quiet step, the three predictions and the slowdown with its interval; the
    noise tables ({the quiet results directory `report` shows them of: rows, each with its point's
    factors quiet and disturbed, `why`'s tuples}); the machine's floor (reproducibility) and a line
    per quiet run that was not quiet."""
    out = Path(out)
    if not out.is_dir():
        raise StudyError(f"{out}: no such directory")
    rows, noise, floor, unquiet = [], {}, [], []
    for study in sorted(p for p in out.iterdir() if p.is_dir()):
        quiet, disturbed = noisestudy.sweeps(study)
        if not quiet:
            continue
        levels = {}
        for duty, rnd, directory in disturbed:
            levels.setdefault(duty, []).append((rnd, directory))
        measured, (from_quiet, cpu_from_quiet) = _quiet_steps(quiet), _from_quiet(quiet, machine)
        unquiet.extend(f"{study.name}/{q.parent.name}: {line}"
                       for q in quiet.values() for line in disturbed_quiet_runs(q))
        floor.extend(reproducibility(study.name, quiet, machine))
        quiet_runs, quiet_why = run_medians(quiet.values()), why(quiet.values())
        home = quiet[min(quiet)]
        for duty, sweeps in sorted(levels.items()):
            by_period = {}
            for rnd, d in sweeps:
                corunner = noisestudy.corunner_record(d)
                by_period.setdefault(corunner.get("period_us"), []).append((rnd, d, corunner))
            for period, group in sorted(by_period.items(), key=lambda kv: kv[0] or 0):
                wall, cpu = {}, {}
                for rnd, d, _ in group:
                    for key, (_, predicted) in validation(d, "--against", quiet[rnd],
                                                          out=d / "predict-against-quiet", machine=machine).items():
                        wall.setdefault(key, []).append(predicted)
                    for key, (_, predicted) in validation(d, "--dedicated", "--against", quiet[rnd],
                                                          out=d / "predict-dedicated-against-quiet",
                                                          machine=machine).items():
                        cpu.setdefault(key, []).append(predicted)
                dirs = [d for _, d, _ in group]
                disturbed_runs, disturbed_why = run_medians(dirs), why(dirs)
                cpus = ",".join(map(str, group[0][2].get("cpus", []))) or None
                for key in sorted(set(measured) & set(disturbed_runs), key=vocabulary.point_sort_key):
                    slowdown, low, high = slowdown_interval(disturbed_runs[key], quiet_runs[key])
                    noise.setdefault(home, []).append({
                        **key._asdict(), "duty": duty, "cpus": cpus, "period_us": period,
                        "quiet_step_s": median(quiet_runs[key]), "disturbed_step_s": median(disturbed_runs[key]),
                        "slowdown": slowdown, "slowdown_low": low, "slowdown_high": high,
                        "quiet_runs": len(quiet_runs[key]), "disturbed_runs": len(disturbed_runs[key]),
                        "quiet_why": quiet_why.get(key), "disturbed_why": disturbed_why.get(key)})
                    if key in cpu:
                        rows.append({"study": study.name, "duty": duty, "period_us": period, "point": key,
                                     "rounds": len(cpu[key]), "measured": measured[key],
                                     "quiet": median(from_quiet.get(key, [])), "wall": median(wall.get(key, [])),
                                     "cpu": median(cpu[key]), "quiet_cpu": median(cpu_from_quiet.get(key, [])),
                                     "slowdown": slowdown, "low": low, "high": high})
    if not rows:
        raise StudyError(f"{out}: no quiet and disturbed sweeps to compare (run first)")
    return rows, noise, floor, unquiet


def missed(rows):
    """Whether the target is missed: a dedicated prediction beyond TARGET of its quiet step, or the
    dedicated predictions no closer than the disturbed wall-time ones on the mean."""
    wall = [abs(r["wall"] / r["measured"] - 1) for r in rows if r["wall"] is not None]
    cpu = [abs(r["cpu"] / r["measured"] - 1) for r in rows]
    return any(e > TARGET for e in cpu) or statistics.fmean(cpu) >= statistics.fmean(wall)
