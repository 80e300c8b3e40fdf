"""tests/conftest.py's grouping, under a real pytest-xdist run as scripts/run-tests.sh starts it:
every test of a file goes to one worker, so a module fixture (a Slurm cluster, a sanitizer build)
is made once and never twice at the same time, except the files whose tests share nothing; and the
longest files are handed out first. Runs pytest on a directory of small made-up test files under a
copy of the project's conftest."""
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

pytest.importorskip("xdist")
REPO = Path(__file__).resolve().parent.parent

# each test records its file, its worker and the pid of its module fixture; those of the file handed
# out test by test last a moment, as real tests do, so that whichever worker starts first, the other
# is free for some of them before they are all done
TEST_FILE = """import os, time, pytest

@pytest.fixture(scope="module")
def made_once():
    return os.getpid(), id(object())

@pytest.mark.parametrize("i", range(6))
def test_it(made_once, i):
    time.sleep({pause})
    with open(os.environ["GROUPS_LOG"], "a") as f:
        f.write(f"{{__name__}} {{os.environ['PYTEST_XDIST_WORKER']}} {{made_once[1]}}\\n")
"""


def test_a_files_tests_share_one_worker_and_one_module_fixture(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copyfile(REPO / "tests" / "conftest.py", suite / "conftest.py")
    shutil.copyfile(REPO / "tests" / "components.py", suite / "components.py")
    names = ["test_slurm", "test_fuzz", "test_stats", "test_mpi"]  # test_mpi: its tests share nothing
    for name in names:
        (suite / f"{name}.py").write_text(TEST_FILE.format(pause=0.5 if name == "test_mpi" else 0))
    log = tmp_path / "log"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                           "--dist", "loadgroup", str(suite)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "GROUPS_LOG": str(log)})
    assert done.returncode == 0, done.stdout + done.stderr
    workers, fixtures = defaultdict(set), defaultdict(set)
    for line in log.read_text().splitlines():
        module, worker, fixture = line.split()
        workers[module].add(worker)
        fixtures[module].add(fixture)
    assert set(workers) == set(names)
    for name in ("test_slurm", "test_fuzz", "test_stats"):
        assert len(workers[name]) == 1, f"{name}'s tests ran on {sorted(workers[name])}"
        assert len(fixtures[name]) == 1, f"{name}'s module fixture was made {len(fixtures[name])} times"
    # a file of EACH_TEST_ALONE is handed out test by test: both workers take some
    assert workers["test_mpi"] == {"gw0", "gw1"}


def test_every_long_test_names_a_test_function():
    """A name in LONG_TESTS that matches no test (renamed, or misspelt) would leave that test in
    make test unnoticed: each names a file under tests/ and a test function defined in it."""
    import ast
    import importlib.util
    spec = importlib.util.spec_from_file_location("project_conftest", REPO / "tests" / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    assert conftest.LONG_TESTS
    for name in sorted(conftest.LONG_TESTS):
        filename, test = name.split("::")
        files = list((REPO / "tests").rglob(filename))
        assert len(files) == 1, f"{name}: {len(files)} files named {filename}"
        defined = {node.name for node in ast.walk(ast.parse(files[0].read_text()))
                   if isinstance(node, ast.FunctionDef)}
        assert test.split("[")[0] in defined, f"{name}: no such test in {files[0]}"
