"""Recorded validation data for `predict`: what a quiet machine measured, kept small enough to
commit (docs/studies/<name>/), so that tests check predictions against it without timing anything.
`perfstudy validate record` records it (analyse/validation.py packs a results directory into it);
this module owns the layout and is the only reader and writer.

Layout, schema "pstudy-validation/1":
  validation.json   schema, recorded (UTC), host, cpu model, commit, the command, per study its
                    name, config text and model, the measured machine's file name, notes
  machine.toml      the machine as measured there (perfstudy ceilings: curves, placement, topology)
  ceilings.json     the ceilings themselves
  points.csv        study, the point keys (variant, compiler, kernels, threads, batch_subsize, k, ranks:
                    gpt2-mpi's points only, tile_columns, tile_in_channels, tile_sequences),
                    measured_step_s (median of the measured steps, every repetition pooled), steps
                    (how many)
  chunks.csv.gz     (chunks.csv, plain, in older recordings) study, variant,
                    compiler, kernels, the chunk keys (batch_subsize, k, tile_columns,
                    tile_in_channels, tile_sequences), op, b0, b1, x0, x1, col0, col1, seconds: each
                    chunk's median time in the 1-thread traces (warm-up left out)
  runtime.csv       (since 2026-11-26) the chunk keys' configuration, busy_scale, seconds_per_task
                    (chunktimes.trace_stats)
  noise.csv.gz      (noise.csv, plain, in older recordings; none in the oldest)
                    per static configuration and operation label, each 1-thread chunk time's relative
                    deviation from its chunk's mean
  A recording made before a point key existed reads with the key NA.
  graphs/<study>__<point stem>[_B<batch>].json.xz   the task graphs predict replayed (--describe-graph;
                    _B: at a rank's share of the batch, for gpt2-mpi's points); .json.gz in older
                    recordings
  own_chunks.csv.xz (where the packed results had traces) study, the point keys, run (the trace's
                    name), iteration, op, b0, b1, x0, x1, col0, col1, ns: every chunk of every kept
                    iteration of every traced run, its duration in nanoseconds: what each run is
                    replayed with alone (stepreplay.replay_own_frames), the schedule model's check
  validation.json's studies[].distributed (studies with gpt2-mpi points): executor, num_parameters,
                    comm_message_bytes, scaling, update
  thief.csv         study, variant, compiler, kernels, threads, mode, duty, repetition, stolen_GBs,
                    step_s (median over the kept iterations of the traced step's span), beside
                    probes/thief (mode none, duty 0: the paired runs without it)
  thread_peaks.csv  (since 2026-11-27, where the sweep had `[analysis] peak_beside`) study, the point
                    keys, repetition, when, thread, gflops: each thread's peak FLOP/s measured right
                    before the run (when "before") and, since commit 14e033d, right after it ("after"),
                    with the run's threads and placement (the results' thread_peaks.csv); a
                    recording without the column has the probes before only
"""

import gzip
import json
import lzma
import math
from pathlib import Path

from pstudy.errors import StudyError
from pstudy.store import resultsdir, taskgraph, vocabulary

SCHEMA = "pstudy-validation/1"
META, MACHINE, CEILINGS = "validation.json", "machine.toml", "ceilings.json"
# the two tables with a row per chunk are gzipped (a committed recording stays small);
# a recording made before has them plain, and table() finds either
POINTS, CHUNKS, THIEF, GRAPHS = "points.csv", "chunks.csv.gz", "thief.csv", "graphs"
RUNTIME = "runtime.csv"  # since 2026-11-26: recordings made before have none
NOISE = "noise.csv.gz"  # likewise
THREAD_PEAKS = "thread_peaks.csv"  # only where the sweep probed its runs
OWN_CHUNKS = "own_chunks.csv.xz"  # only where the packed results had traces of every point
CONFIG_COLUMNS = ["study", "variant", "compiler", "kernels", *vocabulary.CHUNK_KEYS]
POINT_COLUMNS = ["study", *vocabulary.POINT_KEYS, "measured_step_s", "steps"]
CHUNK_COLUMNS = CONFIG_COLUMNS + ["op", "b0", "b1", "x0", "x1", "col0", "col1", "seconds"]
# per configuration: the scale of its chunk medians to its median iteration's busy time, and its
# runtime cost per task (NA where its traces had too few iterations): chunktimes.trace_stats
RUNTIME_COLUMNS = CONFIG_COLUMNS + ["busy_scale", "seconds_per_task"]
# per static configuration (seq, forkjoin) and operation: each measured 1-thread chunk time's
# relative deviation from its chunk's mean (chunktimes.trace_stats, barrier_jitter)
NOISE_COLUMNS = CONFIG_COLUMNS + ["label", "deviation"]
THREAD_PEAK_COLUMNS = ["study", *vocabulary.POINT_KEYS, "repetition", "when", "thread", "gflops"]
PROBE_TIMES = tuple(when for when, _ in resultsdir.PROBES)  # thread_peaks.csv's `when`, as the results have it
OWN_CHUNK_COLUMNS = ["study", *vocabulary.POINT_KEYS, "run", "iteration", "op", "b0", "b1", "x0", "x1", "col0", "col1",
                     "ns"]
