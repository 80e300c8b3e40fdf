"""report a results directory: summary table, chart, figures, efficiency factors, timelines and report.html in plots/."""

import os
import sys

from pstudy import common, resultsdir
from pstudy.errors import StudyError


def add_arguments(parser):
    parser.add_argument("results_dir", help="a results directory, the name of one in results/, or \"latest\"")
    parser.add_argument("--plots-root", default=os.environ.get("PERFSTUDY_PLOTS"),
                        help="figures go to PLOTS_ROOT/<results name>/ (default: $PERFSTUDY_PLOTS or <repo>/plots)")
    parser.add_argument("--formats", default="png,svg", help="comma-separated figure formats (default png,svg)")
    parser.add_argument("--no-figures", action="store_true", help="print the table only")
    parser.add_argument("--no-chart", action="store_true", help="skip the gnuplot terminal chart")
    parser.add_argument("--wait", action="store_true",
                        help="when another report is writing the same plots directory, wait for it (default: exit 2)")


def main(args):
    directory = common.locate(args.results_dir)
    meta = resultsdir.read_meta(directory)  # check the directory before the heavy imports
    formats = [] if args.no_figures else common.choices(args.formats, common.FIGURE_FORMATS, "--formats")

    import pandas as pd

    from pstudy import terminal

    summary = resultsdir.read_summary(directory)
    if summary.empty:
        raise StudyError(f"{directory}: no runs recorded yet")
    out = sys.stdout
    out.write(f"{meta.display_name(directory)}: status {meta.status}, commit "
              f"{meta.commit}{' (dirty)' if meta.dirty else ''}, "
              f"{meta.get('runs_ok', '?')} runs ok, {meta.get('runs_failed', '?')} failed "
              f"of {meta.get('runs_total', '?')}\n")
    model, run = meta.model, meta.run_settings
    out.write(f"model {model.get('config') or model.get('checkpoint')}, B={model.get('B')}, T={model.get('T')}; "
              f"{run.get('steps')} measured steps after {run.get('warmup')} warm-up, "
              f"{run.get('repetitions')} repetitions; placement {meta.get('placement')}\n")
    out.write("Times are medians over the measured steps of all repetitions, with 95% order-statistic CIs.\n"
              "Speedup = base time / time; efficiency = speedup / threads. Bases:\n")
    out.write("\n".join(terminal.base_lines(summary)) + "\n\n")
    with pd.option_context("display.width", 250):
        out.write(terminal.table(summary) + "\n")
    failures_path = directory / resultsdir.FAILURES_CSV
    if failures_path.exists():
        failures = resultsdir.read_csv(failures_path)
        if len(failures):
            out.write(f"\n{len(failures)} failed runs (failures.csv), first ones:\n")
            for _, f in failures.head(5).iterrows():
                out.write(f"  {f['variant']} {f['compiler']}/{f['kernels']} t={f['threads']} "
                          f"rep {f['repetition']}: {f['status']}: {f['error']}\n")
    if not args.no_chart:
        chart, note = terminal.gnuplot_chart(summary)
        if chart:
            out.write("\n" + chart + "\n")
        else:
            sys.stderr.write(f"perfstudy report: {note}\n")
    outdir = common.plots_dir(common.plots_root(args.plots_root), directory)
    if args.no_figures and not meta.analysis.get("roofline", True):
        return 0
    outdir.mkdir(parents=True, exist_ok=True)
    with common.owning(outdir / resultsdir.LOCK, str(outdir), wait=args.wait, command="report"):
        roof = write_figures(args, directory, meta, summary, formats, outdir, out)
        if not args.no_figures:
            traced = write_trace_figures(directory, meta, summary, outdir, out)
            page = write_page(directory, meta, summary, outdir, traced, roof)
            out.write(f"\nreport: {page}\n")
    return 0


def write_trace_figures(directory, meta, summary, outdir, out):
    """efficiency.csv (and efficiency_runs.csv), the factor figures and the timelines, from the
    traces; returns what the page needs of them."""
    from pstudy import efficiency, tracefigures

    result = {"points": None, "figures": [], "timelines": [], "missing": ""}
    runs_path = directory / resultsdir.RUNS_CSV
    ok = efficiency.ok_runs(resultsdir.read_csv(runs_path, ["status"])) if runs_path.exists() else None
    run_table, points = efficiency.directory_factors(directory, meta.warmup, ok)
    if not len(points):
        result["missing"] = "No traces: efficiency factors and timelines need runs made with [analysis] trace = true."
        sys.stderr.write(f"perfstudy report: {directory}: no traces, so no efficiency factors or timelines\n")
        return result
    resultsdir.write_csv(outdir / resultsdir.EFFICIENCY_CSV, points)
    resultsdir.write_csv(outdir / resultsdir.EFFICIENCY_RUNS_CSV, run_table)
    result["points"] = points
    name = meta.display_name(directory)
    for (compiler, kernels), build in points.groupby(["compiler", "kernels"], sort=True):
        tag = f"{compiler}-{kernels}"
        result["figures"].append(tracefigures.draw_factors(build, outdir / f"efficiency-factors_{tag}.png",
                                                           f"{compiler}/{kernels} — {name}"))
        result["figures"].append(tracefigures.draw_traffic_light(build, outdir / f"efficiency-traffic-light_{tag}.png",
                                                                 f"{compiler}/{kernels}"))
    for tag, runs in tracefigures.timeline_runs(directory, summary, resultsdir.read_steps(directory)).items():
        result["timelines"].append(tracefigures.draw_timelines(runs, meta.warmup, outdir / f"timelines_{tag}.png",
                                                               f"{tag} — {name}"))
    out.write(f"{len(points)} points with efficiency factors ({outdir / resultsdir.EFFICIENCY_CSV}), "
              f"{len(result['timelines'])} timeline figures\n")
    return result


