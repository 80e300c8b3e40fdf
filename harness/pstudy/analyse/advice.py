"""`perfstudy predict --best`: every variant and chunking ranked by predicted step time at each
core count P, and what bounds the best one.

Candidates: the sequential and threads variants as they are; the chunked variants at the chunking
they choose for P threads themselves ("auto": core/taskgraph.c's rule), and at every
BATCH_SUBSIZE in 1, 2, 4, ... up to B (and B) and every token chunk k in T, T/2, T/4, ... down to 8,
each with the products' rows cut as the others' (whole products and tiles of 256) and with them
whole (TILINGS; whatever graph the binary describes for it: its tasks, whatever their shape, are
what is replayed); gpt2-mpi at R ranks x P/R threads on one node for R = 2, 4, ... up to B (strong scaling,
pstudy.analyse.distributed) when it is built and SimGrid is there. A chunking the sweep did not trace
gets each task's time as its operation's traced time (the same variant's, else another chunked
variant's with the same operations) times the task's share of the operation's FLOPs.

What bounds a configuration (classify): the simulated run's losses against its ideal (the tasks'
time alone spread evenly over P cores) split into
  load balance    1 - mean busy / max busy (cores idle while the busiest works)
  dependencies    1 - max busy / runtime (waits for predecessors and barriers)
  bandwidth       running time lost to tasks short of memory bandwidth, as a share of busy time
  compute         running time lost to a core's FMA units or the all-core clock, likewise
The bound is the largest loss when it is 10% or more of the step; otherwise the step is the work
itself on P cores: "compute" (more or faster cores help, nothing else does). Deterministic: the
candidates are enumerated in a fixed order, ties keep it, and the replay is deterministic.
"""

from pstudy.analyse import chunktimes, contention, distributed, machinescaling, network, runtimecost, simulate, stepreplay
from pstudy.errors import StudyError
from pstudy.store import graphcache, taskgraph, vocabulary

LOSS_THRESHOLD = 0.10
BOUNDS = ("load balance", "dependencies", "bandwidth", "compute")


def classify(outcome, cores):
    """(bound, {loss name: share}) of a simulated run (simulate.Outcome) on `cores` cores."""
    pop = simulate.pop_factors(outcome, cores)
    busy = sum(outcome.busy[:cores])
    stretch = outcome.stretch or {}
    losses = {"load balance": 1.0 - pop["load_balance"],
              "dependencies": 1.0 - pop["communication_eff"],
              "bandwidth": stretch.get("bandwidth", 0.0) / busy if busy > 0 else 0.0,
              "compute": stretch.get("compute", 0.0) / busy if busy > 0 else 0.0}
    name = max(BOUNDS, key=lambda b: (losses[b], -BOUNDS.index(b)))
    bound = name if losses[name] >= LOSS_THRESHOLD else "compute"
    return bound, losses


# the tile keys (vocabulary.TILE_KEYS: tile_columns, tile_in_channels, tile_sequences,
# tiles_per_product) the chunked variants are tried at: none (each product whole per row chunk) and
# widths of 256, a width every model's products have (4C >= 256 for C >= 64) and wide enough for the
# micro-kernels' panels, both with the products' rows cut as the other row operations' chunks
# (tile_sequences not given); and the products' rows whole (tile_sequences = B, WHOLE_ROWS), where
# the binary cuts every product into one tile per thread (tiles_per_product left to it), as fork-join
# does, and leaves a weight gradient's input channels whole
WHOLE_ROWS = "B"
TILINGS = ((None, None, None, None), (256, 256, None, None), (None, None, WHOLE_ROWS, None))


def chunkings(B, T):
    """[(batch_subsize, k)] the chunked variants are tried at."""
    bss, b = [], 1
    while b < B:
        bss.append(b)
        b *= 2
    bss.append(B)
    ks, k = [], T
    while k >= 8 or not ks:
        ks.append(k)
        if k % 2:
            break
        k //= 2
    return [(bs, k) for bs in bss for k in ks]


