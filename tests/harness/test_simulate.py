"""The simulator (pstudy.simulate) on hand-made task graphs whose schedules are known."""

import tomllib

import pytest

from pstudy.store import machinefiles, taskgraph
from pstudy.analyse import simulate
from pstudy.errors import StudyError


def machine(cores=64, bw=None, peak=10.0):
    """A machine with bandwidth `bw` GB/s at every core count (unlimited when None)."""
    xs, ys = ([1, cores], [bw, bw]) if bw else ([1, cores], [1e9, 1e9])
    return machinefiles.Machine("test", False, cores, peak, tuple(xs), tuple(ys))


def op(i, phase="forward"):
    return {"op": i, "kernel": "k", "label": f"op{i}", "layer": -1, "phase": phase, "split": "rows",
            "cut_columns": 0, "flops": 1, "bytes": 1}


def task(i, op_index, phase="forward", thread=-1, succ=None, next_succ=None):
    t = {"id": i, "op": op_index, "phase": phase, "b0": i, "b1": i + 1, "x0": 0, "x1": 1, "col0": 0, "col1": 0,
         "thread": thread, "flops": 1, "bytes": 0}
    if succ is not None:
        t["succ"], t["next_succ"] = succ, next_succ or []
    return t


def dataflow(tasks, n_ops=1, barrier_per_phase=False, phases=None):
    ops = [op(i, (phases or {}).get(i, "forward")) for i in range(n_ops)]
    return taskgraph.parse({"format": taskgraph.FORMAT, "version": 1, "variant": "x", "schedule": "dataflow",
                            "threads": 1, "barrier_per_phase": barrier_per_phase, "ops": ops, "chunks": tasks},
                           "hand-made")


def static(ops_threads, threads):
    """ops_threads: per operation, the thread of each of its chunks."""
    tasks, ops = [], []
    for o, chunk_threads in enumerate(ops_threads):
        ops.append(op(o))
        for th in chunk_threads:
            tasks.append(task(len(tasks), o, thread=th))
    return taskgraph.parse({"format": taskgraph.FORMAT, "version": 1, "variant": "x", "schedule": "static",
                            "threads": threads, "barrier_per_phase": True, "ops": ops, "chunks": tasks}, "hand-made")


def work(durations, dram=None):
    return simulate.Work(list(durations), list(dram or [0.0] * len(durations)))


def test_chain_has_no_speedup():
    n = 10
    g = dataflow([task(i, 0, succ=[i + 1] if i + 1 < n else []) for i in range(n)], barrier_per_phase=True)
    w = work([1.0] * n)
    for p in (1, 2, 8):
        t, _ = simulate.step_time(g, w, machine(), p)
        assert t == pytest.approx(10.0)


def test_independent_equal_tasks_scale_ideally_up_to_their_count():
    n = 8
    g = dataflow([task(i, 0, succ=[]) for i in range(n)], barrier_per_phase=True)
    w = work([1.0] * n)
    for p in (1, 2, 4, 8, 16):
        t, _ = simulate.step_time(g, w, machine(), p)
        assert t == pytest.approx(n / min(p, n))  # speedup p up to 8 tasks, then flat
    t3, _ = simulate.step_time(g, w, machine(), 3)
    assert t3 == pytest.approx(3.0)  # 8 tasks on 3 cores: 3 rounds


def test_fork_join_with_one_serial_operation_follows_amdahl():
    # op 0: one serial chunk of 2 s; op 1: 8 chunks of 1 s dealt statically over P threads
    for p in (1, 2, 4, 8):
        g = static([[0], [i % p for i in range(8)]], p)
        t, out = simulate.step_time(g, work([2.0] + [1.0] * 8), machine(), p)
        assert t == pytest.approx(2.0 + 8.0 / p)
        f = simulate.pop_factors(out, p)
        assert f["parallel_eff"] == pytest.approx(10.0 / (p * t))


def test_static_schedule_keeps_its_imbalance():
    # 3 chunks on 2 threads, thread 0 gets two of them: 2 s, not 1.5 s
    g = static([[0, 0, 1]], 2)
    t, out = simulate.step_time(g, work([1.0, 1.0, 1.0]), machine(), 2)
    assert t == pytest.approx(2.0)
    assert simulate.pop_factors(out, 2)["load_balance"] == pytest.approx(0.75)


