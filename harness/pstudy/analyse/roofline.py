"""Is the training step memory bound? A roofline analysis of measured kernel times.

Inputs, in a results directory RESULTS_DIR:

  ceilings.json                     measured STREAM and peak-FLOP/s ceilings (pstudy.ceilings)
  ops/<variant>_<compiler>_<kernels>.json
                                    `gpt2-<variant> --json --describe` of that binary for the run's
                                    model, B and T: an info line, then one line per operation with
                                    its FLOPs and compulsory bytes (core/traffic.h)
  traces/<variant>_<compiler>_<kernels>_t<threads>_bs<bs>_k<k>_r<rep>.csv
                                    `--trace` output (one row per chunk); bs and k are NA for
                                    seq and forkjoin
  meta.json                         the warm-up steps to skip (config.run.warmup, read through
                                    resultsdir.Meta.warmup; 1 when the directory has no meta.json)
  counters/                         optional, measured bytes (see "Hardware counters" below)

Time of an operation: in each kept iteration of a run, the wall time during
which at least one of its chunks ran (the union of its chunks' intervals, all
threads); the operation's time is the median of those over iterations and
repetitions. Where an operation's chunks run back to back (seq, forkjoin: one
operation at a time, its pieces side by side) that is its span, from its first
chunk's start to its last chunk's end. Where a task schedule interleaves it with
other operations it is not: taskiter spreads AdamW's chunks over the next
iteration's forward pass, so AdamW's span covered most of the step (56% of it,
1.3 GFLOP/s, on the small model at 2 threads; its chunks' union 8%) and made
the step look latency bound. Warm-up iterations (meta.json's config.run.warmup,
the same steps the tables leave out) are not used. A kernel's time is the sum
over its operations (layers). Shares are of the sum of all operations' times:
the step time where operations do not overlap (seq, forkjoin); with the chunked
variants, operations overlap and the shares are of summed operation times.

Rates: GFLOP/s = FLOPs / time, GB/s = bytes / time, FLOPs and bytes from the
traffic model (or bytes from counters). Ceilings at the run's thread count: the
bandwidth roof is STREAM triad (copy drawn beside it), the compute roof the
fastest measured ISA's peak (each measured ISA drawn). Ridge = peak / triad.

Classification: a kernel is memory bound when its intensity (FLOP/B) is below
the ridge, compute bound otherwise. Its fraction of the ceiling is its GFLOP/s
over min(peak, intensity x triad), i.e. GB/s over triad when memory bound and
GFLOP/s over peak when compute bound.

Whole-step rule: the step is memory bound when memory-bound kernels take more
than half of its time (STEP_RULE). The step's aggregate intensity (all FLOPs
over all bytes) is reported beside it, because a step can be dominated in time
by slow memory-bound kernels while most of its work is dense.

Combined verdict (pstudy.verdict): the column `bound` above is the roofline's placement alone;
`verdict` weighs it with the fraction of each roof (a kernel under 25% of both is
"latency/in-core" bound, named by what its code spends time on), the bandwidth sensitivity
measured by `perfstudy sensitivity` (RESULTS_DIR/sensitivity/, when present) and the simulated
traffic of `perfstudy cachesim` (RESULTS_DIR/cachesim/, when present); `decided_by` and
`disagreements` say which evidence decided and where the sources disagree, and the step's
combined line (roofline_verdict.txt, after the roofline's line) says the same for the step.

Hardware counters: where RESULTS_DIR/counters/ holds likwid-perfctr CSV files
(-m, marker regions named after kernels) for a run, named
<run stem>.<GROUP>.csv (GROUP MEM on Intel, MEM1 and MEM2 on AMD Zen 3, whose
halves of the DRAM channels are added), the measured DRAM volume per step
replaces the modelled bytes of the kernels it covers (measured_kernel_bytes);
the figure and table say which source each kernel's bytes come from.
"""

import json
from pathlib import Path

import pandas as pd

