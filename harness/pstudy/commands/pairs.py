"""each task variant's speedup over a base variant, paired by repetition, against a target.

    perfstudy pairs RESULTS_DIR [--base forkjoin] [--target 1.10]

RESULTS_DIR is a sweep of configs/wiki-124m-pairs.toml (or any sweep with repetitions): forkjoin and
the task variants at one thread count, several repetitions, each repetition running every point
once. One sample is one run, the median of its measured steps (the steps of one process are not
independent draws). A repetition's runs were made minutes apart at most, so each task point's
speedup over the base, base / task, is paired within its repetition and the machine's drift between
repetitions cancels. The estimate and its 95% interval are the paired Hodges-Lehmann ones
(pstudy.analyse.answer, as `perfstudy answer` gives them); 6 repetitions at least.

The target is met when the whole interval is at least --target (1.10: taskiter at least 1.1x
forkjoin at 16 threads), missed when all of it is below, undecided otherwise.
"""

from pathlib import Path

from pstudy.analyse import answer
from pstudy.errors import StudyError
from pstudy.store import resultsdir, vocabulary


def add_arguments(parser):
    parser.add_argument("results", help="a results directory of configs/wiki-124m-pairs.toml")
    parser.add_argument("--base", default=vocabulary.FORKJOIN,
                        help=f"the variant the others are paired with ({vocabulary.FORKJOIN})")
    parser.add_argument("--target", type=float, default=1.10, help="the least speedup over the base (1.10)")


def main(args):
    directory = Path(args.results)
    if not (directory / "steps.csv").is_file():
        raise StudyError(f"{directory}: not a results directory (no steps.csv)")
    if not args.target > 0:
        raise StudyError(f"--target {args.target:g}: not a positive ratio")
    steps = resultsdir.read_steps(directory)
    steps = steps[~steps["warmup"]]
    if not (steps["variant"] == args.base).any():
        raise StudyError(f"{directory}: no {args.base} runs to pair with")
    rows = answer.paired_ratios(steps, args.base)
    if not rows:
        raise StudyError(f"{directory}: no task point shares a repetition with {args.base}")
    for r in rows:
        print(f"{r['variant']}{' ' + r['chunking'] if r['chunking'] else ''} at {r['threads']} threads against "
              f"{args.base}: speedup {r['hodges_lehmann']:.3f} [{r['low']:.3f}, {r['high']:.3f}] (paired Hodges-Lehmann, "
              f"{r['pairs']} repetitions; per repetition {', '.join(f'{x:.3f}' for x in r['ratios'])}); "
              f"target >= {args.target:.2f}: {answer.verdict(r['low'], r['high'], args.target)}")
    return 0
