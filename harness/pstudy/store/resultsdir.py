"""The results layout, owned here: every file name, path and format of a results directory.

Layout of results/<date>-<commit>-<config>[-N]/:
    meta.json       the machine, code, build and config of the sweep (written at start, updated at end);
                    versioned ("schema"), built by new_meta() and read through Meta's accessors
    config.toml     the config file's text as run
    journal.jsonl   one JSON line per event: begin, run (one per finished run), interrupted, end
    runs/STEM.json  everything one run produced (point, status, error, info line, steps, stderr tail)
    traces/STEM.csv per-kernel records of a run made with --trace
    ops/VARIANT_COMPILER_KERNELS.json   a binary's --describe output (FLOPs and bytes per operation)
    counters/STEM.GROUP.csv             hardware-counter runs (likwid; .papi.txt, .perf.csv)
    ceilings.json   STREAM and peak-FLOP/s ceilings measured with the sweep (pstudy.ceilings' format)
    graphs/STEM.json    a binary's --describe-graph output for a point (pstudy.taskgraph's format),
                        written by `predict` when it first needs it; STEM is point_stem(point);
                        beside it STEM.origin.json (the binary and its SHA-256) and STEM.json.npz
                        (the checked graph in arrays, pstudy.taskgraph's cache)
    predict-MACHINE/    `predict` output for a machine description: prediction.csv, validation.csv,
                        figures (pstudy.simulate)
    steps.csv       one row per step of every successful run (warm-up steps flagged; docs/results.md)
    runs.csv        one row per run, failed ones included
    failures.csv    the failed runs with their errors
    summary.csv     one row per point: medians, CIs, speedups, efficiencies (a cache: `report`
                    recomputes it from steps.csv and runs.csv, the source of truth)
    efficiency.csv  one row per point: POP efficiency factors from the traces (pstudy.efficiency),
                    with efficiency_runs.csv, one row per traced run (`report` recomputes both)
    exports/paraver/STEM.prv|.pcf|.row  the trace of a run in Paraver's format (pstudy.traceformats)
    exports/perfetto/STEM.json          the same in Chrome JSON, for ui.perfetto.dev
                    `run` exports one representative run per point (pstudy.efficiency.representative_runs),
                    `perfstudy trace` any run
    sensitivity/    `perfstudy sensitivity` (or [analysis] sensitivity): the bandwidth-interference
                    experiment (pstudy.sensitivity): sensitivity.json, runs.csv, traces/STEM_MODE_dDUTY.csv,
                    per-kernel slowdowns and slopes, figures
    cachesim/       `perfstudy cachesim` (or [analysis] cachesim): simulated cache traffic per kernel
                    (pstudy.cachesim): cachesim.json, callgrind/*.out, cachesim_COMPILER_KERNELS.csv, figure
    .lock           held (fcntl.flock) by the process sweeping the directory; names that process
    .reserve        space set aside while a sweep runs, freed to record "failed" when the disk fills
STEM is a run's file stem, run_stem(point, repetition):
    <variant>_<compiler>_<kernels>_t<threads>_bs<batch_subsize|NA>_k<k|NA>[_R<ranks>][_U<update>][_C<collective>][_O<overlap>][_K<comm_threads>][_tc<tile_columns>_ti<tile_in_channels>][_ts<tile_sequences>][_tp<tiles_per_product>][_s<starpu_sched>]_r<repetition>
    (_R<ranks> for distributed variants only, _U, _C, _O and _K for those whose sweep names update,
    collective, overlap, comm_threads (vocabulary.DISTRIBUTED_OPTIONS' tags), _tc/_ti for chunked
    points with tile widths, _ts for chunked points with the products' row chunks, _tp for those
    with the tiles per product, _s for points with a StarPU scheduler: a point from before a key
    has no part for it; a chunk value the binary chooses, AUTO, is written "auto")
Every file is written to a temporary name and renamed into place, so a crash never leaves a half
file under a real name. A run counts as done only when its runs/STEM.json exists and the journal
says so; anything else is redone on resume.
"""

import datetime
import gzip
import json
import lzma
import math
import os
import re
import tempfile
from pathlib import Path

from pstudy import common
from pstudy.store import vocabulary
from pstudy.errors import StudyError

JOURNAL = "journal.jsonl"
LOCK = ".lock"
RESERVE = ".reserve"
RESERVE_BYTES = 256 * 1024  # room for meta.json with its error when the disk is full
META = "meta.json"
CONFIG_COPY = "config.toml"
CEILINGS = "ceilings.json"
RUNS_DIR, TRACES_DIR, OPS_DIR, COUNTERS_DIR, GRAPHS_DIR = "runs", "traces", "ops", "counters", "graphs"
PREDICT_PREFIX = "predict-"
STEPS_CSV, RUNS_CSV, FAILURES_CSV, SUMMARY_CSV = "steps.csv", "runs.csv", "failures.csv", "summary.csv"
EFFICIENCY_CSV, EFFICIENCY_RUNS_CSV = "efficiency.csv", "efficiency_runs.csv"
THREAD_PEAKS_CSV = "thread_peaks.csv"
EXPORTS_DIR = "exports"
EXPORT_FORMATS = ("paraver", "perfetto")
# in plots/<results name>/ (written by `report`): the page, and the figures it embeds beside the others
REPORT_HTML = "report.html"
KEYS = vocabulary.POINT_KEYS


# ---------------------------------------------------------------------------------------------
# names

def point_stem(point):
    """<variant>_<compiler>_<kernels>_t<threads>_bs<bs|NA>_k<k|NA>[_R<ranks>][_U..][_C..][_O..][_K..][_tc<tc>_ti<ti>][_ts<ts>][_tp<tp>]
    of a point (a Point, or a point key tuple); _R only for distributed points, _U<update>,
    _C<collective>, _O<overlap> and _K<comm_threads> only for those that set them, _tc and _ti only for points with tile widths, _ts only for points with tile_sequences,
    _tp only for points with tiles_per_product, _s<starpu_sched> only for points with a StarPU
    scheduler."""
    point = vocabulary.as_point(point)
    bs, k, tc, ti, ts, tp = point.chunks()
    sched = vocabulary.starpu_sched_of(point)

    def text(v):
        return "NA" if v is None else vocabulary.chunk_text(v)
    return (f"{point.variant}_{point.compiler}_{point.kernels}_t{point.threads}_bs{text(bs)}_k{text(k)}"
            + ("" if point.ranks is None else f"_R{point.ranks}")
            + "".join(f"_{vocabulary.DISTRIBUTED_OPTIONS[key].tag}{value}"
                      for key, value in vocabulary.distributed_settings(point).items())
            + ("" if tc is None and ti is None else f"_tc{text(tc)}_ti{text(ti)}")
            + ("" if ts is None else f"_ts{text(ts)}") + ("" if tp is None else f"_tp{text(tp)}")
            + ("" if sched is None else f"_s{sched}"))


