"""the roofline analysis of a results directory and its verdict on memory-boundedness."""

import re
from pathlib import Path

from pstudy.store import resultsdir
from pstudy.analyse import roofline
from pstudy.show import rooflinefigures
from pstudy.errors import StudyError


def add_arguments(parser):
    parser.add_argument("results_dir", help="results directory (ceilings.json, ops/, traces/, meta.json)")
    parser.add_argument("--out", help="output directory (default RESULTS_DIR/roofline)")
    parser.add_argument("--at", action="append", metavar="VARIANT:THREADS",
                        help="configuration to analyse, repeatable (default seq:1 and forkjoin:<largest>)")
    parser.add_argument("--compiler", default="gcc")
    parser.add_argument("--kernels", default="fast")


def main(args):
    at = None
    if args.at:
        at = []
        for item in args.at:
            m = re.fullmatch(r"([a-z0-9]+):(\d+)", item)
            if not m or int(m.group(2)) < 1:
                raise StudyError(f"--at: expected VARIANT:THREADS like forkjoin:2, got {item!r}")
            at.append((m.group(1), int(m.group(2))))
    out = resultsdir.output_dir(args.out, "--out") if args.out else Path(args.results_dir) / "roofline"
    try:
        summary = roofline.analyse(args.results_dir, out, at=at, compiler=args.compiler, kernels=args.kernels)
    except roofline.RooflineError as err:
        raise StudyError(str(err)) from None
    rooflinefigures.draw(summary)
    print(roofline.format_summary(summary))
    print(f"wrote {out}")
    return 0
