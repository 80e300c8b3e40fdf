"""bench/kernels.py keeps what it measures: a new directory per run, its summary re-printable
with --from and computed from the saved rows; a missing benchmark binary is named with the
make target that builds it."""

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_kernels", REPO / "bench" / "kernels.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_a_run_is_saved_and_its_summary_printed_again(tmp_path, capsys):
    args = ["--config", "tiny", "-B", "2", "-T", "8", "--steps", "2", "--kernels", "fast", "--skip-gemm",
            "--out", str(tmp_path), "--rounds", "1"]
    assert bench.main(args) == 0
    # a second run (the least one: seq at 1 thread) gets a directory of its own
    assert bench.main(args + ["--variants", "seq", "--threads", "1"]) == 0
    first, second = sorted(tmp_path.iterdir())
    assert first != second and "fast       forkjoin" in (first / "summary.txt").read_text()
    for name in ("meta.json", "peaks.csv", "steps.csv", "summary.txt"):
        assert (first / name).is_file(), name
    capsys.readouterr()
    assert bench.main(["--from", str(first)]) == 0
    printed = capsys.readouterr().out
    assert printed == (first / "summary.txt").read_text()
    for variant in ("seq", "forkjoin", "tasks", "taskiter"):
        assert f"fast       {variant}" in printed
    # the summary is computed from the saved rows: change them and the report follows
    import pandas as pd
    steps = pd.read_csv(first / "steps.csv")
    steps.loc[steps["variant"] == "seq", "step_s"] = 7.25
    steps.to_csv(first / "steps.csv", index=False, na_rep="NA")
    assert bench.main(["--from", str(first)]) == 0
    seq_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("fast       seq"))
    assert "   7.250 " in seq_line


