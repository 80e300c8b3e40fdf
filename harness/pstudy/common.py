"""What every subcommand shares: where things are (repository, results, plots, builds), the time
stamps, messages, interrupt handling and the progress line. Subcommands import this and the
library modules, never each other.
"""

import contextlib
import datetime
import fcntl
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pstudy.errors import StudyError

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIGS_DIR = REPO_ROOT / "configs"


def file_sha256(path):
    """The SHA-256 of a file's bytes, read a megabyte at a time (a binary, an archive)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tool_output(argv, timeout, cwd=None):
    """(exit status, stdout and stderr as they came) of a short command that asks a tool what it is
    or has, or (None, why) when it is not there, cannot start or does not answer in `timeout` s."""
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              timeout=timeout, cwd=cwd, text=True, errors="replace")
    except FileNotFoundError:
        return None, f"{argv[0]}: not found"
    except subprocess.TimeoutExpired:
        return None, f"{argv[0]}: no answer within {timeout} s"
    except OSError as err:
        return None, f"{argv[0]}: {err.strerror}"
    return done.returncode, done.stdout


def now():
    """Local time with its UTC offset, to the second: how meta.json and the history stamp events."""
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def say(command, text):
    """One line on stderr, prefixed with the subcommand: `perfstudy run: ...`."""
    sys.stderr.write(f"perfstudy {command}: {text}\n")
    sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# where things are

def results_root(arg=None):
    """--results-root, else $PERFSTUDY_RESULTS, else <repo>/results."""
    return Path(arg or os.environ.get("PERFSTUDY_RESULTS") or REPO_ROOT / "results")


def plots_root(arg=None):
    """--plots-root, else $PERFSTUDY_PLOTS, else <repo>/plots."""
    return Path(arg or os.environ.get("PERFSTUDY_PLOTS") or REPO_ROOT / "plots")


def plots_dir(root, directory):
    """Where `report` writes the figures of a results directory: <plots root>/<its name>. Both are
    resolved first, and a directory that would land outside the plots root is refused."""
    root = Path(root).resolve()
    out = (root / Path(directory).resolve().name).resolve()
    if out.parent != root:
        raise StudyError(f"{directory}: its figures would go to {out}, outside the plots root {root}")
    return out


def build_dir(study, root=REPO_ROOT):
    """The build tree the binaries of a study come from: $PERFSTUDY_BUILD_DIR, else run.build_dir,
    relative to `root` (the repository) unless absolute."""
    path = Path(os.path.expanduser(os.environ.get("PERFSTUDY_BUILD_DIR") or study.run["build_dir"]))
    return path if path.is_absolute() else Path(root) / path


def probes_dir(study, root=REPO_ROOT):
    """Where the programs the harness runs beside the variants (probes/: stream, peakflops, reread,
    thief, disturb) are built."""
    return build_dir(study, root) / "probes"


# ---------------------------------------------------------------------------------------------
# ownership of a directory

@contextlib.contextmanager
def owning(lock_path, what, wait=False, command="run"):
    """Hold an advisory lock (fcntl.flock on `lock_path`) for the duration of the block, so that two
    processes never write one results or plots directory at once. The lock file names its holder.
    When another process holds it: StudyError naming that process (exit 2), or, with `wait`, a
    message and a wait until it is released. The kernel releases the lock when the holder dies,
    so a killed sweep never leaves its directory locked."""
    lock_path = Path(lock_path)
    f = open(lock_path, "a+")
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            if not wait:
                raise StudyError(f"{what}: in use by {holder} (--wait waits for it)") from None
            say(command, f"{what}: in use by {holder}; waiting for it")
            fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        f.truncate()
        f.write(f"process {os.getpid()} ({' '.join(['perfstudy'] + sys.argv[1:])}, since {now()})\n")
        f.flush()
        yield
    finally:
        f.close()


def held(lock_path):
    """Whether a process holds the lock at `lock_path` now (owning's), asked without taking it
    for more than an instant and without creating the file."""
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


# ---------------------------------------------------------------------------------------------
# interrupts

# the signals held while the modules load (hold_interrupt): a KeyboardInterrupt raised inside an
# import ends as an ImportError (numpy's) or as the interpreter's own traceback
SIGNALLED = []


def hold_interrupt(signum, frame):
    SIGNALLED.append(signum)


def take_interrupts():
    """Ctrl-C raises KeyboardInterrupt from here on; one held while the modules loaded does now."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if SIGNALLED:
        raise KeyboardInterrupt(signal.Signals(SIGNALLED[0]).name)


def interrupt(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


class signals_deferred:
    """A block that SIGINT, SIGTERM and SIGHUP do not cut short: a signal that arrives is held and,
    at the end of the block, raised as KeyboardInterrupt (`reraise`), or left in `caught` for the
    caller. For what must be written whole: a directory's tables and the meta.json that gives its
    status, which a second Ctrl-C or a `timeout` once left at "running"."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, reraise=True):
        self.reraise, self.caught, self.saved = reraise, [], {}

    def __enter__(self):
        def hold(signum, frame):
            self.caught.append(signum)
        self.saved = {sig: signal.signal(sig, hold) for sig in self.SIGNALS}
        return self

    def __exit__(self, kind, value, tb):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        if kind is None and self.caught and self.reraise:
            raise KeyboardInterrupt(signal.Signals(self.caught[0]).name)
        return False


def end_like_ctrl_c():
    """A kill or hang-up ends the work like Ctrl-C does: the running binary, in its own process
    group, would otherwise be left behind, and the directory would not say it was interrupted."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)


# ---------------------------------------------------------------------------------------------
# progress

class Progress:
    """One status line on stderr: runs done/total, failures, elapsed, ETA, the run in progress.
    `label` of a run is what it shows (run.point.label() by default)."""

    def __init__(self, total, done, label=lambda run: run.point.label()):
        self.total, self.done = total, len(done)
        self.failed = sum(1 for s in done.values() if s != "ok")
        self.start = time.monotonic()
        self.ran = 0
        self.tty = sys.stderr.isatty()
        self.label = label

    def line(self, text):
        if self.tty:
            sys.stderr.write("\r\033[K" + text)
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def starting(self, run):
        if self.tty:
            self.line(self.status() + f" | running {self.label(run)} rep {run.repetition}")

    def finished(self, run, outcome):
        self.done += 1
        self.ran += 1
        if outcome.status != "ok":
            self.failed += 1
            self.line(f"FAILED {self.label(run)} rep {run.repetition}: {outcome.status}: {outcome.error}")
            if self.tty:
                sys.stderr.write("\n")
        if not self.tty or outcome.status == "ok":
            self.line(self.status() + f" | {self.label(run)} rep {run.repetition} {outcome.wall_s:.1f} s")

    def status(self):
        elapsed = time.monotonic() - self.start
        remaining = self.total - self.done
        eta = elapsed / self.ran * remaining if self.ran else float("nan")
        return (f"[{self.done}/{self.total}] failed {self.failed} | elapsed {clock(elapsed)} "
                f"ETA {clock(eta)}")

    def close(self):
        if self.tty:
            sys.stderr.write("\n")


def clock(seconds):
    if seconds != seconds:  # NaN: nothing measured yet
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


# ---------------------------------------------------------------------------------------------
# option values

FIGURE_FORMATS = ("png", "svg", "pdf")


def choices(text, allowed, option):
    """A comma-separated option value as a list, each item one of `allowed`; StudyError otherwise."""
    items = [item.strip() for item in str(text).split(",") if item.strip()]
    bad = [item for item in items if item not in allowed]
    if bad or not items:
        raise StudyError(f"{option}: unknown value {', '.join(bad) or '(none)'} (known: {', '.join(allowed)})")
    return items
