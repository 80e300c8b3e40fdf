"""Machine descriptions for `predict`: machines/*.toml, read and written here.

Keys (docs/prediction.md, "Machine files", lists them with units):
    name                   a short name (figures, the output directory's name)
    measured               true when the figures were measured on the machine (perfstudy ceilings),
                           false when they come from public figures
    cores                  cores the simulator may use
    peak_gflops_per_core   single-precision peak of one core, GFLOP/s (1e9)
    bandwidth_cores        active core counts, ascending, the first 1
    bandwidth_GBs          sustained memory bandwidth (STREAM triad, GB/s = 1e9 B/s) with that many
                           cores active; linear in between, flat after the last point
    source                 (optional) where the figures come from, one line
    reread_GBs             (optional) one core's rate, GB/s, for the bytes a product cut finer than
                           its trace reads again (each column piece packs every row of its input
                           again: a transposing copy, not a stream); default: bandwidth_GBs at 1
    peak_threads           (optional) thread counts, ascending, the first 1, at which the peak
                           FLOP/s was measured with threads placed as `places` / `proc_bind` say
    peak_gflops            (optional) the measured total single-precision peak at those counts,
                           GFLOP/s; the contention model's compute curve (analyse/contention.py)
    places, proc_bind      (optional) OMP_PLACES / OMP_PROC_BIND under which the curves were
                           measured (default "cores", "close"); predictions place threads the same way
    [topology]             (optional) cores, hardware threads, caches, NUMA nodes (see TOPOLOGY_KEYS)
    [network]              (optional) the interconnect for distributed predictions (NETWORK_KEYS)
"""

import math
from dataclasses import dataclass
from pathlib import Path

from pstudy.store import config
from pstudy.errors import StudyError
from pstudy.store import topology as topo

TOP_KEYS = ("name", "measured", "cores", "peak_gflops_per_core", "bandwidth_cores", "bandwidth_GBs", "source",
            "reread_GBs", "peak_threads", "peak_gflops", "places", "proc_bind", "topology", "network")
# [topology]: either counts (packages, cores, threads_per_core, numa_nodes, siblings) from public
# figures, or what hwloc read (pu_core, pu_package, pu_numa: one entry per logical CPU in OS index
# order); caches per instance in KiB with their instance counts; source says which.
TOPOLOGY_KEYS = ("packages", "cores", "threads_per_core", "numa_nodes", "siblings", "pu_core", "pu_package",
                 "pu_numa", "l1d_KiB", "l2_KiB", "l3_KiB", "l1d_instances", "l2_instances", "l3_instances",
                 "source")
# [network]: one link per node into the fabric; ranks_per_node ranks share it. intra_* is the
# path between ranks of one node (shared memory); measured says whether the figures were measured.
NETWORK_KEYS = ("measured", "source", "latency_us", "bandwidth_GBs", "ranks_per_node", "nodes",
                "intra_latency_us", "intra_bandwidth_GBs")


@dataclass(frozen=True)
class Network:
    measured: bool
    latency_s: float            # one message's end-to-end latency between nodes
    bandwidth_Bs: float         # one link's bandwidth per direction, bytes/s
    ranks_per_node: int         # ranks that share a node (and its link)
    nodes: int                  # nodes the system has (the largest prediction)
    intra_latency_s: float      # between two ranks of one node
    intra_bandwidth_Bs: float
    source: str = ""

REPO_ROOT = Path(__file__).resolve().parents[3]
MACHINES_DIR = REPO_ROOT / "machines"


@dataclass(frozen=True)
class Machine:
    name: str
    measured: bool
    cores: int
    peak_gflops_per_core: float
    bandwidth_cores: tuple
    bandwidth_GBs: tuple
    source: str = ""
    path: str = ""
    peak_threads: tuple = ()
    peak_gflops: tuple = ()
    places: str = "cores"
    proc_bind: str = "close"
    topology: object = None       # store.topology.Topology or None
    network: Network = None
    reread_GBs: float = None      # None: one core's bandwidth

    def bandwidth(self, active):
        """Sustained bandwidth in bytes/s with `active` cores busy (at least 1)."""
        xs, ys = self.bandwidth_cores, self.bandwidth_GBs
        n = max(1, active)
        if n >= xs[-1]:
            return ys[-1] * 1e9
        for i in range(1, len(xs)):
            if n <= xs[i]:
                x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
                return (y0 + (y1 - y0) * (n - x0) / (x1 - x0)) * 1e9
        return ys[-1] * 1e9

    def reread_bandwidth(self):
        """Bytes/s at which one core reads again what a finer cut of a product reads again."""
        return self.reread_GBs * 1e9 if self.reread_GBs is not None else self.bandwidth(1)


