#!/usr/bin/env python3
"""Benchmark of the variants (not a test): step time of each variant at 1 and
2 threads (more with --threads), task counts and per-task overhead of `tasks`
and `taskiter`, and the cost of --trace, for one model shape (default d12,
B=4, T=64). Runs are interleaved across variants and repeated; medians are
reported. Prints the ratios the targets are stated in:

  tasks and taskiter vs forkjoin at 1 thread          (target: median ratio at most 1.01)
  taskiter vs forkjoin at 2 threads and more           (target: the whole interval below 1.00)
  tasks vs forkjoin at 2 threads and more              (target: median ratio at most 1.00)
  each parallel variant's speedup over its own 1-thread run           (target: >= 1.85 at 2)
  forkjoin with --trace vs without at the largest thread count       (target: under 2% slower)

The task variants are held to these with the chunking they choose for the thread count
themselves (no chunk option given: "auto", core/taskgraph.c choose_granularity), the targets of
with enough tiles for every thread, no barrier between operations or iterations and
no pass that packs the weights where one row chunk holds every row (variants/main.c), a task
variant should lose nothing to fork-join at 1 thread and win from 2. The reference study's
chunkings (BATCH_SUBSIZE=1, k=T; tasks also BATCH_SUBSIZE=B) are measured beside them, their
ratios printed without a target.

--targets-only runs only the points the targets compare (forkjoin and each task variant's "auto"),
repeated, without the traced rounds, the trace-cost pairs and the products: on a noisy machine the
intervals, not the points, are what is short.

--isa avx2 runs the builds of `make avx2` (-mavx2 -mfma in place of -march=native): the
variants with the AVX2 micro-kernel on a machine that also has AVX-512.

Products in the two forms (d12 only, the shapes bench/gemm_bench knows): the
transformer blocks' products, single thread, in the form fork-join runs them
(one call, packing inside) and in the task form (a packing of each weight, then
chunks of BATCH_SUBSIZE=1 rows; weight gradients in chunks of 256 channels), the
forms alternating (`gemm_bench --task-form`). It says how much of the 1-thread
gap is the products' form, and prices the packing against a plain copy of the
same bytes, the least a packed copy of a weight costs.

Per-task overhead at 1 thread is (step time - sum of chunk times) / tasks: the
runtime's own cost. At more threads the same difference divided by the task
count also holds idle time, and is labelled so.

On a shared machine single runs scatter by more than the gaps the targets are
about, so each ratio comes with a 95% interval and a verdict. One sample is
one run (the median of its measured steps: steps of one process are not
independent draws). The ratios are paired: a repetition runs every point once,
the points each target compares next to each other, and the order is reversed
in every other repetition, so the machine's drift between repetitions (larger
than the gaps) cancels in each repetition's ratio and a linear drift within
one cancels over two. The interval is the Hodges-Lehmann one for paired
samples (Walsh averages of the log ratios, exact Wilcoxon signed-rank null;
harness/pstudy/compare.py), distribution-free; it needs 6 repetitions. A
target is "met" when the whole interval satisfies it, "missed" when none of it
does, and "undecided" otherwise: more repetitions would tell. The
per-repetition ratios and the hypervisor's steal time during each run are
printed beside them.

Where the time goes: from traced runs of each task point and of forkjoin at
each thread count (two rounds, forkjoin next to the task points, the order
reversed in the second), the time of each kernel's chunks per step (summed over
the threads; the median over the traced steps) and the idle time (threads x step
- the chunks' time), each task variant's beside forkjoin's with the difference:
which kernels make up a gap.

Every measured step is saved as it is measured, in a new directory
results/bench-variants/<date>-<commit>/ (steps.csv, kernels.csv, products.csv, meta.json, summary.txt; an
earlier one is never overwritten), and `--from DIR` prints the summary of a
saved directory again.
"""
import argparse
import csv
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from pstudy import errors  # noqa: E402

errors.require_modules("bench/variants.py")  # before minutes of measuring
from pstudy.store import config as configmod  # noqa: E402
from pstudy.store import resultsdir, sweep, traceformats, vocabulary  # noqa: E402
from pstudy.measure import provenance, runner  # noqa: E402
from pstudy.measure.ceilings import cpu_times, steal_fraction  # noqa: E402
from pstudy.analyse.compare import hl_paired_ratio_ci  # noqa: E402
from pstudy.errors import StudyError  # noqa: E402
from pstudy.store.sweep import Point  # noqa: E402

