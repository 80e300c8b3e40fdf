"""predict step time, speedup and efficiency on P simulated cores by replaying the recorded task graphs."""

import json
import os
import sys
from pathlib import Path

from pstudy import common
from pstudy.store import comparable, graphcache, machinefiles, resultsdir, vocabulary
from pstudy.measure import ceilings
from pstudy.analyse import advice, chunktimes, distributed, findings, intervals, prediction, replay, runtimecost
from pstudy.show import predictfigures
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
    parser.add_argument("--best", action="store_true", help="rank every variant and chunking (BATCH_SUBSIZE, k; "
                        "gpt2-mpi's ranks x threads on one node) by predicted step time at each P and say what "
                        "bounds the best one")
    parser.add_argument("--no-mpi", action="store_true", help="with --best: leave gpt2-mpi's layouts out")
    parser.add_argument("--allow-borrowed", action="store_true",
                        help="with --best: rank too the configurations whose task times would come from traces of "
                             "other operations (marked borrowed in best.csv and on the terminal); by default they "
                             "are listed as not ranked, with the sweep that would rank them")
    parser.add_argument("--jobs", type=int, help="with --best: replays in this many processes (default: this "
                        "machine's CPUs; the result does not depend on it)")
    parser.add_argument("--dedicated", action="store_true", help="replay each chunk at its CPU time (the traces' "
                        "cpu_s) instead of its wall time: the machine without what descheduled the runs (a "
                        "neighbour, the hypervisor); says how disturbed each run was")
    parser.add_argument("--replicates", type=int, default=intervals.REPLICATES, help="bootstrap replicates of "
                        f"each prediction's {100 * intervals.INTERVAL:.0f}%% interval (default "
                        f"{intervals.REPLICATES}; each is a replay: 0 for no intervals)")
    parser.add_argument("--against", metavar="QUIET", help="validate against the measured points of another results "
                        "directory (matched by variant, build, threads and chunking) instead of this one's")
    parser.add_argument(comparable.OPTION, action="store_true", help="with --against: " + comparable.HELP)
    dist = parser.add_argument_group("distributed (gpt2-mpi: R ranks x T threads across nodes)")
    dist.add_argument("--distributed", action="store_true", help="predict gpt2-mpi instead: compute from the node "
                      "model, communication replayed on SimGrid over the machine's [network]")
    dist.add_argument("--nodes", help="comma-separated node counts (default: powers of two up to network.nodes)")
    dist.add_argument("--ranks", help="comma-separated rank counts on one node (instead of --nodes)")
    dist.add_argument("--ranks-per-node", type=int, help="default: network.ranks_per_node")
    dist.add_argument("--threads-per-rank", type=int, help="compute threads a rank (default: the node's cores / "
                      "ranks per node, less --comm-threads beside more than one rank)")
    dist.add_argument("--comm-threads", type=int, default=1, help="the binary's --comm-threads K (default 1): its "
                      "collectives as K channels, each on a communication thread with a core of its own")
    dist.add_argument("--update", default="sharded", help="sharded (default, the binary's) or replicated")
    dist.add_argument("--executor", help="node-level executor inside each rank (default forkjoin)")
    dist.add_argument("--collective", default="ring", help="ring (default, the binary's) or direct: the binary's "
                      "--collective, whose messages the replay sends")
    dist.add_argument("--engine", default="replay", help="how the communication is simulated: replay (default: "
                      "the binary's messages replayed on SimGrid) or smpi (the binary itself under SimGrid's SMPI, "
                      "built by make smpi, its compute stood in by the predicted compute)")
    dist.add_argument("--batch", type=int, help="the batch instead of the results' (weak scaling: a rank's; "
                      "strong: the whole)")
    dist.add_argument("--scaling", choices=("strong", "weak"), help="strong: the results' batch over the ranks; "
                      "weak: each rank the results' batch (default: the sweep's scaling, else strong)")


def parse_threads(text, limit):
    counts = int_list(text, "--threads")
    if counts[-1] > limit:
        raise StudyError(f"--threads: {counts[-1]} exceeds the machine's {limit} cores")
    return counts


