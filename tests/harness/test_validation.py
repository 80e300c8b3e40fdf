"""`predict` against recorded measurements (`perfstudy validate`; pstudy.analyse.validation,
pstudy.store.validationdata). Nothing here times anything: the accuracy test reads recordings made on
a quiet machine, and the plumbing test packs a tiny sweep whose times it never judges.

Recordings live in docs/studies/<date>-<host>/. One is made, on a quiet machine with the whole
machine free, by

    make bench-predict      (perfstudy validate record --out docs/studies/<date>-<host>)

(configs/default.toml and configs/predict-d12.toml: every variant at 1 and 2 threads, the ceilings,
the 1-thread step beside probes/thief at each duty cycle). Targets: within 5% at every sweep point,
within 10% beside the thief.

Multi-core studies (docs/studies/<date>-<machine>/, packed from what `perfstudy study` brought back
from a bigger machine) are held to the targets for them: within 10% at every point past 2 threads,
5% at 1 and 2, and a mean |error| of at most 5%."""

import functools
import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import warm_perfstudy

from pstudy.analyse import validation
from pstudy.errors import StudyError
from pstudy.store import validationdata

REPO = Path(__file__).resolve().parents[2]
STUDIES = REPO / "docs" / "studies"
PERFSTUDY = REPO / "harness" / "perfstudy"
BUILD = REPO / "build" / "gcc" / "fast"
ALL_RECORDINGS = sorted(p.parent for p in STUDIES.glob("*/" + validationdata.META)) if STUDIES.is_dir() else []


def _largest_thread_count(directory):
    import pandas as pd
    return int(pd.read_csv(directory / validationdata.POINTS)["threads"].max())


# the 2-vCPU recordings of `make bench-predict` (1 and 2 threads, the thief), and the multi-core
# studies brought back from a bigger machine (perfstudy study: more threads, no thief)
RECORDINGS = [p for p in ALL_RECORDINGS if _largest_thread_count(p) <= 2]
MULTICORE = [p for p in ALL_RECORDINGS if _largest_thread_count(p) > 2]
RECORD_COMMAND = "make bench-predict (perfstudy validate record --out docs/studies/DATE-HOST)"


def _validated(directory):
    frame = _validation_of(directory)
    print("\n" + "\n".join(validation.report_lines(frame, f"predict against {directory.name}")))
    return frame.copy()


@functools.lru_cache(maxsize=None)
def _validation_of(directory):
    # several tests read one recording's validation; replaying a 16-thread study twice a point
    # (with and without its probes) takes seconds, once per test process is enough
    return validation.validate(validationdata.Recording(directory))


@pytest.mark.skipif(not RECORDINGS, reason=f"no recording in docs/studies/ yet; on a quiet machine: {RECORD_COMMAND}")
@pytest.mark.parametrize("directory", RECORDINGS, ids=[p.name for p in RECORDINGS])
def test_predictions_within_target_on_recorded_runs(directory):
    # every point but the sweeps' 2-thread ones (the next test): 1 thread, beside the thief, gpt2-mpi
    frame = _validated(directory)
    sweep = frame[frame["kind"] == "sweep"]
    assert set(sweep["threads"]) >= {1, 2}, "the recording lacks 1- or 2-thread points"
    assert (frame["kind"] == "thief").any(), "the recording lacks the runs beside the thief"
    _hold_all_but_known_misses(frame[(frame["kind"] != "sweep") | (frame["threads"] == 1)], "error", {})


