"""predict step time, speedup and efficiency on P simulated cores by replaying the recorded task graphs."""

from pathlib import Path

from pstudy.store import machinefiles, resultsdir
from pstudy.measure import ceilings
from pstudy.analyse import prediction
from pstudy.errors import StudyError


def add_arguments(parser):
    parser.add_argument("results_dir", help="results directory with 1-thread traces (traces/*_t1_*.csv)")
    parser.add_argument("--machine", help="target machine description (machines/NAME.toml or a name in "
                        "machines/); default: the machine the results were measured on (their ceilings.json)")
    parser.add_argument("--source-machine", help="machine description of where the traces were recorded, "
                        "when the results directory has no ceilings.json")
    parser.add_argument("--threads", help="comma-separated core counts (default: powers of two up to the "
                        "target's cores, its core count, and every measured count)")
    parser.add_argument("--build-dir", help="build tree of the binaries that describe the graphs "
                        "(default: the results' run.build_dir, or $PERFSTUDY_BUILD_DIR)")
    parser.add_argument("--out", help="output directory (default RESULTS_DIR/predict-MACHINE)")


def parse_threads(text, limit):
    try:
        counts = sorted({int(t) for t in text.split(",")})
    except ValueError:
        raise StudyError(f"--threads: expected comma-separated integers, got {text!r}") from None
    if not counts or counts[0] < 1:
        raise StudyError(f"--threads: core counts must be positive, got {text!r}")
    if counts[-1] > limit:
        raise StudyError(f"--threads: {counts[-1]} exceeds the machine's {limit} cores")
    return counts


def source_machine(directory, args):
    if args.source_machine:
        return machinefiles.load(args.source_machine)
    path = resultsdir.ResultsDir(directory).ceilings
    if not path.is_file():
        raise StudyError(f"{path}: missing; predict needs the per-core speed and bandwidth of the machine the "
                         "traces were recorded on (measure them with the sweep, or give --source-machine FILE)")
    try:
        data = ceilings.load_ceilings(path)
    except ceilings.CeilingsError as err:
        raise StudyError(str(err)) from None
    return machinefiles.from_ceilings(data, "this-machine")


def main(args):
    directory = resultsdir.locate(args.results_dir)
    meta = resultsdir.read_meta(directory)
    source = source_machine(directory, args)
    target = machinefiles.load(args.machine) if args.machine else source
    measured = prediction.measured_points(directory)
    if args.threads:
        counts = parse_threads(args.threads, target.cores)
    else:
        counts = {1, target.cores}
        p = 1
        while p < target.cores:
            counts.add(p)
            p *= 2
        if target is source:
            counts |= {key[3] for key in measured if key[3] <= target.cores}
        counts = sorted(counts)
    frame, validation = prediction.predict(directory, meta, source, target, counts, args.build_dir)
    out = Path(args.out) if args.out else resultsdir.ResultsDir(directory).predict(target.name)
    out.mkdir(parents=True, exist_ok=True)
    resultsdir.write_csv(out / "prediction.csv", frame)
    resultsdir.write_csv(out / "validation.csv", validation)
    written = prediction.figures(frame, measured if target is source else {}, out, target.name)
    print(f"PREDICTED on {target.name} ({'measured' if target.measured else 'public figures, not measured'}; "
          f"{target.cores} cores), from the 1-thread traces of {directory.name}")
    print(f"{'configuration':<28} {'P':>4} {'step_s':>10} {'speedup':>8} {'eff':>6} {'LB':>5} {'comm':>5} "
          f"{'compsc':>6}")
    for _, r in frame.iterrows():
        print(f"{prediction.series_label(r) + ' ' + r['compiler'] + '/' + r['kernels']:<28} {r['threads']:>4} "
              f"{r['predicted_step_s']:>10.5f} {r['predicted_speedup']:>8.2f} {r['predicted_efficiency']:>6.2f} "
              f"{r['predicted_load_balance']:>5.2f} {r['predicted_communication_eff']:>5.2f} "
              f"{r['predicted_computation_scalability']:>6.2f}")
    print("validation (on the machine the results were measured on): prediction error per measured point")
    for _, r in validation.iterrows():
        print(f"  {prediction.series_label(r) + ' ' + r['compiler'] + '/' + r['kernels']:<28} t={r['threads']:<3} "
              f"measured {r['measured_step_s']:.5f} s  predicted {r['predicted_step_s']:.5f} s  "
              f"error {100 * r['error']:+.1f}%")
    if len(validation):
        worst = validation["error"].abs().max()
        print(f"  largest error {100 * worst:.1f}% over {len(validation)} measured points")
    print(f"wrote {out}/prediction.csv, validation.csv, " + ", ".join(p.name for p in written))
    return 0
