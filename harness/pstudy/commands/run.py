"""run a sweep from a TOML config: every point a separate process, results in results/."""

import contextlib
import os
import random
import socket
import sys

from pstudy import common
from pstudy.measure import evidence
from pstudy.store import config as configmod
from pstudy.store import ovnitrace, resultsdir, sweep, traceformats
from pstudy.analyse import tables
from pstudy.measure import ceilings, doctor, provenance, runner, slurm
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
    parser.add_argument("--no-summary", action="store_true",
                        help="end without the summary table and chart (`make run` reports right after)")
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
    """A sweep, step by step: the config, the schedule, the runs, the results, the summary."""
    study = load_config(args)
    if args.dry_run:  # no checks: this may well come before the build
        return print_schedule(study)
    binaries = check_inputs(study, sweep.schedule(study, seed=0))
    git = provenance.git_state(str(REPO_ROOT))
    if git.get("problem") and git["source"] == "unknown":
        say(f"warning: the code's commit is unknown (git: {git['problem']}); the directory is named "
            "'nogit' and an interrupted sweep is resumed only while the config is unchanged")
    with contextlib.ExitStack() as held:
        # from schedule() on, meta.json says "running": a signal is held until the try below,
        # whose every exit gives the directory its final status
        early, deferral = common.signals_deferred(reraise=False), contextlib.ExitStack()

        def start(directory, resumed):
            complete_before = resumed and resultsdir.read_meta(directory).status == "complete"
            deferral.enter_context(early)
            return complete_before, schedule(directory, resumed, study, git, binaries, args.retry_failed)
        try:
            directory, resumed, (complete_before, (meta, order, done)) = claim(args, study, git, held, start)
            journal = resultsdir.Journal(directory)
            progress = common.Progress(len(order), done)
        except BaseException:
            deferral.close()
            raise
        try:
            deferral.close()
            common.end_like_ctrl_c()
            if early.caught:
                raise KeyboardInterrupt
            make_runs(directory, study, order, done, binaries, journal, progress, meta, args)
            progress.close()
            # inside the interrupt handling: a Ctrl-C while the ceilings are measured still tabulates
            # every run measured, and the status says interrupted
            gather_evidence(study, directory, binaries, meta)
        except KeyboardInterrupt:
            # a complete sweep run again (nothing left to run) is still complete when interrupted
            whole = complete_before and len(resultsdir.completed_runs(directory)) >= len(order)
            stop(directory, meta, journal, progress, "complete" if whole else "interrupted")
            say(f"interrupted; the runs finished so far are in {directory}; run the same command again to resume"
                + (" (submitted jobs stay with Slurm and are collected then)" if args.slurm else ""))
            return 130
        except StudyError as err:  # a failed submission: what was submitted is journalled; stop like Ctrl-C
            stop(directory, meta, journal, progress, "interrupted", error=str(err))
            raise
        except OSError as err:  # a full or read-only disk: record it where possible, keep what was written
            if err.filename is None:  # a write to an open file names none: the directory is the place
                err.filename = str(directory)
            record_failure(directory, meta, err)
            raise
        except Exception as err:  # a bug: meta.json still gets a final status, never "running" for good
            record_failure(directory, meta, err)
            raise
        n_failed = results(directory, study, meta, journal)
    return summary(directory, meta, n_failed, args)


def claim(args, study, git, held, start):
    """The sweep's directory, found or made, and held (its lock entered in `held`), then
    start(directory, resumed): (directory, resumed, what start returned). Finding, making and
    start (which writes meta.json) are done under the results root's own lock, so that a second
    `run` of the config started at once finds that directory (and says it is in use) instead of
    passing it by for having no meta.json yet."""
    root = common.results_root(args.results_root)
    root.mkdir(parents=True, exist_ok=True)
    with common.owning(root / resultsdir.LOCK, f"{root} (a results directory being made there)", wait=True):
        path, resumed = resultsdir.find_or_create(root, study, git, fresh=args.fresh)
        directory = resultsdir.ResultsDir(path)
        try:
            held.enter_context(common.owning(directory.lock, str(directory), wait=False))
        except StudyError:
            if not args.wait:
                raise
        else:
            return directory, resumed, start(directory, resumed)
    # --wait: the root is let go while waiting for the sweep that holds the directory
    held.enter_context(common.owning(directory.lock, str(directory), wait=True))
    return directory, resumed, start(directory, resumed)


