"""Measured machine ceilings for the roofline, saved as ceilings.json.

measure_ceilings() runs probes/stream and probes/peakflops (built by
probes/Makefile.probes into build/probes/) at each thread count, pinned with
OMP_PROC_BIND=close and OMP_PLACES=cores unless told otherwise, and, where
likwid-bench runs, likwid-bench's copy, STREAM-triad and single-precision
peakflops figures beside them as a cross-check; then probes/reread once, at
one thread (the rate at which a product's input is packed again).

ceilings.json, schema "pstudy-ceilings/1":

    {
      "schema": "pstudy-ceilings/1",
      "date": "2025-03-04T10:12:31Z",              # UTC, when measured
      "host": {"hostname": str, "cpu_model": str, "logical_cpus": int, "boot_id": str or null (since
               2026-11-27; the kernel's boot identity: two records with different ones come from
               different starts of the machine)},
      "environment": {"OMP_PROC_BIND": str, "OMP_PLACES": str},
      "source": {
        "stream": {"binary": str, "array_type": "double",
                   "bytes": "STREAM counting: arrays named in the kernel, no write-allocate",
                   "elements": int, "llc_bytes": int, "reps": int},
        "peakflops": {"binary": str, "precision": "single", "chains": int,
                      "iterations": int, "reps": int},
        "likwid_bench": {"available": bool, "reason": str}
      },
      "per_threads": [                             # one entry per thread count, ascending
        {"threads": int,
         "stream_GBs": {"copy": float, "scale": float, "add": float, "triad": float},
         "peak_gflops": {"<isa>": float, ...},     # isa in avx512, avx2, sse, scalar: those built
         "best_isa": str, "best_gflops": float,    # the largest of peak_gflops
         "thread_cpus": [int, ...],                # the logical CPU each peakflops thread ran on
         "cores_used": int or null,                # distinct cores among them (hwloc topology)
         "cpu_steal_fraction": float or null,      # share of CPU time the hypervisor took
                                                   # during this entry's runs (/proc/stat);
                                                   # above ~0.05 the figures are too low
         "likwid_bench": {                         # only where likwid-bench ran
           "tests": {"copy": str, "triad": str, "peakflops": str},
           "copy_GBs": float, "triad_GBs": float, "peak_gflops": float}}
      ],
      "topology": {"available": bool, ...},        # store.topology.describe(): hwloc's view,
                                                   # or the reason it is missing
      "reread": {"available": bool, "reason": str, # probes/reread at 1 thread: one core's rate for
                 "binary": str, "reread_GBs": float,  # the input rows a product cut into column
                 "rep_GBs": [float, ...], "rows": int,  # pieces packs again (the median round);
                 "reduction": int, "columns": int,  # only where it ran (else available false and
                 "pieces": int}                     # the reason); optional in older files
    }

GB/s and GFLOP/s are 1e9 units. placement_warnings() checks that each thread count's peak ran on
as many cores as it should and that the per-thread peak says the same. load_ceilings() checks all of this and
raises CeilingsError naming the file and the key that is wrong.
"""

import collections
import datetime
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from pstudy.measure import provenance
from pstudy.store import resultsdir
from pstudy.store import topology as topo

SCHEMA = "pstudy-ceilings/1"
STREAM_KERNELS = ("copy", "scale", "add", "triad")
ISAS = ("avx512", "avx2", "sse", "scalar")
RUN_TIMEOUT_S = 300

# likwid-bench kernels matching our widest measured ISA (stream = STREAM triad).
_LIKWID_SUFFIX = {"avx512": "_avx512", "avx2": "_avx", "sse": "_sse", "scalar": ""}
_LIKWID_PEAK = {"avx512": "peakflops_sp_avx512_fma", "avx2": "peakflops_sp_avx_fma",
                "sse": "peakflops_sp_sse", "scalar": "peakflops_sp"}


