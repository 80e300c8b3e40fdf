"""report a results directory: summary table, chart, figures, efficiency factors, timelines and report.html in plots/."""

import argparse
import os
import sys
from pathlib import Path

from pstudy import common
from pstudy.store import resultsdir, studyarchive, vocabulary
from pstudy.analyse import knobs, tables
from pstudy.errors import StudyError
from pstudy.show import noisefigure


def add_arguments(parser):
    parser.add_argument("results_dir", help="a results directory, the name of one in results/, \"latest\", or a "
                                            "study archive (FILE.tar.gz: unpacked into results/FILE/, each directory reported)")
    parser.add_argument("--plots-root", default=os.environ.get("PERFSTUDY_PLOTS"),
                        help="figures go to PLOTS_ROOT/<results name>/ (default: $PERFSTUDY_PLOTS or <repo>/plots)")
    parser.add_argument("--formats", default="png,svg", help="comma-separated figure formats (default png,svg)")
    parser.add_argument("--no-figures", action="store_true", help="print the table only")
    parser.add_argument("--no-chart", action="store_true", help="skip the gnuplot terminal chart")
    parser.add_argument("--verbose", action="store_true",
                        help="also print every table in full and each kernel's roofline verdict with why "
                             "(otherwise in summary.csv, roofline_verdict.txt and report.html)")
    parser.add_argument("--wait", action="store_true",
                        help="when another report is writing the same plots directory, wait for it (default: exit 2)")
    parser.add_argument("--figures", choices=["paper"], dest="paper",
                        help="paper: also the figures for a paper, vector PDF one column wide with their data as "
                             "CSV, in paper/ beside the others")


def main(args):
    if studyarchive.is_archive(args.results_dir):  # unpacked into the results root, each directory reported
        status = 0
        for found in studyarchive.unpack_kept(args.results_dir, common.results_root()):
            status = max(status, main(argparse.Namespace(**{**vars(args), "results_dir": str(found)})))
        return status
    directory = resultsdir.ResultsDir(resultsdir.locate(args.results_dir))
    meta = resultsdir.read_meta(directory)  # check the directory before the heavy imports
    formats = [] if args.no_figures else common.choices(args.formats, common.FIGURE_FORMATS, "--formats")

    import pandas as pd

    from pstudy.show import summary as summary_text
    from pstudy.show import terminal

    summary = tables.read_summary(directory)
    resultsdir.records(directory)  # a damaged run record ends the report before anything is drawn
    if summary.empty:
        raise StudyError(f"{directory}: no runs recorded yet")
    if args.paper and args.no_figures:
        raise StudyError("--figures paper and --no-figures: choose one")
    out = sys.stdout
    # a sweep in which every run failed or timed out has no time to show: its failures are the report
    measured = "step_median_s" in summary and summary["step_median_s"].notna().any()
    if args.verbose and measured:
        out.write("\n".join(terminal.base_lines(summary)) + "\n\n")
        with pd.option_context("display.width", 250):
            out.write(terminal.table(summary) + "\n")
    if not measured:
        out.write("No run succeeded: no times, table, chart or figures to show.\n")
    if directory.failures_csv.exists():
        failures = resultsdir.read_csv(directory.failures_csv)
        if len(failures):
            shown = len(failures) if not measured else 5
            out.write(f"{len(failures)} failed runs (failures.csv)" + (", first ones" if shown < len(failures) else "")
                      + ":\n")
            for _, f in failures.head(shown).iterrows():
                out.write(f"  {f['variant']} {f['compiler']}/{f['kernels']} t={f['threads']} "
                          f"rep {f['repetition']}: {f['status']}: {f['error']}\n")
    if not measured:
        sys.stderr.write(f"perfstudy report: {directory}: every run failed (listed above)\n")
        return 0
    chart = None
    if not args.no_chart:
        chart, note = terminal.gnuplot_chart(summary, height=terminal.SUMMARY_CHART_HEIGHT)
        if note:
            sys.stderr.write(f"perfstudy report: {note}\n")
    outdir = common.plots_dir(common.plots_root(args.plots_root), directory)
    details = [("all columns:", str(directory.summary_csv))]
    if args.no_figures and not meta.analysis.get("roofline", True):
        out.write(summary_text.text(directory, meta, summary, chart, details=details))
        write_knob_ratios(out, directory, summary)
        return 0
    outdir.mkdir(parents=True, exist_ok=True)
    page, points = None, None
    with common.owning(outdir / resultsdir.LOCK, str(outdir), wait=args.wait, command="report"):
        n_figures, roof, why = write_figures(args, directory, meta, summary, formats, outdir)
        noise = noisefigure.read(directory)  # perfstudy noise's, where it ran
        if noise is not None and not args.no_figures:
            n_figures += 1
            noisefigure.figure(noise, outdir)
        if n_figures:
            details.append((f"{n_figures} figure files in", str(outdir)))
        for result in roof:
            details.append(("per-kernel verdicts:", str(Path(result["kernel_table_dir"]) / "roofline_verdict.txt")))
            if args.verbose:
                out.write("\n" + roofline_text(result) + "\n")
        if not args.no_figures:
            traced = write_trace_figures(directory, meta, summary, outdir)
            points = traced["points"]
            if points is not None:
                details.append(("efficiency factors:", str(outdir / resultsdir.EFFICIENCY_CSV)))
            page = write_page(directory, meta, summary, outdir, traced, roof, why, noise)
        if args.paper:
            from pstudy.show import paperfigures
            paper = paperfigures.write_all(summary, roof, outdir)
            details.append((f"{len(paper)} paper figures (PDF, each with its CSV) in", str(outdir / paperfigures.DIR)))
    out.write(summary_text.text(directory, meta, summary, chart, roofline=roof, points=points, details=details,
                                page=page, roofline_why=why))
    if noise is not None:
        out.write("\n".join(noisefigure.table_lines(noise)) + "\n")
    write_knob_ratios(out, directory, summary)
    return 0


