"""Is it memory bound, measured: the combined verdict (pstudy.verdict) on synthetic kernels, the
bandwidth-interference bookkeeping (pstudy.sensitivity) on recorded timings, the thief against
STREAM, and the simulated cache traffic (pstudy.cachesim): parser, geometry, and one real run."""

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from pstudy import cli
from pstudy.store import config, resultsdir
from pstudy.measure import cachesim, sensitivity
from pstudy.analyse import verdict
from pstudy.analyse import roofline as rl
from pstudy.errors import StudyError

REPO = Path(__file__).resolve().parents[2]
ROOF = {"peak_gflops": 100.0, "triad_GBs": 20.0, "ridge": 5.0}


def row(intensity, fraction_of_roof, flops=1e9):
    """A kernel at `intensity` achieving `fraction_of_roof` of min(peak, intensity x triad)."""
    attainable = min(ROOF["peak_gflops"], intensity * ROOF["triad_GBs"])
    gflops = fraction_of_roof * attainable
    return {"intensity": intensity, "gflops": gflops, "gbs": gflops / intensity, "flops": flops,
            "bytes": flops / intensity, "bytes_source": "model"}


# ------------------------------------------------------------------------------- the verdict

@pytest.mark.parametrize("intensity,label", [(4.9, verdict.MEMORY), (5.1, verdict.COMPUTE)])
def test_a_kernel_crossing_the_ridge(intensity, label):
    v = verdict.classify_kernel("matmul_fwd", row(intensity, 0.9), ROOF)
    assert v["verdict"] == label and v["decided_by"] == verdict.BY_RIDGE
    assert v["disagreements"] == [] and v["sensitivity"] is None


def test_below_both_roofs_is_latency_or_in_core_with_the_reason():
    # 5% of the triad roof, 0.5% of the peak: memory by the ridge alone, but neither roof limits it
    v = verdict.classify_kernel("crossentropy_fwd", row(0.5, 0.05), ROOF)
    assert v["verdict"] == verdict.LATENCY and v["decided_by"] == verdict.BY_FRACTIONS
    assert "expf" in v["why"] and v["fraction_of_memory_roof"] == pytest.approx(0.05)
    unknown = verdict.classify_kernel("mystery", row(10.0, 0.1), ROOF)
    assert unknown["verdict"] == verdict.LATENCY and "neither roof" in unknown["why"]
    # gelu is in-core bound by libm calls only in the reference set
    assert "tanhf" in verdict.classify_kernel("gelu_fwd", row(0.5, 0.05), ROOF, kernel_set="reference")["why"]
    assert "tanhf" not in verdict.classify_kernel("gelu_fwd", row(0.5, 0.05), ROOF, kernel_set="fast")["why"]


def test_just_above_the_threshold_on_one_roof_keeps_the_roofline():
    v = verdict.classify_kernel("adamw", row(0.2, 0.26), ROOF)
    assert v["verdict"] == verdict.MEMORY and v["decided_by"] == verdict.BY_RIDGE


def test_sensitivity_present_decides_and_disagreement_is_recorded():
    sens = {"slowdown": 0.30, "low": 0.20, "high": 0.40, "stolen_GBs": 5.0}
    v = verdict.classify_kernel("attention_fwd", row(2.0, 0.05), ROOF, sensitivity=sens)
    assert v["verdict"] == verdict.MEMORY and v["decided_by"] == verdict.BY_SENSITIVITY
    assert v["sensitivity"] == "sensitive" and "under 25% of both roofs" in v["disagreements"][0]
    above = verdict.classify_kernel("matmul_fwd", row(20.0, 0.8), ROOF, sensitivity=sens)
    assert above["verdict"] == verdict.MEMORY and "above the ridge" in above["disagreements"][0]


def test_insensitive_memory_kernel_keeps_the_roofline_and_says_they_disagree():
    sens = {"slowdown": 0.005, "low": -0.01, "high": 0.02, "stolen_GBs": 5.0}
    v = verdict.classify_kernel("residual_fwd", row(0.1, 0.8), ROOF, sensitivity=sens)
    assert v["verdict"] == verdict.MEMORY and v["decided_by"] == verdict.BY_RIDGE
    assert v["sensitivity"] == "insensitive" and v["disagreements"][0].startswith("sensitivity")


