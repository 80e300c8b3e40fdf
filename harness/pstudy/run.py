"""run a sweep from a TOML config: every point a separate process, results in results/."""

import datetime
import os
import random
import signal
import sys
import time
from pathlib import Path

from pstudy import analysis, config as configmod
from pstudy import machine, resultsdir, runner, sweep
from pstudy.errors import StudyError

REPO_ROOT = Path(__file__).resolve().parents[2]

ORDER_POLICY = ("repetition-major: every point once per repetition, the points shuffled in each "
                "repetition by random.Random(seed)")
WARMUP_POLICY = ("warm-up steps are kept in steps.csv with warmup=true and left out of every statistic; "
                 "measured steps have warmup=false")


def add_arguments(parser):
    parser.add_argument("config", help="a TOML file, or the name of one in configs/ (\"quick\")")
    parser.add_argument("--results-root", default=os.environ.get("PERFSTUDY_RESULTS"),
                        help="where results directories go (default: $PERFSTUDY_RESULTS or <repo>/results)")
    parser.add_argument("--fresh", action="store_true",
                        help="start a new results directory even if one with the same config and code exists")
    parser.add_argument("--retry-failed", action="store_true",
                        help="on resume, run again the runs that failed (default: keep their failure)")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any run failed")
    parser.add_argument("--dry-run", action="store_true", help="print the runs in order and stop")


def main(args):
    path = configmod.resolve_path(args.config, REPO_ROOT / "configs")
    study = configmod.load(path)
    if args.dry_run:  # no checks: this may well come before the build
        seed = study.run["seed"] or 0
        say(f"the runs in order for seed {seed}" + ("" if study.run["seed"] is not None else
                                                     " (run.seed is unset: a real sweep draws one)"))
        for i, run in enumerate(sweep.schedule(study, seed)):
            cmd = runner.command(study, run.point, runner.binary_path(study, run.point, str(REPO_ROOT)),
                                 str(REPO_ROOT))
            print(f"{i + 1:4d} rep {run.repetition} {run.point.label():40s} {' '.join(cmd)}")
        return 0
    binaries = check_inputs(study, sweep.schedule(study, seed=0))

    results_root = Path(args.results_root or REPO_ROOT / "results")
    git = machine.git_state(str(REPO_ROOT))
    directory, resumed = resultsdir.find_or_create(results_root, study, git, fresh=args.fresh)
    journal = resultsdir.Journal(directory)
    if resumed:
        meta = resultsdir.read_meta(directory)
        seed = meta["seed"]
        meta.setdefault("resumed", []).append(now())
    else:
        seed = study.run["seed"] if study.run["seed"] is not None else random.SystemRandom().randrange(2**31)
        meta = initial_meta(study, git, directory, seed, binaries)
        resultsdir.atomic_write(directory / "config.toml", study.text)
    meta["status"] = "running"
    meta["runs_total"] = len(sweep.schedule(study, seed))
    resultsdir.write_json(directory / resultsdir.META, meta)

    order = sweep.schedule(study, seed)
    done = resultsdir.completed_runs(directory, retry_failed=args.retry_failed)
    journal.append("begin", resumed=resumed, total_runs=len(order), already_done=len(done), seed=seed)
    say(f"{'resuming' if resumed else 'writing'} {directory} "
        f"({len(sweep.points(study))} points x {study.run['repetitions']} repetitions = {len(order)} runs"
        + (f", {len(done)} already done" if done else "") + ")")

    if study.run["steps"] * study.run["repetitions"] < 6:
        say("note: fewer than 6 measured steps per point (steps x repetitions): medians get no 95% "
            "confidence interval")
    progress = Progress(len(order), done)
    # a kill or hang-up ends the sweep like Ctrl-C: the running binary, in its own process group,
    # would otherwise be left behind
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)
    try:
        for i, run in enumerate(order):
            if run.run_id() in done:
                continue
            progress.starting(run)
            binary = binaries[binary_key(run.point)]
            trace = None
            if study.analysis["trace"]:
                (directory / "traces").mkdir(exist_ok=True)
                trace = directory / "traces" / runner.trace_name(run.point, run.repetition)
            outcome = runner.execute(study, run.point, binary, str(REPO_ROOT), trace)
            resultsdir.save_run(directory, run, i, outcome,
                                runner.command(study, run.point, binary, str(REPO_ROOT), trace))
            journal.append("run", run_id=run.run_id(), status=outcome.status)
            progress.finished(run, outcome)
    except KeyboardInterrupt:
        progress.close()
        journal.append("interrupted")
        finish(directory, meta, "interrupted")
        say(f"interrupted; the runs finished so far are in {directory}; run the same command again to resume")
        return 130
    progress.close()
    notes = []
    if study.analysis["trace"] or study.analysis["roofline"]:
        notes.append(analysis.describe_ops(study, directory, binaries, str(REPO_ROOT)))
    if study.analysis["ceilings"]:
        notes.append(analysis.measure_ceilings(study, directory, str(REPO_ROOT)))
    if meta.get("counters", {}).get("backend"):
        notes.append(analysis.collect_counters(study, directory, sweep.points(study), str(REPO_ROOT),
                                               meta["counters"]))
    for note in filter(None, notes):
        say(note)
        meta.setdefault("analysis_notes", []).append(note)
    journal.append("end")
    n_failed = finish(directory, meta, "complete")
    say(f"done: {directory}" + (f" ({n_failed} failed runs, see failures.csv)" if n_failed else ""))
    print(directory)  # the one line on stdout, for scripts: perfstudy report "$(perfstudy run ...)"
    return 1 if (args.strict and n_failed) else 0


