"""What a study found, in a few facts: the fastest variant and chunking at each thread count with
its speedup and efficiency, what bounds each analysed variant (from the roofline and the combined
verdict), and which POP efficiency factor loses most. The terminal summary and the top of
report.html both show these (pstudy.show.summary, pstudy.show.htmlreport); the numbers behind them
are in summary.csv, roofline_verdict.txt and efficiency.csv."""

import math

from pstudy.store import vocabulary

SEQ = vocabulary.BASELINE

# the factors whose product is global efficiency (efficiency.py): the leaves of POP's tree
LEAF_FACTORS = ("omp_serialization_efficiency", "omp_load_balance", "omp_scheduling_efficiency",
                "computation_scalability")
FACTOR_NAMES = {"omp_serialization_efficiency": "OMP serialization efficiency",
                "omp_load_balance": "OMP load balance",
                "omp_scheduling_efficiency": "OMP scheduling efficiency",
                "computation_scalability": "computation scalability"}


# a thread whose chunks take this much longer than the others' on the same work is named in the
# findings (efficiency.thread_times): beyond the 5-10% that chunks of one operation spread by
SLOW_THREAD = 1.10
# losing_factor's fields that slow_thread_text takes, in its order
SLOW_THREAD_FIELDS = ("slow_thread", "probe_slow_thread", "probe_after_slow_thread")


def slow_thread_text(value, probe=None, after=None):
    """Words for a slowest thread's relative time (findings' "slow_thread"), "" for None; with
    `probe` and `after`, the slowest thread the peak probes right before and right after the run
    found (findings' "probe_slow_thread" and "probe_after_slow_thread", `[analysis] peak_beside`),
    which say whether the machine was uneven when the run began, became so while it ran, or was
    even at both ends."""
    if value is None:
        return ""
    text = f"; one thread took {value:.2f}x the others' time on equal work"
    if probe is None:
        return text + " (its core shared or busy)"
    if probe >= SLOW_THREAD:
        return text + (f", and the peak probe right before the run found one at {probe:.2f}x" +
                       (f" (right after it {after:.2f}x)" if after is not None else "") +
                       ": the machine's (a shared or busy core), not the schedule's")
    if after is not None and after >= SLOW_THREAD:
        return text + (f"; the peak probe right before the run found its threads within {probe:.2f}x of each "
                       f"other and the one right after it found one at {after:.2f}x: the machine's, and it "
                       "changed while the run ran")
    if after is not None:
        return text + (f"; the peak probes right before and after the run found its threads within {probe:.2f}x "
                       f"and {after:.2f}x of each other: it slowed during the run only")
    return text + (f"; the peak probe right before the run found its threads within {probe:.2f}x of each other: "
                   "it slowed during the run")


def _number(value):
    try:
        value = float(value)
    except (TypeError, ValueError):  # None, pandas' NA
        return math.nan
    return value


def chunking(row):
    """bs=4 k=64 for a chunked point, with its tile keys where it has them (vocabulary.chunking_label:
    bs=4 k=64 ts=2) and its StarPU scheduler (sched=dmda), "" otherwise (ranks=R for a distributed one,
    and the knobs its sweep set: overlap=on comm_threads=2)."""
    parts = []
    if _number(row.get("batch_subsize")) == _number(row.get("batch_subsize")):
        parts.append(vocabulary.chunking_label(*(_number(row.get(c)) for c in vocabulary.CHUNK_KEYS)))
    ranks = _number(row.get("ranks"))
    if ranks == ranks:
        parts.append(f"ranks={int(ranks)}")
    sched = row.get("starpu_sched")
    if isinstance(sched, str) and sched:
        parts.append(f"sched={sched}")
    parts += [f"{key}={value}" for key, value in vocabulary.distributed_settings(row).items()]
    return " ".join(parts)


def point_name(row):
    """A point as the terminal names it, its variant and its chunking: "taskiter bs=4 k=64", "forkjoin";
    a record that carries its chunking already (fastest's, bounds') is named by it."""
    words = row["chunking"] if "chunking" in row else chunking(row)
    return " ".join(part for part in (str(row["variant"]), words) if part)


