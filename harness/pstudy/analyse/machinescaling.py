"""The replay's task durations: each task's time from the traced chunk times of its configuration
(or of the traced configuration with the same operations), on the machine measured or scaled to
another by its roofline and bandwidth."""

from pstudy.store import vocabulary
from pstudy.analyse import simulate
from pstudy.errors import StudyError


UPDATE = "update"  # the optimizer's phase in a graph


def _by_label(medians, traced):
    """`medians` keyed by (operation label, bounds) instead of the traced graph's operation index:
    a chunking that packs the weights in operations of its own at one thread count and not at
    another numbers the same operations differently (the automatic chunking at 1 and at 4 threads)."""
    out = {}
    for chunk, d in medians.items():
        if not 0 <= chunk[0] < len(traced.ops):
            raise StudyError(f"{traced.path}: a trace record of operation {chunk[0]}, which the graph of "
                             f"{len(traced.ops)} operations does not have")
        out[(traced.ops[chunk[0]]["label"],) + tuple(chunk[1:])] = d
    return out


def source_durations(graph, medians, where, source=None, traced=None):
    """Per task of `graph`, its duration on the machine the traces come from (`source`), from
    `medians`, the chunk times of `traced` (the graph the traces ran; `graph` itself by default),
    operations matched by label: a task's record where the graph cuts its operation into the chunks
    the trace has, else its share of the operation's recorded time (by FLOPs; by bytes for
    operations without FLOPs) plus, for a product cut finer than its trace, the compulsory bytes it
    moves beyond its share of the traced chunks', at the machine's re-read rate (Machine.reread_bandwidth:
    `reread_GBs`, else one core's bandwidth; each column chunk reads
    every row of its input again: fork-join's chunks of the language-model head's input gradient
    each read the whole 51 MB logits gradient at d12). A task whose operation moves bytes and does
    no arithmetic, and has no record in the trace, takes its bytes at the source's one-core
    bandwidth: the pack operations, which a chunking describes only where it cuts the products'
    rows (the automatic chunking at 4 threads and more, not at 1)."""
    return _source_parts(graph, medians, where, source, traced)[0]


def _traced_bytes(traced):
    """Per operation label, the compulsory bytes of the traced graph's chunks."""
    out = {}
    for t in range(traced.n_tasks):
        label = traced.ops[traced.op[t]]["label"]
        out[label] = out.get(label, 0) + traced.bytes[t]
    return out


def _reread(task_bytes, share, traced_op_bytes):
    """The compulsory bytes a task of a product moves beyond its share of the traced chunks'."""
    return max(0.0, task_bytes - share * traced_op_bytes)


def _source_parts(graph, medians, where, source=None, traced=None):
    """source_durations' durations, and per task the bytes read again that they include."""
    medians = _by_label(medians, traced or graph)
    labels = [o["label"] for o in graph.ops]
    op_time, op_bytes = {}, {}
    for chunk, d in medians.items():
        op_time[chunk[0]] = op_time.get(chunk[0], 0.0) + d
    for t in range(graph.n_tasks):
        op_bytes[graph.op[t]] = op_bytes.get(graph.op[t], 0) + graph.bytes[t]
    traced_bytes = _traced_bytes(traced or graph)
    # An operation takes its recorded chunk times only where the graph cuts it as the trace did:
    # cut otherwise, a chunk that happens to share a record's bounds would be counted beside the
    # shares of the whole operation's time that the others get.
    keys, as_traced = [], {}
    for t in range(graph.n_tasks):
        op = graph.op[t]
        key = None if graph.key[t] is None else (labels[op],) + tuple(graph.key[t][1:])
        keys.append(key)
        as_traced[op] = as_traced.get(op, True) and key in medians
    out, reread = [], [0.0] * graph.n_tasks
    for t in range(graph.n_tasks):
        op, label = graph.op[t], labels[graph.op[t]]
        if as_traced[op]:
            out.append(medians[keys[t]])
            continue
        if label not in op_time and source is not None and graph.ops[op]["flops"] == 0 and graph.bytes[t] > 0:
            out.append(graph.bytes[t] / source.bandwidth(1))
            continue
        if label not in op_time:
            raise StudyError(f"{where}: no 1-thread trace record of operation {op} "
                             f"({label}); is the trace complete?")
        total_flops = graph.ops[op]["flops"]
        if total_flops > 0:
            share = graph.flops[t] / total_flops
        else:
            share = graph.bytes[t] / op_bytes[op] if op_bytes[op] > 0 else 1.0 / graph.op.count(op)
        d = op_time[label] * share
        if source is not None and total_flops > 0 and traced_bytes.get(label):
            reread[t] = _reread(graph.bytes[t], share, traced_bytes[label])
            d += reread[t] / source.reread_bandwidth()
        out.append(d)
    return out, reread


