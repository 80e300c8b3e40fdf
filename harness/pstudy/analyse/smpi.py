"""The communication of gpt2-mpi's step from the binary itself on a simulated cluster: SimGrid's SMPI
(`perfstudy predict --distributed --engine smpi`), the other engine beside pstudy.analyse.network's
replay of the messages.

`make smpi` builds build/smpi/gpt2-mpi with smpicc and -DGPT2_SMPI: every rank of an smpirun is a
thread of one process, its clock the simulated one. Its node compute is not run: each step stands
simulated delays in for the forward and backward operations and for AdamW (GPT2_SMPI_COMPUTE_S,
GPT2_SMPI_UPDATE_S: the seconds pstudy.analyse.distributed predicts for them from the traced chunk
times), and each add of the reduce-scatter executes its bytes on the rank's simulated host, whose
speed is the rank's memory bandwidth, as the replay adds them. The collectives are the binary's own
code, point-to-point messages of their real sizes, in their order; the parameters and gradients they
carry live in memory SMPI shares among the ranks (core/model.c), so a hundred ranks of d12 fit in
memory and no message's bytes are copied.

The platform, written as SimGrid XML from the machine file's [network] as the replay builds it: per
rank a host and a split-duplex link (the network section's intra bandwidth, half the intra latency
each way: one core's copy through shared memory), per node a split-duplex link into the fabric (its
bandwidth, half its latency each way), a non-blocking fabric behind them (full routing: two ranks
of one node cross their two rank links, of two nodes their two node links alone, as Open MPI's
rendezvous moves a large message by RDMA from one rank's memory to the other's through the NICs,
copied by no core). The binary's --comm-threads is not run here: SMPI gives MPI_THREAD_SINGLE
(pstudy.analyse.distributed.check_channels). The flow model is the replay's (CM02: latency + size / bandwidth,
links shared max-min, no SMPI correction factors, no cross traffic), so that the two engines differ
in what runs, not in how a link is shared: the replay's messages are a model of the binary's, SMPI's
are the binary's.

--overlap on (the buckets' collectives beside the backward pass) runs the binary's own schedule: the
node executor's step with the buckets' operations in it, walked in its order, each compute operation
a delay of its own seconds (GPT2_SMPI_OP_SECONDS names the file: one line an operation of the step,
in its order, `SECONDS LABEL`; op_seconds_lines writes it), the bucket operations handing each
bucket to the rank's communication and waiting for it. SimGrid 3.32 delivers a message only to the
rank's own actor, so under SMPI that actor runs the collectives and the walk runs on a second actor
of the rank's host; the host has a core for each (platform_xml's `cores`), at one core's memory
bandwidth: the communication thread adds alone. The seconds are the prediction's own
(pstudy.analyse.distributed.op_seconds): the forward pass's share of the replayed compute spread over
its operations by their task work, the backward pass's likewise, and the whole update's (a sharded
rank's cut AdamW operations take their elements' share of it), so that the walk adds up to the
compute and the update the --overlap off run is given. The communication thread's waits do not poll
there (neither engine models the polling). Two steps, the second's time:
with the sharded update the parameters' all-gathers of a step run beside the next one's forward pass.

What the run gives: rank 0's step time and time in communication (`--json`: the step's reduce-
scatter, loss exchange and all-gathers as rank 0 waited for them), and each collective's time from
the `--trace` (every rank's records): the first rank's start to the last rank's end, as the replay
measures them. Those two spans hold the ranks' skew at the end of the reduce-scatter twice, where
rank 0's time holds it once, so the step and its communication come from rank 0's figures. Under
--update replicated one record covers the reduce-scatter and the all-gather of the gradients: only
their sum is known.
"""

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from pstudy.errors import StudyError
from pstudy.store import traceformats

