"""Shared helpers for the tests: where the binaries are and how to run them."""
import fcntl
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def make(*args):
    """`make -s ARGS` in the repository, one at a time: tests run in two processes (pytest-xdist,
    scripts/run-tests.sh) and two makes of the same target at once would write the same files."""
    lock = ROOT / "build" / ".tests-make.lock"
    lock.parent.mkdir(exist_ok=True)
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        return subprocess.run(["make", "-s", *args], cwd=ROOT, capture_output=True, text=True)


def registry():
    """(name, kind) of every variant in variants/LIST, the one place variants are named."""
    out = []
    for line in (ROOT / "variants" / "LIST").read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if fields:
            out.append((fields[0], fields[1]))
    return out


# the single-process variants (the bit-identity and fixture tests run each of them); a variant of
# another kind (one launched by mpirun, say) has tests of its own
VARIANTS = [name for name, kind in registry() if kind in ("sequential", "threads", "chunked")]
PARALLEL = [name for name, kind in registry() if kind in ("threads", "chunked")]


def runtime_variants():
    """The variants on a task runtime of their own (the Makefile's RUNTIME_VARIANTS: nosv, starpu)."""
    import re
    found = re.search(r"^RUNTIME_VARIANTS\s*:=(.*)$", (ROOT / "Makefile").read_text(), re.M)
    return found.group(1).split() if found else []


# their runs cost a runtime's start and stop and its workers' wake-ups (about ten times a taskiter
# run's time on the tiny models): the costliest tests run them on fewer settings
RUNTIME = runtime_variants()
COMPILERS = ["gcc", "clang"]


def tiny_sweep(variants, threads, seed, trace=False, timeout_s=None):
    """A sweep config of the tiny model (B=2, T=8), two steps after one warm-up, each point once,
    without the ceilings and the roofline: the text of a TOML file."""
    quoted = ", ".join(f'"{v}"' for v in variants)
    return (f'[model]\nconfig = "tiny"\nB = 2\nT = 8\n\n[run]\nsteps = 2\nwarmup = 1\nrepetitions = 1\n'
            + (f"timeout_s = {timeout_s}\n" if timeout_s else "") + f"seed = {seed}\n\n"
            f"[sweep]\nvariants = [{quoted}]\nthreads = {list(threads)}\n\n"
            f"[analysis]\ntrace = {'true' if trace else 'false'}\nceilings = false\nroofline = false\n")


def copy_sources(dest):
    """The repository's files as git sees them (tracked, and untracked ones it does not ignore),
    without any build tree, into `dest`: a checkout to build or break in a test."""
    import shutil
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def binary(variant, compiler="gcc", kernels="fast"):
    path = ROOT / "build" / compiler / kernels / f"gpt2-{variant}"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make` first")
    return path


def run(args, timeout=120, env=None):
    full_env = dict(os.environ)
    full_env.setdefault("OMP_WAIT_POLICY", "passive")
    if env:
        full_env.update(env)
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, env=full_env)


def json_lines(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def step_records(stdout):
    return [r for r in json_lines(stdout) if "step" in r]


def fixture_settings(name):
    with open(FIXTURES / name / "expected.json") as f:
        return json.load(f)
