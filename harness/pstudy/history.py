"""the trend of every point over the regress runs, detected regressions marked.

results/history.csv gets one row per (point, phase) for every `perfstudy regress` whose candidate
is a commit (not a --candidate-build, not a --wrap-candidate calibration run):

  date, commit, commit_short, dirty, base_commit, config, config_digest, host,
  variant, compiler, kernels, threads, batch_subsize, k, phase,
  median_s       the candidate's median (over its runs of the median step time of each run)
  base_median_s  the base's, measured in the same session
  ratio, ci_low, ci_high, p_holm   candidate / base in that session (see compare)
  ratio_to_previous  median_s / median_s of the previous row of the same point, phase, config and host
  regressed      whether the session reported a confirmed regression for this (point, phase)
  session        the session directory

Times from different machines or configs are never set against each other: ratio_to_previous
and the figures keep them apart.
"""

import fcntl
import math
import os
import sys
from pathlib import Path

from pstudy import resultsdir
from pstudy.errors import StudyError

HARNESS_REPO = Path(__file__).resolve().parents[2]
COLUMNS = (["date", "commit", "commit_short", "dirty", "base_commit", "config", "config_digest", "host"]
           + resultsdir.KEYS + ["phase", "median_s", "base_median_s", "ratio", "ci_low", "ci_high", "p_holm",
                                "ratio_to_previous", "regressed", "session"])
SERIES = ["config", "config_digest", "host"] + resultsdir.KEYS + ["phase"]


def add_arguments(parser):
    parser.add_argument("--history", help="history file (default: $PERFSTUDY_RESULTS/history.csv or "
                        "<repo>/results/history.csv)")
    parser.add_argument("--plots-root", default=os.environ.get("PERFSTUDY_PLOTS"),
                        help="figures go to PLOTS_ROOT/history/ (default: $PERFSTUDY_PLOTS or <repo>/plots)")
    parser.add_argument("--phases", default="step",
                        help="comma-separated phases to plot (default step; also forward, backward, update)")
    parser.add_argument("--formats", default="png,svg", help="comma-separated figure formats (default png,svg)")


def read(path):
    frame = resultsdir.read_csv(path, COLUMNS, what="not a history file",
                                absent=f"{path}: no history yet (perfstudy regress writes it)")
    frame["regressed"] = frame["regressed"].astype(str).str.lower().isin(["true", "1"])
    return frame


def series_key(row):
    """What makes two rows the same series: config, host, point and phase."""
    import pandas as pd

    out = []
    for col in SERIES:
        v = row[col]
        if v is None or (not isinstance(v, str) and pd.isna(v)):
            out.append(None)
        elif col in ("threads", "batch_subsize", "k"):
            out.append(int(v))
        else:
            out.append(str(v))
    return tuple(out)


