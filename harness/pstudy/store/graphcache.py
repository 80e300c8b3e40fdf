"""The task graphs a prediction replays, described once by each binary and kept in graphs/
(resultsdir.ResultsDir.graph names their files, pstudy.store.taskgraph reads them), with a record of
the binary that described each, so that a rebuilt binary's stale graphs are reported."""

import json
import os
from pathlib import Path

from pstudy.store import resultsdir, taskgraph, vocabulary
from pstudy import common
from pstudy.errors import StudyError


REPO_ROOT = vocabulary.REPO_ROOT


def graph_point(ck, threads):
    """The point whose graph config key `ck` replays at `threads` threads: the sequential variant's
    is the same at every thread count (described at 1). A chunked variant's depends on the thread
    count even where every chunk size is given: a product split along its output columns (a weight
    gradient's output channels, the language-model head) comes in at most 4 chunks per thread, one
    at 1 thread (core/taskgraph.c), so it is described at `threads`."""
    return ck._replace(threads=1 if vocabulary.is_sequential(ck.variant) else threads)


def stale_graphs(directory):
    """One line per binary that described some of a results directory's kept task graphs and has
    been rebuilt since (its SHA-256 differs): those graphs are reused as they are, which after a
    change to the chunking rules predicts the old rules (graphs without an origin record, from
    before they were kept, are not checked)."""
    rd = resultsdir.ResultsDir(directory)
    described, current = {}, {}
    for path in rd.graph_origins():
        try:
            record = json.loads(path.read_text())
            binary, sha = str(record["binary"]), str(record["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            return [f"{path}: unreadable graph origin record (move {rd.graphs} aside to "
                    "describe the graphs again)"]
        if binary not in current:
            try:
                current[binary] = common.file_sha256(binary)
            except OSError:
                current[binary] = None
        if current[binary] != sha:
            described[binary] = described.get(binary, 0) + 1
    return [f"{rd.graphs}: {n} task graph(s) were described by another build of {binary}"
            f"{'' if current[binary] else ' (now missing)'}; they are reused as they are (move the folder aside "
            "to describe them with this build)" for binary, n in sorted(described.items())]


class Graphs:
    """The task graphs of a results directory's binaries, described once and kept in graphs/."""

    def __init__(self, directory, meta, build_dir=None):
        self.directory = Path(directory)
        self.meta = meta
        model = meta.model
        if not model:
            raise StudyError(f"{meta.path}: config.model: missing (cannot tell which model to describe)")
        self.args = ["-B", str(model.get("B", 4)), "-T", str(model.get("T", 64))]
        if model.get("config"):
            self.args += ["--config", str(model["config"])]
        elif model.get("checkpoint"):
            p = os.path.expanduser(str(model["checkpoint"]))
            self.args += ["--model", p if os.path.isabs(p) else str(REPO_ROOT / p)]
        else:
            raise StudyError(f"{meta.path}: config.model: neither config nor checkpoint")
        run = meta.run_settings
        tree = build_dir or os.environ.get("PERFSTUDY_BUILD_DIR") or run.get("build_dir") or "build"
        tree = Path(os.path.expanduser(str(tree)))
        self.build = tree if tree.is_absolute() else REPO_ROOT / tree
        self.binary_pattern = run.get("binary") or "{build_dir}/{compiler}/{kernels}/gpt2-{variant}"
        self.cache = {}
        self.sha256 = {}

    def binary(self, variant, compiler, kernels):
        text = os.path.expanduser(self.binary_pattern.format(build_dir=str(self.build), compiler=compiler,
                                                             kernels=kernels, variant=variant))
        return text if os.path.isabs(text) else str(REPO_ROOT / text)

    def get(self, ck, threads, batch=None):
        """The graph of config key `ck` at `threads` threads (dataflow graphs do not depend on it),
        of the results' batch size or of `batch` sequences (a rank's share)."""
        point, batch = self._point(ck, threads, batch)
        if (point, batch) in self.cache:
            return self.cache[(point, batch)]
        path = resultsdir.ResultsDir(self.directory).graph(point, batch)
        graph = taskgraph.load(path) if path.is_file() else self._describe(ck, point, batch, path)
        if graph.variant != ck.variant:
            raise StudyError(f"{path}: describes variant {graph.variant}, expected {ck.variant}")
        self.cache[(point, batch)] = graph
        return graph

    def where(self, ck, threads, batch=None):
        """((point, batch), file) of the graph of `ck` at `threads` threads: the same key, the same
        graph."""
        point, batch = self._point(ck, threads, batch)
        return (point, batch), resultsdir.ResultsDir(self.directory).graph(point, batch)

    def ensure(self, ck, threads, batch=None):
        """Describes the graph of `ck` at `threads` threads into graphs/ unless it is there (without
        reading a kept one: --best has its worker processes read them)."""
        (point, batch), path = self.where(ck, threads, batch)
        if (point, batch) not in self.cache and not path.is_file():
            self._describe(ck, point, batch, path, keep=False)  # hundreds of graphs for --best

    def _point(self, ck, threads, batch):
        if batch is not None and batch == int(self.meta.model.get("B", 4)):
            batch = None
        return graph_point(ck, threads), batch

    def _describe(self, ck, point, batch, path, keep=True):
        args = list(self.args) + ["--threads", str(point.threads)]
        if batch is not None:
            args[args.index("-B") + 1] = str(batch)
        for key, value in zip(vocabulary.CHUNK_KEYS, ck.chunks()):  # AUTO: chosen by the binary for `threads`
            if value is not None and value != vocabulary.AUTO:
                args += [vocabulary.CHUNK_OPTIONS[key][0], str(value)]
        binary = self.binary(ck.variant, ck.compiler, ck.kernels)
        graph = taskgraph.describe(binary, args, path, keep=keep)
        if binary not in self.sha256:  # once per binary: describing hundreds of graphs (--best)
            self.sha256[binary] = common.file_sha256(binary)
        resultsdir.atomic_write(resultsdir.ResultsDir(self.directory).graph_origin(path),
                                json.dumps({"binary": binary, "sha256": self.sha256[binary]}) + "\n")
        return graph
