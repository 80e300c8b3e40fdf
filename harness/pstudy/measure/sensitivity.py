"""Bandwidth sensitivity, measured without counters: the step beside a memory thief (probes/thief).

The method of Eklov et al., "Bandwidth Bandit" (CGO 2013). The step runs with --trace alone and
beside a thief that streams through memory on the cores the step does not use, at several
pressure levels; a kernel whose time grows with the bandwidth stolen depends on memory bandwidth,
one whose time does not, does not, whatever the roofline's model says.

Placement (recorded in sensitivity.json): the step at T threads on cpus 0..T-1 (taskset), one thief
process per spare cpu T..N-1 (sched_setaffinity). On a 2-core machine: the step on cpu 0 at one
thread, the thief on cpu 1. Thread counts without a spare cpu are skipped. The step is the
baseline variant at 1 thread and the fork-join variant at more (vocabulary.BASELINE, FORKJOIN),
for each compiler and kernel set of the config.

Conditions: "none" (no thief), and for each mode (dram: arrays 8x the LLC; cache: 3/4 of the LLC,
takes L3 capacity rather than DRAM bandwidth) each duty level (the share of each 1 ms period the
thief streams). Schedule: repetition-major, every condition once per repetition, shuffled in each
repetition by random.Random(seed) (interleaved, so that a drift of the machine spreads over all
conditions instead of biasing one).

Per run: a kernel's time per step is the median over the kept steps (warm-up skipped) of the sum
of its operations' busy wall times (the union of each one's chunk intervals). Pairing: every pressured run is divided by the no-thief run of the
same repetition (and point): slowdown = t / t_none - 1. Per (mode, duty): the mean slowdown over
repetitions with a Student-t 95% interval, and the thief's mean achieved GB/s (summed over its
processes). Per mode: the sensitivity slope, the kernel's time (over the median no-thief time)
regressed on the stolen GB/s over all runs of that mode and the no-thief runs, with a 95% interval
from the slope's standard error (t with n-2 degrees of freedom).

Files, in a results directory's sensitivity/ (resultsdir.sensitivity_dir):
  sensitivity.json            placement, levels, modes, repetitions, seed, thief binary, llc size, notes
  runs.csv                    one row per run: point, repetition, order, mode, duty, status, error,
                              stolen_GBs, thief_GBs (per process, ';'-separated), wall_s, trace
  traces/STEM_MODE_dDUTY.csv  the step's --trace (resultsdir.sensitivity_trace_path)
  slowdowns.csv               point, kernel, mode, duty, stolen_GBs, slowdown, low, high, n
  slopes.csv                  point, kernel, mode, slope_per_GBs, low, high, n
  sensitivity_STEM.png        slowdown against stolen GB/s per kernel (one per point; pstudy.show.sensitivityfigure)
"""

import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from pstudy.store import resultsdir, traceformats, vocabulary
from pstudy.measure import runner
from pstudy.errors import StudyError

MODES = ("dram", "cache")
NONE = "none"
DEFAULT_LEVELS = (0.25, 0.5, 1.0)
DEFAULT_REPETITIONS = 5
CONFIDENCE = 0.95
THIEF_SETTLE_S = 0.3     # after the thieves say "ready", before the step starts
THIEF_START_TIMEOUT_S = 30
TRACE_COLUMNS = ("iteration", "op", "kernel", "start_s", "end_s")
RUN_COLUMNS = resultsdir.KEYS + ["repetition", "order", "mode", "duty", "status", "error", "stolen_GBs",
                                 "thief_GBs", "wall_s", "trace"]
SLOWDOWN_COLUMNS = ["point", "kernel", "mode", "duty", "stolen_GBs", "slowdown", "low", "high", "n"]
SLOPE_COLUMNS = ["point", "kernel", "mode", "slope_per_GBs", "low", "high", "n"]


# ---------------------------------------------------------------------------------------------
# the plan

def conditions(levels, modes):
    """[(mode, duty)]: the no-thief run and every mode at every level."""
    return [(NONE, 0.0)] + [(m, float(d)) for m in modes for d in levels]


