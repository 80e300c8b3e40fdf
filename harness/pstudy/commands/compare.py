"""compare two results directories point by point: ratio of medians, CI, one-sided test, Holm.

The method is pstudy.compare's (its module comment). Exit status: 1 when any point regressed,
0 otherwise, 2 on bad input.
"""

import sys
from pathlib import Path

from pstudy import common
from pstudy.store import comparable, resultsdir, vocabulary
from pstudy.analyse import compare as cmp
from pstudy.errors import StudyError


def add_arguments(parser):
    parser.add_argument("base", help="results directory of the base (a path, a name in results/, or \"latest\")")
    parser.add_argument("candidate", help="results directory of the candidate")
    cmp.add_test_options(parser)
    parser.add_argument("--unit", choices=("run", "step"), default="run",
                        help="one sample per run (its median step, default) or every measured step pooled")
    parser.add_argument(comparable.OPTION, action="store_true", help=comparable.HELP)
    parser.add_argument("--csv", help="write the table here (default: <results root>/compare/<base>--<candidate>.csv)")


def main(args):
    import pandas as pd

    phases = cmp.check_test_options(args)
    base_dir, cand_dir = resultsdir.locate(args.base), resultsdir.locate(args.candidate)
    if base_dir == cand_dir:
        raise StudyError(f"{base_dir}: given as both base and candidate; a directory compared with itself "
                         "tests nothing")
    csv = resultsdir.output_file(args.csv if args.csv else common.results_root() / "compare" /
                                 f"{base_dir.name}--{cand_dir.name}.csv", "--csv")
    base_meta, cand_meta = resultsdir.read_meta(base_dir), resultsdir.read_meta(cand_dir)
    comparable.check([base_dir, cand_dir], args.mixed)
    base = cmp.samples(resultsdir.read_steps(base_dir), args.unit, phases)
    cand = cmp.samples(resultsdir.read_steps(cand_dir), args.unit, phases)
    base_points = {p for p, _ in base}
    cand_points = {p for p, _ in cand}
    common_points = base_points & cand_points
    if not common_points:
        raise StudyError(f"{cand_dir}: no point in common with {base_dir} "
                         f"({len(base_points)} and {len(cand_points)} points measured)")
    for side, only, directory in (("base", base_points - cand_points, base_dir),
                                  ("candidate", cand_points - base_points, cand_dir)):
        if only:
            common.say("compare", f"note: {len(only)} point(s) only in the {side} ({directory}), not compared: "
                       + ", ".join(vocabulary.point_label(p) for p in sorted(only, key=str)[:5]))
    cmp.check_power(base, cand, args.unit, args.alpha, f"{base_dir} vs {cand_dir}")
    table = cmp.compare_samples(base, cand, args.threshold, args.alpha, args.confidence,
                                min_duration=args.min_duration, min_difference=args.min_difference)
    if (table["status"] == "untested").all():  # "0 of N regressed" would read as a pass
        raise StudyError(f"{base_dir} vs {cand_dir}: none of the {len(table)} (point, phase) pairs could be "
                         "tested (too few samples on a side); nothing was compared")

    out = sys.stdout
    out.write(f"base      {base_dir} (commit {base_meta.commit}, {base_meta.get('started')} .. "
              f"{base_meta.get('finished')})\n"
              f"candidate {cand_dir} (commit {cand_meta.commit}, {cand_meta.get('started')} .. "
              f"{cand_meta.get('finished')})\n")
    note = cmp.interleaving_note(base_meta, cand_meta)
    if note:
        common.say("compare", note)
    out.write("\n".join(cmp.method_lines(args.unit, args.threshold, args.alpha, args.confidence, len(table),
                                         args.min_duration, args.min_difference)) + "\n\n")
    with pd.option_context("display.width", 250):
        out.write(cmp.format_table(table, args.confidence) + "\n")
    regressed = table[table["status"] == "REGRESSED"]
    csv.parent.mkdir(parents=True, exist_ok=True)
    table.insert(len(cmp.KEYS) + 1, "unit", args.unit)
    resultsdir.write_csv(csv, table)
    out.write(f"\n{len(regressed)} of {len(table)} (point, phase) pairs regressed; table in {csv}\n")
    return 1 if len(regressed) else 0
