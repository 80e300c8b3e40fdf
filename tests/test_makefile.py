"""The Makefile's default goal builds what docs/index.md ("Make targets") says `make` builds: every variant of
variants/LIST for every compiler and kernel set, and the ceiling benchmarks. Checked with dry runs
(`make -n`), so nothing is built."""

import re
import subprocess
from pathlib import Path

import pytest

from variant_helpers import copy_sources, registry

REPO = Path(__file__).resolve().parents[1]
COMPILERS = ["gcc", "clang"]
KERNEL_SETS = ["fast", "reference"]


def listed_variants():
    """The names of variants/LIST, read here independently of the Makefile."""
    return [name for name, _ in registry()]


def make(*args, cwd=REPO):
    result = subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def expected_outputs():
    return [f"-o build/{c}/{k}/gpt2-{v}" for c in COMPILERS for k in KERNEL_SETS for v in listed_variants()] + \
        ["-o build/probes/stream", "-o build/probes/peakflops"]


def missing_from(dry_run):
    return [out for out in expected_outputs() if not re.search(re.escape(out) + r"(\s|$)", dry_run, re.M)]


def test_print_variants_is_variants_list():
    assert make("print-variants").split("\n") == listed_variants() + [""]


def test_plain_make_builds_every_variant(tmp_path):
    # a fresh checkout: plain `make` (the default goal) must link every binary
    copy_sources(tmp_path)
    dry_run = make("-n", cwd=tmp_path)
    assert missing_from(dry_run) == []
    assert "build/gpt2-" in dry_run  # the links build/gpt2-<variant>


def test_always_make_dry_run_lists_every_variant():
    # in this tree, whatever is built already: -n --always-make prints every command, runs none
    assert missing_from(make("-n", "--always-make")) == []


@pytest.mark.parametrize("goal", ["all", "build"])
def test_all_and_build_are_the_default(goal):
    assert sorted(make("-n", "--always-make", goal).splitlines()) == sorted(make("-n", "--always-make").splitlines())
