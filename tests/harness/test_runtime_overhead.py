"""The runtime cost per task (pstudy.analyse.prediction.RuntimeOverheads): measured between the
chunks of 1-thread traces, or fitted from 1-thread runs, on hand-made traces and gaps with known
answers, and charged to every task of a replay."""

import pytest

from pstudy.analyse import chunktimes, machinescaling, runtimecost, simulate, stepreplay
from pstudy.analyse.runtimecost import RuntimeOverheads

US = 1e-6


def config_key(*values):
    """A config key from its recorded layout: variant, compiler, kernels, the chunk keys."""
    return chunktimes.recorded_config_key(values)


def gaps(*rows):
    """{config key: (gap, tasks, step)} for one variant's configurations, keyed by BATCH_SUBSIZE."""
    return {config_key("taskiter", "gcc", "fast", bs, 64, None, None, None, None): row for bs, row in enumerate(rows, 1)}


def test_a_common_cost_per_task_is_found_exactly():
    # 2 us a task in both: 1000 tasks in a 50 ms step, 250 in another
    fit = RuntimeOverheads(gaps((2000 * US, 1000, 0.05), (500 * US, 250, 0.05)))
    assert fit.of("taskiter") == pytest.approx(2 * US, rel=1e-12)
    assert fit.variants() == {"taskiter": pytest.approx(2 * US, rel=1e-12)}


def test_a_long_step_whose_gap_is_noise_weighs_little():
    # two short steps agree on 3 us; a 1.4 s step's gap (+15 ms over 2000 tasks: 7.5 us) is within its
    # noise and moves the fit by its weight (n / S)^2, about 1/125 of the short steps.
    fit = RuntimeOverheads(gaps((3000 * US, 1000, 0.07), (1500 * US, 500, 0.07), (15e-3, 2000, 1.4)))
    w_short = (1000 / 0.07) ** 2 + (500 / 0.07) ** 2
    w_long = (2000 / 1.4) ** 2
    expected = (3 * US * w_short + 7.5 * US * w_long) / (w_short + w_long)
    assert fit.of("taskiter") == pytest.approx(expected, rel=1e-12)
    assert 3 * US < fit.of("taskiter") < 3.1 * US


def test_one_configuration_or_a_negative_fit_gives_no_cost():
    assert RuntimeOverheads(gaps((2000 * US, 1000, 0.05))).of("taskiter") == 0.0
    assert RuntimeOverheads(gaps((-2000 * US, 1000, 0.05), (-100 * US, 250, 0.05))).of("taskiter") == 0.0
    assert RuntimeOverheads({}).of("forkjoin") == 0.0


def test_a_point_is_validated_against_a_cost_fitted_without_it():
    g = gaps((2000 * US, 1000, 0.05), (500 * US, 250, 0.05), (1000 * US, 250, 0.05))
    fit = RuntimeOverheads(g)
    first, second, third = list(g)
    # without the third (4 us a task) the other two say 2 us; without the first, two configurations remain
    assert fit.of("taskiter", leave_out=third) == pytest.approx(2 * US, rel=1e-12)
    assert fit.of("taskiter", leave_out=first) == pytest.approx(3 * US, rel=1e-12)
    assert fit.of("taskiter") > fit.of("taskiter", leave_out=third)
    # a configuration of another variant leaves this one's fit alone
    assert fit.of("taskiter", leave_out=("tasks",) + first[1:]) == fit.of("taskiter")
    # with only two configurations, leaving one out leaves too few: no cost
    two = RuntimeOverheads(gaps((2000 * US, 1000, 0.05), (500 * US, 250, 0.05)))
    assert two.of("taskiter", leave_out=first) == 0.0


class _Graph:
    def __init__(self, n):
        self.n_tasks = n


class _Graphs:
    def __init__(self, tasks):
        self.tasks = tasks

    def get(self, ck, threads):
        return _Graph(self.tasks[ck])


def test_gaps_come_from_measured_one_thread_steps_and_their_replays(monkeypatch):
    a = config_key("tasks", "gcc", "fast", 1, 16, None, None, None, None)
    b = config_key("tasks", "gcc", "fast", 4, 64, None, None, None, None)
    unmeasured = config_key("tasks", "gcc", "fast", 2, 32, None, None, None, None)
    mpi = config_key("mpi", "gcc", "fast", None, None, None, None, None, None)
    replayed = {a: 0.0760, b: 0.0700, unmeasured: 0.07, mpi: 1.0}
    monkeypatch.setattr(runtimecost, "predict_point",
                        lambda graphs, medians, ck, threads, source, target: (replayed[ck], None))
    measured = {chunktimes.config_point(a, 1): 0.0790, chunktimes.config_point(b, 1): 0.0710,
                chunktimes.config_point(a, 2): 0.05}
    fit = runtimecost.runtime_overheads(_Graphs({a: 1500, b: 330}), dict.fromkeys(replayed), measured, None)
    assert fit.gaps == {a: (pytest.approx(0.003), 1500, 0.0790), b: (pytest.approx(0.001), 330, 0.0710)}
    assert 2 * US < fit.of("tasks") < 3.1 * US