def test_sensitivity_absent_or_not_conclusive_decides_nothing():
    for sens in (None, {"slowdown": 0.05, "low": -0.02, "high": 0.12, "stolen_GBs": 4.0},
                 {"slowdown": math.nan, "low": math.nan, "high": math.nan}):
        v = verdict.classify_kernel("matmul_fwd", row(20.0, 0.8), ROOF, sensitivity=sens)
        assert v["verdict"] == verdict.COMPUTE and v["decided_by"] == verdict.BY_RIDGE
    assert verdict.sensitivity_state({"slowdown": 0.05, "low": -0.02, "high": 0.12}) == "not conclusive"


def test_simulated_traffic_across_the_ridge_is_a_disagreement():
    v = verdict.classify_kernel("matmul_fwd", row(8.0, 0.8), ROOF, cachesim={"ratio": 2.0})
    assert v["verdict"] == verdict.COMPUTE and v["cachesim_intensity"] == pytest.approx(4.0)
    assert v["disagreements"] and v["disagreements"][0].startswith("cachesim")
    same_side = verdict.classify_kernel("matmul_fwd", row(8.0, 0.8), ROOF, cachesim={"ratio": 1.2})
    assert same_side["disagreements"] == []


def test_above_the_bandwidth_roof_is_a_disagreement_that_names_the_likely_cause():
    # 200% of the triad roof: the roof cannot be what limits it, whatever the label
    v = verdict.classify_kernel("adamw", row(0.2, 2.0), ROOF)
    assert v["verdict"] == verdict.MEMORY and v["fraction_of_memory_roof"] == pytest.approx(2.0)
    assert v["disagreements"] and "200% of the triad roof" in v["disagreements"][0]
    assert "one core pulls more" in v["disagreements"][0]
    cached = verdict.classify_kernel("residual_fwd", row(0.1, 1.6), ROOF, cachesim={"ratio": 0.05})
    assert "served by caches" in cached["disagreements"][0]
    # at the roof, within the noise allowance: nothing to say
    assert verdict.classify_kernel("adamw", row(0.2, 1.05), ROOF)["disagreements"] == []


def test_step_verdict_names_what_decides_and_where_sources_disagree():
    kernels = pd.DataFrame([row(20.0, 0.8), row(0.5, 0.05), row(0.1, 0.8)],
                           index=["matmul_fwd", "crossentropy_fwd", "residual_fwd"])
    kernels["share"] = [0.6, 0.3, 0.1]
    sens = {"residual_fwd": {"slowdown": 0.0, "low": -0.01, "high": 0.01, "stolen_GBs": 5.0}}
    table = verdict.classify_table(kernels, ROOF, sensitivity=sens)
    step = verdict.step_verdict(table, "seq 1 thread", ["roofline", "sensitivity"])
    assert step["verdict"] == verdict.COMPUTE
    assert step["shares"] == {verdict.MEMORY: 0.1, verdict.COMPUTE: 0.6, verdict.LATENCY: 0.3}
    assert step["decided_by"][verdict.BY_RIDGE] == pytest.approx(0.7)
    assert "residual_fwd" in step["line"] and "disagree" in step["line"]
    table["share"] = [0.4, 0.35, 0.25]
    assert verdict.step_verdict(table, "x", ["roofline"])["verdict"] == "mixed"


def write_slowdowns(directory, point, rows):
    out = resultsdir.ResultsDir(directory).sensitivity
    out.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame([{"point": point, **r} for r in rows], columns=sensitivity.SLOWDOWN_COLUMNS)
    resultsdir.write_csv(out / "slowdowns.csv", frame)


