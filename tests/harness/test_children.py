"""The long-running commands' two rules: children that no signal leaves running (measure/children.py),
and outputs placed exclusively (store/exclusive.py); and `perfstudy study` started from anywhere."""

import fcntl
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

from pstudy import common
from pstudy.commands import study as studycmd
from pstudy.errors import StudyError
from pstudy.store import exclusive

import conftest

# one sequential run, nothing measured after it
STUDY_CONFIG = conftest.SMALL_CONFIG.format(steps=2, repetitions=1, timeout_s=20, variants='["seq"]') + \
    "\n[analysis]\nceilings = false\nroofline = false\n"

@pytest.fixture
def terminated_like_ctrl_c():
    """SIGTERM and SIGHUP raise KeyboardInterrupt in this process (as in a long-running command),
    for the test; the handlers are put back after it."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    common.end_like_ctrl_c()
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


class Recorded(subprocess.Popen):
    """Popen that remembers every child it started, so that a test can look for one left running."""
    pids = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        Recorded.pids.append(self.pid)


class SignalledWhileStarting(Recorded):
    """A SIGTERM that lands inside Popen, after the fork, before the caller has the child."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)


def left_running(pid):
    """Whether the child `pid` of this process still runs (reaping it if it has just ended)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # reaped already: ended
        return False
    return done == 0


def bounded(cmd, seconds=30):
    with open(os.devnull, "w") as log:
        return studycmd.bounded(cmd, studycmd.Clock(600), seconds, log)


def test_a_signal_inside_popen_stops_the_new_child(monkeypatch, terminated_like_ctrl_c):
    Recorded.pids = []
    monkeypatch.setattr(subprocess, "Popen", SignalledWhileStarting)
    with pytest.raises(KeyboardInterrupt):
        bounded(["sleep", "30"])
    [pid] = Recorded.pids
    try:
        assert not left_running(pid), "the child started as the signal came is still running"
    finally:
        if left_running(pid):
            os.killpg(pid, signal.SIGKILL)


def test_a_second_signal_waits_for_the_group_to_stop(monkeypatch, terminated_like_ctrl_c):
    # the child takes a moment to end after SIGTERM (a sweep tabulating); a second SIGTERM meanwhile
    # must not leave it running while the caller goes on to pack
    Recorded.pids = []
    monkeypatch.setattr(subprocess, "Popen", Recorded)
    for delay in (0.3, 0.6):
        threading.Timer(delay, os.kill, (os.getpid(), signal.SIGTERM)).start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        bounded(["sh", "-c", "trap 'sleep 1.5; exit 3' TERM; while :; do sleep 0.1; done"])
    [pid] = Recorded.pids
    try:
        assert not left_running(pid), "returned while the child was still stopping"
        assert time.monotonic() - start >= 1.5
    finally:
        if left_running(pid):
            os.killpg(pid, signal.SIGKILL)


def test_a_child_dies_with_its_parent_even_by_sigkill(tmp_path):
    # the parent: a Python that starts `sleep` through children.start and is then killed with -9
    script = ("import time; from pstudy.measure import children; "
              "p = children.start(['sleep', '60']); print(p.pid, flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(REPO / "harness")))
    pid = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists() and \
            Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z":
        time.sleep(0.05)
    alive = Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    if alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, "the child outlived its parent's SIGKILL"


def test_an_exclusive_output_is_never_placed_over_another(tmp_path):
    final = tmp_path / "out.tar.gz"
    with exclusive.claim(final, "--archive") as held:
        with pytest.raises(StudyError, match="another process is writing it"):
            with exclusive.claim(final, "--archive"):
                pass
        held.file.write(b"mine")
        final.write_bytes(b"theirs")  # appeared meanwhile, not through a claim
        with pytest.raises(StudyError, match="never replaced.*kept in"):
            held.place()
    assert final.read_bytes() == b"theirs"
    assert (tmp_path / "out.tar.gz.partial").read_bytes() == b"mine"
    with pytest.raises(StudyError, match="exists"):
        exclusive.write(final, "again", "--out")
    exclusive.write(tmp_path / "new.json", "{}", "--out")
    assert (tmp_path / "new.json").read_text() == "{}" and not (tmp_path / "new.json.partial").exists()


@pytest.fixture
def study_config(study):
    study.config(text=STUDY_CONFIG)
    return study


def test_a_study_started_elsewhere_with_relative_paths_keeps_its_results(study_config):
    study = study_config
    proc = study.perfstudy("study", "small.toml", "--budget", "130", "--archive", "rel.tar.gz", "--no-build",
                           timeout=120)
    assert proc.returncode == 0, proc.stderr
    with tarfile.open(study.tmp / "rel.tar.gz") as tar:
        names = tar.getnames()
    assert [n for n in names if n.startswith("study/results/") and n.endswith("/steps.csv")], names
    assert not list(REPO.glob(".study-*")) and not (REPO / "small.toml").exists()


def test_a_second_study_into_one_archive_is_refused_at_once(study_config):
    study = study_config
    with open(study.tmp / "rel.tar.gz.partial", "a") as held:  # a study writing rel.tar.gz
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = study.perfstudy("study", "small.toml", "--budget", "130", "--archive", "rel.tar.gz", "--no-build",
                               timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "another process is writing it" in proc.stderr
    assert not (study.tmp / "rel.tar.gz").exists() and not list(study.tmp.glob(".study-*"))


@pytest.mark.parametrize("options, needle", [
    (["--threads", "abc"], "--threads"), (["--threads", "0"], "--threads: 0"), (["--threads", "-1"], "--threads"),
    (["--threads", "99999"], "above the limit"), (["--budget", "inf"], "--budget inf"),
    (["--budget", "1e400"], "--budget inf"), (["--budget", "nan"], "--budget nan")])
def test_a_study_refuses_what_would_leave_it_without_a_limit_or_ceilings(study_config, options, needle):
    study = study_config
    args = {"--budget": "130", **dict(zip(options[::2], options[1::2]))}
    proc = study.perfstudy("study", "small.toml", "--archive", "a.tar.gz", "--no-build",
                           *[x for kv in args.items() for x in kv], timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and needle in proc.stderr, proc.stderr
    assert not list(study.tmp.glob("a.tar.gz*"))


class FullDisk:
    """A claimed archive's file on a full disk."""

    def write(self, data):
        raise OSError(28, "No space left on device")

    def flush(self):
        pass


def test_an_archive_that_cannot_be_written_names_it_and_the_files_kept(tmp_path):
    work = tmp_path / ".study-x"
    (work / studycmd.ARCHIVE_ROOT).mkdir(parents=True)
    (work / studycmd.ARCHIVE_ROOT / "log.txt").write_text("x" * 100000)
    claimed = exclusive.Claim(tmp_path / "a.tar.gz", tmp_path / "a.tar.gz.partial", FullDisk())
    with pytest.raises(StudyError) as refused:
        studycmd.pack(work, claimed)
    message = str(refused.value)
    assert str(tmp_path / "a.tar.gz") in message and "No space left" in message and str(work) in message, message
    assert (work / studycmd.ARCHIVE_ROOT / "log.txt").exists()
