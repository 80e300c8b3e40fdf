"""perfstudy run --slurm against a real Slurm: munged, slurmctld and slurmd started by the fixture on
this machine (one node, its CPUs), Debian's slurm-wlm and munge installed when missing. A sweep
through Slurm gives the results directory a local sweep gives; an interrupted one resumes without
submitting a job twice; a cancelled job is recorded with Slurm's reason while the sweep goes on; a
failed submission is one line, exit 2, and loses nothing."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tarfile
import time

import pandas as pd
import pytest

import components
from conftest import REPO, Study, make_build_tree

DAEMON_START_S = 60


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, lines=5):
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A one-node Slurm cluster of this machine, its own munged included; yields the environment
    its clients need (SLURM_CONF). Fails, naming the daemon and its log, when one cannot start."""
    if os.geteuid() != 0:
        pytest.skip("slurmd runs jobs as their users and must be started as root")
    done = subprocess.run([str(REPO / "scripts" / "install-deps.sh"), "slurm-wlm", "munge"], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"installing slurm-wlm and munge failed: {done.stderr[-2000:]}"
    components.require("slurm")  # where nothing is installed for us, Slurm is there or the test is skipped
    d = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool", "munge"):
        (d / sub).mkdir()
    (d / "munge").chmod(0o700)
    key = d / "munge" / "munge.key"
    shutil.copyfile("/etc/munge/munge.key", key)
    key.chmod(0o600)
    sock = d / "munge" / "munge.sock"
    started = []  # pid files of the daemons this fixture started, stopped in reverse order
    host = socket.gethostname().split(".")[0]
    conf = d / "slurm.conf"
    conf.write_text(f"""ClusterName=pstudytest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=3600
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
    env = dict(os.environ, SLURM_CONF=str(conf))
    daemons = [
        ("munged", ["munged", "--force", f"--socket={sock}", f"--key-file={key}", f"--pid-file={d}/munged.pid",
                    f"--log-file={d}/munged.log", f"--seed-file={d}/munge/seed"], d / "munged.pid", d / "munged.log"),
        ("slurmctld", ["slurmctld", "-f", str(conf)], d / "slurmctld.pid", d / "slurmctld.log"),
        ("slurmd", ["slurmd", "-f", str(conf)], d / "slurmd.pid", d / "slurmd.log"),
    ]
    try:
        for name, cmd, pid_file, log in daemons:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=30)
            if r.returncode != 0:
                pytest.fail(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}\n{tail(log)}")
            for _ in range(100):
                if pid_file.exists() and pid_file.read_text().strip():
                    break
                time.sleep(0.1)
            else:
                pytest.fail(f"{name} wrote no pid file {pid_file}\n{tail(log)}")
            started.append(pid_file)
        deadline = time.monotonic() + DAEMON_START_S
        state = ""
        while time.monotonic() < deadline:
            r = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=env, timeout=30)
            state = r.stdout.strip() or r.stderr.strip()
            if state == "idle":
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the node is not idle after {DAEMON_START_S} s (sinfo: {state})\n"
                        f"slurmctld: {tail(d / 'slurmctld.log')}\nslurmd: {tail(d / 'slurmd.log')}")
        yield {"SLURM_CONF": str(conf)}
    finally:
        for pid_file in reversed(started):
            try:
                pid = int(pid_file.read_text().split()[0])
                os.kill(pid, signal.SIGTERM)
                for _ in range(100):
                    if not alive(pid):
                        break
                    time.sleep(0.1)
            except (OSError, ValueError, IndexError):
                pass


def alive(pid):
    """Whether a process runs (a zombie nobody reaps, as under a container's init, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


CONFIG = """
[model]
config = "tiny"
B = 2
T = 16

[run]
steps = 2
warmup = 1
repetitions = 1
seed = 5
timeout_s = 60

[sweep]
variants = {variants}
threads = [1]
ranks = [1, 2]

[launcher]
args = ["--oversubscribe", "--bind-to", "none"]

[analysis]
trace = false
ceilings = false
roofline = false
"""
POINT_COLUMNS = ["variant", "compiler", "kernels", "threads", "batch_subsize", "k", "ranks", "repetition", "step"]


@pytest.fixture
def real(tmp_path):
    if not (REPO / "build" / "gcc" / "fast" / "gpt2-mpi").exists():
        pytest.fail("build/gcc/fast/gpt2-mpi is missing: run `make` first")
    return Study(tmp_path, REPO / "build")


def journal(d):
    return [json.loads(line) for line in (d / "journal.jsonl").read_text().splitlines() if line.strip()]


def test_slurm_sweep_is_a_local_sweep(slurm, real):
    cfg = real.config(text=CONFIG.format(variants='["seq", "forkjoin", "mpi"]'))
    local = real.perfstudy("run", cfg, timeout=120)
    assert local.returncode == 0, local.stderr
    through = real.perfstudy("run", cfg, "--slurm", "--fresh", "--poll", "0.5", timeout=180, **slurm)
    assert through.returncode == 0, through.stderr
    a, b = real.result_dirs()
    for name in ("steps.csv", "runs.csv", "summary.csv"):
        ta, tb = pd.read_csv(a / name), pd.read_csv(b / name)
        assert list(ta.columns) == list(tb.columns), name
    sa, sb = pd.read_csv(a / "steps.csv"), pd.read_csv(b / "steps.csv")
    rows = lambda s: sorted(map(str, s[POINT_COLUMNS].astype(str).itertuples(index=False)))  # noqa: E731
    assert rows(sa) == rows(sb) and len(sb) == 4 * 3  # seq, forkjoin, mpi at 1 and 2 ranks; 3 steps each
    runs = pd.read_csv(b / "runs.csv")
    assert (runs["status"] == "ok").all()
    assert sorted(p.name for p in (b / "slurm").glob("*.sh")) == sorted(f"{r}.sh" for r in (
        "seq_gcc_fast_t1_bsNA_kNA_r0", "forkjoin_gcc_fast_t1_bsNA_kNA_r0",
        "mpi_gcc_fast_t1_bsNA_kNA_R1_r0", "mpi_gcc_fast_t1_bsNA_kNA_R2_r0"))
    script = (b / "slurm" / "mpi_gcc_fast_t1_bsNA_kNA_R2_r0.sh").read_text()
    assert "#SBATCH --ntasks=2" in script and "mpirun -q -np 2" in script
    assert json.loads((b / "meta.json").read_text())["status"] == "complete"


def test_a_slurm_job_probes_its_threads_before_and_after_the_run(slurm, real):
    """[analysis] peak_beside under --slurm: the job runs the probes beside its command, inside its
    allocation, and the sweep records them as a local sweep does; gpt2-mpi's points get none."""
    text = CONFIG.format(variants='["forkjoin", "mpi"]').replace("threads = [1]", "threads = [2]").replace(
        "ranks = [1, 2]", "ranks = [1]") + "peak_beside = true\n"  # the node has 2 CPUs: 1 rank of 2 threads
    done = real.perfstudy("run", real.config(name="probed", text=text), "--slurm", "--poll", "0.5", timeout=180,
                          **slurm)
    assert done.returncode == 0, done.stderr
    [d] = real.result_dirs()
    runs = pd.read_csv(d / "runs.csv").set_index("variant")
    assert runs.loc["forkjoin", "peak_beside_gflops"] > 0 and runs.loc["forkjoin", "peak_after_gflops"] > 0
    assert pd.isna(runs.loc["mpi", "peak_beside_gflops"])
    peaks = pd.read_csv(d / "thread_peaks.csv")
    assert sorted(zip(peaks["when"], peaks["thread"])) == [("after", 0), ("after", 1), ("before", 0), ("before", 1)]
    script = (d / "slurm" / "forkjoin_gcc_fast_t2_bsNA_kNA_r0.sh").read_text()
    command = script.index("gpt2-forkjoin")
    assert script.index("before.json") < command < script.index("after.json") < script.rindex(".exit")
    assert "peakflops" not in (d / "slurm" / "mpi_gcc_fast_t2_bsNA_kNA_R1_r0.sh").read_text()


def test_srun_launcher_inside_a_job(slurm, real):
    """[launcher] kind = "slurm": the ranks of a distributed run started by srun in its batch job."""
    text = CONFIG.format(variants='["mpi"]').replace("ranks = [1, 2]", "ranks = [2]").replace(
        'args = ["--oversubscribe", "--bind-to", "none"]', 'kind = "slurm"')
    done = real.perfstudy("run", real.config(text=text), "--slurm", "--poll", "0.5", timeout=120, **slurm)
    assert done.returncode == 0, done.stderr
    [d] = real.result_dirs()
    [record] = [json.loads(p.read_text()) for p in (d / "runs").glob("*.json")]
    assert record["status"] == "ok" and record["info"]["ranks"] == 2
    assert record["command"][:3] == ["srun", "-n", "2"]


def test_interrupted_slurm_sweep_resumes_without_resubmitting(slurm, real):
    cfg = real.config(text=CONFIG.format(variants='["seq", "forkjoin", "mpi"]'))
    proc = subprocess.Popen([str(REPO / "harness" / "perfstudy"), "run", str(cfg), "--slurm", "--poll", "30"],
                            env=real.env(**slurm), cwd=real.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        dirs = real.result_dirs()
        if dirs and (dirs[0] / "journal.jsonl").exists() and \
                sum(e["event"] == "submitted" for e in journal(dirs[0])) == 4:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    [d] = real.result_dirs()
    again = real.perfstudy("run", cfg, "--slurm", "--poll", "0.5", timeout=180, **slurm)
    assert again.returncode == 0, again.stderr
    events = journal(d)
    submitted = [e["run_id"] for e in events if e["event"] == "submitted"]
    assert sorted(submitted) == sorted(set(submitted)) and len(submitted) == 4  # none submitted twice
    runs = pd.read_csv(d / "runs.csv")
    assert len(runs) == 4 and (runs["status"] == "ok").all()


def test_cancelled_job_is_recorded_with_its_reason_and_the_sweep_goes_on(slurm, tmp_path):
    study = Study(tmp_path, make_build_tree(tmp_path))  # fake binaries: forkjoin hangs
    cfg = study.config(text=CONFIG.format(variants='["seq", "forkjoin"]'))
    proc = subprocess.Popen([str(REPO / "harness" / "perfstudy"), "run", str(cfg), "--slurm", "--poll", "0.5"],
                            env=study.env(FAKE_MODE="hang", FAKE_MODE_VARIANTS="forkjoin", **slurm),
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    job, deadline = None, time.monotonic() + 60
    while job is None and time.monotonic() < deadline:
        dirs = study.result_dirs()
        if dirs and (dirs[0] / "journal.jsonl").exists():
            job = next((e["job"] for e in journal(dirs[0]) if e["event"] == "submitted"
                        and e["run_id"].startswith("forkjoin")), None)
        time.sleep(0.2)
    assert job is not None
    subprocess.run(["scancel", job], check=True, env=dict(os.environ, **slurm), timeout=30)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    [d] = study.result_dirs()
    runs = pd.read_csv(d / "runs.csv").set_index("variant")
    assert runs.loc["seq", "status"] == "ok"
    assert runs.loc["forkjoin", "status"] == "cancelled"
    assert f"slurm job {job} CANCELLED" in runs.loc["forkjoin", "error"]
    assert "reason:" in runs.loc["forkjoin", "error"] or "exit code" in runs.loc["forkjoin", "error"]


def test_failed_submission_is_one_line_exit_2_and_loses_nothing(slurm, tmp_path):
    study = Study(tmp_path, make_build_tree(tmp_path))
    cfg = study.config(text=CONFIG.format(variants='["seq"]'))
    bad = study.perfstudy("run", cfg, "--slurm", "--partition", "nosuch", **slurm)
    assert bad.returncode == 2
    # the progress lines (writing ..., note: ...), then the one line of the error
    [line] = [x for x in bad.stderr.strip().splitlines() if "sbatch" in x]
    assert line == bad.stderr.strip().splitlines()[-1]
    assert "--slurm: sbatch seq_gcc_fast_t1_bsNA_kNA_r0.sh failed: sbatch: error:" in line and "partition" in line
    good = study.perfstudy("run", cfg, "--slurm", "--poll", "0.5", timeout=120, **slurm)
    assert good.returncode == 0, good.stderr
    [d] = study.result_dirs()  # the same directory, resumed
    assert (pd.read_csv(d / "runs.csv")["status"] == "ok").all()


def test_the_study_batch_script_leaves_its_archive(slurm, tmp_path):
    """scripts/study.sbatch as a cluster's user submits it: perfstudy doctor, then a study within its
    budget, and one archive where PERFSTUDY_ARCHIVE says."""
    config = tmp_path / "tiny.toml"
    config.write_text(CONFIG.format(variants='["seq", "forkjoin"]').replace("ranks = [1, 2]\n", "").replace(
        "[launcher]\n", "").replace('args = ["--oversubscribe", "--bind-to", "none"]\n', ""))
    archive, log = tmp_path / "node.tar.gz", tmp_path / "job.log"
    env = dict(os.environ, **slurm, PERFSTUDY_CONFIGS=str(config), PERFSTUDY_BUDGET="60",
               PERFSTUDY_ARCHIVE=str(archive), PERFSTUDY_STUDY_OPTIONS="--no-build")
    done = subprocess.run(["sbatch", "--parsable", f"--output={log}", "--time=5", str(REPO / "scripts" / "study.sbatch")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    job = done.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        queued = subprocess.run(["squeue", "-h", "-j", job], env=env, capture_output=True, text=True, timeout=30)
        if not queued.stdout.strip():
            break
        time.sleep(1)
    said = log.read_text() if log.exists() else "(no job log)"
    assert archive.is_file(), said[-3000:]
    assert "widest vector ISA" in said  # perfstudy doctor ran first, in the job
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "study/machine.txt" in names and any(n.endswith("/steps.csv") for n in names), names
