"""Comparing two sets of measurements point by point: ratio of medians, CI, one-sided test, Holm.

The statistics of `perfstudy compare` and `perfstudy regress` (and the paired intervals of the
benchmarks).

A point is (variant, compiler, kernels, threads, batch_subsize, k) and a phase (step, forward,
backward, update). For each point and phase measured in both directories:

  unit      what one sample is. "run" (default): the median of one process's measured steps.
            Steps of one process share its memory layout, thread placement and the machine's
            state while it ran, so they are not independent draws: testing pooled steps treats
            n_runs x n_steps correlated values as independent and gives p-values that are too
            small. One median per run is one independent sample. "step" pools the measured steps
            anyway (for sweeps with too few runs), and says so.
  ratio     median(candidate samples) / median(base samples): above 1 is slower.
  CI        Hodges-Lehmann interval on log times: the shifts d such that log(candidate) - d and
            log(base) are not told apart by a two-sided Mann-Whitney test at the level; exp() of
            its ends. Under a scale model (the candidate's times are the base's times times r) it
            covers r with the stated probability, whatever the distribution; r is then also the
            ratio of the medians. Exact null distribution of U for up to 2500 pairs, normal
            approximation beyond.
  p         one-sided Mann-Whitney U test (scipy.stats.mannwhitneyu, alternative "greater"):
            are the candidate's times stochastically larger than the base's?
  p_holm    Holm-Bonferroni adjustment over every (point, phase) tested in this comparison,
            which keeps the chance of any false flag at most alpha (family-wise).
  status    REGRESSED when p_holm < alpha and ratio > 1 + threshold: a slowdown must be both
            statistically significant and large enough to matter.
"""

import functools
import math

from pstudy.store import vocabulary
from pstudy.errors import StudyError

PHASES = vocabulary.PHASES
KEYS = vocabulary.POINT_KEYS
EXACT_MAX_PAIRS = 2500  # n*m up to which the exact null distribution of U is computed
EXACT_MAX_SIGNED_RANKS = 200  # pairs up to which the signed-rank null distribution is exact
ALL_PAIRS_MAX = 1_000_000  # n*m up to which every pairwise difference is formed and sorted
# Timing floor: a phase this short, or a difference this small, is reported but never gates. Two
# sweeps run one after the other on a shared VM differ by more than their own noise in short
# phases (a 70-microsecond update phase of the tiny model was seen 10% slower, with a tight
# interval, between two sweeps of one build): what the machine did between them, not the code.
MIN_DURATION_S = 1e-3
MIN_DIFFERENCE_S = 1e-4
METHOD = {
    "ratio": "median(candidate) / median(base) of the samples",
    "ci": "Hodges-Lehmann interval for the ratio: exp of the shift of log times not rejected by a two-sided "
          "Mann-Whitney test (exact null distribution up to 2500 pairs, normal approximation beyond)",
    "test": "one-sided Mann-Whitney U (scipy.stats.mannwhitneyu, alternative='greater': candidate slower)",
    "correction": "Holm-Bonferroni over all (point, phase) pairs tested",
    "decision": "REGRESSED when p_holm < alpha and ratio > 1 + threshold",
}
UNIT_TEXT = {"run": "one sample per run: the median of its measured steps",
             "step": "every measured step pooled (steps of one run are correlated: p-values are optimistic)"}


THRESHOLD = 0.05


def add_test_options(parser, threshold=THRESHOLD):
    """The test's options; threshold=None leaves --threshold unset for the caller to fill in."""
    parser.add_argument("--threshold", type=float, default=threshold,
                        help="smallest slowdown that counts, as a fraction (default 0.05 = 5%%; regress "
                        "--metric instructions: 0.01)")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="family-wise significance level after the Holm correction (default 0.05)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="level of the ratio's confidence interval (default 0.95)")
    parser.add_argument("--phases", default=",".join(PHASES),
                        help=f"comma-separated phases to compare (default {','.join(PHASES)})")
    parser.add_argument("--min-duration", type=float, default=MIN_DURATION_S,
                        help=f"a (point, phase) whose base median is shorter (seconds) is reported but never "
                             f"flagged (default {MIN_DURATION_S:g})")
    parser.add_argument("--min-difference", type=float, default=MIN_DIFFERENCE_S,
                        help=f"a difference of medians smaller than this (seconds) is reported but never flagged "
                             f"(default {MIN_DIFFERENCE_S:g})")


