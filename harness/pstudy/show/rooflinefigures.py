"""The roofline analysis's figures (`perfstudy roofline`, `perfstudy report`): the kernels against
the machine's roofs, and the memory-bound kernels' achieved bandwidth against threads."""

import math

from pstudy.analyse import roofline as rl
from pstudy.analyse import verdict
from pstudy.store import resultsdir


def draw(summary):
    """Every figure of a roofline.analyse summary (none where it ran without figures); returns the
    paths written."""
    inputs = summary[rl.FIGURE_INPUTS]
    written = []
    for one in inputs["rooflines"]:
        roofline(**one)
        written.append(one["path"])
    if inputs["bandwidth"] is not None:
        bandwidth(**inputs["bandwidth"])
        written.append(inputs["bandwidth"]["path"])
    return written


def roofline(kernels, roof, title, note, path):
    """Each kernel at its intensity and achieved GFLOP/s under the bandwidth and compute roofs, its
    area its share of the step, its colour its verdict. kernels: a kernel table (roofline.kernel_table,
    verdict.classify_table); roof: roofline.roofs'."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 6))
    shown = kernels[(kernels["flops"] > 0) & (kernels["bytes"] > 0) & (kernels["time_s"] > 0)]
    xs = list(shown["intensity"]) + [roof["ridge"]]
    x_lo = 10 ** math.floor(math.log10(max(min(xs) / 2, 1e-3)))
    x_hi = 10 ** math.ceil(math.log10(max(xs) * 2))
    grid = [x_lo * (x_hi / x_lo) ** (i / 200) for i in range(201)]
    ax.plot(grid, [min(roof["peak_gflops"], x * roof["triad_GBs"]) for x in grid], color="black", lw=2,
            label=f"STREAM triad {roof['triad_GBs']:.1f} GB/s, {roof['best_isa']} peak "
                  f"{roof['peak_gflops']:.0f} GFLOP/s")
    ax.plot(grid, [min(roof["peak_gflops"], x * roof["copy_GBs"]) for x in grid], color="gray", ls="--", lw=1,
            label=f"STREAM copy {roof['copy_GBs']:.1f} GB/s")
    for isa, g in sorted(roof["isa_gflops"].items(), key=lambda kv: -kv[1]):
        if isa == roof["best_isa"]:
            continue
        start = g / roof["triad_GBs"]
        ax.plot([start, x_hi], [g, g], color="gray", ls=":", lw=1)
        ax.text(start, g * 1.05, f"{isa} {g:.0f} GFLOP/s", va="bottom", ha="left", fontsize=7, color="gray")
    ax.axvline(roof["ridge"], color="gray", lw=0.5)
    ax.text(roof["ridge"], roof["peak_gflops"] * 1.15, f"ridge {roof['ridge']:.1f}", ha="center", fontsize=8)
    colors = {verdict.MEMORY: "tab:blue", verdict.COMPUTE: "tab:red", verdict.LATENCY: "tab:gray"}
    color_of = "verdict" if "verdict" in shown.columns else "bound"
    # Labels are placed greedily, largest share first, at the first vertical offset (in label
    # heights) whose box does not overlap one already placed; boxes are estimated in decades
    # from the axes' extent (about 0.027 decades per character across, one line 0.06 down).
    ys = list(shown["gflops"]) + [roof["peak_gflops"]]
    y_lo = 10 ** math.floor(math.log10(max(min(ys) / 2, 1e-4)))
    y_hi = roof["peak_gflops"] * 3
    x_dec_per_char = 0.027 * math.log10(x_hi / x_lo) / 5
    y_dec_per_line = 0.065 * math.log10(y_hi / y_lo) / 3.8
    boxes = []
    for name, row in shown.sort_values("share", ascending=False).iterrows():
        size = 30 + 1500 * row["share"]
        ax.scatter(row["intensity"], row["gflops"], s=size, color=colors[row[color_of]], alpha=0.6,
                   edgecolors="black", linewidths=0.5)
        text = f"{name} {row['share']:.0%}"
        lx, ly = math.log10(row["intensity"]) + 0.03, math.log10(row["gflops"])
        width = x_dec_per_char * len(text)
        for step in (0, -1, 1, -2, 2, -3, 3, -4, 4):
            y0 = ly + step * y_dec_per_line
            if not any(lx < bx1 and bx0 < lx + width and y0 < by1 and by0 < y0 + y_dec_per_line
                       for bx0, bx1, by0, by1 in boxes):
                break
        boxes.append((lx, lx + width, y0, y0 + y_dec_per_line))
        ax.annotate(text, (row["intensity"], row["gflops"]), fontsize=7, textcoords="offset points",
                    xytext=(6, 2 + 9.5 * step))
    hidden = kernels.index.difference(shown.index)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    ax.set_xlabel("arithmetic intensity [FLOP/byte]")
    ax.set_ylabel("achieved [GFLOP/s]")
    ax.set_title(title)
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(loc="lower right", fontsize=8)
    foot = (f"bytes: {note}; point area ~ share of step time; colour: combined verdict (blue memory, red compute, "
            f"gray latency/in-core: under {verdict.LOW_FRACTION:.0%} of both roofs)")
    if len(hidden):
        foot += f"; not drawn (no FLOPs): {', '.join(hidden)}"
    fig.text(0.01, 0.01, foot + "\n" + rl.TIME_NOTE, fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    resultsdir.atomic_savefig(fig, path, dpi=120)
    plt.close(fig)


def bandwidth(series, ceilings, title, note, path):
    """series: {kernel: [(threads, GB/s)]}; STREAM triad and copy over the thread counts measured."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    per = sorted(ceilings["per_threads"], key=lambda e: e["threads"])
    ax.plot([e["threads"] for e in per], [e["stream_GBs"]["triad"] for e in per], color="black", lw=2,
            marker="s", label="STREAM triad")
    ax.plot([e["threads"] for e in per], [e["stream_GBs"]["copy"] for e in per], color="gray", ls="--",
            marker="s", label="STREAM copy")
    colors = plt.get_cmap("tab10")
    for i, (kernel, points) in enumerate(series.items()):
        points = sorted(points)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", color=colors(i % 10), label=kernel)
    ax.set_xlabel("threads")
    ax.set_ylabel("achieved bandwidth [GB/s]")
    counts = sorted({e["threads"] for e in per} | {p[0] for pts in series.values() for p in pts})
    ax.set_xticks(counts)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.grid(True, lw=0.3, alpha=0.5)
    ax.legend(fontsize=7, loc="best")
    fig.text(0.01, 0.01, f"bytes: {note}\n{rl.TIME_NOTE}", fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    resultsdir.atomic_savefig(fig, path, dpi=120)
    plt.close(fig)
