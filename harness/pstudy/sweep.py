"""The points of a sweep and the order in which their runs are made.

A point is one configuration of the program (variant, compiler, kernels, threads and, for the
chunked variants only, batch_subsize and token chunk k). A run is one process measuring one point
once; a sweep makes `repetitions` runs of every point.

Order: repetition-major, with the points shuffled independently in each repetition by a seeded
generator. Every point is measured once before any is measured twice, and slow drifts of the
machine (thermal, a neighbour's load) spread over all points instead of biasing one.
"""

import random
from dataclasses import dataclass
from typing import Optional

from pstudy.config import CHUNKED_VARIANTS


@dataclass(frozen=True)
class Point:
    variant: str
    compiler: str
    kernels: str
    threads: int
    batch_subsize: Optional[int]  # None for seq and forkjoin: they do not chunk
    k: Optional[int]              # token chunk; None likewise

    def label(self):
        text = f"{self.variant} {self.compiler}/{self.kernels} t={self.threads}"
        if self.batch_subsize is not None:
            text += f" bs={self.batch_subsize} k={self.k}"
        return text


@dataclass(frozen=True)
class Run:
    point: Point
    repetition: int  # 0-based

    def run_id(self):
        """A file-name-safe identity, stable across resumes."""
        p = self.point
        bs = "NA" if p.batch_subsize is None else p.batch_subsize
        k = "NA" if p.k is None else p.k
        return (f"{p.variant}_{p.compiler}_{p.kernels}_t{p.threads}_bs{bs}_k{k}_r{self.repetition}")


def points(study):
    """Every point of the study. seq runs at 1 thread only; only tasks/taskiter are chunked."""
    sweep = study.sweep
    out = []
    for compiler in sweep["compilers"]:
        for kernels in sweep["kernels"]:
            for variant in sweep["variants"]:
                threads_list = [1] if variant == "seq" else sweep["threads"]
                for threads in threads_list:
                    if variant in CHUNKED_VARIANTS:
                        for bs in sweep["batch_subsize"]:
                            for k in sweep["token_chunk"]:
                                out.append(Point(variant, compiler, kernels, threads, bs, k))
                    else:
                        out.append(Point(variant, compiler, kernels, threads, None, None))
    return out


def schedule(study, seed):
    """All runs of the study in the order they are made (see the module comment)."""
    rng = random.Random(seed)
    pts = points(study)
    order = []
    for rep in range(study.run["repetitions"]):
        shuffled = list(pts)
        rng.shuffle(shuffled)
        order.extend(Run(p, rep) for p in shuffled)
    return order