# The points known to miss their target, each with the error it had when its entry was written
# (percent of the measured step, signed: + predicted long). Each is a test of its own
# (test_a_known_miss_grows_no_further): it fails when the point's |error| grows by more than
# MISS_TOLERANCE, and when the point comes within its target, so that its entry goes. Every other
# point of a recording is held to its target.
MISS_TOLERANCE = 0.01
# 2026-11-26-xeon-2vcpu was recorded on a slow day (d12's forkjoin 1.82 s a step at 1 thread, 1.84x
# that at 2), and is validated with the chunk times scaled to their iteration's busy time, the runtime
# cost per task measured in the traces (runtime.csv) and fork-join's barriers charged the chunks' noise
# (noise.csv); its other 43 points are within their targets.
TWO_THREAD_MISSES = {
    "2026-11-26-xeon-2vcpu": {
        "default: taskiter bs=4 k=64 gcc/fast t=2": +6.3,
        "predict-d12: tasks bs=1 k=64 gcc/fast t=2": +6.5,
    },
}
# wiki-124m-node16 on a shared 16-vCPU Xeon VM, one run of 3 steps a point, against each study's
# machine file. 2026-11-27-xeon-emr-vm16 (no topology: the image had no hwloc): the task variants at
# 8 threads reach 4.3-5.6x their 1-thread time where the peak benchmark's 8-thread figure, 3.9x one
# thread's, reads to the model as a clock drop for every task. The thread speeds show the host placing
# the vCPUs anew in each run (at 8 threads a different pair at 1.26-1.37x in each): no one topology
# describes the sweep. -b and -c: their 1-thread runs, which give the chunk times, ran on a host that
# moved under them (-b: seq 2.64 s, forkjoin 1.93 s; -c: seq 2.39 s against forkjoin 1.91 s, taskiter
# BATCH_SUBSIZE 1's probes 171 GFLOP/s before and 97 after), which no machine file holds. Replayed
# with each run's own chunk times, -c is within 4.1% everywhere
# (test_the_schedule_model_alone_holds_on_every_committed_study): the miss is the chunks' speed.
MULTICORE_MISSES = {
    "2026-11-27-xeon-emr-vm16": {
        "wiki-124m-node16: forkjoin gcc/fast t=4": -13.3,
        "wiki-124m-node16: forkjoin gcc/fast t=16": -16.4,
        "wiki-124m-node16: taskiter bs=auto k=auto gcc/fast t=2": +15.7,
        "wiki-124m-node16: taskiter bs=auto k=auto gcc/fast t=4": -13.1,
        "wiki-124m-node16: taskiter bs=auto k=auto gcc/fast t=8": +48.5,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=8": +59.3,
        "wiki-124m-node16: taskiter bs=auto k=auto gcc/fast t=16": +12.8,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=16": +31.6,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=2": +5.2,
        "wiki-124m-node16: tasks bs=1 k=64 gcc/fast t=2": +16.1,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=4": -21.1,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=8": +17.4,
        "wiki-124m-node16: tasks bs=1 k=64 gcc/fast t=8": +39.2,
        "wiki-124m-node16: tasks bs=1 k=64 gcc/fast t=16": +27.4,
    },
    "2026-11-27-xeon-emr-vm16-b": {
        "wiki-124m-node16: forkjoin gcc/fast t=2": -16.4,
        "wiki-124m-node16: forkjoin gcc/fast t=4": -22.8,
        "wiki-124m-node16: forkjoin gcc/fast t=8": -41.7,
        "wiki-124m-node16: forkjoin gcc/fast t=16": -10.3,
        "wiki-124m-node16: taskiter bs=auto k=auto gcc/fast t=2": +20.0,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=2": -15.5,
        "wiki-124m-node16: taskiter bs=auto k=auto gcc/fast t=4": +60.2,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=4": +57.1,
        "wiki-124m-node16: taskiter bs=auto k=auto gcc/fast t=16": +47.2,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=16": +50.6,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=2": +10.6,
        "wiki-124m-node16: tasks bs=1 k=64 gcc/fast t=2": +20.8,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=4": +10.7,
        "wiki-124m-node16: tasks bs=1 k=64 gcc/fast t=4": +63.4,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=8": -19.5,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=16": +20.4,
        "wiki-124m-node16: tasks bs=1 k=64 gcc/fast t=16": +64.8,
    },
    "2026-11-27-xeon-emr-vm16-c": {
        "wiki-124m-node16: forkjoin gcc/fast t=2": -9.4,
        "wiki-124m-node16: forkjoin gcc/fast t=4": -22.2,
        "wiki-124m-node16: forkjoin gcc/fast t=8": -28.1,
        "wiki-124m-node16: taskiter bs=auto k=auto gcc/fast t=2": -16.5,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=2": +27.7,
        "wiki-124m-node16: taskiter bs=auto k=auto gcc/fast t=4": -16.5,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=4": +44.3,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=8": +19.3,
        "wiki-124m-node16: taskiter bs=auto k=auto gcc/fast t=16": +40.5,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=16": +71.6,
        "wiki-124m-node16: tasks bs=1 k=64 gcc/fast t=2": -16.1,
        "wiki-124m-node16: tasks bs=1 k=64 gcc/fast t=8": +11.6,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=16": +20.7,
        "wiki-124m-node16: tasks bs=1 k=64 gcc/fast t=16": +60.6,
    },
}
# The same studies replayed with the probes beside each run. A probe of 0.15 s before a run of 5-10 s
# sees where the host put the threads then, not where it moved them during the run (-b: the probe's
# slowest thread is the trace's in 5 of the 15 runs at 4 threads or more); in -c the two probes of one
# run differ by up to 43% (the host's capacity moves within seconds), and the chunks of the 16-thread
# runs took 1.25-1.54x what the probes say beyond one thread's (scaled to the team's rate instead,
# mean 15%).
PROBED_MISSES = {
    "2026-11-27-xeon-emr-vm16-b": {
        "wiki-124m-node16: forkjoin gcc/fast t=2": -17.6,
        "wiki-124m-node16: forkjoin gcc/fast t=4": -18.1,
        "wiki-124m-node16: taskiter bs=auto k=auto gcc/fast t=4": -10.5,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=4": +11.8,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=8": +14.6,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=16": +12.0,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=2": -5.5,
        "wiki-124m-node16: tasks bs=1 k=64 gcc/fast t=2": -12.0,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=4": -10.1,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=8": -19.9,
        "wiki-124m-node16: tasks bs=1 k=64 gcc/fast t=8": +14.8,
    },
    "2026-11-27-xeon-emr-vm16-c": {
        "wiki-124m-node16: forkjoin gcc/fast t=2": -5.6,
        "wiki-124m-node16: forkjoin gcc/fast t=4": +19.7,
        "wiki-124m-node16: forkjoin gcc/fast t=8": -13.5,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=2": +6.9,
        "wiki-124m-node16: taskiter bs=auto k=auto gcc/fast t=4": -12.0,
        "wiki-124m-node16: taskiter bs=1 k=64 gcc/fast t=4": +23.9,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=2": -14.0,
        "wiki-124m-node16: tasks bs=1 k=64 gcc/fast t=2": -10.4,
        "wiki-124m-node16: tasks bs=auto k=auto gcc/fast t=16": -22.7,
    },
}
# the multi-core studies' mean |error| (percent) where it is beyond validation.MULTICORE_MEAN: held,
# as each known miss is, to what it was plus MISS_TOLERANCE
MEAN_MISSES = {
    ("2026-11-27-xeon-emr-vm16", "error"): 13.9,
    ("2026-11-27-xeon-emr-vm16-b", "error"): 21.5,
    ("2026-11-27-xeon-emr-vm16-c", "error"): 16.3,
    ("2026-11-27-xeon-emr-vm16-b", "error_beside"): 7.0,
    ("2026-11-27-xeon-emr-vm16-c", "error_beside"): 7.2,
}


