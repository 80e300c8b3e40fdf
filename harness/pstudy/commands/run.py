"""run a sweep from a TOML config: every point a separate process, results in results/."""

import os
import random
import sys

from pstudy import common
from pstudy.measure import evidence as analysis
from pstudy.store import config as configmod
from pstudy.store import resultsdir, sweep
from pstudy.measure import provenance as machine, runner, slurm
from pstudy.common import REPO_ROOT
from pstudy.errors import StudyError, os_error_message

ORDER_POLICY = ("repetition-major: every point once per repetition, the points shuffled in each "
                "repetition by random.Random(seed)")


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
    parser.add_argument("--wait", action="store_true",
                        help="when another process is sweeping the same directory, wait for it (default: exit 2)")
    parser.add_argument("--slurm", action="store_true",
                        help="submit one Slurm batch job per run (sbatch), follow them (squeue, sacct) and collect "
                             "them into the results directory; the scripts are kept in its slurm/")
    parser.add_argument("--partition", help="with --slurm: sbatch --partition")
    parser.add_argument("--time", help="with --slurm: sbatch --time (default: run.timeout_s in minutes, plus one)")
    parser.add_argument("--account", help="with --slurm: sbatch --account")
    parser.add_argument("--poll", type=float, default=5.0, help="with --slurm: seconds between squeue calls (default 5)")


def main(args):
    path = configmod.resolve_path(args.config, common.CONFIGS_DIR)
    for flag in ("partition", "time", "account"):
        if getattr(args, flag) is not None and not args.slurm:
            raise StudyError(f"--{flag}: only with --slurm")
    if args.poll <= 0:
        raise StudyError(f"--poll: {args.poll:g} is not a positive number of seconds")
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

    results_root = common.results_root(args.results_root)
    git = machine.git_state(str(REPO_ROOT))
    if git.get("problem"):
        say(f"warning: the code's commit is unknown (git: {git['problem']}); the directory is named "
            "'nogit' and an interrupted sweep is resumed only while the config is unchanged")
    directory, resumed = resultsdir.find_or_create(results_root, study, git, fresh=args.fresh)
    with common.owning(directory / resultsdir.LOCK, str(directory), wait=args.wait):
        return sweep_into(directory, resumed, study, git, binaries, args)


def sweep_into(directory, resumed, study, git, binaries, args):
    """The sweep proper, in a directory this process owns (a second sweep of it waits or stops)."""
    journal = resultsdir.Journal(directory)
    if resumed:
        meta = resultsdir.read_meta(directory)
        seed = meta["seed"]
        meta.setdefault("resumed", []).append(common.now())
    else:
        seed = study.run["seed"] if study.run["seed"] is not None else random.SystemRandom().randrange(2**31)
        meta = initial_meta(study, git, directory, seed, binaries)
        resultsdir.atomic_write(directory / resultsdir.CONFIG_COPY, study.text)
    meta["status"] = "running"
    meta["runs_total"] = len(sweep.schedule(study, seed))
    resultsdir.write_meta(directory, meta)
    resultsdir.reserve_space(directory)

    order = sweep.schedule(study, seed)
    done = resultsdir.completed_runs(directory, retry_failed=args.retry_failed)
    journal.append("begin", resumed=resumed, total_runs=len(order), already_done=len(done), seed=seed)
    say(f"{'resuming' if resumed else 'writing'} {directory} "
        f"({len(sweep.points(study))} points x {study.run['repetitions']} repetitions = {len(order)} runs"
        + (f", {len(done)} already done" if done else "") + ")")

    if study.run["steps"] * study.run["repetitions"] < 6:
        say("note: fewer than 6 measured steps per point (steps x repetitions): medians get no 95% "
            "confidence interval")
    progress = common.Progress(len(order), done)
    common.end_like_ctrl_c()
    try:
        if args.slurm:
            meta.setdefault("slurm", []).append({"partition": args.partition, "time": args.time,
                                                 "account": args.account, "started": common.now()})
            resultsdir.write_meta(directory, meta)
            slurm.sweep(directory, study, order, done, binaries, journal, progress,
                        slurm.Options(args.partition, args.time, args.account, args.poll), str(REPO_ROOT))
        else:
            run_locally(directory, study, order, done, binaries, journal, progress)
        progress.close()
        # inside the interrupt handling: a Ctrl-C while the ceilings are measured still tabulates
        # every run measured, and the status says interrupted
        for note in filter(None, analyse(study, directory, binaries, meta)):
            say(note)
            meta.setdefault("analysis_notes", []).append(note)
    except KeyboardInterrupt:
        progress.close()
        resultsdir.release_space(directory)
        journal.append("interrupted")
        resultsdir.tabulate(directory, meta, "interrupted", common.now())
        say(f"interrupted; the runs finished so far are in {directory}; run the same command again to resume"
            + (" (submitted jobs stay with Slurm and are collected then)" if args.slurm else ""))
        return 130
    except StudyError as err:  # a failed submission: what was submitted is journalled; stop like Ctrl-C
        progress.close()
        resultsdir.release_space(directory)
        journal.append("interrupted", error=str(err))
        resultsdir.tabulate(directory, meta, "interrupted", common.now())
        raise
    except OSError as err:  # a full or read-only disk: record it where possible, keep what was written
        if err.filename is None:  # a write to an open file names none: the directory is the place
            err.filename = str(directory)
        record_failure(directory, meta, err)
        raise
    resultsdir.release_space(directory)
    journal.append("end")
    n_failed = resultsdir.tabulate(directory, meta, "complete", common.now())
    say(f"done: {directory}" + (f" ({n_failed} failed runs, see failures.csv)" if n_failed else ""))
    print(directory)  # the one line on stdout, for scripts: perfstudy report "$(perfstudy run ...)"
    if n_failed and n_failed == meta["runs_done"]:
        say("every run failed (see failures.csv)")
        return 1
    return 1 if (args.strict and n_failed) else 0


