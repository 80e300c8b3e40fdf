"""report a results directory: summary table, terminal chart and figures (PNG and SVG) in plots/."""

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
        write_figures(args, directory, meta, summary, formats, outdir, out)
    return 0


def write_figures(args, directory, meta, summary, formats, outdir, out):
    """The figures and the roofline, into `outdir` (which this process owns)."""
    if not args.no_figures:
        from pstudy import plots
        written, notes = plots.draw_all(summary, meta, outdir, formats)
        for note in notes:
            sys.stderr.write(f"perfstudy report: {note}\n")
        out.write(f"\n{len(written)} figure files in {outdir}\n")
    if meta.analysis.get("roofline", True):
        from pstudy import analysis
        from pstudy import roofline
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
            else:
                out.write("\n" + roofline.format_summary(result) + "\n")
