"""Which tests run alone: scripts/run-tests.sh runs the suite in two processes (pytest-xdist) and
then, by themselves, the tests marked `serial` here: those whose verdict depends on timings (a
slowdown flagged or not, a thief's bandwidth against STREAM, a regression's false-positive rate)
or that need both cores (mpirun -np 2, a Slurm node)."""

SERIAL_FILES = {
    "test_mpi.py",                 # mpirun -np 2 on 2 cores
    "test_mpi_sweep.py",           # the same, through the harness
    "test_slurm.py",               # a Slurm controller and node started by a fixture
    "test_regression.py",          # regressions flagged or not from measured times
    "test_membound.py",            # the thief's bandwidth against STREAM, sensitivity runs
    "test_ceilings.py",            # STREAM and peak FLOP/s measured
}


def pytest_configure(config):
    config.addinivalue_line("markers", "serial: runs alone (timings, or both cores), not beside other tests")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SERIAL_FILES:
            item.add_marker("serial")
