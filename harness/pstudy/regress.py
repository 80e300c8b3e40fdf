"""build two commits, run them interleaved, compare, confirm regressions, keep a history.

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
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from pstudy import compare as cmp
from pstudy import config as configmod
from pstudy import machine, resultsdir, runner, sweep
from pstudy.errors import StudyError

HARNESS_REPO = Path(__file__).resolve().parents[2]
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


def add_arguments(parser):
    parser.add_argument("--base", help="base revision (default: merge base with the main branch, or the "
                        "candidate's parent when the candidate is on the main branch)")
    parser.add_argument("--candidate", default="HEAD",
                        help=f"candidate revision (default HEAD; {WORKTREE}: the working tree with its "
                        "uncommitted changes to tracked files)")
    parser.add_argument("--config", default="regression",
                        help="TOML config, or the name of one in configs/ (default: regression)")
    parser.add_argument("--repo", help="the git repository (default: the one containing the current directory)")
    parser.add_argument("--main-branch", default="main", help="branch the default base is taken from (default main)")
    parser.add_argument("--base-build", help="use this existing build tree as the base instead of building a commit")
    parser.add_argument("--candidate-build", help="use this existing build tree as the candidate")
    parser.add_argument("--wrap-candidate", default="",
                        help="prefix every candidate run with this command, e.g. 'taskset -c 0', to check "
                        "that a known slowdown is detected (such runs are not added to the history)")
    cmp.add_test_options(parser)
    parser.add_argument("--no-confirm", action="store_true",
                        help="report first-pass regressions without re-running them")
    parser.add_argument("--seed", type=int, help="seed of the run order (default: random, recorded)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="make -j for the builds")
    parser.add_argument("--keep-worktrees", action="store_true",
                        help="leave the git worktrees and their builds under <results root>/.regress-work")
    parser.add_argument("--results-root", default=os.environ.get("PERFSTUDY_RESULTS"),
                        help="where the session directory goes (default: $PERFSTUDY_RESULTS or <repo>/results)")
    parser.add_argument("--history", help="history file (default: <results root>/history.csv)")
    parser.add_argument("--no-history", action="store_true", help="do not append to the history")


def say(text):
    sys.stderr.write(f"perfstudy regress: {text}\n")
    sys.stderr.flush()


def now():
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


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
    return HARNESS_REPO


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


def build(worktree, study, jobs, log_path):
    """make build in the worktree for the config's compilers and kernel sets; CannotMeasure on failure."""
    cmd = ["make", "-C", str(worktree), f"-j{max(1, jobs)}", "build",
           f"COMPILERS={' '.join(study.sweep['compilers'])}", f"KERNEL_SETS={' '.join(study.sweep['kernels'])}"]
    with open(log_path, "w") as log:
        log.write(" ".join(shlex.quote(c) for c in cmd) + "\n")
        log.flush()
        try:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            code = proc.wait()
        except BaseException:
            runner.kill_group(proc, grace=0.0)
            proc.wait()
            raise
    if code != 0:
        with open(log_path) as f:
            last = [line.rstrip() for line in f if line.strip()][-1:]
        raise CannotMeasure(f"build of {worktree.name} failed (make exit {code}): "
                            f"{last[0] if last else ''} (log: {log_path})")


def binaries_of(study, side, repo):
    """(compiler, kernels, variant) -> binary path of one side; CannotMeasure when one is missing."""
    out = {}
    for p in sweep.points(study):
        key = (p.compiler, p.kernels, p.variant)
        if key in out:
            continue
        text = study.run["binary"].format(build_dir=str(side.build_dir), compiler=p.compiler,
                                          kernels=p.kernels, variant=p.variant)
        path = Path(os.path.expanduser(text))
        if not path.is_absolute():
            path = repo / path
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise CannotMeasure(f"{side.role} {side.short()}: no executable {path} for {'/'.join(key)}")
        out[key] = str(path)
    return out


