"""pstudy.roofline on synthetic results directories: classification across the ridge, the
arithmetic of times, shares and rates, the figures (pstudy.show.rooflinefigures), the counters
hook and bad input."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pstudy import cli
from pstudy.analyse import roofline as rl
from pstudy.show import rooflinefigures

REPO = Path(__file__).resolve().parents[2]
COUNTERS_DATA = REPO / "tests" / "data" / "counters"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HEADER = "iteration,op,kernel,layer,phase,label,b0,b1,x0,x1,thread,start_s,end_s\n"


def ceilings(peak=(100.0, 200.0), triad=(20.0, 30.0), copy=(25.0, 35.0)):
    """Two thread counts; ridge 100/20 = 5 FLOP/B at 1 thread, 200/30 at 2."""
    per = []
    for i, threads in enumerate((1, 2)):
        per.append({"threads": threads,
                    "stream_GBs": {"copy": copy[i], "scale": copy[i], "add": triad[i], "triad": triad[i]},
                    "peak_gflops": {"avx2": peak[i], "scalar": peak[i] / 8},
                    "best_isa": "avx2", "best_gflops": peak[i], "cpu_steal_fraction": 0.0})
    return {"schema": "pstudy-ceilings/1", "date": "2025-03-04T10:12:31Z",
            "host": {"hostname": "test", "cpu_model": "synthetic", "logical_cpus": 2},
            "environment": {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"},
            "source": {"stream": {"binary": "stream"}, "peakflops": {"binary": "peakflops"}},
            "per_threads": per}


def write_ops(path, ops):
    """ops: [(kernel, label, flops, bytes)] numbered from 0."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"info": {"variant": "synthetic"}})]
    for i, (kernel, label, flops, nbytes) in enumerate(ops):
        lines.append(json.dumps({"op": i, "kernel": kernel, "label": label, "layer": -1, "phase": "forward",
                                 "split": "rows", "flops": flops, "bytes": nbytes,
                                 "intensity": flops / nbytes if nbytes else 0}))
    path.write_text("\n".join(lines) + "\n")