def load_config(args):
    """Step 1: the config, and the options that go with it."""
    path = configmod.resolve_path(args.config, common.CONFIGS_DIR)
    for flag in ("partition", "time", "account"):
        if getattr(args, flag) is not None and not args.slurm:
            raise StudyError(f"--{flag}: only with --slurm")
    if args.poll <= 0:
        raise StudyError(f"--poll: {args.poll:g} is not a positive number of seconds")
    return configmod.load(path)


def print_schedule(study):
    """--dry-run: the runs in the order a sweep with the config's seed makes them."""
    seed = study.run["seed"] or 0
    say(f"the runs in order for seed {seed}" + ("" if study.run["seed"] is not None else
                                                 " (run.seed is unset: a real sweep draws one)"))
    for i, run in enumerate(sweep.schedule(study, seed)):
        cmd = runner.command(study, run.point, runner.binary_path(study, run.point, str(REPO_ROOT)),
                             str(REPO_ROOT))
        print(f"{i + 1:4d} rep {run.repetition} {run.point.label():40s} {' '.join(cmd)}")
    return 0


def schedule(directory, resumed, study, git, binaries, retry_failed):
    """Step 2: meta.json (new, or the resumed sweep's with its seed) and the order of the runs;
    returns (meta, order, the runs already done)."""
    if resumed:
        meta = resultsdir.read_meta(directory)
        seed = meta["seed"]
        meta.setdefault("resumed", []).append(common.now())
    else:
        seed = study.run["seed"] if study.run["seed"] is not None else random.SystemRandom().randrange(2**31)
        meta = initial_meta(study, git, directory, seed, binaries)
        resultsdir.atomic_write(directory.config_copy, study.text)
    order = sweep.schedule(study, seed)
    meta["status"] = "running"
    meta["runs_total"] = len(order)
    resultsdir.write_meta(directory, meta)
    resultsdir.reserve_space(directory)
    done = resultsdir.completed_runs(directory, retry_failed=retry_failed)
    return meta, order, done


def make_runs(directory, study, order, done, binaries, journal, progress, meta, args):
    """Step 3: every run not done, here one after the other or as Slurm jobs."""
    resumed = bool(meta.get("resumed"))
    journal.append("begin", resumed=resumed, total_runs=len(order), already_done=len(done), seed=meta["seed"])
    say(f"{'resuming' if resumed else 'writing'} {directory} "
        f"({len(sweep.points(study))} points x {study.run['repetitions']} repetitions"
        + ("" if study.run.get("one_thread_repetitions") is None else
           f", the 1-thread points x {study.run['one_thread_repetitions']}")
        + f" = {len(order)} runs"
        + (f", {len(done)} already done" if done else "") + ")")
    if study.run["steps"] * study.run["repetitions"] < 6:
        say("note: fewer than 6 measured steps per point (steps x repetitions): medians get no 95% "
            "confidence interval")
    if args.slurm:
        meta.setdefault("slurm", []).append({"partition": args.partition, "time": args.time,
                                             "account": args.account, "started": common.now()})
        resultsdir.write_meta(directory, meta)
        slurm.sweep(directory, study, order, done, binaries, journal, progress,
                    slurm.Options(args.partition, args.time, args.account, args.poll), str(REPO_ROOT))
    else:
        run_locally(directory, study, order, done, binaries, journal, progress)


def run_locally(directory, study, order, done, binaries, journal, progress):
    """Every run not done, one process after the other, each recorded as soon as it ends."""
    for i, run in enumerate(order):
        if run.run_id() in done:
            continue
        progress.starting(run)
        binary = binaries[binary_key(run.point)]
        trace = None
        if study.analysis["trace"]:
            trace = directory.trace(run.point, run.repetition)
            trace.parent.mkdir(exist_ok=True)
        # [analysis] peak_beside: the machine as the run's threads find it at both ends of the run
        probed = ceilings.probed(study, run.point)
        env = runner.environment(study, run.point)
        before = ceilings.peak_beside(common.probes_dir(study), env) if probed else None
        outcome = runner.execute(study, run.point, binary, str(REPO_ROOT), trace, runtime_trace=True)
        after = ceilings.peak_beside(common.probes_dir(study), env) if probed else None
        resultsdir.save_run(directory, run, i, outcome,
                            runner.command(study, run.point, binary, str(REPO_ROOT), trace),
                            peak_beside=before, peak_after=after)
        journal.append("run", run_id=run.run_id(), status=outcome.status)
        progress.finished(run, outcome)


