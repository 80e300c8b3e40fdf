"""The verdicts bench/variants.py states for its targets (met, missed, undecided)."""

import importlib.util
import json

import pytest

from conftest import REPO

spec = importlib.util.spec_from_file_location("bench_variants", REPO / "bench" / "variants.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

BASE = [1.00, 1.02, 0.98, 1.01, 0.99, 1.00]


def scaled(factor):
    return [x * factor for x in BASE]


def test_ratio_clearly_below_an_upper_limit_is_met():
    assert bench.ratio_verdict(scaled(0.90), BASE, lambda r: r < 1).endswith("-> met")


def test_ratio_clearly_above_an_upper_limit_is_missed():
    assert bench.ratio_verdict(scaled(1.20), BASE, lambda r: r <= 1.05).endswith("-> missed")


def test_ratio_whose_interval_spans_the_limit_is_undecided():
    jittered = [x * f for x, f in zip(BASE, [1.02, 0.97, 1.01, 0.99, 1.03, 0.98])]
    text = bench.ratio_verdict(jittered, BASE, lambda r: r < 1)
    assert text.endswith("-> undecided")


def test_ratios_are_paired_by_repetition():
    # the machine drifts by 30% between repetitions; each repetition's pair is 10% apart
    drift = [1.0, 1.3, 0.8, 1.2, 0.9, 1.1]
    base = [d * x for d, x in zip(drift, BASE)]
    candidate = [1.1 * b * f for b, f in zip(base, [1.01, 0.99, 1.0, 1.02, 0.98, 1.0])]
    assert bench.ratio_verdict(candidate, base, lambda r: r > 1.05).endswith("-> met")
    # shuffled across repetitions the same samples no longer decide it
    assert bench.ratio_verdict(candidate[::-1], base, lambda r: r > 1.05).endswith("-> undecided")


def test_speedup_target_is_a_lower_limit():
    fast = scaled(0.5)  # twice as fast: speedup 2.0
    assert bench.ratio_verdict(BASE, fast, lambda r: r >= 1.85).endswith("-> met")
    assert bench.ratio_verdict(BASE, scaled(0.7), lambda r: r >= 1.85).endswith("-> missed")


def test_too_few_runs_give_no_verdict():
    text = bench.ratio_verdict([1.0, 1.1, 0.9, 1.0, 1.05], [1.0, 1.2, 1.1, 1.1, 1.1], lambda r: r < 1)
    assert "too few runs" in text and "->" not in text


@pytest.mark.parametrize("args,message", [
    (["--repetitions", "0"], "--repetitions 0: must be at least 1"),
    (["--steps", "1"], "--steps 1: must be at least 2"),
    (["--threads", "2,x"], "--threads 2,x: must be"),
    (["--threads", "2"], "including 1"),
])
def test_bad_options_get_a_one_line_error(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(args)
    assert exit_info.value.code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1]


def test_missing_build_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFSTUDY_BUILD_DIR", str(tmp_path / "build"))
    with pytest.raises(SystemExit) as exit_info:
        bench.main([])
    assert f"{tmp_path}/build/gcc/fast: no gpt2-seq" in str(exit_info.value.code)


def test_unknown_compiler_is_named(capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--compiler", "nosuchcompiler"])
    assert exit_info.value.code == 2
    assert "--compiler nosuchcompiler: unknown value" in capsys.readouterr().err.strip().splitlines()[-1]


def test_a_run_is_saved_in_a_new_directory_and_its_summary_can_be_printed_again(tmp_path, capsys):
    # real binaries (make test builds them), the tiny model: a few seconds
    args = ["--config", "tiny", "-B", "2", "-T", "8", "--steps", "2", "--out", str(tmp_path)]
    for _ in range(2):
        assert bench.main(args + ["--repetitions", "6"]) == 0
    first, second = sorted(tmp_path.iterdir())
    assert first != second  # an earlier run is never overwritten
    capsys.readouterr()
    assert bench.main(["--from", str(first)]) == 0
    printed = capsys.readouterr().out
    assert printed == (first / "summary.txt").read_text()
    assert "taskiter(BATCH_SUBSIZE=1) / forkjoin at 2 threads:" in printed and "-> " in printed
    steps, meta = bench.load(first)
    assert meta["args"]["config"] == "tiny" and meta["git"]["commit"]
    points = steps[steps.purpose == "point"]
    # one row per measured step: 9 points x 6 repetitions x 1 measured step
    assert len(points) == 9 * 6 and set(points.repetition) == set(range(6))
    # every other repetition runs the points in reverse order
    order = [points[points.repetition == r].sort_values("slot").variant.tolist() for r in (0, 1)]
    assert order[0] == order[1][::-1]
    traced = steps[steps.purpose == "overhead"]
    assert len(traced) == 6 and traced.busy_s.gt(0).all()


def test_a_damaged_saved_directory_gets_a_one_line_error(tmp_path):
    args = {"config": "tiny", "B": 2, "T": 8, "steps": 2, "compiler": "gcc", "kernels": "fast"}
    (tmp_path / "meta.json").write_text(json.dumps({"args": args}))
    (tmp_path / "steps.csv").write_text(",".join(bench.COLUMNS) + "\npoint,0,0,seq,1,,0,1,fast,NA,88,0.0\n")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--from", str(tmp_path)])
    assert str(exit_info.value.code) == f"bench/variants.py: {tmp_path / 'steps.csv'}: line 2: step_s is not a number"
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--from", str(tmp_path / "nothing")])
    assert "no such directory" in str(exit_info.value.code)


def test_a_saved_meta_without_the_run_options_is_named(tmp_path):
    (tmp_path / "meta.json").write_text('{"args": {"config": "tiny"}}')
    (tmp_path / "steps.csv").write_text(",".join(bench.COLUMNS) + "\npoint,0,0,seq,1,,0,1,0.5,NA,88,0.0\n")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--from", str(tmp_path)])
    assert str(exit_info.value.code) == f"bench/variants.py: {tmp_path / 'meta.json'}: no args.B"
