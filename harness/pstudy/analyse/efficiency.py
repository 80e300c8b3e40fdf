"""Where the time goes: POP efficiency factors from the per-chunk timestamps of the runs.

Per run (one trace, p = the run's threads; times clipped to the measured window):
  window        the measured iterations (iteration >= warm-up): the union of each iteration's
                span, from its first chunk's start to its last chunk's end. Time between two steps
                that no iteration covers (the step record being printed) is not runtime; iterations
                of taskiter overlap, and their union is one interval.
  runtime T     the window's length
  useful U_i    time thread i spends inside kernels (chunks) within the window
  parallel efficiency      PE   = avg(U) / T
  load balance             LB   = avg(U) / max(U)
  communication efficiency CommE = max(U) / T            (PE = LB x CommE)
The OpenMP split that DLB's TALP reports, from timestamps alone: every idle thread-instant
(p x T - sum U in all) is put in one class, by what the other threads do at that instant:
  scheduling     no thread is in a kernel: time in the runtime (fork, join, barrier, task creation
                 and release, the gaps between chunks)
  serialization  some thread is in a kernel but no parallel operation is under way (no operation
                 of two or more chunks has started and not yet finished): serial code
  load imbalance some thread is in a kernel inside a parallel operation: waiting for others
  With A = sum U, S, L, D those idle times, removed in the order of TALP's code (DLB
  src/talp/perf_metrics.h): serialization first, then load imbalance, then scheduling:
  OMP serialization efficiency = A / (A + S)
  OMP load balance             = (A + S) / (A + S + L)
  OMP scheduling efficiency    = (A + S + L) / (A + S + L + D)
  and their product is A / (p T) = PE.
Per point (runs of the same variant, build, threads and chunking):
  computation scalability = U_sum per step of the same variant, build and chunking on 1 thread /
                            U_sum per step of this run (in-kernel slowdown from shared caches and
                            memory bandwidth; > 1 when kernels run faster with more threads)
  global efficiency       = PE x computation scalability
  each factor: the mean over the point's runs with a 95% percentile-bootstrap interval (n >= 2
  runs; 2000 resamples of the runs, seeded): distribution-free like the order-statistic intervals
  of the step times, which need 6 values where a point has 3 runs, and, unlike a t-interval, never
  outside the range of the runs, so a factor bounded by 1 keeps its interval under 1. With 3 runs
  there are only 10 distinct resamples: the interval says how far the runs spread, not more;
  computation scalability is base / (mean useful time per step), exactly 1 on 1 thread, its
  interval from the same resampling of the runs' useful times; global efficiency is parallel
  efficiency x computation scalability of each resample.
IPC and instruction scalability need hardware counters per kernel; they are not computed.

Thread speeds (per run, beside the factors): chunks of one operation in one iteration of the same size
(sequences x tokens x columns) do the same arithmetic, so a chunk's time over the median
of those equal chunks says how fast its thread ran at that moment. A thread's relative time is the
median of that ratio over its chunks (groups of at least two chunks on two threads, whose median is
at least MIN_CHUNK_S). slowest_thread_time is the largest of them: 1.30 means one thread took 30%
longer than the typical one on the same work. Fork-join's barriers wait for that thread, so its load
balance falls where the schedule is even, and no schedule explains it: a thread whose core is
shared (a sibling hardware thread, a host placing two vCPUs on one core) or taken by something else.
A dynamic schedule gives a slow thread fewer chunks; its relative time still shows. NA on 1 thread.
"""

import math

import numpy as np

from pstudy.store import traceformats, vocabulary

KEYS = vocabulary.POINT_KEYS
FACTORS = ("parallel_efficiency", "load_balance", "communication_efficiency",
           "omp_serialization_efficiency", "omp_load_balance", "omp_scheduling_efficiency",
           "computation_scalability", "global_efficiency")
LABELS = {"global_efficiency": "Global efficiency",
          "parallel_efficiency": "  Parallel efficiency",
          "load_balance": "    Load balance",
          "communication_efficiency": "    Communication efficiency",
          "omp_serialization_efficiency": "    OMP serialization efficiency",
          "omp_load_balance": "    OMP load balance",
          "omp_scheduling_efficiency": "    OMP scheduling efficiency",
          "computation_scalability": "  Computation scalability"}
TABLE_ORDER = ("global_efficiency", "parallel_efficiency", "load_balance", "communication_efficiency",
               "omp_serialization_efficiency", "omp_load_balance", "omp_scheduling_efficiency",
               "computation_scalability")