def schedule(points, levels, modes, repetitions, seed):
    """[(repetition, point, mode, duty)] repetition-major, shuffled within each repetition."""
    rng = random.Random(seed)
    order = []
    for rep in range(repetitions):
        batch = [(rep, p, m, d) for p in points for m, d in conditions(levels, modes)]
        rng.shuffle(batch)
        order.extend(batch)
    return order


def placement(cpus, threads):
    """{"step": [cpus], "thieves": [cpus]} for a step at `threads` threads on the cpus this process
    may use; None when no cpu is left for a thief."""
    cpus = sorted(cpus)
    if threads >= len(cpus):
        return None
    return {"step": cpus[:threads], "thieves": cpus[threads:]}


def experiment_points(study, cpus):
    """The step's points (one thread: the baseline variant; more: fork-join) at the config's thread
    counts that leave a spare cpu, and the skipped thread counts."""
    from pstudy.store.sweep import Point
    out, skipped = [], []
    for threads in study.sweep["threads"]:
        if placement(cpus, threads) is None:
            skipped.append(threads)
            continue
        variant = vocabulary.BASELINE if threads == 1 else vocabulary.FORKJOIN
        for compiler in study.sweep["compilers"]:
            for kernels in study.sweep["kernels"]:
                out.append(Point(variant, compiler, kernels, threads, None, None))
    return out, skipped


# ---------------------------------------------------------------------------------------------
# running

def start_thieves(thief, mode, duty, cpus):
    """One thief process per cpu, each pinned there; returns them once each has said "ready"."""
    procs = []
    for cpu in cpus:
        def pin(cpu=cpu):
            os.sched_setaffinity(0, {cpu})
        procs.append(subprocess.Popen([str(thief), "--mode", mode, "--duty", f"{duty:g}"], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                      preexec_fn=pin, start_new_session=True))
    deadline = time.monotonic() + THIEF_START_TIMEOUT_S
    for p in procs:
        line = p.stderr.readline()
        if line.strip() != "ready" or time.monotonic() > deadline:
            stop_thieves(procs)
            raise StudyError(f"{thief}: did not start (said {line.strip()!r})")
    time.sleep(THIEF_SETTLE_S)
    return procs


def stop_thieves(procs):
    """SIGTERM each thief; [its JSON report] (None for one that reported nothing)."""
    out = []
    for p in procs:
        try:
            p.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            stdout, _ = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, _ = p.communicate()
        try:
            out.append(json.loads(stdout.strip().splitlines()[-1]))
        except (IndexError, json.JSONDecodeError):
            out.append(None)
    return out


def run_one(study, point, binary, root, trace, mode, duty, thief, place):
    """One run of the step, beside the thieves of (mode, duty); (Outcome, [thief reports])."""
    prefix = ["taskset", "-c", ",".join(map(str, place["step"]))]
    procs = start_thieves(thief, mode, duty, place["thieves"]) if mode != NONE else []
    try:
        outcome = runner.execute(study, point, binary, root, trace, prefix=prefix)
    finally:
        reports = stop_thieves(procs)
    return outcome, reports


