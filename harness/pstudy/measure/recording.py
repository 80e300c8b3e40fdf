"""The sweeps a validation recording is packed from (`perfstudy validate record`): per config, the
sweep with its traces and ceilings, the 1-thread step beside the thief where the config does not run
it itself (and its sweep has the baseline variant at 1 thread), and the task graphs `predict`
describes and keeps. Each step is a perfstudy subcommand of its own (pstudy.measure.subcommands)."""

from pathlib import Path

from pstudy.errors import StudyError
from pstudy.measure import subcommands
from pstudy.store import config as configmod, resultsdir, vocabulary


def sweeps(config_paths, results_root=None):
    """{study name: its results directory}, one finished sweep per config."""
    studies = {}
    for path in config_paths:
        study = configmod.load(path)
        run_args = ["run", path] + (["--results-root", results_root] if results_root else [])
        directory = Path(subcommands.perfstudy(*run_args))
        if not (directory / "meta.json").is_file():
            raise StudyError(f"perfstudy run {path}: did not print its results directory (got {directory})")
        thief_step = vocabulary.BASELINE in study.sweep["variants"] and 1 in study.sweep["threads"]
        if thief_step and not (resultsdir.ResultsDir(directory).sensitivity / "runs.csv").is_file():
            subcommands.perfstudy("sensitivity", path, "--into", directory)
        subcommands.perfstudy("predict", directory)
        studies[study.name] = directory
    return studies