def write_knob_ratios(out, directory, summary):
    """Each swept distributed knob's step ratios (knobs.ratios), where the sweep has one."""
    from pstudy.show import terminal

    if not any(summary[key].nunique() > 1 for key in vocabulary.DISTRIBUTED_KEYS if key in summary.columns):
        return
    steps = resultsdir.read_steps(directory)
    rows = knobs.ratios(steps[~steps["warmup"]])
    if rows:
        out.write("\n".join(terminal.knob_lines(rows)) + "\n")


def roofline_text(result):
    from pstudy.analyse import roofline
    return roofline.format_summary(result)


def write_trace_figures(directory, meta, summary, outdir):
    """efficiency.csv (and efficiency_runs.csv), the factor figures and the timelines, from the
    traces; returns what the page needs of them."""
    from pstudy.analyse import efficiency
    from pstudy.show import tracefigures

    result = {"points": None, "figures": [], "timelines": [], "missing": ""}
    runs_path = directory / resultsdir.RUNS_CSV
    ok = efficiency.ok_runs(resultsdir.read_runs(directory)) if runs_path.exists() else None
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
    return result


def write_page(directory, meta, summary, outdir, traced, roof, why, noise=None):
    """plots/<name>/report.html: the findings first, then the machine, the run, the tables and
    every figure, self-contained; the sensitivity to noise where the directory has its table."""
    from pstudy.analyse import efficiency, findings
    from pstudy.show import htmlreport, rooflinesection, terminal
    from pstudy.show import summary as summary_text

    model, run = meta.model, meta.run_settings
    identity = [("results", str(directory)), ("status", meta.status),
                ("commit", f"{meta.commit}{' (dirty)' if meta.dirty else ''}"),
                ("model", f"{model.get('config') or model.get('checkpoint')}, B={model.get('B')}, T={model.get('T')}"),
                ("steps", f"{run.get('steps')} measured after {run.get('warmup')} warm-up, "
                          f"{run.get('repetitions')} repetitions"),
                ("runs", f"{meta.get('runs_ok', '?')} ok, {meta.get('runs_failed', '?')} failed of {meta.get('runs_total', '?')}"),
                ("started", str(meta.get("started"))), ("finished", str(meta.get("finished")))]
    points = traced["points"]
    fastest = findings.fastest(summary)
    bounds = {(b["variant"], b["threads"]): b for b in findings.bounds(roof)}
    runs = resultsdir.read_runs(directory) if directory.runs_csv.exists() else None
    losing = {(f["threads"], f["build"]): f for f in findings.losing_factor(points, fastest, runs)}
    found = []
    for f in fastest:
        bound = bounds.get((f["variant"], f["threads"]))
        lost = losing.get((f["threads"], f["build"]))
        found.append({"threads": f["threads"], "build": f["build"],
                      "fastest": findings.point_name(f),
                      "step": f"{terminal.seconds(f['step_s'])} s",
                      "speedup": summary_text._fmt(f["speedup"]), "efficiency": summary_text._fmt(f["efficiency"]),
                      "bound": f"{bound['verdict']}: {bound['evidence']}" if bound else "not analysed",
                      "losing": f"{lost['factor']} ({summary_text._fmt(lost['value'])}; global efficiency "
                                f"{summary_text._fmt(lost['global'])})"
                                f"{findings.slow_thread_text(*(lost.get(k) for k in findings.SLOW_THREAD_FIELDS))}"
                      if lost else "-"})
    machine = [("CPU", summary_text.cpu(meta)), ("placement", summary_text.placement(meta))]
    system = meta.machine["system"]
    if system.get("hostname") or system.get("kernel"):
        machine.append(("system", ", ".join(str(system[k]) for k in ("hostname", "os", "kernel") if system.get(k))))
    machine += ceiling_rows(directory)
    probes = findings.probes_text(resultsdir.thread_peaks(directory))  # `[analysis] peak_beside`
    if probes:
        machine.append(("probes beside the runs", probes))
    figures = [htmlreport.figure(p) for kind in ("speedup-vs-seq", "efficiency-vs-seq", "speedup-vs-self1",
                                                 "efficiency-vs-self1", "vs-forkjoin")
               for p in sorted(outdir.glob(f"{kind}_step_*.png"))]
    table = ""
    if points is not None:
        shown = point_columns(points, findings)
        shown["runs"] = points["n_runs"].astype(int)
        for factor in efficiency.TABLE_ORDER:
            shown[efficiency.LABELS[factor].strip()] = [
                f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if lo == lo else f"{v:.3f}"
                for v, lo, hi in zip(points[factor], points[f"{factor}_ci_low"], points[f"{factor}_ci_high"])]
        if "slowest_thread_time" in points.columns:  # efficiency.csv from before 2026-11-27 has none
            shown["Slowest thread's time on equal work"] = [
                "-" if v != v else f"{v:.2f}x" for v in points["slowest_thread_time"].astype(float)]
        shown["IPC / instruction scalability"] = "need counters"
        table = shown.to_html(index=False, na_rep="-", border=0)
    verdict = ""
    roof_dir = outdir / "roofline"
    if roof_dir.is_dir():
        verdict = "".join(p.read_text() for p in sorted(roof_dir.rglob("roofline_verdict.txt")))
    failures, n_failed = "", 0
    if directory.failures_csv.exists():
        frame = resultsdir.read_csv(directory.failures_csv)
        n_failed = len(frame)
        if n_failed:
            shown = point_columns(frame, findings)
            for col in ("repetition", "status", "exit_code", "error", "wall_s"):
                if col in frame.columns:
                    shown[col] = frame[col].astype(object).where(frame[col].notna(), "-")
            failures = shown.to_html(index=False, border=0)
    # each section's verdict in a line, in the terminal summary's words, at the largest thread count
    top = max(fastest, key=lambda f: f["threads"])  # the summary has a timed point: main checked
    bound = bounds.get((top["variant"], top["threads"]))
    lost = [losing[k] for k in sorted(losing, key=lambda k: -k[0])[:1]]
    header = summary_text.header(directory, meta)
    verdicts = {"findings": "Fastest at " + summary_text.fastest_lines([top])[0].strip()
                            + (f"; {bound['verdict']}" if bound else ""),
                "identity": header[0], "machine": header[1].removeprefix("on "),
                "summary": summary_text.base_line(summary),
                "efficiency": summary_text.factor_lines(lost)[0].strip() if lost else "",
                "failures": f"{n_failed} failed run{'s' if n_failed > 1 else ''} (failures.csv)" if n_failed
                            else "No failed runs"}
    verdicts = {k: v[:1].upper() + v[1:] + "." if v else "" for k, v in verdicts.items()}
    return htmlreport.write(outdir, {
        "name": meta.display_name(directory), "findings": found, "machine": machine, "identity": identity,
        "bases": "\n".join(terminal.base_lines(summary)),
        "summary_table": summary_frame(summary, findings, terminal).to_html(index=False, border=0),
        "figures": figures, "efficiency_table": table,
        "efficiency_note": efficiency.NOTE,
        "efficiency_figures": [htmlreport.figure(p) for p in traced["figures"]],
        "efficiency_missing": traced["missing"],
        "timelines": [htmlreport.figure(p, "per-thread timeline of one steady-state iteration per variant at the "
                                           "largest thread count: kernels coloured by kind, idle black, phase "
                                           "starts as dashed lines") for p in traced["timelines"]],
        "roofline": rooflinesection.section(roof, fastest, verdict), "roofline_why": why or "", "verdicts": verdicts,
        "noise_table": "\n".join(noisefigure.table_lines(noise)) if noise is not None else "",
        "noise_figures": [htmlreport.figure(p, "each point's step beside a CPU co-runner over its quiet step, "
                                               "against the co-runner's duty cycle, a panel per period")
                          for p in [outdir / "noise_sensitivity.png"] if noise is not None and p.exists()],
        "failures": failures})


