"""The workbench on a cluster node, played for real: an unprivileged account (setpriv to nobody when
the tests run as root), a copy of the tree it owns, and a PATH with gcc, make, MPI and a Python that
has the harness's libraries, but no dpkg, apt or sudo (only tripwires that record a call), no
clang, SimGrid, gnuplot or Chromium; StarPU hidden from pkg-config; nOS-V and ovni as a site
provides them, installed elsewhere and named by NOSV_HOME and OVNI_HOME.

There, `make` builds the core set and names what it left out, `make run` completes without calling
apt, `perfstudy doctor` says what is missing, and (long tier: minutes) a build from nothing, the
default study, and a whole study that leaves an archive `perfstudy answer` reads as it reads the
unpacked folder."""

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from variant_helpers import ROOT, copy_sources, tiny_sweep

NOBODY = 65534
# what the node's PATH lacks: the package manager, sudo, and the tools this site does not have
HIDDEN = ("dpkg", "apt", "sudo", "clang", "smpi", "simgrid", "gnuplot", "chromium", "starpu", "llvm")
TINY = tiny_sweep(["seq", "forkjoin"], [1, 2], seed=1)


def node_path(where):
    """A folder of links to every program of /usr/bin and /bin but the HIDDEN ones, and tripwires
    for apt-get and sudo that note their call in where/called."""
    bin_dir = where / "bin"
    bin_dir.mkdir()
    for folder in (Path("/usr/bin"), Path("/bin")):
        for program in folder.iterdir():
            if any(h in program.name for h in HIDDEN) or (bin_dir / program.name).exists():
                continue
            (bin_dir / program.name).symlink_to(program)
    for tripwire in ("apt-get", "sudo"):
        path = bin_dir / tripwire
        path.write_text(f'#!/bin/sh\necho "{tripwire} $*" >> {where}/called\nexit 1\n')
        path.chmod(0o755)
    return str(bin_dir)


@pytest.fixture(scope="module")
def node():
    """(the copy of the tree, how to run a command as the node's user there, where tripwires log)."""
    if not (ROOT / "build" / "nosv" / "install" / "include" / "nosv.h").is_file():
        pytest.skip("no nOS-V built here to stand in for a site's module (make)")
    where = Path(tempfile.mkdtemp(prefix="perfstudy-node-", dir="/tmp"))
    where.chmod(0o755)
    repo, home, empty = where / "repo", where / "home", where / "no-pkgconfig"
    for d in (repo, home, empty):
        d.mkdir()
    copy_sources(repo)
    # gcc's fast tree as this machine built it, with its times, so that make has only to link what
    # the node's configuration changes (the long tier builds from nothing)
    for tree in ("gcc/fast", "probes", "bench", "harness"):
        if (ROOT / "build" / tree).is_dir():
            shutil.copytree(ROOT / "build" / tree, repo / "build" / tree, symlinks=True)
    env = {"PATH": node_path(where), "HOME": str(home), "PKG_CONFIG_LIBDIR": str(empty), "LANG": "C.UTF-8",
           "NOSV_HOME": str(ROOT / "build" / "nosv" / "install"), "OVNI_HOME": str(ROOT / "build" / "ovni" / "install"),
           "OMP_WAIT_POLICY": "passive", "TMPDIR": str(home)}
    as_user = []
    if os.geteuid() == 0:
        for path in [where, *where.rglob("*")]:
            os.lchown(path, NOBODY, NOBODY)
        as_user = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]

    def run(*argv, timeout=600):
        return subprocess.run(as_user + list(argv), cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)

    yield repo, run, where
    shutil.rmtree(where, ignore_errors=True)


