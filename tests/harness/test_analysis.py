"""What `run` leaves for the memory-boundedness analysis, and the counters status in meta.json."""
import json


def test_run_writes_traces_operation_costs_and_counters_status(study):
    cfg = study.config(steps=3, repetitions=1).read_text().replace("[sweep]", "[counters]\nbackend = \"auto\"\n\n[sweep]")
    path = study.tmp / "analysis.toml"
    path.write_text(cfg)
    r = study.perfstudy("run", path)
    assert r.returncode == 0, r.stderr
    d = study.result_dirs()[0]
    traces = sorted(p.name for p in (d / "traces").iterdir())
    assert "seq_gcc_fast_t1_bsNA_kNA_r0.csv" in traces
    assert "tasks_gcc_fast_t2_bs4_k64_tcauto_tiauto_tsauto_tpauto_r0.csv" in traces
    assert sorted(p.name for p in (d / "ops").iterdir()) == [
        "forkjoin_gcc_fast.json", "seq_gcc_fast.json", "taskiter_gcc_fast.json", "tasks_gcc_fast.json"]
    meta = json.loads((d / "meta.json").read_text())
    counters = meta["counters"]
    assert counters["requested"] == "auto"
    if counters["backend"] is None:
        # this machine (a VM): every backend tried, each with its reason
        assert counters["status"].startswith("unavailable: ")
        assert set(counters["reasons"]) == {"likwid", "papi", "perf"}
        assert all(counters["reasons"].values())
    # the fake build tree has no ceiling benchmarks: said, not fatal
    assert any("ceilings not measured" in n for n in meta.get("analysis_notes", []))
    # the roofline is tried without figures too (test_report draws a sweep without ceilings)
    report = study.perfstudy("report", d, "--no-figures", "--no-chart")
    assert report.returncode == 0, report.stderr
    assert "roofline skipped" in report.stderr and "ceilings.json" in report.stderr


def test_analysis_can_be_switched_off(study):
    cfg = study.config(steps=3, repetitions=1).read_text() + "\n[analysis]\ntrace = false\nceilings = false\nroofline = false\n"
    path = study.tmp / "plain.toml"
    path.write_text(cfg)
    r = study.perfstudy("run", path)
    assert r.returncode == 0, r.stderr
    d = study.result_dirs()[0]
    assert not (d / "traces").exists() and not (d / "ceilings.json").exists()
    report = study.perfstudy("report", d, "--formats", "png")
    assert report.returncode == 0 and "roofline" not in report.stderr


def test_analysis_keys_are_checked(study):
    path = study.tmp / "bad.toml"
    path.write_text(study.config().read_text() + "\n[analysis]\ntrace = \"yes\"\n")
    r = study.perfstudy("run", path)
    assert r.returncode == 2
    assert "analysis.trace" in r.stderr and "true or false" in r.stderr


def test_roofline_skips_the_warmup_steps_the_run_recorded(study):
    """The roofline reads the warm-up from the meta.json that `run` writes (config.run.warmup)."""
    from pstudy.store import resultsdir
    from pstudy.analyse import roofline
    from test_roofline import ceilings

    text = study.config(steps=3, repetitions=1).read_text().replace("warmup = 1", "warmup = 2")
    path = study.tmp / "warm2.toml"
    path.write_text(text)
    r = study.perfstudy("run", path)
    assert r.returncode == 0, r.stderr
    d = study.result_dirs()[0]
    assert resultsdir.read_meta(d).warmup == 2
    (d / "ceilings.json").write_text(json.dumps(ceilings()))
    summary = roofline.analyse(d, study.tmp / "roofline", at=[("seq", 1)], figures=False)
    assert summary["warmup_skipped"] == 2
    # 5 iterations per run (2 warm-up + 3 measured), one repetition: 3 samples per operation
    assert summary["analyses"][0]["samples_per_op"] == 3
