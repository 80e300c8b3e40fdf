"""Figures drawn from the traces (matplotlib, Agg): timelines, efficiency factors, traffic lights.

  timelines_<build>.png        per variant at the sweep's largest thread count (its fastest chunking),
                               the representative run's middle measured iteration (two for variants
                               whose iterations overlap, vocabulary.OVERLAPPING_ITERATIONS) as a
                               per-thread Gantt chart: kernels coloured by kind, idle time black,
                               the start of each phase a dashed white line, one time axis for all
  efficiency-factors_<build>.png  each POP factor against threads, one line per variant and chunking,
                               error bars = the 95% intervals of efficiency.csv
  efficiency-traffic-light_<build>.png  the POP table at the largest thread count, cells green
                               (>= 0.8), amber (>= 0.6) or red
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from pstudy.store import resultsdir, traceformats, vocabulary  # noqa: E402
from pstudy.analyse import efficiency  # noqa: E402

PHASE_STYLES = {"forward": "--", "backward": "-.", "update": ":"}


def kind_colours(kinds):
    """One colour per kernel kind: tab20's twenty, then tab20b's (a step of the chunked variants
    has 20 kinds with its pack operations, gpt2-mpi's one more: comm)."""
    palette = [plt.get_cmap("tab20")(i) for i in range(20)] + [plt.get_cmap("tab20b")(i) for i in range(20)]
    return {k: palette[i % len(palette)] for i, k in enumerate(sorted(kinds))}


def timeline_runs(directory, summary, steps):
    """{build: [(variant, point key, repetition, trace path)]} for the timelines: per build and
    variant, at the largest thread count, the fastest chunking's representative run."""
    reps = efficiency.representative_runs(steps)
    traces = {(key, rep): path for path, key, rep in resultsdir.ResultsDir(directory).traces()}
    out = {}
    ok = summary[summary["n_steps"].fillna(0) > 0]
    for (compiler, kernels), build in ok.groupby(["compiler", "kernels"], sort=True):
        top = build[build["threads"] == build["threads"].max()]
        chosen = []
        for variant in sorted(set(top["variant"]), key=vocabulary.variant_order):
            rows = top[top["variant"] == variant].sort_values("step_median_s")
            for _, r in rows.iterrows():
                key = vocabulary.point_key(r)
                if key in reps and (key, reps[key]) in traces:
                    chosen.append((variant, key, reps[key], traces[(key, reps[key])]))
                    break
        if chosen:
            out[f"{compiler}-{kernels}"] = chosen
    return out


def steady_window(chunks, variant, warmup):
    """(start, end, iterations) of the timeline: the middle measured iteration, and the next one
    too for variants whose iterations overlap."""
    its = sorted(i for i in set(chunks["iteration"]) if i >= warmup) or sorted(set(chunks["iteration"]))
    count = 2 if variant in vocabulary.OVERLAPPING_ITERATIONS else 1
    mid = max(0, min(len(its) // 2, len(its) - count)) if len(its) >= count else 0
    chosen = its[mid:mid + count]
    sel = chunks[chunks["iteration"].isin(chosen)]
    return float(sel["start_s"].min()), float(sel["end_s"].max()), chosen


def draw_timelines(runs, warmup, path, title=""):
    """One figure, a panel per variant: the chosen runs' steady-state timelines on one time axis."""
    loaded = []
    for variant, key, rep, trace_path in runs:
        chunks = traceformats.read_chunks(trace_path)
        a, b, its = steady_window(chunks, variant, warmup)
        loaded.append((variant, key, rep, chunks, a, b, its))
    kinds = set()
    for *_, chunks, a, b, _its in loaded:
        kinds |= set(chunks.loc[(chunks["end_s"] > a) & (chunks["start_s"] < b), "kernel"].astype(str))
    colours = kind_colours(kinds)
    span_ms = max((b - a) for *_, a, b, _ in loaded) * 1e3
    heights = [max(key.threads, 1) * 0.45 + 0.9 for _, key, *_ in loaded]
    fig, axes = plt.subplots(len(loaded), 1, figsize=(13, sum(heights) + 1.6), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (variant, key, rep, chunks, a, b, its) in zip(axes[:, 0], loaded):
        threads = max(key.threads, int(chunks["thread"].max()) + 1)
        ax.set_facecolor("white")
        for t in range(threads):
            ax.broken_barh([(0, (b - a) * 1e3)], (t - 0.4, 0.8), facecolors="black")
        inside = chunks[(chunks["end_s"] > a) & (chunks["start_s"] < b)]
        for kind, rows in inside.groupby("kernel"):
            for second, part in rows.groupby(rows["iteration"] == (its[1] if len(its) > 1 else -1)):
                bars = [((max(s, a) - a) * 1e3, (min(e, b) - max(s, a)) * 1e3)
                        for s, e in zip(part["start_s"], part["end_s"])]
                for t in sorted(set(part["thread"])):
                    mine = [bar for bar, th in zip(bars, part["thread"]) if th == t]
                    ax.broken_barh(mine, (t - 0.4, 0.8), facecolors=colours[str(kind)], linewidth=0,
                                   hatch="///" if second else None, edgecolor="white" if second else None)
        for it in its:
            mine = chunks[chunks["iteration"] == it]
            for phase, style in PHASE_STYLES.items():
                rows = mine[mine["phase"] == phase]
                if len(rows):
                    x = (float(rows["start_s"].min()) - a) * 1e3
                    if 0 <= x <= (b - a) * 1e3:
                        ax.axvline(x, color="white" if len(its) == 1 else "grey", linestyle=style, linewidth=1.2)
                        ax.text(x, threads - 0.45, f" {phase[:3]}" + (f" it{it}" if len(its) > 1 else ""),
                                fontsize=7, va="bottom", color="dimgray")
        ax.set_yticks(range(threads))
        ax.set_yticklabels([f"thread {t}" for t in range(threads)], fontsize=8)
        ax.set_ylim(-0.6, threads - 0.4 + 0.5)
        ax.invert_yaxis()
        its_text = f"iteration{'s' if len(its) > 1 else ''} {', '.join(map(str, its))}"
        ax.set_title(f"{vocabulary.point_label(key)}, rep {rep}, {its_text}: {(b - a) * 1e3:.2f} ms"
                     + ("  (second iteration hatched)" if len(its) > 1 else ""), fontsize=9, loc="left")
    axes[-1, 0].set_xlim(0, span_ms * 1.01)
    axes[-1, 0].set_xlabel("time from the start of the shown iteration [ms] (same axis for every variant)")
    handles = [Patch(color=c, label=k) for k, c in sorted(colours.items())] + [Patch(color="black", label="idle")]
    fig.legend(handles=handles, loc="lower center", ncol=min(7, len(handles)), fontsize=7, frameon=False)
    fig.suptitle(f"One steady-state iteration per variant — {title}", fontsize=11)
    fig.tight_layout(rect=(0, 0.02 + 0.018 * math.ceil(len(handles) / 7), 1, 0.97))
    resultsdir.atomic_savefig(fig, path, dpi=100)
    plt.close(fig)
    return path


def point_series(points):
    """(label, variant, rows) per variant and chunking."""
    out = []
    for col in ("ranks",) + vocabulary.TILE_KEYS:  # tables from before these keys
        if col not in points.columns:
            points = points.assign(**{col: None})
    keys = [k for k in vocabulary.SERIES_KEYS if k in points.columns]
    for key, rows in points.groupby(keys, dropna=False, sort=False):
        series = dict(zip(keys, key))
        out.append((vocabulary.series_name(series), series["variant"], rows.sort_values("threads")))
    out.sort(key=lambda s: (vocabulary.variant_order(s[1]), s[0]))
    return out


def draw_factors(points, path, title=""):
    """Each factor against threads, a panel per factor."""
    factors = efficiency.TABLE_ORDER
    fig, axes = plt.subplots(2, 4, figsize=(15, 7.5), sharex=True)
    series = point_series(points)
    for ax, factor in zip(axes.flat, factors):
        for i, (label, variant, rows) in enumerate(series):
            color, marker = vocabulary.variant_style(variant)
            x = rows["threads"].to_numpy(dtype=float) + (i - len(series) / 2) * 0.02
            y = rows[factor].to_numpy(dtype=float)
            lo = np.nan_to_num(y - rows[f"{factor}_ci_low"].to_numpy(dtype=float), nan=0, posinf=0)
            hi = np.nan_to_num(rows[f"{factor}_ci_high"].to_numpy(dtype=float) - y, nan=0, posinf=0)
            ax.errorbar(x, y, yerr=np.vstack([np.clip(lo, 0, None), np.clip(hi, 0, None)]), color=color,
                        marker=marker, label=label, capsize=2, linewidth=1.1, markersize=4)
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
        ax.set_title(efficiency.LABELS[factor].strip(), fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.set_xticks(sorted(points["threads"].unique()))
    for ax in axes[-1]:
        ax.set_xlabel("threads")
    axes[0, 0].legend(fontsize=6, loc="lower left")
    fig.suptitle(f"POP efficiency factors from the traces (mean of runs, 95% t-intervals) — {title}", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    resultsdir.atomic_savefig(fig, path, dpi=100)
    plt.close(fig)
    return path


def traffic_colour(v):
    if v != v:
        return "#dddddd"
    return "#63be7b" if v >= 0.8 else "#ffeb84" if v >= 0.6 else "#f8696b"


def draw_traffic_light(points, path, title=""):
    """The POP table at the largest thread count: factors down, points across."""
    top = points[points["threads"] == points["threads"].max()]
    series = point_series(top)
    columns = [label for label, _, _ in series]
    cells, colours = [], []
    for factor in efficiency.TABLE_ORDER:
        values = [float(rows[factor].iloc[0]) for _, _, rows in series]
        cells.append([f"{v:.2f}" if v == v else "n/a" for v in values])
        colours.append([traffic_colour(v) for v in values])
    fig, ax = plt.subplots(figsize=(2.2 + 1.15 * len(columns), 0.4 * len(cells) + 1.4))
    ax.axis("off")
    table = ax.table(cellText=cells, cellColours=colours, rowLabels=[efficiency.LABELS[f] for f in efficiency.TABLE_ORDER],
                     colLabels=columns, loc="center", cellLoc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    table.scale(1, 1.3)
    ax.set_title(f"POP metrics at {int(points['threads'].max())} threads (green >= 0.8, amber >= 0.6, red < 0.6) "
                 f"— {title}", fontsize=9)
    fig.tight_layout()
    resultsdir.atomic_savefig(fig, path, dpi=100)
    plt.close(fig)
    return path
