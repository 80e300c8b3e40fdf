"""The words the harness uses for what it measures, defined once.

Variants come from the registry variants/LIST (the same file the Makefile builds them from), so a
new variant is its C file and one line there. Everything else that names a variant, a phase or
a point (configs, the sweep, the runner, the statistics, the figures, the benchmarks) takes its
names from here.

A point (Point) is one configuration of a program: variant, compiler, kernels, threads, batch_subsize,
k, ranks, tile_columns, tile_in_channels, tile_sequences, tiles_per_product, starpu_sched. batch_subsize, k (the
token chunk), the tile widths, the sequences per row chunk of the products (tile_sequences) and the
tiles each product is cut into (tiles_per_product) exist for chunked variants only, ranks (MPI processes, `threads` each) for distributed variants only; they are None
(NA in the CSV files) for the others; so are update, collective, overlap and comm_threads
(DISTRIBUTED_OPTIONS) where a distributed variant's sweep leaves them to the binary. starpu_sched (the StarPU scheduler, STARPU_SCHED) exists for
the variants that run on StarPU only, and is None there too where a sweep leaves StarPU its default.
A chunk key the binary chooses itself for its thread count
(config value "auto") is AUTO, 0, in a point and "auto" in names.
"""

import re
from collections import namedtuple
from pathlib import Path

from pstudy.errors import StudyError

REPO_ROOT = Path(__file__).resolve().parents[3]
REGISTRY = REPO_ROOT / "variants" / "LIST"

SEQUENTIAL, THREADS, CHUNKED, DISTRIBUTED = "sequential", "threads", "chunked", "distributed"
KINDS = (SEQUENTIAL, THREADS, CHUNKED, DISTRIBUTED)

# the two bases every study is read against: the sequential program (speedup "vs seq") and the
# fork-join program that the task-based variants set out to beat ("vs-forkjoin" figures)
BASELINE = "seq"
FORKJOIN = "forkjoin"

# variants that run the whole training loop as one task graph, so that iterations overlap: their
# timelines show two iterations
OVERLAPPING_ITERATIONS = ("taskiter", "nosv")

COMPILERS = ("gcc", "clang")
KERNEL_SETS = ("fast", "reference")
# phases of a step as the binaries report them (forward_s, backward_s, update_s, step_s)
PHASES = ("step", "forward", "backward", "update")
# a key added later goes last, so that the point keys recorded before it (shorter tuples, JSON lists)
# still read as the same points
POINT_KEYS = ["variant", "compiler", "kernels", "threads", "batch_subsize", "k", "ranks", "tile_columns",
              "tile_in_channels", "tile_sequences", "tiles_per_product", "starpu_sched", "update", "collective",
              "overlap", "comm_threads"]
INTEGER_KEYS = ("threads", "batch_subsize", "k", "ranks", "tile_columns", "tile_in_channels", "tile_sequences",
                "tiles_per_product", "comm_threads")
# the chunk keys that cut the transformer blocks' products: absent from points made before each existed
TILE_KEYS = ("tile_columns", "tile_in_channels", "tile_sequences", "tiles_per_product")
CHUNK_KEYS = ("batch_subsize", "k") + TILE_KEYS
# point keys that only some variants have: NA (pandas Int64) for the others
OPTIONAL_KEYS = ("batch_subsize", "k", "ranks", "tile_columns", "tile_in_channels", "tile_sequences",
                 "tiles_per_product", "starpu_sched", "update", "collective", "overlap", "comm_threads")
# One of the distributed variants' own knobs: its binary option, its values in order with the
# binary's default first (variants/options.c; a count's are a range), and the tag that names it in
# run stems (_K2).
Knob = namedtuple("Knob", ["option", "values", "tag"])
# A sweep key of a knob's name sweeps it; a point of a sweep that names none has None there and runs
# the binary's default. comm_threads counts (INTEGER_KEYS), the others are names.
DISTRIBUTED_OPTIONS = {"update": Knob("--update", ("sharded", "replicated"), "U"),
                       "collective": Knob("--collective", ("ring", "direct"), "C"),
                       "overlap": Knob("--overlap", ("off", "on"), "O"),
                       "comm_threads": Knob("--comm-threads", range(1, 65), "K")}