NOTE = ("Per point: the mean over its traced runs with a 95% percentile-bootstrap interval (the runs "
        "resampled 2000 times; never outside the runs' range). Parallel "
        "efficiency = load balance x communication efficiency = OMP serialization x OMP load "
        "balance x OMP scheduling efficiency; global = parallel x computation scalability. "
        "Definitions: docs/traces.md, section POP efficiency factors.")
RUN_COLUMNS = ["runtime_s", "steps", "useful_sum_s", "useful_max_s", "serialization_s", "imbalance_s",
               "scheduling_s", "slowest_thread", "slowest_thread_time"]
# Chunks shorter than this are left out of the thread speeds: the clock reads, the runtime's own
# cost and the first touch of a cache line are a share of their time that says nothing of the thread
MIN_CHUNK_S = 200e-6
EXTENT_PAIRS = (("b0", "b1"), ("x0", "x1"), ("col0", "col1"))


def _clip(intervals, window):
    """The parts of `intervals` inside the union `window` (both sorted and merged)."""
    out = []
    for a, b in intervals:
        for wa, wb in window:
            lo, hi = max(a, wa), min(b, wb)
            if lo < hi:
                out.append((lo, hi))
    return out


def run_factors(chunks, threads, warmup=0):
    """The factors of one run from its chunks (a DataFrame with iteration, op, thread, start_s,
    end_s). Returns a dict of RUN_COLUMNS and the run-level factors (computation scalability and
    global efficiency are per point: see point_factors)."""
    threads = int(threads)
    kept = chunks[chunks["iteration"] >= warmup]
    if kept.empty:
        raise ValueError(f"no iteration after {warmup} warm-up step(s)")
    spans = kept.groupby("iteration").agg(a=("start_s", "min"), b=("end_s", "max"))
    window = traceformats.merged_intervals(zip(spans["a"], spans["b"]))
    runtime = sum(b - a for a, b in window)
    busy = []
    useful = np.zeros(max(threads, int(chunks["thread"].max()) + 1))
    for t, mine in chunks.groupby("thread"):
        merged = _clip(traceformats.merged_intervals(zip(mine["start_s"], mine["end_s"])), window)
        busy.append(merged)
        useful[int(t)] = sum(b - a for a, b in merged)
    # a parallel operation is under way while one of its chunks runs (the union of its chunks'
    # intervals, not its first start to its last end: taskiter spreads AdamW's chunks over the next
    # forward pass, and that span covered the whole step, so no idle instant of taskiter's could be
    # serialization, where tasks', cut the same way, had 9% of it)
    chunks_of_op = chunks.groupby(["iteration", "op"])["start_s"].transform("size")
    multi = chunks[chunks_of_op >= 2]
    parallel = _clip(traceformats.merged_intervals(zip(multi["start_s"], multi["end_s"])), window)
    # sweep line: at every boundary, how many threads are busy and whether a parallel op is open
    times, d_busy, d_par = [], [], []
    for merged in busy:
        for a, b in merged:
            times += [a, b]
            d_busy += [1, -1]
            d_par += [0, 0]
    for a, b in parallel:
        times += [a, b]
        d_busy += [0, 0]
        d_par += [1, -1]
    for a, b in window:
        times += [a, b]
        d_busy += [0, 0]
        d_par += [0, 0]
    order = np.argsort(times, kind="stable")
    t = np.asarray(times, dtype=float)[order]
    n_busy = np.cumsum(np.asarray(d_busy)[order])
    n_par = np.cumsum(np.asarray(d_par)[order])
    length = np.diff(t)
    mid = (t[:-1] + t[1:]) / 2
    inside = np.zeros(len(mid), dtype=bool)
    for a, b in window:
        inside |= (mid > a) & (mid < b)
    n, par = n_busy[:-1], n_par[:-1] > 0
    idle = np.clip(threads - n, 0, None) * length * inside
    scheduling = float(idle[n == 0].sum())
    serialization = float(idle[(n > 0) & ~par].sum())
    imbalance = float(idle[(n > 0) & par].sum())
    u_sum, u_max = float(useful[:threads].sum()), float(useful[:threads].max())
    u_avg = u_sum / threads
    a, s, l, d = u_sum, serialization, imbalance, scheduling
    relative = thread_times(chunks, threads, warmup)
    known = ~np.isnan(relative)
    slowest = int(np.flatnonzero(known)[np.argmax(relative[known])]) if known.any() else None
    return {
        "runtime_s": runtime, "steps": int(kept["iteration"].nunique()), "useful_sum_s": u_sum,
        "useful_max_s": u_max, "serialization_s": s, "imbalance_s": l, "scheduling_s": d,
        "slowest_thread": slowest, "slowest_thread_time": math.nan if slowest is None else float(relative[slowest]),
        "parallel_efficiency": u_avg / runtime if runtime > 0 else math.nan,
        "load_balance": u_avg / u_max if u_max > 0 else math.nan,
        "communication_efficiency": u_max / runtime if runtime > 0 else math.nan,
        "omp_serialization_efficiency": a / (a + s) if a + s > 0 else math.nan,
        "omp_load_balance": (a + s) / (a + s + l) if a + s + l > 0 else math.nan,
        "omp_scheduling_efficiency": (a + s + l) / (a + s + l + d) if a + s + l + d > 0 else math.nan,
    }


