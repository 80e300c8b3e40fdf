"""scripts/install-deps.sh when two callers want the same missing package at once (the two test
workers, each asking for what its tests need): both succeed, apt installs it once, and no two apt
runs overlap. apt and dpkg are stand-ins here, on PATH ahead of the real ones, so that the test
changes nothing on the machine: the stand-in apt-get fails as the real one does when another holds
dpkg's lock, and dpkg-query reports the package installed once an install has finished."""
import os
import stat
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

FAKE_DPKG_QUERY = """#!/bin/sh
[ -e "$FAKE_ROOT/installed" ] && printf 'install ok installed' && exit 0
exit 1
"""

# Holds "dpkg's lock" for a second during an install; a second apt-get meanwhile fails with
# status 100 and apt's message, as the real one does without a lock timeout.
FAKE_APT_GET = """#!/bin/sh
echo "$*" >> "$FAKE_ROOT/calls"
case " $* " in *" install "*) ;; *) exit 0 ;; esac
if ! mkdir "$FAKE_ROOT/dpkg-lock" 2>/dev/null; then
    echo "E: Could not get lock /var/lib/dpkg/lock-frontend" >&2
    exit 100
fi
sleep 1
touch "$FAKE_ROOT/installed"
rmdir "$FAKE_ROOT/dpkg-lock"
"""


def fake_tools(root):
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for name, text in (("dpkg-query", FAKE_DPKG_QUERY), ("apt-get", FAKE_APT_GET), ("sudo", '#!/bin/sh\nexec "$@"\n')):
        path = bin_dir / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_ROOT": str(root), "TMPDIR": str(root)}


def test_two_callers_at_once_both_succeed_and_apt_installs_once(tmp_path):
    env = fake_tools(tmp_path)
    callers = [subprocess.Popen(["sh", str(REPO / "scripts" / "install-deps.sh"), "some-package"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=60), p.stderr.read()) for p in callers]
    for status, stderr in results:
        assert status == 0, stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    installs = [c for c in calls if " install " in f" {c} "]
    assert len(installs) == 1, calls  # the second caller found the package installed once it had the lock
    assert "some-package" in installs[0]
    # and apt waits for a holder of dpkg's lock that is not this script (an unattended upgrade)
    assert all("DPkg::Lock::Timeout=" in c for c in calls), calls


def test_nothing_missing_runs_no_apt(tmp_path):
    env = fake_tools(tmp_path)
    (tmp_path / "installed").touch()
    done = subprocess.run(["sh", str(REPO / "scripts" / "install-deps.sh"), "some-package"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    assert not (tmp_path / "calls").exists()


def install_calls(root, *args):
    done = subprocess.run(["sh", str(REPO / "scripts" / "install-deps.sh"), *args], env=fake_tools(root),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [c.split() for c in (root / "calls").read_text().splitlines() if " install " in f" {c} "]


def test_the_tests_packages_only_for_the_tests(tmp_path):
    # PyTorch (the reference fixtures' generator) for make test, not for make run; the project's
    # packages for both
    (tmp_path / "run").mkdir()
    (tmp_path / "test").mkdir()
    [run] = install_calls(tmp_path / "run")
    [test] = install_calls(tmp_path / "test", "--test")
    assert "python3-torch" not in run and "python3-torch" in test
    assert {"gcc", "python3-pandas", "openmpi-bin"} <= set(run) and set(run) < set(test)
    # the Makefile asks for them where it runs the tests (MAKE=true: the dry run does not recurse)
    # as a user types it: not inside another make (make test's own), whose flags would print directories
    alone = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    dry = {target: subprocess.run(["make", "-n", "MAKE=true", target], cwd=REPO, capture_output=True, text=True,
                                  timeout=60, env=alone).stdout for target in ("run", "test")}
    assert dry["run"].startswith("scripts/install-deps.sh\n"), dry["run"]
    assert dry["test"].startswith("scripts/install-deps.sh --test\n"), dry["test"]
