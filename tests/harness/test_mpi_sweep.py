"""A sweep over ranks with the real gpt2-mpi under a real mpirun: the ranks dimension, strong and
weak scaling, comm_s in steps.csv, the launcher and the rank placement in meta.json, and a missing
mpirun."""

import itertools
import json
import os
import re

import pandas as pd
import pytest

from conftest import REPO, Study

pytestmark = pytest.mark.needs("mpi")

CONFIG = """
[model]
config = "tiny"
B = 2
T = 16

[run]
steps = 2
warmup = 1
repetitions = 1
seed = 3

[sweep]
variants = ["seq", "mpi"]
threads = [1]
ranks = [1, 2]
scaling = "{scaling}"

[launcher]
kind = "local"
{launcher}

[analysis]
trace = false
ceilings = false
roofline = false
"""


@pytest.fixture
def real(tmp_path):
    build = REPO / "build"
    if not (build / "gcc" / "fast" / "gpt2-mpi").exists():
        pytest.fail("build/gcc/fast/gpt2-mpi is missing: run `make` first")
    return Study(tmp_path, build)


# oversubscribed: the test machine may have fewer cores than ranks x threads
ARGS = 'args = ["--oversubscribe", "--bind-to", "none"]'


@pytest.mark.parametrize("scaling", ["strong", "weak"])
def test_ranks_sweep_with_mpirun(real, scaling):
    done = real.perfstudy("run", real.config(text=CONFIG.format(scaling=scaling, launcher=ARGS)), timeout=120)
    assert done.returncode == 0, done.stderr
    [d] = real.result_dirs()
    steps = pd.read_csv(d / "steps.csv")
    assert "ranks" in steps.columns and "comm_s" in steps.columns
    points = sorted(steps.groupby(["variant", "ranks"], dropna=False).groups, key=str)
    assert len(points) == 3  # seq (no ranks), mpi at 1 and 2 ranks
    assert steps[steps["variant"] == "seq"]["ranks"].isna().all()
    mpi = steps[steps["variant"] == "mpi"]
    assert sorted(mpi["ranks"].unique()) == [1, 2] and (mpi["comm_s"] >= 0).all()
    summary = pd.read_csv(d / "summary.csv")
    assert len(summary) == 3
    meta = json.loads((d / "meta.json").read_text())
    assert meta["launcher"]["kind"] == "local" and meta["launcher"]["program"] == "mpirun"
    two = [placement for run_id, placement in meta["rank_placement"].items() if "_R2_" in run_id]
    assert len(two) == 1 and [p["rank"] for p in two[0]] == [0, 1]
    # strong scaling: model.B is the global batch; weak: each rank's
    records = [json.loads(p.read_text()) for p in (d / "runs").glob("mpi_*_R2_*.json")]
    [record] = records
    assert record["info"]["B"] == (2 if scaling == "strong" else 4)
    launcher = record["command"][:record["command"].index(next(c for c in record["command"] if "gpt2-mpi" in c))]
    assert launcher[:4] == ["mpirun", "-q", "-np", "2"]
    assert ("--allow-run-as-root" in launcher) == (os.geteuid() == 0)


def test_missing_mpirun_is_one_line_exit_2(real):
    cfg = real.config(text=CONFIG.format(scaling="strong", launcher='command = "no-such-mpirun"'))
    done = real.perfstudy("run", cfg)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "launcher.kind: local needs no-such-mpirun, which is not on PATH" in line
    assert real.result_dirs() == []


def test_strong_scaling_needs_a_sequence_per_rank(real):
    cfg = real.config(text=CONFIG.format(scaling="strong", launcher=ARGS).replace("ranks = [1, 2]", "ranks = [4]"))
    done = real.perfstudy("run", cfg)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "sweep.ranks: 4 ranks cannot share a global batch of model.B = 2" in line


