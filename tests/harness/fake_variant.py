#!/usr/bin/python3 -S
"""A stand-in for the variant binaries, following their command-line contract (notes: --json output).

Installed under a build tree as <build>/<compiler>/<kernels>/gpt2-<variant> (a symlink), it reads
its variant, compiler and kernels from that path. Its step times are synthetic and deterministic:
no time is really spent unless FAKE_SLEEP_S asks for it.

Misbehaviour, for testing the harness, chosen by environment variables:
  FAKE_MODE            ok (default) | crash | segv | hang | garbage | short | mismatch | slower |
                       slowdown (every step FAKE_SLOWDOWN times longer: 0.1 = 10% slower) |
                       diverge (from step 1 on, the loss is null: the binaries' word for NaN)
  FAKE_MODE_VARIANTS   comma-separated variants the mode applies to (default: all)
  FAKE_MODE_THREADS    comma-separated thread counts the mode applies to (default: all)
  FAKE_MODE_BY_VARIANT comma-separated variant=mode pairs: each variant named has its own mode (one
                       sweep then fails in several ways at once), the others FAKE_MODE's
  FAKE_PIDFILE         in hang mode, write the pid of a child process left sleeping (to check
                       that a timeout kills the whole process group)
  FAKE_COUNTER         a file counting invocations; with FAKE_INTERRUPT_AT=N the N-th invocation
                       sends SIGINT to its parent (the harness), as a Ctrl-C would
  FAKE_SLEEP_S         really sleep this long per step
  FAKE_NOISE           relative spread of the step-to-step noise (uniform +-, default 0.02)
  FAKE_RUN_NOISE       standard deviation of a per-process log-normal factor on all its steps (default
                       0): a run-level effect, as a real process gets from its memory layout and placement
  FAKE_STEP_SCALE      multiplies every synthetic time (0.004: steps of a few ms, as the tiny model's)
  FAKE_UPDATE_S        the update phase's own time in seconds (default: 10% of the step), to mimic a
                       short phase that drifts on its own between sweeps
  FAKE_HONOUR_AFFINITY 1: the synthetic times use min(threads, CPUs this process may run on), so that
                       `taskset -c 0` makes a 2-thread run slower, as it would a real one
A build tree can carry its own settings, as a commit carries its own code: a JSON object of FAKE_*
variables in <build>/fake-env.json (the build root, three levels above the binary's path) overrides
the environment.

It starts as fast as Python can (-S: nothing from site-packages; no argparse, whose import alone
took a fifth of a run): the suite starts it thousands of times.
"""

import json
import os
import random
import signal
import sys
import time

BASE_STEP_S = {"seq": 1.0, "forkjoin": 1.1, "tasks": 1.15, "taskiter": 1.12, "nosv": 1.13, "starpu": 1.14}
PARALLEL_FRACTION = 0.9  # Amdahl: the synthetic times scale as (1 - f) + f / threads


def identity():
    path = os.path.abspath(sys.argv[0])
    name = os.path.basename(path)
    kernels_dir = os.path.dirname(path)
    variant = name[len("gpt2-"):] if name.startswith("gpt2-") else "seq"
    return variant, os.path.basename(os.path.dirname(kernels_dir)), os.path.basename(kernels_dir)


def fail(prog, where, problem):
    sys.stderr.write(f"{prog}: {where}: {problem}\n")
    sys.exit(2)


# the binaries' options the harness gives: name -> (type, default); bool: a flag without a value
OPTIONS = {"--config": (str, None), "--model": (str, None), "--data": (str, None), "-B": (int, 4), "-T": (int, 64),
           "--steps": (int, 10), "--seed": (int, 0), "--threads": (int, None), "--batch-subsize": (int, None),
           "--token-chunk": (int, None), "--tile-sequences": (int, None), "--tiles-per-product": (int, None),
           "--json": (bool, False),
           "--trace": (str, None), "--describe": (bool, False), "--list-configs": (bool, False),
           "--check": (bool, False)}


class Options:
    pass


def parse_options(prog, argv):
    """OPTIONS from argv (`--name value` or `--name=value`); anything else is the binaries' error:
    one line naming the option, exit status 2."""
    args = Options()
    for name, (_, default) in OPTIONS.items():
        setattr(args, name.lstrip("-").replace("-", "_"), default)
    i = 0
    while i < len(argv):
        name, eq, value = argv[i].partition("=")
        if name not in OPTIONS:
            fail(prog, "options", f"unrecognized arguments: {argv[i]}")
        kind = OPTIONS[name][0]
        if kind is bool:
            if eq:
                fail(prog, "options", f"argument {name}: ignored explicit argument '{value}'")
            value = True
        elif not eq:
            if i + 1 >= len(argv):
                fail(prog, "options", f"argument {name}: expected one argument")
            i += 1
            value = argv[i]
        if kind is int:
            try:
                value = int(value)
            except ValueError:
                fail(prog, "options", f"argument {name}: invalid int value: '{value}'")
        setattr(args, name.lstrip("-").replace("-", "_"), value)
        i += 1
    return args


def build_settings():
    """FAKE_* overrides from <build>/fake-env.json, when the build tree has one."""
    build_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0]))))
    try:
        with open(os.path.join(build_root, "fake-env.json")) as f:
            settings = json.load(f)
    except FileNotFoundError:
        return
    for key, value in settings.items():
        if key.startswith("FAKE_"):
            os.environ[key] = str(value)


