"""What a sweep leaves for the memory-boundedness analysis, beside its runs.

After the runs of `perfstudy run`, when [analysis] asks for it:
  ops/<variant>_<compiler>_<kernels>.json   each binary's `--json --describe`: per operation of
                                            the step, its FLOPs and compulsory bytes (core/traffic.c)
  ops/<point stem>.json                     a chunked variant's at one point, where its chunking
                                            gives another step (pack operations where rows are cut)
  ceilings.json                             STREAM bandwidth and peak FLOP/s at the sweep's thread
                                            counts (pstudy.ceilings), measured on this machine now
The traces (traces/*.csv) are written by the runs themselves (--trace); their exports and
efficiency factors are made from them by `perfstudy run`'s results step, and `perfstudy report`
then calls pstudy.analyse.roofline on the directory.
"""

import subprocess
import sys
from pathlib import Path

from pstudy import common
from pstudy.store import resultsdir, vocabulary
from pstudy.measure import runner
from pstudy.errors import StudyError


def describe_ops(study, directory, binaries, root, points=()):
    """Writes ops/<variant>_<compiler>_<kernels>.json for every binary of the sweep, and for each of
    `points` of a chunked variant whose step differs from its binary's file (pack operations only
    where its chunking cuts the products' rows) ops/<point stem>.json; returns None or a note
    saying why not."""
    results = resultsdir.ResultsDir(directory)

    def describe(binary, extra):
        cmd = [str(binary), "--json", "--describe"] + runner.model_args(study, root) + extra
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise StudyError(f"operation costs not written: {binary} --describe failed: {r.stderr.strip()}")
        return r.stdout

    def operations(text):  # the info line names the threads and chunking; the operations are the step
        return [line for line in text.splitlines() if not line.startswith('{"info"')]
    try:
        for (compiler, kernels, variant), binary in sorted(binaries.items()):
            path = results.ops(variant, compiler, kernels)
            path.parent.mkdir(exist_ok=True)
            if not path.exists():
                resultsdir.atomic_write(path, describe(binary, []))
        for point in points:
            if not vocabulary.is_chunked(point.variant) or getattr(point, "ranks", None) is not None:
                continue
            own = results.point_ops(point)
            if own.exists():
                continue
            text = describe(binaries[(point.compiler, point.kernels, point.variant)], runner.schedule_args(point))
            shared = results.ops(point.variant, point.compiler, point.kernels)
            if operations(text) != operations(shared.read_text()):
                resultsdir.atomic_write(own, text)
    except StudyError as err:
        return str(err)
    except OSError as err:
        return f"operation costs not written: {err}"
    return None


def measure_ceilings(study, directory, root):
    """Writes ceilings.json at the sweep's thread counts unless it is there already; returns None or a
    note saying why not."""
    from pstudy.measure import ceilings
    path = resultsdir.ResultsDir(directory).ceilings
    if path.exists():
        return None
    bench = common.probes_dir(study, root)
    if not (bench / "stream").exists() or not (bench / "peakflops").exists():
        return f"ceilings not measured: {bench}: stream and peakflops are not built (run `make`)"
    sys.stderr.write(f"perfstudy run: measuring ceilings (STREAM, peak FLOP/s) at threads "
                     f"{', '.join(map(str, study.sweep['threads']))}\n")
    try:
        ceilings.measure_ceilings(bench, study.sweep["threads"], path, proc_bind=study.placement["proc_bind"],
                                  places=study.placement["places"], likwid_bench=None)
    except ceilings.CeilingsError as err:
        return f"ceilings not measured: {err}"
    return None


def counters_detection_for(backend):
    """{"backend": name or None, "reason": ..., "reasons": {...}} (pstudy.counters.detect_backend)."""
    from pstudy.measure import counters
    return counters.detect_backend(backend)


