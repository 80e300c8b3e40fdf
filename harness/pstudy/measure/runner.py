"""Running one measurement: one process of a variant binary with --json, checked line by line.

Contract (the front end's --json, variants/main.c): stdout carries one JSON object per line, first {"info": {...}}, then one
object per training step with step, loss, forward_s, backward_s, update_s, step_s. Anything else
is a failed run whose error says what was wrong; the sweep goes on.
"""

import json
import math
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Optional

from pstudy import common
from pstudy.measure import children
from pstudy.store import ovnitrace, vocabulary
from pstudy.errors import StudyError

STEP_FIELDS = ("loss", "forward_s", "backward_s", "update_s", "step_s")
TERM_GRACE_S = 2.0  # after SIGTERM to a timed-out process group, wait this long before SIGKILL

# statuses of a run (CANCELLED: a Slurm job cancelled, preempted or lost with its node: perfstudy run --slurm)
OK, CRASHED, TIMEOUT, GARBAGE, MISMATCH, CANCELLED = "ok", "crashed", "timeout", "garbage", "mismatch", "cancelled"


@dataclass
class Outcome:
    status: str
    error: str = ""
    exit_code: Optional[int] = None
    wall_s: float = 0.0
    info: dict = field(default_factory=dict)
    steps: list = field(default_factory=list)   # dicts: step, loss, forward_s, ..., warmup
    stderr_tail: list = field(default_factory=list)
    # what disturbed the run from outside it (None: not known): the host's steal time over the
    # run, all CPUs together (/proc/stat), and the process's involuntary context switches, all
    # its threads (the rusage os.wait4 gives for the child)
    steal_s: Optional[float] = None
    involuntary_switches: Optional[int] = None


def binary_path(study, point, root, build_dir=None):
    """Where the binary of a point lives: run.binary filled in with the build tree (`build_dir`, or
    common.build_dir: PERFSTUDY_BUILD_DIR, else run.build_dir)."""
    tree = build_dir if build_dir is not None else common.build_dir(study, root)
    text = study.run["binary"].format(build_dir=str(tree), compiler=point.compiler,
                                      kernels=point.kernels, variant=point.variant)
    path = os.path.expanduser(text)
    return path if os.path.isabs(path) else os.path.join(root, path)


def make_target(binary, root):
    """`binary`'s make target, relative to `root`; None for one outside it."""
    try:
        target = os.path.relpath(os.path.realpath(binary), os.path.realpath(root))
    except ValueError:
        return None
    return None if target.startswith(os.pardir) else target


def binary_is_stale(binary, root):
    """Whether make would rebuild `binary` (`make -q` exits 1: a source is newer), so that a
    benchmark never times code older than the checkout under the checkout's commit. A binary
    outside `root`, or one make has no rule for, is taken as it is."""
    target = make_target(binary, root)
    if target is None:
        return False
    r = subprocess.run(["make", "-q", "-C", str(root), target], capture_output=True, text=True)
    return r.returncode == 1


def all_current(binaries, root):
    """Whether every one of `binaries` is there and make would rebuild none, asked of make once for
    all (each make reads the whole Makefile, a second of CPU); False whenever make says anything else,
    so that the caller then asks for each in its own order (binary_is_stale) and names the first."""
    targets = [make_target(binary, root) for binary in binaries]
    if None in targets or not all(os.path.exists(binary) for binary in binaries):
        return False
    r = subprocess.run(["make", "-q", "-C", str(root), *targets], capture_output=True, text=True)
    return r.returncode == 0


def model_path(value, root):
    if value is None:
        return None
    value = os.path.expanduser(value)
    return value if os.path.isabs(value) else os.path.join(root, value)


def model_args(study, root, steps=None, point=None):
    """The batch shape, step count and model options every run of a study shares. For a
    distributed point under weak scaling, model.B is each rank's batch: the global one is R times it."""
    m = study.model
    B = m["B"]
    if point is not None and getattr(point, "ranks", None) is not None and study.sweep["scaling"] == "weak":
        B *= point.ranks
    args = ["-B", str(B), "-T", str(m["T"])]
    if steps is not None:
        args += ["--steps", str(steps)]
    if m["config"] is not None:
        args += ["--config", m["config"]]
    else:
        args += ["--model", model_path(m["checkpoint"], root)]
    return args