def main():
    build_settings()
    variant, compiler, kernels = identity()
    prog = f"gpt2-{variant}"
    args = parse_options(prog, sys.argv[1:])
    if args.list_configs:  # the real binaries' embedded configurations, one per line
        print("\n".join(("d12", "d6", "small", "tiny")))
        return 0
    if args.model and not os.path.isfile(args.model):
        fail(prog, args.model, "no such file")
    if args.check:  # the real binaries' checks before a run, all passed; nothing is run
        return 0
    threads = int(os.environ.get("OMP_NUM_THREADS", "1")) if args.threads is None else args.threads
    if variant == "seq":
        threads = 1

    if args.describe:
        # two operations, one compute-heavy and one streaming, like core/traffic.c's output
        for op, (kernel, flops, nbytes) in enumerate([("matmul_fwd", 4.0e9, 1.0e8), ("gelu_fwd", 1.0e7, 2.0e7)]):
            print(json.dumps({"op": op, "kernel": kernel, "label": f"{kernel} L0", "layer": 0,
                              "phase": "forward", "split": "rows", "flops": flops, "bytes": nbytes,
                              "intensity": flops / nbytes}))
        return 0
    counter = os.environ.get("FAKE_COUNTER")
    if counter:
        try:
            with open(counter) as f:
                count = int(f.read() or 0) + 1
        except FileNotFoundError:
            count = 1
        with open(counter, "w") as f:
            f.write(str(count))
        if count == int(os.environ.get("FAKE_INTERRUPT_AT", "0")):
            os.kill(os.getppid(), signal.SIGINT)
            time.sleep(30)  # the harness must kill us; exiting on our own would hide a bug

    mode = os.environ.get("FAKE_MODE", "ok")
    by_variant = dict(pair.split("=", 1) for pair in os.environ.get("FAKE_MODE_BY_VARIANT", "").split(",") if pair)
    mode = by_variant.get(variant, mode)
    only = os.environ.get("FAKE_MODE_VARIANTS")
    if only and variant not in only.split(","):
        mode = "ok"
    only_threads = os.environ.get("FAKE_MODE_THREADS")
    if only_threads and str(threads) not in only_threads.split(","):
        mode = "ok"

    info = {"variant": variant, "compiler": compiler, "kernels": kernels, "threads": threads,
            "omp_runtime": "libgomp" if compiler == "gcc" else "libomp",
            "proc_bind": os.environ.get("OMP_PROC_BIND", ""), "places": os.environ.get("OMP_PLACES", ""),
            "batch_subsize": args.batch_subsize, "token_chunk": args.token_chunk, "tile_sequences": args.tile_sequences,
            "tiles_per_product": args.tiles_per_product,
            "tasks_per_step": 100 if variant in ("tasks", "taskiter") else None,
            "config": args.config, "B": args.B, "T": args.T, "num_parameters": 12345}
    if mode == "mismatch":
        info["threads"] = threads + 1
    if mode == "crash":
        fail(prog, "model", "simulated failure")
    if mode == "segv":
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    print(json.dumps({"info": info}), flush=True)
    if mode == "hang":
        import subprocess
        child = subprocess.Popen(["sleep", "300"])
        pidfile = os.environ.get("FAKE_PIDFILE")
        if pidfile:
            with open(pidfile, "w") as f:
                f.write(str(child.pid))
        time.sleep(300)
    if mode == "garbage":
        print("Segmentation fault? no: just text where JSON should be")
        return 0

    rng = random.Random(hash((variant, compiler, kernels, threads, args.batch_subsize, args.token_chunk,
                              os.getpid())) & 0xFFFFFFFF)
    workers = threads
    if os.environ.get("FAKE_HONOUR_AFFINITY") == "1":
        workers = min(threads, len(os.sched_getaffinity(0)))
    scale = (1 - PARALLEL_FRACTION) + PARALLEL_FRACTION / workers
    if mode == "slower":
        scale = 1.0 + 0.5 * (threads - 1)
    if mode == "slowdown":
        scale *= 1.0 + float(os.environ.get("FAKE_SLOWDOWN", "0.1"))
    scale *= float(os.environ.get("FAKE_STEP_SCALE", "1"))
    update_s = os.environ.get("FAKE_UPDATE_S")
    spread = float(os.environ.get("FAKE_NOISE", "0.02"))
    scale *= rng.lognormvariate(0.0, float(os.environ.get("FAKE_RUN_NOISE", "0")))
    steps = args.steps - 1 if mode == "short" else args.steps
    trace_rows = []
    for step in range(steps):
        warm = 1.5 if step == 0 else 1.0
        noise = 1.0 + rng.uniform(-spread, spread)
        total = BASE_STEP_S[variant] * scale * warm * noise
        update = float(update_s) * noise if update_s else 0.10 * total
        record = {"step": step, "loss": None if mode == "diverge" and step else 11.0 - 0.1 * step,
                  "forward_s": 0.35 * total,
                  "backward_s": 0.55 * total, "update_s": update, "step_s": 0.9 * total + update}
        if os.environ.get("FAKE_SLEEP_S"):
            time.sleep(float(os.environ["FAKE_SLEEP_S"]))
        print(json.dumps(record), flush=True)
        trace_rows.append((step, total))
    if args.trace:
        # per-chunk records in core/trace.c's layout: op 0 takes 90% of the step, op 1 the rest
        with open(args.trace, "w") as f:
            f.write("iteration,op,kernel,layer,phase,label,b0,b1,x0,x1,thread,start_s,end_s\n")
            start = 0.0
            for step, total in trace_rows:
                for op, (kernel, share) in enumerate([("matmul_fwd", 0.9), ("gelu_fwd", 0.1)]):
                    end = start + share * total
                    f.write(f"{step},{op},{kernel},0,forward,{kernel} L0,0,1,0,1,0,{start:.9f},{end:.9f}\n")
                    start = end
    return 0


if __name__ == "__main__":
    sys.exit(main())
