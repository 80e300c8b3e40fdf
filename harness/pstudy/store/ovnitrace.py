"""The runtime's own trace beside a run's: nOS-V's ovni trace of a traced nosv run, and its Paraver
conversion by ovniemu (docs/traces.md).

A traced run of a variant on nOS-V (vocabulary.NOSV_VARIANTS) whose binary is linked with libovni
(make ovni) also gets PERFSTUDY_OVNI_TRACE: nOS-V writes its ovni trace (one stream per thread it knows) into
traces/<run stem>.ovni/. A sweep's exports and `perfstudy trace` turn that into two Paraver traces,
by thread and by CPU, beside the run's own Paraver export: <run stem>.ovni-thread.{prv,pcf,row} and
<run stem>.ovni-cpu.{prv,pcf,row}, and ovni's Paraver views (.cfg) into ovni-cfg/."""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from pstudy.errors import StudyError
from pstudy.store import traceformats, vocabulary

# the variable that asks a binary on nOS-V for its runtime's trace
ENV = "PERFSTUDY_OVNI_TRACE"
SUFFIX = ".ovni"
VIEWS = ("thread", "cpu")
# a .prv record: state 1:cpu:appl:task:thread:begin:end:state, event 2:cpu:appl:task:thread:time:type:value[:...]
RECORD = re.compile(r"(?:1(?::\d+){7}|2(?::\d+){5}(?::\d+:\d+)+|3(?::\d+){13,}|c:.*)")


def linked(binary):
    """Whether a variant binary is linked with libovni (its dynamic section names the library): one
    built where ovni was not has no runtime trace to give."""
    try:
        with open(binary, "rb") as f:
            return b"\0libovni.so." in f.read()
    except OSError:
        return False


def trace_dir(run_trace):
    """traces/<run stem>.ovni/ beside a run's traces/<run stem>.csv."""
    p = Path(run_trace)
    return p.with_name(p.name.removesuffix(".gz").removesuffix(".csv") + SUFFIX)


def environment(variant, binary, run_trace):
    """{PERFSTUDY_OVNI_TRACE: its directory} for a traced run that can record the runtime's trace,
    after clearing what a run before it left there; {} otherwise."""
    if run_trace is None or variant not in vocabulary.NOSV_VARIANTS or not linked(binary):
        return {}
    target = trace_dir(run_trace)
    shutil.rmtree(target, ignore_errors=True)
    return {ENV: str(target)}


def ovniemu(build):
    """ovniemu of the build tree `build` (make ovni), else of an installed ovni the build was made
    against ($OVNI_HOME/bin, or on PATH: a site's module), or None."""
    for path in (Path(build) / "ovni" / "install" / "bin" / "ovniemu",
                 Path(os.environ.get("OVNI_HOME") or "/nonexistent") / "bin" / "ovniemu",
                 Path(shutil.which("ovniemu") or "/nonexistent")):
        if os.access(path, os.X_OK):
            return path
    return None


