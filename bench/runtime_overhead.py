#!/usr/bin/env python3
"""Benchmark (not a test): the per-task overhead of each task runtime the variants run on, in ns
per empty task (bench/runtime_overhead.c): libgomp tasks (gcc), libomp tasks (clang), the
built-in replay of variants/taskiter.c, nOS-V (variants/nosv.c's submission) and StarPU under
each scheduler.

Run rules:
  - two shapes: a chain (every task depends on the one before it; the time of a release and a
    dispatch, which no parallelism hides) and a fan-out (one root, then --tasks independent tasks;
    the throughput of submission and scheduling);
  - each runtime x shape x thread count runs in a process of its own: a warm-up of 1,000 tasks
    (threads started, pages touched), then --repeats timed runs of --tasks tasks; the median and
    the minimum per task are printed;
  - the threads are the runtime's workers (OpenMP threads, nOS-V's CPUs, StarPU's CPU workers),
    1 and 2 unless --threads says otherwise; the machine should be otherwise idle.
Needs `make build/bench/runtime_overhead-gcc build/bench/runtime_overhead-clang` (make
bench-runtimes builds them and runs this).
"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEDULERS = ("eager", "lws", "dmda")


def cases():
    """(label, compiler build, runtime argument, extra environment) of every runtime measured."""
    yield "libgomp tasks", "gcc", "omp", {}
    yield "libomp tasks", "clang", "omp", {}
    yield "built-in replay", "gcc", "replay", {}
    yield "nOS-V", "gcc", "nosv", {}
    for sched in SCHEDULERS:
        yield f"StarPU {sched}", "gcc", "starpu", {"STARPU_SCHED": sched}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    if args.tasks < 2 or args.repeats < 1 or min(args.threads) < 1:
        print("runtime_overhead.py: --tasks must be at least 2, --repeats and --threads at least 1", file=sys.stderr)
        return 2
    print(f"{'runtime':<18} {'shape':<7} {'threads':>7} {'median ns/task':>15} {'min ns/task':>12}")
    failed = 0
    for label, compiler, runtime, extra in cases():
        binary = ROOT / "build" / "bench" / f"runtime_overhead-{compiler}"
        if not binary.exists():
            print(f"runtime_overhead.py: {binary} is missing: make {binary.relative_to(ROOT)}", file=sys.stderr)
            return 2
        for shape in ("chain", "fanout"):
            for threads in args.threads:
                env = {**os.environ, **extra}
                r = subprocess.run([str(binary), runtime, shape, str(args.tasks), str(threads), str(args.repeats)],
                                   capture_output=True, text=True, env=env, timeout=args.timeout)
                if r.returncode != 0:
                    print(f"{label:<18} {shape:<7} {threads:>7}  failed: {r.stderr.strip()[:200]}")
                    failed += 1
                    continue
                fields = r.stdout.split()
                print(f"{label:<18} {shape:<7} {threads:>7} {float(fields[4]):>15.0f} {float(fields[5]):>12.0f}",
                      flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
