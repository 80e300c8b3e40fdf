"""What each swept distributed knob (update, collective, overlap, comm_threads) does to the step:
for every point of a sweep over one, the runs at each of its other values over the runs at its base
value (the binary's default where the sweep has it, else the first in the knob's order), paired by repetition.

The points of a sweep are run once a repetition in a shuffled order (pstudy.store.sweep), so a
repetition's two runs of the same point at two values of a knob ran close together: their ratio
leaves out what the machine drifted by between repetitions. The ratio is the paired
Hodges-Lehmann estimate with its 95% interval (answer.paired_ratio); above 1, the other value is
slower.
"""

from pstudy.analyse import answer
from pstudy.store import vocabulary


def base_value(key, values):
    """The value of knob `key` that the others are read against: the binary's default where
    `values` has it, else the first of `values` in the knob's order."""
    return next(v for v in vocabulary.DISTRIBUTED_OPTIONS[key].values if v in values)


def ratios(steps):
    """steps: a sweep's measured (non-warm-up) steps. One row per distributed knob swept over more
    than one value, point without that knob (its label) and value other than its base: key, base,
    value, point, pairs, estimate (value's step / base's), low, high, in the knobs' order."""
    keys = [k for k in vocabulary.POINT_KEYS if k in steps.columns]
    runs = steps.groupby(keys + ["repetition"], dropna=False)["step_s"].median().reset_index()
    rows = []
    for key in vocabulary.DISTRIBUTED_KEYS:
        if key not in runs.columns:
            continue
        values = set(runs[key].dropna())
        if len(values) < 2:
            continue
        base = base_value(key, values)
        rest = [k for k in keys if k != key]
        for group_key, group in runs[runs[key].notna()].groupby(rest, dropna=False, sort=False):
            point = vocabulary.point_key(dict(zip(rest, group_key)))
            by_value = {v: g.set_index("repetition")["step_s"] for v, g in group.groupby(key)}
            if base not in by_value:
                continue
            for value in (v for v in vocabulary.DISTRIBUTED_OPTIONS[key].values if v in by_value and v != base):
                reps = sorted(set(by_value[base].index) & set(by_value[value].index))
                if not reps:
                    continue
                estimate, low, high = answer.paired_ratio([float(by_value[base][r]) for r in reps],
                                                          [float(by_value[value][r]) for r in reps])
                rows.append({"key": key, "base": base, "value": value, "point": vocabulary.point_label(point),
                             "pairs": len(reps), "estimate": estimate, "low": low, "high": high})
    rows.sort(key=lambda r: (vocabulary.DISTRIBUTED_KEYS.index(r["key"]), r["value"], r["point"]))
    return rows
