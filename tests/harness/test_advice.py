"""`predict --best` (pstudy.analyse.advice) on hand-made graphs with known answers: what bounds a
run, and the ranking of variants and chunkings at each P."""

import pytest

from pstudy.analyse import advice, chunktimes, contention, simulate
from pstudy.store import topology as topo
from pstudy.store import machinefiles as machines, taskgraph, vocabulary


def config_key(*values):
    """A config key from its recorded layout: variant, compiler, kernels, the chunk keys."""
    return chunktimes.recorded_config_key(values)

FORKJOIN = vocabulary.FORKJOIN
CHUNKED = vocabulary.CHUNKED_VARIANTS[0]


def machine(cores=8, bw=(1000.0,), **kw):
    xs = tuple(range(1, len(bw) + 1))
    return machines.Machine("hand", False, cores, 1.0, xs, tuple(bw), **kw)


def op(i, flops=0, nbytes=0, phase="forward"):
    return {"op": i, "kernel": "k", "label": f"op{i}", "layer": -1, "phase": phase, "split": "rows",
            "cut_columns": 0, "flops": flops, "bytes": nbytes}


def graph(variant, schedule, threads, tasks, barrier=True, rows=None):
    """tasks: (op, thread, flops, bytes, succ) in listing order; rows[n] = (b0, b1) of task n (default
    (n, n + 1))."""
    ops = sorted({t[0] for t in tasks})
    chunks = []
    for n, (o, th, f, b, succ) in enumerate(tasks):
        b0, b1 = rows[n] if rows else (n, n + 1)
        c = {"id": n, "op": o, "phase": "forward", "b0": b0, "b1": b1, "x0": 0, "x1": 1, "col0": 0, "col1": 0,
             "thread": th, "flops": f, "bytes": b}
        if schedule == "dataflow":
            c["succ"], c["next_succ"] = succ, []
        chunks.append(c)
    doc = {"format": taskgraph.FORMAT, "version": 1, "variant": variant, "schedule": schedule, "threads": threads,
           "barrier_per_phase": barrier,
           "ops": [op(i, sum(t[2] for t in tasks if t[0] == i), sum(t[3] for t in tasks if t[0] == i)) for i in ops],
           "chunks": chunks}
    return taskgraph.parse(doc, "hand-made")


def run(g, durations, m, cores, dram=None, compute=None):
    work = simulate.Work(durations, dram or [0.0] * len(durations), compute)
    return simulate.step_time(g, work, m, cores, node=contention.Node(m, cores))


def test_even_work_is_compute_bound():
    g = graph(FORKJOIN, "static", 2, [(0, 0, 1, 0, []), (0, 1, 1, 0, [])])
    step, out = run(g, [1.0, 1.0], machine(), 2)
    bound, losses = advice.classify(out, 2)
    assert step == 1.0 and bound == "compute" and max(losses.values()) == 0.0


def test_uneven_chunks_are_load_balance():
    g = graph(FORKJOIN, "static", 2, [(0, 0, 1, 0, []), (0, 1, 3, 0, [])])
    step, out = run(g, [1.0, 3.0], machine(), 2)
    bound, losses = advice.classify(out, 2)
    assert step == 3.0 and bound == "load balance" and losses["load balance"] == pytest.approx(1 / 3)


def test_a_diamond_is_dependencies():
    """A(1) -> B(1), C(3) -> D(1) on 2 cores: both cores busy 3 s of a 5 s run."""
    g = graph(CHUNKED, "dataflow", 1, [(0, -1, 0, 0, [1, 2]), (1, -1, 0, 0, [3]), (2, -1, 0, 0, [3]),
                                       (3, -1, 0, 0, [])])
    step, out = run(g, [1.0, 1.0, 3.0, 1.0], machine(), 2)
    bound, losses = advice.classify(out, 2)
    assert step == 5.0 and bound == "dependencies" and losses["dependencies"] == pytest.approx(0.4)
    assert losses["load balance"] == pytest.approx(0.0)


