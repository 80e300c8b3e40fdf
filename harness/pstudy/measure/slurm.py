"""Sweeps submitted through Slurm (perfstudy run CONFIG --slurm): one batch job per run.

For each run of the schedule that is not done, a batch script is written to
<results>/slurm/<STEM>.sh and submitted with `sbatch --parsable`; the journal records the job id
("submitted") at once. The script runs the same command line a local sweep runs (runner.command:
the launcher of a distributed point included, which inside a job takes the job's allocation),
with the same OpenMP environment, its stdout and stderr going to <STEM>.out and <STEM>.err, and
writes the command's exit status and wall time to <STEM>.exit when it ends. With `[analysis]
peak_beside`, the job probes its threads right before and right after the command, as a local
sweep does (pstudy.measure.ceilings.peak_beside_argv), into <STEM>.before.json and
<STEM>.after.json with their .err and .status files, all written before <STEM>.exit.

The sweep then follows its jobs with squeue (the jobs still pending or running) and, for the
ones that left the queue, sacct, or scontrol where accounting is disabled. A job that ended and
wrote its .exit file is collected like a local run (runner.outcome_of on its files: the same
checks, the same run record in runs/); one that ended otherwise (cancelled, timed out, its node
failed) is recorded as failed with Slurm's state and reason, and the sweep goes on.

Resuming (the same command again): done runs are skipped as in a local sweep; a run whose job was
submitted before is followed, never submitted again, while Slurm knows the job or its .exit file
exists; only a run whose job is gone without a trace is submitted anew. Ctrl-C stops following and
leaves the jobs to Slurm.
"""

import math
import shlex
import subprocess
import time
from pathlib import Path

from pstudy import common
from pstudy.store import ovnitrace, resultsdir
from pstudy.measure import ceilings, children, runner
from pstudy.errors import StudyError

SLURM_DIR = "slurm"
# job states in which a job will not run again (squeue lists the others)
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
         "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"}
TIMEOUT_STATES = {"TIMEOUT", "DEADLINE"}
COMMAND_TIMEOUT_S = 60  # for sbatch, squeue, sacct, scontrol themselves


PROBE_FILES = [f"{when}.{ext}" for when in ("before", "after") for ext in ("json", "err", "status")]


def paths(directory, run):
    """The batch script of a run and the files its job writes: .sh, .out, .err, .exit, and the
    probes' (PROBE_FILES)."""
    base = Path(directory) / SLURM_DIR / run.run_id()
    return {ext: Path(f"{base}.{ext}") for ext in ("sh", "out", "err", "exit", *PROBE_FILES)}


def probe_line(study, p, when):
    """The batch script's line that probes the threads (`when`: before or after)."""
    argv = " ".join(shlex.quote(a) for a in ceilings.peak_beside_argv(common.probes_dir(study)))
    q = {ext: shlex.quote(str(p[f"{when}.{ext}"])) for ext in ("json", "err", "status")}
    return f"{argv} > {q['json']} 2> {q['err']}; echo $? > {q['status']}"


def probes_of(study, run, directory):
    """(before, after): the records of a finished job's probes (ceilings.peak_beside_of_job), or
    (None, None) where its run is not probed."""
    if not ceilings.probed(study, run.point):
        return None, None
    p = paths(directory, run)
    binary = ceilings.peak_beside_argv(common.probes_dir(study))[0]
    return tuple(ceilings.peak_beside_of_job(binary, p[f"{when}.status"], p[f"{when}.json"], p[f"{when}.err"])
                 for when in ("before", "after"))


def tasks(point):
    return point.ranks or 1


def time_limit(study, options):
    """sbatch --time: the one given, else the per-run timeout in whole minutes plus one for start-up."""
    if options.time:
        return options.time
    return str(int(math.ceil(study.run["timeout_s"] / 60.0)) + 1)