def scaled_work(graph, traced, medians, source, target, where, update_share=1.0, reread=True):
    """simulate.Work of `graph` (another chunking, or a rank's batch) from the 1-thread times of
    `traced`: per task, its operation's traced time (operations matched by label) times its share
    of the traced operation's FLOPs (bytes without FLOPs); update tasks times `update_share`. An
    operation the trace does not have that does no arithmetic (a pack pass) takes its bytes at the
    source's one-core bandwidth. With `reread`, a product cut finer than the traced one pays, as in
    source_durations, the compulsory bytes beyond its share of the traced chunks' at the re-read
    rate (its tiles read their inputs again); a rank's batch (pstudy.analyse.distributed) is
    not a finer cut of the same rows, and is replayed without it."""
    per_task = source_durations(traced, medians, where)
    per_op, ref = {}, {}
    for t, d in enumerate(per_task):
        label = traced.ops[traced.op[t]]["label"]
        per_op[label] = per_op.get(label, 0.0) + d
    for o in traced.ops:
        ref[o["label"]] = o
    traced_bytes = _traced_bytes(traced)
    one_core, again_rate = source.bandwidth(1), source.reread_bandwidth()
    d_src, moved, reread_bytes = [], [], [0.0] * graph.n_tasks
    for t in range(graph.n_tasks):
        op = graph.ops[graph.op[t]]
        r = ref.get(op["label"])
        scale = update_share if graph.phase[t] == UPDATE else 1.0
        if r is None:
            if op["flops"] > 0 or graph.bytes[t] == 0:
                raise StudyError(f"{where}: operation {op['label']} is not in the traced graph {traced.path}")
            d_src.append(graph.bytes[t] * scale / one_core)
        else:
            if r["flops"] > 0:
                share = graph.flops[t] / r["flops"]
            elif r["bytes"] > 0:
                share = graph.bytes[t] / r["bytes"]
            else:
                share = 1.0 / max(1, graph.op.count(graph.op[t]))
            d = per_op.get(op["label"], 0.0) * share
            if reread and r["flops"] > 0 and traced_bytes.get(op["label"]):  # its inputs read again
                again = _reread(graph.bytes[t], share, traced_bytes[op["label"]])
                d += again / again_rate
                reread_bytes[t] = again * scale
            d_src.append(d * scale)
        moved.append(float(graph.bytes[t]) * scale)
    return _work(graph, d_src, moved, source, target, reread_bytes)


def reference_config(medians, ck, graphs, P=1):
    """reference_match's config."""
    return reference_match(medians, ck, graphs, P)[0]


def reference_match(medians, ck, graphs, P=1):
    """(reference_config, whether its traced operations are those of ck's graph at P): False where the
    times are borrowed (ck's own traces of other operations); (None, False) where there is none.

    The traced config whose 1-thread times `ck`'s graph at P threads replays: ck itself where its
    graph at P has the operations of its traced graph, else a traced config of the same variant
    (else of the same kind, chunked or not) that has them; ck itself where none has (its pack
    operations then take their bytes at one core's bandwidth). None when ck has no trace and no
    config matches. (The operations differ where one chunking packs the weights in a pass of its
    own and the other does not: a traced chunk time of a product that packs inside is not the
    product's time beside a pass of its own.)"""
    want = [o["label"] for o in graphs.get(ck, P).ops]
    if ck in medians and [o["label"] for o in graphs.get(ck, 1).ops] == want:
        return ck, True
    same_kind = [r for r in sorted(medians, key=vocabulary.point_sort_key)
                 if (r.compiler, r.kernels) == (ck.compiler, ck.kernels)
                 and vocabulary.is_chunked(r.variant) == vocabulary.is_chunked(ck.variant)]
    for r in sorted(same_kind, key=lambda r: r.variant != ck.variant):
        if [o["label"] for o in graphs.get(r, 1).ops] == want:
            return r, True
    return (ck, False) if ck in medians else (None, False)


