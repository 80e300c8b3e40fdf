"""The noise study (`perfstudy noise`) never keeps a sweep the co-runner did not run beside
throughout, and refuses what would spoil its sweeps before the first one."""

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import conftest

REPO = Path(__file__).resolve().parents[2]
PERFSTUDY = REPO / "harness" / "perfstudy"
DISTURB = REPO / "build" / "probes" / "disturb"


def sweep_config(steps):
    """One sequential run of `steps` steps a sweep, nothing measured after it."""
    return conftest.SMALL_CONFIG.format(steps=steps, repetitions=1, timeout_s=60, variants='["seq"]') + \
        "\n[analysis]\nceilings = false\nroofline = false\n"


needs_disturb = pytest.mark.skipif(not DISTURB.exists(), reason="make build/probes/disturb")


@pytest.fixture
def noise():
    """perfstudy noise in this process: noise(args) -> its exit status."""
    from pstudy import cli

    return lambda args: cli.main(["noise", *args])


def one_line(capsys, *needles):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and all(n in err for n in needles), err
    return err


def noise_layout(tmp_path, finished_sweeps, record=True):
    """DIR/tiny/quiet-r0/<sweep> and DIR/tiny/d0.25-p10000us-r0/<sweep>, the disturbed one with the
    co-runner's record or without (an interrupted sweep)."""
    out = tmp_path / "noise"
    directory = finished_sweeps.get()
    shutil.copytree(directory, out / "tiny" / "quiet-r0" / directory.name)
    disturbed = Path(shutil.copytree(directory, out / "tiny" / "d0.25-p10000us-r0" / directory.name))
    if record:
        (disturbed / "disturb.json").write_text(json.dumps({"cpus": [0], "duty": 0.25, "period_us": 10000}))
    return out, disturbed


def test_check_refuses_a_disturbed_sweep_without_the_corunners_record(noise, tmp_path, finished_sweeps, capsys):
    out, disturbed = noise_layout(tmp_path, finished_sweeps, record=False)
    assert noise(["check", str(out)]) == 2
    one_line(capsys, str(disturbed), "disturb.json", "interrupted")


def test_check_refuses_a_disturbed_sweep_of_another_problem(noise, tmp_path, finished_sweeps, capsys):
    out, disturbed = noise_layout(tmp_path, finished_sweeps)
    meta = json.loads((disturbed / "meta.json").read_text())
    meta["config"]["model"]["B"] = 8
    (disturbed / "meta.json").write_text(json.dumps(meta))
    assert noise(["check", str(out)]) == 2
    one_line(capsys, str(disturbed), "B=8", "not comparable")


@needs_disturb
def test_run_refuses_an_interrupted_disturbed_sweep_before_measuring(noise, tmp_path, finished_sweeps, capsys):
    out, disturbed = noise_layout(tmp_path, finished_sweeps, record=False)
    config = tmp_path / "tiny.toml"
    config.write_text(sweep_config(2))
    shutil.rmtree(out / "tiny" / "quiet-r0")
    assert noise(["run", "--out", str(out), "--config", str(config), "--duty", "0.25",
                    "--period-us", "10000"]) == 2
    one_line(capsys, str(disturbed.parent), "disturb.json")
    assert not (out / "tiny" / "quiet-r0").exists()  # nothing ran


@pytest.mark.parametrize("options, needles", [
    (["--cpus", "99"], ["--cpus 99", "CPU 99"]), (["--cpus", "0,0"], ["--cpus 0,0", "twice"]),
    (["--cpus", "x"], ["--cpus"]), (["--machine", "nonexist.toml"], ["nonexist.toml"])])
def test_run_refuses_a_corunner_or_machine_that_cannot_be_had_before_measuring(noise, tmp_path, capsys, options,
                                                                              needles):
    config = tmp_path / "tiny.toml"
    config.write_text(sweep_config(2))
    out = tmp_path / "noise"
    assert noise(["run", "--out", str(out), "--config", str(config), *options]) == 2
    one_line(capsys, *needles)
    assert not out.exists()


def processes_naming(text):
    """Pids of the processes whose command line holds `text`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            pass
    return found


@needs_disturb
def test_a_killed_noise_study_leaves_no_sweep_running_undisturbed(tmp_path, build_tree):
    config = tmp_path / "tiny.toml"
    config.write_text(sweep_config(15))
    out = tmp_path / "noise"
    env = dict(os.environ, PERFSTUDY_BUILD_DIR=str(build_tree), FAKE_SLEEP_S="0.2")
    proc = subprocess.Popen([PERFSTUDY, "noise", "run", "--out", out, "--config", config, "--duty", "0.25",
                             "--period-us", "10000"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    disturbed = out / "tiny" / "d0.25-p10000us-r0"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(disturbed.glob("*/runs")):
        time.sleep(0.1)
    assert list(disturbed.glob("*/runs")), proc.stderr.read() if proc.poll() is not None else "no disturbed sweep"
    proc.kill()
    proc.wait()
    left = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        left = processes_naming(str(tmp_path))
        if not left:
            break
        time.sleep(0.2)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, "the sweep outlived the noise study"
    [directory] = [p for p in disturbed.iterdir() if (p / "meta.json").is_file()]
    assert json.loads((directory / "meta.json").read_text())["status"] != "complete"
    assert not (directory / "disturb.json").exists()


@needs_disturb
@pytest.mark.parametrize("cpus", ["0,0", "0-1,1"])
def test_the_corunner_refuses_a_cpu_given_twice(cpus):
    done = subprocess.run([str(DISTURB), "--cpus", cpus, "--seconds", "0.1"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "given twice" in done.stderr, done.stderr