def write_page(directory, meta, summary, outdir, traced, roof):
    """plots/<name>/report.html: the identity, tables and every figure, self-contained."""
    from pstudy import efficiency, htmlreport, terminal

    model, run = meta.model, meta.run_settings
    identity = [("results", str(directory)), ("status", meta.status),
                ("commit", f"{meta.commit}{' (dirty)' if meta.dirty else ''}"),
                ("model", f"{model.get('config') or model.get('checkpoint')}, B={model.get('B')}, T={model.get('T')}"),
                ("steps", f"{run.get('steps')} measured after {run.get('warmup')} warm-up, "
                          f"{run.get('repetitions')} repetitions"),
                ("runs", f"{meta.get('runs_ok', '?')} ok, {meta.get('runs_failed', '?')} failed of {meta.get('runs_total', '?')}"),
                ("placement", str(meta.get("placement"))), ("CPU", str(meta.machine["cpu"].get("model_name", ""))),
                ("started", str(meta.get("started"))), ("finished", str(meta.get("finished")))]
    figures = [htmlreport.figure(p) for kind in ("speedup-vs-seq", "efficiency-vs-seq", "speedup-vs-self1",
                                                 "efficiency-vs-self1", "vs-forkjoin")
               for p in sorted(outdir.glob(f"{kind}_step_*.png"))]
    points = traced["points"]
    table = ""
    if points is not None:
        cols = ["variant", "compiler", "kernels", "threads", "batch_subsize", "k", "tile_columns", "tile_in_channels",
                "n_runs"]
        cols = [c for c in cols if c in points.columns]  # tables from before the tile keys
        shown = points[cols].copy()
        for factor in efficiency.TABLE_ORDER:
            shown[efficiency.LABELS[factor].strip()] = [
                f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if lo == lo else f"{v:.3f}"
                for v, lo, hi in zip(points[factor], points[f"{factor}_ci_low"], points[f"{factor}_ci_high"])]
        shown["IPC / instruction scalability"] = "need counters"
        table = shown.to_html(index=False, na_rep="-", border=0)
    roof_figures, verdict, why = [], "", roof
    roof_dir = outdir / "roofline"
    if roof_dir.is_dir():
        roof_figures = [htmlreport.figure(p) for p in sorted(roof_dir.rglob("*.png"))]
        verdict = "".join(p.read_text() for p in sorted(roof_dir.rglob("roofline_verdict.txt")))
    failures = ""
    failures_path = directory / resultsdir.FAILURES_CSV
    if failures_path.exists():
        frame = resultsdir.read_csv(failures_path)
        if len(frame):
            failures = frame.to_html(index=False, na_rep="-", border=0)
    return htmlreport.write(outdir, {
        "name": meta.display_name(directory), "identity": identity,
        "bases": "\n".join(terminal.base_lines(summary)),
        "summary_table": terminal.table_frame(summary).to_html(index=False, border=0),
        "figures": figures, "efficiency_table": table,
        "efficiency_note": ("Per point: the mean over its traced runs with a 95% Student-t interval. Parallel "
                            "efficiency = load balance x communication efficiency = OMP serialization x OMP load "
                            "balance x OMP scheduling efficiency; global = parallel x computation scalability. "
                            "Definitions: harness/README.md, section Efficiency factors."),
        "efficiency_figures": [htmlreport.figure(p) for p in traced["figures"]],
        "efficiency_missing": traced["missing"],
        "timelines": [htmlreport.figure(p, "per-thread timeline of one steady-state iteration per variant at the "
                                           "largest thread count: kernels coloured by kind, idle black, phase "
                                           "starts as dashed lines") for p in traced["timelines"]],
        "roofline": roof_figures, "roofline_verdict": verdict, "roofline_why": why or "",
        "failures": failures})


def write_figures(args, directory, meta, summary, formats, outdir, out):
    """The figures and the roofline, into `outdir` (which this process owns); returns why the
    roofline was skipped, if it was."""
    if not args.no_figures:
        from pstudy import plots
        written, notes = plots.draw_all(summary, meta, outdir, formats)
        for note in notes:
            sys.stderr.write(f"perfstudy report: {note}\n")
        out.write(f"\n{len(written)} figure files in {outdir}\n")
    if meta.analysis.get("roofline", True):
        from pstudy import analysis
        from pstudy import roofline
        skipped = None
        compiler = (meta.sweep.get("compilers") or ["gcc"])[0]
        kernel_sets = meta.sweep.get("kernels") or ["fast"]
        for kernels in kernel_sets:
            # one kernel set: plots/<name>/roofline/; several: plots/<name>/roofline/<kernels>/
            roof_dir = outdir / "roofline"
            if len(kernel_sets) > 1:
                roof_dir = roof_dir / kernels
            result, why = analysis.roofline_report(directory, roof_dir, kernels=kernels, compiler=compiler)
            if why:
                sys.stderr.write(f"perfstudy report: {why}\n")
                skipped = why
            else:
                out.write("\n" + roofline.format_summary(result) + "\n")
        return skipped
    return "roofline analysis is off ([analysis] roofline = false)"
