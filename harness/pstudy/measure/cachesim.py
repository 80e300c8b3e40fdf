"""Simulated cache traffic per kernel, deterministic, where the machine has no counters.

valgrind's cache simulator (the one cachegrind uses), run through callgrind so that a kernel's cost
includes the functions it calls (gemm's micro-kernels and packing count for the product that calls
them), with --simulate-wb=yes so that write-backs of dirty lines are counted. Its caches are set to
this machine's (sysfs, cpu0: the L1 data and instruction caches and the last level), recorded in
cachesim.json and in every figure. It simulates two levels, L1 and the last level: a miss in the
last level is a line from DRAM, and a dirty line it evicts a line to DRAM.

  simulated DRAM bytes = (DLmr + DLmw + DLdmr + DLdmw) x line size    (data fills and write-backs)

A kernel's simulated bytes are the inclusive cost of its entry functions (KERNEL_FUNCTIONS, the
functions core/step.c's op_run calls, as pstudy.instructions maps them), divided by the steps run
(cold first-touch misses included: with `steps` = 1 the step is a cold one). Beside them, the
traffic model's compulsory bytes per step (`--describe`, core/traffic.c) for the same model, and
the ratio simulated / compulsory: above 1 where the model under-counts (re-reads of data that
does not stay in cache, spills), under 1 where data stays in the last level across operations.

Limits, said on every figure: valgrind 3.19 (Debian 12) does not decode AVX-512, so the simulated
binary is an AVX2+FMA build (-march=native replaced by -mavx2 -mfma, `make
build/<compiler>/<kernels>-avx2/gpt2-<variant>`), not the native one; it is slow (about 50x), so
the model is a small one ([cachesim] config, B, T), not the one timed; the simulator has no
prefetcher and one thread; a write-back is charged to the kernel whose miss evicted the line.

Files in a results directory's cachesim/ (resultsdir.cachesim_dir):
  cachesim.json                       geometry (sysfs values and valgrind's options), build note,
                                      model, steps, commands
  callgrind/<compiler>_<kernels>.out  callgrind's output
  cachesim_<compiler>_<kernels>.csv   per kernel: events per step, simulated bytes, compulsory
                                      bytes, ratio
  cachesim_ratio.png                  ratio per kernel, one bar per kernel set (pstudy.show.cachesimfigure)
"""

import dataclasses
import json
import math
import re
import subprocess
from pathlib import Path

from pstudy.store import callgrind, config, opcosts, resultsdir, vocabulary
from pstudy.measure import runner
from pstudy.errors import StudyError

SYSFS = Path("/sys/devices/system/cpu/cpu0/cache")
ARCH_NATIVE = "-march=native"
ARCH_SIM = ("-mavx2", "-mfma")
BUILD_NOTE = ("AVX2+FMA build (-march=native replaced by -mavx2 -mfma: valgrind 3.19 cannot decode AVX-512), "
              "not the native binary")
VALGRIND = ("valgrind", "--tool=callgrind", "--cache-sim=yes", "--simulate-wb=yes", "-q")
DRAM_EVENTS = ("DLmr", "DLmw", "DLdmr", "DLdmw")
CSV_EVENTS = ("Ir", "Dr", "Dw", "D1mr", "D1mw", "DLmr", "DLmw", "DLdmr", "DLdmw")
COLUMNS = ["kernel", *CSV_EVENTS, "simulated_bytes", "compulsory_bytes", "ratio"]
RUN_TIMEOUT_S = 3600

KERNEL_FUNCTIONS = callgrind.KERNEL_FUNCTIONS


# ---------------------------------------------------------------------------------------------
# the caches

def _read(path):
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text or "")
    if not m:
        return None
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


CACHE_NAMES = ("I1", "D1", "LL")
CACHES_KEY = "[cachesim] caches"