def gather_evidence(study, directory, binaries, meta):
    """The measurements after the runs (op descriptions, ceilings, counters, bandwidth sensitivity,
    simulated caches) and the trace exports; each that is not made leaves a note in meta.json."""
    notes = []
    if study.analysis["trace"] or study.analysis["roofline"]:
        notes.append(evidence.describe_ops(study, directory, binaries, str(REPO_ROOT), sweep.points(study)))
    if study.analysis["ceilings"]:
        notes.append(evidence.measure_ceilings(study, directory, str(REPO_ROOT)))
    if meta.get("counters", {}).get("backend"):
        notes.append(evidence.collect_counters(study, directory, sweep.points(study), str(REPO_ROOT),
                                               meta["counters"]))
    if study.analysis["trace"]:
        notes.append(export_traces(directory, study.run["warmup"]))
    if study.analysis["sensitivity"]:
        analysis, note = evidence.bandwidth_sensitivity(study, directory, str(REPO_ROOT), meta["seed"])
        notes.append(note)
        if analysis is not None:
            from pstudy.show import sensitivityfigure
            notes.append(figure_note("bandwidth sensitivity",
                                     lambda: sensitivityfigure.draw(analysis, directory.sensitivity)))
    if study.analysis["cachesim"]:
        note = evidence.cache_simulation(study, directory, str(REPO_ROOT))
        notes.append(note)
        if note is None:
            from pstudy.measure import cachesim
            from pstudy.show import cachesimfigure
            notes.append(figure_note("simulated cache traffic",
                                     lambda: cachesimfigure.draw(*cachesim.ratio_tables(directory),
                                                                 directory.cachesim)))
    for note in filter(None, notes):
        say(note)
        meta.setdefault("analysis_notes", []).append(note)


def figure_note(what, draw):
    """Calls draw(); None, or a note where it fails, so that a figure the run cannot write leaves
    the run's tables and meta.json whole, as a measurement it cannot make does."""
    try:
        draw()
    except StudyError as err:
        return f"{what} figure not drawn: {err}"
    return None


def export_traces(directory, warmup):
    """The trace of one representative run per point (its median step time closest to the point's)
    in Paraver's and Perfetto's formats under exports/, each checked, and the POP efficiency factors
    of every traced run in efficiency.csv and efficiency_runs.csv. Returns None or a note saying
    what was not done."""
    from pstudy.analyse import efficiency

    try:
        available = {(key, rep): path for path, key, rep in directory.traces()}
        if not available:
            return "traces not exported: no trace files"
        steps, runs, _ = resultsdir.tables(directory)
        chosen = sorted((kr for kr in efficiency.representative_runs(steps).items() if kr in available),
                        key=lambda kr: resultsdir.run_stem(*kr))
        problems = []
        for fmt in traceformats.FORMATS:
            problems += traceformats.export_checked(available, chosen, fmt, directory.exports(fmt),
                                                    node=socket.gethostname() or "node")[1]
        ovnitrace.export_runtime(directory.path, available, chosen, directory.exports("paraver"))
        run_table, point_table = efficiency.directory_factors(directory, warmup, efficiency.ok_runs(runs))
        if len(point_table):
            resultsdir.write_csv(directory.efficiency_runs_csv, run_table)
            resultsdir.write_csv(directory.efficiency_csv, point_table)
    except StudyError as err:
        return f"traces not exported: {err}"
    if problems:
        return f"exported traces with {len(problems)} problems, first: {problems[0]}"
    return None


def results(directory, study, meta, journal):
    """Step 4: the tables (steps, runs, failures, summary) and the final meta.json; returns the
    number of failed runs."""
    with common.signals_deferred():  # a Ctrl-C now waits for the status "complete", then ends the command
        resultsdir.release_space(directory)
        journal.append("end")
        return tables.tabulate(directory, meta, "complete", common.now())


def summary(directory, meta, n_failed, args):
    """Step 5: what the sweep found, on the terminal, and the exit status."""
    say(f"done: {directory}" + (f" ({n_failed} failed runs, see failures.csv)" if n_failed else ""))
    if not args.no_summary:
        sys.stderr.write(summary_text(directory))
    print(directory)  # the one line on stdout, for scripts: perfstudy report "$(perfstudy run ...)"
    if n_failed and n_failed == meta["runs_done"]:
        say("every run failed (see failures.csv)")
        return 1
    return 1 if (args.strict and n_failed) else 0


