#!/usr/bin/env python3
"""Validation under noise made on purpose, and each variant's sensitivity to it (a benchmark, not a
test: it times things, and needs the machine to itself).

    bench/disturb_validation.py run --out DIR [--config default --config predict-d12]
                                [--cpus 0] [--duty 0.25,0.5] [--period-us 10000,100000] [--rounds 1]
    bench/disturb_validation.py check DIR
(with the Python scripts/find-python.sh names: one that imports pandas, matplotlib and scipy)

run, per config (default: configs/default.toml and configs/predict-d12.toml), per round: the sweep
quiet, then the same sweep beside build/bench/disturb (a CPU-bound co-runner pinned to --cpus, busy
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
import re
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "harness"))
from pstudy import errors  # noqa: E402

errors.require_modules("bench/disturb_validation.py")  # before minutes of measuring

from pstudy.errors import StudyError  # noqa: E402
from pstudy.show import noisefigure  # noqa: E402
from pstudy.store import vocabulary  # noqa: E402

PERFSTUDY = ROOT / "harness" / "perfstudy"
DISTURB = ROOT / "build" / "bench" / "disturb"
DEFAULT_CONFIGS = ("default", "predict-d12")
TARGET = 0.05


def perfstudy(*args, quiet=False):
    """Runs a perfstudy subcommand; its stdout's last line. StudyError where it fails."""
    proc = subprocess.run([str(PERFSTUDY), *map(str, args)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
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
    """The sweep beside build/bench/disturb; the co-runner's own record written beside the results."""
    if not DISTURB.is_file():
        raise StudyError(f"{DISTURB}: missing (make build/bench/disturb)")
    proc = subprocess.Popen([str(DISTURB), "--cpus", cpus, "--duty", str(duty), "--period-us", str(period_us)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.stderr.readline().strip() != "ready":
        proc.kill()
        raise StudyError(f"{DISTURB}: {proc.communicate()[1].strip() or 'did not start'}")
    try:
        directory = sweep(config, root)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    (directory / "disturb.json").write_text(out)
    return directory


def run(args):
    out = Path(args.out)
    levels = [(duty, period) for period in periods(args.period_us) for duty in duties(args.duty)]
    configs = [config_path(name) for name in args.config or DEFAULT_CONFIGS]
    for config in configs:
        for r in range(args.rounds):
            order = [None] + levels if r % 2 == 0 else levels[::-1] + [None]  # interleaved, reversed every round
            for level in order:
                tag = "quiet" if level is None else f"d{level[0]:g}-p{level[1]:g}us"
                print(f"== {config.stem} round {r}: {tag}", file=sys.stderr, flush=True)
                root = out / config.stem / f"{tag}-r{r}"
                if level is None:
                    sweep(config, root)
                else:
                    disturbed_sweep(config, root, args.cpus, *level)
    return check(out)


def results_dir(root):
    found = [p for p in root.iterdir() if (p / "meta.json").is_file()] if root.is_dir() else []
    if len(found) != 1:
        raise StudyError(f"{root}: expected one results directory, found {len(found)}")
    return found[0]


def validation(directory, *options, out):
    perfstudy("predict", directory, *options, "--out", out, quiet=True)
    import pandas as pd

    frame = pd.read_csv(Path(out) / "validation.csv", na_values=["NA"], keep_default_na=False)
    return {vocabulary.point_key(row): (row["measured_step_s"], row["predicted_step_s"])
            for row in frame.to_dict("records")}


def check(out):
    import statistics

    out = Path(out)
    if not out.is_dir():
        raise StudyError(f"{out}: no such directory")
    rows, failed, noise = [], False, {}
    for study in sorted(p for p in out.iterdir() if p.is_dir()):
        quiet = {p.name.split("-r")[-1]: results_dir(p) for p in study.glob("quiet-r*")}
        for disturbed_root in sorted(study.glob("d*-r*")):
            name = DISTURBED_NAME.fullmatch(disturbed_root.name)
            if not name:
                raise StudyError(f"{disturbed_root}: not a disturbed sweep's name (d<duty>-p<period>us-r<round>)")
            duty, rnd = name["duty"], name["round"]
            if rnd not in quiet:
                raise StudyError(f"{disturbed_root}: no quiet-r{rnd} beside it")
            q, d = quiet[rnd], results_dir(disturbed_root)
            from_quiet = validation(q, out=q / "predict-quiet")
            wall = validation(d, "--against", q, out=d / "predict-against-quiet")
            cpu = validation(d, "--dedicated", "--against", q, out=d / "predict-dedicated-against-quiet")
            own = {k: m for k, (m, _) in validation(d, out=d / "predict-own").items()}  # the disturbed steps
            # the dedicated machine predicted from the quiet runs too: on a machine that is not
            # quite quiet, the two dedicated predictions agree where the measured steps cannot
            quiet_cpu = validation(q, "--dedicated", out=q / "predict-dedicated")
            try:
                corunner = json.loads((d / "disturb.json").read_text())
            except (OSError, ValueError):
                corunner = {}
            for key, step in own.items():  # the sensitivity `report` shows, kept with the quiet results
                if key in from_quiet:
                    quiet_step = from_quiet[key][0]
                    noise.setdefault(q, []).append({
                        **dict(zip(vocabulary.POINT_KEYS, key)), "duty": float(duty),
                        "cpus": ",".join(map(str, corunner.get("cpus", []))) or None,
                        "period_us": corunner.get("period_us"), "quiet_step_s": quiet_step,
                        "disturbed_step_s": step, "slowdown": step / quiet_step})
            for key, (measured, predicted) in sorted(cpu.items(), key=lambda kv: vocabulary.point_sort_key(kv[0])):
                rows.append({"study": study.name, "duty": float(duty), "round": rnd, "point": key,
                             "measured": measured, "quiet": from_quiet.get(key, (None, None))[1],
                             "wall": wall[key][1], "cpu": predicted, "disturbed": own.get(key),
                             "quiet_cpu": quiet_cpu.get(key, (None, None))[1]})
    if not rows:
        raise StudyError(f"{out}: no quiet and disturbed sweeps to compare (run first)")
    for q, table in noise.items():
        print(f"wrote {noisefigure.write(q, table)} (perfstudy report {q} shows it)")
    print(f"{'study':<14} {'duty':>4} {'point':<36} {'quiet_s':>9} {'from quiet':>10} {'disturbed wall':>14} "
          f"{'disturbed CPU':>13} {'slowdown':>8} {'CPU: disturbed/quiet':>20}")
    for r in rows:
        label = vocabulary.point_label(r["point"])
        err = {k: None if r[k] is None else r[k] / r["measured"] - 1 for k in ("quiet", "wall", "cpu")}
        failed |= abs(err["cpu"]) > TARGET
        slowdown = "" if r["disturbed"] is None else f"{r['disturbed'] / r['measured']:.2f}x"
        print(f"{r['study']:<14} {r['duty']:>4g} {label:<36} {r['measured']:>9.5f} "
              + " ".join(f"{'NA' if e is None else f'{100 * e:+.1f}%':>{w}}" for e, w in
                         ((err["quiet"], 10), (err["wall"], 14), (err["cpu"], 13)))
              + f" {slowdown:>8} "
              + ("" if r["quiet_cpu"] is None else f"{100 * (r['cpu'] / r['quiet_cpu'] - 1):+19.1f}%"))
    wall = statistics.fmean(abs(r["wall"] / r["measured"] - 1) for r in rows)
    cpu = statistics.fmean(abs(r["cpu"] / r["measured"] - 1) for r in rows)
    worst = max(abs(r["cpu"] / r["measured"] - 1) for r in rows)
    print(f"mean |error| of the quiet steps predicted from the disturbed runs: wall times {100 * wall:.1f}%, "
          f"CPU times {100 * cpu:.1f}% (largest {100 * worst:.1f}%; target {100 * TARGET:.0f}% at every point)")
    agree = [abs(r["cpu"] / r["quiet_cpu"] - 1) for r in rows if r["quiet_cpu"]]
    if agree:
        print(f"the CPU-time predictions from the disturbed and from the quiet runs differ by {100 * statistics.fmean(agree):.1f}% "
              f"on the mean, {100 * max(agree):.1f}% at most (both predict the machine undisturbed)")
    sens = {}
    for r in rows:
        if r["disturbed"] is not None:
            sens.setdefault((r["study"], r["point"][0], r["duty"]), []).append(r["disturbed"] / r["measured"])
    print("noise sensitivity (median disturbed step over quiet step, per variant):")
    for (study, variant, duty), values in sorted(sens.items()):
        print(f"  {study:<14} {variant:<10} duty {duty:g}: {statistics.median(values):.3f}x over {len(values)} points")
    failed |= cpu >= wall
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
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            if args.rounds < 1:
                raise StudyError(f"--rounds: expected a positive integer, got {args.rounds}")
            return run(args)
        return check(args.out)
    except StudyError as err:
        print(f"disturb_validation: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
