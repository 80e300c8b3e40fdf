"""What a test needs that a machine may lack, and whether this one has it.

A test names its components with `@pytest.mark.needs("mpi", ...)` (or a file with `pytestmark`); a
test parametrized by a compiler or a runtime variant needs that one too. Where one is missing the
test is skipped with the reason (tests/conftest.py), except under PERFSTUDY_REQUIRE_ALL=1 (`make
test` where scripts/install-deps.sh installs everything: Debian as root, CI), where it fails: there
nothing may be left out.

What the build could make is the build's own probe (build/probe.txt, scripts/probe-build.sh), so
that a test skips exactly what `make` left out, for the reason make gave."""

import functools
import importlib.util
import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "build" / "probe.txt"
REQUIRE_ALL = os.environ.get("PERFSTUDY_REQUIRE_ALL") == "1"

# component -> the probe's name for it (what make leaves out)
BUILT = {"gcc": "gcc", "clang": "clang", "starpu": "starpu", "nosv": "nosv", "ovni": "ovni", "asan": "asan",
         "fuzz": "fuzz", "smpi": "smpi", "mpi": "mpi:gcc"}
# component -> the programs it needs on PATH
PROGRAMS = {"mpi": ("mpirun",), "slurm": ("slurmctld", "slurmd", "munged", "sbatch"),
            "chromium": ("chromium",), "valgrind": ("valgrind",), "hwloc": ("lstopo",), "smpi": ("smpirun",)}
MODULES = {"simgrid": ("simgrid",), "torch": ("torch",)}
# a parameter of a test that is one of these names makes the test need it
PARAMETERS = ("gcc", "clang", "starpu", "nosv")


@functools.lru_cache(maxsize=1)
def left_out():
    """{name: reason} of what the last make left out, or None when nothing was built."""
    if not PROBE.is_file():
        return None
    out = {}
    for line in PROBE.read_text().splitlines():
        if line.startswith("left-out "):
            name, _, reason = line[len("left-out "):].partition(": ")
            out[name] = reason
    return out


def missing(name):
    """Why this machine lacks the component `name`, or None when it has it."""
    if name in BUILT:
        gone = left_out()
        if gone is None:
            return "nothing built yet (make)"
        if BUILT[name] in gone:
            return f"make left it out: {gone[BUILT[name]]}"
    for program in PROGRAMS.get(name, ()):
        if shutil.which(program) is None and not Path("/usr/sbin", program).exists():
            return f"{program} not found"
    for module in MODULES.get(name, ()):
        if importlib.util.find_spec(module) is None:
            return f"Python module {module} not installed"
    return None


def require(name):
    """Skips the calling test where `name` is missing (fails it under PERFSTUDY_REQUIRE_ALL)."""
    import pytest

    why = missing(name)
    if why:
        (pytest.fail if REQUIRE_ALL else pytest.skip)(
            f"needs {name}: {why}" + (" (PERFSTUDY_REQUIRE_ALL: nothing may be missing here)" if REQUIRE_ALL else ""))


def needed_by_parameters(params):
    """The components a test's parameters name (a compiler, a runtime variant), alone or as a part of
    an id such as test_gemm-clang-native."""
    out = set()
    for value in params.values():
        if isinstance(value, (str, os.PathLike)):
            parts = set(str(value).replace("/", "-").split("-"))
            out |= parts & set(PARAMETERS)
    return out