def run_experiment(study, directory, binaries, root, thief, levels, modes, repetitions, seed, say=None):
    """Runs the experiment into resultsdir.ResultsDir(directory).sensitivity; returns the analysis
    (analyse_directory). binaries: {(compiler, kernels, variant): path}."""
    say = say or (lambda text: sys.stderr.write(f"sensitivity: {text}\n"))
    thief = Path(thief)
    if not thief.is_file():
        raise StudyError(f"{thief}: not found (build it with `make`: probes/Makefile.probes)")
    cpus = sorted(os.sched_getaffinity(0))
    points, skipped = experiment_points(study, cpus)
    if not points:
        raise StudyError(f"{study.path}: sweep.threads: no thread count leaves a cpu for the thief "
                         f"({len(cpus)} cpus usable)")
    out = resultsdir.ResultsDir(directory).sensitivity
    (out / resultsdir.TRACES_DIR).mkdir(parents=True, exist_ok=True)
    order = schedule(points, levels, modes, repetitions, seed)
    meta = {"method": "bandwidth interference (Eklov et al., Bandwidth Bandit, CGO 2013)",
            "thief": str(thief), "levels": list(levels), "modes": list(modes), "repetitions": repetitions,
            "seed": seed, "cpus": cpus, "skipped_threads": skipped,
            "placement": {resultsdir.point_stem(p): placement(cpus, p.threads) for p in points},
            "pinning": "step: taskset -c STEP_CPUS; thieves: sched_setaffinity, one per spare cpu",
            "warmup": study.run["warmup"], "steps": study.run["steps"], "model": study.model,
            "schedule": "repetition-major, conditions shuffled in each repetition by random.Random(seed)"}
    rows = []
    for i, (rep, point, mode, duty) in enumerate(order):
        binary = binaries[(point.compiler, point.kernels, point.variant)]
        trace = resultsdir.ResultsDir(directory).sensitivity_trace(point, mode, duty, rep)
        outcome, reports = run_one(study, point, binary, root, trace, mode, duty, thief,
                                   placement(cpus, point.threads))
        gbs = [r["GBs"] for r in reports if r]
        say(f"[{i + 1}/{len(order)}] {point.label()} rep {rep} {mode} d={duty:g}: {outcome.status}, "
            f"{outcome.wall_s:.1f} s, thief {sum(gbs):.2f} GB/s")
        rows.append({**dict(zip(resultsdir.KEYS, point)), "repetition": rep, "order": i, "mode": mode,
                     "duty": duty, "status": outcome.status, "error": outcome.error,
                     "stolen_GBs": sum(gbs), "thief_GBs": ";".join(f"{g:.4f}" for g in gbs),
                     "wall_s": outcome.wall_s, "trace": str(trace.relative_to(out))})
        if mode != NONE and len(gbs) < len(reports):
            meta.setdefault("notes", []).append(f"run {i}: a thief reported nothing")
    resultsdir.write_csv(out / "runs.csv", pd.DataFrame(rows, columns=RUN_COLUMNS))
    resultsdir.write_json(out / "sensitivity.json", meta)
    return analyse_directory(directory)


# ---------------------------------------------------------------------------------------------
# the bookkeeping

def kernel_times(trace, warmup, source):
    """{kernel: time per step} of one run: per kept iteration, the sum of each op's busy wall time
    (the union of its chunks' intervals, as the roofline times an op) over the kernel's ops; the
    median over iterations."""
    kept = trace[trace["iteration"] >= warmup]
    if kept.empty:
        raise StudyError(f"{source}: no iterations left after skipping {warmup} warm-up step(s)")
    spans = traceformats.busy_time(kept, ["iteration", "op", "kernel"]).rename("span").reset_index()
    per_it = spans.groupby(["iteration", "kernel"])["span"].sum().reset_index()
    return per_it.groupby("kernel")["span"].median().to_dict()


def t_interval(values, confidence=CONFIDENCE):
    """(mean, low, high) of a Student-t interval; low/high NaN with fewer than two values."""
    from scipy import stats
    n = len(values)
    if n == 0:
        return math.nan, math.nan, math.nan
    mean = sum(values) / n
    if n < 2:
        return mean, math.nan, math.nan
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def slope_interval(xs, ys, confidence=CONFIDENCE):
    """(slope, low, high) of the least-squares line of ys on xs, interval from its standard error."""
    from scipy import stats
    n = len(xs)
    if n < 3 or len(set(xs)) < 2:
        return math.nan, math.nan, math.nan
    fit = stats.linregress(xs, ys)
    half = stats.t.ppf(0.5 + confidence / 2, n - 2) * fit.stderr
    return float(fit.slope), float(fit.slope - half), float(fit.slope + half)