def test_roofline_uses_the_sensitivity_of_its_results_directory(tmp_path):
    from test_roofline import results_dir
    # gelu_fwd: 1 GFLOP, 1e9 B (memory side), 10 ms: 100 GB/s... scale to 5% of both roofs
    ops = [("gelu_fwd", "a", 1e8, 1e8), ("matmul_fwd", "b", 1e11, 1e9)]
    d = results_dir(tmp_path / "r", ops, [0.1, 1.25])
    s = rl.analyse(d, tmp_path / "out", figures=False)
    gelu = {r["kernel"]: r for r in s["analyses"][0]["by_kernel"]}["gelu_fwd"]
    assert gelu["verdict"] == verdict.LATENCY and gelu["sensitivity"] is None
    write_slowdowns(d, "seq_gcc_fast_t1_bsNA_kNA",
                    [{"kernel": "gelu_fwd", "mode": "dram", "duty": 0.5, "stolen_GBs": 2.0, "slowdown": 0.5,
                      "low": 0.4, "high": 0.6, "n": 5},
                     {"kernel": "gelu_fwd", "mode": "dram", "duty": 1.0, "stolen_GBs": 4.0, "slowdown": 0.3,
                      "low": 0.2, "high": 0.4, "n": 5}])
    s = rl.analyse(d, tmp_path / "out2", figures=False)
    gelu = {r["kernel"]: r for r in s["analyses"][0]["by_kernel"]}["gelu_fwd"]
    assert gelu["verdict"] == verdict.MEMORY and gelu["decided_by"] == verdict.BY_SENSITIVITY
    assert "+30%" in gelu["why"]  # the highest duty's figure, not the first row's
    assert "bandwidth sensitivity" in s["analyses"][0]["combined"]["line"]


# ------------------------------------------------------------------------------- sensitivity bookkeeping

def test_schedule_is_repetition_major_with_every_condition_once_per_repetition():
    order = sensitivity.schedule(["P", "Q"], [0.5, 1.0], ["dram", "cache"], 3, seed=4)
    conds = sensitivity.conditions([0.5, 1.0], ["dram", "cache"])
    assert conds[0] == (sensitivity.NONE, 0.0) and len(conds) == 5
    assert len(order) == 3 * 2 * 5
    for rep in range(3):
        batch = order[rep * 10:(rep + 1) * 10]
        assert {r[0] for r in batch} == {rep}
        assert sorted((p, m, d) for _, p, m, d in batch) == sorted((p, m, d) for p in "PQ" for m, d in conds)
    assert order == sensitivity.schedule(["P", "Q"], [0.5, 1.0], ["dram", "cache"], 3, seed=4)
    assert len({tuple(order[r * 10:(r + 1) * 10][i][1:] for i in range(10)) for r in range(3)}) > 1  # shuffled


def test_placement_leaves_the_spare_cpus_to_the_thief():
    assert sensitivity.placement([0, 1], 1) == {"step": [0], "thieves": [1]}
    assert sensitivity.placement([0, 1], 2) is None
    assert sensitivity.placement([3, 2, 1, 0], 2) == {"step": [0, 1], "thieves": [2, 3]}


def recorded(slowdown_per_GBs=0.05):
    """Four repetitions of none / dram 0.5 / dram 1.0 with per-repetition baselines (0.9, 1.0, 1.0, 1.1
    s for kernel A), A slowed by exactly slowdown_per_GBs per GB/s stolen, B untouched."""
    rows, times = [], {}
    base = [0.9, 1.0, 1.0, 1.1]
    stolen = {0.0: 0.0, 0.5: 2.0, 1.0: 4.0}
    for rep in range(4):
        for mode, duty in ((sensitivity.NONE, 0.0), ("dram", 0.5), ("dram", 1.0)):
            i = len(rows)
            rows.append({"point": "P", "repetition": rep, "mode": mode, "duty": duty, "stolen_GBs": stolen[duty],
                         "status": "ok"})
            times[i] = {"A": base[rep] * (1 + slowdown_per_GBs * stolen[duty]), "B": 0.5 * base[rep]}
    return pd.DataFrame(rows), times