def run_stem(point, repetition):
    """The file stem of one run: its record, its trace and its counter files share it."""
    return f"{point_stem(point)}_r{repetition}"


# the distributed knobs' parts, _U<update> to _K<comm_threads>, in DISTRIBUTED_OPTIONS' order
_KNOB_PARTS = "".join(f"(?:_{knob.tag}(?P<{key}>{'[0-9]+' if key in vocabulary.INTEGER_KEYS else '[a-z]+'}))?"
                      for key, knob in vocabulary.DISTRIBUTED_OPTIONS.items())
RUN_STEM = re.compile(r"(?P<variant>[a-z][a-z0-9]*)_(?P<compiler>[a-z0-9]+)_(?P<kernels>[a-z0-9]+)"
                      r"_t(?P<threads>\d+)_bs(?P<bs>\d+|NA|auto)_k(?P<k>\d+|NA|auto)(?:_R(?P<ranks>\d+))?"
                      + _KNOB_PARTS +
                      r"(?:_tc(?P<tc>\d+|NA|auto)_ti(?P<ti>\d+|NA|auto))?(?:_ts(?P<ts>\d+|NA|auto))?"
                      r"(?:_tp(?P<tp>\d+|NA|auto))?(?:_s(?P<sched>[a-z][a-z0-9_-]*))?_r(?P<rep>\d+)")


def parse_run_stem(stem):
    """(point key, repetition) of a run stem, or None when the name is not one."""
    m = RUN_STEM.fullmatch(stem)
    if not m:
        return None
    d = m.groupdict()

    def value(text):
        return None if text in (None, "NA") else vocabulary.AUTO if text == "auto" else int(text)
    key = vocabulary.Point(d["variant"], d["compiler"], d["kernels"], int(d["threads"]), value(d["bs"]),
                           value(d["k"]), value(d["ranks"]), value(d["tc"]), value(d["ti"]), value(d["ts"]),
                           value(d["tp"]), d["sched"],
                           *(value(d[key]) if key in vocabulary.INTEGER_KEYS else d[key]
                             for key in vocabulary.DISTRIBUTED_KEYS))
    return key, int(d["rep"])


def ops_stem(variant, compiler, kernels):
    return f"{variant}_{compiler}_{kernels}"


# ---------------------------------------------------------------------------------------------
# paths

def export_path(outdir, fmt, stem):
    """The file a run's trace is exported to in `outdir`: for Paraver the stem of its .prv, .pcf and
    .row (pstudy.store.traceformats adds the suffixes), for Perfetto STEM.json."""
    return Path(outdir) / (stem if fmt == "paraver" else f"{stem}.json")


SENSITIVITY_DIR, CACHESIM_DIR = "sensitivity", "cachesim"


