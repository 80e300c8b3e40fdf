"""How far a predicted step may be off: bootstrap intervals over the 1-thread runs' iterations, the
measured points' run-to-run spread (RunSpread), and the error of the other configurations'
predictions (cross_validated)."""

import math
import statistics

from pstudy.store import vocabulary
from pstudy.analyse.chunktimes import median, config_key, recording_of


INTERVAL = 0.90  # the prediction intervals' coverage


Z_INTERVAL = statistics.NormalDist().inv_cdf(0.5 + INTERVAL / 2)  # 1.645: its normal quantile


REPLICATES = 40  # bootstrap replicates of each interval


def bootstrap_medians(stats, replicates=REPLICATES):
    """[{config key: {chunk key: seconds}}]: `replicates` sets of the durations the replay runs, each
    from the kept iterations of each configuration's 1-thread runs drawn again with replacement,
    medians and scale recomputed as trace_stats computes them: how far the durations move with the
    runs and the iterations that happened to be measured. The draw has two levels, as the data
    has: the runs (as many as there are, with replacement), then within each drawn run its
    iterations (as many as it has). A run is one start of the binary, and on a shared machine its
    speed is the host's at that time: iterations of one run agree with each other more than with
    another run's, and resampling them alone would give intervals as narrow as one run's
    iterations are alike (the run-to-run spread is what moves the measured points). Iterations
    without a run (older entries of two fields) count as one run. Seeded by the configuration, so
    that the same traces give the same intervals whatever else is predicted. A configuration with
    one kept iteration (or none in `stats.iterations`) keeps its durations in every replicate."""
    import random
    import zlib

    out = [dict() for _ in range(replicates)]
    for ck, per in stats.medians.items():
        its = (stats.iterations or {}).get(ck) or []
        runs = {}
        for entry in its:
            runs.setdefault(entry[2] if len(entry) > 2 else None, []).append(entry[:2])
        runs = list(runs.values())
        # seeded by the recorded layout's text, which the committed studies' intervals were drawn with
        rng = random.Random(zlib.crc32(repr(tuple(recording_of(ck))).encode()))
        for b in range(replicates):
            if len(its) < 2:
                out[b][ck] = per
                continue
            draw = []
            for _ in runs:
                run = runs[rng.randrange(len(runs))]
                draw.extend(run[rng.randrange(len(run))] for _ in run)
            samples = {}
            for chunks, _busy in draw:
                for chunk, d in chunks.items():
                    samples.setdefault(chunk, []).append(d)
            medians = {chunk: median(v) for chunk, v in samples.items()}
            total = sum(medians.values())
            scale = median([busy for _, busy in draw]) / total if total > 0 else 1.0
            out[b][ck] = {chunk: medians.get(chunk, d) * scale for chunk, d in per.items()}
    return out


def percentile(values, q):
    """The q-quantile (0..1) of `values`, linear between order statistics."""
    v = sorted(values)
    if not v:
        return math.nan
    x = q * (len(v) - 1)
    i = int(math.floor(x))
    return v[i] if i + 1 >= len(v) else v[i] + (x - i) * (v[i + 1] - v[i])


def interval(step, replicate_steps):
    """(low, high): the INTERVAL quantiles of the replicates' steps, widened to hold `step` (the
    replicates' medians scatter around the full sample's)."""
    if not replicate_steps:
        return step, step
    tail = (1 - INTERVAL) / 2
    return min(step, percentile(replicate_steps, tail)), max(step, percentile(replicate_steps, 1 - tail))


def run_step_medians(steps, column="step_s"):
    """{point key: [each run's median of `column` over its kept steps]} of a steps frame
    (resultsdir.read_steps)."""
    steps = steps[~steps["warmup"]]
    out = {}
    for key, group in steps.groupby(vocabulary.POINT_KEYS + ["repetition"], dropna=False):
        point = vocabulary.point_key(dict(zip(vocabulary.POINT_KEYS, key)))  # zip leaves out the repetition
        out.setdefault(point, []).append(float(group[column].astype(float).median()))
    return out


