"""What bounds each kernel, and the step: the roofline's evidence combined with what was measured.

The roofline alone (pstudy.roofline) places a kernel by its intensity against the ridge: memory
bound below it, compute bound above. That places every kernel under one of the two roofs even when
it runs far below both, and such a kernel is limited by neither: by latency (a serial chain of
dependent floating-point adds, a scalar libm call per element) or by the core (instruction
throughput of scalar code). This module says so, and weighs the other evidence a run may have.

Evidence, per kernel (each optional except the first):

  roofline     intensity (FLOP/B), achieved GFLOP/s and GB/s against the machine's peak and
               STREAM triad (pstudy.roofline); bytes from the traffic model or from counters
  counters     measured DRAM bytes (likwid) replace the model's bytes before anything here
  sensitivity  the slowdown of the kernel while a thief streams through memory on a spare core
               (pstudy.sensitivity): relative slowdown at the highest pressure, with its interval
  cachesim     simulated DRAM bytes / the traffic model's compulsory bytes (pstudy.cachesim):
               valgrind's cache simulator on a small model and an AVX2+FMA build

Rules, in order (the first that applies decides; `decided_by` names it):

  1. sensitivity, when measured and conclusive: a kernel whose slowdown at the highest DRAM
     pressure has its interval's lower end at or above SENSITIVE_SLOWDOWN (10%) is "memory"
     bound, whatever the roofline says: stealing bandwidth slows it.
  2. far below both roofs: achieved GB/s under LOW_FRACTION (25%) of STREAM triad and achieved
     GFLOP/s under LOW_FRACTION of the peak: "latency/in-core" bound, with the reason where the
     code is known to have one (KNOWN_LIMITERS), and "neither roof" otherwise.
  3. otherwise the roofline: "memory" below the ridge, "compute" above it.

Where another source disagrees with the deciding one it is recorded, never silently dropped:
  - sensitivity insensitive (the interval's upper end under INSENSITIVE_SLOWDOWN, 3%) for a
    kernel labelled memory bound;
  - sensitivity sensitive is rule 1, so it disagrees with the roofline when that said otherwise;
  - cachesim: the intensity with the simulated bytes (FLOPs / (bytes x ratio)) on the other side
    of the ridge from the model's;
  - a kernel between the thresholds (neither conclusively sensitive nor insensitive) is "not
    conclusive" and decides nothing;
  - the roofs: a kernel whose bytes/time are above ABOVE_ROOF (110%) of the STREAM-triad roof
    cannot be at that roof. Either the traffic model's bytes (each kernel's compulsory bytes, as if
    every operand came from DRAM) are served partly by caches, which cachesim's ratio below 1
    tells, or one core pulls more than STREAM triad for this access pattern (STREAM counts no
    write-allocate; a read-modify-write sweep like AdamW's has more loads in flight per store).
    Its memory label then rests on the intensity alone, and the line says so.

The step: the share of step time of each label; the step is bound by the label holding more than
half of the time (STEP_MAJORITY), "mixed" otherwise, and its line says which evidence decided the
kernels holding that time and lists the kernels where sources disagree.
"""

import math

LOW_FRACTION = 0.25
SENSITIVE_SLOWDOWN = 0.10
INSENSITIVE_SLOWDOWN = 0.03
ABOVE_ROOF = 1.10
STEP_MAJORITY = 0.5

MEMORY, COMPUTE, LATENCY = "memory", "compute", "latency/in-core"
LABELS = (MEMORY, COMPUTE, LATENCY)
BY_SENSITIVITY, BY_FRACTIONS, BY_RIDGE = "sensitivity", "fraction of both roofs", "intensity vs ridge"

THRESHOLDS = (f"latency/in-core when under {LOW_FRACTION:.0%} of both the STREAM-triad roof and the peak; "
              f"memory when stealing DRAM bandwidth slows the kernel by at least {SENSITIVE_SLOWDOWN:.0%} "
              f"(interval's lower end); insensitive when the interval's upper end is under "
              f"{INSENSITIVE_SLOWDOWN:.0%}")

