"""Study configs: TOML files in configs/, checked key by key.

Every problem is a StudyError naming the file and the key ("configs/x.toml: sweep.threads: ...");
unknown tables and keys are errors too, so that a typo never silently falls back to a default.
The schema below is the single source of truth; docs/running.md describes it for people.
"""

import hashlib
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pstudy.store import sweep as sweepmod
from pstudy.store import vocabulary
from pstudy.errors import StudyError

COUNTER_BACKENDS = ("auto", "likwid", "papi", "perf", "none")
LAUNCHER_KINDS = ("local", "slurm")  # how distributed variants start their ranks: mpirun -np R, srun -n R
SCALING_KINDS = ("strong", "weak")   # model.B is the global batch (strong) or each rank's (weak)
REGRESS_METRICS = ("time", "instructions")  # perfstudy regress: wall-clock times, or instruction counts
# the kinds of key whose value is one of a list
ENUMERATIONS = {"launcher": LAUNCHER_KINDS, "scaling": SCALING_KINDS, "metric": REGRESS_METRICS}
PROC_BIND_VALUES = ("", "false", "true", "close", "spread", "master", "primary")
ABSTRACT_PLACES = ("threads", "cores", "sockets", "ll_caches", "numa_domains")
DEFAULT_BINARY = "{build_dir}/{compiler}/{kernels}/gpt2-{variant}"
# `make avx2`'s trees (-march=native replaced by -mavx2 -mfma): run.binary for a sweep of them, and
# what bench/kernels.py and bench/variants.py run with --isa avx2
AVX2_BINARY = "{build_dir}/{compiler}/{kernels}-avx2/gpt2-{variant}"
MAX_THREADS = 4096  # above any node this study targets; a typo such as "1..5000000" stops here
MAX_RUNS = 10_000   # runs in one sweep unless run.max_runs says otherwise
MAX_TIMEOUT_S = 1_000_000  # run.timeout_s: 11.6 days
UNMEASURED_KEYS = ("max_runs",)

# table -> key -> (kind, default); a default of REQUIRED means the key must be given.
REQUIRED = object()
SCHEMA = {
    "model": {
        "config": ("str", None),
        "checkpoint": ("str", None),
        "data": ("str", None),
        "B": ("posint", REQUIRED),
        "T": ("posint", REQUIRED),
    },
    "run": {
        "name": ("str", None),
        "steps": ("posint", REQUIRED),
        "warmup": ("nonnegint", 1),
        "repetitions": ("posint", 3),
        "one_thread_repetitions": ("posint", None),  # runs of each 1-thread point; default: repetitions
        "timeout_s": ("posnumber", 600),
        "seed": ("nonnegint", None),
        "build_dir": ("str", "build"),
        "binary": ("str", DEFAULT_BINARY),
        "max_runs": ("posint", MAX_RUNS),
    },
    "sweep": {
        # distributed variants need a launcher, those on a runtime of their own its library: swept when named only
        "variants": ("variants", [v for v in vocabulary.VARIANTS if not vocabulary.is_distributed(v)
                                  and v not in vocabulary.RUNTIME_VARIANTS]),
        "compilers": ("compilers", ["gcc"]),
        "kernels": ("kernels", ["fast"]),
        "threads": ("threads", [1]),
        # chunked variants: a number, "auto" (the binary chooses it for its thread count), or a list
        "batch_subsize": ("chunklist", [1]),
        "token_chunk": ("chunklist", None),   # default: [T], one chunk per sequence
        "tile_columns": ("chunklist", ["auto"]),      # output columns per tile of the products
        "tile_in_channels": ("chunklist", ["auto"]),  # input channels per weight-gradient tile
        "tile_sequences": ("chunklist", ["auto"]),    # sequences per row chunk of the products
        "tiles_per_product": ("chunklist", ["auto"]), # tiles each product is cut into (not with tile_columns)
        "ranks": ("posintlist", [1]),         # distributed variants only: processes per run
        "starpu_sched": ("schedulers", None), # variants on StarPU only: STARPU_SCHED; default: StarPU's own
        # distributed variants only, each swept against its other values: the binary's option; default its own
        **{key: ("distributed", None) for key in vocabulary.DISTRIBUTED_KEYS},
        "scaling": ("scaling", "strong"),     # distributed: model.B global (strong) or per rank (weak)
    },
    "launcher": {
        "kind": ("launcher", "local"),        # local: mpirun -np R; slurm: srun -n R (inside an allocation)
        "command": ("str", None),             # the launcher program; default mpirun or srun
        "args": ("strlist", []),              # extra arguments after the launcher's own
    },
    "placement": {
        "proc_bind": ("proc_bind", "close"),
        "places": ("places", "cores"),
    },
    "counters": {
        "backend": ("backend", "none"),
    },
    "analysis": {
        "trace": ("bool", True),      # pass --trace to every run (per-kernel records for the roofline)
        "ceilings": ("bool", True),   # measure STREAM and peak FLOP/s at the sweep's thread counts
        "roofline": ("bool", True),   # `report` adds the roofline analysis and verdict
        "sensitivity": ("bool", False),  # after the sweep, the bandwidth-interference experiment
        "cachesim": ("bool", False),     # after the sweep, simulated cache traffic under valgrind
        "peak_beside": ("bool", False),  # right before and after each run, peak FLOP/s per thread, placed as the run
    },
    "sensitivity": {                  # the bandwidth-interference experiment (pstudy.sensitivity)
        "levels": ("dutylist", [0.25, 0.5, 1.0]),   # the thief's duty cycles (0 < d <= 1)
        "modes": ("thiefmodes", ["dram", "cache"]),
        "repetitions": ("posint", 5),               # paired repetitions of every condition
    },
    "cachesim": {                     # simulated cache traffic (pstudy.cachesim), on a small model
        "config": ("str", "small"),
        "B": ("posint", 4),
        "T": ("posint", 64),
        "steps": ("posint", 2),
        "caches": ("str", ""),           # "I1=size,assoc,line D1=... LL=...": instead of sysfs (pstudy.cachesim)
    },
    "regress": {                      # read by perfstudy regress only; --metric and --threshold override
        "metric": ("metric", "time"),
        "threshold": ("fraction", None),  # default: 0.05 for time, 0.01 for instructions
    },
}
# tables and keys left out of the digest while they have their default: added after sweeps were
# made, they change no sweep measurement, so that adding them does not orphan older directories
DIGEST_OPTIONAL = {("analysis", "sensitivity"), ("analysis", "cachesim"), ("analysis", "peak_beside"),
                   ("run", "one_thread_repetitions"),
                   ("sensitivity", None),
                   ("cachesim", None), ("regress", None)}


