"""The reference study's question answered from measured data: do tasks and taskiter beat
fork-join, and from how many threads (`perfstudy answer`).

Two kinds of evidence, each kept with where it came from:
  sweep points   one median step per point (a results directory's measured steps, or a validation
                 recording's points.csv): each task variant's ratio forkjoin step / its step at the
                 same thread count, and every variant's speedup over seq on one thread. A ratio of
                 two medians of one run each says nothing of the spread: it is printed without an
                 interval.
  paired runs    a sweep with repetitions, every point run once a repetition in a shuffled order:
                 each repetition's ratio is a pair, and the paired Hodges-Lehmann estimate with its
                 95% interval (analyse/compare.py) is the ratio to quote. Fewer than 6 repetitions
                 give no interval.
A ratio above 1 means faster than fork-join.
"""

import math

from pstudy.analyse import compare
from pstudy.store import vocabulary

FORKJOIN = vocabulary.FORKJOIN
MIN_PAIRS = 6
CONFIDENCE = 0.95


def _chunking(row):
    chunks = [row.get(c) for c in vocabulary.CHUNK_KEYS]
    if vocabulary._is_na(chunks[0]):
        return ""
    return vocabulary.chunking_label(*chunks)


def sweep_ratios(points):
    """points: a frame with the point keys and step_s (one median a point). Rows of (variant,
    chunking, threads, step_s, over_forkjoin: forkjoin's step at the same threads / this one,
    over_seq: seq's 1-thread step / this one), in the order of variant_order, chunking, threads."""
    rows = []
    records = points.to_dict("records")
    forkjoin = {int(r["threads"]): float(r["step_s"]) for r in records if r["variant"] == FORKJOIN}
    seq = [float(r["step_s"]) for r in records if vocabulary.is_sequential(r["variant"]) and int(r["threads"]) == 1]
    for r in records:
        if vocabulary.is_distributed(r["variant"]):
            continue
        t, step = int(r["threads"]), float(r["step_s"])
        base = forkjoin.get(t)
        rows.append({"variant": r["variant"], "chunking": _chunking(r), "threads": t, "step_s": step,
                     "over_forkjoin": base / step if base else math.nan,
                     "over_seq": seq[0] / step if seq else math.nan})
    rows.sort(key=lambda x: (vocabulary.variant_order(x["variant"]), x["chunking"], x["threads"]))
    return rows


def paired_ratios(steps, base=FORKJOIN):
    """steps: measured (non-warm-up) steps of a sweep with repetitions. Rows of (variant, chunking,
    threads, pairs, ratios, estimate, hodges_lehmann, low, high): the base variant's run / the
    variant's run, paired by repetition (each run's median step); `ratios` are the pairs' own, in
    repetition order. Below MIN_PAIRS pairs there is no interval and `estimate` is the pairs' geometric
    mean; `hodges_lehmann` is the paired estimate however few they are."""
    keys = list(vocabulary.POINT_KEYS)
    runs = steps.groupby(keys + ["repetition"], dropna=False)["step_s"].median().reset_index()
    bases = runs[runs["variant"] == base]
    rows = []
    for key, group in runs[runs["variant"] != base].groupby(keys, dropna=False):
        point = dict(zip(keys, key))
        if vocabulary.is_sequential(point["variant"]) or vocabulary.is_distributed(point["variant"]):
            continue
        mine = bases[bases["threads"] == point["threads"]].set_index("repetition")["step_s"]
        theirs = group.set_index("repetition")["step_s"]
        reps = sorted(set(mine.index) & set(theirs.index))
        if not reps:
            continue
        task, paired = [float(theirs[r]) for r in reps], [float(mine[r]) for r in reps]
        hodges_lehmann, low, high = compare.hl_paired_ratio_ci(task, paired, CONFIDENCE)
        estimate, low, high = (hodges_lehmann, low, high) if len(reps) >= MIN_PAIRS else paired_ratio(task, paired)
        rows.append({"variant": point["variant"], "chunking": _chunking(point), "threads": int(point["threads"]),
                     "pairs": len(reps), "ratios": [b / a for a, b in zip(task, paired)],
                     "estimate": estimate, "hodges_lehmann": hodges_lehmann, "low": low, "high": high})
    rows.sort(key=lambda x: (vocabulary.variant_order(x["variant"]), x["chunking"], x["threads"]))
    return rows


def verdict(low, high, target):
    """A paired interval against a least speedup: met when all of it is at least the target, missed
    when all of it is below, undecided when it straddles it."""
    if low != low:  # NaN: fewer than MIN_PAIRS pairs
        return f"no interval (fewer than {MIN_PAIRS} repetitions)"
    if low >= target:
        return "met"
    if high < target:
        return "missed"
    return "undecided"


def paired_ratio(base, other):
    """(estimate, low, high) of other / base from runs paired by repetition: the paired
    Hodges-Lehmann estimate and its CONFIDENCE interval from MIN_PAIRS pairs on, the geometric mean
    of the pairs' ratios with NaN bounds below."""
    if len(base) >= MIN_PAIRS:
        return compare.hl_paired_ratio_ci(base, other, CONFIDENCE)
    return math.exp(sum(math.log(b / a) for a, b in zip(base, other)) / len(base)), math.nan, math.nan


def first_win(rows, variant, chunking, column="over_forkjoin"):
    """The least thread count from which `variant` with `chunking` stays faster than fork-join (its
    ratio above 1 there and at every larger count measured), or None."""
    mine = sorted((r["threads"], r[column]) for r in rows if r["variant"] == variant and r["chunking"] == chunking
                  and not math.isnan(r[column]))
    start = None
    for t, ratio in mine:
        if ratio > 1.0:
            start = t if start is None else start
        else:
            start = None
    return start