def test_pairing_levels_and_intervals_on_recorded_timings():
    runs, times = recorded()
    slow, slopes = sensitivity.analyse_runs(runs, times)
    a = slow[slow["kernel"] == "A"].set_index("duty")
    # paired with its own repetition's baseline, the slowdown is exact: a zero-width interval
    assert a.loc[0.5, "slowdown"] == pytest.approx(0.10) and a.loc[1.0, "slowdown"] == pytest.approx(0.20)
    assert a.loc[1.0, "low"] == pytest.approx(0.20) and a.loc[1.0, "high"] == pytest.approx(0.20)
    assert a.loc[1.0, "n"] == 4 and a.loc[1.0, "stolen_GBs"] == pytest.approx(4.0)
    b = slow[slow["kernel"] == "B"]
    assert b["slowdown"].abs().max() < 1e-12
    sa = slopes[slopes["kernel"] == "A"].iloc[0]
    assert sa["slope_per_GBs"] == pytest.approx(0.05) and sa["low"] < 0.05 < sa["high"] and sa["n"] == 12
    sb = slopes[slopes["kernel"] == "B"].iloc[0]
    assert sb["low"] < 0 < sb["high"]


def test_noise_gives_an_interval_and_unpaired_or_failed_runs_are_left_out():
    runs, times = recorded()
    times[4]["A"] *= 1.3               # rep 1, dram 0.5: one noisy repetition widens the interval
    runs.loc[2, "status"] = "crashed"  # rep 0, dram 1.0 failed
    runs.loc[9, "status"] = "crashed"  # rep 3's baseline failed: its pressured runs have no pair
    slow, _ = sensitivity.analyse_runs(runs, times)
    a = slow[slow["kernel"] == "A"].set_index("duty")
    assert a.loc[1.0, "n"] == 2 and a.loc[0.5, "n"] == 3
    assert a.loc[0.5, "low"] < a.loc[0.5, "slowdown"] < a.loc[0.5, "high"]
    assert sensitivity.t_interval([0.2])[1] != sensitivity.t_interval([0.2])[1]  # NaN with one value


def test_kernel_evidence_takes_the_highest_dram_level(tmp_path):
    write_slowdowns(tmp_path, "seq_gcc_fast_t1_bsNA_kNA",
                    [{"kernel": "A", "mode": "dram", "duty": 1.0, "stolen_GBs": 4.0, "slowdown": 0.2, "low": 0.1,
                      "high": 0.3, "n": 4},
                     {"kernel": "A", "mode": "dram", "duty": 0.5, "stolen_GBs": 2.0, "slowdown": 0.1, "low": 0.0,
                      "high": 0.2, "n": 4},
                     {"kernel": "A", "mode": "cache", "duty": 1.0, "stolen_GBs": 6.0, "slowdown": 0.05,
                      "low": 0.0, "high": 0.1, "n": 4}])
    ev = sensitivity.kernel_evidence(tmp_path, "gcc", "fast", 1)
    assert ev["A"]["slowdown"] == 0.2 and ev["A"]["stolen_GBs"] == 4.0 and ev["A"]["cache_slowdown"] == 0.05
    assert sensitivity.kernel_evidence(tmp_path, "gcc", "reference", 1) is None
    assert sensitivity.kernel_evidence(tmp_path / "none", "gcc", "fast", 1) is None


