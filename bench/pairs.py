#!/usr/bin/env python3
"""The task variants' speedup over fork-join from a paired sweep (a benchmark's analysis, not a test):

    bench/pairs.py RESULTS_DIR [--base forkjoin] [--target 1.10]

RESULTS_DIR is a sweep of configs/wiki-124m-pairs.toml (or any sweep with repetitions):
forkjoin and the task variants at one thread count, several repetitions, each repetition running
every point once. One sample is one run, the median of its measured steps (the steps of one process
are not independent draws). A repetition's runs were made minutes apart at most, so each task
point's speedup over the base, base / task, is paired within its repetition and the machine's drift
between repetitions cancels. The estimate and its 95% interval are the paired Hodges-Lehmann ones
(harness/pstudy/analyse/compare.py: Walsh averages of the log ratios, the exact signed-rank null),
as bench/variants.py gives them; 6 repetitions at least.

The target is met when the whole interval is at least --target (1.10: taskiter at least 1.1x
forkjoin at 16 threads), missed when all of it is below, undecided otherwise.
Bad input: one line, exit status 2.
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "harness"))

from pstudy import errors  # noqa: E402
from pstudy.errors import StudyError  # noqa: E402

errors.require_modules("bench/pairs.py")


def paired_speedups(directory, base):
    """{(variant, threads, chunking label): (per-repetition base/task ratios, estimate, low, high)}."""
    import pandas as pd

    from pstudy.analyse import compare
    from pstudy.store import resultsdir, vocabulary

    steps = resultsdir.read_steps(directory)
    steps = steps[~steps["warmup"]]
    keys = list(vocabulary.POINT_KEYS)
    runs = steps.groupby(keys + ["repetition"], dropna=False)["step_s"].median().reset_index()
    bases = runs[runs["variant"] == base]
    if bases.empty:
        raise StudyError(f"{directory}: no {base} runs to pair with")
    out = {}
    for key, group in runs[runs["variant"] != base].groupby(keys, dropna=False):
        point = dict(zip(keys, key))
        mine = bases[bases["threads"] == point["threads"]].set_index("repetition")["step_s"]
        theirs = group.set_index("repetition")["step_s"]
        reps = sorted(set(mine.index) & set(theirs.index))
        if not reps:
            continue
        a, b = [float(theirs[r]) for r in reps], [float(mine[r]) for r in reps]
        # speedup = base / task: the ratio of the base's times to the task point's
        estimate, low, high = compare.hl_paired_ratio_ci(a, b, 0.95)
        chunks = [point[c] for c in vocabulary.CHUNK_KEYS]
        label = "" if any(pd.isna(c) for c in chunks[:2]) else vocabulary.chunking_label(*chunks)
        out[(point["variant"], int(point["threads"]), label)] = ([y / x for x, y in zip(a, b)], estimate, low, high)
    if not out:
        raise StudyError(f"{directory}: no task point shares a repetition with {base}")
    return out


def verdict(low, high, target):
    if low != low:  # NaN: fewer than 6 pairs
        return "no interval (fewer than 6 repetitions)"
    if low >= target:
        return "met"
    if high < target:
        return "missed"
    return "undecided"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="pairs.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="a results directory of configs/wiki-124m-pairs.toml")
    parser.add_argument("--base", default="forkjoin", help="the variant the others are paired with (forkjoin)")
    parser.add_argument("--target", type=float, default=1.10, help="the least speedup over the base (1.10)")
    args = parser.parse_args(argv)
    try:
        return report(Path(args.results), args.base, args.target)
    except StudyError as err:
        errors.exit_bad_input("pairs.py", str(err))


def report(directory, base, target):
    if not (directory / "steps.csv").is_file():
        raise StudyError(f"{directory}: not a results directory (no steps.csv)")
    if not target > 0:
        raise StudyError(f"--target {target:g}: not a positive ratio")
    for (variant, threads, label), (ratios, estimate, low, high) in sorted(paired_speedups(directory, base).items()):
        print(f"{variant}{' ' + label if label else ''} at {threads} threads against {base}: speedup {estimate:.3f} "
              f"[{low:.3f}, {high:.3f}] (paired Hodges-Lehmann, {len(ratios)} repetitions; per repetition "
              f"{', '.join(f'{r:.3f}' for r in ratios)}); target >= {target:.2f}: "
              f"{verdict(low, high, target)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
