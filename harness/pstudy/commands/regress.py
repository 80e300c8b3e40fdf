"""build two commits, run them interleaved, compare, confirm regressions, keep a history.

The steps and exit statuses are pstudy.regress's (its module comment): 0 no confirmed regression,
1 a confirmed regression, 2 bad input, 125 a build or a run failed (git bisect: skip), 130
interrupted.
"""

import os
import random
import shutil
from pathlib import Path

from pstudy import common
from pstudy.measure import instructions, runner
from pstudy.analyse import regress
from pstudy.analyse import compare as cmp
from pstudy.store import config as configmod, resultsdir
from pstudy.errors import StudyError


def add_arguments(parser):
    parser.add_argument("--base", help="base revision (default: merge base with the main branch, or the "
                        "candidate's parent when the candidate is on the main branch)")
    parser.add_argument("--candidate", default="HEAD",
                        help=f"candidate revision (default HEAD; {regress.WORKTREE}: the working tree with its "
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
    parser.add_argument("--metric", choices=configmod.REGRESS_METRICS,
                        help="time: wall-clock times of interleaved runs (statistical test); instructions: "
                        "instructions per kernel under valgrind, deterministic, in a build without AVX-512 "
                        "(default: the config's regress.metric, else time)")
    cmp.add_test_options(parser, threshold=None)
    parser.add_argument("--min-instructions", type=int, default=instructions.MIN_INSTRUCTIONS,
                        help="--metric instructions: a difference of fewer instructions is reported, never "
                        f"flagged (default {instructions.MIN_INSTRUCTIONS})")
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


def main(args):
    for flag in ("base", "candidate", "base_build", "candidate_build", "main_branch"):
        if getattr(args, flag) is not None and not getattr(args, flag).strip():  # "--base=" is no default
            raise StudyError(f"--{flag.replace('_', '-')}: empty (give a revision, or leave the option out)"
                             if "build" not in flag else f"--{flag.replace('_', '-')}: empty (give a build tree)")
    if args.candidate_build and args.candidate != "HEAD":
        raise StudyError("--candidate-build: give either --candidate REV or --candidate-build DIR")
    if args.base_build and args.base:
        raise StudyError("--base-build: give either --base REV or --base-build DIR")
    if args.history and not args.no_history:
        # checked before minutes of runs: the history is appended to, never a device or a
        # results directory's file (store/resultsdir.py, output_file)
        args.history = str(resultsdir.output_file(args.history, "--history", owned=()))
    path = configmod.resolve_path(args.config, common.CONFIGS_DIR)
    study = configmod.load(path)
    metric = args.metric or study.regress["metric"]
    counting = metric == "instructions"
    if args.threshold is None:
        args.threshold = study.regress["threshold"]
    if args.threshold is None:
        args.threshold = instructions.THRESHOLD if counting else cmp.THRESHOLD
    phases = cmp.check_test_options(args)
    if counting:
        if args.wrap_candidate:
            raise StudyError("--wrap-candidate: not with --metric instructions (the runs are wrapped in valgrind; "
                             "a test build with -DPERFSTUDY_EXTRA_WORK_KERNEL/_PERMILLE injects extra work)")
        if args.min_instructions < 0:
            raise StudyError(f"--min-instructions: expected a count >= 0, got {args.min_instructions}")
        if not shutil.which("valgrind"):
            raise StudyError("--metric instructions: valgrind not found (scripts/install-deps.sh installs it)")
        regress.check_config(study, phases, args.alpha, not (args.base_build and args.candidate_build), power=False)
    else:
        regress.check_config(study, phases, args.alpha, not (args.base_build and args.candidate_build))
    repo = regress.find_repo(args.repo)
    for key in ("checkpoint", "data"):
        value = runner.model_path(study.model[key], str(repo))
        if value is not None and not os.path.isfile(value):
            raise StudyError(f"{study.path}: model.{key}: no such file {value}")
    base, cand = regress.resolve_sides(args, repo)
    results_root = Path(args.results_root or os.environ.get("PERFSTUDY_RESULTS") or repo / "results")
    session = regress.new_session(results_root, base, cand)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2 ** 31)
    regress.say(f"base {base.describe}; candidate {cand.describe}"
        + (f", wrapped in '{args.wrap_candidate}'" if cand.prefix else ""))
    regress.say(f"session {session}")
    load1 = os.getloadavg()[0]
    if load1 > 0.5:
        regress.say(f"note: load average {load1:.1f} on {os.cpu_count()} CPUs before starting: other work may add noise")

    common.end_like_ctrl_c()
    worktrees = {}
    try:
        for side in (base, cand):
            if side.build_dir is not None:
                continue
            if side.commit not in worktrees:
                wt = regress.make_worktree(repo, side.commit, results_root / ".regress-work")
                worktrees[side.commit] = wt
                regress.say(f"building {side.commit[:7]} in {wt}" + (" for instruction counts" if counting else ""))
                log = session / f"build-{side.commit[:12]}.log"
                if counting:
                    regress.build_for_counts(wt, study, args.jobs, log)
                else:
                    regress.build(wt, study, args.jobs, log)
            side.worktree = worktrees[side.commit]
            side.build_dir = side.worktree / study.run["build_dir"]
        binaries = [regress.binaries_of(study, s, repo) for s in (base, cand)]
        if counting:
            if args.base_build or args.candidate_build:
                regress.say("note: a build tree given with --base-build/--candidate-build is counted as it is; "
                            "valgrind stops at AVX-512 instructions, so it must be built without them "
                            "(in its checkout: make MARCH=\"-mavx2 -mfma\" build/gcc/fast/gpt2-seq)")
            return regress.evaluate_instructions(args, study, (base, cand), binaries, session, repo)
        return regress.evaluate(args, study, phases, (base, cand), binaries, session, seed, repo)
    except regress.CannotMeasure as err:
        regress.say(f"cannot measure: {err}")
        regress.say(f"exit {regress.SKIP}: nothing can be said about this commit (git bisect: skip)")
        return regress.SKIP
    except KeyboardInterrupt:
        regress.say(f"interrupted; what was measured is in {session}")
        return 130
    finally:
        if not args.keep_worktrees:
            for wt in worktrees.values():
                regress.remove_worktree(repo, wt)
