"""The machine's topology (cores, hardware threads per core, caches, NUMA nodes) read with hwloc,
and where an OpenMP runtime puts each thread under OMP_PLACES / OMP_PROC_BIND.

Reading: `lstopo --of xml -` (Debian package hwloc) prints hwloc's XML; parse_xml() keeps the
processing units (PUs, the OS's logical CPUs) with the core, package and NUMA node each belongs to,
and the data/unified caches by level. Where lstopo is missing or fails, read() raises
TopologyUnavailable with the reason; callers record the reason and go on.

Placement (thread_cores): libgomp's rules, as its manual states them.
  places   threads: one place per PU, in OS index order; cores: one place per core (its PUs),
           ordered by the core's lowest PU; sockets, numa_domains, ll_caches: one place per package,
           NUMA node, last-level cache; "NAME(n)": the first n of them; an explicit list
           "{0,1},{2:2},{8:4:2}" ({start:length[:stride]}).
  close    T <= P threads: thread i on place i (from the primary thread's place, the first); T > P:
           consecutive threads share a place, the first T mod P places taking one more.
  spread   T <= P: the places cut into T consecutive groups, thread i on the first place of group i;
           T > P: as close.
  primary / master: every thread on the first place. true: as close (libgomp leaves the policy to the
  implementation; its implementation binds as close).
  false / unset: unbound; the model assumes the OS scheduler's preference for idle cores: thread i
  on the i-th core, then the cores' second hardware threads.
Within a place spanning several cores (cores of a socket...), its threads take its cores in turn,
for the same reason. The result says which simulated thread shares a core with which.
"""

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass

LSTOPO = "lstopo"
LSTOPO_TIMEOUT_S = 60
CACHE_TYPES = {"L1Cache": 1, "L2Cache": 2, "L3Cache": 3, "L4Cache": 4}
PLACE_KINDS = ("threads", "cores", "sockets", "ll_caches", "numa_domains")
BIND_POLICIES = ("close", "spread", "primary", "master", "true", "false", "")


class TopologyUnavailable(Exception):
    """hwloc cannot tell the topology here; the message says why (one line)."""


class TopologyError(Exception):
    """A topology description (XML, a machine file's table) or a placement that cannot be used."""


@dataclass(frozen=True)
class Topology:
    pus: tuple             # OS indices of the processing units, ascending
    pu_core: tuple         # per PU (same order): its core, 0..cores-1 in hwloc's logical order
    pu_package: tuple      # per PU: its package, 0..packages-1
    pu_numa: tuple         # per PU: its NUMA node, 0..numa_nodes-1
    caches: tuple = ()     # ((level, size_bytes, instances, pus_per_instance), ...) ascending level
    source: str = ""

    @property
    def cores(self):
        return len(set(self.pu_core))

    @property
    def packages(self):
        return len(set(self.pu_package))

    @property
    def numa_nodes(self):
        return len(set(self.pu_numa))

    @property
    def threads_per_core(self):
        counts = {}
        for c in self.pu_core:
            counts[c] = counts.get(c, 0) + 1
        return max(counts.values())

    def cache(self, level):
        for lv, size, instances, per in self.caches:
            if lv == level:
                return size, instances, per
        return None

    def summary(self):
        """One line: packages x cores x threads, NUMA nodes, caches."""
        parts = [f"{self.packages} package(s), {self.cores} cores, {self.threads_per_core} thread(s) per core, "
                 f"{self.numa_nodes} NUMA node(s)"]
        for lv, size, instances, per in self.caches:
            parts.append(f"L{lv} {_size_text(size)} x{instances}" + (f" (shared by {per} PUs)" if per > 1 else ""))
        return "; ".join(parts)

    def as_dict(self):
        """The topology as meta.json and machine files record it."""
        return {"packages": self.packages, "numa_nodes": self.numa_nodes, "cores": self.cores,
                "threads_per_core": self.threads_per_core, "pus": len(self.pus),
                "pu_os_index": list(self.pus), "pu_core": list(self.pu_core), "pu_package": list(self.pu_package),
                "pu_numa": list(self.pu_numa),
                "caches": [{"level": lv, "size_bytes": size, "instances": inst, "pus_per_instance": per}
                           for lv, size, inst, per in self.caches],
                "source": self.source}


def _size_text(size):
    return f"{size // (1 << 20)} MiB" if size >= (1 << 20) and size % (1 << 20) == 0 else f"{size // 1024} KiB"


