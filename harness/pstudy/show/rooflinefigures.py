"""The roofline analysis's figures (`perfstudy roofline`, `perfstudy report`): the kernels against
the machine's roofs, and the memory-bound kernels' achieved bandwidth against threads."""

import math

from pstudy.analyse import roofline as rl
from pstudy.show import captions
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


# a kernel under this share of the step gets no label on the chart: its point is drawn, and the
# kernel table beside the chart names it (small kernels crowd one corner, and their labels pile up)
LABEL_SHARE = 0.03
LABEL_GID = "kernel-label"  # the gid of each kernel's label, for whoever checks where they were drawn
# where a label may go, in points from its kernel's centre, tried in this order: beside the point
# first; a label further off than LEADER points is tied to its point by a thin line
LABEL_OFFSETS = [(7, 0), (7, 9), (7, -9), (-7, 0), (-7, 9), (-7, -9), (0, 13), (0, -13),
                 (7, 18), (7, -18), (-7, 18), (-7, -18), (12, 27), (12, -27), (-12, 27), (-12, -27),
                 (16, 36), (16, -36), (-16, 36), (-16, -36)]
LEADER = 15
# where a lesser ISA's peak is named: above or below its level, at the right edge or further left
ISA_OFFSETS = [(-3, 5), (-3, -5), (-60, 5), (-60, -5), (-120, 5), (-120, -5)]
SCREEN_SIZE = (8, 6)


def roofline(kernels, roof, title, note, path):
    """Each kernel at its intensity and achieved GFLOP/s under the bandwidth and compute roofs, its
    area its share of the step, its colour its verdict. kernels: a kernel table (roofline.kernel_table,
    verdict.classify_table); roof: roofline.roofs'."""
    import matplotlib.pyplot as plt
    fig = roofline_figure(kernels, roof, title, note)
    resultsdir.atomic_savefig(fig, path, dpi=120)
    plt.close(fig)


def roofline_figure(kernels, roof, title=None, note=None, size=SCREEN_SIZE, fontsize=7, legend_below=False):
    """The roofline as a matplotlib figure: with `title` and `note` for the screen (the title above,
    the sources in a caption below), without for a paper (the caption is the paper's). Kernels over
    LABEL_SHARE of the step are labelled where a label overlaps no other text."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.transforms import Bbox

    fig, ax = plt.subplots(figsize=size)
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
    isas = [(f"{isa} {g:.0f} GFLOP/s", x_hi, g) for isa, g in sorted(roof["isa_gflops"].items(), key=lambda kv: -kv[1])
            if isa != roof["best_isa"]]
    for _, _, g in isas:
        ax.plot([g / roof["triad_GBs"], x_hi], [g, g], color="gray", ls=":", lw=1)
    ax.axvline(roof["ridge"], color="gray", lw=0.5)
    ridge = ax.text(roof["ridge"], roof["peak_gflops"] * 1.15, f"ridge {roof['ridge']:.1f}", ha="center",
                    fontsize=fontsize + 1)
    colors = {verdict.MEMORY: "tab:blue", verdict.COMPUTE: "tab:red", verdict.LATENCY: "tab:gray"}
    color_of = "verdict" if "verdict" in shown.columns else "bound"
    area = 1500 * (size[0] / SCREEN_SIZE[0]) ** 2  # the points' area scales with the figure
    radius = {}  # each point's radius in points: no label is drawn over a point
    for name, row in shown.sort_values("share", ascending=False).iterrows():
        size_pt2 = 0.02 * area + area * row["share"]
        radius[name] = math.sqrt(size_pt2) / 2
        ax.scatter(row["intensity"], row["gflops"], s=size_pt2, color=colors[row[color_of]],
                   alpha=0.6, edgecolors="black", linewidths=0.5)
    ys = list(shown["gflops"]) + [roof["peak_gflops"]]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(10 ** math.floor(math.log10(max(min(ys) / 2, 1e-4))), roof["peak_gflops"] * 3)
    ax.set_xlabel("arithmetic intensity [FLOP/byte]")
    ax.set_ylabel("achieved [GFLOP/s]")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    if legend_below:
        legend = ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=fontsize, frameon=False)
    else:
        legend = ax.legend(loc="lower right", fontsize=fontsize + 1)
    bottom = 0
    if title is not None:
        ax.set_title(title, fontsize=fontsize + 3)
        hidden = kernels.index.difference(shown.index)
        foot = (f"bytes: {note}; point area ~ share of step time; colour: combined verdict (blue memory, red "
                f"compute, gray latency/in-core: under {verdict.LOW_FRACTION:.0%} of both roofs); labelled: the "
                f"kernels over {LABEL_SHARE:.0%} of the step where a label fits (every kernel: the kernel table)")
        if len(hidden):
            foot += f"; not drawn (no FLOPs): {', '.join(hidden)}"
        bottom = captions.caption(fig, foot + "\n" + rl.TIME_NOTE, fontsize=fontsize)
    fig.tight_layout(rect=(0, bottom, 1, 1))  # the layout is final before the labels are placed
    renderer = fig.canvas.get_renderer()
    taken = [ridge.get_window_extent(renderer), legend.get_window_extent(renderer)]
    for name, row in shown.iterrows():
        (x, y), r = ax.transData.transform((row["intensity"], row["gflops"])), radius[name] * fig.dpi / 72
        taken.append(Bbox.from_extents(x - r, y - r, x + r, y + r))
    place_labels(ax, [(*isa, 0) for isa in isas], taken, ISA_OFFSETS, leader=None, fontsize=fontsize, color="gray")
    big = shown[shown["share"] >= LABEL_SHARE].sort_values("share", ascending=False)
    place_labels(ax, [(f"{name} {row['share']:.0%}", row["intensity"], row["gflops"], radius[name])
                      for name, row in big.iterrows()], taken, LABEL_OFFSETS, fontsize=fontsize, gid=LABEL_GID)
    return fig


def place_labels(ax, labels, taken, offsets, leader=LEADER, **style):
    """Annotate each (text, x, y, radius) at the first of `offsets` (points from the point's edge,
    `radius` points from its centre) where its text, as drawn, stays
    inside the axes and overlaps no box in `taken` (the labels placed are added to it); one further
    than `leader` points from its point is tied to it by a line. A label with no such place is left
    out (a kernel's is in the table). Returns the texts drawn."""
    renderer = ax.figure.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    drawn = []
    for text, x, y, r in labels:
        for dx, dy in offsets:
            far = leader is not None and math.hypot(dx, dy) > leader
            dx, dy = dx + math.copysign(r, dx) * (dx != 0), dy + math.copysign(r, dy) * (dy != 0)  # from its edge
            label = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", va="center",
                                ha="left" if dx > 0 else "right" if dx < 0 else "center",
                                arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "gray"} if far else None,
                                **style)
            box = text_box(label, renderer)
            if (inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1
                    and not any(box.overlaps(t) for t in taken)):
                taken.append(box)
                drawn.append(text)
                break
            label.remove()
    return drawn


def text_box(label, renderer):
    """Where an annotation's text is drawn, without its leader line (which get_window_extent adds)."""
    from matplotlib.text import Text
    label.update_positions(renderer)
    return Text.get_window_extent(label, renderer)


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
    fig.tight_layout(rect=(0, captions.caption(fig, f"bytes: {note}\n{rl.TIME_NOTE}"), 1, 1))
    resultsdir.atomic_savefig(fig, path, dpi=120)
    plt.close(fig)