def convert(recorded, stem, outdir, emulator):
    """Runs ovniemu on a copy of the ovni trace `recorded` (ovniemu writes into the directory it
    reads) and moves its Paraver traces to `outdir` as STEM.ovni-<view>.{prv,pcf,row}, ovni's
    Paraver views to outdir/ovni-cfg/; returns the paths written. StudyError naming the trace when
    ovniemu fails (its last lines) or writes a trace that does not parse."""
    recorded, outdir = Path(recorded), Path(outdir)
    if not any(recorded.glob("loom.*/proc.*/thread.*/stream.obs")):
        raise StudyError(f"{recorded}: no ovni streams (loom.*/proc.*/thread.*/stream.obs): the run did not finish its trace")
    outdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # its Paraver views, from the prefix it was built for unless the tree has moved
    views = Path(emulator).resolve().parent.parent / "share" / "ovni"
    if views.is_dir():
        env["OVNI_CONFIG_DIR"] = str(views)
    written = []
    with tempfile.TemporaryDirectory(dir=outdir, prefix=".ovniemu-") as tmp:
        work = Path(tmp) / "trace"
        shutil.copytree(recorded, work)
        try:
            # errors="replace": on a damaged stream ovniemu quotes the stream's bytes in its message
            done = subprocess.run([str(emulator), str(work)], capture_output=True, text=True, errors="replace",
                                  env=env, stdin=subprocess.DEVNULL, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise StudyError(f"{recorded}: ovniemu {emulator}: {err}")
        if done.returncode != 0:
            said = " / ".join(line.strip() for line in (done.stderr + done.stdout).splitlines()[-3:] if line.strip())
            raise StudyError(f"{recorded}: ovniemu failed (exit {done.returncode}): {said}")
        for view in VIEWS:
            for suffix in (".prv", ".pcf", ".row"):
                target = outdir / f"{stem}.ovni-{view}{suffix}"
                shutil.move(work / f"{view}{suffix}", target)
                written.append(target)
            problems = check_prv(outdir / f"{stem}.ovni-{view}.prv")
            if problems:
                raise StudyError(problems[0])
        if (work / "cfg").is_dir():
            shutil.rmtree(outdir / "ovni-cfg", ignore_errors=True)
            shutil.move(work / "cfg", outdir / "ovni-cfg")
    return written


def export_runtime(directory, available, chosen, outdir):
    """The Paraver traces of the chosen runs' runtime traces (traces/<stem>.ovni/), converted into
    `outdir` by ovniemu: $PERFSTUDY_BUILD_DIR's, else that of the tree the run's binary was in
    (meta.json's binaries), else the repository's build/; the paths written."""
    recorded = [(kr, trace_dir(available[kr])) for kr in chosen]
    recorded = [(kr, path) for kr, path in recorded if path.is_dir()]
    if not recorded:
        return []
    from pstudy import common
    from pstudy.store import resultsdir

    binaries = resultsdir.read_meta(directory).get("binaries") or {}
    written = []
    for (key, rep), path in recorded:
        variant, compiler, kernels = key.variant, key.compiler, key.kernels
        given, binary = os.environ.get("PERFSTUDY_BUILD_DIR"), binaries.get(f"{compiler}/{kernels}/{variant}")
        if given:
            trees = [Path(os.path.expanduser(given))]
        else:
            trees = ([Path(binary).parent.parent.parent] if binary else []) + [common.REPO_ROOT / "build"]
        emulator = next(filter(None, map(ovniemu, trees)), None)
        if emulator is None:
            raise StudyError(f"{path}: a runtime trace, but no ovniemu to convert it under "
                             f"{', '.join(str(t) for t in trees)} (make ovni)")
        stem = resultsdir.run_stem(key, rep)
        written += convert(path, stem, outdir, emulator)
        chunks = traceformats.read_chunks(available[(key, rep)])
        written.append(write_alignment(Path(outdir) / f"{stem}.ovni-thread.prv",
                                       [traceformats.nanoseconds(s) for s in chunks["start_s"]],
                                       Path(outdir) / f"{stem}.ovni-align.txt"))
    return written


# Aligning the runtime's trace with the run's own. Both clocks are CLOCK_MONOTONIC, with different
# origins: the run's Paraver times count from its trace's origin (when training starts), ovni's from
# the first event it recorded (in nosv_init). Each chunk is one nOS-V task, whose body starts right
# after ovni marks the task running, so the two traces' task starts differ by one constant: the
# offset, taken as the median over the chunks of (ovni's nearest task start - the chunk's start),
# with the residuals' 99th percentile and largest beside it so that a reader sees how well it holds
# (a worker preempted between ovni's event and the chunk's clock read gives the largest).
TASK_TYPE_TITLE = "nOS-V task type"


def task_starts_ns(prv):
    """The times (ns, ascending) at which an ovniemu thread trace marks a thread as running a task
    (its "nOS-V task type" event set to a type)."""
    import numpy as np

    pcf = Path(prv).with_suffix(".pcf").read_text(errors="replace")
    found = re.search(r"EVENT_TYPE\n0\s+(\d+)\s+" + re.escape(TASK_TYPE_TITLE), pcf)
    if not found:
        raise StudyError(f"{Path(prv).with_suffix('.pcf')}: no event type {TASK_TYPE_TITLE!r}: not an ovniemu thread trace")
    wanted, starts = found.group(1), []
    with open(prv, errors="replace") as f:
        next(f, None)
        for line in f:
            fields = line.rstrip("\n").split(":")
            if fields[0] != "2":
                continue
            for t, v in zip(fields[6::2], fields[7::2]):
                if t == wanted and v != "0":
                    starts.append(int(fields[5]))
    return np.sort(np.array(starts, dtype=np.int64))


def alignment(prv, chunk_starts_ns):
    """(offset_ns, the residuals' 99th percentile ns, the largest ns, chunks matched): ovni's time =
    the run's time + offset_ns."""
    import numpy as np

    ovni = task_starts_ns(prv)
    ours = np.sort(np.asarray(chunk_starts_ns, dtype=np.int64))
    if len(ovni) == 0 or len(ours) == 0:
        raise StudyError(f"{prv}: no task starts to align with the run's chunks")
    first = ovni[0] - ours[0]  # the first chunk is the first task, in both
    at = np.clip(np.searchsorted(ovni, ours + first), 1, len(ovni) - 1)
    nearest = np.where(np.abs(ovni[at] - (ours + first)) < np.abs(ovni[at - 1] - (ours + first)), ovni[at], ovni[at - 1])
    offset = int(np.median(nearest - ours))
    residuals = np.abs(nearest - ours - offset)
    return offset, int(np.percentile(residuals, 99)), int(np.max(residuals)), len(ours)


def write_alignment(prv, chunk_starts_ns, path):
    """Writes the alignment of the ovniemu thread trace `prv` with the run's chunks to `path`."""
    offset, p99, largest, n = alignment(prv, chunk_starts_ns)
    Path(path).write_text(
        "# ovni's Paraver time (ns) = this run's Paraver time (ns) + offset_ns; both CLOCK_MONOTONIC\n"
        f"# (docs/traces.md, 'The runtime's own trace'); over {n} chunks, 99% of the residuals are within\n"
        f"# {p99} ns, the largest {largest} ns\n"
        f"offset_ns {offset}\nresidual_p99_ns {p99}\nresidual_max_ns {largest}\nchunks {n}\n")
    return path


def check_prv(path, limit=None):
    """Problems of an ovniemu .prv (a list of strings; empty: accepted): its header and that every
    record, up to `limit` lines, is a state, event, communication or comment record."""
    problems = []
    try:
        with open(path) as f:
            header = f.readline().rstrip("\n")
            if not header.startswith("#Paraver (") or "_ns:" not in header:
                return [f"{path}:1: not a Paraver header: {header[:80]!r}"]
            for n, line in enumerate(f, start=2):
                if limit is not None and n > limit:
                    break
                if not RECORD.fullmatch(line.rstrip("\n")):
                    problems.append(f"{path}:{n}: not a Paraver record: {line.strip()[:80]!r}")
                    break
    except (OSError, UnicodeDecodeError) as err:
        problems.append(f"{path}: unreadable: {err}")
    return problems
