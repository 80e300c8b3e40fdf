"""Which tests run alone: scripts/run-tests.sh runs the suite in two processes (pytest-xdist) and
then, by themselves, the tests marked `serial`: those whose verdict depends on measured timings (a
real slowdown flagged or not, a thief's bandwidth against STREAM) or that train on both cores at
once (gpt2-mpi's ranks, several threads each). Every test of the files below is serial; elsewhere a
test says so itself (`@pytest.mark.serial`). Tests whose times come from the fake variant
(tests/harness/fake_variant.py makes them up), bad input and one-line errors are not serial, even
under mpirun or Slurm: another process beside them changes how long they take, not what they
check."""

SERIAL_FILES = {
    "test_mpi_sweep.py",           # ranks sweeps of the real gpt2-mpi through the harness
    "test_membound.py",            # the thief's bandwidth against STREAM, sensitivity runs
    "test_ceilings.py",            # STREAM and peak FLOP/s measured
}


def pytest_configure(config):
    config.addinivalue_line("markers", "serial: runs alone (timings, or both cores), not beside other tests")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SERIAL_FILES:
            item.add_marker("serial")
