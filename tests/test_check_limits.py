"""--check refuses what a run of the same command line would: the chunked variants' task limit
included, and fast, so that a sweep's preflight never passes runs that all fail."""

import subprocess
import time

import pytest

from variant_helpers import ROOT, binary, registry

CHUNKED = [name for name, kind in registry() if kind == "chunked"]
FINE = ["--tile-columns", "1", "--tile-in-channels", "1", "--batch-subsize", "1", "--token-chunk", "1"]


@pytest.mark.parametrize("variant", CHUNKED)
def test_check_refuses_a_chunking_over_the_task_limit_as_the_run_does(variant):
    path = binary(variant)
    start = time.monotonic()
    check = subprocess.run([path, "--threads", "2", *FINE, "--check"], capture_output=True, text=True, timeout=60)
    took = time.monotonic() - start
    run = subprocess.run([path, "--threads", "2", *FINE, "--steps", "1"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and "exceed the limit" in run.stderr, run.stderr
    assert check.returncode == 2, check.stderr
    assert check.stderr == run.stderr and check.stderr.count("\n") == 1
    assert took < 0.5, took


@pytest.mark.parametrize("variant", CHUNKED)
def test_check_passes_a_chunking_the_run_accepts_without_building_its_graph(variant):
    start = time.monotonic()
    check = subprocess.run([binary(variant), "--config", "tiny", "--threads", "2", *FINE, "--check"],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr
    assert time.monotonic() - start < 0.5


def test_check_of_a_distributed_variant_asks_its_node_level_executor():
    path = ROOT / "build" / "gcc" / "fast" / "gpt2-mpi"
    if not path.exists():
        pytest.skip("no gpt2-mpi (no MPI compiler)")
    done = subprocess.run([path, "--executor", "tasks", "--threads", "2", *FINE, "--check"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "exceed the limit" in done.stderr, done.stderr