def source_machine(directory, args, meta=None):
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
    runs_boot = (meta.machine["system"].get("boot_id") if meta is not None else None)
    ceilings_boot = data["host"].get("boot_id")
    if runs_boot and ceilings_boot and runs_boot != ceilings_boot:
        # a VM's host may place its vCPUs differently at each start: the curves may not be the runs'
        sys.stderr.write(f"perfstudy predict: warning: {path}: measured on another boot of the machine than the "
                         f"runs (boot id {ceilings_boot[:8]} against {runs_boot[:8]} in meta.json): its curves "
                         "calibrate the contention model for a machine the runs may not have had\n")
    return machinefiles.from_ceilings(data, "this-machine")


def int_list(text, option):
    """The sorted distinct positive integers of a comma-separated option value."""
    try:
        values = sorted({int(t) for t in text.split(",")})
    except ValueError:
        raise StudyError(f"{option}: expected comma-separated integers, got {text!r}") from None
    if not values or values[0] < 1:
        raise StudyError(f"{option}: counts must be positive, got {text!r}")
    return values


def main_distributed(args, directory, meta, source, target):
    nodes = int_list(args.nodes, "--nodes") if args.nodes else None
    ranks = int_list(args.ranks, "--ranks") if args.ranks else None
    if nodes and ranks:
        raise StudyError("--nodes and --ranks: give one (--ranks is R ranks on one node, --nodes N nodes of "
                         "--ranks-per-node ranks)")
    if nodes and max(nodes) > 1 and target.network is None:
        raise StudyError(f"--nodes {args.nodes}: {target.path or target.name} has no [network] section: it describes "
                         "one node, and more than one would be predicted with no network between them")
    for option, value in (("--ranks-per-node", args.ranks_per_node), ("--threads-per-rank", args.threads_per_rank)):
        if value is not None and value < 1:
            raise StudyError(f"{option}: expected a positive integer, got {value}")
    distributed.check_channels(args.comm_threads, args.engine)
    frame, validation = distributed.run(directory, meta, source, target, nodes, ranks, args.threads_per_rank,
                                        args.ranks_per_node, args.update, args.executor, args.scaling,
                                        args.build_dir, progress=lambda text: common.say("predict", text),
                                        collective=args.collective, batch=args.batch, engine=args.engine,
                                        comm_threads=args.comm_threads)
    out = Path(args.out) if args.out else resultsdir.ResultsDir(directory).predict(target.name)
    out.mkdir(parents=True, exist_ok=True)
    resultsdir.write_csv(out / "distributed.csv", frame)
    resultsdir.write_csv(out / "distributed_validation.csv", validation)
    fig = predictfigures.draw_distributed(frame, out / "predict_distributed.png", target.name)
    net = target.network
    print(f"PREDICTED gpt2-mpi on {target.name} (node: {'measured' if target.measured else 'public figures, not measured'}; "
          f"network: {'none in the machine file: one node, shared memory, assumed' if net is None else ('measured' if net.measured else 'public figures, not measured')}; "
          f"communication: {'the binary under SimGrid SMPI' if args.engine == 'smpi' else 'its messages replayed on SimGrid'}"
          f", {args.comm_threads} channel(s))")
    print(f"{'nodes':>5} {'ranks':>5} {'T':>4} {'batch':>6} {'compute_s':>10} {'reduce_s':>9} {'gather_s':>9} "
          f"{'update_s':>9} {'step_s':>9} {'effic':>6} {'overlap_s':>9} {'effic':>6}")
    for _, r in frame.iterrows():
        print(f"{r['nodes']:>5} {r['ranks']:>5} {r['threads']:>4} {r['global_batch']:>6} {r['compute_s']:>10.4f} "
              f"{r['reduce_scatter_s']:>9.4f} {r['all_gather_s']:>9.4f} {r['update_s']:>9.4f} "
              f"{r['predicted_step_s']:>9.4f} {100 * r['efficiency']:>5.1f}% {r['predicted_step_overlap_s']:>9.4f} "
              f"{100 * r['efficiency_overlap']:>5.1f}%")
    print("step_s: --overlap off (the binary's default); overlap_s: --overlap on, the gradients reduced bucket by "
          "bucket beside the backward pass (sharded: the parameters all-gathered beside the next forward pass)")
    if len(validation):
        print("validation (measured gpt2-mpi points of the results, one node):")
        for _, r in validation.iterrows():
            print(f"  {int(r['ranks'])} ranks x {int(r['threads'])} threads: measured {r['measured_step_s']:.5f} s  "
                  f"predicted {r['predicted_step_s']:.5f} s  error {100 * r['error']:+.1f}%")
    print(f"wrote {out}/distributed.csv, distributed_validation.csv, {fig.name}")
    return 0