class RunSpread:
    """How far a point's step moves from one run (one start of the binary) to the next on the
    machine that measured it: the pooled standard deviation of the log of each run's median step
    around its point's mean log, over the points with at least two runs, per thread count (a shared
    host moves a wide team more) and over all thread counts.

    A prediction interval that a measurement is held to must hold the measurement's own scatter:
    the bootstrap (bootstrap_medians) sees how the source durations move, not that the measured
    median of n runs scatters by about sigma / sqrt(n) around the step, nor, where a single run fed
    the source, that run's own speed. `widen` adds both in quadrature, in log space.

    `pooled`: {point: [run medians]} dicts to estimate sigma from (the checked directory's, and
    whatever else the same machine measured the same day); `runs`: {point: number of runs}
    of the checked points (1 where a point is not there)."""

    def __init__(self, pooled, runs):
        sums = {}
        for per_point in pooled:
            for point, medians in per_point.items():
                logs = [math.log(v) for v in medians if v > 0]
                if len(logs) < 2:
                    continue
                mean = sum(logs) / len(logs)
                ss = sum((v - mean) ** 2 for v in logs)
                for key in (point.threads, None):
                    total, dof = sums.get(key, (0.0, 0))
                    sums[key] = (total + ss, dof + len(logs) - 1)
        self._sums = sums
        self.runs = dict(runs)

    def sigma(self, threads):
        """The pooled log standard deviation at `threads` (over every thread count where that one
        has fewer than 2 degrees of freedom); None where no point had two runs."""
        for key in (threads, None):
            total, dof = self._sums.get(key, (0.0, 0))
            if dof >= (2 if key is not None else 1):
                return math.sqrt(total / dof)
        return None

    def widen(self, step, low, high, point, source_runs, measured=True):
        """(low, high) of the interval a measurement of `point` is held to: the bootstrap's
        [low, high] around `step`, with the measured median's run-to-run scatter (`measured`: False
        for the step itself, the source's sampling alone), and the source's where fewer than two
        runs fed it (`source_runs`), added in quadrature."""
        if low is None or high is None or not (low == low and high == high) or step <= 0:
            return low, high
        spread, single = self.sigma(point.threads) if measured else None, self.sigma(1)
        var = (spread ** 2 / max(1, self.runs.get(point, 1)) if spread else 0.0) \
            + (single ** 2 if source_runs < 2 and single else 0.0)
        if var <= 0:
            return low, high
        extra = Z_INTERVAL * math.sqrt(var)
        below = math.log(step / low) if low > 0 else 0.0
        above = math.log(high / step) if high > 0 else 0.0
        return step * math.exp(-math.hypot(below, extra)), step * math.exp(math.hypot(above, extra))


# the fewest other configurations' points at a thread count that make that count's own pool of
# errors (cross_validated); with fewer, the pool is every other multi-thread point
CONFORMAL_MINIMUM = 3


def cross_validated(validation):
    """The validation frame with each multi-thread point's interval widened, where it is narrower,
    to the prediction's error measured on the other configurations: the INTERVAL quantile of
    |log(measured / predicted)| over the points of every other configuration at the same thread
    count (each configuration has its own 1-thread source, so its points' errors share that
    source's and are left out together), as the jackknife+ of Barber et al. (Ann. Statist. 2021)
    holds out each point and takes the ceil(INTERVAL (n + 1))-th smallest of the others' residuals;
    with too few others for that rank, the largest. The pool is per thread count (a Mondrian
    split, Vovk et al. 2005) because the error grows with the team: what a shared host takes
    from 16 threads it does not take from 2; with fewer than CONFORMAL_MINIMUM such points, every
    other configuration's multi-thread points. The modelled interval (the bootstrap, RunSpread)
    holds what the model knows of its inputs; this one what the machine did to predictions like
    it. 1-thread
    points replay their own runs and are neither widened nor part of the pool; a frame without an
    interval column, or with one configuration, is returned as it is."""
    if "predicted_low" not in validation.columns or not len(validation):
        return validation
    frame = validation.copy()
    points = [vocabulary.point_key(r) for r in frame.to_dict("records")]
    measured, predicted = frame["measured_step_s"].astype(float).tolist(), frame["predicted_step_s"].astype(float).tolist()
    low, high = frame["predicted_low"].astype(float).tolist(), frame["predicted_high"].astype(float).tolist()
    usable = [p.threads > 1 and not vocabulary.is_distributed(p.variant) and m > 0 and s > 0 and lo == lo
              for p, m, s, lo in zip(points, measured, predicted, low)]
    residual = [abs(math.log(m / s)) if ok else math.nan for ok, m, s in zip(usable, measured, predicted)]
    configs = [config_key(p) for p in points]
    for i, ok in enumerate(usable):
        if not ok:
            continue
        others = [j for j in range(len(points)) if usable[j] and configs[j] != configs[i]]
        alike = [j for j in others if points[j].threads == points[i].threads]
        others = sorted(residual[j] for j in (alike if len(alike) >= CONFORMAL_MINIMUM else others))
        if not others:
            continue
        q = others[min(len(others), math.ceil(INTERVAL * (len(others) + 1))) - 1]
        low[i], high[i] = min(low[i], predicted[i] * math.exp(-q)), max(high[i], predicted[i] * math.exp(q))
    frame["predicted_low"], frame["predicted_high"] = low, high
    return frame


def source_runs(stats, ck):
    """How many runs fed configuration `ck`'s durations (distinct run names of its kept
    iterations; entries without one count as one run)."""
    return len({entry[2] if len(entry) > 2 else None for entry in (stats.iterations or {}).get(ck) or []})


def coverage(validation):
    """(share of the measured points inside [predicted_low, predicted_high], median relative width
    (high - low) / predicted, points) of a validation frame; None where it has no interval."""
    v = validation.dropna(subset=["predicted_low", "predicted_high", "measured_step_s"]) \
        if "predicted_low" in validation.columns else validation.iloc[0:0]
    if not len(v):
        return None
    inside = (v["measured_step_s"] >= v["predicted_low"]) & (v["measured_step_s"] <= v["predicted_high"])
    width = ((v["predicted_high"] - v["predicted_low"]) / v["predicted_step_s"]).tolist()
    return float(inside.mean()), median(width), len(v)
