"""`perfstudy predict` end to end on a real sweep of the tiny model with the real binaries
(build/gcc/fast/gpt2-*), and --describe-graph of every variant."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import warm_perfstudy

REPO = Path(__file__).resolve().parents[2]
PERFSTUDY = REPO / "harness" / "perfstudy"
BUILD = REPO / "build" / "gcc" / "fast"

from pstudy.analyse import machinescaling
from pstudy.store import machinefiles, taskgraph, vocabulary

# one process's schedule: a distributed variant (gpt2-mpi) describes none, and predict leaves it out
VARIANTS = [v for v in vocabulary.VARIANTS if not vocabulary.is_distributed(v) and (BUILD / f"gpt2-{v}").exists()]
pytestmark = pytest.mark.skipif(not VARIANTS, reason="no built binaries (make)")

CONFIG = """
[model]
config = "tiny"
B = 4
T = 64

[run]
steps = 3
warmup = 1
repetitions = 1
timeout_s = 60

[sweep]
variants = {variants}
compilers = ["gcc"]
kernels = ["fast"]
threads = [1, 2]
batch_subsize = [2]
token_chunk = [32]

[analysis]
trace = true
ceilings = false
roofline = false
"""

MACHINE = """name = "{name}"
measured = false
cores = 16
peak_gflops_per_core = {peak}
bandwidth_cores = [1, 4, 16]
bandwidth_GBs = [10, 30, 40]
"""


def perfstudy(*args, env=None):
    return warm_perfstudy.perfstudy(*args, env=env, timeout=300, cwd=REPO)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("predict")
    cfg = tmp / "tiny-predict.toml"
    cfg.write_text(CONFIG.format(variants=json.dumps(VARIANTS)))
    proc = perfstudy("run", cfg, "--results-root", tmp / "results")
    assert proc.returncode == 0, proc.stderr
    directory = Path(proc.stdout.strip().splitlines()[-1])
    here = tmp / "here.toml"
    here.write_text(MACHINE.format(name="here", peak=20))
    return directory, here, tmp


def test_describe_graph_of_every_variant(tmp_path):
    for variant in VARIANTS:
        out = tmp_path / f"{variant}.json"
        proc = subprocess.run([BUILD / f"gpt2-{variant}", "--config", "tiny", "--threads", "3",
                               "--batch-subsize", "2", "--token-chunk", "32", "--describe-graph", out],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        g = taskgraph.load(out)
        assert g.variant == variant
        assert sum(g.flops) == sum(op["flops"] for op in g.ops)  # the chunks add up to the step
        if g.schedule == taskgraph.STATIC:
            assert set(g.thread) <= set(range(g.threads))
            assert sorted(set(g.op)) == list(range(len(g.ops)))
        else:
            assert sum(map(len, g.succ)) > 0 and sum(map(len, g.next_succ)) > 0
            # tasks (and starpu, its graph) waits after every phase; taskiter and nosv overlap iterations
            assert g.barrier_per_phase == (variant not in vocabulary.OVERLAPPING_ITERATIONS)


@pytest.mark.parametrize("chunking", [[], ["--tile-columns", "32", "--tile-in-channels", "64"],
                                      ["--batch-subsize", "1", "--tile-sequences", "4"]])
@pytest.mark.parametrize("threads", [1, 2, 4])
def test_described_tiles_add_up_to_their_product(tmp_path, chunking, threads):
    # predict shares an operation's traced time among chunks by these FLOPs: a weight gradient's
    # tile of input channels once reported every input channel's (3x to 12x the product at d12)
    variant = "tasks" if "tasks" in VARIANTS else VARIANTS[-1]
    out = tmp_path / "g.json"
    proc = subprocess.run([BUILD / f"gpt2-{variant}", "--config", "tiny", "--threads", str(threads), *chunking,
                           "--describe-graph", out], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    g = taskgraph.load(out)
    per_op = {}
    for op, flops in zip(g.op, g.flops):
        per_op[op] = per_op.get(op, 0) + flops
    for op, total in per_op.items():
        assert total == pytest.approx(g.ops[op]["flops"], rel=1e-6, abs=len(g.op)), g.ops[op]["label"]


def test_a_graph_that_packs_replays_the_trace_of_one_that_does_not(tmp_path):
    # the automatic chunking keeps the products' rows whole at 1 thread (no pack operations) and
    # cuts them at 4 (a pack pass before each): the operations are numbered differently, and the
    # trace's records must still land on their own operations (matched by label)
    import csv

    variant = "taskiter" if "taskiter" in VARIANTS else VARIANTS[-1]
    binary = BUILD / f"gpt2-{variant}"
    common = ["--config", "tiny", "-B", "4", "-T", "64"]
    graphs = {}
    for p in (1, 4):
        out = tmp_path / f"g{p}.json"
        proc = subprocess.run([binary, *common, "--threads", str(p), "--describe-graph", out],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        graphs[p] = taskgraph.load(out)
    g1, g4 = graphs[1], graphs[4]
    if g1.schedule == taskgraph.STATIC:
        pytest.skip(f"{variant} is not chunked")
    labels1, labels4 = [o["label"] for o in g1.ops], [o["label"] for o in g4.ops]
    packs = [label for label in labels4 if label not in labels1]
    assert packs and all(label.startswith("pack_weight") for label in packs), packs
    trace = tmp_path / "t.csv"
    proc = subprocess.run([binary, *common, "--threads", "1", "--steps", "3", "--trace", trace],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    samples = {}
    with open(trace) as f:
        for r in csv.DictReader(f):
            if int(r["iteration"]) >= 1:
                key = taskgraph.chunk_key(*(int(r[c]) for c in ("op", "b0", "b1", "x0", "x1", "col0", "col1")))
                samples.setdefault(key, []).append(float(r["end_s"]) - float(r["start_s"]))
    medians = {k: sorted(v)[len(v) // 2] for k, v in samples.items()}
    machine = machinefiles.Machine("m", False, 4, 10.0, (1, 4), (10.0, 20.0))
    d4 = machinescaling.source_durations(g4, medians, "t", machine, traced=g1)
    per_label = {}
    for t, d in enumerate(d4):
        per_label[labels4[g4.op[t]]] = per_label.get(labels4[g4.op[t]], 0.0) + d
    traced = {}
    for k, d in medians.items():
        traced[labels1[k[0]]] = traced.get(labels1[k[0]], 0.0) + d
    moved = {}
    for t in range(g4.n_tasks):
        moved[labels4[g4.op[t]]] = moved.get(labels4[g4.op[t]], 0) + g4.bytes[t]
    for label, seconds in traced.items():  # its traced time, and at most its bytes read again
        assert seconds * (1 - 1e-9) <= per_label[label] <= seconds + moved[label] / 10e9 + 1e-12, label
    pack_bytes = sum(g4.bytes[t] for t in range(g4.n_tasks) if labels4[g4.op[t]] in packs)
    assert sum(per_label[label] for label in packs) == pytest.approx(pack_bytes / 10e9, rel=1e-6)


def test_describe_graph_bad_path_is_one_line():
    variant = VARIANTS[0]
    proc = subprocess.run([BUILD / f"gpt2-{variant}", "--config", "tiny", "--describe-graph",
                           "/nonexistent/dir/g.json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2  # refused before any work, one line naming the file
    assert proc.stderr.splitlines() == [f"gpt2-{variant}: /nonexistent/dir/g.json: cannot write task graph: "
                                        "directory /nonexistent/dir: No such file or directory"]


def test_predict_on_a_real_sweep(sweep):
    directory, here, tmp = sweep
    proc = perfstudy("predict", directory, "--source-machine", here, "--threads", "1,2,4")
    assert proc.returncode == 0, proc.stderr
    out = directory / "predict-here"
    pred = (out / "prediction.csv").read_text()
    val = (out / "validation.csv").read_text()
    assert "PREDICTED" in proc.stdout and "error" in proc.stdout
    # one configuration per variant: too few to fit a runtime cost per task, and the output says so
    # measured between the chunks of the 1-thread traces (2 steps after the warm-up): every variant has one
    line = next(x for x in proc.stdout.splitlines() if x.startswith("runtime cost per task (at 1 thread"))
    assert line.count("(traced)") == len(VARIANTS)
    for v in VARIANTS:
        assert f" {v} " in line
    import pandas as pd
    costs = pd.read_csv(out / "prediction.csv").groupby("variant")["runtime_overhead_s"].first()
    assert ((costs >= 0) & (costs < 1e-3)).all() and costs.max() > 0
    # one validation row per measured point (every variant at 1 and 2 threads, seq at 1)
    rows = val.strip().splitlines()[1:]
    expected = sum(1 if vocabulary.is_sequential(v) else 2 for v in VARIANTS)
    assert len(rows) == expected
    for png in ("predict_speedup.png", "predict_efficiency.png", "predict_step_time.png"):
        data = (out / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000
    # forkjoin was described at each core count, the task variants once
    graphs = sorted(p.name for p in (directory / "graphs").iterdir())
    assert any("_t4_" in name for name in graphs)
    # the same inputs give the same prediction, byte for byte
    again = perfstudy("predict", directory, "--source-machine", here, "--threads", "1,2,4")
    assert again.returncode == 0, again.stderr
    assert (out / "prediction.csv").read_text() == pred
    assert (out / "validation.csv").read_text() == val


def test_graphs_kept_from_another_build_are_named(sweep, tmp_path):
    # predict keeps the graphs it describes; once the binary is rebuilt it says so, once per binary
    directory, here, _ = sweep
    copy = tmp_path / directory.name
    # without the predictions other tests of the shared sweep may have written (from other options)
    shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("predict-*"))
    proc = perfstudy("predict", copy, "--source-machine", here, "--threads", "1,2")
    assert proc.returncode == 0, proc.stderr
    assert "described by another build" not in proc.stderr
    origins = sorted((copy / "graphs").glob("*.origin.json"))
    assert origins, "predict kept no origin record beside its graphs"
    record = json.loads(origins[0].read_text())
    stale = [o for o in origins if json.loads(o.read_text())["binary"] == record["binary"]]
    for o in stale:
        o.write_text(json.dumps({"binary": record["binary"], "sha256": "0" * 64}))
    proc = perfstudy("predict", copy, "--source-machine", here, "--threads", "1,2")
    assert proc.returncode == 0, proc.stderr
    warned = [ln for ln in proc.stderr.splitlines() if "described by another build" in ln]
    assert warned == [f"perfstudy predict: warning: {copy / 'graphs'}: {len(stale)} task graph(s) were described by "
                      f"another build of {record['binary']}; they are reused as they are (move the folder aside "
                      "to describe them with this build)"]


VM16_CEILINGS = REPO / "docs" / "studies" / "2026-11-27-xeon-emr-vm16" / "ceilings.json"


def test_ceilings_from_another_boot_of_the_machine_are_named(sweep, tmp_path):
    # a VM keeps its name from one start to the next while its vCPUs may be placed anew:
    # ceilings measured at another start calibrate a machine the runs may not have had
    directory, _, _ = sweep
    copy = tmp_path / directory.name
    shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("predict-*"))
    runs_boot = json.loads((copy / "meta.json").read_text())["system"]["boot_id"]
    assert runs_boot == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    ceilings = json.loads(VM16_CEILINGS.read_text())
    for boot, warned in ((runs_boot, False), ("0" * 8 + runs_boot[8:], True)):
        ceilings["host"]["boot_id"] = boot
        (copy / "ceilings.json").write_text(json.dumps(ceilings))
        proc = perfstudy("predict", copy, "--threads", "1,2")
        assert proc.returncode == 0, proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if "another boot" in ln]
        assert lines == ([f"perfstudy predict: warning: {copy / 'ceilings.json'}: measured on another boot of the "
                          f"machine than the runs (boot id 00000000 against {runs_boot[:8]} in meta.json): its "
                          "curves calibrate the contention model for a machine the runs may not have had"]
                         if warned else [])


def test_predict_for_another_machine_scales_with_its_peak(sweep):
    directory, here, tmp = sweep
    fast = tmp / "fast.toml"
    # twice the peak and twice the bandwidth: every kernel twice as fast (with the same bandwidth, the
    # memory-bound chunks would stretch instead); the runtime's cost per task, a time measured on the
    # source, stays as it is
    fast.write_text(MACHINE.format(name="twice", peak=40).replace("[10, 30, 40]", "[20, 60, 80]"))
    proc = perfstudy("predict", directory, "--source-machine", here, "--machine", fast, "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    if not (directory / "predict-here" / "prediction.csv").exists():  # made by another test, unless alone
        assert perfstudy("predict", directory, "--source-machine", here, "--threads", "1").returncode == 0
    import pandas as pd
    base = pd.read_csv(directory / "predict-here" / "prediction.csv")
    other = pd.read_csv(directory / "predict-twice" / "prediction.csv")
    from pstudy.store import taskgraph
    one, twice = base[base["threads"] == 1], other[other["threads"] == 1]
    # a variant's cost per task is measured from its traces and clipped at 0, where the tiny model's
    # few gaps between chunks came out within the clock's noise under load: some variant must have
    # one, or the equality below would hold of nothing
    assert (one["runtime_overhead_s"] > 0).any()
    for v in twice["variant"].unique():
        b, o = one[one["variant"] == v].iloc[0], twice[twice["variant"] == v].iloc[0]
        assert o["runtime_overhead_s"] == b["runtime_overhead_s"] >= 0
        [graph] = [g for g in (directory / "graphs").glob(f"{v}_gcc_fast_t1_*.json")
                   if not g.name.endswith(".origin.json")]
        runtime = b["runtime_overhead_s"] * taskgraph.load(graph).n_tasks
        assert o["predicted_step_s"] == pytest.approx((b["predicted_step_s"] - runtime) / 2 + runtime, rel=0.02)


def test_predict_bad_input_exits_2_with_one_line(sweep, tmp_path):
    directory, here, tmp = sweep
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nmeasured = false\ncores = 0\n')
    proc = perfstudy("predict", directory, "--source-machine", here, "--machine", bad)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "bad.toml: cores" in proc.stderr
    proc = perfstudy("predict", directory)  # no ceilings.json and no --source-machine
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "ceilings.json: missing" in proc.stderr
    proc = perfstudy("predict", directory, "--source-machine", here, "--threads", "64")
    assert proc.returncode == 2 and "exceeds the machine's 16 cores" in proc.stderr


def test_predict_best_on_a_real_sweep(sweep):
    """--best ranks every configuration at each P (ranks 1..n), says what bounds it, writes best.csv,
    and gives the same file twice."""
    directory, here, tmp = sweep
    proc = perfstudy("predict", directory, "--source-machine", here, "--best", "--threads", "1,2,4", "--no-mpi")
    assert proc.returncode == 0, proc.stderr
    import pandas as pd
    path = directory / "predict-here" / "best.csv"
    text = path.read_text()
    frame = pd.read_csv(path)
    assert sorted(set(frame["threads"])) == [1, 2, 4]
    for p, group in frame.groupby("threads"):
        assert sorted(group["rank"]) == list(range(1, len(group) + 1))
        ordered = group.sort_values("rank")["predicted_step_s"].tolist()
        assert ordered == sorted(ordered)
    assert set(frame["bound"]) <= {"load balance", "dependencies", "bandwidth", "compute"}
    # the chunked variants at chunkings the sweep never ran (B=4: batch_subsize 1, 2, 4) and at the one
    # the binary chooses for P itself (auto, 0 in the tables as in steps.csv)
    chunked = frame[frame["variant"].map(vocabulary.is_chunked)]
    assert set(chunked["batch_subsize"]) == {vocabulary.AUTO, 1, 2, 4}
    assert "BEST on here" in proc.stdout and "bound:" in proc.stdout
    again = perfstudy("predict", directory, "--source-machine", here, "--best", "--threads", "1,2,4", "--no-mpi")
    assert again.returncode == 0 and path.read_text() == text
