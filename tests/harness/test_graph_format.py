"""The task graph file's two versions (pstudy.store.taskgraph): version 2, the binaries' columns
with successors as runs of consecutive ids, reads as the same graph as version 1's task objects;
the binaries write version 2; every fault in a version 2 file is named."""

import json
import random
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build" / "gcc" / "fast"
PERFSTUDY = REPO / "harness" / "perfstudy"

from pstudy.errors import StudyError
from pstudy.store import taskgraph

PHASES = ("forward", "backward", "update")


def runs_of(ids):
    """[(first, length)] of a sorted list of ids: maximal runs of consecutive ones."""
    out = []
    for v in ids:
        if out and v == out[-1][0] + out[-1][1]:
            out[-1][1] += 1
        else:
            out.append([v, 1])
    return out


def to_version2(doc):
    """The version 2 rendering of a version 1 document (written here independently of the binary)."""
    tasks = doc["chunks"]
    chunks = {"count": len(tasks)}
    for name in taskgraph.COLUMNS:
        chunks[name] = [t[name] for t in tasks]
    if doc["schedule"] == taskgraph.DATAFLOW:
        for name in ("succ", "next_succ"):
            per = [runs_of(t[name]) for t in tasks]
            chunks[name] = {"runs": [len(r) for r in per], "first": [f for r in per for f, _ in r],
                            "length": [n for r in per for _, n in r]}
    return {**doc, "version": 2, "chunks": chunks}


def to_version1(doc):
    """The version 1 rendering of a version 2 document (successor runs spelled out)."""
    c = doc["chunks"]
    n = c["count"]
    spelled = {}
    for name in ("succ", "next_succ"):
        if name not in c:
            continue
        lists, k = [], 0
        for count in c[name]["runs"]:
            ids = []
            for first, length in zip(c[name]["first"][k:k + count], c[name]["length"][k:k + count]):
                ids += range(first, first + length)
            lists.append(ids)
            k += count
        spelled[name] = lists
    tasks = []
    for i in range(n):
        t = {"id": i, "phase": doc["ops"][c["op"][i]]["phase"], **{name: c[name][i] for name in taskgraph.COLUMNS}}
        for name, lists in spelled.items():
            t[name] = lists[i]
        tasks.append(t)
    return {**doc, "version": 1, "chunks": tasks}


def random_doc(seed, schedule):
    rng = random.Random(seed)
    n_ops = rng.randint(1, 5)
    ops = [{"op": i, "kernel": "k", "label": f"op{i}", "layer": -1, "phase": rng.choice(PHASES), "split": "rows",
            "cut_columns": 0, "flops": 1, "bytes": 1} for i in range(n_ops)]
    n = rng.randint(1, 60)
    threads = rng.randint(1, 4)
    tasks = []
    for i in range(n):
        o = rng.randrange(n_ops)
        t = {"id": i, "op": o, "phase": ops[o]["phase"], "b0": i, "b1": i + 1, "x0": rng.randint(0, 3),
             "x1": rng.randint(4, 9), "col0": 16 * rng.randint(0, 2), "col1": 16 * rng.randint(0, 4),
             "thread": rng.randrange(threads) if schedule == "static" else -1,
             "flops": rng.randint(0, 10**12), "bytes": rng.randint(0, 10**10)}
        if schedule == "dataflow":
            # runs and isolated ids alike: a block of consecutive successors, then a few stragglers
            later = list(range(i + 1, n))
            block = later[:rng.randint(0, min(len(later), 12))]
            t["succ"] = sorted(set(block) | set(rng.sample(later, min(len(later), rng.randint(0, 3)))))
            t["next_succ"] = sorted(set(rng.sample(range(n), rng.randint(0, min(n, 6)))))
        tasks.append(t)
    return {"format": taskgraph.FORMAT, "version": 1, "variant": "x", "schedule": schedule, "threads": threads,
            "barrier_per_phase": schedule == "static" or rng.random() < 0.5, "ops": ops, "chunks": tasks}


