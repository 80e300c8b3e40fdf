#!/usr/bin/env python3
"""Kernel benchmark (not a test), in one run on this machine:

1. every matrix-product shape of the model (default d12, B=4, T=64: forward,
   input-gradient and weight-gradient products of qkv, attproj, fc, fcproj and
   the language-model head) in the project's kernel and in OpenBLAS's serial
   cblas_sgemm on the same shape, single thread: GFLOP/s and their ratio
   (target: >= 1.0x OpenBLAS for every shape). OpenBLAS is run once with each
   core type (OPENBLAS_CORETYPE) that this CPU can execute and the library
   accepts, and each shape is compared with the fastest (its core type printed):
   the ratio is the one measured in that run, the two libraries alternating;
2. the measured peak single-precision FLOP/s of the cores (probes/peakflops,
   widest vector width) at each thread count;
3. one training step of each variant at each thread count, for each kernel
   set: its FLOPs (traffic model, --describe), time (median of the measured
   steps), GFLOP/s and the fraction of the measured peak of the cores used
   (target: >= 45% for `fast`, seq on 1 thread and forkjoin on 2).

Run rules of the step measurement (a VM's speed drifts by 10-30% over minutes,
so a peak measured once at the start is not the peak a later run had):
  - the points run in --rounds rounds, every point once a round, the order of
    the points reversed every other round, so that a drift does not always
    fall on the same variant;
  - the peak benchmark runs at the run's thread count right before every
    step run, and the run's share is against that peak (steps.csv: round,
    peak_gflops);
  - the share printed is the median over the rounds of each round's share
    (its GFLOP/s from the median of its measured steps), with the lowest and
    highest round beside it.

Memory: peak resident set size of the seq run (target <= 2.5 GB for d12).

--isa avx2 measures the AVX2 builds (`make avx2`: -march=native replaced by -mavx2 -mfma, the 6x16
micro-kernel) on a machine that also has AVX-512: the products against OpenBLAS's AVX2 core types
only (Zen, Haswell), and the step against the AVX2 figure of the peak benchmark, so that the share
of the peak that an AVX2 machine's target names can be measured where no AVX2-only machine is.

Everything measured is saved in a new directory results/bench-kernels/<date>-<commit>/
(gemm.csv, gemm_cores.csv, peaks.csv, steps.csv, meta.json, summary.txt; an earlier one is never
overwritten), and `--from DIR` prints the summary of a saved directory again. The
summary is always computed from the saved rows.
"""
import argparse
import csv
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from pstudy import errors  # noqa: E402

errors.require_modules("bench/kernels.py")  # before minutes of measuring
from pstudy.store import config as configmod  # noqa: E402
from pstudy import errors  # noqa: E402
from pstudy.store import resultsdir, vocabulary  # noqa: E402
from pstudy.measure import provenance, runner  # noqa: E402
from pstudy.errors import StudyError  # noqa: E402
from pstudy.store.sweep import Point  # noqa: E402

