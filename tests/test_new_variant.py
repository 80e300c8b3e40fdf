"""Adding a variant is its C file and one line in variants/LIST: a throwaway variant (a copy of
forkjoin under another name) is built in a copy of the repository and swept by that copy's
harness, with nothing else changed."""

import shutil
import subprocess
from pathlib import Path

import pandas as pd

from variant_helpers import copy_sources, tiny_sweep

REPO = Path(__file__).resolve().parents[1]

CONFIG = tiny_sweep(["seq", "forkjoin", "forkjoin2"], [1, 2], seed=3)


def copy_repository(dest):
    """The files git tracks (and untracked ones it does not ignore), and the build tree already
    made, with their times, so that make builds only what the new variant adds (nOS-V's
    autotools build and the benchmarks are a minute of the 2 cores otherwise)."""
    copy_sources(dest)
    built = REPO / "build"
    if built.is_dir():
        shutil.copytree(built, dest / "build", symlinks=True)


def test_a_new_variant_needs_its_c_file_and_one_line(tmp_path):
    repo = tmp_path / "repo"
    copy_repository(repo)
    source = (repo / "variants" / "forkjoin.c").read_text()
    assert 'EXECUTOR_NAME = "forkjoin"' in source
    (repo / "variants" / "forkjoin2.c").write_text(source.replace('EXECUTOR_NAME = "forkjoin"',
                                                                  'EXECUTOR_NAME = "forkjoin2"'))
    with open(repo / "variants" / "LIST", "a") as f:
        f.write("forkjoin2  threads\n")

    make = subprocess.run(["make", "-C", str(repo), "-j2", "build", "COMPILERS=gcc", "KERNEL_SETS=fast"],
                          capture_output=True, text=True, timeout=600)
    assert make.returncode == 0, make.stderr[-2000:]
    assert (repo / "build" / "gcc" / "fast" / "gpt2-forkjoin2").is_file()
    # the new variant's object and binary, and nothing that was there already
    rebuilt = [line for line in make.stdout.splitlines() if line.startswith(("gcc ", "cc ", "clang "))]
    assert rebuilt and all("forkjoin2" in line for line in rebuilt), "\n".join(rebuilt)

    (tmp_path / "new.toml").write_text(CONFIG)
    env = {"PERFSTUDY_RESULTS": str(tmp_path / "results"), "PERFSTUDY_PLOTS": str(tmp_path / "plots"),
           "PATH": "/usr/bin:/bin"}
    run = subprocess.run([str(repo / "harness" / "perfstudy"), "run", str(tmp_path / "new.toml")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    directory = Path(run.stdout.strip().splitlines()[-1])
    steps = pd.read_csv(directory / "steps.csv")
    assert sorted(set(zip(steps["variant"], steps["threads"]))) == [
        ("forkjoin", 1), ("forkjoin", 2), ("forkjoin2", 1), ("forkjoin2", 2), ("seq", 1)]
    assert (pd.read_csv(directory / "runs.csv")["status"] == "ok").all()
    # the same schedule as forkjoin: the same losses, bit for bit
    last = steps[steps["step"] == steps["step"].max()].groupby("variant")["loss"].unique()
    assert list(last["forkjoin2"]) == list(last["forkjoin"])

    report = subprocess.run([str(repo / "harness" / "perfstudy"), "report", str(directory), "--no-chart"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "forkjoin2" in report.stdout
    assert any(p.suffix == ".png" for p in (tmp_path / "plots" / directory.name).iterdir())
