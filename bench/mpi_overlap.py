#!/usr/bin/env python3
"""Benchmark of gpt2-mpi's --overlap (not a test): the step time of 2 local ranks x 1 thread with
the gradients reduced bucket by bucket beside the backward pass (--overlap on) against after it
(--overlap off), for one model shape (default d12, B=4, T=64), and the gradient exchange's time
against a bandwidth bound.

The pairs: a repetition runs both settings, one after the other, the order reversed in every other
repetition (a steady drift of the machine cancels over two), each run's sample the median of its
measured steps (the first step, a warm-up, left out). The ratio on/off is the Hodges-Lehmann
estimate for paired samples with its 95% interval (harness/pstudy/analyse/compare.py; 6
repetitions at least). Beside it, per setting, the medians of the step, its backward pass and
comm_s: off, the time the main thread spends in the collectives; on, the communication thread's
time in the buckets' collectives plus the main thread's (the losses, the parameters' all-gather).

The bound: the gradients' bytes (4 x parameters) over the point-to-point bandwidth between the two
ranks, measured in the same benchmark (build/bench/mpi_bandwidth, built here when missing: both
ranks send and receive 256 MiB at once in the binary's 4 MiB messages, under the same mpirun
placement), once before the pairs and once after. At 2 ranks each rank sends half the gradients
in the reduce-scatter and half the parameters in the all-gather: the same bytes.

    bench/mpi_overlap.py [--config d12] [-B 4] [-T 64] [--steps 5] [--repetitions 6]
                         [--executor forkjoin] [--update sharded] [--compiler gcc] [--kernels fast]
                         [--mca NAME=VALUE ...]
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from pstudy import errors  # noqa: E402

errors.require_modules("bench/mpi_overlap.py")
from pstudy.analyse.compare import hl_paired_ratio_ci  # noqa: E402

PROGRAM = "bench/mpi_overlap.py"
SETTINGS = ("off", "on")


def mpirun(args):
    cmd = ["mpirun", "-q", "-np", "2", "--map-by", "slot:PE=1", "--bind-to", "core"]
    for setting in args.mca:
        name, _, value = setting.partition("=")
        cmd += ["--mca", name, value]
    return cmd + (["--allow-run-as-root"] if os.geteuid() == 0 else [])


def run(cmd, args, env=None):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    if done.returncode != 0:
        sys.exit(f"bench/mpi_overlap.py: {' '.join(cmd)}: exit {done.returncode}: "
                 f"{(done.stderr.strip().splitlines() or [''])[-1]}")
    return done.stdout


def one_run(args, overlap):
    binary = ROOT / "build" / args.compiler / args.kernels / "gpt2-mpi"
    cmd = mpirun(args) + [str(binary), "--json", "--config", args.config, "-B", str(args.B), "-T", str(args.T),
                          "--steps", str(args.steps), "--threads", "1", "--executor", args.executor,
                          "--update", args.update, "--overlap", overlap]
    env = dict(os.environ, OMP_PROC_BIND="close", OMP_PLACES="cores", OMP_NUM_THREADS="1")
    lines = [json.loads(line) for line in run(cmd, args, env).splitlines() if line.strip()]
    info = lines[0]["info"]
    steps = [r for r in lines[1:] if "step" in r][1:]  # step 0 is the warm-up
    return info, {k: statistics.median(s[f"{k}_s"] for s in steps) for k in ("step", "backward", "comm")}


def bandwidth(args):
    out = run(mpirun(args) + [str(ROOT / "build" / "bench" / "mpi_bandwidth"), "--repeats", "10"], args)
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="d12")
    ap.add_argument("-B", type=int, default=4)
    ap.add_argument("-T", type=int, default=64)
    ap.add_argument("--steps", type=int, default=5, help="steps per run, the first a warm-up (default 5)")
    ap.add_argument("--repetitions", type=int, default=6, help="pairs (default 6, the fewest with an interval)")
    ap.add_argument("--executor", default="forkjoin", choices=["forkjoin", "tasks", "taskiter"])
    ap.add_argument("--update", default="sharded", choices=["sharded", "replicated"])
    ap.add_argument("--compiler", default="gcc", choices=["gcc", "clang"])
    ap.add_argument("--kernels", default="fast", choices=["fast", "reference"])
    ap.add_argument("--mca", action="append", default=[], metavar="NAME=VALUE",
                    help="an Open MPI parameter for every mpirun (e.g. btl_vader_single_copy_mechanism=none)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per run (default 900)")
    args = ap.parse_args()
    if args.steps < 2 or args.repetitions < 1:
        ap.error("--steps must be at least 2 (one warm-up) and --repetitions at least 1")
    if shutil.which("mpirun") is None:
        errors.exit_bad_input(PROGRAM, "mpirun is not on PATH (scripts/install-deps.sh installs openmpi-bin)")
    if not (ROOT / "build" / args.compiler / args.kernels / "gpt2-mpi").exists():
        errors.exit_bad_input(PROGRAM, f"build/{args.compiler}/{args.kernels}/gpt2-mpi is missing: run `make`")
    made = subprocess.run(["make", "-s", "-C", str(ROOT), "build/bench/mpi_bandwidth"], capture_output=True, text=True)
    if made.returncode != 0:
        errors.exit_bad_input(PROGRAM, f"make build/bench/mpi_bandwidth: {made.stderr.strip()}")

    links = [bandwidth(args)]
    samples = {s: [] for s in SETTINGS}
    info = None
    for rep in range(args.repetitions):
        for overlap in (SETTINGS if rep % 2 == 0 else SETTINGS[::-1]):
            info, medians = one_run(args, overlap)
            samples[overlap].append(medians)
            print(f"rep {rep} --overlap {overlap}: step {medians['step'] * 1e3:.1f} ms, backward "
                  f"{medians['backward'] * 1e3:.1f} ms, comm {medians['comm'] * 1e3:.1f} ms", file=sys.stderr, flush=True)
    links.append(bandwidth(args))

    n = info["num_parameters"]
    print(f"gpt2-mpi, {args.config} (N = {n:,} parameters), B={args.B} T={args.T}, 2 ranks x 1 thread, executor "
          f"{args.executor}, --update {args.update}, {args.compiler}/{args.kernels}"
          + (f", --mca {' '.join(args.mca)}" if args.mca else "")
          + f"; {args.repetitions} pairs of runs of {args.steps - 1} measured steps, medians")
    print(f"{'--overlap':10s}{'step ms':>10s}{'backward ms':>13s}{'comm ms':>10s}")
    for s in SETTINGS:
        med = {k: statistics.median(m[k] for m in samples[s]) for k in ("step", "backward", "comm")}
        print(f"{s:10s}{med['step'] * 1e3:10.1f}{med['backward'] * 1e3:13.1f}{med['comm'] * 1e3:10.1f}")
    est, lo, hi = hl_paired_ratio_ci([m["step"] for m in samples["off"]], [m["step"] for m in samples["on"]], 0.95)
    interval = f"[{lo:.3f}, {hi:.3f}]" if not math.isnan(lo) else "(no interval: fewer than 6 pairs)"
    print(f"step time, on / off: {est:.3f} {interval} (95%, Hodges-Lehmann, paired); per pair: "
          + ", ".join(f"{b['step'] / a['step']:.3f}" for a, b in zip(samples["off"], samples["on"])))
    grad_bytes = 4 * n
    for when, link in zip(("before", "after"), links):
        gbs = link["median_GBs"]
        print(f"point-to-point bandwidth {when} the pairs: {gbs:.2f} GB/s per direction (median of "
              f"{link['repeats']}, best {link['best_GBs']:.2f}; {link['bytes'] >> 20} MiB each way in "
              f"{link['block'] >> 20} MiB messages)")
    gbs = statistics.median(link["median_GBs"] for link in links)
    bound = grad_bytes / (gbs * 1e9)
    comm_off = statistics.median(m["comm"] for m in samples["off"])
    print(f"bound: the gradients' {grad_bytes / 1e6:.0f} MB at {gbs:.2f} GB/s = {bound * 1e3:.0f} ms; the exchange "
          f"(comm_s, --overlap off: reduce-scatter, losses and all-gather) {comm_off * 1e3:.0f} ms = "
          f"{comm_off / bound:.2f}x the bound; bytes rank 0 sends a step: {info['comm_bytes_per_step'] / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
