"""Topology (hwloc XML, recorded fixtures), thread placement under OMP_PLACES / OMP_PROC_BIND, the
[topology] and [network] tables of machine files, and the peak benchmark's placement check.

Fixtures in tests/harness/data/topology/: synthetic-2x4x2.xml is `lstopo -i "pack:2 l3:1 core:4
pu:2" --of xml --no-io -` (hwloc 2.9: 2 packages, 4 cores each, 2 hardware threads per core,
siblings adjacent), zen5-vm2.xml is `lstopo --of xml --no-io -` on the 2-vCPU Zen 5 VM of this
project (two cores, one thread each)."""

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from pstudy.errors import StudyError
from pstudy.measure import ceilings as ce
from pstudy.store import topology as topo
from pstudy.store import machinefiles as machines

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "topology"


def fixture(name):
    return topo.parse_xml((DATA / f"{name}.xml").read_text(), name)


def test_hwloc_xml_is_read():
    t = fixture("synthetic-2x4x2")
    assert (t.packages, t.cores, t.threads_per_core, t.numa_nodes) == (2, 8, 2, 1)
    assert t.pus == tuple(range(16)) and t.pu_core == tuple(c for c in range(8) for _ in range(2))
    assert t.pu_package == (0,) * 8 + (1,) * 8
    assert t.cache(3) == (16 << 20, 2, 8)
    vm = fixture("zen5-vm2")
    assert (vm.cores, vm.threads_per_core) == (2, 1)
    assert vm.cache(1) == (48 << 10, 2, 1) and vm.cache(2) == (1 << 20, 2, 1)
    assert "hwloc 2.9" in vm.source


def test_bad_xml_is_one_line():
    with pytest.raises(topo.TopologyError, match="x.xml: not hwloc XML"):
        topo.parse_xml("<html/>", "x.xml")
    with pytest.raises(topo.TopologyError, match="x.xml: not hwloc XML"):
        topo.parse_xml("<topology", "x.xml")
    with pytest.raises(topo.TopologyError, match="no PU objects"):
        topo.parse_xml('<topology version="2.0"><object type="Machine"/></topology>', "x.xml")