def buildinfo(study, build_dir):
    out = {}
    for compiler in study.sweep["compilers"]:
        for kernels in study.sweep["kernels"]:
            path = Path(build_dir) / compiler / kernels / "buildinfo.json"
            try:
                out[f"{compiler}/{kernels}"] = {"buildinfo": str(path), "build": json.loads(path.read_text())}
            except (OSError, ValueError):
                out[f"{compiler}/{kernels}"] = {"buildinfo": str(path), "build": None,
                                                "note": "no readable buildinfo.json; flags unknown"}
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
    return {
        "name": f"{session.name}/{directory.name}", "role": side.role, "regress_session": str(session),
        "git": {"commit": side.short(), "commit_full": side.commit, "dirty": side.dirty, "changes_digest": None},
        "describe": side.describe, "build_dir": str(side.build_dir), "wrapper": side.prefix,
        "started": now(), "finished": None, "status": "running", "runs_total": total,
        "command": ["perfstudy"] + sys.argv[1:], "config_file": str(study.path), "config": study.as_dict(),
        "seed": seed, "order": ORDER_POLICY,
        "warmup": "warm-up steps are kept in steps.csv with warmup=true and left out of every statistic",
        "statistics": {"centre": "median of the measured steps of all repetitions, pooled",
                       "ci": "95% distribution-free order-statistic (binomial) interval for the median",
                       "speedup_ci": "interval arithmetic on the CIs of base and point medians"},
        "placement": {"OMP_PROC_BIND": study.placement["proc_bind"] or "(unset)",
                      "OMP_PLACES": study.placement["places"] or "(unset)"},
        "counters": {"backend": study.counters["backend"], "status": "none"},
        "binaries": {"/".join(k): v for k, v in binaries.items()},
        "compilers": buildinfo(study, side.build_dir), "omp_runtime": {},
        "cpu": machine.cpu(), "system": machine.system(), "software": machine.software(),
        "load_average": list(os.getloadavg()), "config_text": study.text,
    }


