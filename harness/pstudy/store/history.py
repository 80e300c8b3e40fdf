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
  metric         time, or instructions (`regress --metric instructions`)
  kernel         instruction rows: the kernel (an operation kind of the step), other or total; NA for time
  instructions, base_instructions  instruction rows: the candidate's and the base's counts (median over
                 repetitions; pstudy.instructions); ratio is their ratio, ratio_to_previous is against the
                 previous row of the same series, regressed is the session's verdict; median_s, ci_*, p_holm
                 and phase are NA

A history written before the last four columns existed reads as time rows, and is rewritten with
them on the next append.

Times from different machines or configs are never set against each other: ratio_to_previous
and the figures keep them apart.
"""

import fcntl
import math
from pathlib import Path

from pstudy.store import resultsdir, vocabulary
from pstudy.errors import StudyError
TIME_COLUMNS = (["date", "commit", "commit_short", "dirty", "base_commit", "config", "config_digest", "host"]
                + resultsdir.KEYS + ["phase", "median_s", "base_median_s", "ratio", "ci_low", "ci_high", "p_holm",
                                     "ratio_to_previous", "regressed", "session"])
COUNT_COLUMNS = ["metric", "kernel", "instructions", "base_instructions"]
COLUMNS = TIME_COLUMNS + COUNT_COLUMNS
SERIES = ["config", "config_digest", "host"] + resultsdir.KEYS + ["phase", "metric", "kernel"]
TIME, INSTRUCTIONS = "time", "instructions"


def read(path):
    frame = resultsdir.read_csv(path, TIME_COLUMNS, what="not a history file",
                                absent=f"{path}: no history yet (perfstudy regress writes it)")
    if "metric" not in frame.columns:  # written before instruction counts
        frame["metric"] = TIME
    frame["metric"] = frame["metric"].fillna(TIME)
    for col in COUNT_COLUMNS[1:]:
        if col not in frame.columns:
            frame[col] = float("nan")
    bad = sorted(set(frame["metric"].astype(str)) - {TIME, INSTRUCTIONS})
    if bad:
        raise StudyError(f"{path}: not a history file: unknown metric {bad[0]!r}")
    return _checked(path, frame)


# what a row's values must be (a damaged row is refused, never drawn): column -> (kind, required for
# time rows, required for instruction rows)
_ROW_RULES = {
    "date": ("text", True, True), "commit": ("text", True, True), "config": ("text", True, True),
    "host": ("text", True, True), "variant": ("text", True, True), "compiler": ("text", True, True),
    "kernels": ("text", True, True), "threads": ("count", True, True), "batch_subsize": ("count", False, False),
    "k": ("count", False, False), "ranks": ("count", False, False), "phase": ("text", True, False),
    "median_s": ("positive", True, False), "base_median_s": ("positive", True, False),
    "ratio": ("positive", True, True), "ci_low": ("positive", False, False), "ci_high": ("positive", False, False),
    "p_holm": ("probability", False, False), "ratio_to_previous": ("positive", False, False),
    "regressed": ("bool", True, True), "kernel": ("text", False, True),
    "instructions": ("nonnegative", False, True), "base_instructions": ("nonnegative", False, True),
}


def _checked(path, frame):
    """The rows with their values typed, or StudyError naming the file, the line and the column of
    the first damaged value (a short row, a word where a number belongs, a count below 1, a ratio
    that is not a positive finite number, a verdict that is neither true nor false)."""
    import pandas as pd

    def problem(row, column, kind, required):
        v = row[column]
        if v is None or v is pd.NA or (isinstance(v, float) and v != v) or str(v) in ("", "NA", "<NA>"):
            return "missing value" if required else None
        text = str(v).strip()
        if kind == "text":
            return None
        if kind == "bool":
            return None if text.lower() in ("true", "false", "1", "0") else f"{text!r} is neither true nor false"
        try:
            x = float(text)
        except ValueError:
            return f"{text!r} is not a number"
        if kind == "count":
            return None if math.isfinite(x) and x == int(x) and x >= 1 else f"{x:g} is not a count of 1 or more"
        if not math.isfinite(x):
            return f"{x:g} is not a finite number"
        if kind == "positive" and x <= 0:
            return f"{x:g} is not positive"
        if kind == "nonnegative" and x < 0:
            return f"{x:g} is negative"
        if kind == "probability" and not 0 <= x <= 1:
            return f"{x:g} is not a probability"
        return None

    for i, row in frame.iterrows():
        time_row = str(row["metric"]) == TIME
        for column, (kind, for_time, for_counts) in _ROW_RULES.items():
            if column not in frame.columns:
                continue
            why = problem(row, column, kind, for_time if time_row else for_counts)
            if why:
                raise StudyError(f"{path}: line {i + 2}: {column}: {why} (a damaged row; mend or delete it)")
    for column, (kind, _, _) in _ROW_RULES.items():
        if column in frame.columns and kind in ("positive", "nonnegative", "probability"):
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
        elif column in frame.columns and kind == "count":
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("Int64")
    frame["regressed"] = frame["regressed"].astype(str).str.strip().str.lower().isin(["true", "1"])
    return frame


def series_key(row):
    """What makes two rows the same series: config, host, point, phase, metric and kernel."""
    head = tuple(None if _missing(row[c]) else str(row[c]) for c in ("config", "config_digest", "host"))
    tail = tuple(None if _missing(row.get(c)) else str(row.get(c)) for c in ("phase", "metric", "kernel"))
    return head + vocabulary.point_key(row) + tail


def _missing(v):
    return v is None or (isinstance(v, float) and v != v) or str(v) in ("<NA>", "nan")


def append(path, table, *, date, commit, dirty, base_commit, config, config_digest, host, session, confirmed):
    """Append one row per (point, phase) of a comparison table (pstudy.compare) under a lock.
    The other arguments are the plain facts of the session: the candidate's commit and whether
    its tree was dirty, the base's commit (or build), the config's name and digest, the host, the
    session directory and the confirmed (point key, phase) pairs."""
    confirmed = set(confirmed)
    rows = []
    for _, r in table.iterrows():
        rows.append({"date": date, "commit": commit, "commit_short": commit[:7], "dirty": dirty,
                     "base_commit": base_commit, "config": config, "config_digest": config_digest, "host": host,
                     **{c: r[c] for c in resultsdir.KEYS}, "phase": r["phase"],
                     "median_s": r["candidate_median_s"], "base_median_s": r["base_median_s"],
                     "ratio": r["ratio"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "p_holm": r["p_holm"],
                     "regressed": (vocabulary.point_key(r), r["phase"]) in confirmed, "session": str(session),
                     "metric": TIME})
    _append_rows(path, rows, "median_s")


def append_instructions(path, table, *, date, commit, dirty, base_commit, config, config_digest, host, session):
    """Append one row per (point, kernel) of an instruction-count table (pstudy.instructions), under
    the same lock; `regressed` is the table's REGRESSED status."""
    rows = []
    for _, r in table.iterrows():
        rows.append({"date": date, "commit": commit, "commit_short": commit[:7], "dirty": dirty,
                     "base_commit": base_commit, "config": config, "config_digest": config_digest, "host": host,
                     **{c: r[c] for c in resultsdir.KEYS}, "ratio": r["ratio"],
                     "regressed": r["status"] == "REGRESSED", "session": str(session), "metric": INSTRUCTIONS,
                     "kernel": r["kernel"], "instructions": r["candidate_instructions"],
                     "base_instructions": r["base_instructions"]})
    _append_rows(path, rows, "instructions")