from pstudy.measure import ceilings as ceil_mod
from pstudy.measure import counters as counters_mod
from pstudy.store import opcosts, resultsdir, traceformats, vocabulary
from pstudy.analyse import verdict
from pstudy.errors import StudyError

STEP_RULE = "memory bound when memory-bound kernels take more than half of the step time"
MEMORY_SHARE_THRESHOLD = 0.5
TIME_NOTE = ("time: median over iterations and repetitions of each op's busy wall time (the union of its chunks' "
             "intervals)")
MODEL_NOTE = "traffic model (no hardware counters)"
BANDWIDTH_KERNELS = 8  # memory-bound kernels drawn against thread count, longest first
FIGURE_INPUTS = "figure_inputs"  # a summary's key: {"rooflines": [...], "bandwidth": {...} or None}

TRACE_COLUMNS = ("iteration", "op", "kernel", "start_s", "end_s")


class RooflineError(Exception):
    """Input that cannot be analysed; the message names the file and the problem."""


# ---------------------------------------------------------------- inputs

def load_ops(path):
    """The operations of a --describe file as a DataFrame indexed by op (pstudy.store.opcosts)."""
    try:
        return opcosts.read(path)
    except StudyError as err:
        raise RooflineError(str(err)) from None


def load_trace(path):
    """A run's per-chunk trace, read by its format's owner (pstudy.traceformats), with the columns
    the roofline needs. A damaged trace is a StudyError, not a RooflineError: `report` skips an
    analysis the directory has no data for, never one whose data is damaged."""
    return traceformats.read_chunks(path, TRACE_COLUMNS)


def warmup_steps(results_dir):
    """Warm-up iterations to skip: the run's own warm-up steps (meta.json, config.run.warmup)."""
    if not (Path(results_dir) / resultsdir.META).exists():
        return 1
    try:
        return resultsdir.read_meta(results_dir).warmup
    except StudyError as err:
        raise RooflineError(str(err)) from None


def find_traces(results_dir):
    """[(path, point key, repetition)] of RESULTS_DIR/traces."""
    tdir = Path(results_dir) / resultsdir.TRACES_DIR
    if not tdir.is_dir():
        raise RooflineError(f"{tdir}: not found (expected trace CSVs of the runs)")
    found = resultsdir.ResultsDir(results_dir).traces()  # a trace kept twice: StudyError, as in load_trace
    if not found:
        raise RooflineError(f"{tdir}: no trace CSVs")
    return found


# ---------------------------------------------------------------- timings

def op_spans(trace, warmup, source):
    """Per (iteration, op) busy wall time of the kept iterations (span_s: the union of the op's
    chunk intervals), and per-iteration step spans."""
    kept = trace[trace["iteration"] >= warmup]
    if kept.empty:
        its = sorted(trace["iteration"].unique())
        raise RooflineError(f"{source}: no iterations left after skipping {warmup} warm-up step(s) "
                            f"(iterations present: {its[0]}..{its[-1]})")
    spans = traceformats.busy_time(kept, ["iteration", "op"]).rename("span_s").reset_index()
    gi = kept.groupby("iteration")
    steps = (gi["end_s"].max() - gi["start_s"].min()).rename("step_s").reset_index()
    return spans, steps


def config_timings(runs, ops, warmup, ops_path):
    """Median op times over every kept iteration of every repetition of one configuration.

    runs: [(trace path, DataFrame)]. Returns (per-op DataFrame with time_s, median step wall
    time, number of samples per op).
    """
    all_spans, all_steps = [], []
    for rep, (path, trace) in enumerate(runs):
        unknown = sorted(set(trace["op"]) - set(ops.index))
        if unknown:
            raise RooflineError(f"{path}: op {unknown[0]} is not in {ops_path} (was it described for the same "
                                "model, B and T?)")
        kinds = trace.drop_duplicates("op").set_index("op")["kernel"]
        wrong = kinds[kinds != ops.loc[kinds.index, "kernel"]]
        if not wrong.empty:
            o = wrong.index[0]
            raise RooflineError(f"{path}: op {o} is {wrong.iloc[0]} in the trace but {ops.loc[o, 'kernel']} in "
                                f"{ops_path} (was it described for the same model, B and T?)")
        spans, steps = op_spans(trace, warmup, path)
        spans["rep"] = rep
        all_spans.append(spans)
        all_steps.append(steps)
    spans = pd.concat(all_spans)
    per_op = spans.groupby("op")["span_s"].agg(["median", "size"]).rename(columns={"median": "time_s",
                                                                                  "size": "samples"})
    table = ops.join(per_op, how="inner")
    step_s = float(pd.concat(all_steps)["step_s"].median())
    return table, step_s, int(per_op["samples"].min())