DISTRIBUTED_KEYS = tuple(DISTRIBUTED_OPTIONS)
# optional point keys that hold a name, not a count: pandas "string" (NA where absent), not Int64
TEXT_KEYS = ("starpu_sched",) + tuple(key for key in DISTRIBUTED_KEYS if key not in INTEGER_KEYS)
# the variants on a task runtime of their own (the Makefile's RUNTIME_VARIANTS: nOS-V, StarPU), which a
# sweep runs only where its config names them, as it does the distributed ones: a config that names
# no variants sweeps what it swept before they existed (and keeps its digest)
RUNTIME_VARIANTS = ("nosv", "starpu")
# the variants that run on StarPU, the only ones a sweep's starpu_sched applies to
STARPU_VARIANTS = ("starpu",)
# the variants on nOS-V, whose runtime records an ovni trace of itself when built with ovni
# (store/ovnitrace.py)
NOSV_VARIANTS = ("nosv",)
# StarPU 1.3's schedulers (starpu_sched_get_predefined_policies(), the names STARPU_SCHED takes):
# a config naming another is refused when it is loaded, as gpt2-starpu refuses it at run time.
# tests/test_bad_input.py checks this list against the installed library's.
STARPU_SCHEDULERS = ("eager", "prio", "random", "lws", "ws", "dm", "dmda", "dmdap", "dmdar", "dmdas", "dmdasd",
                     "pheft", "peager", "heteroprio", "graph_test",
                     "modular-eager", "modular-eager-prefetching", "modular-eager-prio", "modular-gemm",
                     "modular-prio", "modular-prio-prefetching", "modular-random", "modular-random-prio",
                     "modular-random-prefetching", "modular-random-prio-prefetching", "modular-prandom",
                     "modular-prandom-prio", "modular-ws", "modular-heft", "modular-heft-prio", "modular-heft2",
                     "modular-heteroprio", "modular-heteroprio-heft", "modular-pheft")
# a chunk key left to the binary's choice for its thread count
AUTO = 0
# the binaries' options and info-line keys of the chunk keys, in CHUNK_KEYS' order
CHUNK_OPTIONS = {"batch_subsize": ("--batch-subsize", "batch_subsize"), "k": ("--token-chunk", "token_chunk"),
                 "tile_columns": ("--tile-columns", "tile_columns"),
                 "tile_in_channels": ("--tile-in-channels", "tile_in_channels"),
                 "tile_sequences": ("--tile-sequences", "tile_sequences"),
                 "tiles_per_product": ("--tiles-per-product", "tiles_per_product")}
# the binaries' chunking knobs (`gpt2-<variant> --list-knobs`) that no sweep key sets: each run leaves
# them to the binary. With CHUNK_OPTIONS' info-line keys, every knob the binaries have, and no other
# (tests/test_options.py checks the two sides agree)
UNSWEPT_KNOBS = ("channel_chunk",)
# what distributed variants add to each step record (time in communication between processes)
DISTRIBUTED_STEP_FIELDS = ("comm_s",)
# what each step record adds where the binary could read it (null, NA, otherwise): the host's
# steal time and the process's involuntary context switches over the step (core/trace.h)
DISTURBANCE_STEP_FIELDS = ("steal_s", "involuntary_switches")

# colours and markers of the four original variants (kept stable across figures); others cycle
_STYLE = {"seq": ("black", "s"), "forkjoin": ("tab:blue", "o"), "tasks": ("tab:orange", "^"),
          "taskiter": ("tab:green", "v")}
_SPARE_STYLES = [("tab:red", "D"), ("tab:purple", "P"), ("tab:brown", "X"), ("tab:pink", "*"),
                 ("tab:olive", "h"), ("tab:cyan", "<")]


