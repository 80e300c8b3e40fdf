"""Faults and concurrency, with the real harness and the fake variant binaries: two processes on one
directory, operating-system errors, interrupts after the runs, outputs outside their root, partial
figures, a checkout git will not read."""

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import PERFSTUDY

from pstudy.store import resultsdir

ROOT = os.geteuid() == 0


def journal_runs(directory):
    return [e["run_id"] for e in resultsdir.Journal(directory).events() if e.get("event") == "run"]


def one_line_error(done, *words):
    """The harness's contract for bad input and OS errors: exit 2, one line, no traceback."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def interrupted_sweep(study, config, env):
    """A sweep stopped by Ctrl-C at its 3rd run: its directory, to be resumed."""
    counter = study.tmp / "count"
    done = study.perfstudy("run", config, FAKE_COUNTER=counter, FAKE_INTERRUPT_AT=3, **env)
    assert done.returncode == 130, done.stderr
    (directory,) = study.result_dirs()
    return directory


def test_two_resumes_of_one_sweep_never_measure_a_run_twice(study):
    config = study.config(steps=3, repetitions=2)
    slow = {"FAKE_SLEEP_S": 0.02}
    directory = interrupted_sweep(study, config, slow)
    before = journal_runs(directory)
    procs = [subprocess.Popen([str(PERFSTUDY), "run", str(config), "--wait"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=study.env(**slow), cwd=study.tmp)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert study.result_dirs() == [directory]
    runs = journal_runs(directory)
    assert len(runs) == len(set(runs)), "a run was measured twice"
    assert len(runs) > len(before)
    meta = resultsdir.read_meta(directory)
    assert len(meta["resumed"]) == 2 and meta.status == "complete"
    assert "waiting for it" in outs[0][1] + outs[1][1]


def test_a_second_sweep_of_a_busy_directory_names_its_holder_and_exits_2(study):
    config = study.config(steps=3, repetitions=2)
    slow = {"FAKE_SLEEP_S": 0.05}
    directory = interrupted_sweep(study, config, slow)
    first = subprocess.Popen([str(PERFSTUDY), "run", str(config)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=study.env(**slow), cwd=study.tmp)
    try:
        deadline = time.monotonic() + 30
        while len(journal_runs(directory)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)  # the first one is sweeping
        second = study.perfstudy("run", config, **slow)
        line = one_line_error(second, str(directory), "in use by process", str(first.pid), "--wait")
        assert line.startswith("perfstudy run: ")
    finally:
        first.communicate(timeout=120)
    assert first.returncode == 0
    runs = journal_runs(directory)
    assert len(runs) == len(set(runs))


def test_report_owns_its_plots_directory(study, finished_sweeps):
    directory = study.copy_of(finished_sweeps.get(steps=3, repetitions=1))
    outdir = study.plots / directory.name
    outdir.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time\n"
        "f = open(sys.argv[1], 'a+'); fcntl.flock(f, fcntl.LOCK_EX)\n"
        "f.write('process 4242 (perfstudy report X)'); f.flush(); print('held', flush=True); time.sleep(60)"),
        str(outdir / resultsdir.LOCK)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        done = study.perfstudy("report", directory, "--no-chart")
        assert done.returncode == 2 and "in use by process 4242" in done.stderr
    finally:
        holder.kill()
        holder.wait()
    # the lock is free again (without figures: the lock is the same, the figures cost seconds)
    done = study.perfstudy("report", directory, "--no-chart", "--no-figures")
    assert done.returncode == 0, done.stderr


def test_results_root_under_a_regular_file_is_one_line(study):
    config = study.config(steps=3, repetitions=1)
    blocker = study.tmp / "afile"
    blocker.write_text("not a directory\n")
    done = study.perfstudy("run", config, "--results-root", blocker / "results")
    one_line_error(done, str(blocker))


def test_plots_root_under_a_regular_file_is_one_line(study, finished_sweeps):
    directory = study.copy_of(finished_sweeps.get(steps=3, repetitions=1))
    blocker = study.tmp / "afile"
    blocker.write_text("x")
    done = study.perfstudy("report", directory, "--no-chart", PERFSTUDY_PLOTS=blocker / "plots")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert str(blocker) in done.stderr.strip().splitlines()[-1]


@pytest.fixture
def small_tmpfs(tmp_path):
    """A mounted tmpfs of 160 KiB (root only): a disk that fills up, or one mounted read-only."""
    if not ROOT:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=768k", "tmpfs", str(mount)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield mount
    subprocess.run(["umount", "-l", str(mount)])


def test_a_full_disk_fails_the_sweep_in_one_line_and_keeps_what_was_written(study, small_tmpfs):
    config = study.config(steps=40, repetitions=6)
    done = study.perfstudy("run", config, "--results-root", small_tmpfs, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    line = done.stderr.strip().splitlines()[-1]  # after the progress lines of the runs that fitted
    assert line.startswith(f"perfstudy run: {small_tmpfs}/") and "No space left on device" in line
    (directory,) = [d for d in small_tmpfs.iterdir() if d.is_dir()]
    meta = json.loads((directory / resultsdir.META).read_text())
    assert meta["status"] == "failed" and "No space left" in meta["error"]
    records = list((directory / resultsdir.RUNS_DIR).glob("*.json"))
    assert records, "the runs measured before the disk filled must be kept"
    for record in records:
        json.loads(record.read_text())  # every one complete


def test_a_read_only_results_root_is_one_line(study, small_tmpfs):
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    done = study.perfstudy("run", study.config(steps=3, repetitions=1), "--results-root", small_tmpfs / "r")
    one_line_error(done, "Read-only file system")


def test_a_read_only_plots_root_is_one_line(study, small_tmpfs, finished_sweeps):
    directory = study.copy_of(finished_sweeps.get(steps=3, repetitions=1))
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    done = study.perfstudy("report", directory, "--no-chart", PERFSTUDY_PLOTS=small_tmpfs)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "Read-only file system" in done.stderr.strip().splitlines()[-1]


def test_an_interrupt_while_the_ceilings_are_measured_still_tabulates(study):
    probes = study.build / "probes"
    probes.mkdir()
    for name in ("stream", "peakflops"):  # a Ctrl-C arrives while the ceilings are measured
        (probes / name).write_text("#!/bin/sh\nkill -INT $PPID\nsleep 30\n")
        (probes / name).chmod(0o755)
    config = study.config(steps=3, repetitions=1)
    config.write_text(config.read_text() + "\n[analysis]\nceilings = true\nroofline = false\n")
    done = study.perfstudy("run", config)
    assert done.returncode == 130, done.stderr
    (directory,) = study.result_dirs()
    meta = resultsdir.read_meta(directory)
    assert meta.status == "interrupted"
    assert (directory / resultsdir.STEPS_CSV).exists() and (directory / resultsdir.SUMMARY_CSV).exists()
    assert meta["runs_ok"] == meta["runs_total"]
    assert "run the same command again" in done.stderr


def test_report_of_a_path_with_dotdot_writes_inside_the_plots_root(study, finished_sweeps):
    directory = study.copy_of(finished_sweeps.get(steps=3, repetitions=1))
    done = study.perfstudy("report", f"{directory}/{resultsdir.RUNS_DIR}/..", "--no-chart")
    assert done.returncode == 0, done.stderr
    assert (study.plots / directory.name).is_dir()
    assert not list(study.tmp.glob("*.png")) and not list(study.plots.glob("*.png"))


def test_an_interrupted_figure_never_lands_under_its_final_name(tmp_path, monkeypatch):
    import matplotlib.figure

    from pstudy.analyse import stats
    from pstudy.show import plots

    def torn_savefig(self, fname, *args, **kwargs):
        with open(fname, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + b"\0" * 115)  # what a Ctrl-C left behind: 123 bytes
        raise KeyboardInterrupt

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", torn_savefig)
    steps = fake_steps()
    meta = resultsdir.Meta({"model": {"config": "tiny"}}, tmp_path / "meta.json")
    with pytest.raises(KeyboardInterrupt):
        plots.draw_all(stats.summarise(steps), meta, tmp_path / "plots", ["png"])
    assert list((tmp_path / "plots").iterdir()) == []


def fake_steps():
    import pandas as pd
    rows = []
    for variant, threads, time_s in (("seq", 1, 1.0), ("forkjoin", 1, 1.0), ("forkjoin", 2, 0.55)):
        for step in range(1, 7):
            rows.append({"variant": variant, "compiler": "gcc", "kernels": "fast", "threads": threads,
                         "batch_subsize": None, "k": None, "repetition": 0, "step": step, "warmup": False,
                         "forward_s": time_s / 3, "backward_s": time_s / 2, "update_s": time_s / 6,
                         "step_s": time_s * (1 + step / 100), "loss": 5.0})
    frame = pd.DataFrame(rows)
    for col in ("batch_subsize", "k"):
        frame[col] = frame[col].astype("Int64")
    return frame


def test_a_checkout_git_cannot_read_is_named_in_a_warning(study):
    config = study.config(steps=3, repetitions=1, variants='["seq"]')  # one run: the warning is the point
    done = study.perfstudy("run", config, GIT_DIR=study.tmp / "no-such-git")
    assert done.returncode == 0, done.stderr
    assert "warning: the code's commit is unknown (git:" in done.stderr


@pytest.mark.parametrize("value, shown", [("nan", "nan"), ("inf", "inf"), ("-0.5", "-0.5"), ("fast", "fast"),
                                          ("", "(empty)")])
def test_step_times_read_back_are_checked(study, value, shown, finished_sweeps):
    import pandas as pd

    base = study.copy_of(finished_sweeps.get(steps=3, repetitions=2))
    candidate = study.copy_of(finished_sweeps.get(tag="candidate", steps=3, repetitions=2), base.name + "-2")
    path = candidate / resultsdir.STEPS_CSV
    steps = pd.read_csv(path, dtype=str, keep_default_na=False)
    steps.loc[4, "step_s"] = value
    steps.to_csv(path, index=False)
    for args in (("report", candidate, "--no-chart"), ("compare", base, candidate)):
        done = study.perfstudy(*args)
        one_line_error(done, f"{path}: row 6, column step_s: {shown}")


def test_a_comparison_where_nothing_could_be_tested_is_an_error(study, finished_sweeps):
    base = study.copy_of(finished_sweeps.get(steps=3, repetitions=1))
    candidate = study.copy_of(finished_sweeps.get(tag="candidate", steps=3, repetitions=1), base.name + "-2")
    done = study.perfstudy("compare", base, candidate)  # one run per point: no test can be made
    line = one_line_error(done, str(base), str(candidate))
    assert "could be tested" in line or "no regression could be detected" in line


def test_a_model_config_the_binaries_do_not_know_is_refused_before_any_run(study):
    config = study.config(steps=3, repetitions=1)
    for name in ("tinny", "tiny; touch x"):
        config.write_text(config.read_text().replace('config = "tiny"', f'config = "{name}"'))
        done = study.perfstudy("run", config)
        line = one_line_error(done, "model.config", "unknown configuration", "knows: d12, d6, small, tiny")
        assert name in line
        config.write_text(config.read_text().replace(f'config = "{name}"', 'config = "tiny"'))
    assert study.result_dirs() == []


@pytest.mark.parametrize("threads", ['"1..5000000"', "[1, 70000]"])
def test_thread_counts_are_bounded(study, threads):
    config = study.config(steps=3, repetitions=1)
    config.write_text(config.read_text().replace("threads = [1, 2]", f"threads = {threads}"))
    start = time.monotonic()
    done = study.perfstudy("run", config, "--dry-run")
    one_line_error(done, "sweep.threads", "above the limit of 4096")
    assert time.monotonic() - start < 20


def test_the_size_of_a_sweep_is_bounded_and_the_bound_can_be_raised(study):
    config = study.config(steps=3, repetitions=1)
    config.write_text(config.read_text().replace("threads = [1, 2]", 'threads = "1..2000"'))
    one_line_error(study.perfstudy("run", config, "--dry-run"), "runs is more than run.max_runs = 10000")
    config.write_text(config.read_text().replace("seed = 7", "seed = 7\nmax_runs = 20000"))
    done = study.perfstudy("run", config, "--dry-run")
    assert done.returncode == 0, done.stderr


def test_a_sweep_in_which_every_run_failed_exits_nonzero(study):
    done = study.perfstudy("run", study.config(steps=3, repetitions=1), FAKE_MODE="crash")
    assert done.returncode == 1
    assert "every run failed" in done.stderr
