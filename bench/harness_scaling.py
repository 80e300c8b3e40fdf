#!/usr/bin/env python3
"""Benchmark (not a test): how long the harness's statistics take as the samples per point grow.

For 1e3, 1e4 and 1e5 measured steps per point (3 points, 10 repetitions, log-normal step
times), it times:
  summary   stats.point_summary: medians, order-statistic intervals, speedups (what `report`
            and the end of `run` compute)
  compare   compare.samples + compare.compare_samples with --unit step (every step pooled):
            Hodges-Lehmann interval, Mann-Whitney test, Holm
Each measurement runs in its own process with a time limit (--limit seconds), so a harness
whose cost explodes reports "> limit" instead of hanging. --harness DIR times another checkout's
harness (for example an older commit's, made with `git worktree add`), for before/after figures.
"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from pstudy import errors  # noqa: E402

# each measurement's process runs this Python: without pandas every one would fail in turn
errors.require_modules("bench/harness_scaling.py", ("pandas", "numpy", "scipy"))

# run with PYTHONPATH naming the harness timed
MEASURE = r"""
import sys, time
import numpy as np, pandas as pd
from pstudy.analyse import stats, compare
n, what = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(1)
points = [("seq", 1, None, None, 1.0), ("forkjoin", 2, None, None, 0.55), ("taskiter", 2, 1, 64, 0.53)]
rows = []
for variant, threads, bs, k, scale in points:
    t = scale * rng.lognormal(0.0, 0.03, n)
    rows.append(pd.DataFrame({"variant": variant, "compiler": "gcc", "kernels": "fast", "threads": threads,
                              "batch_subsize": bs, "k": k, "repetition": np.arange(n) // max(1, n // 10),
                              "step": np.arange(n) % max(1, n // 10) + 1, "warmup": False,
                              "forward_s": 0.35 * t, "backward_s": 0.55 * t, "update_s": 0.1 * t, "step_s": t,
                              "loss": 5.0}))
steps = pd.concat(rows, ignore_index=True)
from pstudy.store import vocabulary
for col in vocabulary.POINT_KEYS:  # every point key a results table has (ranks, tiles: not set here)
    if col not in steps:
        steps[col] = None
for col in ("batch_subsize", "k", *vocabulary.TILE_KEYS, "ranks"):
    steps[col] = steps[col].astype("Int64")
start = time.perf_counter()
if what == "summary":
    stats.summarise(steps)
else:
    other = steps.copy()
    other["step_s"] *= 1.01
    a = compare.samples(steps, "step", ["step"])
    b = compare.samples(other, "step", ["step"])
    compare.compare_samples(a, b)
print(time.perf_counter() - start)
"""


def timed(harness, n, what, limit):
    try:
        done = subprocess.run([sys.executable, "-c", MEASURE, str(n), what], capture_output=True, text=True,
                              timeout=limit, env=dict(os.environ, PYTHONPATH=str(harness)))
    except subprocess.TimeoutExpired:
        return f"> {limit:g} s"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"failed: {last[:60]}"
    return f"{float(done.stdout.strip()):.3f} s"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--harness", default=str(ROOT / "harness"), help="the harness directory to time")
    ap.add_argument("--sizes", default="1000,10000,100000", help="samples per point")
    ap.add_argument("--limit", type=float, default=120, help="seconds per measurement before giving up")
    args = ap.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        errors.exit_bad_input("bench/harness_scaling.py", f"--sizes {args.sizes}: give positive sample counts, "
                              "comma-separated")
    print(f"harness {args.harness}; 3 points; time of one call, in a fresh process")
    print(f"{'samples/point':>13s} {'summary':>12s} {'compare (unit step)':>20s}")
    for n in sizes:
        print(f"{n:13d} {timed(args.harness, n, 'summary', args.limit):>12s} "
              f"{timed(args.harness, n, 'compare', args.limit):>20s}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
