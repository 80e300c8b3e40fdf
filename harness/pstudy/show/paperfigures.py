"""Figures for a paper (`perfstudy report --figures paper`): the step's speedup, efficiency,
time by phase, ratio to fork-join and BATCH_SUBSIZE compared, per build, and each roofline, as
vector PDF one column wide (8.5 cm) in one style, each beside the CSV of the data it was drawn
from (same name, .csv), under plots/<results name>/paper/. No title and no notes on them: the
paper's caption says what the screen figures write on theirs; the points are named as the terminal
names them ("taskiter bs=4 k=64")."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from pstudy.analyse import findings  # noqa: E402
from pstudy.analyse import roofline as rl  # noqa: E402
from pstudy.show import plots, rooflinefigures  # noqa: E402
from pstudy.store import resultsdir, vocabulary  # noqa: E402

DIR = "paper"
WIDTH_IN = 8.5 / 2.54  # one column of a two-column paper
AXES_AREA_IN = 2.2  # the axes with their ticks and labels; the legend below adds its own height
# one style for every figure: print sizes (7 pt text, 6 pt ticks and legends, nothing under 6 pt),
# thin lines, fonts embedded as TrueType so that the PDF's text stays text
STYLE = {"font.size": 7, "axes.labelsize": 7, "axes.titlesize": 7, "legend.fontsize": 6,
         "xtick.labelsize": 6, "ytick.labelsize": 6, "lines.linewidth": 1.0, "lines.markersize": 3,
         "axes.linewidth": 0.6, "grid.linewidth": 0.4, "grid.alpha": 0.4, "xtick.major.width": 0.6,
         "ytick.major.width": 0.6, "errorbar.capsize": 1.5, "legend.frameon": False,
         "legend.handlelength": 2.2, "pdf.fonttype": 42, "font.family": "DejaVu Sans"}
SMALLEST_FONT_PT = 6
LINESTYLES = ["-", "--", ":", "-."]


def write_all(summary, roof_results, outdir):
    """Every paper figure and its CSV under outdir/paper/; returns the PDFs' paths."""
    target = outdir / DIR
    target.mkdir(parents=True, exist_ok=True)
    with plt.rc_context(STYLE):
        return [save(fig, data, target / f"{name}.pdf") for name, fig, data in figures(summary, roof_results)]


def figures(summary, roof_results):
    """(name, figure, its data) of every paper figure, one at a time (drawn in STYLE's context)."""
    summary = summary[summary["n_steps"].fillna(0) > 0]
    for (compiler, kernels), build in summary.groupby(["compiler", "kernels"], sort=True):
        tag = f"{compiler}-{kernels}"
        base = plots.SEQ if ((build["variant"] == plots.SEQ) & (build["threads"] == 1)).any() else "self1"
        has_chunked = build["variant"].isin(plots.CHUNKED).any()
        yield (f"speedup_{tag}", *threads_figure(build, f"speedup-vs-{base}", f"step speedup vs {base_text(base)}"))
        yield (f"efficiency_{tag}", *threads_figure(build, f"efficiency-vs-{base}",
                                                    f"step efficiency vs {base_text(base)}"))
        yield (f"runtime-by-phase_{tag}", *phases_figure(build))
        if has_chunked and (build["variant"] == plots.FORKJOIN).any():
            yield (f"vs-forkjoin_{tag}", *threads_figure(build, "vs-forkjoin", "forkjoin time / time"))
        if has_chunked:
            yield (f"batch-subsize_{tag}", *subsize_figure(build, base))
    for result in roof_results:
        for one in result[rl.FIGURE_INPUTS]["rooflines"]:
            fig = rooflinefigures.roofline_figure(one["kernels"], one["roof"], size=(WIDTH_IN, 2.9),
                                                  fontsize=SMALLEST_FONT_PT, legend_below=True)
            kernel_set = f"_{result['analyses'][0]['kernels']}" if len(roof_results) > 1 else ""
            yield f"{one['path'].stem}{kernel_set}", fig, roofline_data(one["kernels"], one["roof"], fig)


def base_text(base):
    return f"{plots.SEQ} on 1 thread" if base == plots.SEQ else "its own 1-thread time"


def save(fig, data, path):
    resultsdir.atomic_savefig(fig, path)
    plt.close(fig)
    resultsdir.write_csv(path.with_suffix(".csv"), data)
    return path


