"""the harness at its edges: a results directory where every run failed still reports,
a damaged history is one line, the binaries are asked for their limits, a non-finite timeout is
refused, a diverged run is recorded as such, a distributed point whose ranks disagree is recorded
as failed while the sweep goes on, regress refuses an empty --base and names a compiler's error,
and a Slurm client that misbehaves is handled."""

import importlib
import json
import os
import subprocess
import sys
import time

import pandas as pd
import pytest

from conftest import REPO, Study

REAL_BUILD = REPO / "build"
needs_real = pytest.mark.skipif(not (REAL_BUILD / "gcc" / "fast" / "gpt2-seq").is_file(),
                                reason="needs the real binaries (make build)")


def pstudy_module(name):
    """A harness module by name, wherever the package keeps it (it may move into a subpackage)."""
    import pkgutil

    import pstudy
    for info in pkgutil.walk_packages(pstudy.__path__, "pstudy."):
        if info.name.rsplit(".", 1)[-1] == name and not info.ispkg and ".commands." not in info.name:
            return importlib.import_module(info.name)
    raise ImportError(name)


def one_line(done, status=2):
    assert done.returncode == status, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


# ---------------------------------------------------------------------------- every results directory reports

def test_report_of_a_sweep_where_every_run_failed(study):
    """Was: KeyError: 'step_median_s' in terminal.py, exit 1, even with --no-chart --no-figures."""
    cfg = study.config(variants='["seq", "forkjoin"]', repetitions=1, steps=2)
    assert study.perfstudy("run", cfg, FAKE_MODE="crash").returncode == 1
    [d] = study.result_dirs()
    for extra in (["--no-chart", "--no-figures"], []):
        done = study.perfstudy("report", d, *extra)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        assert "No run succeeded" in done.stdout
        assert "3 failed runs" in done.stdout and done.stdout.count("simulated failure") == 3
    for command in (["compare", d, d], ["trace", d], ["predict", d], ["roofline", d]):
        one_line(study.perfstudy(*command))


def test_report_of_a_sweep_where_every_run_timed_out(study):
    cfg = study.config(variants='["seq"]', repetitions=1, steps=2, timeout_s=1)
    assert study.perfstudy("run", cfg, FAKE_MODE="hang").returncode == 1
    [d] = study.result_dirs()
    done = study.perfstudy("report", d, "--no-chart", "--formats", "png")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "timeout" in done.stdout


HISTORY_HEAD = ("date,commit,commit_short,dirty,base_commit,config,config_digest,host,variant,compiler,kernels,threads,"
                "batch_subsize,k,ranks,phase,median_s,base_median_s,ratio,ci_low,ci_high,p_holm,ratio_to_previous,"
                "regressed,session,metric,kernel,instructions,base_instructions\n")
TIME_ROW = ("2026-01-01T00:00,abcdef1234,abcdef1,False,1234567890,quick,0123456789abcdef,host1,seq,gcc,fast,{threads},"
            "NA,NA,NA,step,0.5,0.5,{ratio},0.98,1.02,0.5,NA,{regressed},/s,time,NA,NA,NA\n")
COUNT_ROW = ("2026-01-01T00:00,abcdef1234,abcdef1,False,1234567890,quick,0123456789abcdef,host1,seq,gcc,fast,1,"
             "NA,NA,NA,NA,NA,NA,1.0,NA,NA,NA,NA,False,/s,instructions,total,{ins},1000\n")


@pytest.mark.parametrize("row,needle", [
    (COUNT_ROW.format(ins="abc"), "line 3: instructions: 'abc' is not a number"),
    (COUNT_ROW.format(ins="nan"), "line 3: instructions: nan is not a finite number"),
    (COUNT_ROW.format(ins="-5"), "line 3: instructions: -5 is negative"),
    (TIME_ROW.format(threads="abc", ratio=1.0, regressed="False"), "line 3: threads: 'abc' is not a number"),
    (TIME_ROW.format(threads="-5", ratio=1.0, regressed="False"), "line 3: threads: -5 is not a count"),
    (TIME_ROW.format(threads=1, ratio="nan", regressed="False"), "line 3: ratio: nan is not a finite number"),
    (TIME_ROW.format(threads=1, ratio=1.0, regressed="maybe"), "line 3: regressed: 'maybe' is neither"),
    ("2026-01-01T00:00,abcdef1234,abcdef1\n", "line 3: "),
])
def test_a_damaged_history_row_is_one_line(study, row, needle):
    """Was: tracebacks (abc, nan, a short row), or impossible values drawn as if real."""
    path = study.tmp / "history.csv"
    path.write_text(HISTORY_HEAD + TIME_ROW.format(threads=1, ratio=1.0, regressed="False") + row)
    line = one_line(study.perfstudy("history", "--history", path))
    assert str(path) in line and needle in line, line


