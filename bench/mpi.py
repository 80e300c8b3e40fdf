#!/usr/bin/env python3
"""Benchmark of gpt2-mpi (not a test): for one model shape (default d12, B=4, T=64), the step time
and the time of each phase (forward, backward, update, communication) at

  1 rank  x 2 threads                     (gpt2-mpi under mpirun -np 1: no communication)
  2 ranks x 1 thread, --update replicated (reduce-scatter + all-gather of the gradients, full AdamW)
  2 ranks x 1 thread, --update sharded    (reduce-scatter, AdamW on each rank's half, all-gather
                                           of the parameters)

with the bytes each rank sends per step (the binary's comm_bytes_per_step) and the peak resident
memory of each rank. The sharded update should hold about half the AdamW state (m and v, 8 bytes
per parameter) per rank: the table prints the state each rank holds beside its peak memory.

Each rank runs under a small wrapper (this file, --rank-wrapper) that starts the binary and
reports the child's peak RSS (getrusage) to a file named by its rank, since mpirun's own rusage
gives only the largest rank. Runs are interleaved over the configurations and repeated; a
figure is the median over runs of each run's median over its measured steps (the first step, a
warm-up, is left out). Nothing is asserted: the machine is shared and noisy.

    bench/mpi.py [--config d12] [-B 4] [-T 64] [--steps 6] [--repetitions 3] [--compiler gcc]
                 [--kernels fast] [--executor forkjoin]
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("step", "forward", "backward", "update", "comm")
# (label, ranks, threads per rank, update mode)
CONFIGURATIONS = [("1 rank x 2 threads", 1, 2, "sharded"),
                  ("2 ranks x 1 thread, replicated", 2, 1, "replicated"),
                  ("2 ranks x 1 thread, sharded", 2, 1, "sharded")]


def rank_wrapper(argv):
    """--rank-wrapper DIR BINARY ARGS...: run the binary, write its peak RSS to DIR/rss.<rank>."""
    out_dir, cmd = argv[0], argv[1:]
    code = subprocess.call(cmd)
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0"))
    kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    Path(out_dir, f"rss.{rank}").write_text(str(kib * 1024))
    return code


def mpirun(ranks, threads):
    cmd = ["mpirun", "-q", "-np", str(ranks), "--map-by", f"slot:PE={threads}", "--bind-to", "core"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def one_run(args, ranks, threads, update):
    binary = ROOT / "build" / args.compiler / args.kernels / "gpt2-mpi"
    with tempfile.TemporaryDirectory(prefix="bench-mpi-") as tmp:
        cmd = mpirun(ranks, threads) + [sys.executable, __file__, "--rank-wrapper", tmp, str(binary), "--json",
                                         "--config", args.config, "-B", str(args.B), "-T", str(args.T),
                                         "--steps", str(args.steps), "--threads", str(threads),
                                         "--update", update, "--executor", args.executor]
        env = dict(os.environ, OMP_PROC_BIND="close", OMP_PLACES="cores", OMP_NUM_THREADS=str(threads))
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
        if done.returncode != 0:
            sys.exit(f"bench/mpi.py: {' '.join(cmd)}: exit {done.returncode}: "
                     f"{(done.stderr.strip().splitlines() or [''])[-1]}")
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        info = lines[0]["info"]
        steps = [r for r in lines[1:] if "step" in r][1:]  # step 0 is the warm-up
        rss = [int(Path(tmp, f"rss.{r}").read_text()) for r in range(ranks)]
    medians = {p: statistics.median(s[f"{p}_s"] for s in steps) for p in PHASES}
    return info, medians, rss


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--rank-wrapper":
        return rank_wrapper(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="d12")
    ap.add_argument("-B", type=int, default=4)
    ap.add_argument("-T", type=int, default=64)
    ap.add_argument("--steps", type=int, default=6, help="steps per run, the first a warm-up (default 6)")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--compiler", default="gcc", choices=["gcc", "clang"])
    ap.add_argument("--kernels", default="fast", choices=["fast", "reference"])
    ap.add_argument("--executor", default="forkjoin", choices=["forkjoin", "tasks", "taskiter"])
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run (default 1800)")
    args = ap.parse_args()
    if args.steps < 2 or args.repetitions < 1:
        ap.error("--steps must be at least 2 (one warm-up) and --repetitions at least 1")
    if shutil.which("mpirun") is None:
        sys.exit("bench/mpi.py: mpirun is not on PATH (scripts/install-deps.sh installs openmpi-bin)")
    if not (ROOT / "build" / args.compiler / args.kernels / "gpt2-mpi").exists():
        sys.exit(f"bench/mpi.py: build/{args.compiler}/{args.kernels}/gpt2-mpi is missing: run `make`")
    runs = {label: [] for label, *_ in CONFIGURATIONS}
    info = {}
    for rep in range(args.repetitions):
        order = CONFIGURATIONS if rep % 2 == 0 else CONFIGURATIONS[::-1]  # a steady drift cancels over two
        for label, ranks, threads, update in order:
            info[label], medians, rss = one_run(args, ranks, threads, update)
            runs[label].append((medians, rss))
            print(f"rep {rep} {label}: step {medians['step'] * 1e3:.1f} ms", file=sys.stderr, flush=True)

    some = next(iter(info.values()))
    n = some["num_parameters"]
    print(f"gpt2-mpi, {args.config} (N = {n:,} parameters), B={args.B} T={args.T}, {args.compiler}/{args.kernels}, "
          f"executor {args.executor}; medians over {args.repetitions} run(s) of {args.steps - 1} measured steps")
    head = f"{'configuration':34s}" + "".join(f"{p + ' ms':>13s}" for p in PHASES) + \
        f"{'sent MB/step':>14s}{'m+v MB/rank':>13s}  peak RSS MB per rank"
    print(head)
    print("-" * len(head))
    for label, ranks, threads, update in CONFIGURATIONS:
        med = {p: statistics.median(m[p] for m, _ in runs[label]) for p in PHASES}
        rss = [max(r[i] for _, r in runs[label]) for i in range(ranks)]
        sent = info[label]["comm_bytes_per_step"]
        held = 8 * n / (ranks if update == "sharded" else 1)  # m and v: 2 floats per parameter held
        print(f"{label:34s}" + "".join(f"{med[p] * 1e3:13.1f}" for p in PHASES) +
              f"{sent / 1e6:14.1f}{held / 1e6:13.1f}  " + ", ".join(f"{b / 1e6:.0f}" for b in rss))
    print("sent: bytes rank 0 sends per step (gradients of the other shard, then its own shard of the "
          "gradients or parameters); m+v: AdamW moments a rank holds (the sharded update touches only its "
          "shard's pages of them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