PACKAGE = "libsimgrid-dev"
TIMEOUT_S = 600
# one step: its simulated time grows faster than the ranks (messages R 8 a reduce-scatter); the
# ranks start it together (after the info line's gathering), and the second step took the first's
# time to 1e-4 where checked (d12, 64 ranks)
STEPS = 1
# the most ranks of one layout: on a 2-vCPU VM, d12's ring took 0.3 s to simulate at 16 ranks, 6 s at
# 64 and about 220 s at 128
MAX_RANKS = 64
# --overlap on: the second step's time, the first having no all-gathers of a step before it
OVERLAP_STEPS = 2
# the labels of variants/mpi.c's communication records
REDUCE_SCATTER = "comm grad reduce-scatter"
ALL_GATHERS = ("comm param all-gather", "comm grad all-gather")


def smpirun():
    """The smpirun program: $PERFSTUDY_SMPIRUN, else smpirun on the PATH; StudyError when missing."""
    name = os.environ.get("PERFSTUDY_SMPIRUN") or "smpirun"
    found = shutil.which(name)
    if not found:
        raise StudyError(f"--engine smpi: {name} not found: install Debian's {PACKAGE} (it has smpirun and smpicc), "
                         "then build the binary with make smpi")
    return found


def binary(build, variant):
    """The SMPI build of the distributed variant in the build tree `build`; StudyError when missing."""
    path = Path(build) / "smpi" / f"gpt2-{variant}"
    if not path.is_file():
        raise StudyError(f"{path}: missing; build it with make smpi (SimGrid's smpicc, Debian's {PACKAGE})")
    return path


