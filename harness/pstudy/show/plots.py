"""Figures of a results directory, drawn from its summary table alone (matplotlib, Agg backend).

Per compiler/kernels build and per phase (step, forward, backward), one file each of:
    runtime_<phase>_<build>              median time vs threads
    speedup-vs-seq_<phase>_<build>       speedup against seq at 1 thread, with the ideal line
    speedup-vs-self1_<phase>_<build>     speedup against the same variant and chunking at 1 thread
    efficiency-vs-seq_<phase>_<build>    speedup-vs-seq / threads
    efficiency-vs-self1_<phase>_<build>  speedup-vs-self1 / threads
    vs-forkjoin_<phase>_<build>          forkjoin time / tasks (taskiter) time at the same threads
Each figure has one panel per BATCH_SUBSIZE value of the chunked variants (seq and forkjoin, which
do not chunk, appear in every panel), one line per variant and token chunk k, error bars from the
95% confidence intervals, and its base case and base time written on it.
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

from pstudy.store import resultsdir, vocabulary  # noqa: E402
from pstudy.show import captions  # noqa: E402
from pstudy.analyse.stats import speedup_prefix  # noqa: E402

PHASES = ("step", "forward", "backward")
LINESTYLES = ["-", "--", "-.", ":"]
SEQ, FORKJOIN, CHUNKED = vocabulary.BASELINE, vocabulary.FORKJOIN, list(vocabulary.CHUNKED_VARIANTS)
CI_NOTE = ("points (shifted sideways a little to keep them apart): medians of the measured steps of all repetitions; error bars: 95% order-statistic "
           "CI of the median (ratios: interval arithmetic on the two CIs)")


def fmt_s(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.3f} s"


def draw_all(summary, meta, outdir, formats=("png", "svg")):
    """Write every figure; returns the list of files written and a list of notes on skipped ones."""
    outdir.mkdir(parents=True, exist_ok=True)
    written, notes = [], []
    summary = summary[summary["n_steps"].fillna(0) > 0]
    for (compiler, kernels), build in summary.groupby(["compiler", "kernels"], sort=True):
        tag = f"{compiler}-{kernels}"
        has_seq = ((build["variant"] == SEQ) & (build["threads"] == 1)).any()
        has_forkjoin = (build["variant"] == FORKJOIN).any()
        has_chunked = build["variant"].isin(CHUNKED).any()
        for phase in PHASES:
            kinds = ["runtime", "speedup-vs-self1", "efficiency-vs-self1"]
            if has_seq:
                kinds += ["speedup-vs-seq", "efficiency-vs-seq"]
            elif phase == "step":
                notes.append(f"{compiler}/{kernels}: no {SEQ} run at 1 thread, so no figures against {SEQ}")
            if has_forkjoin and has_chunked:
                kinds.append("vs-forkjoin")
            for kind in kinds:
                fig = figure(kind, phase, build, meta, compiler, kernels)
                for ext in formats:
                    path = outdir / f"{kind}_{phase}_{tag}.{ext}"
                    resultsdir.atomic_savefig(fig, path, dpi=110)
                    written.append(path)
                plt.close(fig)
    return written, notes


def series(build):
    """(label, variant, k, rows) for each line of a panel, per batch_subsize panel."""
    chunked = build[build["variant"].isin(CHUNKED)]
    subsizes = sorted(chunked["batch_subsize"].dropna().unique()) or [None]
    plain = build[~build["variant"].isin(CHUNKED)]
    panels = []
    for bs in subsizes:
        lines = []
        for variant, rows in plain.groupby("variant", sort=False):
            lines.append((variant, variant, None, rows.sort_values("threads")))
        if bs is not None:
            rows_bs = chunked[chunked["batch_subsize"] == bs]
            tiles = [c for c in vocabulary.TILE_KEYS if c in rows_bs.columns]  # tables from before a key: none
            for key, rows in rows_bs.groupby(["variant", "k"] + tiles, sort=True, dropna=False):
                values = dict(zip(["variant", "k"] + tiles, key))
                variant, k = values["variant"], values["k"]
                chunks = [bs, k] + [values.get(c) for c in vocabulary.TILE_KEYS]
                label = f"{variant} " + vocabulary.chunking_label(*chunks).split(" ", 1)[1]  # bs: the panel's
                lines.append((label, variant, k, rows.sort_values("threads")))
        lines.sort(key=lambda line: (vocabulary.variant_order(line[1]), line[2] or 0))
        panels.append((bs, lines))
    return panels


def figure(kind, phase, build, meta, compiler, kernels):
    panels = series(build)
    width = 5.2 * len(panels) + 0.8
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 5.4), sharey=True, squeeze=False)
    axes = axes[0]
    all_k = sorted(build["k"].dropna().unique())
    style_of_k = {k: LINESTYLES[i % len(LINESTYLES)] for i, k in enumerate(all_k)}
    max_threads = int(build["threads"].max())
    for ax, (bs, lines) in zip(axes, panels):
        for i, (label, variant, k, rows) in enumerate(lines):
            x, y, lo, hi, label = values(kind, phase, rows, label, build)
            if x is None or len(x) == 0 or np.all(np.isnan(y)):
                continue
            color, marker = vocabulary.variant_style(variant)
            if variant == SEQ and kind == "runtime":
                ax.axhline(y[0], color=color, linestyle=":", linewidth=1,
                           label=f"{SEQ}, 1 thread ({fmt_s(y[0])})")
                continue
            yerr = np.vstack([np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)])
            yerr = np.nan_to_num(yerr)
            dodge = (i - (len(lines) - 1) / 2) * 0.015 * max_threads  # keep error bars apart
            ax.errorbar(x + dodge, y, yerr=yerr, label=label, color=color, marker=marker,
                        linestyle=style_of_k.get(k, "-"), capsize=3, markersize=5, linewidth=1.3)
        if kind.startswith("speedup"):
            ideal = np.arange(1, max_threads + 1)
            ax.plot(ideal, ideal, color="grey", linestyle="--", linewidth=1, label="ideal (= threads)")
        if kind.startswith("efficiency"):
            ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="ideal (1.0)")
        if kind == "vs-forkjoin":
            ax.axhline(1.0, color=vocabulary.variant_style(FORKJOIN)[0], linestyle="--", linewidth=1,
                       label=f"same as {FORKJOIN}")
        ax.set_xlabel("threads")
        ax.set_xticks(range(1, max_threads + 1) if max_threads <= 16 else
                      sorted(build["threads"].unique()))
        ax.grid(True, alpha=0.3)
        if len(panels) > 1 or bs is not None:
            unchunked = sorted(set(build["variant"]) - set(CHUNKED), key=vocabulary.variant_order)
            ax.set_title(f"BATCH_SUBSIZE = {vocabulary.chunk_text(bs)}" + (f"  ({', '.join(unchunked)}: not chunked)"
                                                     if unchunked else ""), fontsize=9)
        # a fixed corner: loc="best" costs more than the rest of the figure together
        corner = {"runtime": "upper right", "vs-forkjoin": "lower left"}.get(
            kind, "upper left" if kind.startswith("speedup") else "lower left")
        ax.legend(fontsize=7, loc=corner)
    axes[0].set_ylabel(ylabel(kind, phase))
    base_text = base_description(kind, phase, build, compiler, kernels)
    fig.suptitle(f"{title(kind, phase)} — {compiler}/{kernels} — {meta.get('name', '')}", fontsize=11)
    fig.tight_layout(rect=(0, captions.caption(fig, base_text + "\n" + CI_NOTE), 1, 0.95))
    return fig


def values(kind, phase, rows, label, build):
    x = rows["threads"].to_numpy(dtype=float)
    if kind == "runtime":
        cols = [f"{phase}_median_s", f"{phase}_ci_low_s", f"{phase}_ci_high_s"]
        y, lo, hi = (rows[c].to_numpy(dtype=float) for c in cols)
        return x, y, lo, hi, label
    if kind == "vs-forkjoin":
        variant = rows["variant"].iloc[0]
        if variant not in CHUNKED:
            return None, None, None, None, label
        fj = build[build["variant"] == FORKJOIN].set_index("threads")
        fj_med = rows["threads"].map(fj[f"{phase}_median_s"]).to_numpy(dtype=float)
        fj_lo = rows["threads"].map(fj[f"{phase}_ci_low_s"]).to_numpy(dtype=float)
        fj_hi = rows["threads"].map(fj[f"{phase}_ci_high_s"]).to_numpy(dtype=float)
        med, lo, hi = (rows[f"{phase}_{q}"].to_numpy(dtype=float) for q in ("median_s", "ci_low_s", "ci_high_s"))
        return x, fj_med / med, fj_lo / hi, fj_hi / lo, label
    metric, base = kind.split("-vs-")
    col = f"{speedup_prefix(phase)}{metric}_vs_{base}"
    y, lo, hi = (rows[c].to_numpy(dtype=float) for c in (col, col + "_ci_low", col + "_ci_high"))
    if base == "self1":
        one = rows[rows["threads"] == 1]
        base_s = float(one[f"{phase}_median_s"].iloc[0]) if len(one) else math.nan
        label = f"{label} (1 thread: {fmt_s(base_s)})"
    return x, y, lo, hi, label


def title(kind, phase):
    return {"runtime": f"{phase} time vs threads",
            "speedup-vs-seq": f"{phase} speedup vs sequential",
            "speedup-vs-self1": f"{phase} speedup vs the same variant on 1 thread",
            "efficiency-vs-seq": f"{phase} parallel efficiency vs sequential",
            "efficiency-vs-self1": f"{phase} parallel efficiency vs the same variant on 1 thread",
            "vs-forkjoin": f"{phase}: {'/'.join(CHUNKED)} relative to {FORKJOIN}"}[kind]


def ylabel(kind, phase):
    return {"runtime": f"median {phase} time per training step [s]",
            "speedup-vs-seq": "speedup  T_seq(1) / T(p)  [×]",
            "speedup-vs-self1": "speedup  T_same(1) / T(p)  [×]",
            "efficiency-vs-seq": "efficiency  T_seq(1) / (p · T(p))",
            "efficiency-vs-self1": "efficiency  T_same(1) / (p · T(p))",
            "vs-forkjoin": "T_forkjoin(p) / T(p)   (>1: faster than fork-join)"}[kind]


def base_description(kind, phase, build, compiler, kernels):
    seq = build[(build["variant"] == SEQ) & (build["threads"] == 1)]
    if len(seq):
        r = seq.iloc[0]
        seq_text = (f"{SEQ} {compiler}/{kernels}, 1 thread: median {phase} {fmt_s(r[f'{phase}_median_s'])} "
                    f"[{fmt_s(r[f'{phase}_ci_low_s'])}, {fmt_s(r[f'{phase}_ci_high_s'])}]")
    else:
        seq_text = f"no {SEQ} run"
    if kind.endswith("vs-seq"):
        return f"base: {seq_text}"
    if kind.endswith("vs-self1"):
        return ("base: each line's own variant and chunking on 1 thread (its time in the legend); "
                f"for reference, {seq_text}")
    if kind == "vs-forkjoin":
        fj = build[build["variant"] == FORKJOIN].sort_values("threads")
        times = ", ".join(f"{int(t)} thr {fmt_s(v)}" for t, v in zip(fj["threads"], fj[f"{phase}_median_s"]))
        return f"base: {FORKJOIN} at the same thread count (median {phase}: {times})"
    return f"reference: {seq_text}"