def check_test_options(args):
    if not 0 <= args.threshold < 10:
        raise StudyError(f"--threshold: expected a fraction such as 0.05, got {args.threshold}")
    if not 0 < args.alpha < 1:
        raise StudyError(f"--alpha: expected a level between 0 and 1, got {args.alpha}")
    if not 0 < args.confidence < 1:
        raise StudyError(f"--confidence: expected a level between 0 and 1, got {args.confidence}")
    for option, value in (("--min-duration", args.min_duration), ("--min-difference", args.min_difference)):
        if not 0 <= value < 3600:
            raise StudyError(f"{option}: expected seconds >= 0, got {value}")
    from pstudy import common
    return common.choices(args.phases, PHASES, "--phases")


# ---------------------------------------------------------------------------------------------
# statistics

def holm(pvalues):
    """Holm-Bonferroni adjusted p-values, in the input order (NaN stays NaN and is not counted).

    Sorted ascending, the i-th smallest of m p-values (i from 0) is multiplied by m - i; the
    adjusted values are made non-decreasing in that order and capped at 1. Rejecting where the
    adjusted value is below alpha is Holm's step-down procedure."""
    import numpy as np

    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, math.nan)
    tested = np.flatnonzero(~np.isnan(p))
    m = len(tested)
    running = 0.0
    for i, idx in enumerate(tested[np.argsort(p[tested], kind="stable")]):
        running = max(running, min(1.0, (m - i) * p[idx]))
        out[idx] = running
    return out


@functools.lru_cache(maxsize=64)
def mwu_null_pmf(n, m):
    """Exact distribution of the Mann-Whitney U statistic for samples of n and m without ties.

    counts(i, j, u): orderings of i values of one sample and j of the other with U = u, where U
    counts the pairs in which the second sample's value is the larger. The largest of all i + j
    values is either from the second sample (it beats all i values: u - i) or from the first
    (adds nothing): counts(i, j, u) = counts(i, j - 1, u - i) + counts(i - 1, j, u)."""
    import numpy as np

    size = n * m + 1
    prev = [np.zeros(size) for _ in range(m + 1)]  # i = 0: one ordering, U = 0
    for row in prev:
        row[0] = 1.0
    for i in range(1, n + 1):
        cur = [None] * (m + 1)
        cur[0] = np.zeros(size)
        cur[0][0] = 1.0
        for j in range(1, m + 1):
            c = prev[j].copy()
            c[i:] += cur[j - 1][:size - i]
            cur[j] = c
        prev = cur
    pmf = prev[m] / prev[m].sum()
    pmf.flags.writeable = False  # cached: shared by every caller
    return pmf


def smallest_p(n, m):
    """The smallest one-sided p-value a Mann-Whitney test on n and m samples can give, 1 / C(n+m, n)
    (through log-gamma: the binomial coefficient itself overflows a float from about 500 a side)."""
    return math.exp(math.lgamma(n + 1) + math.lgamma(m + 1) - math.lgamma(n + m + 1))


def interval_rank(null_pmf, total, null_sd, confidence):
    """The rank k of the sorted candidate shifts (total of them) that bounds a two-sided interval
    at `confidence`: the largest k with P(S <= k - 1) <= (1 - confidence) / 2 for a rank statistic
    S symmetric about total / 2. From its exact null distribution `null_pmf` where given, else
    from the normal approximation with standard deviation `null_sd`. Below 1: no interval."""
    import numpy as np

    tail = (1 - confidence) / 2
    if null_pmf is not None:
        return int(np.searchsorted(np.cumsum(null_pmf), tail * (1 + 1e-12), side="right"))
    from scipy.stats import norm
    return int(math.floor(total / 2 - norm.ppf(1 - tail) * null_sd))


