"""The task graph of one training step as a variant schedules it: the reading side of a binary's
`--describe-graph FILE` (core/schedule.c writes it; docs/variants.md, "Task graph export", documents it).
This module owns the format on the Python side; nothing else parses the file.

Format "gpt2-perfstudy-graph", one JSON object with
    variant, schedule ("static" | "dataflow"), threads, barrier_per_op (static), barrier_per_phase,
    B, T, chunking (dataflow: batch_subsize, token_chunk, channel_chunk, tile_columns,
    tile_in_channels, tile_sequences, tiles_per_product: kept as written, not read),
    ops:   [{op, kernel, label, layer, phase, split, cut_columns, flops, bytes}]   in step order
and the chunks, task i the i-th of each:
    version 2 (what the binaries write): columns
        chunks: {count, op, b0, b1, x0, x1, col0, col1, thread, flops, bytes: [n integers]
                 [, succ, next_succ: {runs: [n], first: [r], length: [r]}]}
      a task's phase is its operation's; its successors are runs[i] runs of consecutive ids
      (first, first + 1, ..., first + length - 1), the runs of task 0 first;
    version 1 (graphs kept from before; still read): one object per task
        chunks: [{id, op, phase, b0, b1, x0, x1, col0, col1, thread, flops, bytes [, succ, next_succ]}]
static: each operation's chunks run on the thread named, a barrier after every operation.
dataflow: succ are the tasks of the same iteration that wait for this one, next_succ those of the
next iteration; barrier_per_phase says whether a wait closes each phase (and so each step).

Why version 2: at 112 threads a product's tiles all precede every row chunk of the next operation,
some 1.5 million edges for d12; as one JSON integer each, decoding them was half of `perfstudy
predict --best`'s time. As runs they are 20 times fewer, and the columns go to numpy whole.

load() keeps beside each file it reads a cache of the checked graph in arrays, FILE.npz (numpy's
format, no pickled objects), remade when the file's size or modification time changes: `perfstudy
predict --best` reads some thousand graphs.
"""

import json
import os
import subprocess
from itertools import chain
from dataclasses import dataclass, field
from pathlib import Path

from pstudy.errors import StudyError

FORMAT = "gpt2-perfstudy-graph"
VERSION = 2          # what the binaries write
VERSIONS = (1, 2)    # what is read
CACHE_VERSION = 2    # the arrays of FILE.npz (2: successors as runs)
STATIC, DATAFLOW = "static", "dataflow"
PHASES = ("forward", "backward", "update")
TASK_FIELDS = ("id", "op", "phase", "b0", "b1", "x0", "x1", "col0", "col1", "thread", "flops", "bytes")
COLUMNS = ("op", "b0", "b1", "x0", "x1", "col0", "col1", "thread", "flops", "bytes")  # version 2


@dataclass
class Graph:
    variant: str
    schedule: str                 # STATIC or DATAFLOW
    threads: int
    barrier_per_phase: bool
    ops: list                     # dicts as in the file
    op: list = field(default_factory=list)        # per task: operation index
    phase: list = field(default_factory=list)     # per task: phase name
    thread: list = field(default_factory=list)    # per task: static thread (-1 for dataflow)
    flops: list = field(default_factory=list)
    bytes: list = field(default_factory=list)
    path: str = ""
    _arrays: dict = field(default=None, repr=False, compare=False)
    _succ: list = field(default=None, repr=False, compare=False)
    _next_succ: list = field(default=None, repr=False, compare=False)
    _key: list = field(default=None, repr=False, compare=False)

    @property
    def key(self):
        """Per task: its chunk_key() (tuples made from the arrays of a cached graph only when asked
        for: of some 600 graphs --best replays, only the traced ones are matched by key, and the
        tuples took half of reading a cached graph)."""
        if self._key is None:
            self._key = list(map(tuple, self._arrays["key"].tolist())) if self._arrays is not None else []
        return self._key

    @key.setter
    def key(self, value):
        self._key = value

    @property
    def n_tasks(self):
        return len(self.op)

    @property
    def succ(self):
        """Per task: its successors in the same iteration (lists; made from the arrays of a cached
        graph only when asked for: the native replay reads the arrays)."""
        if self._succ is None:
            self._succ = self._rows("succ_start", "succ")
        return self._succ

    @property
    def next_succ(self):
        """Per task: its successors in the next iteration."""
        if self._next_succ is None:
            self._next_succ = self._rows("next_start", "next_succ")
        return self._next_succ

    def _rows(self, start, flat):
        if self._arrays is None or self.schedule != DATAFLOW:
            return []
        starts, values = self._arrays[start].tolist(), self._arrays[flat].tolist()
        return [values[i:j] for i, j in zip(starts, starts[1:])]

    def arrays(self):
        """The tasks as numpy arrays (built once; the lists must not change afterwards): op,
        thread, phase (index in PHASES), flops, bytes (int64), key (n x 7), and the successors as
        compressed rows: succ_start[n + 1] into succ, next_start[n + 1] into next_succ."""
        if self._arrays is None:
            import numpy as np
            n = self.n_tasks
            a = {"op": np.asarray(self.op, dtype=np.int32), "thread": np.asarray(self.thread, dtype=np.int32),
                 "phase": np.asarray([PHASES.index(x) for x in self.phase], dtype=np.int32),
                 "flops": np.asarray(self.flops, dtype=np.int64), "bytes": np.asarray(self.bytes, dtype=np.int64),
                 "key": np.asarray(self.key, dtype=np.int64).reshape(n, 7)}
            for name, lists in (("succ", self.succ), ("next_succ", self.next_succ)):
                lists = lists or [[]] * n
                start = np.zeros(n + 1, dtype=np.int32)
                start[1:] = np.cumsum([len(x) for x in lists])
                a[name + "_start" if name == "succ" else "next_start"] = start
                a[name] = np.fromiter((v for x in lists for v in x), dtype=np.int32, count=int(start[-1]))
            self._arrays = a
        return self._arrays