def test_bandwidth_bound_set_stops_at_the_ceiling():
    # 16 independent tasks, each 1 s alone moving 10 GB (10 GB/s each); the machine sustains 40 GB/s
    n = 16
    g = dataflow([task(i, 0, succ=[]) for i in range(n)], barrier_per_phase=True)
    w = work([1.0] * n, [10e9] * n)
    m = machine(bw=40.0)
    times = {p: simulate.step_time(g, w, m, p)[0] for p in (1, 2, 4, 8, 16)}
    assert times[1] == pytest.approx(16.0)
    assert times[4] == pytest.approx(4.0)
    # beyond 4 cores the 160 GB cannot move faster than 40 GB/s
    assert times[8] == pytest.approx(4.0)
    assert times[16] == pytest.approx(4.0)
    f = simulate.pop_factors(simulate.step_time(g, w, m, 16)[1], 16)
    assert f["computation_scalability"] == pytest.approx(0.25)


def test_compute_bound_task_keeps_its_speed_beside_memory_bound_ones():
    # max-min fairness: a task needing 1 GB/s gets it; three streaming tasks share the rest
    rates = simulate.shares([1.0, 30.0, 30.0, 30.0], 31.0)
    assert rates[0] == pytest.approx(1.0)
    assert rates[1:] == pytest.approx([10.0 / 30.0] * 3)


def test_taskwait_per_phase_separates_phases():
    # phase forward: one 1 s task; phase backward: 4 independent 1 s tasks; no edges between phases,
    # but the wait keeps the backward tasks from running beside the forward one
    tasks = [task(0, 0, succ=[])] + [task(i, 1, phase="backward", succ=[]) for i in range(1, 5)]
    g = dataflow(tasks, n_ops=2, barrier_per_phase=True, phases={1: "backward"})
    t, _ = simulate.step_time(g, work([1.0] * 5), machine(), 4)
    assert t == pytest.approx(2.0)
    g2 = dataflow(tasks, n_ops=2, barrier_per_phase=False, phases={1: "backward"})
    t2, _ = simulate.step_time(g2, work([1.0] * 5), machine(), 5)
    assert t2 == pytest.approx(1.0)  # iterations overlap completely: each ends 1 s after the last


def test_iterations_overlap_without_a_barrier():
    # a chain a -> b within an iteration and a -> a' into the next: on 2 cores, b of iteration i
    # runs beside a of iteration i+1, so a step costs 1 s instead of 2
    g = dataflow([task(0, 0, succ=[1], next_succ=[0]), task(1, 0, succ=[], next_succ=[])])
    t, _ = simulate.step_time(g, work([1.0, 1.0]), machine(), 2, iterations=6)
    assert t == pytest.approx(1.0)
    t1, _ = simulate.step_time(g, work([1.0, 1.0]), machine(), 1, iterations=6)
    assert t1 == pytest.approx(2.0)


def test_same_inputs_give_the_same_prediction():
    import random
    rng = random.Random(5)
    n = 200
    tasks = []
    for i in range(n):
        succ = sorted({rng.randrange(i + 1, n) for _ in range(2)}) if i < n - 1 else []
        tasks.append(task(i, 0, succ=succ, next_succ=[i] if i % 7 == 0 else []))
    g = dataflow(tasks)
    w = work([rng.uniform(0.1, 1.0) for _ in range(n)], [rng.uniform(0, 5e9) for _ in range(n)])
    m = machine(bw=12.0)
    first = [simulate.step_time(g, w, m, p)[0] for p in (1, 3, 8)]
    again = [simulate.step_time(g, w, m, p)[0] for p in (1, 3, 8)]
    assert first == again  # bit for bit
    assert first[0] > first[1] > first[2]


def test_bad_graph_files_are_named():
    with pytest.raises(StudyError, match="hand-made: not a task graph"):
        taskgraph.parse({"format": "other"}, "hand-made")
    bad = {"format": taskgraph.FORMAT, "version": 1, "variant": "x", "schedule": "dataflow", "threads": 1,
           "barrier_per_phase": True, "ops": [op(0)], "chunks": [task(0, 0, succ=[0])]}
    with pytest.raises(StudyError, match=r"chunks\[0\]\.succ"):
        taskgraph.parse(bad, "hand-made")