def parse_caches(text):
    """{"I1"|"D1"|"LL": geometry} from "[cachesim] caches" ("D1=49152,12,64 LL=33554432,16,64": bytes,
    ways, line bytes; any of the three, space separated); StudyError naming the key otherwise."""
    out = {}
    for item in (text or "").split():
        m = re.fullmatch(r"(I1|D1|LL)=(\d+),(\d+),(\d+)", item)
        if not m:
            raise StudyError(f"{CACHES_KEY}: {item!r}: expected NAME=size,ways,line with NAME one of "
                             f"{', '.join(CACHE_NAMES)} (sizes in bytes)")
        name, size, assoc, line = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
        if name in out:
            raise StudyError(f"{CACHES_KEY}: {name} given twice")
        if min(size, assoc, line) <= 0:
            raise StudyError(f"{CACHES_KEY}: {item!r}: size, ways and line must be positive")
        out[name] = {"level": 1 if name != "LL" else 3, "type": {"I1": "Instruction", "D1": "Data"}.get(name, "Unified"),
                     "size": size, "assoc": assoc, "line": line, "source": CACHES_KEY}
    return out


def geometry(sysfs=SYSFS, caches=""):
    """{"I1"|"D1"|"LL": {"size", "assoc", "line", "level", "source"}} of cpu0's caches, those named in
    `caches` ("[cachesim] caches", parse_caches) taken from there; StudyError naming sysfs when a level
    cannot be read, or its source when valgrind could not simulate it (sets not a power of two)."""
    given = parse_caches(caches)
    found = []
    for d in sorted(Path(sysfs).glob("index*")):
        level, kind = _read(d / "level"), _read(d / "type")
        size, assoc, line = _size(_read(d / "size")), _read(d / "ways_of_associativity"), \
            _read(d / "coherency_line_size")
        if not (level and kind and size and assoc and line and assoc.isdigit() and line.isdigit()):
            continue
        found.append({"level": int(level), "type": kind, "size": size, "assoc": int(assoc), "line": int(line),
                      "source": str(d)})
    out = dict(given)
    for name, pick in (("I1", lambda c: c["level"] == 1 and c["type"] == "Instruction"),
                       ("D1", lambda c: c["level"] == 1 and c["type"] == "Data")):
        match = [c for c in found if pick(c)]
        if match and name not in out:
            out[name] = match[0]
    unified = [c for c in found if c["type"] == "Unified"]
    if unified and "LL" not in out:
        out["LL"] = max(unified, key=lambda c: c["level"])
    missing = [n for n in CACHE_NAMES if n not in out]
    if missing:
        # some VMs describe no caches there (their CPUID may be invented too: one reported a 508 MB L3)
        raise StudyError(f"{sysfs}: no {', '.join(missing)} cache described (index*/level, type, size, "
                         f"ways_of_associativity, coherency_line_size); give it in {CACHES_KEY}, "
                         "e.g. \"D1=49152,12,64 LL=33554432,16,64\"")
    out = {n: out[n] for n in CACHE_NAMES}
    for name, c in out.items():
        sets = c["size"] // (c["assoc"] * c["line"])
        if sets <= 0 or sets & (sets - 1) or sets * c["assoc"] * c["line"] != c["size"]:
            raise StudyError(f"{c['source']}: {name} of {c['size']} B, {c['assoc']}-way, {c['line']} B lines has "
                             f"{c['size'] / (c['assoc'] * c['line']):g} sets: valgrind simulates only a power of two")
    return out


def valgrind_options(geo):
    return [f"--{name}={c['size']},{c['assoc']},{c['line']}" for name, c in geo.items()]


def describe_geometry(geo):
    return ", ".join(f"{n} {c['size'] >> 10} KiB {c['assoc']}-way" for n, c in geo.items())


# ---------------------------------------------------------------------------------------------
# callgrind's output

def parse(path):
    """({function: {event: inclusive count}}, {event: total}) of a callgrind output file made with
    the cache simulation (read by pstudy.callgrind); StudyError naming the file otherwise."""
    functions, totals, events = callgrind.read(path)
    if events is None or "Ir" not in events:
        raise StudyError(f"{path}: not a callgrind output file (no 'events:' line with Ir)")
    missing = [e for e in DRAM_EVENTS if e not in events]
    if missing:
        raise StudyError(f"{path}: no {', '.join(missing)} events: run with --cache-sim=yes --simulate-wb=yes")
    if totals is None:
        raise callgrind.without_totals(path)
    return functions, totals


