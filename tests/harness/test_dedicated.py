"""CPU time beside wall time: the traces' cpu_s, the runs' steal time and involuntary context
switches, `predict --dedicated` (chunks at their CPU time), `--against` another results directory,
and the prediction intervals, on a real sweep of the tiny model (build/gcc/fast/gpt2-*)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import warm_perfstudy

REPO = Path(__file__).resolve().parents[2]
PERFSTUDY = REPO / "harness" / "perfstudy"
BUILD = REPO / "build" / "gcc" / "fast"
sys.path.insert(0, str(REPO / "harness"))

from pstudy.analyse import prediction  # noqa: E402
from pstudy.errors import StudyError  # noqa: E402
from pstudy.store import traceformats  # noqa: E402

VARIANTS = [v for v in ("seq", "forkjoin", "taskiter") if (BUILD / f"gpt2-{v}").exists()]
pytestmark = pytest.mark.skipif(len(VARIANTS) < 3, reason="no built binaries (make)")

CONFIG = """
[model]
config = "tiny"
B = 4
T = 64

[run]
steps = 4
warmup = 1
repetitions = 1
timeout_s = 60

[sweep]
variants = {variants}
compilers = ["gcc"]
kernels = ["fast"]
threads = [1, 2]
batch_subsize = [2]
token_chunk = [32]

