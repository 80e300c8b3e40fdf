"""Regression sessions: build two commits, run them interleaved, compare, confirm regressions.

Steps:
 1. Resolve the base and the candidate. Candidate: --candidate REV (default HEAD); the special
    value WORKTREE measures the working tree with its uncommitted changes to tracked files (taken
    with `git stash create`, which records them as a commit object without touching the checkout
    or the stash list; untracked files are not included). Base: --base REV, by default the merge
    base of the candidate with the main branch, or the candidate's parent when the candidate is
    on the main branch itself (the merge base would be the candidate).
 2. Build each commit in its own detached git worktree under <results root>/.regress-work/, with
    `make build` limited to the config's compilers and kernel sets. The user's checkout and its
    build/ are never touched. A failed build exits 125 (git bisect: skip this commit).
    --base-build / --candidate-build use an existing build tree instead (no git, no build).
 3. Measure both with the harness's runner, interleaved: in each repetition the points are
    shuffled, and every point is run once for each side back to back, in a random order per
    pair (A B or B A), so that a drift of the machine hits both sides alike. Same config, same
    thread placement, same environment. Results go to <session>/base and <session>/candidate,
    ordinary results directories (perfstudy report and compare read them).
 4. Compare (pstudy.compare, one sample per run). Points that regress are measured again with
    fresh runs (<session>/confirm-base, confirm-candidate) and tested again on those runs alone,
    Holm-corrected over the re-tested pairs; only a confirmed regression is reported.
 5. Append one row per (point, phase) to the history (results/history.csv).
Exit status: 0 no confirmed regression, 1 a confirmed regression, 2 bad input, 125 a build failed
or a run failed (nothing can be said about this commit), 130 interrupted.
"""

import datetime
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from pstudy import common
from pstudy.store import resultsdir, sweep, vocabulary
from pstudy.measure import children, instructions, provenance, runner
from pstudy.analyse import compare as cmp
from pstudy.analyse import tables
from pstudy.errors import StudyError
WORKTREE = "WORKTREE"
SKIP = 125  # git bisect run: this commit cannot be tested
ORDER_POLICY = ("interleaved: in each repetition the points are shuffled by random.Random(seed); each point "
                "is run for base and candidate back to back, the order within the pair drawn at random")


class CannotMeasure(Exception):
    """A build or a run failed: exit 125 (git bisect skips the commit)."""


@dataclass
class Side:
    role: str                      # "base" or "candidate"
    commit: Optional[str] = None   # full sha of the code built (a stash commit for WORKTREE)
    history_commit: Optional[str] = None  # the commit the history files it under (HEAD for WORKTREE)
    dirty: bool = False
    build_dir: Optional[Path] = None
    worktree: Optional[Path] = None
    prefix: list = field(default_factory=list)
    describe: str = ""

    def short(self):
        return self.commit[:7] if self.commit else "build"


def say(text):
    common.say("regress", text)


# ---------------------------------------------------------------------------------------------
# git

def git(repo, *args, what=None):
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode != 0:
        message = (done.stderr.strip().splitlines() or [""])[-1]
        raise StudyError(f"{what or 'git ' + ' '.join(args)}" + (f": {message}" if message else ""))
    return done.stdout.strip()


def find_repo(arg):
    if arg:
        path = Path(arg)
        if not path.is_dir():
            raise StudyError(f"--repo: {arg}: no such directory")
        return Path(git(path, "rev-parse", "--show-toplevel", what=f"--repo: {arg}"))
    done = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if done.returncode == 0:
        return Path(done.stdout.strip())
    return common.REPO_ROOT


def commit_of(repo, rev, option):
    return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}",
               what=f"{option}: {rev}: not a commit in {repo}")


def default_base(repo, candidate, main_branch):
    """Merge base with the main branch; the candidate's parent when that is the candidate itself."""
    main = commit_of(repo, main_branch, "--main-branch")
    base = git(repo, "merge-base", main, candidate, what=f"--base: no merge base of {main_branch} and {candidate[:7]}")
    if base == candidate:
        parent = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{candidate}^"],
                                capture_output=True, text=True)
        if parent.returncode != 0:
            raise StudyError(f"--base: {candidate[:7]} has no parent to compare with; give --base REV")
        base = parent.stdout.strip()
    return base