def run_locally(directory, study, order, done, binaries, journal, progress):
    """Every run not done, one process after the other, each recorded as soon as it ends."""
    for i, run in enumerate(order):
        if run.run_id() in done:
            continue
        progress.starting(run)
        binary = binaries[binary_key(run.point)]
        trace = None
        if study.analysis["trace"]:
            trace = resultsdir.trace_path(directory, run.point, run.repetition)
            trace.parent.mkdir(exist_ok=True)
        outcome = runner.execute(study, run.point, binary, str(REPO_ROOT), trace)
        resultsdir.save_run(directory, run, i, outcome,
                            runner.command(study, run.point, binary, str(REPO_ROOT), trace))
        journal.append("run", run_id=run.run_id(), status=outcome.status)
        progress.finished(run, outcome)


def analyse(study, directory, binaries, meta):
    """The work after the runs (op descriptions, ceilings, counters, trace exports and efficiency
    factors); returns its notes."""
    if study.analysis["trace"] or study.analysis["roofline"]:
        yield analysis.describe_ops(study, directory, binaries, str(REPO_ROOT))
    if study.analysis["ceilings"]:
        yield analysis.measure_ceilings(study, directory, str(REPO_ROOT))
    if meta.get("counters", {}).get("backend"):
        yield analysis.collect_counters(study, directory, sweep.points(study), str(REPO_ROOT), meta["counters"])
    if study.analysis["trace"]:
        yield analysis.export_traces(directory, study.run["warmup"])
    if study.analysis["sensitivity"]:
        yield analysis.bandwidth_sensitivity(study, directory, str(REPO_ROOT), meta["seed"])
    if study.analysis["cachesim"]:
        yield analysis.cache_simulation(study, directory, str(REPO_ROOT))


def record_failure(directory, meta, err):
    """Status "failed" with the error in meta.json first (a small file, the likeliest to fit on a full
    disk), then the tables from the run records, if they can be written."""
    meta["error"] = os_error_message(err)
    meta["status"] = "failed"
    resultsdir.release_space(directory)
    try:
        resultsdir.write_meta(directory, meta)
        resultsdir.tabulate(directory, meta, "failed", common.now())
    except OSError:
        pass  # nothing more can be written; the one-line error still reaches the user


def binary_key(point):
    return (point.compiler, point.kernels, point.variant)


def check_inputs(study, order):
    """Every binary and input file must exist before anything runs (exit 2 naming the key otherwise)."""
    runner.check_launcher(study)
    binaries = {}
    for run in order:
        key = binary_key(run.point)
        if key not in binaries:
            path = runner.binary_path(study, run.point, str(REPO_ROOT))
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise StudyError(f"{study.path}: run.binary: no executable {path} for {'/'.join(key)} "
                                 "(build it first, or set run.build_dir / PERFSTUDY_BUILD_DIR)")
            binaries[key] = path
    if study.model["config"] is not None:  # what the binaries accept, asked of them, not a copied list
        for path in sorted(set(binaries.values())):
            known = runner.named_configs(path)
            if study.model["config"] not in known:
                raise StudyError(f"{study.path}: model.config: unknown configuration \"{study.model['config']}\" "
                                 f"({path} knows: {', '.join(known)})")
    for key in ("checkpoint", "data"):
        value = runner.model_path(study.model[key], str(REPO_ROOT))
        if value is not None and not os.path.isfile(value):
            raise StudyError(f"{study.path}: model.{key}: no such file {value}")
    return binaries


def say(text):
    common.say("run", text)


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
    return resultsdir.new_meta(
        directory.name, study, git, seed, binaries, machine.compilers(study, common.build_dir(study)),
        ORDER_POLICY, ["perfstudy"] + sys.argv[1:], common.now(),
        identity=resultsdir.identity(study, git), build_dir_env=os.environ.get("PERFSTUDY_BUILD_DIR"),
        **({"launcher": runner.launcher_meta(study)} if study.sweep.get("ranks") and any(
            p.ranks is not None for p in sweep.points(study)) else {}),
        counters={"requested": study.counters["backend"], **counters_status(study.counters["backend"])})