# ---------------------------------------------------------------- the model against the ceilings

def roofs(entry):
    """Peak, triad, copy and ridge of a ceilings.json per_threads entry."""
    peak = float(entry["best_gflops"])
    triad = float(entry["stream_GBs"]["triad"])
    return {"peak_gflops": peak, "best_isa": entry["best_isa"], "triad_GBs": triad,
            "copy_GBs": float(entry["stream_GBs"]["copy"]), "ridge": peak / triad,
            "isa_gflops": dict(entry["peak_gflops"])}


def classify(table, roof):
    """Adds intensity, gflops, gbs, bound and fraction_of_ceiling columns (rates in 1e9 units)."""
    t = table.copy()
    t["intensity"] = t["flops"] / t["bytes"].where(t["bytes"] > 0)
    t["intensity"] = t["intensity"].fillna(0.0)
    t["gflops"] = t["flops"] / t["time_s"] / 1e9
    t["gbs"] = t["bytes"] / t["time_s"] / 1e9
    t["bound"] = ["memory" if i < roof["ridge"] else "compute" for i in t["intensity"]]
    attainable = [min(roof["peak_gflops"], i * roof["triad_GBs"]) for i in t["intensity"]]
    t["fraction_of_ceiling"] = [g / a if a > 0 else b / roof["triad_GBs"]
                                for g, a, b in zip(t["gflops"], attainable, t["gbs"])]
    return t


def kernel_table(per_op, roof, measured_bytes=None):
    """Per kernel kind: summed time, FLOPs, bytes over its operations; shares and classification.

    measured_bytes: {kernel: bytes per step} from hardware counters; those kernels' bytes replace
    the model's (bytes_source 'counters').
    """
    g = per_op.groupby("kernel", sort=False)
    k = pd.DataFrame({"time_s": g["time_s"].sum(), "flops": g["flops"].sum(), "bytes": g["bytes"].sum(),
                      "ops": g.size()})
    k["bytes_source"] = "model"
    for kernel, value in (measured_bytes or {}).items():
        if kernel in k.index:
            k.loc[kernel, "bytes"] = value
            k.loc[kernel, "bytes_source"] = "counters"
    total = k["time_s"].sum()
    k["share"] = k["time_s"] / total
    k = classify(k, roof)
    return k.sort_values("time_s", ascending=False)


def step_verdict(kernels, roof, label):
    """The one-line whole-step verdict and the numbers behind it."""
    memory_share = float(kernels.loc[kernels["bound"] == "memory", "share"].sum())
    flops, nbytes, time = kernels["flops"].sum(), kernels["bytes"].sum(), kernels["time_s"].sum()
    intensity = flops / nbytes if nbytes > 0 else 0.0
    memory_bound = memory_share > MEMORY_SHARE_THRESHOLD
    gflops = flops / time / 1e9
    top = kernels[kernels["bound"] == "memory"].head(3)
    top_text = ", ".join(f"{name} {share:.0%}" for name, share in zip(top.index, top["share"]))
    line = (f"{label}: memory-bound kernels take {memory_share:.0%} of the step"
            + (f" ({top_text})" if top_text else "")
            + f"; the step's aggregate intensity is {intensity:.1f} FLOP/B against a ridge of "
              f"{roof['ridge']:.1f} FLOP/B; it runs at {gflops:.1f} GFLOP/s, {gflops / roof['peak_gflops']:.0%} of "
              f"the {roof['peak_gflops']:.0f} GFLOP/s {roof['best_isa']} peak: "
            + ("memory bound" if memory_bound else "compute bound")
            + f" (rule: {STEP_RULE})")
    return {"line": line, "memory_share": memory_share, "aggregate_intensity": intensity,
            "ridge": roof["ridge"], "step_gflops": gflops, "memory_bound": memory_bound,
            "intensity_says": "memory" if intensity < roof["ridge"] else "compute"}