def resolve_sides(args, repo):
    cand = Side("candidate", prefix=shlex.split(args.wrap_candidate))
    if args.candidate_build:
        cand.build_dir = existing_build(args.candidate_build, "--candidate-build")
        cand.describe = f"build tree {cand.build_dir}"
    elif args.candidate == WORKTREE:
        head = commit_of(repo, "HEAD", "--candidate")
        stash = git(repo, "stash", "create", what="--candidate WORKTREE: git stash create")
        cand.commit, cand.history_commit, cand.dirty = (stash or head), head, bool(stash)
        cand.describe = (f"working tree: {head[:7]} with its uncommitted changes (as {stash[:7]})" if stash
                         else f"working tree: {head[:7]}, no uncommitted changes")
    else:
        cand.commit = cand.history_commit = commit_of(repo, args.candidate, "--candidate")
        cand.describe = f"{args.candidate} = {cand.commit[:7]}"
        if args.candidate == "HEAD" and git(repo, "status", "--porcelain", "--untracked-files=no"):
            say("note: the working tree has uncommitted changes; they are not measured (HEAD is). "
                f"--candidate {WORKTREE} includes them")
    base = Side("base")
    if args.base_build:
        base.build_dir = existing_build(args.base_build, "--base-build")
        base.describe = f"build tree {base.build_dir}"
    elif args.base:
        base.commit = base.history_commit = commit_of(repo, args.base, "--base")
        base.describe = f"{args.base} = {base.commit[:7]}"
    else:
        if cand.commit is None:
            raise StudyError("--base: with --candidate-build give --base REV or --base-build DIR")
        if cand.dirty:  # uncommitted changes: against the merge base of HEAD (HEAD itself on main)
            main = commit_of(repo, args.main_branch, "--main-branch")
            base.commit = git(repo, "merge-base", main, cand.history_commit,
                              what=f"--base: no merge base of {args.main_branch} and HEAD")
        else:
            base.commit = default_base(repo, cand.commit, args.main_branch)
        base.history_commit = base.commit
        base.describe = f"{base.commit[:7]} (default: merge base with {args.main_branch} or parent)"
    return base, cand


def existing_build(arg, option):
    path = Path(arg).resolve()
    if not path.is_dir():
        raise StudyError(f"{option}: {arg}: no such build directory")
    return path


# ---------------------------------------------------------------------------------------------
# building

def make_worktree(repo, commit, work_root):
    work_root.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"{commit[:12]}-", dir=work_root))
    git(repo, "worktree", "add", "--detach", str(path), commit, what=f"git worktree add {path} {commit[:7]}")
    return path


def remove_worktree(repo, path):
    done = subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(path, ignore_errors=True)
        subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True)


def build(worktree, study, jobs, log_path, make_args=None):
    """make build in the worktree for the config's compilers and kernel sets (or make with
    `make_args`: the instruction-count build); CannotMeasure on failure."""
    cmd = ["make", "-C", str(worktree), f"-j{max(1, jobs)}"]
    cmd += make_args if make_args is not None else [
        "build", f"COMPILERS={' '.join(study.sweep['compilers'])}", f"KERNEL_SETS={' '.join(study.sweep['kernels'])}"]
    with open(log_path, "w") as log:
        log.write(" ".join(shlex.quote(c) for c in cmd) + "\n")
        log.flush()
        with children.running(cmd, grace=0.0, stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL) as proc:
            code = proc.wait()
    if code != 0:
        raise CannotMeasure(f"build of {worktree.name} failed (make exit {code}): "
                            f"{build_error(log_path)} (log: {log_path})")


def build_error(log_path):
    """The line of a failed build's log that says why: the compiler's first error, else the last
    line that is not make's own bookkeeping ("make[1]: Leaving directory ...")."""
    with open(log_path, errors="replace") as f:
        lines = [line.rstrip() for line in f if line.strip()]
    errors = [line for line in lines if re.search(r"(^|: )(fatal )?error: ", line)]
    if errors:
        return errors[0]
    chatter = re.compile(r"^make(\[\d+\])?: (Entering|Leaving) directory")
    told = [line for line in lines[1:] if not chatter.match(line)]  # lines[0]: the command, logged first
    return told[-1] if told else ""


