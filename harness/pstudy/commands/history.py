"""the trend of every point over the regress runs, detected regressions marked.

The file and its columns are pstudy.history's (its module comment).
"""

import os
import sys
from pathlib import Path

from pstudy import common
from pstudy.store import history, resultsdir, vocabulary
from pstudy.show import historyfigures
from pstudy.errors import StudyError


def add_arguments(parser):
    parser.add_argument("--history", help="history file (default: $PERFSTUDY_RESULTS/history.csv or "
                        "<repo>/results/history.csv)")
    parser.add_argument("--plots-root", default=os.environ.get("PERFSTUDY_PLOTS"),
                        help="figures go to PLOTS_ROOT/history/ (default: $PERFSTUDY_PLOTS or <repo>/plots)")
    parser.add_argument("--phases", default="step",
                        help="comma-separated phases to plot (default step; also forward, backward, update)")
    parser.add_argument("--formats", default="png,svg", help="comma-separated figure formats (default png,svg)")


def main(args):
    path = Path(args.history) if args.history else common.results_root() / "history.csv"
    # the figures' folder is checked first, as any output directory the user names: never a
    # results directory or its measurements (each figure is still written through atomic_output)
    outdir = resultsdir.output_dir(common.plots_root(args.plots_root) / "history", "--plots-root")
    phases = common.choices(args.phases, vocabulary.PHASES, "--phases")
    formats = common.choices(args.formats, common.FIGURE_FORMATS, "--formats")
    frame = history.read(path)
    if frame.empty:
        raise StudyError(f"{path}: the history has no rows yet")
    outdir.mkdir(parents=True, exist_ok=True)
    written = historyfigures.draw(frame, phases, outdir, formats)
    out = sys.stdout
    out.write(f"{path}: {len(frame)} rows from {frame['session'].nunique()} regress session(s), "
              f"{frame['commit'].nunique()} commit(s)\n")
    hits = frame[frame["regressed"] & (frame["metric"] == history.TIME)]
    counted = frame[frame["regressed"] & (frame["metric"] == history.INSTRUCTIONS)]
    write_rows(out, counted, "instruction-count regression(s)",
               lambda r: f"{r['kernel']}: x{r['ratio']:.4f} ({r['base_instructions']:,.0f} -> "
                         f"{r['instructions']:,.0f} instructions)")
    write_rows(out, hits, "confirmed regression(s)",
               lambda r: f"{r['phase']}: x{r['ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]")
    if not len(hits) and not len(counted):
        out.write("no confirmed regression in the history\n")
    out.write(f"{len(written)} figure files in {outdir}\n")
    return 0


def write_rows(out, rows, title, what):
    """A count and title, then one line per history row: commit, date, point, `what` of the row, base."""
    if not len(rows):
        return
    out.write(f"{len(rows)} {title}:\n")
    for _, r in rows.iterrows():
        out.write(f"  {r['commit_short']} {r['date']} {vocabulary.point_label(vocabulary.point_key(r))} "
                  f"{what(r)} vs base {str(r['base_commit'])[:7]}\n")