def chunk_key(op, b0, b1, x0, x1, col0=0, col1=0):
    """The identity of a chunk that a --trace record and a graph task share: its operation and
    range (trace.h's columns), the columns of a tile or of a column-cut product included (a trace
    from before they were recorded gives 0, 0: such a task matches no record)."""
    return (int(op), int(b0), int(b1), int(x0), int(x1), int(col0), int(col1))


def _fail(path, problem):
    raise StudyError(f"{path}: {problem}")


def parse(doc, path, lists=True):
    """A Graph from the decoded JSON of a --describe-graph file; StudyError naming the file and
    the field that is wrong. lists=False: of a version 2 file only the arrays (Graph.arrays()) are
    made, for a graph that is checked and cached but not used (its per-task lists stay empty)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        _fail(path, f"not a task graph (expected \"format\": \"{FORMAT}\")")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version not in VERSIONS:
        _fail(path, f"version {version!r} is not one of {', '.join(map(str, VERSIONS))}")
    for name, kind in (("variant", str), ("schedule", str), ("threads", int), ("barrier_per_phase", bool),
                       ("ops", list), ("chunks", dict if version == 2 else list)):
        if not isinstance(doc.get(name), kind) or (kind is int and isinstance(doc.get(name), bool)):
            _fail(path, f"{name}: expected {kind.__name__}, got {doc.get(name)!r}")
    if doc["schedule"] not in (STATIC, DATAFLOW):
        _fail(path, f"schedule: expected {STATIC} or {DATAFLOW}, got {doc['schedule']!r}")
    if doc["threads"] < 1:
        _fail(path, f"threads: {doc['threads']} is not positive")
    ops = doc["ops"]
    for i, op in enumerate(ops):
        if not isinstance(op, dict) or op.get("op") != i or op.get("phase") not in PHASES:
            _fail(path, f"ops[{i}]: expected an operation numbered {i} with a phase")
    g = Graph(doc["variant"], doc["schedule"], doc["threads"], doc["barrier_per_phase"], ops, path=str(path))
    if version == 2:
        return _parse_columns(g, doc["chunks"], path, lists)
    tasks = doc["chunks"]
    if not tasks:
        _fail(path, "chunks: empty")
    n = len(tasks)
    dataflow = doc["schedule"] == DATAFLOW
    if _by_columns(g, tasks, len(ops), doc["threads"], dataflow):
        return g
    # something is wrong: task by task, to name the first chunk and field that is
    for i, t in enumerate(tasks):
        if not isinstance(t, dict):
            _fail(path, f"chunks[{i}]: expected an object")
        for name in TASK_FIELDS:
            v = t.get(name)
            if name == "phase":
                ok = v in PHASES
            else:
                ok = isinstance(v, int) and not isinstance(v, bool)
            if not ok:
                _fail(path, f"chunks[{i}].{name}: bad value {v!r}")
        if t["id"] != i:
            _fail(path, f"chunks[{i}].id: {t['id']} (tasks must be numbered in order)")
        if not 0 <= t["op"] < len(ops):
            _fail(path, f"chunks[{i}].op: {t['op']} names no operation")
        if t["flops"] < 0 or t["bytes"] < 0:
            _fail(path, f"chunks[{i}]: negative flops or bytes")
        if not dataflow and not 0 <= t["thread"] < doc["threads"]:
            _fail(path, f"chunks[{i}].thread: {t['thread']} outside 0..{doc['threads'] - 1}")
        g.op.append(t["op"])
        g.phase.append(t["phase"])
        g.thread.append(t["thread"])
        g.flops.append(t["flops"])
        g.bytes.append(t["bytes"])
        g.key.append(chunk_key(t["op"], t["b0"], t["b1"], t["x0"], t["x1"], t["col0"], t["col1"]))
        if dataflow:
            for name in ("succ", "next_succ"):
                lst = t.get(name)
                if not isinstance(lst, list) or not all(isinstance(s, int) and 0 <= s < n for s in lst):
                    _fail(path, f"chunks[{i}].{name}: expected a list of task ids below {n}")
            if any(s <= i for s in t["succ"]):
                _fail(path, f"chunks[{i}].succ: a successor in the same iteration must come later in the list")
            g.succ.append(list(t["succ"]))
            g.next_succ.append(list(t["next_succ"]))
    return g


def _int_column(path, where, value, n=None):
    """A list of JSON integers as an int64 array; StudyError naming `where` otherwise."""
    import numpy as np
    if not isinstance(value, list):
        _fail(path, f"{where}: expected a list of integers, got {type(value).__name__}")
    try:
        a = np.asarray(value) if value else np.zeros(0, dtype=np.int64)
    except (ValueError, OverflowError):  # lists of unequal lengths inside, integers beyond 64 bits
        a = None
    if a is None or a.ndim != 1 or a.dtype.kind not in "iu":
        _fail(path, f"{where}: expected a list of integers")
    if n is not None and len(a) != n:
        _fail(path, f"{where}: {len(a)} entries, expected {n}")
    return a.astype(np.int64, copy=False)


def _expand_runs(path, where, value, n, later):
    """(start[n + 1], flat successors) as int32 compressed rows from version 2's runs; `later`: every
    successor must come after its task (the same iteration)."""
    import numpy as np
    if not isinstance(value, dict):
        _fail(path, f"{where}: expected {{runs, first, length}}")
    runs = _int_column(path, f"{where}.runs", value.get("runs"), n)
    if len(runs) and runs.min() < 0:
        _fail(path, f"{where}.runs: negative")
    first = _int_column(path, f"{where}.first", value.get("first"), int(runs.sum()))
    length = _int_column(path, f"{where}.length", value.get("length"), len(first))
    if len(first) and (length.min() < 1 or first.min() < 0 or (first + length).max() > n):
        _fail(path, f"{where}: a run of task ids outside 0..{n - 1}")
    if later and (first <= np.repeat(np.arange(n), runs)).any():
        _fail(path, f"{where}: a successor in the same iteration must come later in the list")
    return runs_to_rows(runs, first, length)


def runs_to_rows(runs, first, length):
    """(start[n + 1], flat) int32 compressed rows of successor runs: task i has runs[i] runs, each
    `length` consecutive ids from `first` (the arrays as checked by the caller)."""
    import numpy as np
    n = len(runs)
    owner = np.repeat(np.arange(n), runs)
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, weights=length, minlength=n).astype(np.int64), out=start[1:])
    offsets = np.cumsum(length) - length  # where each run begins in the flat list
    flat = np.repeat(first - offsets, length) + np.arange(int(start[-1]), dtype=np.int64)
    return start.astype(np.int32), flat.astype(np.int32)


def rows_to_runs(start, flat):
    """(runs[n], first, length) int64 of compressed rows: maximal runs of consecutive ids."""
    import numpy as np
    n = len(start) - 1
    owner = np.repeat(np.arange(n), np.diff(start))
    begins = np.ones(len(flat), dtype=bool)
    begins[1:] = (flat[1:] != flat[:-1] + 1) | (owner[1:] != owner[:-1])
    at = np.flatnonzero(begins)
    length = np.diff(np.append(at, len(flat)))
    return (np.bincount(owner[at], minlength=n).astype(np.int64), flat[at].astype(np.int64),
            length.astype(np.int64))


def _parse_columns(g, chunks, path, lists=True):
    """Fills `g` from version 2's columns (checked whole, with numpy) and returns it."""
    import numpy as np
    n = chunks.get("count")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        _fail(path, f"chunks.count: expected a positive integer, got {n!r}")
    col = {name: _int_column(path, f"chunks.{name}", chunks.get(name), n) for name in COLUMNS}
    ops = g.ops
    if col["op"].min() < 0 or col["op"].max() >= len(ops):
        _fail(path, f"chunks.op: an operation outside 0..{len(ops) - 1}")
    if col["flops"].min() < 0 or col["bytes"].min() < 0:
        _fail(path, "chunks: negative flops or bytes")
    if g.schedule == STATIC and (col["thread"].min() < 0 or col["thread"].max() >= g.threads):
        _fail(path, f"chunks.thread: a thread outside 0..{g.threads - 1}")
    phase = np.asarray([PHASES.index(op["phase"]) for op in ops], dtype=np.int32)[col["op"]]
    a = {"op": col["op"].astype(np.int32), "thread": col["thread"].astype(np.int32), "phase": phase,
         "flops": col["flops"], "bytes": col["bytes"],
         "key": np.stack([col[k] for k in ("op", "b0", "b1", "x0", "x1", "col0", "col1")], axis=1)}
    if g.schedule == DATAFLOW:
        a["succ_start"], a["succ"] = _expand_runs(path, "chunks.succ", chunks.get("succ"), n, True)
        a["next_start"], a["next_succ"] = _expand_runs(path, "chunks.next_succ", chunks.get("next_succ"), n, False)
    else:
        for start, flat in (("succ_start", "succ"), ("next_start", "next_succ")):
            a[start], a[flat] = np.zeros(n + 1, dtype=np.int32), np.zeros(0, dtype=np.int32)
    g._arrays = a
    if lists:  # per-task lists, what the Python side of predict reads (the keys when asked for)
        g.op, g.thread = a["op"].tolist(), a["thread"].tolist()
        g.flops, g.bytes = a["flops"].tolist(), a["bytes"].tolist()
        g.phase = [PHASES[i] for i in phase.tolist()]
    return g


