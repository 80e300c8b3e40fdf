"""The task graph of one training step as a variant schedules it: the reading side of a binary's
`--describe-graph FILE` (core/schedule.c writes it; README.md, "Task graph export", documents it).
This module owns the format on the Python side; nothing else parses the file.

Format "gpt2-perfstudy-graph", version 1: one JSON object with
    variant, schedule ("static" | "dataflow"), threads, barrier_per_op (static), barrier_per_phase,
    B, T, chunking (dataflow: batch_subsize, token_chunk, channel_chunk, tile_columns,
    tile_in_channels, tile_sequences),
    ops:   [{op, kernel, label, layer, phase, split, cut_columns, flops, bytes}]   in step order
    chunks: [{id, op, phase, b0, b1, x0, x1, col0, col1, thread, flops, bytes
             [, succ, next_succ]}]   ids 0..n-1 in listing order
static: each operation's chunks run on the thread named, a barrier after every operation.
dataflow: succ lists the tasks of the same iteration that wait for this one, next_succ those of
the next iteration; barrier_per_phase says whether a wait closes each phase (and so each step).
"""

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from pstudy.errors import StudyError

FORMAT = "gpt2-perfstudy-graph"
VERSION = 1
STATIC, DATAFLOW = "static", "dataflow"
PHASES = ("forward", "backward", "update")
TASK_FIELDS = ("id", "op", "phase", "b0", "b1", "x0", "x1", "col0", "col1", "thread", "flops", "bytes")


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
    key: list = field(default_factory=list)       # per task: chunk_key()
    succ: list = field(default_factory=list)      # per task: successors in the same iteration
    next_succ: list = field(default_factory=list)  # per task: successors in the next iteration
    path: str = ""

    @property
    def n_tasks(self):
        return len(self.op)


def chunk_key(op, b0, b1, x0, x1, col0=0, col1=0):
    """The identity of a chunk that a --trace record and a graph task share: its operation and
    range (trace.h's columns), the columns of a tile or of a column-cut product included (a trace
    from before they were recorded gives 0, 0: such a task matches no record)."""
    return (int(op), int(b0), int(b1), int(x0), int(x1), int(col0), int(col1))


def _fail(path, problem):
    raise StudyError(f"{path}: {problem}")


def parse(doc, path):
    """A Graph from the decoded JSON of a --describe-graph file; StudyError naming the file and
    the field that is wrong."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        _fail(path, f"not a task graph (expected \"format\": \"{FORMAT}\")")
    if doc.get("version") != VERSION:
        _fail(path, f"version {doc.get('version')!r} is not {VERSION}")
    for name, kind in (("variant", str), ("schedule", str), ("threads", int), ("barrier_per_phase", bool),
                       ("ops", list), ("chunks", list)):
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
    tasks = doc["chunks"]
    if not tasks:
        _fail(path, "chunks: empty")
    n = len(tasks)
    dataflow = doc["schedule"] == DATAFLOW
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


def load(path):
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise StudyError(f"{path}: cannot read the task graph: {err.strerror}") from None
    try:
        doc = json.loads(text)
    except ValueError as err:
        raise StudyError(f"{path}: not JSON: {err}") from None
    return parse(doc, path)


def describe(binary, args, out_path, timeout_s=120):
    """Runs `binary ARGS --describe-graph OUT_PATH` (the model and chunking options in ARGS) and
    loads what it wrote; StudyError with the binary's own message when it fails."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + ".tmp")
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
    graph = load(tmp)
    tmp.replace(out_path)
    graph.path = str(out_path)
    return graph
