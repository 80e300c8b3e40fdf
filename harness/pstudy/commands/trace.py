"""export run traces for Paraver (.prv/.pcf/.row) or Perfetto (Chrome JSON), checked after writing;
with Paraver, a run's runtime trace too (nosv: nOS-V's ovni trace, through ovniemu)."""

import socket
import sys
from pathlib import Path

from pstudy.store import ovnitrace, resultsdir, traceformats
from pstudy.errors import StudyError


def add_arguments(parser):
    parser.add_argument("results_dir", help="a results directory, the name of one in results/, or \"latest\"")
    parser.add_argument("--run", metavar="ID",
                        help="the run to export, by its stem (runs/ID.json, traces/ID.csv); default: one "
                             "representative run per point (its median step time closest to the point's)")
    parser.add_argument("--format", default="both", choices=traceformats.FORMATS + ("both",),
                        help="paraver, perfetto or both (default)")
    parser.add_argument("--out", help="output directory (default RESULTS_DIR/exports/<format>/)")


def main(args):
    directory = resultsdir.locate(args.results_dir)
    formats = traceformats.FORMATS if args.format == "both" else (args.format,)
    available = {(key, rep): path for path, key, rep in resultsdir.ResultsDir(directory).traces()}
    if not available:
        raise StudyError(f"{directory / resultsdir.TRACES_DIR}: no traces (runs made with [analysis] trace = true write them)")
    if args.run:
        parsed = resultsdir.parse_run_stem(args.run)
        if parsed is None or parsed not in available:
            raise StudyError(f"--run {args.run}: no trace {directory / resultsdir.TRACES_DIR / (args.run + '.csv')}")
        chosen = [parsed]
    else:
        from pstudy.analyse import efficiency
        reps = efficiency.representative_runs(resultsdir.read_steps(directory))
        chosen = sorted(((key, rep) for key, rep in reps.items() if (key, rep) in available),
                        key=lambda kr: resultsdir.run_stem(*kr))
        if not chosen:
            raise StudyError(f"{directory}: no successful run has a trace")
    problems = []
    for fmt in formats:
        outdir = resultsdir.output_dir(args.out, "--out") if args.out else resultsdir.ResultsDir(directory).exports(fmt)
        paths, found = traceformats.export_checked(available, chosen, fmt, outdir, node=socket.gethostname() or "node")
        problems += found
        if fmt == "paraver":
            paths += ovnitrace.export_runtime(directory, available, chosen, outdir)
        for path in paths:
            print(path)
    if problems:
        for p in problems[:10]:
            sys.stderr.write(f"perfstudy trace: {p}\n")
        raise StudyError(f"{len(problems)} problems in the exported files (a bug: the checker rejects the writer's output)")
    return 0