def write_trace(path, chunks):
    """chunks: [(iteration, op, kernel, thread, start, end)]."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [f"{it},{op},{kernel},-1,forward,{kernel} x,0,1,0,1,{thread},{start:.9f},{end:.9f}\n"
            for it, op, kernel, thread, start, end in chunks]
    path.write_text(HEADER + "".join(rows))


def sequential_chunks(ops, durations, iterations, warmup_slow=True):
    """One chunk per op, back to back; iteration 0 is 100x slower (a warm-up the analysis must skip)."""
    chunks, t = [], 0.0
    for it in range(iterations):
        for op, (kernel, d) in enumerate(zip([o[0] for o in ops], durations)):
            d = d * (100 if it == 0 and warmup_slow else 1)
            chunks.append((it, op, kernel, 0, t, t + d))
            t += d
    return chunks


def results_dir(tmp, ops, durations, variant="seq", threads=1, reps=1, meta=None, ceil=None):
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "ceilings.json").write_text(json.dumps(ceil or ceilings()))
    write_ops(tmp / "ops" / f"{variant}_gcc_fast.json", ops)
    for rep in range(reps):
        write_trace(tmp / "traces" / f"{variant}_gcc_fast_t{threads}_bsNA_kNA_r{rep}.csv",
                    sequential_chunks(ops, durations, 3))
    if meta is not None:
        (tmp / "meta.json").write_text(json.dumps(meta))
    return tmp


@pytest.mark.parametrize("intensity,bound", [(4.9, "memory"), (5.1, "compute"), (0.25, "memory"),
                                             (50.0, "compute")])
def test_bound_follows_ridge(tmp_path, intensity, bound):
    # 1e9 bytes per call; ridge at 1 thread is 100 GFLOP/s / 20 GB/s = 5 FLOP/B
    ops = [("kern", "kern a", int(intensity * 1e9), 10**9), ("other", "other", 10**6, 10**6)]
    d = results_dir(tmp_path / "r", ops, [0.2, 0.01])
    summary = rl.analyse(d, tmp_path / "out", at=[("seq", 1)], figures=False)
    (a,) = summary["analyses"]
    kern = {k["kernel"]: k for k in a["by_kernel"]}["kern"]
    assert kern["bound"] == bound
    assert a["ridge"] == pytest.approx(5.0)
    assert kern["intensity"] == pytest.approx(intensity)
    # fraction of the relevant ceiling: GB/s over triad when memory bound, GFLOP/s over peak otherwise
    if bound == "memory":
        assert kern["fraction_of_ceiling"] == pytest.approx((1e9 / 0.2 / 1e9) / 20.0)
    else:
        assert kern["fraction_of_ceiling"] == pytest.approx((intensity * 1e9 / 0.2 / 1e9) / 100.0)


def test_ridge_moves_with_threads(tmp_path):
    # intensity 6: compute bound at 1 thread (ridge 5), memory bound at 2 (ridge 200/30 = 6.67)
    ops = [("kern", "kern a", 6 * 10**9, 10**9)]
    d = results_dir(tmp_path / "r", ops, [0.5])
    write_trace(d / "traces" / "forkjoin_gcc_fast_t2_bsNA_kNA_r0.csv", sequential_chunks(ops, [0.3], 3))
    write_ops(d / "ops" / "forkjoin_gcc_fast.json", ops)
    summary = rl.analyse(d, tmp_path / "out", figures=False)
    by = {(a["variant"], a["threads"]): a for a in summary["analyses"]}
    assert set(by) == {("seq", 1), ("forkjoin", 2)}
    assert by[("seq", 1)]["by_kernel"][0]["bound"] == "compute"
    assert by[("forkjoin", 2)]["by_kernel"][0]["bound"] == "memory"
    assert by[("forkjoin", 2)]["ridge"] == pytest.approx(200 / 30)


def test_times_shares_and_rates(tmp_path):
    # kernel a: two ops (layers); kernel b: one op. Two repetitions, iterations 0 (warm-up), 1, 2.
    ops = [("a", "a L0", 2 * 10**9, 4 * 10**8), ("a", "a L1", 2 * 10**9, 4 * 10**8), ("b", "b", 10**8, 10**9)]
    d = tmp_path / "r"
    d.mkdir()
    (d / "ceilings.json").write_text(json.dumps(ceilings()))
    write_ops(d / "ops" / "forkjoin_gcc_fast.json", ops)
    # spans (op 0 has two chunks on two threads: its span runs from the first start to the last end)
    spans = {0: {1: [0.10, 0.30], 2: [0.20, 0.20]},   # (rep 0, rep 1) per iteration -> median 0.2
             1: {1: [0.10, 0.10], 2: [0.10, 0.40]},   # median 0.1
             2: {1: [0.50, 0.70], 2: [0.60, 0.60]}}   # median 0.6
    for rep in range(2):
        chunks, t = [], 0.0
        for it in range(3):
            for op, (kernel, *_ ) in enumerate(ops):
                s = 9.0 if it == 0 else spans[op][it][rep]
                if op == 0:  # two threads: thread 1 starts later and ends last
                    chunks.append((it, op, kernel, 0, t, t + s / 2))
                    chunks.append((it, op, kernel, 1, t + 0.01, t + s))
                else:
                    chunks.append((it, op, kernel, 0, t, t + s))
                t += s
        write_trace(d / "traces" / f"forkjoin_gcc_fast_t2_bsNA_kNA_r{rep}.csv", chunks)
    summary = rl.analyse(d, tmp_path / "out", at=[("forkjoin", 2)], figures=False)
    (a,) = summary["analyses"]
    assert a["reps"] == 2 and a["samples_per_op"] == 4  # 2 kept iterations x 2 repetitions
    k = {r["kernel"]: r for r in a["by_kernel"]}
    assert k["a"]["time_s"] == pytest.approx(0.3) and k["b"]["time_s"] == pytest.approx(0.6)
    assert k["a"]["share"] == pytest.approx(1 / 3) and k["b"]["share"] == pytest.approx(2 / 3)
    assert k["a"]["ops"] == 2
    assert k["a"]["intensity"] == pytest.approx(4e9 / 8e8)
    assert k["a"]["gflops"] == pytest.approx(4.0 / 0.3)
    assert k["a"]["gbs"] == pytest.approx(0.8 / 0.3)
    assert k["b"]["gbs"] == pytest.approx(1.0 / 0.6)
    # ridge at 2 threads is 200/30: a (intensity 5) and b (0.1) are memory bound, the whole step too
    assert k["a"]["bound"] == "memory" and k["b"]["bound"] == "memory"
    assert a["memory_share"] == pytest.approx(1.0) and a["memory_bound"]
    assert a["aggregate_intensity"] == pytest.approx(4.1e9 / 1.8e9)
    assert a["step_gflops"] == pytest.approx(4.1 / 0.9)
    # tables on disk hold the same numbers
    table = pd.read_csv(a["kernel_table"]).set_index("kernel")
    assert table.loc["b", "time_s"] == pytest.approx(0.6)
    per_op = pd.read_csv(a["op_table"]).set_index("op")
    assert per_op.loc[0, "time_s"] == pytest.approx(0.2) and per_op.loc[1, "time_s"] == pytest.approx(0.1)


def test_an_operation_interleaved_with_others_counts_only_while_its_chunks_run(tmp_path):
    # taskiter spreads an update's chunks over the next forward pass: its time is the union of its
    # chunks' intervals, not first start to last end (which covered most of the step and read as
    # 1.3 GFLOP/s AdamW, a latency-bound step, on the small model at 2 threads)
    ops = [("dense", "dense", 100 * 10**9, 10**9), ("update", "update", 10**8, 10**9)]
    d = tmp_path / "r"
    d.mkdir()
    (d / "ceilings.json").write_text(json.dumps(ceilings()))
    write_ops(d / "ops" / "taskiter_gcc_fast.json", ops)
    chunks, t = [], 0.0
    for it in range(3):
        # update chunks of 0.05 s at the start, in the middle and at the end of 1 s of dense work,
        # on thread 1; the dense work on thread 0, and a second update chunk beside the first
        chunks += [(it, 0, "dense", 0, t, t + 1.0), (it, 1, "update", 1, t, t + 0.05),
                   (it, 1, "update", 0, t + 1.0, t + 1.02), (it, 1, "update", 1, t + 0.01, t + 0.04),
                   (it, 1, "update", 1, t + 0.5, t + 0.55), (it, 1, "update", 1, t + 0.95, t + 1.0)]
        t += 1.02
    write_trace(d / "traces" / "taskiter_gcc_fast_t2_bs4_k64_r0.csv", chunks)
    (a,) = rl.analyse(d, tmp_path / "out", at=[("taskiter", 2)], figures=False)["analyses"]
    k = {r["kernel"]: r for r in a["by_kernel"]}
    assert k["update"]["time_s"] == pytest.approx(0.17) and k["dense"]["time_s"] == pytest.approx(1.0)
    assert k["update"]["share"] == pytest.approx(0.17 / 1.17)


def test_step_verdict_rule(tmp_path):
    # a memory-bound kernel taking 60% of the time makes the step memory bound even though the
    # aggregate intensity (mostly the dense kernel's work) is far above the ridge
    ops = [("dense", "dense", 100 * 10**9, 10**9), ("stream", "stream", 10**8, 10**9)]
    d = results_dir(tmp_path / "r", ops, [0.4, 0.6])
    (a,) = rl.analyse(d, tmp_path / "out", at=[("seq", 1)], figures=False)["analyses"]
    assert a["memory_share"] == pytest.approx(0.6) and a["memory_bound"]
    assert a["intensity_says"] == "compute"
    assert "memory-bound kernels take 60% of the step" in a["line"] and a["line"].count("memory bound (rule")
    # and 40% makes it compute bound
    d2 = results_dir(tmp_path / "r2", ops, [0.6, 0.4])
    (b,) = rl.analyse(d2, tmp_path / "out2", at=[("seq", 1)], figures=False)["analyses"]
    assert b["memory_share"] == pytest.approx(0.4) and not b["memory_bound"]
    assert ": compute bound (rule" in b["line"]


def test_warmup_from_meta(tmp_path):
    ops = [("k", "k", 10**9, 10**9)]
    d = tmp_path / "r"
    d.mkdir()
    (d / "ceilings.json").write_text(json.dumps(ceilings()))
    write_ops(d / "ops" / "seq_gcc_fast.json", ops)
    write_trace(d / "traces" / "seq_gcc_fast_t1_bsNA_kNA_r0.csv",
                [(0, 0, "k", 0, 0.0, 5.0), (1, 0, "k", 0, 5.0, 7.0), (2, 0, "k", 0, 7.0, 7.5)])
    k = rl.analyse(d, tmp_path / "o1", at=[("seq", 1)], figures=False)["analyses"][0]["by_kernel"][0]
    assert k["time_s"] == pytest.approx(1.25)  # iteration 0 skipped without meta.json
    (d / "meta.json").write_text(json.dumps({"config": {"run": {"warmup": 2}}}))
    k = rl.analyse(d, tmp_path / "o2", at=[("seq", 1)], figures=False)["analyses"][0]["by_kernel"][0]
    assert k["time_s"] == pytest.approx(0.5)
    (d / "meta.json").write_text(json.dumps({"config": {"run": {"warmup": 0}}}))
    k = rl.analyse(d, tmp_path / "o3", at=[("seq", 1)], figures=False)["analyses"][0]["by_kernel"][0]
    assert k["time_s"] == pytest.approx(2.0)


def test_figures_are_png(tmp_path):
    ops = [("load_batch", "load", 0, 2048), ("matmul_fwd", "mm", 10**10, 10**8), ("gelu_fwd", "g", 10**7, 10**8)]
    d = results_dir(tmp_path / "r", ops, [0.001, 0.5, 0.05])
    write_ops(d / "ops" / "forkjoin_gcc_fast.json", ops)
    write_trace(d / "traces" / "forkjoin_gcc_fast_t2_bsNA_kNA_r0.csv", sequential_chunks(ops, [0.001, 0.3, 0.03], 3))
    summary = rl.analyse(d, tmp_path / "out")
    paths = [a["figure"] for a in summary["analyses"]] + [summary["bandwidth_figure"]]
    assert len(paths) == 3
    assert [str(p) for p in rooflinefigures.draw(summary)] == paths
    for p in paths:
        data = Path(p).read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 10_000, p
    verdicts = (tmp_path / "out" / "roofline_verdict.txt").read_text().split("\n\n", 1)
    assert verdicts[0].count("\n") == 3  # first, per analysis: the roofline's line and the combined verdict
    assert verdicts[1].count("== ") == 2 and "gelu_fwd: " in verdicts[1]  # then each kernel's verdict and why
    assert json.loads((tmp_path / "out" / "roofline.json").read_text())["rule"] == rl.STEP_RULE


def test_main_prints_table_and_verdict(tmp_path, capsys):
    ops = [("matmul_fwd", "mm", 10**10, 10**8), ("gelu_fwd", "g", 10**7, 10**8)]
    d = results_dir(tmp_path / "r", ops, [0.5, 0.05])
    assert cli.main(["roofline", str(d), "--out", str(tmp_path / "out"), "--at", "seq:1"]) == 0
    out = capsys.readouterr().out
    assert "matmul_fwd" in out and "compute" in out and "memory" in out
    assert "memory-bound kernels take 9% of the step" in out  # 0.05 / 0.55
    assert rl.MODEL_NOTE in json.dumps(json.loads((tmp_path / "out" / "roofline.json").read_text()))


def test_counters_replace_model_bytes(tmp_path):
    ops = [("matmul_fwd", "mm", 10**10, 10**8), ("layernorm_fwd", "ln", 10**7, 10**8), ("gelu_fwd", "g", 10**7, 10**8)]
    d = results_dir(tmp_path / "r", ops, [0.5, 0.05, 0.05], threads=2, variant="forkjoin")
    (d / "counters").mkdir()
    for group in ("mem1", "mem2"):
        shutil.copy(COUNTERS_DATA / f"zen3_{group}_2regions_2threads.csv",
                    d / "counters" / f"forkjoin_gcc_fast_t2_bsNA_kNA_r0.{group.upper()}.csv")
    (a,) = rl.analyse(d, tmp_path / "out", at=[("forkjoin", 2)], figures=False)["analyses"]
    k = {r["kernel"]: r for r in a["by_kernel"]}
    # MEM1 + MEM2 volumes of the recorded files over the run's 3 steps
    assert k["matmul_fwd"]["bytes_source"] == "counters"
    assert k["matmul_fwd"]["bytes"] == pytest.approx((1.6139 + 1.6140) * 1e9 / 3)
    assert k["layernorm_fwd"]["bytes"] == pytest.approx((0.9984 + 0.9984) * 1e9 / 3)
    assert k["gelu_fwd"]["bytes_source"] == "model" and k["gelu_fwd"]["bytes"] == 10**8
    assert "likwid" in a["bytes_source"] and "layernorm_fwd, matmul_fwd" in a["bytes_source"]


def test_counters_with_one_channel_group_is_an_error(tmp_path, capsys):
    ops = [("matmul_fwd", "mm", 10**10, 10**8)]
    d = results_dir(tmp_path / "r", ops, [0.5], threads=2, variant="forkjoin")
    (d / "counters").mkdir()
    shutil.copy(COUNTERS_DATA / "zen3_mem1_2regions_2threads.csv",
                d / "counters" / "forkjoin_gcc_fast_t2_bsNA_kNA_r0.MEM1.csv")
    assert cli.main(["roofline", str(d), "--at", "forkjoin:2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "counters" in err and "MEM1 and MEM2" in err


# ---------------------------------------------------------------- bad input: exit 2, one line naming the file

def good(tmp_path):
    return results_dir(tmp_path / "r", [("k", "k", 10**9, 10**9)], [0.1])


def expect_error(argv, capsys, *fragments):
    assert cli.main(["roofline"] + [str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    for f in fragments:
        assert f in err, err
    return err


def test_missing_ceilings(tmp_path, capsys):
    d = good(tmp_path)
    (d / "ceilings.json").unlink()
    expect_error([d], capsys, str(d / "ceilings.json"), "not found")


def test_bad_ceilings(tmp_path, capsys):
    d = good(tmp_path)
    (d / "ceilings.json").write_text("{")
    expect_error([d], capsys, str(d / "ceilings.json"), "not JSON")


def test_ceilings_without_thread_count(tmp_path, capsys):
    d = good(tmp_path)
    write_trace(d / "traces" / "forkjoin_gcc_fast_t8_bsNA_kNA_r0.csv", sequential_chunks([("k",)], [0.1], 3))
    write_ops(d / "ops" / "forkjoin_gcc_fast.json", [("k", "k", 10**9, 10**9)])
    expect_error([d], capsys, "ceilings.json", "8 threads")


def test_missing_ops_file(tmp_path, capsys):
    d = good(tmp_path)
    (d / "ops" / "seq_gcc_fast.json").unlink()
    expect_error([d], capsys, str(d / "ops" / "seq_gcc_fast.json"), "not found")


def test_bad_ops_line(tmp_path, capsys):
    d = good(tmp_path)
    (d / "ops" / "seq_gcc_fast.json").write_text('{"op": 0, "kernel": "k"}\n')
    expect_error([d], capsys, "seq_gcc_fast.json:1", "flops")


def test_trace_missing_column(tmp_path, capsys):
    d = good(tmp_path)
    path = d / "traces" / "seq_gcc_fast_t1_bsNA_kNA_r0.csv"
    path.write_text("iteration,op,kernel\n0,0,k\n")
    expect_error([d], capsys, str(path), "start_s")


def test_trace_empty_file(tmp_path, capsys):
    d = good(tmp_path)
    path = d / "traces" / "seq_gcc_fast_t1_bsNA_kNA_r0.csv"
    path.write_text("")
    expect_error([d], capsys, str(path))


def test_trace_bad_name(tmp_path, capsys):
    d = good(tmp_path)
    path = d / "traces" / "seq-gcc.csv"
    path.write_text(HEADER)
    expect_error([d], capsys, str(path), "name")


def test_trace_op_not_described(tmp_path, capsys):
    d = good(tmp_path)
    path = d / "traces" / "seq_gcc_fast_t1_bsNA_kNA_r0.csv"
    write_trace(path, [(1, 5, "k", 0, 0.0, 1.0)])
    expect_error([d], capsys, str(path), "op 5", "seq_gcc_fast.json")


def test_trace_kernel_mismatch(tmp_path, capsys):
    d = good(tmp_path)
    path = d / "traces" / "seq_gcc_fast_t1_bsNA_kNA_r0.csv"
    write_trace(path, [(1, 0, "matmul_fwd", 0, 0.0, 1.0)])
    expect_error([d], capsys, str(path), "matmul_fwd", "same model")


def test_only_warmup_iterations(tmp_path, capsys):
    d = good(tmp_path)
    (d / "meta.json").write_text(json.dumps({"config": {"run": {"warmup": 5}}}))
    expect_error([d], capsys, "seq_gcc_fast_t1_bsNA_kNA_r0.csv", "warm-up")


def test_bad_meta(tmp_path, capsys):
    d = good(tmp_path)
    (d / "meta.json").write_text(json.dumps({"config": {"run": {"warmup": "two"}}}))
    expect_error([d], capsys, str(d / "meta.json"), "warmup")


def test_missing_traces_dir(tmp_path, capsys):
    d = good(tmp_path)
    shutil.rmtree(d / "traces")
    expect_error([d], capsys, str(d / "traces"), "not found")


def test_bad_at_option(tmp_path, capsys):
    expect_error([good(tmp_path), "--at", "seq"], capsys, "--at")


# ---------------------------------------------------------------------------------------------
# a real sweep whose chunkings describe different steps

REAL_BUILD = REPO / "build" / "gcc" / "fast"
WHOLE_AND_CUT_ROWS = """
[model]
config = "tiny"
B = 2
T = 32
[run]
steps = 2
warmup = 1
repetitions = 1
timeout_s = 60
[sweep]
variants = ["seq", "tasks", "taskiter"]
compilers = ["gcc"]
kernels = ["fast"]
threads = [1, 2]
batch_subsize = [1, 2]
token_chunk = [32]
[analysis]
trace = true
ceilings = false
roofline = true
"""


@pytest.mark.skipif(not (REAL_BUILD / "gpt2-tasks").exists(), reason="not built (make)")
def test_roofline_of_a_sweep_whose_chunkings_pack_and_do_not(tmp_path):
    """The task variants describe a step with pack operations only where the chunking cuts the rows
    (BATCH_SUBSIZE 1 of 2), not where every row is in one chunk (BATCH_SUBSIZE 2): each point's trace
    is analysed against its own step (ops/<point stem>.json where it differs from the binary's), and
    the roofline is not skipped, as it was with one description per binary."""
    import subprocess
    from pstudy.store import resultsdir, traceformats
    cfg = tmp_path / "packs.toml"
    cfg.write_text(WHOLE_AND_CUT_ROWS)
    perfstudy = [str(REPO / "harness" / "perfstudy")]
    run = subprocess.run(perfstudy + ["run", str(cfg), "--results-root", str(tmp_path / "results"), "--no-summary"],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert run.returncode == 0, run.stderr
    directory = resultsdir.ResultsDir(run.stdout.strip().splitlines()[-1])
    packing = {}
    for path, key, _rep in directory.traces():
        in_trace = traceformats.read_chunks(path)["kernel"].str.startswith("pack_weight").any()
        described = '"pack_weight' in directory.ops(key.variant, key.compiler, key.kernels, point=key).read_text()
        assert in_trace == described, (path.name, directory.ops(key.variant, key.compiler, key.kernels, point=key).name)
        packing[path.name] = in_trace
    assert any(packing.values()) and not all(packing.values()), packing
    (Path(directory) / "ceilings.json").write_text(json.dumps(ceilings()))
    report = subprocess.run(perfstudy + ["roofline", str(directory)], capture_output=True, text=True, timeout=300,
                            cwd=REPO)
    assert report.returncode == 0, report.stderr
