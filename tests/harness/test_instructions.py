"""Instruction counts per kernel (`perfstudy regress --metric instructions`, pstudy/instructions.py):
the callgrind parser on known input, the kernel map against the step's operation kinds, the
verdicts, the history rows and figures, bad input; and, with valgrind, the real binaries: two
runs of one build count the same, a 2% extra work in one kernel (a test-only build flag) is
flagged there and nowhere else, 0.5% is reported but not flagged.
"""

import re
import shutil

import pandas as pd
import pytest
import warm_perfstudy

from conftest import REPO
from pstudy.store import history, sweep
from pstudy.measure import instructions
from pstudy.errors import StudyError

CALLGRIND = """# callgrind format
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 1000

ob=(1) /bin/x
fl=(1) core/step.c
fn=(1) op_run
10 5
cfl=(2) core/kernels_fast.c
cfn=(2) gelu_forward
calls=2 20
11 300
cfn=(3) matmul_forward_block
calls=1 30
+1 400
fl=(2)
fn=(2)
20 100
cfn=(4) exp_poly_helper
calls=10 40
21 200
fn=(4)
40 200
fn=(3)
30 400
fn=(5) main
1 95
cfn=(1)
calls=1 10
2 705
"""


def test_callgrind_parser_gives_inclusive_counts(tmp_path):
    path = tmp_path / "cg.out"
    path.write_text(CALLGRIND)
    inclusive, total = instructions.parse(path)
    assert total == 1000
    assert inclusive["gelu_forward"] == 300          # own 100 + the 200 of its callee
    assert inclusive["matmul_forward_block"] == 400
    assert inclusive["op_run"] == 705
    counts = instructions.attribute(inclusive, total)
    assert counts["gelu_fwd"] == 300 and counts["matmul_fwd"] == 400 and counts["adamw"] == 0
    assert counts["other"] == 300 and counts["total"] == 1000


@pytest.mark.parametrize("text, problem", [
    ("", "no 'events: Ir' line"),
    ("events: Ir\nfn=(1)\n1 2\nsummary: 2\n", "used before it is defined"),
    ("events: Ir\n1 2\n", "a cost line before any fn="),
    ("events: Ir\nfn=(1) f\n1 2\n", "without a total"),
])
def test_callgrind_parser_names_the_file_and_the_problem(tmp_path, text, problem):
    path = tmp_path / "bad.out"
    path.write_text(text)
    with pytest.raises(StudyError, match=re.escape(str(path)) + ".*" + re.escape(problem)):
        instructions.parse(path)


def test_kernel_map_covers_the_step_and_names_real_functions():
    """Every operation kind of core/step.c has its entry functions, and each is defined in core/."""
    text = (REPO / "core" / "step.c").read_text()
    names = re.search(r"OP_KIND_NAMES\[NUM_OP_KINDS\] = \{(.*?)\};", text, re.S).group(1)
    assert list(instructions.KERNEL_FUNCTIONS) == re.findall(r'"([a-z_]+)"', names)
    sources = "".join(p.read_text() for p in (REPO / "core").glob("*.c"))
    for kind, functions in instructions.KERNEL_FUNCTIONS.items():
        for fn in functions:
            assert re.search(rf"^\w[\w *]*\b{fn}\(", sources, re.M), f"{kind}: {fn} is not defined in core/"


def fake_results(base, candidate, threads=1):
    """[(role, Run, counts)] with the given {kernel: [counts per repetition]} per side."""
    point = sweep.Point("seq", "gcc", "fast", threads, None, None)
    out = []
    for role, table in (("base", base), ("candidate", candidate)):
        reps = len(next(iter(table.values())))
        for rep in range(reps):
            counts = {k: 1000 for k in instructions.KERNELS}
            counts.update({k: v[rep] for k, v in table.items()})
            out.append((role, sweep.Run(point, rep), counts))
    return out


def status_of(table, kernel):
    return table.set_index("kernel").loc[kernel, "status"]