def _labelled(points):
    return points.set_axis([validation.row_label(r) for _, r in points.iterrows()])


def _hold_all_but_known_misses(points, column, misses):
    """Every point of `points` that `misses` does not name within its target; every named point exists."""
    labelled = _labelled(points)
    assert labelled.index.is_unique
    unknown = sorted(set(misses) - set(labelled.index))
    assert not unknown, f"known misses that name no point: {unknown}"
    held = labelled.drop(index=list(misses))
    bad = held[held[column].astype(float).abs() > held["target"]]
    assert bad.empty, f"{column} beyond target:\n" + bad[["measured_step_s", column, "target"]].to_string()


def _hold_the_mean(points, column, directory):
    mean = float(points[column].astype(float).abs().mean())
    recorded = MEAN_MISSES.get((directory.name, column))
    if recorded is None:
        assert mean <= validation.MULTICORE_MEAN, f"mean |error| {100 * mean:.2f}%"
    else:
        assert mean <= recorded / 100 + MISS_TOLERANCE, f"mean |error| {100 * mean:.2f}%, recorded {recorded}%"
        assert mean > validation.MULTICORE_MEAN, f"mean |error| {100 * mean:.2f}% now within target: its entry goes"


def _sweep(directory):
    frame = _validated(directory)
    return frame[frame["kind"] == "sweep"]


@pytest.mark.skipif(not RECORDINGS, reason=f"no recording in docs/studies/ yet; on a quiet machine: {RECORD_COMMAND}")
@pytest.mark.parametrize("directory", RECORDINGS, ids=[p.name for p in RECORDINGS])
def test_two_thread_predictions_within_target_on_recorded_runs(directory):
    sweep = _sweep(directory)
    two = sweep[sweep["threads"] == 2]
    assert not two.empty, "the recording lacks 2-thread points"
    _hold_all_but_known_misses(two, "error", TWO_THREAD_MISSES.get(directory.name, {}))


@pytest.mark.skipif(not MULTICORE, reason="no multi-core study in docs/studies/ yet (perfstudy study on a bigger machine)")
@pytest.mark.parametrize("directory", MULTICORE, ids=[p.name for p in MULTICORE])
def test_multicore_predictions_within_target_on_committed_studies(directory):
    sweep = _sweep(directory)
    assert sweep["threads"].max() > 2
    assert set(sweep.loc[sweep["threads"] > 2, "target"]) == {validation.TARGET_MULTICORE}
    _hold_all_but_known_misses(sweep, "error", MULTICORE_MISSES.get(directory.name, {}))
    _hold_the_mean(sweep, "error", directory)


PROBED = [p for p in MULTICORE if (p / validationdata.THREAD_PEAKS).is_file()]


@pytest.mark.skipif(not PROBED, reason="no multi-core study with probes beside its runs ([analysis] peak_beside)")
@pytest.mark.parametrize("directory", PROBED, ids=[p.name for p in PROBED])
def test_probes_beside_the_runs_explain_most_of_the_error(directory):
    # the same replay with each run's own thread speeds (stepreplay.speeds_beside) against the
    # machine file's curves: at least halves the mean error, and never worsens it at 1 thread
    sweep = _sweep(directory)
    probed = sweep[sweep["error_beside"].notna()]
    assert len(probed) == len(sweep), "every point of a probed sweep has its probes"
    assert probed["error_beside"].abs().mean() <= 0.5 * sweep["error"].abs().mean()
    one = probed[probed["threads"] == 1]
    assert (one["error_beside"] == one["error"]).all()  # one thread: the run is its own source


