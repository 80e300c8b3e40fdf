#!/usr/bin/env python3
"""Benchmark of the variants (not a test): step time of each variant at 1 and
2 threads (more with --threads), task counts and per-task overhead of `tasks`
and `taskiter`, and the cost of --trace, for one model shape (default d12,
B=4, T=64). Runs are interleaved across variants and repeated; medians are
reported. Prints the ratios the targets are stated in:

  tasks (BATCH_SUBSIZE=1) vs forkjoin at the largest thread count  (target: within 5%)
  taskiter vs forkjoin at the largest thread count                 (target: faster)
  each parallel variant's speedup over its own 1-thread run        (target: >= 1.85 at 2)
  forkjoin with --trace vs without at the largest thread count    (target: under 2% slower)

Per-task overhead at 1 thread is (step time - sum of chunk times) / tasks: the
runtime's own cost. At more threads the same difference divided by the task
count also holds idle time, and is labelled so.

On a shared machine single runs scatter by more than the gaps the targets are
about, so each ratio comes with a 95% interval and a verdict. One sample is
one run (the median of its measured steps: steps of one process are not
independent draws). The ratios are paired: a repetition runs every point once,
the points each target compares next to each other, and the order is reversed
in every other repetition, so the machine's drift between repetitions (larger
than the gaps) cancels in each repetition's ratio and a linear drift within
one cancels over two. The interval is the Hodges-Lehmann one for paired
samples (Walsh averages of the log ratios, exact Wilcoxon signed-rank null;
harness/pstudy/compare.py), distribution-free; it needs 6 repetitions. A
target is "met" when the whole interval satisfies it, "missed" when none of it
does, and "undecided" otherwise: more repetitions would tell. The
per-repetition ratios and the hypervisor's steal time during each run are
printed beside them.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "harness"))
from pstudy.ceilings import cpu_times, steal_fraction  # noqa: E402
from pstudy.compare import hl_paired_ratio_ci  # noqa: E402

CONFIDENCE = 0.95


def run(binary, args, threads, trace=None):
    cmd = [str(binary)] + args + ["--json"]
    if "seq" not in binary.name:
        cmd += ["--threads", str(threads)]
    if trace:
        cmd += ["--trace", str(trace)]
    env = dict(os.environ, OMP_PROC_BIND=os.environ.get("OMP_PROC_BIND", "close"),
               OMP_PLACES=os.environ.get("OMP_PLACES", "cores"))
    before = cpu_times()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    steal = steal_fraction(before, cpu_times())
    if r.returncode != 0:
        sys.exit(f"bench/variants.py: {' '.join(cmd)} failed: {r.stderr.strip()}")
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    return lines[0]["info"], [x for x in lines if "step" in x], steal


def ratio_verdict(samples_a, samples_b, target):
    """The ratio a / b and its verdict against `target` (a test a ratio passes, such as
    `lambda r: r <= 1.05`, true on one side of a limit), from one sample per run, a[i] and b[i]
    from the same repetition."""
    point, lo, hi = hl_paired_ratio_ci(samples_b, samples_a, CONFIDENCE)
    if lo != lo:  # NaN: too few runs for an interval
        return f"{point:.3f}  (too few runs for a {CONFIDENCE:.0%} interval)"
    verdict = "met" if target(lo) and target(hi) else "missed" if not (target(lo) or target(hi)) else "undecided"
    return f"{point:.3f}  {CONFIDENCE:.0%} interval [{lo:.3f}, {hi:.3f}]  -> {verdict}"


def chunk_seconds(trace, iterations):
    total = {i: 0.0 for i in iterations}
    with open(trace) as f:
        for row in csv.DictReader(f):
            it = int(row["iteration"])
            if it in total:
                total[it] += float(row["end_s"]) - float(row["start_s"])
    return total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="d12")
    ap.add_argument("-B", type=int, default=4)
    ap.add_argument("-T", type=int, default=64)
    ap.add_argument("--steps", type=int, default=6, help="steps per run; the first is discarded as warm-up")
    ap.add_argument("--repetitions", type=int, default=6,
                    help="runs per point, interleaved; 6 is the fewest that give a paired 95%% interval")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--compiler", default="gcc")
    ap.add_argument("--kernels", default="fast")
    args = ap.parse_args(argv)
    if args.repetitions < 1:
        ap.error(f"--repetitions {args.repetitions}: must be at least 1")
    if args.steps < 2:
        ap.error(f"--steps {args.steps}: must be at least 2 (the first is a warm-up)")
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        threads = []
    if not threads or min(threads) < 1 or 1 not in threads:
        ap.error(f"--threads {args.threads}: must be a comma-separated list of positive counts including 1")
    top = max(threads)
    build = ROOT / "build" / args.compiler / args.kernels
    missing = [v for v in ("seq", "forkjoin", "tasks", "taskiter") if not (build / f"gpt2-{v}").exists()]
    if missing:
        sys.exit(f"bench/variants.py: {build}: no gpt2-{missing[0]} (build it with make, "
                 f"or check --compiler/--kernels)")
    model = ["--config", args.config, "-B", str(args.B), "-T", str(args.T), "--steps", str(args.steps)]
    points = [("seq", 1, [])]
    for t in threads:
        points += [("forkjoin", t, []), ("tasks", t, ["--batch-subsize", "1"]), ("taskiter", t, ["--batch-subsize", "1"]),
                   ("tasks", t, ["--batch-subsize", "4"])]
    run_medians = {}  # key -> one median step time per repetition
    steals = {}
    info_of = {}
    overhead = {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-variants-"))
    for rep in range(args.repetitions):
        for variant, t, extra in points if rep % 2 == 0 else points[::-1]:
            key = (variant, t, " ".join(extra))
            info, steps, steal = run(build / f"gpt2-{variant}", model + extra, t)
            info_of[key] = info
            measured = steps[1:]
            run_medians.setdefault(key, []).append(statistics.median(s["step_s"] for s in measured))
            steals.setdefault(key, []).append(steal)
            print(f"  rep {rep}: {variant:8s} threads={t} {' '.join(extra):18s} "
                  f"median step {run_medians[key][-1]:.3f} s"
                  f"{'' if steal is None else f', steal {steal:.1%}'}", file=sys.stderr)
    # Per-task overhead from one traced run per task point, outside the repetitions, so that
    # tracing's own cost stays out of the paired ratios.
    for variant, t, extra in points:
        if variant not in ("tasks", "taskiter"):
            continue
        trace = tmp / "trace.csv"
        info, steps, _ = run(build / f"gpt2-{variant}", model + extra, t, trace)
        measured = steps[1:]
        busy = chunk_seconds(trace, [s["step"] for s in measured])
        per_task = [(t * s["step_s"] - busy[s["step"]]) / info["tasks_per_step"] for s in measured]
        overhead[(variant, t, " ".join(extra))] = statistics.median(per_task)
    # the cost of tracing: forkjoin at the largest thread count, with and without, paired
    # like the points (the order alternates between repetitions)
    plain_runs, traced_runs = [], []
    for rep in range(args.repetitions):
        for traced in (False, True) if rep % 2 == 0 else (True, False):
            _, steps, _ = run(build / "gpt2-forkjoin", model, top, tmp / "t.csv" if traced else None)
            (traced_runs if traced else plain_runs).append(statistics.median(s["step_s"] for s in steps[1:]))

    med = {k: statistics.median(v) for k, v in run_medians.items()}
    print(f"\nvariants: {args.config} B={args.B} T={args.T}, {args.compiler}/{args.kernels}, "
          f"{args.repetitions} runs x {args.steps - 1} measured steps per point, median of the runs' medians")
    print(f"{'variant':10s} {'chunking':18s} {'threads':>7s} {'step s':>8s} {'speedup/self1':>13s} "
          f"{'tasks/step':>10s} {'overhead/task':>14s} {'steal':>6s}")
    for (variant, t, extra), v in med.items():
        self1 = med.get((variant, 1, extra))
        speedup = f"{self1 / v:.2f}x" if self1 else "-"
        info = info_of[(variant, t, extra)]
        ntasks = info["tasks_per_step"] if variant in ("tasks", "taskiter") else "-"
        oh = overhead.get((variant, t, extra))
        oh_text = "-" if oh is None else (f"{oh * 1e6:.1f} us" + ("" if t == 1 else " (+idle)"))
        known = [x for x in steals[(variant, t, extra)] if x is not None]
        steal_text = f"{statistics.median(known):.1%}" if known else "-"
        print(f"{variant:10s} {extra or '-':18s} {t:7d} {v:8.3f} {speedup:>13s} {ntasks!s:>10s} {oh_text:>14s} "
              f"{steal_text:>6s}")
    fj = run_medians[("forkjoin", top, "")]
    tk = run_medians[("tasks", top, "--batch-subsize 1")]
    ti = run_medians[("taskiter", top, "--batch-subsize 1")]
    print(f"\nratios from one median per run ({args.repetitions} runs per point), paired by repetition, "
          f"Hodges-Lehmann intervals")

    def per_rep(a, b):
        return " ".join(f"{x / y:.2f}" for x, y in zip(a, b))

    text = ratio_verdict(tk, fj, lambda r: r <= 1.05)
    print(f"tasks(BATCH_SUBSIZE=1) / forkjoin at {top} threads: {text}  (target <= 1.05)")
    print(f"  per repetition: {per_rep(tk, fj)}")
    text = ratio_verdict(ti, fj, lambda r: r < 1)
    print(f"taskiter / forkjoin at {top} threads: {text}  (target < 1)")
    print(f"  per repetition: {per_rep(ti, fj)}")
    for variant, extra in [("forkjoin", ""), ("tasks", "--batch-subsize 1"), ("taskiter", "--batch-subsize 1")]:
        one, many = run_medians[(variant, 1, extra)], run_medians[(variant, top, extra)]
        text = ratio_verdict(one, many, lambda r: r >= 1.85)
        print(f"{variant} speedup at {top} threads over its own 1 thread: {text}  (target >= 1.85 at 2)")
        print(f"  per repetition: {per_rep(one, many)}")
    known = [x for v in steals.values() for x in v if x is not None]
    if known:
        print(f"hypervisor steal during the runs: median {statistics.median(known):.1%}, "
              f"largest {max(known):.1%} of CPU time")
    text = ratio_verdict(traced_runs, plain_runs, lambda r: r < 1.02)
    print(f"with --trace / without (forkjoin, {top} threads): {text}  (target < 1.02)")
    print(f"  per repetition: {per_rep(traced_runs, plain_runs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