def read_registry(path=REGISTRY):
    """{name: kind} in the file's order; StudyError naming the file and line when it is malformed."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise StudyError(f"{path}: cannot read the variant registry: {err.strerror}") from None
    out = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 2 or fields[1] not in KINDS:
            raise StudyError(f"{path}:{lineno}: expected 'NAME KIND' with KIND one of {', '.join(KINDS)}, "
                             f"got {line.strip()!r}")
        name, kind = fields
        if not re.fullmatch(r"[a-z][a-z0-9]*", name):
            raise StudyError(f"{path}:{lineno}: variant name {name!r} must be lower-case letters and digits "
                             "(it is part of file names)")
        if name in out:
            raise StudyError(f"{path}:{lineno}: variant {name} is listed twice")
        out[name] = kind
    if not out:
        raise StudyError(f"{path}: no variants listed")
    return out


REGISTERED = read_registry()
VARIANTS = tuple(REGISTERED)
CHUNKED_VARIANTS = tuple(v for v, kind in REGISTERED.items() if kind == CHUNKED)
SEQUENTIAL_VARIANTS = tuple(v for v, kind in REGISTERED.items() if kind == SEQUENTIAL)
DISTRIBUTED_VARIANTS = tuple(v for v, kind in REGISTERED.items() if kind == DISTRIBUTED)


def is_chunked(variant):
    return REGISTERED.get(variant) == CHUNKED


def is_sequential(variant):
    return REGISTERED.get(variant) == SEQUENTIAL


def is_distributed(variant):
    return REGISTERED.get(variant) == DISTRIBUTED


def on_starpu(variant):
    return variant in STARPU_VARIANTS


def key_dtype(col):
    """The pandas dtype of an optional point key's column: "string" for a name, else Int64."""
    return "string" if col in TEXT_KEYS else "Int64"


def workers(point):
    """Cores a point uses: threads, times ranks for a distributed one (what efficiency divides by)."""
    return point.threads * (point.ranks or 1)


def variant_order(variant):
    """Sort position: the registry's order, unknown names last."""
    return VARIANTS.index(variant) if variant in VARIANTS else len(VARIANTS)


def variant_style(variant):
    """(matplotlib colour, marker) of a variant, the same in every figure."""
    if variant in _STYLE:
        return _STYLE[variant]
    others = [v for v in VARIANTS if v not in _STYLE]
    i = others.index(variant) if variant in others else len(others)
    return _SPARE_STYLES[i % len(_SPARE_STYLES)]


def _is_na(value):
    return value is None or (isinstance(value, float) and value != value) or \
        (not isinstance(value, (str, int, float)) and str(value) in ("<NA>", "nan"))


class Point(namedtuple("Point", POINT_KEYS, defaults=(None,) * (len(POINT_KEYS) - 3))):
    """A point, one named value in POINT_KEYS' order; as a tuple it is the point key of the CSV files.
    A key a point has no value for (a chunk key of an unchunked variant, ranks of a program that is
    not distributed, a key made after the point was recorded) is None. Without threads (None) it
    is a configuration at no particular thread count: what the 1-thread traces are keyed by."""
    __slots__ = ()

    def label(self):
        return point_label(self)

    def chunks(self):
        """(batch_subsize, k, tile_columns, tile_in_channels, tile_sequences, tiles_per_product)."""
        return tuple(getattr(self, c) for c in CHUNK_KEYS)


def as_point(values):
    """A Point from a point key in POINT_KEYS' order, however it was kept (a tuple, a JSON list);
    one recorded before the later keys existed is shorter, and gets None for them."""
    # by position: the recorded form is a sequence in POINT_KEYS' order, keys added later last
    return values if isinstance(values, Point) else Point(*values)


def point_key(row):
    """A hashable point identity from any mapping with the point columns (a CSV row, a dict):
    integers for the integer keys, None for the NA chunking of unchunked variants."""
    out = {}
    for col in POINT_KEYS:
        v = row[col] if col in row else None  # records from before a key existed
        if _is_na(v):
            out[col] = None
        elif col in INTEGER_KEYS:
            out[col] = int(v)
        else:
            out[col] = str(v)
    return Point(**out)