def lines(build):
    """(name, variant, rows) of each line against threads: one per variant and chunking, in the
    registry's order; seq only where it ran on more than one thread count."""
    keys = ["variant"] + [c for c in (*vocabulary.CHUNK_KEYS, "ranks", "starpu_sched", *vocabulary.DISTRIBUTED_KEYS)
                          if c in build.columns]
    out = []
    for _, rows in build.groupby(keys, sort=False, dropna=False):
        first = rows.iloc[0]
        out.append((findings.point_name(first), first["variant"], rows.sort_values("threads")))
    return sorted(out, key=lambda line: (vocabulary.variant_order(line[1]), line[0]))


def legend_below(fig, ax, area_in=AXES_AREA_IN, columns=2):
    """The axes' legend under them, the figure made as much taller as the legend is: it covers no
    line, and the axes keep their size whatever the number of lines."""
    handles, labels = ax.get_legend_handles_labels()
    legend = fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.01), ncol=columns,
                        borderaxespad=0)
    height_in = legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi + 0.05
    fig.set_figheight(area_in + height_in)
    fig.tight_layout(pad=0.3, rect=(0, height_in / (area_in + height_in), 1, 1))


def threads_figure(build, kind, ylabel):
    """One line a variant and chunking against threads, with its 95% interval; kind: plots.values'."""
    drawn = [line for line in lines(build) if not (line[1] == plots.SEQ and kind != "runtime")]
    fig, ax = plt.subplots(figsize=(WIDTH_IN, AXES_AREA_IN))
    chunkings = sorted({name.split(" ", 1)[1] for name, _, _ in drawn if " " in name})
    style_of = {c: LINESTYLES[i % len(LINESTYLES)] for i, c in enumerate(chunkings)}
    max_threads = int(build["threads"].max())
    data = []
    for i, (name, variant, rows) in enumerate(drawn):
        x, y, lo, hi, _ = plots.values(kind, "step", rows, name, build)
        if x is None or not len(x) or np.all(np.isnan(y)):
            continue
        color, marker = vocabulary.variant_style(variant)
        dodge = (i - (len(drawn) - 1) / 2) * 0.01 * max_threads  # keeps the error bars apart
        ax.errorbar(x + dodge, y, yerr=np.nan_to_num(np.vstack([np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)])),
                    label=name, color=color, marker=marker, linestyle=style_of.get(name.partition(" ")[2], "-"))
        data += [{"point": name, "threads": int(t), "value": v, "ci_low": a, "ci_high": b}
                 for t, v, a, b in zip(x, y, lo, hi)]
    if kind.startswith("speedup"):
        ax.plot([1, max_threads], [1, max_threads], color="grey", linestyle="--", linewidth=0.8, label="ideal")
    else:
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8,
                   label="same as forkjoin" if kind == "vs-forkjoin" else "ideal")
    ax.set_xlabel("threads")
    ax.set_ylabel(ylabel)
    ax.set_xticks(sorted(int(t) for t in build["threads"].unique()))
    ax.grid(True)
    legend_below(fig, ax)
    return fig, pd.DataFrame(data, columns=["point", "threads", "value", "ci_low", "ci_high"]).assign(
        measure=kind)


def phases_figure(build):
    """The step's median time split into forward, backward and update: seq on 1 thread, then every
    point at the largest thread count, one bar each."""
    top = int(build["threads"].max())
    rows = build[((build["variant"] == plots.SEQ) & (build["threads"] == 1)) | (build["threads"] == top)]
    rows = rows.assign(name=[f"{findings.point_name(r)}, {int(r['threads'])} thr" for _, r in rows.iterrows()],
                       order=[vocabulary.variant_order(v) for v in rows["variant"]])
    rows = rows.sort_values(["order", "name"], ascending=False)  # barh draws the first at the bottom
    phases = [p for p in ("forward", "backward", "update") if f"{p}_median_s" in rows.columns]
    area_in = 0.45 + 0.16 * len(rows)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, area_in))
    left = np.zeros(len(rows))
    colors = {"forward": "tab:blue", "backward": "tab:orange", "update": "tab:green"}
    for phase in phases:
        width = rows[f"{phase}_median_s"].to_numpy(dtype=float)
        ax.barh(rows["name"], np.nan_to_num(width), left=left, height=0.7, color=colors[phase], label=phase)
        left += np.nan_to_num(width)
    ax.set_xlabel("median time per training step [s]")
    ax.tick_params(axis="y", length=0)
    ax.grid(True, axis="x")
    legend_below(fig, ax, area_in, columns=len(phases))
    data = rows[["name", "threads", *(f"{p}_median_s" for p in phases), "step_median_s"]].rename(
        columns={"name": "point"})
    return fig, data.iloc[::-1]


