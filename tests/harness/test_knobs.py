"""The distributed knobs through a results directory, on runs written as a sweep writes them but with
set step times (no binary, no mpirun): comm_threads a count in runs.csv and steps.csv, each knob's
ratio read pair by pair in the report, and compare pairing points by the knobs too. The same with
the real gpt2-mpi under mpirun: tests/harness/test_mpi_sweep.py."""

import io
import random

import pandas as pd
import pytest

from pstudy.analyse import knobs, tables
from pstudy.commands import report
from pstudy.errors import StudyError
from pstudy.measure import runner
from pstudy.store import config, resultsdir, sweep

REPETITIONS = 6
# what a knob's value does to every step of this made-up machine; and the machine's drift from one
# repetition to the next, far more than either, so that only ratios paired by repetition read them
EFFECT = {("overlap", "on"): 0.9, ("comm_threads", 2): 0.8}
DRIFT = 0.3


def written_sweep(tmp_path, name, comm_threads, slower=1.0, drift=DRIFT):
    """A finished results directory of forkjoin and of mpi at 2 ranks over overlap and `comm_threads`,
    every step `slower` times as long."""
    raw = {"model": {"config": "tiny", "B": 2, "T": 16}, "run": {"steps": 3, "repetitions": REPETITIONS},
           "sweep": {"variants": ["forkjoin", "mpi"], "threads": [1], "ranks": [2], "overlap": ["off", "on"],
                     "comm_threads": comm_threads}}
    study = config.from_dict(raw, f"{name}.toml", cpu_count=2)
    directory = resultsdir.ResultsDir(tmp_path / name)
    directory.runs_dir.mkdir(parents=True)
    rng = random.Random(name)
    for order, run in enumerate(sweep.schedule(study, seed=1)):
        step_s = 0.1 * slower * (1 + drift * run.repetition) * rng.uniform(0.99, 1.01)
        for (key, value), factor in EFFECT.items():
            step_s *= factor if getattr(run.point, key) == value else 1.0
        steps = [{"step": i, "loss": 6.0, "forward_s": step_s / 4, "backward_s": step_s / 2, "update_s": step_s / 4,
                  "step_s": step_s, "warmup": i == 0} for i in range(4)]
        outcome = runner.Outcome(runner.OK, info={"variant": run.point.variant}, steps=steps, wall_s=1.0)
        resultsdir.save_run(directory, run, order, outcome, runner.schedule_args(run.point))
        resultsdir.Journal(directory).append("run", run_id=run.run_id(), status="ok")
    meta = {"schema": resultsdir.META_SCHEMA, "name": name, "git": {"commit": name},
            "started": "2026-11-29T00:00:00", "config": study.as_dict()}
    tables.tabulate(directory, meta, "complete", "2026-11-29T00:10:00")
    return directory


def test_comm_threads_is_a_count_in_the_tables(tmp_path):
    d = written_sweep(tmp_path, "knobs", [1, 2])
    header = d.steps_csv.read_text().splitlines()[0].split(",")
    assert header[header.index("overlap") + 1] == "comm_threads"
    assert sorted(p.name for p in d.runs_dir.glob("*_K2_r0.json")) == \
        ["mpi_gcc_fast_t1_bsNA_kNA_R2_Ooff_K2_r0.json", "mpi_gcc_fast_t1_bsNA_kNA_R2_Oon_K2_r0.json"]
    runs = resultsdir.read_runs(d)
    steps = resultsdir.read_steps(d, runs)
    for frame in (runs, steps, tables.read_summary(d)):
        assert str(frame["comm_threads"].dtype) == "Int64"
        assert frame[frame["variant"] == "forkjoin"]["comm_threads"].isna().all()  # NA: not distributed
        mpi = frame[frame["variant"] == "mpi"]
        assert set(mpi[["overlap", "comm_threads"]].itertuples(index=False, name=None)) == \
            {("off", 1), ("on", 1), ("off", 2), ("on", 2)}
    # a count below 1 is a damaged row, named
    lines = d.runs_csv.read_text().splitlines()
    column = lines[0].split(",").index("comm_threads")
    row = next(i for i, line in enumerate(lines) if line.split(",")[column] == "2")
    cells = lines[row].split(",")
    cells[column] = "0"
    lines[row] = ",".join(cells)
    d.runs_csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(StudyError, match=rf"runs\.csv: row {row + 1}, column comm_threads: 0 is not a positive "
                                         "integer or NA"):
        resultsdir.read_runs(d)


def test_each_knob_ratio_is_read_pair_by_pair(tmp_path):
    d = written_sweep(tmp_path, "knobs", [1, 2])
    steps = resultsdir.read_steps(d)
    rows = knobs.ratios(steps[~steps["warmup"]])
    assert [(r["key"], r["value"], r["base"], r["point"]) for r in rows] == [
        ("overlap", "on", "off", "mpi gcc/fast r=2 t=1 comm_threads=1"),
        ("overlap", "on", "off", "mpi gcc/fast r=2 t=1 comm_threads=2"),
        ("comm_threads", 2, 1, "mpi gcc/fast r=2 t=1 overlap=off"),
        ("comm_threads", 2, 1, "mpi gcc/fast r=2 t=1 overlap=on")]
    for r in rows:
        effect = EFFECT[(r["key"], r["value"])]
        # within the runs' own 1% noise of the effect, where the 30% drift would swamp it unpaired
        assert r["pairs"] == REPETITIONS and r["low"] <= r["estimate"] <= r["high"]
        assert effect * 0.98 < r["low"] and r["high"] < effect * 1.02, r
    out = io.StringIO()
    report.write_knob_ratios(out, d, tables.read_summary(d))
    lines = out.getvalue().splitlines()
    at = lines.index("comm_threads 2/1, step ratio paired by repetition [95% interval]:")
    assert lines[at + 1].startswith("  mpi gcc/fast r=2 t=1 overlap=off: 0.") and lines[at + 1].endswith("(6 pairs)")
    assert lines[at + 2].startswith("  mpi gcc/fast r=2 t=1 overlap=on: 0.")
    assert "overlap on/off, step ratio paired by repetition [95% interval]:" in lines


def test_compare_pairs_points_by_comm_threads(study, tmp_path):
    # compare's samples are not paired: machines that do not drift
    base = written_sweep(tmp_path, "base", [1, 2], drift=0.0)
    candidate = written_sweep(tmp_path, "candidate", [2], slower=1.25, drift=0.0)
    table = tmp_path / "compare.csv"
    done = study.perfstudy("compare", base, candidate, "--csv", table)
    assert done.returncode == 1, done.stdout + done.stderr  # 25% slower: regressed
    assert "mpi gcc/fast r=2 t=1 overlap=on comm_threads=2" in done.stdout
    assert "comm_threads=1" not in done.stdout  # never set against a run at 2
    assert "2 point(s) only in the base" in done.stderr and "comm_threads=1" in done.stderr
    rows = pd.read_csv(table, na_values=["NA"], keep_default_na=False)
    mpi = rows[rows["variant"] == "mpi"]
    assert set(mpi[["overlap", "comm_threads"]].itertuples(index=False, name=None)) == {("off", 2), ("on", 2)}
    assert (mpi[mpi["phase"] == "step"]["ratio"].between(1.2, 1.3)).all()