def test_machine_files_are_checked(tmp_path):
    p = tmp_path / "m.toml"
    p.write_text('name = "m"\nmeasured = false\ncores = 8\npeak_gflops_per_core = 10\n'
                 'bandwidth_cores = [1, 4]\nbandwidth_GBs = [10, 30]\n')
    m = machinefiles.load(p)
    assert m.bandwidth(1) == 10e9 and m.bandwidth(4) == 30e9 and m.bandwidth(8) == 30e9
    assert m.bandwidth(2) == pytest.approx(10e9 + 20e9 / 3)
    assert machinefiles.load(tmp_path / "m.toml") == machinefiles.check(tomllib.loads(machinefiles.to_toml(m)), p)
    p.write_text('name = "m"\nmeasured = false\ncores = 8\npeak_gflops_per_core = 10\n'
                 'bandwidth_cores = [2, 4]\nbandwidth_GBs = [10, 30]\n')
    with pytest.raises(StudyError, match="m.toml: bandwidth_cores: must start at 1"):
        machinefiles.load(p)


@pytest.mark.parametrize("name", ["mn5-gpp", "epyc-9654-2s"])
def test_shipped_machines_load(name):
    m = machinefiles.load(name)
    assert not m.measured and m.cores >= 64 and m.source


def _product(chunks, label="matmul_fwd lm_head"):
    """A graph of one product cut along its output columns into `chunks` (flops, bytes) pieces."""
    ops = [{"op": 0, "kernel": "matmul_fwd", "label": label, "layer": -1, "phase": "forward", "split": "channels",
            "cut_columns": 0, "flops": sum(f for f, _ in chunks), "bytes": 0}]
    tasks = [{"id": i, "op": 0, "phase": "forward", "b0": 0, "b1": 1, "x0": i, "x1": i + 1, "col0": 0, "col1": 0,
              "thread": -1, "flops": f, "bytes": b, "succ": [], "next_succ": []} for i, (f, b) in enumerate(chunks)]
    return taskgraph.parse({"format": taskgraph.FORMAT, "version": 1, "variant": "x", "schedule": "dataflow",
                            "threads": 1, "barrier_per_phase": False, "ops": ops, "chunks": tasks}, "hand-made")


def test_a_product_cut_finer_than_its_trace_pays_the_bytes_it_reads_again():
    from pstudy.analyse import machinescaling

    # traced whole: 1 s, 100 bytes; replayed in 4 column chunks that each read the whole 60-byte
    # input again and their 10 bytes of weight and output: 70 bytes each, 280 in all (the traced
    # 100 shared out is 25 each): each takes its quarter of the second and 45 bytes at 10 B/s
    traced = _product([(400, 100)])
    finer = _product([(100, 70)] * 4)
    medians = {taskgraph.chunk_key(0, 0, 1, 0, 1): 1.0}
    m = machinefiles.Machine("m", False, 4, 1.0, (1, 4), (10e-9, 10e-9))
    assert machinescaling.source_durations(finer, medians, "t", m, traced) == pytest.approx([0.25 + 4.5] * 4)
    # as traced, the record's time and nothing more
    assert machinescaling.source_durations(traced, medians, "t", m) == [1.0]
    # cut coarser or as finely without reading more: shares of the traced time alone
    assert machinescaling.source_durations(_product([(200, 50)] * 2), medians, "t", m, traced) == [0.5, 0.5]

    # another chunking replayed from the traced one (--best): the same bytes read again, unless
    # told it is a rank's batch
    w = machinescaling.scaled_work(finer, traced, medians, m, m, "t")
    assert w.duration == pytest.approx([0.25 + 4.5] * 4)
    assert machinescaling.scaled_work(finer, traced, medians, m, m, "t", reread=False).duration == [0.25] * 4


