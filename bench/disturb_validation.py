#!/usr/bin/env python3
"""Validation under noise made on purpose, and each variant's sensitivity to it (a benchmark, not a
test: it times things, and needs the machine to itself).

    bench/disturb_validation.py run --out DIR [--config default --config noise-d12]
                                [--cpus 0] [--duty 0.25,0.5] [--period-us 10000,100000] [--rounds 1]
                                [--machine FILE]
    bench/disturb_validation.py check DIR [--machine FILE]
(with the Python scripts/find-python.sh names: one that imports pandas, matplotlib and scipy)

run, per config (default: configs/default.toml and configs/noise-d12.toml), per round: the sweep
quiet, then the same sweep beside build/probes/disturb (a CPU-bound co-runner pinned to --cpus, busy
for each --duty of every --period-us, the noise injection of Ferreira et al., SC08, and Hoefler
et al., SC10) at each duty and period in turn, into DIR/<config>/quiet-r<round> and
DIR/<config>/d<duty>-p<period>us-r<round>; quiet and disturbed sweeps alternate, their order reversed
every round, so that a drift of the machine falls on both. Then check.

check compares three predictions of each quiet point with its measurement:
  from quiet      harness/perfstudy predict QUIET                          (chunk wall times)
  from disturbed  harness/perfstudy predict DISTURBED --against QUIET      (chunk wall times)
  dedicated       harness/perfstudy predict DISTURBED --dedicated --against QUIET   (chunk CPU times)
and prints, per point and duty, the three errors, and each variant's slowdown beside the co-runner
(its disturbed median step over its quiet one; the sensitivity to noise). Target: the dedicated
prediction within 5% of the quiet step at every point, and closer than the disturbed wall-time
prediction on the mean; exit status 1 when it misses. Bad input: one line, exit status 2.
"""

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "harness"))
from pstudy import errors  # noqa: E402

errors.require_modules("bench/disturb_validation.py")  # before minutes of measuring

from pstudy import common  # noqa: E402
from pstudy.errors import StudyError  # noqa: E402
from pstudy.measure import children  # noqa: E402
from pstudy.show import noisefigure  # noqa: E402
from pstudy.store import comparable, exclusive, machinefiles, vocabulary  # noqa: E402

PERFSTUDY = ROOT / "harness" / "perfstudy"
DISTURB = ROOT / "build" / "probes" / "disturb"
DEFAULT_CONFIGS = ("default", "noise-d12")
TARGET = 0.05
STOP_GRACE_S = 30  # a sweep stopped early has this long to tabulate what it measured
CORUNNER_RECORD = "disturb.json"


def launch(args):
    """harness/perfstudy ARGS from the repository, its standard output captured (a CompletedProcess);
    stopped with this script, however it ends (children)."""
    with children.running([PERFSTUDY, *args], grace=STOP_GRACE_S, cwd=str(ROOT), stdout=subprocess.PIPE,
                          text=True) as proc:
        out, _ = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out)