def cache_path(path):
    """FILE.npz beside a graph file FILE: load()'s arrays of it."""
    path = Path(path)
    return path.with_name(path.name + ".npz")


def _stamp(stat):
    return [stat.st_size, stat.st_mtime_ns, CACHE_VERSION]


# the cache keeps the successors as runs, as version 2 does (the expanded lists of a 112-thread d12
# graph took 7 MB a file): (prefix in the cache, start and flat arrays of Graph.arrays())
CACHED_RUNS = (("succ", "succ_start", "succ"), ("next", "next_start", "next_succ"))


def _from_cache(path, stat):
    """The Graph kept in `path`'s cache, or None (no cache, another file, unreadable)."""
    import numpy as np
    try:
        with np.load(cache_path(path), allow_pickle=False) as z:
            head = json.loads(bytes(z["head"]).decode())
            if head.get("stamp") != _stamp(stat):
                return None
            a = {name: z[name] for name in z.files if name != "head"}
        for prefix, start, flat in CACHED_RUNS:
            a[start], a[flat] = runs_to_rows(*(a.pop(f"{prefix}_{part}") for part in ("runs", "first", "length")))
        a["key"] = a["key"].astype(np.int64)
        if not _arrays_hold(a, head):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    g = Graph(head["variant"], head["schedule"], head["threads"], head["barrier_per_phase"], head["ops"],
              path=str(path))
    g.op, g.thread, g.flops, g.bytes = a["op"].tolist(), a["thread"].tolist(), a["flops"].tolist(), a["bytes"].tolist()
    g.phase = [PHASES[i] for i in a["phase"].tolist()]
    g._arrays = a
    return g


