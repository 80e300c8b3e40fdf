"""What this machine offers the study, and what each missing piece costs: the facts `perfstudy
doctor` prints and every results directory's meta.json keeps ("doctor").

Run rules: it only looks. It runs no training, installs nothing and writes nothing but the build's
probe (build/probe.mk, which `make` would write anyway, kept while nothing it depends on changes).
Every tool it asks is started beside the others with a short timeout, so that the whole takes
seconds on a node where a tool hangs (a likwid waiting for its access daemon, a PAPI probing GPUs).

Three sources, each the one owner of its facts:
- scripts/probe-build.sh: the compilers (compile and run an OpenMP program), mpicc, StarPU, nOS-V,
  ovni, smpicc: what `make` builds and what it leaves out;
- scripts/needs.txt: every other tool or library, with what its absence costs and how to get it;
- the machine itself: hwloc (cores, packages, NUMA nodes, SMT), /proc/cpuinfo (the vector ISA),
  the counters' access rules, Slurm's environment, the Python libraries' versions.
"""

import concurrent.futures
import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import sys
from pathlib import Path

from pstudy import common
from pstudy.errors import StudyError

REPO = Path(__file__).resolve().parents[3]
NEEDS = REPO / "scripts" / "needs.txt"
PROBE_SCRIPT = REPO / "scripts" / "probe-build.sh"
REQUIREMENTS = REPO / "requirements.txt"
TOOL_TIMEOUT_S = 4
# the vector extensions that decide the kernels' width, widest first, as /proc/cpuinfo names them
VECTOR_FLAGS = ("avx512f", "avx2", "avx", "sse4_2", "sve", "asimd")


def _first_line(text):
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def needs():
    """scripts/needs.txt as (name, shell test, costs, how) tuples."""
    out = []
    for number, line in enumerate(NEEDS.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f.strip() for f in line.split("|")]
        if len(fields) != 4 or not all(fields):
            raise StudyError(f"{NEEDS}:{number}: not four fields split by '|' (name | test | costs | how)")
        out.append(tuple(fields))
    return out


def _need_present(test):
    if test.startswith("python-module "):  # this interpreter is the harness's: looked up, not imported
        return all(importlib.util.find_spec(name) for name in test.split()[1:])
    status, _ = common.tool_output(["sh", "-c", test], TOOL_TIMEOUT_S, cwd=REPO)
    return status == 0


def build_probe(build_dir, refresh=True):
    """The build's probe: {"compilers": {name: version}, "found": {name: detail}, "left_out": {name:
    reason}, "notes": [...]}, made
    afresh by scripts/probe-build.sh when what it depends on changed (it keeps it otherwise), or,
    `refresh` false, as the last make left it."""
    probe_mk = Path(build_dir) / "probe.mk"
    record = {"compilers": {}, "found": {}, "left_out": {}, "notes": []}
    if refresh:
        status, said = common.tool_output(["sh", str(PROBE_SCRIPT), str(probe_mk)], 60, cwd=REPO)
        if status != 0:
            record["problem"] = _first_line(said) or f"{PROBE_SCRIPT.name} failed"
            return record
    try:
        text = (probe_mk.parent / "probe.txt").read_text()
    except OSError:
        record["problem"] = f"no {probe_mk.parent / 'probe.txt'}: make has not run there"
        return record
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        name, _, detail = rest.partition(": ")
        if kind == "compiler":
            record["compilers"][name] = detail
        elif kind == "found":
            record["found"][name] = detail
        elif kind == "left-out":
            record["left_out"][name] = detail
        elif kind == "note":
            record["notes"].append(rest)
    return record


def why_not_built(build_dir, compiler, variant):
    """Why build_dir/<compiler>/*/gpt2-<variant> is not there, as the build's last probe says (it
    names what the build left out and why), or that make has not built it yet."""
    probe = build_probe(build_dir, refresh=False)
    for name in (compiler, variant, f"{variant}:{compiler}"):
        if name in probe["left_out"]:
            return f"make left it out: {name}: {probe['left_out'][name]}"
    return "not built: run make" + (f" (no build in {build_dir} yet)" if "problem" in probe else "")


def cpu():
    """The CPU's model, its widest vector extension and hwloc's view (cores, packages, NUMA nodes,
    hardware threads per core), or the OS's count where hwloc is missing."""
    from pstudy.store import topology

    model, flags = None, set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "Model") and model is None:
                model = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = set(value.split())
    except OSError:
        pass
    record = {"model": model or platform.processor() or platform.machine(), "arch": platform.machine(),
              "vector_isa": next((f for f in VECTOR_FLAGS if f in flags), None),
              "logical_cpus": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0))}
    seen = topology.describe()
    if seen["available"]:
        cores, packages, numa = (len(set(seen[k])) for k in ("pu_core", "pu_package", "pu_numa"))
        record.update(cores=cores, sockets=packages, numa_nodes=numa,
                      threads_per_core=round(len(seen["pu_os_index"]) / max(1, cores)), topology_source="hwloc")
    else:
        record.update(topology_source=f"unknown: {seen['reason']}")
    return record


