"""Predicted step time of gpt2-mpi at R ranks x T threads across nodes (`perfstudy predict
--distributed`).

A step of variants/mpi.c on rank r: its node-level executor runs forward and backward on the rank's
B_r sequences (B_r from dist_share: B r / R rounded down to B (r+1) / R), then the reduce-scatter of
the gradients, then AdamW (replicated: every parameter, after an all-gather of the reduced gradients;
sharded: the rank's shard alone, then an all-gather of the parameters). So

  step = max_r compute(B_r, T) + reduce_scatter + [all_gather] + update(T, shard) + [all_gather]

compute and update: the node model (pstudy.analyse.contention through pstudy.analyse.simulate) on
the executor's own task graph at B_r sequences and T threads (`--describe-graph -B B_r`), its tasks'
1-thread times from the results' traces at the traced batch: each operation's traced time times the
task's share of that operation's FLOPs at the traced batch (bytes where it has none), and the
update's times times the shard's share of the parameters when sharded. The R / ranks_per_node ranks
of a node share it: each rank sees the node's curves at (ranks per node x its threads) busy threads,
divided among the ranks.

communication: pstudy.analyse.network replays the messages the variant sends on SimGrid under its
--collective (ring, the default, or direct), over the target's [network] (a machine without one is a single node: its ranks talk through shared memory at
half one thread's STREAM bandwidth, one copy through the memory interface, and 1 us latency; say so).
That is the `replay` engine; the `smpi` engine (pstudy.analyse.smpi) runs the binary's own
collectives under SimGrid's SMPI on the same platform instead, its compute stood in by the compute
and update predicted here, and takes the step time it measures on the simulated clock.

The adds of the reduce-scatter (adds_Bs): --overlap off with one channel, the ring's run on the
rank's T threads (its memory bandwidth at T threads), direct's on its main thread (one core's);
otherwise every channel's thread adds alone (variants/mpi_overlap.c's communication thread, and each
of the K channels' threads), the K of them at once each at the rank's bandwidth at K cores / K. So
--overlap on's reduce-scatter is replayed apart from --overlap off's (its all-gather, which adds
nothing, is the same). Channels (--comm-threads K): the replay runs K of them a rank, their copies
through shared memory together at most copy_Bs (one core's copy times what K cores' memory bandwidth
is over one core's).

The bandwidth bound of a reduce-scatter (or an all-gather) of the gradients' 4 N bytes, whatever
the algorithm: the L ranks of a node hand each other their contributions to each other's shards
through shared memory, (L-1)/R of them into each rank (messages between nodes go by RDMA, through
no rank's shared-memory link: pstudy.analyse.network), and each node's link carries
(nodes-1)/nodes of them at least (the contributions of the other nodes to the node's shards). So

  bound = max((L-1)/R 4N / intra, (nodes-1)/nodes 4N / bandwidth)

with intra the rank's copies through shared memory (copy_Bs: the network's intra bandwidth at one
channel). The ring with two ranks a node sends (R-1)/R of the data through the hop inside each node,
one way per channel: at one channel that hop bounds it where the intra bandwidth is below the node
link's.

--overlap on (the binary's gradients reduced in buckets during the backward pass): bucket k (the
transformer blocks from the last, then wte, wpe and the final LayerNorm) is handed over once the
backward pass has done the work of the operations up to the last one with its layer (the embeddings'
when it ends: the encoder's backward pass writes wte last), at forward + backward x that share of the
backward pass's task work; the buckets' collectives run one after the other, each the replay of a
reduce-scatter (and the replicated update's gradient all-gather) of its own parameters (its share of
them: its AdamW operations' bytes), so that each pays its own latencies. So, with f_k the end of
bucket k's collective,

  f_k = max(f_{k-1}, ready_k) + comm_k,   u_k = max(u_{k-1}, f_k) + update x share_k,   u_0 = compute,
  step = u_last

(each bucket's AdamW once its own collective is done, in the buckets' order, as the binary's step
orders them; no contention between the communication and the compute: the K communication threads
on cores of their own, which the default threads per rank leave them: the rank's cores less K).
With the sharded update the parameters' all-gather runs on those threads too, bucket by bucket
beside the next step's forward pass (wte's bucket first, then the blocks from the first: the order
the forward pass reads them), each the replay of an all-gather of its parameters, and the forward
pass of a bucket's layers waits for its own: in the steady state, with
g_k the end of bucket k's all-gather counted from the step's start and s_k the share of the
forward pass's task work done before the bucket's first operation,

  g_k = g_{k-1} + gather_k,   F_k = max(F_{k-1} + forward x (s_k - s_{k-1}), g_k),
  forward ends at F_last + forward x (1 - s_last), and the reductions start after g_last.

The communication threads add alone: the overlapped collectives' adds run at one core's memory
bandwidth a channel (adds_Bs; the --overlap off ring's with one channel at the rank's threads';
docs/mpi.md).

The frame gives both: predicted_step_s (--overlap off) and predicted_step_overlap_s. The smpi engine
runs the binary a second time for the latter, with --overlap on: its node executor's step walked in
order, each operation a delay of the seconds op_seconds gives it (this model's forward pass, backward
pass and update spread over their operations by task work, as bucket_profile and gather_profile
spread them; a sharded rank's AdamW its elements' share of the update), the buckets' collectives the
binary's own beside it. The two engines then agree where
the model above holds: each bucket's collective takes its share of the whole one's time (the
bandwidth, not the latency, bounds it) and the buckets follow one another.

Efficiency: against one rank of the layout (the same share of its node) alone, without
communication and with the whole update, on every core the layout gives a rank (its T compute
threads and the K cores held for the communication threads: a rank alone would compute on them, so
cores given to communication count against the layout, and layouts of every K share one reference),
on the batch of one rank (weak scaling: the per-rank batch) or the whole batch (strong): weak
T_1 / T_R, strong T_1 / (R T_R); efficiency for --overlap off's step, efficiency_overlap for on's.
"""

