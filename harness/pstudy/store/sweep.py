"""The points of a sweep and the order in which their runs are made.

A point is one configuration of the program (variant, compiler, kernels, threads and, for the
chunked variants only, batch_subsize, token chunk k, the tile widths tile_columns and
tile_in_channels, the sequences per row chunk of the products tile_sequences and the tiles each
product is cut into tiles_per_product, each a number or AUTO, the binary's choice; for the distributed variants only, ranks: MPI processes of `threads`
threads each, and update, collective, overlap and comm_threads, the binary's options where the
sweep names them (None: the binary's default); for the variants on StarPU only, starpu_sched: the scheduler STARPU_SCHED names, None
where the sweep leaves StarPU its default). A run is one process measuring one point
once; a sweep makes `repetitions` runs of every point, and `one_thread_repetitions` of each
1-thread point where the config sets it (repetitions_of).

Order: repetition-major, with the points shuffled independently in each repetition by a seeded
generator. Every point is measured once before any is measured twice, and slow drifts of the
machine (thermal, a neighbour's load) spread over all points instead of biasing one.
"""

import itertools
import random
from typing import NamedTuple

from pstudy.store import resultsdir, vocabulary


# the sweep's points are the vocabulary's (one type for every point in the harness)
Point = vocabulary.Point


class Run(NamedTuple):
    point: Point
    repetition: int  # 0-based

    def run_id(self):
        """A file-name-safe identity, stable across resumes (the run's file stem)."""
        return resultsdir.run_stem(self.point, self.repetition)


def points(study):
    """Every point of the study. Sequential variants run at 1 thread only; only chunked variants
    take a chunking, only distributed ones a rank count. batch_subsize "auto" is the automatic
    chunking, every chunk key left to the binary: one point, whatever the other chunk lists hold."""
    sweep = study.sweep
    out = []
    for compiler in sweep["compilers"]:
        for kernels in sweep["kernels"]:
            for variant in sweep["variants"]:
                threads_list = [1] if vocabulary.is_sequential(variant) else sweep["threads"]
                for threads in threads_list:
                    if vocabulary.is_distributed(variant):
                        knobs = vocabulary.DISTRIBUTED_KEYS
                        for ranks, *values in itertools.product(sweep["ranks"],
                                                                *(sweep.get(key) or [None] for key in knobs)):
                            out.append(Point(variant, compiler, kernels, threads, ranks=ranks,
                                             **dict(zip(knobs, values))))
                    elif vocabulary.is_chunked(variant):
                        for bs, sched in itertools.product(sweep["batch_subsize"], schedulers(sweep, variant)):
                            if bs == "auto":
                                out.append(automatic_chunking(variant, compiler, kernels, threads)
                                           ._replace(starpu_sched=sched))
                                continue
                            for k, *tiles in itertools.product(
                                    *(sweep[key] for key in ("token_chunk",) + vocabulary.TILE_KEYS)):
                                out.append(Point(variant, compiler, kernels, threads, bs, chunk_value(k), None,
                                                 *(chunk_value(t) for t in tiles), sched))
                    else:
                        out.append(Point(variant, compiler, kernels, threads, None, None))
    return out


def automatic_chunking(variant, compiler, kernels, threads):
    """The point of a chunked variant whose every chunk key is left to the binary (AUTO)."""
    auto = vocabulary.AUTO
    return Point(variant, compiler, kernels, threads, auto, auto, None, *(auto,) * len(vocabulary.TILE_KEYS))


def schedulers(sweep, variant):
    """The StarPU schedulers a variant is swept over: the sweep's starpu_sched for a variant on
    StarPU ([None], StarPU's default, where the config names none), [None] for every other."""
    if not vocabulary.on_starpu(variant):
        return [None]
    return sweep.get("starpu_sched") or [None]


def chunk_value(value):
    """A config's chunk value as a point key's: the number, or AUTO for "auto"."""
    return vocabulary.AUTO if value == "auto" else value


def repetitions_of(study, point):
    """Runs of `point`: `[run] one_thread_repetitions` for a 1-thread point where set, else
    `repetitions`. The 1-thread runs are the chunk times `predict` replays at every thread count,
    so on a host whose speed moves from run to run (a shared VM) they are the ones worth repeating."""
    one = study.run.get("one_thread_repetitions")
    return one if one is not None and point.threads == 1 else study.run["repetitions"]


def schedule(study, seed):
    """All runs of the study in the order they are made (see the module comment); a repetition past
    some points' count runs the others alone, still shuffled."""
    rng = random.Random(seed)
    pts = points(study)
    counts = [repetitions_of(study, p) for p in pts]
    order = []
    for rep in range(max(counts, default=0)):
        shuffled = [p for p, n in zip(pts, counts) if rep < n]
        rng.shuffle(shuffled)
        order.extend(Run(p, rep) for p in shuffled)
    return order