def batch_script(study, run, binary, root, trace, options):
    """The text of a run's batch script (the module comment)."""
    p = paths(options.directory, run)
    point = run.point
    env = runner.environment(study, point)
    header = [f"#SBATCH --job-name=pstudy-{run.run_id()}",
              f"#SBATCH --output={p['out']}",
              f"#SBATCH --error={p['err']}",
              f"#SBATCH --ntasks={tasks(point)}",
              f"#SBATCH --cpus-per-task={point.threads}",
              f"#SBATCH --time={time_limit(study, options)}"]
    if options.partition:
        header.append(f"#SBATCH --partition={options.partition}")
    if options.account:
        header.append(f"#SBATCH --account={options.account}")
    # with the point's StarPU scheduler (runner.environment), set or unset as a local sweep has it
    # and, for a traced run of a runtime that records its own trace, where it goes (ovnitrace)
    env.update(ovnitrace.environment(point.variant, binary, trace))
    exports = [f"export {var}={shlex.quote(env[var])}"
               for var in ("OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "STARPU_SCHED", ovnitrace.ENV) if var in env]
    unsets = [f"unset {var}" for var in ("OMP_PROC_BIND", "OMP_PLACES", "STARPU_SCHED") if var not in env]
    cmd = runner.command(study, point, binary, root, trace)
    probe = ceilings.probed(study, point)
    return "\n".join([
        "#!/bin/sh",
        f"# perfstudy run --slurm: {run.point.label()}, repetition {run.repetition}",
        *header,
        "# the OpenMP environment a local sweep gives this point",
        *exports, *unsets,
        f"cd {shlex.quote(str(root))}",
        *(["# [analysis] peak_beside: the threads' peak FLOP/s right before the run", probe_line(study, p, "before")]
          if probe else []),
        "start=$(date +%s.%N)",
        " ".join(shlex.quote(str(c)) for c in cmd),
        "status=$?",
        "end=$(date +%s.%N)",
        *(["# and right after it, before .exit says the job is done", probe_line(study, p, "after")]
          if probe else []),
        f"echo \"$status $start $end\" > {shlex.quote(str(p['exit']))}.tmp && "
        f"mv {shlex.quote(str(p['exit']))}.tmp {shlex.quote(str(p['exit']))}",
        "",
    ])


def slurm_command(args):
    """Runs a Slurm client command; (returncode, stdout, stderr). A missing program is StudyError."""
    try:
        # its own process group: a command given up on is ended with every child it started
        proc = children.start(args, grace=0.0, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise StudyError(f"--slurm: {args[0]} is not on PATH (is this a Slurm login node?)") from None
    try:
        out, err = proc.communicate(timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        children.stop(proc, 0.0)
        proc.communicate()
        return 1, "", f"{args[0]}: no answer in {COMMAND_TIMEOUT_S} s"
    except BaseException:  # Ctrl-C: the command is in its own session and did not get the SIGINT
        children.stop(proc, 0.0)
        raise
    return proc.returncode, out, err


def last_line(text, fallback):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else fallback


def submit(script):
    """sbatch the script; the job id, or StudyError with sbatch's own message (one line, exit 2)."""
    code, out, err = slurm_command(["sbatch", "--parsable", str(script)])
    job = out.strip().split(";")[0]
    if code != 0:
        raise StudyError(f"--slurm: sbatch {script.name} failed: {last_line(err, f'exit status {code}')}")
    if not (job.isascii() and job.isdigit()):
        shown = last_line(out, "nothing")
        raise StudyError(f"--slurm: sbatch {script.name} printed {shown[:80]!r} where --parsable prints the job "
                         f"id{'; ' + last_line(err, '') if err.strip() else ''}")
    return job


def queued(jobs):
    """{job id: state} of the given jobs that squeue still lists (pending, running, completing)."""
    if not jobs:
        return {}
    code, out, err = slurm_command(["squeue", "-h", "-o", "%i|%T"])
    if code != 0:
        raise StudyError(f"--slurm: squeue failed: {last_line(err, f'exit status {code}')}")
    out_states = {}
    for line in out.splitlines():
        job, _, state = line.strip().partition("|")
        if job in jobs:
            out_states[job] = state
    return out_states


def ended_state(job):
    """(state, reason, exit code text) of a job that left the queue: sacct's, else scontrol's (when
    accounting is disabled); ("UNKNOWN", why, "") when Slurm no longer knows the job."""
    code, out, _ = slurm_command(["sacct", "-n", "-P", "-X", "-j", job, "-o", "State,Reason,ExitCode"])
    if code == 0 and out.strip():
        state, reason, exit_code = (out.strip().splitlines()[0].split("|") + ["", "", ""])[:3]
        return state.split()[0], reason, exit_code
    code, out, err = slurm_command(["scontrol", "show", "job", "-o", job])
    if code != 0 or "JobState=" not in out:
        return "UNKNOWN", last_line(err, "no record"), ""
    fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
    return fields.get("JobState", "UNKNOWN"), fields.get("Reason", ""), fields.get("ExitCode", "")


def collect(study, run, job, state, reason, exit_text, options):
    """The Outcome of a job that ended: from its files when its script finished, else failed with
    Slurm's state and reason."""
    p = paths(options.directory, run)
    if p["exit"].exists():
        fields = p["exit"].read_text().split()
        try:
            status = int(fields[0])
            wall = float(fields[2]) - float(fields[1])
        except (IndexError, ValueError):
            status, wall = None, 0.0
        if status is not None:
            out = p["out"].read_text(errors="replace") if p["out"].exists() else ""
            err = p["err"].read_text(errors="replace") if p["err"].exists() else ""
            return runner.outcome_of(status, out, err, wall, study, run.point)
    err = p["err"].read_text(errors="replace") if p["err"].exists() else ""
    why = f"slurm job {job} {state}" + (f" (reason: {reason})" if reason and reason != "None" else "") + \
        (f", exit code {exit_text}" if exit_text else "")
    status = runner.TIMEOUT if state in TIMEOUT_STATES else \
        runner.CRASHED if state in ("FAILED", "OUT_OF_MEMORY") else runner.CANCELLED
    return runner.Outcome(status, why, stderr_tail=runner.tail(err))


def submitted_jobs(journal):
    """run_id -> the job id of its latest submission, from the journal."""
    jobs = {}
    for event in journal.events():
        if event.get("event") == "submitted":
            jobs[event["run_id"]] = str(event["job"])
    return jobs


def sweep(directory, study, order, done, binaries, journal, progress, options, root):
    """Submits every run not done (or follows its earlier job), then follows them until each is
    recorded. Returns normally when all are; KeyboardInterrupt passes (the jobs stay queued)."""
    options.directory = directory
    (Path(directory) / SLURM_DIR).mkdir(exist_ok=True)
    previous = submitted_jobs(journal)
    runs = {run.run_id(): (i, run) for i, run in enumerate(order) if run.run_id() not in done}
    following = {}  # run_id -> job id
    still = queued(set(previous.values()))
    for run_id, (i, run) in runs.items():
        job = previous.get(run_id)
        if job is not None and (job in still or paths(directory, run)["exit"].exists()
                                or ended_state(job)[0] != "UNKNOWN"):
            following[run_id] = job  # submitted before: follow it, never submit twice
            continue
        binary = binaries[(run.point.compiler, run.point.kernels, run.point.variant)]
        trace = None
        if study.analysis["trace"]:
            trace = resultsdir.ResultsDir(directory).trace(run.point, run.repetition)
            trace.parent.mkdir(exist_ok=True)
        p = paths(directory, run)
        for stale in ("out", "err", "exit", *PROBE_FILES):
            p[stale].unlink(missing_ok=True)
        resultsdir.atomic_write(p["sh"], batch_script(study, run, binary, root, trace, options))
        job = submit(p["sh"])
        journal.append("submitted", run_id=run_id, job=job, script=str(p["sh"].relative_to(directory)))
        following[run_id] = job
        say(f"submitted {run.point.label()} rep {run.repetition}: job {job}")
    while following:
        active = queued(set(following.values()))
        for run_id, job in list(following.items()):
            if job in active and active[job] not in ENDED:
                continue
            state, reason, exit_text = ended_state(job)
            if state not in ENDED and state != "UNKNOWN":
                continue  # between squeue and sacct: look again next time
            i, run = runs[run_id]
            outcome = collect(study, run, job, state, reason, exit_text, options)
            binary = binaries[(run.point.compiler, run.point.kernels, run.point.variant)]
            trace = resultsdir.ResultsDir(directory).trace(run.point, run.repetition) if study.analysis["trace"] else None
            before, after = probes_of(study, run, directory)
            resultsdir.save_run(directory, run, i, outcome, runner.command(study, run.point, binary, root, trace),
                                peak_beside=before, peak_after=after)
            journal.append("run", run_id=run_id, status=outcome.status, job=job)
            progress.starting(run)
            progress.finished(run, outcome)
            del following[run_id]
        if following:
            time.sleep(options.poll)


def say(text):
    common.say("run", text)


class Options:
    """What --slurm takes from the command line."""

    def __init__(self, partition=None, time=None, account=None, poll=5.0):
        self.partition, self.time, self.account, self.poll = partition, time, account, poll
        self.directory = None

