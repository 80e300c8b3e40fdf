"""The short summary `perfstudy run` and `perfstudy report` end with: what was run, the table, the
speedup chart, the fastest point at each thread count, one line per variant on what bounds it, the
factor that loses most, the machine as the probes beside the runs found it (where the sweep probed
them), and where the details are. The answer comes last, like pytest's summary
line; everything else the commands know is in the files it names (`--verbose` prints the
per-kernel explanations too)."""

import math

import pandas as pd

from pstudy.show import terminal
from pstudy.store import resultsdir

SEQ = terminal.SEQ

BIND = {"close": "threads bound close together", "spread": "threads bound spread out",
        "master": "every thread bound with the primary thread", "primary": "every thread bound with the primary thread",
        "true": "threads bound where they start", "false": "threads free to move"}
PLACES = {"cores": "one per core", "threads": "one per hardware thread", "sockets": "one per socket",
          "ll_caches": "one per last-level cache", "numa_domains": "one per NUMA domain"}


def placement(meta):
    """meta.json's placement for people: "threads bound close together, one per core
    (OMP_PROC_BIND=close, OMP_PLACES=cores)"; what the runtime did when unset."""
    value = meta.get("placement")
    if not isinstance(value, dict):
        return str(value) if value else "not recorded"
    bind, places = str(value.get("OMP_PROC_BIND", "(unset)")), str(value.get("OMP_PLACES", "(unset)"))
    words = [BIND.get(bind.lower(), f"threads bound as OMP_PROC_BIND={bind}") if bind != "(unset)"
             else "threads placed by the OpenMP runtime's default"]
    if places != "(unset)":
        words.append(PLACES.get(places.lower(), f"on the places {places}"))
    return ", ".join(words) + f" (OMP_PROC_BIND={bind}, OMP_PLACES={places})"


def cpu(meta):
    """The CPU model meta.json recorded (cpu.model; older directories: cpu.model_name), with its cores."""
    info = meta.get("cpu") if isinstance(meta.get("cpu"), dict) else {}
    model = info.get("model") or info.get("model_name") or "unknown CPU"
    cores = info.get("physical_cores") or info.get("cores")
    logical = info.get("logical_cpus") or info.get("logical_cores")
    extra = [f"{cores} cores" if cores else None, f"{logical} logical CPUs" if logical and logical != cores else None]
    extra = [e for e in extra if e]
    return model + (f", {', '.join(extra)}" if extra else "")


def header(directory, meta):
    model, run = meta.model, meta.run_settings
    return [f"{meta.display_name(directory)}: {meta.status}, {meta.get('runs_ok', '?')} of "
            f"{meta.get('runs_total', '?')} runs ok, commit {meta.commit}{' (dirty)' if meta.dirty else ''}; "
            f"model {model.get('config') or model.get('checkpoint')} B={model.get('B')} T={model.get('T')}, "
            f"{run.get('steps')} steps after {run.get('warmup')} warm-up x {run.get('repetitions')} runs",
            f"on {cpu(meta)}; {placement(meta)}"]


def short_table(summary):
    """The per-point table with the columns that answer the question (all of them: summary.csv)."""
    rows = []
    for _, r in summary.iterrows():
        rows.append({"variant": r["variant"], "build": f"{r['compiler']}/{r['kernels']}", "thr": int(r["threads"]),
                     "chunking": _chunking(r) or "-",
                     "ok": f"{int(r['n_runs']) - int(r['n_failed'])}/{int(r['n_runs'])}",
                     "step s [95% CI]": f"{terminal.seconds(r.get('step_median_s'))} "
                                        f"[{terminal.seconds(r.get('step_ci_low_s'))}, {terminal.seconds(r.get('step_ci_high_s'))}]",
                     "speedup vs seq": terminal.ratio(r.get("speedup_vs_seq"), None, None),
                     "efficiency": terminal.ratio(r.get("efficiency_vs_seq"), None, None)})
    frame = pd.DataFrame(rows)
    if frame["build"].nunique() == 1:
        frame = frame.drop(columns="build")
    return frame.to_string(index=False)


def _chunking(row):
    from pstudy.analyse import findings
    return findings.chunking(row)


def fastest_lines(rows):
    lines = []
    for f in rows:
        name = f"{f['variant']}{' ' + f['chunking'] if f['chunking'] else ''}"
        speed = "" if f["threads"] == 1 and f["base"] == SEQ else \
            f", speedup {_fmt(f['speedup'])}, efficiency {_fmt(f['efficiency'])}" + \
            ("" if f["base"] == SEQ else " (vs its own 1-thread time)")
        lines.append(f"  {f['threads']} thread{'s' if f['threads'] > 1 else ''} ({f['build']}): {name}, "
                     f"{terminal.seconds(f['step_s'])} s{speed}")
    return lines


def _fmt(v):
    return "n/a" if v is None or v != v or math.isinf(v) else f"{v:.2f}"


def bound_lines(rows):
    return [f"  {b['variant']} t={b['threads']}{' ' + b['chunking'] if b['chunking'] else ''}: {b['verdict']}: {b['evidence']}"
            for b in rows]


def factor_lines(rows):
    from pstudy.analyse import findings
    return [f"  {r['threads']} threads, {r['variant']}{' ' + r['chunking'] if r['chunking'] else ''}: global "
            f"efficiency {_fmt(r['global'])}, most lost to {r['factor']} ({_fmt(r['value'])})"
            f"{findings.slow_thread_text(*(r.get(k) for k in findings.SLOW_THREAD_FIELDS))}" for r in rows]


def base_line(summary):
    """What the table's speedups are against, in one line."""
    seq = summary[(summary["variant"] == terminal.SEQ) & (summary["threads"] == 1)].dropna(subset=["step_median_s"])
    return ("speedup and efficiency against seq on 1 thread"
            + (f" ({terminal.seconds(seq.iloc[0]['step_median_s'])} s)" if len(seq) == 1 else "")
            + "; efficiency = speedup / threads")


def text(directory, meta, summary, chart=None, roofline=(), points=None, details=(), page=None,
         roofline_why=None):
    """The summary as text, ending with a newline. `roofline`: the roofline summaries; `points`:
    the efficiency factors per point (or None); `details`: (what, where) lines of the files that
    hold the rest; `page`: report.html's path, when written."""
    from pstudy.analyse import findings

    out = [*header(directory, meta), "", short_table(summary), base_line(summary)]
    if chart:
        lines = chart.splitlines()
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        out += [""] + [line.rstrip() for line in lines]
    fastest = findings.fastest(summary)
    out += ["", "fastest:"] + fastest_lines(fastest)
    bounds = findings.bounds(roofline)
    if bounds:
        out += ["what bounds each variant:"] + bound_lines(bounds)
    elif roofline_why:
        out += [f"what bounds each variant: not known ({roofline_why})"]
    runs_csv = resultsdir.ResultsDir(directory).runs_csv
    losing = findings.losing_factor(points, fastest, resultsdir.read_runs(directory) if runs_csv.exists() else None)
    if losing:
        out += ["where the parallel time goes:"] + factor_lines(losing)
    probes = findings.probes_text(resultsdir.thread_peaks(directory))  # `[analysis] peak_beside`
    if probes:
        out.append(f"the machine: {probes}")
    out += [f"{what} {where}" for what, where in details]
    if page:
        out.append(f"report: {page}")
    return "\n".join(out) + "\n"