def candidates(medians, B, T):
    """Config keys to rank: every traced (variant, compiler, kernels) of a non-distributed variant,
    the chunked ones at every chunking; in a fixed order."""
    bases = sorted({(ck.variant, ck.compiler, ck.kernels) for ck in medians if not vocabulary.is_distributed(ck.variant)},
                   key=lambda b: (vocabulary.variant_order(b[0]),) + b[1:])
    out = []
    for variant, compiler, kernels in bases:
        base = vocabulary.Point(variant, compiler, kernels)
        if vocabulary.is_chunked(variant):
            # the chunking the binary chooses for P threads (AUTO), then untiled (whole products per
            # row chunk, as described at 1 thread), tiles of 256 and the products' rows whole at every
            # BATCH_SUBSIZE and k
            auto = vocabulary.AUTO
            # a directory swept before a chunk key existed has its automatic point with that key None:
            # that point is the automatic chunking, with its own traces
            traced_auto = sorted((ck for ck in medians if ck._replace(**dict.fromkeys(vocabulary.CHUNK_KEYS)) == base
                                  and ck.batch_subsize == auto and all(v in (auto, None) for v in ck.chunks())),
                                 key=lambda ck: ck.chunks().count(None))
            out.append(traced_auto[0] if traced_auto else
                       base._replace(**dict.fromkeys(vocabulary.CHUNK_KEYS, auto)))
            out += [base._replace(batch_subsize=bs, k=k, **dict(zip(vocabulary.TILE_KEYS,
                                                                    (B if t == WHOLE_ROWS else t for t in tiles))))
                    for bs, k in chunkings(B, T) for tiles in TILINGS]
        else:
            out.append(base)
    return out


def predict_candidate(graphs, medians, ck, P, source, target, overhead=0.0, noise=None, allow_borrowed=False):
    """(step seconds, Outcome, cores, borrowed) of config key `ck` at P threads, each task `overhead`
    seconds longer (its variant's runtime cost, runtimecost.runtime_overheads), a static schedule's
    barriers charged `noise` (stepreplay.barrier_jitter; only on the machine it was measured on).
    None where no trace gives its task times; NOT_RANKED where only traces of other operations do
    (borrowed times: a ranking on them once put fork-join first where taskiter was 1.29x faster),
    unless `allow_borrowed`."""
    ref, same = machinescaling.reference_match(medians, ck, graphs, P)
    if ref is None:
        return None
    if not same and not allow_borrowed:
        return NOT_RANKED
    graph = graphs.get(ck, P)
    work = machinescaling.replay_work(graphs, medians, ck, P, source, target, ref, overhead)
    cores = graph.threads if graph.schedule == taskgraph.STATIC else P
    try:
        step, outcome = simulate.step_time(graph, work, target, cores, stepreplay.ITERATIONS,
                                           contention.Node(target, cores))
    except RuntimeError as err:
        raise StudyError(f"{graph.path}: {err}") from None
    return step + stepreplay.barrier_jitter(graph, work, noise), outcome, cores, not same


NOT_RANKED = "not ranked"


def _evaluate(graphs, medians, source, target, ck, counts, overheads, noise, allow_borrowed=False):
    """[(P, row, None or NOT_RANKED)] of one candidate at every P of `counts`."""
    out = []
    for P in counts:
        if vocabulary.is_sequential(ck.variant) and P != 1:
            continue
        result = predict_candidate(graphs, medians, ck, P, source, target, overheads.of(ck.variant, config=ck),
                                   noise.get(ck), allow_borrowed)
        if result is None or result == NOT_RANKED:
            out.append((P, result))
            continue
        step, outcome, cores, borrowed = result
        bound, losses = classify(outcome, cores)
        out.append((P, {"threads": P, "variant": ck.variant, "compiler": ck.compiler, "kernels": ck.kernels,
                        **chunktimes.chunk_columns(ck), "ranks": None, "threads_per_rank": None,
                        "predicted_step_s": step, "work_s": outcome.nominal / outcome.steps,
                        "borrowed": borrowed, "bound": bound, **{f"loss_{b.replace(' ', '_')}": v for b, v in losses.items()}}))
    return out


_WORKER = {}


def _worker_init(directory, meta, build_dir, medians, source, target, overheads, noise, allow_borrowed):
    _WORKER.update(graphs=graphcache.Graphs(directory, meta, build_dir), medians=medians, source=source,
                   target=target, overheads=overheads, noise=noise, allow_borrowed=allow_borrowed)


def _describe_job(job):
    _WORKER["graphs"].ensure(*job)


def _worker_job(job):
    ck, counts = job
    w = _WORKER
    return _evaluate(w["graphs"], w["medians"], w["source"], w["target"], ck, counts, w["overheads"], w["noise"],
                     w["allow_borrowed"])