GEMM_COLUMNS = ["layer", "product", "M", "N", "K", "gemm_gflops", "openblas_gflops", "ratio", "median_ratio"]
GEMM_CORE_COLUMNS = ["openblas_core"] + GEMM_COLUMNS
PEAK_COLUMNS = ["threads", "gflops", "isa"]
# OpenBLAS core types (OPENBLAS_CORETYPE) with a single-precision product kernel of their own
# and the CPU flags (/proc/cpuinfo) their kernels execute, widest first. Older core types (SSE
# only) are left out: on a CPU that runs these, they are never the fastest.
OPENBLAS_CORES = [
    ("SapphireRapids", {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd", "avx512_bf16",
                        "avx512_fp16", "amx_tile"}),
    ("Cooperlake", {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd", "avx512_bf16"}),
    ("SkylakeX", {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"}),
    ("Zen", {"avx2", "fma"}),
    ("Haswell", {"avx2", "fma"}),
    ("Sandybridge", {"avx"}),
]
STEP_COLUMNS = ["kernels", "variant", "threads", "step", "step_s", "flops", "peak_rss_bytes", "round", "peak_gflops"]
# written before the run rules above (one round, the peak of peaks.csv): read as such
STEP_COLUMNS_BEFORE_ROUNDS = STEP_COLUMNS[:-2]
# the make target that builds each binary the benchmark needs
BUILT_BY = {"gemm_bench": "make build/bench/gemm_bench (or make bench)", "peakflops": "make",
            "gemm_bench-avx2": "make avx2"}
# --isa: the build tree of the step binaries (run.binary), the product benchmark, the peak
# benchmark's figure the step is held to, the widest instructions the OpenBLAS core types compared
# may use (None: any) and the make target of the step binaries
ISAS = {
    "native": {"binary": None, "gemm_bench": "build/bench/gemm_bench", "peak": None, "openblas": None,
               "make": "make"},
    "avx2": {"binary": configmod.AVX2_BINARY, "gemm_bench": "build/bench/gemm_bench-avx2",
             "peak": "avx2", "openblas": {"avx2", "fma", "avx"}, "make": "make avx2"},
}


def json_lines(text):
    return [json.loads(x) for x in text.splitlines() if x.strip().startswith("{")]


def step_points(args, threads, kernels):
    """The points of the step benchmark for one kernel set."""
    for variant in args.variants.split(","):
        for t in ([1] if vocabulary.is_sequential(variant) else threads):
            chunk = (1, args.T) if vocabulary.is_chunked(variant) else (None, None)
            yield variant, t, Point(variant, "gcc", kernels, t, *chunk)


def describe_binary(study, kernels):
    """The binary whose --describe gives the step's FLOPs (the sequential variant's)."""
    return runner.binary_path(study, Point(vocabulary.BASELINE, "gcc", kernels, 1, None, None), str(ROOT))


def check_binaries(args, threads):
    """Exits with a message naming the make target when a binary the benchmark runs is missing or
    older than its sources, before anything is measured or a directory is made."""
    isa = ISAS[args.isa]
    binaries = ([] if args.skip_gemm else [ROOT / isa["gemm_bench"]]) + [ROOT / "build/probes/peakflops"]
    for kernels in args.kernels.split(","):
        study = study_for(args, kernels)
        binaries.append(describe_binary(study, kernels))
        binaries += [runner.binary_path(study, point, str(ROOT)) for _, _, point in step_points(args, threads, kernels)]
    if runner.all_current(binaries, ROOT):
        return
    for binary in map(Path, binaries):
        how = BUILT_BY.get(binary.name, isa["make"])
        if not binary.exists():
            sys.exit(f"bench/kernels.py: {binary}: not built (build it with {how})")
        if runner.binary_is_stale(binary, ROOT):
            sys.exit(f"bench/kernels.py: {binary}: older than its sources (rebuild it with {how})")


def run(cmd, env=None):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"bench/kernels.py: {' '.join(map(str, cmd))} failed: {r.stderr.strip()[-500:]}")
    return r


def peak_gflops(threads, isa=None):
    """(GFLOP/s, isa) of the peak benchmark at `threads`: its widest vector width's figure, or that
    of `isa` (exits when the benchmark has none: a CPU without those instructions)."""
    out = run([ROOT / "build/probes/peakflops", "--json", "--threads", threads]).stdout
    results = json.loads(out)["results"]
    if isa is not None:
        results = [r for r in results if r["isa"] == isa]
        if not results:
            sys.exit(f"bench/kernels.py: build/probes/peakflops: no {isa} figure (the CPU lacks it)")
    best = max(results, key=lambda r: r["gflops"])
    return best["gflops"], best["isa"]


def study_for(args, kernels):
    """A step run of the benchmark as a harness study, so that the runner checks its output."""
    run_keys = {"steps": args.steps - 1, "warmup": 1, "repetitions": 1, "timeout_s": 3600}
    if ISAS[args.isa]["binary"]:
        run_keys["binary"] = ISAS[args.isa]["binary"]
    return configmod.from_dict({
        "model": {"config": args.config, "B": args.B, "T": args.T},
        "run": run_keys,
        "sweep": {"kernels": [kernels]},
        "placement": {"proc_bind": "close", "places": "cores"}}, "bench/kernels.py")


def write_csv(path, columns, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows(rows)


def cpu_flags(cpuinfo=None):
    """The feature flags of the first processor in /proc/cpuinfo (empty if unreadable)."""
    try:
        text = cpuinfo if cpuinfo is not None else Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def openblas_candidates(flags, requested=None, allowed=None):
    """(core types to run, {core type: why not}) for a CPU with these flags. `requested`
    (a list) restricts the candidates to those names, in that order; `allowed` (a set of flags) to
    core types that need no other instructions (the AVX2 comparison)."""
    known = dict(OPENBLAS_CORES)
    names = requested if requested else [name for name, _ in OPENBLAS_CORES]
    run_these, skipped = [], {}
    for name in names:
        need = known.get(name)
        if allowed is not None and (need is None or not need <= allowed):
            skipped[name] = "wider than the build compared (" + ", ".join(sorted(allowed)) + ")"
        elif need is None:
            run_these.append(name)  # a name this list does not know: OpenBLAS decides
        elif need <= flags:
            run_these.append(name)
        else:
            skipped[name] = "the CPU lacks " + ", ".join(sorted(need - flags))
    return run_these, skipped


def fastest_per_shape(rows_by_core):
    """gemm.csv's rows: for each shape, the row of the core type whose OpenBLAS was fastest
    (the project's figure and the ratios are those of that same run)."""
    best = {}
    for row in rows_by_core:
        key = (row["layer"], row["product"])
        if key not in best or row["openblas_gflops"] > best[key]["openblas_gflops"]:
            best[key] = row
    order = list(dict.fromkeys((r["layer"], r["product"]) for r in rows_by_core))
    return [best[k] for k in order]


def measure_gemm(args, out, env, meta):
    """gemm_bench once per OpenBLAS core type into gemm_cores.csv, and the fastest per shape
    into gemm.csv; which core types ran and which were left out (and why) go into meta."""
    rows = args.B * args.T
    requested = args.openblas_cores.split(",") if args.openblas_cores else None
    flags = cpu_flags()
    allowed = ISAS[args.isa]["openblas"]
    cores, skipped = openblas_candidates(flags, requested, allowed)
    if args.coretype_from_env:
        # a core type set in the environment (some shells set one) hides OpenBLAS at its best:
        # name every other core type this CPU runs as left out, and why
        for core in openblas_candidates(flags, None, allowed)[0]:
            if core not in cores:
                skipped[core] = (f"OPENBLAS_CORETYPE={env['OPENBLAS_CORETYPE']} in the environment "
                                 "(unset it to compare with every core type)")
    all_rows = []
    for core in cores:
        text = run([ROOT / ISAS[args.isa]["gemm_bench"], "--json", "--rows", rows, "--reps", 15],
                   dict(env, OPENBLAS_CORETYPE=core)).stdout
        lines = json_lines(text)
        total = next((x["total"] for x in lines if "total" in x), {})
        got = str(total.get("openblas_core", ""))
        if got.lower() != core.lower():
            skipped[core] = f"OpenBLAS does not accept it (ran {got or 'an unknown core type'})"
            continue
        shapes = [s for s in lines if "ratio" in s and "layer" in s]
        all_rows += [dict({c: s[c] for c in GEMM_COLUMNS}, openblas_core=core) for s in shapes]
        print(f"  gemm with OpenBLAS {core} done", file=sys.stderr, flush=True)
    meta["openblas_cores"] = {"run": [c for c in cores if c not in skipped], "left_out": skipped}
    write_csv(out / "gemm_cores.csv", GEMM_CORE_COLUMNS, all_rows)
    write_csv(out / "gemm.csv", GEMM_CORE_COLUMNS, fastest_per_shape(all_rows))


def measure(args, threads, out, env, meta):
    """Runs the benchmark into out/: gemm.csv, gemm_cores.csv, peaks.csv, steps.csv (each
    written when complete)."""
    if not args.skip_gemm:
        measure_gemm(args, out, env, meta)
    write_csv(out / "peaks.csv", PEAK_COLUMNS,
              [dict(zip(PEAK_COLUMNS, (t, *peak_gflops(t, ISAS[args.isa]["peak"])))) for t in threads])
    step_rows = []
    points = []
    for kernels in args.kernels.split(","):
        study = study_for(args, kernels)
        ops = json_lines(run([describe_binary(study, kernels), "--json", "--describe"] + runner.model_args(study, str(ROOT))).stdout)
        flops = sum(o["flops"] for o in ops if "flops" in o)
        points += [(kernels, study, flops, variant, t, point)
                   for variant, t, point in step_points(args, threads, kernels)]
    for rnd in range(args.rounds):
        for kernels, study, flops, variant, t, point in (points if rnd % 2 == 0 else points[::-1]):
            peak, _ = peak_gflops(t, ISAS[args.isa]["peak"])
            binary = runner.binary_path(study, point, str(ROOT))
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            outcome = runner.execute(study, point, binary, str(ROOT))
            if outcome.status != runner.OK:
                sys.exit(f"bench/kernels.py: {point.label()}: {outcome.status}: {outcome.error}")
            rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            for s in outcome.steps:
                if not s["warmup"]:
                    step_rows.append({"kernels": kernels, "variant": variant, "threads": t, "step": s["step"],
                                      "step_s": s["step_s"], "flops": flops,
                                      "peak_rss_bytes": rss * 1024 if rss > before else "NA",
                                      "round": rnd, "peak_gflops": peak})
            print(f"  round {rnd + 1}/{args.rounds}: {kernels} {variant} t={t} done", file=sys.stderr, flush=True)
    write_csv(out / "steps.csv", STEP_COLUMNS, step_rows)


def summary(directory, meta):
    """The benchmark's report, from the saved rows of `directory`."""
    lines = []
    say = lines.append
    a = meta["args"]
    if a.get("isa", "native") != "native":  # saved before --isa: the native builds
        say(f"{a['isa']} builds (make {a['isa']}), against OpenBLAS's {a['isa']} core types and the "
            f"{a['isa']} peak\n")
    gemm_path = directory / "gemm.csv"
    if gemm_path.exists():
        frame = resultsdir.read_csv(gemm_path, GEMM_COLUMNS, what="bench/kernels.py gemm.csv")
        if "openblas_core" not in frame.columns:  # saved before the core types were compared
            frame["openblas_core"] = meta["env"].get("OPENBLAS_CORETYPE") or "auto"
        shapes = frame.to_dict("records")
        cores = meta.get("openblas_cores", {})
        say(f"matrix products, rows = B*T = {a['B'] * a['T']}, 1 thread, best of 15 with the two libraries "
            "alternating; each shape against the fastest OpenBLAS core type (core), in that core type's run: "
            "ratio = project / OpenBLAS GFLOP/s of the bests, median = of the per-repetition ratios")
        if cores:
            left = "; ".join(f"{k}: {v}" for k, v in cores.get("left_out", {}).items())
            say(f"OpenBLAS core types run: {', '.join(cores.get('run', [])) or 'none'}"
                + (f" (left out: {left})" if left else ""))
        say(f"{'layer':8s} {'product':16s} {'M':>6s} {'N':>6s} {'K':>6s} {'project':>9s} {'OpenBLAS':>9s} "
            f"{'core':>11s} {'ratio':>6s} {'median':>6s}")
        for s in shapes:
            flag = "" if s["ratio"] >= 1.0 else "  < 1.0"
            say(f"{s['layer']:8s} {s['product']:16s} {s['M']:6d} {s['N']:6d} {s['K']:6d} "
                f"{s['gemm_gflops']:9.1f} {s['openblas_gflops']:9.1f} {str(s['openblas_core']):>11s} "
                f"{s['ratio']:6.2f} {s['median_ratio']:6.2f}{flag}")
        if shapes:
            worst = min(shapes, key=lambda s: s["ratio"])
            say(f"lowest ratio {worst['ratio']:.2f} ({worst['layer']} {worst['product']}); "
                f"{sum(s['ratio'] >= 1.0 for s in shapes)} of {len(shapes)} shapes at >= 1.0x OpenBLAS at its best")
        per_core = directory / "gemm_cores.csv"
        if per_core.exists():
            runs = resultsdir.read_csv(per_core, GEMM_CORE_COLUMNS, what="bench/kernels.py gemm_cores.csv")
            for core, rows in runs.groupby("openblas_core", sort=False):
                say(f"  OpenBLAS {core:11s}: fastest on {sum(s['openblas_core'] == core for s in shapes):2d} "
                    f"of {len(rows)} shapes, its GFLOP/s from {rows['openblas_gflops'].min():.1f} "
                    f"to {rows['openblas_gflops'].max():.1f}")
        say("")
    peaks = {int(r["threads"]): (r["gflops"], r["isa"]) for r in
             resultsdir.read_csv(directory / "peaks.csv", PEAK_COLUMNS, what="bench/kernels.py peaks.csv")
             .to_dict("records")}
    for t, (g, isa) in peaks.items():
        say(f"measured peak, {t} thread(s): {g:.1f} GFLOP/s ({isa} FMA)")
    steps = resultsdir.read_csv(directory / "steps.csv", STEP_COLUMNS_BEFORE_ROUNDS, what="bench/kernels.py steps.csv")
    rounds = "round" in steps.columns
    if rounds and "peak_gflops" not in steps.columns:
        raise StudyError(f"{directory / 'steps.csv'}: bench/kernels.py steps.csv: missing columns peak_gflops")
    if not rounds:  # saved before the run rules: one round, held to the peak measured at the start
        steps["round"] = 0
        steps["peak_gflops"] = [peaks[int(t)][0] if int(t) in peaks else float("nan") for t in steps["threads"]]
    n_rounds = steps["round"].nunique()
    say(f"\ntraining step, {a['config']} B={a['B']} T={a['T']}, median of {a['steps'] - 1} steps after 1 warm-up"
        + (f"; {n_rounds} rounds, the order reversed every other one, each run against the peak measured "
           "right before it: the share is the rounds' median [lowest, highest]" if rounds else
           "; against the peak measured at the start"))
    say(f"{'kernels':10s} {'variant':9s} {'threads':>7s} {'GFLOP':>7s} {'step s':>8s} {'GFLOP/s':>8s} {'of peak':>8s}")
    for (kernels, variant, t), rows in steps.groupby(["kernels", "variant", "threads"], sort=False):
        if rows["peak_gflops"].isna().any() or not (rows["peak_gflops"] > 0).all():
            raise StudyError(f"{directory / ('steps.csv' if rounds else 'peaks.csv')}: no peak at {t} threads")
        sec = statistics.median(rows["step_s"])
        flops = float(rows["flops"].iloc[0])
        rate = flops / sec / 1e9
        shares = sorted(flops / statistics.median(r["step_s"]) / 1e9 / float(r["peak_gflops"].iloc[0])
                        for _, r in rows.groupby("round"))
        spread = f" [{shares[0]:.1%}, {shares[-1]:.1%}]" if len(shares) > 1 else ""
        rss = rows["peak_rss_bytes"].apply(lambda v: v if isinstance(v, (int, float)) else float("nan")).dropna()
        mem = f"  peak RSS {rss.iloc[0] / 1e9:.2f} GB" if vocabulary.is_sequential(variant) and len(rss) else ""
        say(f"{kernels:10s} {variant:9s} {int(t):7d} {flops / 1e9:7.1f} {sec:8.3f} {rate:8.1f} "
            f"{statistics.median(shares):8.1%}{spread}{mem}")
    return "\n".join(lines) + "\n"


def load_meta(directory):
    directory = Path(directory)
    if not directory.is_dir():
        raise StudyError(f"{directory}: no such directory")
    try:
        meta = json.loads((directory / "meta.json").read_text())
    except FileNotFoundError:
        raise StudyError(f"{directory / 'meta.json'}: no such file") from None
    except (OSError, ValueError) as err:
        raise StudyError(f"{directory / 'meta.json'}: unreadable: {err}") from None
    args = meta.get("args") if isinstance(meta, dict) else None
    lacking = [k for k in ("config", "B", "T", "steps") if not isinstance(args, dict) or k not in args]
    if lacking or not isinstance(meta.get("env"), dict):
        raise StudyError(f"{directory / 'meta.json'}: no {'args.' + lacking[0] if lacking else 'env'}")
    return directory, meta


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="d12")
    ap.add_argument("-B", type=int, default=4)
    ap.add_argument("-T", type=int, default=64)
    ap.add_argument("--steps", type=int, default=4, help="steps per run; the first is warm-up")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of the step runs, the order reversed every other one (default 3)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--kernels", default="fast,reference")
    ap.add_argument("--variants", default=",".join(v for v in vocabulary.VARIANTS if not vocabulary.is_distributed(v)))
    ap.add_argument("--skip-gemm", action="store_true")
    ap.add_argument("--isa", choices=sorted(ISAS), default="native",
                    help="avx2: the AVX2 builds (make avx2) against OpenBLAS's AVX2 core types and the AVX2 peak")
    ap.add_argument("--openblas-cores", metavar="LIST",
                    help="OpenBLAS core types to compare with, comma-separated (default: every one of "
                    + ", ".join(n for n, _ in OPENBLAS_CORES) + " that this CPU can run; "
                    "OPENBLAS_CORETYPE in the environment, if set, is the only one)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench-kernels"),
                    help="where the new results directory is made")
    ap.add_argument("--from", dest="source", metavar="DIR",
                    help="print the summary of a saved results directory instead of measuring")
    args = ap.parse_args(argv)
    if args.source:
        try:
            sys.stdout.write(summary(*load_meta(args.source)))
        except StudyError as err:
            errors.exit_bad_input("bench/kernels.py", err)
        return 0
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        ap.error(f"--threads {args.threads}: expected comma-separated thread counts")
    for option, value, known in (("--kernels", args.kernels, vocabulary.KERNEL_SETS),
                                 ("--variants", args.variants, vocabulary.VARIANTS)):
        bad = [v for v in value.split(",") if v not in known]
        if bad:
            ap.error(f"{option} {value}: unknown {bad[0]} (known: {', '.join(known)})")
    if args.steps < 2:
        ap.error(f"--steps {args.steps}: must be at least 2 (the first is a warm-up)")
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: must be at least 1")
    env = dict(os.environ, OMP_PROC_BIND="close", OMP_PLACES="cores")
    # OpenBLAS picks its kernels by CPU at load time; every core type this CPU runs is tried
    args.coretype_from_env = not args.openblas_cores and bool(env.get("OPENBLAS_CORETYPE"))
    if args.coretype_from_env:
        args.openblas_cores = env["OPENBLAS_CORETYPE"]
    check_binaries(args, threads)
    git = provenance.git_state(ROOT)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    try:
        out = resultsdir.new_directory(Path(args.out), f"{stamp}-{git['commit']}{'-dirty' if git['dirty'] else ''}")
    except (StudyError, OSError) as err:
        sys.exit(f"bench/kernels.py: {args.out}: cannot make a results directory: {err}")
    meta = {"benchmark": "bench/kernels.py", "command": [sys.executable] + sys.argv,
            "args": {k: v for k, v in vars(args).items() if k != "source"}, "threads": threads,
            "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "git": git, "cpu": provenance.cpu(), "system": provenance.system(), "software": provenance.software(),
            "env": {k: v for k, v in env.items()
                    if k in ("OMP_PROC_BIND", "OMP_PLACES") or k.startswith("OPENBLAS_")}}
    resultsdir.write_json(out / "meta.json", meta)
    print(f"bench/kernels.py: writing {out}", file=sys.stderr)
    measure(args, threads, out, env, meta)
    meta["finished_utc"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    resultsdir.write_json(out / "meta.json", meta)
    try:
        text = summary(*load_meta(out))
    except StudyError as err:
        sys.exit(f"bench/kernels.py: {err}")
    resultsdir.atomic_write(out / "summary.txt", text)
    sys.stdout.write(text)
    print(f"\nbench/kernels.py: saved in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
