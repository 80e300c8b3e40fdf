#!/usr/bin/env python3
"""What recording each chunk's CPU time costs a step: build/bench/clock_reads times one read of the
thread CPU clock (a system call) and of the wall clock; a traced run of each variant gives its
chunks per step and the step's CPU time; the cost is two extra reads a chunk, and two readings a
step of what disturbed it (steal time and involuntary switches, core/disturbance.c).

    PYTHONPATH=harness python3 -m bench.cpu_time_overhead [--config d12] [--variant taskiter --variant seq] [--threads 2] [--steps 3]
(with the Python scripts/find-python.sh names: one that imports pandas)

Per variant it prints the chunks a step, the extra CPU time a step (chunks x 2 reads), and that
against the step's CPU time per thread (its chunks' cpu_s summed over the threads, over the thread
count: the step as it would run on CPUs of its own), both spread over the threads and all on one
(the bound). Target: at most 1% of a d12 step; exit status 1 beyond it. Bad input: one line, exit 2.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from pstudy import errors  # noqa: E402

errors.require_modules("bench/cpu_time_overhead.py")

from pstudy.errors import StudyError  # noqa: E402
from pstudy.store import traceformats  # noqa: E402

CLOCK_READS = ROOT / "build" / "bench" / "clock_reads"
TARGET = 0.01


def binary(variant):
    path = ROOT / "build" / "gcc" / "fast" / f"gpt2-{variant}"
    if not path.is_file():
        raise StudyError(f"{path}: missing (make {path.relative_to(ROOT)})")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="d12")
    parser.add_argument("--variant", action="append")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        if args.threads < 1 or args.steps < 2:
            raise StudyError("--threads: at least 1; --steps: at least 2 (the first is left out)")
        if not CLOCK_READS.is_file():
            raise StudyError(f"{CLOCK_READS}: missing (make build/bench/clock_reads)")
        clocks = json.loads(subprocess.run([str(CLOCK_READS)], capture_output=True, text=True, check=True).stdout)
        read, reading = clocks["thread_cputime_ns"] * 1e-9, clocks["disturbance_ns"] * 1e-9
        print(f"one read: thread CPU clock {clocks['thread_cputime_ns']:.0f} ns, wall clock {clocks['monotonic_ns']:.0f} ns, "
              f"the step's disturbance (steal and switches) {1e-3 * clocks['disturbance_ns']:.1f} us "
              "(on the thread's own CPU clock)")
        worst = 0.0
        for variant in args.variant or ["taskiter", "seq"]:
            threads = 1 if variant == "seq" else args.threads
            with tempfile.TemporaryDirectory() as tmp:
                trace = Path(tmp) / "t.csv"
                proc = subprocess.run([str(binary(variant)), "--config", args.config, "-B", "4", "-T", "64",
                                       "--steps", str(args.steps), "--threads", str(threads), "--trace", str(trace)],
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    raise StudyError(f"gpt2-{variant}: {(proc.stderr.strip().splitlines() or ['failed'])[-1]}")
                chunks = traceformats.read_chunks(trace)
            chunks = chunks[chunks["iteration"] >= 1]
            per_step = chunks.groupby("iteration").agg(n=("op", "size"), cpu=(traceformats.CPU_COLUMN, "sum"))
            n, cpu = float(per_step["n"].median()), float(per_step["cpu"].median()) / threads
            # two clock reads a chunk, and two disturbance readings a step on one thread
            extra = 2 * n * read + 2 * reading
            spread, bound = extra / threads / cpu, extra / cpu
            worst = max(worst, bound)
            print(f"{variant} {args.config} t={threads}: {n:.0f} chunks a step, {1e3 * extra:.1f} ms of CPU a step for the "
                  f"CPU clock and the disturbance readings; {100 * spread:.2f}% of the step on CPUs of its own ({cpu:.3f} s), "
                  f"{100 * bound:.2f}% all on one thread")
        print(f"target: at most {100 * TARGET:.0f}% of the step: {'ok' if worst <= TARGET else 'BEYOND'}")
        return 0 if worst <= TARGET else 1
    except (StudyError, subprocess.CalledProcessError, ValueError, KeyError) as err:
        print(f"cpu_time_overhead: {err}".splitlines()[0], file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
