"""Medians, their confidence intervals, speedup and efficiency on inputs with known answers."""

import math

import numpy as np
import pandas as pd
import pytest

from pstudy.analyse import stats


def test_median_ci_order_statistics():
    med, lo, hi, cov = stats.median_ci(list(range(10, 0, -1)))  # 1..10, unsorted
    assert med == 5.5
    # [x(2), x(9)] covers the median with probability 1 - 2 * (1 + 10) / 1024
    assert (lo, hi) == (2.0, 9.0)
    assert cov == pytest.approx(1 - 22 / 1024)
    med, lo, hi, cov = stats.median_ci([3.0, 1.0, 2.0, 5.0, 4.0])  # n = 5: no 95% interval exists
    assert med == 3.0 and math.isnan(lo) and math.isnan(hi)
    med, lo, hi, cov = stats.median_ci(np.arange(1, 7))  # n = 6: [x(1), x(6)], coverage 62/64
    assert (lo, hi) == (1.0, 6.0) and cov == pytest.approx(62 / 64)


@pytest.mark.parametrize("n", [6, 7, 20, 51, 200])
def test_median_ci_matches_scipy_binomial(n):
    from scipy.stats import binom
    x = np.arange(1.0, n + 1)
    _, lo, hi, cov = stats.median_ci(x)
    lo_rank, hi_rank = int(lo), int(hi)
    assert hi_rank == n + 1 - lo_rank
    assert cov == pytest.approx(binom.cdf(hi_rank - 1, n, 0.5) - binom.cdf(lo_rank - 1, n, 0.5))
    assert cov >= 0.95
    narrower = binom.cdf(hi_rank - 2, n, 0.5) - binom.cdf(lo_rank, n, 0.5)
    assert narrower < 0.95  # the interval is the narrowest symmetric one that reaches 95%


def steps_frame(points, reps=2, steps=4):
    """Constant step times per point; step 0 is a warm-up three times slower (must be ignored)."""
    rows = []
    for (variant, threads, bs, k), step_s in points.items():
        for rep in range(reps):
            for step in range(steps):
                t = step_s * (3 if step == 0 else 1)
                rows.append(dict(variant=variant, compiler="gcc", kernels="fast", threads=threads,
                                 batch_subsize=bs, k=k, repetition=rep, step=step, warmup=step == 0,
                                 forward_s=0.4 * t, backward_s=0.5 * t, update_s=0.1 * t, step_s=t, loss=1.0))
    frame = pd.DataFrame(rows)
    for col in ("batch_subsize", "k"):
        frame[col] = frame[col].astype("Int64")
    return frame


def test_speedup_and_efficiency_arithmetic():
    summary = stats.summarise(steps_frame({
        ("seq", 1, None, None): 10.0,
        ("forkjoin", 1, None, None): 12.0, ("forkjoin", 2, None, None): 6.0, ("forkjoin", 4, None, None): 4.0,
        ("tasks", 1, 2, 16): 16.0, ("tasks", 4, 2, 16): 5.0,
        ("tasks", 1, 4, 16): 20.0, ("tasks", 4, 4, 16): 4.0,
    }))
    row = summary.set_index(["variant", "threads", "batch_subsize"]).sort_index()

    def get(variant, threads, bs, col):
        return row.loc[(variant, threads, bs), col]

    na = pd.NA
    assert get("seq", 1, na, "step_median_s") == 10.0            # warm-up steps ignored
    assert get("forkjoin", 4, na, "speedup_vs_seq") == pytest.approx(10 / 4)
    assert get("forkjoin", 4, na, "efficiency_vs_seq") == pytest.approx(10 / 4 / 4)
    assert get("forkjoin", 4, na, "speedup_vs_self1") == pytest.approx(12 / 4)
    assert get("forkjoin", 4, na, "efficiency_vs_self1") == pytest.approx(0.75)
    assert get("forkjoin", 2, na, "step_base_self1_s") == 12.0
    assert get("forkjoin", 2, na, "step_base_seq_s") == 10.0
    # each chunking has its own 1-thread base
    assert get("tasks", 4, 2, "speedup_vs_self1") == pytest.approx(16 / 5)
    assert get("tasks", 4, 4, "speedup_vs_self1") == pytest.approx(20 / 4)
    assert get("tasks", 4, 4, "efficiency_vs_self1") == pytest.approx(20 / 4 / 4)
    assert get("tasks", 4, 4, "speedup_vs_seq") == pytest.approx(10 / 4)
    # phases: forward is 0.4 of the step everywhere, so its speedups equal the step's
    assert get("tasks", 4, 2, "forward_median_s") == pytest.approx(2.0)
    assert get("tasks", 4, 2, "forward_speedup_vs_seq") == pytest.approx(4.0 / 2.0)
    assert get("tasks", 4, 2, "backward_efficiency_vs_self1") == pytest.approx(16 / 5 / 4)
    assert get("tasks", 1, 2, "n_steps") == 6 and get("tasks", 1, 2, "n_reps") == 2