def thread_times(chunks, threads, warmup=0):
    """Per thread 0..threads-1, the median over its chunks of (chunk time / the median time of the
    equal chunks of the same operation and iteration); NaN for a thread with no such chunk (module
    docstring, "Thread speeds")."""
    kept = chunks[chunks["iteration"] >= warmup]
    out = np.full(int(threads), np.nan)
    if kept.empty or threads < 2:
        return out
    duration = kept["end_s"] - kept["start_s"]
    # the size of each chunk along each dimension (sequences, tokens, columns), not where it lies
    sizes = [kept[hi] - kept[lo] for lo, hi in EXTENT_PAIRS if lo in kept.columns and hi in kept.columns]
    group = [kept["iteration"], kept["op"], *sizes]
    median = duration.groupby(group).transform("median")
    size = duration.groupby(group).transform("size")
    spread = kept["thread"].groupby(group).transform("nunique")
    use = (size >= 2) & (spread >= 2) & (median >= MIN_CHUNK_S)
    relative = (duration[use] / median[use]).groupby(kept.loc[use, "thread"]).median()
    for t, r in relative.items():
        if 0 <= int(t) < threads:
            out[int(t)] = float(r)
    return out


def with_scalability(runs):
    """Adds computation_scalability and global_efficiency to a per-run table (one row per run, the
    point keys, useful_sum_s and steps): against the mean useful time per step of the runs of the
    same variant, build and chunking on 1 thread."""
    runs = runs.copy()
    for col in vocabulary.OPTIONAL_KEYS:  # a table made without a newer point key: NA
        if col not in runs.columns:
            runs[col] = None
    per_step = runs["useful_sum_s"] / runs["steps"]
    runs["useful_per_step_s"] = per_step
    base_keys = [k for k in KEYS if k != "threads"]
    one = runs[runs["threads"] == 1]
    base = {}
    for key, rows in one.groupby(base_keys, dropna=False):
        base[tuple(None if _na(v) else v for v in key)] = float((rows["useful_sum_s"] / rows["steps"]).mean())
    keys = [tuple(None if _na(v) else v for v in row) for row in runs[base_keys].itertuples(index=False)]
    runs["computation_scalability"] = [base.get(k, math.nan) / u for k, u in zip(keys, per_step)]
    runs["global_efficiency"] = runs["parallel_efficiency"] * runs["computation_scalability"]
    return runs


def _na(v):
    return v is None or (isinstance(v, float) and math.isnan(v)) or str(v) in ("<NA>", "nan")


BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0  # the same intervals at every report of the same runs


def bootstrap_ci(columns, statistic, confidence=0.95, resamples=BOOTSTRAP_RESAMPLES):
    """(statistic, low, high): `statistic` of the runs and its percentile-bootstrap interval.

    columns: equal-length arrays, one value per run; statistic(*resampled columns) takes arrays of
    shape (resamples, n) and returns one value per row. Runs are resampled with replacement
    together (the same runs in every column), seeded. A mean of values in [0, 1] stays in [0, 1]:
    every resample's mean lies between the smallest and the largest run. NaN bounds with fewer than
    2 runs."""
    columns = [np.asarray(c, dtype=float) for c in columns]
    n = len(columns[0])
    if n == 0:
        return math.nan, math.nan, math.nan
    centre = float(statistic(*(c[np.newaxis, :] for c in columns))[0])
    if n < 2:
        return centre, math.nan, math.nan
    picks = np.random.default_rng(BOOTSTRAP_SEED).integers(0, n, size=(resamples, n))
    values = statistic(*(c[picks] for c in columns))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return centre, float(low), float(high)