class ResultsDir:
    """One results directory and every path in it: the one place that joins a directory to the
    names above, so that no caller builds a path of the layout itself. It stands for its path
    (os.fspath, str, `/`), so functions that take a directory take it too."""

    def __init__(self, path):
        self.path = Path(path.path if isinstance(path, ResultsDir) else path)

    def __fspath__(self):
        return str(self.path)

    def __str__(self):
        return str(self.path)

    def __repr__(self):
        return f"ResultsDir({str(self.path)!r})"

    def __truediv__(self, name):
        return self.path / name

    def __eq__(self, other):
        return isinstance(other, ResultsDir) and other.path == self.path

    def __hash__(self):
        return hash(self.path)

    @property
    def name(self):
        return self.path.name

    # the files of the sweep itself
    meta = property(lambda self: self.path / META)
    config_copy = property(lambda self: self.path / CONFIG_COPY)
    journal = property(lambda self: self.path / JOURNAL)
    lock = property(lambda self: self.path / LOCK)
    reserve = property(lambda self: self.path / RESERVE)
    steps_csv = property(lambda self: self.path / STEPS_CSV)
    runs_csv = property(lambda self: self.path / RUNS_CSV)
    failures_csv = property(lambda self: self.path / FAILURES_CSV)
    summary_csv = property(lambda self: self.path / SUMMARY_CSV)
    efficiency_csv = property(lambda self: self.path / EFFICIENCY_CSV)
    efficiency_runs_csv = property(lambda self: self.path / EFFICIENCY_RUNS_CSV)
    thread_peaks_csv = property(lambda self: self.path / THREAD_PEAKS_CSV)
    runs_dir = property(lambda self: self.path / RUNS_DIR)
    traces_dir = property(lambda self: self.path / TRACES_DIR)
    counters_dir = property(lambda self: self.path / COUNTERS_DIR)
    # what the analysis adds beside the runs
    ceilings = property(lambda self: self.path / CEILINGS)
    sensitivity = property(lambda self: self.path / SENSITIVITY_DIR)
    cachesim = property(lambda self: self.path / CACHESIM_DIR)

    def run_record(self, point, repetition):
        return self.path / RUNS_DIR / f"{run_stem(point, repetition)}.json"

    def trace(self, point, repetition):
        return self.path / TRACES_DIR / f"{run_stem(point, repetition)}.csv"

    def exports(self, fmt):
        """exports/<fmt>/ (fmt: paraver or perfetto)."""
        return self.path / EXPORTS_DIR / fmt

    def ops(self, variant, compiler, kernels, point=None):
        """ops/<variant>_<compiler>_<kernels>.json: the step a binary describes (--describe); with
        `point`, that point's own description where it has one (point_ops), which takes precedence."""
        if point is not None and self.point_ops(point).exists():
            return self.point_ops(point)
        return self.path / OPS_DIR / f"{ops_stem(variant, compiler, kernels)}.json"

    def point_ops(self, point):
        """ops/<point stem>.json: the step as a chunked variant describes it at one point's threads and
        chunking, written only where it differs from its binary's ops file (the pack operations are
        there only where the chunking cuts the products' rows)."""
        return self.path / OPS_DIR / f"{point_stem(point)}.json"

    def counters(self, point, repetition, suffix):
        """counters/<run stem>.<suffix>: suffix is GROUP.csv (likwid), papi.txt or perf.csv."""
        return self.path / COUNTERS_DIR / f"{run_stem(point, repetition)}.{suffix}"

    def counter_files(self, point):
        """[(repetition, group, path)] of the likwid counter files of a point."""
        cdir = self.path / COUNTERS_DIR
        out = []
        if cdir.is_dir():
            prefix = point_stem(point)
            for path in sorted(cdir.glob(f"{prefix}_r*.*.csv")):
                m = re.fullmatch(re.escape(prefix) + r"_r(\d+)\.([A-Z0-9]+)\.csv", path.name)
                if m:
                    out.append((int(m.group(1)), m.group(2), path))
        return out

    def graph(self, point, batch=None):
        """graphs/<point stem>.json: the task graph of a point's binary (--describe-graph); with `batch`,
        graphs/<point stem>_B<batch>.json: the same binary on that batch size (a rank's share of the
        batch, for distributed predictions)."""
        return self.path / GRAPHS_DIR / (f"{point_stem(point)}" + ("" if batch is None else f"_B{batch}") + ".json")

    def graph_origin(self, graph_path):
        """graphs/<graph file's stem>.origin.json: which binary described a graph file, and its
        SHA-256 then (so that a later build is noticed)."""
        p = Path(graph_path)
        return p.with_name(p.name.removesuffix(".json") + ".origin.json")

    @property
    def graphs(self):
        """graphs/: the task graphs `predict` describes and keeps."""
        return self.path / GRAPHS_DIR

    def graph_origins(self):
        """Every graph origin record under graphs/."""
        return sorted(self.graphs.glob("*.origin.json")) if self.graphs.is_dir() else []

    def predict(self, machine_name):
        """predict-<machine name>/: what `predict` writes for one target machine."""
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", machine_name).strip("-") or "machine"
        return self.path / f"{PREDICT_PREFIX}{safe}"

    def sensitivity_trace(self, point, mode, duty, repetition):
        """sensitivity/traces/<run stem>_<mode>_d<duty>.csv: one run of the interference experiment
        (mode none with duty 0 is the run without a thief)."""
        return self.sensitivity / TRACES_DIR / f"{run_stem(point, repetition)}_{mode}_d{duty:g}.csv"

    def traces(self):
        """[(path, point key, repetition)] of the trace files, in name order; StudyError naming a
        file whose name is not a run stem. A trace may be gzipped (<stem>.csv.gz: a results directory
        kept in the repository, docs/studies/); its readers (pandas) decompress it by its name."""
        tdir = self.path / TRACES_DIR
        found = []
        if tdir.is_dir():
            for path in sorted([*tdir.glob("*.csv"), *tdir.glob("*.csv.gz")]):
                stem = path.name[:-len(".csv.gz")] if path.name.endswith(".gz") else path.stem
                parsed = parse_run_stem(stem)
                if parsed is None:
                    raise StudyError(f"{path}: name does not follow "
                                     "<variant>_<compiler>_<kernels>_t<threads>_bs<bs>_k<k>_r<rep>.csv")
                if path.name.endswith(".gz") and (tdir / f"{stem}.csv").exists():
                    raise StudyError(f"{path}: the run's trace is also {tdir / (stem + '.csv')}; one run's trace "
                                     "read twice would be counted twice (keep one)")
                found.append((path, *parsed))
        return found

    def traces_by_point(self):
        """{point key: [its runs' trace files]} (traces())."""
        out = {}
        for path, key, _rep in self.traces():
            out.setdefault(key, []).append(path)
        return out


# ---------------------------------------------------------------------------------------------
# meta.json

META_SCHEMA = 2  # directories written before the field existed read as schema 1 (same keys)
STATISTICS = {"centre": "median of the measured steps of all repetitions, pooled",
              "ci": "95% distribution-free order-statistic (binomial) interval for the median; "
                    "exact coverage in summary.csv column ci_coverage",
              "speedup_ci": "interval arithmetic on the CIs of base and point medians"}
WARMUP_POLICY = ("warm-up steps are kept in steps.csv with warmup=true and left out of every statistic; "
                 "measured steps have warmup=false")


def new_meta(name, study, git, seed, binaries, facts, order, command, started, **extra):
    """meta.json of a new results directory: what makes the sweep reproducible. `facts` are the
    compilers, CPU, system and software found when it starts (pstudy.measure.provenance.facts);
    `extra` adds the fields of one kind of directory (a sweep's identity and counters, a regress
    side's role)."""
    return {
        "schema": META_SCHEMA,
        "name": name,
        "git": git,
        "started": started,
        "finished": None,
        "status": "running",
        "command": command,
        "config_file": str(study.path),
        "config": study.as_dict(),
        "seed": seed,
        "order": order,
        "warmup": WARMUP_POLICY,
        "statistics": STATISTICS,
        "placement": {"OMP_PROC_BIND": study.placement["proc_bind"] or "(unset)",
                      "OMP_PLACES": study.placement["places"] or "(unset)"},
        "binaries": {"/".join(k): v for k, v in binaries.items()},
        "compilers": facts["compilers"],
        "omp_runtime": {},
        "cpu": facts["cpu"],
        "system": facts["system"],
        "software": facts["software"],
        "topology": facts["topology"],
        "doctor": facts.get("doctor"),
        "config_text": study.text,
        **extra,
    }


