"""Sweeps against the fake variant: results files, failures, timeouts, resume, directory naming."""

import json
import subprocess
import re
import time
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
N_POINTS = 1 + 2 + 2 * 2 + 2 * 2  # seq@1, forkjoin@1,2, tasks and taskiter @1,2 x bs 1,4 (k 64)


def running(pid, wait_s=3.0):
    """Whether pid is a live process (a zombie waiting for its reaper does not count)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        if state in ("Z", "X"):
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)


def read(directory, name):
    return pd.read_csv(directory / name, na_values=["NA"], keep_default_na=False)


def test_sweep_writes_tidy_results(study):
    done = study.perfstudy("run", study.config(steps=4, repetitions=2))
    assert done.returncode == 0, done.stderr
    [d] = study.result_dirs()
    assert d.name.endswith("-small") and len(d.name.split("-")) >= 5  # <date>-<commit>-<config>
    assert f"[{2 * N_POINTS}/{2 * N_POINTS}]" in done.stderr  # progress line
    assert done.stdout == f"{d}\n"

    steps = read(d, "steps.csv")
    assert list(steps.columns) == ["variant", "compiler", "kernels", "threads", "batch_subsize", "k", "ranks",
                                   "tile_columns", "tile_in_channels", "tile_sequences", "tiles_per_product",
                                   "starpu_sched", "update", "collective", "overlap", "comm_threads", "repetition",
                                   "step", "warmup", "forward_s", "backward_s", "update_s", "step_s",
                                   "loss", "comm_s", "steal_s", "involuntary_switches"]
    assert len(steps) == 2 * N_POINTS * (1 + 4)
    assert steps["warmup"].sum() == 2 * N_POINTS  # one warm-up step per run, flagged
    plain = steps[steps["variant"].isin(["seq", "forkjoin"])]
    assert plain["batch_subsize"].isna().all() and plain["k"].isna().all() and plain["tile_columns"].isna().all()
    chunked = steps[steps["variant"].isin(["tasks", "taskiter"])]
    assert (chunked["tile_columns"] == 0).all() and (chunked["tile_in_channels"] == 0).all()  # "auto"
    assert (chunked["tile_sequences"] == 0).all() and plain["tile_sequences"].isna().all()
    assert steps["ranks"].isna().all() and steps["comm_s"].isna().all()  # no distributed variant here
    assert set(steps[steps["variant"] == "seq"]["threads"]) == {1}

    summary = read(d, "summary.csv")
    assert len(summary) == N_POINTS
    for col in ("step_median_s", "step_ci_low_s", "step_ci_high_s", "forward_median_s", "backward_median_s",
                "update_median_s", "speedup_vs_seq", "efficiency_vs_seq", "speedup_vs_self1",
                "efficiency_vs_self1", "step_base_seq_s", "step_base_self1_s"):
        assert col in summary.columns, col
    seq = summary[summary["variant"] == "seq"].iloc[0]
    fj2 = summary[(summary["variant"] == "forkjoin") & (summary["threads"] == 2)].iloc[0]
    assert fj2["speedup_vs_seq"] == pytest.approx(seq["step_median_s"] / fj2["step_median_s"])
    assert (summary["n_steps"] == 8).all() and (summary["n_failed"] == 0).all()

    meta = json.loads((d / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["runs_ok"] == 2 * N_POINTS
    assert meta["seed"] == 7 and meta["config"]["sweep"]["threads"] == [1, 2]
    for key in ("git", "compilers", "omp_runtime", "cpu", "system", "software", "placement", "counters",
                "started", "finished", "config_text", "order", "warmup", "statistics"):
        assert key in meta, key
    assert meta["omp_runtime"] == {"gcc/fast": ["libgomp"]}
    assert "version" in meta["compilers"]["gcc/fast"] or meta["compilers"]["gcc/fast"]["build"]
    assert meta["software"]["pandas"] == pd.__version__
    assert read(d, "failures.csv").empty

    # runs are interleaved: the first block of N_POINTS runs holds every point once, all repetition 0
    runs = read(d, "runs.csv").sort_values("order")
    assert list(runs["repetition"]) == [0] * N_POINTS + [1] * N_POINTS
    assert runs.iloc[:N_POINTS]["variant"].tolist() != sorted(runs.iloc[:N_POINTS]["variant"].tolist())


def test_a_sweep_over_tile_sequences(study):
    """tile_sequences = [2, "auto"]: a point each, named _ts2 and _tsauto; 2 is passed to the binary and
    checked against its info line, "auto" is neither."""
    text = study.config(steps=2, repetitions=1, variants='["seq", "taskiter"]').read_text()
    cfg = study.config(name="ts", text=text + 'tile_sequences = [2, "auto"]\n')
    done = study.perfstudy("run", cfg)
    assert done.returncode == 0, done.stderr
    [d] = study.result_dirs()
    runs = read(d, "runs.csv")
    assert len(runs) == 1 + 2 * 2 * 2 and (runs["status"] == "ok").all()  # seq; taskiter @1,2 x bs 1,4 x ts
    record = json.loads((d / "runs" / "taskiter_gcc_fast_t2_bs1_k64_tcauto_tiauto_ts2_tpauto_r0.json").read_text())
    assert record["tile_sequences"] == 2 and record["info"]["tile_sequences"] == 2
    at = record["command"].index("--tile-sequences")
    assert record["command"][at + 1] == "2"
    auto = json.loads((d / "runs" / "taskiter_gcc_fast_t2_bs1_k64_tcauto_tiauto_tsauto_tpauto_r0.json").read_text())
    assert "--tile-sequences" not in auto["command"] and auto["info"]["tile_sequences"] is None
    steps = read(d, "steps.csv")
    assert set(steps[steps["variant"] == "taskiter"]["tile_sequences"]) == {0, 2}
    assert steps[steps["variant"] == "seq"]["tile_sequences"].isna().all()
    summary = read(d, "summary.csv")
    assert len(summary) == 1 + 8 and "tile_sequences" in summary.columns
    shown = study.perfstudy("report", d, "--no-figures", "--no-chart")
    assert shown.returncode == 0, shown.stderr
    assert "bs=1 k=64 ts=2 " in shown.stdout
    assert "bs=4 k=64 " in shown.stdout and "=auto" not in shown.stdout


def test_a_sweep_over_tiles_per_product(study):
    """tiles_per_product = [2, "auto"]: a point each, named _tp2 and _tpauto; 2 is passed to the binary
    and checked against its info line, "auto" is neither; a binary that reports another count fails
    the run as mislabelled."""
    text = study.config(steps=2, repetitions=1, variants='["seq", "taskiter"]').read_text()
    cfg = study.config(name="tp", text=text + 'tiles_per_product = [2, "auto"]\n')
    done = study.perfstudy("run", cfg)
    assert done.returncode == 0, done.stderr
    [d] = study.result_dirs()
    runs = read(d, "runs.csv")
    assert len(runs) == 1 + 2 * 2 * 2 and (runs["status"] == "ok").all()  # seq; taskiter @1,2 x bs 1,4 x tp
    record = json.loads((d / "runs" / "taskiter_gcc_fast_t2_bs1_k64_tcauto_tiauto_tsauto_tp2_r0.json").read_text())
    assert record["tiles_per_product"] == 2 and record["info"]["tiles_per_product"] == 2
    at = record["command"].index("--tiles-per-product")
    assert record["command"][at + 1] == "2"
    auto = json.loads((d / "runs" / "taskiter_gcc_fast_t2_bs1_k64_tcauto_tiauto_tsauto_tpauto_r0.json").read_text())
    assert "--tiles-per-product" not in auto["command"]
    steps = read(d, "steps.csv")
    assert set(steps[steps["variant"] == "taskiter"]["tiles_per_product"]) == {0, 2}
    assert steps[steps["variant"] == "seq"]["tiles_per_product"].isna().all()
    shown = study.perfstudy("report", d, "--no-figures", "--no-chart")
    assert shown.returncode == 0, shown.stderr
    assert "bs=1 k=64 tp=2 " in shown.stdout


def test_build_info_is_read_when_present(study):
    info = {"compiler": "gcc 12.2", "cflags": "-O3 -march=native -fopenmp"}
    (study.build / "gcc" / "fast" / "buildinfo.json").write_text(json.dumps(info))
    assert study.perfstudy("run", study.config(repetitions=1, variants='["seq"]')).returncode == 0
    [d] = study.result_dirs()
    assert json.loads((d / "meta.json").read_text())["compilers"]["gcc/fast"]["build"] == info


# each failure mode on a variant of its own, in one sweep: (mode, status, message, points of the variant)
FAILURES = {
    "tasks": ("crash", "crashed", "exit status 2: gpt2-tasks: model: simulated failure", 4),
    "taskiter": ("segv", "crashed", "killed by signal SIGSEGV", 4),
    "nosv": ("garbage", "garbage", "is not JSON", 4),
    "starpu": ("short", "garbage", "step records, expected 4", 4),
    "forkjoin": ("mismatch", "mismatch", "info line says threads=", 2),
}


def test_failing_variants_are_recorded_and_the_sweep_goes_on(study):
    variants = json.dumps(["seq", *FAILURES])
    modes = ",".join(f"{variant}={mode}" for variant, (mode, *_) in FAILURES.items())
    cfg = study.config(steps=3, repetitions=1, variants=variants)
    done = study.perfstudy("run", cfg, FAKE_MODE_BY_VARIANT=modes)
    assert done.returncode == 0, done.stderr
    [d] = study.result_dirs()
    failures = read(d, "failures.csv")
    summary = read(d, "summary.csv")
    n_failed = sum(points for *_, points in FAILURES.values())
    assert len(failures) == n_failed and set(failures["variant"]) == set(FAILURES)
    for variant, (mode, status, message, points) in FAILURES.items():
        mine = failures[failures["variant"] == variant]
        assert len(mine) == points and set(mine["status"]) == {status}, (mode, mine)
        assert all(message in e for e in mine["error"]), (mode, mine["error"].tolist())
        assert f"FAILED {variant}" in done.stderr
        bad = summary[summary["variant"] == variant]
        assert len(bad) == points and (bad["n_failed"] == 1).all() and bad["step_median_s"].isna().all()
    ok = summary[summary["variant"] == "seq"]
    assert len(ok) == 1 and (ok["n_failed"] == 0).all() and ok["step_median_s"].notna().all()
    assert len(summary) == 1 + n_failed
    assert json.loads((d / "meta.json").read_text())["runs_failed"] == n_failed
    strict = study.perfstudy("run", cfg, "--strict", FAKE_MODE_BY_VARIANT=modes)
    assert strict.returncode == 1  # resumed: nothing re-run, but failures make --strict fail
    assert study.result_dirs() == [d]


def test_timed_out_point_is_killed_with_its_children(study):
    pidfile = study.tmp / "child.pid"
    start = time.monotonic()
    done = study.perfstudy("run", study.config(steps=2, repetitions=1, timeout_s=1.5,
                                               variants='["seq", "forkjoin"]'),
                           FAKE_MODE="hang", FAKE_MODE_VARIANTS="forkjoin", FAKE_MODE_THREADS="2",
                           FAKE_PIDFILE=pidfile)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 20
    [d] = study.result_dirs()
    failures = read(d, "failures.csv")
    assert failures[["variant", "threads", "status"]].values.tolist() == [["forkjoin", 2, "timeout"]]
    assert "per-run timeout" in failures["error"][0]
    child = int(pidfile.read_text())
    assert not running(child)  # the hung binary's own child died with its process group
    assert len(read(d, "summary.csv").dropna(subset=["step_median_s"])) == 2  # seq, forkjoin@1


def test_interrupted_sweep_resumes_and_skips_completed_runs(study):
    cfg = study.config(steps=3, repetitions=2)
    counter = study.tmp / "invocations"
    first = study.perfstudy("run", cfg, FAKE_COUNTER=counter, FAKE_INTERRUPT_AT=6)
    assert first.returncode == 130, first.stderr
    assert "run the same command again to resume" in first.stderr
    [d] = study.result_dirs()
    events = [json.loads(line) for line in (d / "journal.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events].count("run") == 5
    assert events[-1]["event"] == "interrupted"
    assert json.loads((d / "meta.json").read_text())["status"] == "interrupted"
    assert len(read(d, "steps.csv")) == 5 * 4  # the finished runs are already tabulated

    # a run record written without its journal line, a stale temporary file and a torn journal line
    # (a crash mid-write) must not count as done
    done_ids = {e["run_id"] for e in events if e["event"] == "run"}
    runs_dir = d / "runs"
    orphan = next(p for p in runs_dir.glob("*.json") if p.stem in done_ids)
    lines = (d / "journal.jsonl").read_text().splitlines()
    kept = [line for line in lines if orphan.stem not in line]
    (d / "journal.jsonl").write_text("\n".join(kept) + '\n{"event": "run", "run_id": "tasks_gc')
    (runs_dir / ".x.json.tmp").write_text("{partial")

    second = study.perfstudy("run", cfg, FAKE_COUNTER=counter)
    assert second.returncode == 0, second.stderr
    assert study.result_dirs() == [d]  # same directory, resumed
    assert "4 already done" in second.stderr
    total = 2 * N_POINTS
    # 6 invocations in the first sweep (the 6th interrupted), then every run but the 4 done ones
    assert int(counter.read_text()) == 6 + (total - 4)
    assert not (runs_dir / ".x.json.tmp").exists()
    meta = json.loads((d / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["runs_ok"] == total and len(meta["resumed"]) == 1
    steps = read(d, "steps.csv")
    assert len(steps) == total * 4
    assert not steps.duplicated(["variant", "compiler", "kernels", "threads", "batch_subsize", "k",
                                 "repetition", "step"]).any()

    third = study.perfstudy("run", cfg, FAKE_COUNTER=counter)  # nothing left to do
    assert third.returncode == 0 and f"{total} already done" in third.stderr
    assert int(counter.read_text()) == 6 + (total - 4)


def test_other_config_or_fresh_gets_a_new_directory(study):
    assert study.perfstudy("run", study.config(repetitions=1, variants='["seq"]')).returncode == 0
    assert study.perfstudy("run", study.config(repetitions=1, variants='["seq"]'), "--fresh").returncode == 0
    changed = study.config(repetitions=1, steps=6, variants='["seq"]')  # same name, other config
    assert study.perfstudy("run", changed).returncode == 0
    dirs = study.result_dirs()
    assert len(dirs) == 3
    assert sorted(d.name for d in dirs)[1:] == sorted(dirs[0].name + s for s in ("-2", "-3"))
    for d in dirs:
        assert json.loads((d / "meta.json").read_text())["status"] == "complete"


def test_sigterm_stops_the_sweep_and_its_running_binary(study):
    import signal
    import subprocess

    from conftest import PERFSTUDY

    pidfile = study.tmp / "child.pid"
    cfg = study.config(steps=2, repetitions=1, timeout_s=60, variants='["forkjoin"]')
    proc = subprocess.Popen([str(PERFSTUDY), "run", str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=study.env(FAKE_MODE="hang", FAKE_PIDFILE=pidfile))
    deadline = time.monotonic() + 20
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err
    assert not running(int(pidfile.read_text()))
    [d] = study.result_dirs()
    assert json.loads((d / "meta.json").read_text())["status"] == "interrupted"


PEAK_POINTS = 3  # seq@1, forkjoin@1,2: a probe per run at each thread count; chunking adds nothing to it


def peak_config(study):
    text = study.config(steps=2, repetitions=1, variants='["seq", "forkjoin"]').read_text() \
        + "\n[analysis]\ntrace = false\nceilings = false\nroofline = false\npeak_beside = true\n"
    return study.config(name="probed", text=text)


def test_peak_beside_probes_each_run_where_its_threads_run(study):
    """[analysis] peak_beside: the real peakflops, with each run's threads and placement, right
    before it: runs.csv's three columns and thread_peaks.csv, one row per thread."""
    real = REPO / "build" / "probes" / "peakflops"
    if not real.exists():
        pytest.skip("build/probes/peakflops not built (make)")
    (study.build / "probes").mkdir()
    (study.build / "probes" / "peakflops").symlink_to(real)
    done = study.perfstudy("run", peak_config(study))
    assert done.returncode == 0, done.stderr
    # the summary's line on the machine as the probes found it
    assert re.search(r"^the machine: each run's threads' peak, probed beside it: 1 thread \d+-\d+ GFLOP/s over "
                     r"\d+ runs, 2 threads .*; the probe after a run \d+\.\d% from the one before", done.stderr,
                     re.M), done.stderr
    [d] = study.result_dirs()
    runs = read(d, "runs.csv")
    assert len(runs) == PEAK_POINTS
    for field in ("peak_beside", "peak_after"):  # the probe right before each run and the one right after
        assert (runs[f"{field}_gflops"] > 0).all()
        assert set(runs[f"{field}_slowest_thread"]) <= {0, 1}
        one = runs[runs["threads"] == 1]
        assert (one[f"{field}_slowest_thread"] == 0).all() and (one[f"{field}_slowest_time"] == 1.0).all()
        assert (runs[f"{field}_slowest_time"] >= 1.0).all()  # the slowest is never faster than the median
    peaks = read(d, "thread_peaks.csv")
    assert list(peaks.columns[-6:]) == ["repetition", "when", "thread", "cpu", "gflops", "time"]
    assert len(peaks) == 2 * runs["threads"].sum() and (peaks["gflops"] > 0).all()
    per_probe = peaks.groupby(["variant", "threads", "batch_subsize", "when"], dropna=False)["thread"].agg(list)
    assert all(threads == list(range(len(threads))) for threads in per_probe)
    assert list(dict.fromkeys(peaks["when"])) == ["before", "after"]
    # the record keeps each probe whole: its width, the team's rate, each thread's rate and CPU
    for path in (d / "runs").glob("*.json"):
        record = json.loads(path.read_text())
        for field in ("peak_beside", "peak_after"):
            probe, threads = record[field], record["threads"]
            assert probe["isa"] in ("avx512", "avx2", "sse", "scalar") and probe["gflops"] > 0
            assert len(probe["thread_gflops"]) == len(probe["thread_cpus"]) == threads


