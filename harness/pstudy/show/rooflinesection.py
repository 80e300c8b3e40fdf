"""The Roofline section of report.html, as its template takes it: the chart of the fastest variant
at the largest thread count first, its combined verdict in one sentence and its kernels in a table,
then every other analysis the same way, folded; the per-kernel text (roofline_verdict.txt) last,
folded too."""

import math
from pathlib import Path

from pstudy.analyse import findings
from pstudy.show import htmlreport


def _cell(value, form):
    return form.format(value) if isinstance(value, (int, float)) and math.isfinite(value) else "-"


def kernel_rows(analysis):
    """The kernel table of one analysis, one row a kernel, longest first, as the page shows it."""
    return [{"kernel": k["kernel"], "share": _cell(k["share"], "{:.1%}"), "intensity": _cell(k["intensity"], "{:.2f}"),
             "fraction": _cell(k["fraction_of_ceiling"], "{:.0%}"), "verdict": k.get("verdict", k["bound"]),
             "decided_by": k.get("decided_by", "roofline")}
            for k in analysis["by_kernel"]]


def sentence(bound):
    """One analysis's combined verdict in one sentence (findings.bounds' record)."""
    name = findings.point_name(bound)
    threads = bound["threads"]
    return (f"{name} at {threads} thread{'s' if threads > 1 else ''} ({bound['build']}): "
            f"{bound['verdict']}: {bound['evidence']}.")


def lead_index(analyses, fastest):
    """Which analysis the section opens with: the fastest point's at the largest thread count where
    it was analysed, else the first at the largest thread count analysed."""
    top = max(a["threads"] for a in analyses)
    for f in sorted(fastest, key=lambda f: -f["threads"]):
        for i, a in enumerate(analyses):
            if (a["variant"], a["threads"], f"{a['compiler']}/{a['kernels']}") == \
                    (f["variant"], f["threads"], f["build"]):
                return i
    return next(i for i, a in enumerate(analyses) if a["threads"] == top)


def section(results, fastest, verdict_text):
    """The template's `roofline`: {"analyses": [{"figure", "verdict", "kernels"}], lead first;
    "bandwidth": the figures of bandwidth against threads; "text": the per-kernel text}, or None
    when no analysis ran. results: roofline.analyse's summaries; fastest: findings.fastest's."""
    analyses = [a for summary in results for a in summary.get("analyses", [])]
    if not analyses:
        return None
    bounds = findings.bounds(results)  # one record per analysis, in the same order
    shown = [{"figure": htmlreport.figure(a["figure"], sentence(b))
              if a.get("figure") and Path(a["figure"]).exists() else None,
              "verdict": sentence(b), "kernels": kernel_rows(a)} for a, b in zip(analyses, bounds)]
    lead = lead_index(analyses, fastest)
    return {"analyses": [shown[lead]] + shown[:lead] + shown[lead + 1:],
            "bandwidth": [htmlreport.figure(s["bandwidth_figure"], "achieved bandwidth of the memory-bound "
                                                                   "kernels against threads")
                          for s in results if s.get("bandwidth_figure") and Path(s["bandwidth_figure"]).exists()],
            "text": verdict_text}