# What the code of a kernel is known to spend its time on, where that is not memory or the FMA
# units (core/kernels.c, core/kernels_reference.c, core/kernels_fast.c). Keyed by kernel, or by
# (kernel, kernel set) where the sets differ.
KNOWN_LIMITERS = {
    "crossentropy_fwd": "one scalar libm expf per logit and a serial sum (transcendental functions)",
    "attention_fwd": "scalar dot products over head_size (a serial chain of dependent adds: "
                     "-ffp-contract=off, no reassociation) and one scalar expf per score",
    "attention_bwd": "scalar dot products over head_size (serial dependent adds)",
    ("gelu_fwd", "reference"): "a scalar libm tanhf per element (transcendental functions)",
    ("gelu_bwd", "reference"): "scalar libm tanhf and coshf per element (transcendental functions)",
    "layernorm_fwd": "per-row reductions (serial sums) and a square root per row",
    "layernorm_bwd_input": "per-row reductions (serial sums)",
    "loss_mean": "a serial sum",
    "encoder_fwd": "a gather of embedding rows",
    "encoder_bwd": "a scatter-add into embedding rows",
    "pack_weight_fwd": "a copy of the weight into panels, transposed in 8x8 blocks (no arithmetic)",
    "pack_weight_bwd_input": "a copy of the weight's rows into panels (no arithmetic)",
}


def known_limiter(kernel, kernel_set=None):
    return KNOWN_LIMITERS.get((kernel, kernel_set)) or KNOWN_LIMITERS.get(kernel)


def _finite(x):
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def sensitivity_state(s):
    """'sensitive', 'insensitive', 'not conclusive' or None (not measured) from a sensitivity record
    {"slowdown": s, "low": l, "high": h, ...} at the highest DRAM pressure."""
    if not s or not _finite(s.get("slowdown")):
        return None
    low, high = s.get("low"), s.get("high")
    if _finite(low) and low >= SENSITIVE_SLOWDOWN:
        return "sensitive"
    if _finite(high) and high < INSENSITIVE_SLOWDOWN:
        return "insensitive"
    return "not conclusive"


def classify_kernel(kernel, row, roof, sensitivity=None, cachesim=None, kernel_set=None):
    """The verdict for one kernel.

    row: intensity, gflops, gbs, flops, bytes, bytes_source (a roofline kernel-table row).
    roof: peak_gflops, triad_GBs, ridge. sensitivity: {"slowdown", "low", "high", "stolen_GBs",
    "cache_slowdown"?...} or None. cachesim: {"ratio": simulated / compulsory} or None.
    Returns {"verdict", "decided_by", "why", "disagreements": [..], "fraction_of_memory_roof",
    "fraction_of_compute_roof", "sensitivity", "cachesim_intensity"}.
    """
    frac_mem = row["gbs"] / roof["triad_GBs"] if roof["triad_GBs"] > 0 else math.nan
    frac_cmp = row["gflops"] / roof["peak_gflops"] if roof["peak_gflops"] > 0 else math.nan
    ridge_label = MEMORY if row["intensity"] < roof["ridge"] else COMPUTE
    below_both = frac_mem < LOW_FRACTION and frac_cmp < LOW_FRACTION
    state = sensitivity_state(sensitivity)
    disagreements = []

    if state == "sensitive":
        verdict, decided = MEMORY, BY_SENSITIVITY
        why = (f"slowed {sensitivity['slowdown']:+.0%} [{sensitivity['low']:+.0%}, {sensitivity['high']:+.0%}] "
               f"while a thief took {sensitivity.get('stolen_GBs', math.nan):.1f} GB/s")
        if below_both:
            why += f"; at {frac_mem:.0%} of the bandwidth roof: latency of memory rather than its bandwidth"
            disagreements.append(f"roofs: under {LOW_FRACTION:.0%} of both roofs "
                                 f"({frac_mem:.0%} of triad, {frac_cmp:.0%} of peak)")
        elif ridge_label != MEMORY:
            disagreements.append(f"roofline: intensity {row['intensity']:.1f} FLOP/B is above the ridge "
                                 f"{roof['ridge']:.1f} (compute)")
    elif below_both:
        verdict, decided = LATENCY, BY_FRACTIONS
        limiter = known_limiter(kernel, kernel_set)
        why = (f"{frac_mem:.0%} of the triad roof and {frac_cmp:.0%} of the peak: "
               + (limiter if limiter else "neither roof (no known limiter in the code)"))
    else:
        verdict, decided = ridge_label, BY_RIDGE
        why = (f"intensity {row['intensity']:.2f} FLOP/B {'below' if ridge_label == MEMORY else 'above'} the ridge "
               f"{roof['ridge']:.2f}; {frac_mem:.0%} of the triad roof, {frac_cmp:.0%} of the peak")

    if _finite(frac_mem) and frac_mem > ABOVE_ROOF:
        cached = cachesim and _finite(cachesim.get("ratio")) and cachesim["ratio"] < 1.0 / ABOVE_ROOF
        disagreements.append(
            f"roofs: {row['gbs']:.1f} GB/s by the {row.get('bytes_source', 'model')}'s bytes is "
            f"{frac_mem:.0%} of the triad roof: "
            + (f"the simulated traffic is {cachesim['ratio']:.2f}x those bytes (served by caches)" if cached
               else "caches serve part of those bytes, or one core pulls more than STREAM triad for this "
                    "access pattern"))
    if state == "insensitive" and verdict == MEMORY:
        disagreements.append(f"sensitivity: slowed only {sensitivity['slowdown']:+.0%} "
                             f"[{sensitivity['low']:+.0%}, {sensitivity['high']:+.0%}] with "
                             f"{sensitivity.get('stolen_GBs', math.nan):.1f} GB/s stolen")
    if state == "not conclusive":
        why += (f"; sensitivity not conclusive ({sensitivity['slowdown']:+.0%} "
                f"[{sensitivity['low']:+.0%}, {sensitivity['high']:+.0%}])")
    elif state == "insensitive" and verdict != MEMORY:
        why += f"; insensitive to stolen bandwidth ({sensitivity['slowdown']:+.0%})"

    sim_intensity = None
    if cachesim and _finite(cachesim.get("ratio")) and cachesim["ratio"] > 0 and row["flops"] > 0 \
            and row.get("bytes_source", "model") == "model":
        sim_intensity = row["intensity"] / cachesim["ratio"]
        sim_label = MEMORY if sim_intensity < roof["ridge"] else COMPUTE
        if sim_label != ridge_label and decided == BY_RIDGE:
            disagreements.append(f"cachesim: with simulated traffic ({cachesim['ratio']:.2f}x the model's bytes) "
                                 f"the intensity is {sim_intensity:.2f} FLOP/B, {sim_label} side of the ridge")
    return {"verdict": verdict, "decided_by": decided, "why": why, "disagreements": disagreements,
            "fraction_of_memory_roof": frac_mem, "fraction_of_compute_roof": frac_cmp,
            "sensitivity": state, "cachesim_intensity": sim_intensity}