@pytest.mark.skipif(not PROBED, reason="no multi-core study with probes beside its runs ([analysis] peak_beside)")
@pytest.mark.parametrize("directory", PROBED, ids=[p.name for p in PROBED])
def test_multicore_predictions_beside_their_probes_within_target(directory):
    sweep = _sweep(directory)
    _hold_all_but_known_misses(sweep, "error_beside", PROBED_MISSES.get(directory.name, {}))
    _hold_the_mean(sweep, "error_beside", directory)


KNOWN_MISSES = [(name, column, label, recorded)
                for table, column in ((TWO_THREAD_MISSES, "error"), (MULTICORE_MISSES, "error"),
                                      (PROBED_MISSES, "error_beside"))
                for name, points in table.items() for label, recorded in points.items()]


@pytest.mark.parametrize("name,column,label,recorded", KNOWN_MISSES,
                         ids=[re.sub(r"[^\w.=+-]+", "-", f"{n}-{c}-{label}") for n, c, label, _ in KNOWN_MISSES])
def test_a_known_miss_grows_no_further(name, column, label, recorded):
    directory = STUDIES / name
    assert directory in ALL_RECORDINGS, f"{name}: no such recording; its known misses go"
    points = _labelled(_sweep(directory))
    assert label in points.index, f"{name}: {label}: no such point; its entry goes"
    row = points.loc[label]
    error = float(row[column])
    assert abs(error) <= abs(recorded) / 100 + MISS_TOLERANCE, \
        f"{label}: {column} {100 * error:+.1f}%, recorded {recorded:+.1f}%"
    assert abs(error) > row["target"], f"{label}: {column} {100 * error:+.1f}% now within target: its entry goes"


KEPT = [p for p in MULTICORE if (p / validationdata.OWN_CHUNKS).is_file()]


# the bound on a live tiny sweep's own-chunk replay (test_pack_and_validate)
LIVE_SCHEDULE_BOUND = 0.25


@pytest.mark.skipif(not KEPT, reason="no multi-core study with its runs' own chunk times (own_chunks.csv.xz)")
@pytest.mark.parametrize("directory", KEPT, ids=[p.name for p in KEPT])
def test_the_schedule_model_alone_holds_on_every_committed_study(directory):
    # each run replayed with its own chunk times (stepreplay.replay_own_times): the dependencies,
    # barriers and runtime costs the replay adds to the chunks are what the runs had, at every thread
    # count, so what the predictions miss beyond this is the chunks' speed
    frame = _validated(directory)
    sweep = frame[frame["kind"] == "sweep"]
    errors = sweep["error_own"].astype(float)
    assert errors.notna().all() and sweep["threads"].max() > 2
    bad = sweep[errors.abs() > validation.TARGET_SCHEDULE]
    assert bad.empty and errors.abs().mean() <= validation.SCHEDULE_MEAN, \
        f"mean |error| {100 * errors.abs().mean():.2f}%; beyond target:\n" + bad.to_string()


@pytest.mark.skipif(not MULTICORE, reason="no multi-core study in docs/studies/ yet (perfstudy study on a bigger machine)")
@pytest.mark.parametrize("directory", MULTICORE, ids=[p.name for p in MULTICORE])
def test_multicore_studies_replay_their_one_thread_points(directory):
    # at 1 thread the replay runs a point's own chunk times one after the other: whatever the
    # contention model says, this must hold, and it checks the recording's plumbing (graphs, chunks,
    # runtime costs) on a study of the reference size
    frame = _validated(directory)
    one = frame[(frame["kind"] == "sweep") & (frame["threads"] == 1)]
    assert len(one) >= 4 and (one["error"].abs() <= 0.01).all(), one.to_string()


CONFIG = """
[model]
config = "tiny"
B = 4
T = 64

[run]
steps = 4
warmup = 1
repetitions = 1
timeout_s = 60

[sweep]
variants = ["seq", "forkjoin", "taskiter"]
compilers = ["gcc"]
kernels = ["fast"]
threads = [1, 2]
batch_subsize = [2]
token_chunk = [32]

[analysis]
trace = true
ceilings = false
roofline = false
peak_beside = true
"""