import dataclasses
import math

from pstudy.analyse import chunktimes, contention, machinescaling, network, runtimecost, simulate, smpi
from pstudy.errors import StudyError
from pstudy.store import graphcache, machinefiles, taskgraph, vocabulary

LOCAL_LATENCY_S = 1e-6
UPDATE = machinescaling.UPDATE
UPDATE_MODES = ("sharded", "replicated")
MAX_CHANNELS = 64  # variants/mpi.c's --comm-threads 1..64
ENGINES = ("replay", "smpi")  # how the communication is simulated: the messages replayed, or the binary under SMPI


def dist_share(B, rank, ranks):
    """variants/mpi.c's dist_share: rank's sequences [b0, b1)."""
    return B * rank // ranks, B * (rank + 1) // ranks


def local_network(machine):
    """The network of a machine file without [network]: one node, shared memory."""
    bw = machine.bandwidth(1) / 2
    return machinefiles.Network(False, LOCAL_LATENCY_S, bw, 1 << 20, 1, LOCAL_LATENCY_S, bw,
                                "one node: shared memory at half one thread's STREAM triad, 1 us; assumed")


def rank_view(machine, ranks_per_node):
    """What one of `ranks_per_node` ranks of a node sees: the node's curves at that many times its
    busy threads, shared among the ranks; its cores a share of the node's; each thread a core."""
    k = ranks_per_node
    if k == 1:
        return machine
    xs = tuple(range(1, max(1, machine.cores // k) + 1))
    bw = tuple(machine.bandwidth(k * n) / k / 1e9 for n in xs)
    peaks = ()
    if machine.peak_threads:
        p1 = machine.peak_gflops[0]
        # per-thread peak at k n busy threads, from the curve (linear between its points)
        curve = list(zip(machine.peak_threads, machine.peak_gflops))

        def total(n):
            for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
                if n <= x1:
                    return y0 + (y1 - y0) * (n - x0) / (x1 - x0)
            return curve[-1][1] * n / curve[-1][0]
        peaks = tuple(min(p1 * n, total(k * n) / k) for n in xs)
    return dataclasses.replace(machine, cores=len(xs), bandwidth_cores=xs, bandwidth_GBs=bw,
                               peak_threads=xs if peaks else (), peak_gflops=peaks, topology=None)


def subgraph(graph, keep):
    """The tasks of `graph` for which keep(phase) holds, as a graph of their own (edges among them
    kept), run with a wait at its end (one call of the node executor)."""
    ids = [t for t in range(graph.n_tasks) if keep(graph.phase[t])]
    new = {t: i for i, t in enumerate(ids)}
    g = taskgraph.Graph(graph.variant, graph.schedule, graph.threads, True, graph.ops, path=graph.path)
    for t in ids:
        g.op.append(graph.op[t])
        g.phase.append(graph.phase[t])
        g.thread.append(graph.thread[t])
        g.flops.append(graph.flops[t])
        g.bytes.append(graph.bytes[t])
        g.key.append(graph.key[t] if graph.key else None)
        g.succ.append([new[s] for s in (graph.succ[t] if graph.succ else []) if s in new])
        g.next_succ.append([])
    return g


def _part(g, work, keep, machine, threads):
    ids = [t for t in range(g.n_tasks) if keep(g.phase[t])]
    if not ids:
        return 0.0
    sub = subgraph(g, keep)
    w = simulate.Work([work.duration[t] for t in ids], [work.dram_bytes[t] for t in ids],
                      [work.compute[t] for t in ids])
    cores = sub.threads if sub.schedule == taskgraph.STATIC else threads
    try:
        step, _ = simulate.step_time(sub, w, machine, cores, 1, contention.Node(machine, cores))
    except RuntimeError as err:
        raise StudyError(f"{g.path}: {err}") from None
    return step


@dataclasses.dataclass
class Layout:
    ranks: int
    threads: int
    ranks_per_node: int
    update: str = "sharded"
    collective: str = "ring"
    comm_threads: int = 1  # the binary's --comm-threads: its channels

    @property
    def nodes(self):
        return math.ceil(self.ranks / self.ranks_per_node)


def rank_config(ck, batch):
    """Config key `ck` on a rank's `batch` sequences: its chunks of sequences (batch_subsize,
    tile_sequences) at most the batch, which the binaries refuse more than."""
    chunks = chunktimes.chunk_columns(ck)
    return ck._replace(**{key: min(v, batch) for key, v in chunks.items()
                          if v is not None and key in ("batch_subsize", "tile_sequences")})


def _phase_work(g, work, phase):
    """({operation: seconds of its tasks in `phase`}, their sum, {layer: its share of the parameters
    (its AdamW operations' bytes)})."""
    per_op, params = {}, {}
    for t in range(g.n_tasks):
        if g.phase[t] == phase:
            per_op[g.op[t]] = per_op.get(g.op[t], 0.0) + work.duration[t]
    for op in g.ops:
        if op.get("kernel") == "adamw":
            params[op["layer"]] = params.get(op["layer"], 0.0) + float(op.get("bytes") or 0)
    size = sum(params.values())
    return per_op, sum(per_op.values()), {layer: b / size if size > 0 else 0.0 for layer, b in params.items()}


def bucket_profile(g, work):
    """The buckets of --overlap on in the order they are handed over (the module comment): per bucket
    (the share of the backward pass's task work done when its gradients are final, its share of the
    parameters)."""
    per_op, total, shares = _phase_work(g, work, "backward")
    done, ready = 0.0, {}
    for op in sorted(per_op):
        done += per_op[op]
        ready[g.ops[op]["layer"]] = done / total if total > 0 else 1.0
    ready[-1] = 1.0
    layers = sorted((layer for layer in shares if layer >= 0), reverse=True) + [-1]
    return [(ready.get(layer, 1.0), shares.get(layer, 0.0)) for layer in layers]


def gather_profile(g, work):
    """The buckets of the sharded update's parameter all-gathers in the order the forward pass reads
    them (the module comment): per bucket (the share of the forward pass's task work done before its
    first operation, its share of the parameters)."""
    per_op, total, shares = _phase_work(g, work, "forward")
    done, first = 0.0, {}
    for op in sorted(per_op):
        first.setdefault(g.ops[op]["layer"], done / total if total > 0 else 0.0)
        done += per_op[op]
    first[-1] = 0.0
    layers = [-1] + sorted(layer for layer in shares if layer >= 0)
    return [(first.get(layer, 0.0), shares.get(layer, 0.0)) for layer in layers]


def op_seconds(g, work, forward_s, compute_s, update_g, update_work, update_s, update_share):
    """[(seconds, label)] of every operation of the step (g's and update_g's operations, one list):
    the forward pass's `forward_s` spread over its operations by their tasks' work, the backward
    pass's compute_s - forward_s likewise, and the update's update_s / update_share, the whole
    AdamW operations' (the binary gives a sharded rank's cut operations their rows' share)."""
    spent = {}
    for graph, wk, phase, seconds in ((g, work, "forward", forward_s), (g, work, "backward", compute_s - forward_s),
                                      (update_g, update_work, UPDATE, update_s / update_share)):
        per_op, total, _ = _phase_work(graph, wk, phase)
        for op, busy in per_op.items():
            spent[op] = seconds * busy / total if total > 0 else 0.0
    return [(spent.get(i, 0.0), op["label"]) for i, op in enumerate(g.ops)]


def _per_bucket(seconds, pairs):
    """Each bucket's seconds: given as a list, or all the buckets' split by their shares."""
    return list(seconds) if isinstance(seconds, (list, tuple)) else [seconds * share for _, share in pairs]


def overlapped_step(compute, forward, profile, bucket_comm_s, update_s, gathers=(), gather_s=0.0):
    """The step with --overlap on: the buckets' collectives (bucket_comm_s: all of them, or a list of
    each one's) beside the backward pass, each bucket's AdamW (update_s x its share) once its own is
    done; with `gathers` (gather_profile), the parameters' all-gathers (gather_s, likewise) beside the
    forward pass first (the module comment)."""
    start = gathered = done = 0.0
    for (first, _), seconds in zip(gathers, _per_bucket(gather_s, gathers)):
        gathered += seconds
        start = max(start + forward * (first - done), gathered)
        done = first
    forward_end = start + forward * (1.0 - done)
    end = gathered
    updated = forward_end + compute - forward
    for (ready, share), seconds in zip(profile, _per_bucket(bucket_comm_s, profile)):
        end = max(end, forward_end + (compute - forward) * ready) + seconds
        updated = max(updated, end) + update_s * share
    return updated


def _bucket_parameters(share, parameters):
    return max(1, round(share * parameters))


def bucket_sizes(profile, parameters):
    """The distinct parameter counts of --overlap on's buckets (bucket_profile's and gather_profile's
    shares of the parameters): each is replayed once (the transformer blocks' buckets are one size)."""
    shares = [share for _, share in profile.get("buckets", [(1.0, 1.0)]) + list(profile.get("gathers", ()))]
    return sorted({_bucket_parameters(share, parameters) for share in shares})


def replayed_overlap(lay, compute, update, profile, parameters, per_bucket):
    """The step with --overlap on from the replay: overlapped_step with each bucket's collectives the
    replay of a collective of its own parameters ({parameters: (reduce-scatter s, all-gather s)}), so
    that a bucket's latency is its own. Sharded: the parameters' all-gather beside the next forward
    pass; replicated: each bucket's gradients all-gathered after its reduce-scatter."""
    sharded = lay.update == "sharded"
    buckets = profile.get("buckets", [(1.0, 1.0)])
    gathers = profile.get("gathers", ((0.0, 1.0),)) if sharded else ()

    def seconds(pairs, collectives):
        return [sum(per_bucket[_bucket_parameters(share, parameters)][c] for c in collectives) for _, share in pairs]
    return overlapped_step(compute, profile.get("forward_s", compute), buckets,
                           seconds(buckets, (0,) if sharded else (0, 1)), update, gathers, seconds(gathers, (1,)))


def compute_parts(graphs, medians, ck, layout, batch, parameters, source, target, overhead=0.0, profile=None):
    """(compute seconds: the slowest rank's forward and backward, update seconds) of `layout`, each
    task `overhead` seconds longer (the node executor's runtime cost, runtimecost.runtime_overheads).
    `profile`, a dict, receives the slowest rank's forward seconds and bucket_profile."""
    view = rank_view(target, layout.ranks_per_node)
    if layout.threads > view.cores:
        raise StudyError(f"{target.path or target.name}: {layout.threads} threads per rank x "
                         f"{layout.ranks_per_node} ranks per node exceed its {target.cores} cores")
    traced = graphs.get(ck, 1)
    compute = 0.0
    for b in sorted({dist_share(batch, r, layout.ranks)[1] - dist_share(batch, r, layout.ranks)[0]
                     for r in range(layout.ranks)}):
        if b == 0:
            continue
        g = graphs.get(rank_config(ck, b), layout.threads, b)
        work = machinescaling.with_overhead(machinescaling.scaled_work(g, traced, medians[ck], source, view, g.path,
                                                               reread=False), overhead)
        part = _part(g, work, lambda ph: ph != UPDATE, view, layout.threads)
        if part >= compute and profile is not None:
            profile["forward_s"] = _part(g, work, lambda ph: ph == "forward", view, layout.threads)
            profile["buckets"] = bucket_profile(g, work)
            profile["gathers"] = gather_profile(g, work)
            profile["graph"] = (g, work)
        compute = max(compute, part)
    g = graphs.get(rank_config(ck, max(1, batch // layout.ranks)), layout.threads, max(1, batch // layout.ranks))
    share = 1.0 / layout.ranks if layout.update == "sharded" else 1.0
    work = machinescaling.with_overhead(machinescaling.scaled_work(g, traced, medians[ck], source, view, g.path, share,
                                                           reread=False), overhead)
    update = _part(g, work, lambda ph: ph == UPDATE, view, layout.threads)
    if profile is not None and "graph" in profile:
        slowest, slowest_work = profile.pop("graph")
        profile["op_seconds"] = op_seconds(slowest, slowest_work, profile["forward_s"], compute, g, work, update, share)
    return compute, update


def adds_Bs(view, layout, overlap):
    """Bytes/s of one channel's adds in a rank of `view` (rank_view): --overlap off with one channel,
    the ring's spread over the rank's threads (direct's on its main thread); else each channel's
    thread adds alone, the K of them at once sharing the rank's bandwidth at K cores."""
    K = layout.comm_threads
    if K == 1 and not overlap:
        return view.bandwidth(min(layout.threads, view.cores) if layout.collective == "ring" else 1)
    return view.bandwidth(min(K, view.cores)) / K


def copy_Bs(net, view, layout):
    """Bytes/s a rank's K channels copy through shared memory together: one core's copy (the
    network's intra bandwidth) times what K cores' memory bandwidth is over one core's, at most K."""
    K = layout.comm_threads
    return net.intra_bandwidth_Bs * min(K, view.bandwidth(min(K, view.cores)) / view.bandwidth(1))


def bandwidth_bound(net, ranks, nodes, parameters, intra_Bs=None):
    """Seconds a reduce-scatter (or all-gather) of the gradients takes at least (the module comment);
    `intra_Bs`: a rank's copies through shared memory (default the network's intra bandwidth)."""
    data = 4.0 * parameters
    bound = (-(-ranks // nodes) - 1) / ranks * data / (intra_Bs or net.intra_bandwidth_Bs)
    if nodes > 1:
        bound = max(bound, (nodes - 1) / nodes * data / net.bandwidth_Bs)
    return bound


def check_engine(engine):
    if engine not in ENGINES:
        raise StudyError(f"--engine: expected one of {', '.join(ENGINES)}, got {engine!r}")


def check_channels(comm_threads, engine="replay"):
    """StudyError for a --comm-threads the binary refuses, or one the engine cannot run: SMPI gives
    MPI_THREAD_SINGLE, and more than one channel needs MPI_THREAD_MULTIPLE."""
    if not 1 <= comm_threads <= MAX_CHANNELS:
        raise StudyError(f"--comm-threads: expected an integer from 1 to {MAX_CHANNELS}, got {comm_threads}")
    if comm_threads > 1 and engine == "smpi":
        raise StudyError(f"--comm-threads {comm_threads} with --engine smpi: SMPI gives MPI_THREAD_SINGLE and "
                         "more than one channel needs MPI_THREAD_MULTIPLE; use --engine replay")


def smpi_program(graphs):
    """The SMPI build of the distributed variant in the results' build tree; StudyError, before any
    work, when it or smpirun is missing."""
    smpi.smpirun()
    return smpi.binary(graphs.build, vocabulary.DISTRIBUTED_VARIANTS[0])


def predict(graphs, medians, ck, layouts, batches, parameters, message_bytes, source, target, overhead=0.0,
            engine="replay"):
    """One dict per layout (global batch `batches[i]`): compute_s, reduce_scatter_s, all_gather_s,
    comm_s, update_s, step_s, the reduce-scatter's bandwidth bound. `engine` "replay": every
    layout's messages in one SimGrid replay, the step the sum of its parts; "smpi": each layout
    an smpirun of the binary, the step its own. `overhead`: seconds per task of the node
    executor's runtime (runtimecost.runtime_overheads)."""
    check_engine(engine)
    net = target.network or local_network(target)
    program = smpi_program(graphs) if engine == "smpi" else None
    parts, specs = [], []
    for lay, batch in zip(layouts, batches):
        if lay.update not in UPDATE_MODES:
            raise StudyError(f"--update: expected one of {', '.join(UPDATE_MODES)}, got {lay.update!r}")
        check_channels(lay.comm_threads, engine)
        if net.nodes and lay.nodes > net.nodes and target.network is not None:
            raise StudyError(f"{target.path or target.name}: network.nodes: {lay.nodes} nodes asked, "
                             f"the machine has {net.nodes}")
        profile = {}
        compute, update = compute_parts(graphs, medians, ck, lay, batch, parameters, source, target, overhead,
                                        profile)
        view = rank_view(target, lay.ranks_per_node)
        speeds = adds_Bs(view, lay, False), adds_Bs(view, lay, True), copy_Bs(net, view, lay)
        sizes = bucket_sizes(profile, parameters)
        parts.append((compute, update, speeds, profile, sizes))
        if lay.ranks > 1 and engine == "replay":
            # --overlap off's two collectives of the whole gradients, then --overlap on's of each
            # bucket size at the communication threads' adds; the replay runs a spec met twice once
            jobs = [(parameters, speeds[0])] + [(n, speeds[1]) for n in sizes]
            specs += [network.spec(lay.ranks, lay.ranks_per_node, n, message_bytes, net, adds, what, lay.collective,
                                   lay.comm_threads, speeds[2])
                      for n, adds in jobs for what in network.COLLECTIVES]
    times = network.replay(specs) if specs else []
    out, i = [], 0
    for lay, batch, (compute, update, (off_Bs, on_Bs, copies), profile, sizes) in zip(layouts, batches, parts):
        rs = ag = 0.0
        rs_on = float("nan")  # under smpi the overlapped run's reductions are many records, not summed
        step = overlapped = None
        per_bucket = {n: (0.0, 0.0) for n in sizes}
        if lay.ranks > 1 and engine == "smpi":
            args = (program, lay, batch, int(graphs.args[graphs.args.index("-T") + 1]), smpi.model_args(graphs.args),
                    net)
            got = smpi.run(*args, off_Bs, compute, update)
            rs, ag, comm, step = got["reduce_scatter_s"], got["all_gather_s"], got["comm_s"], got["step_s"]
            overlapped = smpi.run(*args, on_Bs, compute, update, profile["op_seconds"])["step_s"]
        elif lay.ranks > 1:
            rs, ag = times[i:i + 2]
            per_bucket = {n: tuple(times[i + 2 + 2 * k:i + 4 + 2 * k]) for k, n in enumerate(sizes)}
            i += 2 + 2 * len(sizes)
        if step is None:
            comm = rs + ag
            step = compute + comm + update
        if overlapped is None:
            overlapped = replayed_overlap(lay, compute, update, profile, parameters, per_bucket)
            rs_on = sum(per_bucket[_bucket_parameters(share, parameters)][0]
                        for _, share in profile.get("buckets", [(1.0, 1.0)])) if lay.ranks > 1 else 0.0
        out.append({"ranks": lay.ranks, "threads": lay.threads, "ranks_per_node": lay.ranks_per_node,
                    "nodes": lay.nodes, "update": lay.update, "collective": lay.collective,
                    "comm_threads": lay.comm_threads, "compute_s": compute,
                    "reduce_scatter_s": rs, "reduce_scatter_bound_s":
                        bandwidth_bound(net, lay.ranks, lay.nodes, parameters, copies) if lay.ranks > 1 else 0.0,
                    "all_gather_s": ag, "reduce_scatter_overlap_s": rs_on, "comm_s": comm, "update_s": update,
                    "predicted_step_s": step,
                    "predicted_step_overlap_s": overlapped,
                    "engine": engine, "network": "measured" if net.measured else "not measured"})
    return out


def binary_facts(graphs, variant, compiler, kernels):
    """num_parameters and, for the distributed variant, comm_message_bytes: from the binary's
    --json --describe info line (one process, no mpirun needed)."""
    import json
    import subprocess

    binary = graphs.binary(variant, compiler, kernels)
    try:
        proc = subprocess.run([binary, "--json", "--describe", *graphs.args], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
    except OSError as err:
        raise StudyError(f"{binary}: cannot run: {err.strerror} (build it with make)") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise StudyError(f"{binary} --describe: {last}")
    try:
        return json.loads(proc.stdout.splitlines()[0])["info"]
    except (IndexError, KeyError, json.JSONDecodeError):
        raise StudyError(f"{binary} --json --describe: no info line") from None


def measured(directory):
    """{point: median measured step_s} of the distributed points of a results directory."""
    from pstudy.store import resultsdir

    steps = resultsdir.read_steps(directory)
    steps = steps[~steps["warmup"] & steps["variant"].map(vocabulary.is_distributed)]
    return {vocabulary.point_key(dict(zip(vocabulary.POINT_KEYS, key))): float(group["step_s"].median())
            for key, group in steps.groupby(vocabulary.POINT_KEYS, dropna=False)}


# The most ranks one layout may have: the SimGrid replay of a layout's collectives takes time that
# grows faster than its ranks (on a 2-vCPU VM: 10 s at 128 ranks, 45 s at 256, over 100 s at 512),
# and a prediction that runs for minutes with no output reads as a hang.
MAX_RANKS = 128
# The most ranks x channels (--comm-threads) one layout may have: the replay's messages grow with
# both (on a 2-vCPU VM shared with other work, 128 ranks x 8 channels took about 4 minutes).
MAX_RANK_CHANNELS = 1024


def compute_threads(target, ranks, ranks_per_node, threads, comm_threads):
    """A rank's compute threads in a layout of `ranks`, `ranks_per_node` of them a node of `target`:
    `threads`, or the cores its communication threads leave it (at least one); StudyError when
    `threads` and those do not fit in its cores (the communication threads have cores of their
    own). One rank alone communicates nothing: it holds no core for it."""
    cores = target.cores // ranks_per_node
    comm_threads = comm_threads if ranks > 1 else 0
    if threads is None:
        return max(1, cores - comm_threads)
    if threads + comm_threads > cores:
        raise StudyError(f"--threads-per-rank {threads}: with --comm-threads {comm_threads} a rank needs "
                         f"{threads + comm_threads} cores, it has {cores} ({target.path or target.name}: "
                         f"{target.cores} cores, {ranks_per_node} ranks a node)")
    return threads


def layouts_for(target, nodes=None, ranks=None, threads=None, ranks_per_node=None, update="sharded",
                limit=MAX_RANKS, what="a prediction replays", comm_threads=1):
    """(layouts, what the default left out): `ranks` on one node, else `nodes` x the ranks per
    node (default: the powers of two the machine has, up to `limit` ranks), `comm_threads`
    channels, threads per rank from compute_threads; StudyError, before any work, for a layout
    over `limit` ranks (the ranks `what`; fewer past MAX_RANK_CHANNELS ranks x channels) or over
    its cores."""
    net = target.network
    left_out = []
    check_channels(comm_threads)
    if limit * comm_threads > MAX_RANK_CHANNELS:
        limit, what = max(1, MAX_RANK_CHANNELS // comm_threads), f"{what} at {comm_threads} channels"
    if ranks:
        rpn = ranks_per_node or (net.ranks_per_node if net else max(ranks))
        for r in ranks:
            if r > limit:
                raise StudyError(f"--ranks {r}: over the limit of {limit} ranks {what}")
        layouts_rt = [(r, compute_threads(target, r, min(r, rpn), threads, comm_threads)) for r in ranks]
    else:
        rpn = ranks_per_node or (net.ranks_per_node if net else 1)
        if nodes:
            for n in nodes:
                if n * rpn > limit:
                    raise StudyError(f"--nodes {n}: {n * rpn} ranks ({rpn} a node), over the limit of {limit} "
                                     f"ranks {what}")
            counts = nodes
        else:
            possible = [n for n in (1, 2, 4, 8, 16, 32, 64, 128, 256) if n <= (net.nodes if net else 1)]
            counts = [n for n in possible if n * rpn <= limit]
            left_out = [n for n in possible if n * rpn > limit]
        layouts_rt = [(n * rpn, compute_threads(target, n * rpn, rpn, threads, comm_threads)) for n in counts]
    return [Layout(r, t, min(rpn, r), update, comm_threads=comm_threads) for r, t in layouts_rt], left_out


def run(directory, meta, source, target, nodes=None, ranks=None, threads=None, ranks_per_node=None,
        update="sharded", executor=None, scaling=None, build_dir=None, validate=True, progress=None,
        collective="ring", batch=None, engine="replay", comm_threads=1):
    """(predictions, validation) as pandas frames for gpt2-mpi on `target` (see the module comment).
    Layouts: `ranks` (local: one node) or `nodes` x the ranks per node; `threads` per rank, beside
    `comm_threads` communication threads (the binary's --comm-threads).
    `progress(text)`, when given, hears of each layout as it is predicted. `collective`: the binary's
    --collective; `batch`: the batch instead of the results' (weak scaling: a rank's; strong: the
    whole). `engine`: "replay" or "smpi" (predict)."""
    import time

    import pandas as pd

    if collective not in network.ALGORITHMS:
        raise StudyError(f"--collective: expected one of {', '.join(network.ALGORITHMS)}, got {collective!r}")
    if batch is not None and batch < 1:
        raise StudyError(f"--batch: expected a positive integer, got {batch}")
    check_engine(engine)
    check_channels(comm_threads, engine)
    limit, what = (smpi.MAX_RANKS, "the smpi engine runs") if engine == "smpi" else (MAX_RANKS, "a prediction replays")
    layouts, left_out = layouts_for(target, nodes, ranks, threads, ranks_per_node, update, limit, what, comm_threads)
    layouts = [dataclasses.replace(lay, collective=collective) for lay in layouts]
    if left_out and progress:
        progress(f"note: {', '.join(map(str, left_out))} nodes left out of the default layouts: over the limit of "
                 f"{limit} ranks {what}")
    stats = chunktimes.trace_stats(directory, meta.warmup)
    medians = stats.medians
    executor = executor or vocabulary.FORKJOIN
    cks = sorted((ck for ck in medians if ck.variant == executor), key=vocabulary.point_sort_key)
    if not cks:
        raise StudyError(f"{directory}: no 1-thread traces of {executor}, the node executor to predict "
                         f"(--executor; the sweep needs {executor} at 1 thread with [analysis] trace = true)")
    ck = cks[0]
    graphs = graphcache.Graphs(directory, meta, build_dir)
    if engine == "smpi":
        smpi_program(graphs)
    overhead = runtimecost.runtime_overheads(graphs, medians, chunktimes.measured_points(directory), source,
                                            stats.costs).of(executor, config=ck)
    parameters = int(binary_facts(graphs, ck.variant, ck.compiler, ck.kernels)["num_parameters"])
    mpi_variant = vocabulary.DISTRIBUTED_VARIANTS[0]
    info = binary_facts(graphs, mpi_variant, ck.compiler, ck.kernels)
    message_bytes = int(info.get("comm_message_bytes") or 0)
    if message_bytes <= 0:
        raise StudyError(f"{graphs.binary(mpi_variant, ck.compiler, ck.kernels)}: its info line has no comm_message_bytes "
                         "(rebuild it)")
    B = int(batch or meta.model.get("B", 4))
    scaling = scaling or meta.sweep.get("scaling") or "strong"
    for lay in layouts:
        if lay.ranks > (B * lay.ranks if scaling == "weak" else B):
            raise StudyError(f"{lay.ranks} ranks: more than the {B} sequences of the batch (strong scaling; "
                             "--scaling weak gives each rank the traced batch)")
    batches = [B * lay.ranks if scaling == "weak" else B for lay in layouts]
    rows, reference = [], {}
    for i, (lay, batch) in enumerate(zip(layouts, batches)):
        started = time.monotonic()
        [r] = predict(graphs, medians, ck, [lay], [batch], parameters, message_bytes, source, target, overhead,
                      engine)
        one = batch // lay.ranks if scaling == "weak" else batch
        # one rank as the layout's, alone: no communication, the whole update, on every core the
        # layout gives a rank (a rank alone computes on its communication threads' cores too)
        cores = min(lay.threads + (lay.comm_threads if lay.ranks > 1 else 0),
                    rank_view(target, lay.ranks_per_node).cores)
        key = (one, cores, lay.ranks_per_node)
        if key not in reference:
            c1, u1 = compute_parts(graphs, medians, ck, Layout(1, cores, lay.ranks_per_node, lay.update), one,
                                   parameters, source, target, overhead)
            reference[key] = c1 + u1
        r["reference_step_s"] = reference[key]
        for step, column in (("predicted_step_s", "efficiency"), ("predicted_step_overlap_s", "efficiency_overlap")):
            r[column] = reference[key] / (r[step] * (1 if scaling == "weak" else lay.ranks))
        if progress:
            progress(f"layout {i + 1}/{len(layouts)}: {lay.nodes} node(s), {lay.ranks} ranks x {lay.threads} threads: "
                     f"{r['predicted_step_s']:.4f} s a step ({time.monotonic() - started:.1f} s to predict)")
        rows.append({"executor": executor, "compiler": ck.compiler, "kernels": ck.kernels, **chunktimes.chunk_columns(ck),
                     "scaling": scaling, "global_batch": batch, **r, "machine": target.name,
                     "label": "predicted"})
    validation = []
    points = sorted(measured(directory).items(),
                    key=lambda item: (item[0].ranks, item[0].threads, vocabulary.point_sort_key(item[0]))) \
        if validate and target is source else []
    if points:
        # each point as it ran: the knobs its sweep set, the others as given here (the binary's defaults)
        knobs = [{"update": update, "collective": collective, "overlap": "off",
                  "comm_threads": vocabulary.knob_default("comm_threads"), **vocabulary.distributed_settings(p)}
                 for p, _ in points]
        lays = [Layout(p.ranks, p.threads, p.ranks, k["update"], k["collective"], int(k["comm_threads"]))
                for (p, _), k in zip(points, knobs)]
        batches = [B * p.ranks if scaling == "weak" else B for p, _ in points]
        for (p, meas), k, r in zip(points, knobs, predict(graphs, medians, ck, lays, batches, parameters,
                                                          message_bytes, source, source, overhead, engine)):
            step = r["predicted_step_overlap_s" if k["overlap"] == "on" else "predicted_step_s"]
            validation.append({"ranks": p.ranks, "threads": p.threads, **k, "measured_step_s": meas,
                               "predicted_step_s": step, "error": step / meas - 1})
    frame = pd.DataFrame(rows)
    vframe = pd.DataFrame(validation, columns=["ranks", "threads", *vocabulary.DISTRIBUTED_KEYS, "measured_step_s",
                                               "predicted_step_s", "error"])
    return frame, vframe