def test_tasks_short_of_bandwidth_are_bandwidth():
    # two 1-s tasks demanding 10 GB/s each; 10 GB/s for both: each at half speed
    g = graph(FORKJOIN, "static", 2, [(0, 0, 0, 10 ** 10, []), (0, 1, 0, 10 ** 10, [])])
    step, out = run(g, [1.0, 1.0], machine(bw=(10.0, 10.0)), 2, dram=[1e10, 1e10])
    bound, losses = advice.classify(out, 2)
    assert step == pytest.approx(2.0) and bound == "bandwidth" and losses["bandwidth"] == pytest.approx(0.5)


def test_hardware_threads_sharing_fma_units_are_compute():
    t = topo.synthetic(1, 1, 2, siblings="adjacent")
    m = machine(cores=2, topology=t, places="threads", peak_threads=(1, 2), peak_gflops=(1.0, 1.0))
    g = graph(FORKJOIN, "static", 2, [(0, 0, 10 ** 9, 0, []), (0, 1, 10 ** 9, 0, [])])
    step, out = run(g, [1.0, 1.0], m, 2, compute=[1.0, 1.0])
    bound, losses = advice.classify(out, 2)
    assert step == pytest.approx(2.0) and bound == "compute" and losses["compute"] == pytest.approx(0.5)


def test_chunkings():
    assert advice.chunkings(4, 64) == [(bs, k) for bs in (1, 2, 4) for k in (64, 32, 16, 8)]
    assert advice.chunkings(3, 12) == [(1, 12), (2, 12), (3, 12)]  # no k below 8
    assert advice.chunkings(1, 4) == [(1, 4)]


