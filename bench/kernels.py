#!/usr/bin/env python3
"""Kernel benchmark (not a test), in one run on this machine:

1. every matrix-product shape of the model (default d12, B=4, T=64: forward,
   input-gradient and weight-gradient products of qkv, attproj, fc, fcproj and
   the language-model head) in the project's kernel and in OpenBLAS's serial
   cblas_sgemm on the same shape, single thread: GFLOP/s and their ratio
   (target: >= 0.9x OpenBLAS for every shape);
2. the measured peak single-precision FLOP/s of the cores (bench/peakflops,
   widest vector width) at each thread count;
3. one training step of each variant at each thread count, for each kernel
   set: its FLOPs (traffic model, --describe), time (median of the measured
   steps), GFLOP/s and the fraction of the measured peak of the cores used
   (target: >= 45% for `fast`, seq on 1 thread and forkjoin on 2).

Memory: peak resident set size of the seq run (target <= 2.5 GB for d12).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def json_lines(text):
    return [json.loads(x) for x in text.splitlines() if x.strip().startswith("{")]


def run(cmd, env=None):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"bench/kernels.py: {' '.join(map(str, cmd))} failed: {r.stderr.strip()[-500:]}")
    return r


def peak_gflops(threads):
    out = run([ROOT / "build/bench/peakflops", "--json", "--threads", threads]).stdout
    best = max(json.loads(out)["results"], key=lambda r: r["gflops"])
    return best["gflops"], best["isa"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="d12")
    ap.add_argument("-B", type=int, default=4)
    ap.add_argument("-T", type=int, default=64)
    ap.add_argument("--steps", type=int, default=4, help="steps per run; the first is warm-up")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--kernels", default="fast,reference")
    ap.add_argument("--variants", default="seq,forkjoin,tasks,taskiter")
    ap.add_argument("--skip-gemm", action="store_true")
    args = ap.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    env = dict(os.environ, OMP_PROC_BIND="close", OMP_PLACES="cores")
    # OpenBLAS picks its kernels by CPU; on AMD Zen its Zen kernels, elsewhere its own detection
    env.setdefault("OPENBLAS_CORETYPE", "Zen" if "AuthenticAMD" in Path("/proc/cpuinfo").read_text() else "")
    if not env["OPENBLAS_CORETYPE"]:
        del env["OPENBLAS_CORETYPE"]

    if not args.skip_gemm:
        rows = args.B * args.T
        out = run([ROOT / "build/bench/gemm_bench", "--json", "--rows", rows, "--reps", 15], env).stdout
        shapes = [s for s in json_lines(out) if "ratio" in s and "layer" in s]
        print(f"matrix products, rows = B*T = {rows}, 1 thread, best of 15 with the two libraries alternating "
              f"(OPENBLAS_CORETYPE={env.get('OPENBLAS_CORETYPE', 'auto')}); ratio = project / OpenBLAS "
              "GFLOP/s of the bests, median = of the per-repetition ratios")
        print(f"{'layer':8s} {'product':16s} {'M':>6s} {'N':>6s} {'K':>6s} {'project':>9s} {'OpenBLAS':>9s} "
              f"{'ratio':>6s} {'median':>6s}")
        for s in shapes:
            flag = "" if s["ratio"] >= 0.9 else "  < 0.9"
            print(f"{s['layer']:8s} {s['product']:16s} {s['M']:6d} {s['N']:6d} {s['K']:6d} "
                  f"{s['gemm_gflops']:9.1f} {s['openblas_gflops']:9.1f} {s['ratio']:6.2f} "
                  f"{s['median_ratio']:6.2f}{flag}")
        worst = min(shapes, key=lambda s: s["ratio"])
        print(f"lowest ratio {worst['ratio']:.2f} ({worst['layer']} {worst['product']}); "
              f"{sum(s['ratio'] >= 0.9 for s in shapes)} of {len(shapes)} shapes at >= 0.9x OpenBLAS\n")

    peaks = {t: peak_gflops(t) for t in threads}
    for t, (g, isa) in peaks.items():
        print(f"measured peak, {t} thread(s): {g:.1f} GFLOP/s ({isa} FMA)")
    model = ["--config", args.config, "-B", args.B, "-T", args.T]
    print(f"\ntraining step, {args.config} B={args.B} T={args.T}, median of {args.steps - 1} steps after 1 warm-up")
    print(f"{'kernels':10s} {'variant':9s} {'threads':>7s} {'GFLOP':>7s} {'step s':>8s} {'GFLOP/s':>8s} {'of peak':>8s}")
    for kernels in args.kernels.split(","):
        build = ROOT / "build" / "gcc" / kernels
        ops = json_lines(run([build / "gpt2-seq", "--json", "--describe"] + model).stdout)
        flops = sum(o["flops"] for o in ops if "flops" in o)
        for variant in args.variants.split(","):
            for t in ([1] if variant == "seq" else threads):
                cmd = [build / f"gpt2-{variant}", "--json", "--steps", args.steps] + model
                if variant != "seq":
                    cmd += ["--threads", t]
                before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
                steps = [r for r in json_lines(run(cmd, env).stdout) if "step" in r][1:]
                rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
                sec = statistics.median(s["step_s"] for s in steps)
                rate = flops / sec / 1e9
                mem = f"  peak RSS {rss / 1e6:.2f} GB" if variant == "seq" and rss > before else ""
                print(f"{kernels:10s} {variant:9s} {t:7d} {flops / 1e9:7.1f} {sec:8.3f} {rate:8.1f} "
                      f"{rate / peaks[t][0]:8.1%}{mem}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
