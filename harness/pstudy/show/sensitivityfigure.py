"""The bandwidth-sensitivity figures (`perfstudy sensitivity`): per point, each kernel's slowdown
beside the memory thief against the bandwidth the thief took."""

from pathlib import Path

from pstudy.store import resultsdir

FIGURE_KERNELS = 8


def draw(result, out_dir):
    """sensitivity_POINT.png in out_dir for each point of a sensitivity.analyse_directory result;
    returns the paths written."""
    slowdowns = result["slowdowns"]
    paths = []
    for point in slowdowns["point"].unique():
        path = Path(out_dir) / f"sensitivity_{point}.png"
        figure(slowdowns[slowdowns["point"] == point], result["kernels_by_time"][point][:FIGURE_KERNELS], point,
               result["meta"], path)
        paths.append(path)
    return paths


def figure(slowdowns, kernels, point, meta, path):
    """One point's figure: each kernel's mean slowdown and its interval against the bandwidth the
    thief took, solid for the DRAM thief, dashed for the cache thief."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    colors = plt.get_cmap("tab10")
    for i, k in enumerate(kernels):
        for mode, ls, marker in (("dram", "-", "o"), ("cache", "--", "^")):
            d = slowdowns[(slowdowns["kernel"] == k) & (slowdowns["mode"] == mode)].sort_values("duty")
            if d.empty:
                continue
            xs = [0.0] + list(d["stolen_GBs"])
            ys = [0.0] + [100 * v for v in d["slowdown"]]
            err_lo = [0.0] + [100 * (v - lo) if lo == lo else 0 for v, lo in zip(d["slowdown"], d["low"])]
            err_hi = [0.0] + [100 * (hi - v) if hi == hi else 0 for v, hi in zip(d["slowdown"], d["high"])]
            ax.errorbar(xs, ys, yerr=[err_lo, err_hi], color=colors(i % 10), ls=ls, marker=marker, capsize=2,
                        label=k if mode == "dram" else None)
    means = [100 * v for v in slowdowns[slowdowns["kernel"].isin(kernels)]["slowdown"] if v == v]
    if means:  # the means decide the scale; an interval wider than that is drawn clipped
        span = max(5.0, max(abs(m) for m in means))
        ax.set_ylim(-1.5 * span, 1.5 * span)
    ax.axhline(0, color="black", lw=0.5)
    ax.set_xlabel("bandwidth taken by the thief [GB/s] (its own measurement)")
    ax.set_ylabel("kernel slowdown vs no thief [%]")
    ax.set_title(f"Bandwidth sensitivity: {point}")
    ax.grid(True, lw=0.3, alpha=0.5)
    ax.legend(fontsize=7, loc="upper left")
    place = meta.get("placement", {}).get(point) or {}
    fig.text(0.01, 0.01, f"solid: DRAM thief (8x LLC), dashed: cache thief (3/4 LLC); step on cpus "
             f"{place.get('step')}, thief on {place.get('thieves')}; {meta.get('repetitions')} paired repetitions, "
             f"mean and 95% t-interval (clipped to the means' scale)", fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    resultsdir.atomic_savefig(fig, path, dpi=120)
    plt.close(fig)