def _append_rows(path, rows, value):
    """Add `rows` (dicts) with ratio_to_previous (`value` against the previous row of its series)
    to the history under a lock; a history without the newer columns is rewritten with them."""
    import pandas as pd

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two sessions appending at once must not lose rows
        previous = {}
        text = ""
        if path.exists():
            old = read(path)
            for _, r in old.iterrows():
                v = r["median_s"] if r["metric"] == TIME else r["instructions"]
                previous[series_key(r)] = v  # rows are in time order: the last one wins
            text = path.read_text()
            if text.split("\n", 1)[0].split(",") != COLUMNS:  # an older header: rewrite with every column
                old = old[COLUMNS].copy()
                for col in vocabulary.OPTIONAL_KEYS:
                    old[col] = old[col].astype(vocabulary.key_dtype(col))
                text = old.to_csv(index=False, na_rep="NA")
        for row in rows:
            prev = previous.get(series_key(row))
            row["ratio_to_previous"] = (row[value] / prev if prev and not _missing(prev) and prev == prev
                                        else math.nan)
        new = pd.DataFrame(rows, columns=COLUMNS)
        for col in vocabulary.OPTIONAL_KEYS:
            new[col] = new[col].astype(vocabulary.key_dtype(col))
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
    written += draw_instructions(frame[frame["metric"] == INSTRUCTIONS], outdir, formats)
    frame = frame[frame["metric"] == TIME]
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
        written += _save(fig, outdir, f"history_{config}_{host}_{phase}_{compiler}-{kernels}", formats)
    return written


