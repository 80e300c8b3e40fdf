"""report and list: table, terminal chart, figures that are real images, redrawn from the results alone."""

import json
import os
import shutil
from pathlib import Path

import pytest

import matplotlib

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def finished(study, finished_sweeps):
    """A private copy of a finished sweep's results directory (made once, its build tree removed:
    a report must need nothing but the results directory), in this test's results root."""
    shutil.rmtree(study.build)
    return study.copy_of(finished_sweeps.get(steps=3, repetitions=2))


def test_report_prints_table_and_writes_real_figures(study, finished):
    done = study.perfstudy("report", finished, "--formats", "png,svg", timeout=180)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # the summary leads with the answer and ends with the page; the full table is in summary.csv
    assert "speedup vs seq" in out and "fastest:" in out and "2 threads (gcc/fast): " in out
    assert out.rstrip().splitlines()[-1] == f"report: {study.plots / finished.name / 'report.html'}"
    assert len(out.splitlines()) <= 60 and "eff vs self1" not in out
    verbose = study.perfstudy("report", finished, "--no-figures", "--no-chart", "--verbose").stdout
    assert "vs_seq base, gcc/fast: seq on 1 thread, median step" in verbose
    assert "speedup vs seq" in verbose and "eff vs self1" in verbose
    plots = study.plots / finished.name
    for kind in ("runtime", "speedup-vs-seq", "speedup-vs-self1", "efficiency-vs-seq",
                 "efficiency-vs-self1", "vs-forkjoin"):
        for phase in ("step", "forward", "backward"):
            for ext in ("png", "svg"):
                assert (plots / f"{kind}_{phase}_gcc-fast.{ext}").is_file(), (kind, phase, ext)
    png = plots / "speedup-vs-seq_step_gcc-fast.png"
    assert png.read_bytes()[:8] == PNG_MAGIC
    image = matplotlib.image.imread(png)
    height, width = image.shape[:2]
    assert 300 <= height <= 2000 and 500 <= width <= 4000
    assert image.std() > 0.05  # not a blank canvas
    assert "<svg" in (plots / "runtime_step_gcc-fast.svg").read_text()[:2000]
    assert not (plots / "paper").exists()  # drawn on request only (--figures paper): `make run` pays nothing


def test_report_terminal_chart_with_and_without_gnuplot(study, finished):
    if shutil.which("gnuplot"):
        done = study.perfstudy("report", finished, "--no-figures")
        assert done.returncode == 0, done.stderr
        assert "step speedup, gcc/fast: base seq on 1 thread" in done.stdout and "ideal" in done.stdout
    # a PATH without gnuplot: the chart is skipped with a note, the rest works
    bare = study.tmp / "bin"
    bare.mkdir()
    for tool in ("sh", "dirname"):
        os.symlink(shutil.which(tool), bare / tool)
    done = study.perfstudy("report", finished, "--no-figures", PATH=str(bare))
    assert done.returncode == 0, done.stderr
    assert "gnuplot not found" in done.stderr and "speedup vs seq" in done.stdout


def test_report_recomputes_a_missing_summary(study, finished):
    (finished / "summary.csv").unlink()
    done = study.perfstudy("report", "latest", "--no-figures", "--no-chart", "--verbose")
    assert done.returncode == 0, done.stderr
    assert "forkjoin gcc/fast    2" in done.stdout


def test_report_on_a_non_results_directory_exits_2(study):
    (study.tmp / "empty").mkdir()
    done = study.perfstudy("report", study.tmp / "empty")
    assert done.returncode == 2 and "no meta.json" in done.stderr
    done = study.perfstudy("report", study.tmp / "missing")
    assert done.returncode == 2 and "no such results directory" in done.stderr


def test_list_shows_past_results(study, finished):
    done = study.perfstudy("list")
    assert done.returncode == 0, done.stderr
    assert finished.name in done.stdout and "complete" in done.stdout and "22/22 done" in done.stdout


def test_report_never_shows_a_cached_summary(study, finished):
    """summary.csv is a cache: report recomputes from steps.csv, so a stale or foreign one is not shown."""
    import pandas as pd

    stale = pd.read_csv(finished / "summary.csv")
    stale["step_median_s"] = 987.654
    stale.to_csv(finished / "summary.csv", index=False)
    done = study.perfstudy("report", finished, "--no-figures", "--no-chart", "--verbose")
    assert done.returncode == 0, done.stderr
    assert "987.7" not in done.stdout and "forkjoin gcc/fast    2" in done.stdout