def classify_table(kernels, roof, sensitivity=None, cachesim=None, kernel_set=None):
    """Adds verdict, decided_by, why, disagreements, fraction_of_memory_roof,
    fraction_of_compute_roof, sensitivity and cachesim_intensity columns to a roofline kernel table
    (indexed by kernel). sensitivity, cachesim: {kernel: record}."""
    t = kernels.copy()
    rows = {k: classify_kernel(k, r, roof, (sensitivity or {}).get(k), (cachesim or {}).get(k), kernel_set)
            for k, r in t.iterrows()}
    for col in ("verdict", "decided_by", "why", "fraction_of_memory_roof", "fraction_of_compute_roof",
                "sensitivity", "cachesim_intensity"):
        t[col] = [rows[k][col] for k in t.index]
    t["disagreements"] = ["; ".join(rows[k]["disagreements"]) for k in t.index]
    return t


def step_verdict(kernels, label, evidence):
    """The step's combined verdict from a classify_table() table (with a share column).

    evidence: the sources present, e.g. ["roofline (traffic model)", "sensitivity"]. Returns
    {"line", "verdict", "shares": {label: share}, "decided_by": {source: share}, "disagreements"}."""
    shares = {lab: float(kernels.loc[kernels["verdict"] == lab, "share"].sum()) for lab in LABELS}
    top = max(shares, key=shares.get)
    verdict = top if shares[top] > STEP_MAJORITY else "mixed"
    decided = {}
    for src, share in zip(kernels["decided_by"], kernels["share"]):
        decided[src] = decided.get(src, 0.0) + float(share)
    disagree = [f"{k} ({d})" for k, d in zip(kernels.index, kernels["disagreements"]) if d]
    text = ", ".join(f"{lab} {shares[lab]:.0%}" for lab in LABELS)
    by = ", ".join(f"{src} {s:.0%}" for src, s in sorted(decided.items(), key=lambda kv: -kv[1]))
    line = (f"{label}: combined verdict: {verdict if verdict == 'mixed' else verdict + ' bound'} "
            f"(step time by label: {text}; decided by: {by}; evidence: {', '.join(evidence)}"
            + (f"; sources disagree on {len(disagree)} kernel(s): {'; '.join(disagree)}" if disagree
               else "; no source disagrees") + ")")
    return {"line": line, "verdict": verdict, "shares": shares, "decided_by": decided, "disagreements": disagree}
