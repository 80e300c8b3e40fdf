"""The figures of `perfstudy predict`: predicted speedup, efficiency and step time against cores
with the measured points over them, and gpt2-mpi's predicted step and its parts against nodes."""

from pathlib import Path

from pstudy.analyse import chunktimes, prediction
from pstudy.store import resultsdir, vocabulary


def draw(frame, measured, out_dir, machine_name):
    """speedup, efficiency and step time against P: predicted curves (labelled "predicted") with
    the measured points of the same configurations drawn over them. frame: prediction.predict's;
    measured: {point: measured step}. Returns the paths written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    groups = {}
    for _, row in frame.iterrows():
        groups.setdefault((row["compiler"], row["kernels"], prediction.series_label(row), row["variant"]),
                          []).append(row)
    for quantity, ylabel, name in (("speedup", "speedup over 1 core", "predict_speedup"),
                                   ("efficiency", "parallel efficiency", "predict_efficiency"),
                                   ("step_s", "step time (s)", "predict_step_time")):
        fig, ax = plt.subplots(figsize=(7.5, 5))
        top = 1
        for (compiler, kernels, label, variant), rows in groups.items():
            if len(rows) < 2:
                continue
            colour, marker = vocabulary.variant_style(variant)
            xs = [int(r["threads"]) for r in rows]
            top = max(top, max(xs))
            ys = [r[f"predicted_{quantity}"] if quantity != "step_s" else r["predicted_step_s"] for r in rows]
            style = "-" if "bs=4" not in label else "--"
            ax.plot(xs, ys, style, color=colour, label=f"{label} (predicted)", linewidth=1.4)
            # measured points of the same configuration, against the measured 1-thread time
            pts = []
            for r in rows:
                ck = vocabulary.Point(variant, compiler, kernels, **{
                    c: None if (r.get(c) is None or str(r.get(c)) == "<NA>") else r.get(c)
                    for c in vocabulary.CHUNK_KEYS})
                key = chunktimes.config_point(ck, int(r["threads"]))
                m = measured.get(key)
                b = measured.get(key._replace(threads=1))
                if m is None:
                    continue
                if quantity == "step_s":
                    pts.append((key.threads, m))
                elif b is not None:
                    pts.append((key.threads, b / m if quantity == "speedup" else b / m / key.threads))
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker, color=colour, markersize=7,
                        markerfacecolor="none", linestyle="none", label=f"{label} (measured)")
        if quantity == "speedup":
            ax.plot([1, top], [1, top], ":", color="grey", label="ideal")
        ax.set_xscale("log", base=2)
        if quantity == "step_s":
            ax.set_yscale("log")
        ax.set_xlabel("cores (simulated)")
        ax.set_ylabel(ylabel)
        ax.set_title(f"PREDICTED {quantity.replace('_s', ' time')} on {machine_name} (trace-driven replay)")
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # a figure of one core count alone draws no series
            ax.legend(fontsize=7, ncol=2)
        path = Path(out_dir) / f"{name}.png"
        resultsdir.atomic_savefig(fig, path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def draw_distributed(frame, path, machine_name):
    """Predicted step time and its parts against nodes (or ranks), labelled PREDICTED. frame:
    distributed.run's."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = frame["nodes"] if frame["nodes"].nunique() > 1 else frame["ranks"]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for col, label in (("predicted_step_s", "step"), ("compute_s", "forward + backward"),
                       ("reduce_scatter_s", "reduce-scatter"), ("all_gather_s", "all-gather"),
                       ("update_s", "AdamW")):
        ax.plot(x, frame[col], marker="o", label=f"{label} (predicted)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("nodes" if frame["nodes"].nunique() > 1 else "ranks")
    ax.set_ylabel("seconds per step")
    net = frame["network"].iloc[0] if len(frame) else ""
    coll = frame["collective"].iloc[0] if len(frame) and "collective" in frame else "ring"
    engine = frame["engine"].iloc[0] if len(frame) and "engine" in frame else "replay"
    how = "the binary under SimGrid's SMPI" if engine == "smpi" else "SimGrid replay"
    ax.set_title(f"PREDICTED gpt2-mpi step on {machine_name} ({coll} collectives; network {net}; {how})",
                 fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    resultsdir.atomic_savefig(fig, path, dpi=110)
    plt.close(fig)
    return path
