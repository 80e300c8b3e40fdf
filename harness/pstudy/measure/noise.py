"""The sweeps of the noise study (`perfstudy noise run`): per config and round, the sweep quiet, then
the same sweep beside probes/disturb (a CPU-bound co-runner pinned to chosen CPUs, busy for each
duty of every period: the noise injection of Ferreira et al., SC08, and Hoefler et al., SC10) at
each duty and period in turn. Quiet and disturbed sweeps alternate, their order reversed every
round, so that a drift of the machine falls on both. Each sweep is `perfstudy run` as a child
(pstudy.measure.subcommands); the layout is pstudy.store.noisestudy's."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from pstudy.common import REPO_ROOT
from pstudy.errors import StudyError
from pstudy.measure import ceilings, children, subcommands
from pstudy.store import noisestudy

DISTURB = REPO_ROOT / "build" / "probes" / "disturb"
# busier than this, in CPUs' worth, the machine is not idle before a quiet sweep
IDLE_BUSY_CPUS = 0.1


def cpu_list(text):
    """The CPUs of --cpus ("0,2-3", as probes/disturb reads it), each one this process may run
    on and none twice: checked before the first sweep, which a co-runner that cannot start would spoil."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    cpus = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?", part)
        if not m or (m[2] is not None and int(m[2]) < int(m[1])):
            raise StudyError(f"--cpus: expected a list such as 0,2-3, got {text!r}")
        cpus += range(int(m[1]), int(m[2] or m[1]) + 1)
    if len(set(cpus)) != len(cpus):
        raise StudyError(f"--cpus {text}: a CPU given twice")
    outside = sorted(set(cpus) - allowed)
    if outside:
        raise StudyError(f"--cpus {text}: CPU {outside[0]} is not one this process may run on "
                         f"(these: {','.join(map(str, sorted(allowed)))})")
    return text


def busy_cpus(seconds=1.0):
    """CPUs' worth of time the machine spent busy over the next `seconds`; None where /proc/stat
    cannot be read."""
    before, start = ceilings.cpu_times(), time.monotonic()
    time.sleep(seconds)
    return ceilings.busy_cpus(before, ceilings.cpu_times(), time.monotonic() - start)


def sweep(config, root):
    root.mkdir(parents=True, exist_ok=True)
    return Path(subcommands.perfstudy("run", config, "--results-root", root, "--no-summary"))


def disturbed_sweep(config, root, cpus, duty, period_us):
    """The sweep beside probes/disturb; the co-runner's own record written beside the results
    once the whole sweep ran beside it. A sweep that ends early (a signal, a failure) stops with
    the co-runner and has no record: check and a later run refuse it, never taking it for disturbed."""
    with children.running([DISTURB, "--cpus", cpus, "--duty", str(duty), "--period-us", str(period_us)],
                          grace=subcommands.STOP_GRACE_S, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        first = proc.stderr.readline().strip()
        if first != "ready":
            said = " ".join([first, proc.communicate()[1].strip()]).strip()
            raise StudyError(f"{DISTURB}: {said or 'did not start'}")
        directory = sweep(config, root)
        children.stop(proc, subcommands.STOP_GRACE_S)
        out, _ = proc.communicate()
    noisestudy.write_corunner_record(directory, out)
    return directory


def run(out, configs, levels, rounds, cpus):
    """Every config's quiet and disturbed sweeps (levels: [(duty, period_us)]) into `out`, keeping
    the disturbed ones a run before measured whole. `cpus` as cpu_list checks them."""
    if not DISTURB.is_file():
        raise StudyError(f"{DISTURB}: missing (make build/probes/disturb)")
    done = noisestudy.done_levels(out, [c.stem for c in configs], rounds, levels)
    for config in configs:
        for r in range(rounds):
            order = [None] + levels if r % 2 == 0 else levels[::-1] + [None]  # interleaved, reversed every round
            for level in order:
                root = (noisestudy.quiet_root(out, config.stem, r) if level is None
                        else noisestudy.disturbed_root(out, config.stem, *level, r))
                print(f"== {config.stem} round {r}: {root.name.rsplit('-r', 1)[0]}", file=sys.stderr, flush=True)
                if root in done:
                    print(f"== {root}: measured before, kept", file=sys.stderr, flush=True)
                elif level is None:
                    busy = busy_cpus()
                    if busy is not None and busy > IDLE_BUSY_CPUS:  # a co-runner left behind, another job
                        print(f"warning: {root}: {busy:.2f} CPUs' worth busy before the quiet sweep: "
                              "its runs will not be quiet", file=sys.stderr, flush=True)
                    sweep(config, root)
                else:
                    disturbed_sweep(config, root, cpus, *level)