def test_the_cost_is_added_to_every_task_and_nothing_else():
    work = simulate.Work([1e-3, 2e-3], [100.0, 200.0], [0.5, 0.25])
    machinescaling.with_overhead(work, 5 * US)
    assert work.duration == [1e-3 + 5 * US, 2e-3 + 5 * US]
    assert work.dram_bytes == [100.0, 200.0] and work.compute == [0.5, 0.25]
    machinescaling.with_overhead(work, 0.0)
    assert work.duration == [1e-3 + 5 * US, 2e-3 + 5 * US]


FORKJOIN = config_key("forkjoin", "gcc", "fast", None, None, None, None, None, None)
SEQ = config_key("seq", "gcc", "fast", None, None, None, None, None, None)


def test_the_output_line_gives_each_cost_where_it_comes_from_or_why_there_is_none():
    g = gaps((2000 * US, 1000, 0.05), (500 * US, 250, 0.05))
    g[FORKJOIN] = (300 * US, 200, 0.05)
    g[SEQ] = (300 * US, 200, 0.05)
    line = RuntimeOverheads(g, {SEQ: 1.5 * US}).line()
    assert line == ("runtime cost per task (at 1 thread, added to every task): seq 1.50 us (traced), forkjoin none "
                    "(no trace with two iterations to measure it, and fitted from 2 configurations at least; it "
                    "has 1), taskiter 2.00 us (fitted)")
    assert RuntimeOverheads({}).line().endswith("no measured 1-thread point")


def test_a_cost_measured_in_the_traces_comes_before_the_fit():
    g = gaps((2000 * US, 1000, 0.05), (500 * US, 250, 0.05), (1000 * US, 250, 0.05))
    first, second, third = list(g)
    fit = RuntimeOverheads(g, {first: 1 * US, second: 5 * US, FORKJOIN: -0.5 * US})
    # a configuration's own, then the median of its variant's traced ones (the third has none), never
    # below 0; a variant without traces is fitted
    assert fit.of("taskiter", config=first) == 1 * US
    assert fit.of("taskiter", config=third, leave_out=third) == pytest.approx(3 * US)
    assert fit.of("taskiter") == pytest.approx(3 * US)
    assert fit.of("forkjoin", config=FORKJOIN) == 0.0
    assert RuntimeOverheads(g, {FORKJOIN: 2 * US}).of("taskiter") == pytest.approx(
        RuntimeOverheads(g).of("taskiter"))


def _trace(path, iterations):
    """A --trace file: per iteration (its first chunk's start, its chunks' durations, the gap after
    each chunk), the chunks laid end to end from that start, a gap apart."""
    rows = ["iteration,op,kernel,layer,phase,label,b0,b1,x0,x1,thread,start_s,end_s,col0,col1"]
    for it, (start, durations, gap) in enumerate(iterations):
        t = start
        for op, d in enumerate(durations):
            rows.append(f"{it},{op},k,-1,forward,k,0,1,0,1,0,{t:.9f},{t + d:.9f},0,0")
            t += d + gap
    path.write_text("\n".join(rows) + "\n")


def test_the_cost_is_measured_between_the_chunks_of_one_thread_traces(tmp_path, monkeypatch):
    from pstudy.store import resultsdir
    # taskiter at 1 thread: iterations of 4 chunks of 1 ms with 10 us after each (the next iteration
    # starts 10 us after the last chunk): 10 us a task, the span to the next iteration less the chunks;
    # the warm-up iteration (0) far slower and left out; two repetitions
    ti = config_key("taskiter", "gcc", "fast", 1, 16, None, None, None, None)
    a, b = tmp_path / "ti_r0.csv", tmp_path / "ti_r1.csv"
    step = 4 * 1e-3 + 4 * 10 * US
    _trace(a, [(0.0, [5e-3] * 4, 1e-3)] + [(1.0 + i * step, [1e-3] * 4, 10 * US) for i in range(4)])
    _trace(b, [(0.0, [5e-3] * 4, 1e-3)] + [(2.0 + i * step, [1e-3] * 4, 10 * US) for i in range(3)])
    # a 2-thread trace, and a configuration with one iteration after the warm-up, are not measured from
    two, short = tmp_path / "ti_t2.csv", tmp_path / "fj_r0.csv"
    _trace(two, [(0.0, [1e-3] * 4, 0.0), (1.0, [1e-3] * 4, 0.0), (2.0, [1e-3] * 4, 0.0)])
    _trace(short, [(0.0, [1e-3] * 4, 0.0), (1.0, [1e-3] * 4, 0.0)])
    fj = config_key("forkjoin", "gcc", "fast", *(None,) * 6)
    listing = [(a, chunktimes.config_point(ti, 1), 0), (b, chunktimes.config_point(ti, 1), 1),
               (two, chunktimes.config_point(ti, 2), 0), (short, chunktimes.config_point(fj, 1), 0)]
    monkeypatch.setattr(resultsdir.ResultsDir, "traces", lambda self: listing)
    costs = chunktimes.trace_stats(tmp_path, warmup=1).costs
    assert set(costs) == {ti}
    assert costs[ti] == pytest.approx(10 * US, rel=1e-5)