def hl_ratio_ci(base, candidate, confidence):
    """(Hodges-Lehmann ratio estimate, low, high) for candidate / base, from log times.

    The pairwise differences D = log(c_j) - log(b_i), sorted, give the interval [D_(k), D_(nm+1-k)]
    with k the largest rank such that P(U <= k - 1) <= (1 - confidence) / 2 under the null; NaN
    bounds when the samples are too small for any such k. Up to ALL_PAIRS_MAX pairs the differences
    are formed and sorted; beyond, each order statistic is found by bisection on its value with a
    count of the differences below it (pairwise_order_statistic): O((n + m) log) instead of O(nm)."""
    import numpy as np

    lb, lc = np.sort(np.log(np.asarray(base, dtype=float))), np.sort(np.log(np.asarray(candidate, dtype=float)))
    n, m = len(lb), len(lc)
    pairs = n * m
    if pairs <= ALL_PAIRS_MAX:
        diffs = np.sort((lc[:, None] - lb[None, :]).ravel())

        def order(rank):  # 1-based
            return float(diffs[rank - 1])
        estimate = math.exp(float(np.median(diffs)))
    else:
        def order(rank):
            return pairwise_order_statistic(lb, lc, rank)
        half = (pairs + 1) / 2
        estimate = math.exp((order(math.floor(half)) + order(math.ceil(half))) / 2)
    exact = pairs <= EXACT_MAX_PAIRS
    k = interval_rank(mwu_null_pmf(n, m) if exact else None, pairs, math.sqrt(pairs * (n + m + 1) / 12),
                      confidence)
    if k < 1:
        return estimate, math.nan, math.nan
    return estimate, math.exp(order(k)), math.exp(order(pairs + 1 - k))


def pairwise_order_statistic(lb, lc, rank):
    """The rank-th smallest (1-based) of the differences lc[j] - lb[i], from the sorted arrays lb
    and lc without forming the n*m differences: bisection on the value t, counting the pairs with
    lc[j] - lb[i] <= t by binary search, until the bracket is as narrow as doubles allow. The
    result is the difference itself to within a few units in the last place."""
    import numpy as np

    n = len(lb)

    def below(t):  # how many differences are <= t
        return int(np.sum(n - np.searchsorted(lb, lc - t, side="left")))

    lo, hi = float(lc[0] - lb[-1]), float(lc[-1] - lb[0])
    if below(lo) >= rank:
        return lo
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid <= lo or mid >= hi:
            break
        if below(mid) >= rank:
            hi = mid
        else:
            lo = mid
    return hi


@functools.lru_cache(maxsize=64)
def signed_rank_null_pmf(n):
    """Exact distribution of the Wilcoxon signed-rank statistic T+ for n nonzero differences
    without ties: under the null each rank r = 1..n counts towards T+ with probability 1/2,
    independently, so the distribution is that of a sum of independent coin-flip ranks."""
    import numpy as np

    size = n * (n + 1) // 2 + 1
    counts = np.zeros(size)
    counts[0] = 1.0
    for r in range(1, n + 1):
        with_r = np.zeros(size)
        with_r[r:] = counts[:size - r]
        counts = counts + with_r
    pmf = counts / counts.sum()
    pmf.flags.writeable = False  # cached: shared by every caller
    return pmf


def hl_paired_ratio_ci(base, candidate, confidence):
    """(Hodges-Lehmann ratio estimate, low, high) for candidate / base from paired samples:
    base[i] and candidate[i] were measured side by side (one repetition), so drift of the
    machine between repetitions cancels in their ratio.

    With d_i = log(candidate[i] / base[i]), the Walsh averages (d_i + d_j) / 2, i <= j, sorted,
    give the interval [W_(k), W_(N+1-k)] (N = n(n+1)/2) with k the largest rank such that
    P(T+ <= k - 1) <= (1 - confidence) / 2 under the signed-rank null: the shifts not rejected by
    a two-sided Wilcoxon signed-rank test. The estimate is the median Walsh average. NaN bounds
    when there are too few pairs for any such k (fewer than 6 at 95%)."""
    import numpy as np

    if len(base) != len(candidate):
        raise ValueError("paired samples must have the same length")
    d = np.log(np.asarray(candidate, dtype=float)) - np.log(np.asarray(base, dtype=float))
    n = len(d)
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    estimate = math.exp(float(np.median(walsh)))
    total = len(walsh)
    exact = n <= EXACT_MAX_SIGNED_RANKS
    k = interval_rank(signed_rank_null_pmf(n) if exact else None, total,
                      math.sqrt(n * (n + 1) * (2 * n + 1) / 24), confidence)
    if k < 1:
        return estimate, math.nan, math.nan
    return estimate, math.exp(walsh[k - 1]), math.exp(walsh[total - k])


