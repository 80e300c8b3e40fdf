"""validation under noise made on purpose, and each variant's sensitivity to it (needs the machine to itself).

    perfstudy noise run --out DIR [--config default --config noise-d12] [--cpus 0] [--duty 0.25,0.5]
                        [--period-us 10000,100000] [--rounds 1] [--machine FILE]
    perfstudy noise check DIR [--machine FILE]

run, per config (default: configs/default.toml and configs/noise-d12.toml), per round: the sweep
quiet, then the same sweep beside build/probes/disturb (a CPU-bound co-runner pinned to --cpus, busy
for each --duty of every --period-us) at each duty and period in turn, into DIR/<config>/quiet-r<round>
and DIR/<config>/d<duty>-p<period>us-r<round> (pstudy.measure.noise); then check.

check compares three predictions of each quiet point with its measurement (pstudy.analyse.noise:
from the quiet runs, from the disturbed runs' wall times, and from their CPU times, --dedicated),
prints, per point and duty, the three errors and each variant's slowdown beside the co-runner, and
writes each study's noise table and figure into its first quiet sweep (`perfstudy report` shows
them). Target: the dedicated prediction within 5% of the quiet step at every point, and closer than
the disturbed wall-time prediction on the mean; exit status 1 when it misses.
"""

from pathlib import Path

from pstudy import common
from pstudy.analyse import noise
from pstudy.errors import StudyError
from pstudy.measure import noise as noiseruns
from pstudy.show import noisecheck, noisefigure
from pstudy.store import machinefiles

DEFAULT_CONFIGS = ("default", "noise-d12")


def add_arguments(parser):
    sub = parser.add_subparsers(dest="action", required=True)
    r = sub.add_parser("run", help="the sweeps quiet and beside the co-runner, then check")
    r.add_argument("--out", required=True)
    r.add_argument("--config", action="append")
    r.add_argument("--cpus", default="0", help="CPUs the co-runner is pinned to (default 0: one core)")
    r.add_argument("--duty", default="0.25,0.5", help="comma-separated duty cycles (default 0.25,0.5)")
    r.add_argument("--period-us", default="10000,100000",
                   help="comma-separated periods of the co-runner in microseconds (default 10 and 100 ms)")
    r.add_argument("--rounds", type=int, default=1, help="quiet and disturbed sweeps, alternating (default 1)")
    c = sub.add_parser("check", help="the predictions and slowdowns of a noise study's sweeps")
    c.add_argument("out")
    for p in (r, c):
        p.add_argument("--machine", help="the machine file predict replays on (perfstudy predict --source-machine; "
                                         "default: each quiet sweep's measured ceilings)")


def number_list(option, text, ok, what):
    try:
        values = [float(t) for t in text.split(",")]
    except ValueError:
        raise StudyError(f"{option}: expected comma-separated {what}, got {text!r}") from None
    if not values or not all(ok(v) for v in values):
        raise StudyError(f"{option}: expected comma-separated {what}, got {text!r}")
    return values


def config_path(name):
    path = Path(name)
    if not path.suffix:
        path = common.REPO_ROOT / "configs" / f"{name}.toml"
    if not path.is_file():
        raise StudyError(f"--config: {name}: no such config")
    return path


def main(args):
    if args.action == "check":
        return check(args.out, args.machine)
    if args.rounds < 1:
        raise StudyError(f"--rounds: expected a positive integer, got {args.rounds}")
    out = Path(args.out).resolve()
    duties = number_list("--duty", args.duty, lambda v: 0 < v <= 1, "numbers in (0, 1]")
    # below a millisecond the co-runner's wake-ups, not its duty, would be the disturbance
    periods = number_list("--period-us", args.period_us, lambda v: 1000 <= v <= 10_000_000,
                          "microseconds in [1000, 1e7]")
    levels = [(duty, period) for period in periods for duty in duties]
    configs = [config_path(name).resolve() for name in args.config or DEFAULT_CONFIGS]
    noiseruns.cpu_list(args.cpus)
    if args.machine:
        machinefiles.load(args.machine)
    common.end_like_ctrl_c()  # a kill or hang-up stops the sweep and the co-runner as Ctrl-C does
    noiseruns.run(out, configs, levels, args.rounds, args.cpus)
    return check(out, args.machine)


def check(out, machine=None):
    import pandas as pd

    rows, tables, floor, unquiet = noise.check(out, machine)
    for home, table in tables.items():
        print(f"wrote {noisefigure.write(home, noisefigure.with_why(table))} (perfstudy report {home} shows it)")
    for line in unquiet:
        print(f"warning: {line}")
    for line in noisecheck.lines(rows, floor, noise.TARGET):
        print(line)
    for table in tables.values():
        print("\n".join(noisefigure.table_lines(pd.DataFrame(noisefigure.with_why(table)))))
    return 1 if noise.missed(rows) else 0