def check(raw, path):
    """A Machine from a decoded TOML table; StudyError "PATH: KEY: problem"."""
    def bad(key, problem):
        raise StudyError(f"{path}: {key}: {problem}")

    def number(key, positive=True):
        v = raw.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (positive and v <= 0):
            bad(key, f"expected a positive number, got {v!r}")
        return float(v)

    for key in raw:
        if key not in TOP_KEYS:
            bad(key, "unknown key")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        bad("name", f"expected a non-empty string, got {name!r}")
    measured = raw.get("measured")
    if not isinstance(measured, bool):
        bad("measured", f"expected true or false, got {measured!r}")
    cores = raw.get("cores")
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        bad("cores", f"expected a positive integer, got {cores!r}")
    peak = number("peak_gflops_per_core")
    def curve(x_key, y_key):
        """A curve of positive numbers (y_key) at counts from 1 upwards (x_key)."""
        xs, ys = raw.get(x_key), raw.get(y_key)
        if not isinstance(xs, list) or not xs or not all(isinstance(x, int) and not isinstance(x, bool) for x in xs):
            bad(x_key, f"expected a list of integers, got {xs!r}")
        if xs[0] != 1 or any(b <= a for a, b in zip(xs, xs[1:])):
            bad(x_key, "must start at 1 and increase")
        if not isinstance(ys, list) or len(ys) != len(xs) or not all(
                isinstance(y, (int, float)) and not isinstance(y, bool) and math.isfinite(y) and y > 0 for y in ys):
            bad(y_key, f"expected {len(xs)} positive numbers (one per {x_key} entry), got {ys!r}")
        return xs, ys
    xs, ys = curve("bandwidth_cores", "bandwidth_GBs")
    source = raw.get("source", "")
    if not isinstance(source, str):
        bad("source", f"expected a string, got {source!r}")
    pxs, pys = raw.get("peak_threads"), raw.get("peak_gflops")
    if (pxs is None) != (pys is None):
        bad("peak_threads" if pxs is None else "peak_gflops", "missing (peak_threads and peak_gflops go together)")
    if pxs is not None:
        curve("peak_threads", "peak_gflops")
    places = raw.get("places", "cores")
    proc_bind = raw.get("proc_bind", "close")
    if not isinstance(places, str):
        bad("places", f"expected a string (an OMP_PLACES value), got {places!r}")
    if not isinstance(proc_bind, str) or proc_bind.lower() not in topo.BIND_POLICIES:
        bad("proc_bind", f"expected one of {', '.join(p for p in topo.BIND_POLICIES if p)}, got {proc_bind!r}")
    topology = check_topology(raw["topology"], path) if "topology" in raw else None
    if topology is not None:
        if cores > len(topology.pus):
            bad("cores", f"{cores} is more than the {len(topology.pus)} hardware threads of [topology]")
        try:
            topo.thread_cores(topology, places, proc_bind, 1)
        except topo.TopologyError as err:
            bad("places", str(err))
    network = check_network(raw["network"], path) if "network" in raw else None
    reread = number("reread_GBs") if "reread_GBs" in raw else None
    return Machine(name.strip(), measured, cores, peak, tuple(xs), tuple(float(y) for y in ys), source, str(path),
                   tuple(pxs or ()), tuple(float(y) for y in (pys or ())), places, proc_bind.lower(), topology,
                   network, reread)


def _positive_int(table, key, where, default=None):
    v = table.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise StudyError(f"{where}.{key}: expected a positive integer, got {v!r}")
    return v


def _positive_float(table, key, where, default=None):
    v = table.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise StudyError(f"{where}.{key}: expected a positive number, got {v!r}")
    return float(v)


def _table_source(table, where, known):
    """A machine file's section checked for a table of known keys; its "source" string."""
    if not isinstance(table, dict):
        raise StudyError(f"{where}: expected a table, got {table!r}")
    for key in table:
        if key not in known:
            raise StudyError(f"{where}.{key}: unknown key")
    source = table.get("source", "")
    if not isinstance(source, str):
        raise StudyError(f"{where}.source: expected a string, got {source!r}")
    return source