def point_columns(frame, findings):
    """A table's points in the terminal's words, one column ("taskiter bs=4 k=64") for the chunk
    keys' many, mostly empty ones; the build where the table has several, then the thread count."""
    import pandas as pd
    shown = pd.DataFrame({"point": [findings.point_name(r) for _, r in frame.iterrows()]})
    builds = frame["compiler"].astype(str) + "/" + frame["kernels"].astype(str)
    if builds.nunique() > 1:
        shown["build"] = list(builds)
    shown["threads"] = list(frame["threads"].astype(int))
    return shown


def summary_frame(summary, findings, terminal):
    """The terminal's table (terminal.table_frame) with its points named in one column."""
    frame = terminal.table_frame(summary)
    chunk_columns = ["variant", "bs", "k", "tiles", "ts", "tp", "sched", "ranks"]
    frame = frame.drop(columns=[c for c in chunk_columns if c in frame.columns])
    frame.insert(0, "point", [findings.point_name(r) for _, r in summary.iterrows()])
    return frame


def ceiling_rows(directory):
    """The machine's measured ceilings, one row per thread count, from ceilings.json (none when absent)."""
    from pstudy.measure import ceilings
    try:
        data = ceilings.load_ceilings(directory.ceilings)
    except ceilings.CeilingsError:
        return []
    return [(f"ceilings at {e['threads']} thread{'s' if e['threads'] > 1 else ''}",
             f"STREAM triad {e['stream_GBs']['triad']:.1f} GB/s, peak {e['best_gflops']:.1f} GFLOP/s ({e['best_isa']})")
            for e in data["per_threads"]]


