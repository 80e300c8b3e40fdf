"""Damaged inputs, hostile output paths and signals at awkward moments: each gives one line and
exit status 2 (or works), and leaves what the command was pointed at as it was."""

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import warm_perfstudy

REPO = Path(__file__).resolve().parents[2]
PERFSTUDY = REPO / "harness" / "perfstudy"
BUILD = REPO / "build" / "gcc" / "fast"

from pstudy import common
from pstudy.store import vocabulary
from pstudy.analyse import chunktimes


def config_key(*values):
    """A config key from its recorded layout: variant, compiler, kernels, the chunk keys."""
    return chunktimes.recorded_config_key(values)

REAL_VARIANTS = [v for v in ("seq", "forkjoin", "taskiter") if (BUILD / f"gpt2-{v}").exists()]
CEILINGS = REPO / "docs" / "studies" / "2026-11-27-xeon-emr-vm16" / "ceilings.json"


def snapshot(directory):
    """{relative path: bytes} of every file under `directory`, and the kinds of what is not a file."""
    out = {}
    for p in sorted(Path(directory).rglob("*")):
        rel = str(p.relative_to(directory))
        out[rel] = p.read_bytes() if p.is_file() and not p.is_symlink() else ("dir" if p.is_dir() else "other")
    return out


def refused(proc, *needles, notes=()):
    """Exit status 2 and one line on stderr containing each needle, no traceback (after lines that
    start with one of `notes`: what a command says of a part it skips)."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [line for line in proc.stderr.splitlines(True) if not line.startswith(tuple(notes) or "\0")]
    assert len(lines) == 1 and lines[0].endswith("\n"), proc.stderr
    for needle in needles:
        assert str(needle) in proc.stderr, (needle, proc.stderr)
    return proc.stderr


@pytest.fixture
def sweep(study, finished_sweeps):
    """A private copy of a finished sweep of the fake variants (two repetitions, every variant), with
    ceilings, so that predict and roofline get as far as its tables and traces."""
    directory = study.copy_of(finished_sweeps.get())
    if CEILINGS.exists():
        shutil.copy(CEILINGS, directory / "ceilings.json")
    return directory


@pytest.fixture
def other(study, finished_sweeps):
    return study.copy_of(finished_sweeps.get(tag="other"), name="other")


# ---------------------------------------------------------------------------------------------
# the output rule

def test_compare_refuses_to_write_its_table_over_a_results_file(study, sweep, other):
    before = snapshot(sweep)
    refused(study.perfstudy("compare", sweep, other, "--unit", "step", "--csv", sweep / "steps.csv"),
            "--csv", sweep / "steps.csv", "inside the results directory")
    assert snapshot(sweep) == before
    assert study.perfstudy("report", sweep, "--no-figures", "--no-chart").returncode == 0


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_an_output_that_is_not_a_regular_file_is_refused(study, sweep, other, tmp_path, kind):
    target = tmp_path / "out.csv"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    else:
        target = Path("/dev/null")
    refused(study.perfstudy("compare", sweep, other, "--unit", "step", "--csv", target), "--csv", str(target))
    if kind == "fifo":
        assert target.is_fifo()
    elif kind == "directory":
        assert target.is_dir() and not any(target.iterdir())
    else:
        assert target.is_char_device()


def test_regress_and_history_refuse_outputs_that_are_not_theirs(study, sweep, tmp_path):
    """regress's --history is refused before any run when it is a FIFO or a results directory's
    file; history's figures never go into a results directory's measurements."""
    fifo = tmp_path / "history.csv"
    os.mkfifo(fifo)
    before = snapshot(sweep)
    for target in (fifo, sweep / "steps.csv"):
        refused(study.perfstudy("regress", "--config", study.config(), "--history", target), "--history", str(target))
    assert fifo.is_fifo() and snapshot(sweep) == before
    history = tmp_path / "real-history.csv"
    history.write_text("")
    refused(study.perfstudy("history", "--history", history, "--plots-root", sweep / "runs"), "--plots-root",
            "results directory")
    assert snapshot(sweep) == before


def test_a_symlink_output_is_written_through_not_replaced(study, sweep, other, tmp_path):
    target, link = tmp_path / "table.csv", tmp_path / "link.csv"
    target.write_text("old\n")
    link.symlink_to(target)
    done = study.perfstudy("compare", sweep, other, "--unit", "step", "--csv", link)
    assert done.returncode in (0, 1), done.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("variant,")


def test_a_symlink_into_a_results_directory_is_refused(study, sweep, other, tmp_path):
    link = tmp_path / "link.csv"
    link.symlink_to(sweep / "runs.csv")
    before = snapshot(sweep)
    refused(study.perfstudy("compare", sweep, other, "--unit", "step", "--csv", link), "inside the results directory")
    assert snapshot(sweep) == before and link.is_symlink()


@pytest.mark.parametrize("command", [["trace"], ["roofline"], ["predict"]])
@pytest.mark.parametrize("where", ["", "traces", "runs"])
def test_output_directories_never_land_on_measurements(study, sweep, command, where):
    before = snapshot(sweep)
    refused(study.perfstudy(*command, sweep, "--out", sweep / where if where else sweep), "--out")
    assert snapshot(sweep) == before


def test_ceilings_refuses_its_output_before_measuring(study, sweep):
    before = snapshot(sweep)
    refused(study.perfstudy("ceilings", "--build-dir", study.tmp / "none", "--out", sweep / "steps.csv"),
            "--out", "inside the results directory")
    refused(study.perfstudy("ceilings", "--build-dir", study.tmp / "none", "--out", "/dev/null"), "--out", "a device")
    assert snapshot(sweep) == before


def test_compare_refuses_a_directory_given_twice(study, sweep):
    refused(study.perfstudy("compare", sweep, sweep, "--unit", "step"), "both base and candidate")


# ---------------------------------------------------------------------------------------------
# damaged results: one line naming the file, and nothing changed

def sub(path, old, new):
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def cut_runs(d):
    text = (d / "runs.csv").read_text()
    (d / "runs.csv").write_text(text[:-40])


def unlisted_point(d):
    lines = (d / "runs.csv").read_text().splitlines(True)
    (d / "runs.csv").write_text("".join(line for line in lines if not line.startswith("seq,")))


def duplicated_run(d):
    lines = (d / "runs.csv").read_text().splitlines(True)
    (d / "runs.csv").write_text("".join(lines + [lines[1]]))


def model_a_string(d):
    meta = json.loads((d / "meta.json").read_text())
    meta["config"]["model"] = "tiny"
    (d / "meta.json").write_text(json.dumps(meta))


def record_a_list(d):
    sorted((d / "runs").glob("*.json"))[0].write_text("[]")


DAMAGE = {
    "steps-threads-word": (lambda d: sub(d / "steps.csv", "\nforkjoin,gcc,fast,1,", "\nforkjoin,gcc,fast,abc,"),
                           "steps.csv: row 2, column threads: abc"),
    "runs-threads-word": (lambda d: sub(d / "runs.csv", "\nforkjoin,gcc,fast,1,", "\nforkjoin,gcc,fast,abc,"),
                          "runs.csv: row", "column threads: abc"),
    "step-of-an-unlisted-run": (unlisted_point, "steps.csv: row", "seq_gcc_fast_t1_bsNA_kNA_r", "runs.csv"),
    "runs-missing": (lambda d: (d / "runs.csv").unlink(), "runs.csv: missing"),
    "runs-cut-mid-row": (cut_runs, "runs.csv: row", "cut short"),
    "runs-duplicated-row": (duplicated_run, "runs.csv: row", "already in row 2"),
    "warmup-maybe": (lambda d: sub(d / "steps.csv", ",True,", ",maybe,"), "steps.csv: row", "column warmup: maybe"),
    "status-weird": (lambda d: sub(d / "runs.csv", ",ok,", ",weird,"), "runs.csv: row", "column status: weird"),
    "negative-step": (lambda d: sub(d / "steps.csv", ",1,False,", ",-1,False,"), "steps.csv: row", "column step"),
}


# every damage in report; the other readers of the tables on the damages they once let through
CASES = ([("report", damage) for damage in sorted(DAMAGE)]
         + [(command, damage) for command in ("trace", "compare", "predict")
            for damage in ("steps-threads-word", "runs-threads-word", "step-of-an-unlisted-run", "runs-cut-mid-row")]
         + [("compare", "warmup-maybe"), ("compare", "runs-missing")])


@pytest.mark.parametrize("command,damage", CASES)
def test_damaged_tables_are_one_line(study, sweep, other, command, damage):
    make, *needles = DAMAGE[damage]
    make(sweep)
    before = snapshot(sweep)
    args = {"report": ["report", sweep, "--no-chart"], "trace": ["trace", sweep],
            "compare": ["compare", sweep, other, "--unit", "step"], "predict": ["predict", sweep]}[command]
    refused(study.perfstudy(*args), *needles)
    assert snapshot(sweep) == before


def test_meta_with_a_model_that_is_not_a_table_is_one_line_in_compare(study, sweep, other):
    model_a_string(sweep)
    refused(study.perfstudy("compare", sweep, other, "--unit", "step"), "meta.json: config.model")


def test_a_run_record_that_is_not_an_object_is_one_line(study, sweep):
    record_a_list(sweep)
    before = snapshot(sweep)
    refused(study.perfstudy("report", sweep, "--no-chart", "--formats", "png"), "runs/", "not a run record")
    assert snapshot(sweep) == before


def gzip_traces(d, cut=False, keep=False):
    for p in sorted((d / "traces").glob("*.csv")):
        data = gzip.compress(p.read_bytes())
        Path(f"{p}.gz").write_bytes(data[:len(data) // 2] if cut else data)
        if not keep:
            p.unlink()


@pytest.mark.parametrize("command", ["report", "trace", "roofline"])
def test_a_truncated_gzipped_trace_is_one_line(study, sweep, command):
    gzip_traces(sweep, cut=True)
    before = snapshot(sweep)
    refused(study.perfstudy(command, sweep, *(["--no-chart", "--no-figures"] if command == "report" else [])),
            ".csv.gz", "not a trace CSV")
    assert snapshot(sweep) == before


@pytest.mark.parametrize("command", ["report", "trace", "roofline", "predict"])
def test_a_trace_present_twice_is_refused_not_counted_twice(study, sweep, command):
    gzip_traces(sweep, keep=True)
    before = snapshot(sweep)
    refused(study.perfstudy(command, sweep, *(["--no-chart", "--no-figures"] if command == "report" else [])),
            ".csv.gz", "counted twice")
    assert snapshot(sweep) == before


@pytest.mark.parametrize("line", [b"null\n", b"\xff\xfe not utf-8\n", b"[1, 2]\n"])
def test_a_damaged_journal_line_is_passed_over_on_resume(study, sweep, line):
    cfg = study.config()
    with open(sweep / "journal.jsonl", "ab") as f:
        f.write(line)
    done = study.perfstudy("run", cfg, "--no-summary")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert json.loads((sweep / "meta.json").read_text())["status"] == "complete"


def test_non_utf8_config_and_machine_files_are_one_line(study, sweep, tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_bytes(b'[model]\nconfig = "tiny\xff"\n')
    refused(study.perfstudy("run", cfg), "bad.toml: line 2: not UTF-8")
    machine = tmp_path / "machine.toml"
    machine.write_bytes(b'name = "x\xfe"\n')
    refused(study.perfstudy("predict", sweep, "--machine", machine), "machine.toml: line 1: not UTF-8")


# ---------------------------------------------------------------------------------------------
# status that tells the truth

def test_signals_are_held_while_a_status_is_written():
    with pytest.raises(KeyboardInterrupt):
        with common.signals_deferred() as held:
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            assert held.caught == [signal.SIGTERM, signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_complete_sweep_interrupted_when_run_again_stays_complete(study, finished_sweeps):
    directory = study.copy_of(finished_sweeps.get())
    cfg = study.config()
    proc = subprocess.Popen([str(PERFSTUDY), "run", cfg, "--no-summary"], stderr=subprocess.PIPE, text=True,
                            env=study.env(), cwd=study.tmp)
    for line in proc.stderr:
        if "resuming" in line:
            break
    for _ in range(3):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
    proc.communicate(timeout=60)
    assert json.loads((directory / "meta.json").read_text())["status"] == "complete"
    listing = study.perfstudy("list").stdout
    assert "complete" in listing and "running" not in listing


def test_three_runs_of_one_config_at_once_make_one_directory(study):
    cfg = study.config(repetitions=1, steps=2, variants='["seq", "forkjoin"]')
    procs = [subprocess.Popen([str(PERFSTUDY), "run", cfg, "--no-summary"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=study.env(), cwd=study.tmp) for _ in range(3)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert len(study.result_dirs()) == 1, results
    assert sorted(rc for rc, _ in results) == [0, 2, 2], results
    assert sum("in use" in err for _, err in results) == 2


def test_list_shows_runs_done_over_runs_planned_and_a_stopped_sweep(study, sweep):
    meta = json.loads((sweep / "meta.json").read_text())
    meta["status"] = "running"  # as a sweep killed with SIGKILL leaves it
    (sweep / "meta.json").write_text(json.dumps(meta))
    lines = study.perfstudy("list").stdout.splitlines()
    [row] = [line for line in lines if sweep.name in line]
    assert f"{meta['runs_total']}/{meta['runs_total']} done" in row and "stopped" in row


@pytest.mark.parametrize("command", [["report", "latest"], ["run", "quick"]])
def test_ctrl_c_at_start_up_is_no_traceback(study, command):
    for delay in (0.05, 0.1, 0.2, 0.3):
        proc = subprocess.Popen([str(PERFSTUDY), *command], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, env=study.env(), cwd=study.tmp)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, (delay, err)


# ---------------------------------------------------------------------------------------------
# predict on a real sweep: trace times it would once accept

@pytest.fixture(scope="module")
def real_sweep(tmp_path_factory):
    if not REAL_VARIANTS:
        pytest.skip("no built binaries (make)")
    tmp = tmp_path_factory.mktemp("real")
    cfg = tmp / "tiny.toml"
    cfg.write_text(f"""
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
variants = {json.dumps(REAL_VARIANTS)}
compilers = ["gcc"]
kernels = ["fast"]
threads = [1, 2]
batch_subsize = [2]
token_chunk = [32]
[analysis]
trace = true
ceilings = false
roofline = false
""")
    proc = warm_perfstudy.perfstudy("run", cfg, "--results-root", tmp / "results", "--no-summary",
                                    timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    machine = tmp / "here.toml"
    machine.write_text('name = "here"\nmeasured = false\ncores = 16\npeak_gflops_per_core = 20\n'
                       'bandwidth_cores = [1, 4, 16]\nbandwidth_GBs = [10, 30, 40]\n')
    return Path(proc.stdout.strip().splitlines()[-1]), machine


@pytest.mark.parametrize("value", ["nan", "-0.5"])
def test_predict_refuses_trace_times_report_refuses(real_sweep, tmp_path, value):
    source, machine = real_sweep
    d = Path(shutil.copytree(source, tmp_path / source.name))
    trace = sorted((d / "traces").glob("seq_*_t1_*.csv"))[0]
    lines = trace.read_text().splitlines(True)
    fields = lines[3].rstrip("\n").split(",")
    fields[lines[0].strip().split(",").index("end_s")] = value
    lines[3] = ",".join(fields) + "\n"
    trace.write_text("".join(lines))
    before = snapshot(d)
    proc = warm_perfstudy.perfstudy("predict", d, "--source-machine", machine, "--machine", machine,
                                    timeout=300)
    refused(proc, trace.name, "row 4, column end_s")
    assert snapshot(d) == before


# ---------------------------------------------------------------------------------------------
# roofline analyses only what the results hold

@pytest.mark.parametrize("options,needle", [(["--at", "nosuchvariant:2"], "--at nosuchvariant:2"),
                                            (["--at", "forkjoin:64"], "--at forkjoin:64"),
                                            (["--compiler", "clang", "--kernels", "reference"],
                                             "no traced run of clang/reference")])
def test_roofline_refuses_what_the_results_do_not_hold(real_sweep, tmp_path, options, needle):
    source, _ = real_sweep
    if not CEILINGS.exists():
        pytest.skip("no ceilings.json to analyse with")
    d = Path(shutil.copytree(source, tmp_path / source.name))
    shutil.copy(CEILINGS, d / "ceilings.json")
    before = snapshot(d)
    proc = warm_perfstudy.perfstudy("roofline", d, *options, timeout=300)
    refused(proc, needle)
    assert snapshot(d) == before


# ---------------------------------------------------------------------------------------------
# bounded distributed predictions

def test_default_distributed_layouts_stop_at_the_rank_limit():
    from pstudy.analyse import distributed
    from pstudy.store import machinefiles

    mn5 = machinefiles.load("mn5-gpp")
    layouts, left_out = distributed.layouts_for(mn5)
    assert max(lay.ranks for lay in layouts) <= distributed.MAX_RANKS
    assert [lay.nodes for lay in layouts] == [1, 2, 4, 8, 16, 32, 64] and left_out == [128, 256]


@pytest.mark.parametrize("options,needle", [(["--ranks", "1000"], "--ranks 1000: over the limit of 128 ranks"),
                                            (["--nodes", "128"], "--nodes 128: 256 ranks")])
def test_distributed_layouts_over_the_limit_are_refused_at_once(real_sweep, options, needle):
    source, machine = real_sweep
    if not (BUILD / "gpt2-mpi").exists():
        pytest.skip("no gpt2-mpi")
    start = time.monotonic()
    proc = warm_perfstudy.perfstudy("predict", source, "--source-machine", machine, "--machine", "mn5-gpp",
                                    "--distributed", *options, timeout=300)
    refused(proc, needle)
    assert time.monotonic() - start < 20


def test_distributed_prediction_says_each_layout_as_it_goes(real_sweep, tmp_path):
    from pstudy.analyse import network

    source, machine = real_sweep
    if not (BUILD / "gpt2-mpi").exists() or not network.available()[0]:
        pytest.skip("no gpt2-mpi or no SimGrid")
    proc = warm_perfstudy.perfstudy("predict", source, "--source-machine", machine, "--machine", "mn5-gpp",
                                    "--distributed", "--scaling", "weak", "--nodes", "1,2", "--out", tmp_path / "out",
                                    timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "layout 1/2: 1 node(s), 2 ranks" in proc.stderr and "layout 2/2: 2 node(s), 4 ranks" in proc.stderr


# ---------------------------------------------------------------------------------------------
# MPI points with more ranks x threads than this machine has CPUs

def test_an_oversubscribed_mpi_point_gets_a_binding_that_starts_and_a_refusal_says_why():
    from types import SimpleNamespace

    from pstudy.measure import runner

    if shutil.which("mpirun") is None:
        pytest.skip("no mpirun")
    study = SimpleNamespace(launcher={"kind": "local", "command": None, "args": []})
    cpus = os.cpu_count() or 1
    point = SimpleNamespace(ranks=2, threads=cpus)
    prefix = runner.launcher_prefix(study, point)
    assert "--oversubscribe" in prefix and "core:overload-allowed" in prefix
    assert subprocess.run([*prefix, "true"], capture_output=True, timeout=60).returncode == 0
    refused_launch = [c if c != "core:overload-allowed" else "core" for c in prefix if c != "--oversubscribe"]
    assert subprocess.run([*refused_launch, "true"], capture_output=True, timeout=60).returncode != 0
    message = runner.launcher_message([c for c in refused_launch if c != "-q"] + ["true"], dict(os.environ))
    assert message and "\n" not in message and "---" not in message
    within = runner.launcher_prefix(study, SimpleNamespace(ranks=1, threads=1))
    assert "--oversubscribe" not in within and within[within.index("--bind-to") + 1] == "core"


# ---------------------------------------------------------------------------------------------
# --best ranks only on task times from traces of the same operations

class _Graph:
    def __init__(self, labels):
        self.ops = [{"label": label} for label in labels]


class _Graphs:
    """graphs.get(ck, P) of graphcache.Graphs from a table: {(ck, P): operation labels}."""

    def __init__(self, table):
        self.table = table

    def get(self, ck, P):
        return _Graph(self.table[(ck, P)])


def test_times_of_other_operations_are_told_apart():
    from pstudy.analyse import machinescaling

    auto = config_key("taskiter", "gcc", "fast", *(0,) * len(vocabulary.CHUNK_KEYS))
    whole = ["matmul", "attention"]
    packed = ["pack", "matmul", "attention"]
    medians = {auto: {}}
    # the automatic chunking packs at 4 threads and not at 1, and nothing traced packs
    graphs = _Graphs({(auto, 1): whole, (auto, 4): packed})
    assert machinescaling.reference_match(medians, auto, graphs, 1) == (auto, True)
    assert machinescaling.reference_match(medians, auto, graphs, 4) == (auto, False)
    assert machinescaling.reference_config(medians, auto, graphs, 4) == auto  # predict's replay keeps its fallback


def test_best_lists_borrowed_candidates_as_not_ranked_unless_allowed(real_sweep, monkeypatch):
    from pstudy.analyse import advice, machinescaling
    from pstudy.store import graphcache, machinefiles, resultsdir

    source, machine_file = real_sweep
    if "taskiter" not in REAL_VARIANTS:
        pytest.skip("no gpt2-taskiter")
    meta = resultsdir.read_meta(source)
    machine = machinefiles.load(machine_file)
    medians = chunktimes.trace_stats(source, meta.warmup).medians
    graphs = graphcache.Graphs(source, meta, None)
    real = machinescaling.reference_match

    def borrowed_for_taskiter(medians, ck, graphs, P=1):
        ref, same = real(medians, ck, graphs, P)
        return (ref, False) if ck.variant == "taskiter" and ref is not None else (ref, same)
    monkeypatch.setattr(machinescaling, "reference_match", borrowed_for_taskiter)
    frame, notes = advice.best(graphs, medians, meta, machine, machine, [2], mpi=False)
    assert "taskiter" not in set(frame["variant"]) and not frame["borrowed"].any()
    assert any(n.startswith("not ranked: taskiter") and "--allow-borrowed" in n for n in notes), notes
    frame, _ = advice.best(graphs, medians, meta, machine, machine, [2], mpi=False, allow_borrowed=True)
    taskiter = frame[frame["variant"] == "taskiter"]
    assert len(taskiter) and taskiter["borrowed"].all() and not frame[frame["variant"] != "taskiter"]["borrowed"].any()
    assert all(advice.label(r).startswith("[borrowed times]") for _, r in taskiter.iterrows())


# ---------------------------------------------------------------------------------------------
# the benchmark scripts

RECORDING = REPO / "docs" / "studies" / "2026-11-26-xeon-2vcpu"
# how the make targets run a benchmark: a module of bench/, the harness's package importable
BENCH_ENV = dict(os.environ, PYTHONPATH=str(REPO / "harness"))


@pytest.mark.parametrize("damage,needle", [(lambda t: t.replace(",fast,1,", ",fast,abc,", 1), "row 2, column threads"),
                                          (lambda t: t + t.splitlines(True)[1], "counted twice")])
def test_a_damaged_validation_recording_is_one_line(tmp_path, damage, needle):
    if not (RECORDING / "points.csv").exists():
        pytest.skip("no recording")
    copy = Path(shutil.copytree(RECORDING, tmp_path / "rec"))
    points = copy / "points.csv"
    points.write_text(damage(points.read_text()))
    before = snapshot(copy)
    proc = subprocess.run([REPO / "harness" / "perfstudy", "validate", "check", copy], capture_output=True, text=True,
                          timeout=300)
    refused(proc, "points.csv", needle)
    assert snapshot(copy) == before


def test_bench_variants_refuses_one_directory_pooled_twice(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "bench.variants", "--from", tmp_path, f"{tmp_path}/"],
                          capture_output=True, text=True, timeout=120, cwd=REPO, env=BENCH_ENV)
    refused(proc, "given twice")


def test_bench_scripts_refuse_a_python_without_their_libraries_at_once(tmp_path):
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], capture_output=True, timeout=120)
    if made.returncode != 0:
        pytest.skip("no venv module")
    # every benchmark script that uses the harness's libraries, found by what it imports
    needing = [p.name for p in sorted((REPO / "bench").glob("*.py"))
               if any(f"import {m}" in p.read_text() or f"from {m}" in p.read_text()
                      for m in ("pandas", "numpy", "scipy", "pstudy"))]
    assert {"variants.py", "kernels.py", "replay.py",
            "harness_scaling.py"} <= set(needing)
    for script in needing:
        proc = subprocess.run([venv / "bin" / "python3", "-m", f"bench.{script[:-3]}", "--help"], capture_output=True,
                              text=True, timeout=60, cwd=REPO, env=BENCH_ENV)
        refused(proc, f"bench/{script}", "cannot import")
