"""Per-point statistics: medians, distribution-free confidence intervals, speedup and efficiency.

Confidence interval of a median: the order-statistic (binomial) interval. With n measured step
times sorted as x(1) <= ... <= x(n), the interval [x(l), x(n+1-l)] contains the population median
with probability sum_{i=l}^{n-l} C(n,i) / 2^n, whatever the distribution. We take the narrowest
such symmetric interval whose coverage is at least 95% and record the exact coverage. It needs
n >= 6; with fewer samples the bounds are NaN. The samples of a point are all measured steps of
all its repetitions, pooled; steps within one process are not fully independent, so the interval
is a guide, and the spread between repetitions is also reported (rep_median_min/max).

Speedup of a point against a base: base median time / point median time, for the whole step and
for forward, backward and update separately. Parallel efficiency: speedup / threads. Two bases:
  vs_seq   the seq variant, same compiler and kernels, 1 thread
  vs_self1 the same variant, compiler, kernels and chunking at 1 thread
Speedup interval: conservative interval arithmetic on the two medians' CIs,
[base_ci_low / point_ci_high, base_ci_high / point_ci_low]; a point that is its own base
(seq@1 against seq, any point@1 against self1) has speedup exactly 1 with no interval.
"""

import math

import numpy as np
import pandas as pd

from pstudy.store import vocabulary

PHASES = vocabulary.PHASES
KEYS = vocabulary.POINT_KEYS
SEQ = vocabulary.BASELINE
CONFIDENCE = 0.95


def speedup_prefix(phase):
    """Column prefix of a phase's speedup/efficiency: none for the whole step ("speedup_vs_seq"),
    the phase name otherwise ("forward_speedup_vs_seq")."""
    return "" if phase == "step" else f"{phase}_"


