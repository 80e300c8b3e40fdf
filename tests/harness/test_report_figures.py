"""The report's figures fit: no roofline label drawn over another text, no caption, title or legend
past its figure's edge, and the paper figures (`perfstudy report --figures paper`) one column
(8.5 cm) wide, vector, in print sizes, each beside the CSV of its data."""

import itertools
import re

import matplotlib
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from pstudy.analyse import roofline as rl  # noqa: E402
from pstudy.analyse import tables, verdict  # noqa: E402
from pstudy.show import paperfigures, plots, rooflinefigures  # noqa: E402
from pstudy.store import resultsdir  # noqa: E402

ROOF = rl.roofs({"best_gflops": 133.0, "best_isa": "avx512", "stream_GBs": {"triad": 23.6, "copy": 18.2},
                 "peak_gflops": {"avx512": 133.0, "avx2": 53.0, "sse": 31.0, "scalar": 8.0}})
# a step's kernels as the default study measured them (taskiter, 2 threads, a 2-vCPU Zen 3 VM): three
# products at one point, a crowd of small kernels under the bandwidth roof; name, share, FLOP/B, GFLOP/s
MEASURED = [("matmul_bwd_input", .384, 57.85, 58.5), ("matmul_bwd_weight", .273, 57.86, 82.2),
            ("matmul_fwd", .240, 57.81, 93.3), ("adamw", .032, .571, 21.9), ("attention_bwd", .018, 8.74, 32.4),
            ("attention_fwd", .014, 7.35, 20.4), ("crossentropy_fwd", .012, .50, 6.0),
            ("layernorm_bwd_input", .007, .89, 10.2), ("gelu_bwd", .006, 1.67, 30.5), ("gelu_fwd", .004, 1.13, 18.3),
            ("layernorm_bwd_params", .003, .62, 9.1), ("crossentropy_bwd", .002, .25, 15.7),
            ("layernorm_fwd", .002, .99, 20.8), ("residual_fwd", .002, .083, 2.4), ("encoder_bwd", .001, .15, 1.6),
            ("encoder_fwd", .001, .11, 0.96), ("loss_mean", .0001, .25, .06), ("load_batch", .00005, 0, 0)]


def kernel_table(rows):
    """A roofline kernel table with verdicts; a kernel of no FLOPs moves bytes only (it is not drawn)."""
    frame = pd.DataFrame([{"kernel": name, "time_s": share, "flops": gflops * 1e9 * share,
                           "bytes": gflops * 1e9 * share / intensity if intensity else 1e3, "bytes_source": "model"}
                          for name, share, intensity, gflops in rows]).set_index("kernel")
    frame = rl.classify(frame, ROOF)
    frame["share"] = [row[1] for row in rows]
    return verdict.classify_table(frame, ROOF)


def crowded():
    """The measured kernels with the small ones made large enough to be labelled: ten labels
    competing for the space around a few points."""
    return kernel_table([(n, max(s, 0.04) if s > 0.005 else s, i, g) for n, s, i, g in MEASURED])


def text_boxes(fig):
    """(text, box) of every text drawn in the axes (kernel labels, the ISAs' peaks, the ridge)."""
    renderer = fig.canvas.get_renderer()
    return [(t.get_text(), rooflinefigures.text_box(t, renderer) if hasattr(t, "xyann") else
             t.get_window_extent(renderer)) for ax in fig.axes for t in ax.texts]


def outside(fig):
    """The titles, captions, axis labels, texts and legends that reach past the figure's edges."""
    fig.canvas.draw()
    renderer, edge = fig.canvas.get_renderer(), fig.bbox
    items = [(t.get_text(), t) for t in fig.texts]
    for ax in fig.axes:
        items += [(t.get_text(), t) for t in (ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts)]
        items += [("legend", ax.get_legend())] if ax.get_legend() else []
    items += [("legend", legend) for legend in fig.legends]
    out = []
    for name, artist in items:
        if not name.strip():
            continue
        box = rooflinefigures.text_box(artist, renderer) if hasattr(artist, "xyann") else \
            artist.get_window_extent(renderer)
        if box.x0 < edge.x0 - 1 or box.x1 > edge.x1 + 1 or box.y0 < edge.y0 - 1 or box.y1 > edge.y1 + 1:
            out.append(name[:60])
    return out


def overlapping(fig):
    boxes = text_boxes(fig)
    return [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2) if box_a.overlaps(box_b)]