# ---------------------------------------------------------------- hardware counters (measured bytes)

def _region_kernel(region):
    """A counter region's kernel kind: matmul_forward -> matmul_fwd, layernorm_backward -> layernorm_bwd."""
    return region.replace("_forward", "_fwd").replace("_backward", "_bwd")


def measured_kernel_bytes(results_dir, point, steps_per_run):
    """{kernel: DRAM bytes per step} from the likwid counter files of a point
    (resultsdir.counter_files: counters/<run stem>.<GROUP>.csv), or None.

    Groups MEM1 and MEM2 of one repetition are added (Zen 3: each sees half the channels);
    MEM alone is used as is. The counters cover every step of the run, warm-up included,
    so volume / steps_per_run is per step. Repetitions are averaged.
    """
    cdir = Path(results_dir) / resultsdir.COUNTERS_DIR
    by_rep = {}
    for rep, group, path in resultsdir.ResultsDir(results_dir).counter_files(point):
        try:
            parsed = counters_mod.parse_likwid_csv(path.read_text(), source=str(path))
        except counters_mod.CountersFormatError as err:
            raise RooflineError(str(err)) from None
        by_rep.setdefault(rep, {})[group] = counters_mod.region_summary(parsed)
    stem_prefix = resultsdir.point_stem(point)
    if not by_rep:
        return None
    per_rep = []
    for rep, groups in sorted(by_rep.items()):
        if "MEM" in groups:
            summary = groups["MEM"]
        elif {"MEM1", "MEM2"} <= set(groups):
            try:
                summary = counters_mod.combine_channel_groups(groups["MEM1"], groups["MEM2"])
            except counters_mod.CountersFormatError as err:
                raise RooflineError(f"{cdir}/{stem_prefix}_r{rep}: {err}") from None
        else:
            raise RooflineError(f"{cdir}/{stem_prefix}_r{rep}.*.csv: groups {', '.join(sorted(groups))}: "
                                "expected MEM, or MEM1 and MEM2")
        per_rep.append({_region_kernel(name): s["memory_volume_GB"] * 1e9 / steps_per_run
                        for name, s in summary.items() if s["memory_volume_GB"] is not None})
    kernels = set.intersection(*(set(r) for r in per_rep))
    return {k: sum(r[k] for r in per_rep) / len(per_rep) for k in sorted(kernels)}


# ---------------------------------------------------------------- the analysis

def _config_label(key):
    label = f"{key.variant} ({key.compiler}/{key.kernels}) {key.threads} thread{'s' if key.threads != 1 else ''}"
    if key.ranks is not None:
        label += f" x {key.ranks} rank{'s' if key.ranks != 1 else ''}"
    if key.batch_subsize is not None or key.k is not None:
        label += " " + vocabulary.chunking_label(*key.chunks())
    return label


def _pick(configs, variant, threads, compiler, kernels, exact=False):
    """The configuration to analyse at `threads`: the preferred variant if present, else any, fastest
    first; with `exact` (a user's --at), that variant of that build or None."""
    at = [key for key in configs if key.threads == threads and key.compiler == compiler and key.kernels == kernels]
    if exact:
        return min((key for key in at if key.variant == variant), key=lambda key: configs[key]["step_s"], default=None)
    if not at:
        at = [key for key in configs if key.threads == threads]
    preferred = [key for key in at if key.variant == variant] or at
    return min(preferred, key=lambda key: configs[key]["step_s"]) if preferred else None