def fastest(summary):
    """Per build and thread count, the point with the smallest median step time:
    [{"build", "threads", "variant", "chunking", "step_s", "speedup", "efficiency"}], in build and
    thread order. Speedup and efficiency are against seq on 1 thread where the build has it,
    against the point's own 1-thread time otherwise (`base` says which)."""
    out = []
    timed = summary.dropna(subset=["step_median_s"])
    for (compiler, kernels, threads), group in timed.groupby(["compiler", "kernels", "threads"], sort=True):
        row = group.sort_values("step_median_s", kind="stable").iloc[0]
        base = SEQ if _number(row.get("speedup_vs_seq")) == _number(row.get("speedup_vs_seq")) else "self1"
        out.append({"build": f"{compiler}/{kernels}", "threads": int(threads), "variant": row["variant"],
                    "chunking": chunking(row), "step_s": float(row["step_median_s"]),
                    "step_ci": (_number(row.get("step_ci_low_s")), _number(row.get("step_ci_high_s"))),
                    "speedup": _number(row.get(f"speedup_vs_{base}")),
                    "efficiency": _number(row.get(f"efficiency_vs_{base}")), "base": base})
    return out


def bounds(roofline_summaries):
    """One record per analysed (variant, threads) of the roofline summaries (pstudy.analyse.roofline
    .analyse's return values): {"variant", "threads", "build", "chunking", "verdict", "evidence"},
    the evidence a few words: the share of step time behind the verdict, its longest kernels, the
    step's intensity against the ridge, and the sources that disagree."""
    out = []
    for summary in roofline_summaries:
        for a in summary.get("analyses", []):
            combined = a.get("combined") or {}
            verdict = combined.get("verdict", "memory" if a.get("memory_bound") else "compute")
            shares = combined.get("shares") or {}
            kernels = [k for k in a.get("by_kernel", []) if k.get("verdict", k.get("bound")) == verdict]
            top = ", ".join(f"{k['kernel']} {k['share']:.0%}" for k in kernels[:2])
            share = shares.get(verdict)
            words = []
            if verdict == "mixed" and shares:
                words.append("step time " + ", ".join(f"{label} {s:.0%}" for label, s in
                                                      sorted(shares.items(), key=lambda kv: -kv[1])))
            elif share is not None:
                words.append(f"{share:.0%} of the step in {verdict}-bound kernels" + (f" ({top})" if top else ""))
            words.append(f"{a.get('aggregate_intensity', math.nan):.1f} FLOP/B vs ridge {a.get('ridge', math.nan):.1f}")
            n_disagree = len(combined.get("disagreements") or [])
            if n_disagree:
                words.append(f"sources disagree on {n_disagree} kernel{'s' if n_disagree > 1 else ''}")
            out.append({"variant": a["variant"], "threads": int(a["threads"]), "build": f"{a['compiler']}/{a['kernels']}",
                        # the analysis names the chunk keys as the binaries do (token_chunk for k)
                        "chunking": chunking({c: a.get(vocabulary.CHUNK_OPTIONS[c][1])
                                              for c in vocabulary.CHUNK_KEYS}),
                        "verdict": verdict if verdict == "mixed" else f"{verdict} bound",
                        "evidence": "; ".join(words)})
    return out


def probe_slowest(runs, field="peak_beside"):
    """{point key: the largest <field>_slowest_time of its probed runs} from a runs table (the probe
    right before each run, peak_beside, or right after it, peak_after: `[analysis] peak_beside`);
    empty without one."""
    column = f"{field}_slowest_time"
    if runs is None or column not in runs.columns:
        return {}
    out = {}
    for r in runs.to_dict("records"):
        value = _number(r.get(column))
        if value == value:
            key = vocabulary.point_key(r)
            out[key] = max(out.get(key, value), value)
    return out


def _team_peaks(frame):
    """{(point key, repetition, when): the whole team's peak GFLOP/s} of each probe in a
    thread_peaks table (when "before" where the table has no `when`)."""
    teams = {}
    for r in frame.to_dict("records"):
        probe = (vocabulary.point_key(r), int(r["repetition"]), r.get("when", "before"))
        teams[probe] = teams.get(probe, 0.0) + float(r["gflops"])
    return teams


def probe_drift(frame):
    """How far each run's machine moved while it ran, by its probes: (median, largest, point key and
    repetition of the largest) of |after / before - 1| of the whole team's peak GFLOP/s over the runs
    probed at both ends, from a thread_peaks table; None without such runs (records made before the
    probe after each run)."""
    import statistics

    if "when" not in frame.columns or not len(frame):
        return None
    teams = {}
    for (point, repetition, when), gflops in _team_peaks(frame).items():
        teams.setdefault((point, repetition), {})[when] = gflops
    drift = sorted((abs(t["after"] / t["before"] - 1.0), run) for run, t in teams.items()
                   if t.get("before", 0) > 0 and t.get("after", 0) > 0)
    if not drift:
        return None
    largest, (point, repetition) = drift[-1]
    return statistics.median(d for d, _ in drift), largest, point, repetition