def default_counts(target, measured=None):
    counts = {1, target.cores}
    p = 1
    while p < target.cores:
        counts.add(p)
        p *= 2
    if measured:
        counts |= {key.threads for key in measured if key.threads <= target.cores}
    return sorted(counts)


def warn_source_spread(stats, directory):
    """On stderr, a prediction for another machine: how far apart the host was during the 1-thread
    source runs (chunktimes.source_spread), where that is more than a few percent."""
    for line in chunktimes.source_spread(stats, chunktimes.thread_peaks_of(resultsdir.thread_peaks(directory))):
        sys.stderr.write(f"perfstudy predict: warning: {line}\n")


def main_best(args, directory, meta, source, target):
    counts = parse_threads(args.threads, target.cores) if args.threads else default_counts(target)
    stats = chunktimes.trace_stats(directory, meta.warmup)
    medians = stats.medians
    if not medians:
        raise StudyError(f"{directory}: no 1-thread traces (traces/*_t1_*.csv); run the sweep with "
                         "[analysis] trace = true and threads including 1")
    if target is not source:
        warn_source_spread(stats, directory)
    graphs = graphcache.Graphs(directory, meta, args.build_dir)
    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    if jobs < 1:
        raise StudyError(f"--jobs: expected a positive integer, got {jobs}")
    overheads = runtimecost.runtime_overheads(graphs, medians, chunktimes.measured_points(directory), source,
                                             stats.costs)
    frame, notes = advice.best(graphs, medians, meta, source, target, counts, mpi=not args.no_mpi, jobs=jobs,
                               overheads=overheads, noise=stats.noise if target is source else None,
                               allow_borrowed=args.allow_borrowed)
    out = Path(args.out) if args.out else resultsdir.ResultsDir(directory).predict(target.name)
    out.mkdir(parents=True, exist_ok=True)
    resultsdir.write_csv(out / "best.csv", frame)
    for line in advice.summary_lines(frame, target.name):
        print(line)
    print(f"  {overheads.line()}")
    for note in notes:
        print(f"  note: {note}")
    print(f"wrote {out}/best.csv")
    return 0


# what a prediction's directory was predicted from: a later prediction from other inputs (another
# --against directory of the same name) is refused there, never written over it
INPUTS = "inputs.json"


def claim_output(out, directory, against, target, dedicated):
    """The record of this prediction's inputs for `out`; StudyError when `out` holds a prediction
    recorded from other inputs."""
    inputs = {"results": str(Path(directory).resolve()), "against": str(Path(against).resolve()) if against else None,
              "machine": target.name, "dedicated": bool(dedicated)}
    try:
        before = json.loads((Path(out) / INPUTS).read_text())
    except (OSError, ValueError):
        return inputs  # none yet, or one from before the record: as the prediction always did
    if before != inputs:
        source = before.get("against") or before.get("results") if isinstance(before, dict) else None
        raise StudyError(f"{out}: holds a prediction from other inputs ({source or 'see its ' + INPUTS}); give "
                         "--out for this one (a prediction is never written over another's)")
    return inputs