def test_a_results_directory_written_by_an_older_harness_still_reports(study, tmp_path):
    """Written at commit a99ffd6, before meta.json had a schema and the layout had one owner."""
    old = Path(__file__).resolve().parent / "data" / "results-a99ffd6" / "2026-11-23-a99ffd6-small"
    directory = tmp_path / "results" / old.name
    shutil.copytree(old, directory)
    done = study.perfstudy("report", directory, "--no-chart", "--verbose")
    assert done.returncode == 0, done.stderr
    assert "complete, 10 of 10 runs ok, commit a99ffd6" in done.stdout and "fastest:" in done.stdout
    for label in ("seq gcc/fast", "forkjoin gcc/fast", "taskiter gcc/fast"):
        assert label in done.stdout
    assert len(list((study.plots / old.name).glob("*.png"))) > 10
    assert study.perfstudy("list").returncode == 0


def as_before_tile_sequences(directory, keys=(("tile_sequences", "_tsauto"), ("tiles_per_product", "_tpauto"))):
    """Rewrites a results directory as the harness wrote it before the point keys `keys` (name, stem
    part) existed (by default before tile_sequences, and so before tiles_per_product, which came
    after it): no part for them in its file names, no column in its tables, nothing of them in the
    run records or meta.json."""
    import pandas as pd

    def strip(text):
        for _, part in keys:
            text = text.replace(part, "")
        return text

    for _, part in keys:
        for path in sorted(directory.rglob(f"*{part}*")) if part else ():  # a key of no part: NA in every name
            path.rename(path.with_name(strip(path.name)))
    journal = directory / "journal.jsonl"
    journal.write_text(strip(journal.read_text()))
    for path in (directory / "runs").glob("*.json"):
        record = json.loads(strip(path.read_text()))
        for key, _ in keys:
            record.pop(key, None)
            (record.get("info") or {}).pop(key, None)
        path.write_text(json.dumps(record))
    for path in directory.glob("*.csv"):
        frame = pd.read_csv(path, na_values=["NA"], keep_default_na=False)
        frame.drop(columns=[key for key, _ in keys], errors="ignore").to_csv(path, index=False, na_rep="NA")
    meta = json.loads((directory / "meta.json").read_text())
    for key, _ in keys:
        meta["config"]["sweep"].pop(key, None)  # a key left to its default is not there
    (directory / "meta.json").write_text(json.dumps(meta))


def test_a_results_directory_from_before_tile_sequences_still_reports(study, finished):
    """Its stems have no _ts part and its tables no tile_sequences column: every point reads with the
    key NA, finds its traces under their old names, and is labelled without ts."""
    import pandas as pd
    from pstudy.analyse import tables

    as_before_tile_sequences(finished)
    assert "tile_sequences" not in pd.read_csv(finished / "steps.csv").columns
    assert (finished / "traces" / "taskiter_gcc_fast_t2_bs4_k64_tcauto_tiauto_r0.csv").is_file()
    done = study.perfstudy("report", finished, "--no-chart", "--formats", "png")
    assert done.returncode == 0, done.stderr
    assert "complete, 22 of 22 runs ok" in done.stdout
    assert "taskiter    2 bs=4 k=64 2/2" in done.stdout and "ts=" not in done.stdout
    summary = tables.read_summary(finished)
    assert len(summary) == 11 and summary["tile_sequences"].isna().all()
    assert summary["step_median_s"].notna().all() and summary["speedup_vs_self1"].notna().all()
    factors = pd.read_csv(study.plots / finished.name / "efficiency.csv", na_values=["NA"], keep_default_na=False)
    assert len(factors) == 11 and factors["tile_sequences"].isna().all()  # every point's traces found


def test_a_results_directory_from_before_tiles_per_product_still_reports(study, finished):
    """Its stems end _tsauto with no _tp part and its tables have no tiles_per_product column (nor
    starpu_sched, which came later): every point reads with those keys NA and is labelled without tp."""
    import pandas as pd
    from pstudy.analyse import tables

    as_before_tile_sequences(finished, keys=(("tiles_per_product", "_tpauto"), ("starpu_sched", "")))
    assert not {"tiles_per_product", "starpu_sched"} & set(pd.read_csv(finished / "steps.csv").columns)
    assert (finished / "traces" / "taskiter_gcc_fast_t2_bs4_k64_tcauto_tiauto_tsauto_r0.csv").is_file()
    done = study.perfstudy("report", finished, "--no-chart", "--no-figures")
    assert done.returncode == 0, done.stderr
    assert "complete, 22 of 22 runs ok" in done.stdout
    assert "bs=4 k=64 " in done.stdout and "tp=" not in done.stdout and "=auto" not in done.stdout
    summary = tables.read_summary(finished)
    assert len(summary) == 11 and summary["tiles_per_product"].isna().all()
    assert summary["starpu_sched"].isna().all() and "sched=" not in done.stdout
    assert summary["tile_sequences"].notna().any()