def openmp_runtimes(build_dir, compilers):
    """Per built compiler, the OpenMP runtime its fork-join binary loads (libgomp, libomp, libiomp5)."""
    out = {}
    for compiler in compilers:
        binary = Path(build_dir) / compiler / "fast" / "gpt2-forkjoin"
        if not binary.exists():
            out[compiler] = "not built yet (make)"
            continue
        status, said = common.tool_output(["ldd", str(binary)], TOOL_TIMEOUT_S)
        libs = re.findall(r"(lib(?:gomp|omp|iomp5)[^\s]*)\s*=>\s*(\S+)", said or "")
        out[compiler] = ", ".join(f"{name} ({path})" for name, path in libs) or "none found by ldd"
    return out


def mpi():
    record = {"mpicc": shutil.which("mpicc"), "mpirun": shutil.which("mpirun"), "srun": shutil.which("srun")}
    if record["mpirun"]:
        status, said = common.tool_output(["mpirun", "--version"], TOOL_TIMEOUT_S)
        record["mpirun_version"] = _first_line(said) if status == 0 else said
    return record


def slurm():
    inside = os.environ.get("SLURM_JOB_ID")
    return {"sbatch": shutil.which("sbatch"), "srun": shutil.which("srun"),
            "allocation": ({"job": inside, "nodes": os.environ.get("SLURM_JOB_NUM_NODES"),
                            "cpus_on_node": os.environ.get("SLURM_CPUS_ON_NODE")} if inside else None)}


def counters(ask_likwid=True):
    """Whether hardware counters can be read here, and through what. likwid is asked only when
    `ask_likwid` (a second or more: it reads the whole topology)."""
    record = {}
    try:
        record["perf_event_paranoid"] = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    except (OSError, ValueError):
        record["perf_event_paranoid"] = None
    if shutil.which("likwid-perfctr") and not ask_likwid:
        record["likwid"] = "likwid-perfctr present"
    elif shutil.which("likwid-perfctr"):
        status, said = common.tool_output(["likwid-perfctr", "-a"], TOOL_TIMEOUT_S)
        daemon = next((p for p in ("/usr/sbin/likwid-accessD", "/usr/local/sbin/likwid-accessD") if os.path.exists(p)),
                      shutil.which("likwid-accessD"))
        groups = "no groups for this CPU" if "No groups defined" in (said or "") else \
            ("groups listed" if status == 0 else _first_line(said))
        record["likwid"] = f"{groups}; access daemon {'at ' + daemon if daemon else 'absent (perf_event mode)'}"
    if shutil.which("papi_component_avail"):
        status, said = common.tool_output(["papi_component_avail"], TOOL_TIMEOUT_S)
        active = said.split("Active components:", 1)[1] if said and "Active components:" in said else ""
        record["papi_active_components"] = re.findall(r"Name:\s+(\S+)", active)
        hardware = re.search(r"Number Hardware Counters\s*:\s*(\d+)", said or "")
        record["papi_hardware_counters"] = int(hardware.group(1)) if hardware else None
    return record


def python_libraries():
    """The interpreter and the versions of requirements.txt's libraries it has (None: missing)."""
    names = [re.split(r"[<>=!~ ]", line.strip())[0] for line in REQUIREMENTS.read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {"executable": sys.executable, "version": platform.python_version(), "libraries": versions}


def facts(build_dir, thorough=True):
    """Everything above, as one JSON-able dict; the slow parts run beside each other. Not
    `thorough` (a sweep's meta.json, which has the CPU and topology in records of its own): the
    build's probe as make left it, likwid not asked, no CPU section."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        probe = pool.submit(build_probe, build_dir, thorough)
        jobs = {"mpi_tools": pool.submit(mpi), "counters": pool.submit(counters, thorough)}
        if thorough:
            jobs["cpu"] = pool.submit(cpu)
        tools = [(name, costs, how, pool.submit(_need_present, test)) for name, test, costs, how in needs()]
        build = probe.result()
        record = {name: job.result() for name, job in jobs.items()}
    record.update(build=build, openmp=openmp_runtimes(build_dir, build["compilers"]), slurm=slurm(),
                  python=python_libraries(),
                  tools={name: {"present": job.result(), "costs": costs, "how": how}
                         for name, costs, how, job in tools})
    return record


def missing(record):
    """(name, what it costs, how to get it) of every missing piece, the build's and the tools'."""
    out = [(name, reason, "") for name, reason in record["build"]["left_out"].items()]
    out += [(name, tool["costs"], tool["how"]) for name, tool in record["tools"].items() if not tool["present"]]
    return out