def test_verdicts_threshold_floor_spread_and_threads():
    t = instructions.compare(fake_results({"gelu_fwd": [100000], "adamw": [100000], "loss_mean": [100]},
                                          {"gelu_fwd": [102000], "adamw": [100500], "loss_mean": [150]}))
    assert status_of(t, "gelu_fwd") == "REGRESSED"
    assert status_of(t, "adamw") == "slower, below threshold"
    assert status_of(t, "loss_mean") == "slower, difference too small to gate"  # +50%, but 50 instructions
    assert status_of(t, "matmul_fwd") == "same"
    # ranks, the tile keys, starpu_sched and the distributed knobs: NA
    assert instructions.regressed(t) == [(sweep.Point("seq", "gcc", "fast", 1),
                                          "gelu_fwd")]
    # a change must clear the spread between repetitions; overlapping ranges are the same
    t = instructions.compare(fake_results({"gelu_fwd": [100000, 101500]}, {"gelu_fwd": [102000, 102000]}))
    assert status_of(t, "gelu_fwd") == "slower, below threshold"
    t = instructions.compare(fake_results({"total": [100000, 100040]}, {"total": [100030, 100030]}))
    assert status_of(t, "total") == instructions.WITHIN_SPREAD
    # other and total of 2-thread points vary (spinning): never gated; their kernels are
    t = instructions.compare(fake_results({"total": [100000], "gelu_fwd": [1000]},
                                          {"total": [150000], "gelu_fwd": [2000]}, threads=2))
    assert status_of(t, "total") == instructions.NOT_GATED
    assert status_of(t, "gelu_fwd") == "REGRESSED"


OLD_HISTORY = ",".join(c for c in history.TIME_COLUMNS  # before ranks, the tile keys, starpu_sched and
                       if c not in ("ranks", "tile_columns", "tile_in_channels", "tile_sequences",  # the knobs
                                    "tiles_per_product", "starpu_sched", "update", "collective", "overlap",
                                    "comm_threads")) + "\n" + (
    "2026-01-01T00:00:00+00:00,{c},{s},False,{b},regression,abc,host,seq,gcc,fast,1,NA,NA,step,0.01,0.01,"
    "1.0,0.9,1.1,0.5,NA,False,results/regress/x\n").format(c="a" * 40, s="a" * 7, b="b" * 40)