def binaries_of(study, side, repo):
    """(compiler, kernels, variant) -> binary path of one side; CannotMeasure when one is missing."""
    out = {}
    for p in sweep.points(study):
        key = (p.compiler, p.kernels, p.variant)
        if key in out:
            continue
        path = runner.binary_path(study, p, str(repo), build_dir=side.build_dir)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise CannotMeasure(f"{side.role} {side.short()}: no executable {path} for {'/'.join(key)}")
        out[key] = path
    return out


# ---------------------------------------------------------------------------------------------
# measuring

@dataclass(frozen=True)
class SidePoint:
    """A point tagged with its side, for the progress line."""
    point: sweep.Point
    role: str

    def label(self):
        return f"{self.role}: {self.point.label()}"


def interleaved(points, repetitions, seed):
    """[(side index, Run)] in the order they are made (see ORDER_POLICY)."""
    rng = random.Random(seed)
    order = []
    for rep in range(repetitions):
        shuffled = list(points)
        rng.shuffle(shuffled)
        for p in shuffled:
            pair = [0, 1]
            rng.shuffle(pair)
            order.extend((s, sweep.Run(p, rep)) for s in pair)
    return order


def side_meta(study, side, directory, seed, binaries, total, session):
    return resultsdir.new_meta(
        f"{session.name}/{directory.name}", study,
        {"commit": side.short(), "commit_full": side.commit, "dirty": side.dirty, "changes_digest": None},
        seed, binaries, provenance.facts(study, side.build_dir), ORDER_POLICY, ["perfstudy"] + sys.argv[1:],
        common.now(), role=side.role, regress_session=str(session), describe=side.describe,
        build_dir=str(side.build_dir), wrapper=side.prefix, runs_total=total,
        counters={"backend": study.counters["backend"], "status": "none"},
        load_average=list(os.getloadavg()))


