"""The verdicts bench/variants.py states for its targets (met, missed, undecided)."""

import importlib.util
import json
import subprocess

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


# Six repetitions are the fewest that give the paired interval a verdict needs: the long tier runs them
# (every point six times); make test runs every point twice, which checks everything but the verdicts'
# arithmetic on real runs, and holds the verdicts to their intervals on saved runs below.
@pytest.mark.parametrize("repetitions", [2, 6])
def test_a_run_is_saved_in_a_new_directory_and_its_summary_can_be_printed_again(tmp_path, capsys, repetitions):
    # real binaries (make test builds them), the tiny model: a few seconds
    args = ["--config", "tiny", "-B", "2", "-T", "8", "--steps", "2", "--out", str(tmp_path)]
    assert bench.main(args + ["--repetitions", str(repetitions)]) == 0
    # an earlier run is never overwritten (the second, the least one: the compared points at 1 thread, once)
    assert bench.main(args + ["--repetitions", "1", "--threads", "1", "--targets-only", "--skip-products"]) == 0
    first, second = sorted(tmp_path.iterdir())
    assert first != second and "taskiter(BATCH_SUBSIZE=1)" in (first / "summary.txt").read_text()
    capsys.readouterr()
    assert bench.main(["--from", str(first)]) == 0
    printed = capsys.readouterr().out
    assert printed == (first / "summary.txt").read_text()
    # the task variants held to their targets with their own chunking, a verdict each (with too few runs
    # for an interval, none, and the summary says so)
    for target in ("taskiter(auto) / forkjoin at 1 thread, loses at most 1%:",
                   "taskiter(auto) / forkjoin at 2 threads, faster:", "tasks(auto) / forkjoin at 2 threads, loses nothing:"):
        line = next(x for x in printed.splitlines() if x.startswith(target))
        assert ("-> " in line) if repetitions >= 6 else ("too few runs" in line and "->" not in line), line
    # the reference study's chunking printed beside, with its interval and no verdict
    line = next(x for x in printed.splitlines() if x.startswith("taskiter(BATCH_SUBSIZE=1) / forkjoin at 2 threads"))
    assert ("interval" if repetitions >= 6 else "too few runs") in line and "->" not in line
    steps, meta, products, kernels = bench.load(first)
    assert meta["args"]["config"] == "tiny" and meta["git"]["commit"]
    # gemm_bench knows d12's shapes only: the products are not measured, and the summary says why
    assert products is None and not (first / "products.csv").exists()
    assert "products in the two forms: not measured: gemm_bench times d12's shapes, the config is tiny" in printed
    points = steps[steps.purpose == "point"]
    # one row per measured step: 21 points (seq; at 1 and 2 threads forkjoin, and tasks, taskiter, nosv and starpu
    # auto and another chunking) x the repetitions x 1 measured step
    assert len(points) == 21 * repetitions and set(points.repetition) == set(range(repetitions))
    # every other repetition runs the points in reverse order
    order = [points[points.repetition == r].sort_values("slot").variant.tolist() for r in (0, 1)]
    assert order[0] == order[1][::-1]
    traced = steps[steps.purpose == "overhead"]
    # the 4 task points the targets are stated on (tasks, taskiter, nosv, starpu, auto) x 2 thread counts x 2
    # rounds x 1 measured step
    assert len(traced) == 16 and set(traced.chunking) == {"auto"} and traced.busy_s.gt(0).all()
    # the breakdown: forkjoin traced once per thread count; per step, the kernels' times add up to the
    # chunks' time of steps.csv
    runs = steps[steps.traced == 1]
    assert sorted(runs[runs.purpose == "breakdown"].threads) == [1, 1, 2, 2]
    for _, r in runs[runs.purpose.isin(["overhead", "breakdown"])].iterrows():
        mine = kernels[(kernels.purpose == r.purpose) & (kernels.variant == r.variant) &
                       (kernels.threads == r.threads) & (kernels.chunking == r.chunking) &
                       (kernels.repetition == r.repetition) & (kernels.step == r.step)]
        assert abs(mine.seconds.sum() - r.busy_s) < 1e-6 * max(r.busy_s, 1)
        assert "matmul_fwd" in set(mine.kernel) and mine.chunks.gt(0).all()
    for t in (1, 2):
        assert f"where the time goes at {t} thread" in printed
    section = printed[printed.index("where the time goes at 1 thread"):].splitlines()
    assert section[1].split() == ["kernel", "forkjoin", "tasks", "diff", "taskiter", "diff", "nosv", "diff", "starpu", "diff"]


