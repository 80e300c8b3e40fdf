"""--check refuses what a run of the same command line would: the chunked variants' task limit
included, so that a sweep's preflight never passes runs that all fail; and it is cheap, building
neither the model nor the task graph (its CPU time shows it)."""

import os
import subprocess
import threading

import pytest

from variant_helpers import ROOT, binary, registry

CHUNKED = [name for name, kind in registry() if kind == "chunked"]
FINE = ["--tile-columns", "1", "--tile-in-channels", "1", "--batch-subsize", "1", "--token-chunk", "1"]
# --check allocates neither the model nor the task graph: its own CPU time was 0.01-0.02 s on a
# 2-vCPU VM at load average 8, where the run it refuses spends 3.7 s setting up d12 and a run of the
# tiny model at this chunking 0.7-5 s before its first step. The child's CPU time, not the wall
# time: other load on the machine delays a process without adding to it. (Not its peak resident
# size, which Linux starts at the forking parent's; nor its page faults, which huge pages make few.)
CHECK_MAX_CPU_S = 0.5


def check(args):
    """(exit status, stderr, CPU seconds) of `args`, from the child's own rusage."""
    child = subprocess.Popen([str(a) for a in args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    hung = threading.Timer(60, child.kill)
    hung.start()
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    hung.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)
    child.stderr.close()
    return child.returncode, stderr, usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("variant", CHUNKED)
def test_check_refuses_a_chunking_over_the_task_limit_as_the_run_does(variant):
    path = binary(variant)
    status, stderr, cpu = check([path, "--threads", "2", *FINE, "--check"])
    run = subprocess.run([path, "--threads", "2", *FINE, "--steps", "1"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and "exceed the limit" in run.stderr, run.stderr
    assert status == 2, stderr
    assert stderr == run.stderr and stderr.count("\n") == 1
    assert cpu < CHECK_MAX_CPU_S, cpu


@pytest.mark.parametrize("variant", CHUNKED)
def test_check_passes_a_chunking_the_run_accepts_without_building_its_graph(variant):
    status, stderr, cpu = check([binary(variant), "--config", "tiny", "--threads", "2", *FINE, "--check"])
    assert status == 0, stderr
    assert cpu < CHECK_MAX_CPU_S, cpu


def test_check_of_a_distributed_variant_asks_its_node_level_executor():
    path = ROOT / "build" / "gcc" / "fast" / "gpt2-mpi"
    if not path.exists():
        pytest.skip("no gpt2-mpi (no MPI compiler)")
    done = subprocess.run([path, "--executor", "tasks", "--threads", "2", *FINE, "--check"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "exceed the limit" in done.stderr, done.stderr
