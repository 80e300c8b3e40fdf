"""The answer's figure (`perfstudy answer`): the speedup over seq on one thread against threads, as
the reference study plots it, and each task variant's ratio to fork-join, with the paired
intervals where a paired sweep gives them. The key sits below the panels, clear of the data."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from pstudy.store import vocabulary  # noqa: E402

LINESTYLES = {"": "-", "bs=1 k=64": "--"}


def _label(variant, chunking):
    return variant + (f" ({chunking})" if chunking else "")


def draw(sweep_rows, paired_rows, title, path):
    """sweep_rows, paired_rows: analyse/answer.py's rows. Writes `path` (PNG)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8))
    lines = {}
    for r in sweep_rows:
        lines.setdefault((r["variant"], r["chunking"]), []).append(r)
    threads = sorted({r["threads"] for r in sweep_rows})
    if threads:
        left.plot(threads, threads, color="0.6", linestyle=":", label="ideal")
    right.axhline(1.0, color="0.6", linestyle=":")
    for (variant, chunking), rows in lines.items():
        colour, marker = vocabulary.variant_style(variant)
        style = LINESTYLES.get(chunking, "-.")
        xs = [r["threads"] for r in rows]
        left.plot(xs, [r["over_seq"] for r in rows], color=colour, marker=marker, linestyle=style,
                  label=_label(variant, chunking))
        if variant != vocabulary.FORKJOIN and not vocabulary.is_sequential(variant):
            right.plot(xs, [r["over_forkjoin"] for r in rows], color=colour, marker=marker, linestyle=style)
    for r in paired_rows:
        colour, _ = vocabulary.variant_style(r["variant"])
        if math.isnan(r["low"]):
            continue
        right.errorbar([r["threads"] * 1.04], [r["estimate"]], yerr=[[r["estimate"] - r["low"]], [r["high"] - r["estimate"]]],
                       color=colour, marker="D", markersize=6, capsize=4, linestyle="none",
                       label=f"{_label(r['variant'], r['chunking'])}, paired, 95% interval")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(threads or [1])
        ax.set_xticklabels([str(t) for t in threads] or ["1"])
        ax.set_xlabel("threads")
        ax.grid(True, alpha=0.3)
    left.set_ylabel("speedup over seq on 1 thread")
    left.set_title("speedup (median step a point)")
    right.set_ylabel("forkjoin step / variant step (above 1: faster)")
    right.set_title("against fork-join at the same threads")
    handles, labels = [], []
    for ax in (left, right):
        h, l = ax.get_legend_handles_labels()
        handles += h
        labels += l
    fig.suptitle(title, fontsize=10)
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    rows_of_key = (len(labels) + 2) // 3
    fig.tight_layout(rect=(0, 0.05 + 0.045 * rows_of_key, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