def test_speedup_interval_uses_both_intervals():
    frame = steps_frame({("seq", 1, None, None): 10.0, ("forkjoin", 2, None, None): 5.0}, reps=2, steps=5)
    # spread the measured times so the CIs are not points: multiply by 0.9 .. 1.1
    factors = np.tile(np.linspace(0.9, 1.1, 8), 2)
    measured = ~frame["warmup"]
    frame.loc[measured, "step_s"] = frame.loc[measured, "step_s"].to_numpy() * factors
    s = stats.summarise(frame).set_index("variant")
    seq, fj = s.loc["seq"], s.loc["forkjoin"]
    assert fj["speedup_vs_seq_ci_low"] == pytest.approx(seq["step_ci_low_s"] / fj["step_ci_high_s"])
    assert fj["speedup_vs_seq_ci_high"] == pytest.approx(seq["step_ci_high_s"] / fj["step_ci_low_s"])
    assert fj["speedup_vs_seq_ci_low"] < fj["speedup_vs_seq"] < fj["speedup_vs_seq_ci_high"]
    assert fj["efficiency_vs_seq_ci_low"] == pytest.approx(fj["speedup_vs_seq_ci_low"] / 2)
    # a point against itself is exactly 1, not an interval of its CI against itself
    assert (seq["speedup_vs_seq_ci_low"], seq["speedup_vs_seq"], seq["speedup_vs_seq_ci_high"]) == (1, 1, 1)
    assert seq["step_ci_low_s"] < seq["step_ci_high_s"]


def test_no_seq_gives_nan_not_a_wrong_base():
    s = stats.summarise(steps_frame({("forkjoin", 1, None, None): 8.0, ("forkjoin", 2, None, None): 4.0}))
    assert s["speedup_vs_seq"].isna().all()
    assert s.set_index("threads").loc[2, "speedup_vs_self1"] == pytest.approx(2.0)


def test_median_ci_large_samples_match_the_binomial_definition():
    """The vectorised interval: same rule as the exact integer sum, and usable at 1e5 samples."""
    import math
    rng = np.random.default_rng(5)
    for n in (6, 7, 40, 301):
        x = rng.lognormal(size=n)
        med, lo, hi, cov = stats.median_ci(x)
        exact = [(lo_rank, sum(math.comb(n, i) for i in range(lo_rank, n + 1 - lo_rank)) / 2 ** n)
                 for lo_rank in range(1, n // 2 + 1)]
        best = max(r for r, c in exact if c >= 0.95)
        xs = np.sort(x)
        assert (lo, hi) == (xs[best - 1], xs[n - best]) and cov == pytest.approx(dict(exact)[best], rel=1e-12)
    med, lo, hi, cov = stats.median_ci(rng.lognormal(size=100_000))
    assert lo < med < hi and 0.95 <= cov < 0.96
