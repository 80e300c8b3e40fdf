"""report a results directory: summary table, terminal chart and figures (PNG and SVG) in plots/."""

import os
import sys
from pathlib import Path

from pstudy import resultsdir
from pstudy.errors import StudyError

REPO_ROOT = Path(__file__).resolve().parents[2]


def add_arguments(parser):
    parser.add_argument("results_dir", help="a results directory, the name of one in results/, or \"latest\"")
    parser.add_argument("--plots-root", default=os.environ.get("PERFSTUDY_PLOTS"),
                        help="figures go to PLOTS_ROOT/<results name>/ (default: $PERFSTUDY_PLOTS or <repo>/plots)")
    parser.add_argument("--formats", default="png,svg", help="comma-separated figure formats (default png,svg)")
    parser.add_argument("--no-figures", action="store_true", help="print the table only")
    parser.add_argument("--no-chart", action="store_true", help="skip the gnuplot terminal chart")


def locate(arg):
    """A path, a name in the results root, or "latest" (the most recently started sweep there)."""
    path = Path(arg)
    results_root = Path(os.environ.get("PERFSTUDY_RESULTS") or REPO_ROOT / "results")
    if arg == "latest" and not path.exists():
        found = sorted((d for d in results_root.glob("*") if (d / resultsdir.META).is_file()),
                       key=lambda d: started(d))
        if not found:
            raise StudyError(f"{results_root}: no results directories yet")
        return found[-1]
    if not path.exists() and os.sep not in arg:
        if (results_root / arg).exists():
            path = results_root / arg
    if not path.is_dir():
        raise StudyError(f"{arg}: no such results directory")
    return path


def started(directory):
    try:
        return resultsdir.read_meta(directory).get("started") or ""
    except StudyError:
        return ""


def load_summary(directory):
    """summary.csv of the directory; recomputed from steps.csv and runs.csv when it is missing."""
    from pstudy import stats

    path = directory / "summary.csv"
    if path.exists():
        return resultsdir.read_csv(path)
    steps = resultsdir.read_steps(directory)
    runs_path = directory / "runs.csv"
    if not runs_path.exists():
        return stats.summarise(steps)
    return stats.point_summary(steps, resultsdir.read_csv(runs_path))


def main(args):
    directory = locate(args.results_dir)
    meta = resultsdir.read_meta(directory)  # check the directory before the heavy imports

    import pandas as pd

    from pstudy import plots, terminal

    summary = load_summary(directory)
    if summary.empty:
        raise StudyError(f"{directory}: no runs recorded yet")
    out = sys.stdout
    out.write(f"{meta.get('name', directory.name)}: status {meta.get('status')}, commit "
              f"{meta.get('git', {}).get('commit')}{' (dirty)' if meta.get('git', {}).get('dirty') else ''}, "
              f"{meta.get('runs_ok', '?')} runs ok, {meta.get('runs_failed', '?')} failed "
              f"of {meta.get('runs_total', '?')}\n")
    cfg = meta.get("config", {})
    model = cfg.get("model", {})
    run = cfg.get("run", {})
    out.write(f"model {model.get('config') or model.get('checkpoint')}, B={model.get('B')}, T={model.get('T')}; "
              f"{run.get('steps')} measured steps after {run.get('warmup')} warm-up, "
              f"{run.get('repetitions')} repetitions; placement {meta.get('placement')}\n")
    out.write("Times are medians over the measured steps of all repetitions, with 95% order-statistic CIs.\n"
              "Speedup = base time / time; efficiency = speedup / threads. Bases:\n")
    out.write("\n".join(terminal.base_lines(summary)) + "\n\n")
    with pd.option_context("display.width", 250):
        out.write(terminal.table(summary) + "\n")
    failures_path = directory / "failures.csv"
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
    if not args.no_figures:
        formats = [f.strip() for f in args.formats.split(",") if f.strip()]
        bad = [f for f in formats if f not in ("png", "svg", "pdf")]
        if bad or not formats:
            raise StudyError(f"--formats: unknown format {', '.join(bad) or '(none)'} (png, svg, pdf)")
        plots_root = Path(args.plots_root or REPO_ROOT / "plots")
        outdir = plots_root / directory.name
        written, notes = plots.draw_all(summary, meta, outdir, formats)
        for note in notes:
            sys.stderr.write(f"perfstudy report: {note}\n")
        out.write(f"\n{len(written)} figure files in {outdir}\n")
    if meta.get("config", {}).get("analysis", {}).get("roofline", True):
        from pstudy import analysis
        from pstudy import roofline
        plots_root = Path(args.plots_root or REPO_ROOT / "plots")
        sweep_cfg = meta.get("config", {}).get("sweep", {})
        compiler = (sweep_cfg.get("compilers") or ["gcc"])[0]
        kernel_sets = sweep_cfg.get("kernels") or ["fast"]
        for kernels in kernel_sets:
            # one kernel set: plots/<name>/roofline/; several: plots/<name>/roofline/<kernels>/
            outdir = plots_root / directory.name / "roofline"
            if len(kernel_sets) > 1:
                outdir = outdir / kernels
            result, why = analysis.roofline_report(directory, outdir, kernels=kernels, compiler=compiler)
            if why:
                sys.stderr.write(f"perfstudy report: {why}\n")
            else:
                out.write("\n" + roofline.format_summary(result) + "\n")
    return 0
