"""A deterministic discrete-event replay of one step's task graph on P simulated cores.

The rules are the variants' own (taskgraph.Graph says which applies):
  static (seq, forkjoin)   each operation's chunks run on the thread the schedule names, in their
                           listing order, and every thread waits at a barrier after the operation;
  dataflow with barrier_per_phase (tasks)
                           list scheduling: an idle core takes the ready task listed first; a
                           phase's tasks become eligible only when the previous phase is done;
  dataflow without (taskiter)
                           list scheduling across iterations: ready tasks of an older iteration
                           first, then in listing order; a task of iteration i+1 waits for its
                           predecessors in iteration i (next_succ), nothing else.

Each task has a duration (its time alone on one core of the target machine), a demand for
memory bandwidth (its DRAM bytes / its duration) and a demand for its core's FMA units (its FLOP
rate alone / one thread's peak). Without a contention model, tasks running together share the
machine's bandwidth at that many active cores, max-min fair: a task whose demand fits in its fair
share runs at full speed, the others share what remains and stretch. With one
(pstudy.analyse.contention.Node) they also share their core's FMA units with the tasks on its
other hardware threads and run at the all-core clock of the busy cores. Among simultaneous events
the lowest core index goes first, so the same inputs give the same prediction, bit for bit.

This module is the reference. step_time runs the same rules in C (pstudy.analyse.replay,
harness/replay/replay.c) where `make` has built it: the same arithmetic in the same order, the same
results bit for bit (tests/harness/test_replay.py), 16 to 80 times faster (bench/replay.py).
"""

import bisect
import heapq
from dataclasses import dataclass, field

from pstudy.analyse import replay
from pstudy.analyse.contention import maxmin

EPS = 1e-12


@dataclass
class Work:
    """What the engine runs: per task, its duration (s), DRAM bytes and the share of one thread's
    peak FLOP/s it uses alone (0..1; None: no compute demand, the tasks never share FMA units)."""
    duration: list
    dram_bytes: list
    compute: list = None


@dataclass
class Outcome:
    makespan: float                                   # seconds from start to the last task's end
    busy: list                                        # per core: seconds spent running tasks
    nominal: float                                    # sum of the tasks' unstretched durations
    ends: dict = field(default_factory=dict)          # (iteration, task) -> end time (dataflow)
    stretch: dict = field(default_factory=dict)       # seconds of running time lost, by what held
                                                      # the task back ("bandwidth", "compute")
    steps: int = 1                                    # steps replayed (taskiter's iterations)


def shares(demands, capacity):
    """Max-min fair allocation of `capacity` among `demands`: the rates (0..1] at which each task
    progresses (1 when its demand is met)."""
    return maxmin(demands, capacity)


class Engine:
    """Cores that run tasks handed out by a policy (take(core) -> task or None, done(task, time)),
    with bandwidth sharing between the running tasks."""

    def __init__(self, cores, work, machine, node=None):
        self.cores = cores
        self.work = work
        self.machine = machine
        self.node = node
        self.time = 0.0
        self.busy = [0.0] * cores
        self.nominal = 0.0
        self.stretch = {"bandwidth": 0.0, "compute": 0.0}

    def run(self, policy):
        running = {}  # core -> [task, remaining fraction, duration, demand, start, compute demand]
        work = self.work
        compute = work.compute
        idle = list(range(self.cores))  # ascending: the lowest idle core takes first
        while True:
            # hand out work until no idle core takes any (a task of no measurable time ends where
            # it starts and may release more)
            progress = True
            while progress and idle and policy.ready():
                progress = False
                still = []
                for core in idle:
                    task = policy.take(core)
                    if task is None:
                        still.append(core)
                        continue
                    progress = True
                    d = work.duration[task]
                    self.nominal += d
                    if d <= 0:
                        policy.done(task, self.time)
                        still.append(core)
                        continue
                    running[core] = [task, 1.0, d, work.dram_bytes[task] / d, self.time,
                                     compute[task] if compute is not None else 0.0]
                idle = still
            if not running:
                if policy.pending():
                    raise RuntimeError("simulation deadlock: tasks remain but none is ready")
                return
            cores = sorted(running)
            if self.node is not None:
                rates = self.node.rates(cores, [running[c][3] for c in cores], [running[c][5] for c in cores])
                limits = self.node.limits
            else:
                capacity = self.machine.bandwidth(len(cores)) if self.machine is not None else float("inf")
                rates = shares([running[c][3] for c in cores], capacity)
                limits = ["bandwidth" if r < 1.0 else None for r in rates]
            # time until each running task ends at the current rates
            dts = [running[c][1] * running[c][2] / r for c, r in zip(cores, rates)]
            dt = min(dts)
            self.time += dt
            for r, why in zip(rates, limits):
                if why is not None:
                    self.stretch[why] += dt * (1.0 - r)
            finished = []
            for c, r, left in zip(cores, rates, dts):
                entry = running[c]
                if left - dt <= EPS * max(1.0, self.time):
                    finished.append(c)
                else:
                    entry[1] -= dt * r / entry[2]
            for c in finished:  # lowest core first
                task, _, _, _, start, _ = running.pop(c)
                self.busy[c] += self.time - start
                policy.done(task, self.time)
                bisect.insort(idle, c)


