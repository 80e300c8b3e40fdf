"""run whole studies within a time budget on this machine (an allocation, an ssh host): one archive.

    perfstudy study CONFIG [CONFIG ...] --budget SECONDS --archive FILE.tar.gz [--threads LIST]

For a machine you have for a while and not again: a node of an interactive allocation, a host
reached by ssh. What comes back is always one archive, whatever fails or runs out on the way.

Run rules (each step is bounded by the time left of the budget; later steps keep what they need):
  1. the machine: lscpu, memory, NUMA nodes, transparent huge pages, compilers, and whether hardware
     counters can be read (the kernel's PMUs, perf_event_paranoid, perf, likwid, /dev/cpu/*/msr),
     written first so that the archive says what the machine was even if nothing else ran;
  2. the build (`make build`), for this machine's CPU;
  3. the ceilings (STREAM, peak FLOP/s, re-read rate) at every thread count the configs sweep,
     before any sweep, so that an interrupted sweep still has them; they are copied into each
     results directory that has none ([analysis] ceilings = false in the config: measured here once);
  4. each config's sweep in the order given, stopped like Ctrl-C (finished runs tabulated, the
     directory marked interrupted) when only what the later configs and the packing need is left:
     RESERVE_S for the packing and MIN_SWEEP_S a later config;
  5. everything packed into FILE.tar.gz (exports/ left out: `perfstudy trace` makes them again from
     traces/), written whole or not at all, also after Ctrl-C or SIGTERM.
Unpack with `tar -xzf FILE.tar.gz`: study/machine.txt, study/counters.txt, study/ceilings/,
study/results/<directory>/ for each config (read them with report, predict, answer), study/log.txt.
"""

import math
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from pstudy import common
from pstudy.common import REPO_ROOT
from pstudy.errors import StudyError, os_error_message
from pstudy.measure import children
from pstudy.store import config as configmod
from pstudy.store import exclusive, resultsdir, studyarchive

RESERVE_S = 30       # the packing, and the slack of a sweep stopped at its deadline (its last run ends)
MIN_SWEEP_S = 60     # what a later config is left at least, if the budget holds it
# a short budget (a first look at a node, a minute) scales both down: a quarter of it at most for
# the packing's slack, and 40% at most kept for each later config
MIN_BUDGET_S = 60
BUILD_S = 300        # the build at most
CEILINGS_S = 300     # the ceilings at most
STOP_GRACE_S = 20    # after SIGTERM, a sweep has this long to tabulate before it is killed
ARCHIVE_ROOT = studyarchive.ROOT
MAX_BUDGET_S = 7 * 24 * 3600
STOPPED = "stopped at its deadline"

MACHINE_COMMANDS = [
    ("date", ["date", "-u"]), ("uname", ["uname", "-a"]), ("nproc", ["nproc"]), ("lscpu", ["lscpu"]),
    ("numa nodes", ["sh", "-c", "ls -d /sys/devices/system/node/node* 2>/dev/null"]),
    ("memory", ["sh", "-c", "head -3 /proc/meminfo"]),
    ("transparent huge pages", ["cat", "/sys/kernel/mm/transparent_hugepage/enabled"]),
    ("gcc", ["gcc", "--version"]), ("clang", ["clang", "--version"]), ("mpicc", ["mpicc", "--showme:version"]),
    ("python3", [sys.executable, "--version"]),
    ("perfstudy doctor", [str(REPO_ROOT / "harness" / "perfstudy"), "doctor"]),
]
COUNTER_COMMANDS = [
    ("kernel PMUs", ["ls", "/sys/bus/event_source/devices"]),
    ("perf_event_paranoid", ["cat", "/proc/sys/kernel/perf_event_paranoid"]),
    ("perf", ["perf", "stat", "-e", "cycles,instructions", "--", "true"]),
    ("likwid-perfctr", ["likwid-perfctr", "--version"]),
    ("/dev/cpu/0/msr", ["ls", "-l", "/dev/cpu/0/msr"]),
]


def add_arguments(parser):
    parser.add_argument("configs", nargs="+", help="TOML files, or names of ones in configs/, run in this order")
    parser.add_argument("--budget", type=float, required=True,
                        help="seconds the whole study may take, packing included (60 to a week)")
    parser.add_argument("--archive", required=True, help="the archive to write (FILE.tar.gz; must not exist)")
    parser.add_argument("--threads", help="the ceilings' thread counts (default: every count the configs sweep)")
    parser.add_argument("--no-build", action="store_true", help="use the binaries already in build/")


class Clock:
    def __init__(self, budget):
        self.start, self.budget = time.monotonic(), budget

    def elapsed(self):
        return time.monotonic() - self.start

    def left(self):
        return self.budget - self.elapsed()


def main(args):
    if not (math.isfinite(args.budget) and MIN_BUDGET_S <= args.budget <= MAX_BUDGET_S):
        raise StudyError(f"--budget {args.budget:g}: expected seconds from {MIN_BUDGET_S} (the ceilings and one "
                         f"sweep) to {MAX_BUDGET_S} (a week)")
    # absolute: the steps run in the repository, wherever the study was started
    archive = Path(os.path.abspath(args.archive))
    if not archive.name.endswith(".tar.gz"):
        raise StudyError(f"--archive {archive}: the name must end in .tar.gz")
    if not archive.parent.is_dir():
        raise StudyError(f"--archive {archive}: {archive.parent} is not a directory")
    paths = [Path(os.path.abspath(configmod.resolve_path(c, common.CONFIGS_DIR))) for c in args.configs]
    studies = [configmod.load(p) for p in paths]  # every config checked before anything runs
    counts = (configmod.parse_threads(args.threads.split(","), "--threads", args.threads, os.cpu_count() or 1)
              if args.threads is not None else sorted({t for s in studies for t in s.sweep["threads"]}))
    common.end_like_ctrl_c()
    with exclusive.claim(archive, "--archive") as claimed:
        return run_study(args, studies, paths, ",".join(map(str, counts)), claimed)


