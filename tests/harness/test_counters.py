"""Counter backends: parsers on recorded/constructed tool outputs, detection for real here,
and the C region layer (core/counters.c) built and run per backend."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pstudy.measure import counters as c

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "counters"


def read(name):
    return (DATA / name).read_text()


# ------------------------------------------------------------------ likwid CSV

def test_zen3_mem1_regions_threads_and_info():
    parsed = c.parse_likwid_csv(read("zen3_mem1_2regions_2threads.csv"), "zen3_mem1")
    assert parsed["info"]["CPU type"] == "AMD K19 (Zen3) architecture"
    assert set(parsed["regions"]) == {"matmul_forward", "layernorm_forward"}
    for region in parsed["regions"].values():
        assert region["group"] == "MEM1"
        assert region["cpus"] == [0, 1]
        assert region["calls"] == {0: 24, 1: 24}
        assert set(region["runtime_s"]) == {0, 1}
        assert set(region["metric_stats"]) == set(region["metrics"])


def test_zen3_metrics_agree_with_raw_dram_events():
    # Volume must be 64 bytes per DRAM_CHANNEL count, summed over channels and
    # threads: ties the Metric table to the Raw table the parser read separately.
    parsed = c.parse_likwid_csv(read("zen3_mem1_2regions_2threads.csv"))
    for name, region in parsed["regions"].items():
        lines = sum(v for ev, per_cpu in region["events"].items() if ev.startswith("DRAM_CHANNEL_")
                    for v in per_cpu.values())
        assert region["counters"]["DRAM_CHANNEL_0"] == "DFC0"
        summary = c.region_summary(parsed)[name]
        assert summary["memory_volume_GB"] == pytest.approx(lines * 64 / 1e9, rel=1e-3)
        assert summary["memory_bandwidth_MBs"] == pytest.approx(
            summary["memory_volume_GB"] * 1e3 / region["runtime_s"][0], rel=1e-3)
        # uncore counters count on one thread per socket
        assert region["metrics"]["Memory data volume (channels 0-3) [GBytes]"][1] == 0


def test_zen3_mem1_plus_mem2_sums_channels():
    s1 = c.region_summary(c.parse_likwid_csv(read("zen3_mem1_2regions_2threads.csv")))
    s2 = c.region_summary(c.parse_likwid_csv(read("zen3_mem2_2regions_2threads.csv")))
    both = c.combine_channel_groups(s1, s2)
    for name in both:
        assert both[name]["groups"] == ["MEM1", "MEM2"]
        assert both[name]["memory_volume_GB"] == pytest.approx(
            s1[name]["memory_volume_GB"] + s2[name]["memory_volume_GB"])
    # the streaming kernel moves far more bytes per second than the GEMM
    assert both["layernorm_forward"]["memory_bandwidth_MBs"] > 5 * both["matmul_forward"]["memory_bandwidth_MBs"]
    with pytest.raises(c.CountersFormatError, match="different regions"):
        c.combine_channel_groups(s1, {"matmul_forward": s2["matmul_forward"]})


def test_intel_mem_total_is_read_plus_write():
    parsed = c.parse_likwid_csv(read("skx_mem_2regions_2threads.csv"))
    summary = c.region_summary(parsed)
    for name, region in parsed["regions"].items():
        m = region["metric_stats"]
        assert summary[name]["memory_bandwidth_MBs"] == pytest.approx(
            m["Memory read bandwidth [MBytes/s]"]["sum"] + m["Memory write bandwidth [MBytes/s]"]["sum"], rel=1e-3)
        assert summary[name]["group"] == "MEM"


def test_likwid_csv_errors_name_source_and_line():
    text = read("skx_mem_2regions_2threads.csv")
    lines = text.splitlines()
    truncated = "\n".join(ln for ln in lines if not ln.startswith("CAS_COUNT_WR,MBOX5C1"))
    with pytest.raises(c.CountersFormatError, match=r"^skx\.csv:\d+: Raw table declares 15 rows, has 14"):
        c.parse_likwid_csv(truncated, "skx.csv")
    with pytest.raises(c.CountersFormatError, match="no TABLE lines"):
        c.parse_likwid_csv("Runtime,1.0\n", "x.csv")
    bad_number = text.replace("CPI,", "CPI,abc,", 1)
    with pytest.raises(c.CountersFormatError, match="x.csv:"):
        c.parse_likwid_csv(bad_number, "x.csv")
    two_groups = text + text.replace("Group 1", "Group 2").replace(",MEM,", ",L3,")
    with pytest.raises(c.CountersFormatError, match="one group per likwid-perfctr call"):
        c.parse_likwid_csv(two_groups, "x.csv")


def test_likwid_group_listing_and_status_recorded_here():
    groups = c.likwid_groups(read("zen3_likwid_groups.txt"))
    assert "MEM1" in groups and "FLOPS_SP" in groups and "Group" not in groups
    assert c.likwid_memory_groups(groups) == ["MEM1", "MEM2"]
    assert c.likwid_memory_groups(["MEM", "MEM1", "MEM2"]) == ["MEM"]
    assert c.likwid_memory_groups(["CLOCK", "MEM1"]) == []
    ok, reason = c.likwid_status(read("zen3_likwid_groups.txt"), 1, read("vm_likwid_probe.txt"))
    assert not ok and "MSRs" in reason and "MEM1" in reason
    ok, reason = c.likwid_status(read("zen3_likwid_groups.txt"), 0, "CPU name:\tAMD EPYC\n")
    assert ok and "MEM1+MEM2" in reason
    ok, reason = c.likwid_status("Group name\tDescription\n  CLOCK\tCycles\n", 0, "")
    assert not ok and "no memory group" in reason


def test_likwid_command():
    argv = c.likwid_command(["build/gpt2-tasks", "--steps", 2], "MEM1", [0, 1], "out/mem1.csv")
    assert argv == ["likwid-perfctr", "-C", "0,1", "-m", "-g", "MEM1", "-o", "out/mem1.csv",
                    "build/gpt2-tasks", "--steps", "2"]
    assert "-m" not in c.likwid_command(["true"], "MEM", "0-3", "x.csv", marker=False)
    with pytest.raises(ValueError, match="group"):
        c.likwid_command(["true"], "MEM;rm", "0", "x.csv")
    with pytest.raises(ValueError, match="cpulist"):
        c.likwid_command(["true"], "MEM", "zero", "x.csv")


# ------------------------------------------------------------------ PAPI

def test_papi_status_on_this_vm_recording():
    ok, reason = c.papi_status(read("vm_papi_component_avail.txt"), read("vm_papi_command_line.txt"))
    assert not ok
    assert reason == "PAPI lists 6 counters but adding PAPI_TOT_CYC fails: Event does not exist"


def test_papi_status_variants():
    components = read("vm_papi_component_avail.txt")
    ok, reason = c.papi_status(components, read("papi_success_command_line.txt"))
    assert ok and "6 counters" in reason
    zero = re.sub(r"(Native: \d+, Preset: \d+, Counters: )6", r"\g<1>0", components)
    assert zero != components
    assert c.papi_status(zero, "") == (False, "PAPI perf_event component: 0 hardware counters")
    disabled = components.replace("Name:   perf_event              Linux perf_event CPU counters",
                                  "Name:   perf_event              Linux perf_event CPU counters\n"
                                  "   \\-> Disabled: Insufficient permissions for uncore access.", 1)
    ok, reason = c.papi_status(disabled, "")
    assert not ok and "Insufficient permissions" in reason


def test_parse_papi_regions():
    parsed = c.parse_papi_regions(read("papi_regions_2threads.txt"), "papi.txt")
    assert parsed["events"] == ["PAPI_TOT_CYC", "PAPI_TOT_INS", "PAPI_L2_DCM"]
    assert parsed["threads"] == 2 and parsed["unavailable"] is None
    assert parsed["regions"]["matmul_forward"][1] == {"calls": 24, "PAPI_TOT_CYC": 5510600000,
                                                      "PAPI_TOT_INS": 30900000000, "PAPI_L2_DCM": 50990871}
    assert c.parse_papi_regions("papi unavailable: no PMU\n")["unavailable"] == "no PMU"
    with pytest.raises(c.CountersFormatError, match=r"papi.txt:2: missing PAPI_TOT_INS"):
        c.parse_papi_regions("papi events=PAPI_TOT_CYC,PAPI_TOT_INS threads=1\n"
                             "papi region=a thread=0 calls=1 PAPI_TOT_CYC=5\n", "papi.txt")
    with pytest.raises(c.CountersFormatError, match="before the 'papi events=' header"):
        c.parse_papi_regions("papi region=a thread=0 calls=1\n")
    with pytest.raises(c.CountersFormatError, match="no 'papi events='"):
        c.parse_papi_regions("nothing here\n", "run.log")


# ------------------------------------------------------------------ perf

def test_perf_recorded_here_is_not_supported():
    rows = c.parse_perf_stat_csv(read("vm_perf_stat.csv"))
    assert [(r["event"], r["status"], r["value"]) for r in rows] == [
        ("cycles", "<not supported>", None), ("instructions", "<not supported>", None)]
    ok, reason = c.perf_status(0, read("vm_perf_stat.csv"))
    assert not ok and "cycles <not supported>" in reason
    ok, reason = c.perf_status(255, "Error:\nAccess to performance monitoring is restricted; perf_event_paranoid=4\n")
    assert not ok and "perf_event_paranoid" in reason


def test_perf_amd_events_and_per_cpu_totals():
    rows = c.parse_perf_stat_csv(read("zen3_perf_stat.csv"))
    by_event = {r["event"]: r for r in rows}
    assert by_event["task-clock"]["unit"] == "msec"
    assert by_event["instructions"]["metric_unit"] == "insn per cycle"
    assert by_event["ls_dmnd_fills_from_sys.mem_io_local"]["percent_measured"] == 50.0
    assert by_event["amd_df/local_socket_inbound_data_beats_dram_0/"]["status"] == "<not counted>"
    per_cpu = c.parse_perf_stat_csv(read("zen3_perf_stat_per_cpu.csv"))
    assert {r["cpu"] for r in per_cpu} == {"CPU0", "CPU1"}
    totals = c.perf_totals(per_cpu)
    assert totals["cycles"] == 4365521001 + 4365724111
    ok, _ = c.perf_status(0, "8731245112,,cycles,3012101223,100.00,,\n15212330981,,instructions,3012101223,100.00,,\n")
    assert ok
    with pytest.raises(c.CountersFormatError, match="p.csv:1"):
        c.parse_perf_stat_csv("hello,world\n", "p.csv")


# ------------------------------------------------------------------ detection, for real

def test_detect_backend_on_this_machine_never_raises():
    result = c.detect_backend()
    assert set(result) == {"backend", "reason", "reasons"}
    assert result["backend"] in (None,) + c.BACKENDS
    if result["backend"] is None:
        # the development VM: every backend tried, each with its own reason
        assert set(result["reasons"]) == set(c.BACKENDS)
        assert result["reason"].startswith("unavailable: likwid: ")
        for name, reason in result["reasons"].items():
            assert reason and f"{name}: {reason}" in result["reason"]
    else:
        assert result["reasons"][result["backend"]] == result["reason"]


def test_detect_backend_choices():
    assert c.detect_backend("none") == {"backend": None, "reason": "disabled by request", "reasons": {}}
    only_perf = c.detect_backend("perf")
    assert set(only_perf["reasons"]) == {"perf"}
    with pytest.raises(ValueError, match="expected one of"):
        c.detect_backend("vtune")


# ------------------------------------------------------------------ the C layer

def _build_demo(tmp_path, define, libs):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path / f"demo{define or ''}"
    argv = ["nice", "-n", "10", cc, "-std=c11", "-O2", "-fopenmp", "-Wall", "-Wextra", "-Werror",
            f"-I{REPO / 'core'}"] + ([define] if define else []) + \
           ["-o", str(exe), str(REPO / "tests/c/counters_demo.c"), str(REPO / "core/counters.c")] + libs
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return exe


def _run_demo(exe):
    env = dict(os.environ, OMP_NUM_THREADS="2")
    env.pop("LIKWID_EVENTS", None)
    proc = subprocess.run([str(exe), "3"], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_counters_c_without_backend_prints_nothing(tmp_path):
    assert _run_demo(_build_demo(tmp_path, None, [])) == ""


@pytest.mark.skipif(not Path("/usr/include/papi.h").exists(), reason="papi.h absent (Debian: libpapi-dev)")
def test_counters_c_papi_output_parses(tmp_path):
    parsed = c.parse_papi_regions(_run_demo(_build_demo(tmp_path, "-DUSE_PAPI", ["-lpapi"])), "counters_demo")
    if parsed["unavailable"] is not None:
        assert parsed["regions"] == {} and parsed["unavailable"]
    else:
        assert set(parsed["regions"]) == {"sum_of_squares", "scale"}
        for per_thread in parsed["regions"].values():
            assert set(per_thread) == {0, 1}
            assert all(t["calls"] == 3 and t["PAPI_TOT_CYC"] > 0 for t in per_thread.values())


@pytest.mark.skipif(not Path("/usr/include/likwid.h").exists(), reason="likwid.h absent (Debian: likwid)")
def test_counters_c_likwid_outside_perfctr_says_so(tmp_path):
    out = _run_demo(_build_demo(tmp_path, "-DUSE_LIKWID", ["-llikwid"]))
    assert out == "likwid unavailable: not run under likwid-perfctr -m (LIKWID_EVENTS unset)\n"