class StaticOp:
    """One operation of a static schedule: each core runs its own chunks in order."""

    def __init__(self, queues):
        self.queues = {c: list(reversed(q)) for c, q in queues.items()}
        self.left = sum(len(q) for q in queues.values())
        self.queued = self.left

    def ready(self):
        return self.queued > 0

    def take(self, core):
        q = self.queues.get(core)
        if not q:
            return None
        self.queued -= 1
        return q.pop()

    def done(self, task, time):
        self.left -= 1

    def pending(self):
        return self.left > 0


class Dataflow:
    """Ready tasks in (iteration, listing order); `members` are the (iteration, task) pairs to run,
    `preds` their predecessor counts (among members), `succs(it, task)` their successors."""

    def __init__(self, members, preds, succs):
        self.preds = preds
        self.succs = succs
        self.heap = [m for m in members if preds[m] == 0]
        heapq.heapify(self.heap)
        self.left = len(members)
        self.ends = {}

    def ready(self):
        return bool(self.heap)

    def take(self, core):
        if not self.heap:
            return None
        it, task = heapq.heappop(self.heap)
        return _Ticket(it, task)

    def done(self, ticket, time):
        key = (ticket.iteration, ticket.task)
        self.ends[key] = time
        self.left -= 1
        preds, heap = self.preds, self.heap
        for s in self.succs(*key):
            left = preds[s] - 1
            preds[s] = left
            if left == 0:
                heapq.heappush(heap, s)

    def pending(self):
        return self.left > 0


class _Ticket(int):
    """A task id that also carries its iteration (the engine indexes Work by the int value)."""

    def __new__(cls, iteration, task):
        obj = int.__new__(cls, task)
        obj.iteration = iteration
        obj.task = task
        return obj


def run_static(graph, work, machine, node=None):
    """seq and forkjoin: one operation after another, each on its threads, a barrier after each.
    Returns an Outcome for one step."""
    cores = graph.threads
    by_op = {}
    for t in range(graph.n_tasks):
        by_op.setdefault(graph.op[t], {}).setdefault(graph.thread[t], []).append(t)
    engine = Engine(cores, work, machine, node)
    for op in sorted(by_op):
        engine.run(StaticOp(by_op[op]))
    return Outcome(engine.time, engine.busy, engine.nominal, stretch=engine.stretch)


def _phase_segments(graph):
    """Consecutive runs of tasks of one phase, in listing order: [(first, end)]."""
    segs, start = [], 0
    for t in range(1, graph.n_tasks + 1):
        if t == graph.n_tasks or graph.phase[t] != graph.phase[start]:
            segs.append((start, t))
            start = t
    return segs


def run_phases(graph, work, machine, cores, node=None):
    """tasks: list scheduling inside each phase, a wait after each. One step."""
    engine = Engine(cores, work, machine, node)
    for first, end in _phase_segments(graph):
        members = [(0, t) for t in range(first, end)]
        preds = {m: 0 for m in members}
        for t in range(first, end):
            for s in graph.succ[t]:
                if first <= s < end:
                    preds[(0, s)] += 1

        def succs(it, task, first=first, end=end):
            return [(0, s) for s in graph.succ[task] if first <= s < end]

        engine.run(Dataflow(members, preds, succs))
    return Outcome(engine.time, engine.busy, engine.nominal, stretch=engine.stretch)