def summary_text(directory):
    """The summary `report` ends with, without its files: the table, the chart, the fastest point
    at each thread count, what bounds each variant (a roofline analysis without figures, when the
    sweep has what it needs) and the factor that loses most."""
    import tempfile

    from pstudy.analyse import findings, roofline
    from pstudy.show import summary as summary_text, terminal

    meta = resultsdir.read_meta(directory)
    try:
        summary = tables.read_summary(directory)
    except StudyError:  # nothing measured (every run failed): the lines above say so
        return ""
    if summary.empty or "step_median_s" not in summary or summary["step_median_s"].isna().all():
        return ""
    chart, _ = terminal.gnuplot_chart(summary, height=terminal.SUMMARY_CHART_HEIGHT)
    roof, why = [], None
    if meta.analysis.get("roofline", True):
        compiler = (meta.sweep.get("compilers") or ["gcc"])[0]
        traced = {(key.variant, key.threads) for _, key, _ in directory.traces()}
        at = findings.roofline_points(summary[summary["compiler"] == compiler], traced)
        with tempfile.TemporaryDirectory() as scratch:
            for kernels in meta.sweep.get("kernels") or ["fast"]:
                try:
                    roof.append(roofline.analyse(directory, scratch, at=at or None, compiler=compiler,
                                                 kernels=kernels, figures=False))
                except (roofline.RooflineError, StudyError) as err:
                    why = str(err)
    points = None
    if directory.efficiency_csv.exists():
        points = resultsdir.read_csv(directory.efficiency_csv)
    return summary_text.text(directory, meta, summary, chart, roofline=roof, points=points, roofline_why=why,
                             details=[("all columns:", str(directory.summary_csv)),
                                      ("figures, per-kernel verdicts and report.html:",
                                       f"perfstudy report {directory.name}")])


def stop(directory, meta, journal, progress, status, **fields):
    """An interrupted sweep: the tables of what was measured, and the status that says so."""
    progress.close()
    with common.signals_deferred():  # a second Ctrl-C waits for the status, then ends the command
        resultsdir.release_space(directory)
        journal.append(status, **fields)
        tables.tabulate(directory, meta, status, common.now())


def record_failure(directory, meta, err):
    """Status "failed" with the error in meta.json first (a small file, the likeliest to fit on a full
    disk), then the tables from the run records, if they can be written."""
    meta["error"] = os_error_message(err) if isinstance(err, OSError) else f"{type(err).__name__}: {err}"
    meta["status"] = "failed"
    resultsdir.release_space(directory)
    try:
        resultsdir.write_meta(directory, meta)
        tables.tabulate(directory, meta, "failed", common.now())
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
                why = doctor.why_not_built(common.build_dir(study), run.point.compiler, run.point.variant)
                raise StudyError(f"{study.path}: run.binary: no executable {path} for {'/'.join(key)}: {why} "
                                 "(or set run.build_dir / PERFSTUDY_BUILD_DIR)")
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
    # the limits (T, steps, memory) are the binaries', asked of them with --check, not copied here:
    # once per binary and distinct command line (threads and chunking aside, which the config checks)
    asked = set()
    for run in order:
        path = binaries[binary_key(run.point)]
        cmd = tuple(runner.check_command(study, run.point, path, str(REPO_ROOT)))
        if (path, cmd) in asked:
            continue
        asked.add((path, cmd))
        refusal = runner.check_run(study, run.point, path, str(REPO_ROOT))
        if refusal:
            raise StudyError(f"{study.path}: {refusal}")
    return binaries


def say(text):
    common.say("run", text)


def counters_status(backend):
    """What meta.json says of hardware counters: the backend used, or why none is."""
    if backend == "none":
        return {"backend": None, "status": "none", "reasons": {}}
    found = evidence.counters_detection_for(backend)
    reason = found["reason"]
    if found["backend"]:
        status = f"{found['backend']}: {reason}"
    else:
        status = reason if reason.startswith("unavailable") else f"unavailable: {reason}"
    return {"backend": found["backend"], "status": status, "reasons": found["reasons"]}


def initial_meta(study, git, directory, seed, binaries):
    return resultsdir.new_meta(
        directory.name, study, git, seed, binaries, provenance.facts(study, common.build_dir(study)),
        ORDER_POLICY, ["perfstudy"] + sys.argv[1:], common.now(),
        identity=resultsdir.identity(study, git), build_dir_env=os.environ.get("PERFSTUDY_BUILD_DIR"),
        **({"launcher": runner.launcher_meta(study)} if study.sweep.get("ranks") and any(
            p.ranks is not None for p in sweep.points(study)) else {}),
        counters={"requested": study.counters["backend"], **counters_status(study.counters["backend"])})