def check_topology(table, path):
    """A store.topology.Topology from a [topology] table; StudyError "PATH: topology.KEY: problem"."""
    where = f"{path}: topology"
    source = _table_source(table, where, TOPOLOGY_KEYS)
    caches = []
    for level, name in ((1, "l1d"), (2, "l2"), (3, "l3")):
        if f"{name}_KiB" in table:
            size = _positive_float(table, f"{name}_KiB", where)
            inst = _positive_int(table, f"{name}_instances", where, 1)
            caches.append((level, int(size * 1024), inst, 0))
        elif f"{name}_instances" in table:
            raise StudyError(f"{where}.{name}_instances: given without {name}_KiB")
    if "pu_core" in table:
        lists = {}
        for key in ("pu_core", "pu_package", "pu_numa"):
            v = table.get(key, [0] * len(table["pu_core"]) if key != "pu_core" else None)
            if not isinstance(v, list) or not v or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                                           for x in v):
                raise StudyError(f"{where}.{key}: expected a list of non-negative integers, got {v!r}")
            lists[key] = v
        if len({len(v) for v in lists.values()}) != 1:
            raise StudyError(f"{where}.pu_package: pu_core, pu_package and pu_numa must have one entry per "
                             "logical CPU each")
        for key in ("packages", "cores", "threads_per_core", "numa_nodes", "siblings"):
            if key in table:
                raise StudyError(f"{where}.{key}: give either the pu_* lists or the counts, not both")
        n = len(lists["pu_core"])
        t = topo.Topology(tuple(range(n)), tuple(lists["pu_core"]), tuple(lists["pu_package"]),
                          tuple(lists["pu_numa"]), (), source)
    else:
        packages = _positive_int(table, "packages", where, 1)
        cores = _positive_int(table, "cores", where)
        tpc = _positive_int(table, "threads_per_core", where, 1)
        numa = _positive_int(table, "numa_nodes", where, packages)
        siblings = table.get("siblings", "apart")
        if siblings not in ("apart", "adjacent"):
            raise StudyError(f"{where}.siblings: expected \"apart\" (CPU i and i + cores share a core) or "
                             f"\"adjacent\" (CPU 2k and 2k+1), got {siblings!r}")
        if cores % packages:
            raise StudyError(f"{where}.cores: {cores} cores do not divide into {packages} packages")
        if numa % packages or cores % numa:
            raise StudyError(f"{where}.numa_nodes: {numa} NUMA nodes do not divide {packages} packages of "
                             f"{cores // packages} cores")
        t = topo.synthetic(packages, cores // packages, tpc, numa // packages, (), source, siblings)
    full = []
    for level, size, inst, _ in caches:
        full.append((level, size, inst, max(1, len(t.pus) // inst)))
    return topo.Topology(t.pus, t.pu_core, t.pu_package, t.pu_numa, tuple(full), source)


def check_network(table, path):
    """A Network from a [network] table; StudyError "PATH: network.KEY: problem"."""
    where = f"{path}: network"
    source = _table_source(table, where, NETWORK_KEYS)
    for key in ("measured", "latency_us", "bandwidth_GBs", "ranks_per_node"):
        if key not in table:
            raise StudyError(f"{where}.{key}: missing")
    measured = table["measured"]
    if not isinstance(measured, bool):
        raise StudyError(f"{where}.measured: expected true or false, got {measured!r}")
    latency = _positive_float(table, "latency_us", where) * 1e-6
    bandwidth = _positive_float(table, "bandwidth_GBs", where) * 1e9
    rpn = _positive_int(table, "ranks_per_node", where)
    nodes = _positive_int(table, "nodes", where, 1)
    intra_lat = _positive_float(table, "intra_latency_us", where, table.get("latency_us")) * 1e-6
    intra_bw = _positive_float(table, "intra_bandwidth_GBs", where, table.get("bandwidth_GBs")) * 1e9
    return Network(measured, latency, bandwidth, rpn, nodes, intra_lat, intra_bw, source)


def load(path):
    """A machine file: a path, or a name in machines/ ("mn5-gpp" -> machines/mn5-gpp.toml)."""
    p = Path(path)
    if not p.exists() and "/" not in str(path) and (MACHINES_DIR / f"{path}.toml").exists():
        p = MACHINES_DIR / f"{path}.toml"
    _, raw = config.read_toml(p, "machine description")
    return check(raw, p)


def from_ceilings(data, name, cores=None):
    """The machine a ceilings.json (pstudy.ceilings' format, already validated) describes: peak per
    core from its 1-thread entry (else the smallest thread count's, divided by it), the peak and
    bandwidth curves (best ISA, STREAM triad) at each thread count, the placement they were
    measured under, the topology hwloc read there (when it could), and the re-read rate where
    probes/reread gave one."""
    entries = sorted(data["per_threads"], key=lambda e: e["threads"])
    first = entries[0]
    peak = first["best_gflops"] / first["threads"]
    xs, ys, pxs, pys = [], [], [], []
    for e in entries:
        xs.append(e["threads"])
        ys.append(e["stream_GBs"]["triad"])
        pxs.append(e["threads"])
        pys.append(e["best_gflops"])
    if xs[0] != 1:  # no 1-thread figure: assume bandwidth grows linearly up to the first one
        xs.insert(0, 1)
        ys.insert(0, ys[0] / entries[0]["threads"])
        pxs.insert(0, 1)
        pys.insert(0, peak)
    cores = cores or data.get("host", {}).get("logical_cpus") or xs[-1]
    source = f"measured by perfstudy ceilings on {data.get('host', {}).get('hostname', '?')}, {data.get('date', '?')}"
    env = data.get("environment", {})
    places = env.get("OMP_PLACES") or "cores"
    bind = (env.get("OMP_PROC_BIND") or "close").lower()
    recorded = data.get("topology") or {}
    topology = None
    if recorded.get("available"):
        topology = topo.Topology(tuple(recorded["pu_os_index"]), tuple(recorded["pu_core"]),
                                 tuple(recorded["pu_package"]), tuple(recorded["pu_numa"]),
                                 tuple((c["level"], c["size_bytes"], c["instances"], c["pus_per_instance"])
                                       for c in recorded.get("caches", [])), recorded.get("source", "hwloc"))
        if topology.pus != tuple(range(len(topology.pus))):
            topology = None  # OS indices with holes (offline CPUs): the file's pu_* lists cannot say it
    reread = data.get("reread") or {}
    return Machine(name, True, int(max(cores, xs[-1])), float(peak), tuple(xs), tuple(float(y) for y in ys), source,
                   "", tuple(pxs), tuple(float(y) for y in pys), places, bind, topology,
                   reread_GBs=float(reread["reread_GBs"]) if reread.get("available") else None)


def to_toml(machine):
    """The text of a machine file for `machine`."""
    def q(s):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    def ints(v):
        return "[" + ", ".join(str(x) for x in v) + "]"

    text = (f"# {'Measured' if machine.measured else 'From public figures, not measured'}. "
            f"Keys: harness/pstudy/store/machinefiles.py\n"
            f"name = {q(machine.name)}\n"
            f"measured = {'true' if machine.measured else 'false'}\n"
            f"source = {q(machine.source)}\n"
            f"cores = {machine.cores}\n"
            f"peak_gflops_per_core = {machine.peak_gflops_per_core:.6g}\n"
            f"bandwidth_cores = {ints(machine.bandwidth_cores)}\n"
            f"bandwidth_GBs = [{', '.join(f'{y:.6g}' for y in machine.bandwidth_GBs)}]\n")
    if machine.reread_GBs is not None:
        text += f"reread_GBs = {machine.reread_GBs:.6g}\n"
    if machine.peak_threads:
        text += (f"peak_threads = {ints(machine.peak_threads)}\n"
                 f"peak_gflops = [{', '.join(f'{y:.6g}' for y in machine.peak_gflops)}]\n")
    if machine.places != "cores" or machine.proc_bind != "close" or machine.peak_threads:
        text += f"places = {q(machine.places)}\nproc_bind = {q(machine.proc_bind)}\n"
    t = machine.topology
    if t is not None:
        text += (f"\n[topology]\nsource = {q(t.source)}\n"
                 f"pu_core = {ints(t.pu_core)}\npu_package = {ints(t.pu_package)}\npu_numa = {ints(t.pu_numa)}\n")
        for level, size, inst, _ in t.caches:
            name = "l1d" if level == 1 else f"l{level}"
            if level <= 3:
                text += f"{name}_KiB = {size / 1024:.6g}\n{name}_instances = {inst}\n"
    n = machine.network
    if n is not None:
        text += (f"\n[network]\nmeasured = {'true' if n.measured else 'false'}\nsource = {q(n.source)}\n"
                 f"latency_us = {n.latency_s * 1e6:.6g}\nbandwidth_GBs = {n.bandwidth_Bs / 1e9:.6g}\n"
                 f"ranks_per_node = {n.ranks_per_node}\nnodes = {n.nodes}\n"
                 f"intra_latency_us = {n.intra_latency_s * 1e6:.6g}\n"
                 f"intra_bandwidth_GBs = {n.intra_bandwidth_Bs / 1e9:.6g}\n")
    return text