def perfstudy(*args, quiet=False):
    """Runs a perfstudy subcommand; its stdout's last line. StudyError where it fails."""
    proc = launch([str(a) for a in args])
    if not quiet:
        sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        raise StudyError(f"perfstudy {' '.join(map(str, args))}: exit status {proc.returncode}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def config_path(name):
    path = Path(name)
    if not path.suffix:
        path = ROOT / "configs" / f"{name}.toml"
    if not path.is_file():
        raise StudyError(f"--config: {name}: no such config")
    return path


def number_list(option, text, ok, what):
    try:
        values = [float(t) for t in text.split(",")]
    except ValueError:
        raise StudyError(f"{option}: expected comma-separated {what}, got {text!r}") from None
    if not values or not all(ok(v) for v in values):
        raise StudyError(f"{option}: expected comma-separated {what}, got {text!r}")
    return values


def duties(text):
    return number_list("--duty", text, lambda v: 0 < v <= 1, "numbers in (0, 1]")


def periods(text):
    # below a millisecond the co-runner's wake-ups, not its duty, would be the disturbance
    return number_list("--period-us", text, lambda v: 1000 <= v <= 10_000_000, "microseconds in [1000, 1e7]")


# a disturbed sweep's directory: d<duty>-p<period>us-r<round>; older ones lack the period
DISTURBED_NAME = re.compile(r"d(?P<duty>[0-9.]+)(?:-p(?P<period>[0-9.]+)us)?-r(?P<round>[0-9]+)")


def sweep(config, root):
    root.mkdir(parents=True, exist_ok=True)
    return Path(perfstudy("run", config, "--results-root", root, "--no-summary"))


def disturbed_sweep(config, root, cpus, duty, period_us):
    """The sweep beside build/probes/disturb; the co-runner's own record written beside the results
    once the whole sweep ran beside it. A sweep that ends early (a signal, a failure) stops with
    the co-runner and has no record: check and a later run refuse it, never taking it for disturbed."""
    with children.running([DISTURB, "--cpus", cpus, "--duty", str(duty), "--period-us", str(period_us)],
                          grace=STOP_GRACE_S, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        first = proc.stderr.readline().strip()
        if first != "ready":
            said = " ".join([first, proc.communicate()[1].strip()]).strip()
            raise StudyError(f"{DISTURB}: {said or 'did not start'}")
        directory = sweep(config, root)
        children.stop(proc, STOP_GRACE_S)
        out, _ = proc.communicate()
    exclusive.write(directory / CORUNNER_RECORD, out, "the co-runner's record")
    return directory


def cpu_list(text):
    """The CPUs of --cpus ("0,2-3", as build/probes/disturb reads it), each one this process may run
    on and none twice: checked before the first sweep, which a co-runner that cannot start would spoil."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    cpus = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?", part)
        if not m or (m[2] is not None and int(m[2]) < int(m[1])):
            raise StudyError(f"--cpus: expected a list such as 0,2-3, got {text!r}")
        cpus += range(int(m[1]), int(m[2] or m[1]) + 1)
    if len(set(cpus)) != len(cpus):
        raise StudyError(f"--cpus {text}: a CPU given twice")
    outside = sorted(set(cpus) - allowed)
    if outside:
        raise StudyError(f"--cpus {text}: CPU {outside[0]} is not one this process may run on "
                         f"(these: {','.join(map(str, sorted(allowed)))})")
    return text


def done_levels(out, configs, rounds, levels):
    """The disturbed sweeps a run with --out already has whole (their co-runner's record beside
    them), to be kept; StudyError for one that has results without the record (an interrupted one),
    before anything runs."""
    done = set()
    for config in configs:
        for r in range(rounds):
            for duty, period in levels:
                root = out / config.stem / f"d{duty:g}-p{period:g}us-r{r}"
                found = [p for p in root.iterdir() if (p / "meta.json").is_file()] if root.is_dir() else []
                if any(not (p / CORUNNER_RECORD).is_file() for p in found):
                    raise StudyError(f"{root}: a sweep without the co-runner's record ({CORUNNER_RECORD}): "
                                     "interrupted, not disturbed throughout; remove it to measure it again")
                if found:
                    done.add(root)
    return done


# busier than this, in CPUs' worth, the machine is not idle before a quiet sweep
IDLE_BUSY_CPUS = 0.1


def busy_cpus(seconds=1.0):
    """CPUs' worth of time the machine spent busy over the next `seconds`; None where /proc/stat
    cannot be read."""
    import time

    from pstudy.measure import ceilings

    before, start = ceilings.cpu_times(), time.monotonic()
    time.sleep(seconds)
    return ceilings.busy_cpus(before, ceilings.cpu_times(), time.monotonic() - start)


def run(args):
    out = Path(args.out).resolve()
    levels = [(duty, period) for period in periods(args.period_us) for duty in duties(args.duty)]
    configs = [config_path(name).resolve() for name in args.config or DEFAULT_CONFIGS]
    cpu_list(args.cpus)
    if args.machine:
        machinefiles.load(args.machine)
    if not DISTURB.is_file():
        raise StudyError(f"{DISTURB}: missing (make build/probes/disturb)")
    done = done_levels(out, configs, args.rounds, levels)
    for config in configs:
        for r in range(args.rounds):
            order = [None] + levels if r % 2 == 0 else levels[::-1] + [None]  # interleaved, reversed every round
            for level in order:
                tag = "quiet" if level is None else f"d{level[0]:g}-p{level[1]:g}us"
                print(f"== {config.stem} round {r}: {tag}", file=sys.stderr, flush=True)
                root = out / config.stem / f"{tag}-r{r}"
                if root in done:
                    print(f"== {root}: measured before, kept", file=sys.stderr, flush=True)
                elif level is None:
                    busy = busy_cpus()
                    if busy is not None and busy > IDLE_BUSY_CPUS:  # a co-runner left behind, another job
                        print(f"warning: {root}: {busy:.2f} CPUs' worth busy before the quiet sweep: "
                              "its runs will not be quiet", file=sys.stderr, flush=True)
                    sweep(config, root)
                else:
                    disturbed_sweep(config, root, args.cpus, *level)
    return check(out, args.machine)


def results_dir(root):
    found = [p for p in root.iterdir() if (p / "meta.json").is_file()] if root.is_dir() else []
    if len(found) != 1:
        raise StudyError(f"{root}: expected one results directory, found {len(found)}")
    return found[0]


def validation(directory, *options, out, machine=None):
    """{point key: (measured, predicted)} of perfstudy predict's validation.csv."""
    perfstudy("predict", directory, *options, *(("--source-machine", machine) if machine else ()), "--out", out,
              quiet=True)
    import pandas as pd

    frame = pd.read_csv(Path(out) / "validation.csv", na_values=["NA"], keep_default_na=False)
    return {vocabulary.point_key(row): (row["measured_step_s"], row["predicted_step_s"])
            for row in frame.to_dict("records")}


def run_medians(directories):
    """{point key: [each run's median measured step]} over the runs of all `directories`."""
    from pstudy.analyse import prediction
    from pstudy.store import resultsdir

    out = {}
    for d in directories:
        for point, values in prediction.run_step_medians(resultsdir.read_steps(d)).items():
            out.setdefault(point, []).extend(values)
    return out


def why(directories):
    """{point key: (parallel efficiency, idle share waiting inside parallel operations, idle share
    in the runtime)}: the runs' POP factors (pstudy.analyse.efficiency, from their traces), mean
    over the runs of all `directories`. The two idle shares are of the threads' time (p x runtime):
    load imbalance (a thread in a kernel of a parallel operation while others wait: fork-join's
    barrier waiting for a descheduled thread) and scheduling (no thread in a kernel)."""
    import pandas as pd
    from pstudy.analyse import efficiency
    from pstudy.store import resultsdir

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


def median(values):
    import statistics
    values = [v for v in values if v is not None and v == v]
    return statistics.median(values) if values else None


def check(out, machine=None):
    """Pools every round of a study: the quiet step of a point is the median over all its quiet
    runs' steps; each prediction is the median over the rounds' predictions; the slowdown is the
    disturbed runs' median over the quiet runs', with its interval."""
    import statistics
    from pstudy.store import resultsdir

    out = Path(out)
    if not out.is_dir():
        raise StudyError(f"{out}: no such directory")
    rows, noise, floor, unquiet = [], {}, [], []
    for study in sorted(p for p in out.iterdir() if p.is_dir()):
        quiet = {p.name.split("-r")[-1]: results_dir(p) for p in study.glob("quiet-r*")}
        if not quiet:
            continue
        levels = {}
        for disturbed_root in sorted(study.glob("d*-r*")):
            name = DISTURBED_NAME.fullmatch(disturbed_root.name)
            if not name:
                raise StudyError(f"{disturbed_root}: not a disturbed sweep's name (d<duty>-p<period>us-r<round>)")
            if name["round"] not in quiet:
                raise StudyError(f"{disturbed_root}: no quiet-r{name['round']} beside it")
            disturbed = results_dir(disturbed_root)
            corunner_record(disturbed)  # every sweep's, before minutes of predictions
            comparable.check([quiet[name["round"]], disturbed])
            levels.setdefault(float(name["duty"]), []).append((name["round"], disturbed))
        quiet_steps = {}
        for q in quiet.values():
            steps = resultsdir.read_steps(q)
            for key, g in steps[~steps["warmup"]].groupby(vocabulary.POINT_KEYS, dropna=False):
                quiet_steps.setdefault(vocabulary.point_key(dict(zip(vocabulary.POINT_KEYS, key))), []).extend(
                    g["step_s"].tolist())
        measured = {point: statistics.median(v) for point, v in quiet_steps.items()}
        from_quiet = {}
        for rnd, q in quiet.items():
            for key, (_, predicted) in validation(q, out=q / "predict-quiet", machine=machine).items():
                from_quiet.setdefault(key, []).append(predicted)
            for key, (_, predicted) in validation(q, "--dedicated", out=q / "predict-dedicated", machine=machine).items():
                from_quiet.setdefault(("cpu",) + key, []).append(predicted)
        unquiet.extend(f"{study.name}/{q.parent.name}: {line}"
                       for q in quiet.values() for line in disturbed_quiet_runs(q))
        floor.extend(reproducibility(study.name, quiet, machine))
        quiet_runs, quiet_why = run_medians(quiet.values()), why(quiet.values())
        home = quiet[min(quiet)]  # the results directory `report` shows the sensitivity of
        for duty, sweeps in sorted(levels.items()):
            by_period = {}
            for rnd, d in sweeps:
                corunner = corunner_record(d)
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
                    qw, dw = quiet_why.get(key), disturbed_why.get(key)
                    noise.setdefault(home, []).append({
                        **dict(zip(vocabulary.POINT_KEYS, key)), "duty": duty, "cpus": cpus, "period_us": period,
                        "quiet_step_s": median(quiet_runs[key]), "disturbed_step_s": median(disturbed_runs[key]),
                        "slowdown": slowdown, "slowdown_low": low, "slowdown_high": high,
                        "quiet_runs": len(quiet_runs[key]), "disturbed_runs": len(disturbed_runs[key]),
                        **noisefigure.why_columns(qw, dw)})
                    if key in cpu:
                        rows.append({"study": study.name, "duty": duty, "period_us": period, "point": key,
                                     "rounds": len(cpu[key]), "measured": measured[key],
                                     "quiet": median(from_quiet.get(key, [])), "wall": median(wall.get(key, [])),
                                     "cpu": median(cpu[key]), "quiet_cpu": median(from_quiet.get(("cpu",) + key, [])),
                                     "slowdown": slowdown, "low": low, "high": high})
    if not rows:
        raise StudyError(f"{out}: no quiet and disturbed sweeps to compare (run first)")
    for q, table in noise.items():
        print(f"wrote {noisefigure.write(q, table)} (perfstudy report {q} shows it)")
    for line in unquiet:
        print(f"warning: {line}")
    return print_check(rows, noise, floor)


def corunner_record(directory):
    """The co-runner's record beside a disturbed sweep; StudyError when there is none (the sweep was
    interrupted, and what ran of it may have run without the co-runner) or it is not one."""
    path = directory / CORUNNER_RECORD
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise StudyError(f"{directory}: no {CORUNNER_RECORD} (the co-runner's record): an interrupted sweep, not "
                         "disturbed throughout; remove it and run again") from None
    except (OSError, ValueError) as err:
        raise StudyError(f"{path}: not the co-runner's record ({err})") from None
    if not isinstance(record, dict):
        raise StudyError(f"{path}: not the co-runner's record (not a JSON object)")
    return record


# a quiet run is taken for a disturbed one where its median step had this many times the
# involuntary context switches of the directory's median run, and at least UNQUIET_SWITCHES: a
# pinned team on an otherwise idle machine is preempted a few times a step at most
UNQUIET_FACTOR, UNQUIET_SWITCHES = 4, 10


def disturbed_quiet_runs(directory):
    """One line per point of a quiet sweep some of whose runs were not quiet: their steps' median
    involuntary context switches (core/disturbance.c's, in steps.csv) against the sweep's. The
    co-runner is not beside a quiet sweep; something else was (another process, the host), and
    the pooled quiet step and every prediction checked against it carry it: rerun the round. None
    for sweeps recorded without the column."""
    from pstudy.analyse import prediction
    from pstudy.store import resultsdir

    steps = resultsdir.read_steps(directory)
    if "involuntary_switches" not in steps.columns:
        return []
    runs = prediction.run_step_medians(steps[steps["involuntary_switches"].notna()], "involuntary_switches")
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


def pct(value, measured, width):
    return f"{'NA' if value is None else f'{100 * (value / measured - 1):+.1f}%':>{width}}"


def print_check(rows, noise, floor=()):
    import statistics

    print(f"{'study':<12} {'duty':>4} {'period':>6} {'point':<34} {'quiet_s':>8} {'from quiet':>10} "
          f"{'disturbed wall':>14} {'disturbed CPU':>13} {'slowdown [95%]':>20} {'CPU vs quiet CPU':>16}")
    failed = False
    for r in rows:
        error = r["cpu"] / r["measured"] - 1
        failed |= abs(error) > TARGET
        interval = "" if r["low"] != r["low"] else f" [{r['low']:.2f}, {r['high']:.2f}]"
        print(f"{r['study']:<12} {r['duty']:>4g} {(r['period_us'] or 0) / 1000:>4g}ms "
              f"{vocabulary.point_label(r['point']):<34} {r['measured']:>8.4f} "
              f"{pct(r['quiet'], r['measured'], 10)} {pct(r['wall'], r['measured'], 14)} "
              f"{pct(r['cpu'], r['measured'], 13)} {r['slowdown']:>7.2f}x{interval:<12} "
              f"{'' if r['quiet_cpu'] is None else pct(r['cpu'], r['quiet_cpu'], 16)}")
    wall = [abs(r["wall"] / r["measured"] - 1) for r in rows if r["wall"] is not None]
    cpu = [abs(r["cpu"] / r["measured"] - 1) for r in rows]
    print(f"quiet steps predicted from the disturbed runs, |error| mean and largest: wall times "
          f"{100 * statistics.fmean(wall):.1f}% and {100 * max(wall):.1f}%, CPU times {100 * statistics.fmean(cpu):.1f}% "
          f"and {100 * max(cpu):.1f}% (target {100 * TARGET:.0f}% at every point; "
          f"{sum(e <= TARGET for e in cpu)} of {len(cpu)} points within it)")
    agree = [abs(r["cpu"] / r["quiet_cpu"] - 1) for r in rows if r["quiet_cpu"]]
    if agree:
        print(f"the CPU-time predictions from the disturbed and from the quiet runs differ by "
              f"{100 * statistics.fmean(agree):.1f}% on the mean, {100 * max(agree):.1f}% at most "
              "(both predict the machine undisturbed)")
    for study in sorted({f[0] for f in floor}):
        predicted = [f[2] for f in floor if f[0] == study and f[2] is not None]
        drift = [f[3] for f in floor if f[0] == study and f[3] is not None]
        if predicted and drift:
            print(f"{study}: the quiet rounds against each other (the machine's own floor): CPU-time prediction "
                  f"|error| mean {100 * statistics.fmean(predicted):.1f}%, largest {100 * max(predicted):.1f}% "
                  f"({sum(e <= TARGET for e in predicted)} of {len(predicted)} within {100 * TARGET:.0f}%); measured "
                  f"medians {100 * statistics.fmean(drift):.1f}% apart on the mean, {100 * max(drift):.1f}% at most")
    for q, table in noise.items():
        import pandas as pd
        print("\n".join(noisefigure.table_lines(pd.DataFrame(table))))
    failed |= statistics.fmean(cpu) >= statistics.fmean(wall)
    return 1 if failed else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--config", action="append")
    r.add_argument("--cpus", default="0", help="CPUs the co-runner is pinned to (default 0: one core)")
    r.add_argument("--duty", default="0.25,0.5", help="comma-separated duty cycles (default 0.25,0.5)")
    r.add_argument("--period-us", default="10000,100000",
                   help="comma-separated periods of the co-runner in microseconds (default 10 and 100 ms)")
    r.add_argument("--rounds", type=int, default=1, help="quiet and disturbed sweeps, alternating (default 1)")
    c = sub.add_parser("check")
    c.add_argument("out")
    for p in (r, c):
        p.add_argument("--machine", help="the machine file predict replays on (perfstudy predict --source-machine; "
                                         "default: each quiet sweep's measured ceilings)")
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            if args.rounds < 1:
                raise StudyError(f"--rounds: expected a positive integer, got {args.rounds}")
            return run(args)
        return check(args.out, args.machine)
    except StudyError as err:
        print(f"disturb_validation: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("disturb_validation: interrupted; a sweep stopped early has no co-runner's record", file=sys.stderr)
        return 130


if __name__ == "__main__":
    common.end_like_ctrl_c()  # a kill or hang-up stops the sweep and the co-runner as Ctrl-C does
    sys.exit(main())
