"""Every table's reader checks types and ranges: runs.csv's wall, steal and switch columns, steps.csv's
disturbance columns, the noise sensitivity table, a trace's CPU times; each damage one line."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

from pstudy.errors import StudyError
from pstudy.show import noisefigure
from pstudy.store import resultsdir, traceformats


def damaged(directory, table, column, value, row=1):
    """The table (runs.csv or steps.csv) of `directory` with one cell replaced."""
    path = directory / table
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[row].split(",")
    cells[header.index(column)] = value
    lines[row] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def sweep(study, finished_sweeps):
    return study.copy_of(finished_sweeps.get())


@pytest.mark.parametrize("column, value", [("wall_s", "abc"), ("wall_s", "-3"), ("wall_s", "nan"),
                                           ("steal_s", "abc"), ("steal_s", "-3"), ("steal_s", "nan"),
                                           ("steal_s", "1e300"), ("involuntary_switches", "abc"),
                                           ("involuntary_switches", "-3"), ("involuntary_switches", "1.5")])
def test_junk_in_runs_csv_is_refused(sweep, column, value):
    damaged(sweep, "runs.csv", column, value)
    with pytest.raises(StudyError, match=rf"runs\.csv: row 2, column {column}: "):
        resultsdir.read_runs(sweep)


def test_report_of_junk_in_runs_csv_or_the_noise_table_is_one_line(study, sweep):
    path = damaged(sweep, "runs.csv", "steal_s", "abc")
    proc = study.perfstudy("report", sweep, "--no-figures")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and f"{path}: row 2" in proc.stderr, proc.stderr
    damaged(sweep, "runs.csv", "steal_s", "NA")
    rows = [dict(r) for r in NOISE_ROWS]
    rows[1]["threads"] = "abc"
    noisefigure.write(sweep, rows)
    proc = study.perfstudy("report", sweep, "--no-figures")
    told = [line for line in proc.stderr.splitlines() if "roofline skipped" not in line]  # this sweep has no ceilings
    assert proc.returncode == 2 and len(told) == 1 and "noise_sensitivity.csv: row 3, column threads" in told[0], \
        proc.stderr


@pytest.mark.parametrize("column, value", [("steal_s", "1e300"), ("steal_s", "nan"),
                                           ("involuntary_switches", "1.5")])
def test_implausible_step_disturbance_is_one_line(sweep, column, value):
    damaged(sweep, "steps.csv", column, value)
    with pytest.raises(StudyError, match=rf"steps\.csv: row 2, column {column}: "):
        resultsdir.read_steps(sweep)


def test_runs_without_the_disturbance_columns_still_read(sweep):
    path = sweep / "runs.csv"
    import pandas as pd

    frame = pd.read_csv(path, na_values=["NA"], keep_default_na=False).drop(columns=["steal_s",
                                                                                      "involuntary_switches"])
    frame.to_csv(path, index=False, na_rep="NA")
    assert len(resultsdir.read_runs(sweep)) == len(frame)


# a noise sensitivity table as perfstudy noise writes it
NOISE_ROWS = [{"variant": "forkjoin", "compiler": "gcc", "kernels": "fast", "threads": 2, "duty": d, "cpus": "0",
               "period_us": 10000, "quiet_step_s": 1.0, "disturbed_step_s": s, "slowdown": s}
              for d, s in ((0.25, 1.2), (0.5, 1.6))]


@pytest.mark.parametrize("column, value, needle", [
    ("threads", "abc", "not a positive integer"), ("threads", "0", "not a positive integer"),
    ("period_us", "abc", "microseconds"), ("period_us", "-5", "microseconds"), ("slowdown", "1e308", "at most"),
    ("slowdown", "inf", "positive number"), ("duty", "2", "at most 1"), ("variant", "bogus", "not a variant"),
    ("slowdown_high", "1e300", "at most")])
def test_a_damaged_noise_table_is_refused(tmp_path, column, value, needle):
    rows = [dict(r) for r in NOISE_ROWS]
    rows[1][column] = value
    noisefigure.write(tmp_path, rows)
    with pytest.raises(StudyError, match=rf"noise_sensitivity\.csv: row 3, column {column}: .*{needle}"):
        noisefigure.read(tmp_path)


def test_a_huge_cpu_time_is_said_in_a_few_digits(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text("iteration,op,kernel,layer,phase,label,b0,b1,x0,x1,thread,start_s,end_s,cpu_s\n"
                    "0,0,matmul_fwd,0,forward,matmul_fwd L0,0,1,0,1,0,0.0,0.5,1e300\n")
    with pytest.raises(StudyError, match="of wall time") as refused:
        traceformats.read_chunks(path)
    assert len(str(refused.value)) < 200 + len(str(path)), str(refused.value)