def test_the_rows_the_damaged_ones_spoil_read_when_whole(study):
    """The damaged rows above spoil rows that read on their own: a time row and a count row."""
    path = study.tmp / "history.csv"
    path.write_text(HISTORY_HEAD + TIME_ROW.format(threads=1, ratio=1.0, regressed="True")
                    + COUNT_ROW.format(ins=1200))
    done = study.perfstudy("history", "--history", path)
    assert done.returncode == 0 and "1 confirmed regression" in done.stdout, done.stderr


# ---------------------------------------------------------------------------- config validation

REAL_CONFIG = """
[model]
config = "tiny"
B = {B}
T = {T}

[run]
steps = {steps}
warmup = 1
repetitions = 1
timeout_s = {timeout}

[sweep]
variants = ["seq", "tasks"]
token_chunk = [8]

[analysis]
trace = false
ceilings = false
roofline = false
"""


@needs_real
@pytest.mark.parametrize("B,T,steps,key,needle", [
    (2, 99999, 2, "model.T", "exceeds the model's max_seq_len 64"),
    (2, 16, 100_000_000, "run.steps", "out of range"),
    (1_048_576, 64, 2, "model.B, model.T", "exceeds the limit"),
])
def test_the_binaries_are_asked_for_their_limits(tmp_path, B, T, steps, key, needle):
    """Was: every run recorded as crashed and exit 1. Now exit 2 before anything runs, naming the
    key, with the binary's own reason (its --check)."""
    real = Study(tmp_path, REAL_BUILD)
    cfg = real.config(text=REAL_CONFIG.format(B=B, T=T, steps=steps, timeout=60))
    line = one_line(real.perfstudy("run", cfg))
    assert f"{key}: " in line and needle in line and "refuses the run" in line, line
    assert real.result_dirs() == []


@needs_real
def test_an_option_the_binary_lacks_is_named_by_its_sweep_key():
    """A build older than the harness has no option for a newer key: its refusal names the key. The
    real gpt2-forkjoin has none of gpt2-mpi's options, as such a build lacks one."""
    from pstudy.measure import runner
    from pstudy.store import config, sweep
    raw = {"model": {"config": "tiny", "B": 2, "T": 16}, "run": {"steps": 2},
           "sweep": {"variants": ["mpi"], "threads": [1], "ranks": [2], "overlap": "on"}}
    study = config.from_dict(raw, "x.toml", cpu_count=2)
    [point] = sweep.points(study)
    said = runner.check_run(study, point, str(REAL_BUILD / "gcc" / "fast" / "gpt2-forkjoin"), str(REPO))
    assert said == "sweep.overlap: unknown option '--overlap' (see --help) (gpt2-forkjoin refuses the run: a " \
        "build older than the harness? rebuild with make)"


@pytest.mark.parametrize("value", ["inf", "1e300", "nan", "-inf"])
def test_timeout_must_be_finite(study, value):
    """Was: inf and 1e300 passed, then an OverflowError traceback left meta.json "running"."""
    text = (study.config().read_text().replace("timeout_s = 20", f"timeout_s = {value}"))
    line = one_line(study.perfstudy("run", study.config(name="inf", text=text)))
    assert "run.timeout_s: expected a positive number of seconds" in line
    assert study.result_dirs() == []


def test_a_diverged_run_is_recorded_as_such(study):
    """The binaries write "loss": null for a NaN loss; the run is failed with that reason."""
    cfg = study.config(variants='["seq", "forkjoin"]', repetitions=1, steps=2)
    done = study.perfstudy("run", cfg, FAKE_MODE="diverge", FAKE_MODE_VARIANTS="seq")
    assert done.returncode == 0, done.stderr
    [d] = study.result_dirs()
    failures = pd.read_csv(d / "failures.csv")
    assert list(failures["variant"]) == ["seq"] and "training diverged" in failures["error"][0]
    assert json.loads((d / "meta.json").read_text())["status"] == "complete"


# ---------------------------------------------------------------------------- a distributed point that fails

MPI_CONFIG = """
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

[launcher]
kind = "local"
command = "{wrapper}"
args = ["--oversubscribe", "--bind-to", "none"]

[analysis]
trace = false
ceilings = false
roofline = false
"""
# mpirun in MPMD form, the last rank given another sequence length: ranks that disagree
DISAGREEING_MPIRUN = """#!{python}
import os, sys
args = sys.argv[1:]
at = next(i for i, a in enumerate(args) if a.endswith("gpt2-mpi"))
options, program = args[:at], args[at:]
ranks = int(options[options.index("-np") + 1])
del options[options.index("-np"):options.index("-np") + 2]
if ranks == 1:
    os.execvp("mpirun", ["mpirun", *options, "-np", "1", *program])
other = list(program)
other[other.index("-T") + 1] = "8"
cmd = ["mpirun", *options, "-np", str(ranks - 1), *program, ":", "-np", "1", *other]
os.execvp("mpirun", cmd)
"""


