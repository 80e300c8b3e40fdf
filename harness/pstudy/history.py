"""The regression history: results/history.csv, its reader, its appender and its figures.

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
from pathlib import Path

from pstudy import resultsdir, vocabulary
COLUMNS = (["date", "commit", "commit_short", "dirty", "base_commit", "config", "config_digest", "host"]
           + resultsdir.KEYS + ["phase", "median_s", "base_median_s", "ratio", "ci_low", "ci_high", "p_holm",
                                "ratio_to_previous", "regressed", "session"])
SERIES = ["config", "config_digest", "host"] + resultsdir.KEYS + ["phase"]


def read(path):
    frame = resultsdir.read_csv(path, COLUMNS, what="not a history file",
                                absent=f"{path}: no history yet (perfstudy regress writes it)")
    frame["regressed"] = frame["regressed"].astype(str).str.lower().isin(["true", "1"])
    return frame


def series_key(row):
    """What makes two rows the same series: config, host, point and phase."""
    head = tuple(None if _missing(row[c]) else str(row[c]) for c in ("config", "config_digest", "host"))
    return head + vocabulary.point_key(row) + (str(row["phase"]),)


def _missing(v):
    return v is None or (isinstance(v, float) and v != v)


def append(path, table, *, date, commit, dirty, base_commit, config, config_digest, host, session, confirmed):
    """Append one row per (point, phase) of a comparison table (pstudy.compare) under a lock.
    The other arguments are the plain facts of the session: the candidate's commit and whether
    its tree was dirty, the base's commit (or build), the config's name and digest, the host, the
    session directory and the confirmed (point key, phase) pairs."""
    import pandas as pd

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    confirmed = set(confirmed)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two sessions appending at once must not lose rows
        previous = {}
        if path.exists():
            old = read(path)
            for _, r in old.iterrows():
                previous[series_key(r)] = r["median_s"]  # rows are in time order: the last one wins
            text = path.read_text()
            if text.split("\n", 1)[0] != ",".join(COLUMNS):
                # written before a column existed (ranks): rewritten with it, NA, so rows stay aligned
                old = old.reindex(columns=COLUMNS)
                for col in vocabulary.OPTIONAL_KEYS:
                    old[col] = old[col].astype("Int64")
                text = old.to_csv(index=False, na_rep="NA")
        else:
            text = ""
        rows = []
        for _, r in table.iterrows():
            row = {"date": date, "commit": commit, "commit_short": commit[:7], "dirty": dirty,
                   "base_commit": base_commit, "config": config, "config_digest": config_digest, "host": host,
                   **{c: r[c] for c in resultsdir.KEYS}, "phase": r["phase"],
                   "median_s": r["candidate_median_s"], "base_median_s": r["base_median_s"],
                   "ratio": r["ratio"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "p_holm": r["p_holm"],
                   "regressed": (vocabulary.point_key(r), r["phase"]) in confirmed, "session": str(session)}
            prev = previous.get(series_key(row))
            row["ratio_to_previous"] = row["median_s"] / prev if prev and not math.isnan(prev) else math.nan
            rows.append(row)
        new = pd.DataFrame(rows, columns=COLUMNS)
        for col in vocabulary.OPTIONAL_KEYS:
            new[col] = new[col].astype("Int64")
        body = new.to_csv(index=False, na_rep="NA", header=not text)
        resultsdir.atomic_write(path, text + body)


def draw(frame, phases, outdir, formats):
    """One figure per config, host, build and phase: median time per regress session, one line per
    point, red rings where a confirmed regression was reported. Returns the files written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
            label = vocabulary.point_label(vocabulary.point_key(dict(zip(resultsdir.KEYS, pkey))))
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
            resultsdir.atomic_savefig(fig, target)
            written.append(target)
        plt.close(fig)
    return written
