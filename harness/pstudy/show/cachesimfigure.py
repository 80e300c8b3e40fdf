"""The simulated cache traffic's figure (`perfstudy cachesim`): each kernel's simulated DRAM bytes
over the traffic model's compulsory bytes, one bar per compiler and kernel set."""

import math
from pathlib import Path

from pstudy.measure import cachesim
from pstudy.store import resultsdir


def draw(tables, meta, out_dir):
    """cachesim_ratio.png in out_dir: simulated / compulsory bytes per kernel, one bar per (compiler,
    kernel set), from the tables and record cachesim.ratio_tables reads. Returns its path, or None
    where there is nothing to draw."""
    if not tables or meta is None:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernels = list(dict.fromkeys(k for t in tables.values() for k in t["kernel"]))
    fig, ax = plt.subplots(figsize=(9, 5))
    width = 0.8 / len(tables)
    for i, (name, t) in enumerate(tables.items()):
        ratio = dict(zip(t["kernel"], t["ratio"]))
        ax.bar([j + i * width for j in range(len(kernels))], [ratio.get(k, math.nan) for k in kernels], width,
               label=name)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks([j + width * (len(tables) - 1) / 2 for j in range(len(kernels))])
    ax.set_xticklabels(kernels, rotation=60, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("simulated DRAM bytes / traffic model's compulsory bytes")
    ax.set_title("Simulated cache traffic against the traffic model (SIMULATED, not measured)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", lw=0.3, alpha=0.5)
    fig.text(0.01, 0.01, cachesim.note(meta) + f"; {meta.get('bytes', '')}", fontsize=6.5, va="bottom", wrap=True)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    path = Path(out_dir) / "cachesim_ratio.png"
    resultsdir.atomic_savefig(fig, path, dpi=120)
    plt.close(fig)
    return path