# A hand-made ceilings.json in the recorded format (no STREAM or peak run in a test).
CEILINGS = {"schema": "pstudy-ceilings/1", "date": "2026-11-25T00:00:00Z",
            "host": {"hostname": "test", "cpu_model": "test", "logical_cpus": 2},
            "environment": {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"},
            "source": {"stream": {"binary": "stream"}, "peakflops": {"binary": "peakflops"}},
            "per_threads": [{"threads": t, "stream_GBs": {"copy": 10.0 * t, "scale": 10.0 * t, "add": 10.0 * t,
                                                          "triad": 10.0 * t},
                             "peak_gflops": {"avx2": 50.0 * t}, "best_isa": "avx2", "best_gflops": 50.0 * t}
                            for t in (1, 2)],
            "topology": {"available": False, "reason": "test"}}


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    if not (BUILD / "gpt2-taskiter").exists():
        pytest.skip("build/gcc/fast binaries not built (make)")
    tmp = tmp_path_factory.mktemp("validation")
    cfg = tmp / "tiny-validation.toml"
    cfg.write_text(CONFIG)
    proc = warm_perfstudy.perfstudy("run", cfg, "--results-root", tmp / "results", timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    directory = Path(proc.stdout.strip().splitlines()[-1])
    (directory / "ceilings.json").write_text(json.dumps(CEILINGS))
    proc = warm_perfstudy.perfstudy("predict", directory, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    # the sweep probed each run at both ends: how far apart the two probes were, in one line
    assert re.search(r"each run replayed with its own chunk times \(the schedule model alone\): mean \|error\| "
                     r"\d+\.\d%, largest \d+\.\d% over 5 points", proc.stdout), proc.stdout
    assert re.search(r"the probes right before and right after a run differed by \d+\.\d% at the median run, "
                     r"\d+% at most \(\w+ gcc/fast t=\d.*, repetition \d\)", proc.stdout), proc.stdout
    # the thief experiment's files, made by hand from the sweep's own 1-thread seq trace: one run
    # without the thief and one beside it at duty 0.5 (the plumbing, not the machine, is under test)
    sens = directory / "sensitivity"
    (sens / "traces").mkdir(parents=True)
    trace = next((directory / "traces").glob("seq_gcc_fast_t1_*_r0.csv"))
    rows = ["variant,compiler,kernels,threads,batch_subsize,k,ranks,repetition,order,mode,duty,status,error,"
            "stolen_GBs,thief_GBs,wall_s,trace"]
    for i, (mode, duty) in enumerate((("none", 0.0), ("dram", 0.5), ("cache", 0.5))):
        name = f"traces/{trace.stem}_{mode}_d{duty:g}.csv"
        shutil.copyfile(trace, sens / name)
        rows.append(f"seq,gcc,fast,1,NA,NA,NA,0,{i},{mode},{duty},ok,,{3.0 if mode != 'none' else 0},,1.0,{name}")
    (sens / "runs.csv").write_text("\n".join(rows) + "\n")
    out = tmp / "recording"
    validation.pack({"tiny": directory}, out, "test")
    return directory, out


def test_pack_and_validate(packed):
    directory, out = packed
    recording = validationdata.Recording(out)
    assert recording.studies() == ["tiny"]
    frame = validation.validate(recording)
    sweep = frame[frame["kind"] == "sweep"]
    # every measured point: seq at 1 thread, forkjoin and taskiter at 1 and 2
    assert sorted(zip(sweep["variant"], sweep["threads"])) == [("forkjoin", 1), ("forkjoin", 2), ("seq", 1),
                                                               ("taskiter", 1), ("taskiter", 2)]
    thief = frame[frame["kind"] == "thief"]
    assert sorted(zip(thief["mode"], thief["duty"])) == [("dram", 0.5), ("none", 0.0)]  # cache mode left out
    # the recording predicts what predict itself predicted from the results directory (to the 5 digits
    # the recording keeps of each chunk's noise)
    import pandas as pd
    own = pd.read_csv(directory / "predict-this-machine" / "validation.csv")
    for _, r in own.iterrows():
        match = sweep[(sweep["variant"] == r["variant"]) & (sweep["threads"] == r["threads"])]
        assert float(match["predicted_step_s"].iloc[0]) == pytest.approx(r["predicted_step_s"], rel=1e-6)
        # and so with the probes beside the runs: `perfstudy predict` reads the results' thread_peaks.csv
        assert float(match["predicted_beside_s"].iloc[0]) == pytest.approx(r["predicted_beside_s"], rel=1e-6)
        # and each run replayed with its own chunk times, from the same traces
        assert float(match["replayed_own_s"].iloc[0]) == pytest.approx(r["replayed_own_s"], rel=1e-9)
    # each configuration's scale and runtime cost per task, measured in its 1-thread trace (3 iterations
    # after the warm-up: two spans to the next iteration)
    runtime = pd.read_csv(out / validationdata.RUNTIME)
    assert sorted(runtime["variant"]) == ["forkjoin", "seq", "taskiter"]
    assert (runtime["busy_scale"] > 0).all() and runtime["busy_scale"].notna().all()  # a ratio of times: its size is the machine's
    assert runtime["seconds_per_task"].between(0.0, 1e-3).all()
    costs = recording.runtime_costs("tiny")
    assert sorted(ck.variant for ck in costs) == ["forkjoin", "seq", "taskiter"]
    # the chunks' noise of the static schedules only (their barriers wait for it), every operation
    noise = recording.noise("tiny")
    assert sorted(ck.variant for ck in noise) == ["forkjoin", "seq"]
    assert all(len(per) > 10 and all(min(d) >= -1 for d in per.values()) for per in noise.values())
    # the probes beside the runs travel with the recording: every sweep point is predicted with them too,
    # and at 1 thread, where a run is its own source, to the same time
    peaks = pd.read_csv(out / validationdata.THREAD_PEAKS)
    assert sorted(set(peaks["threads"])) == [1, 2] and (peaks["gflops"] > 0).all()
    # one probe right before each run and one right after it, each thread of the run in both
    assert peaks.groupby("when").size().to_dict() == {"before": len(peaks) // 2, "after": len(peaks) // 2}
    assert sweep["error_beside"].notna().all() and thief["error_beside"].isna().all()
    one = sweep[sweep["threads"] == 1]
    assert (one["predicted_beside_s"] == one["predicted_step_s"]).all()
    # the schedule model alone: each run replayed with its own chunk times (the results directory is
    # where the recording names it); at 1 thread that is the chunks one after the other plus the
    # runtime's cost a task, measured in the same run as the step
    assert sweep["error_own"].notna().all() and thief["error_own"].isna().all()
    # a live run on a shared machine is timed beside whatever else runs (a neighbour's preemption lands in
    # the measured step, not in the chunks): its replay is held to the target on the committed
    # recordings (test_the_schedule_model_alone_holds_on_every_committed_study) and here only to a
    # bound that a replay which lost chunks or the runtime's costs would break
    assert (one["error_own"].abs() <= LIVE_SCHEDULE_BOUND).all(), one.to_string()
    lines = validation.report_lines(frame, "tiny")
    assert len(lines) == len(frame) + 4 and "target 5%" in lines[1] and "beyond their target" in lines[-3]
    assert "beside its probes" in lines[1] and lines[-2].startswith("  with the machine as the probes")
    assert "own chunk times" in lines[1] and lines[-1].startswith("  replayed with each run's own chunk times")
    # perfstudy validate check prints the same and exits 0 or 1 (the tiny sweep on a busy machine may miss)
    proc = subprocess.run([PERFSTUDY, "validate", "check", out], capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stdout.count("error ") == len(frame)


def test_a_recording_replays_its_runs_alone_from_its_own_chunks(packed, tmp_path):
    # the packed own chunk times stand in for the traces: the same replay, to the nanosecond they keep
    directory, out = packed
    gone = tmp_path / "gone"
    shutil.copytree(out, gone)
    meta = json.loads((gone / validationdata.META).read_text())
    meta["studies"][0]["results"] = str(tmp_path / "moved" / directory.name)  # the results gone
    (gone / validationdata.META).write_text(json.dumps(meta))
    from_packed = validation.validate(validationdata.Recording(gone))
    sweep = from_packed[from_packed["kind"] == "sweep"]
    assert sweep["error_own"].notna().all()
    meta["studies"][0]["results"] = str(directory)
    (gone / validationdata.META).write_text(json.dumps(meta))
    (gone / validationdata.OWN_CHUNKS).rename(tmp_path / "own.csv.xz")
    from_traces = validation.validate(validationdata.Recording(gone))
    assert list(from_traces["replayed_own_s"]) == pytest.approx(list(from_packed["replayed_own_s"]), rel=1e-6,
                                                                nan_ok=True)
    # a damaged duration is named with its file, row and column
    import pandas as pd
    own = pd.read_csv(tmp_path / "own.csv.xz")
    own.loc[3, "ns"] = -5
    own.to_csv(gone / validationdata.OWN_CHUNKS, index=False, na_rep="NA")
    with pytest.raises(StudyError, match=r"own_chunks.csv.xz: row 5, column ns"):
        validation.validate(validationdata.Recording(gone))


def test_a_recording_without_its_results_has_no_own_replay_and_a_bad_trace_is_named(packed, tmp_path):
    directory, out = packed
    gone = tmp_path / "gone"
    shutil.copytree(out, gone)
    (gone / validationdata.OWN_CHUNKS).unlink()  # as the 2-vCPU recordings have none
    meta = json.loads((gone / validationdata.META).read_text())
    meta["studies"][0]["results"] = str(tmp_path / "moved" / directory.name)  # gone, as the 2-vCPU recordings'
    (gone / validationdata.META).write_text(json.dumps(meta))
    frame = validation.validate(validationdata.Recording(gone))
    assert frame["error_own"].isna().all() and frame["error"].notna().all()
    # kept beside the recording (results/<name>), as a committed study may keep its own, it is found there
    kept = tmp_path / "kept"
    shutil.copytree(gone, kept)
    shutil.copytree(directory, kept / "results" / directory.name)
    trace = next((kept / "results" / directory.name / "traces").glob("taskiter_gcc_fast_t2_*_r0.csv"))
    assert validationdata.Recording(kept).results_of("tiny") == kept / "results" / directory.name
    trace.write_text("iteration,op\n")
    with pytest.raises(StudyError, match=rf"{trace.name}: missing column"):
        validation.validate(validationdata.Recording(kept))


def test_bad_recordings_are_one_line(tmp_path):
    with pytest.raises(StudyError, match="validation.json: missing"):
        validationdata.Recording(tmp_path)
    (tmp_path / "validation.json").write_text('{"schema": "other"}')
    with pytest.raises(StudyError, match="schema: expected"):
        validationdata.Recording(tmp_path)
    proc = subprocess.run([PERFSTUDY, "validate", "check", tmp_path], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_bad_recorded_times_are_named(packed, tmp_path):
    _, out = packed
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    text = (copy / "points.csv").read_text().splitlines()
    head, first = text[0], text[1].split(",")
    first[head.split(",").index("measured_step_s")] = "-1"
    (copy / "points.csv").write_text("\n".join([head, ",".join(first)] + text[2:]) + "\n")
    with pytest.raises(StudyError, match=r"points.csv: row 2, column measured_step_s"):
        validationdata.Recording(copy)


def test_a_recording_without_runtime_costs_still_reads_and_a_bad_scale_is_named(packed, tmp_path):
    _, out = packed
    old = tmp_path / "old"
    shutil.copytree(out, old)
    (old / validationdata.RUNTIME).unlink()  # as the oldest recordings
    (old / validationdata.NOISE).unlink()
    recording = validationdata.Recording(old)
    assert recording.runtime_costs("tiny") == {} and recording.noise("tiny") == {}
    # the chunk times as measured, unscaled
    now = validationdata.Recording(out)
    scales = {ck: r.busy_scale for ck, r in now._config_rows("tiny")}
    scaled = now.medians("tiny")
    for ck, per in recording.medians("tiny").items():
        for chunk, d in per.items():
            assert scaled[ck][chunk] == pytest.approx(d * scales[ck], rel=1e-12)
    assert len(validation.validate(recording)) > 0
    for table, column, value, message in (
            (validationdata.RUNTIME, "busy_scale", "-0.5", "-0.5 is not a positive finite ratio"),
            (validationdata.NOISE, "deviation", "inf", "inf is not a relative deviation"),
            (validationdata.THREAD_PEAKS, "when", "during", "during is not before or after")):
        bad = tmp_path / f"bad-{column}"
        shutil.copytree(out, bad)
        opener = gzip.open if table.endswith(".gz") else open
        with opener(bad / table, "rt") as f:
            text = f.read().splitlines()
        head, first = text[0], text[1].split(",")
        first[head.split(",").index(column)] = value
        with opener(bad / table, "wt") as f:
            f.write("\n".join([head, ",".join(first)] + text[2:]) + "\n")
        with pytest.raises(StudyError, match=rf"{table}: row 2, column {column}: {message}"):
            validationdata.Recording(bad)


def test_a_recording_with_plain_per_chunk_tables_reads_as_the_gzipped_one(packed, tmp_path):
    _, out = packed
    assert validationdata.CHUNKS.endswith(".gz") and (out / validationdata.CHUNKS).read_bytes()[:2] == b"\x1f\x8b"
    old = tmp_path / "plain"
    shutil.copytree(out, old)
    for name in (validationdata.CHUNKS, validationdata.NOISE):  # as older recordings have them
        (old / name[:-len(".gz")]).write_bytes(gzip.decompress((old / name).read_bytes()))
        (old / name).unlink()
    plain, now = validationdata.Recording(old), validationdata.Recording(out)
    assert plain.medians("tiny") == now.medians("tiny") and plain.noise("tiny") == now.noise("tiny")
    assert now.noise("tiny")
    # no time stamp in the gzip header (bytes 4-7): a recording packed again makes the same bytes
    assert (out / validationdata.CHUNKS).read_bytes()[4:8] == bytes(4)
    # a truncated gzip is one line naming the file
    bad = tmp_path / "truncated"
    shutil.copytree(out, bad)
    data = (bad / validationdata.CHUNKS).read_bytes()
    (bad / validationdata.CHUNKS).write_bytes(data[:len(data) // 2])
    with pytest.raises(StudyError, match=r"chunks.csv.gz: unreadable"):
        validationdata.Recording(bad)


def test_probes_before_and_after_a_run_are_averaged_and_older_recordings_have_before_only(packed, tmp_path):
    import pandas as pd
    from pstudy.analyse import chunktimes
    key = {"variant": "forkjoin", "compiler": "gcc", "kernels": "fast", "threads": 2}
    rows = [{**key, "repetition": r, "when": w, "thread": t, "gflops": g}
            for r, w, t, g in ((0, "before", 0, 100.0), (0, "before", 1, 40.0), (0, "after", 0, 100.0),
                               (0, "after", 1, 100.0), (1, "before", 0, 90.0), (1, "before", 1, 90.0),
                               (2, "before", 0, 80.0), (2, "before", 1, 60.0), (2, "after", 0, 80.0),
                               (2, "after", 1, 60.0))]
    frame = pd.DataFrame(rows)
    for col in ("batch_subsize", "k", "ranks", "tile_columns", "tile_in_channels", "tile_sequences",
                "tiles_per_product"):
        frame[col] = pd.NA
    [(point, speeds)] = chunktimes.thread_peaks_of(frame).items()
    # thread 1: runs at (40 + 100) / 2, 90 (before only) and 60: the median of 70, 90, 60
    assert point[:4] == ("forkjoin", "gcc", "fast", 2) and speeds == [90.0, 70.0]
    _, out = packed
    old = tmp_path / "old"
    shutil.copytree(out, old)
    table = pd.read_csv(old / validationdata.THREAD_PEAKS)
    table[table["when"] == "before"].drop(columns="when").to_csv(old / validationdata.THREAD_PEAKS, index=False,
                                                                  na_rep="NA")
    peaks = validationdata.Recording(old).thread_peaks("tiny")
    assert len(peaks) == len(table) // 2 and set(peaks["when"]) == {"before"}


def test_probe_drift_is_the_team_rate_after_over_before():
    import pandas as pd
    from pstudy.analyse import findings
    key = {"variant": "forkjoin", "compiler": "gcc", "kernels": "fast", "threads": 2, "batch_subsize": pd.NA,
           "k": pd.NA, "ranks": pd.NA, "tile_columns": pd.NA, "tile_in_channels": pd.NA, "tile_sequences": pd.NA,
           "tiles_per_product": pd.NA}
    rows = [{**key, "repetition": r, "when": w, "thread": t, "gflops": g}
            for r, w, t, g in ((0, "before", 0, 100.0), (0, "before", 1, 100.0), (0, "after", 0, 100.0),
                               (0, "after", 1, 50.0), (1, "before", 0, 100.0), (1, "before", 1, 100.0),
                               (1, "after", 0, 101.0), (1, "after", 1, 101.0), (2, "before", 0, 90.0),
                               (2, "before", 1, 90.0))]
    median, largest, point, repetition = findings.probe_drift(pd.DataFrame(rows))
    # run 0: 150 after 200 (25%), run 1: 202 after 200 (1%); run 2 has no probe after and does not count
    assert median == pytest.approx(0.13) and largest == pytest.approx(0.25) and repetition == 0
    assert point[:4] == ("forkjoin", "gcc", "fast", 2)
    before_only = pd.DataFrame([r for r in rows if r["when"] == "before"])
    assert findings.probe_drift(before_only) is None
    assert findings.probe_drift(before_only.drop(columns="when")) is None
    # the report's line: each thread count's range of the team's peak, then the drift
    text = findings.probes_text(pd.DataFrame(rows))
    assert text.startswith("each run's threads' peak, probed beside it: 2 threads 150-202 GFLOP/s over 3 runs; ")
    assert text.endswith("13.0% from the one before at the median run, 25% at most (forkjoin gcc/fast t=2, repetition 0)")
    assert findings.probes_text(pd.DataFrame(rows[:0])) == ""


# the prediction intervals' coverage (intervals.bootstrap_medians over the kept iterations of the
# 1-thread runs) on the recordings that keep each run's chunk times: their 90% intervals hold at least
# COVERAGE of the measured points
COVERAGE = 0.85


def _with_chunk_times(directory):
    recording = validationdata.Recording(directory)
    # own_chunks(study) is None exactly where the recording has no own-chunk table: asking whether the
    # file is there spares every test process reading and grouping all of it to choose the parameters
    own = (recording.directory / validationdata.OWN_CHUNKS).exists()
    return any(own or recording.results_of(s) is not None
               and any((recording.results_of(s) / "traces").glob("*_t1_*")) for s in recording.studies())


@pytest.mark.parametrize("directory", [p for p in ALL_RECORDINGS if _with_chunk_times(p)], ids=lambda p: p.name)
def test_prediction_intervals_cover_the_measured_points(directory):
    from pstudy.analyse import intervals

    frame = validation.validate(validationdata.Recording(directory), with_intervals=True)
    sweep = frame[(frame["kind"] == "sweep") & frame["predicted_low"].notna()]
    sweep = sweep.assign(predicted_low=sweep["predicted_low"].astype(float),
                         predicted_high=sweep["predicted_high"].astype(float))
    share, width, n = intervals.coverage(sweep)
    print(f"\n{directory.name}: 90% intervals hold {100 * share:.0f}% of {n} measured points; "
          f"median width {100 * width:.1f}% of the predicted step")
    assert n > 0 and share >= COVERAGE