def best(graphs, medians, meta, source, target, counts, mpi=True, progress=None, jobs=1, overheads=None,
         noise=None, allow_borrowed=False):
    """(ranking, notes): one row per (P, candidate) with its rank at that P (1 = fastest), the
    predicted step time and, for every candidate, what bounds it; notes say what was left out.
    jobs > 1: the candidates' replays in that many processes (graphs described first, here), the
    same result as one. `overheads`: the runtime's cost per task (runtimecost.RuntimeOverheads;
    none by default); `noise`: {config key: the chunks' noise} for the static schedules' barriers
    (stepreplay.barrier_jitter; give it only where the target is the machine it was measured on).
    A candidate whose task times would come from traces of other operations is not ranked (a note
    names it and the sweep that would rank it) unless `allow_borrowed`, which ranks it with
    borrowed = True."""
    import pandas as pd

    overheads = overheads or runtimecost.RuntimeOverheads({})
    noise = noise or {}
    B, T = int(meta.model.get("B", 4)), int(meta.model.get("T", 64))
    cands = candidates(medians, B, T)
    # one job per candidate whose graph is the same at every P, one per (candidate, P) otherwise
    work = []
    for ck in cands:
        if vocabulary.is_chunked(ck.variant) or vocabulary.is_sequential(ck.variant):
            work.append((ck, list(counts)))
        else:
            work += [(ck, [P]) for P in counts]
    if jobs > 1 and isinstance(graphs, graphcache.Graphs) and len(work) > 1:
        import multiprocessing
        # describe every missing graph first (reference_config's too), each once, in the pool: the
        # replays then only read them
        wanted = [(ck, P) for ck, ps in work for P in (1, *ps)]
        wanted += [(r, 1) for r in medians if not vocabulary.is_distributed(r.variant)]
        missing = {}
        for ck, P in wanted:
            key, path = graphs.where(ck, P)
            if key not in missing and not path.is_file():
                missing[key] = (ck, P)
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(min(jobs, len(work)), _worker_init,
                      (graphs.directory, graphs.meta, str(graphs.build), medians, source, target,
                       overheads, noise, allow_borrowed)) as pool:
            pool.map(_describe_job, list(missing.values()), chunksize=1)
            results = pool.map(_worker_job, work, chunksize=1)
    else:
        results = [_evaluate(graphs, medians, source, target, ck, ps, overheads, noise, allow_borrowed)
                   for ck, ps in work]
    by_p = {P: [] for P in counts}
    skipped, unranked = set(), {}
    for (ck, _), res in zip(work, results):
        for P, row in res:
            if row == NOT_RANKED:
                unranked.setdefault(ck, []).append(P)
            elif row is None:
                skipped.add(ck.variant)
            else:
                by_p[P].append(row)
                if progress:
                    progress(P, ck, row["predicted_step_s"])
    notes, rows = [], []
    order = {ck: i for i, ck in enumerate(cands)}
    for P in counts:
        at = sorted(by_p[P], key=lambda r: order[chunktimes.config_key(vocabulary.point_key(r))])
        if mpi and P >= 2:
            at += mpi_rows(graphs, medians, meta, source, target, P, notes, overheads)
        at.sort(key=lambda r: r["predicted_step_s"])  # stable: ties keep the candidates' order
        add_extra_work(at)
        for i, r in enumerate(at):
            r["rank"] = i + 1
        rows += at
    for v in sorted(skipped):
        notes.append(f"{v}: no traced configuration with the same operations to take task times from")
    for ck, ps in unranked.items():
        chunking = vocabulary.chunking_label(*ck.chunks()) if vocabulary.is_chunked(ck.variant) else ""
        notes.append(f"not ranked: {ck.variant} {ck.compiler}/{ck.kernels}{' ' + chunking if chunking else ''} at P = "
                     f"{', '.join(map(str, ps))}: no 1-thread trace of the same operations (to rank it, sweep "
                     f"{ck.variant} at threads 1 and {max(ps)} with this chunking and [analysis] trace = true; "
                     "--allow-borrowed ranks it on other operations' times, marked)")
    frame = pd.DataFrame(rows, columns=["threads", "rank", "variant", "compiler", "kernels", *vocabulary.CHUNK_KEYS,
                                        "ranks", "threads_per_rank", "predicted_step_s", "work_s", "extra_work",
                                        "borrowed", "bound",
                                        "loss_load_balance", "loss_dependencies", "loss_bandwidth",
                                        "loss_compute"])
    for col in (*vocabulary.CHUNK_KEYS, "ranks", "threads_per_rank"):
        frame[col] = frame[col].astype("Int64")
    return frame, list(dict.fromkeys(notes))