def _arrays_hold(a, head):
    """Whether cached arrays are what parse() accepts (a damaged cache must not reach the native
    replay, which trusts its indices): consistent lengths, operations, phases and threads in range,
    successors in range and, in the same iteration, later in the list."""
    import numpy as np
    n = len(a["op"])
    if n == 0 or any(len(a[k]) != n for k in ("thread", "phase", "flops", "bytes")) or a["key"].shape != (n, 7):
        return False
    if a["op"].min() < 0 or a["op"].max() >= len(head["ops"]) or a["phase"].min() < 0 or \
            a["phase"].max() >= len(PHASES) or a["flops"].min() < 0 or a["bytes"].min() < 0:
        return False
    if head["schedule"] == STATIC and (a["thread"].min() < 0 or a["thread"].max() >= head["threads"]):
        return False
    for start, flat, later in (("succ_start", "succ", True), ("next_start", "next_succ", False)):
        st, values = a[start], a[flat]
        if len(st) != n + 1 or st[0] != 0 or st[-1] != len(values) or (np.diff(st) < 0).any():
            return False
        if len(values) and (values.min() < 0 or values.max() >= n):
            return False
        if later and len(values) and (values <= np.repeat(np.arange(n), np.diff(st))).any():
            return False
    return True


def _write_cache(path, graph, stat):
    """Best effort: a directory that cannot be written to just has no cache."""
    import numpy as np
    head = {"stamp": _stamp(stat), "variant": graph.variant, "schedule": graph.schedule, "threads": graph.threads,
            "barrier_per_phase": graph.barrier_per_phase, "ops": graph.ops}
    arrays = dict(graph.arrays())
    for prefix, start, flat in CACHED_RUNS:
        for part, values in zip(("runs", "first", "length"), rows_to_runs(arrays.pop(start), arrays.pop(flat))):
            arrays[f"{prefix}_{part}"] = values.astype(np.int32)
    key = arrays["key"]
    if len(key) and -2**31 <= key.min() and key.max() < 2**31:  # ranges and operation indices: half the bytes
        arrays["key"] = key.astype(np.int32)
    target = cache_path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            np.savez(f, head=np.frombuffer(json.dumps(head).encode(), dtype=np.uint8), **arrays)
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)