def test_make_builds_the_core_set_and_names_what_it_left_out(node):
    repo, run, where = node
    made = run("make", "-j2", "COMPILERS=gcc clang", "KERNEL_SETS=fast")
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    said = made.stdout
    built = next(line for line in said.splitlines() if line.startswith("built with gcc"))
    for variant in ("seq", "forkjoin", "tasks", "taskiter", "nosv", "mpi"):
        assert f" {variant}" in built, built
    assert "starpu" not in built
    for name in ("clang", "starpu", "smpi", "fuzz"):
        assert f"left out: {name}: " in said, said
    assert (repo / "build" / "gcc" / "fast" / "gpt2-nosv").is_file()
    assert not (repo / "build" / "clang").exists()
    # the installed nOS-V is the one linked, not a vendored build
    assert not (repo / "build" / "nosv" / "install").exists()
    assert not (where / "called").exists(), (where / "called").read_text()
    # all-variants is what fails where something is left out
    strict = run("make", "COMPILERS=gcc clang", "KERNEL_SETS=fast", "all-variants")
    assert strict.returncode != 0 and "left out" in strict.stderr, strict.stderr


def test_doctor_names_what_is_missing_and_what_it_costs(node):
    repo, run, where = node
    done = run(str(repo / "harness" / "perfstudy"), "doctor", timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "widest vector ISA" in out and "mpirun" in out and "perf_event_paranoid" in out
    missing = out[out.index("missing ("):]
    for name in ("clang", "starpu", "smpi", "gnuplot", "chromium"):
        assert f"  {name}: " in missing, missing
    assert "get it:" in missing
    assert not (where / "called").exists()


def test_make_deps_names_what_is_missing_without_apt(node):
    """make run and make test start with make deps: where apt cannot be used it installs nothing and
    names each missing piece (make run whole, on the default study: the long tier)."""
    repo, run, where = node
    done = run("make", "deps")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert "install-deps: missing clang: not on PATH" in done.stderr, done.stderr
    assert all(line.startswith("install-deps: missing ") for line in lines), lines
    assert not (where / "called").exists(), (where / "called").read_text()


def test_make_run_completes_without_apt(node, tmp_path):
    repo, run, where = node
    config = repo / "configs" / "node-tiny.toml"
    config.write_text(TINY)
    if os.geteuid() == 0:
        os.lchown(config, NOBODY, NOBODY)
    done = run("make", "run", "COMPILERS=gcc", "KERNEL_SETS=fast", f"RUN_CONFIG={config}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # what is missing was named, each in one line, and nothing was installed
    assert "install-deps: missing clang:" in done.stderr, done.stderr
    assert not (where / "called").exists(), (where / "called").read_text()
    reports = list((repo / "plots").glob("*/report.html"))
    assert len(reports) == 1, done.stdout[-2000:]
    # without gnuplot the terminal's chart is left out, with a note, and nothing else changes
    assert "gnuplot" in done.stderr


def test_a_whole_study_from_scratch_comes_home_as_one_archive(node):
    """The node's user builds everything from nothing, runs the default study with make run, then a
    study within a budget; the archive answers as its unpacked folder does."""
    repo, run, where = node
    shutil.rmtree(repo / "build", ignore_errors=True)
    done = run("make", "run", timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert any((repo / "plots").glob("*default*/report.html"))
    archive = where / "home" / "node.tar.gz"
    study = run(str(repo / "harness" / "perfstudy"), "study", "configs/quick.toml", "--budget", "60",
                "--no-build", "--archive", str(archive), timeout=300)
    assert study.returncode == 0, study.stderr[-3000:]
    unpacked = where / "home" / "unpacked"
    unpacked.mkdir()
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(unpacked)], check=True)
    for part in ("machine.txt", "counters.txt", "log.txt"):
        assert (unpacked / "study" / part).exists(), part
    log = (unpacked / "study" / "log.txt").read_text()
    # on a loaded 2-core machine the ceilings can outrun their share of a minute: then the log says so
    assert (unpacked / "study" / "ceilings").exists() or "ceilings: stopped at its deadline" in log, log
    assert "doctor" in (unpacked / "study" / "machine.txt").read_text()
    from_archive = run(str(repo / "harness" / "perfstudy"), "answer", str(archive))
    from_folder = run(str(repo / "harness" / "perfstudy"), "answer", str(unpacked / "study"))
    assert from_archive.returncode == 0, from_archive.stderr
    assert from_archive.stdout == from_folder.stdout
    assert not (where / "called").exists()