def synthetic(packages, cores_per_package, threads_per_core, numa_per_package=1, caches=(), source="",
              siblings="apart"):
    """A topology built from counts (machine files from public figures). OS numbering of the
    hardware threads: siblings "apart" (Linux on most x86 servers: PU i and i + cores share a core)
    or "adjacent" (PU 2k and 2k+1 share a core)."""
    cores = packages * cores_per_package
    n = cores * threads_per_core
    pu_core = [(i % cores) if siblings == "apart" else (i // threads_per_core) for i in range(n)]
    per_numa = max(1, cores // (packages * numa_per_package))
    pu_package = [c // cores_per_package for c in pu_core]
    pu_numa = [c // per_numa for c in pu_core]
    return Topology(tuple(range(n)), tuple(pu_core), tuple(pu_package), tuple(pu_numa), tuple(caches), source)


def _cpuset(text):
    """The set of PU OS indices in an hwloc cpuset string ("0x00000fff", "0x1,0xffffffff": 32-bit
    words, most significant first)."""
    words = text.split(",")
    value = 0
    for w in words:
        w = w.strip()
        if w.startswith("0x"):
            w = w[2:]
        value = (value << 32) | int(w or "0", 16)
    out, i = set(), 0
    while value:
        if value & 1:
            out.add(i)
        value >>= 1
        i += 1
    return out


def parse_xml(text, source="hwloc XML"):
    """A Topology from hwloc's XML (lstopo --of xml); TopologyError naming `source` otherwise."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise TopologyError(f"{source}: not hwloc XML: {err}") from None
    if root.tag != "topology":
        raise TopologyError(f"{source}: not hwloc XML (root element {root.tag!r}, expected 'topology')")
    version = None
    pu_core, pu_package, numa_sets, caches = {}, {}, [], {}
    core_count = [0]
    package_ids = {}

    def walk(node, core, package):
        nonlocal version
        for obj in node.findall("object"):
            kind = obj.get("type")
            for info in obj.findall("info"):
                if info.get("name") == "hwlocVersion":
                    version = info.get("value")
            c, p = core, package
            try:
                if kind == "Package":
                    p = package_ids.setdefault(id(obj), len(package_ids))
                elif kind == "Core":
                    c = core_count[0]
                    core_count[0] += 1
                elif kind == "PU":
                    pu = int(obj.get("os_index"))
                    pu_core[pu] = c
                    pu_package[pu] = p
                elif kind == "NUMANode":
                    numa_sets.append(_cpuset(obj.get("cpuset", "0x0")))
                elif kind in CACHE_TYPES and obj.get("cache_type", "0") in ("0", "1"):  # unified or data
                    level = CACHE_TYPES[kind]
                    size = int(obj.get("cache_size", "0"))
                    pus = len(_cpuset(obj.get("cpuset", "0x0")))
                    entry = caches.setdefault(level, [size, 0, 0])
                    entry[1] += 1
                    entry[2] = max(entry[2], pus)
            except (TypeError, ValueError) as err:
                raise TopologyError(f"{source}: {kind} object: bad attribute ({err})") from None
            walk(obj, c, p)

    walk(root, None, None)
    if not pu_core:
        raise TopologyError(f"{source}: no PU objects (not a complete hwloc topology)")
    pus = tuple(sorted(pu_core))
    # a PU outside any Core object (some VMs' hwloc output) is its own core
    next_core = core_count[0]
    cores = []
    for pu in pus:
        if pu_core[pu] is None:
            pu_core[pu] = next_core
            next_core += 1
        cores.append(pu_core[pu])
    packages = [pu_package[pu] if pu_package[pu] is not None else 0 for pu in pus]
    numa = []
    for pu in pus:
        node = next((i for i, s in enumerate(numa_sets) if pu in s), 0)
        numa.append(node)
    # renumber cores, packages and NUMA nodes 0..n-1 in order of first appearance
    cores, packages, numa = _dense(cores), _dense(packages), _dense(numa)
    cache_list = tuple((lv, caches[lv][0], caches[lv][1], caches[lv][2]) for lv in sorted(caches))
    where = f"hwloc {version} (lstopo --of xml)" if version else "hwloc XML"
    return Topology(pus, tuple(cores), tuple(packages), tuple(numa), cache_list, where)


def _dense(values):
    ids = {}
    return [ids.setdefault(v, len(ids)) for v in values]


def read(lstopo=LSTOPO):
    """This machine's Topology from hwloc; TopologyUnavailable (the reason) where it cannot be read."""
    if shutil.which(lstopo) is None:
        raise TopologyUnavailable(f"{lstopo} not installed (Debian package hwloc)")
    try:
        proc = subprocess.run([lstopo, "--of", "xml", "--no-io", "-"], capture_output=True, text=True,
                              timeout=LSTOPO_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise TopologyUnavailable(f"{lstopo}: {err}") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise TopologyUnavailable(f"{lstopo} --of xml: {last}")
    try:
        return parse_xml(proc.stdout, f"{lstopo} --of xml")
    except TopologyError as err:
        raise TopologyUnavailable(str(err)) from None


def describe():
    """meta.json's record: the topology as a dict with "available": true, or {"available": false,
    "reason": ...}."""
    try:
        topo = read()
    except TopologyUnavailable as err:
        return {"available": False, "reason": str(err)}
    return {"available": True, **topo.as_dict()}


# ---------------------------------------------------------------------------------------------
# placement

def _groups(topology, attribute):
    """Places of one kind: lists of PUs sharing `attribute` (a per-PU tuple), ordered by their lowest PU."""
    groups = {}
    for pu, key in zip(topology.pus, attribute):
        groups.setdefault(key, []).append(pu)
    return sorted(groups.values(), key=min)


def _ll_cache_groups(topology):
    """Places of the last-level cache: PUs in blocks of its sharing count, by core order."""
    if not topology.caches:
        return _groups(topology, topology.pu_package)
    per = topology.caches[-1][3]
    per_cores = max(1, per // topology.threads_per_core)
    return _groups(topology, tuple(c // per_cores for c in topology.pu_core))


def places(topology, text):
    """The place list an OMP_PLACES value names on `topology`: [[PU os index, ...], ...]."""
    value = (text or "").strip()
    m = re.fullmatch(r"([a-z_]+)\s*(?:\(\s*(\d+)\s*\))?", value)
    if m and m.group(1) in PLACE_KINDS:
        kind, count = m.group(1), m.group(2)
        if kind == "threads":
            out = [[pu] for pu in topology.pus]
        elif kind == "cores":
            out = _groups(topology, topology.pu_core)
        elif kind == "sockets":
            out = _groups(topology, topology.pu_package)
        elif kind == "numa_domains":
            out = _groups(topology, topology.pu_numa)
        else:
            out = _ll_cache_groups(topology)
        return out[:int(count)] if count else out
    out = []
    known = set(topology.pus)
    for part in re.findall(r"\{([^}]*)\}", value):
        pus = []
        for item in part.split(","):
            fields = item.strip().split(":")
            try:
                nums = [int(f) for f in fields]
            except ValueError:
                raise TopologyError(f"OMP_PLACES {text!r}: cannot read {item.strip()!r}") from None
            start, length, stride = (nums + [1, 1])[:3] if len(nums) > 1 else (nums[0], 1, 1)
            pus += [start + k * stride for k in range(length)]
        bad = [p for p in pus if p not in known]
        if bad:
            raise TopologyError(f"OMP_PLACES {text!r}: CPU {bad[0]} is not on this machine")
        out.append(pus)
    if not out:
        raise TopologyError(f"OMP_PLACES {text!r}: not a place list this model knows "
                            f"({', '.join(PLACE_KINDS)} or explicit {{...}} lists)")
    return out


def thread_places(n_places, threads, policy):
    """Per thread, the index of its place under an OMP_PROC_BIND policy (libgomp's rules)."""
    if policy in ("primary", "master"):
        return [0] * threads
    if policy == "spread" and threads <= n_places:
        return [(i * n_places) // threads for i in range(threads)]
    if threads <= n_places:
        return list(range(threads))
    base, extra = divmod(threads, n_places)
    out = []
    for p in range(n_places):
        out += [p] * (base + (1 if p < extra else 0))
    return out


def thread_cores(topology, places_text, proc_bind, threads):
    """Per OpenMP thread 0..threads-1, the core it runs on under OMP_PLACES=places_text and
    OMP_PROC_BIND=proc_bind (None or "" for unset). Threads in a place of several cores take its
    cores in turn, idle ones first."""
    policy = (proc_bind or "").strip().lower()
    if policy not in BIND_POLICIES:
        raise TopologyError(f"OMP_PROC_BIND {proc_bind!r}: expected one of {', '.join(p for p in BIND_POLICIES if p)}")
    core_of = dict(zip(topology.pus, topology.pu_core))
    if policy in ("", "false") or not (places_text or "").strip():
        place_list = [sorted(topology.pus, key=lambda pu: (_rank_in_core(topology, pu), core_of[pu]))]
        assignment = [0] * threads
    else:
        place_list = places(topology, places_text)
        assignment = thread_places(len(place_list), threads, policy)
    load = {}  # core -> threads on it so far
    out = []
    for t in range(threads):
        place = place_list[assignment[t]]
        cores = []
        for pu in place:
            if core_of[pu] not in cores:
                cores.append(core_of[pu])
        best = min(cores, key=lambda c: (load.get(c, 0), cores.index(c)))
        load[best] = load.get(best, 0) + 1
        out.append(best)
    return out


def _rank_in_core(topology, pu):
    """0 for a core's first PU (lowest OS index), 1 for its second..."""
    core = topology.pu_core[topology.pus.index(pu)]
    siblings = sorted(p for p, c in zip(topology.pus, topology.pu_core) if c == core)
    return siblings.index(pu)


def sharing(cores_of_threads):
    """Groups of threads that share a core (only groups of two or more): [[thread, ...], ...]."""
    groups = {}
    for t, c in enumerate(cores_of_threads):
        groups.setdefault(c, []).append(t)
    return [g for g in groups.values() if len(g) > 1]