def test_targets_only_repeats_the_compared_points_and_nothing_else(tmp_path, capsys):
    # two repetitions, enough to see the order reversed: the verdicts' intervals (six repetitions and
    # more) are checked by the whole run above
    args = ["--config", "tiny", "-B", "2", "-T", "8", "--steps", "2", "--out", str(tmp_path), "--targets-only",
            "--repetitions", "2"]
    assert bench.main(args) == 0
    (out,) = tmp_path.iterdir()
    printed = capsys.readouterr().out
    steps, meta, products, kernels = bench.load(out)
    # forkjoin, tasks(auto), taskiter(auto), nosv(auto), starpu(auto) at 1 and 2 threads x 2 repetitions x 1 step
    assert set(steps.purpose) == {"point"} and len(steps) == 10 * 2 and not steps.traced.any()
    assert set(zip(steps.variant, steps.chunking)) == {("forkjoin", ""), ("tasks", "auto"), ("taskiter", "auto"),
                                                      ("nosv", "auto"), ("starpu", "auto")}
    order = [steps[steps.repetition == r].sort_values("slot").variant.tolist() for r in (0, 1)]
    assert order[0] == order[1][::-1]
    assert meta["args"]["targets_only"] and meta["products"] == "--targets-only" and kernels.empty
    for line in ("taskiter(auto) / forkjoin at 1 thread, loses at most 1%:",
                 "taskiter(auto) / forkjoin at 2 threads, faster:", "forkjoin speedup at 2 threads"):
        assert line in printed
    assert "BATCH_SUBSIZE=" not in printed and "with --trace" not in printed


def test_a_damaged_saved_directory_gets_a_one_line_error(tmp_path, capsys):
    args = {"config": "tiny", "B": 2, "T": 8, "steps": 2, "compiler": "gcc", "kernels": "fast"}
    (tmp_path / "meta.json").write_text(json.dumps({"args": args}))
    (tmp_path / "steps.csv").write_text(",".join(bench.COLUMNS) + "\npoint,0,0,seq,1,,0,1,fast,NA,88,0.0\n")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--from", str(tmp_path)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"bench/variants.py: {tmp_path / 'steps.csv'}: line 2: step_s is not a number"]
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--from", str(tmp_path / "nothing")])
    assert exit_info.value.code == 2 and "no such directory" in capsys.readouterr().err


def test_a_saved_meta_without_the_run_options_is_named(tmp_path, capsys):
    (tmp_path / "meta.json").write_text('{"args": {"config": "tiny"}}')
    (tmp_path / "steps.csv").write_text(",".join(bench.COLUMNS) + "\npoint,0,0,seq,1,,0,1,0.5,NA,88,0.0\n")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--from", str(tmp_path)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [f"bench/variants.py: {tmp_path / 'meta.json'}: no args.B"]


def write_saved_run(directory, products_text):
    """A saved directory with one repetition of forkjoin at 1 thread (2.0 s) and a products.csv."""
    args = {"config": "d12", "B": 4, "T": 64, "steps": 2, "compiler": "gcc", "kernels": "fast"}
    (directory / "meta.json").write_text(json.dumps({"args": args}))
    (directory / "steps.csv").write_text(",".join(bench.COLUMNS) + "\npoint,0,0,forkjoin,1,,0,1,2.0,NA,NA,0.0\n")
    (directory / "products.csv").write_text(",".join(bench.PRODUCT_COLUMNS) + "\n" + products_text)