def test_the_expected_largest_of_n_draws_of_measured_deviations():
    assert stepreplay.expected_max_deviation([-1.0, 1.0], 1) == 0.0
    assert stepreplay.expected_max_deviation([-1.0, 1.0], 2) == pytest.approx(0.5)  # 3 of 4 pairs hold the 1
    assert stepreplay.expected_max_deviation([-0.1, 0.0, 0.1], 3) == pytest.approx(0.1 * (1 - 8 / 27) - 0.1 / 27)
    assert stepreplay.expected_max_deviation([], 4) == 0.0
    assert stepreplay.expected_max_deviation([0.2], 5) == pytest.approx(0.2)


class _Static:
    """A static schedule by hand: per task its operation and thread."""

    def __init__(self, ops, threads, op, thread, schedule="static"):
        self.ops = [{"label": label} for label in ops]
        self.threads, self.op, self.thread, self.schedule = threads, op, thread, schedule
        self.n_tasks = len(op)


def test_a_static_schedule_loses_at_each_barrier_what_its_slowest_share_may_vary():
    # two operations on 2 threads: "a" in two pieces of 1 ms (+-10% noise: the later of two is 5% late
    # on average), "b" in one piece of 2 ms on thread 0 (nothing to wait for)
    graph = _Static(["a", "b"], 2, op=[0, 0, 1], thread=[0, 1, 0])
    work = simulate.Work([1e-3, 1e-3, 2e-3], [0.0] * 3)
    noise = {"a": [-0.1, 0.1], "b": [-0.5, 0.5]}
    assert stepreplay.barrier_jitter(graph, work, noise) == pytest.approx(1e-3 * 0.05)
    # the longer share sets the wait; an operation without noise samples costs nothing
    work = simulate.Work([1e-3, 3e-3, 2e-3], [0.0] * 3)
    assert stepreplay.barrier_jitter(graph, work, noise) == pytest.approx(3e-3 * 0.05)
    assert stepreplay.barrier_jitter(graph, work, {"b": [-0.5, 0.5]}) == 0.0
    # nothing at one thread, for a dataflow schedule, or without samples
    assert stepreplay.barrier_jitter(_Static(["a"], 1, [0, 0], [0, 0]), work, noise) == 0.0
    assert stepreplay.barrier_jitter(_Static(["a", "b"], 2, [0, 0, 1], [-1, -1, -1], "dataflow"), work, noise) == 0.0
    assert stepreplay.barrier_jitter(graph, work, None) == 0.0


def test_the_noise_is_each_chunk_s_deviation_from_its_mean_by_operation_label(tmp_path, monkeypatch):
    from pstudy.store import resultsdir
    path = tmp_path / "fj_r0.csv"
    rows = ["iteration,op,kernel,layer,phase,label,b0,b1,x0,x1,thread,start_s,end_s,col0,col1"]
    for it, (a, b) in enumerate([(9.0, 9.0), (0.9, 2.0), (1.1, 2.0), (1.0, 2.0)]):  # iteration 0: warm-up
        rows += [f"{it},0,k,-1,forward,attn L0,0,1,0,1,0,{10 * it},{10 * it + a},0,0",
                 f"{it},1,k,-1,forward,fc L0,0,1,0,1,0,{10 * it + 5},{10 * it + 5 + b},0,0"]
    path.write_text("\n".join(rows) + "\n")
    fj = config_key("forkjoin", "gcc", "fast", *(None,) * 6)
    monkeypatch.setattr(resultsdir.ResultsDir, "traces", lambda self: [(path, chunktimes.config_point(fj, 1), 0)])
    noise = chunktimes.trace_stats(tmp_path, warmup=1).noise
    assert noise[fj]["attn L0"] == pytest.approx([-0.1, 0.0, 0.1])
    assert noise[fj]["fc L0"] == pytest.approx([0.0, 0.0, 0.0])