def interrupt(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def binary_key(point):
    return (point.compiler, point.kernels, point.variant)


def check_inputs(study, order):
    """Every binary and input file must exist before anything runs (exit 2 naming the key otherwise)."""
    binaries = {}
    for run in order:
        key = binary_key(run.point)
        if key not in binaries:
            path = runner.binary_path(study, run.point, str(REPO_ROOT))
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise StudyError(f"{study.path}: run.binary: no executable {path} for {'/'.join(key)} "
                                 "(build it first, or set run.build_dir / PERFSTUDY_BUILD_DIR)")
            binaries[key] = path
    for key in ("checkpoint", "data"):
        value = runner.model_path(study.model[key], str(REPO_ROOT))
        if value is not None and not os.path.isfile(value):
            raise StudyError(f"{study.path}: model.{key}: no such file {value}")
    return binaries


def now():
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def say(text):
    sys.stderr.write(f"perfstudy run: {text}\n")


def counters_status(backend):
    """What meta.json says of hardware counters: the backend used, or why none is."""
    if backend == "none":
        return {"backend": None, "status": "none", "reasons": {}}
    found = analysis.counters_detection_for(backend)
    reason = found["reason"]
    if found["backend"]:
        status = f"{found['backend']}: {reason}"
    else:
        status = reason if reason.startswith("unavailable") else f"unavailable: {reason}"
    return {"backend": found["backend"], "status": status, "reasons": found["reasons"]}


def initial_meta(study, git, directory, seed, binaries):
    return {
        "name": directory.name,
        "identity": resultsdir.identity(study, git),
        "git": git,
        "started": now(),
        "finished": None,
        "status": "running",
        "command": ["perfstudy"] + sys.argv[1:],
        "build_dir_env": os.environ.get("PERFSTUDY_BUILD_DIR"),
        "config_file": str(study.path),
        "config": study.as_dict(),
        "seed": seed,
        "order": ORDER_POLICY,
        "warmup": WARMUP_POLICY,
        "statistics": {"centre": "median of the measured steps of all repetitions, pooled",
                       "ci": "95% distribution-free order-statistic (binomial) interval for the median; "
                             "exact coverage in summary.csv column ci_coverage",
                       "speedup_ci": "interval arithmetic on the CIs of base and point medians"},
        "placement": {"OMP_PROC_BIND": study.placement["proc_bind"] or "(unset)",
                      "OMP_PLACES": study.placement["places"] or "(unset)"},
        "counters": {"requested": study.counters["backend"], **counters_status(study.counters["backend"])},
        "binaries": {"/".join(k): v for k, v in binaries.items()},
        "compilers": machine.compilers(study, str(REPO_ROOT)),
        "omp_runtime": {},
        "cpu": machine.cpu(),
        "system": machine.system(),
        "software": machine.software(),
        "config_text": study.text,
    }


def finish(directory, meta, status):
    """Write the tables and the final meta.json; returns the number of failed runs."""
    from pstudy import stats

    steps, runs, failures = resultsdir.tables(directory)
    resultsdir.write_csv(directory / "steps.csv", steps)
    resultsdir.write_csv(directory / "runs.csv", runs)
    resultsdir.write_csv(directory / "failures.csv", failures)
    resultsdir.write_csv(directory / "summary.csv", stats.point_summary(steps, runs))
    runtimes = {}
    for _, r in runs.dropna(subset=["omp_runtime"]).iterrows():
        runtimes.setdefault(f"{r['compiler']}/{r['kernels']}", set()).add(str(r["omp_runtime"]))
    meta["omp_runtime"] = {k: sorted(v) for k, v in runtimes.items()}
    meta["status"] = status
    meta["finished"] = now()
    meta["runs_done"] = int(len(runs))
    meta["runs_ok"] = int((runs["status"] == "ok").sum())
    meta["runs_failed"] = int((runs["status"] != "ok").sum())
    resultsdir.write_json(directory / resultsdir.META, meta)
    return meta["runs_failed"]


class Progress:
    """One status line on stderr: runs done/total, failures, elapsed, ETA, the run in progress."""

    def __init__(self, total, done):
        self.total, self.done = total, len(done)
        self.failed = sum(1 for s in done.values() if s != "ok")
        self.start = time.monotonic()
        self.ran = 0
        self.tty = sys.stderr.isatty()

    def line(self, text):
        if self.tty:
            sys.stderr.write("\r\033[K" + text)
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def starting(self, run):
        if self.tty:
            self.line(self.status() + f" | running {run.point.label()} rep {run.repetition}")

    def finished(self, run, outcome):
        self.done += 1
        self.ran += 1
        if outcome.status != "ok":
            self.failed += 1
            self.line(f"FAILED {run.point.label()} rep {run.repetition}: {outcome.status}: {outcome.error}")
            if self.tty:
                sys.stderr.write("\n")
        if not self.tty or outcome.status == "ok":
            self.line(self.status() + f" | {run.point.label()} rep {run.repetition} {outcome.wall_s:.1f} s")

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
