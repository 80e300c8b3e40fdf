"""The native replay (harness/replay/replay.c via pstudy.analyse.replay) against the Python reference
(pstudy.analyse.simulate): the same step times, busy times and stretches, bit for bit, on random
hand-made graphs of every schedule, with and without the contention model, and on graphs the
binaries describe."""

import random
import subprocess
import sys
from pathlib import Path

import pytest

from pstudy.analyse import contention, replay, simulate
from pstudy.store import machinefiles, taskgraph
from pstudy.store import topology as topo

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build" / "gcc" / "fast"

pytestmark = pytest.mark.skipif(replay.library() is None, reason=f"{replay.LIBRARY} not built (make)")


def both(graph, work, machine, cores, iterations=4, node=None):
    """(native, python) results as comparable tuples."""
    out = []
    for engine in ("native", "python"):
        step, o = simulate.step_time(graph, work, machine, cores, iterations, node, engine=engine)
        out.append((step, o.makespan, list(o.busy), o.nominal, dict(o.stretch)))
    return out


def random_graph(rng, n, schedule, threads=4, phases=("forward", "backward", "update")):
    ops, tasks = [], []
    n_ops = max(1, n // 6)
    for o in range(n_ops):
        ops.append({"op": o, "kernel": "k", "label": f"op{o}", "layer": -1,
                    "phase": phases[min(len(phases) - 1, 3 * o // n_ops)], "split": "rows", "cut_columns": 0,
                    "flops": 1, "bytes": 1})
    op_of = sorted(rng.randrange(n_ops) for _ in range(n))
    for i in range(n):
        t = {"id": i, "op": op_of[i], "phase": ops[op_of[i]]["phase"], "b0": i, "b1": i + 1, "x0": 0, "x1": 1,
             "col0": 0, "col1": 0, "thread": rng.randrange(threads) if schedule == "static" else -1,
             "flops": rng.randrange(1, 1000), "bytes": rng.randrange(0, 1000)}
        if schedule == "dataflow":
            t["succ"] = sorted({rng.randrange(i + 1, n) for _ in range(rng.randrange(3))}) if i < n - 1 else []
            t["next_succ"] = sorted({rng.randrange(n) for _ in range(rng.randrange(2))})
        tasks.append(t)
    return tasks, ops


def make_graph(rng, n, schedule, barrier_per_phase=False, threads=4):
    tasks, ops = random_graph(rng, n, schedule, threads)
    return taskgraph.parse({"format": taskgraph.FORMAT, "version": 1, "variant": "x", "schedule": schedule,
                            "threads": threads, "barrier_per_phase": barrier_per_phase, "ops": ops,
                            "chunks": tasks}, "hand-made")


def random_work(rng, n, zeros=0.1):
    durations = [0.0 if rng.random() < zeros else rng.uniform(1e-4, 1e-2) for _ in range(n)]
    dram = [rng.uniform(0, 2e10) * d for d in durations]  # up to 20 GB/s: bandwidth binds
    compute = [rng.uniform(0, 1) for _ in range(n)]
    return simulate.Work(durations, dram, compute)


def smt_machine(cores=4):
    # 2 hardware threads a core, a clock that falls with busy cores, bandwidth that saturates
    t = topo.synthetic(1, cores // 2, 2, siblings="adjacent")
    return machinefiles.Machine("test", False, cores, 10.0, (1, 2, 4), (10.0, 16.0, 18.0),
                                peak_threads=(1, 2, 4), peak_gflops=(10.0, 18.0, 24.0), places="threads",
                                topology=t)


CASES = [("static", False), ("dataflow", True), ("dataflow", False)]


@pytest.mark.parametrize("schedule,barrier", CASES, ids=["static", "phases", "iterations"])
@pytest.mark.parametrize("seed", range(6))
def test_native_equals_python_on_random_graphs(schedule, barrier, seed):
    rng = random.Random(seed)
    n = rng.randrange(20, 300)
    g = make_graph(rng, n, schedule, barrier)
    w = random_work(rng, n)
    plain = machinefiles.Machine("test", False, 8, 10.0, (1, 8), (12.0, 30.0))
    for cores in (1, 3, 4):
        native, python = both(g, w, plain, cores)  # a static graph runs on its 4 threads whatever it is told
        assert native == python
        native, python = both(g, w, None, cores)
        assert native == python
    m = smt_machine()
    for thief in (0.0, 4e9):
        node = contention.Node(m, 4, background_Bs=thief)
        native, python = both(g, w, m, 4, 3, node)
        assert native == python
        # held back somewhere: the comparison covers the contended paths, not only rates of 1
        assert python[4]["bandwidth"] + python[4]["compute"] > 0


def test_native_raises_on_a_deadlock_as_python_does():
    tasks, ops = random_graph(random.Random(1), 3, "dataflow")
    for i, t in enumerate(tasks):  # a cycle across iterations: 0 waits for 2 of the same iteration
        t["succ"], t["next_succ"] = ([i + 1] if i < 2 else []), []
    tasks[2]["next_succ"] = []
    g = taskgraph.parse({"format": taskgraph.FORMAT, "version": 1, "variant": "x", "schedule": "dataflow",
                         "threads": 1, "barrier_per_phase": False, "ops": ops, "chunks": tasks}, "hand-made")
    g.succ[2] = [0]  # parse() refuses a backward edge; the engine must still not hang on one
    g._arrays = None
    w = simulate.Work([1.0] * 3, [0.0] * 3)
    for engine in ("native", "python"):
        with pytest.raises(RuntimeError, match="deadlock"):
            simulate.step_time(g, w, None, 2, engine=engine)


def test_python_is_chosen_by_the_environment(monkeypatch):
    monkeypatch.setenv("PERFSTUDY_REPLAY", "python")
    assert replay.library() is None and replay.engine_name().startswith("Python (PERFSTUDY_REPLAY=python)")
    monkeypatch.delenv("PERFSTUDY_REPLAY")
    assert replay.engine_name().startswith("native")


@pytest.mark.parametrize("variant,threads,extra", [
    ("forkjoin", 4, []), ("tasks", 4, ["--batch-subsize", "1", "--token-chunk", "16"]),
    ("taskiter", 8, ["--batch-subsize", "2", "--token-chunk", "32", "--tile-columns", "256"])])
def test_native_equals_python_on_described_graphs(tmp_path, variant, threads, extra):
    binary = BUILD / f"gpt2-{variant}"
    if not binary.exists():
        pytest.skip(f"{binary} not built")
    g = taskgraph.describe(binary, ["-B", "4", "-T", "64", "--threads", str(threads), *extra], tmp_path / "g.json")
    m = machinefiles.load("mn5-gpp")
    peak = m.peak_gflops_per_core * 1e9
    d = [max(f / (0.8 * peak), b / m.bandwidth(1)) for f, b in zip(g.flops, g.bytes)]
    w = simulate.Work(d, [float(b) for b in g.bytes], [min(1.0, f / (x * peak)) if x > 0 else 0.0
                                                       for f, x in zip(g.flops, d)])
    cores = g.threads if g.schedule == taskgraph.STATIC else threads
    native, python = both(g, w, m, cores, 4, contention.Node(m, cores))
    assert native == python


def test_work_of_another_length_is_refused_before_the_engine_reads_it():
    g = make_graph(random.Random(3), 30, "dataflow")
    w = random_work(random.Random(3), 29)
    with pytest.raises(ValueError, match="30 tasks"):
        simulate.step_time(g, w, None, 2, engine="native")


SANITIZED = r"""
import random
import test_replay as t
from pstudy.analyse import contention, simulate
from pstudy.store import machinefiles
for seed in range(4):
    for schedule, barrier in t.CASES:
        rng = random.Random(seed)
        n = rng.randrange(20, 300)
        g = t.make_graph(rng, n, schedule, barrier)
        w = t.random_work(rng, n)
        m = t.smt_machine()
        for thief in (0.0, 4e9):
            native, python = t.both(g, w, m, 4, 3, contention.Node(m, 4, background_Bs=thief))
            assert native == python
print("ok")
"""


def test_native_replay_is_clean_under_address_and_undefined_behaviour_sanitizers(tmp_path):
    import os
    import shutil
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    lib = tmp_path / "libreplay-asan.so"
    subprocess.run(["gcc", "-std=c11", "-O1", "-g", "-fPIC", "-shared", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=undefined", "-ffp-contract=off", "-o", str(lib),
                    str(REPO / "harness" / "replay" / "replay.c")], check=True, capture_output=True, timeout=120)
    runtimes = [subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
                for name in ("libasan.so", "libubsan.so")]
    env = dict(os.environ, LD_PRELOAD=" ".join(runtimes), ASAN_OPTIONS="detect_leaks=0",
               PERFSTUDY_REPLAY_LIBRARY=str(lib), PYTHONPATH=f"{REPO / 'harness'}{os.pathsep}{Path(__file__).parent}")
    script = tmp_path / "sanitized.py"
    script.write_text(SANITIZED)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr[-3000:]