def test_missing_hwloc_is_said_not_crashed(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    record = topo.describe()
    assert record == {"available": False, "reason": "lstopo not installed (Debian package hwloc)"}


@pytest.mark.skipif(shutil.which("lstopo") is None, reason="hwloc not installed")
def test_this_machine_is_read():
    t = topo.read()
    assert len(t.pus) == os.cpu_count() and t.cores >= 1


@pytest.mark.parametrize("places,bind,threads,cores", [
    ("cores", "close", 2, [0, 1]),                 # one thread per core while cores are free
    ("cores", "close", 9, [0, 0, 1, 2, 3, 4, 5, 6, 7]),   # T > P: the first place takes one more
    ("threads", "close", 4, [0, 0, 1, 1]),         # adjacent siblings: two threads per core
    ("cores", "spread", 4, [0, 2, 4, 6]),
    ("sockets", "close", 4, [0, 1, 4, 5]),         # T > P: two threads a socket, on its idle cores
    ("cores", "primary", 3, [0, 0, 0]),
    ("", "", 9, [0, 1, 2, 3, 4, 5, 6, 7, 0]),      # unbound: idle cores first
    ("{0},{2},{4:2}", "close", 3, [0, 1, 2]),
])
def test_placement(places, bind, threads, cores):
    assert topo.thread_cores(fixture("synthetic-2x4x2"), places, bind, threads) == cores


def test_sharing_names_the_threads_on_one_core():
    t = fixture("synthetic-2x4x2")
    assert topo.sharing(topo.thread_cores(t, "threads", "close", 5)) == [[0, 1], [2, 3]]
    assert topo.sharing(topo.thread_cores(t, "cores", "close", 8)) == []


def test_bad_placement():
    t = fixture("synthetic-2x4x2")
    with pytest.raises(topo.TopologyError, match="CPU 99 is not on this machine"):
        topo.thread_cores(t, "{99}", "close", 1)
    with pytest.raises(topo.TopologyError, match="OMP_PROC_BIND 'sideways'"):
        topo.thread_cores(t, "cores", "sideways", 1)


BASE = 'name = "m"\nmeasured = false\ncores = 16\npeak_gflops_per_core = 10\n' \
       'bandwidth_cores = [1, 4]\nbandwidth_GBs = [10, 30]\n'


def test_machine_file_topology_and_network(tmp_path):
    p = tmp_path / "m.toml"
    p.write_text(BASE + 'peak_threads = [1, 2]\npeak_gflops = [10, 19]\nplaces = "threads"\n'
                 '[topology]\npackages = 2\ncores = 8\nthreads_per_core = 2\nsiblings = "adjacent"\n'
                 'l2_KiB = 2048\nl2_instances = 8\n'
                 '[network]\nmeasured = false\nlatency_us = 1.5\nbandwidth_GBs = 25\nranks_per_node = 2\n')
    m = machines.load(p)
    assert m.topology.cores == 8 and m.topology.threads_per_core == 2 and m.topology.cache(2)[0] == 2 << 20
    assert m.places == "threads" and m.peak_gflops == (10.0, 19.0)
    assert m.network.latency_s == pytest.approx(1.5e-6) and m.network.bandwidth_Bs == 25e9
    again = machines.check(tomllib.loads(machines.to_toml(m)), p)
    assert again.topology.pu_core == m.topology.pu_core and again.network == m.network
    assert again.peak_threads == m.peak_threads and again.places == m.places


@pytest.mark.parametrize("extra,message", [
    ("[topology]\ncores = 0\n", r"topology\.cores: expected a positive integer"),
    ("[topology]\ncores = 8\nwidth = 3\n", r"topology\.width: unknown key"),
    ("[topology]\ncores = 8\nsiblings = \"near\"\n", r"topology\.siblings"),
    ("[topology]\ncores = 4\nthreads_per_core = 2\n", r"cores: 16 is more than the 8 hardware threads"),
    ("[topology]\npackages = 3\ncores = 8\n", r"topology\.cores: 8 cores do not divide into 3 packages"),
    ("[network]\nmeasured = false\nlatency_us = 1\nbandwidth_GBs = 0\nranks_per_node = 1\n",
     r"network\.bandwidth_GBs: expected a positive number"),
    ("[network]\nmeasured = false\nlatency_us = 1\nbandwidth_GBs = 10\n", r"network\.ranks_per_node: missing"),
    ("[network]\nmeasured = \"no\"\nlatency_us = 1\nbandwidth_GBs = 10\nranks_per_node = 1\n",
     r"network\.measured: expected true or false"),
    ("network = 3\n", r"network: expected a table"),
    ("peak_threads = [1, 2]\n", r"peak_gflops: missing"),
    ("peak_threads = [2]\npeak_gflops = [3]\n", r"peak_threads: must start at 1"),
    ("proc_bind = \"sideways\"\n", r"proc_bind: expected one of"),
])
def test_bad_machine_sections_are_one_line(tmp_path, extra, message):
    p = tmp_path / "m.toml"
    text = BASE + extra if extra.startswith("[") else BASE.replace("bandwidth_cores", extra + "bandwidth_cores")
    p.write_text(text)
    with pytest.raises(StudyError, match=message):
        machines.load(p)


def test_bad_machine_file_exits_2(tmp_path):
    p = tmp_path / "m.toml"
    p.write_text(BASE + "[network]\nmeasured = false\nlatency_us = -1\nbandwidth_GBs = 10\nranks_per_node = 1\n")
    results = tmp_path / "r"
    results.mkdir()
    proc = subprocess.run([str(REPO / "harness" / "perfstudy"), "predict", str(results),
                           "--machine", str(p)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


# The 16-vCPU VM's ceilings (machines/xeon-amx-vm16.toml's comment: best ISA per thread count).
VM16_PEAK = {1: 147.918, 2: 146.8, 4: 369.0, 8: 596.0, 16: 1197.0}


def ceilings_data(peaks, topology=None, cpus=None):
    entries = []
    for n, g in sorted(peaks.items()):
        e = {"threads": n, "best_gflops": g, "best_isa": "avx512", "peak_gflops": {"avx512": g}}
        if cpus:
            e["thread_cpus"] = cpus[n]
            e["cores_used"] = ce.cores_used(topology, cpus[n])
        entries.append(e)
    return {"per_threads": entries, "environment": {"OMP_PLACES": "cores", "OMP_PROC_BIND": "close"},
            "topology": topology or {"available": False, "reason": "test"}}


def test_peak_of_threads_sharing_fma_units_is_flagged():
    # that VM's 2-thread figure: no gain over one thread, though the OS gave it two vCPUs
    warnings = ce.placement_warnings(ceilings_data(VM16_PEAK))
    # 2, 8 and 16 threads at half one thread's rate each: pairs of vCPUs on one core's FMA units
    assert [w.split(" of ")[0] for w in warnings] == ["peak at 2 threads is 0.50", "peak at 8 threads is 0.50",
                                                      "peak at 16 threads is 0.51"]
    assert ce.placement_warnings(ceilings_data({1: 100.0, 2: 196.0, 4: 380.0})) == []


def test_threads_placed_on_one_core_are_flagged():
    recorded = {"available": True, **fixture("synthetic-2x4x2").as_dict()}
    data = ceilings_data({1: 100.0, 2: 100.0}, recorded, {1: [0], 2: [0, 1]})  # CPUs 0 and 1: one core
    warnings = ce.placement_warnings(data)
    assert any(w.startswith("peak at 2 threads ran on 1 cores (CPUs [0, 1])") for w in warnings)
    fine = ceilings_data({1: 100.0, 2: 199.0}, recorded, {1: [0], 2: [0, 2]})
    assert ce.placement_warnings(fine) == []


@pytest.mark.skipif(shutil.which("gcc") is None or (os.cpu_count() or 1) < 2, reason="gcc and 2 CPUs needed")
def test_peakflops_threads_run_on_distinct_cores(tmp_path):
    """Under the sweep's placement (cores, close) the peak benchmark's N threads report N distinct CPUs
    of N distinct cores (hwloc's view)."""
    subprocess.run(["make", "-s", "-f", "probes/Makefile.probes", f"PROBE_DIR={tmp_path}", f"{tmp_path}/peakflops"],
                   cwd=REPO, check=True, capture_output=True, timeout=120)
    env = dict(os.environ, OMP_PLACES="cores", OMP_PROC_BIND="close")
    proc = subprocess.run([tmp_path / "peakflops", "--threads", "2", "--reps", "1", "--iterations", "1000",
                           "--json"], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    cpus = json.loads(proc.stdout)["thread_cpus"]
    assert len(cpus) == 2 and len(set(cpus)) == 2
    record = topo.describe()
    if record["available"]:
        assert ce.cores_used(record, cpus) == min(2, record["cores"])