# the options `--check` may refuse, and the config key each one comes from
CHECKED_OPTION_KEYS = {"-B": "model.B", "-T": "model.T", "-B/-T": "model.B, model.T", "--steps": "run.steps",
                       "--config": "model.config", "--model": "model.checkpoint", "--data": "model.data",
                       "--batch-subsize": "sweep.batch_subsize", "--token-chunk": "sweep.token_chunk",
                       "--tile-sequences": "sweep.tile_sequences", "--tiles-per-product": "sweep.tiles_per_product",
                       "--threads": "sweep.threads",
                       **{knob.option: f"sweep.{key}" for key, knob in vocabulary.DISTRIBUTED_OPTIONS.items()}}


def check_command(study, point, binary, root):
    """The binary's own check of a point's run (its --check: the options, the model against T, the
    data, the memory the model state needs), without running it; threads and chunking left out, so
    that a sweep asks once per binary and batch. A distributed point is checked as
    one process holding the largest rank's share of the batch."""
    cmd = command(study, point, binary, root)
    cmd = cmd[cmd.index(binary):]  # no launcher: one process
    cmd.remove("--json")
    for option in ("--threads", "--batch-subsize", "--token-chunk", "--tile-sequences"):  # the config checks these
        if option in cmd:
            del cmd[cmd.index(option):cmd.index(option) + 2]
    ranks = getattr(point, "ranks", None)
    if ranks:
        at = cmd.index("-B") + 1
        cmd[at] = str(-(-int(cmd[at]) // ranks))
    return cmd + ["--check"]


def check_run(study, point, binary, root):
    """None when the binary accepts the point's run (check_command); otherwise its one-line refusal,
    prefixed with the config key it names."""
    cmd = check_command(study, point, binary, root)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                              env=environment(study, point))
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"run.binary: {binary} --check: {err}"
    if done.returncode == 0:
        return None
    last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    if "--check" in last and "unknown option" in last:
        return f"run.binary: {binary} --check: {last} (a build older than the harness? rebuild with make)"
    problem = last.split(": ", 1)[1] if last.startswith("gpt2-") and ": " in last else last
    option = problem.split(":", 1)[0]
    unknown = next((o for o in CHECKED_OPTION_KEYS if problem.startswith(f"unknown option '{o}'")), None)
    if unknown is not None:  # a sweep key the binary does not have yet
        return f"{CHECKED_OPTION_KEYS[unknown]}: {problem} ({os.path.basename(binary)} refuses the run: a build " \
               "older than the harness? rebuild with make)"
    key = CHECKED_OPTION_KEYS.get(option)
    if key is None:
        paths = {study.model["data"]: "model.data", study.model["checkpoint"]: "model.checkpoint"}
        key = next((k for v, k in paths.items() if v and problem.startswith(model_path(v, root))), "model")
    return f"{key}: {problem} ({os.path.basename(binary)} refuses the run)"


def launcher_program(study):
    """The program that starts a distributed run's ranks: [launcher] command, else mpirun or srun."""
    return study.launcher["command"] or ("srun" if study.launcher["kind"] == "slurm" else "mpirun")


def check_launcher(study):
    """StudyError (exit 2) when the sweep has distributed points and its launcher is not on PATH."""
    if not any(vocabulary.is_distributed(v) for v in study.sweep["variants"]):
        return
    program = launcher_program(study)
    if shutil.which(program) is None:
        raise StudyError(f"{study.path}: launcher.kind: {study.launcher['kind']} needs {program}, which is not "
                         "on PATH (install openmpi-bin: scripts/install-deps.sh; or set launcher.command)")


def launcher_prefix(study, point):
    """What starts a distributed point's ranks, each with `threads` cores:
    local  mpirun -q -np R --map-by slot:PE=T --bind-to core [--allow-run-as-root]
           (R x T over this machine's CPUs: --oversubscribe --bind-to core:overload-allowed, the binding
           Open MPI accepts then; plain core binding refuses to start every such run)
    slurm  srun -n R -c T --cpu-bind=cores --mpi=pmix   (Open MPI's ranks find each other through PMIx)
    then [launcher] args. Empty for a point that is not distributed."""
    if getattr(point, "ranks", None) is None:
        return []
    program, ranks, threads = launcher_program(study), str(point.ranks), str(point.threads)
    if study.launcher["kind"] == "slurm":
        cmd = [program, "-n", ranks, "-c", threads, "--cpu-bind=cores", "--mpi=pmix"]
    else:
        # -q: a failing rank's own one line, without mpirun's banner; root needs its consent
        over = point.ranks * point.threads > (os.cpu_count() or 1)
        cmd = [program, "-q", "-np", ranks, "--map-by", f"slot:PE={threads}"] + \
            (["--oversubscribe", "--bind-to", "core:overload-allowed"] if over else ["--bind-to", "core"])
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    return cmd + list(study.launcher["args"])


def launcher_meta(study):
    """meta.json's record of how distributed points are started."""
    return {"kind": study.launcher["kind"], "program": launcher_program(study),
            "args": list(study.launcher["args"]), "scaling": study.sweep["scaling"],
            "ranks": list(study.sweep["ranks"]),
            **{key: list(study.sweep[key]) for key in vocabulary.DISTRIBUTED_KEYS if study.sweep.get(key)},
            "example": launcher_prefix(study, _Example(threads=1, ranks=max(study.sweep["ranks"])))}


class _Example:
    def __init__(self, threads, ranks):
        self.threads, self.ranks = threads, ranks


def schedule_args(point):
    """--threads, the chunk options and the distributed options of a point, as its binary takes them."""
    args = []
    if not vocabulary.is_sequential(point.variant):
        args += ["--threads", str(point.threads)]
    if vocabulary.is_chunked(point.variant):
        # a chunk key left to the binary (AUTO) is not passed: it chooses it for its thread count
        for key, (option, _info) in vocabulary.CHUNK_OPTIONS.items():
            value = getattr(point, key, None)
            if value is not None and value != vocabulary.AUTO:
                args += [option, str(value)]
    for key, value in vocabulary.distributed_settings(point).items():  # the others: the binary's default
        args += [vocabulary.DISTRIBUTED_OPTIONS[key].option, str(value)]
    return args


def command(study, point, binary, root, trace=None, prefix=()):
    """The command line of one run; `prefix` goes in front (a wrapper such as taskset), then the
    launcher of a distributed point (launcher_prefix)."""
    m, r = study.model, study.run
    cmd = [*prefix, *launcher_prefix(study, point), binary, "--json"] + \
        model_args(study, root, steps=r["warmup"] + r["steps"], point=point)
    if m["data"] is not None:
        cmd += ["--data", model_path(m["data"], root)]
    cmd += schedule_args(point)
    if trace is not None:
        cmd += ["--trace", str(trace)]
    return cmd


def environment(study, point):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(point.threads)
    for var, key in (("OMP_PROC_BIND", "proc_bind"), ("OMP_PLACES", "places")):
        value = study.placement[key]
        if value:
            env[var] = value
        else:
            env.pop(var, None)
    # the point's StarPU scheduler; without one, StarPU's default, not one inherited from the shell
    # that would run under a label that does not name it
    sched = getattr(point, "starpu_sched", None)
    if sched:
        env["STARPU_SCHED"] = sched
    else:
        env.pop("STARPU_SCHED", None)
    return env


def host_steal_seconds(path="/proc/stat"):
    """The host's steal time so far, all CPUs together, in seconds (the `cpu` line's eighth value,
    in USER_HZ ticks: time a hypervisor gave this VM's vCPUs to someone else); None where the file
    or the field is not there (not Linux, or a kernel without it)."""
    try:
        with open(path) as f:
            for line in f:
                fields = line.split()
                if fields and fields[0] == "cpu":
                    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else None
    except (OSError, ValueError):
        return None
    return None


class _Process(subprocess.Popen):
    """Popen that keeps the child's resource usage (os.wait4) when it reaps it: its involuntary
    context switches tell a run descheduled by a neighbour from a slow one. Popen reaps through
    _try_wait, which this replaces with the same call plus the usage; where Popen reaps otherwise
    (poll) the usage stays None."""
    rusage = None

    def _try_wait(self, wait_flags):
        try:
            pid, status, usage = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0  # as Popen: reaped elsewhere
        if pid == self.pid:
            self.rusage = usage
        return pid, status


def execute(study, point, binary, root, trace=None, prefix=(), runtime_trace=False):
    """Run one process for `point`; never raises for a misbehaving binary (KeyboardInterrupt passes).
    runtime_trace: a traced run also records its runtime's own trace where it can (ovnitrace)."""
    cmd = command(study, point, binary, root, trace, prefix)
    env = environment(study, point)
    if runtime_trace:
        env.update(ovnitrace.environment(point.variant, binary, trace))
    timeout = study.run["timeout_s"]
    start, steal = time.monotonic(), host_steal_seconds()
    try:  # its own process group: a timeout or an interrupt stops it all
        proc = children.start(cmd, grace=0.0, cls=_Process, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, env=env)
    except OSError as err:
        return Outcome(CRASHED, f"cannot start {binary}: {err.strerror}")
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        children.stop(proc, TERM_GRACE_S)
        out, err = proc.communicate()
        return Outcome(TIMEOUT, f"no exit after {timeout:g} s (per-run timeout); process group killed",
                       exit_code=proc.returncode, wall_s=time.monotonic() - start,
                       stderr_tail=tail(err))
    except BaseException:  # Ctrl-C: the child is in its own session and did not get the SIGINT
        children.stop(proc, 0.0)
        raise
    outcome = outcome_of(proc.returncode, out, err, time.monotonic() - start, study, point)
    after = host_steal_seconds()
    outcome.steal_s = None if steal is None or after is None else round(max(0.0, after - steal), 6)
    outcome.involuntary_switches = None if proc.rusage is None else int(proc.rusage.ru_nivcsw)
    if outcome.status == CRASHED and not outcome.stderr_tail and "-q" in cmd[:2] and point_is_launched(point):
        message = launcher_message([c for c in cmd if c != "-q"], environment(study, point))
        if message:
            outcome.error += f": {message}"
            outcome.stderr_tail = [message]
    return outcome


def point_is_launched(point):
    return getattr(point, "ranks", None) is not None


def launcher_message(cmd, env, timeout=60):
    """What the launcher says when it refuses to start a run: mpirun -q prints nothing then, so the
    same command is started again without -q (a refused launch ends at once) and its message, its
    banner of dashes left out, is returned on one line; "" when it says nothing or starts the run."""
    try:
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              env=env, timeout=timeout, start_new_session=True)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    words = " ".join(line.strip() for line in done.stderr.decode("utf-8", errors="replace").splitlines()
                     if line.strip() and set(line.strip()) != {"-"}).split()
    text = " ".join(words)
    return text if len(text) <= 400 else text[:397] + "..."


