"""bandwidth sensitivity per kernel: the step beside a memory thief at rising pressure (Bandwidth Bandit)."""

import os
import random
from pathlib import Path

from pstudy import common
from pstudy.measure import evidence
from pstudy.store import config as configmod
from pstudy.store import resultsdir
from pstudy.measure import sensitivity
from pstudy.show import sensitivityfigure
from pstudy.common import REPO_ROOT
from pstudy.errors import StudyError


def add_arguments(parser):
    parser.add_argument("config", nargs="?", help="a TOML file, or the name of one in configs/ (\"membound\")")
    parser.add_argument("--into", metavar="RESULTS_DIR",
                        help="write RESULTS_DIR/sensitivity/ (a sweep's directory, so that its roofline uses it); "
                             "default: a new directory <results root>/<date>-<config name>-sensitivity")
    parser.add_argument("--results-root", default=os.environ.get("PERFSTUDY_RESULTS"),
                        help="where a new directory goes (default: $PERFSTUDY_RESULTS or <repo>/results)")
    parser.add_argument("--seed", type=int, help="the shuffle's seed (default: run.seed, else drawn)")
    parser.add_argument("--analyse", metavar="RESULTS_DIR",
                        help="no runs: analyse RESULTS_DIR/sensitivity/ again (slowdowns, slopes, figures)")
    parser.add_argument("--no-figures", action="store_true")


def main(args):
    if args.analyse:
        result = sensitivity.analyse_directory(Path(args.analyse))
        if not args.no_figures:
            sensitivityfigure.draw(result, resultsdir.ResultsDir(args.analyse).sensitivity)
        print(sensitivity.format_results(result))
        print(f"wrote {resultsdir.ResultsDir(args.analyse).sensitivity}")
        return 0
    if not args.config:
        raise StudyError("CONFIG: give a config file (or --analyse RESULTS_DIR)")
    study = configmod.load(configmod.resolve_path(args.config, common.CONFIGS_DIR))
    if not study.analysis["trace"]:
        raise StudyError(f"{study.path}: analysis.trace: the experiment times kernels from --trace; set it to true")
    points, skipped = sensitivity.experiment_points(study, sorted(os.sched_getaffinity(0)))
    if not points:
        raise StudyError(f"{study.path}: sweep.threads: no thread count leaves a cpu for the thief "
                         f"({len(os.sched_getaffinity(0))} cpus usable)")
    if skipped:
        common.say("sensitivity", f"threads {', '.join(map(str, skipped))} skipped: no cpu left for the thief")
    binaries = evidence.experiment_binaries(study, points, str(REPO_ROOT))
    thief = common.probes_dir(study) / "thief"
    directory = resultsdir.into_or_new(args.into, args.results_root, f"{study.name}-sensitivity")
    seed = args.seed if args.seed is not None else (study.run["seed"] if study.run["seed"] is not None
                                                      else random.SystemRandom().randrange(2**31))
    out = resultsdir.ResultsDir(directory).sensitivity
    out.mkdir(parents=True, exist_ok=True)
    with common.owning(out / resultsdir.LOCK, str(out), command="sensitivity"):
        common.end_like_ctrl_c()
        result = sensitivity.run_experiment(study, directory, binaries, str(REPO_ROOT), thief,
                                            study.sensitivity["levels"], study.sensitivity["modes"],
                                            study.sensitivity["repetitions"], seed,
                                            say=lambda text: common.say("sensitivity", text))
        sensitivityfigure.draw(result, out)
    print(sensitivity.format_results(result))
    print(f"wrote {out}")
    return 0