# the same tiny sweep of gpt2-mpi at 2 ranks, over its overlap and its communication threads, on the
# ring (one collective, passed): 4 points. Needs a gpt2-mpi with --comm-threads.
KNOBS = CONFIG.replace('variants = ["seq", "mpi"]', 'variants = ["mpi"]').replace("repetitions = 1", "repetitions = 6") \
    .replace("ranks = [1, 2]", 'ranks = [2]\noverlap = ["off", "on"]\ncollective = ["ring", "direct"]\n'
             'comm_threads = [1, 2]')
KNOB_KEYS = ("collective", "overlap", "comm_threads")
KNOB_POINTS = set(itertools.product(("ring", "direct"), ("off", "on"), (1, 2)))


def test_distributed_knobs_are_swept_reported_and_compared(real):
    done = real.perfstudy("run", real.config(text=KNOBS.format(scaling="strong", launcher=ARGS)), timeout=600)
    assert done.returncode == 0, done.stderr
    [d] = real.result_dirs()
    steps = pd.read_csv(d / "steps.csv")
    assert {"update", *KNOB_KEYS} <= set(steps.columns)
    assert steps["update"].isna().all()  # not swept: the binary's default, NA
    assert set(steps[list(KNOB_KEYS)].itertuples(index=False, name=None)) == KNOB_POINTS
    assert len(pd.read_csv(d / "summary.csv")) == 8
    meta = json.loads((d / "meta.json").read_text())
    assert meta["launcher"]["overlap"] == ["off", "on"] and meta["launcher"]["comm_threads"] == [1, 2]
    assert meta["launcher"]["collective"] == ["ring", "direct"]
    [record] = [json.loads(p.read_text()) for p in (d / "runs").glob("mpi_*_R2_Cdirect_Oon_K2_r0.json")]
    command = record["command"]
    assert [command[command.index(option) + 1] for option in ("--collective", "--overlap", "--comm-threads")] == \
        ["direct", "on", "2"]
    assert "--update" not in command and record["info"]["comm_threads"] == 2
    # each knob's ratio, paired by repetition, with its interval from 6 pairs (the fewest a 95%
    # interval takes), at every setting of the other two: one line each, its estimate among the
    # repetitions' own ratios (each run's median step)
    report = real.perfstudy("report", d, "--no-figures", "--no-chart", timeout=120)
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    runs = steps[~steps["warmup"]].groupby([*KNOB_KEYS, "repetition"])["step_s"].median().reset_index()
    for key, value, base in (("collective", "direct", "ring"), ("overlap", "on", "off"), ("comm_threads", 2, 1)):
        at = lines.index(f"{key} {value}/{base}, step ratio paired by repetition [95% interval]:")
        others = [k for k in KNOB_KEYS if k != key]
        for line in lines[at + 1:at + 5]:
            label, figures = line.split(": ")
            fixed = dict(re.findall(r"(\w+)=(\S+)", label))
            assert label.startswith("  mpi gcc/fast r=2 t=1 ") and set(fixed) == {"r", "t", *others}, line
            assert re.fullmatch(r"(\d+\.\d{3}) \[(\d+\.\d{3}), (\d+\.\d{3})\] \(6 pairs\)", figures), line
            estimate, low, high = map(float, re.findall(r"\d+\.\d{3}", figures)[:3])
            assert low <= estimate <= high
            mine = runs
            for other in others:
                mine = mine[mine[other].astype(str) == fixed[other]]
            pairs = (mine[mine[key] == value].set_index("repetition")["step_s"]
                     / mine[mine[key] == base].set_index("repetition")["step_s"])
            assert len(pairs) == 6 and pairs.min() - 1e-3 <= estimate <= pairs.max() + 1e-3, line
    # compare pairs the points by every key, the knobs too
    again = real.copy_of(d, d.name + "-2")
    table = real.tmp / "compare.csv"
    compared = real.perfstudy("compare", d, again, "--csv", table, timeout=120)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "mpi gcc/fast r=2 t=1 collective=direct overlap=on comm_threads=2" in compared.stdout
    rows = pd.read_csv(table)
    assert set(rows[list(KNOB_KEYS)].itertuples(index=False, name=None)) == KNOB_POINTS