def test_a_missing_peak_probe_loses_no_run(study):
    """Without build/probes/peakflops the runs still run and count; the record says why no probe."""
    done = study.perfstudy("run", peak_config(study))
    assert done.returncode == 0, done.stderr
    [d] = study.result_dirs()
    runs = read(d, "runs.csv")
    assert (runs["status"] == "ok").all() and runs["peak_beside_gflops"].isna().all()
    assert not (d / "thread_peaks.csv").exists()
    record = json.loads(next((d / "runs").glob("*.json")).read_text())
    assert "peakflops: not found" in record["peak_beside"]["error"]
    assert "peakflops: not found" in record["peak_after"]["error"]


def test_one_thread_points_run_as_often_as_the_config_says(study):
    # [run] one_thread_repetitions = 3 beside repetitions = 1: the 1-thread points, whose chunk times
    # predict replays, three runs each, the 2-thread points one; the summary pools each point's runs
    # (one chunked variant: the chunked ones are what predict replays)
    text = study.config(steps=2, repetitions=1, variants='["seq", "forkjoin", "tasks"]').read_text().replace(
        "repetitions = 1\n", "repetitions = 1\none_thread_repetitions = 3\n")
    done = study.perfstudy("run", study.config(name="sources", text=text))
    assert done.returncode == 0, done.stderr
    one, two = 1 + 1 + 2, 1 + 2  # seq, forkjoin, tasks x bs 1, 4 / the same but seq
    assert f"{one + two} points x 1 repetitions, the 1-thread points x 3 = {3 * one + two} runs" in done.stderr
    [d] = study.result_dirs()
    runs = read(d, "runs.csv")
    per_point = runs.groupby(["variant", "threads", "batch_subsize"], dropna=False).size()
    assert set(per_point[per_point.index.get_level_values("threads") == 1]) == {3}
    assert set(per_point[per_point.index.get_level_values("threads") == 2]) == {1}
    summary = read(d, "summary.csv")
    assert set(summary.loc[summary["threads"] == 1, "n_runs"]) == {3}
    assert set(summary.loc[summary["threads"] == 2, "n_runs"]) == {1}


