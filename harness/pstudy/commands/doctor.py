"""what this machine offers the study, and what each missing piece costs (seconds; the first command on a new node)

Prints the CPU (cores, sockets, NUMA nodes, SMT, vector ISA), the compilers and their OpenMP
runtimes, MPI and Slurm, hardware counters, SimGrid, nOS-V, ovni and StarPU, the Python libraries,
then each missing piece in one line: what it disables and how to get it. Always exits 0: a missing
piece is a fact, not an error. --json prints the same facts as meta.json keeps them.
"""

import json
import os

from pstudy import common
from pstudy.measure import doctor


def add_arguments(parser):
    parser.add_argument("--build-dir", default=None,
                        help="the build tree whose probe and binaries to read (default: $PERFSTUDY_BUILD_DIR, else build/)")
    parser.add_argument("--json", action="store_true", help="the facts as JSON, as meta.json's \"doctor\"")


def _yes(value, detail=""):
    return (f"yes{': ' + detail if detail else ''}") if value else "no"


def lines(record):
    cpu = record["cpu"]
    shape = (f"{cpu['cores']} cores in {cpu['sockets']} socket(s), {cpu['numa_nodes']} NUMA node(s), "
             f"{cpu['threads_per_core']} hardware thread(s) per core" if "cores" in cpu
             else f"{cpu['logical_cpus']} logical CPUs ({cpu['topology_source']})")
    out = ["machine",
           f"  cpu          {cpu['model']} ({cpu['arch']}), widest vector ISA: {cpu['vector_isa'] or 'unknown'}",
           f"  topology     {shape}; this process may use {cpu['usable_cpus']}"]
    build = record["build"]
    out.append("build (what make builds here)")
    if "problem" in build:
        out.append(f"  probe        failed: {build['problem']}")
    for name, detail in build["compilers"].items():
        out.append(f"  {name:<12} {detail}; OpenMP runtime: {record['openmp'].get(name, '?')}")
    for name, detail in build["found"].items():
        out.append(f"  {name:<12} {detail}")
    mpi, slurm = record["mpi_tools"], record["slurm"]
    out += ["MPI and Slurm",
            f"  mpicc        {mpi['mpicc'] or 'no'}",
            f"  mpirun       {_yes(mpi['mpirun'], mpi.get('mpirun_version', ''))}",
            f"  slurm        sbatch {_yes(slurm['sbatch'])}, srun {_yes(slurm['srun'])}; "
            + (f"inside allocation {slurm['allocation']['job']} ({slurm['allocation']['cpus_on_node']} CPUs on this node)"
               if slurm["allocation"] else "not inside an allocation")]
    counters = record["counters"]
    paranoid = counters["perf_event_paranoid"]
    out += ["hardware counters (the memory-bound verdict needs none)",
            f"  perf_event_paranoid {paranoid if paranoid is not None else 'unreadable'}"
            + (" (perf stat of one's own processes allowed)" if paranoid is not None and paranoid <= 2 else "")]
    if "likwid" in counters:
        out.append(f"  likwid       {counters['likwid']}")
    if "papi_active_components" in counters:
        out.append(f"  papi         active components: {', '.join(counters['papi_active_components']) or 'none'}; "
                   f"hardware counters: {counters['papi_hardware_counters']}")
    py = record["python"]
    out += ["python", f"  {py['executable']} {py['version']}: "
            + ", ".join(f"{name} {version or 'MISSING'}" for name, version in py["libraries"].items())]
    gone = doctor.missing(record)
    out.append(f"missing ({len(gone)})" if gone else "missing: nothing")
    for name, costs, how in gone:
        out.append(f"  {name}: {costs}" + (f"; get it: {how}" if how else ""))
    return out


def main(args):
    record = doctor.facts(args.build_dir or os.environ.get("PERFSTUDY_BUILD_DIR") or common.REPO_ROOT / "build")
    if args.json:
        print(json.dumps(record, indent=1, sort_keys=True))
    else:
        print("\n".join(lines(record)))
    return 0