def one_sided_p(base, candidate):
    """p of the one-sided Mann-Whitney U test 'candidate slower than base' (scipy)."""
    import numpy as np
    from scipy.stats import mannwhitneyu

    values = np.concatenate([np.asarray(base, float), np.asarray(candidate, float)])
    ties = len(np.unique(values)) < len(values)
    # exact when it is valid (no ties) and cheap; the normal approximation with tie correction otherwise
    method = "exact" if not ties and len(base) * len(candidate) <= EXACT_MAX_PAIRS else "asymptotic"
    return float(mannwhitneyu(candidate, base, alternative="greater", method=method).pvalue)


# ---------------------------------------------------------------------------------------------
# samples and the comparison table

def samples(steps, unit, phases):
    """{(point key, phase): array of samples} from a steps.csv frame (warm-up steps left out)."""
    import numpy as np

    steps = steps[~steps["warmup"].astype(bool)]
    out = {}
    if steps.empty:
        return out
    for key, group in steps.groupby(KEYS, dropna=False, sort=True):
        pkey = vocabulary.point_key(dict(zip(KEYS, key)))
        for phase in phases:
            col = f"{phase}_s"
            if unit == "run":
                values = group.groupby("repetition")[col].median().to_numpy(dtype=float)
            else:
                values = group[col].to_numpy(dtype=float)
            out[(pkey, phase)] = np.asarray(values, dtype=float)
    return out


def compare_samples(base, candidate, threshold=0.05, alpha=0.05, confidence=0.95, only=None,
                    min_duration=0.0, min_difference=0.0):
    """The comparison table (a DataFrame, one row per (point, phase) in both) from two
    {(point, phase): samples} maps. `only` restricts it to the given (point, phase) pairs; a pair
    under the timing floor (min_duration, min_difference: see MIN_DURATION_S) never REGRESSES."""
    import numpy as np
    import pandas as pd

    pairs = sorted(set(base) & set(candidate), key=sort_key)
    if only is not None:
        pairs = [p for p in pairs if p in set(only)]
    rows = []
    for pkey, phase in pairs:
        b, c = base[(pkey, phase)], candidate[(pkey, phase)]
        row = dict(zip(KEYS, pkey))
        row.update(phase=phase, n_base=len(b), n_candidate=len(c))
        row["base_median_s"] = float(np.median(b)) if len(b) else math.nan
        row["candidate_median_s"] = float(np.median(c)) if len(c) else math.nan
        row["ratio"] = row["candidate_median_s"] / row["base_median_s"] if len(b) and len(c) else math.nan
        usable = len(b) >= 2 and len(c) >= 2 and np.all(b > 0) and np.all(c > 0)
        if usable:
            row["hl_ratio"], row["ci_low"], row["ci_high"] = hl_ratio_ci(b, c, confidence)
            row["p_value"] = one_sided_p(b, c)
        else:
            row["hl_ratio"] = row["ci_low"] = row["ci_high"] = row["p_value"] = math.nan
        rows.append(row)
    columns = KEYS + ["phase", "n_base", "n_candidate", "base_median_s", "candidate_median_s", "ratio",
                      "hl_ratio", "ci_low", "ci_high", "p_value", "p_holm", "status"]
    table = pd.DataFrame(rows, columns=[c for c in columns if c not in ("p_holm", "status")])
    table["p_holm"] = holm(table["p_value"].to_numpy(dtype=float)) if len(table) else []
    table["status"] = [status(r, threshold, alpha, min_duration, min_difference) for _, r in table.iterrows()]
    table["threshold"] = threshold
    table["alpha"] = alpha
    table["confidence"] = confidence
    for col in vocabulary.OPTIONAL_KEYS:
        table[col] = table[col].astype(vocabulary.key_dtype(col))
    return table


def sort_key(pair):
    pkey, phase = pair
    return vocabulary.point_sort_key(pkey) + (PHASES.index(phase),)


def status(row, threshold, alpha, min_duration=0.0, min_difference=0.0):
    if math.isnan(row["p_holm"]):
        return "untested"
    significant = row["p_holm"] < alpha
    if significant and row["ratio"] > 1 + threshold:
        if row["base_median_s"] < min_duration:
            return "slower, too short to gate"
        if row["candidate_median_s"] - row["base_median_s"] < min_difference:
            return "slower, difference too small to gate"
        return "REGRESSED"
    if significant:
        return "slower, below threshold"
    if not math.isnan(row["ci_high"]) and row["ci_high"] < 1:
        return "faster"
    return "ok"