def chunk_text(value):
    """A chunk key's value in names and labels: the number, or "auto" (AUTO)."""
    return "auto" if value == AUTO else str(int(value))


def chunk_values(point):
    """(batch_subsize, k, tile_columns, tile_in_channels, tile_sequences, tiles_per_product) of a
    point key; None for a key it was recorded before."""
    return as_point(point).chunks()


def chunking_label(bs, k, tile_columns=None, tile_in_channels=None, tile_sequences=None, tiles_per_product=None):
    """'bs=1 k=64', with the tile keys the point sets: 'bs=1 k=64 tc=384 ts=4 tp=2' (tc: output columns
    per tile, ti: input channels per weight-gradient tile, ts: sequences per row chunk of the
    products, tp: tiles each product is cut into). A tile key left to the automatic choice (auto) or
    NA is left out: every chunked point has four, and four autos on every line hide the keys that
    were set."""
    text = f"bs={chunk_text(bs)} k={chunk_text(k)}"
    for name, value in (("tc", tile_columns), ("ti", tile_in_channels), ("ts", tile_sequences),
                        ("tp", tiles_per_product)):
        if not _is_na(value) and value != AUTO:
            text += f" {name}={chunk_text(value)}"
    return text


def point_label(point):
    """'taskiter gcc/fast t=2 bs=1 k=64', 'mpi gcc/fast r=2 t=1', 'starpu gcc/fast t=2 bs=1 k=64
    sched=dmda', 'mpi gcc/fast r=2 t=1 collective=ring overlap=on' for a point."""
    p = as_point(point)
    text = f"{p.variant} {p.compiler}/{p.kernels}" + (f" r={p.ranks}" if p.ranks is not None else "") + \
        f" t={p.threads}"
    if p.batch_subsize is not None:
        text += " " + chunking_label(*p.chunks())
    sched = starpu_sched_of(p)
    if sched is not None:
        text += f" sched={sched}"
    for key, value in distributed_settings(p).items():
        text += f" {key}={value}"
    return text


SERIES_KEYS = ("variant", "ranks") + CHUNK_KEYS + DISTRIBUTED_KEYS  # what tells a figure's lines apart


def series_name(series):
    """'taskiter bs=1 k=64', 'mpi ranks=2 overlap=on': a line of a figure over threads, from a
    mapping with SERIES_KEYS (NA, or absent, where a line has none)."""
    values = {key: None if key not in series or _is_na(series[key]) else series[key] for key in SERIES_KEYS}
    name = values["variant"]
    if values["batch_subsize"] is not None:
        name += " " + chunking_label(*(values[c] for c in CHUNK_KEYS))
    if values["ranks"] is not None:
        name += f" ranks={int(values['ranks'])}"
    return name + "".join(f" {key}={value}" for key, value in distributed_settings(series).items())


def distributed_settings(point):
    """{distributed knob: value} of the knobs a point sets (DISTRIBUTED_OPTIONS), in their order: a
    name (str), or a count (int) for an integer knob; empty for a point that sets none (not
    distributed, or swept without them). `point` is a Point, a point key, or a mapping with the
    knobs' columns (a table's row: NA, or absent, where it sets none)."""
    if isinstance(point, tuple):
        point = as_point(point)._asdict()
    out = {}
    for key in DISTRIBUTED_KEYS:
        value = point[key] if key in point else None  # a record from before the key existed
        if not _is_na(value):
            out[key] = int(value) if key in INTEGER_KEYS else str(value)
    return out


def knob_default(key):
    """The binary's own value of distributed knob `key`: what a point without it runs."""
    return DISTRIBUTED_OPTIONS[key].values[0]


def starpu_sched_of(point):
    """The StarPU scheduler of a point; None where it has none (NA, or a point recorded before
    starpu_sched existed)."""
    sched = as_point(point).starpu_sched
    return None if _is_na(sched) else str(sched)


def point_sort_key(key):
    """Orders point keys with None before numbers (pandas' NA-first order)."""
    return tuple((0, "") if v is None else (1, v) for v in key)
