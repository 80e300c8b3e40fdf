"""Ceilings: the bench binaries for real (tiny sizes), measure_ceilings end to end, and
ceilings.json validation."""

import copy
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pstudy.measure import ceilings as ce
from pstudy.store import machinefiles

REPO = Path(__file__).resolve().parents[2]
VECTOR_BITS = {"avx512": 512, "avx2": 256, "sse": 128, "scalar": 32}
TINY_STREAM = ("--elements", "100000", "--reps", "2")
TINY_PEAK = ("--iterations", "1000000", "--reps", "3")


@pytest.fixture(scope="module")
def probes_dir(tmp_path_factory):
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("gcc and make needed to build probes/")
    out = tmp_path_factory.mktemp("probes")
    proc = subprocess.run(["nice", "-n", "10", "make", "-s", "-f", "probes/Makefile.probes", f"PROBE_DIR={out}",
                           "PROBE_CFLAGS=-std=c11 -O2 -march=native -fopenmp -Wall -Wextra -Werror"],
                          cwd=REPO, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return out


def run(argv, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=60, **kw)


def test_stream_json(probes_dir):
    proc = run([probes_dir / "stream", "--threads", "1", "--json", *TINY_STREAM])
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["threads"] == 1 and out["elements"] == 100000 and out["reps"] == 2
    assert out["element_type"] == "double" and out["bytes_per_array"] == 800000
    assert out["llc_bytes"] > 0
    for kernel in ce.STREAM_KERNELS:
        assert out[f"{kernel}_GBs"] > 0
    assert "triad" in proc.stderr  # the human table


def largest_cache_in_sysfs():
    sizes = []
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = f.read_text().strip()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        sizes.append(int(text.rstrip("KMG")) * scale)
    return max(sizes) if sizes else None


def test_stream_reads_largest_cache_from_sysfs(probes_dir):
    proc = run([probes_dir / "stream", "--threads", "1", "--json", "--elements", "1000", "--reps", "1"])
    out = json.loads(proc.stdout)
    expected = largest_cache_in_sysfs()
    if expected is None:
        assert out["llc_source"] == "fallback" and out["llc_bytes"] == 32 << 20
    else:
        assert out["llc_source"] == "sysfs" and out["llc_bytes"] == expected


def test_peakflops_json(probes_dir):
    proc = run([probes_dir / "peakflops", "--threads", "1", "--json", *TINY_PEAK])
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["threads"] == 1 and out["iterations"] == 1000000 and out["chains"] >= 8
    isas = [r["isa"] for r in out["results"]]
    assert isas[-1] == "scalar" and len(set(isas)) == len(isas)
    for r in out["results"]:
        assert r["vector_bits"] == VECTOR_BITS[r["isa"]] and r["gflops"] > 0
    gflops = {r["isa"]: r["gflops"] for r in out["results"]}
    # a vector width that does not beat scalar by 2x is not being measured
    if len(gflops) > 1:
        assert max(gflops.values()) > 2 * gflops["scalar"]


def test_peakflops_one_width_and_each_threads_rate(probes_dir):
    """--isa widest: the first width the full run gives, alone; thread_gflops: one rate per thread,
    which together make about the team's (the threads run the same chains at once)."""
    full = json.loads(run([probes_dir / "peakflops", "--threads", "1", "--json", *TINY_PEAK]).stdout)
    proc = run([probes_dir / "peakflops", "--threads", "2", "--isa", "widest", "--json", *TINY_PEAK])
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    [only] = out["results"]
    assert only["isa"] == full["results"][0]["isa"]
    assert len(only["thread_gflops"]) == 2 and min(only["thread_gflops"]) > 0
    # loose: on 2 busy vCPUs one thread may wait its turn for the other's core in some repetitions
    assert 0.25 * only["gflops"] < sum(only["thread_gflops"]) < 4.0 * only["gflops"]
    assert "slowest thread" in proc.stderr
    scalar = json.loads(run([probes_dir / "peakflops", "--isa", "scalar", "--json", *TINY_PEAK]).stdout)
    assert [r["isa"] for r in scalar["results"]] == ["scalar"]


@pytest.mark.parametrize("binary,args,message", [
    ("peakflops", ["--isa", "avx1024"], "peakflops: --isa: avx1024: unknown width (expected avx512, avx2, sse, "
                                        "scalar or widest)"),
    ("peakflops", ["--isa"], "peakflops: --isa: missing value"),
    ("stream", ["--threads", "0"], "stream: --threads: expected a positive integer"),
    ("stream", ["--elements", "12x"], "stream: --elements: expected a positive integer"),
    ("stream", ["--reps", "500"], "stream: --reps: expected a positive integer up to 200"),
    ("stream", ["--reps"], "stream: --reps: missing value"),
    ("stream", ["--bogus"], "stream: --bogus: unknown option"),
    ("peakflops", ["--iterations", "-5"], "peakflops: --iterations: expected a positive integer"),
    ("peakflops", ["extra"], "peakflops: extra: unknown option"),
    ("reread", ["--pieces", "1"], "reread: --pieces: expected an integer in [2, 1024], got '1'"),
    ("reread", ["--columns", "32", "--pieces", "4"], "reread: --pieces: more pieces than the columns hold"),
    ("reread", ["--rows", "0"], "reread: --rows: expected a positive integer"),
    ("reread", ["--rounds"], "reread: --rounds: missing value"),
])
def test_bad_arguments_exit_2_with_one_line(probes_dir, binary, args, message):
    proc = run([probes_dir / binary, *args])
    assert proc.returncode == 2
    assert proc.stderr.startswith(message) and proc.stderr.count("\n") == 1
    assert proc.stdout == ""


def test_measure_ceilings_end_to_end(probes_dir, tmp_path):
    out = tmp_path / "res" / "ceilings.json"
    data = ce.measure_ceilings(probes_dir, [1], out, stream_args=TINY_STREAM, peakflops_args=TINY_PEAK,
                               likwid_bench=False)
    assert ce.load_ceilings(out) == data
    entry = ce.ceiling_for(data, 1)
    assert entry["best_gflops"] == max(entry["peak_gflops"].values())
    assert data["environment"] == {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"}
    assert data["source"]["stream"]["elements"] == 100000
    assert data["source"]["likwid_bench"] == {"available": False, "reason": "not requested"}
    # the start of the machine they were measured on, which a results directory's meta.json also records
    assert data["host"]["boot_id"] == open("/proc/sys/kernel/random/boot_id").read().strip()
    # the re-read rate, measured once at 1 thread, goes into the machine file predict reads
    reread = data["reread"]
    assert reread["available"] is True and reread["reread_GBs"] > 0 and reread["pieces"] == 4
    machine = machinefiles.from_ceilings(data, "m")
    assert machine.reread_GBs == reread["reread_GBs"]
    assert f"reread_GBs = {reread['reread_GBs']:.6g}" in machinefiles.to_toml(machine)
    with pytest.raises(ce.CeilingsError, match=r"no measurement at 3 threads \(measured: 1\)"):
        ce.ceiling_for(data, 3)


def test_reread_json(probes_dir):
    # the default shape (d12's head input gradient, 256 columns in 4 pieces): the pieces re-pack the
    # 51.5 MB logits' gradient three more times, a third of their time, which no noise hides
    proc = run([probes_dir / "reread", "--json", "--rounds", "5"])
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["rows"], out["reduction"], out["columns"], out["pieces"]) == (256, 50304, 256, 4)
    assert out["reread_bytes"] == 3 * 256 * 50304 * 4
    # the pieces take longer (they re-pack the 51.5 MB logits' gradient three more times), but by how
    # much is a measurement: under a loaded test run the order flipped once in 5 rounds (2026-11-27)
    assert out["reread_GBs"] > 0 and out["pieces_s"] > 0 and out["whole_s"] > 0
    assert len(out["reread_rep_GBs"]) + out["rounds_without_figure"] == 5 - out["warmup_rounds"]
    import statistics
    if out["reread_rep_GBs"]:  # the figure is their median
        assert out["reread_GBs"] == pytest.approx(statistics.median(out["reread_rep_GBs"]), rel=1e-3)
    # the human form
    proc = run([probes_dir / "reread", "--rounds", "3", "--reduction", "20000"])
    assert proc.returncode == 0 and "re-read rate" in proc.stdout


def test_ceilings_without_reread_record_why_and_predict_falls_back(probes_dir, tmp_path):
    only = tmp_path / "bin"
    only.mkdir()
    for name in ("stream", "peakflops"):
        shutil.copy(probes_dir / name, only / name)
    out = tmp_path / "ceilings.json"
    data = ce.measure_ceilings(only, [1], out, stream_args=TINY_STREAM, peakflops_args=TINY_PEAK,
                               likwid_bench=False)
    assert data["reread"]["available"] is False and "reread: not found" in data["reread"]["reason"]
    assert ce.load_ceilings(out) == data
    machine = machinefiles.from_ceilings(data, "m")
    assert machine.reread_GBs is None and machine.reread_bandwidth() == machine.bandwidth(1)
    assert "reread_GBs" not in machinefiles.to_toml(machine)


def test_measure_ceilings_missing_binary(tmp_path):
    with pytest.raises(ce.CeilingsError, match=r"stream: not found \(build it with"):
        ce.measure_ceilings(tmp_path, [1], tmp_path / "c.json", likwid_bench=False)


def test_measure_ceilings_reports_bench_failure(probes_dir, tmp_path):
    with pytest.raises(ce.CeilingsError, match=r"stream failed with exit status 2: stream: --reps"):
        ce.measure_ceilings(probes_dir, [1], tmp_path / "c.json", stream_args=("--reps", "0"), likwid_bench=False)


def test_likwid_bench_output_parsing_recorded_here():
    text = (REPO / "tests/data/ceilings/likwid_bench_copy_avx.txt").read_text()
    assert ce._likwid_value(text, "MByte/s") == 80755.36
    assert ce._likwid_value(text, "MFlops/s") == 0.0
    assert ce._likwid_value(text, "GByte/s") is None


# ------------------------------------------------------------------ validation

VALID = {
    "schema": "pstudy-ceilings/1", "date": "2025-03-04T10:12:31Z",
    "host": {"hostname": "h", "cpu_model": "AMD EPYC", "logical_cpus": 2},
    "environment": {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"},
    "source": {"stream": {"binary": "build/probes/stream"}, "peakflops": {"binary": "build/probes/peakflops"},
               "likwid_bench": {"available": False, "reason": "x"}},
    "per_threads": [
        {"threads": 1, "stream_GBs": {"copy": 19.0, "scale": 16.0, "add": 19.0, "triad": 18.0},
         "peak_gflops": {"avx2": 100.0, "sse": 50.0, "scalar": 12.5}, "best_isa": "avx2", "best_gflops": 100.0,
         "cpu_steal_fraction": 0.01},
        {"threads": 2, "stream_GBs": {"copy": 25.0, "scale": 22.0, "add": 26.0, "triad": 26.0},
         "peak_gflops": {"avx2": 200.0, "scalar": 25.0}, "best_isa": "avx2", "best_gflops": 200.0,
         "cpu_steal_fraction": None,
         "likwid_bench": {"tests": {}, "copy_GBs": 20.0, "triad_GBs": 24.0, "peak_gflops": 150.0}},
    ],
}


def write(tmp_path, data):
    path = tmp_path / "ceilings.json"
    path.write_text(json.dumps(data))
    return path


def test_valid_file_loads(tmp_path):
    assert ce.load_ceilings(write(tmp_path, VALID)) == VALID


def mutated(change):
    data = copy.deepcopy(VALID)
    change(data)
    return data


@pytest.mark.parametrize("change,message", [
    (lambda d: d.update(schema="v0"), "schema: expected 'pstudy-ceilings/1'"),
    (lambda d: d.update(date="yesterday"), "date: expected UTC ISO 8601"),
    (lambda d: d.pop("per_threads"), "per_threads: missing"),
    (lambda d: d.update(per_threads=[]), "per_threads: empty"),
    (lambda d: d["per_threads"][0]["stream_GBs"].pop("triad"), r"per_threads\[0\].stream_GBs.triad: missing"),
    (lambda d: d["per_threads"][1]["stream_GBs"].update(add=-1), r"per_threads\[1\].stream_GBs.add: expected a positive"),
    (lambda d: d["per_threads"][0]["stream_GBs"].update(copy="fast"), r"per_threads\[0\].stream_GBs.copy: expected a number"),
    (lambda d: d["per_threads"][1].update(threads=1), r"per_threads\[1\].threads: 1 appears twice"),
    (lambda d: d["per_threads"][0].update(threads=0), r"per_threads\[0\].threads: expected a positive integer"),
    (lambda d: d["per_threads"][0]["peak_gflops"].update(neon=1.0), r"per_threads\[0\].peak_gflops.neon: unknown ISA"),
    (lambda d: d["per_threads"][0].update(best_isa="sse", best_gflops=50.0), "is not the fastest ISA"),
    (lambda d: d["per_threads"][0].update(best_isa="avx512"), "'avx512' is not in peak_gflops"),
    (lambda d: d["per_threads"][0].update(best_gflops=99.0), "best_gflops: differs from peak_gflops.avx2"),
    (lambda d: d["per_threads"][0].update(cpu_steal_fraction=1.5), "cpu_steal_fraction: expected null or a number"),
    (lambda d: d["per_threads"][1]["likwid_bench"].pop("triad_GBs"), r"likwid_bench.triad_GBs: missing"),
    (lambda d: d["source"].pop("stream"), "source.stream: missing"),
    (lambda d: d.update(reread={"available": "yes"}), "reread.available: expected true or false"),
    (lambda d: d.update(reread={"available": True, "reread_GBs": -1}), "reread.reread_GBs: expected a positive"),
    (lambda d: d.update(reread={"available": True}), "reread.reread_GBs: missing"),
    (lambda d: d.update(reread=[]), "reread: expected an object"),
])
def test_validation_errors_name_file_and_key(tmp_path, change, message):
    path = write(tmp_path, mutated(change))
    with pytest.raises(ce.CeilingsError, match=f"^{str(path)}: .*{message}|^{str(path)}: {message}"):
        ce.load_ceilings(path)


def test_unreadable_files(tmp_path):
    with pytest.raises(ce.CeilingsError, match="nope.json: not found"):
        ce.load_ceilings(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{\"schema\": ")
    with pytest.raises(ce.CeilingsError, match=r"bad.json: not JSON: .* at line 1"):
        ce.load_ceilings(bad)
    arr = tmp_path / "arr.json"
    arr.write_text("[]")
    with pytest.raises(ce.CeilingsError, match=r"arr.json: \(top level\): expected a JSON object"):
        ce.load_ceilings(arr)


def test_robust_ceiling_takes_the_second_best_and_rejects_the_impossible():
    warnings = []
    value, spread = ce.robust_ceiling([150.0, 160.0, 292.0, 170.0, 155.0], 250.0, "peak avx512", warnings)
    assert value == 160.0 and spread["best"] == 170.0 and spread["rejected"] == 1
    assert warnings == ["peak avx512: rejected 1 repetition(s) above the physical bound 250.0 (292.0)"]
    # without the bound, one outlier still cannot move the value: it is the second best
    value, _ = ce.robust_ceiling([150.0, 160.0, 292.0, 170.0, 155.0], None, "peak", [])
    assert value == 170.0
    with pytest.raises(ce.CeilingsError, match="every repetition is above the physical bound"):
        ce.robust_ceiling([300.0], 250.0, "peak", [])


def test_a_glitched_repetition_is_rejected_by_measure_ceilings(tmp_path, monkeypatch):
    """Bench binaries that report one impossible repetition (a VM timing glitch), with a 3 GHz clock."""
    stream = {"threads": 1, "elements": 1000, "element_type": "double", "llc_bytes": 1, "llc_source": "x",
              "reps": 3, **{f"{k}_GBs": 20.0 for k in ce.STREAM_KERNELS},
              **{f"{k}_rep_GBs": [19.0, 20.0, 18.0] for k in ce.STREAM_KERNELS}}
    peak = {"threads": 1, "chains": 12, "iterations": 1, "reps": 4, "results": [
        {"isa": "avx512", "gflops": 292.0, "rep_gflops": [156.0, 292.0, 178.0, 170.0]},
        {"isa": "scalar", "gflops": 9.0, "rep_gflops": [9.0, 8.5, 8.9, 8.0]}]}
    for name, data in (("stream", stream), ("peakflops", peak)):
        (tmp_path / name).write_text(f"#!/bin/sh\necho '{json.dumps(data)}'\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setattr(ce, "max_clock_ghz", lambda: (3.0, "test"))
    data = ce.measure_ceilings(tmp_path, [1], tmp_path / "c.json", likwid_bench=False)
    entry = data["per_threads"][0]
    assert entry["peak_gflops"]["avx512"] == 170.0  # 292 > 3 GHz x 64 = 192 dropped; second best of the rest
    assert entry["spread"]["peak_avx512_gflops"]["rejected"] == 1
    assert any("292.0" in w for w in entry["warnings"])
    assert entry["stream_GBs"]["triad"] == 19.0


def test_a_batch_jobs_probe_is_read_from_its_files_and_never_raises(tmp_path):
    # pstudy.measure.slurm: the job leaves the probe's exit status, stdout and stderr in files
    status, out, err = tmp_path / "p.status", tmp_path / "p.json", tmp_path / "p.err"
    read = lambda: ce.peak_beside_of_job("peakflops", status, out, err)  # noqa: E731
    assert "the job left no probe" in read()["error"]  # the job ended before the probe ran
    status.write_text("0\n")
    out.write_text('{"thread_cpus": [0, 1], "results": [{"isa": "avx512", "gflops": 340.5, '
                   '"thread_gflops": [170.0, 170.5]}]}\n')
    assert read() == {"isa": "avx512", "gflops": 340.5, "thread_gflops": [170.0, 170.5], "thread_cpus": [0, 1]}
    status.write_text("2\n")
    err.write_text("peakflops: --isa: no such width\n")
    assert read() == {"error": "peakflops: peakflops failed with exit status 2: peakflops: --isa: no such width"}
    status.write_text("killed\n")
    assert read()["error"].endswith("p.status: not an exit status")
    status.write_text("0\n")
    out.write_text('{"results": []}\n')
    assert read()["error"].startswith("peakflops: unexpected output (IndexError")
