"""The node's shared resources in the replay (pstudy.analyse.simulate): what slows a task down
because of what runs beside it. docs/prediction.md ("The contention model") states the equations
with their anchors; in short, for the tasks running at one instant on n busy simulated threads
placed on m distinct cores:

  memory      each task demands b_i = (its DRAM bytes) / (its time alone); the bandwidth B(n) of the
              measured STREAM curve at n busy threads is shared max-min fairly: r_mem_i = 1 when
              b_i fits in its fair share, else share_i / b_i                (roofline + max-min)
  clock       phi(m) = P(m cores, one thread each) / (m P(1)): the all-core clock against one busy
              core's, from the measured peak curve; every in-core cycle stretches by 1/phi
  FMA units   each task demands u_i = (its FLOPs / its time alone) / P(1), the share of one
              thread's peak it uses alone; the tasks on one core share psi (the core's throughput
              with all its hardware threads busy, in one thread's peaks, measured) max-min fairly:
              r_core_i = 1 when alone on its core or when the demands fit, else share_i / u_i
  rate        r_i = min(r_mem_i, phi(m) * r_core_i): a task progresses at the slower of its
              memory share and its in-core share (the ECM model's overlap assumption: in-core and
              memory transfers overlap, the longer one decides)

  thread speed  (optional) s_t in (0, 1], each simulated thread's own in-core speed as measured
              right beside the run being predicted (`[analysis] peak_beside`: peakflops with the
              run's threads, placed as the run places them). It replaces phi and psi: the probe ran
              with every thread busy, so it holds the all-core clock and any two threads the host
              put on one core. r_i = min(r_mem_i, s_t(i))

A machine file without a peak curve gives phi = 1 and psi = 1; without a topology each simulated
thread has a core of its own. Everything is arithmetic over sorted lists: the same inputs give the
same rates, bit for bit.
"""

from pstudy.store import topology as topo


def _interpolate(xs, ys, x):
    if not xs:
        return 1.0
    if x <= xs[0]:
        return ys[0]
    for i in range(1, len(xs)):
        if x <= xs[i]:
            x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return ys[-1]


def maxmin(demands, capacity):
    """Max-min fair shares of `capacity` among `demands`: the rate (0..1] of each (1 when met)."""
    total = 0.0
    for d in demands:  # in order, one addition at a time (sum() compensates since Python 3.12; the
        total += d     # native replay adds plainly, and the two must agree bit for bit)
    if total <= capacity or total <= 0:
        return [1.0] * len(demands)
    order = sorted(range(len(demands)), key=lambda i: (demands[i], i))
    rates = [1.0] * len(demands)
    left, count = capacity, len(demands)
    for pos, i in enumerate(order):
        fair = left / (count - pos)
        d = demands[i]
        if d <= fair:
            left -= d
        else:
            for j in order[pos:]:
                rates[j] = fair / demands[j] if demands[j] > 0 else 1.0
            break
    return rates


def thread_cores(machine, threads):
    """The core of each simulated thread 0..threads-1 on `machine`: its topology under the
    placement its curves were measured with, else one core each."""
    if machine is None or machine.topology is None:
        return list(range(threads))
    return topo.thread_cores(machine.topology, machine.places, machine.proc_bind, threads)