def _save(fig, outdir, stem, formats):
    """Writes one figure as STEM.FMT for each format, closes it; returns the paths."""
    import matplotlib.pyplot as plt

    paths = [outdir / f"{stem}.{fmt}" for fmt in formats]
    for target in paths:
        resultsdir.atomic_savefig(fig, target)
    plt.close(fig)
    return paths


def _session_labels(group):
    sessions = list(dict.fromkeys(group.sort_values("_order")["session"]))  # in the order they ran
    labels = []
    for s in sessions:
        r = group[group["session"] == s].iloc[0]
        labels.append(f"{r['commit_short']}{'+' if str(r['dirty']).lower() == 'true' else ''}\n"
                      f"{str(r['date'])[5:10]}")
    return sessions, labels


def draw_instructions(frame, outdir, formats):
    """One figure per config, host and point of the instruction rows: each kernel's count per
    session relative to its first session in the figure (1 = unchanged), total in black, red rings
    where the session flagged it. Returns the files written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    if frame.empty:
        return written
    for (config, host, *pkey), group in frame.groupby(["config", "host"] + resultsdir.KEYS, dropna=False,
                                                      sort=True):
        key = vocabulary.point_key(dict(zip(resultsdir.KEYS, pkey)))
        sessions, labels = _session_labels(group)
        x_of = {s: i for i, s in enumerate(sessions)}
        fig, ax = plt.subplots(figsize=(max(7.0, 0.7 * len(sessions) + 4), 5))
        marked = False
        for kernel, line in group.groupby("kernel", sort=True):
            line = line.sort_values("_order")
            first = line["instructions"].iloc[0]
            if not first or first != first:
                continue
            rel = line["instructions"] / first
            style = {"color": "black", "linewidth": 2.2} if kernel == "total" else {"linewidth": 1.0}
            ax.plot([x_of[s] for s in line["session"]], rel, marker="o", markersize=3, label=kernel, **style)
            hit = line["regressed"].to_numpy()
            if hit.any():
                ax.scatter([x_of[s] for s in line["session"][hit]], rel[hit], s=120, facecolors="none",
                           edgecolors="red", linewidths=2, zorder=5, label=None if marked else "regression")
                for s, y, ratio in zip(line["session"][hit], rel[hit], line["ratio"][hit]):
                    ax.annotate(f"{kernel} x{ratio:.3f}", (x_of[s], y), textcoords="offset points",
                                xytext=(6, 6), color="red", fontsize=8)
                marked = True
        ax.set_xticks(range(len(sessions)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_xlabel("regress session (candidate commit, date)")
        ax.set_ylabel("instructions / the first session's")
        ax.set_title(f"instructions per kernel per commit: {vocabulary.point_label(key)}, config {config}, "
                     f"host {host}\nrelative to the first session shown; red: flagged against its base", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
        fig.tight_layout()
        written += _save(fig, outdir, f"history_{config}_{host}_instructions_{resultsdir.point_stem(key)}", formats)
    return written