# Physical bounds: a measured ceiling above them is a timing glitch (a VM's clock, a lost
# interrupt), never the machine. Per cycle and core, no x86 core has more than two FMA pipes of its
# widest vector (2 pipes x lanes x 2 FLOP), nor more than two 64-byte loads and one 64-byte store
# to L1 (192 B), a loose bound on any stream of memory.
FLOP_PER_CYCLE = {"avx512": 64, "avx2": 32, "sse": 16, "scalar": 4}
BYTES_PER_CYCLE = 192
# When only the current clock is known (/proc/cpuinfo's "cpu MHz", a VM's nominal frequency),
# turbo may run above it, by up to about 2x on servers: EPYC 9845 2.1 -> 3.7 GHz (1.76x), Xeon
# 6980P 2.0 -> 3.9 GHz (1.95x); a Zen 5 VM here reporting 2096 MHz measured 223 GFLOP/s, 3.48 GHz
# (1.66x), which the former allowance of 1.5 rejected as a glitch. A glitch within 2x (292 GFLOP/s
# on a 2.5 GHz Cascade Lake vCPU, 1.83x) is then left to the second-best statistic, which one
# outlier cannot move.
NOMINAL_CLOCK_ALLOWANCE = 2.0
STATISTIC = "second best of the repetitions (one outlier cannot move it)"


