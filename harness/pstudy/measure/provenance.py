"""Facts about the machine, the code and the build, for meta.json."""

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys


def sh(cmd, cwd=None, timeout=20):
    """stdout of a command, or None when it cannot be run or fails."""
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


# written by `git archive` (.gitattributes: export-subst), so that a tree exported without .git
# (make dist, or a copy of one) still names its commit; in a checkout it holds the placeholder
EXPORTED_COMMIT = os.path.join("harness", "pstudy", "COMMIT")


def exported_commit(root):
    """The full commit hash `git archive` wrote into EXPORTED_COMMIT, or None (a checkout's
    placeholder, a missing or damaged file)."""
    try:
        with open(os.path.join(root, EXPORTED_COMMIT), encoding="ascii") as f:
            text = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if len(text) == 40 and all(c in "0123456789abcdef" for c in text) else None


def git_state(root):
    """commit (short), full hash, dirty flag, a digest of the uncommitted changes, and `source`: where
    the commit came from ("git": the checkout; "export": the file `git archive` wrote into an exported
    tree, whose changes since cannot be seen, so dirty is unknown; "unknown": neither)."""
    exported = exported_commit(root)
    if exported and not os.path.exists(os.path.join(root, ".git")):
        # a tree exported without .git: its .git cannot be stale, and there is nothing to diff against
        return {"commit": exported[:7], "commit_full": exported, "dirty": None, "changes_digest": None,
                "source": "export"}
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=20)
        full = done.stdout if done.returncode == 0 else None
        problem = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[0]
    except (OSError, subprocess.TimeoutExpired) as err:
        full, problem = None, str(err)
    if full is None:
        # "problem" says why (not a checkout, git missing, "detected dubious ownership"...): run
        # warns with it, since a directory without its commit is never resumed by commit
        if exported:
            return {"commit": exported[:7], "commit_full": exported, "dirty": None, "changes_digest": None,
                    "source": "export", "problem": problem}
        return {"commit": "nogit", "commit_full": None, "dirty": None, "changes_digest": None,
                "source": "unknown", "problem": problem}
    status = sh(["git", "status", "--porcelain"], cwd=root) or ""
    diff = sh(["git", "diff", "HEAD"], cwd=root) or ""
    dirty = bool(status.strip())
    digest = hashlib.sha256((status + diff).encode()).hexdigest()[:16] if dirty else None
    return {"commit": full.strip()[:7], "commit_full": full.strip(), "dirty": dirty,
            "changes_digest": digest, "source": "git"}


def cpu():
    info = {"model": None, "logical_cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    out = sh(["lscpu", "--json"])
    if out:
        try:
            fields = {e["field"].rstrip(":"): e["data"] for e in json.loads(out)["lscpu"]}
        except (ValueError, KeyError, TypeError):
            fields = {}
        wanted = ("Architecture", "Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket",
                  "Socket(s)", "NUMA node(s)", "L1d cache", "L2 cache", "L3 cache", "CPU max MHz",
                  "Hypervisor vendor", "Flags")
        info["lscpu"] = {k: fields[k] for k in wanted if k in fields}
        try:
            info["physical_cores"] = int(fields["Core(s) per socket"]) * int(fields["Socket(s)"])
        except (KeyError, ValueError):
            pass
    return info


def facts(study, build_dir):
    """What meta.json records of the build and the machine a sweep starts on."""
    from pstudy.measure import doctor

    return {"compilers": compilers(study, build_dir), "cpu": cpu(), "system": system(), "software": software(),
            "topology": topology(study.placement, study.sweep["threads"]),
            "doctor": doctor.facts(build_dir, thorough=False)}


def topology(placement, thread_counts):
    """meta.json's "topology": hwloc's view of this machine (store.topology.describe: cores,
    hardware threads per core, caches, NUMA nodes, or why it is unknown) and, per thread count of the
    sweep, the core each thread runs on under the study's placement and which threads share one."""
    from pstudy.store import topology as topo

    record = topo.describe()
    if not record["available"]:
        return record
    t = topo.Topology(tuple(record["pu_os_index"]), tuple(record["pu_core"]), tuple(record["pu_package"]),
                      tuple(record["pu_numa"]))
    per = {}
    for n in sorted(set(int(c) for c in thread_counts)):
        try:
            cores = topo.thread_cores(t, placement.get("places"), placement.get("proc_bind"), n)
        except topo.TopologyError as err:
            per[str(n)] = {"problem": str(err)}
            continue
        per[str(n)] = {"thread_cores": cores, "sharing_a_core": topo.sharing(cores)}
    record["placement"] = {"OMP_PLACES": placement.get("places") or "(unset)",
                           "OMP_PROC_BIND": placement.get("proc_bind") or "(unset)", "threads": per}
    return record


def compilers(study, build_dir):
    """Per compiler/kernels build of the tree `build_dir`: the build's own buildinfo.json when present
    (flags included), else the compiler's --version, with a note that the flags are unknown."""
    out = {}
    for compiler in study.sweep["compilers"]:
        for kernels in study.sweep["kernels"]:
            path = os.path.join(str(build_dir), compiler, kernels, "buildinfo.json")
            entry = {"buildinfo": path}
            try:
                with open(path) as f:
                    entry["build"] = json.load(f)
            except (OSError, ValueError) as err:
                version = sh([compiler, "--version"])
                entry["build"] = None
                entry["note"] = f"no readable buildinfo.json ({type(err).__name__}); flags unknown"
                entry["version"] = version.splitlines()[0] if version else f"{compiler} not found"
            out[f"{compiler}/{kernels}"] = entry
    return out


def software():
    versions = {"python": sys.version.split()[0], "python_executable": sys.executable}
    for name in ("pandas", "numpy", "scipy", "matplotlib"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = None
    return versions


BOOT_ID = "/proc/sys/kernel/random/boot_id"


def boot_id(path=BOOT_ID):
    """The running kernel's boot identity (Linux; None elsewhere). A VM keeps its hostname from
    one start to the next while the host may place its vCPUs differently each time: two records with
    different boot ids were not measured on the same instance of the machine."""
    try:
        with open(path) as f:
            return f.read().strip() or None
    except OSError:
        return None


def system():
    u = platform.uname()
    return {"hostname": u.node, "kernel": f"{u.system} {u.release} {u.version}", "machine": u.machine,
            "boot_id": boot_id(), "gnuplot": shutil.which("gnuplot")}