def run_iterations(graph, work, machine, cores, iterations, node=None):
    """taskiter: `iterations` steps as one graph, no barrier. The Outcome's ends give each
    (iteration, task)'s end."""
    n = graph.n_tasks
    members = [(i, t) for i in range(iterations) for t in range(n)]
    preds = {m: 0 for m in members}
    for i in range(iterations):
        for t in range(n):
            for s in graph.succ[t]:
                preds[(i, s)] += 1
            if i + 1 < iterations:
                for s in graph.next_succ[t]:
                    preds[(i + 1, s)] += 1

    # per task, its successors as (iteration offset, task): built once, not at every end
    both = [tuple((0, s) for s in graph.succ[t]) + tuple((1, s) for s in graph.next_succ[t]) for t in range(n)]
    same = [tuple((0, s) for s in graph.succ[t]) for t in range(n)]
    last = iterations - 1

    def succs(it, task):
        return [(it + d, s) for d, s in (both[task] if it < last else same[task])]

    engine = Engine(cores, work, machine, node)
    policy = Dataflow(members, preds, succs)
    engine.run(policy)
    return Outcome(engine.time, engine.busy, engine.nominal, policy.ends, engine.stretch)


def step_time(graph, work, machine, cores, iterations=4, node=None, engine=None):
    """(predicted step time, Outcome) for `graph` on `cores` cores. taskiter's step time is the
    median interval between the ends of consecutive iterations after the first (as the binary
    reports it, the first left out as warm-up); the others' is one step's makespan. `node`: the
    contention model (pstudy.analyse.contention.Node), None for bandwidth sharing alone.
    `engine`: "native" or "python"; by default the native one (pstudy.analyse.replay) where it is
    built, the same result bit for bit."""
    dataflow = graph.schedule != "static"
    iterations = max(2, iterations) if dataflow and not graph.barrier_per_phase else 1
    if engine is None:
        engine = "native" if replay.library() is not None else "python"
    if engine == "native":
        mode = replay.STATIC if not dataflow else replay.PHASES if graph.barrier_per_phase else replay.ITERATIONS
        # a static schedule runs on its own threads, whatever `cores` says (as run_static does)
        makespan, busy, nominal, stretch, ends = replay.run(graph, work, machine, graph.threads if not dataflow
                                                            else cores, mode, iterations, node)
        out = Outcome(makespan, busy, nominal, stretch=stretch)
    elif not dataflow:
        out = run_static(graph, work, machine, node)
    elif graph.barrier_per_phase:
        out = run_phases(graph, work, machine, cores, node)
    else:
        out = run_iterations(graph, work, machine, cores, iterations, node)
        ends = [max(out.ends[(i, t)] for t in range(graph.n_tasks)) for i in range(iterations)]
    out.steps = iterations
    if iterations == 1:
        return out.makespan, out
    intervals = sorted(b - a for a, b in zip(ends, ends[1:]))
    mid = len(intervals) // 2
    step = intervals[mid] if len(intervals) % 2 else 0.5 * (intervals[mid - 1] + intervals[mid])
    return step, out


def pop_factors(outcome, cores):
    """POP efficiency factors of a simulated run on `cores` cores: load balance (mean busy / max
    busy), communication-and-synchronisation efficiency (max busy / runtime; here the waits the
    dependencies and barriers impose), parallel efficiency (their product), computation
    scalability (the tasks' time alone / their time as run, <1 when bandwidth sharing stretched
    them) and global
    efficiency (parallel efficiency x computation scalability)."""
    busy = outcome.busy[:cores]
    total = sum(busy)
    mx = max(busy) if busy else 0.0
    runtime = outcome.makespan
    lb = (total / cores) / mx if mx > 0 else 1.0
    comm = mx / runtime if runtime > 0 else 1.0
    comp = outcome.nominal / total if total > 0 else 1.0
    return {"load_balance": lb, "communication_eff": comm, "parallel_eff": lb * comm,
            "computation_scalability": comp, "global_eff": lb * comm * comp}