def max_clock_ghz():
    """(GHz, source) of the highest clock a core may reach, or (None, why) when unknown: cpufreq's
    cpuinfo_max_freq, else lscpu's "CPU max MHz", else /proc/cpuinfo's MHz x the allowance above."""
    freqs = []
    for path in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/cpuinfo_max_freq"):
        try:
            freqs.append(int(path.read_text()) / 1e6)
        except (OSError, ValueError):
            pass
    if freqs:
        return max(freqs), "cpufreq cpuinfo_max_freq"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        mhz = re.search(r"^CPU max MHz:\s*([\d.]+)", out, re.M)
        if mhz and float(mhz.group(1)) > 0:
            return float(mhz.group(1)) / 1e3, "lscpu CPU max MHz"
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            mhz = [float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")]
        if mhz:
            return (max(mhz) / 1e3 * NOMINAL_CLOCK_ALLOWANCE,
                    f"/proc/cpuinfo cpu MHz x {NOMINAL_CLOCK_ALLOWANCE} (turbo allowance)")
    except (OSError, ValueError, IndexError):
        pass
    return None, "no clock frequency in cpufreq, lscpu or /proc/cpuinfo"


def robust_ceiling(reps, bound, what, warnings):
    """The ceiling from one binary's repetitions: those above the physical bound dropped with a
    warning, then the second best of the rest (the best when one is left). Returns (value, spread)."""
    kept = [r for r in reps if bound is None or r <= bound]
    if len(kept) < len(reps):
        warnings.append(f"{what}: rejected {len(reps) - len(kept)} repetition(s) above the physical bound "
                        f"{bound:.1f} ({', '.join(f'{r:.1f}' for r in reps if r > bound)})")
    if not kept:
        raise CeilingsError(f"{what}: every repetition is above the physical bound {bound:.1f}")
    ordered = sorted(kept, reverse=True)
    value = ordered[1] if len(ordered) > 1 else ordered[0]
    spread = {"used": value, "best": ordered[0], "median": ordered[len(ordered) // 2] if len(ordered) % 2 else
              (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2,
              "worst": ordered[-1], "repetitions": len(reps), "rejected": len(reps) - len(kept), "bound": bound}
    return value, spread


class CeilingsError(Exception):
    """A ceilings measurement or file that cannot be used; the message names file and problem."""


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _run_json(argv, env, what):
    """The JSON object a bench binary prints on stdout; CeilingsError otherwise."""
    binary = argv[0]
    if not Path(binary).is_file():
        raise CeilingsError(f"{binary}: not found (build it with: make -f probes/Makefile.probes)")
    try:
        proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CeilingsError(f"{binary}: no result within {RUN_TIMEOUT_S} s") from None
    except OSError as err:
        raise CeilingsError(f"{binary}: cannot run: {err.strerror}") from None
    return _json_result(binary, what, proc.returncode, proc.stdout, proc.stderr)


def _json_result(binary, what, returncode, stdout, stderr):
    """The JSON object of a bench binary's last stdout line, given how it ended; CeilingsError
    naming the binary otherwise."""
    if returncode != 0:
        last = (stderr.strip().splitlines() or ["(no message)"])[-1]
        raise CeilingsError(f"{binary}: {what} failed with exit status {returncode}: {last}")
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        raise CeilingsError(f"{binary}: {what}: stdout is not one JSON object") from None


# The probe beside each run ([analysis] peak_beside): the widest width only, 5 repetitions of 1e7
# iterations (about 25 ms each at AVX-512), 0.15 s a run. It measures where the run's threads will
# be, not a ceiling: a host that places a VM's vCPUs anew shows it run by run (docs/studies/
# 2026-11-27-xeon-emr-vm16: a different slow pair of threads in each run of one sweep).
PEAK_BESIDE_ARGS = ("--isa", "widest", "--reps", "5", "--iterations", "10000000")


def probed(study, point):
    """Whether a run gets the probes (`[analysis] peak_beside`; not gpt2-mpi's points, whose ranks
    a launcher places)."""
    return bool(study.analysis["peak_beside"]) and point.ranks is None


def peak_beside_argv(probes_dir):
    """The probe's command line (a batch job runs it too: pstudy.measure.slurm)."""
    return [str(Path(probes_dir) / "peakflops"), "--json", *PEAK_BESIDE_ARGS]


def _probe_record(binary, result):
    """{"isa", "gflops", "thread_gflops": [per thread], "thread_cpus": [...]}, or {"error": why},
    of a probe that ran: `result` a callable giving its JSON object or raising CeilingsError."""
    try:
        out = result()
        first = out["results"][0]
        return {"isa": str(first["isa"]), "gflops": float(first["gflops"]),
                "thread_gflops": [float(g) for g in first["thread_gflops"]],
                "thread_cpus": [int(c) for c in out["thread_cpus"]]}
    except CeilingsError as err:
        return {"error": str(err)}
    except (KeyError, IndexError, TypeError, ValueError) as err:
        return {"error": f"{binary}: unexpected output ({type(err).__name__}: {err})"}


def peak_beside(probes_dir, env):
    """peakflops with the run's environment (threads, OMP_PLACES, OMP_PROC_BIND), right before or
    right after it: its record (_probe_record). It never raises: a run is never lost to its probe."""
    argv = peak_beside_argv(probes_dir)
    return _probe_record(argv[0], lambda: _run_json(argv, env, "peakflops"))


def peak_beside_of_job(binary, status, stdout, stderr):
    """The same record from the files a batch job's probe left (pstudy.measure.slurm): its exit
    status (a file holding a number), stdout and stderr. A file missing (the job ended before the
    probe ran) is the record's error."""
    def result():
        try:
            code = int(Path(status).read_text().split()[0])
            out = Path(stdout).read_text(errors="replace")
            err = Path(stderr).read_text(errors="replace") if Path(stderr).exists() else ""
        except OSError as e:
            raise CeilingsError(f"{e.filename}: the job left no probe ({e.strerror})") from None
        except (IndexError, ValueError):
            raise CeilingsError(f"{status}: not an exit status") from None
        return _json_result(binary, "peakflops", code, out, err)
    return _probe_record(binary, result)


# jiffies over all CPUs since boot: the hypervisor's (steal), idle or waiting on I/O, and all
CpuTimes = collections.namedtuple("CpuTimes", "steal idle total")


def cpu_times():
    """CpuTimes from /proc/stat's cpu line, or None where unreadable."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if len(fields) < 9 or fields[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice, already in user/nice]
    values = [int(v) for v in fields[1:9]]
    return CpuTimes(values[7], values[3] + values[4], sum(values))


def steal_fraction(before, after):
    """Share of all CPUs' time the hypervisor took between two cpu_times() readings, or None."""
    if before is None or after is None or after.total <= before.total:
        return None
    return round((after.steal - before.steal) / (after.total - before.total), 3)


def busy_cpus(before, after, seconds):
    """CPUs' worth of time spent busy (neither idle nor waiting on I/O) between two cpu_times()
    readings `seconds` apart, or None."""
    if before is None or after is None or seconds <= 0:
        return None
    busy = (after.total - after.idle) - (before.total - before.idle)
    return busy / os.sysconf("SC_CLK_TCK") / seconds


def likwid_bench_available(likwid_bench="likwid-bench"):
    """(available, reason): likwid-bench present and a tiny in-cache copy runs."""
    if shutil.which(likwid_bench) is None:
        return False, f"{likwid_bench} not installed (Debian package: likwid)"
    try:
        proc = subprocess.run([likwid_bench, "-t", "copy", "-W", "N:64kB:1", "-i", "10"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              text=True, timeout=60)
    except (subprocess.TimeoutExpired, OSError) as err:
        return False, f"{likwid_bench}: {err}"
    if proc.returncode != 0 or _likwid_value(proc.stdout, "MByte/s") is None:
        last = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
        return False, f"{likwid_bench} -t copy: {last}"
    return True, f"{likwid_bench} runs"


def _likwid_value(output, key):
    m = re.search(rf"^{re.escape(key)}:\s*([0-9.eE+-]+)\s*$", output, re.M)
    return float(m.group(1)) if m else None


# Fixed iteration counts: likwid-bench's own -s calibration takes integer
# seconds only and costs ~4 s per test. 10 passes over 4x the LLC, and 50000
# in-L1 sweeps of peakflops, each run about 0.2-0.5 s here.
LIKWID_ITERATIONS = {"copy": 10, "triad": 10, "peakflops": 50000}


def _likwid_bench_figures(threads, isa, llc_bytes, likwid_bench="likwid-bench"):
    """likwid-bench copy, triad and peakflops at `threads` threads, in GB/s and GFLOP/s."""
    tests = {"copy": "copy" + _LIKWID_SUFFIX[isa], "triad": "stream" + _LIKWID_SUFFIX[isa],
             "peakflops": _LIKWID_PEAK[isa]}
    # Working sets: 4x the LLC per array for the memory tests (2 and 3
    # arrays); 32 kB per thread keeps peakflops in L1.
    sizes_kb = {"copy": 2 * 4 * llc_bytes // 1024, "triad": 3 * 4 * llc_bytes // 1024, "peakflops": 32 * threads}
    figures = {"tests": tests}
    for kind, test in tests.items():
        argv = [likwid_bench, "-t", test, "-W", f"N:{sizes_kb[kind]}kB:{threads}", "-i", str(LIKWID_ITERATIONS[kind])]
        try:
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  text=True, timeout=RUN_TIMEOUT_S)
        except (subprocess.TimeoutExpired, OSError) as err:
            raise CeilingsError(f"{' '.join(argv)}: {err}") from None
        key = "MFlops/s" if kind == "peakflops" else "MByte/s"
        value = _likwid_value(proc.stdout, key)
        if proc.returncode != 0 or value is None:
            raise CeilingsError(f"{' '.join(argv)}: no '{key}' line in its output")
        figures["peak_gflops" if kind == "peakflops" else f"{kind}_GBs"] = round(value / 1000.0, 3)
    return figures


def measure_ceilings(build_dir, thread_counts, out_path, proc_bind="close", places="cores",
                     stream_args=(), peakflops_args=(), likwid_bench=None):
    """Measures the ceilings at each thread count, writes out_path (ceilings.json), returns the dict.

    build_dir holds the `stream` and `peakflops` binaries. stream_args and
    peakflops_args are passed on (e.g. ("--reps", "20")). likwid_bench: None
    detects it, False skips it, True requires it.
    """
    build_dir = Path(build_dir)
    counts = sorted(set(int(t) for t in thread_counts))
    if not counts or counts[0] < 1:
        raise CeilingsError(f"thread counts: expected positive integers, got {list(thread_counts)}")
    env = dict(os.environ)
    if proc_bind:
        env["OMP_PROC_BIND"] = proc_bind
    if places:
        env["OMP_PLACES"] = places

    if likwid_bench is False:
        lb_ok, lb_reason = False, "not requested"
    else:
        lb_ok, lb_reason = likwid_bench_available()
        if likwid_bench is True and not lb_ok:
            raise CeilingsError(f"likwid-bench required but unavailable: {lb_reason}")

    per_threads, stream_src, peak_src = [], None, None
    for threads in counts:
        env["OMP_NUM_THREADS"] = str(threads)
        times_before = cpu_times()
        stream = _run_json([str(build_dir / "stream"), "--threads", str(threads), "--json", *map(str, stream_args)],
                           env, "stream")
        peak = _run_json([str(build_dir / "peakflops"), "--threads", str(threads), "--json",
                          *map(str, peakflops_args)], env, "peakflops")
        ghz, clock_source = max_clock_ghz()
        try:
            entry = {"threads": threads, "stream_GBs": {}, "peak_gflops": {}, "spread": {}, "warnings": []}
            for k in STREAM_KERNELS:
                bound = ghz * BYTES_PER_CYCLE * threads if ghz else None
                reps = stream.get(f"{k}_rep_GBs") or [stream[f"{k}_GBs"]]
                entry["stream_GBs"][k], entry["spread"][f"stream_{k}_GBs"] = robust_ceiling(
                    reps, bound, f"STREAM {k} at {threads} threads [GB/s]", entry["warnings"])
            for r in peak["results"]:
                bound = ghz * FLOP_PER_CYCLE.get(r["isa"], 64) * threads if ghz else None
                entry["peak_gflops"][r["isa"]], entry["spread"][f"peak_{r['isa']}_gflops"] = robust_ceiling(
                    r.get("rep_gflops") or [r["gflops"]], bound, f"peak {r['isa']} at {threads} threads [GFLOP/s]",
                    entry["warnings"])
            entry["clock_bound"] = {"ghz": ghz, "source": clock_source}
            stream_src = {"binary": str(build_dir / "stream"), "array_type": stream.get("element_type", "double"),
                          "bytes": "STREAM counting: arrays named in the kernel, no write-allocate",
                          "elements": stream["elements"], "llc_bytes": stream["llc_bytes"], "reps": stream["reps"],
                          "statistic": STATISTIC}
            peak_src = {"binary": str(build_dir / "peakflops"), "precision": "single", "chains": peak["chains"],
                        "iterations": peak["iterations"], "reps": peak["reps"], "statistic": STATISTIC}
        except (KeyError, TypeError) as err:
            raise CeilingsError(f"{build_dir}: bench JSON lacks {err}") from None
        for warning in entry["warnings"]:
            sys.stderr.write(f"perfstudy ceilings: warning: {warning}\n")
        if not entry["peak_gflops"]:
            raise CeilingsError(f"{build_dir / 'peakflops'}: no ISA results")
        cpus = peak.get("thread_cpus")
        if isinstance(cpus, list) and all(isinstance(c, int) for c in cpus):
            entry["thread_cpus"] = cpus
        entry["best_isa"] = max(entry["peak_gflops"], key=entry["peak_gflops"].get)
        entry["best_gflops"] = entry["peak_gflops"][entry["best_isa"]]
        if lb_ok:
            entry["likwid_bench"] = _likwid_bench_figures(threads, entry["best_isa"], stream_src["llc_bytes"])
        # A VM whose host is oversubscribed loses whole time slices: the
        # ceilings then measure the neighbours, and this says by how much.
        entry["cpu_steal_fraction"] = steal_fraction(times_before, cpu_times())
        per_threads.append(entry)

    env["OMP_NUM_THREADS"] = "1"
    reread = measure_reread(build_dir, env)
    data = {"schema": SCHEMA,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": {"hostname": socket.gethostname(), "cpu_model": _cpu_model(), "logical_cpus": os.cpu_count(),
                     "boot_id": provenance.boot_id()},
            "environment": {"OMP_PROC_BIND": env.get("OMP_PROC_BIND", ""), "OMP_PLACES": env.get("OMP_PLACES", "")},
            "source": {"stream": stream_src, "peakflops": peak_src,
                       "likwid_bench": {"available": lb_ok, "reason": lb_reason}},
            "per_threads": per_threads,
            "topology": topo.describe(),
            "reread": reread}
    for entry in per_threads:
        entry["cores_used"] = cores_used(data["topology"], entry.get("thread_cpus"))
    for warning in placement_warnings(data):
        sys.stderr.write(f"perfstudy ceilings: warning: {warning}\n")
    validate_ceilings(data, str(out_path))
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    resultsdir.atomic_write(out_path, json.dumps(data, indent=2) + "\n")
    return data


def measure_reread(build_dir, env):
    """probes/reread's figure at one thread (docs/roofline.md, "Ceilings"), or {"available": False,
    "reason": ...} where it is not built or gave no figure: machine.toml then has no reread_GBs and
    predict charges re-read bytes at one core's STREAM bandwidth, as before the benchmark existed."""
    binary = Path(build_dir) / "reread"
    try:
        out = _run_json([str(binary), "--json"], env, "re-read rate")
    except CeilingsError as err:
        sys.stderr.write(f"perfstudy ceilings: warning: {err} (no re-read rate recorded)\n")
        return {"available": False, "reason": str(err)}
    try:
        figure = {"available": True, "reason": "", "binary": str(binary), "reread_GBs": float(out["reread_GBs"]),
                  "rep_GBs": [float(x) for x in out["reread_rep_GBs"]]}
        figure.update({k: int(out[k]) for k in ("rows", "reduction", "columns", "pieces")})
    except (KeyError, TypeError, ValueError) as err:
        raise CeilingsError(f"{binary}: bench JSON lacks or mistypes {err}") from None
    return figure


def cores_used(topology, cpus):
    """Distinct cores among the logical CPUs `cpus` under a recorded topology (describe()'s dict),
    or None when either is unknown."""
    if not cpus or not topology or not topology.get("available"):
        return None
    core_of = dict(zip(topology["pu_os_index"], topology["pu_core"]))
    if any(c not in core_of for c in cpus):
        return None
    return len({core_of[c] for c in cpus})


# Below this share of one thread's peak per thread, N threads cannot be on N cores of their own: a
# clock that drops with the busy cores costs 10-30% (all-core AVX-512 turbo), two hardware threads
# on one core's FMA units 50%.
SHARED_CORE_RATIO = 0.6


def placement_warnings(data):
    """What says that a thread count's peak was not measured on as many cores as threads: the CPUs
    its threads reported (two on one core by the topology), and the per-thread peak against one
    thread's (the FMA units of one core shared, whatever the OS reports: a VM may show a physical
    core's two hardware threads as two cores)."""
    out = []
    entries = sorted(data["per_threads"], key=lambda e: e["threads"])
    one = next((e for e in entries if e["threads"] == 1), None)
    topology = data.get("topology") or {}
    n_cores = topology.get("cores") if topology.get("available") else None
    for e in entries:
        n = e["threads"]
        used = e.get("cores_used")
        want = min(n, n_cores) if n_cores else None
        if used is not None and want is not None and used < want:
            out.append(f"peak at {n} threads ran on {used} cores (CPUs {e.get('thread_cpus')}); with "
                       f"OMP_PLACES={data['environment'].get('OMP_PLACES') or '(unset)'} the threads share cores "
                       f"although {want} were free: the figure is not {n} cores' peak")
        if one is not None and n > 1 and (n_cores is None or n <= n_cores):
            ratio = e["best_gflops"] / (n * one["best_gflops"])
            if ratio < SHARED_CORE_RATIO:
                out.append(f"peak at {n} threads is {ratio:.2f} of {n} x the 1-thread peak: the threads share "
                           f"FMA units (hardware threads of one core"
                           + (", shown by the OS as separate cores, as on a VM whose vCPUs are a core's "
                              "hardware threads" if used == n else "") + "); "
                           "predict's contention model takes the measured curve as it is")
    return out


def _positive_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and value != float("inf")


def validate_ceilings(data, source):
    """Raises CeilingsError '<source>: <key>: <problem>' unless data follows the schema above."""
    def fail(key, problem):
        raise CeilingsError(f"{source}: {key}: {problem}")

    def need(obj, key, path, kind):
        if not isinstance(obj, dict) or key not in obj:
            fail(f"{path}{key}", "missing")
        if not isinstance(obj[key], kind):
            fail(f"{path}{key}", "expected " + {str: "a string", dict: "an object", list: "a list",
                                               int: "an integer"}.get(kind, "a number"))
        return obj[key]

    if not isinstance(data, dict):
        fail("(top level)", "expected a JSON object")
    if data.get("schema") != SCHEMA:
        fail("schema", f"expected {SCHEMA!r}, got {data.get('schema')!r}")
    date = need(data, "date", "", str)
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", date):
        fail("date", f"expected UTC ISO 8601 like 2025-03-04T10:12:31Z, got {date!r}")
    need(data, "host", "", dict)
    source_info = need(data, "source", "", dict)
    for bench in ("stream", "peakflops"):
        need(source_info, bench, "source.", dict)
        need(source_info[bench], "binary", f"source.{bench}.", str)
    per_threads = need(data, "per_threads", "", list)
    if not per_threads:
        fail("per_threads", "empty")
    seen = set()
    for i, entry in enumerate(per_threads):
        at = f"per_threads[{i}]."
        threads = need(entry, "threads", at, int)
        if isinstance(threads, bool) or threads < 1:
            fail(at + "threads", f"expected a positive integer, got {threads!r}")
        if threads in seen:
            fail(at + "threads", f"{threads} appears twice")
        seen.add(threads)
        stream = need(entry, "stream_GBs", at, dict)
        for kernel in STREAM_KERNELS:
            if not _positive_number(need(stream, kernel, at + "stream_GBs.", (int, float))):
                fail(f"{at}stream_GBs.{kernel}", f"expected a positive number, got {stream[kernel]!r}")
        peak = need(entry, "peak_gflops", at, dict)
        if not peak:
            fail(at + "peak_gflops", "empty")
        for isa, value in peak.items():
            if isa not in ISAS:
                fail(f"{at}peak_gflops.{isa}", f"unknown ISA (expected one of {', '.join(ISAS)})")
            if not _positive_number(value):
                fail(f"{at}peak_gflops.{isa}", f"expected a positive number, got {value!r}")
        best = need(entry, "best_isa", at, str)
        if best not in peak:
            fail(at + "best_isa", f"{best!r} is not in peak_gflops")
        if peak[best] != max(peak.values()):
            fail(at + "best_isa", f"{best!r} is not the fastest ISA in peak_gflops")
        if need(entry, "best_gflops", at, (int, float)) != peak[best]:
            fail(at + "best_gflops", f"differs from peak_gflops.{best}")
        cpus = entry.get("thread_cpus")
        if cpus is not None and (not isinstance(cpus, list) or not all(isinstance(c, int) and not isinstance(c, bool)
                                                                       for c in cpus)):
            fail(at + "thread_cpus", f"expected a list of integers, got {cpus!r}")
        steal = entry.get("cpu_steal_fraction")
        if steal is not None and not (isinstance(steal, (int, float)) and 0 <= steal <= 1):
            fail(at + "cpu_steal_fraction", f"expected null or a number in [0, 1], got {steal!r}")
        if "likwid_bench" in entry:
            lb = need(entry, "likwid_bench", at, dict)
            for key in ("copy_GBs", "triad_GBs", "peak_gflops"):
                if not _positive_number(need(lb, key, at + "likwid_bench.", (int, float))):
                    fail(f"{at}likwid_bench.{key}", "expected a positive number")
    if "reread" in data:
        reread = need(data, "reread", "", dict)
        available = reread.get("available")
        if not isinstance(available, bool):
            fail("reread.available", f"expected true or false, got {available!r}")
        if available and not _positive_number(need(reread, "reread_GBs", "reread.", (int, float))):
            fail("reread.reread_GBs", f"expected a positive number, got {reread['reread_GBs']!r}")


def load_ceilings(path):
    """The validated contents of a ceilings.json; CeilingsError naming the file and key otherwise."""
    path = str(path)
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise CeilingsError(f"{path}: not found (measure it with measure_ceilings)") from None
    except json.JSONDecodeError as err:
        raise CeilingsError(f"{path}: not JSON: {err.msg} at line {err.lineno}") from None
    except OSError as err:
        raise CeilingsError(f"{path}: {err.strerror}") from None
    validate_ceilings(data, path)
    return data


def ceiling_for(data, threads):
    """The per_threads entry measured at exactly `threads` threads."""
    for entry in data["per_threads"]:
        if entry["threads"] == threads:
            return entry
    measured = ", ".join(str(e["threads"]) for e in data["per_threads"])
    raise CeilingsError(f"ceilings: no measurement at {threads} threads (measured: {measured})")
