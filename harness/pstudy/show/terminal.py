"""The summary table and a gnuplot 'dumb' speedup chart, for the terminal."""

import itertools
import math
import shutil
import subprocess

import pandas as pd

from pstudy.store import vocabulary

SEQ = vocabulary.BASELINE
SUMMARY_CHART_HEIGHT = 18  # the chart in `run` and `report`'s summary: short enough to leave the answer on screen


def seconds(v):
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4g}"


def ratio(v, lo, hi):
    if v is None or pd.isna(v):
        return "n/a"
    bounds = "" if pd.isna(lo) or pd.isna(hi) else f" [{lo:.2f},{hi:.2f}]"
    return f"{v:.2f}{bounds}"


def base_lines(summary):
    lines = []
    for (compiler, kernels), build in summary.groupby(["compiler", "kernels"], sort=True):
        seq = build[(build["variant"] == SEQ) & (build["threads"] == 1)]
        if len(seq) and not pd.isna(seq.iloc[0]["step_median_s"]):
            r = seq.iloc[0]
            lines.append(f"  vs_seq base, {compiler}/{kernels}: {SEQ} on 1 thread, median step "
                         f"{seconds(r['step_median_s'])} s [{seconds(r['step_ci_low_s'])}, "
                         f"{seconds(r['step_ci_high_s'])}] (95% CI)")
        else:
            lines.append(f"  vs_seq base, {compiler}/{kernels}: none (no successful {SEQ} run)")
    lines.append("  vs_self1 base: the same variant, build and chunking on 1 thread (column self1 s)")
    return lines


def table(summary):
    """The per-point table as text: medians with CIs, speedups and efficiencies against both bases."""
    return table_frame(summary).to_string(index=False)


def table_frame(summary):
    """The per-point table (as `table` prints it) as a DataFrame of formatted cells."""
    rows = []
    for _, r in summary.iterrows():
        rows.append({
            "variant": r["variant"], "build": f"{r['compiler']}/{r['kernels']}",
            **({} if "ranks" not in summary.columns or summary["ranks"].isna().all() else
               {"ranks": "-" if pd.isna(r["ranks"]) else int(r["ranks"])}),  # only in sweeps over ranks
            "thr": int(r["threads"]),
            "bs": "-" if pd.isna(r["batch_subsize"]) else vocabulary.chunk_text(r["batch_subsize"]),
            "k": "-" if pd.isna(r["k"]) else vocabulary.chunk_text(r["k"]),
            **({} if "tile_columns" not in summary.columns or summary["tile_columns"].isna().all() else
               {"tiles": "-" if pd.isna(r["tile_columns"]) else  # output columns / input channels per tile
                f"{vocabulary.chunk_text(r['tile_columns'])}/{vocabulary.chunk_text(r['tile_in_channels'])}"}),
            # sequences per row chunk of the products, in sweeps that have the key
            **({} if "tile_sequences" not in summary.columns or summary["tile_sequences"].isna().all() else
               {"ts": "-" if pd.isna(r["tile_sequences"]) else vocabulary.chunk_text(r["tile_sequences"])}),
            # tiles each product is cut into, in sweeps that have the key
            **({} if "tiles_per_product" not in summary.columns or summary["tiles_per_product"].isna().all() else
               {"tp": "-" if pd.isna(r["tiles_per_product"]) else vocabulary.chunk_text(r["tiles_per_product"])}),
            # the StarPU scheduler, in sweeps over them
            **({} if "starpu_sched" not in summary.columns or summary["starpu_sched"].isna().all() else
               {"sched": "-" if pd.isna(r["starpu_sched"]) else r["starpu_sched"]}),
            # the distributed variants' knobs, in sweeps over them
            **{key: "-" if pd.isna(r[key]) else r[key] for key in vocabulary.DISTRIBUTED_KEYS
               if key in summary.columns and summary[key].notna().any()},
            "ok/runs": f"{int(r['n_runs']) - int(r['n_failed'])}/{int(r['n_runs'])}",
            "step s [95% CI]": (f"{seconds(r.get('step_median_s'))} [{seconds(r.get('step_ci_low_s'))},"
                                f"{seconds(r.get('step_ci_high_s'))}]"),
            "fwd s": seconds(r.get("forward_median_s")), "bwd s": seconds(r.get("backward_median_s")),
            "upd s": seconds(r.get("update_median_s")),
            "speedup vs seq": ratio(r.get("speedup_vs_seq"), r.get("speedup_vs_seq_ci_low"),
                                    r.get("speedup_vs_seq_ci_high")),
            "eff vs seq": ratio(r.get("efficiency_vs_seq"), None, None),
            "self1 s": seconds(r.get("step_base_self1_s")),
            "speedup vs self1": ratio(r.get("speedup_vs_self1"), r.get("speedup_vs_self1_ci_low"),
                                      r.get("speedup_vs_self1_ci_high")),
            "eff vs self1": ratio(r.get("efficiency_vs_self1"), None, None),
        })
    return pd.DataFrame(rows)