def subsize_figure(build, base):
    """BATCH_SUBSIZE compared: the step's speedup at the largest thread count against BATCH_SUBSIZE,
    one line per chunked variant and the rest of its chunking, forkjoin as a level."""
    top = int(build["threads"].max())
    at_top = build[build["threads"] == top]
    chunked = at_top[at_top["variant"].isin(plots.CHUNKED)]
    subsizes = sorted(chunked["batch_subsize"].dropna().unique(), key=lambda v: (v == vocabulary.AUTO, v))
    column = f"speedup_vs_{base}"
    groups = []
    rest_keys = [c for c in vocabulary.CHUNK_KEYS if c != "batch_subsize" and c in chunked.columns]
    for _, rows in chunked.groupby(["variant", *rest_keys], sort=False, dropna=False):
        first = rows.iloc[0]
        rest = findings.point_name(first).replace(f" bs={vocabulary.chunk_text(first['batch_subsize'])}", "")
        groups.append((rest, first["variant"], rows))
    groups.sort(key=lambda g: (vocabulary.variant_order(g[1]), g[0]))
    fig, ax = plt.subplots(figsize=(WIDTH_IN, AXES_AREA_IN))
    position = {bs: i for i, bs in enumerate(subsizes)}
    data = []
    for i, (name, variant, rows) in enumerate(groups):
        rows = rows.assign(at=[position[bs] for bs in rows["batch_subsize"]]).sort_values("at")
        y = rows[column].to_numpy(dtype=float)
        lo, hi = (rows[f"{column}_ci_{q}"].to_numpy(dtype=float) for q in ("low", "high"))
        color, marker = vocabulary.variant_style(variant)
        dodge = (i - (len(groups) - 1) / 2) * 0.03
        ax.errorbar(rows["at"].to_numpy(dtype=float) + dodge, y, label=name, color=color, marker=marker,
                    linestyle=LINESTYLES[i % len(LINESTYLES)],
                    yerr=np.nan_to_num(np.vstack([np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)])))
        data += [{"line": name, "batch_subsize": vocabulary.chunk_text(bs), "threads": top, column: v,
                  "ci_low": a, "ci_high": b} for bs, v, a, b in zip(rows["batch_subsize"], y, lo, hi)]
    forkjoin = at_top[at_top["variant"] == plots.FORKJOIN][column].dropna()
    if len(forkjoin):
        ax.axhline(float(forkjoin.iloc[0]), color=vocabulary.variant_style(plots.FORKJOIN)[0], linestyle="--",
                   linewidth=0.8, label=f"{plots.FORKJOIN} ({top} thr)")
        data.append({"line": plots.FORKJOIN, "batch_subsize": "-", "threads": top, column: float(forkjoin.iloc[0]),
                     "ci_low": math.nan, "ci_high": math.nan})
    ax.set_xticks(range(len(subsizes)), [vocabulary.chunk_text(bs) for bs in subsizes])
    ax.set_xlim(-0.4, len(subsizes) - 0.6)
    ax.set_xlabel(f"BATCH_SUBSIZE ({top} threads)")
    ax.set_ylabel(f"step speedup vs {base_text(base)}")
    ax.grid(True)
    legend_below(fig, ax)
    return fig, pd.DataFrame(data, columns=["line", "batch_subsize", "threads", column, "ci_low", "ci_high"])


def roofline_data(kernels, roof, fig):
    """The roofline's points (one row a kernel, whether the figure labels it) with the roofs they
    are drawn under."""
    cols = [c for c in ("share", "intensity", "gflops", "gbs", "fraction_of_ceiling", "verdict", "decided_by")
            if c in kernels.columns]
    data = kernels[cols].rename_axis("kernel").reset_index()
    labelled = {t.get_text().rsplit(" ", 1)[0] for ax in fig.axes for t in ax.texts
                if t.get_gid() == rooflinefigures.LABEL_GID}
    data["labelled"] = data["kernel"].isin(labelled)
    for name in ("peak_gflops", "triad_GBs", "copy_GBs", "ridge"):
        data[name] = roof[name]
    return data