def collect_counters(study, directory, points, root, detection):
    """Hardware-counter runs, one per point (repetition 0), beside the timed runs, which stay free
    of counter overhead: with likwid, the point's counters build (`make counters COUNTERS=likwid`)
    under `likwid-perfctr -m -g GROUP` for each memory group, written to
    counters/<run stem>.<GROUP>.csv, which pstudy.roofline reads as measured DRAM bytes per kernel;
    with PAPI, the counters build's per-region counts (counters/<run stem>.papi.txt); with perf,
    whole-run `perf stat` counts (counters/<run stem>.perf.csv). Returns None or a note."""
    from pstudy.measure import counters
    backend = detection.get("backend")
    if backend is None:
        return None
    (Path(directory) / resultsdir.COUNTERS_DIR).mkdir(exist_ok=True)
    build_dir = common.build_dir(study, root)
    groups = []
    if backend == "likwid":
        listing = subprocess.run(["likwid-perfctr", "-a"], capture_output=True, text=True).stdout
        groups = counters.likwid_memory_groups(counters.likwid_groups(listing))
    notes = []
    for point in points:
        stem = resultsdir.run_stem(point, 0)
        binary = build_dir / point.compiler / f"{point.kernels}-{backend}" / f"gpt2-{point.variant}"
        if backend in ("likwid", "papi") and not binary.exists():
            return (f"counters ({backend}) not collected: {binary} is missing "
                    f"(build it with `make counters COUNTERS={backend}`)")
        env = runner.environment(study, point)
        if backend == "likwid":
            cpus = list(range(point.threads))
            for group in groups:
                out = resultsdir.ResultsDir(directory).counters(point, 0, f"{group}.csv")
                if out.exists():
                    continue
                argv = counters.likwid_command(runner.command(study, point, str(binary), root), group, cpus, out)
                r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=study.run["timeout_s"])
                if r.returncode != 0:
                    notes.append(f"{stem} {group}: likwid-perfctr exit {r.returncode}")
        elif backend == "papi":
            out = resultsdir.ResultsDir(directory).counters(point, 0, "papi.txt")
            if out.exists():
                continue
            r = subprocess.run(runner.command(study, point, str(binary), root), capture_output=True, text=True,
                               env=env, timeout=study.run["timeout_s"])
            resultsdir.atomic_write(out, "".join(line + "\n" for line in r.stderr.splitlines()
                                                 if line.startswith("papi ")))
        elif backend == "perf":
            out = resultsdir.ResultsDir(directory).counters(point, 0, "perf.csv")
            if out.exists():
                continue
            binary = runner.binary_path(study, point, root)
            argv = ["perf", "stat", "-x,", "-o", str(out), "-e", "cycles,instructions", "--"] + \
                runner.command(study, point, binary, root)
            subprocess.run(argv, capture_output=True, text=True, env=env, timeout=study.run["timeout_s"])
    return "; ".join(notes) or None


def experiment_binaries(study, points, root):
    """{(compiler, kernels, variant): path} of the binaries `points` run; StudyError naming the first
    that is missing."""
    import os
    binaries = {}
    for point in points:
        key = (point.compiler, point.kernels, point.variant)
        if key not in binaries:
            path = runner.binary_path(study, point, root)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise StudyError(f"{study.path}: run.binary: no executable {path} for {'/'.join(key)} (run `make`)")
            binaries[key] = path
    return binaries


def bandwidth_sensitivity(study, directory, root, seed):
    """The bandwidth-interference experiment (pstudy.sensitivity) into DIRECTORY/sensitivity/, unless
    its runs.csv is there already; returns (its analysis, None) where it ran, else (None, None) or
    (None, a note saying why not)."""
    import os

    from pstudy.measure import sensitivity
    if (resultsdir.ResultsDir(directory).sensitivity / "runs.csv").exists():
        return None, None
    try:
        points, _ = sensitivity.experiment_points(study, sorted(os.sched_getaffinity(0)))
        binaries = experiment_binaries(study, points, root)
        analysis = sensitivity.run_experiment(study, directory, binaries, root,
                                              common.probes_dir(study, root) / "thief",
                                              study.sensitivity["levels"], study.sensitivity["modes"],
                                              study.sensitivity["repetitions"], seed,
                                              say=lambda text: common.say("run", f"sensitivity {text}"))
    except StudyError as err:
        return None, f"bandwidth sensitivity not measured: {err}"
    return analysis, None


def cache_simulation(study, directory, root):
    """Simulated cache traffic (pstudy.cachesim) into DIRECTORY/cachesim/ unless it is there; returns
    None or a note saying why not."""
    from pstudy.measure import cachesim
    try:
        cachesim.run_all(study, directory, root, say=lambda text: common.say("run", f"cachesim {text}"))
    except StudyError as err:
        return f"cache traffic not simulated: {err}"
    return None