def gp_quote(text):
    """A gnuplot double-quoted string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def gnuplot_chart(summary, width=100, height=28):
    """A dumb-terminal chart of step speedup against threads per build: against seq on 1 thread, or,
    when a build has no seq run, against each line's own 1-thread time. Returns (text, None), or
    (None, why) when gnuplot is absent or there is nothing to draw."""
    exe = shutil.which("gnuplot")
    if exe is None:
        return None, "gnuplot not found: terminal chart skipped"
    charts = []
    for (compiler, kernels), build in summary.groupby(["compiler", "kernels"], sort=True):
        seq = build[(build["variant"] == SEQ) & (build["threads"] == 1)].dropna(subset=["step_median_s"])
        if len(seq):
            column = "speedup_vs_seq"
            base = f"seq on 1 thread, median step {seconds(seq.iloc[0]['step_median_s'])} s"
        else:
            column = "speedup_vs_self1"
            base = "each line's own 1-thread time (no seq run)"
        build = build.dropna(subset=[column])
        if build["threads"].nunique() < 2:
            continue
        blocks, plots = [], ["x title 'ideal' with lines dashtype 2"]
        keys = [k for k in vocabulary.SERIES_KEYS if k in build.columns]  # tables from before a key lack it
        for i, (key, rows) in enumerate(build[build["variant"] != SEQ].groupby(
                keys, dropna=False, sort=False)):
            name = vocabulary.series_name(dict(zip(keys, key)))
            data = "\n".join(f"{int(t)} {s:.6g}" for t, s in zip(rows["threads"], rows[column]))
            blocks.append(f"$d{i} << EOD\n{data}\nEOD")
            plots.append(f"$d{i} title {gp_quote(name)} with linespoints")
        max_t = int(build["threads"].max())
        # the key below the plot, two entries a row, so that it covers no curve: inside, a long list
        # of labels sits on the lines it names. The chart grows by the key's rows.
        rows_of_key = (len(plots) + 1) // 2
        script = "\n".join([
            f"set terminal dumb size {width},{height + rows_of_key + 1} nofeed",
            "set title " + gp_quote(f"step speedup, {compiler}/{kernels}: base {base}; ratios of medians"),
            "set xlabel 'threads'", "set ylabel 'speedup'", f"set xrange [0.8:{max_t + 0.2}]",
            "set key below left Left reverse maxcols 2 width 2", "set xtics 1", *blocks,
            "plot " + ", ".join(plots)])
        try:
            done = subprocess.run([exe], input=script, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as err:
            return None, f"gnuplot failed: {err}"
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines()
            return None, f"gnuplot failed: {lines[-1] if lines else f'exit status {done.returncode}'}"
        charts.append(done.stdout)
    if not charts:
        return None, "terminal chart skipped: fewer than two thread counts"
    return "\n".join(charts), None


def knob_lines(rows):
    """The report's lines for knobs.ratios' rows: per knob and value, 'overlap on/off' and a line a
    point with the ratio, its 95% interval (where there are enough pairs) and its pairs."""
    lines = []
    for (key, base, value), group in itertools.groupby(rows, key=lambda r: (r["key"], r["base"], r["value"])):
        lines.append(f"{key} {value}/{base}, step ratio paired by repetition [95% interval]:")
        for r in group:
            bounds = "" if math.isnan(r["low"]) else f" [{r['low']:.3f}, {r['high']:.3f}]"
            lines.append(f"  {r['point']}: {r['estimate']:.3f}{bounds} ({r['pairs']} pairs)")
    return lines