def main(args):
    distributed.check_engine(args.engine)
    if args.engine != "replay" and not args.distributed:
        raise StudyError(f"--engine {args.engine}: only with --distributed")
    directory = resultsdir.locate(args.results_dir)
    if args.out:  # checked before the work, which may take minutes
        resultsdir.output_dir(args.out, "--out")
    meta = resultsdir.read_meta(directory)
    against = resultsdir.locate(args.against) if args.against else None
    if against is not None:
        comparable.check([directory, against], args.mixed)
    # against QUIET: the machine is QUIET's as its ceilings measured it (a disturbance that slowed
    # DISTURBED's chunks slowed its ceilings too)
    source = source_machine(against or directory, args, resultsdir.read_meta(against) if against else meta)
    target = machinefiles.load(args.machine) if args.machine else source
    if args.distributed and args.best:
        raise StudyError("--best and --distributed: give one (--best ranks gpt2-mpi's layouts on one node too)")
    if (args.dedicated or args.against) and (args.best or args.distributed):
        raise StudyError("--dedicated and --against predict the measured configurations: not with --best or --distributed")
    if against is not None and args.machine:
        raise StudyError("--against validates on the measured machine: not with --machine")
    for line in graphcache.stale_graphs(directory):
        sys.stderr.write(f"perfstudy predict: warning: {line}\n")
    if replay.library() is None:
        sys.stderr.write(f"perfstudy predict: replaying in {replay.engine_name()}: the same results, "
                         "16 to 80 times slower\n")
    if args.distributed:
        return main_distributed(args, directory, meta, source, target)
    if args.best:
        return main_best(args, directory, meta, source, target)
    measured = chunktimes.measured_points(directory)
    if args.threads:
        counts = parse_threads(args.threads, target.cores)
    else:
        counts = {1, target.cores}
        p = 1
        while p < target.cores:
            counts.add(p)
            p *= 2
        if target is source:
            counts |= {key.threads for key in measured if key.threads <= target.cores}
        counts = sorted(counts)
    # each kind of prediction in a directory of its own, so that none overwrites another's
    name = target.name + ("-dedicated" if args.dedicated else "") + (f"-against-{against.name}" if against else "")
    out = Path(args.out) if args.out else resultsdir.ResultsDir(directory).predict(name)
    inputs = claim_output(out, directory, against, target, args.dedicated)
    clock = chunktimes.CPU if args.dedicated else chunktimes.WALL
    stats = chunktimes.trace_stats(directory, meta.warmup, clock)
    if target is not source:
        warn_source_spread(stats, directory)
    if args.replicates < 0:
        raise StudyError(f"--replicates: expected 0 or a positive integer, got {args.replicates}")
    gathered = prediction.replay_inputs(directory, meta, source, args.build_dir, stats=stats, clock=clock,
                                        against=against, replicates=args.replicates)
    frame, validation = prediction.predict(gathered, target, counts), prediction.validate(gathered)
    overheads = gathered.overheads
    out.mkdir(parents=True, exist_ok=True)
    resultsdir.write_json(out / INPUTS, inputs)
    resultsdir.write_csv(out / "prediction.csv", frame)
    resultsdir.write_csv(out / "validation.csv", validation)
    written = predictfigures.draw(frame, measured if target is source else {}, out, target.name)
    print(f"PREDICTED on {target.name} ({'measured' if target.measured else 'public figures, not measured'}; "
          f"{target.cores} cores), from the 1-thread traces of {directory.name}"
          + (", each chunk at its CPU time (dedicated)" if args.dedicated else ""))
    if args.dedicated:
        print_disturbance(directory, meta.warmup)
    print(f"{'configuration':<28} {'P':>4} {'step_s':>10} {'speedup':>8} {'eff':>6} {'LB':>5} {'comm':>5} "
          f"{'compsc':>6}")
    for _, r in frame.iterrows():
        print(f"{prediction.series_label(r) + ' ' + r['compiler'] + '/' + r['kernels']:<28} {r['threads']:>4} "
              f"{r['predicted_step_s']:>10.5f} {r['predicted_speedup']:>8.2f} {r['predicted_efficiency']:>6.2f} "
              f"{r['predicted_load_balance']:>5.2f} {r['predicted_communication_eff']:>5.2f} "
              f"{r['predicted_computation_scalability']:>6.2f}")
    print(overheads.line())
    print("validation (on the machine the results were measured on): prediction error per measured point"
          + (f", against the measured points of {against.name}" if against is not None else ""))
    for _, r in validation.iterrows():
        print(f"  {prediction.series_label(r) + ' ' + r['compiler'] + '/' + r['kernels']:<28} t={r['threads']:<3} "
              f"measured {r['measured_step_s']:.5f} s  predicted {r['predicted_step_s']:.5f} s " +
              ("" if r["predicted_low"] != r["predicted_low"] else
               f"[{r['predicted_low']:.5f}, {r['predicted_high']:.5f}] ") + f" error {100 * r['error']:+.1f}%" +
              ("" if r["slowest_thread_time"] != r["slowest_thread_time"] else
               f"  (slowest thread {r['slowest_thread_time']:.2f}x the others on equal work)") +
              ("" if r["error_beside"] != r["error_beside"] else
               f"  beside its probes {r['predicted_beside_s']:.5f} s {100 * r['error_beside']:+.1f}%") +
              ("" if r["error_own"] != r["error_own"] else
               f"  own chunk times {r['replayed_own_s']:.5f} s {100 * r['error_own']:+.1f}%"))
    if len(validation):
        worst = validation["error"].abs().max()
        print(f"  largest error {100 * worst:.1f}% over {len(validation)} measured points")
        cover = intervals.coverage(validation)
        if cover is not None:
            print(f"  {100 * intervals.INTERVAL:.0f}% intervals (the source runs and iterations resampled, the "
                  "measured points' run-to-run scatter, the other configurations' errors) hold "
                  f"{100 * cover[0]:.0f}% of the {cover[2]} measured points; median width {100 * cover[1]:.1f}% of the "
                  "predicted step")
        probed = validation["error_beside"].dropna()
        if len(probed):
            print(f"  with the machine as the probes beside the runs found it ([analysis] peak_beside): mean "
                  f"|error| {100 * probed.abs().mean():.1f}%, largest {100 * probed.abs().max():.1f}% over "
                  f"{len(probed)} points ({100 * validation['error'].abs().mean():.1f}% and "
                  f"{100 * worst:.1f}% without)")
        replayed = validation["error_own"].dropna()
        if len(replayed):
            print(f"  each run replayed with its own chunk times (the schedule model alone): mean |error| "
                  f"{100 * replayed.abs().mean():.1f}%, largest {100 * replayed.abs().max():.1f}% over "
                  f"{len(replayed)} points; the rest of a miss is how fast the chunks ran beside each other")
        drift = findings.probe_drift(resultsdir.thread_peaks(directory))
        if drift is not None:
            median, largest, point, repetition = drift
            print(f"  the probes right before and right after a run differed by {100 * median:.1f}% at the median "
                  f"run, {100 * largest:.0f}% at most ({vocabulary.point_label(point)}, repetition {repetition}): "
                  "the machine a run had moved that much while it ran")
    for line in validation.attrs.get("unmatched", []):
        print(f"  not matched: {line}")
    print(f"wrote {out}/prediction.csv, validation.csv, " + ", ".join(p.name for p in written))
    return 0


def print_disturbance(directory, warmup):
    """How much of each traced run's chunk time was not on the CPU (chunktimes.disturbance), the
    runs that lost more than chunktimes.DISTURBED_RUN one line each with where."""
    rows = chunktimes.disturbance(directory, warmup)
    if not rows:
        return
    shares = sorted(r["share"] for r in rows)
    disturbed = [r for r in rows if r["share"] > chunktimes.DISTURBED_RUN]
    print(f"disturbance: the runs' chunks were off the CPU for {100 * shares[len(shares) // 2]:.1f}% of their wall time "
          f"at the median run, {100 * shares[-1]:.1f}% at most; {len(disturbed)} of {len(rows)} traced runs lost more "
          f"than {100 * chunktimes.DISTURBED_RUN:.0f}%")
    for r in sorted(disturbed, key=lambda r: -r["share"]):
        print(f"  {vocabulary.point_label(r['point'])} repetition {r['repetition']}: {100 * r['share']:.1f}% "
              f"({r['lost_s']:.4f} s; {r['chunks']} of {r['of']} chunks lost more than "
              f"{100 * chunktimes.DISTURBED_CHUNK:.0f}%), most in {r['where']}, thread {r['thread']} "
              f"({100 * r['thread_share']:.0f}% of it)")
