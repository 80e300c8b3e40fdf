"""The regression history: results/history.csv, its reader and its appender (show/historyfigures.py
draws it).

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

