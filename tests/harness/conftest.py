"""Shared fixtures: a build tree of fake variant binaries and a way to call harness/perfstudy."""

import json
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PERFSTUDY = REPO / "harness" / "perfstudy"
FAKE = Path(__file__).resolve().parent / "fake_variant.py"

from pstudy.store.vocabulary import VARIANTS  # the registry, variants/LIST
import warm_perfstudy

SMALL_CONFIG = """
[model]
config = "tiny"
B = 4
T = 64

[run]
steps = {steps}
warmup = 1
repetitions = {repetitions}
timeout_s = {timeout_s}
seed = 7

[sweep]
variants = {variants}
threads = [1, 2]
batch_subsize = [1, 4]
token_chunk = [64]
"""


@pytest.fixture
def build_tree(tmp_path):
    return make_build_tree(tmp_path)


def make_build_tree(tmp_path):
    """tmp/build/<compiler>/<kernels>/gpt2-<variant> -> fake_variant.py, for gcc and clang, fast."""
    root = tmp_path / "build"
    for compiler in ("gcc", "clang"):
        d = root / compiler / "fast"
        d.mkdir(parents=True)
        for v in VARIANTS:
            (d / f"gpt2-{v}").symlink_to(FAKE)
    return root


@pytest.fixture(scope="session")
def finished_sweeps(tmp_path_factory):
    """Finished sweeps of the fake variant, each made once per test process (a sweep costs seconds)
    and shared: `finished_sweeps.get(**config)` is one for Study.config(**config), and tag= makes
    another, separate sweep of the same config. Read only: a test that changes one (or reports on
    it) takes a private copy with Study.copy_of. Their build trees are removed once they are made:
    a results directory must report and compare with nothing but itself, wherever it was copied."""
    return FinishedSweeps(tmp_path_factory)


class FinishedSweeps:
    def __init__(self, tmp_path_factory):
        self.factory, self.made = tmp_path_factory, {}

    def get(self, tag="", **config):
        key = (tag, tuple(sorted(config.items())))
        if key not in self.made:
            tmp = self.factory.mktemp("sweep")
            s = Study(tmp, make_build_tree(tmp))
            done = s.perfstudy("run", s.config(**config))
            assert done.returncode == 0, done.stderr
            [directory] = s.result_dirs()
            shutil.rmtree(s.build)
            self.made[key] = directory
        return self.made[key]


@pytest.fixture
def study(tmp_path, build_tree):
    """A helper bound to this test's temporary build tree, results root and plots root."""
    return Study(tmp_path, build_tree)


class Study:
    def __init__(self, tmp, build):
        self.tmp, self.build = tmp, build
        self.results = tmp / "results"
        self.plots = tmp / "plots"

    def config(self, name="small", text=None, steps=4, repetitions=2, timeout_s=20,
               variants='["seq", "forkjoin", "tasks", "taskiter"]'):
        path = self.tmp / f"{name}.toml"
        path.write_text(text if text is not None else SMALL_CONFIG.format(
            steps=steps, repetitions=repetitions, timeout_s=timeout_s, variants=variants))
        return path

    def env(self, **extra):
        env = dict(os.environ)
        env.update({"PERFSTUDY_BUILD_DIR": str(self.build), "PERFSTUDY_RESULTS": str(self.results),
                    "PERFSTUDY_PLOTS": str(self.plots)})
        for key in [k for k in env if k.startswith("FAKE_")]:
            del env[key]
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def perfstudy(self, *args, timeout=60, **env):
        return warm_perfstudy.perfstudy(*args, env=self.env(**env), timeout=timeout, cwd=self.tmp)

    def copy_of(self, directory, name=None):
        """A private copy of a finished results directory in this study's results root, under its
        own name or `name` (a second sweep of one config gets "-2", as `run --fresh` names it)."""
        return Path(shutil.copytree(directory, self.results / (name or directory.name)))

    def result_dirs(self):
        return sorted(d for d in self.results.iterdir() if d.is_dir()) if self.results.exists() else []


@pytest.fixture(scope="session")
def reported_sweep(tmp_path_factory, finished_sweeps):
    """A finished sweep of the fake variant with ceilings (so that its report has a roofline),
    reported once with the paper figures: (its plots directory, the report's result). Read only."""
    from test_roofline import ceilings
    tmp = tmp_path_factory.mktemp("reported")
    study = Study(tmp, make_build_tree(tmp))
    directory = study.copy_of(finished_sweeps.get(steps=3, repetitions=2))
    (directory / "ceilings.json").write_text(json.dumps(ceilings()))
    done = study.perfstudy("report", directory, "--no-chart", "--formats", "png", "--figures", "paper", timeout=180)
    assert done.returncode == 0, done.stderr
    return study.plots / directory.name, done
