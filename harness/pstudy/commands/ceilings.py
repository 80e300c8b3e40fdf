"""measure STREAM bandwidth, peak FLOP/s and the re-read rate of this machine into a ceilings.json."""

import os
import socket
from pathlib import Path

from pstudy.store import machinefiles, resultsdir
from pstudy.measure import ceilings
from pstudy.errors import StudyError


def add_arguments(parser):
    parser.add_argument("--build-dir", default="build/probes", help="directory with stream and peakflops")
    parser.add_argument("--threads", default="1", help="comma-separated thread counts, ranges A..B and max "
                        "(this machine's logical CPUs), e.g. 1,2 or 1..max (every count, as a sweep of 1..max "
                        "places them)")
    parser.add_argument("--places", default="cores", help="OMP_PLACES for the runs (default cores, the sweep's "
                        "default; give the study's [placement] places)")
    parser.add_argument("--proc-bind", default="close", help="OMP_PROC_BIND for the runs (default close)")
    parser.add_argument("--out", default="results/ceilings.json")
    parser.add_argument("--no-likwid-bench", action="store_true")
    parser.add_argument("--machine-out", help="machine description for `predict` (machines/*.toml format; "
                        "default: machine.toml beside --out)")


MACHINE_TOML = "machine.toml"  # written beside ceilings.json, in a results directory too


def parse_counts(text, cpus):
    """Thread counts from "1,2", "1..max", "4..16": sorted, each in 1..cpus."""
    counts = set()
    for part in text.split(","):
        part = part.strip().replace("max", str(cpus))
        try:
            if ".." in part:
                a, b = (int(x) for x in part.split(".."))
                counts.update(range(a, b + 1))
            else:
                counts.add(int(part))
        except ValueError:
            raise StudyError(f"--threads: expected comma-separated integers, A..B ranges or max, got {text!r}") \
                from None
    if not counts or min(counts) < 1:
        raise StudyError(f"--threads: thread counts must be positive, got {text!r}")
    return sorted(counts)


def main(args):
    counts = parse_counts(args.threads, os.cpu_count() or 1)
    owned = (resultsdir.CEILINGS, MACHINE_TOML)
    args.out = str(resultsdir.output_file(args.out, "--out", owned=owned))
    machine_out = resultsdir.output_file(args.machine_out or Path(args.out).with_name(MACHINE_TOML), "--machine-out",
                                         owned=owned)
    try:
        data = ceilings.measure_ceilings(args.build_dir, counts, args.out, proc_bind=args.proc_bind,
                                         places=args.places, likwid_bench=False if args.no_likwid_bench else None)
    except ceilings.CeilingsError as err:
        raise StudyError(str(err)) from None
    for e in data["per_threads"]:
        s = e["stream_GBs"]
        print(f"{e['threads']} threads: copy {s['copy']:.1f} scale {s['scale']:.1f} add {s['add']:.1f} "
              f"triad {s['triad']:.1f} GB/s; " +
              ", ".join(f"{isa} {g:.1f}" for isa, g in e["peak_gflops"].items()) + " GFLOP/s" +
              (f"; likwid-bench {e['likwid_bench']}" if "likwid_bench" in e else "") +
              f"; steal {e['cpu_steal_fraction']}")
        for name in ("stream_triad_GBs", f"peak_{e['best_isa']}_gflops"):
            sp = e["spread"][name]
            print(f"  {name}: used {sp['used']:.1f}, best {sp['best']:.1f}, median {sp['median']:.1f}, "
                  f"worst {sp['worst']:.1f} of {sp['repetitions']} repetitions"
                  + (f", {sp['rejected']} rejected above the bound {sp['bound']:.1f}" if sp["rejected"] else ""))
    reread = data.get("reread") or {}
    if reread.get("available"):
        print(f"re-read rate (a product's input packed again, 1 thread): {reread['reread_GBs']:.2f} GB/s, the median "
              f"of {len(reread['rep_GBs'])} rounds ({min(reread['rep_GBs']):.2f}-{max(reread['rep_GBs']):.2f})")
    else:
        print(f"re-read rate: not measured ({reread.get('reason', 'no probes/reread')}); predict charges re-read "
              "bytes at one core's STREAM bandwidth")
    print(f"values used: the {ceilings.STATISTIC}; physical bounds from {data['per_threads'][0]['clock_bound']['source']}")
    print(f"wrote {args.out}")
    name = socket.gethostname().split(".")[0] or "this-machine"
    machine = machinefiles.from_ceilings(data, name, cores=os.cpu_count())
    resultsdir.atomic_write(machine_out, machinefiles.to_toml(machine))
    print(f"wrote {machine_out} (machine description for perfstudy predict --machine)")
    return 0