def load_evidence(results_dir, compiler, kernels, threads):
    """(sensitivity, cachesim, notes): {kernel: record} of the bandwidth-sensitivity experiment and
    of the simulated cache traffic in RESULTS_DIR, each None when absent (pstudy.sensitivity and
    pstudy.cachesim own their files)."""
    from pstudy.measure import cachesim, sensitivity
    try:
        sens = sensitivity.kernel_evidence(results_dir, compiler, kernels, threads)
        sim = cachesim.kernel_evidence(results_dir, compiler, kernels)
    except StudyError as err:
        raise RooflineError(str(err)) from None
    return sens, sim


def analyse(results_dir, out_dir, at=None, compiler="gcc", kernels="fast", figures=True):
    """Runs the analysis; writes its tables under out_dir; returns a summary dict. With figures, the
    summary names the figures' paths and holds under FIGURE_INPUTS what pstudy.show.rooflinefigures
    draws them from; without, no paths and nothing to draw.

    at: [(variant, threads)] to analyse; default [(vocabulary.BASELINE, 1), (vocabulary.FORKJOIN,
    largest thread count)]
    (another variant at that count when the preferred one is absent). Raises RooflineError.
    """
    results_dir, out_dir = Path(results_dir), Path(out_dir)
    try:
        ceilings = ceil_mod.load_ceilings(resultsdir.ResultsDir(results_dir).ceilings)
    except ceil_mod.CeilingsError as err:
        raise RooflineError(str(err)) from None
    warmup = warmup_steps(results_dir)
    ops_cache, runs = {}, {}
    ops_paths = {}
    for path, key, _rep in find_traces(results_dir):
        ops_paths[key] = resultsdir.ResultsDir(results_dir).ops(key.variant, key.compiler, key.kernels, point=key)
        if ops_paths[key] not in ops_cache:
            ops_cache[ops_paths[key]] = load_ops(ops_paths[key])
        runs.setdefault(key, []).append((path, load_trace(path)))

    configs = {}
    for key, rs in runs.items():
        table, step_s, samples = config_timings(rs, ops_cache[ops_paths[key]], warmup, ops_paths[key])
        configs[key] = {"per_op": table, "step_s": step_s, "samples": samples, "reps": len(rs)}

    thread_counts = sorted({key.threads for key in configs})
    traces_dir = results_dir / resultsdir.TRACES_DIR
    builds = sorted({f"{key.compiler}/{key.kernels}" for key in configs})
    if configs and f"{compiler}/{kernels}" not in builds:  # never another build's analysis under this name
        raise RooflineError(f"{traces_dir}: no traced run of {compiler}/{kernels} (traced: {', '.join(builds)})")
    exact = at is not None
    if at is None:
        at = [(vocabulary.BASELINE, 1)] if 1 in thread_counts else []
        if not at or thread_counts[-1] != 1:
            at.append((vocabulary.FORKJOIN, thread_counts[-1]))
    picked = []
    for variant, threads in at:  # every configuration found before anything is written
        key = _pick(configs, variant, threads, compiler, kernels, exact=exact)
        if key is None and exact:
            traced = sorted({f"{k.variant}:{k.threads}" for k in configs if (k.compiler, k.kernels) == (compiler, kernels)})
            raise RooflineError(f"{traces_dir}: --at {variant}:{threads}: no traced run of {variant} at {threads} "
                                f"threads with {compiler}/{kernels} (traced: {', '.join(traced)})")
        if key is None:
            raise RooflineError(f"{traces_dir}: no run at {threads} threads "
                                f"(thread counts present: {', '.join(map(str, thread_counts))})")
        picked.append((key, threads))
    out_dir.mkdir(parents=True, exist_ok=True)

    summary = {"results_dir": str(results_dir), "warmup_skipped": warmup, "rule": STEP_RULE,
               "time": TIME_NOTE, "analyses": [], "thread_counts": thread_counts}
    inputs = {"rooflines": [], "bandwidth": None}
    for key, threads in picked:
        try:
            roof = roofs(ceil_mod.ceiling_for(ceilings, threads))
        except ceil_mod.CeilingsError as err:
            raise RooflineError(f"{resultsdir.ResultsDir(results_dir).ceilings}: {err}") from None
        cfg = configs[key]
        n_iter = max(int(t["iteration"].max()) + 1 for _, t in runs[key])
        measured = measured_kernel_bytes(results_dir, key, n_iter)
        note = MODEL_NOTE if not measured else \
            f"likwid DRAM volume for {', '.join(sorted(measured))}; traffic model for the rest"
        per_op = classify(cfg["per_op"], roof)
        per_op["share"] = per_op["time_s"] / per_op["time_s"].sum()
        ktab = kernel_table(cfg["per_op"], roof, measured)
        label = _config_label(key)
        roof_verdict = step_verdict(ktab, roof, label)
        sens, sim = load_evidence(results_dir, key.compiler, key.kernels, threads)
        ktab = verdict.classify_table(ktab, roof, sens, sim, kernel_set=key.kernels)
        evidence = ["roofline (" + note + ")"] + (["bandwidth sensitivity (thief)"] if sens else []) + \
            ([cachesim_note(sim)] if sim else [])
        combined = verdict.step_verdict(ktab, label, evidence)
        name = f"{key.variant}_t{threads}"
        fig_path = out_dir / f"roofline_{name}.png"
        if figures:
            inputs["rooflines"].append({
                "kernels": ktab, "roof": roof,
                "title": f"Roofline: {label}, {cfg['reps']} rep(s), {cfg['samples']} samples per op",
                "note": note + (f"; verdict also from: {', '.join(evidence[1:])}" if len(evidence) > 1 else ""),
                "path": fig_path})
        ktab_out = ktab.reset_index().rename(columns={"index": "kernel"})
        resultsdir.atomic_write(out_dir / f"roofline_kernels_{name}.csv",
                                ktab_out.to_csv(index=False, float_format="%.6g"))
        resultsdir.atomic_write(out_dir / f"roofline_ops_{name}.csv",
                                per_op.reset_index().to_csv(index=False, float_format="%.6g"))
        summary["analyses"].append({
            "variant": key.variant, "compiler": key.compiler, "kernels": key.kernels, "threads": threads,
            # the binaries' names (the info line's): token_chunk for k
            **{vocabulary.CHUNK_OPTIONS[c][1]: v for c, v in zip(vocabulary.CHUNK_KEYS, key.chunks())},
            "reps": cfg["reps"], "samples_per_op": cfg["samples"],
            "step_wall_s": cfg["step_s"], "op_time_sum_s": float(per_op["time_s"].sum()), "roof": roof,
            "bytes_source": note, "figure": str(fig_path) if figures else None,
            "kernel_table": str(out_dir / f"roofline_kernels_{name}.csv"),
            "op_table": str(out_dir / f"roofline_ops_{name}.csv"),
            "by_kernel": ktab_out.to_dict(orient="records"), **roof_verdict,
            "combined": combined, "evidence": evidence, "thresholds": verdict.THRESHOLDS})

    # achieved bandwidth of the memory-bound kernels against thread count, on the parallel variant
    # of the last analysis (its fastest configuration at each count), seq filling in 1 thread
    scaling_variant = summary["analyses"][-1]["variant"]
    # the memory-bound kernels that take the most time in the last analysis (by_kernel is sorted by time)
    memory_kernels = [k["kernel"] for k in summary["analyses"][-1]["by_kernel"]
                      if k["bound"] == "memory" and k["flops"] > 0][:BANDWIDTH_KERNELS]
    series, used = {}, []
    for threads in thread_counts:
        key = _pick(configs, scaling_variant, threads, compiler, kernels)
        if key.variant != scaling_variant and not (threads == 1 and key.variant == vocabulary.BASELINE):
            continue
        try:
            roof = roofs(ceil_mod.ceiling_for(ceilings, threads))
        except ceil_mod.CeilingsError:
            continue  # drawn only where the ceilings were measured
        used.append(f"{key.variant}@{threads}")
        ktab = kernel_table(configs[key]["per_op"], roof)
        for kernel in dict.fromkeys(memory_kernels):
            if kernel in ktab.index:
                series.setdefault(kernel, []).append((threads, float(ktab.loc[kernel, "gbs"])))
    bw_path = out_dir / "bandwidth_vs_threads.png"
    if figures:
        inputs["bandwidth"] = {"series": series, "ceilings": ceilings,
                               "title": f"Memory-bound kernels: achieved GB/s ({', '.join(used)})",
                               "note": summary["analyses"][-1]["bytes_source"], "path": bw_path}
    summary["bandwidth_figure"] = str(bw_path) if figures else None
    summary["bandwidth_series"] = {k: sorted(v) for k, v in series.items()}
    summary["verdicts"] = [line for a in summary["analyses"] for line in (a["line"], a["combined"]["line"])]
    # the step's lines first (the page and the terminal summary lead with them), then per analysis
    # the kernel table and each kernel's explanation
    resultsdir.atomic_write(out_dir / "roofline_verdict.txt", "\n".join(summary["verdicts"]) + "\n\n"
                            + format_kernels(summary) + "\n")
    resultsdir.atomic_write(out_dir / "roofline.json", json.dumps(summary, indent=2, default=float) + "\n")
    summary[FIGURE_INPUTS] = inputs  # after roofline.json, which cannot hold its DataFrames
    return summary