def run_study(args, studies, paths, threads, claimed):
    """The steps of the module comment into a scratch directory beside the archive, then packed."""
    clock = Clock(args.budget)
    reserve_s, min_sweep_s = min(RESERVE_S, 0.15 * args.budget), min(MIN_SWEEP_S, 0.4 * args.budget)
    with common.signals_deferred(reraise=False) as early:  # the scratch directory is never left unpacked
        work = Path(tempfile.mkdtemp(prefix=".study-", dir=claimed.final.parent))
        root = work / ARCHIVE_ROOT
        root.mkdir()
        log = open(root / "log.txt", "w", buffering=1)

    def step(text):
        line = f"== +{clock.elapsed():.0f} s ({clock.left():.0f} s left) {text}"
        print(line, file=sys.stderr, flush=True)
        print(line, file=log)

    interrupted, failed = False, []
    try:
        if early.caught:
            raise KeyboardInterrupt
        step("1. the machine")
        (root / "machine.txt").write_text(facts(MACHINE_COMMANDS))
        (root / "counters.txt").write_text(facts(COUNTER_COMMANDS))
        if not args.no_build:
            step("2. build")
            status = bounded(["make", "-s", f"-j{os.cpu_count() or 1}", "build"], clock,
                             min(BUILD_S, clock.left() - reserve_s - min_sweep_s), log)
            step(f"build: {describe(status)}")
        step(f"3. ceilings at {threads} threads")
        ceilings = root / "ceilings" / "ceilings.json"
        study0 = studies[0]
        status = bounded([str(REPO_ROOT / "harness" / "perfstudy"), "ceilings", "--threads", threads,
                          "--places", str(study0.placement.get("places", "cores")),
                          "--proc-bind", str(study0.placement.get("proc_bind", "close")), "--out", str(ceilings),
                          "--build-dir", str(common.probes_dir(study0))],
                         clock, min(CEILINGS_S, clock.left() - reserve_s - min_sweep_s * len(paths)), log)
        step(f"ceilings: {describe(status)}")
        results = root / studyarchive.RESULTS
        for i, path in enumerate(paths):
            later = min_sweep_s * (len(paths) - i - 1)
            seconds = clock.left() - reserve_s - later
            if seconds < min_sweep_s / 2:
                step(f"4. {path.name}: left out ({clock.left():.0f} s left)")
                continue
            step(f"4. sweep {path.name} (at most {seconds:.0f} s)")
            status = bounded([str(REPO_ROOT / "harness" / "perfstudy"), "run", str(path), "--no-summary",
                              "--results-root", str(results)], clock, seconds, log)
            step(f"{path.name}: {describe(status)}")
            if status not in (0, STOPPED):
                failed.append(path.name)
        if ceilings.is_file() and results.is_dir():
            for directory in results.iterdir():
                target = resultsdir.ResultsDir(directory).ceilings
                if directory.is_dir() and not target.exists():
                    shutil.copyfile(ceilings, target)
    except KeyboardInterrupt:
        interrupted = True
        step("interrupted: packing what there is")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the packing is short, and must not be cut
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        step("5. packing")
        log.close()
        pack(work, claimed)
        shutil.rmtree(work, ignore_errors=True)
    print(claimed.final)
    if interrupted:
        return 130
    if failed:
        common.say("study", f"the sweep of {', '.join(failed)} failed (its lines in study/log.txt say why)")
        return 1
    return 0


def facts(commands):
    out = []
    for title, cmd in commands:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
            text = (done.stdout + done.stderr).strip() or f"(exit status {done.returncode}, no output)"
        except (OSError, subprocess.TimeoutExpired) as err:
            text = f"not available ({err})"
        out.append(f"## {title}\n{text}\n")
    return "\n".join(out)


def bounded(cmd, clock, seconds, log):
    """Runs cmd (its output to the log) for at most `seconds`: then SIGTERM, which perfstudy ends as
    Ctrl-C, and SIGKILL STOP_GRACE_S later. Returns the exit status, or a word for what happened."""
    if seconds <= 1:
        return "skipped: no time left"
    log.flush()
    try:
        with children.running(cmd, grace=STOP_GRACE_S, cwd=str(REPO_ROOT), stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL) as proc:
            try:
                return proc.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                status = children.stop(proc, STOP_GRACE_S)
                return "killed at its deadline" if status == -signal.SIGKILL else STOPPED
    except OSError as err:
        return f"could not start: {err}"


def describe(status):
    return "done" if status == 0 else (f"exit status {status}" if isinstance(status, int) else status)


def packed(info):
    """What the archive keeps of a file: not the exports (`perfstudy trace` makes them again from the
    traces), nor the locks of the sweeps that wrote the results, which mean nothing elsewhere."""
    name = info.name
    return None if "/exports" in name or name.endswith("/exports") or name.endswith("/" + resultsdir.LOCK) else info


def pack(work, claimed):
    """The archive of work/study, written to the claimed archive's partial file and placed
    exclusively. StudyError when it cannot be written, naming the archive and the scratch directory
    that keeps the study's files."""
    try:
        with tarfile.open(fileobj=claimed.file, mode="w:gz") as tar:
            tar.add(work / ARCHIVE_ROOT, arcname=ARCHIVE_ROOT, filter=packed)
        claimed.place()
    except OSError as err:
        raise StudyError(f"--archive {claimed.final}: cannot be written ({os_error_message(err)}); the study's "
                         f"files are kept in {work}") from None
