"""The verdicts bench/variants.py states for its targets (met, missed, undecided)."""

import importlib.util

from conftest import REPO

spec = importlib.util.spec_from_file_location("bench_variants", REPO / "bench" / "variants.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

BASE = [1.00, 1.02, 0.98, 1.01, 0.99, 1.00]


def scaled(factor):
    return [x * factor for x in BASE]


def test_ratio_clearly_below_an_upper_limit_is_met():
    assert bench.ratio_verdict(scaled(0.90), BASE, 1.0, below_is_good=True, strict=True).endswith("-> met")


def test_ratio_clearly_above_an_upper_limit_is_missed():
    assert bench.ratio_verdict(scaled(1.20), BASE, 1.05, below_is_good=True, strict=False).endswith("-> missed")


def test_ratio_whose_interval_spans_the_limit_is_undecided():
    text = bench.ratio_verdict(scaled(1.00), BASE, 1.0, below_is_good=True, strict=True)
    assert text.endswith("-> undecided")


def test_speedup_target_is_a_lower_limit():
    fast = scaled(0.5)  # twice as fast: speedup 2.0
    assert bench.ratio_verdict(BASE, fast, 1.85, below_is_good=False, strict=False).endswith("-> met")
    assert bench.ratio_verdict(BASE, scaled(0.7), 1.85, below_is_good=False, strict=False).endswith("-> missed")


def test_too_few_runs_give_no_verdict():
    text = bench.ratio_verdict([1.0, 1.1, 0.9], [1.0, 1.2, 1.1], 1.0, below_is_good=True, strict=True)
    assert "too few runs" in text and "->" not in text