def test_bytes_read_again_go_at_the_machines_reread_rate():
    from dataclasses import replace
    from pstudy.analyse import machinescaling

    # as above (45 bytes read again by each of 4 chunks), with reread_GBs: 5 B/s instead of the
    # 10 B/s of STREAM at one core (a column piece's pack of its input is a transposing copy)
    traced = _product([(400, 100)])
    finer = _product([(100, 70)] * 4)
    medians = {taskgraph.chunk_key(0, 0, 1, 0, 1): 1.0}
    m = machinefiles.Machine("m", False, 4, 1.0, (1, 4), (10e-9, 10e-9), reread_GBs=5e-9)
    assert m.reread_bandwidth() == pytest.approx(5.0) and replace(m, reread_GBs=None).reread_bandwidth() == 10.0
    assert machinescaling.source_durations(finer, medians, "t", m, traced) == pytest.approx([0.25 + 9.0] * 4)
    assert machinescaling.scaled_work(finer, traced, medians, m, m, "t").duration == pytest.approx([0.25 + 9.0] * 4)
    # on another machine the bytes read again leave at the source's rate and come back at the
    # target's (its own reread_GBs, else its one-core bandwidth: here 20 B/s)
    other = machinefiles.Machine("o", False, 4, 1.0, (1, 4), (20e-9, 20e-9))
    assert machinescaling.scaled_work(finer, traced, medians, m, other, "t").duration == \
        pytest.approx([0.25 + 45 / 20] * 4)


@pytest.mark.parametrize("value", ["0", "-3", '"fast"', "true"])
def test_a_bad_reread_rate_is_one_line(tmp_path, value):
    p = tmp_path / "m.toml"
    p.write_text('name = "m"\nmeasured = false\ncores = 8\npeak_gflops_per_core = 10\n'
                 f'bandwidth_cores = [1, 4]\nbandwidth_GBs = [10, 30]\nreread_GBs = {value}\n')
    with pytest.raises(StudyError, match=r"m\.toml: reread_GBs: expected a positive number"):
        machinefiles.load(p)
    p.write_text(p.read_text().replace(f"reread_GBs = {value}", "reread_GBs = 6.5"))
    m = machinefiles.load(p)
    assert m.reread_bandwidth() == 6.5e9
    assert machinefiles.check(tomllib.loads(machinefiles.to_toml(m)), p) == m


def test_durations_move_to_another_machine_by_their_operations_roofline():
    from pstudy.analyse import machinescaling

    # op 0 a product (compute-bound on both machines), op 1 a pack pass (bytes only), op 2 an
    # operation compute-bound on the source and memory-bound on the target
    ops = [{"op": i, "kernel": "k", "label": f"op{i}", "layer": -1, "phase": "forward", "split": "rows",
            "cut_columns": 0, "flops": f, "bytes": b} for i, (f, b) in enumerate([(1000, 10), (0, 100), (400, 20)])]
    tasks = [{"id": i, "op": i, "phase": "forward", "b0": 0, "b1": 1, "x0": 0, "x1": 1, "col0": 0, "col1": 0,
              "thread": -1, "flops": ops[i]["flops"], "bytes": ops[i]["bytes"], "succ": [], "next_succ": []}
             for i in range(3)]
    g = taskgraph.parse({"format": taskgraph.FORMAT, "version": 1, "variant": "x", "schedule": "dataflow",
                         "threads": 1, "barrier_per_phase": False, "ops": ops, "chunks": tasks}, "hand-made")
    medians = {taskgraph.chunk_key(i, 0, 1, 0, 1): d for i, d in enumerate([2.0, 3.0, 1.0])}
    # source: 100 FLOP/s (peak in GFLOP/s x 1e9) and 10 B/s; target: half the peak, twice the bandwidth
    source = machinefiles.Machine("s", False, 1, 100e-9, (1, 2), (10e-9, 10e-9))
    target = machinefiles.Machine("t", False, 1, 50e-9, (1, 2), (20e-9, 20e-9))
    d = machinescaling.work_for(g, medians, source, target, "t").duration
    # product: 2 s x (1000/50) / (1000/100) = 4 s; pack: 3 s x (100/20) / (100/10) = 1.5 s;
    # op 2: 1 s x max(400/50, 20/20) / max(400/100, 20/10) = 1 s x 8 / 4 = 2 s
    assert d == pytest.approx([4.0, 1.5, 2.0])
    # on the machine the traces come from: the traced times, unchanged
    assert machinescaling.work_for(g, medians, source, source, "t").duration == [2.0, 3.0, 1.0]


