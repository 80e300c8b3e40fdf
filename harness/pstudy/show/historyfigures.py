"""The regression history's figures (`perfstudy history`): each point's median time per regress
session, and each kernel's instruction count per session, confirmed regressions ringed in red."""

from pstudy.store import history, resultsdir, vocabulary


def draw(frame, phases, outdir, formats):
    """One figure per config, host, build and phase: median time per regress session, one line per
    point, red rings where a confirmed regression was reported; the instruction rows go to
    draw_instructions. frame: history.read's. Returns the files written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    frame = frame.reset_index(drop=True)
    frame["_order"] = range(len(frame))
    written += draw_instructions(frame[frame["metric"] == history.INSTRUCTIONS], outdir, formats)
    frame = frame[frame["metric"] == history.TIME]
    for (config, host, compiler, kernels, phase), group in frame.groupby(
            ["config", "host", "compiler", "kernels", "phase"], sort=True):
        if phase not in phases:
            continue
        sessions, labels = _session_labels(group)
        x_of = {s: i for i, s in enumerate(sessions)}
        fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(sessions) + 3), 4.5))
        marked = False
        for pkey, line in group.groupby(resultsdir.KEYS, dropna=False, sort=True):
            line = line.sort_values("_order")
            xs = [x_of[s] for s in line["session"]]
            label = vocabulary.point_label(vocabulary.point_key(dict(zip(resultsdir.KEYS, pkey))))
            ax.plot(xs, line["median_s"], marker="o", markersize=3, linewidth=1.2, label=label)
            hit = line[line["regressed"]]
            if len(hit):
                ax.scatter([x_of[s] for s in hit["session"]], hit["median_s"], s=120, facecolors="none",
                           edgecolors="red", linewidths=2, zorder=5,
                           label=None if marked else "confirmed regression")
                for s, y, ratio in zip(hit["session"], hit["median_s"], hit["ratio"]):
                    ax.annotate(f"x{ratio:.2f}", (x_of[s], y), textcoords="offset points", xytext=(6, 6),
                                color="red", fontsize=8)
                marked = True
        ax.set_xticks(range(len(sessions)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_xlabel("regress session (candidate commit, date)")
        ax.set_ylabel(f"median {phase} time [s]")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{phase} time per commit: {compiler}/{kernels}, config {config}, host {host}\n"
                     "median over runs of each run's median step; red: confirmed regression vs its base",
                     fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        written += _save(fig, outdir, f"history_{config}_{host}_{phase}_{compiler}-{kernels}", formats)
    return written


def draw_instructions(frame, outdir, formats):
    """One figure per config, host and point of the instruction rows: each kernel's count per
    session relative to its first session in the figure (1 = unchanged), total in black, red rings
    where the session flagged it. frame: draw's, with its _order column. Returns the files written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    if frame.empty:
        return written
    for (config, host, *pkey), group in frame.groupby(["config", "host"] + resultsdir.KEYS, dropna=False,
                                                      sort=True):
        key = vocabulary.point_key(dict(zip(resultsdir.KEYS, pkey)))
        sessions, labels = _session_labels(group)
        x_of = {s: i for i, s in enumerate(sessions)}
        fig, ax = plt.subplots(figsize=(max(7.0, 0.7 * len(sessions) + 4), 5))
        marked = False
        for kernel, line in group.groupby("kernel", sort=True):
            line = line.sort_values("_order")
            first = line["instructions"].iloc[0]
            if not first or first != first:
                continue
            rel = line["instructions"] / first
            style = {"color": "black", "linewidth": 2.2} if kernel == "total" else {"linewidth": 1.0}
            ax.plot([x_of[s] for s in line["session"]], rel, marker="o", markersize=3, label=kernel, **style)
            hit = line["regressed"].to_numpy()
            if hit.any():
                ax.scatter([x_of[s] for s in line["session"][hit]], rel[hit], s=120, facecolors="none",
                           edgecolors="red", linewidths=2, zorder=5, label=None if marked else "regression")
                for s, y, ratio in zip(line["session"][hit], rel[hit], line["ratio"][hit]):
                    ax.annotate(f"{kernel} x{ratio:.3f}", (x_of[s], y), textcoords="offset points",
                                xytext=(6, 6), color="red", fontsize=8)
                marked = True
        ax.set_xticks(range(len(sessions)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_xlabel("regress session (candidate commit, date)")
        ax.set_ylabel("instructions / the first session's")
        ax.set_title(f"instructions per kernel per commit: {vocabulary.point_label(key)}, config {config}, "
                     f"host {host}\nrelative to the first session shown; red: flagged against its base", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
        fig.tight_layout()
        written += _save(fig, outdir, f"history_{config}_{host}_instructions_{resultsdir.point_stem(key)}", formats)
    return written


def _save(fig, outdir, stem, formats):
    """Writes one figure as STEM.FMT for each format, closes it; returns the paths."""
    import matplotlib.pyplot as plt

    paths = [outdir / f"{stem}.{fmt}" for fmt in formats]
    for target in paths:
        resultsdir.atomic_savefig(fig, target)
    plt.close(fig)
    return paths


def _session_labels(group):
    """The group's sessions in the order they ran, and each one's tick label: its candidate commit
    (+ when the tree was dirty) over its date."""
    sessions = list(dict.fromkeys(group.sort_values("_order")["session"]))
    labels = []
    for s in sessions:
        r = group[group["session"] == s].iloc[0]
        labels.append(f"{r['commit_short']}{'+' if str(r['dirty']).lower() == 'true' else ''}\n"
                      f"{str(r['date'])[5:10]}")
    return sessions, labels