def line_size(path):
    """The LL line size recorded in a callgrind file's `desc: LL cache:` line (64 when absent)."""
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r"desc: LL cache: \d+ B, (\d+) B", line)
                if m:
                    return int(m.group(1))
                if line.startswith("fn="):
                    break
    except OSError:
        pass
    return 64


def per_kernel(functions, line, steps):
    """{kernel: {event: count per step, "simulated_bytes": bytes per step}} from parse()'s functions."""
    out = {}
    for kernel, fns in KERNEL_FUNCTIONS.items():
        ev = {e: sum(functions.get(fn, {}).get(e, 0) for fn in fns) / steps for e in CSV_EVENTS}
        ev["simulated_bytes"] = sum(ev[e] for e in DRAM_EVENTS) * line
        out[kernel] = ev
    return out


def kernel_table(functions, line, steps, compulsory):
    """Rows of COLUMNS: simulated against compulsory bytes per step; compulsory: {kernel: bytes per step}."""
    rows = []
    for kernel, ev in per_kernel(functions, line, steps).items():
        comp = compulsory.get(kernel)
        if comp is None:
            continue
        ratio = ev["simulated_bytes"] / comp if comp > 0 else math.nan
        rows.append({"kernel": kernel, **{e: ev[e] for e in CSV_EVENTS}, "simulated_bytes": ev["simulated_bytes"],
                     "compulsory_bytes": comp, "ratio": ratio})
    return rows


# ---------------------------------------------------------------------------------------------
# running

def sim_study(study):
    """The study with [cachesim]'s model (a named configuration, no checkpoint or data), its steps
    and no warm-up: what runs under valgrind."""
    c = study.cachesim
    model = {**study.model, "config": c["config"], "checkpoint": None, "data": None, "B": c["B"], "T": c["T"]}
    run = {**study.run, "steps": c["steps"], "warmup": 0, "timeout_s": RUN_TIMEOUT_S}
    return dataclasses.replace(study, model=model, run=run)


def binary_target(compiler, kernels):
    return config.AVX2_BINARY.format(build_dir="build", compiler=compiler, kernels=kernels,
                                     variant=vocabulary.BASELINE)


def build(root, compiler, kernels):
    target = binary_target(compiler, kernels)
    done = subprocess.run(["nice", "make", "-s", "--no-print-directory", "-C", str(root), target],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        raise StudyError(f"make {target} failed: {last}")
    return Path(root) / target


def compulsory_bytes(binary, study, root):
    """{kernel: the traffic model's bytes per step} from `binary --json --describe` of the model."""
    cmd = [str(binary), "--json", "--describe"] + runner.model_args(study, root)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise StudyError(f"{binary} --describe failed: {done.stderr.strip()}")
    tmp = Path(root) / "build" / f".cachesim-describe-{Path(binary).parent.name}.json"
    resultsdir.atomic_write(tmp, done.stdout)
    try:
        ops = opcosts.read(tmp)
    finally:
        tmp.unlink(missing_ok=True)
    return ops.groupby("kernel")["bytes"].sum().to_dict()


def run_all(study, directory, root, say=print, sysfs=SYSFS):
    """Simulates every (compiler, kernel set) of the study's sweep on [cachesim]'s model into
    resultsdir.ResultsDir(directory).cachesim, skipping those already there; returns {(compiler, kernels): rows}."""
    from pstudy.store.sweep import Point
    geo = geometry(sysfs, study.cachesim.get("caches", ""))
    s = sim_study(study)
    out = resultsdir.ResultsDir(directory).cachesim
    (out / "callgrind").mkdir(parents=True, exist_ok=True)
    meta_path = out / "cachesim.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    meta.update({"simulator": " ".join(VALGRIND), "build": BUILD_NOTE, "geometry": geo,
                 "valgrind_options": valgrind_options(geo), "model": s.model, "steps": s.run["steps"],
                 "bytes": "(DLmr + DLmw + DLdmr + DLdmw) x line size per step; cold first step included",
                 "runs": meta.get("runs", {})})
    results = {}
    for compiler in study.sweep["compilers"]:
        for kernels in study.sweep["kernels"]:
            csv_path = out / f"cachesim_{compiler}_{kernels}.csv"
            if csv_path.exists():
                continue
            binary = build(root, compiler, kernels)
            cg = out / "callgrind" / f"{compiler}_{kernels}.out"
            point = Point(vocabulary.BASELINE, compiler, kernels, 1, None, None)
            prefix = [*VALGRIND, *valgrind_options(geo), f"--callgrind-out-file={cg}"]
            say(f"{compiler}/{kernels}: simulating {s.model['config']} B={s.model['B']} T={s.model['T']} "
                f"for {s.run['steps']} step(s) under valgrind (slow: minutes)")
            outcome = runner.execute(s, point, str(binary), str(root), prefix=prefix)
            if outcome.status != runner.OK:
                raise StudyError(f"{binary} under valgrind: {outcome.status}: {outcome.error}")
            functions, _totals = parse(cg)
            rows = kernel_table(functions, line_size(cg), s.run["steps"], compulsory_bytes(binary, s, root))
            import pandas as pd
            resultsdir.write_csv(csv_path, pd.DataFrame(rows, columns=COLUMNS))
            meta["runs"][f"{compiler}_{kernels}"] = {
                "command": runner.command(s, point, str(binary), str(root), prefix=prefix),
                "wall_s": outcome.wall_s, "callgrind": str(cg.relative_to(out))}
            results[(compiler, kernels)] = rows
    resultsdir.write_json(meta_path, meta)
    return results