def test_history_gains_counts_and_plots_them(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text(OLD_HISTORY)  # written before instruction counts: read as time rows, migrated on append
    assert list(history.read(path)["metric"]) == ["time"]
    for i, extra in enumerate((0, 2000)):
        table = instructions.compare(fake_results({"gelu_fwd": [100000]}, {"gelu_fwd": [100000 + extra]}))
        history.append_instructions(path, table, date=f"2026-01-0{i + 2}T00:00:00+00:00", commit=f"{i}" * 40,
                                    dirty=False, base_commit="b" * 40, config="regression-counts",
                                    config_digest="d", host="host", session=f"results/regress/s{i}")
    frame = history.read(path)
    assert path.read_text().splitlines()[0].split(",") == history.COLUMNS
    counts = frame[frame["metric"] == "instructions"]
    assert len(counts) == 2 * len(instructions.KERNELS)
    gelu = counts[counts["kernel"] == "gelu_fwd"]
    assert list(gelu["instructions"]) == [100000, 102000]
    assert list(gelu["regressed"]) == [False, True]
    assert gelu["ratio_to_previous"].iloc[1] == pytest.approx(1.02)
    done = warm_perfstudy.perfstudy("history", "--history", str(path), "--plots-root", str(tmp_path / "p"),
                                    "--formats", "png", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "1 instruction-count regression(s)" in done.stdout and "gelu_fwd: x1.0200" in done.stdout
    figures = sorted(p.name for p in (tmp_path / "p" / "history").iterdir())
    assert "history_regression-counts_host_instructions_seq_gcc_fast_t1_bsNA_kNA.png" in figures
    assert "history_regression_host_step_gcc-fast.png" in figures


def test_bad_metric_in_a_config_is_one_line_and_exit_2(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text((REPO / "configs" / "regression-counts.toml").read_text().replace(
        'metric = "instructions"', 'metric = "cycles"'))
    done = warm_perfstudy.perfstudy("regress", "--config", str(config), timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == f"perfstudy regress: {config}: regress.metric: expected one of time, " \
        "instructions, got 'cycles'"


# ---------------------------------------------------------------------------------------------
# the real binaries under valgrind

COUNT_CONFIG = """
[model]
config = "tiny"
B = 2
T = 32

[run]
steps = 1
warmup = 0
repetitions = {repetitions}
timeout_s = 300

[sweep]
variants = ["seq"]
threads = [1]

[regress]
metric = "instructions"
"""


@pytest.fixture(scope="module")
def count_builds(tmp_path_factory):
    """Three instruction-count builds of gpt2-seq (gcc/fast) from this checkout: plain, and with 2% and
    0.5% extra work in gelu_fwd. The plain one is built in full; the others are copies of it in which
    make rebuilds only what the flag changes (kernels_fast.c, the one file that includes extra_work.h
    in the fast set) and links."""
    if not shutil.which("valgrind"):
        pytest.skip("valgrind not installed")
    from pstudy.store import config as configmod
    from pstudy.analyse import regress

    root = tmp_path_factory.mktemp("counts")
    study = configmod.from_dict({"model": {"config": "tiny", "B": 2, "T": 32}, "run": {"steps": 1},
                                 "sweep": {"variants": ["seq"]}}, "test")
    plain = root / "plain"
    plain.mkdir()
    for item in ("Makefile", "core", "variants", "probes", "bench", "scripts"):
        src = REPO / item
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, plain / item)
    regress.build_for_counts(plain, study, 2, root / "plain.log")
    trees = {"plain": plain}
    for name, permille in (("extra20", 20), ("extra5", 5)):
        tree = root / name
        shutil.copytree(plain, tree, symlinks=True)
        (tree / "core" / "kernels_fast.c").touch()
        regress.build_for_counts(tree, study, 2, root / f"{name}.log",
                                 ["-DPERFSTUDY_EXTRA_WORK_KERNEL=gelu_fwd", f"-DPERFSTUDY_EXTRA_WORK_PERMILLE={permille}"])
        assert "kernels_fast.c" in (root / f"{name}.log").read_text()
        trees[name] = tree
    return root, trees


def regress_counts(root, base, candidate, repetitions, tag):
    config = root / f"counts{repetitions}.toml"
    config.write_text(COUNT_CONFIG.format(repetitions=repetitions))
    done = warm_perfstudy.perfstudy("regress", "--config", str(config), "--base-build", str(base / "build"),
                                    "--candidate-build", str(candidate / "build"), "--results-root", str(root / tag),
                                    "--no-history", "--jobs", "2", timeout=600)
    sessions = list((root / tag / "regress").iterdir())
    assert len(sessions) == 1, done.stderr
    table = pd.read_csv(sessions[0] / "regress.csv")
    counts = pd.read_csv(sessions[0] / instructions.COUNTS_FILE)
    return done, table, counts


def test_counts_are_identical_across_runs_and_a_2_percent_kernel_change_is_flagged_there_only(count_builds):
    root, trees = count_builds
    # the same build, 2 runs per side: 4 runs whose kernel counts are identical
    done, table, counts = regress_counts(root, trees["plain"], trees["plain"], 2, "same")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "-mavx2 -mfma" in done.stdout and "AVX-512" in done.stdout
    kernels = counts[~counts["kernel"].isin(["other", "total"])]
    assert (kernels.groupby("kernel")["instructions"].nunique() == 1).all()
    assert (kernels.groupby("kernel")["instructions"].size() == 4).all()
    total = counts[counts["kernel"] == "total"]["instructions"]
    assert total.max() / total.min() - 1 < 1e-5  # only the printing of measured times differs
    assert set(table[~table["kernel"].isin(["other", "total"])]["status"]) == {"same"}
    # other and total differ by the digits of the printed times: never a change beyond the floor
    assert set(table["status"]) <= {"same", instructions.WITHIN_SPREAD, "faster, below threshold",
                                    "slower, below threshold", "slower, difference too small to gate"}
    # 2% more work in gelu_fwd: flagged, in gelu_fwd alone (exit 1)
    done, table, _ = regress_counts(root, trees["plain"], trees["extra20"], 1, "extra20")
    assert done.returncode == 1, done.stdout + done.stderr
    flagged = table[table["status"] == "REGRESSED"]
    assert list(flagged["kernel"]) == ["gelu_fwd"], table.to_string()
    gelu = table.set_index("kernel").loc["gelu_fwd"]
    assert 1.015 < gelu["ratio"] < 1.025
    changed = table[table["status"] != "same"]
    assert set(changed["kernel"]) <= {"gelu_fwd", "other", "total"}, table.to_string()
    assert "REGRESSION (1 instruction counts): seq gcc/fast t=1 gelu_fwd" in done.stdout
    # 0.5%: reported, not flagged at the 1% threshold (exit 0)
    done, table, _ = regress_counts(root, trees["plain"], trees["extra5"], 1, "extra5")
    assert done.returncode == 0, done.stdout + done.stderr
    gelu = table.set_index("kernel").loc["gelu_fwd"]
    assert gelu["status"] == "slower, below threshold" and 1.003 < gelu["ratio"] < 1.007
    assert "gelu_fwd" in done.stdout and "REGRESSED" not in done.stdout
