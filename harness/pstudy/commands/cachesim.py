"""simulated DRAM traffic per kernel under valgrind's cache simulator, against the traffic model."""

import os

from pstudy import common
from pstudy.measure import cachesim
from pstudy.show import cachesimfigure
from pstudy.store import config as configmod
from pstudy.store import resultsdir
from pstudy.common import REPO_ROOT


def add_arguments(parser):
    parser.add_argument("config", help="a TOML file, or the name of one in configs/; its [cachesim] table "
                        "picks the model, its sweep the compilers and kernel sets")
    parser.add_argument("--into", metavar="RESULTS_DIR",
                        help="write RESULTS_DIR/cachesim/ (a sweep's directory, so that its roofline uses it); "
                             "default: a new directory <results root>/<date>-<config name>-cachesim")
    parser.add_argument("--results-root", default=os.environ.get("PERFSTUDY_RESULTS"))


def main(args):
    study = configmod.load(configmod.resolve_path(args.config, common.CONFIGS_DIR))
    directory = resultsdir.into_or_new(args.into, args.results_root, f"{study.name}-cachesim")
    out = resultsdir.ResultsDir(directory).cachesim
    out.mkdir(parents=True, exist_ok=True)
    with common.owning(out / resultsdir.LOCK, str(out), command="cachesim"):
        common.end_like_ctrl_c()
        cachesim.run_all(study, directory, REPO_ROOT, say=lambda text: common.say("cachesim", text))
        cachesimfigure.draw(*cachesim.ratio_tables(directory), out)
    print(cachesim.format_results(directory))
    print(f"wrote {out}")
    return 0