def regressed_pairs(table):
    """The (point key, phase) pairs flagged REGRESSED in a comparison table."""
    out = []
    for _, r in table[table["status"] == "REGRESSED"].iterrows():
        out.append((vocabulary.point_key(r), r["phase"]))
    return out


def format_table(table, confidence):
    """The comparison as text, one line per (point, phase)."""
    import pandas as pd

    def num(v, fmt):
        return "n/a" if v is None or pd.isna(v) else format(v, fmt)

    rows = []
    pct = f"{confidence * 100:g}%"
    for _, r in table.iterrows():
        rows.append({
            "point": vocabulary.point_label(vocabulary.point_key(r)), "phase": r["phase"],
            "n b/c": f"{r['n_base']}/{r['n_candidate']}",
            "base s": num(r["base_median_s"], ".4g"), "cand s": num(r["candidate_median_s"], ".4g"),
            "ratio": num(r["ratio"], ".3f"),
            f"{pct} CI": f"[{num(r['ci_low'], '.3f')}, {num(r['ci_high'], '.3f')}]",
            "p": num(r["p_value"], ".2g"), "p_holm": num(r["p_holm"], ".2g"), "status": r["status"],
        })
    if not rows:
        return "(no points)"
    return pd.DataFrame(rows).to_string(index=False)


def method_lines(unit, threshold, alpha, confidence, n_tests, min_duration=0.0, min_difference=0.0):
    return [f"samples: {UNIT_TEXT[unit]}",
            f"ratio: {METHOD['ratio']}; above 1 is slower",
            f"CI ({confidence * 100:g}%): {METHOD['ci']}",
            f"test: {METHOD['test']}; {METHOD['correction']} ({n_tests} tests)",
            f"decision: REGRESSED when p_holm < {alpha:g} and ratio > {1 + threshold:g}, the base median is at "
            f"least {min_duration * 1e3:g} ms and the difference at least {min_difference * 1e6:g} us "
            "(shorter ones are reported, not flagged)"]


def measured_when(meta):
    """(started, finished) of a sweep from its meta.json, as datetimes (None where unknown)."""
    import datetime
    out = []
    for key in ("started", "finished"):
        try:
            out.append(datetime.datetime.fromisoformat(meta.get(key)))
        except (TypeError, ValueError):
            out.append(None)
    return tuple(out)


def interleaving_note(base_meta, cand_meta):
    """A warning when the two sweeps ran one after the other (their times do not overlap), or None.
    Drift of the machine between them then reads as a change of the code: `regress` interleaves."""
    (b0, b1), (c0, c1) = measured_when(base_meta), measured_when(cand_meta)
    if None in (b0, b1, c0, c1):
        return ("warning: when the sweeps ran is not recorded in both meta.json files; if they ran one after "
                "the other, a drift of the machine between them reads as a change (perfstudy regress interleaves)")
    if b1 <= c0 or c1 <= b0:
        gap = abs((c0 - b1) if b1 <= c0 else (b0 - c1))
        return (f"warning: not interleaved: base ran {b0:%Y-%m-%d %H:%M:%S}..{b1:%H:%M:%S}, candidate "
                f"{c0:%Y-%m-%d %H:%M:%S}..{c1:%H:%M:%S} ({gap.total_seconds():.0f} s apart): a drift of the "
                "machine between them reads as a change; perfstudy regress interleaves the two builds")
    return None


# ---------------------------------------------------------------------------------------------
# what makes two sweeps comparable

def check_power(base, candidate, unit, alpha, source):
    """Refuse a comparison in which no test could ever reject after the Holm correction."""
    pairs = set(base) & set(candidate)
    if not pairs:
        return
    n_tests = len(pairs)
    worst = max(smallest_p(len(base[p]), len(candidate[p])) for p in pairs if len(base[p]) and len(candidate[p]))
    if worst >= alpha / n_tests:
        fewest = min(min(len(base[p]), len(candidate[p])) for p in pairs)
        hint = ("at least 7 repetitions per side, or --unit step" if unit == "run" else "more repetitions or steps")
        raise StudyError(f"{source}: with {fewest} {unit}s on a side the smallest possible p is {worst:.2g}, "
                         f"not below alpha / tests = {alpha:g} / {n_tests}: no regression could be detected "
                         f"(need {hint})")