def analyse_runs(runs, times):
    """The experiment's bookkeeping on recorded timings.

    runs: DataFrame with point (a label), repetition, mode, duty, stolen_GBs, status (RUN_COLUMNS or
    a subset). times: {row index: {kernel: seconds per step}} for the ok runs. Returns (slowdowns,
    slopes) DataFrames (SLOWDOWN_COLUMNS, SLOPE_COLUMNS)."""
    ok = runs[(runs["status"] == runner.OK) & runs.index.isin(list(times))]
    slow_rows, slope_rows = [], []
    for point, pr in ok.groupby("point", sort=False):
        base = pr[pr["mode"] == NONE]
        base_by_rep = {rep: times[i] for i, rep in zip(base.index, base["repetition"])}
        kernels = sorted(set().union(*(times[i].keys() for i in pr.index)))
        base_median = {k: float(pd.Series([t[k] for t in base_by_rep.values() if k in t]).median())
                       for k in kernels}
        for (mode, duty), cr in pr[pr["mode"] != NONE].groupby(["mode", "duty"], sort=True):
            paired = [(i, rep) for i, rep in zip(cr.index, cr["repetition"]) if rep in base_by_rep]
            stolen = [float(cr.loc[i, "stolen_GBs"]) for i, _ in paired]
            for k in kernels:
                vals = [times[i][k] / base_by_rep[rep][k] - 1 for i, rep in paired
                        if k in times[i] and base_by_rep[rep].get(k, 0) > 0]
                mean, low, high = t_interval(vals)
                slow_rows.append({"point": point, "kernel": k, "mode": mode, "duty": duty,
                                  "stolen_GBs": sum(stolen) / len(stolen) if stolen else math.nan,
                                  "slowdown": mean, "low": low, "high": high, "n": len(vals)})
        for mode, mr in pr[pr["mode"] != NONE].groupby("mode", sort=True):
            used = pd.concat([base, mr])
            for k in kernels:
                if not base_median[k] > 0:
                    continue
                xs = [float(used.loc[i, "stolen_GBs"]) if used.loc[i, "mode"] != NONE else 0.0
                      for i in used.index if k in times[i]]
                ys = [times[i][k] / base_median[k] for i in used.index if k in times[i]]
                slope, low, high = slope_interval(xs, ys)
                slope_rows.append({"point": point, "kernel": k, "mode": mode, "slope_per_GBs": slope,
                                   "low": low, "high": high, "n": len(xs)})
    return pd.DataFrame(slow_rows, columns=SLOWDOWN_COLUMNS), pd.DataFrame(slope_rows, columns=SLOPE_COLUMNS)


def read_runs(directory):
    out = resultsdir.ResultsDir(directory).sensitivity
    path = out / "runs.csv"
    runs = resultsdir.read_csv(path, columns=("variant", "repetition", "mode", "duty", "status", "stolen_GBs",
                                              "trace"), what="sensitivity runs")
    if set(runs["mode"]) - {NONE, *MODES}:
        bad = sorted(set(runs["mode"]) - {NONE, *MODES})[0]
        raise StudyError(f"{path}: mode {bad!r} (known: {NONE}, {', '.join(MODES)})")
    runs["point"] = [resultsdir.point_stem(vocabulary.point_key(r)) for _, r in runs.iterrows()]
    return runs


def analyse_directory(directory):
    """Reads sensitivity/runs.csv and the traces, writes slowdowns.csv and slopes.csv; returns
    {"slowdowns": DataFrame, "slopes": DataFrame, "meta": sensitivity.json's record,
    "kernels_by_time": {point: its kernels, the longest in the runs without a thief first}}, what
    pstudy.show.sensitivityfigure draws."""
    out = resultsdir.ResultsDir(directory).sensitivity
    meta_path = out / "sensitivity.json"
    try:
        meta = json.loads(meta_path.read_text())
        warmup = int(meta["warmup"])
    except FileNotFoundError:
        raise StudyError(f"{meta_path}: not found (run `perfstudy sensitivity CONFIG` first)") from None
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise StudyError(f"{meta_path}: not a sensitivity record: {err}") from None
    runs = read_runs(directory)
    times = {}
    for i, r in runs.iterrows():
        if r["status"] != runner.OK:
            continue
        path = out / r["trace"]
        try:
            trace = traceformats.read_chunks(path, TRACE_COLUMNS)
        except StudyError as err:
            raise StudyError(str(err)) from None
        times[i] = kernel_times(trace, warmup, path)
    slowdowns, slopes = analyse_runs(runs, times)
    resultsdir.write_csv(out / "slowdowns.csv", slowdowns)
    resultsdir.write_csv(out / "slopes.csv", slopes)
    longest = {}
    for point in slowdowns["point"].unique():
        share = {}
        base = runs[(runs["point"] == point) & (runs["mode"] == NONE) & runs.index.isin(list(times))]
        for i in base.index:
            for k, t in times[i].items():
                share[k] = share.get(k, 0.0) + t
        longest[point] = sorted(share, key=share.get, reverse=True)
    return {"slowdowns": slowdowns, "slopes": slopes, "meta": meta, "kernels_by_time": longest}