CONFIDENCE = 0.95
# thread placement of every run unless the environment sets it
OMP_DEFAULTS = {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"}
SEQ, FORKJOIN = vocabulary.BASELINE, vocabulary.FORKJOIN
# Every registered variant is measured, the chunked ones with the chunking they choose themselves
# ("auto") and with one sequence per chunk (BATCH_SUBSIZE=1); these chunked variants also with the
# reference study's BATCH_SUBSIZE=4.
ALSO_CHUNKED_BY_4 = ("tasks",)
AUTO_CHUNKING = "auto"
# One row per measured step. purpose: "point" (the repetitions the table and ratios come from),
# "overhead" (one traced run per task point, for the per-task overhead and the breakdown),
# "breakdown" (one traced forkjoin run per thread count, what the breakdown compares with) or
# "trace_cost" (forkjoin with and without --trace). slot: the run's position in its repetition. busy_s: the sum of the
# step's chunk times (traced runs only). steal: the hypervisor's share of CPU time during the run.
COLUMNS = ["purpose", "repetition", "slot", "variant", "threads", "chunking", "traced", "step", "step_s",
           "busy_s", "tasks_per_step", "steal"]
# kernels.csv: for each measured step of a traced run (purpose "overhead": the task points;
# "breakdown": forkjoin at each thread count; repetition: the round), per kernel the seconds its
# chunks took and how many
KERNEL_COLUMNS = ["purpose", "variant", "threads", "chunking", "repetition", "step", "kernel", "seconds", "chunks"]
# traced runs of each task point and of forkjoin at each thread count (per-task overhead, breakdown)
TRACED_ROUNDS = 2
# a kernel gets a row of its own in the breakdown when some variant differs from forkjoin by this much
BREAKDOWN_MIN_MS = 0.5

# products.csv: one row per (layer, product) of `gemm_bench --task-form`: the best time of each form
# over the model's layers, their ratio (task / fork-join) and the median of the per-repetition
# ratios; forward and input gradient also the packing's time alone, per packed float, and a plain
# copy's per float (NA for the weight gradient, which has no pack operation)
PRODUCT_COLUMNS = ["layer", "product", "rows", "chunk", "layers", "forkjoin_s", "task_s", "ratio", "median_ratio",
                   "pack_s", "pack_ns_per_float", "copy_ns_per_float"]
GEMM_BENCH_TARGET = "build/bench/gemm_bench"  # its make target, relative to the checkout
GEMM_BENCH = ROOT / GEMM_BENCH_TARGET
GEMM_BENCH_AVX2_TARGET = "build/bench/gemm_bench-avx2"  # --isa avx2 (`make avx2`)
PRODUCT_REPETITIONS = 7
PRODUCT_CONFIG = "d12"  # the shapes gemm_bench times
D12_LAYERS = 12


def study_for(args):
    """The benchmark's runs as a harness study: the runner then builds their command lines, sets
    their placement and checks their output as it does for a sweep's."""
    run_keys = {"steps": args.steps - 1, "warmup": 1, "repetitions": args.repetitions, "timeout_s": 3600}
    if args.isa == "avx2":
        run_keys["binary"] = configmod.AVX2_BINARY
    return configmod.from_dict({
        "model": {"config": args.config, "B": args.B, "T": args.T},
        "run": run_keys,
        "sweep": {"compilers": [args.compiler], "kernels": [args.kernels]},
        "placement": {"proc_bind": os.environ.get("OMP_PROC_BIND", OMP_DEFAULTS["OMP_PROC_BIND"]),
                      "places": os.environ.get("OMP_PLACES", OMP_DEFAULTS["OMP_PLACES"])},
    }, "bench/variants.py")


def chunking_text(point):
    if point.batch_subsize is None:
        return ""
    return AUTO_CHUNKING if point.batch_subsize == vocabulary.AUTO else f"--batch-subsize {point.batch_subsize}"


def run(study, point, trace=None):
    """One run of a point: its info line, its measured steps and the hypervisor's steal meanwhile."""
    binary = runner.binary_path(study, point, str(ROOT))
    before = cpu_times()
    outcome = runner.execute(study, point, binary, str(ROOT), trace)
    steal = steal_fraction(before, cpu_times())
    if outcome.status != runner.OK:
        sys.exit(f"bench/variants.py: {' '.join(runner.command(study, point, binary, str(ROOT), trace))}: "
                 f"{outcome.status}: {outcome.error}")
    return outcome.info, [s for s in outcome.steps if not s["warmup"]], steal


def ratio_verdict(samples_a, samples_b, target, on=None):
    """The ratio a / b and its verdict against `target` (a test a ratio passes, such as
    `lambda r: r <= 1.05`, true on one side of a limit), from one sample per run, a[i] and b[i]
    from the same repetition. on=INTERVAL (the default): "met" when the whole interval passes,
    "missed" when none of it does, "undecided" otherwise; on=ESTIMATE: the target is stated on
    the median ratio itself (the paired Hodges-Lehmann estimate), the interval printed beside it.
    Without a target, the ratio and its interval only."""
    point, lo, hi = hl_paired_ratio_ci(samples_b, samples_a, CONFIDENCE)
    if lo != lo:  # NaN: too few runs for an interval
        return f"{point:.3f}  (too few runs for a {CONFIDENCE:.0%} interval)"
    text = f"{point:.3f}  {CONFIDENCE:.0%} interval [{lo:.3f}, {hi:.3f}]"
    if target is None:
        return text
    if on == ESTIMATE:
        verdict = "met" if target(point) else "missed"
    else:
        verdict = "met" if target(lo) and target(hi) else "missed" if not (target(lo) or target(hi)) else "undecided"
    return f"{text}  -> {verdict}"


def chunk_seconds(trace, iterations):
    """{step: sum of its chunk times} and [(step, kernel, seconds, chunks)] of a --trace CSV."""
    chunks = traceformats.read_chunks(trace)
    chunks = chunks[chunks.iteration.isin(iterations)].assign(seconds=lambda c: c.end_s - c.start_s)
    busy = chunks.groupby("iteration").seconds.sum()
    per_kernel = chunks.groupby(["iteration", "kernel"], sort=False).seconds.agg(["sum", "size"])
    return ({i: float(busy.get(i, 0.0)) for i in iterations},
            [(int(i), k, float(r["sum"]), int(r["size"])) for (i, k), r in per_kernel.iterrows()])


def new_directory(root, git):
    """A new results/bench-variants/<date>-<commit>[-dirty] directory (a suffix when taken)."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    try:
        return resultsdir.new_directory(root, f"{stamp}-{git['commit']}{'-dirty' if git['dirty'] else ''}")
    except (StudyError, OSError) as err:
        sys.exit(f"bench/variants.py: {root}: cannot make a results directory: {err}")


def points_of(study, threads, targets_only=False):
    """The benchmark's points, in the order a repetition runs them: the points each target compares
    next to each other (the unchunked variants, then the chunked ones, at each thread count).
    targets_only: forkjoin and the automatic chunking of each task variant, nothing else."""
    compiler, kernels, T = study.sweep["compilers"][0], study.sweep["kernels"][0], study.model["T"]
    points = [] if targets_only else \
        [Point(v, compiler, kernels, 1, None, None) for v in vocabulary.SEQUENTIAL_VARIANTS]
    for t in threads:
        points += [Point(v, compiler, kernels, t, None, None) for v in vocabulary.VARIANTS
                   if vocabulary.REGISTERED[v] == vocabulary.THREADS and (v == FORKJOIN or not targets_only)]
        points += [sweep.automatic_chunking(v, compiler, kernels, t) for v in vocabulary.CHUNKED_VARIANTS]
        if targets_only:
            continue
        points += [Point(v, compiler, kernels, t, 1, T) for v in vocabulary.CHUNKED_VARIANTS]
        points += [Point(v, compiler, kernels, t, study.model["B"], T) for v in ALSO_CHUNKED_BY_4
                   if v in vocabulary.CHUNKED_VARIANTS and study.model["B"] > 1]
    return points


def gemm_bench(isa):
    """(path, make target) of the product benchmark of the build --isa names."""
    return (GEMM_BENCH, GEMM_BENCH_TARGET) if isa == "native" else (ROOT / GEMM_BENCH_AVX2_TARGET, "avx2")


def measure_products(study, out, isa="native"):
    """gemm_bench --task-form into out/products.csv (d12's shapes, B*T rows, chunks of T rows)."""
    B, T = study.model["B"], study.model["T"]
    cmd = [str(gemm_bench(isa)[0]), "--json", "--task-form", str(T), "--rows", str(B * T), "--layers", str(D12_LAYERS),
           "--reps", str(PRODUCT_REPETITIONS)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench/variants.py: {' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    rows = []
    for line in r.stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            sys.exit(f"bench/variants.py: {' '.join(cmd)}: not a JSON line: {line[:80]!r}")
        if "layer" in obj:
            rows.append({c: obj.get(c, "NA") for c in PRODUCT_COLUMNS})
    if not rows:
        sys.exit(f"bench/variants.py: {' '.join(cmd)}: printed no products")
    with open(out / "products.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, PRODUCT_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    print("  products in the two forms done", file=sys.stderr)


def measure(study, threads, out, targets_only=False):
    """Runs the benchmark, appending each run's measured steps to out/steps.csv as they come
    (targets_only: only the repetitions of the points the targets compare, no traced runs)."""
    points = points_of(study, threads, targets_only)
    top = max(threads)
    infos = {}
    with tempfile.TemporaryDirectory(prefix="bench-variants-") as tmp, open(out / "steps.csv", "w", newline="") as f, \
            open(out / "kernels.csv", "w", newline="") as kf:
        tmp = Path(tmp)
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        kernel_writer = csv.writer(kf)
        kernel_writer.writerow(KERNEL_COLUMNS)

        def one_run(purpose, rep, slot, point, traced=False):
            trace = tmp / "trace.csv" if traced else None
            info, measured, steal = run(study, point, trace)
            infos.setdefault(f"{point.variant} threads={point.threads} {chunking_text(point)}".strip(), info)
            busy, per_kernel = chunk_seconds(trace, [s["step"] for s in measured]) if traced else ({}, [])
            if purpose in ("overhead", "breakdown"):
                kernel_writer.writerows([purpose, point.variant, point.threads, chunking_text(point), rep, *row]
                                        for row in per_kernel)
                kf.flush()
            for s in measured:
                writer.writerow({"purpose": purpose, "repetition": rep, "slot": slot, "variant": point.variant,
                                 "threads": point.threads, "chunking": chunking_text(point),
                                 "traced": int(traced), "step": s["step"], "step_s": s["step_s"],
                                 "busy_s": busy.get(s["step"], "NA"),
                                 "tasks_per_step": info.get("tasks_per_step", "NA"),
                                 "steal": "NA" if steal is None else steal})
            f.flush()
            return statistics.median(s["step_s"] for s in measured), steal

        for rep in range(study.run["repetitions"]):
            order = points if rep % 2 == 0 else points[::-1]
            for slot, point in enumerate(order):
                median, steal = one_run("point", rep, slot, point)
                print(f"  rep {rep}: {point.variant:8s} threads={point.threads} {chunking_text(point):18s} "
                      f"median step {median:.3f} s{'' if steal is None else f', steal {steal:.1%}'}",
                      file=sys.stderr)
        if targets_only:
            return infos
        # Per-task overhead and the breakdown from traced runs of each task point and of forkjoin at
        # each thread count, outside the repetitions, so that tracing's own cost stays out of the
        # paired ratios; forkjoin next to the task points it is compared with, the order reversed in
        # the second round, as the repetitions are.
        # (the task variants with the chunking the targets are stated on, their own)
        traced_points = [p for p in points if p.variant == FORKJOIN or
                         (vocabulary.is_chunked(p.variant) and p.batch_subsize == vocabulary.AUTO)]
        for rep in range(TRACED_ROUNDS):
            for slot, point in enumerate(traced_points if rep % 2 == 0 else traced_points[::-1]):
                one_run("breakdown" if point.variant == FORKJOIN else "overhead", rep, slot, point, traced=True)
        # the cost of tracing: forkjoin at the largest thread count, with and without, paired
        # like the points (the order alternates between repetitions)
        fj = next(p for p in points if p.variant == FORKJOIN and p.threads == top)
        for rep in range(study.run["repetitions"]):
            for slot, traced in enumerate((False, True) if rep % 2 == 0 else (True, False)):
                one_run("trace_cost", rep, slot, fj, traced)
    return infos


# the targets the chunked variants are held to against fork-join, with their own chunking ("auto"):
# (variant, thread counts, what the target asks, test on the ratio, text, what the test is applied
# to); thread counts ONE (1 thread) or MANY (every measured count above 1). What it asks is
# printed with the ratio, so that the same ratio held to two targets reads as two targets.
ONE, MANY = "one", "many"
INTERVAL, ESTIMATE = "interval", "estimate"
# A variant on a task runtime against the variant whose graph it runs on the built-in scheduler or
# OpenMP (nosv: taskiter's recorded graph; starpu: tasks' graph), its automatic chunking on both;
# the target is nOS-V's: the runtime of the reference study costs the step nothing beyond 2%.
RUNTIME_PAIRS = [("nosv", "taskiter", lambda r: r <= 1.02, "median <= 1.02"),
                 ("starpu", "tasks", None, "")]

TARGETS_AGAINST_FORKJOIN = [
    ("tasks", ONE, "loses at most 1%", lambda r: r <= 1.01, "median <= 1.01", ESTIMATE),
    ("taskiter", ONE, "loses at most 1%", lambda r: r <= 1.01, "median <= 1.01", ESTIMATE),
    ("tasks", MANY, "loses nothing", lambda r: r <= 1.00, "median <= 1.00", ESTIMATE),
    ("taskiter", MANY, "faster", lambda r: r < 1.00, "interval < 1.00", INTERVAL)]


def run_medians(steps, purpose):
    """{(variant, threads, chunking, traced): [median step time of each repetition's run]}."""
    out = {}
    runs = steps[steps.purpose == purpose].groupby(["variant", "threads", "chunking", "traced", "repetition"],
                                                   sort=False).step_s.median()
    for (variant, t, chunking, traced, _), median in runs.items():
        out.setdefault((variant, int(t), chunking, int(traced)), []).append(float(median))
    return out


def products_summary(products, step_s, say):
    """The products section: per shape and in all, task form / fork-join form, and the packing
    against a plain copy; `step_s` (forkjoin's 1-thread step, if measured) sizes the gap."""
    first = products.iloc[0]
    channels = products[products["product"] == "backward_weight"].chunk
    say(f"\nproducts of the transformer blocks, 1 thread, {int(first.rows)} rows, {int(first.layers)} layers a "
        f"timing (the weights from memory), best of {PRODUCT_REPETITIONS}, the two forms alternating: "
        f"fork-join form = one call that packs as it goes; task form = a packing of each weight, then chunks "
        f"of {int(first.chunk)} rows"
        + (f" (weight gradient: chunks of {int(channels.iloc[0])} channels, each packing the layer's input)"
           if len(channels) else ""))
    say(f"{'layer':8s} {'product':16s} {'forkjoin ms':>11s} {'task ms':>9s} {'pack ms':>8s} {'ratio':>6s} "
        f"{'median':>6s} {'pack ns/float':>13s} {'copy ns/float':>13s}")
    for r in products.to_dict("records"):
        packed = r["pack_s"] == r["pack_s"]  # NaN for the weight gradient
        say(f"{r['layer']:8s} {r['product']:16s} {r['forkjoin_s'] * 1e3:11.1f} {r['task_s'] * 1e3:9.1f} "
            + (f"{r['pack_s'] * 1e3:8.1f} " if packed else f"{'-':>8s} ")
            + f"{r['ratio']:6.3f} {r['median_ratio']:6.3f} "
            + (f"{r['pack_ns_per_float']:13.3f} {r['copy_ns_per_float']:13.3f}" if packed else f"{'-':>13s} {'-':>13s}"))
    fj, task = products.forkjoin_s.sum(), products.task_s.sum()
    pk = products.dropna(subset=["pack_s"])
    floats = (pk.pack_s / pk.pack_ns_per_float * 1e9).sum()
    copy_s = (pk.copy_ns_per_float * pk.pack_s / pk.pack_ns_per_float).sum()
    say(f"all products: task form / fork-join form {task / fj:.3f} ({(task - fj) * 1e3:.0f} ms a step"
        + (f", {(task - fj) / step_s:.1%} of forkjoin's 1-thread step" if step_s else "") + "); "
        f"the packing {pk.pack_s.sum() * 1e3:.0f} ms ({pk.pack_s.sum() / floats * 1e9:.3f} ns per float), "
        f"a plain copy of the same floats {copy_s * 1e3:.0f} ms ({copy_s / floats * 1e9:.3f} ns per float)")


def breakdown_summary(steps, kernels, say):
    """Per thread count, each task point's time by kernel against forkjoin's, from the traced runs."""
    traced = steps[steps.traced == 1]
    for t in sorted(set(kernels.threads)):
        runs = [(FORKJOIN, "breakdown", "")] + [(v, "overhead", AUTO_CHUNKING) for v in vocabulary.CHUNKED_VARIANTS]
        columns = {}
        for variant, purpose, chunking in runs:
            mine = kernels[(kernels.purpose == purpose) & (kernels.variant == variant) & (kernels.threads == t) &
                           (kernels.chunking == chunking)]
            rows = traced[(traced.purpose == purpose) & (traced.variant == variant) & (traced.threads == t) &
                          (traced.chunking == chunking)]
            if len(mine) and len(rows):
                # the median over the traced steps (a kernel absent from a step counts 0 there)
                per_step = mine.pivot_table(index=["repetition", "step"], columns="kernel", values="seconds",
                                            aggfunc="sum", fill_value=0.0)
                idle = float((t * rows.step_s - rows.busy_s).median()) * 1e3
                columns[variant] = ((per_step.median() * 1e3).to_dict(), idle, float(rows.step_s.median()) * 1e3)
        if FORKJOIN not in columns or len(columns) < 2:
            continue
        base = columns[FORKJOIN][0]
        others = [v for v in columns if v != FORKJOIN]
        names = sorted(set().union(*(c[0] for c in columns.values())))

        def diff(v, k):
            return columns[v][0].get(k, 0.0) - base.get(k, 0.0)

        shown = sorted((k for k in names if max(abs(diff(v, k)) for v in others) >= BREAKDOWN_MIN_MS),
                       key=lambda k: -max(abs(diff(v, k)) for v in others))
        rest = [k for k in names if k not in shown]
        say(f"\nwhere the time goes at {t} thread{'s' if t > 1 else ''} (traced runs, ms a step, the median over "
            f"their steps; chunk times summed over the threads; idle = threads x step - the chunks' time: "
            f"runtime and waiting)")
        say(f"{'kernel':24s} {FORKJOIN:>9s}" + "".join(f" {v:>9s} {'diff':>7s}" for v in others))

        def row(name, values):
            fj = values(FORKJOIN)
            say(f"{name:24s} {fj:9.1f}" + "".join(f" {values(v):9.1f} {values(v) - fj:+7.1f}" for v in others))

        for k in shown:
            row(k, lambda v, k=k: columns[v][0].get(k, 0.0))
        if rest:
            row(f"other kernels ({len(rest)})", lambda v: sum(columns[v][0].get(k, 0.0) for k in rest))
        row("idle", lambda v: columns[v][1])
        row("step (wall clock)", lambda v: columns[v][2])


def summary(steps, meta, products=None, kernels=None):
    """The benchmark's report, from its steps.csv rows, meta.json, and products.csv and kernels.csv (if
    measured)."""
    a = meta["args"]
    lines = []
    say = lines.append
    medians = run_medians(steps, "point")
    if not medians:
        raise StudyError("steps.csv: no measured runs of the points")
    top = max(t for (_, t, _, _) in medians)
    reps = max(len(v) for v in medians.values())
    isa = a.get("isa", "native")  # saved before --isa: the native build
    say(f"variants: {a['config']} B={a['B']} T={a['T']}, {a['compiler']}/{a['kernels']}"
        f"{'' if isa == 'native' else ' (' + isa + ' build, make ' + isa + ')'}, "
        f"{reps} runs x {a['steps'] - 1}{'' if 'pooled' not in meta else '+'} measured steps per point, median of "
        "the runs' medians")
    for p in meta.get("pooled", []):
        say(f"  pooled: {p['directory']} (commit {p['commit']}, {p['repetitions']} runs x {p['steps'] - 1} "
            "measured steps)")
    say(f"{'variant':10s} {'chunking':18s} {'threads':>7s} {'step s':>8s} {'speedup/self1':>13s} "
        f"{'tasks/step':>10s} {'overhead/task':>14s} {'steal':>6s}")
    traced = steps[steps.purpose == "overhead"]
    for (variant, t, chunking, _), v in medians.items():
        med = statistics.median(v)
        self1 = medians.get((variant, 1, chunking, 0))
        speedup = f"{statistics.median(self1) / med:.2f}x" if self1 else "-"
        rows = steps[(steps.purpose == "point") & (steps.variant == variant) & (steps.threads == t) &
                     (steps.chunking == chunking)]
        ntasks = int(rows.tasks_per_step.iloc[0]) if vocabulary.is_chunked(variant) else "-"
        mine = traced[(traced.variant == variant) & (traced.threads == t) & (traced.chunking == chunking)]
        if len(mine):
            per_task = ((t * mine.step_s - mine.busy_s) / mine.tasks_per_step).median()
            oh_text = f"{per_task * 1e6:.1f} us" + ("" if t == 1 else " (+idle)")
        else:
            oh_text = "-"
        run_steal = rows.groupby("repetition").steal.first().dropna()
        steal_text = f"{run_steal.median():.1%}" if len(run_steal) else "-"
        say(f"{variant:10s} {chunking or '-':18s} {t:7d} {med:8.3f} {speedup:>13s} {ntasks!s:>10s} "
            f"{oh_text:>14s} {steal_text:>6s}")

    def per_rep(x, y):
        return " ".join(f"{p / q:.2f}" for p, q in zip(x, y))

    def target(name, x, y, test, limit_text, on=INTERVAL):
        say(f"{name}: {ratio_verdict(x, y, test, on)}" + (f"  (target {limit_text})" if test else ""))
        say(f"  per repetition: {per_rep(x, y)}")

    say(f"\nratios from one median per run ({reps} runs per point), paired by repetition, "
        f"Hodges-Lehmann intervals")
    counts = sorted({t for (_, t, _, _) in medians})
    for variant, which, asks, test, limit_text, on in TARGETS_AGAINST_FORKJOIN:
        for t in ([1] if which == ONE else [c for c in counts if c > 1]):
            if (variant, t, AUTO_CHUNKING, 0) in medians and (FORKJOIN, t, "", 0) in medians:
                target(f"{variant}(auto) / {FORKJOIN} at {t} thread{'s' if t > 1 else ''}, {asks}",
                       medians[(variant, t, AUTO_CHUNKING, 0)], medians[(FORKJOIN, t, "", 0)], test,
                       limit_text, on)
    # every other chunked variant's automatic chunking against fork-join, for comparison (no target)
    targeted = {variant for variant, *_ in TARGETS_AGAINST_FORKJOIN}
    for (variant, t, chunking, traced) in sorted(medians):
        if variant not in targeted and chunking == AUTO_CHUNKING and not traced and (FORKJOIN, t, "", 0) in medians:
            target(f"{variant}(auto) / {FORKJOIN} at {t} thread{'s' if t > 1 else ''}",
                   medians[(variant, t, chunking, 0)], medians[(FORKJOIN, t, "", 0)], None, "")
    for variant, base, test, limit_text in RUNTIME_PAIRS:
        for t in counts:
            a, b = (variant, t, AUTO_CHUNKING, 0), (base, t, AUTO_CHUNKING, 0)
            if a in medians and b in medians:
                target(f"{variant}(auto) / {base}(auto) at {t} thread{'s' if t > 1 else ''}", medians[a],
                       medians[b], test, limit_text, ESTIMATE)
    # the reference study's chunkings against fork-join, for comparison (no target)
    for (variant, t, chunking, traced) in medians:
        if chunking.startswith("--batch-subsize") and not traced and (FORKJOIN, t, "", 0) in medians:
            target(f"{variant}({chunking.replace('--batch-subsize ', 'BATCH_SUBSIZE=')}) / {FORKJOIN} at {t} "
                   f"thread{'s' if t > 1 else ''}", medians[(variant, t, chunking, 0)],
                   medians[(FORKJOIN, t, "", 0)], None, "")
    for (variant, t, chunking, traced) in medians:
        if t == top and top > 1 and not traced and chunking in ("", AUTO_CHUNKING) \
                and (variant, 1, chunking, 0) in medians:
            one, many = medians[(variant, 1, chunking, 0)], medians[(variant, top, chunking, 0)]
            target(f"{variant} speedup at {top} threads over its own 1 thread", one, many, lambda r: r >= 1.85,
                   ">= 1.85 at 2")
    known = steps.groupby(["purpose", "repetition", "slot"]).steal.first().dropna()
    if len(known):
        say(f"hypervisor steal during the runs: median {known.median():.1%}, largest {known.max():.1%} of CPU time")
    cost = run_medians(steps, "trace_cost")
    plain, with_trace = cost.get((FORKJOIN, top, "", 0)), cost.get((FORKJOIN, top, "", 1))
    if plain and with_trace:
        target(f"with --trace / without ({FORKJOIN}, {top} threads)", with_trace, plain, lambda r: r < 1.02, "< 1.02")
    if kernels is not None and len(kernels):
        breakdown_summary(steps, kernels, say)
    if products is not None and len(products):
        fj1 = medians.get((FORKJOIN, 1, "", 0))
        products_summary(products, statistics.median(fj1) if fj1 else None, say)
    elif meta.get("products"):
        say(f"\nproducts in the two forms: {meta['products']}")
    return "\n".join(lines) + "\n"


def load(directory):
    """steps.csv and meta.json of a saved benchmark directory."""
    directory = Path(directory)
    if not directory.is_dir():
        raise StudyError(f"{directory}: no such directory")
    steps = resultsdir.read_csv(directory / "steps.csv", COLUMNS, what="bench/variants.py steps")
    try:
        with open(directory / "meta.json") as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise StudyError(f"{directory / 'meta.json'}: no such file") from None
    except (OSError, ValueError) as err:
        raise StudyError(f"{directory / 'meta.json'}: unreadable: {type(err).__name__} {err}") from None
    args = meta.get("args") if isinstance(meta, dict) else None
    lacking = [k for k in ("config", "B", "T", "steps", "compiler", "kernels")
               if not isinstance(args, dict) or k not in args]
    if lacking:
        raise StudyError(f"{directory / 'meta.json'}: no args.{lacking[0]}")
    # NA is allowed where a run has no such figure (untraced, untasked, no /proc/stat)
    numeric(steps, directory / "steps.csv",
            ("repetition", "slot", "threads", "traced", "step", "step_s", "busy_s", "tasks_per_step", "steal"),
            nullable=("busy_s", "tasks_per_step", "steal"))
    steps["chunking"] = steps["chunking"].fillna("").astype(str)
    products = kernels = None
    if (directory / "products.csv").exists():
        products = resultsdir.read_csv(directory / "products.csv", PRODUCT_COLUMNS, what="bench/variants.py products")
        # the weight gradients have no packing: NA there
        numeric(products, directory / "products.csv", PRODUCT_COLUMNS[2:], nullable=PRODUCT_COLUMNS[-3:])
    if (directory / "kernels.csv").exists():
        kernels = resultsdir.read_csv(directory / "kernels.csv", KERNEL_COLUMNS, what="bench/variants.py kernels")
        numeric(kernels, directory / "kernels.csv", ("threads", "repetition", "step", "seconds", "chunks"))
        kernels["chunking"] = kernels["chunking"].fillna("").astype(str)
    return steps, meta, products, kernels


# what pooled runs must share, with the value a directory saved before the key had
SAME_BENCHMARK = {"config": None, "B": None, "T": None, "compiler": None, "kernels": None, "isa": "native"}


def load_pooled(directories):
    """load() of one saved directory, or of several pooled: their runs renumbered one after another,
    so that each run stays paired with the runs of its own repetition and no pair spans two
    directories. They must be the same benchmark (SAME_BENCHMARK); the binaries' commit may differ,
    and the report names each directory with its commit, so that a reader can check that the
    kernels did not change between them. The products and kernel tables are one run's figures, and
    are left out of a pooled report."""
    import pandas as pd

    seen = {}
    for d in directories:
        real = os.path.realpath(d)
        if real in seen:
            raise StudyError(f"{d}: given twice (as {seen[real]} too); its runs pooled twice would narrow the "
                             "interval with no new measurement")
        seen[real] = d
    loaded = [load(d) for d in directories]
    if len(loaded) == 1:
        return loaded[0]
    first = loaded[0][1]["args"]
    pooled, frames, offset = [], [], 0
    for directory, (steps, meta, _, _) in zip(directories, loaded):
        args = meta["args"]
        for key, before in SAME_BENCHMARK.items():
            if args.get(key, before) != first.get(key, before):
                raise StudyError(f"{Path(directory) / 'meta.json'}: args.{key} is {args.get(key, before)}, "
                                 f"{first.get(key, before)} in {directories[0]}: not the same benchmark, not pooled")
        steps = steps.copy()
        runs = int(steps["repetition"].max()) + 1 if len(steps) else 0
        steps["repetition"] += offset
        offset += runs
        frames.append(steps)
        pooled.append({"directory": str(directory), "commit": (meta.get("git") or {}).get("commit"),
                       "repetitions": runs, "steps": int(args["steps"])})
    meta = dict(loaded[-1][1])
    meta["args"] = {**first, "steps": min(p["steps"] for p in pooled)}
    meta["pooled"] = pooled
    return pd.concat(frames, ignore_index=True), meta, None, None


def numeric(frame, path, columns, nullable=()):
    """Makes `columns` of a saved table numbers in place; StudyError naming the file, the line and
    the column at the first value that is not one (NA only allowed in `nullable`)."""
    import pandas as pd

    for col in columns:
        values = pd.to_numeric(frame[col], errors="coerce")
        bad = values.isna() & (frame[col].notna() | (col not in nullable))
        if bad.any():
            line = int(bad.to_numpy().argmax()) + 2  # the header is line 1
            raise StudyError(f"{path}: line {line}: {col} is not a number")
        frame[col] = values


def refuse_missing_or_stale(binary, rebuild, build):
    """Exits naming `binary` when it is absent (`build`: how to build it) or older than its sources
    (`rebuild`), before anything is measured: a stale one would time older code under this commit."""
    if not binary.exists():
        sys.exit(f"bench/variants.py: {binary.parent}: no {binary.name} (build it with {build})")
    if runner.binary_is_stale(binary, ROOT):
        sys.exit(f"bench/variants.py: {binary}: older than its sources (rebuild it with {rebuild})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="d12")
    ap.add_argument("-B", type=int, default=4)
    ap.add_argument("-T", type=int, default=64)
    ap.add_argument("--steps", type=int, default=6, help="steps per run; the first is discarded as warm-up")
    ap.add_argument("--repetitions", type=int, default=6,
                    help="runs per point, interleaved; 6 is the fewest that give a paired 95%% interval")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--compiler", default="gcc")
    ap.add_argument("--kernels", default="fast")
    ap.add_argument("--isa", choices=("native", "avx2"), default="native",
                    help="avx2: the builds of make avx2 (-mavx2 -mfma in place of -march=native)")
    ap.add_argument("--skip-products", action="store_true",
                    help="leave out the products in the two forms (gemm_bench --task-form)")
    ap.add_argument("--targets-only", action="store_true",
                    help="only forkjoin and the task variants' automatic chunking, repeated; no traced runs and "
                         "no products: the same minutes buy about twice the repetitions for the targets' intervals")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench-variants"),
                    help="where the new results directory is made")
    ap.add_argument("--from", dest="source", metavar="DIR", nargs="+",
                    help="print the summary of a saved results directory instead of measuring; of several, "
                         "their runs pooled (the same benchmark, each run paired within its own directory)")
    args = ap.parse_args(argv)
    if args.source:
        try:
            sys.stdout.write(summary(*load_pooled(args.source)))
        except StudyError as err:
            errors.exit_bad_input("bench/variants.py", err)
        except KeyError as err:
            variant, threads, chunking, _ = err.args[0]
            where = " or ".join(str(Path(d) / "steps.csv") for d in args.source)
            errors.exit_bad_input("bench/variants.py", f"{where}: incomplete: no runs of "
                                  f"{variant} at {threads} threads{' with ' + chunking if chunking else ''}")
        return 0
    if args.repetitions < 1:
        ap.error(f"--repetitions {args.repetitions}: must be at least 1")
    if args.steps < 2:
        ap.error(f"--steps {args.steps}: must be at least 2 (the first is a warm-up)")
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        threads = []
    if not threads or min(threads) < 1 or 1 not in threads:
        ap.error(f"--threads {args.threads}: must be a comma-separated list of positive counts including 1")
    for option, value, known in (("--compiler", args.compiler, vocabulary.COMPILERS),
                                 ("--kernels", args.kernels, vocabulary.KERNEL_SETS)):
        if value not in known:
            ap.error(f"{option} {value}: unknown value (known: {', '.join(known)})")
    try:
        study = study_for(args)
    except StudyError as err:
        ap.error(str(err))
    make = "make avx2" if args.isa == "avx2" else "make"
    # each binary once, in the points' order: many points share one, and each check runs make -q
    binaries = dict.fromkeys(Path(runner.binary_path(study, point, str(ROOT)))
                             for point in points_of(study, threads, args.targets_only))
    if not runner.all_current(binaries, ROOT):
        for binary in binaries:
            refuse_missing_or_stale(binary, make, f"{make}, or check --compiler/--kernels")
    products_skipped = ("--skip-products" if args.skip_products else "--targets-only" if args.targets_only else
                        f"not measured: gemm_bench times {PRODUCT_CONFIG}'s shapes, the config is {args.config}"
                        if args.config != PRODUCT_CONFIG else None)
    if not products_skipped:
        path, target = gemm_bench(args.isa)
        refuse_missing_or_stale(path, f"make {target}", f"make {target}, or pass --skip-products")
    git = provenance.git_state(ROOT)
    out = new_directory(Path(args.out), git)
    meta = {"benchmark": "bench/variants.py", "command": [sys.executable] + sys.argv,
            "args": {k: v for k, v in vars(args).items() if k != "source"}, "threads": threads,
            "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "git": git, "cpu": provenance.cpu(), "system": provenance.system(), "software": provenance.software(),
            "env": {k: os.environ.get(k, d) for k, d in OMP_DEFAULTS.items()}}
    if products_skipped:
        meta["products"] = products_skipped
    resultsdir.write_json(out / "meta.json", meta)
    print(f"bench/variants.py: writing {out}", file=sys.stderr)
    if not products_skipped:
        measure_products(study, out, args.isa)
    # what each binary reported about itself (compiler, OpenMP runtime, placement, chunking)
    meta["runs_info"] = measure(study, threads, out, args.targets_only)
    meta["finished_utc"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    resultsdir.write_json(out / "meta.json", meta)
    text = summary(*load(out))
    resultsdir.atomic_write(out / "summary.txt", text)
    sys.stdout.write("\n" + text)
    print(f"\nbench/variants.py: saved in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