@dataclass
class Study:
    path: str                 # the file as given
    name: str
    model: dict               # config|checkpoint, data, B, T
    run: dict                 # steps, warmup, repetitions, timeout_s, seed, build_dir, binary
    sweep: dict               # variants, compilers, kernels, threads, batch_subsize, token_chunk, tile_columns,
                              # tile_in_channels, tile_sequences, tiles_per_product, ranks, scaling,
                              # starpu_sched, update, collective, overlap, comm_threads
    placement: dict           # proc_bind, places
    counters: dict            # backend
    analysis: dict = field(default_factory=lambda: {"trace": True, "ceilings": True, "roofline": True,
                                                    "sensitivity": False, "cachesim": False,
                                                    "peak_beside": False})
    sensitivity: dict = field(default_factory=lambda: _defaults("sensitivity"))
    cachesim: dict = field(default_factory=lambda: _defaults("cachesim"))
    launcher: dict = field(default_factory=lambda: {"kind": "local", "command": None, "args": []})
    regress: dict = field(default_factory=lambda: _defaults("regress"))  # metric, threshold
    text: str = field(repr=False, default="")  # the file's text, kept for meta.json

    def as_dict(self):
        """The config as run: every key with its resolved value (defaults filled in, threads expanded)."""
        sweep = dict(self.sweep)
        distributed = any(vocabulary.is_distributed(v) for v in sweep["variants"])
        if not distributed:  # keys that change nothing here are left out: older configs keep their digest
            for key in ("ranks", "scaling"):
                sweep.pop(key, None)
        for key in ("starpu_sched",) + vocabulary.DISTRIBUTED_KEYS:  # likewise, where no config names them
            if sweep.get(key) is None:
                sweep.pop(key, None)
        out = {"model": self.model, "run": self.run, "sweep": sweep,
               "placement": self.placement, "counters": self.counters, "analysis": self.analysis,
               "sensitivity": self.sensitivity, "cachesim": self.cachesim, "regress": self.regress}
        if distributed:
            out["launcher"] = self.launcher
        return out

    def digest(self):
        """Hash of the resolved config; a results directory is resumed only when it matches. Keys
        that change no measurement (run.max_runs, a guard) are left out, so adding one does not
        orphan the directories of earlier sweeps."""
        resolved = self.as_dict()
        resolved["run"] = {k: v for k, v in self.run.items() if k not in UNMEASURED_KEYS}
        for table, key in DIGEST_OPTIONAL:
            if key is None and resolved[table] == _defaults(table):
                del resolved[table]
            elif key is not None and resolved[table].get(key) == SCHEMA[table][key][1]:
                resolved[table] = {k: v for k, v in resolved[table].items() if k != key}
        blob = json.dumps(resolved, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def _defaults(table):
    return {k: (list(d) if isinstance(d, list) else d) for k, (_, d) in SCHEMA[table].items()}


def resolve_path(arg, configs_dir):
    """CONFIG may be a path or a bare name of a file in configs/ ("quick" -> configs/quick.toml)."""
    p = Path(arg)
    if p.exists() or p.suffix == ".toml" or os.sep in arg:
        return p
    candidate = Path(configs_dir) / f"{arg}.toml"
    return candidate if candidate.exists() else p


def load(path, cpu_count=None):
    """Read and check one config file; returns a Study or raises StudyError."""
    path = str(path)
    text, raw = read_toml(path, "config file")
    return from_dict(raw, path, text, cpu_count or os.cpu_count() or 1)


def read_toml(path, what):
    """(text, parsed table) of a TOML file; StudyError naming the file when it is missing ("no such
    WHAT"), unreadable or not TOML. Configs and machine files are read through it."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise StudyError(f"{path}: no such {what}") from None
    except OSError as err:
        raise StudyError(f"{path}: cannot read the {what}: {err.strerror}") from None
    try:
        text = data.decode("utf-8")  # TOML is UTF-8, whatever the locale says
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise StudyError(f"{path}: line {line}: not UTF-8 (byte 0x{data[err.start]:02x}); TOML files are UTF-8") \
            from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise StudyError(f"{path}: not valid TOML: {err}") from None


def from_dict(raw, path, text="", cpu_count=1):
    for table, value in raw.items():
        if table not in SCHEMA:
            raise StudyError(f"{path}: {table}: unknown table (known: {', '.join(SCHEMA)})")
        if not isinstance(value, dict):
            raise StudyError(f"{path}: {table}: expected a table [{table}], got a {type(value).__name__}")
    resolved = {}
    for table, keys in SCHEMA.items():
        given = raw.get(table, {})
        for key in given:
            if key not in keys:
                raise StudyError(f"{path}: {table}.{key}: unknown key (known in [{table}]: {', '.join(keys)})")
        out = {}
        for key, (kind, default) in keys.items():
            name = f"{table}.{key}"
            if key in given:
                out[key] = check(kind, given[key], path, name, cpu_count)
            elif default is REQUIRED:
                raise StudyError(f"{path}: {name}: missing (required)")
            else:
                out[key] = list(default) if isinstance(default, list) else default
        resolved[table] = out

    model, run, sweep = resolved["model"], resolved["run"], resolved["sweep"]
    if (model["config"] is None) == (model["checkpoint"] is None):
        raise StudyError(f"{path}: model.config: give exactly one of model.config (a named size such as "
                         "\"d12\") and model.checkpoint (a weights file)")
    if sweep["token_chunk"] is None:
        sweep["token_chunk"] = [model["T"]]
    # chunks of more sequences or tokens than the batch has: refused here, naming the key (the
    # binaries would refuse each run)
    for key, limit in (("batch_subsize", "B"), ("token_chunk", "T"), ("tile_sequences", "B")):
        for value in sweep[key]:
            if value != "auto" and value > model[limit]:
                raise StudyError(f"{path}: sweep.{key}: {value} is larger than model.{limit} = {model[limit]}")
    # both set the products' tile widths: the binaries refuse a run given both
    if any(v != "auto" for v in sweep["tiles_per_product"]) and any(v != "auto" for v in sweep["tile_columns"]):
        raise StudyError(f"{path}: sweep.tiles_per_product: numbers here cannot be swept with numbers in "
                         "sweep.tile_columns (each sets the products' tile widths; give the other \"auto\")")
    for key in vocabulary.DISTRIBUTED_KEYS:
        if sweep[key] is not None and not any(vocabulary.is_distributed(v) for v in sweep["variants"]):
            raise StudyError(f"{path}: sweep.{key}: applies to the distributed variants "
                             f"({', '.join(vocabulary.DISTRIBUTED_VARIANTS)}), and sweep.variants names none")
    if any(vocabulary.is_distributed(v) for v in sweep["variants"]) and sweep["scaling"] == "strong":
        for ranks in sweep["ranks"]:
            if ranks > model["B"]:
                raise StudyError(f"{path}: sweep.ranks: {ranks} ranks cannot share a global batch of model.B = "
                                 f"{model['B']} sequences (strong scaling: at least one each; or sweep.scaling = "
                                 "\"weak\")")
    if "{variant}" not in run["binary"]:
        raise StudyError(f"{path}: run.binary: the template must contain {{variant}} (got \"{run['binary']}\")")
    try:
        run["binary"].format(build_dir="b", compiler="c", kernels="k", variant="v")
    except (KeyError, IndexError, ValueError) as err:
        raise StudyError(f"{path}: run.binary: bad template \"{run['binary']}\" (fields: build_dir, compiler, "
                         f"kernels, variant): {err}") from None
    if run["name"] is None:
        run["name"] = Path(path).stem
    if not re.fullmatch(r"[A-Za-z0-9._-]+", run["name"]):
        raise StudyError(f"{path}: run.name: \"{run['name']}\" must be letters, digits, '.', '_' or '-' "
                         "(it becomes part of a directory name)")
    study = Study(path=path, name=run["name"], model=model, run=run, sweep=sweep,
                  placement=resolved["placement"], counters=resolved["counters"], analysis=resolved["analysis"],
                  sensitivity=resolved["sensitivity"], cachesim=resolved["cachesim"],
                  launcher=resolved["launcher"], regress=resolved["regress"], text=text)
    runs = sum(sweepmod.repetitions_of(study, p) for p in sweepmod.points(study))
    if runs > run["max_runs"]:
        raise StudyError(f"{path}: sweep: {runs} runs is more than run.max_runs = {run['max_runs']} "
                         "(raise run.max_runs if this is meant)")
    return study


def check(kind, value, path, name, cpu_count):
    """Check one value against its kind; returns the normalised value."""
    def bad(expected):
        return StudyError(f"{path}: {name}: expected {expected}, got {value!r}")

    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)

    if kind == "str":
        if not isinstance(value, str) or not value:
            raise bad("a non-empty string")
        return value
    if kind == "posint":
        if not is_int(value) or value <= 0:
            raise bad("a positive integer")
        return value
    if kind == "nonnegint":
        if not is_int(value) or value < 0:
            raise bad("a non-negative integer")
        return value
    if kind == "posnumber":
        # finite and within what a wait can take (an epoll timeout in ms is an int): inf or 1e300
        # would pass a plain "> 0" and then break the first run's wait
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT_S:
            raise bad(f"a positive number of seconds, at most {MAX_TIMEOUT_S:,}")
        return value
    if kind == "posintlist":
        items = value if isinstance(value, list) else [value]
        if not items or not all(is_int(v) and v > 0 for v in items):
            raise bad("a positive integer or a non-empty list of them")
        return sorted(set(items))
    if kind == "chunklist":  # positive integers and "auto", the numbers first
        items = value if isinstance(value, list) else [value]
        if not items or not all((is_int(v) and v > 0) or v == "auto" for v in items):
            raise bad('a positive integer, "auto", or a non-empty list of them')
        return sorted(set(v for v in items if v != "auto")) + (["auto"] if "auto" in items else [])
    if kind in ("variants", "compilers", "kernels"):
        allowed = {"variants": vocabulary.VARIANTS, "compilers": vocabulary.COMPILERS,
                   "kernels": vocabulary.KERNEL_SETS}[kind]
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(v, str) for v in items):
            raise bad(f"a non-empty list of {', '.join(allowed)}")
        for v in items:
            if v not in allowed:
                raise StudyError(f"{path}: {name}: unknown value \"{v}\" (allowed: {', '.join(allowed)})")
        if len(set(items)) != len(items):
            raise StudyError(f"{path}: {name}: a value is repeated in {items}")
        return [v for v in allowed if v in items]  # canonical order
    if kind == "schedulers":  # StarPU's scheduler names, each once, in the config's order
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(v, str) for v in items):
            raise bad("a StarPU scheduler name (\"eager\", \"lws\", \"dmda\", ...) or a non-empty list of them")
        for v in items:
            if v not in vocabulary.STARPU_SCHEDULERS:
                raise StudyError(f"{path}: {name}: unknown StarPU scheduler \"{v}\" (known: "
                                 f"{', '.join(vocabulary.STARPU_SCHEDULERS)})")
        if len(set(items)) != len(items):
            raise StudyError(f"{path}: {name}: a value is repeated in {items}")
        return list(items)
    if kind == "distributed":  # one of a distributed knob's values, or a list of them, each once
        key = name.split(".")[-1]
        allowed = vocabulary.DISTRIBUTED_OPTIONS[key].values
        items = value if isinstance(value, list) else [value]
        if key in vocabulary.INTEGER_KEYS:
            one = f"an integer from {allowed[0]} to {allowed[-1]}"
            fits = all(is_int(v) and v in allowed for v in items)
        else:
            one = " or ".join(f'"{v}"' for v in allowed)
            fits = all(isinstance(v, str) and v in allowed for v in items)
        if not items or not fits:
            raise bad(one + " or a non-empty list of them")
        if len(set(items)) != len(items):
            raise StudyError(f"{path}: {name}: a value is repeated in {items}")
        return list(items)
    if kind == "dutylist":
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1
                                for v in items):
            raise bad("a duty cycle in (0, 1] or a non-empty list of them")
        return sorted(set(float(v) for v in items))
    if kind == "thiefmodes":
        items = value if isinstance(value, list) else [value]
        if not items or not all(v in ("dram", "cache") for v in items) or len(set(items)) != len(items):
            raise bad('a non-empty list of "dram" and "cache", each once')
        return [m for m in ("dram", "cache") if m in items]
    if kind == "threads":
        return parse_threads(value, path, name, cpu_count)
    if kind == "proc_bind":
        if not isinstance(value, str) or value.lower() not in PROC_BIND_VALUES:
            raise bad(f"one of {', '.join(repr(v) for v in PROC_BIND_VALUES)} ('' leaves OMP_PROC_BIND unset)")
        return value.lower()
    if kind == "places":
        ok = isinstance(value, str) and (value == "" or value.split("(")[0] in ABSTRACT_PLACES
                                          or re.fullmatch(r"[{}0-9,:\s!-]+", value))
        if not ok:
            raise bad(f"'' (unset), one of {', '.join(ABSTRACT_PLACES)} (optionally with a count, \"cores(2)\"), "
                      "or an explicit list such as \"{0},{1}\"")
        return value
    if kind == "strlist":
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise bad("a list of non-empty strings")
        return value
    if kind in ENUMERATIONS:
        if value not in ENUMERATIONS[kind]:
            raise bad(f"one of {', '.join(ENUMERATIONS[kind])}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if kind == "fraction":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 10:
            raise bad("a fraction such as 0.01 (1%)")
        return float(value)
    if kind == "backend":
        if value not in COUNTER_BACKENDS:
            raise bad(f"one of {', '.join(COUNTER_BACKENDS)}")
        return value
    raise AssertionError(f"schema kind {kind}")


def parse_threads(value, path, name, cpu_count):
    """Thread counts: an integer, "max", a range "A..B" / "A..max", or a list of any of these.

    "max" is this machine's core count (os.cpu_count()); the expanded list is what meta.json records.
    """
    def bad(why):
        return StudyError(f"{path}: {name}: {why} (expected an integer, \"max\", a range like \"1..max\" "
                          "or \"1..8\", or a list of these)")

    def within_limit(count):
        if count > MAX_THREADS:
            raise bad(f"thread count {count} is above the limit of {MAX_THREADS}")
        return count

    def one(item):
        if isinstance(item, int) and not isinstance(item, bool):
            if item <= 0:
                raise bad(f"thread count {item} is not positive")
            return [within_limit(item)]
        if not isinstance(item, str):
            raise bad(f"{item!r} is not a thread count")
        text = item.strip()
        m = re.fullmatch(r"(\d+|max)\s*\.\.\s*(\d+|max)", text)
        if m:
            lo, hi = (cpu_count if s == "max" else int(s) for s in m.groups())
            if lo <= 0 or hi < lo:
                raise bad(f"empty or non-positive range \"{item}\"")
            return list(range(lo, within_limit(hi) + 1))
        if text == "max":
            return [cpu_count]
        if text.isdigit() and int(text) > 0:
            return [within_limit(int(text))]
        raise bad(f"cannot read \"{item}\"")

    items = value if isinstance(value, list) else [value]
    if not items:
        raise bad("empty list")
    counts = set()
    for item in items:
        counts.update(one(item))
    return sorted(counts)