def platform_xml(ranks, ranks_per_node, network, host_Bs, cores=1):
    """The SimGrid platform of one layout (the module comment), as XML text; each host `cores` cores
    of host_Bs each."""
    def link(name, bandwidth, latency):
        return (f'  <link id="{name}" bandwidth="{bandwidth!r}Bps" latency="{latency / 2!r}s" '
                'sharing_policy="SPLITDUPLEX"/>')

    nodes = -(-ranks // ranks_per_node)
    out = ["<?xml version='1.0'?>", '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
           '<platform version="4.1">', '<zone id="cluster" routing="Full">']
    core = f' core="{cores}"' if cores > 1 else ""
    out += [f'  <host id="r{r}" speed="{host_Bs!r}f"{core}/>' for r in range(ranks)]
    out += [link(f"m{r}", network.intra_bandwidth_Bs, network.intra_latency_s) for r in range(ranks)]
    out += [link(f"n{k}", network.bandwidth_Bs, network.latency_s) for k in range(nodes)]
    for a in range(ranks):
        for b in range(ranks):
            if a == b:
                continue
            if a // ranks_per_node != b // ranks_per_node:
                links = [f"n{a // ranks_per_node}:UP", f"n{b // ranks_per_node}:DOWN"]
            else:
                links = [f"m{a}:UP", f"m{b}:DOWN"]
            ctn = "".join(f'<link_ctn id="{name}" direction="{way}"/>' for name, way in (x.split(":") for x in links))
            out.append(f'  <route src="r{a}" dst="r{b}" symmetrical="NO">{ctn}</route>')
    out += ["</zone>", "</platform>", ""]
    return "\n".join(out)


def model_args(args):
    """The model options of a Graphs' arguments (--config NAME or --model FILE), without -B and -T."""
    out, i = [], 0
    while i < len(args):
        if args[i] in ("--config", "--model"):
            out += args[i:i + 2]
        i += 2 if args[i] in ("-B", "-T", "--config", "--model") else 1
    return out


def op_seconds_lines(op_seconds):
    """The GPT2_SMPI_OP_SECONDS file's text of [(seconds, label)], one an operation of the step."""
    return "".join(f"{float(sec)!r} {label}\n" for sec, label in op_seconds)


def run(program, layout, batch, T, model, network, host_Bs, compute_s, update_s, op_seconds=None):
    """{reduce_scatter_s, all_gather_s, comm_s, step_s} of one layout (a distributed.Layout) from
    smpirun of `program` (binary()) on `batch` sequences of T tokens, the model options `model`; the
    compute stood in by `compute_s` and `update_s` seconds a step, the adds at `host_Bs` bytes/s.
    With `op_seconds` ([(seconds, label)] of the step's operations, in its order): --overlap on, the
    operations stood in by their seconds, a core for the walk and one for the communication; then
    {comm_s, step_s} alone (the buckets' collectives are many records)."""
    runner = smpirun()
    overlap = op_seconds is not None
    steps = OVERLAP_STEPS if overlap else STEPS
    with tempfile.TemporaryDirectory(prefix="pstudy-smpi-") as tmp:
        tmp = Path(tmp)
        (tmp / "platform.xml").write_text(platform_xml(layout.ranks, layout.ranks_per_node, network, host_Bs,
                                                       2 if overlap else 1))
        (tmp / "hosts").write_text("".join(f"r{r}\n" for r in range(layout.ranks)))
        command = [runner, "-np", str(layout.ranks), "-platform", str(tmp / "platform.xml"),
                   "-hostfile", str(tmp / "hosts"), f"--cfg=smpi/tmpdir:{tmp}",
                   "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                   # only the delays the binary asks for count, not the host's time between MPI calls
                   "--cfg=smpi/simulate-computation:no", f"--cfg=smpi/host-speed:{host_Bs!r}f",
                   # one file a call site of SMPI_SHARED_MALLOC, shared by every rank, never touched
                   "--cfg=smpi/shared-malloc:local", "--log=root.thres:critical",
                   str(program), *model, "-B", str(batch), "-T", str(T), "--threads", "1",
                   "--steps", str(steps), "--update", layout.update, "--collective", layout.collective,
                   "--overlap", "on" if overlap else "off", "--json"]
        if not overlap:
            command += ["--trace", str(tmp / "trace.csv")]
        env = dict(os.environ, GPT2_SMPI_COMPUTE_S=repr(float(compute_s)), GPT2_SMPI_UPDATE_S=repr(float(update_s)),
                   OMP_NUM_THREADS="1")
        if overlap:
            (tmp / "op-seconds").write_text(op_seconds_lines(op_seconds))
            env["GPT2_SMPI_OP_SECONDS"] = str(tmp / "op-seconds")
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=tmp, env=env,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise StudyError(f"--engine smpi: {layout.ranks} ranks: smpirun ran past {TIMEOUT_S} s") from None
        if proc.returncode != 0:
            lines = [ln for ln in proc.stderr.strip().splitlines() if not ln.startswith("Execution failed")]
            last = (lines or [f"exit status {proc.returncode}"])[-1]
            raise StudyError(f"--engine smpi: {layout.ranks} ranks: smpirun {program}: {last}")
        printed = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith('{"step"')]
        if len(printed) != steps or not (overlap or (tmp / "trace.csv").is_file()):
            why = proc.stderr.strip().splitlines()
            raise StudyError(f"--engine smpi: {layout.ranks} ranks: smpirun {program} printed {len(printed)} of "
                             f"{steps} steps" + (f": {why[0]}" if why else ""))
        times = {} if overlap else collective_times(tmp / "trace.csv", STEPS - 1)
    times["step_s"] = float(printed[-1]["step_s"])
    times["comm_s"] = float(printed[-1]["comm_s"])
    return times


def collective_times(path, iteration):
    """{reduce_scatter_s, all_gather_s, comm_s} of one iteration of a gpt2-mpi trace: per collective
    the first rank's start to the last rank's end (NaN apart where one record spans both), comm_s
    their sum."""
    trace = traceformats.read_chunks(path)  # the trace format's owner checks what it reads
    comm = trace[(trace["kernel"] == "comm") & (trace["iteration"] == iteration)]

    def span(labels):
        rows = comm[comm["label"].isin(labels)]
        return float(rows["end_s"].max() - rows["start_s"].min()) if len(rows) else 0.0

    rs, ag = span([REDUCE_SCATTER]), span(ALL_GATHERS)
    if not len(comm[comm["label"].isin(ALL_GATHERS)]):  # replicated: the gradients' all-gather inside
        return {"reduce_scatter_s": float("nan"), "all_gather_s": float("nan"), "comm_s": rs}
    return {"reduce_scatter_s": rs, "all_gather_s": ag, "comm_s": rs + ag}