def append(path, table, study, base, cand, session, confirmed):
    """Append one row per (point, phase) of a regress comparison table (under a lock)."""
    import pandas as pd

    from pstudy import compare as cmp
    from pstudy import machine, regress

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    confirmed = set(confirmed)
    host = machine.system()["hostname"]
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two sessions appending at once must not lose rows
        previous = {}
        if path.exists():
            old = read(path)
            for _, r in old.iterrows():
                previous[series_key(r)] = r["median_s"]  # rows are in time order: the last one wins
            text = path.read_text()
        else:
            old, text = None, ""
        rows = []
        for _, r in table.iterrows():
            row = {"date": regress.now(), "commit": cand.history_commit, "commit_short": cand.history_commit[:7],
                   "dirty": cand.dirty, "base_commit": base.commit or f"build:{base.build_dir}",
                   "config": study.name, "config_digest": study.digest(), "host": host,
                   **{c: r[c] for c in resultsdir.KEYS}, "phase": r["phase"],
                   "median_s": r["candidate_median_s"], "base_median_s": r["base_median_s"],
                   "ratio": r["ratio"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "p_holm": r["p_holm"],
                   "regressed": (cmp.point_key(r), r["phase"]) in confirmed, "session": str(session)}
            prev = previous.get(series_key(row))
            row["ratio_to_previous"] = row["median_s"] / prev if prev and not math.isnan(prev) else math.nan
            rows.append(row)
        new = pd.DataFrame(rows, columns=COLUMNS)
        for col in ("batch_subsize", "k"):
            new[col] = new[col].astype("Int64")
        body = new.to_csv(index=False, na_rep="NA", header=not text)
        resultsdir.atomic_write(path, text + body)


def main(args):
    path = Path(args.history) if args.history else \
        Path(os.environ.get("PERFSTUDY_RESULTS") or HARNESS_REPO / "results") / "history.csv"
    frame = read(path)
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    bad = [p for p in phases if p not in ("step", "forward", "backward", "update")]
    if bad or not phases:
        raise StudyError(f"--phases: unknown phase {', '.join(bad) or '(none)'} (step, forward, backward, update)")
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    if not formats or any(f not in ("png", "svg", "pdf") for f in formats):
        raise StudyError(f"--formats: expected a list of png, svg, pdf, got \"{args.formats}\"")
    if frame.empty:
        raise StudyError(f"{path}: the history has no rows yet")
    outdir = Path(args.plots_root or HARNESS_REPO / "plots") / "history"
    outdir.mkdir(parents=True, exist_ok=True)
    written = draw(frame, phases, outdir, formats)
    out = sys.stdout
    sessions = frame["session"].nunique()
    out.write(f"{path}: {len(frame)} rows from {sessions} regress session(s), "
              f"{frame['commit'].nunique()} commit(s)\n")
    hits = frame[frame["regressed"]]
    if len(hits):
        out.write(f"{len(hits)} confirmed regression(s):\n")
        for _, r in hits.iterrows():
            from pstudy import compare as cmp
            out.write(f"  {r['commit_short']} {r['date']} {cmp.point_label(cmp.point_key(r))} {r['phase']}: "
                      f"x{r['ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] vs base {str(r['base_commit'])[:7]}\n")
    else:
        out.write("no confirmed regression in the history\n")
    out.write(f"{len(written)} figure files in {outdir}\n")
    return 0


def draw(frame, phases, outdir, formats):
    """One figure per config, host, build and phase: median time per regress session, one line per
    point, red rings where a confirmed regression was reported. Returns the files written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pstudy import compare as cmp

    written = []
    frame = frame.reset_index(drop=True)
    frame["_order"] = range(len(frame))
    for (config, host, compiler, kernels, phase), group in frame.groupby(
            ["config", "host", "compiler", "kernels", "phase"], sort=True):
        if phase not in phases:
            continue
        sessions = list(dict.fromkeys(group.sort_values("_order")["session"]))  # in the order they ran
        x_of = {s: i for i, s in enumerate(sessions)}
        labels = []
        for s in sessions:
            r = group[group["session"] == s].iloc[0]
            labels.append(f"{r['commit_short']}{'+' if str(r['dirty']).lower() == 'true' else ''}\n"
                          f"{str(r['date'])[5:10]}")
        fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(sessions) + 3), 4.5))
        marked = False
        for pkey, line in group.groupby(resultsdir.KEYS, dropna=False, sort=True):
            line = line.sort_values("_order")
            xs = [x_of[s] for s in line["session"]]
            label = cmp.point_label(cmp.point_key(dict(zip(resultsdir.KEYS, pkey))))
            ax.plot(xs, line["median_s"], marker="o", markersize=3, linewidth=1.2, label=label)
            hit = line[line["regressed"]]
            if len(hit):
                ax.scatter([x_of[s] for s in hit["session"]], hit["median_s"], s=120, facecolors="none",
                           edgecolors="red", linewidths=2, zorder=5,
                           label=None if marked else "confirmed regression")
                for s, y, ratio in zip(hit["session"], hit["median_s"], hit["ratio"]):
                    ax.annotate(f"x{ratio:.2f}", (x_of[s], y), textcoords="offset points", xytext=(6, 6),
                                color="red", fontsize=8)
                marked = True
        ax.set_xticks(range(len(sessions)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_xlabel("regress session (candidate commit, date)")
        ax.set_ylabel(f"median {phase} time [s]")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{phase} time per commit: {compiler}/{kernels}, config {config}, host {host}\n"
                     "median over runs of each run's median step; red: confirmed regression vs its base",
                     fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        stem = f"history_{config}_{host}_{phase}_{compiler}-{kernels}"
        for fmt in formats:
            target = outdir / f"{stem}.{fmt}"
            fig.savefig(target)
            written.append(target)
        plt.close(fig)
    return written