def probes_text(frame):
    """One line on the machine as the probes beside the runs found it (`[analysis] peak_beside`;
    thread_peaks.csv's frame): each thread count's range of the whole team's peak GFLOP/s over its
    runs' probes, and how far a run's two probes were apart (probe_drift); "" without probes."""
    if frame is None or not len(frame):
        return ""
    by_threads = {}
    for (point, repetition, _), gflops in _team_peaks(frame).items():
        runs, rates = by_threads.setdefault(point.threads, (set(), []))
        runs.add((point, repetition))
        rates.append(gflops)
    parts = [f"{t} thread{'s' if t > 1 else ''} {min(rates):.0f}-{max(rates):.0f} GFLOP/s over {len(runs)} "
             f"run{'s' if len(runs) > 1 else ''}" for t, (runs, rates) in sorted(by_threads.items())]
    text = "each run's threads' peak, probed beside it: " + ", ".join(parts)
    drift = probe_drift(frame)
    if drift is not None:
        median, largest, point, repetition = drift
        text += (f"; the probe after a run {100 * median:.1f}% from the one before at the median run, "
                 f"{100 * largest:.0f}% at most ({vocabulary.point_label(point)}, repetition {repetition})")
    return text


def losing_factor(points, fastest_rows, runs=None):
    """For the fastest point at each thread count above 1 that has efficiency factors: its global
    efficiency and the leaf factor that loses most (the lowest), the slowest thread of its traces
    where one stands out, and with `runs` (runs.csv) what the probes before and after its runs found:
    [{"threads", "build", "variant", "chunking", "global", "factor", "value", "slow_thread",
    "probe_slow_thread", "probe_after_slow_thread"}]."""
    if points is None or not len(points):
        return []
    probes, probes_after = probe_slowest(runs), probe_slowest(runs, "peak_after")
    out = []
    for f in fastest_rows:
        if f["threads"] < 2:
            continue
        compiler, kernels = f["build"].split("/")
        rows = points[(points["variant"] == f["variant"]) & (points["compiler"] == compiler) &
                      (points["kernels"] == kernels) & (points["threads"] == f["threads"])]
        rows = [r for _, r in rows.iterrows() if chunking(r) == f["chunking"]]
        if not rows:
            continue
        row = rows[0]
        values = {name: _number(row.get(name)) for name in LEAF_FACTORS}
        values = {k: v for k, v in values.items() if v == v}
        if not values:
            continue
        worst = min(values, key=values.get)
        slowest = _number(row.get("slowest_thread_time"))
        out.append({"threads": f["threads"], "build": f["build"], "variant": f["variant"],
                    "chunking": f["chunking"], "global": _number(row.get("global_efficiency")),
                    "factor": FACTOR_NAMES[worst], "value": values[worst],
                    # a thread slower than the others on equal work (its core shared or busy)
                    "slow_thread": slowest if slowest >= SLOW_THREAD else None,
                    "probe_slow_thread": probes.get(vocabulary.point_key(row)),
                    "probe_after_slow_thread": probes_after.get(vocabulary.point_key(row))})
    return out


def roofline_points(summary, traced=None):
    """The (variant, threads) pairs the roofline analyses for the summary: every variant at its
    largest thread count (seq at 1), so that each variant gets its line, and the fastest variant
    at each thread count; with `traced`, a set of
    (variant, threads) that have traces, only those."""
    at = []
    timed = summary.dropna(subset=["step_median_s"])
    if traced is not None:
        timed = timed[[(v, int(t)) in traced for v, t in zip(timed["variant"], timed["threads"])]]
    for variant in dict.fromkeys(timed["variant"]):
        rows = timed[timed["variant"] == variant]
        threads = 1 if vocabulary.is_sequential(variant) else int(rows["threads"].max())
        at.append((variant, threads))
    # and the fastest point at every thread count, so that each line of the findings has its bound
    for threads, rows in timed.groupby("threads", sort=True):
        fastest_here = (rows.sort_values("step_median_s", kind="stable").iloc[0]["variant"], int(threads))
        if fastest_here not in at:
            at.append(fastest_here)
    return at