def test_analyse_of_a_bad_sensitivity_directory_is_one_line(tmp_path, capsys):
    out = resultsdir.ResultsDir(tmp_path).sensitivity
    out.mkdir(parents=True)
    (out / "sensitivity.json").write_text(json.dumps({"warmup": 1}))
    (out / "runs.csv").write_text("variant,compiler,kernels,threads,batch_subsize,k,repetition,mode,duty,status,"
                                  "stolen_GBs,trace\nseq,gcc,fast,1,NA,NA,0,turbo,1,ok,1.0,x.csv\n")
    assert cli.main(["sensitivity", "--analyse", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "runs.csv" in err[0] and "turbo" in err[0]


def test_sensitivity_config_keys_are_checked_and_defaults_keep_the_digest(tmp_path):
    base = '[model]\nconfig = "tiny"\nB = 2\nT = 8\n[run]\nsteps = 1\n'
    a, b, c = (tmp_path / d / "study.toml" for d in "abc")  # one name: run.name is the file's stem
    for path in (a, b, c):
        path.parent.mkdir()
    a.write_text(base)
    b.write_text(base + "[analysis]\nsensitivity = false\n[sensitivity]\nlevels = [1.0, 0.5, 0.25]\n")
    c.write_text(base + "[sensitivity]\nlevels = [1.0]\n")
    assert config.load(a).digest() == config.load(b).digest() != config.load(c).digest()
    assert config.load(c).sensitivity["levels"] == [1.0]
    for bad, key in (("levels = [0.0]", "sensitivity.levels"), ("levels = [1.5]", "sensitivity.levels"),
                     ('modes = ["l2"]', "sensitivity.modes")):
        c.write_text(base + f"[sensitivity]\n{bad}\n")
        with pytest.raises(StudyError, match=key.replace(".", r"\.")):
            config.load(c)


# ------------------------------------------------------------------------------- the thief

THIEF = REPO / "build" / "probes" / "thief"
STREAM = REPO / "build" / "probes" / "stream"


@pytest.fixture(scope="module")
def bench_bins():
    proc = subprocess.run(["nice", "make", "-s", "-f", "probes/Makefile.probes", str(THIEF.relative_to(REPO)),
                           str(STREAM.relative_to(REPO))], cwd=REPO, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return THIEF, STREAM


def test_the_thief_consumes_bandwidth_within_a_factor_of_stream(bench_bins):
    thief, stream = bench_bins
    out = subprocess.run([str(thief), "--duty", "1", "--seconds", "0.6"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr.strip() == "ready"
    report = json.loads(out.stdout)
    assert report["mode"] == "dram" and report["buffer_bytes"] >= 4 * report["llc_bytes"]
    ref = json.loads(subprocess.run([str(stream), "--threads", "1", "--reps", "3", "--json"], capture_output=True,
                                    text=True, timeout=120).stdout.strip().splitlines()[-1])
    assert ref["triad_GBs"] / 4 <= report["GBs"] <= ref["triad_GBs"] * 4, (report, ref["triad_GBs"])
    assert report["bytes"] == pytest.approx(report["GBs"] * 1e9 * report["seconds"], rel=1e-3)


def test_the_thief_stops_on_sigterm_and_reports(bench_bins):
    thief, _ = bench_bins
    procs = sensitivity.start_thieves(thief, "cache", 0.5, [sorted(os.sched_getaffinity(0))[-1]])
    reports = sensitivity.stop_thieves(procs)
    assert reports[0]["mode"] == "cache" and reports[0]["duty"] == 0.5 and reports[0]["bytes"] > 0
    assert reports[0]["buffer_bytes"] < reports[0]["llc_bytes"]


@pytest.mark.parametrize("argv,fragment", [(["--duty", "2"], "--duty"), (["--mode", "l2"], "--mode"),
                                           (["--bogus", "1"], "--bogus"), (["--seconds"], "--seconds")])
def test_the_thief_refuses_bad_options_in_one_line(bench_bins, argv, fragment):
    thief, _ = bench_bins
    out = subprocess.run([str(thief), *argv], capture_output=True, text=True, timeout=10)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and fragment in out.stderr


# ------------------------------------------------------------------------------- another core's data

CROSSCORE = REPO / "build" / "bench" / "crosscore"


@pytest.fixture(scope="module")
def crosscore():
    proc = subprocess.run(["nice", "make", "-s", "-f", "bench/Makefile.bench", str(CROSSCORE.relative_to(REPO))],
                          cwd=REPO, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return CROSSCORE


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_crosscore_reports_both_passes_per_size(crosscore):
    # figures only (this machine is shared): both passes measured at every size, on two CPUs
    out = subprocess.run([str(crosscore), "--kib", "64", "--kib", "128", "--rounds", "20", "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["writer_cpu"] != report["reader_cpu"] and report["rounds"] == 20
    assert [s["kib"] for s in report["sizes"]] == [64, 128]
    assert all(s["other_core_GBs"] > 0 and s["own_cache_GBs"] > 0 for s in report["sizes"])


@pytest.mark.parametrize("argv,fragment", [(["--kib", "3"], "--kib"), (["--rounds", "5"], "--rounds"),
                                           (["--writer-cpu", "0"], "--writer-cpu"), (["--bogus", "1"], "--bogus"),
                                           (["--writer-cpu", "0", "--reader-cpu", "0"], "--writer-cpu"),
                                           (["--kib"], "--kib")])
def test_crosscore_refuses_bad_options_in_one_line(crosscore, argv, fragment):
    out = subprocess.run([str(crosscore), *argv], capture_output=True, text=True, timeout=10)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and fragment in out.stderr


def test_crosscore_on_one_cpu_says_so(crosscore):
    out = subprocess.run(["taskset", "-c", str(sorted(os.sched_getaffinity(0))[0]), str(crosscore)],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 2
    assert out.stderr.strip() == "crosscore: cpus: needs two CPUs to run on, this process may use one"


# ------------------------------------------------------------------------------- simulated traffic

def fake_sysfs(root, caches):
    for i, (level, kind, size, ways, line) in enumerate(caches):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size), ("ways_of_associativity", ways),
                            ("coherency_line_size", line)):
            (d / name).write_text(f"{value}\n")
    return root


def test_geometry_from_sysfs_and_a_size_valgrind_cannot_simulate(tmp_path):
    geo = cachesim.geometry(fake_sysfs(tmp_path / "a", [(1, "Data", "32K", 8, 64), (1, "Instruction", "32K", 8, 64),
                                                        (2, "Unified", "1024K", 8, 64),
                                                        (3, "Unified", "32768K", 16, 64)]))
    assert geo["LL"]["size"] == 32 << 20 and geo["LL"]["level"] == 3 and geo["D1"]["assoc"] == 8
    assert "--LL=33554432,16,64" in cachesim.valgrind_options(geo)
    with pytest.raises(StudyError, match="power of two"):
        cachesim.geometry(fake_sysfs(tmp_path / "b", [(1, "Data", "48K", 12, 64), (1, "Instruction", "32K", 8, 64),
                                                      (3, "Unified", "30M", 12, 64)]))
    with pytest.raises(StudyError, match="no LL") as err:
        cachesim.geometry(fake_sysfs(tmp_path / "c", [(1, "Data", "32K", 8, 64), (1, "Instruction", "32K", 8, 64)]))
    assert "[cachesim] caches" in str(err.value)


def test_caches_given_in_the_config_replace_or_complete_sysfs(tmp_path):
    # a machine whose sysfs describes nothing: every level from the config
    geo = cachesim.geometry(tmp_path / "empty", "I1=32768,8,64 D1=49152,12,64 LL=33554432,16,64")
    assert cachesim.valgrind_options(geo) == ["--I1=32768,8,64", "--D1=49152,12,64", "--LL=33554432,16,64"]
    assert geo["D1"]["source"] == "[cachesim] caches"
    # one level given, the others from sysfs
    sysfs = fake_sysfs(tmp_path / "a", [(1, "Data", "32K", 8, 64), (1, "Instruction", "32K", 8, 64),
                                        (3, "Unified", "508M", 1, 64)])
    geo = cachesim.geometry(sysfs, "LL=33554432,16,64")
    assert geo["LL"]["size"] == 32 << 20 and geo["D1"]["source"].endswith("index0")
    for bad, fragment in (("L2=1,1,64", "NAME=size,ways,line"), ("D1=48K,12,64", "NAME=size,ways,line"),
                          ("D1=0,12,64", "positive"), ("LL=1,1,64 LL=2,1,64", "twice")):
        with pytest.raises(StudyError, match=r"\[cachesim\] caches") as err:
            cachesim.geometry(sysfs, bad)
        assert fragment in str(err.value)
    with pytest.raises(StudyError, match="power of two"):
        cachesim.geometry(tmp_path / "empty", "I1=32768,8,64 D1=49152,12,64 LL=31457280,12,64")


CALLGRIND = """version: 1
creator: callgrind-3.19.0
desc: LL cache: 33554432 B, 64 B, 16-way associative
positions: line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw ILdmr DLdmr DLdmw
summary: 1000 500 100 0 50 10 0 20 10 0 5 3

fn=(1) main
10 5 1
cfn=(2) matmul_forward_block
calls=1 5
12 700 300 50 0 40 8 0 16 8 0 4 2
fn=(2)
5 100 40 10 0 4 1 0 2 1 0 1 0
cfn=(3) gemm_kernel
calls=4 9
+1 600 260 40 0 36 7 0 14 7 0 3 2
fn=(3)
9 600 260 40 0 36 7 0 14 7 0 3 2
fn=(4) adamw_update
*  200 100 40 0 4 1 0 2 1
totals: 1000 500 100 0 50 10 0 20 10 0 5 3
"""


def test_callgrind_costs_are_inclusive_and_mapped_to_kernels(tmp_path):
    path = tmp_path / "cg.out"
    path.write_text(CALLGRIND)
    functions, totals = cachesim.parse(path)
    assert totals["Ir"] == 1000 and totals["DLdmw"] == 3
    assert functions["matmul_forward_block"]["Ir"] == 700 and functions["matmul_forward_block"]["DLmr"] == 16
    assert functions["adamw_update"]["DLdmr"] == 0  # missing trailing counts are zero
    assert cachesim.line_size(path) == 64
    rows = {r["kernel"]: r for r in cachesim.kernel_table(functions, 64, 2, {"matmul_fwd": 640, "adamw": 96})}
    # (16 + 8 + 4 + 2) lines x 64 B over 2 steps
    assert rows["matmul_fwd"]["simulated_bytes"] == 30 * 64 / 2 and rows["matmul_fwd"]["ratio"] == 1.5
    assert rows["adamw"]["simulated_bytes"] == 3 * 64 / 2 and set(rows) == {"matmul_fwd", "adamw"}


@pytest.mark.parametrize("text,fragment", [
    ("", "no 'events:' line"),
    (CALLGRIND.replace(" ILdmr DLdmr DLdmw", "").replace("\ntotals", "\nsummary"), "simulate-wb"),
    (CALLGRIND.split("totals:")[0].replace("summary: 1000 500 100 0 50 10 0 20 10 0 5 3\n", ""), "totals"),
    (CALLGRIND.replace("fn=(2)\n", "fn=(7)\n"), "(7)"),
    (CALLGRIND.replace("12 700", "12 x700"), "cost"),
])
def test_bad_callgrind_output_names_the_file(tmp_path, text, fragment):
    path = tmp_path / "cg.out"
    path.write_text(text)
    with pytest.raises(StudyError, match=r"cg\.out") as err:
        cachesim.parse(path)
    assert fragment in str(err.value)


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_a_real_simulation_on_the_tiny_model(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[model]\nconfig = "tiny"\nB = 1\nT = 8\n[run]\nsteps = 1\n[sweep]\nkernels = ["fast"]\n'
                   '[cachesim]\nconfig = "tiny"\nB = 1\nT = 8\nsteps = 1\n'
                   # given, not read from sysfs: some VMs describe no caches there
                   'caches = "I1=32768,8,64 D1=32768,8,64 LL=33554432,16,64"\n')
    out = tmp_path / "r"
    out.mkdir()
    assert cli.main(["cachesim", str(cfg), "--into", str(out)]) == 0
    table = cachesim.read_table(out, "gcc", "fast")
    # every kernel of the simulated step (the sequential variant: no pack operations, which only the
    # chunked variants' steps have; comm: MPI only)
    assert set(table["kernel"]) == {k for k, fns in cachesim.KERNEL_FUNCTIONS.items()
                                    if fns and not k.startswith("pack_weight")}
    big = table.set_index("kernel").loc[["matmul_fwd", "adamw"]]
    assert (big["Dr"] > 0).all() and (big["simulated_bytes"] > 0).all() and (big["compulsory_bytes"] > 0).all()
    meta = cachesim.read_meta(out)
    assert meta["geometry"]["LL"]["source"] == "[cachesim] caches" and "AVX2" in meta["build"]
    # the binary simulated is compiled for AVX2+FMA, never -march=native (valgrind 3.19 cannot decode
    # AVX-512): every command of its rule, as make would run them afresh
    dry = subprocess.run(["make", "-n", "-B", cachesim.binary_target("gcc", "fast")], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    compiles = [line for line in dry.stdout.splitlines() if line.startswith("gcc ")]
    assert dry.returncode == 0 and compiles, dry.stderr
    assert all("-mavx2 -mfma" in line and "-march=native" not in line for line in compiles), compiles
    assert (resultsdir.ResultsDir(out).cachesim / "cachesim_ratio.png").read_bytes()[:4] == b"\x89PNG"
    ev = cachesim.kernel_evidence(out, "gcc", "fast")
    assert "simulated" in ev["adamw"]["note"] and ev["adamw"]["ratio"] > 0