def median_ci(values, confidence=CONFIDENCE):
    """(median, low, high, coverage) with the order-statistic interval described above.

    The coverage of [x(l), x(n+1-l)] is P(l <= Bin(n, 1/2) <= n - l), from scipy's binomial
    distribution for every l at once: one sort and O(n) arithmetic, whatever n."""
    from scipy.stats import binom

    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0:
        return math.nan, math.nan, math.nan, math.nan
    med = float(np.median(x))
    lo = np.arange(1, n // 2 + 1)                # 1-based rank of the lower bound; upper is n+1-lo
    coverage = binom.cdf(n - lo, n, 0.5) - binom.cdf(lo - 1, n, 0.5)   # decreasing in lo
    ok = np.flatnonzero(coverage >= confidence)
    if len(ok) == 0:
        return med, math.nan, math.nan, math.nan
    best = int(ok[-1])                           # the largest lo that qualifies: the narrowest
    low_rank, high_rank = int(lo[best]), n + 1 - int(lo[best])
    return med, float(x[low_rank - 1]), float(x[high_rank - 1]), float(coverage[best])


def measured(steps):
    """The steps that count: warm-up steps are kept in steps.csv but flagged and left out here."""
    if "warmup" in steps.columns:
        steps = steps[~steps["warmup"].astype(bool)]
    return steps


def with_optional_keys(frame):
    """The frame with every optional point key (vocabulary.OPTIONAL_KEYS) present, NA where absent
    (a table made before the key existed)."""
    missing = [c for c in vocabulary.OPTIONAL_KEYS if c not in frame.columns]
    if not missing:
        return frame
    frame = frame.copy()
    for col in missing:
        frame[col] = pd.Series([pd.NA] * len(frame), index=frame.index, dtype=vocabulary.key_dtype(col))
    return frame


def summarise(steps):
    """steps.csv rows -> one row per point with medians, CIs, speedups and efficiencies."""
    steps = with_optional_keys(measured(steps))
    rows = []
    for key, group in steps.groupby(KEYS, dropna=False, sort=True):
        row = dict(zip(KEYS, key))
        row["n_reps"] = group["repetition"].nunique()
        row["n_steps"] = len(group)
        for phase in PHASES:
            med, lo, hi, cov = median_ci(group[f"{phase}_s"])
            row[f"{phase}_median_s"], row[f"{phase}_ci_low_s"], row[f"{phase}_ci_high_s"] = med, lo, hi
            if phase == "step":
                row["ci_coverage"] = cov
                per_rep = group.groupby("repetition")["step_s"].median()
                row["rep_median_min_s"], row["rep_median_max_s"] = per_rep.min(), per_rep.max()
        row["loss_last_median"] = group[group["step"] == group["step"].max()]["loss"].median()
        rows.append(row)
    summary = pd.DataFrame(rows)
    if summary.empty:
        return summary
    for col in vocabulary.OPTIONAL_KEYS:
        summary[col] = summary[col].astype(vocabulary.key_dtype(col))
    summary["threads"] = summary["threads"].astype(int)
    return add_speedups(summary)


def add_speedups(summary):
    """Speedup/efficiency columns against seq@1 and self@1 (see the module comment)."""
    s = summary.copy()
    # unchunked variants have no chunking (NA), undistributed ones no ranks: join on a plain string
    # so that NA matches NA; a distributed point's own base is the same rank count at 1 thread
    s["_chunk"] = ["/".join(map(str, values))
                   for values in s[list(vocabulary.OPTIONAL_KEYS)].astype(object).itertuples(index=False)]
    bases = {
        SEQ: (s[(s["variant"] == SEQ) & (s["threads"] == 1)], ["compiler", "kernels"]),
        "self1": (s[s["threads"] == 1], ["variant", "compiler", "kernels", "_chunk"]),
    }
    # efficiency divides by the cores the point uses beyond its base's: against seq, its threads
    # (times its ranks for a distributed point); against its own 1-thread run (the same ranks), threads
    threads = s["threads"].to_numpy(dtype=float)
    cores = {SEQ: threads * s["ranks"].astype("Float64").fillna(1).to_numpy(dtype=float), "self1": threads}
    is_own_base = {SEQ: ((s["variant"] == SEQ) & (s["threads"] == 1)).to_numpy(),
                   "self1": (s["threads"] == 1).to_numpy()}
    for base_name, (base_rows, on) in bases.items():
        cols = [f"{p}_{q}" for p in PHASES for q in ("median_s", "ci_low_s", "ci_high_s")]
        base = base_rows[on + cols].rename(columns={c: "_base_" + c for c in cols})
        merged = s[on].merge(base, on=on, how="left", validate="many_to_one")
        for phase in PHASES:
            sp = speedup_prefix(phase)
            med, lo, hi = (s[f"{phase}_{q}"].to_numpy(dtype=float) for q in ("median_s", "ci_low_s", "ci_high_s"))
            b_med, b_lo, b_hi = (merged[f"_base_{phase}_{q}"].to_numpy(dtype=float)
                                 for q in ("median_s", "ci_low_s", "ci_high_s"))
            speedup = b_med / med
            own = is_own_base[base_name]  # a point against itself: exactly 1, no interval to widen
            b_lo, b_hi, lo, hi = (np.where(own, med, a) for a in (b_lo, b_hi, lo, hi))
            s[f"{phase}_base_{base_name}_s"] = b_med
            s[f"{sp}speedup_vs_{base_name}"] = speedup
            s[f"{sp}speedup_vs_{base_name}_ci_low"] = b_lo / hi
            s[f"{sp}speedup_vs_{base_name}_ci_high"] = b_hi / lo
            s[f"{sp}efficiency_vs_{base_name}"] = speedup / cores[base_name]
            s[f"{sp}efficiency_vs_{base_name}_ci_low"] = b_lo / hi / cores[base_name]
            s[f"{sp}efficiency_vs_{base_name}_ci_high"] = b_hi / lo / cores[base_name]
    return s.drop(columns="_chunk")


def point_summary(steps, runs):
    """summary.csv: summarise() of the successful runs, plus per point the count of failed runs and
    the task count the binary reported. Points whose every run failed are kept, with NaN times."""
    summary = summarise(steps)
    if runs.empty:
        return summary if not summary.empty else pd.DataFrame(columns=KEYS + ["n_runs", "n_failed"])
    runs = with_optional_keys(runs).copy()
    runs["_failed"] = runs["status"] != "ok"
    per_point = runs.groupby(KEYS, dropna=False, sort=True).agg(
        n_runs=("status", "size"), n_failed=("_failed", "sum"),
        tasks_per_step=("tasks_per_step", "max")).reset_index()
    for col in vocabulary.OPTIONAL_KEYS:
        per_point[col] = per_point[col].astype(vocabulary.key_dtype(col))
    per_point["threads"] = per_point["threads"].astype(int)
    if summary.empty:
        return per_point
    merged = per_point.merge(summary, on=KEYS, how="outer")
    front = KEYS + ["n_runs", "n_failed", "n_reps", "n_steps", "tasks_per_step"]
    merged = merged[front + [c for c in merged.columns if c not in front]]
    for col in ("n_reps", "n_steps", "tasks_per_step"):
        merged[col] = merged[col].round().astype("Int64")
    merged["n_reps"] = merged["n_reps"].fillna(0)
    merged["n_steps"] = merged["n_steps"].fillna(0)
    merged["_v"] = merged["variant"].map(vocabulary.variant_order)
    merged = merged.sort_values(["compiler", "kernels", "_v", *vocabulary.CHUNK_KEYS, "ranks",
                                 *vocabulary.DISTRIBUTED_KEYS, "threads"],
                                na_position="first")
    return merged.drop(columns="_v").reset_index(drop=True)
