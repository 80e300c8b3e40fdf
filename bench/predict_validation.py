#!/usr/bin/env python3
"""Records what `perfstudy predict` is validated against, on a quiet machine, and prints the
per-point errors (a benchmark, not a test: it times things; tests/harness/test_validation.py reads
what it records and times nothing).

    make bench-predict    (= bench/predict_validation.py record --out docs/studies/predict-$(hostname -s))
    bench/predict_validation.py record --out docs/studies/predict-<host> [--config default
                                       --config predict-d12] [--results-root DIR] [--force]
    bench/predict_validation.py check  docs/studies/predict-<host> [--machine FILE]
(with the Python scripts/find-python.sh names: one that imports pandas, matplotlib and scipy)

record, per config (default: configs/default.toml, configs/predict-d12.toml and configs/predict-mpi.toml:
every variant at 1
and 2 threads with traces, the ceilings at the sweep's placement, the 1-thread step beside probes/thief
at each duty cycle):
  harness/perfstudy run CONFIG          the sweep (traces, ceilings.json; predict-d12 also runs the
                                        thief experiment, [analysis] sensitivity = true)
  harness/perfstudy sensitivity CONFIG --into DIR    where the config does not run it itself (and its
                                        sweep has the baseline variant at 1 thread)
  harness/perfstudy predict DIR         describes and keeps the task graphs
then packs the results into --out (store/validationdata.py: the measured machine, median step times,
1-thread chunk times, graphs, thief runs, gpt2-mpi's points; a few MB) and prints the errors as check
does. Needs `make` (the variants and bench/ binaries), mpirun and SimGrid's Python module
(python3-simgrid), and the whole machine: 14 minutes on a 2-vCPU Xeon VM.

check prints, per recorded point, measured and predicted step time and the error against its target
(5% for every variant at 1 and 2 threads, 10% beside the thief, 10% for gpt2-mpi at 1 and 2 ranks);
exit status 1 when a point misses.
Bad input: one line, exit status 2.
"""

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "harness"))
from pstudy import errors  # noqa: E402

errors.require_modules("bench/predict_validation.py")  # before minutes of measuring

from pstudy import errors  # noqa: E402
from pstudy.errors import StudyError  # noqa: E402

PERFSTUDY = ROOT / "harness" / "perfstudy"
DEFAULT_CONFIGS = ("default", "predict-d12", "predict-mpi")


def perfstudy(*args):
    """Runs a perfstudy subcommand, its output passed through; its stdout's last line."""
    proc = subprocess.run([str(PERFSTUDY), *map(str, args)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        raise StudyError(f"perfstudy {' '.join(map(str, args))}: exit status {proc.returncode}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def config_path(name):
    p = Path(name)
    if p.is_file():
        return p
    q = ROOT / "configs" / f"{name}.toml"
    if q.is_file():
        return q
    raise StudyError(f"--config {name}: no such file (nor configs/{name}.toml)")


def record(args):
    from pstudy.analyse import validation
    from pstudy.store import config as configmod, resultsdir, validationdata, vocabulary

    out = Path(args.out)
    if (out / validationdata.META).exists() and not args.force:
        raise StudyError(f"{out}: holds a recording already (--force replaces it)")
    studies = {}
    for name in args.config or DEFAULT_CONFIGS:
        path = config_path(name)
        study = configmod.load(path)
        run_args = ["run", path] + (["--results-root", args.results_root] if args.results_root else [])
        directory = Path(perfstudy(*run_args))
        if not (directory / "meta.json").is_file():
            raise StudyError(f"perfstudy run {path}: did not print its results directory (got {directory})")
        thief_step = vocabulary.BASELINE in study.sweep["variants"] and 1 in study.sweep["threads"]
        if thief_step and not (resultsdir.ResultsDir(directory).sensitivity / "runs.csv").is_file():
            perfstudy("sensitivity", path, "--into", directory)
        perfstudy("predict", directory)
        studies[study.name] = directory
    command = " ".join(sys.argv)
    validation.pack(studies, out, command)
    print(f"recorded {out}")
    return check_dir(out, None)


def check_dir(directory, machine_file):
    from pstudy.analyse import validation
    from pstudy.store import machinefiles, validationdata

    recording = validationdata.Recording(directory)
    machine = machinefiles.load(machine_file) if machine_file else None
    frame = validation.validate(recording, machine)
    for line in validation.report_lines(frame, f"predict against {recording.directory} "
                                                f"(recorded {recording.meta.get('recorded')})"):
        print(line)
    return 1 if (frame["error"].abs() > frame["target"]).any() else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="predict_validation.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run the sweeps and the thief experiment, keep a recording")
    rec.add_argument("--out", required=True, help="the recording's directory (docs/studies/predict-<host>)")
    rec.add_argument("--config", action="append", help="a config file or a name in configs/ (repeatable; "
                     f"default {', '.join(DEFAULT_CONFIGS)})")
    rec.add_argument("--results-root", help="where the sweeps' results directories go (default results/)")
    rec.add_argument("--force", action="store_true", help="replace a recording already in --out")
    chk = sub.add_parser("check", help="print the errors of predict against a recording")
    chk.add_argument("recording")
    chk.add_argument("--machine", help="machine file to predict with (default: the recording's machine.toml)")
    args = parser.parse_args(argv)
    try:
        if args.command == "record":
            return record(args)
        return check_dir(args.recording, args.machine)
    except StudyError as err:
        errors.exit_bad_input("predict_validation.py", str(err))


if __name__ == "__main__":
    sys.exit(main())