THIEF_COLUMNS = ["study", "variant", "compiler", "kernels", "threads", "mode", "duty", "repetition", "stolen_GBs",
                 "step_s"]


def graph_file(directory, study, point, batch=None):
    """The graph's path as written now (.json.xz), or as an older recording has it (.json.gz) where
    only that exists."""
    stem = Path(directory) / GRAPHS / (f"{study}__{resultsdir.point_stem(point)}"
                                       + ("" if batch is None else f"_B{batch}"))
    path = stem.with_name(stem.name + ".json.xz")
    older = stem.with_name(stem.name + ".json.gz")
    return older if not path.exists() and older.exists() else path


def write_graph(directory, study, point, source_path, batch=None):
    """Copies a --describe-graph file into the recording, compressed."""
    path = graph_file(directory, study, point, batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    resultsdir.atomic_write(path, resultsdir.compressed(path, Path(source_path).read_bytes()))
    return path


def read_graph(directory, study, point, batch=None):
    """The taskgraph.Graph recorded for `point` of `study`; StudyError when it is not there."""
    path = graph_file(directory, study, point, batch)
    opener = lzma.open if path.name.endswith(".xz") else gzip.open
    try:
        with opener(path, "rt") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise StudyError(f"{path}: missing (the recording lacks this point's task graph)") from None
    except (OSError, EOFError, lzma.LZMAError, json.JSONDecodeError, UnicodeDecodeError) as err:
        raise StudyError(f"{path}: unreadable: {err}") from None
    return taskgraph.parse(doc, str(path))


def table(directory, name):
    """The path of table `name` in a recording: gzipped as written now, or plain as an older
    recording has it (the name without .gz), whichever exists; the current name where neither does."""
    path = Path(directory) / name
    if not path.exists() and name.endswith(".gz") and (plain := path.with_suffix("")).exists():
        return plain
    return path


def write(directory, meta, points, chunks, thief, runtime, noise, thread_peaks=None, own_chunks=None):
    """Writes validation.json and the five tables (pandas frames with the columns above), and
    thread_peaks.csv and own_chunks.csv.xz where they have rows."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    resultsdir.write_json(directory / META, {"schema": SCHEMA, **meta})
    resultsdir.write_csv(directory / POINTS, points[POINT_COLUMNS])
    resultsdir.write_csv(directory / CHUNKS, chunks[CHUNK_COLUMNS])
    resultsdir.write_csv(directory / THIEF, thief[THIEF_COLUMNS])
    resultsdir.write_csv(directory / RUNTIME, runtime[RUNTIME_COLUMNS])
    resultsdir.write_csv(directory / NOISE, noise[NOISE_COLUMNS])
    if thread_peaks is not None and len(thread_peaks):
        resultsdir.write_csv(directory / THREAD_PEAKS, thread_peaks[THREAD_PEAK_COLUMNS])
    if own_chunks is not None and len(own_chunks):
        resultsdir.write_csv(directory / OWN_CHUNKS, own_chunks[OWN_CHUNK_COLUMNS])


def _none(v):
    if v is None or (isinstance(v, float) and math.isnan(v)) or str(v) == "<NA>":
        return None
    return v if isinstance(v, str) else int(v)  # a name (starpu_sched) or a count


def _config_key(row):
    """The config key (chunktimes.config_key) of a table row with the chunk columns."""
    return vocabulary.Point(row.variant, row.compiler, row.kernels,
                            **{c: _none(getattr(row, c)) for c in vocabulary.CHUNK_KEYS})


def _checked_numbers(frame, column, path, wrong, what):
    """frame[column] as floats; StudyError at the first row that is not finite or is `wrong`
    (a predicate on the numbers), naming the file, its row (as an editor numbers lines) and `what`
    the value should be."""
    import numpy as np
    import pandas as pd

    values = pd.to_numeric(frame[column], errors="coerce")
    bad = ~np.isfinite(values) | wrong(values)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise StudyError(f"{path}: row {i + 2}, column {column}: {frame[column].iloc[i]} is not {what}")
    return values.astype(float)


class Recording:
    """A recording as read back: meta, the tables, and accessors keyed as the prediction keys them (config keys, points)."""

    def __init__(self, directory):
        self.directory = Path(directory)
        path = self.directory / META
        try:
            self.meta = json.loads(path.read_text())
        except FileNotFoundError:
            raise StudyError(f"{path}: missing (not a validation recording; perfstudy validate record "
                             "writes one)") from None
        except (OSError, json.JSONDecodeError) as err:
            raise StudyError(f"{path}: unreadable: {err}") from None
        if not isinstance(self.meta, dict) or self.meta.get("schema") != SCHEMA:
            raise StudyError(f"{path}: schema: expected {SCHEMA!r}")
        self.points = resultsdir.read_csv(self.directory / POINTS, POINT_COLUMNS, "validation points")
        resultsdir.check_point_keys(self.points, self.directory / POINTS, unique=["study"])
        self.chunks = resultsdir.read_csv(table(self.directory, CHUNKS), CHUNK_COLUMNS, "validation chunk times")
        self.thief = resultsdir.read_csv(self.directory / THIEF, THIEF_COLUMNS, "validation thief runs")
        self.runtime = (resultsdir.read_csv(self.directory / RUNTIME, RUNTIME_COLUMNS, "validation runtime costs")
                        if (self.directory / RUNTIME).exists() else None)
        noise = table(self.directory, NOISE)
        self.noise_table = (resultsdir.read_csv(noise, NOISE_COLUMNS, "validation chunk noise")
                            if noise.exists() else None)
        if self.noise_table is not None:
            self.noise_table["deviation"] = _checked_numbers(
                self.noise_table, "deviation", noise, lambda v: v < -1,
                "a relative deviation (a finite number >= -1)")
        self.peaks = (resultsdir.read_csv(self.directory / THREAD_PEAKS,
                                          [c for c in THREAD_PEAK_COLUMNS if c != "when"], "validation thread peaks")
                      if (self.directory / THREAD_PEAKS).exists() else None)
        if self.peaks is not None:
            if "when" not in self.peaks.columns:  # recorded before the probe after each run
                self.peaks.insert(THREAD_PEAK_COLUMNS.index("when"), "when", "before")
            bad = [i for i, w in enumerate(self.peaks["when"]) if w not in PROBE_TIMES]
            if bad:
                raise StudyError(f"{self.directory / THREAD_PEAKS}: row {bad[0] + 2}, column when: "
                                 f"{self.peaks['when'].iloc[bad[0]]} is not {' or '.join(PROBE_TIMES)}")
            self.peaks["gflops"] = _checked_numbers(self.peaks, "gflops", self.directory / THREAD_PEAKS,
                                                    lambda v: v <= 0, "a positive finite GFLOP/s")
        if self.runtime is not None:
            _checked_numbers(self.runtime, "busy_scale", self.directory / RUNTIME, lambda v: v <= 0,
                             "a positive finite ratio")
        tables = [(self.points, POINTS, ("measured_step_s",)), (self.chunks, CHUNKS, ("seconds",)),
                  (self.thief, THIEF, ("step_s", "stolen_GBs", "duty"))]
        for frame, name, cols in tables:
            for col in cols:
                frame[col] = resultsdir.checked_times(frame[col], table(self.directory, name), col,
                                                      positive=col in ("measured_step_s", "step_s"))

    @property
    def name(self):
        return self.directory.name

    def studies(self):
        return sorted(set(self.points["study"]))

    def medians(self, study):
        """{config key: {chunk key: seconds}} of one study (chunktimes.TraceStats.medians' shape: scaled by
        runtime.csv's busy_scale where the recording has one)."""
        out = {}
        rows = self.chunks[self.chunks["study"] == study]
        for r in rows.itertuples(index=False):
            ck = _config_key(r)
            out.setdefault(ck, {})[taskgraph.chunk_key(r.op, r.b0, r.b1, r.x0, r.x1, r.col0, r.col1)] = float(r.seconds)
        scales = self._scales(study)
        return {ck: {c: d * scales.get(ck, 1.0) for c, d in per.items()} for ck, per in out.items()}

    def _config_rows(self, study):
        rows = self.runtime[self.runtime["study"] == study] if self.runtime is not None else []
        for r in (rows.itertuples(index=False) if len(rows) else []):
            yield _config_key(r), r

    def _scales(self, study):
        return {ck: float(r.busy_scale) for ck, r in self._config_rows(study)}

    def runtime_costs(self, study):
        """{config key: seconds per task} of one study (chunktimes.TraceStats.costs' shape); empty
        for a recording made before they were kept."""
        return {ck: float(r.seconds_per_task) for ck, r in self._config_rows(study)
                if not (isinstance(r.seconds_per_task, float) and math.isnan(r.seconds_per_task))}

    def noise(self, study):
        """{config key: {operation label: sorted deviations}} of one study (chunktimes.trace_stats'
        noise); empty for a recording made before they were kept."""
        if self.noise_table is None:
            return {}
        out = {}
        rows = self.noise_table[self.noise_table["study"] == study]
        for r in rows.itertuples(index=False):
            ck = _config_key(r)
            out.setdefault(ck, {}).setdefault(str(r.label), []).append(float(r.deviation))
        return {ck: {label: sorted(v) for label, v in per.items()} for ck, per in out.items()}

    def measured(self, study):
        """{point key: measured step_s} of one study (chunktimes.measured_points' shape; gpt2-mpi's
        points with their ranks)."""
        out = {}
        for r in self.points[self.points["study"] == study].itertuples(index=False):
            key = vocabulary.Point(**{c: _none(getattr(r, c)) for c in vocabulary.POINT_KEYS})
            out[key] = float(r.measured_step_s)
        return out

    def thread_peaks(self, study):
        """thread_peaks.csv's rows of one study (resultsdir.thread_peaks' columns and study; empty where
        the sweep did not probe its runs)."""
        if self.peaks is None:
            return resultsdir.thread_peaks_frame([])
        return self.peaks[self.peaks["study"] == study]

    def own_chunks(self, study):
        """{point key: [(run, frame of iteration, op, b0, b1, x0, x1, col0, col1 and d, seconds)]}: every
        traced run's kept chunks (stepreplay.replay_own_frames' input), read from own_chunks.csv.xz;
        None where the recording has no such table."""
        path = self.directory / OWN_CHUNKS
        if not path.exists():
            return None
        if not hasattr(self, "_own"):
            frame = resultsdir.read_csv(path, OWN_CHUNK_COLUMNS, "validation own chunk times")
            frame["d"] = _checked_numbers(frame, "ns", path, lambda v: v < 0, "a duration (a count of ns >= 0)") * 1e-9
            self._own = frame
        out = {}
        rows = self._own[self._own["study"] == study]
        for keys, runs in rows.groupby(list(vocabulary.POINT_KEYS), dropna=False, sort=False):
            point = vocabulary.Point(**{c: _none(v) for c, v in zip(vocabulary.POINT_KEYS, keys)})
            out[point] = [(str(run), frame.drop(columns=["run"]).reset_index(drop=True))
                          for run, frame in runs.groupby("run", sort=True)]
        return out

    def results_of(self, study):
        """The results directory a study was packed from, where the recording keeps it (results/<its
        name>, with their traces), or where validation.json names it and
        it still exists; None otherwise (the 2-vCPU recordings keep the packed tables only)."""
        named = self.study_meta(study).get("results")
        if not named:
            return None
        kept = self.directory / "results" / Path(named).name
        if kept.is_dir():
            return kept
        return Path(named) if Path(named).is_absolute() and Path(named).is_dir() else None

    def study_meta(self, study):
        for entry in self.meta.get("studies", []):
            if entry.get("name") == study:
                return entry
        return {}