def _mean(x):
    return x.mean(axis=1)


def point_factors(runs):
    """One row per point: n_runs, each factor's mean with its 95% interval (FACTOR, FACTOR_ci_low,
    FACTOR_ci_high), runtime and useful time per step, and the idle shares."""
    import pandas as pd

    rows = []
    for key, group in runs.groupby(KEYS, dropna=False, sort=True):
        row = dict(zip(KEYS, key))
        row["n_runs"] = len(group)
        for factor in FACTORS[:6]:
            row[factor], row[f"{factor}_ci_low"], row[f"{factor}_ci_high"] = \
                bootstrap_ci([group[factor].dropna()], _mean)
        # computation scalability: base / mean useful time, so that a 1-thread point is exactly 1
        # (the runs hold base / their own useful time); global efficiency: parallel efficiency x
        # computation scalability, both of the same resampled runs
        both = group[["parallel_efficiency", "computation_scalability"]].dropna()
        inverse = 1 / both["computation_scalability"].to_numpy(dtype=float)
        row["computation_scalability"], row["computation_scalability_ci_low"], \
            row["computation_scalability_ci_high"] = bootstrap_ci([inverse], lambda i: 1 / i.mean(axis=1))
        row["global_efficiency"], row["global_efficiency_ci_low"], row["global_efficiency_ci_high"] = \
            bootstrap_ci([both["parallel_efficiency"], inverse], lambda pe, i: pe.mean(axis=1) / i.mean(axis=1))
        row["slowest_thread_time"] = float(group["slowest_thread_time"].mean()) \
            if "slowest_thread_time" in group and group["slowest_thread_time"].notna().any() else math.nan
        row["runtime_per_step_s"] = float((group["runtime_s"] / group["steps"]).mean())
        row["useful_per_step_s"] = float((group["useful_sum_s"] / group["steps"]).mean())
        rows.append(row)
    out = pd.DataFrame(rows)
    for col in vocabulary.OPTIONAL_KEYS:
        if col in out.columns:
            out[col] = out[col].astype(vocabulary.key_dtype(col))
    if len(out):
        out["ipc_scalability"] = "needs counters"
        out["instruction_scalability"] = "needs counters"
    return out


def representative_runs(steps):
    """{point key: repetition}: per point, the run whose median measured step time is closest to
    the point's median (ties: the lowest repetition)."""
    from pstudy.analyse.stats import measured

    kept = measured(steps)
    out = {}
    for key, group in kept.groupby(KEYS, dropna=False, sort=True):
        key = vocabulary.point_key(dict(zip(KEYS, key)))
        point_median = float(group["step_s"].median())
        per_run = group.groupby("repetition")["step_s"].median()
        distance = (per_run - point_median).abs()
        out[key] = int(distance.sort_values(kind="stable").index[0]) if len(distance) else 0
        best = distance.min()
        out[key] = int(min(r for r, d in distance.items() if d == best))
    return out


def directory_factors(directory, warmup, ok_runs=None):
    """(per-run table, per-point table) of the traces of a results directory; `ok_runs`, a set of
    (point key, repetition), limits them to successful runs. StudyError naming a trace that cannot
    be read or has no measured iteration."""
    import pandas as pd

    from pstudy.store import resultsdir, traceformats
    from pstudy.errors import StudyError

    rows = []
    for path, key, rep in resultsdir.ResultsDir(directory).traces():
        if ok_runs is not None and (key, rep) not in ok_runs:
            continue
        chunks = traceformats.read_chunks(path)
        try:
            factors = run_factors(chunks, vocabulary.workers(key), warmup)  # ranks x threads for a distributed run
        except ValueError as err:
            raise StudyError(f"{path}: {err}") from None
        rows.append({**dict(zip(KEYS, key)), "repetition": rep, **factors})
    if not rows:
        return pd.DataFrame(), pd.DataFrame()
    runs = pd.DataFrame(rows)
    for col in [*vocabulary.OPTIONAL_KEYS, "slowest_thread"]:
        runs[col] = runs[col].astype(vocabulary.key_dtype(col))
    runs = with_scalability(runs)
    return runs, point_factors(runs)


def ok_runs(runs_table):
    """{(point key, repetition)} of the successful runs of a runs table (runs.csv)."""
    ok = runs_table[runs_table["status"] == "ok"]
    return {(vocabulary.point_key(r), int(r["repetition"])) for _, r in ok.iterrows()}