STARPU_CONFIG = """
[model]
config = "tiny"
B = 2
T = 16

[run]
steps = 2
warmup = 1
repetitions = 1
timeout_s = 120
seed = 7

[sweep]
variants = ["seq", "starpu"]
threads = [2]
batch_subsize = [1]
token_chunk = [8]
starpu_sched = ["eager", "dmda"]

[analysis]
trace = false
ceilings = false
roofline = false
"""


def test_a_sweep_over_starpu_schedulers(study):
    """starpu_sched = ["eager", "dmda"] with the real gpt2-starpu: a point per scheduler, run with
    STARPU_SCHED set (the binary reports the scheduler it ran, and the harness checks it), named _s<name>
    and "sched=<name>", a column of steps, runs and summary (NA for seq), and meta.json's config."""
    real = REPO / "build" / "gcc" / "fast"
    if not all((real / f"gpt2-{v}").exists() for v in ("seq", "starpu")):
        pytest.skip("build/gcc/fast/gpt2-seq and gpt2-starpu not built (make)")
    probe = subprocess.run([str(real / "gpt2-starpu"), "--config", "tiny", "-B", "2", "-T", "16", "--steps", "1",
                            "--threads", "1"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0 and "cannot load" in probe.stderr:
        pytest.skip(f"StarPU is not installed: {probe.stderr.strip()}")
    for v in ("seq", "starpu"):
        (study.build / "gcc" / "fast" / f"gpt2-{v}").unlink()
        (study.build / "gcc" / "fast" / f"gpt2-{v}").symlink_to(real / f"gpt2-{v}")
    done = study.perfstudy("run", study.config(name="sched", text=STARPU_CONFIG), timeout=300, STARPU_SCHED="ws")
    assert done.returncode == 0, done.stderr
    [d] = study.result_dirs()
    runs = read(d, "runs.csv")
    assert len(runs) == 3 and (runs["status"] == "ok").all(), runs[["variant", "status", "error"]]
    assert sorted(runs["starpu_sched"].dropna()) == ["dmda", "eager"]
    assert runs[runs["variant"] == "seq"]["starpu_sched"].isna().all()
    for sched in ("eager", "dmda"):
        record = json.loads((d / "runs" / f"starpu_gcc_fast_t2_bs1_k8_tcauto_tiauto_tsauto_tpauto_s{sched}_r0.json")
                            .read_text())
        assert record["starpu_sched"] == sched and record["info"]["runtime"]["scheduler"] == sched
    steps = read(d, "steps.csv")
    assert set(steps["starpu_sched"].dropna()) == {"eager", "dmda"}
    # the same graph whatever the scheduler: the same losses as seq, bit for bit
    last = steps[steps["step"] == steps["step"].max()]
    assert last["loss"].nunique() == 1
    summary = read(d, "summary.csv")
    assert sorted(summary["starpu_sched"].dropna()) == ["dmda", "eager"] and len(summary) == 3
    meta = json.loads((d / "meta.json").read_text())
    assert meta["config"]["sweep"]["starpu_sched"] == ["eager", "dmda"]
    shown = study.perfstudy("report", d, "--no-figures", "--no-chart")
    assert shown.returncode == 0, shown.stderr
    assert "bs=1 k=8 sched=dmda " in shown.stdout and "bs=1 k=8 sched=eager " in shown.stdout