def test_the_breakdown_puts_each_kernel_of_a_task_variant_beside_forkjoin(tmp_path, capsys):
    write_saved_run(tmp_path, "")
    (tmp_path / "products.csv").unlink()
    # one traced step of each at 1 thread: forkjoin 115 ms (matmul 100, adamw 10: idle 5); tasks
    # 125 ms (matmul 104, adamw 10.2, pack 7: idle 3.8); taskiter 120 ms (matmul 103, adamw 10.1,
    # pack 6.5: idle 0.4)
    steps = ["breakdown,0,0,forkjoin,1,,1,1,0.115,0.110,NA,0.0",
             "overhead,0,1,tasks,1,auto,1,1,0.125,0.1212,9,0.0",
             "overhead,0,2,taskiter,1,auto,1,1,0.120,0.1196,9,0.0"]
    with open(tmp_path / "steps.csv", "a") as f:
        f.write("\n".join(steps) + "\n")
    kernels = ["breakdown,forkjoin,1,,0,1,matmul_fwd,0.100,2", "breakdown,forkjoin,1,,0,1,adamw,0.010,1",
               "overhead,tasks,1,auto,0,1,matmul_fwd,0.104,4",
               "overhead,tasks,1,auto,0,1,adamw,0.0102,1",
               "overhead,tasks,1,auto,0,1,pack_weight_fwd,0.007,4",
               "overhead,taskiter,1,auto,0,1,matmul_fwd,0.103,4",
               "overhead,taskiter,1,auto,0,1,adamw,0.0101,1",
               "overhead,taskiter,1,auto,0,1,pack_weight_fwd,0.0065,4"]
    (tmp_path / "kernels.csv").write_text(",".join(bench.KERNEL_COLUMNS) + "\n" + "\n".join(kernels) + "\n")
    assert bench.main(["--from", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    start = out.index(next(line for line in out if line.startswith("where the time goes at 1 thread")))
    table = [line.split() for line in out[start + 1:start + 7]]
    assert table[0] == ["kernel", "forkjoin", "tasks", "diff", "taskiter", "diff"]
    # largest difference first; adamw (0.2 and 0.1 ms) is below the 0.5 ms a row of its own needs
    assert table[1] == ["pack_weight_fwd", "0.0", "7.0", "+7.0", "6.5", "+6.5"]
    assert table[2] == ["matmul_fwd", "100.0", "104.0", "+4.0", "103.0", "+3.0"]
    assert table[3] == ["other", "kernels", "(1)", "10.0", "10.2", "+0.2", "10.1", "+0.1"]
    assert table[4] == ["idle", "5.0", "3.8", "-1.2", "0.4", "-4.6"]
    assert table[5] == ["step", "(wall", "clock)", "115.0", "125.0", "+10.0", "120.0", "+5.0"]


def test_the_products_in_the_two_forms_are_summarised_from_the_saved_rows(tmp_path, capsys):
    # fc forward: fork-join 100 ms, task 104 ms of which the packing 12 ms over 12 x 768 x 3072
    # floats (0.424 ns each), a copy 0.25 ns each; its weight gradient 100 -> 102 ms, no packing
    floats = 12 * 768 * 3072
    write_saved_run(tmp_path,
                    f"fc,forward,256,64,12,0.100,0.104,1.04,1.05,0.012,{0.012 / floats * 1e9:.6f},0.25\n"
                    "fc,backward_weight,256,256,12,0.100,0.102,1.02,1.03,NA,NA,NA\n")
    assert bench.main(["--from", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    table = out[out.index(next(line for line in out if line.startswith("products of the transformer"))):]
    assert "chunks of 64 rows" in table[0] and "12 layers" in table[0]
    assert table[2].split() == ["fc", "forward", "100.0", "104.0", "12.0", "1.040", "1.050", "0.424", "0.250"]
    assert table[3].split() == ["fc", "backward_weight", "100.0", "102.0", "-", "1.020", "1.030", "-", "-"]
    # 206 / 200 ms; the 6 ms gap is 0.3% of forkjoin's 2.0 s step; a copy of the packed floats 7 ms
    assert table[4] == ("all products: task form / fork-join form 1.030 (6 ms a step, 0.3% of forkjoin's "
                        "1-thread step); the packing 12 ms (0.424 ns per float), a plain copy of the same "
                        "floats 7 ms (0.250 ns per float)")


@pytest.mark.parametrize("name,row,message", [
    ("products.csv", "fc,forward,256,64,12,0.100,fast,1.04,1.05,0.012,0.42,0.25", "line 2: task_s is not a number"),
    ("kernels.csv", "breakdown,forkjoin,1,,0,1,adamw,soon,1", "line 2: seconds is not a number"),
])
def test_a_damaged_saved_table_gets_a_one_line_error(tmp_path, capsys, name, row, message):
    write_saved_run(tmp_path, "")
    columns = bench.PRODUCT_COLUMNS if name == "products.csv" else bench.KERNEL_COLUMNS
    (tmp_path / name).write_text(",".join(columns) + "\n" + row + "\n")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--from", str(tmp_path)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [f"bench/variants.py: {tmp_path / name}: {message}"]


def test_a_missing_gemm_bench_is_named_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "GEMM_BENCH", tmp_path / "build" / "bench" / "gemm_bench")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--out", str(tmp_path / "results")])
    assert str(exit_info.value.code).startswith(f"bench/variants.py: {tmp_path}/build/bench: no gemm_bench (build it with make")
    assert not (tmp_path / "results").exists()


def test_gemm_bench_times_each_product_in_both_forms(tmp_path):
    # the real benchmark on small sizes: 16 rows in chunks of 8, one layer, one repetition
    r = subprocess.run(["make", "-s", "build/bench/gemm_bench"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(bench.GEMM_BENCH), "--json", "--task-form", "8", "--rows", "16", "--layers", "1",
                        "--reps", "1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    shapes = [x for x in lines if "layer" in x]
    assert [(x["layer"], x["product"]) for x in shapes] == [
        (layer, product) for layer in ("qkv", "attproj", "fc", "fcproj")
        for product in ("forward", "backward_input", "backward_weight")]
    for x in shapes:
        assert x["rows"] == 16 and x["layers"] == 1
        assert x["forkjoin_s"] > 0 and x["task_s"] > 0
        assert abs(x["ratio"] - x["task_s"] / x["forkjoin_s"]) < 1e-3 * x["ratio"]
        if x["product"] == "backward_weight":  # chunks of channels, no packing of its own
            assert x["chunk"] == 256 and "pack_s" not in x
        else:
            assert x["chunk"] == 8 and 0 < x["pack_s"] < x["task_s"]
            assert x["pack_ns_per_float"] > 0 and x["copy_ns_per_float"] > 0
    total = lines[-1]["total"]
    assert abs(total["forkjoin_s"] - sum(x["forkjoin_s"] for x in shapes)) < 1e-5
    assert abs(total["task_s"] - sum(x["task_s"] for x in shapes)) < 1e-5
    r = subprocess.run([str(bench.GEMM_BENCH), "--task-form", "0"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["gemm_bench: --task-form: expected a positive integer, got '0'"]

def test_the_avx2_builds_are_asked_for_by_their_make_target(tmp_path, monkeypatch):
    # --isa avx2 runs `make avx2`'s trees and product benchmark: missing, each is named with it
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--isa", "avx2", "--skip-products", "--out", str(tmp_path / "results")])
    assert str(exit_info.value.code).startswith(f"bench/variants.py: {tmp_path}/build/gcc/fast-avx2: no gpt2-")
    assert str(exit_info.value.code).endswith("(build it with make avx2, or check --compiler/--kernels)")
    assert bench.gemm_bench("avx2") == (tmp_path / "build" / "bench" / "gemm_bench-avx2", "avx2")
    assert bench.gemm_bench("native") == (bench.GEMM_BENCH, "build/bench/gemm_bench")
    assert not (tmp_path / "results").exists()


def _saved_targets(directory, drift, taskiter_ratio, config="d12", commit="abc1234"):
    """A saved --targets-only directory: forkjoin, tasks and taskiter (auto) at 1 and 2 threads, one
    run a repetition whose machine speed is drift[r]; taskiter `taskiter_ratio` of forkjoin's time."""
    directory.mkdir()
    args = {"config": config, "B": 4, "T": 64, "steps": 2, "compiler": "gcc", "kernels": "fast",
            "targets_only": True}
    (directory / "meta.json").write_text(json.dumps({"args": args, "git": {"commit": commit},
                                                     "products": "--targets-only"}))
    rows = [",".join(bench.COLUMNS)]
    for r, d in enumerate(drift):
        for slot, (variant, chunking, share) in enumerate((("forkjoin", "", 1.0), ("tasks", "auto", 0.99),
                                                           ("taskiter", "auto", taskiter_ratio))):
            for threads in (1, 2):
                step = d * share * (2.0 if threads == 1 else 1.05)
                rows.append(f"point,{r},{slot},{variant},{threads},{chunking},0,1,{step},NA,100,0.0")
    (directory / "steps.csv").write_text("\n".join(rows) + "\n")
    return directory


def test_saved_runs_pool_with_each_pair_kept_within_its_own_run(tmp_path, capsys):
    # two sessions of the same benchmark on a host whose speed drifts by 40% from run to run, each
    # repetition's taskiter 0.97 of its forkjoin: pooled, 12 runs a point, every pair 0.97 (a pair
    # that spanned two runs would not be)
    first = _saved_targets(tmp_path / "a", [1.0, 1.4, 0.8, 1.2, 0.9, 1.1], 0.97)
    second = _saved_targets(tmp_path / "b", [1.3, 0.7, 1.0, 1.1, 0.9, 1.2], 0.97, commit="def5678")
    assert bench.main(["--from", str(first), str(second)]) == 0
    printed = capsys.readouterr().out
    assert "12 runs x 1+ measured steps per point" in printed
    assert f"pooled: {first} (commit abc1234, 6 runs x 1 measured steps)" in printed
    assert f"pooled: {second} (commit def5678, 6 runs x 1 measured steps)" in printed
    line = next(x for x in printed.splitlines() if x.startswith("taskiter(auto) / forkjoin at 2 threads"))
    assert "0.970  95% interval [0.970, 0.970]  -> met" in line, line
    steps, meta, products, kernels = bench.load_pooled([first, second])
    assert sorted(set(steps.repetition)) == list(range(12)) and products is None and kernels is None
    # another benchmark (another model) is not pooled: one line naming it, exit 2
    other = _saved_targets(tmp_path / "c", [1.0] * 6, 0.97, config="d6")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--from", str(first), str(other)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"bench/variants.py: {other / 'meta.json'}: args.config is d6, d12 in {first}: not the same benchmark, "
        "not pooled"]
