"""record what `predict` is validated against on a quiet machine, or check predict against a recording.

    make bench-predict    (= perfstudy validate record --out docs/studies/<date>-<host>)
    perfstudy validate record --out docs/studies/predict-<host> [--config default --config predict-d12]
                              [--results-root DIR] [--force]
    perfstudy validate check docs/studies/predict-<host> [--machine FILE]

record, per config (default: configs/default.toml, configs/predict-d12.toml and
configs/predict-mpi.toml: every variant at 1 and 2 threads with traces, the ceilings at the sweep's
placement, the 1-thread step beside probes/thief at each duty cycle), runs the sweep, the thief
experiment where the config does not run it itself, and `perfstudy predict`, which describes and
keeps the task graphs (pstudy.measure.recording); then packs the results into --out
(store/validationdata.py: the measured machine, median step times, 1-thread chunk times, graphs,
thief runs, gpt2-mpi's points; a few MB) and prints the errors as check does. Needs `make` (the
variants and the probes), mpirun and SimGrid's Python module (python3-simgrid), and the whole
machine: 14 minutes on a 2-vCPU Xeon VM.

check prints, per recorded point, measured and predicted step time and the error against its target
(5% for every variant at 1 and 2 threads, 10% beside the thief, 10% for gpt2-mpi at 1 and 2 ranks);
exit status 1 when a point misses.
"""

import sys
from pathlib import Path

from pstudy.analyse import validation
from pstudy.common import REPO_ROOT
from pstudy.errors import StudyError
from pstudy.measure import recording
from pstudy.store import machinefiles, validationdata

DEFAULT_CONFIGS = ("default", "predict-d12", "predict-mpi")


def add_arguments(parser):
    sub = parser.add_subparsers(dest="action", required=True)
    rec = sub.add_parser("record", help="run the sweeps and the thief experiment, keep a recording")
    rec.add_argument("--out", required=True, help="the recording's directory (docs/studies/<date>-<host>)")
    rec.add_argument("--config", action="append", help="a config file or a name in configs/ (repeatable; "
                     f"default {', '.join(DEFAULT_CONFIGS)})")
    rec.add_argument("--results-root", help="where the sweeps' results directories go (default results/)")
    rec.add_argument("--force", action="store_true", help="replace a recording already in --out")
    chk = sub.add_parser("check", help="print the errors of predict against a recording")
    chk.add_argument("recording")
    chk.add_argument("--machine", help="machine file to predict with (default: the recording's machine.toml)")


def config_path(name):
    for path in (Path(name), REPO_ROOT / "configs" / f"{name}.toml"):
        if path.is_file():
            return path
    raise StudyError(f"--config {name}: no such file (nor configs/{name}.toml)")


def main(args):
    if args.action == "check":
        return check(args.recording, args.machine)
    out = Path(args.out)
    if (out / validationdata.META).exists() and not args.force:
        raise StudyError(f"{out}: holds a recording already (--force replaces it)")
    paths = [config_path(name) for name in args.config or DEFAULT_CONFIGS]
    studies = recording.sweeps(paths, args.results_root)
    validation.pack(studies, out, " ".join(["perfstudy", *sys.argv[1:]]))
    print(f"recorded {out}")
    return check(out, None)


def check(directory, machine_file):
    recorded = validationdata.Recording(directory)
    machine = machinefiles.load(machine_file) if machine_file else None
    frame = validation.validate(recorded, machine)
    for line in validation.report_lines(frame, f"predict against {recorded.directory} "
                                                f"(recorded {recorded.meta.get('recorded')})"):
        print(line)
    return 1 if (frame["error"].abs() > frame["target"]).any() else 0
