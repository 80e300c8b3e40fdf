"""The runtime's own trace: `make` builds ovni and ovniemu, a traced sweep of gpt2-nosv records nOS-V's
ovni trace, `perfstudy trace` turns it into Paraver traces that show nOS-V's worker threads running
the chunk tasks, and a gpt2-nosv built without ovni refuses the runtime trace in one line."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from variant_helpers import ROOT, binary, run, tiny_sweep

from pstudy.store import ovnitrace

pytestmark = pytest.mark.needs("nosv", "ovni")
TINY_RUN = ["--config", "tiny", "-B", "2", "-T", "8", "--steps", "1", "--threads", "2"]
OVNIEMU = ROOT / "build" / "ovni" / "install" / "bin" / "ovniemu"
PERFSTUDY = ROOT / "harness" / "perfstudy"
SWEEP = tiny_sweep(["nosv"], [2], seed=7, trace=True, timeout_s=60)


def needs_ovni():
    if not os.access(OVNIEMU, os.X_OK) or not ovnitrace.linked(binary("nosv")):
        pytest.fail(f"{OVNIEMU} or a gpt2-nosv linked with libovni is missing: run `make`")


def test_the_build_has_ovniemu_and_gpt2_nosv_on_libovni():
    needs_ovni()
    r = subprocess.run([str(OVNIEMU), "-h"], capture_output=True, text=True, timeout=30)
    assert "nosv" in r.stderr  # its usage lists the models it emulates, nOS-V's among them
    lib = ROOT / "build" / "ovni" / "install" / "lib" / "libovni.so.1"
    assert lib.exists()


def prv_records(path):
    """{record kind: [fields]} of a .prv after its header line, which it checks."""
    lines = Path(path).read_text().splitlines()
    assert re.match(r"#Paraver \(\d\d/\d\d/\d+ at \d\d:\d\d\):\d+_ns:", lines[0]), lines[0]
    assert ovnitrace.check_prv(path) == []
    out = {}
    for line in lines[1:]:
        fields = line.split(":")
        out.setdefault(fields[0], []).append([int(f) for f in fields[1:]])
    return out


def pcf_event_type(pcf, title):
    """(type number, {value: label}) of the event type of a .pcf whose title starts with `title`."""
    text = Path(pcf).read_text()
    m = re.search(r"EVENT_TYPE\n0\s+(\d+)\s+" + re.escape(title) + r".*?\nVALUES\n(.*?)(?:\n\n|\Z)", text, re.S)
    assert m, f"{pcf}: no event type {title!r}"
    values = dict(line.split(None, 1) for line in m.group(2).splitlines() if line.strip())
    return int(m.group(1)), {int(v): label.strip() for v, label in values.items()}


# serial: the alignment's residual is how long a worker ran between its two clocks' reads, which
# another test's process beside it stretches by a preemption
@pytest.mark.serial
def test_a_traced_nosv_sweep_gives_a_paraver_trace_of_the_runtime(tmp_path):
    needs_ovni()
    config = tmp_path / "nosv.toml"
    config.write_text(SWEEP)
    env = {**os.environ, "PERFSTUDY_BUILD_DIR": str(ROOT / "build"), "PERFSTUDY_RESULTS": str(tmp_path / "results"),
           "PERFSTUDY_PLOTS": str(tmp_path / "plots"), "OMP_WAIT_POLICY": "passive"}
    r = subprocess.run([str(PERFSTUDY), "run", "--no-summary", str(config)], capture_output=True, text=True,
                       env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    [directory] = [d for d in (tmp_path / "results").iterdir() if d.is_dir()]
    [recorded] = (directory / "traces").glob("*.ovni")
    assert list(recorded.glob("loom.*/proc.*/thread.*/stream.obs"))
    r = subprocess.run([str(PERFSTUDY), "trace", str(directory), "--format", "paraver", "--out", str(tmp_path / "x")],
                       capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    printed = [Path(p) for p in r.stdout.split()]
    stem = recorded.name.removesuffix(".ovni")
    # the project's own trace and the runtime's, by thread and by CPU, side by side
    assert {p.name for p in printed} == {f"{stem}{v}{s}" for v in ("", ".ovni-thread", ".ovni-cpu")
                                         for s in (".prv", ".pcf", ".row")} | {f"{stem}.ovni-align.txt"}
    thread_prv = tmp_path / "x" / f"{stem}.ovni-thread.prv"
    records = prv_records(thread_prv)
    # ovniemu writes every channel, a thread's state among them, as events
    assert records.get("2") and set(records) <= {"1", "2", "3"}
    state, states = pcf_event_type(thread_prv.with_suffix(".pcf"), "Thread: thread state")
    assert "Running" in states.values() and any(t == state for e in records["2"] for t in e[5::2])
    task_type, labels = pcf_event_type(thread_prv.with_suffix(".pcf"), "nOS-V task type")
    # one task type per operation kind, named as the step names it: Paraver says which operation ran
    named = {label.split()[-1] for label in labels.values()}
    assert {"matmul_fwd", "matmul_bwd_weight", "attention_fwd", "adamw"} <= named, labels
    matmul = [v for v, label in labels.items() if label.endswith("matmul_fwd")]
    ran = {v for e in records["2"] for t, v in zip(e[5::2], e[6::2]) if t == task_type}
    assert set(matmul) & ran, (matmul, ran)
    # the threads that ran a task: nOS-V's two workers, not the thread that submitted them
    runners = {e[3] for e in records["2"] for t, v in zip(e[5::2], e[6::2]) if t == task_type and v != 0}
    assert len(runners) == 2, runners
    # the two traces aligned by one offset: 99% of the chunks of the run's own trace start within 10 us
    # of a task start in ovni's, once shifted by it (a worker preempted in between is the rest)
    align = dict(line.split() for line in (tmp_path / "x" / f"{stem}.ovni-align.txt").read_text().splitlines()
                 if line and not line.startswith("#"))
    offset, p99 = int(align["offset_ns"]), int(align["residual_p99_ns"])
    starts = sorted(e[4] for e in records["2"] for t, v in zip(e[5::2], e[6::2]) if t == task_type and v != 0)
    ours = [round(float(line.split(",")[11]) * 1e9) for line in
            (directory / "traces" / f"{stem}.csv").read_text().splitlines()[1:]]
    assert len(ours) == int(align["chunks"]) and p99 < 10_000, align
    within = [min(abs(s - (t + offset)) for s in starts) <= p99 for t in ours]
    assert sum(within) >= 0.99 * len(ours), align
    rows = thread_prv.with_suffix(".row").read_text()
    assert re.search(r"LEVEL THREAD SIZE (\d+)", rows) and int(re.search(r"LEVEL THREAD SIZE (\d+)", rows)[1]) >= 3


def test_a_runtime_trace_from_a_nosv_without_ovni_is_one_line(tmp_path):
    # gpt2-nosv as `make OVNI=no` compiles it: without WITH_OVNI, linked with the built tree's objects
    needs_ovni()
    obj = ROOT / "build" / "gcc" / "fast" / "obj"
    flags = subprocess.run(["make", "-s", "print-flags"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    core = [p for p in sorted(obj.glob("*.o")) if not p.name.startswith(("exec-", "main-", "node-", "dist-"))]
    lib = ROOT / "build" / "nosv" / "install" / "lib"
    out = tmp_path / "gpt2-nosv"
    built = subprocess.run(["gcc", *flags, "-fopenmp", '-DKERNELS_NAME="fast"', f"-I{ROOT / 'build/nosv/install/include'}",
                            "-c", str(ROOT / "variants" / "nosv.c"), "-o", str(tmp_path / "exec-nosv.o")],
                           capture_output=True, text=True)
    assert built.returncode == 0 and "warning" not in built.stderr, built.stderr
    linked = subprocess.run(["gcc", "-fopenmp", str(obj / "main-omp.o"), *map(str, core), str(tmp_path / "exec-nosv.o"),
                             "-o", str(out), f"-L{lib}", "-lnosv", f"-Wl,-rpath,{lib}", "-lm", "-ldl"],
                            capture_output=True, text=True)
    assert linked.returncode == 0, linked.stderr
    assert not ovnitrace.linked(out)
    assert run([out] + TINY_RUN).returncode == 0  # it runs without one
    r = run([out] + TINY_RUN, env={"PERFSTUDY_OVNI_TRACE": str(tmp_path / "rt")})
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "PERFSTUDY_OVNI_TRACE" in r.stderr and "without ovni" in r.stderr
    assert not (tmp_path / "rt").exists()


def test_a_runtime_trace_into_a_directory_it_cannot_write_is_one_line(tmp_path):
    needs_ovni()
    (tmp_path / "file").write_text("")
    for target, why in ((tmp_path / "file", "not a directory"), (tmp_path / "no" / "such", "No such file")):
        r = run([binary("nosv")] + TINY_RUN, env={"PERFSTUDY_OVNI_TRACE": str(target)})
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and why in r.stderr and str(target) in r.stderr, r.stderr


def test_a_runtime_trace_of_binary_junk_is_one_line(tmp_path):
    # ovniemu quotes a damaged stream's bytes in its refusal: read as text, they must not end the command
    needs_ovni()
    recorded = tmp_path / "rt"
    assert run([binary("nosv")] + TINY_RUN, env={"PERFSTUDY_OVNI_TRACE": str(recorded)}).returncode == 0
    streams = list(recorded.glob("loom.*/proc.*/thread.*/stream.obs"))
    assert streams
    for stream in streams:
        stream.write_bytes(bytes(range(128, 256)) * 24)
    from pstudy.errors import StudyError
    with pytest.raises(StudyError, match=str(recorded)) as refused:
        ovnitrace.convert(recorded, "x", tmp_path / "out", OVNIEMU)
    assert "\n" not in str(refused.value)
