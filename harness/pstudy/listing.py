"""list past results directories: date, commit, config, status, runs."""

import json
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def add_arguments(parser):
    parser.add_argument("--results-root", default=os.environ.get("PERFSTUDY_RESULTS"),
                        help="where results directories are (default: $PERFSTUDY_RESULTS or <repo>/results)")


def main(args):
    root = Path(args.results_root or REPO_ROOT / "results")
    rows = []
    if root.is_dir():
        for d in sorted(root.iterdir()):
            meta_path = d / "meta.json"
            if not meta_path.is_file():
                continue
            try:
                meta = json.loads(meta_path.read_text())
            except (OSError, ValueError):
                rows.append((d.name, "?", "?", "?", "unreadable meta.json", ""))
                continue
            git = meta.get("git", {})
            commit = (git.get("commit") or "?") + ("+dirty" if git.get("dirty") else "")
            runs = f"{meta.get('runs_ok', 0)} ok, {meta.get('runs_failed', 0)} failed / {meta.get('runs_total', '?')}"
            rows.append((d.name, (meta.get("started") or "?")[:16], commit,
                         meta.get("config", {}).get("run", {}).get("name", "?"), meta.get("status", "?"), runs))
    if not rows:
        print(f"no results in {root}")
        return 0
    header = ("directory", "started", "commit", "config", "status", "runs")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0