def write_figures(args, directory, meta, summary, formats, outdir):
    """The figures and the roofline, into `outdir` (which this process owns); returns (the number of
    figure files, the roofline summaries, why the roofline was skipped or None)."""
    written = []
    if not args.no_figures:
        from pstudy.show import plots
        written, notes = plots.draw_all(summary, meta, outdir, formats)
        for note in notes:
            sys.stderr.write(f"perfstudy report: {note}\n")
    if not meta.analysis.get("roofline", True):
        return len(written), [], "roofline analysis is off ([analysis] roofline = false)"
    from pstudy.analyse import findings
    results, skipped = [], None
    compiler = (meta.sweep.get("compilers") or ["gcc"])[0]
    kernel_sets = meta.sweep.get("kernels") or ["fast"]
    traced = {(key.variant, key.threads) for _, key, _ in directory.traces()}
    at = findings.roofline_points(summary[summary["compiler"] == compiler], traced)
    for kernels in kernel_sets:
        # one kernel set: plots/<name>/roofline/; several: plots/<name>/roofline/<kernels>/
        roof_dir = outdir / "roofline"
        if len(kernel_sets) > 1:
            roof_dir = roof_dir / kernels
        result, why = roofline_report(directory, roof_dir, kernels=kernels, compiler=compiler, at=at)
        if why:
            sys.stderr.write(f"perfstudy report: {why}\n")
            skipped = why
        else:
            result["kernel_table_dir"] = str(roof_dir)
            results.append(result)
    return len(written), results, skipped


def roofline_report(directory, outdir, kernels="fast", compiler="gcc", at=None):
    """The roofline analysis of a results directory (one compiler and kernel set) into outdir:
    (result, None), or (None, why) when the directory lacks what it needs."""
    from pstudy.analyse import roofline
    from pstudy.show import rooflinefigures
    try:
        result = roofline.analyse(directory, outdir, at=at or None, compiler=compiler, kernels=kernels)
    except roofline.RooflineError as err:
        return None, f"roofline skipped: {err}"
    rooflinefigures.draw(result)
    return result, None