def measure(study, sides, binaries, points, seed, session, names, repo):
    """Run `points` for both sides, interleaved; returns the two results directories.

    CannotMeasure when a run failed; KeyboardInterrupt after marking both directories interrupted."""
    from pstudy import run as runmod

    order = interleaved(points, study.run["repetitions"], seed)
    dirs = []
    for side, name in zip(sides, names):
        d = session / name
        (d / "runs").mkdir(parents=True)
        resultsdir.atomic_write(d / "config.toml", study.text)
        dirs.append(d)
    metas = [side_meta(study, s, d, seed, b, len(order) // 2, session) for s, d, b in zip(sides, dirs, binaries)]
    for d, m in zip(dirs, metas):
        resultsdir.write_json(d / resultsdir.META, m)
    journals = [resultsdir.Journal(d) for d in dirs]
    for j in journals:
        j.append("begin", resumed=False, total_runs=len(order) // 2, already_done=0, seed=seed)
    progress = runmod.Progress(len(order), {})
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
            runmod.finish(d, m, "interrupted")
        raise
    progress.close()
    for d, m, j in zip(dirs, metas, journals):
        j.append("end")
        runmod.finish(d, m, "complete")
    if failed:
        raise CannotMeasure(f"{len(failed)} run(s) failed, first: {failed[0]} (see {dirs[0]}/failures.csv "
                            f"and {dirs[1]}/failures.csv)")
    return dirs


# ---------------------------------------------------------------------------------------------
# the subcommand

def new_session(results_root, base, cand):
    stem = f"{datetime.date.today().isoformat()}-{base.short()}-vs-{cand.short()}{'+dirty' if cand.dirty else ''}"
    return resultsdir.new_directory(Path(results_root) / "regress", stem)


def check_config(study, phases, alpha, uses_git):
    if uses_git and "{build_dir}" not in study.run["binary"]:
        raise StudyError(f"{study.path}: run.binary: must contain {{build_dir}} so that each commit's own build "
                         f"is run (got \"{study.run['binary']}\")")
    n_tests = len(sweep.points(study)) * len(phases)
    reps = study.run["repetitions"]
    if cmp.smallest_p(reps, reps) >= alpha / n_tests:
        need = next(r for r in range(2, 1000) if cmp.smallest_p(r, r) < alpha / n_tests)
        raise StudyError(f"{study.path}: run.repetitions: {reps} runs per side cannot give a p-value below "
                         f"alpha / tests = {alpha:g} / {n_tests}; at least {need} are needed")
    return n_tests


def main(args):
    phases = cmp.check_test_options(args)
    if args.candidate_build and args.candidate != "HEAD":
        raise StudyError("--candidate-build: give either --candidate REV or --candidate-build DIR")
    if args.base_build and args.base:
        raise StudyError("--base-build: give either --base REV or --base-build DIR")
    path = configmod.resolve_path(args.config, HARNESS_REPO / "configs")
    study = configmod.load(path)
    check_config(study, phases, args.alpha, not (args.base_build and args.candidate_build))
    repo = find_repo(args.repo)
    for key in ("checkpoint", "data"):
        value = runner.model_path(study.model[key], str(repo))
        if value is not None and not os.path.isfile(value):
            raise StudyError(f"{study.path}: model.{key}: no such file {value}")
    base, cand = resolve_sides(args, repo)
    results_root = Path(args.results_root or repo / "results")
    session = new_session(results_root, base, cand)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2 ** 31)
    say(f"base {base.describe}; candidate {cand.describe}"
        + (f", wrapped in '{args.wrap_candidate}'" if cand.prefix else ""))
    say(f"session {session}")
    load1 = os.getloadavg()[0]
    if load1 > 0.5:
        say(f"note: load average {load1:.1f} on {os.cpu_count()} CPUs before starting: other work may add noise")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)
    worktrees = {}
    try:
        for side in (base, cand):
            if side.build_dir is not None:
                continue
            if side.commit not in worktrees:
                wt = make_worktree(repo, side.commit, results_root / ".regress-work")
                worktrees[side.commit] = wt
                say(f"building {side.commit[:7]} in {wt}")
                build(wt, study, args.jobs, session / f"build-{side.commit[:12]}.log")
            side.worktree = worktrees[side.commit]
            side.build_dir = side.worktree / study.run["build_dir"]
        binaries = [binaries_of(study, s, repo) for s in (base, cand)]
        return evaluate(args, study, phases, (base, cand), binaries, session, seed, repo)
    except CannotMeasure as err:
        say(f"cannot measure: {err}")
        say(f"exit {SKIP}: nothing can be said about this commit (git bisect: skip)")
        return SKIP
    except KeyboardInterrupt:
        say(f"interrupted; what was measured is in {session}")
        return 130
    finally:
        if not args.keep_worktrees:
            for wt in worktrees.values():
                remove_worktree(repo, wt)


def interrupt(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def evaluate(args, study, phases, sides, binaries, session, seed, repo):
    import pandas as pd

    base, cand = sides
    points = sweep.points(study)
    say(f"first pass: {len(points)} points x {study.run['repetitions']} repetitions x 2 sides")
    first = measure(study, sides, binaries, points, seed, session, ("base", "candidate"), repo)
    samples = [cmp.samples(resultsdir.read_steps(d), "run", phases) for d in first]
    table = cmp.compare_samples(*samples, args.threshold, args.alpha, args.confidence)
    out = sys.stdout
    out.write(f"base      {base.describe}\ncandidate {cand.describe}"
              + (f" wrapped in '{args.wrap_candidate}'" if cand.prefix else "") + "\n")
    out.write("\n".join(cmp.method_lines("run", args.threshold, args.alpha, args.confidence, len(table))) + "\n")
    with pd.option_context("display.width", 250):
        out.write("\nfirst pass:\n" + cmp.format_table(table, args.confidence) + "\n")
    flagged = cmp.regressed_pairs(table)
    table["confirm_ratio"] = table["confirm_ci_low"] = table["confirm_ci_high"] = float("nan")
    table["confirm_p_holm"] = float("nan")
    table["verdict"] = table["status"]
    confirmed = list(flagged)
    if flagged and not args.no_confirm:
        again = sorted({p for p, _ in flagged}, key=lambda p: tuple((0, "") if v is None else (1, v) for v in p))
        say(f"confirmation: {len(flagged)} (point, phase) pairs regressed; measuring {len(again)} points again "
            "with fresh runs")
        dirs = measure(study, sides, binaries, [sweep.Point(*p) for p in again], seed + 1, session,
                       ("confirm-base", "confirm-candidate"), repo)
        samples2 = [cmp.samples(resultsdir.read_steps(d), "run", phases) for d in dirs]
        table2 = cmp.compare_samples(*samples2, args.threshold, args.alpha, args.confidence, only=flagged)
        with pd.option_context("display.width", 250):
            out.write("\nconfirmation (fresh runs, Holm over the re-tested pairs):\n"
                      + cmp.format_table(table2, args.confidence) + "\n")
        confirmed = cmp.regressed_pairs(table2)
        second = {(cmp.point_key(r), r["phase"]): r for _, r in table2.iterrows()}
        for i, r in table.iterrows():
            pair = (cmp.point_key(r), r["phase"])
            if pair in second:
                s = second[pair]
                for col in ("ratio", "ci_low", "ci_high", "p_holm"):
                    table.at[i, f"confirm_{col}"] = s[col]
                table.at[i, "verdict"] = "REGRESSED" if pair in confirmed else "not confirmed"
    table.insert(len(cmp.KEYS) + 1, "unit", "run")
    resultsdir.write_csv(session / "regress.csv", table)
    if not args.no_history and cand.history_commit and not cand.prefix:
        from pstudy import history
        history_path = Path(args.history) if args.history else session.parent.parent / "history.csv"
        history.append(history_path, table, study, base, cand, session, confirmed)
        say(f"history: {history_path}")
    verdict = [f"{cmp.point_label(p)} {phase}" for p, phase in confirmed]
    if verdict:
        out.write(f"\nREGRESSION ({len(verdict)} confirmed): {'; '.join(verdict)}\n")
    elif flagged:
        out.write(f"\nno regression: {len(flagged)} first-pass flag(s) not confirmed by fresh runs\n")
    else:
        out.write("\nno regression\n")
    out.write(f"details: {session}/regress.csv\n")
    return 1 if verdict else 0
