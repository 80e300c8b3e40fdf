"""list past results directories: date, commit, config, status, runs."""

import os

from pstudy import common
from pstudy.store import resultsdir
from pstudy.errors import StudyError


def add_arguments(parser):
    parser.add_argument("--results-root", default=os.environ.get("PERFSTUDY_RESULTS"),
                        help="where results directories are (default: $PERFSTUDY_RESULTS or <repo>/results)")


def main(args):
    root = common.results_root(args.results_root)
    rows = []
    if root.is_dir():
        for d in sorted(root.iterdir()):
            if not (d / resultsdir.META).is_file():
                continue
            try:
                meta = resultsdir.read_meta(d)
                commit = (meta.commit or "?") + ("+dirty" if meta.dirty else "")
                # progress from the journal, which a sweep appends to as each run ends: meta.json's
                # counts are written only when it stops
                done, failed = resultsdir.progress(d)
                total = meta.get("runs_total")
                runs = f"{done}/{total if isinstance(total, int) else '?'} done" + (f", {failed} failed" if failed else "")
                status = meta.status or "?"
                if status == "running" and not common.held(resultsdir.ResultsDir(d).lock):
                    status = "stopped (no process is running it; run it again to resume)"
                rows.append((d.name, str(meta.get("started") or "?")[:16], commit,
                             meta.run_settings.get("name", "?"), status, runs))
            except StudyError:
                rows.append((d.name, "?", "?", "?", "unreadable meta.json", ""))
    if not rows:
        print(f"no results in {root}")
        return 0
    header = ("directory", "started", "commit", "config", "status", "runs")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0
