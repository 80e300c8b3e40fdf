#!/usr/bin/env python3
"""Benchmark (not a test): the replay `perfstudy predict` runs, native (harness/replay/replay.c)
against the Python reference (pstudy.analyse.simulate), on graphs the binaries describe.

Run rules:
  - the graphs are d12, B=4, T=64, described by build/gcc/fast/gpt2-<variant> at each P (the
    chunked variants at their automatic chunking, which is finest at many cores);
  - the target is machines/mn5-gpp.toml with its contention model (clock, FMA sharing, bandwidth),
    the case `predict --best` runs; each task's duration is its roofline time on one core at 80%
    of peak (the durations do not change the number of events much, only the answer);
  - each engine replays each graph --repeat times (the Python one once unless --python-repeat),
    the median is reported; both must give the same step time bit for bit, or the benchmark says
    so and exits 1;
  - the machine should be otherwise idle: the figures are wall-clock seconds of one process.
"""
import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from pstudy import errors  # noqa: E402

errors.require_modules("bench/replay.py", ("pandas", "numpy"))  # before its graphs are described
from pstudy.analyse import contention, replay, simulate  # noqa: E402
from pstudy.store import machinefiles, taskgraph  # noqa: E402


def work_of(graph, machine):
    peak = machine.peak_gflops_per_core * 1e9
    one_core = machine.bandwidth(1)
    d = [max(f / (0.8 * peak), b / one_core, 1e-9) for f, b in zip(graph.flops, graph.bytes)]
    return simulate.Work(d, [float(b) for b in graph.bytes], [min(1.0, f / (x * peak)) for f, x in zip(graph.flops, d)])


def timed(graph, work, machine, cores, engine, repeat):
    times, step = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        step, _ = simulate.step_time(graph, work, machine, cores, 4, contention.Node(machine, cores), engine=engine)
        times.append(time.perf_counter() - start)
    return statistics.median(times), step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="forkjoin,tasks,taskiter")
    ap.add_argument("--threads", default="16,112")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--python-repeat", type=int, default=1)
    args = ap.parse_args()
    if replay.library() is None:
        print(f"bench/replay: {replay.engine_name()}", file=sys.stderr)
        return 2
    machine = machinefiles.load("mn5-gpp")
    print(f"replay on {machine.name} ({machine.cores} cores, contention model on); native: {replay.engine_name()}")
    print(f"{'graph':<22} {'tasks':>7} {'native_s':>9} {'python_s':>9} {'ratio':>7}  step_s")
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        for variant in args.variants.split(","):
            for p in (int(x) for x in args.threads.split(",")):
                binary = ROOT / "build" / "gcc" / "fast" / f"gpt2-{variant}"
                try:
                    g = taskgraph.describe(binary, ["--config", "d12", "-B", "4", "-T", "64", "--threads", str(p)],
                                           Path(tmp) / f"{variant}-{p}.json")
                except Exception as err:  # noqa: BLE001 (a benchmark reports and goes on)
                    print(f"{variant} t{p}: {err}")
                    status = 1
                    continue
                cores = g.threads if g.schedule == taskgraph.STATIC else p
                w = work_of(g, machine)
                native, s1 = timed(g, w, machine, cores, "native", args.repeat)
                python, s2 = timed(g, w, machine, cores, "python", args.python_repeat)
                same = "" if s1 == s2 else "  DIFFERENT STEP TIMES"
                status |= s1 != s2
                print(f"{variant + ' t' + str(p):<22} {g.n_tasks:>7} {native:>9.4f} {python:>9.3f} "
                      f"{python / native:>6.0f}x  {s1:.6f}{same}")
    return status


if __name__ == "__main__":
    sys.exit(main())