@pytest.mark.parametrize("paper", [False, True])
def test_roofline_labels_do_not_overlap(paper):
    """Drawn for the screen and for a column of a paper, no kernel label covers another text; only
    kernels over the share threshold are labelled, the largest always; nothing leaves the figure
    (the caption is wrapped to its width)."""
    table = crowded()
    if paper:
        with plt.rc_context(paperfigures.STYLE):
            fig = rooflinefigures.roofline_figure(table, ROOF, size=(paperfigures.WIDTH_IN, 2.9), fontsize=6,
                                                  legend_below=True)
    else:
        fig = rooflinefigures.roofline_figure(table, ROOF, "Roofline: taskiter (gcc/fast) 2 threads bs=4 k=64",
                                              rl.MODEL_NOTE)
    labels = [t.get_text() for t in fig.axes[0].texts if t.get_gid() == rooflinefigures.LABEL_GID]
    assert len(labels) >= 5, labels
    assert overlapping(fig) == []
    assert all(float(label.rsplit(" ", 1)[1].rstrip("%")) >= 100 * rooflinefigures.LABEL_SHARE for label in labels)
    assert "matmul_bwd_input 38%" in labels
    assert outside(fig) == []
    plt.close(fig)


def test_the_overlap_check_can_fail():
    """Two texts drawn at one place are found."""
    fig, ax = plt.subplots()
    ax.text(0.5, 0.5, "matmul_fwd 24%")
    ax.text(0.52, 0.5, "matmul_bwd_weight 27%")
    ax.text(0.5, 0.9, "far away")
    assert overlapping(fig) == [("matmul_fwd 24%", "matmul_bwd_weight 27%")]
    fig.text(0.5, 0.01, "a caption that runs well past the right edge of the figure " * 3)
    assert outside(fig)
    plt.close(fig)


def test_one_panel_speedup_figure_keeps_its_caption(finished_sweeps):
    """A sweep without chunked variants has one panel, narrower than the caption's longest line:
    the caption wraps instead of running off the edge."""
    directory = resultsdir.ResultsDir(finished_sweeps.get(variants='["seq", "forkjoin"]'))
    summary = tables.read_summary(directory)
    meta = resultsdir.read_meta(directory)
    fig = plots.figure("speedup-vs-seq", "step", summary, meta, "gcc", "fast")
    assert len(fig.axes) == 1
    assert outside(fig) == []
    plt.close(fig)


def test_paper_figures_fit_a_column_in_print_sizes(finished_sweeps):
    """Each paper figure is 8.5 cm wide, no text in it is under 6 pt, nothing leaves it, and its
    data has a row per point drawn."""
    directory = resultsdir.ResultsDir(finished_sweeps.get(steps=3, repetitions=2))
    summary = tables.read_summary(directory)
    roof = [{"analyses": [{"kernels": "fast"}],
             rl.FIGURE_INPUTS: {"rooflines": [{"kernels": crowded(), "roof": ROOF,
                                               "path": directory / "roofline_taskiter_t2.png"}]}}]
    names = []
    with plt.rc_context(paperfigures.STYLE):
        for name, fig, data in paperfigures.figures(summary, roof):
            names.append(name)
            assert fig.get_figwidth() == pytest.approx(8.5 / 2.54)
            small = {t.get_text() for t in fig.findobj(matplotlib.text.Text)
                     if t.get_text().strip() and t.get_visible() and t.get_fontsize() < paperfigures.SMALLEST_FONT_PT}
            assert not small, (name, small)
            assert outside(fig) == [], name
            assert len(data) > 0, name
            plt.close(fig)
    assert names == ["speedup_gcc-fast", "efficiency_gcc-fast", "runtime-by-phase_gcc-fast", "vs-forkjoin_gcc-fast",
                     "batch-subsize_gcc-fast", "roofline_taskiter_t2"]


def test_report_writes_paper_figures_as_vector_pdf_with_their_data(reported_sweep):
    plots_dir, done = reported_sweep
    paper = plots_dir / paperfigures.DIR
    pdfs = sorted(paper.glob("*.pdf"))
    stems = {p.stem.split("_")[0] for p in pdfs}
    assert {"speedup", "efficiency", "runtime-by-phase", "vs-forkjoin", "batch-subsize", "roofline"} <= stems
    for pdf in pdfs:
        data = pdf.read_bytes()
        width = float(re.search(rb"/MediaBox \[ *0 0 ([\d.]+) ", data).group(1))
        assert width == pytest.approx(8.5 / 2.54 * 72, abs=0.5), pdf.name
        assert b"/Subtype /Image" not in data, pdf.name  # lines and text, no picture of them
        csv = pd.read_csv(pdf.with_suffix(".csv"))
        assert len(csv), pdf.name
    assert "paper figures" in done.stdout


def test_paper_figures_and_no_figures_is_one_line_error(study, finished_sweeps):
    directory = study.copy_of(finished_sweeps.get(steps=3, repetitions=2))
    r = study.perfstudy("report", directory, "--figures", "paper", "--no-figures")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "--no-figures" in r.stderr, r.stderr
    assert not (study.plots / directory.name).exists()