def cachesim_note(sim):
    """How the simulated traffic was obtained, for every figure and line that uses it."""
    first = next(iter(sim.values()))
    return f"simulated cache traffic ({first.get('note', 'valgrind cache simulator')})"


def format_table(records):
    cols = [("kernel", "{:<22}", "kernel"), ("share", "{:>6.1%}", "share"), ("intensity", "{:>9.2f}", "FLOP/B"),
            ("gflops", "{:>9.2f}", "GFLOP/s"), ("gbs", "{:>8.2f}", "GB/s"),
            ("fraction_of_ceiling", "{:>8.1%}", "of roof"), ("bound", "{:>8}", "bound"),
            ("verdict", "{:>15}", "verdict"), ("decided_by", "{:>22}", "decided by")]
    head = "  ".join(f"{h:>{len(fmt.format(records[0][c]))}}" if c != "kernel" else f"{h:<22}"
                     for c, fmt, h in cols) if records else ""
    lines = [head]
    for r in records:
        lines.append("  ".join(fmt.format(r[c]) for c, fmt, _ in cols))
    return "\n".join(lines)


def format_summary(summary):
    """The verdict tables and lines of an analysis, as text."""
    return format_kernels(summary) + "\n" + "\n".join(summary["verdicts"])


def format_kernels(summary):
    """Per analysis: its roofs, the kernel table and each kernel's verdict with why, as text."""
    lines = []
    for a in summary["analyses"]:
        lines.append(f"== {a['variant']} ({a['compiler']}/{a['kernels']}), {a['threads']} thread(s): ridge "
                     f"{a['ridge']:.2f} FLOP/B (peak {a['roof']['peak_gflops']:.1f} GFLOP/s {a['roof']['best_isa']}, "
                     f"triad {a['roof']['triad_GBs']:.1f} GB/s); bytes: {a['bytes_source']}")
        lines.append(format_table(a["by_kernel"]))
        for r in a["by_kernel"]:
            lines.append(f"  {r['kernel']}: {r['verdict']}: {r['why']}"
                         + (f" [disagree: {r['disagreements']}]" if r["disagreements"] else ""))
    lines.append(TIME_NOTE)
    lines.append(f"thresholds: {verdict.THRESHOLDS}")
    return "\n".join(lines)

