"""Which tests run alone: scripts/run-tests.sh runs the suite in two processes (pytest-xdist) and
then, by themselves, the tests marked `serial`: those whose verdict depends on measured timings (a
real slowdown flagged or not, a thief's bandwidth against STREAM) or that train on both cores at
once (gpt2-mpi's ranks, several threads each). Every test of the files below is serial; elsewhere a
test says so itself (`@pytest.mark.serial`). Tests whose times come from the fake variant
(tests/harness/fake_variant.py makes them up), bad input and one-line errors are not serial, even
under mpirun or Slurm: another process beside them changes how long they take, not what they
check."""

import signal

import pytest

SERIAL_FILES = {
    "test_mpi_sweep.py",           # ranks sweeps of the real gpt2-mpi through the harness
    "test_membound.py",            # the thief's bandwidth against STREAM, sensitivity runs
    "test_ceilings.py",            # STREAM and peak FLOP/s measured
}


# Beside each other (--dist loadgroup), a file's tests go to one process, so that its module and
# session fixtures (a finished sweep, a build) are made once; the tests of these files share none
# and are handed out one by one, so that neither process is left with a whole long file at the end.
# test_units.py's fixture is an incremental make (a no-op once built), and its two portable GEMM tests
# take 25 s each; the benchmark and study files have no fixtures at all (together 3 minutes
# of one process, and make test at 10:07 with them grouped)
EACH_TEST_ALONE = {"test_correctness.py", "test_regression.py", "test_mpi.py", "test_units.py",
                   "test_bench_kernels.py", "test_bench_verdict.py", "test_studies.py"}
# the files that take longest, handed out first (a process asks for more work as it runs out):
# a long one started last would finish alone
LONGEST_FIRST = ["test_correctness.py", "test_regression.py", "test_faults.py", "test_mpi.py", "test_units.py",
                 "test_fuzz.py", "test_slurm.py", "test_run.py", "test_edges.py", "test_bench_verdict.py",
                 "test_bench_kernels.py", "test_hostile_headers.py", "test_report_html.py", "test_instructions.py"]


def pytest_configure(config):
    # Tests interrupt sweeps with SIGINT, as Ctrl-C would. A shell starts a background job (`make
    # test &`, nohup) with SIGINT ignored, which every child inherits, perfstudy too: its Ctrl-C
    # handling then never runs and those tests fail. Python's own handler is reset to the default
    # at exec, so the processes the tests start see Ctrl-C as a terminal's user would.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    config.addinivalue_line("markers", "serial: runs alone (timings, or both cores), not beside other tests")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SERIAL_FILES:
            item.add_marker("serial")
    # pytest-xdist's workers collect with `dist` reset to "no" and `loadgroup` set instead; the
    # groups must be marked there, where the node ids the scheduler splits on are made
    if getattr(config.option, "dist", "no") != "loadgroup" and not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group(item.nodeid if name in EACH_TEST_ALONE else str(item.path)))
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's tests stay together