def calibrate(machine):
    """(clock points [(busy cores, phi)], psi) from the machine's measured peak curve, read through
    its topology and placement: counts that put one thread on each core give phi at that many
    cores; counts that put more on a core give psi = P(n) / (m phi(m) P(1))."""
    if machine is None or not machine.peak_threads:
        return [], 1.0
    p1 = machine.peak_gflops[0] / machine.peak_threads[0]
    clock, smt = [], []
    for n, g in zip(machine.peak_threads, machine.peak_gflops):
        cores = thread_cores(machine, n)
        m = len(set(cores))
        if m == n:
            clock.append((m, min(1.0, g / (n * p1))))
        else:
            smt.append((m, g / p1))
    clock.sort()
    xs, ys = [c for c, _ in clock], [p for _, p in clock]
    psis = sorted(total / (m * _interpolate(xs, ys, m)) for m, total in smt)
    psi = psis[len(psis) // 2] if psis else 1.0
    return clock, psi


class Node:
    """The shared resources of `machine` with `threads` simulated threads (pstudy.simulate.Engine
    asks rates() at every event)."""

    def __init__(self, machine, threads, background_Bs=0.0, speeds=None):
        self.machine = machine
        # measured thread speeds (module docstring) stand for the clock, the topology and psi
        self.speeds = None if speeds is None else [float(s) for s in speeds]
        if self.speeds is not None:
            if len(self.speeds) < threads or not all(0.0 < s <= 1.0 for s in self.speeds[:threads]):
                raise ValueError(f"thread speeds: {threads} in (0, 1] expected, got {self.speeds}")
            self.core = list(range(threads))
            clock, self.psi = [], 1.0
        else:
            self.core = thread_cores(machine, threads)
            clock, self.psi = calibrate(machine)
        self.shared = len(set(self.core)) < len(self.core)
        self.clock_x = [c for c, _ in clock]
        self.clock_y = [p for _, p in clock]
        # a constant stream beside the step (probes/thief): a competitor for bandwidth that never ends
        self.background = float(background_Bs)
        self.limits = []
        self._phi, self._bandwidth = {}, {}

    def phi(self, busy_cores):
        cache = self._phi
        if busy_cores not in cache:
            cache[busy_cores] = min(1.0, _interpolate(self.clock_x, self.clock_y, busy_cores)) if self.clock_x \
                else 1.0
        return cache[busy_cores]

    def bandwidth(self, busy):
        cache = self._bandwidth
        if busy not in cache:
            cache[busy] = self.machine.bandwidth(busy) if self.machine is not None else float("inf")
        return cache[busy]

    def rates(self, threads, mem_demands, compute_demands):
        """Per running task (on simulated threads `threads`, distinct, ascending), its rate."""
        n = len(threads)
        if self.background > 0:
            # the thief runs on a core of its own: one more busy core on the memory interface
            shares = maxmin(list(mem_demands) + [self.background], self.bandwidth(n + 1))[:n]
        else:
            shares = maxmin(mem_demands, self.bandwidth(n))
        core_rates = [1.0] * n
        if self.shared:
            by_core = {}
            for i, t in enumerate(threads):
                by_core.setdefault(self.core[t], []).append(i)
            for c in sorted(by_core):
                members = by_core[c]
                if len(members) > 1:
                    for i, r in zip(members, maxmin([compute_demands[i] for i in members], self.psi)):
                        core_rates[i] = r
            busy_cores = len(by_core)
        else:
            busy_cores = n  # every thread a core of its own
        phi = self.phi(busy_cores)
        if self.speeds is None and phi >= 1.0 and not self.shared and min(shares) >= 1.0:
            self.limits = [None] * n  # nothing held back: the common case
            return shares
        in_core = [phi * r for r in core_rates]
        if self.speeds is not None:
            in_core = [c * self.speeds[t] for c, t in zip(in_core, threads)]
        rates = [min(s, c) for s, c in zip(shares, in_core)]
        # which resource held each task back (for what bounds a step): memory, or its core
        self.limits = [None if rate >= 1.0 else ("bandwidth" if s <= c else "compute")
                       for rate, s, c in zip(rates, shares, in_core)]
        return rates

    def describe(self, threads):
        """One line: cores used, threads sharing a core, phi and psi (or the measured thread speeds)."""
        if self.speeds is not None:
            speeds = self.speeds[:threads]
            return (f"{threads} threads at their measured speeds (slowest {min(speeds):.3f}, median "
                    f"{sorted(speeds)[len(speeds) // 2]:.3f} of the fastest measured)")
        cores = self.core[:threads]
        shared = topo.sharing(cores)
        return (f"{threads} threads on {len(set(cores))} cores" +
                (f" ({len(shared)} shared by two or more threads)" if shared else "") +
                f"; clock factor {self.phi(len(set(cores))):.3f}, hardware-thread throughput {self.psi:.2f}")