class HandGraphs:
    """Graphs of a step of 4 s of work (4 x 10^9 FLOPs at 1 GFLOP/s) over B=4 sequences: forkjoin
    cuts it into P equal chunks; the chunked variant into B / batch_subsize independent tasks, and
    at the chunking it chooses for P (AUTO) into one task per thread, at most B."""

    def __init__(self):
        self.cache = {}

    def get(self, ck, threads, batch=None):
        variant, bs = ck.variant, ck.batch_subsize
        if variant != FORKJOIN and bs == vocabulary.AUTO:
            bs = 4 // min(4, threads)
        key = (ck._replace(batch_subsize=bs), threads if variant == FORKJOIN else 1)
        if key not in self.cache:
            if variant == FORKJOIN:
                # rows 0..12 cut in P pieces: no piece of P > 1 is the 1-thread chunk
                n = threads
                tasks = [(0, i, 4 * 10 ** 9 // n, 0, []) for i in range(n)]
                self.cache[key] = graph(variant, "static", n, tasks, rows=[(12 * i // n, 12 * (i + 1) // n)
                                                                           for i in range(n)])
            else:
                n = 4 // bs
                self.cache[key] = graph(variant, "dataflow", 1, [(0, -1, 4 * 10 ** 9 // n, 0, []) for _ in range(n)])
        return self.cache[key]


class Meta:
    model = {"B": 4, "T": 16}


def medians_of(graphs, cks):
    """1-thread 'traces': each chunk's time is its FLOPs at 1 GFLOP/s."""
    out = {}
    for ck in cks:
        g = graphs.get(ck, 1)
        out[ck] = {g.key[t]: g.flops[t] / 1e9 for t in range(g.n_tasks)}
    return out


def test_best_ranks_variants_and_chunkings_with_known_answers(monkeypatch):
    # the hand-made graphs do not cut tiles: one tiling, so that every chunking is one candidate
    monkeypatch.setattr(advice, "TILINGS", ((None, None, None, None),))
    graphs = HandGraphs()
    fj = config_key(FORKJOIN, "gcc", "fast", None, None, None, None, None, None)
    traced = config_key(CHUNKED, "gcc", "fast", 1, 16, None, None, None, None)  # only one chunking traced: the others scaled from it
    medians = medians_of(graphs, [fj, traced])
    m = machine(cores=4)
    frame, notes = advice.best(graphs, medians, Meta(), m, m, [1, 2, 4], mpi=False)
    assert notes == []

    def at(P):
        g = frame[frame["threads"] == P].sort_values("rank")
        return [(r.variant, None if str(r.batch_subsize) == "<NA>" else int(r.batch_subsize),
                 round(r.predicted_step_s, 9)) for r in g.itertuples()]

    # P=4: forkjoin 1 s, the chunking chosen for 4 threads (auto: 4 tasks of 1 s) and bs=1 1 s tie, in
    # the candidates' order (forkjoin first, then auto, then k = 16, 8 of bs=1), then bs=2 (2 tasks of
    # 2 s) 2 s, bs=4 (one task) 4 s
    four = at(4)
    assert [(v, bs, s) for v, bs, s in four] == [(FORKJOIN, None, 1.0), (CHUNKED, vocabulary.AUTO, 1.0),
                                                 (CHUNKED, 1, 1.0), (CHUNKED, 1, 1.0), (CHUNKED, 2, 2.0),
                                                 (CHUNKED, 2, 2.0), (CHUNKED, 4, 4.0), (CHUNKED, 4, 4.0)]
    assert list(frame[frame["threads"] == 4]["rank"]) == list(range(1, 9))
    # P=2: auto (2 tasks), bs=1 and bs=2 all 2 s, forkjoin 2 s; bs=4 4 s
    assert [s for _, _, s in at(2)] == [2.0] * 6 + [4.0, 4.0]
    # the best at 4 is bounded by nothing but the work; bs=4 at 4 by load balance (one busy core)
    best4 = frame[(frame["threads"] == 4) & (frame["rank"] == 1)].iloc[0]
    assert best4["bound"] == "compute"
    worst4 = frame[(frame["threads"] == 4) & (frame["batch_subsize"] == 4)].iloc[0]
    assert worst4["bound"] == "load balance" and worst4["loss_load_balance"] == pytest.approx(0.75)
    # every decomposition does the same 4 s of work: none does more than the leanest
    assert (frame["work_s"] == 4.0).all() and (frame["extra_work"] == 0.0).all()
    # deterministic
    again, _ = advice.best(HandGraphs(), medians, Meta(), m, m, [1, 2, 4], mpi=False)
    assert again.equals(frame)
    lines = advice.summary_lines(frame, "hand")
    assert lines[0].startswith("BEST on hand") and "P=4" in lines[-2] and "bound: compute" in lines[-2]
    assert "work +0.0%" in lines[-2]


def test_extra_work_is_against_the_leanest_candidate():
    rows = [{"work_s": 2.0}, {"work_s": 3.0}, {"work_s": None}, {}]
    advice.add_extra_work(rows)
    assert [r["extra_work"] for r in rows] == [0.0, 0.5, None, None]


def test_candidates_cut_the_products_rows_as_the_others_and_keep_them_whole():
    traced = config_key(CHUNKED, "gcc", "fast", 1, 16, None, None, None, None)
    cands = advice.candidates({traced: {}}, 4, 16)
    # every BATCH_SUBSIZE and k: untiled, tiles of 256 (rows as the other row operations'), and the
    # products' rows whole (tile_sequences = B: the binary then cuts one tile per thread)
    for bs in (1, 2, 4):
        for k in (16, 8):
            assert config_key(CHUNKED, "gcc", "fast", bs, k, None, None, None, None) in cands
            assert config_key(CHUNKED, "gcc", "fast", bs, k, 256, 256, None, None) in cands
            assert config_key(CHUNKED, "gcc", "fast", bs, k, None, None, 4, None) in cands
    assert cands[0] == config_key(CHUNKED, "gcc", "fast", *(vocabulary.AUTO,) * len(vocabulary.CHUNK_KEYS))
    assert len(cands) == 1 + 3 * 2 * len(advice.TILINGS) and len(set(cands)) == len(cands)


def test_the_automatic_point_of_a_directory_from_before_a_chunk_key_keeps_its_traces():
    auto = vocabulary.AUTO
    old = config_key(CHUNKED, "gcc", "fast", auto, auto, auto, auto, auto, None)  # swept before tiles_per_product
    cands = advice.candidates({old: {}}, 4, 16)
    assert cands[0] == old and config_key(CHUNKED, "gcc", "fast", *(auto,) * len(vocabulary.CHUNK_KEYS)) not in cands