def add_extra_work(rows):
    """Sets each row's extra_work: its work (the sum of its tasks' times alone, one step) over the
    least work of any candidate at the same P, minus one; None where the work is not known
    (gpt2-mpi's layouts). A decomposition that packs weights in a pass of its own or whose tiles
    read their inputs again does more work than the leanest one, and no scheduling wins it back."""
    known = [r["work_s"] for r in rows if r.get("work_s") is not None]
    least = min(known) if known else None
    for r in rows:
        w = r.get("work_s")
        r["extra_work"] = w / least - 1.0 if w is not None and least else None


def mpi_rows(graphs, medians, meta, source, target, P, notes, overheads):
    """gpt2-mpi at R ranks x P/R threads on one node (R = 2, 4, ... <= B, dividing P), forkjoin inside
    (with forkjoin's runtime cost per task)."""
    B = int(meta.model.get("B", 4))
    ck = next((c for c in sorted(medians, key=vocabulary.point_sort_key)
               if c.variant == vocabulary.FORKJOIN), None)
    if ck is None:
        notes.append("gpt2-mpi left out: no 1-thread traces of its node executor (forkjoin)")
        return []
    ok, why = network.available()
    if not ok:
        notes.append(f"gpt2-mpi left out: {why}")
        return []
    mpi_variant = vocabulary.DISTRIBUTED_VARIANTS[0]
    try:
        info = distributed.binary_facts(graphs, mpi_variant, ck.compiler, ck.kernels)
        params = int(distributed.binary_facts(graphs, ck.variant, ck.compiler, ck.kernels)["num_parameters"])
    except StudyError as err:
        notes.append(f"gpt2-mpi left out: {err}")
        return []
    layouts = []
    R = 2
    while R <= min(B, P):
        if P % R == 0:
            layouts.append(distributed.Layout(R, P // R, R, "sharded"))
        R *= 2
    if not layouts:
        return []
    results = distributed.predict(graphs, medians, ck, layouts, [B] * len(layouts), params,
                                  int(info.get("comm_message_bytes") or 0), source, target,
                                  overheads.of(ck.variant, config=ck))
    out = []
    for lay, r in zip(layouts, results):
        comm = r["reduce_scatter_s"] + r["all_gather_s"]
        out.append({"threads": P, "variant": mpi_variant, "compiler": ck.compiler, "kernels": ck.kernels, "batch_subsize": None,
                    "k": None, "ranks": lay.ranks, "threads_per_rank": lay.threads,
                    "predicted_step_s": r["predicted_step_s"], "borrowed": False,
                    # communication waits on the messages' order and the links: dependencies and bandwidth
                    "bound": "dependencies" if comm >= LOSS_THRESHOLD * r["predicted_step_s"] else "compute",
                    "loss_load_balance": 0.0, "loss_dependencies": comm / r["predicted_step_s"],
                    "loss_bandwidth": 0.0, "loss_compute": 0.0})
    return out


def summary_lines(frame, target_name):
    """Per P: the best configuration, what bounds it, and the runner-up."""
    out = [f"BEST on {target_name} (predicted; ranked by step time at each P)"]
    for P, group in frame.groupby("threads", sort=True):
        group = group.sort_values("rank")
        top = group.iloc[0]
        out.append(f"  P={P:<4} {label(top):<40} {top['predicted_step_s']:.5f} s  bound: {top['bound']}  "
                   f"(LB {top['loss_load_balance']:.2f}, deps {top['loss_dependencies']:.2f}, "
                   f"bw {top['loss_bandwidth']:.2f}, compute {top['loss_compute']:.2f}{_work_text(top)})")
        if len(group) > 1:
            second = group.iloc[1]
            out.append(f"         next: {label(second):<34} {second['predicted_step_s']:.5f} s "
                       f"({100 * (second['predicted_step_s'] / top['predicted_step_s'] - 1):+.1f}%{_work_text(second)})")
    return out


def _work_text(row):
    """', work +x.x%': the row's work beyond the leanest candidate's at its P, where known."""
    extra = row.get("extra_work")
    return "" if extra is None or extra != extra else f", work {100 * extra:+.1f}%"


def label(row):
    text = ("[borrowed times] " if row.get("borrowed") is True else "") + f"{row['variant']} {row['compiler']}/{row['kernels']}"
    if str(row["batch_subsize"]) not in ("<NA>", "None", "nan"):
        text += " " + vocabulary.chunking_label(*(row.get(c) for c in vocabulary.CHUNK_KEYS))
    if str(row["ranks"]) not in ("<NA>", "None", "nan"):
        text += f" {row['ranks']} ranks x {row['threads_per_rank']}"
    return text