class Meta(dict):
    """A meta.json as read back: the dict itself, plus typed accessors for what readers need, so
    that no reader guesses key paths. Accessors raise StudyError naming the file and the key."""

    def __init__(self, data, path):
        super().__init__(data)
        self.path = Path(path)

    def _table(self, *keys):
        value = self
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
            if value is None:
                return {}
        if not isinstance(value, dict):
            raise StudyError(f"{self.path}: {'.'.join(keys)}: expected a table, got {value!r}")
        return value

    def table(self, *keys):
        """The table at a key path ({} where absent); StudyError naming the file where it is not one."""
        return self._table(*keys)

    @property
    def schema(self):
        return self.get("schema", 1)

    @property
    def config(self):
        """The config as run (every key resolved)."""
        return self._table("config")

    # the tables of the config as run
    model = property(lambda self: self._table("config", "model"))
    run_settings = property(lambda self: self._table("config", "run"))
    sweep = property(lambda self: self._table("config", "sweep"))
    analysis = property(lambda self: self._table("config", "analysis"))

    @property
    def warmup(self):
        """Warm-up steps of every run (config.run.warmup; the config's default, 1, when absent)."""
        value = self.run_settings.get("warmup", 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise StudyError(f"{self.path}: config.run.warmup: expected a non-negative integer, got {value!r}")
        return value

    @property
    def commit(self):
        return self._table("git").get("commit")

    @property
    def dirty(self):
        return bool(self._table("git").get("dirty"))

    @property
    def machine(self):
        """{"cpu": ..., "system": ...} as recorded when the directory was made."""
        return {"cpu": self._table("cpu"), "system": self._table("system")}

    @property
    def status(self):
        return self.get("status")

    def display_name(self, directory):
        return self.get("name") or Path(directory).name


def write_meta(directory, meta):
    write_json(ResultsDir(directory).meta, dict(meta))
STEP_COLUMNS = KEYS + ["repetition", "step", "warmup", "forward_s", "backward_s", "update_s", "step_s", "loss",
                       *vocabulary.DISTRIBUTED_STEP_FIELDS, *vocabulary.DISTURBANCE_STEP_FIELDS]
RUN_COLUMNS = KEYS + ["repetition", "order", "status", "error", "exit_code", "wall_s", "omp_runtime",
                      "proc_bind", "places", "tasks_per_step", "num_parameters",
                      "peak_beside_gflops", "peak_beside_slowest_thread", "peak_beside_slowest_time",
                      "peak_after_gflops", "peak_after_slowest_thread", "peak_after_slowest_time",
                      "steal_s", "involuntary_switches"]
# thread_peaks.csv: the probes beside each run, one row per thread and probe (`[analysis] peak_beside`):
# `when` is "before" (right before the run) or "after" (right after it; records made before
# commit 14e033d have none)
THREAD_PEAK_COLUMNS = KEYS + ["repetition", "when", "thread", "cpu", "gflops", "time"]
PROBES = (("before", "peak_beside"), ("after", "peak_after"))  # thread_peaks.csv's `when`: the record's field
FAILURE_COLUMNS = KEYS + ["repetition", "status", "exit_code", "error", "wall_s"]


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()  # what open() would give; mkstemp's files are private (0600)


def atomic_write(path, text):
    """Write `text` (str, or bytes as they are) to `path` through a temporary file renamed into place."""
    def write(tmp):
        with open(tmp, "wb" if isinstance(text, bytes) else "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    atomic_output(path, write)


def atomic_savefig(fig, path, **options):
    """fig.savefig(path) through a temporary file renamed into place: an interrupted `report`
    never leaves a truncated figure under its final name."""
    fmt = Path(path).suffix.lstrip(".")
    atomic_output(path, lambda tmp: fig.savefig(tmp, format=fmt, **options))


def atomic_output(path, write):
    """Call write(tmp) on a temporary name beside `path`, then rename it to `path`; on any failure
    (an interrupt included) the temporary file is removed and `path` is untouched. A symlink at
    `path` is written through (its target replaced, the link kept); StudyError when what is there
    is not a regular file (a device, a FIFO, a directory): renaming over it would replace it."""
    path = regular_target(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.close(fd)
        os.chmod(tmp, FILE_MODE)
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def regular_target(path, option=None):
    """The file a write to `path` lands in: `path`, or the end of its symlinks (written through,
    never replaced). StudyError when something other than a regular file is there."""
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if target.exists() and not target.is_file():
        kind = ("a directory" if target.is_dir() else "a FIFO" if target.is_fifo() else
                "a device" if target.is_char_device() or target.is_block_device() else
                "a socket" if target.is_socket() else "not a regular file")
        shown = f"{path} (-> {target})" if target != path else str(path)
        raise StudyError(f"{option + ': ' if option else ''}{shown}: {kind}; the harness writes only regular files")
    return target


def results_directory_of(path):
    """The results directory (a directory with a meta.json) that `path` is in or is, else None."""
    path = Path(os.path.realpath(path))
    for p in (path, *path.parents):
        if (p / META).is_file():
            return p
    return None


def output_file(path, option, owned=()):
    """A file the user named for the harness to write (compare --csv, ceilings --out, ...), checked
    before any work: a regular file, new or existing (a symlink is written through), never one in a
    results directory, whose files are its sweep's, unless its name is one of `owned` (the names the
    harness itself keeps there). Returns the path to write, its symlinks resolved; StudyError
    naming the option and the path otherwise."""
    target = regular_target(path, option)
    if target.parent.exists() and not target.parent.is_dir():
        raise StudyError(f"{option}: {path}: {target.parent} is not a directory")
    inside = results_directory_of(target.parent) if target.parent.exists() else None
    if inside is not None and not (target.parent == inside and target.name in owned):
        raise StudyError(f"{option}: {path}: inside the results directory {inside}, whose files are its sweep's; "
                         "write it elsewhere")
    return target


# the subdirectories of a results directory that hold its measurements: never an output directory
MEASURED_DIRS = (RUNS_DIR, TRACES_DIR, OPS_DIR, COUNTERS_DIR, GRAPHS_DIR)


def output_dir(path, option):
    """A directory the user named for the harness to write its files in (predict --out, roofline
    --out, trace --out): a directory, new or existing, but not a results directory itself nor one
    of its measurement folders (runs/, traces/, ...), where a written file could replace a measured
    one. Each file written in it is still checked by atomic_output. Returns the path."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise StudyError(f"{option}: {path}: not a directory")
    real = Path(os.path.realpath(path))
    inside = results_directory_of(real if real.exists() else real.parent)
    if inside is not None:
        parts = real.relative_to(inside).parts
        if not parts or parts[0] in MEASURED_DIRS or parts[0].startswith("."):
            raise StudyError(f"{option}: {path}: {'is' if not parts else 'inside'} the results directory {inside}"
                             + (f"'s {parts[0]}/" if parts else "") + ", whose files are its sweep's; give another directory")
    return path


def write_json(path, obj):
    atomic_write(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def write_csv(path, frame):
    """frame as CSV (NA for missing values); compressed where the name ends in .gz (with no time stamp
    in the header) or .xz, so that the same table makes the same bytes (a committed recording's diff
    stays empty)."""
    text = frame.to_csv(index=False, na_rep="NA")
    atomic_write(path, compressed(path, text.encode()) if str(path).endswith((".gz", ".xz")) else text)


def compressed(path, data):
    """`data` compressed as `path`'s suffix says: .xz (a committed recording's largest tables: a
    third smaller than gzip) or .gz, with nothing in either that changes from one write to the next."""
    if str(path).endswith(".xz"):
        return lzma.compress(data, preset=9 | lzma.PRESET_EXTREME)
    return gzip.compress(data, compresslevel=9, mtime=0)


def reserve_space(directory):
    """Set RESERVE_BYTES aside in the directory (allocated, not sparse) for release_space()."""
    fd = os.open(ResultsDir(directory).reserve, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        os.posix_fallocate(fd, 0, RESERVE_BYTES)
    finally:
        os.close(fd)


def release_space(directory):
    try:
        os.unlink(ResultsDir(directory).reserve)
    except FileNotFoundError:
        pass


def read_meta(directory):
    path = ResultsDir(directory).meta
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise StudyError(f"{directory}: not a results directory (no {META})") from None
    except (OSError, ValueError) as err:
        raise StudyError(f"{path}: unreadable: {err}") from None
    if not isinstance(data, dict):
        raise StudyError(f"{path}: expected a JSON object, got {type(data).__name__}")
    schema = data.get("schema", 1)
    if not isinstance(schema, int) or schema > META_SCHEMA:
        raise StudyError(f"{path}: schema {schema!r} is newer than this harness reads ({META_SCHEMA})")
    return Meta(data, path)


def identity(study, git):
    """What must match for a directory to be resumed: the resolved config and the code."""
    return {"config_digest": study.digest(), "commit": git["commit_full"] or git["commit"],
            "dirty": git["dirty"], "changes_digest": git["changes_digest"]}


def new_directory(root, stem):
    """A new directory root/stem, or root/stem-2, -3, ... when taken: mkdir is atomic, so two
    processes never get the same one and an earlier one is never reused."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10000):
        path = root / (stem if n == 1 else f"{stem}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise StudyError(f"{root}: too many directories named {stem}-N")


def find_or_create(results_root, study, git, fresh=False):
    """The directory for this sweep: a matching earlier one (resume) or a new one (never reused).

    Returns (path, resumed)."""
    root = Path(results_root)
    root.mkdir(parents=True, exist_ok=True)
    want = identity(study, git)
    stem = f"{git['commit']}-{study.name}"
    if not fresh:
        candidates = sorted((d for d in root.iterdir() if d.is_dir() and f"-{stem}" in d.name),
                            key=lambda d: d.stat().st_mtime, reverse=True)
        for d in candidates:
            try:
                meta = read_meta(d)
            except StudyError:
                continue
            if meta.get("identity") == want:
                return d, True
    path = new_directory(root, f"{datetime.date.today().isoformat()}-{stem}")
    (path / RUNS_DIR).mkdir()
    return path, False


# ---------------------------------------------------------------------------------------------
# finding a results directory

def locate(arg):
    """A results directory from a path, a name in the results root, or "latest" (the most recently
    started sweep there); StudyError when it is none of these or has no meta.json."""
    path = Path(arg)
    root = common.results_root()
    if arg == "latest" and not path.exists():
        found = sorted((d for d in root.glob("*") if (d / META).is_file()), key=_started)
        if not found:
            raise StudyError(f"{root}: no results directories yet")
        return found[-1]
    if not path.exists() and os.sep not in arg and (root / arg).exists():
        path = root / arg
    if not path.is_dir():
        raise StudyError(f"{arg}: no such results directory")
    if not (path / META).is_file():
        raise StudyError(f"{arg}: not a results directory (no {META})")
    return path.resolve()  # "results/X/runs/.." is X, and its name is "X", not ".."


def _started(directory):
    try:
        return read_meta(directory).get("started") or ""
    except StudyError:
        return ""


def into_or_new(into, results_root_arg, name):
    """The directory a standalone experiment writes to: --into DIR (an existing directory, a sweep's,
    so that its report uses the result), else a new <results root>/<date-time>-<name>."""
    if into:
        directory = Path(into)
        if not directory.is_dir():
            raise StudyError(f"--into: {directory}: no such directory")
        return directory
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return new_directory(common.results_root(results_root_arg), f"{stamp}-{name}")


class Journal:
    def __init__(self, directory):
        self.path = ResultsDir(directory).journal

    def append(self, event, **fields):
        record = {"event": event, "time": datetime.datetime.now().isoformat(timespec="seconds"), **fields}
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def events(self):
        """The journal's records; a line that is not one (torn when the process died mid-write, or
        damaged: not UTF-8, not a JSON object) is ignored, and a run it recorded is redone."""
        out = []
        try:
            with open(self.path, "rb") as f:
                for line in f:
                    try:
                        event = json.loads(line.decode("utf-8"))
                    except ValueError:  # UnicodeDecodeError included
                        continue
                    if isinstance(event, dict):
                        out.append(event)
        except FileNotFoundError:
            pass
        return out


def progress(directory):
    """(runs done, of them failed) as the journal has them now, read only (a sweep may be
    writing the directory)."""
    last = {}
    for event in Journal(directory).events():
        if event.get("event") == "run" and isinstance(event.get("run_id"), str):
            last[event["run_id"]] = event.get("status")
    return len(last), sum(1 for s in last.values() if s != "ok")


def completed_runs(directory, retry_failed=False):
    """run_id -> status for the runs that are done: journalled and with a readable record."""
    directory = ResultsDir(directory)
    for stale in directory.runs_dir.glob(".*.tmp"):  # a run record that was being written
        stale.unlink()
    done = {}
    for event in Journal(directory).events():
        if event.get("event") != "run":
            continue
        run_id = event.get("run_id")
        if not isinstance(run_id, str):
            continue
        record = load_run(directory, run_id)
        if record is None or record.get("status") != event.get("status"):
            continue
        if retry_failed and record["status"] != "ok":
            continue
        done[run_id] = record["status"]
    return done


def load_run(directory, run_id, strict=False):
    """A run's record, or None where it is absent or damaged (not a JSON object with the run's id
    and a status): a resumed sweep redoes that run. With `strict`, StudyError naming the file
    where a record is there but damaged."""
    path = ResultsDir(directory).runs_dir / f"{run_id}.json"
    try:
        with open(path, "rb") as f:
            record = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as err:
        if strict:
            raise StudyError(f"{path}: unreadable run record: {err}") from None
        return None
    if not isinstance(record, dict) or record.get("run_id") != run_id or record.get("status") not in RUN_STATUSES \
            or not isinstance(record.get("steps") or [], list):
        if strict:
            raise StudyError(f"{path}: not a run record (a JSON object with run_id {run_id!r}, a status and steps)")
        return None
    return record


def save_run(directory, run, order, outcome, command, peak_beside=None, peak_after=None):
    """peak_beside, peak_after: the probes measured right before and right after the run
    (pstudy.measure.ceilings.peak_beside), where the config asks for them."""
    p = run.point
    record = {"run_id": run.run_id(), **dict(zip(KEYS, p)),
              "repetition": run.repetition, "order": order, "status": outcome.status,
              "error": outcome.error, "exit_code": outcome.exit_code, "wall_s": round(outcome.wall_s, 6),
              "command": command, "info": outcome.info, "steps": outcome.steps,
              "stderr_tail": outcome.stderr_tail}
    for key in ("steal_s", "involuntary_switches"):  # what disturbed it, where known
        if getattr(outcome, key, None) is not None:
            record[key] = getattr(outcome, key)
    if peak_beside is not None:
        record["peak_beside"] = peak_beside
    if peak_after is not None:
        record["peak_after"] = peak_after
    write_json(ResultsDir(directory).run_record(p, run.repetition), record)


def _thread_times(gflops):
    """Each thread's time on the probe's equal work over the median thread's (the same measure as
    pstudy.analyse.efficiency.thread_times gives from a trace)."""
    import statistics

    median = statistics.median(gflops)
    return [median / g if g > 0 else None for g in gflops]


def peak_beside_summary(probe, field="peak_beside"):
    """runs.csv's columns of one probe (`field`: peak_beside, the one before the run, or
    peak_after): its GFLOP/s, its slowest thread and that thread's time."""
    if not probe or "thread_gflops" not in probe or not probe["thread_gflops"]:
        return {}
    times = _thread_times(probe["thread_gflops"])
    known = [(t, i) for i, t in enumerate(times) if t is not None]
    if not known:
        return {f"{field}_gflops": probe["gflops"]}
    time, thread = max(known)
    return {f"{field}_gflops": probe["gflops"], f"{field}_slowest_thread": thread,
            f"{field}_slowest_time": round(time, 4)}


def thread_peaks(directory):
    """thread_peaks.csv's frame: one row per thread and probe of every run probed (empty when none
    was)."""

    rows = []
    for r in records(directory):
        for when, field in PROBES:
            probe = r.get(field) or {}
            gflops = probe.get("thread_gflops") or []
            cpus = probe.get("thread_cpus") or []
            for thread, (g, t) in enumerate(zip(gflops, _thread_times(gflops) if gflops else [])):
                rows.append({**{c: r.get(c) for c in KEYS + ["repetition"]}, "when": when, "thread": thread,
                             "cpu": cpus[thread] if thread < len(cpus) else None, "gflops": g,
                             "time": None if t is None else round(t, 4)})
    return thread_peaks_frame(rows)


def thread_peaks_frame(rows):
    """thread_peaks.csv's frame of `rows` (dicts with its columns), sorted."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=THREAD_PEAK_COLUMNS)
    for col in vocabulary.OPTIONAL_KEYS:
        frame[col] = frame[col].astype(vocabulary.key_dtype(col))
    # "after" sorts before "before": the order of PROBES instead
    frame["order"] = frame["when"].map({when: i for i, (when, _) in enumerate(PROBES)})
    return (frame.sort_values(KEYS + ["repetition", "order", "thread"], na_position="first")
            .drop(columns="order").reset_index(drop=True))


def records(directory):
    """All journalled run records (the latest per run_id)."""
    out = {}
    for event in Journal(directory).events():
        if event.get("event") == "run" and isinstance(event.get("run_id"), str):
            record = load_run(directory, event.get("run_id"), strict=True)
            if record is not None:
                out[record["run_id"]] = record
    return list(out.values())


def tables(directory):
    """steps, runs and failures DataFrames assembled from the run records."""
    import pandas as pd

    step_rows, run_rows = [], []
    for r in records(directory):
        info = r.get("info") or {}
        run_rows.append({**{c: r.get(c) for c in KEYS + ["repetition", "order", "status", "error",
                                                           "exit_code", "wall_s"]},
                         **{c: info.get(c) for c in ("omp_runtime", "proc_bind", "places",
                                                     "tasks_per_step", "num_parameters")},
                         **peak_beside_summary(r.get("peak_beside")),
                         **peak_beside_summary(r.get("peak_after"), "peak_after"),
                         **{c: r.get(c) for c in ("steal_s", "involuntary_switches")}})
        if r["status"] == "ok":
            for s in r["steps"]:
                # r.get: a record written before a point key existed has none (NA, as in runs.csv)
                step_rows.append({**{c: r.get(c) for c in KEYS + ["repetition"]}, **s})
    steps = pd.DataFrame(step_rows, columns=STEP_COLUMNS)
    runs = pd.DataFrame(run_rows, columns=RUN_COLUMNS)
    for frame in (steps, runs):
        for col in vocabulary.OPTIONAL_KEYS:
            frame[col] = frame[col].astype(vocabulary.key_dtype(col))
    for col in ("exit_code", "tasks_per_step", "num_parameters", "peak_beside_slowest_thread",
                "peak_after_slowest_thread", "involuntary_switches"):
        runs[col] = pd.to_numeric(runs[col], errors="coerce").round().astype("Int64")
    steps["involuntary_switches"] = pd.to_numeric(steps["involuntary_switches"], errors="coerce").round().astype("Int64")
    steps = steps.sort_values(KEYS + ["repetition", "step"], na_position="first").reset_index(drop=True)
    runs = runs.sort_values(["order"]).reset_index(drop=True)
    failures = runs[runs["status"] != "ok"][FAILURE_COLUMNS].reset_index(drop=True)
    return steps, runs, failures


def read_csv(path, columns=(), what="", absent=None):
    """A CSV written by write_csv (NA for missing values), with the point's
    integer keys typed. Raises StudyError naming the file when it is absent
    (with `absent` as the message, if given), unreadable, or lacks one of
    `columns` (`what` says what kind of file it should have been)."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, na_values=["NA"], keep_default_na=False)
    except FileNotFoundError:
        raise StudyError(absent or f"{path}: no such file") from None
    except (OSError, ValueError, EOFError, lzma.LZMAError) as err:  # EOFError: a truncated .gz
        raise StudyError(f"{path}: unreadable: {err}") from None
    # a key or step field newer than the file: NA, as for a variant without it
    for col in vocabulary.OPTIONAL_KEYS + vocabulary.DISTRIBUTED_STEP_FIELDS + vocabulary.DISTURBANCE_STEP_FIELDS:
        if col in columns and col not in frame.columns:
            frame[col] = None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise StudyError(f"{path}: {what + ': ' if what else ''}missing columns {', '.join(missing)}")
    for col in vocabulary.OPTIONAL_KEYS:
        if col in frame.columns:
            try:
                frame[col] = frame[col].astype(vocabulary.key_dtype(col))
            except (TypeError, ValueError):  # a damaged row: a word, or nothing, where a count belongs
                values = pd.to_numeric(frame[col], errors="coerce")
                bad = frame.index[values.isna() & frame[col].notna()]
                line = int(bad[0]) + 2 if len(bad) else "?"
                raise StudyError(f"{path}: line {line}: {col}: {frame[col].iloc[bad[0]] if len(bad) else ''!r} "
                                 "is not an integer (a damaged row)") from None
    return frame


# a run's status in runs.csv and its record (pstudy.measure.runner's outcomes)
RUN_STATUSES = ("ok", "crashed", "timeout", "garbage", "mismatch", "cancelled")
_NAME = re.compile(r"[a-z][a-z0-9]*")
_SCHED = re.compile(r"[a-z][a-z0-9_-]*")  # a StarPU scheduler's name: "dmda", "modular-heft", "graph_test"
_WARMUP = {"true": True, "1": True, "false": False, "0": False}


def _shown(raw):
    return "(empty)" if raw is None or (isinstance(raw, float) and math.isnan(raw)) or str(raw) == "" else str(raw)


def _cell_error(path, i, column, raw, what):
    """StudyError for the cell at row index i (rows numbered as an editor numbers lines)."""
    return StudyError(f"{path}: row {i + 2}, column {column}: {_shown(raw)} {what}")


def _check_whole(path):
    """StudyError when a table the harness wrote ends mid-row: it writes every row with its newline
    and renames the file into place, so a last line without one is a file cut short."""
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        line = data.count(b"\n") + 1
        raise StudyError(f"{path}: row {line}: cut short (the file ends mid-row)")


def check_point_keys(frame, path, extra_integers=(), repetition=False, unique=None):
    """The point keys of a table (any table with point columns: runs.csv, steps.csv, a validation
    recording's points.csv), checked and typed in place: names where names belong, whole numbers in
    range where counts belong (and `extra_integers`, (column, least value) pairs; the repetition
    too, with `repetition`); with `unique` (more columns), one row per point and those columns.
    StudyError naming the file, the row and the column otherwise."""
    _check_keys(frame, path, extra_integers=(("repetition", 0),) * repetition + tuple(extra_integers),
                with_repetition=False)
    if unique is not None:
        _check_unique(frame, path, KEYS + list(unique), "the same point")


def _check_keys(frame, path, extra_integers=(), with_repetition=True):
    """The point keys (and `extra_integers`, (column, least value) pairs) of a table, checked and
    typed in place: names where names belong, whole numbers in range where counts belong."""
    import numpy as np
    import pandas as pd

    for col in ("variant", "compiler", "kernels"):
        good = frame[col].map(lambda v: isinstance(v, str) and _NAME.fullmatch(v) is not None)
        if not good.all():
            i = int(np.flatnonzero(~good.to_numpy())[0])
            raise _cell_error(path, i, col, frame[col].iloc[i], "is not a name")
    for col in vocabulary.TEXT_KEYS:  # a name or NA (absent: a table from before the key, all NA)
        if col not in frame.columns:
            frame[col] = pd.Series([pd.NA] * len(frame), index=frame.index, dtype="string")
        raw = frame[col].astype(object)
        good = raw.map(lambda v: _SCHED.fullmatch(v) is not None if isinstance(v, str) else bool(pd.isna(v)))
        if not good.all():
            i = int(np.flatnonzero(~good.to_numpy())[0])
            raise _cell_error(path, i, col, frame[col].iloc[i], "is not a name or NA")
        frame[col] = frame[col].astype("string")
    integers = [("threads", 1, False), *((("repetition", 0, False),) if with_repetition else ()),
                *((c, low, False) for c, low in extra_integers),
                *((c, least_count(c), True) for c in vocabulary.OPTIONAL_KEYS
                  if c not in vocabulary.TEXT_KEYS)]
    for col, low, optional in integers:
        raw = frame[col]
        numbers = pd.to_numeric(raw.astype(object).where(raw.notna(), None), errors="coerce").astype(float)
        missing = numbers.isna().to_numpy()
        bad = (missing & raw.notna().to_numpy()) | (~missing & ((numbers < low) | (numbers != numbers.round())).to_numpy())
        if not optional:
            bad |= missing
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _cell_error(path, i, col, raw.iloc[i], f"is not {'an integer' if low < 1 else 'a positive integer'}"
                              + (f" >= {low}" if low > 1 else "") + (" or NA" if optional else ""))
        frame[col] = numbers.astype("Int64") if optional else numbers.astype(int)


def least_count(col):
    """The least value an optional integer key's column holds: a rank count and a counted distributed
    knob (comm_threads) their least, a chunk key 0 (AUTO)."""
    if col in vocabulary.DISTRIBUTED_OPTIONS:
        return vocabulary.DISTRIBUTED_OPTIONS[col].values[0]
    return 1 if col == "ranks" else 0


def _check_unique(frame, path, columns, what):
    dup = frame.duplicated(columns, keep=False).to_numpy()
    if dup.any():
        import numpy as np

        first, second = (int(i) for i in np.flatnonzero(dup)[:2])
        raise StudyError(f"{path}: row {second + 2}: {what} already in row {first + 2}; a duplicated row "
                         "would be counted twice")


def read_runs(directory, absent=None):
    """runs.csv of a results directory, checked: its point keys, one row per run (point and
    repetition), each status one a run can have. StudyError naming the file, the row and the
    column otherwise; `absent` is the message when there is no runs.csv."""
    path = ResultsDir(directory).runs_csv
    if not path.exists():
        raise StudyError(absent or f"{path}: missing (every results directory lists its runs there)")
    _check_whole(path)
    runs = read_csv(path, KEYS + ["repetition", "status"], what="not a runs table")
    _check_keys(runs, path)
    bad = ~runs["status"].isin(RUN_STATUSES)
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise _cell_error(path, i, "status", runs["status"].iloc[i], f"is not a run status ({', '.join(RUN_STATUSES)})")
    _check_unique(runs, path, KEYS + ["repetition"], "the same run (point and repetition)")
    if "wall_s" in runs.columns:
        runs["wall_s"] = checked_times(runs["wall_s"], path, "wall_s")
        checked_disturbance(runs, path, runs["wall_s"])
    return runs


# the most CPUs a host's steal time is summed over (config.MAX_THREADS, the most a sweep may ask for)
MAX_CPUS = 4096


def checked_disturbance(frame, path, wall):
    """What disturbed each run or step from outside (vocabulary.DISTURBANCE_STEP_FIELDS; columns a
    table from before them lacks are left out), checked and typed in place: NA where not known,
    else steal_s a time of at most the row's wall time on each of MAX_CPUS CPUs, and
    involuntary_switches a whole count. StudyError naming the file, the row and the column."""
    import numpy as np
    import pandas as pd

    for column in (c for c in vocabulary.DISTURBANCE_STEP_FIELDS if c in frame.columns):
        raw = frame[column]
        numbers = pd.to_numeric(raw, errors="coerce").astype(float)
        known = raw.notna().to_numpy()
        bad = known & ~(np.isfinite(numbers) & (numbers >= 0)).to_numpy()
        what = "is not a non-negative number"
        if column == "involuntary_switches":
            bad |= known & (numbers != numbers.round()).to_numpy()
            what = "is not a count (a whole number >= 0)"
        else:
            bad |= known & (numbers > np.asarray(wall, dtype=float) * MAX_CPUS).to_numpy()
            what += f" of seconds within the row's wall time on {MAX_CPUS} CPUs"
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _cell_error(path, i, column, raw.iloc[i], what)
        frame[column] = numbers


def read_steps(directory, runs=None):
    """steps.csv of a results directory, with the key columns typed and every value checked: names
    and counts in range, warmup true or false, every time a finite, non-negative number (the step's
    own time positive), one row per (run, step), and each run one that runs.csv lists as ok (`runs`:
    runs.csv as read_runs gave it, else it is read here). StudyError naming the file, the row and
    the column otherwise."""
    import numpy as np
    import pandas as pd

    path = ResultsDir(directory).steps_csv
    steps = read_csv(path, STEP_COLUMNS, absent=f"{directory}: no steps.csv (the sweep wrote no results yet)")
    _check_whole(path)
    _check_keys(steps, path, extra_integers=(("step", 0),))
    warmup = steps["warmup"].astype(str).str.lower().map(_WARMUP)
    if warmup.isna().any():
        i = int(np.flatnonzero(warmup.isna().to_numpy())[0])
        raise _cell_error(path, i, "warmup", steps["warmup"].iloc[i], "is neither true nor false")
    steps["warmup"] = warmup.astype(bool)
    for column in ("forward_s", "backward_s", "update_s", "step_s"):
        steps[column] = checked_times(steps[column], path, column, positive=column == "step_s")
    for column in ("loss", *vocabulary.DISTRIBUTED_STEP_FIELDS):
        numbers = pd.to_numeric(steps[column], errors="coerce")
        bad = (numbers.isna() & steps[column].notna()).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _cell_error(path, i, column, steps[column].iloc[i], "is not a number")
        steps[column] = numbers.astype(float)
    checked_disturbance(steps, path, steps["step_s"])
    _check_unique(steps, path, KEYS + ["repetition", "step"], "the same step of the same run")
    runs = read_runs(directory, absent=f"{ResultsDir(directory).runs_csv}: missing, and steps.csv's runs are "
                     "listed there (a damaged directory)") if runs is None else runs
    def run_keys(frame):
        return pd.Series(["|".join(map(str, row)) for row in frame[KEYS + ["repetition"]].itertuples(index=False)],
                         index=frame.index, dtype=object)
    unlisted = ~run_keys(steps).isin(set(run_keys(runs[runs["status"] == "ok"])))
    if unlisted.any():
        i = int(np.flatnonzero(unlisted.to_numpy())[0])
        r = steps.iloc[i]
        raise StudyError(f"{path}: row {i + 2}: run {run_stem(vocabulary.point_key(r), int(r['repetition']))} "
                         f"is not in {ResultsDir(directory).runs_csv} as a run that succeeded")
    return steps


def checked_times(values, path, column, positive=False):
    """A column of times as floats; StudyError at the first that is not a finite number >= 0 (> 0
    when `positive`), naming the file, its row (as an editor numbers lines) and the column."""
    import numpy as np
    import pandas as pd

    numbers = pd.to_numeric(values, errors="coerce")
    bad = ~np.isfinite(numbers) | (numbers <= 0 if positive else numbers < 0)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raw = values.iloc[i]
        raw = "(empty)" if raw is None or (isinstance(raw, float) and math.isnan(raw)) or raw == "" else str(raw)
        raise StudyError(f"{path}: row {i + 2}, column {column}: {raw} is not a "
                         f"{'positive' if positive else 'non-negative'} finite time in seconds")
    return numbers.astype(float)