[analysis]
trace = true
ceilings = false
roofline = false
"""

MACHINE = """name = "here"
measured = false
cores = 2
peak_gflops_per_core = 20
bandwidth_cores = [1, 2]
bandwidth_GBs = [10, 15]
"""


def perfstudy(*args):
    return warm_perfstudy.perfstudy(*args, timeout=300, cwd=REPO)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dedicated")
    cfg = tmp / "tiny-dedicated.toml"
    cfg.write_text(CONFIG.format(variants=json.dumps(VARIANTS)))
    proc = perfstudy("run", cfg, "--results-root", tmp / "results", "--no-summary")
    assert proc.returncode == 0, proc.stderr
    directory = Path(proc.stdout.strip().splitlines()[-1])
    here = tmp / "here.toml"
    here.write_text(MACHINE)
    return directory, here, tmp


def copy(directory, where):
    shutil.copytree(directory, where, ignore=shutil.ignore_patterns("graphs", "predict-*"))
    return where


def test_traces_have_cpu_times_within_their_wall_times(sweep):
    directory = sweep[0]
    traces = sorted((directory / "traces").glob("*.csv"))
    assert traces
    for path in traces:
        chunks = traceformats.read_chunks(path)
        cpu, wall = chunks["cpu_s"], chunks["end_s"] - chunks["start_s"]
        assert cpu.notna().all() and (cpu >= 0).all()
        assert (cpu <= wall + traceformats.CPU_OVER_WALL_S).all()
        assert cpu.sum() > 0  # how much of the wall time: whatever else this machine runs decides


def test_runs_record_steal_time_and_involuntary_switches(sweep):
    runs = pd.read_csv(sweep[0] / "runs.csv", na_values=["NA"], keep_default_na=False)
    assert {"steal_s", "involuntary_switches"} <= set(runs.columns)
    assert (runs["steal_s"] >= 0).all() and (runs["involuntary_switches"] >= 0).all()
    record = json.loads(next((sweep[0] / "runs").glob("*.json")).read_text())
    assert isinstance(record["involuntary_switches"], int) and record["steal_s"] >= 0


def test_predict_dedicated_and_against_another_directory(sweep, tmp_path):
    directory, here, _ = sweep
    quiet = copy(directory, tmp_path / "quiet")
    # a point the quiet directory has that the disturbed one cannot predict: one line
    steps = pd.read_csv(quiet / "steps.csv", na_values=["NA"], keep_default_na=False)
    extra = steps[(steps["variant"] == "taskiter") & (steps["threads"] == 2)].assign(batch_subsize=4)
    pd.concat([steps, extra]).to_csv(quiet / "steps.csv", index=False, na_rep="NA")
    runs = pd.read_csv(quiet / "runs.csv", na_values=["NA"], keep_default_na=False)
    extra = runs[(runs["variant"] == "taskiter") & (runs["threads"] == 2)].assign(batch_subsize=4, order=99)
    pd.concat([runs, extra]).to_csv(quiet / "runs.csv", index=False, na_rep="NA")
    proc = perfstudy("predict", directory, "--source-machine", here, "--dedicated", "--against", quiet,
                     "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "CPU time (dedicated)" in proc.stdout and "disturbance:" in proc.stdout
    assert "intervals (bootstrap" in proc.stdout and "median width" in proc.stdout
    [line] = [x for x in proc.stdout.splitlines() if "not matched" in x]
    assert "taskiter" in line and "bs=4" in line and "no 1-thread trace" in line, line
    print(proc.stdout)
    val = pd.read_csv(tmp_path / "out" / "validation.csv", na_values=["NA"], keep_default_na=False)
    for col in ("measured_step_s", "predicted_step_s", "error", "predicted_low", "predicted_high"):
        assert col in val.columns
    assert (val["predicted_low"] <= val["predicted_step_s"]).all()
    assert (val["predicted_step_s"] <= val["predicted_high"]).all()
    assert len(val) == 1 + 2 * (len(VARIANTS) - 1)  # the unmatched point is not predicted
    pred = pd.read_csv(tmp_path / "out" / "prediction.csv", na_values=["NA"], keep_default_na=False)
    assert (pred["predicted_low"] <= pred["predicted_high"]).all()
    # deterministic: the same inputs, the same intervals
    again = perfstudy("predict", directory, "--source-machine", here, "--dedicated", "--against", quiet,
                      "--out", tmp_path / "again")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "validation.csv").read_text() == (tmp_path / "out" / "validation.csv").read_text()


def test_older_traces_without_cpu_times(sweep, tmp_path):
    directory, here, _ = sweep
    old = copy(directory, tmp_path / "old")
    for path in (old / "traces").glob("*.csv"):
        frame = pd.read_csv(path, keep_default_na=False)
        frame.drop(columns="cpu_s").to_csv(path, index=False)
    wall = perfstudy("predict", directory, "--source-machine", here, "--out", tmp_path / "new")
    proc = perfstudy("predict", old, "--source-machine", here, "--out", tmp_path / "old-out")
    assert wall.returncode == 0 and proc.returncode == 0, proc.stderr
    # the wall-time prediction does not look at cpu_s
    assert (tmp_path / "old-out" / "prediction.csv").read_text() == (tmp_path / "new" / "prediction.csv").read_text()
    proc = perfstudy("predict", old, "--source-machine", here, "--dedicated", "--out", tmp_path / "x")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no cpu_s column" in proc.stderr, proc.stderr


@pytest.mark.parametrize("value, message", [("x", "is not a CPU time"), ("-0.5", "is not a CPU time"),
                                            ("inf", "is not a CPU time"), ("5", "of wall time")])
def test_bad_cpu_times_are_one_line(sweep, tmp_path, value, message):
    directory, here, _ = sweep
    bad = copy(directory, tmp_path / "bad")
    path = sorted((bad / "traces").glob("*_t1_*.csv"))[0]
    lines = path.read_text().splitlines()
    lines[1] = lines[1].rsplit(",", 1)[0] + "," + value
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(StudyError, match=message):
        traceformats.read_chunks(path)
    proc = perfstudy("predict", bad, "--source-machine", here, "--dedicated", "--out", tmp_path / "x")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "cpu_s" in proc.stderr, proc.stderr


def test_intervals_hold_the_step_and_are_deterministic():
    stats = prediction.TraceStats({("v",): {1: 1.0, 2: 2.0}}, {("v",): 1.0}, {}, {},
                                  {("v",): [({1: 1.0, 2: 2.0}, 3.0), ({1: 1.2, 2: 2.1}, 3.3), ({1: 0.9, 2: 1.8}, 2.7)]})
    a, b = prediction.bootstrap_medians(stats, 20), prediction.bootstrap_medians(stats, 20)
    assert a == b and len(a) == 20
    totals = [sum(m[("v",)].values()) for m in a]
    assert min(totals) < max(totals)
    low, high = prediction.interval(3.0, totals)
    assert low <= 3.0 <= high
    assert prediction.interval(3.0, []) == (3.0, 3.0)


def test_intervals_resample_runs_before_their_iterations():
    # two runs of one point on a host whose speed moved between them: each run's iterations alike
    fast = [({1: 1.0 + 0.01 * i}, 1.0 + 0.01 * i, "r0") for i in range(6)]
    slow = [({1: 2.0 + 0.01 * i}, 2.0 + 0.01 * i, "r1") for i in range(6)]
    medians, scales = {("v",): {1: 1.5}}, {("v",): 1.0}
    runs = prediction.bootstrap_medians(prediction.TraceStats(medians, scales, {}, {}, {("v",): fast + slow}), 40)
    mixed = prediction.bootstrap_medians(prediction.TraceStats(
        medians, scales, {}, {}, {("v",): [(c, b, "one") for c, b, _ in fast + slow]}), 40)
    width = {name: prediction.interval(1.5, [m[("v",)][1] for m in draws])
             for name, draws in (("runs", runs), ("mixed", mixed))}
    # some replicates draw the fast run twice, some the slow one: the interval spans both speeds
    assert width["runs"][0] < 1.1 and width["runs"][1] > 1.9
    # iterations alone, as if from one run: the medians stay between the two
    assert width["mixed"][1] - width["mixed"][0] < width["runs"][1] - width["runs"][0]
    # entries of two fields (no run) are one run, as before
    two = prediction.bootstrap_medians(prediction.TraceStats(medians, scales, {}, {},
                                                            {("v",): [(c, b) for c, b, _ in fast + slow]}), 40)
    assert two == mixed


def test_noise_sensitivity_table_reads_and_refuses_bad_rows(tmp_path):
    from pstudy.show import noisefigure

    assert noisefigure.read(tmp_path) is None
    key = {"variant": "forkjoin", "compiler": "gcc", "kernels": "fast", "threads": 2}
    rows = [{**key, "duty": d, "cpus": "0", "period_us": 10000, "quiet_step_s": 1.0, "disturbed_step_s": s,
             "slowdown": s} for d, s in ((0.25, 1.2), (0.5, 1.6))]
    noisefigure.write(tmp_path, rows)
    frame = noisefigure.read(tmp_path)
    assert list(frame["slowdown"]) == [1.2, 1.6]
    assert "forkjoin" in noisefigure.table_lines(frame)[1] and "1.20x" in noisefigure.table_lines(frame)[1]
    assert noisefigure.figure(frame, tmp_path).read_bytes()[:4] == b"\x89PNG"
    rows[1]["slowdown"] = "x"
    noisefigure.write(tmp_path, rows)
    with pytest.raises(StudyError, match=r"noise_sensitivity\.csv: row 3, column slowdown"):
        noisefigure.read(tmp_path)


@pytest.mark.skipif(not (REPO / "build" / "bench" / "disturb").exists(), reason="make build/bench/disturb")
def test_disturb_takes_its_duty_of_the_cpus_and_refuses_bad_input():
    disturb = REPO / "build" / "bench" / "disturb"
    done = subprocess.run([str(disturb), "--cpus", "0", "--duty", "0.25", "--period-us", "10000", "--seconds", "0.3"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stderr.strip() == "ready", done.stderr
    record = json.loads(done.stdout)
    assert record["cpus"] == [0] and record["duty"] == 0.25 and 0 < record["achieved_duty"] < 0.6
    for args, what in ((["--duty", "0.5"], "--cpus: required"), (["--cpus", "0", "--duty", "2"], "--duty"),
                       (["--cpus", "x"], "--cpus"), (["--cpus", "0", "--period-us", "1"], "--period-us")):
        bad = subprocess.run([str(disturb), *args], capture_output=True, text=True, timeout=30)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and what in bad.stderr, bad.stderr


@pytest.mark.skipif(not (REPO / "build" / "bench" / "clockcost").exists(), reason="make build/bench/clockcost")
def test_clockcost_times_both_clocks():
    done = subprocess.run([str(REPO / "build" / "bench" / "clockcost"), "--calls", "1000", "--repeats", "3"],
                          capture_output=True, text=True, timeout=30)
    record = json.loads(done.stdout)
    assert record["monotonic_ns"] > 0 and record["thread_cputime_ns"] > 0