def outcome_of(returncode, out, err, wall, study, point):
    """The Outcome of a finished process from its exit status (negative: the signal that killed it)
    and its stdout and stderr (bytes or text): a local run's, or a Slurm job's from its files."""
    stderr_tail = tail(err)
    if returncode != 0:
        if returncode < 0:
            why = f"killed by signal {signal.Signals(-returncode).name}"
        elif returncode > 128 and returncode - 128 in {s.value for s in signal.Signals}:
            why = f"exit status {returncode} (signal {signal.Signals(returncode - 128).name})"
        else:
            why = f"exit status {returncode}"
        last = stderr_tail[-1] if stderr_tail else ""
        return Outcome(CRASHED, f"{why}" + (f": {last}" if last else ""), exit_code=returncode,
                       wall_s=wall, stderr_tail=stderr_tail)
    text = out.decode("utf-8", errors="replace") if isinstance(out, bytes) else out
    outcome = parse(text, study, point)
    outcome.exit_code, outcome.wall_s, outcome.stderr_tail = returncode, wall, stderr_tail
    return outcome


def tail(data, lines=20):
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else (data or "")
    return [line for line in text.splitlines() if line.strip()][-lines:]


def parse(text, study, point):
    """Check the --json output of one run; returns an Outcome (OK, GARBAGE or MISMATCH)."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        return Outcome(GARBAGE, "no output on stdout")
    objects = []
    for n, line in lines:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            return Outcome(GARBAGE, f"stdout line {n} is not JSON: {shorten(line)}")
        if not isinstance(obj, dict):
            return Outcome(GARBAGE, f"stdout line {n} is not a JSON object: {shorten(line)}")
        objects.append((n, obj))

    n, first = objects[0]
    info = first.get("info")
    if not isinstance(info, dict):
        return Outcome(GARBAGE, f"stdout line {n}: the first line must be {{\"info\": {{...}}}}")
    problem = check_info(info, point)
    if problem:
        return Outcome(MISMATCH, problem, info=info)

    warmup, measured = study.run["warmup"], study.run["steps"]
    steps = []
    for n, obj in objects[1:]:
        if "step" not in obj:
            return Outcome(GARBAGE, f"stdout line {n}: expected a step record, got {shorten(json.dumps(obj))}",
                           info=info)
        record = {"step": obj["step"]}
        if not isinstance(record["step"], int) or record["step"] != len(steps):
            return Outcome(GARBAGE, f"stdout line {n}: step {obj['step']!r} out of order "
                           f"(expected {len(steps)})", info=info)
        for key in STEP_FIELDS:
            value = obj.get(key)
            if key == "loss" and value is None and key in obj:  # the binary's word for a NaN or infinite loss
                return Outcome(GARBAGE, f"stdout line {n}: step {record['step']}: training diverged (the loss is "
                               "not a finite number)", info=info)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                return Outcome(GARBAGE, f"stdout line {n}: step {record['step']}: {key} is {value!r}, "
                               "expected a finite number", info=info)
            if key != "loss" and value < 0:
                return Outcome(GARBAGE, f"stdout line {n}: step {record['step']}: negative {key} {value}",
                               info=info)
            record[key] = float(value)
        # optional: only distributed variants report comm_s, and a system may not say what disturbed a step
        for key in vocabulary.DISTRIBUTED_STEP_FIELDS + vocabulary.DISTURBANCE_STEP_FIELDS:
            value = obj.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
                record[key] = float(value)
        record["warmup"] = record["step"] < warmup
        steps.append(record)
    if len(steps) != warmup + measured:
        return Outcome(GARBAGE, f"{len(steps)} step records, expected {warmup + measured} "
                       f"({warmup} warm-up + {measured} measured)", info=info)
    return Outcome(OK, info=info, steps=steps)


def check_info(info, point):
    """The binary must say it ran what was asked; otherwise the measurement would be mislabelled."""
    expected = {"variant": point.variant, "compiler": point.compiler, "kernels": point.kernels,
                "threads": point.threads}
    if point.batch_subsize is not None:
        for key, (_option, info_key) in vocabulary.CHUNK_OPTIONS.items():
            value = getattr(point, key, None)
            if value is not None and value != vocabulary.AUTO:  # what the binary chose is recorded, not checked
                expected[info_key] = value
    if getattr(point, "ranks", None) is not None:
        expected["ranks"] = point.ranks
    expected.update(vocabulary.distributed_settings(point))  # the info line has each knob as run
    if "variant" not in info:
        return "info line has no \"variant\""
    for key, want in expected.items():
        if info.get(key) is not None and info[key] != want:  # absent or null: not reported
            return f"info line says {key}={info[key]!r} but {want!r} was asked for"
    sched, runtime = getattr(point, "starpu_sched", None), info.get("runtime")
    if sched is not None and isinstance(runtime, dict) and runtime.get("scheduler") not in (None, sched):
        return f"info line says runtime.scheduler={runtime['scheduler']!r} but {sched!r} was asked for"
    return ""


def shorten(text, width=80):
    text = text.strip()
    return repr(text if len(text) <= width else text[:width] + "...")


def named_configs(binary):
    """The model configurations a binary has built in (its --list-configs, one name per line);
    StudyError when it cannot say."""
    try:
        done = subprocess.run([str(binary), "--list-configs"], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise StudyError(f"{binary}: cannot list its model configurations: {err}") from None
    names = done.stdout.split()
    if done.returncode != 0 or not names:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise StudyError(f"{binary} --list-configs: {last} (a build older than the harness? rebuild with make)")
    return names