def _work(graph, d_src, moved, source, target, reread=None):
    """simulate.Work on `target` of `graph`'s tasks, from their durations on `source`, the bytes
    each moves and the bytes among them read again (`reread`, included in the durations at the
    source's re-read rate). On another machine a task's duration is its operation's roofline
    ratio, max(FLOPs / peak, bytes / one-core bandwidth) on the target over the same on the source,
    whole operations' FLOPs and compulsory bytes as the graph gives them (a product's goes by the
    peaks, a pack pass's or AdamW's by the bandwidths: scaling these by the peaks as well made them
    1.9x slower on mn5-gpp than on the 2-vCPU Xeon whose traces it replayed), times its time
    without the bytes read again, plus those bytes at the target's re-read rate. DRAM bytes
    are the moved ones capped at what one source core could stream in the task's time (the rest
    came from cache)."""
    one_core = source.bandwidth(1)
    if source is target:
        durations = list(d_src)
    else:
        ps, pt = source.peak_gflops_per_core * 1e9, target.peak_gflops_per_core * 1e9
        bt, again_src, again_tgt = target.bandwidth(1), source.reread_bandwidth(), target.reread_bandwidth()
        ratio = []
        for o in graph.ops:
            floor = max(o["flops"] / ps, o["bytes"] / one_core)
            ratio.append(max(o["flops"] / pt, o["bytes"] / bt) / floor if floor > 0 else ps / pt)
        reread = reread or [0.0] * len(d_src)
        durations = [(d - e / again_src) * ratio[op] + e / again_tgt for d, e, op in zip(d_src, reread, graph.op)]
    dram = [min(b, one_core * d) for b, d in zip(moved, d_src)]
    return simulate.Work(durations, dram, compute_demands(graph.flops, durations, target))


def work_for(graph, medians, source, target, where, traced=None):
    """simulate.Work of `graph` on `target` from durations measured on `source` (the chunk times
    of `traced`, `graph` itself by default)."""
    d_src, reread = _source_parts(graph, medians, where, source, traced)
    return _work(graph, d_src, [float(b) for b in graph.bytes], source, target, reread)


def replay_work(graphs, medians, ck, threads, source, target, ref=None, overhead=0.0):
    """simulate.Work of `ck`'s graph at `threads` threads from the traced config that replays it
    (`ref`, reference_config's when not given), each task `overhead` seconds longer (its variant's
    runtime cost per task, runtime_overheads)."""
    graph = graphs.get(ck, threads)
    ref = ref or reference_config(medians, ck, graphs, threads)
    if ref is None:
        raise StudyError(f"{graph.path}: no 1-thread trace of this configuration, nor of one with its operations")
    if ref == ck:
        work = work_for(graph, medians[ck], source, target, graph.path, graphs.get(ck, 1))
    else:
        work = scaled_work(graph, graphs.get(ref, 1), medians[ref], source, target, graph.path)
    return with_overhead(work, overhead)


def with_overhead(work, overhead):
    """`work` with each task `overhead` seconds longer. The kernels' demands stay those of their own
    time: the runtime's part uses no FMA units and moves none of the task's bytes."""
    if overhead > 0:
        work.duration = [d + overhead for d in work.duration]
    return work


def compute_demands(flops, durations, machine):
    """Per task, the share of one thread's peak FLOP/s of `machine` it uses alone (0..1)."""
    peak = machine.peak_gflops_per_core * 1e9
    return [min(1.0, f / (d * peak)) if d > 0 else 0.0 for f, d in zip(flops, durations)]