@needs_real
@pytest.mark.needs("mpi")
def test_a_distributed_point_whose_ranks_disagree_is_recorded_and_the_sweep_goes_on(tmp_path):
    real = Study(tmp_path, REAL_BUILD)
    wrapper = tmp_path / "mpirun-disagreeing"
    wrapper.write_text(DISAGREEING_MPIRUN.format(python=sys.executable))
    wrapper.chmod(0o755)
    start = time.monotonic()
    done = real.perfstudy("run", real.config(text=MPI_CONFIG.format(wrapper=wrapper)), timeout=120)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 60
    [d] = real.result_dirs()
    failures = pd.read_csv(d / "failures.csv")
    [failure] = failures.to_dict("records")
    assert failure["variant"] == "mpi" and failure["ranks"] == 2 and failure["status"] == "crashed"
    assert "exit status 2: gpt2-mpi: rank 1 disagrees with rank 0 on -T: 8 there, 16 on rank 0" in failure["error"]
    runs = pd.read_csv(d / "runs.csv", na_values=["NA"], keep_default_na=False)
    assert sorted(runs[runs["status"] == "ok"]["variant"]) == ["mpi", "seq"]  # mpi at 1 rank, and seq
    assert json.loads((d / "meta.json").read_text())["status"] == "complete"


# ---------------------------------------------------------------------------- regress

def test_regress_refuses_an_empty_base(study):
    """Was: `--base=` silently took the default base."""
    for flag in ("--base=", "--candidate=", "--base-build="):
        line = one_line(study.perfstudy("regress", "--config", study.config(), flag))
        assert line.startswith(f"perfstudy regress: {flag.rstrip('=')}: empty"), line


def test_a_base_that_fails_to_build_is_reported_with_the_compilers_error(study, tmp_path):
    """Was: the log's last line, `make: Leaving directory ...`, instead of the compiler's error."""
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (repo / "sub").mkdir()
    (repo / "broken.c").write_text("int main(void) { return nope; }\n")
    (repo / "sub" / "Makefile").write_text("build:\n\tcc -c ../broken.c -o /dev/null\n")
    (repo / "Makefile").write_text("build:\n\t$(MAKE) -C sub build\n")
    git("add", "-A")
    git("commit", "-qm", "broken")
    config = study.config(name="regress", repetitions=7)
    done = study.perfstudy("regress", "--repo", repo, "--config", config, "--base", "HEAD", "--candidate", "HEAD",
                           timeout=120)
    assert done.returncode == 125, done.stdout + done.stderr  # regress: a side cannot be measured
    line = [x for x in done.stderr.splitlines() if "build of" in x][0]
    assert "error:" in line and "nope" in line and "Leaving directory" not in line, line


# ---------------------------------------------------------------------------- Slurm clients that misbehave

def fake_slurm(tmp_path, sbatch):
    bin_dir = tmp_path / "fake-slurm"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\n" + sbatch)
    (bin_dir / "sbatch").chmod(0o755)
    for program in ("squeue", "sacct", "scontrol"):  # nothing queued, nothing known
        (bin_dir / program).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / program).chmod(0o755)
    return bin_dir


def test_sbatch_printing_no_job_id_is_one_line(study, tmp_path):
    """Was: "sbatch ... failed: exit status 0"."""
    bin_dir = fake_slurm(tmp_path, "echo 'Submitted batch job soon'\n")
    done = study.perfstudy("run", "--slurm", study.config(repetitions=1),
                           PATH=f"{bin_dir}:{os.environ['PATH']}")
    assert done.returncode == 2, done.stderr
    [line] = [x for x in done.stderr.splitlines() if "--slurm: sbatch" in x]  # after the sweep's own progress lines
    assert "printed 'Submitted batch job soon' where --parsable prints the job id" in line, line
    assert "exit status 0" not in line


def test_an_abandoned_hung_sbatch_leaves_no_process_behind(tmp_path, monkeypatch):
    """Was: the timeout killed sbatch alone; the children it started ran on."""
    slurm = pstudy_module("slurm")
    pidfile = tmp_path / "child.pid"
    bin_dir = fake_slurm(tmp_path, f"sleep 300 &\necho $! > {pidfile}\nwait\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(slurm, "COMMAND_TIMEOUT_S", 1)
    start = time.monotonic()
    code, out, err = slurm.slurm_command(["sbatch", "--parsable", "x.sh"])
    assert code != 0 and "no answer in 1 s" in err
    assert time.monotonic() - start < 10
    child = int(pidfile.read_text())
    for _ in range(50):  # the kill is sent; the kernel may take a moment to reap
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail("sbatch's child outlived it")