def same_graph(a, b):
    assert (a.variant, a.schedule, a.threads, a.barrier_per_phase, a.ops) == \
        (b.variant, b.schedule, b.threads, b.barrier_per_phase, b.ops)
    assert (a.op, a.phase, a.thread, a.flops, a.bytes, a.key) == (b.op, b.phase, b.thread, b.flops, b.bytes, b.key)
    assert a.succ == b.succ and a.next_succ == b.next_succ
    x, y = a.arrays(), b.arrays()
    assert sorted(x) == sorted(y)
    for name in x:
        assert x[name].dtype == y[name].dtype and np.array_equal(x[name], y[name]), name


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("schedule", ["dataflow", "static"])
def test_both_versions_read_as_the_same_graph(seed, schedule):
    doc = random_doc(seed, schedule)
    same_graph(taskgraph.parse(doc, "v1"), taskgraph.parse(to_version2(doc), "v2"))


built = pytest.mark.skipif(not (BUILD / "gpt2-taskiter").exists(), reason="no built binaries (make)")


@built
@pytest.mark.parametrize("variant, args", [
    ("taskiter", ["--config", "tiny", "--threads", "3"]),
    ("tasks", ["--config", "tiny", "--threads", "2", "--batch-subsize", "1", "--token-chunk", "16"]),
    ("taskiter", ["--config", "small", "--threads", "16"]),
    ("forkjoin", ["--config", "tiny", "--threads", "2"]),
    ("seq", ["--config", "tiny"]),
])
def test_binaries_write_version_2_with_maximal_runs(tmp_path, variant, args):
    out = tmp_path / "g.json"
    proc = subprocess.run([BUILD / f"gpt2-{variant}", *args, "--describe-graph", out], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["version"] == taskgraph.VERSION == 2
    c = doc["chunks"]
    assert all(len(c[name]) == c["count"] for name in taskgraph.COLUMNS)
    if doc["schedule"] == taskgraph.DATAFLOW:
        for name in ("succ", "next_succ"):
            k = 0
            for count in c[name]["runs"]:  # no two runs of one task that could be one
                firsts, lengths = c[name]["first"][k:k + count], c[name]["length"][k:k + count]
                assert all(f + n < g for f, n, g in zip(firsts, lengths, firsts[1:]))
                k += count
        assert sum(c["succ"]["length"]) > len(c["succ"]["first"])  # runs longer than one id occur
    else:
        assert "succ" not in c
    same_graph(taskgraph.load(out, cache=False), taskgraph.parse(to_version1(doc), "v1"))


def good_v2():
    doc = random_doc(3, "dataflow")
    doc["chunks"] = doc["chunks"][:4]
    for i, t in enumerate(doc["chunks"]):
        t["succ"] = list(range(i + 1, 4))
        t["next_succ"] = [i]
    return to_version2(doc)


def set_path(doc, path, value):
    *head, last = path
    node = doc
    for key in head:
        node = node[key]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value


@pytest.mark.parametrize("path, value, message", [
    (("version",), 3, r"version 3 is not one of 1, 2"),
    (("version",), 2.0, r"version 2\.0 is not one of"),
    (("chunks",), [], r"chunks: expected dict"),
    (("chunks", "count"), 0, r"chunks\.count: expected a positive integer, got 0"),
    (("chunks", "count"), True, r"chunks\.count: expected a positive integer"),
    (("chunks", "op"), KeyError, r"chunks\.op: expected a list of integers, got NoneType"),
    (("chunks", "b0"), [0, 1, 2], r"chunks\.b0: 3 entries, expected 4"),
    (("chunks", "flops"), [1, 2.5, 3, 4], r"chunks\.flops: expected a list of integers"),
    (("chunks", "bytes"), [1, "2", 3, 4], r"chunks\.bytes: expected a list of integers"),
    (("chunks", "x0"), [[0], [1, 2], 3, 4], r"chunks\.x0: expected a list of integers"),
    (("chunks", "col1"), [2**70, 0, 0, 0], r"chunks\.col1: expected a list of integers"),
    (("chunks", "op"), [0, 0, 0, 99], r"chunks\.op: an operation outside"),
    (("chunks", "bytes"), [1, -2, 3, 4], r"chunks: negative flops or bytes"),
    (("chunks", "succ"), [1, 2], r"chunks\.succ: expected \{runs, first, length\}"),
    (("chunks", "succ", "runs"), [1, 1, 1], r"chunks\.succ\.runs: 3 entries, expected 4"),
    (("chunks", "succ", "runs"), [1, 1, 2, -1], r"chunks\.succ\.runs: negative"),
    (("chunks", "succ", "first"), [1, 2], r"chunks\.succ\.first: 2 entries, expected 3"),
    (("chunks", "succ", "length"), [3, 2, 0], r"chunks\.succ: a run of task ids outside 0\.\.3"),
    (("chunks", "succ", "length"), [3, 2, 2], r"chunks\.succ: a run of task ids outside 0\.\.3"),
    (("chunks", "succ", "first"), [1, 1, 3], r"chunks\.succ: a successor in the same iteration must come later"),
    (("chunks", "next_succ", "first"), [0, 1, 2, -1], r"chunks\.next_succ: a run of task ids outside"),
])
def test_each_fault_of_version_2_is_named(path, value, message):
    doc = good_v2()
    taskgraph.parse(doc, "hand-made")  # the unchanged document is good
    set_path(doc, path, value)
    with pytest.raises(StudyError, match="hand-made: " + message):
        taskgraph.parse(doc, "hand-made")


def test_a_static_chunk_on_a_thread_the_graph_lacks_is_named():
    doc = to_version2(random_doc(5, "static"))
    doc["chunks"]["thread"][0] = doc["threads"]
    with pytest.raises(StudyError, match=rf"hand-made: chunks\.thread: a thread outside 0\.\.{doc['threads'] - 1}"):
        taskgraph.parse(doc, "hand-made")


@pytest.mark.parametrize("x1", [9, 2**40])  # the cache halves the keys where they fit in 32 bits
def test_version_2_caches_as_version_1_did(tmp_path, x1):
    path = tmp_path / "g.json"
    doc = good_v2()
    doc["chunks"]["x1"][1] = x1
    path.write_text(json.dumps(doc))
    first = taskgraph.load(path)
    assert taskgraph.cache_path(path).is_file() and first.key[1][4] == x1
    same_graph(taskgraph.load(path), first)


@pytest.mark.parametrize("name, damage", [
    ("succ_runs", lambda a: a[:-1]),             # one task short
    ("succ_length", lambda a: -a),              # negative lengths: no expansion
    ("next_first", lambda a: a + 10**6),         # past the graph
])
def test_a_damaged_cache_of_runs_is_remade(tmp_path, name, damage):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(good_v2()))
    first = taskgraph.load(path)
    cache = taskgraph.cache_path(path)
    with np.load(cache) as z:
        arrays = {k: z[k] for k in z.files}
    assert {"succ_runs", "succ_first", "succ_length", "next_runs", "next_first", "next_length"} <= set(arrays)
    arrays[name] = damage(arrays[name])
    with open(cache, "wb") as f:
        np.savez(f, **arrays)
    same_graph(taskgraph.load(path), first)
    with np.load(cache) as z:  # and written again, whole
        assert len(z["succ_runs"]) == first.n_tasks and z["succ_length"].min() > 0
        assert z["next_first"].max() < first.n_tasks


@built
def test_describing_without_keeping_caches_the_same_graph(tmp_path):
    args = ["--config", "tiny", "--threads", "3", "--batch-subsize", "1", "--token-chunk", "16"]
    kept = taskgraph.describe(BUILD / "gpt2-taskiter", args, tmp_path / "a.json")
    assert taskgraph.describe(BUILD / "gpt2-taskiter", args, tmp_path / "b.json", keep=False) is None
    assert taskgraph.cache_path(tmp_path / "b.json").is_file()
    same_graph(taskgraph.load(tmp_path / "b.json"), kept)
    same_graph(taskgraph.load(tmp_path / "b.json", cache=False), kept)