def measure(study, sides, binaries, points, seed, session, names, repo):
    """Run `points` for both sides, interleaved; returns the two results directories.

    CannotMeasure when a run failed; KeyboardInterrupt after marking both directories interrupted."""
    order = interleaved(points, study.run["repetitions"], seed)
    dirs = []
    for side, name in zip(sides, names):
        d = session / name
        (d / "runs").mkdir(parents=True)
        resultsdir.atomic_write(d / resultsdir.CONFIG_COPY, study.text)
        dirs.append(d)
    metas = [side_meta(study, s, d, seed, b, len(order) // 2, session) for s, d, b in zip(sides, dirs, binaries)]
    for d, m in zip(dirs, metas):
        resultsdir.write_meta(d, m)
    journals = [resultsdir.Journal(d) for d in dirs]
    for j in journals:
        j.append("begin", resumed=False, total_runs=len(order) // 2, already_done=0, seed=seed)
    progress = common.Progress(len(order), {})
    failed = []
    try:
        for i, (s, run) in enumerate(order):
            side = sides[s]
            binary = binaries[s][(run.point.compiler, run.point.kernels, run.point.variant)]
            shown = sweep.Run(SidePoint(run.point, side.role), run.repetition)
            progress.starting(shown)
            outcome = runner.execute(study, run.point, binary, str(repo), prefix=side.prefix)
            resultsdir.save_run(dirs[s], run, i, outcome,
                                runner.command(study, run.point, binary, str(repo), prefix=side.prefix))
            journals[s].append("run", run_id=run.run_id(), status=outcome.status)
            progress.finished(shown, outcome)
            if outcome.status != runner.OK:
                failed.append(f"{side.role} {run.point.label()} rep {run.repetition}: {outcome.status}: "
                              f"{outcome.error}")
    except KeyboardInterrupt:
        progress.close()
        for d, m, j in zip(dirs, metas, journals):
            j.append("interrupted")
            tables.tabulate(d, m, "interrupted", common.now())
        raise
    progress.close()
    for d, m, j in zip(dirs, metas, journals):
        j.append("end")
        tables.tabulate(d, m, "complete", common.now())
    if failed:
        raise CannotMeasure(f"{len(failed)} run(s) failed, first: {failed[0]} (see {dirs[0]}/failures.csv "
                            f"and {dirs[1]}/failures.csv)")
    return dirs


# ---------------------------------------------------------------------------------------------
# the subcommand

def new_session(results_root, base, cand):
    stem = f"{datetime.date.today().isoformat()}-{base.short()}-vs-{cand.short()}{'+dirty' if cand.dirty else ''}"
    return resultsdir.new_directory(Path(results_root) / "regress", stem)


def check_config(study, phases, alpha, uses_git, power=True):
    """The config's checks for regress: run.binary names each commit's build; with `power`, enough
    runs for the statistical test to ever reject (not needed for instruction counts)."""
    if uses_git and "{build_dir}" not in study.run["binary"]:
        raise StudyError(f"{study.path}: run.binary: must contain {{build_dir}} so that each commit's own build "
                         f"is run (got \"{study.run['binary']}\")")
    n_tests = len(sweep.points(study)) * len(phases)
    reps = study.run["repetitions"]
    if power and cmp.smallest_p(reps, reps) >= alpha / n_tests:
        need = next(r for r in range(2, 1000) if cmp.smallest_p(r, r) < alpha / n_tests)
        raise StudyError(f"{study.path}: run.repetitions: {reps} runs per side cannot give a p-value below "
                         f"alpha / tests = {alpha:g} / {n_tests}; at least {need} are needed")
    return n_tests


def evaluate(args, study, phases, sides, binaries, session, seed, repo):
    import pandas as pd

    base, cand = sides
    points = sweep.points(study)
    say(f"first pass: {len(points)} points x {study.run['repetitions']} repetitions x 2 sides")
    first = measure(study, sides, binaries, points, seed, session, ("base", "candidate"), repo)
    samples = [cmp.samples(resultsdir.read_steps(d), "run", phases) for d in first]
    table = cmp.compare_samples(*samples, args.threshold, args.alpha, args.confidence,
                                min_duration=args.min_duration, min_difference=args.min_difference)
    out = sys.stdout
    out.write(f"base      {base.describe}\ncandidate {cand.describe}"
              + (f" wrapped in '{args.wrap_candidate}'" if cand.prefix else "") + "\n")
    out.write("\n".join(cmp.method_lines("run", args.threshold, args.alpha, args.confidence, len(table),
                                         args.min_duration, args.min_difference)) + "\n")
    with pd.option_context("display.width", 250):
        out.write("\nfirst pass:\n" + cmp.format_table(table, args.confidence) + "\n")
    flagged = cmp.regressed_pairs(table)
    table["confirm_ratio"] = table["confirm_ci_low"] = table["confirm_ci_high"] = float("nan")
    table["confirm_p_holm"] = float("nan")
    table["verdict"] = table["status"]
    confirmed = list(flagged)
    if flagged and not args.no_confirm:
        again = sorted({p for p, _ in flagged}, key=vocabulary.point_sort_key)
        say(f"confirmation: {len(flagged)} (point, phase) pairs regressed; measuring {len(again)} points again "
            "with fresh runs")
        dirs = measure(study, sides, binaries, [sweep.Point(*p) for p in again], seed + 1, session,
                       ("confirm-base", "confirm-candidate"), repo)
        samples2 = [cmp.samples(resultsdir.read_steps(d), "run", phases) for d in dirs]
        table2 = cmp.compare_samples(*samples2, args.threshold, args.alpha, args.confidence, only=flagged,
                                     min_duration=args.min_duration, min_difference=args.min_difference)
        with pd.option_context("display.width", 250):
            out.write("\nconfirmation (fresh runs, Holm over the re-tested pairs):\n"
                      + cmp.format_table(table2, args.confidence) + "\n")
        confirmed = cmp.regressed_pairs(table2)
        second = {(vocabulary.point_key(r), r["phase"]): r for _, r in table2.iterrows()}
        for i, r in table.iterrows():
            pair = (vocabulary.point_key(r), r["phase"])
            if pair in second:
                s = second[pair]
                for col in ("ratio", "ci_low", "ci_high", "p_holm"):
                    table.at[i, f"confirm_{col}"] = s[col]
                table.at[i, "verdict"] = "REGRESSED" if pair in confirmed else "not confirmed"
    table.insert(len(cmp.KEYS) + 1, "unit", "run")
    resultsdir.write_csv(session / "regress.csv", table)
    if not args.no_history and cand.history_commit and not cand.prefix:
        from pstudy.store import history
        record_history(history.append, args, study, sides, session, table, confirmed=confirmed)
    verdict = [f"{vocabulary.point_label(p)} {phase}" for p, phase in confirmed]
    unconfirmed = f": {len(flagged)} first-pass flag(s) not confirmed by fresh runs" if flagged else ""
    return conclude(out, session, f"REGRESSION ({len(verdict)} confirmed)", verdict, unconfirmed)


def record_history(append, args, study, sides, session, table, **extra):
    """Appends a session's table to the history (results/history.csv unless --history) with
    `append` (pstudy.store.history's appender for the metric)."""
    base, cand = sides
    history_path = Path(args.history) if args.history else session.parent.parent / "history.csv"
    append(history_path, table, date=common.now(), commit=cand.history_commit, dirty=cand.dirty,
           base_commit=base.commit or f"build:{base.build_dir}", config=study.name, config_digest=study.digest(),
           host=provenance.system()["hostname"], session=session, **extra)
    say(f"history: {history_path}")


def conclude(out, session, title, verdict, no_regression_note=""):
    """The session's last lines: the regressions found, or none; returns the exit status."""
    if verdict:
        out.write(f"\n{title}: {'; '.join(verdict)}\n")
    else:
        out.write(f"\nno regression{no_regression_note}\n")
    out.write(f"details: {session}/regress.csv\n")
    return 1 if verdict else 0


# ---------------------------------------------------------------------------------------------
# --metric instructions

def build_for_counts(worktree, study, jobs, log_path, extra_flags=()):
    """The instruction-count build of a worktree (pstudy.instructions: without AVX-512, only the
    binaries the config runs); CannotMeasure on failure."""
    try:
        args = instructions.make_arguments(worktree, instructions.build_targets(
            study, worktree / study.run["build_dir"], worktree), extra_flags)
    except instructions.CannotCount as err:
        raise CannotMeasure(str(err)) from None
    build(worktree, study, jobs, log_path, make_args=args)


def evaluate_instructions(args, study, sides, binaries, session, repo):
    """Count every point's instructions per kernel under valgrind for both sides, compare, append to
    the history; returns the exit status (0 or 1). CannotMeasure when a run fails."""
    base, cand = sides
    points = sweep.points(study)
    reps = study.run["repetitions"]
    say(f"counting instructions: {len(points)} points x {reps} repetitions x 2 sides under valgrind, "
        f"{args.jobs} at a time")
    instructions.check_points(study, say)
    jobs = []
    for rep in range(reps):
        for p in points:
            for s, side in enumerate(sides):
                run = sweep.Run(p, rep)
                jobs.append((side.role, run, binaries[s][(p.compiler, p.kernels, p.variant)],
                             instructions.output_path(session, side.role, run)))
    try:
        results = instructions.count_all(study, jobs, repo, args.jobs)
    except instructions.CannotCount as err:
        raise CannotMeasure(f"{err} (valgrind's output files: {session}/callgrind)") from None
    instructions.write_counts(session, results)
    table = instructions.compare(results, args.threshold, args.min_instructions)
    out = sys.stdout
    out.write(f"base      {base.describe}\ncandidate {cand.describe}\n")
    out.write("\n".join(instructions.method_lines(args.threshold, args.min_instructions, reps)) + "\n")
    out.write("\n" + instructions.format_table(table) + "\n")
    resultsdir.write_csv(session / "regress.csv", table)
    hits = instructions.regressed(table)
    if not args.no_history and cand.history_commit:
        from pstudy.store import history
        record_history(history.append_instructions, args, study, sides, session, table)
    verdict = [f"{vocabulary.point_label(p)} {kernel}" for p, kernel in hits]
    return conclude(out, session, f"REGRESSION ({len(verdict)} instruction counts)", verdict)