# ---------------------------------------------------------------------------------------------
# for the verdict

def kernel_evidence(directory, compiler, kernels, threads):
    """{kernel: {"slowdown", "low", "high", "stolen_GBs", "cache_slowdown", "slope_per_GBs", ...}}
    at the highest DRAM pressure for the point of (compiler, kernels, threads), or None when the
    directory has no sensitivity results for it."""
    out = resultsdir.ResultsDir(directory).sensitivity
    path = out / "slowdowns.csv"
    if not path.exists():
        return None
    slow = resultsdir.read_csv(path, columns=SLOWDOWN_COLUMNS, what="sensitivity slowdowns")
    slopes_path = out / "slopes.csv"
    slopes = resultsdir.read_csv(slopes_path, columns=SLOPE_COLUMNS, what="sensitivity slopes") \
        if slopes_path.exists() else pd.DataFrame(columns=SLOPE_COLUMNS)
    variant = vocabulary.BASELINE if threads == 1 else vocabulary.FORKJOIN
    point = resultsdir.point_stem((variant, compiler, kernels, threads, None, None))
    mine = slow[slow["point"] == point]
    if mine.empty:
        return None
    evidence = {}
    for k, kr in mine.groupby("kernel"):
        dram = kr[kr["mode"] == "dram"].sort_values("duty")
        cache = kr[kr["mode"] == "cache"].sort_values("duty")
        if dram.empty:
            continue
        top = dram.iloc[-1]
        rec = {"slowdown": float(top["slowdown"]), "low": float(top["low"]), "high": float(top["high"]),
               "stolen_GBs": float(top["stolen_GBs"]), "duty": float(top["duty"])}
        if not cache.empty:
            rec["cache_slowdown"] = float(cache.iloc[-1]["slowdown"])
        sl = slopes[(slopes["point"] == point) & (slopes["kernel"] == k) & (slopes["mode"] == "dram")]
        if not sl.empty:
            rec.update(slope_per_GBs=float(sl.iloc[0]["slope_per_GBs"]), slope_low=float(sl.iloc[0]["low"]),
                       slope_high=float(sl.iloc[0]["high"]))
        evidence[k] = rec
    return evidence or None


def format_results(result):
    """The slowdowns and slopes as text."""
    lines = []
    slow, slopes = result["slowdowns"], result["slopes"]
    for point in slow["point"].unique():
        lines.append(f"== {point}: slowdown vs no thief, mean [95% t-interval] over paired repetitions")
        for (mode, duty), g in slow[slow["point"] == point].groupby(["mode", "duty"]):
            lines.append(f"  {mode} duty {duty:g} (thief {g['stolen_GBs'].iloc[0]:.2f} GB/s):")
            for _, r in g.sort_values("slowdown", ascending=False).iterrows():
                lines.append(f"    {r['kernel']:<22} {r['slowdown']:+7.1%} [{r['low']:+7.1%}, {r['high']:+7.1%}] "
                             f"n={r['n']}")
        sp = slopes[slopes["point"] == point]
        if len(sp):
            lines.append("  slope: relative time per GB/s stolen [95% interval]")
            for _, r in sp.sort_values(["mode", "slope_per_GBs"], ascending=[True, False]).iterrows():
                lines.append(f"    {r['mode']:<5} {r['kernel']:<22} {r['slope_per_GBs']:+.4f} "
                             f"[{r['low']:+.4f}, {r['high']:+.4f}] n={r['n']}")
    return "\n".join(lines)