def _by_columns(g, tasks, n_ops, threads, dataflow):
    """Fills `g` from the chunks field by field and checks them a column at a time (the check
    parse() makes task by task, five times faster on graphs of 50,000 tasks); False, with `g`
    untouched, when any check fails: parse() then finds and names the fault."""
    n = len(tasks)
    try:
        cols = {name: [t[name] for t in tasks] for name in TASK_FIELDS}
        if dataflow:
            succ = [t["succ"] for t in tasks]
            next_succ = [t["next_succ"] for t in tasks]
    except (TypeError, KeyError):
        return False
    for name in TASK_FIELDS:
        if name != "phase" and not set(map(type, cols[name])) <= {int}:  # bool is not int here
            return False
    if not set(cols["phase"]) <= set(PHASES) or cols["id"] != list(range(n)):
        return False
    if min(cols["op"]) < 0 or max(cols["op"]) >= n_ops or min(cols["flops"]) < 0 or min(cols["bytes"]) < 0:
        return False
    if not dataflow and (min(cols["thread"]) < 0 or max(cols["thread"]) >= threads):
        return False
    if dataflow:
        if not set(map(type, succ)) <= {list} or not set(map(type, next_succ)) <= {list}:
            return False
        for lists in (succ, next_succ):
            if not set(map(type, chain.from_iterable(lists))) <= {int}:
                return False
            filled = [lst for lst in lists if lst]
            if filled and (min(map(min, filled)) < 0 or max(map(max, filled)) >= n):
                return False
        if not all(min(lst) > i for i, lst in enumerate(succ) if lst):
            return False
    g.op, g.phase, g.thread = cols["op"], cols["phase"], cols["thread"]
    g.flops, g.bytes = cols["flops"], cols["bytes"]
    g.key = list(zip(cols["op"], cols["b0"], cols["b1"], cols["x0"], cols["x1"], cols["col0"], cols["col1"]))
    if dataflow:  # the decoded lists themselves: nothing else holds them
        g._succ, g._next_succ = succ, next_succ
    return True


def load(path, cache=True, lists=True):
    """The Graph in a --describe-graph file; with `cache`, read from and kept in its cache file
    (`lists`: as parse())."""
    try:
        stat = os.stat(path)
        if cache:
            graph = _from_cache(path, stat)
            if graph is not None:
                return graph
        text = Path(path).read_text()
    except OSError as err:
        raise StudyError(f"{path}: cannot read the task graph: {err.strerror}") from None
    try:
        doc = json.loads(text)
    except ValueError as err:
        raise StudyError(f"{path}: not JSON: {err}") from None
    graph = parse(doc, path, lists)
    if cache:
        _write_cache(path, graph, stat)
    return graph


def describe(binary, args, out_path, timeout_s=120, keep=True):
    """Runs `binary ARGS --describe-graph OUT_PATH` (the model and chunking options in ARGS) and
    loads what it wrote; StudyError with the binary's own message when it fails. keep=False: the
    graph is checked and cached beside the file, and None returned (--best describes hundreds of
    graphs in one pass and reads them in another)."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.name}.{os.getpid()}.tmp")  # processes describing at once
    cmd = [str(binary), *args, "--describe-graph", str(tmp)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError:
        raise StudyError(f"{binary}: no such binary (build it with make)") from None
    except subprocess.TimeoutExpired:
        raise StudyError(f"{binary}: --describe-graph did not finish in {timeout_s} s") from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        tmp.unlink(missing_ok=True)
        raise StudyError(f"{binary}: --describe-graph failed (exit {done.returncode}): {tail}")
    graph = load(tmp, cache=False, lists=keep)
    tmp.replace(out_path)
    graph.path = str(out_path)
    _write_cache(out_path, graph, os.stat(out_path))
    return graph if keep else None
