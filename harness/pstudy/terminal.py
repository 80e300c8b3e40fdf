"""The summary table and a gnuplot 'dumb' speedup chart, for the terminal."""

import math
import shutil
import subprocess

import pandas as pd


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
        seq = build[(build["variant"] == "seq") & (build["threads"] == 1)]
        if len(seq) and not pd.isna(seq.iloc[0]["step_median_s"]):
            r = seq.iloc[0]
            lines.append(f"  vs_seq base, {compiler}/{kernels}: seq on 1 thread, median step "
                         f"{seconds(r['step_median_s'])} s [{seconds(r['step_ci_low_s'])}, "
                         f"{seconds(r['step_ci_high_s'])}] (95% CI)")
        else:
            lines.append(f"  vs_seq base, {compiler}/{kernels}: none (no successful seq run)")
    lines.append("  vs_self1 base: the same variant, build and chunking on 1 thread (column self1 s)")
    return lines


def table(summary):
    """The per-point table as text: medians with CIs, speedups and efficiencies against both bases."""
    rows = []
    for _, r in summary.iterrows():
        rows.append({
            "variant": r["variant"], "build": f"{r['compiler']}/{r['kernels']}", "thr": int(r["threads"]),
            "bs": "-" if pd.isna(r["batch_subsize"]) else int(r["batch_subsize"]),
            "k": "-" if pd.isna(r["k"]) else int(r["k"]),
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
    return pd.DataFrame(rows).to_string(index=False)


def gnuplot_chart(summary, width=100, height=28):
    """A dumb-terminal chart of step speedup vs seq against threads, per build; None without gnuplot
    (or when there is nothing to draw), else the chart text."""
    exe = shutil.which("gnuplot")
    if exe is None:
        return None, "gnuplot not found: terminal chart skipped"
    charts = []
    for (compiler, kernels), build in summary.groupby(["compiler", "kernels"], sort=True):
        build = build.dropna(subset=["speedup_vs_seq"])
        if build["threads"].nunique() < 2:
            continue
        seq = build[(build["variant"] == "seq") & (build["threads"] == 1)]
        base = f"seq 1 thread = {seconds(seq.iloc[0]['step_median_s'])} s" if len(seq) else "seq"
        blocks, plots = [], ["x title 'ideal' with lines dashtype 2"]
        for i, (key, rows) in enumerate(build[build["variant"] != "seq"].groupby(
                ["variant", "batch_subsize", "k"], dropna=False, sort=False)):
            variant, bs, k = key
            name = variant if pd.isna(bs) else f"{variant} bs={int(bs)} k={int(k)}"
            data = "\n".join(f"{int(t)} {s:.6g}" for t, s in zip(rows["threads"], rows["speedup_vs_seq"]))
            blocks.append(f"$d{i} << EOD\n{data}\nEOD")
            plots.append(f"$d{i} title '{name}' with linespoints")
        max_t = int(build["threads"].max())
        script = "\n".join([
            f"set terminal dumb size {width},{height} nofeed",
            f"set title 'step speedup vs seq, {compiler}/{kernels} (base: {base}; medians)'",
            "set xlabel 'threads'", "set ylabel 'speedup'", f"set xrange [0.8:{max_t + 0.2}]",
            "set key left top", "set xtics 1", *blocks, "plot " + ", ".join(plots)])
        try:
            done = subprocess.run([exe], input=script, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as err:
            return None, f"gnuplot failed: {err}"
        if done.returncode != 0:
            return None, f"gnuplot failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ''}"
        charts.append(done.stdout)
    if not charts:
        return None, "terminal chart skipped: fewer than two thread counts with a seq base"
    return "\n".join(charts), None