# ---------------------------------------------------------------------------------------------
# reading back, for the figure and the verdict

def read_meta(directory):
    path = resultsdir.ResultsDir(directory).cachesim / "cachesim.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise StudyError(f"{path}: unreadable: {err}") from None


def note(meta):
    """What every figure and line using the simulation says about it."""
    m = meta.get("model", {})
    geo = meta.get("geometry", {})
    return (f"simulated: valgrind cache simulator, {m.get('config')} B={m.get('B')} T={m.get('T')}, "
            f"{BUILD_NOTE.split(' (')[0]}, caches {describe_geometry(geo) if geo else '?'}")


def read_table(directory, compiler, kernels):
    path = resultsdir.ResultsDir(directory).cachesim / f"cachesim_{compiler}_{kernels}.csv"
    if not path.exists():
        return None
    return resultsdir.read_csv(path, columns=COLUMNS, what="simulated cache traffic")


def kernel_evidence(directory, compiler, kernels):
    """{kernel: {"ratio", "simulated_bytes", "compulsory_bytes", "note"}} or None when absent."""
    table = read_table(directory, compiler, kernels)
    meta = read_meta(directory)
    if table is None or meta is None:
        return None
    text = note(meta)
    return {r["kernel"]: {"ratio": float(r["ratio"]), "simulated_bytes": float(r["simulated_bytes"]),
                          "compulsory_bytes": float(r["compulsory_bytes"]), "note": text}
            for _, r in table.iterrows()}


def ratio_tables(directory):
    """({"compiler/kernels": its table}, cachesim.json's record) of every simulation in the
    directory, what pstudy.show.cachesimfigure draws; ({}, None) where there is none."""
    out = resultsdir.ResultsDir(directory).cachesim
    meta = read_meta(directory)
    tables = {}
    for path in sorted(out.glob("cachesim_*_*.csv")):
        m = re.fullmatch(r"cachesim_([a-z0-9]+)_([a-z0-9]+)\.csv", path.name)
        if m:
            tables[f"{m.group(1)}/{m.group(2)}"] = read_table(directory, m.group(1), m.group(2))
    return tables, meta


def format_results(directory):
    meta = read_meta(directory)
    if meta is None:
        return "no simulated cache traffic"
    lines = [note(meta)]
    out = resultsdir.ResultsDir(directory).cachesim
    for path in sorted(out.glob("cachesim_*_*.csv")):
        t = resultsdir.read_csv(path, columns=COLUMNS, what="simulated cache traffic")
        lines.append(f"== {path.stem}: per step, simulated DRAM bytes vs compulsory (model)")
        for _, r in t.sort_values("compulsory_bytes", ascending=False).iterrows():
            lines.append(f"  {r['kernel']:<22} simulated {r['simulated_bytes'] / 1e6:9.2f} MB  compulsory "
                         f"{r['compulsory_bytes'] / 1e6:9.2f} MB  ratio {r['ratio']:6.2f}")
    return "\n".join(lines)