def test_graph_cache_gives_the_same_graph_and_follows_the_file(tmp_path):
    import json
    import os
    tasks = [task(i, 0, succ=[i + 1] if i < 4 else [], next_succ=[0] if i == 4 else []) for i in range(5)]
    doc = {"format": taskgraph.FORMAT, "version": 1, "variant": "x", "schedule": "dataflow", "threads": 1,
           "barrier_per_phase": False, "ops": [op(0)], "chunks": tasks}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    first = taskgraph.load(path)
    assert taskgraph.cache_path(path).is_file()
    cached = taskgraph.load(path)
    assert cached == first and cached.succ == first.succ and cached.key == first.key
    assert all((cached.arrays()[k] == first.arrays()[k]).all() for k in first.arrays())
    # the file changes: the cache is not used
    tasks[1]["flops"] = 7
    path.write_text(json.dumps(doc))
    os.utime(path, ns=(1, 1))
    assert taskgraph.load(path).flops[1] == 7
    # an unreadable cache is remade from the file
    taskgraph.cache_path(path).write_bytes(b"not numpy")
    assert taskgraph.load(path).flops[1] == 7 and taskgraph.load(path).flops[1] == 7
    # a bad file is named, cache or not
    path.write_text("{")
    with pytest.raises(StudyError, match="g.json: not JSON"):
        taskgraph.load(path)


def test_a_damaged_graph_cache_is_not_used(tmp_path):
    import json
    import numpy as np
    tasks = [task(i, 0, succ=[i + 1] if i < 4 else [], next_succ=[]) for i in range(5)]
    doc = {"format": taskgraph.FORMAT, "version": 1, "variant": "x", "schedule": "dataflow", "threads": 1,
           "barrier_per_phase": False, "ops": [op(0)], "chunks": tasks}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    taskgraph.load(path)
    cache = taskgraph.cache_path(path)
    with np.load(cache) as z:
        arrays = {k: z[k] for k in z.files}
    # a successor index past the graph (the native replay would read out of bounds): the JSON is read
    arrays["succ_first"] = arrays["succ_first"].copy()
    arrays["succ_first"][0] = 99
    with open(cache, "wb") as f:
        np.savez(f, **arrays)
    g = taskgraph.load(path)
    assert g.succ == [[1], [2], [3], [4], []]
    assert taskgraph.load(path).arrays()["succ"].tolist() == [1, 2, 3, 4]  # and the cache remade


@pytest.mark.parametrize("change,message", [
    (lambda t: t[1].update(flops=True), r"chunks\[1\]\.flops: bad value True"),
    (lambda t: t[2].pop("bytes"), r"chunks\[2\]\.bytes: bad value None"),
    (lambda t: t[0].update(phase="sideways"), r"chunks\[0\]\.phase"),
    (lambda t: t[1].update(id=7), r"chunks\[1\]\.id: 7"),
    (lambda t: t[1].update(op=5), r"chunks\[1\]\.op: 5 names no operation"),
    (lambda t: t[0].update(succ=[9]), r"chunks\[0\]\.succ: expected a list of task ids below 3"),
    (lambda t: t[0].update(next_succ="1"), r"chunks\[0\]\.next_succ"),
    (lambda t: t[2].update(bytes=-1), r"chunks\[2\]: negative flops or bytes"),
])
def test_each_bad_chunk_is_named(change, message):
    # parse() checks the chunks a column at a time and, when that fails, task by task to name the
    # fault: every fault must reach the message
    tasks = [task(i, 0, succ=[i + 1] if i < 2 else [], next_succ=[]) for i in range(3)]
    change(tasks)
    doc = {"format": taskgraph.FORMAT, "version": 1, "variant": "x", "schedule": "dataflow", "threads": 1,
           "barrier_per_phase": False, "ops": [op(0)], "chunks": tasks}
    with pytest.raises(StudyError, match="hand-made: " + message):
        taskgraph.parse(doc, "hand-made")


def test_a_static_chunk_on_a_thread_the_graph_lacks_is_named():
    with pytest.raises(StudyError, match=r"hand-made: chunks\[1\]\.thread: 2 outside 0\.\.1"):
        static([[0, 2]], 2)