def test_missing_gemm_bench_names_its_make_target(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--config", "tiny", "--out", str(tmp_path / "out")])
    assert str(exit_info.value.code).endswith("gemm_bench: not built (build it with make build/bench/gemm_bench "
                                              "(or make bench))")


def test_a_binary_older_than_its_sources_is_refused_before_a_directory_is_made(tmp_path, monkeypatch):
    """A benchmark binary make would rebuild (sources changed since) is named with its make target,
    instead of timing older code under the checkout's commit."""
    import os
    (tmp_path / "build" / "bench").mkdir(parents=True)
    (tmp_path / "src.c").write_text("new\n")
    (tmp_path / "Makefile").write_text("build/bench/gemm_bench: src.c\n\tcp src.c $@\n")
    binary = tmp_path / "build" / "bench" / "gemm_bench"
    binary.write_text("old\n")
    os.utime(binary, (1_000_000, 1_000_000))
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    assert bench.runner.binary_is_stale(binary, tmp_path)
    assert not bench.runner.all_current([binary], tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--config", "tiny", "--out", str(tmp_path / "out")])
    assert str(exit_info.value.code).endswith("gemm_bench: older than its sources (rebuild it with make "
                                              "build/bench/gemm_bench (or make bench))")
    assert not (tmp_path / "out").exists()
    os.utime(binary, None)
    assert not bench.runner.binary_is_stale(binary, tmp_path)
    assert not bench.runner.binary_is_stale(Path("/bin/sh"), tmp_path)  # outside the checkout: taken as it is
    # all of them asked of make at once: yes only when make has nothing to rebuild for any
    assert bench.runner.all_current([binary, binary], tmp_path)
    assert not bench.runner.all_current([binary, tmp_path / "build" / "bench" / "absent"], tmp_path)
    assert not bench.runner.all_current([binary, Path("/bin/sh")], tmp_path)


def test_damaged_saved_directory_gets_one_line(tmp_path, capsys):
    (tmp_path / "meta.json").write_text('{"args": {"config": "tiny"}}')
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--from", str(tmp_path)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [f"bench/kernels.py: {tmp_path / 'meta.json'}: no args.B"]


def test_openblas_core_types_are_those_the_cpu_runs_and_each_shape_meets_the_fastest():
    avx2 = {"avx", "avx2", "fma"}
    run, left = bench.openblas_candidates(avx2)
    assert run == ["Zen", "Haswell", "Sandybridge"]
    assert "SkylakeX" in left and "avx512f" in left["SkylakeX"]
    avx512 = avx2 | {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"}
    assert bench.openblas_candidates(avx512)[0][0] == "SkylakeX"
    assert bench.openblas_candidates(avx512, ["Haswell", "SkylakeX"])[0] == ["Haswell", "SkylakeX"]
    assert bench.cpu_flags("processor : 0\nflags\t\t: fpu avx2 fma\n") == {"fpu", "avx2", "fma"}
    rows = [{"layer": "qkv", "product": "forward", "openblas_gflops": g, "openblas_core": c}
            for c, g in (("Zen", 100.0), ("SkylakeX", 180.0), ("Haswell", 120.0))]
    rows.append({"layer": "qkv", "product": "backward_input", "openblas_gflops": 90.0, "openblas_core": "Zen"})
    best = bench.fastest_per_shape(rows)
    assert [(r["product"], r["openblas_core"]) for r in best] == [("forward", "SkylakeX"), ("backward_input", "Zen")]


def test_a_core_type_set_in_the_environment_is_named_as_what_hid_the_others(tmp_path, monkeypatch):
    import json
    import subprocess
    from types import SimpleNamespace

    def fake_gemm_bench(cmd, env=None):
        core = env["OPENBLAS_CORETYPE"]
        shape = {"layer": "qkv", "product": "forward", "M": 256, "N": 2304, "K": 768, "gemm_gflops": 150.0,
                 "openblas_gflops": 100.0, "ratio": 1.5, "median_ratio": 1.5}
        text = json.dumps(shape) + "\n" + json.dumps({"total": {"openblas_core": core}}) + "\n"
        return subprocess.CompletedProcess(cmd, 0, text, "")

    monkeypatch.setattr(bench, "run", fake_gemm_bench)
    monkeypatch.setattr(bench, "cpu_flags", lambda cpuinfo=None: {"avx", "avx2", "fma"})
    args = SimpleNamespace(B=4, T=64, openblas_cores="Haswell", coretype_from_env=True, isa="native")
    meta = {}
    bench.measure_gemm(args, tmp_path, {"OPENBLAS_CORETYPE": "Haswell"}, meta)
    cores = meta["openblas_cores"]
    assert cores["run"] == ["Haswell"]
    assert sorted(cores["left_out"]) == ["Sandybridge", "Zen"]
    assert "OPENBLAS_CORETYPE=Haswell in the environment" in cores["left_out"]["Zen"]
    # asked for on the command line, the others are not reported as hidden
    meta = {}
    bench.measure_gemm(SimpleNamespace(B=4, T=64, openblas_cores="Haswell", coretype_from_env=False, isa="native"),
                       tmp_path, {"OPENBLAS_CORETYPE": "Haswell"}, meta)
    assert meta["openblas_cores"]["left_out"] == {}


AVX512 = {"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"}


def test_the_avx2_builds_meet_openblas_s_avx2_core_types_only(tmp_path, monkeypatch):
    import json
    import subprocess
    from types import SimpleNamespace
    run, left = bench.openblas_candidates(AVX512, None, bench.ISAS["avx2"]["openblas"])
    assert run == ["Zen", "Haswell", "Sandybridge"]
    assert sorted(left) == ["Cooperlake", "SapphireRapids", "SkylakeX"]
    assert all(why.startswith("wider than the build compared") for why in left.values())
    ran = []

    def fake_gemm_bench(cmd, env=None):
        ran.append((Path(str(cmd[0])).name, env["OPENBLAS_CORETYPE"]))
        shape = {"layer": "qkv", "product": "forward", "M": 256, "N": 2304, "K": 768, "gemm_gflops": 90.0,
                 "openblas_gflops": 100.0, "ratio": 0.9, "median_ratio": 0.9}
        text = json.dumps(shape) + "\n" + json.dumps({"total": {"openblas_core": env["OPENBLAS_CORETYPE"]}}) + "\n"
        return subprocess.CompletedProcess(cmd, 0, text, "")

    monkeypatch.setattr(bench, "run", fake_gemm_bench)
    monkeypatch.setattr(bench, "cpu_flags", lambda cpuinfo=None: AVX512)
    meta = {}
    bench.measure_gemm(SimpleNamespace(B=4, T=64, openblas_cores=None, coretype_from_env=False, isa="avx2"),
                       tmp_path, {}, meta)
    assert ran == [("gemm_bench-avx2", "Zen"), ("gemm_bench-avx2", "Haswell"), ("gemm_bench-avx2", "Sandybridge")]
    assert meta["openblas_cores"]["run"] == ["Zen", "Haswell", "Sandybridge"]


def test_a_missing_avx2_build_names_make_avx2(tmp_path, monkeypatch):
    (tmp_path / "build" / "probes").mkdir(parents=True)
    (tmp_path / "build" / "probes" / "peakflops").write_text("")
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    for extra, missing in (([], "build/bench/gemm_bench-avx2"), (["--skip-gemm"], "build/gcc/fast-avx2/gpt2-seq")):
        with pytest.raises(SystemExit) as exit_info:
            bench.main(["--config", "tiny", "--isa", "avx2", "--kernels", "fast", "--out", str(tmp_path / "out"), *extra])
        assert str(exit_info.value.code) == f"bench/kernels.py: {tmp_path / missing}: not built (build it with make avx2)"
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif("avx2" not in bench.cpu_flags(), reason="the CPU has no AVX2")
def test_an_avx2_run_holds_the_step_to_the_avx2_peak(tmp_path, capsys):
    import pandas as pd
    from variant_helpers import make  # one make at a time: the bit-identity test builds these too
    built = make("-j2", *[f"build/gcc/fast-avx2/gpt2-{v}" for v in ("seq", "forkjoin", "tasks", "taskiter")])
    assert built.returncode == 0, built.stderr
    args = ["--config", "tiny", "-B", "2", "-T", "8", "--steps", "2", "--kernels", "fast", "--skip-gemm",
            "--isa", "avx2", "--out", str(tmp_path), "--rounds", "1"]
    assert bench.main(args) == 0
    [out] = list(tmp_path.iterdir())
    assert set(pd.read_csv(out / "peaks.csv")["isa"]) == {"avx2"}
    printed = capsys.readouterr().out
    assert printed.startswith("avx2 builds (make avx2), against OpenBLAS's avx2 core types and the avx2 peak")
    assert "(avx2 FMA)" in printed and "fast       taskiter" in printed


def test_rounds_alternate_the_order_and_hold_each_run_to_the_peak_measured_before_it(tmp_path, capsys):
    import pandas as pd
    args = ["--config", "tiny", "-B", "2", "-T", "8", "--steps", "2", "--kernels", "fast", "--skip-gemm",
            "--variants", "seq,forkjoin", "--threads", "1,2", "--rounds", "3", "--out", str(tmp_path)]
    assert bench.main(args) == 0
    [out] = list(tmp_path.iterdir())
    steps = pd.read_csv(out / "steps.csv")
    runs = [(int(r), v, int(t)) for r, v, t in steps[["round", "variant", "threads"]].drop_duplicates()
            .itertuples(index=False)]
    order = [(v, t) for r, v, t in runs if r == 0]
    assert order == [("seq", 1), ("forkjoin", 1), ("forkjoin", 2)]
    assert [(v, t) for r, v, t in runs if r == 1] == order[::-1]
    assert [(v, t) for r, v, t in runs if r == 2] == order
    assert (steps["peak_gflops"] > 0).all()
    printed = capsys.readouterr().out
    assert "3 rounds, the order reversed every other one" in printed
    # the share is each round's GFLOP/s over that round's peak, the rounds' median printed with the
    # lowest and highest: rewrite the rows so that the answer is known (1 GFLOP a step)
    steps["flops"] = 1e9
    steps["step_s"] = 1.0 / steps["round"].map({0: 10.0, 1: 20.0, 2: 30.0})  # 10, 20, 30 GFLOP/s
    steps["peak_gflops"] = 100.0
    steps.to_csv(out / "steps.csv", index=False, na_rep="NA")
    assert bench.main(["--from", str(out)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("fast       forkjoin        2"))
    assert line.split()[-3:] == ["20.0%", "[10.0%,", "30.0%]"]


def test_a_directory_saved_before_the_rounds_is_held_to_the_peak_of_its_start(tmp_path, capsys):
    import pandas as pd
    args = ["--config", "tiny", "-B", "2", "-T", "8", "--steps", "2", "--kernels", "fast", "--skip-gemm",
            "--variants", "seq", "--threads", "1", "--rounds", "1", "--out", str(tmp_path)]
    assert bench.main(args) == 0
    [out] = list(tmp_path.iterdir())
    steps = pd.read_csv(out / "steps.csv").drop(columns=["round", "peak_gflops"])
    steps["flops"], steps["step_s"] = 1e9, 0.1
    steps.to_csv(out / "steps.csv", index=False, na_rep="NA")
    pd.DataFrame({"threads": [1], "gflops": [40.0], "isa": ["avx2"]}).to_csv(out / "peaks.csv", index=False)
    capsys.readouterr()
    assert bench.main(["--from", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "against the peak measured at the start" in printed
    assert next(x for x in printed.splitlines() if x.startswith("fast       seq")).split()[-1] == "25.0%"
    # a round without its peak is named
    steps = pd.read_csv(out / "steps.csv")
    steps["round"] = 0
    steps.to_csv(out / "steps.csv", index=False, na_rep="NA")
    with pytest.raises(SystemExit) as exc:
        bench.main(["--from", str(out)])
    assert exc.value.code == 2
    assert "steps.csv: bench/kernels.py steps.csv: missing columns peak_gflops" in capsys.readouterr().err
