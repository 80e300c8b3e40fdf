"""The trace formats, owned here: the binaries' per-chunk CSV (read), Paraver and Perfetto (written
and checked).

Per-chunk CSV (core/trace.c, `--trace FILE`): one row per chunk, in the order the chunks finished
claiming a slot (not sorted), columns
    iteration,op,kernel,layer,phase,label,b0,b1,x0,x1,thread,start_s,end_s
times in seconds from the trace's origin (set when training starts), thread = the executor's
thread number (0-based); then col0,col1 (a tile's columns; absent in traces from before tiles) and
cpu_s (the thread's CPU seconds in the chunk, CLOCK_THREAD_CPUTIME_ID; NA where not measured;
absent in traces from before it): read_chunks checks it where it is there, and a reader that needs
it asks with cpu_times().

Paraver (BSC; the format paraver-kernel's trace header and body parsers read, and Extrae and ovni
write), three files with one stem:
  .prv  header  #Paraver (dd/mm/yyyy at hh:mm):<duration>_ns:<nodes>(<cpus>):<nappl>:<ntasks>(<nthreads>:<node>)
        then records, in time order, times in ns from the run's start:
          1:cpu:appl:task:thread:begin:end:state            (a state interval)
          2:cpu:appl:task:thread:time:type:value[:type:value...]   (events)
        application, task and thread ids are 1-based. Here: one node, one CPU per worker thread,
        one application with one task, one Paraver thread per worker thread; cpu = thread.
        Every thread's timeline is covered by states: Running (1) inside a kernel, Idle (0)
        otherwise. At a chunk's start, one event record sets the five types below; at its end,
        one sets them all to 0 ("none", Paraver's convention for the end of a value).
  .pcf  the states with their labels (STATES) and colours (STATES_COLOR), every event type and
        every value it takes with its label (EVENT_TYPE / VALUES), and a colour gradient
  .row  the names of the CPUs, the node and the threads (LEVEL ... SIZE n, then n names)
Event types (values: 0 = none):
  EV_KERNEL   kernel kind, 1-based in the sorted kinds of the trace
  EV_LAYER    layer + 2 (1: not per layer, the encoder, the loss, the update of shared tensors)
  EV_PHASE    1 forward, 2 backward, 3 update
  EV_ITER     iteration + 1
  EV_CHUNK    the chunk: 1-based number of its distinct (op, b0, b1, x0, x1) in the trace,
              labelled "<op label> [b0:b1, x0:x1]"

Perfetto / Chrome JSON trace (ui.perfetto.dev, chrome://tracing): {"traceEvents": [...]}, one
complete event ("ph": "X", "ts" and "dur" in microseconds, "pid", "tid", "name" = kernel kind,
"cat" = phase, "args": op, label, layer, phase, iteration, range) per chunk, and "M" metadata
events naming the process (process_name) and each thread (thread_name). Times are the CSV's,
rounded to whole nanoseconds, so that events of one thread never overlap.

check_paraver() and check_perfetto() are strict checkers written from those rules; they return
a list of problems (empty: the files are accepted) and never raise on bad content.
"""

import datetime
import json
import math
import re
import zlib
from pathlib import Path

from pstudy.store import vocabulary
from pstudy.errors import StudyError

CHUNK_COLUMNS = ("iteration", "op", "kernel", "layer", "phase", "label", "b0", "b1", "x0", "x1",
                 "thread", "start_s", "end_s")
INTEGER_COLUMNS = ("iteration", "op", "layer", "b0", "b1", "x0", "x1", "thread")
CPU_COLUMN = "cpu_s"  # optional: the chunk's CPU seconds (core/trace.c)
# A chunk's CPU time is read inside its wall interval, so it can exceed it only by the clocks'
# resolution; more than this is a damaged file, not a measurement.
CPU_OVER_WALL_S = 1e-4
STEP_PHASES = tuple(p for p in vocabulary.PHASES if p != "step")  # forward, backward, update

STATE_IDLE, STATE_RUNNING = 0, 1
STATES = {STATE_IDLE: ("Idle", (0, 0, 0)), STATE_RUNNING: ("Running", (0, 130, 200))}
EV_KERNEL, EV_LAYER, EV_PHASE, EV_ITER, EV_CHUNK = 90000001, 90000002, 90000003, 90000004, 90000005
EVENT_TYPES = {EV_KERNEL: "Kernel kind", EV_LAYER: "Layer", EV_PHASE: "Phase",
               EV_ITER: "Iteration (training step)", EV_CHUNK: "Chunk (operation and range)"}
PARAVER_SUFFIXES = (".prv", ".pcf", ".row")
PERFETTO_SUFFIX = ".json"


# ---------------------------------------------------------------------------------------------
# the per-chunk CSV

def read_chunks(path, columns=CHUNK_COLUMNS):
    """The per-chunk CSV at `path` as a DataFrame sorted by (thread, start_s) when it has a thread
    column; StudyError naming the file and the problem (absent, unreadable, a missing column, no
    records, a non-numeric or negative time, a record that ends before it starts)."""
    import numpy as np
    import pandas as pd

    try:
        chunks = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except FileNotFoundError:
        raise StudyError(f"{path}: not found") from None
    except (OSError, ValueError, EOFError, zlib.error) as err:  # EOFError, zlib.error: a damaged .gz
        raise StudyError(f"{path}: not a trace CSV: {(str(err).splitlines() or [type(err).__name__])[0]}") from None
    missing = [c for c in columns if c not in chunks.columns]
    if missing:
        raise StudyError(f"{path}: missing column(s) {', '.join(missing)} (expected --trace output)")
    if chunks.empty:
        raise StudyError(f"{path}: no records")
    for col in [c for c in columns if c in INTEGER_COLUMNS or c in ("start_s", "end_s")]:
        numbers = pd.to_numeric(chunks[col], errors="coerce")
        bad = numbers.isna() | ~np.isfinite(numbers.astype(float))
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise StudyError(f"{path}: row {i + 2}, column {col}: {chunks[col].iloc[i]!r} is not a number")
        chunks[col] = numbers.astype(int) if col in INTEGER_COLUMNS else numbers.astype(float)
    for col in ("start_s", "end_s"):
        if col in chunks.columns and (chunks[col] < 0).any():
            i = int((chunks[col] < 0).to_numpy().nonzero()[0][0])
            raise StudyError(f"{path}: row {i + 2}, column {col}: negative time")
    if "start_s" in chunks.columns and "end_s" in chunks.columns:
        bad = chunks["end_s"] < chunks["start_s"]
        if bad.any():
            raise StudyError(f"{path}: row {int(bad.to_numpy().nonzero()[0][0]) + 2}: a record ends before it starts")
    if CPU_COLUMN in chunks.columns:
        chunks[CPU_COLUMN] = _checked_cpu(chunks, path)
    if "thread" in chunks.columns:
        if (chunks["thread"] < 0).any():
            raise StudyError(f"{path}: column thread: negative thread number")
        chunks = chunks.sort_values(["thread", "start_s", "end_s"], kind="stable").reset_index(drop=True)
    if "phase" in chunks.columns:
        unknown = sorted(set(chunks["phase"].astype(str)) - set(STEP_PHASES))
        if unknown:
            raise StudyError(f"{path}: column phase: unknown phase {unknown[0]!r} (known: {', '.join(STEP_PHASES)})")
    return chunks


def _checked_cpu(chunks, path):
    """The cpu_s column as floats, NA ("NA" or empty) kept as NaN; StudyError naming the file, row and
    column at the first value that is not a finite number >= 0, or that exceeds its chunk's wall time
    by more than CPU_OVER_WALL_S."""
    import numpy as np
    import pandas as pd

    raw = chunks[CPU_COLUMN]
    missing = raw.isna() | raw.astype(str).str.strip().isin(["NA", ""])
    numbers = pd.to_numeric(raw.where(~missing), errors="coerce").astype(float)
    bad = (~missing & (numbers.isna() | ~np.isfinite(numbers) | (numbers < 0))).to_numpy()
    if bad.any():
        i = int(bad.nonzero()[0][0])
        raise StudyError(f"{path}: row {i + 2}, column {CPU_COLUMN}: {raw.iloc[i]!r} is not a CPU time "
                         "(a finite number of seconds >= 0, or NA)")
    if all(c in chunks.columns and pd.api.types.is_numeric_dtype(chunks[c]) for c in ("start_s", "end_s")):
        over = (numbers > chunks["end_s"] - chunks["start_s"] + CPU_OVER_WALL_S).to_numpy()
        if over.any():
            i = int(over.nonzero()[0][0])
            raise StudyError(f"{path}: row {i + 2}, column {CPU_COLUMN}: {numbers.iloc[i]:.9g} s of CPU time in a "
                             f"chunk of {chunks['end_s'].iloc[i] - chunks['start_s'].iloc[i]:.9g} s of wall time")
    return numbers


def cpu_times(chunks, path):
    """The chunks' CPU seconds (a float Series), or StudyError naming the file where the trace has
    none: recorded before cpu_s existed, or a record without one (NA)."""
    if CPU_COLUMN not in chunks.columns:
        raise StudyError(f"{path}: no {CPU_COLUMN} column (a trace recorded before CPU times); "
                         "predict it without --dedicated, or trace the runs again")
    if chunks[CPU_COLUMN].isna().any():
        i = int(chunks[CPU_COLUMN].isna().to_numpy().nonzero()[0][0])
        raise StudyError(f"{path}: record {i + 1} (sorted by thread and start) has no {CPU_COLUMN}")
    return chunks[CPU_COLUMN]


def merged_intervals(intervals):
    """Sorted, merged [(a, b)] of the given [a, b] intervals (a chunk's start and end)."""
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def busy_time(chunks, keys):
    """Per group of `keys`, the length of the union of its chunks' [start_s, end_s] intervals
    (merged_intervals' total, for every group at once: a report times thousands of operations in
    each of its traces, and a Python merge per group made the roofline tests 10% slower): the wall
    time during which at least one of them ran."""
    c = chunks.sort_values(keys + ["start_s"], kind="stable")
    # the furthest end of the group's earlier chunks: a chunk starting after it opens a new stretch
    reach = c.groupby(keys, sort=False)["end_s"].cummax()
    before = reach.groupby([c[k] for k in keys], sort=False).shift()
    stretch = (before.isna() | (c["start_s"] > before)).cumsum()
    g = c.assign(stretch=stretch, reach=reach).groupby(keys + ["stretch"])
    lengths = (g["reach"].max() - g["start_s"].min()).rename("busy_s")
    return lengths.groupby(level=list(range(len(keys)))).sum()


def nanoseconds(seconds):
    return int(round(float(seconds) * 1e9))


# ---------------------------------------------------------------------------------------------
# Paraver

def paraver_values(chunks):
    """{event type: {value: label}} for the chunks (value 0, "none", included)."""
    kinds = sorted(set(chunks["kernel"].astype(str)))
    values = {EV_KERNEL: {0: "none", **{i + 1: k for i, k in enumerate(kinds)}},
              EV_LAYER: {0: "none", 1: "not per layer"},
              EV_PHASE: {0: "none", **{i + 1: p for i, p in enumerate(STEP_PHASES)}},
              EV_ITER: {0: "none"},
              EV_CHUNK: {0: "none"}}
    for layer in sorted(set(chunks["layer"])):
        if layer >= 0:
            values[EV_LAYER][layer + 2] = f"layer {layer}"
    for it in sorted(set(chunks["iteration"])):
        values[EV_ITER][it + 1] = f"iteration {it}"
    return values


def _chunk_ids(chunks):
    """A 1-based id per distinct (op, b0, b1, x0, x1), in sorted order, and its label."""
    keys = sorted(set(zip(chunks["op"], chunks["b0"], chunks["b1"], chunks["x0"], chunks["x1"])))
    labels = dict(zip(chunks["op"], chunks["label"].astype(str)))
    ids = {key: i + 1 for i, key in enumerate(keys)}
    names = {i + 1: f"{labels[key[0]]} [{key[1]}:{key[2]}, {key[3]}:{key[4]}]" for i, key in enumerate(keys)}
    return ids, names


def write_paraver(chunks, threads, stem, title="", node="node", when=None):
    """Writes stem.prv, stem.pcf and stem.row for the chunks of one run (`threads` worker threads;
    the trace may not name all of them). Returns the three paths."""
    stem = Path(stem)
    when = when or datetime.datetime.now()
    threads = max(int(threads), int(chunks["thread"].max()) + 1)
    values = paraver_values(chunks)
    chunk_ids, chunk_names = _chunk_ids(chunks)
    values[EV_CHUNK].update(chunk_names)
    kind_value = {name: v for v, name in values[EV_KERNEL].items() if v}
    phase_value = {name: v for v, name in values[EV_PHASE].items() if v}
    ends = [nanoseconds(e) for e in chunks["end_s"]]
    duration = max(ends) if ends else 0
    records = []  # (time, order, text): order puts ends before starts at one instant, states first
    for t in range(threads):
        mine = chunks[chunks["thread"] == t]
        cursor = 0
        for r in mine.itertuples(index=False):
            b, e = nanoseconds(r.start_s), nanoseconds(r.end_s)
            b = max(b, cursor)  # rounding to ns never makes two chunks of a thread overlap
            e = max(e, b)
            ids = f"{t + 1}:1:1:{t + 1}"
            if b > cursor:
                records.append((cursor, 0, t, f"1:{ids}:{cursor}:{b}:{STATE_IDLE}"))
            records.append((b, 0, t, f"1:{ids}:{b}:{e}:{STATE_RUNNING}"))
            chunk = chunk_ids[(r.op, r.b0, r.b1, r.x0, r.x1)]
            records.append((b, 2, t, f"2:{ids}:{b}:{EV_KERNEL}:{kind_value[str(r.kernel)]}:{EV_LAYER}:"
                                     f"{r.layer + 2 if r.layer >= 0 else 1}:{EV_PHASE}:{phase_value[str(r.phase)]}:"
                                     f"{EV_ITER}:{r.iteration + 1}:{EV_CHUNK}:{chunk}"))
            records.append((e, 1, t, f"2:{ids}:{e}:{EV_KERNEL}:0:{EV_LAYER}:0:{EV_PHASE}:0:{EV_ITER}:0:{EV_CHUNK}:0"))
            cursor = e
        if cursor < duration:
            records.append((cursor, 0, t, f"1:{t + 1}:1:1:{t + 1}:{cursor}:{duration}:{STATE_IDLE}"))
    records.sort(key=lambda rec: rec[:3])
    header = (f"#Paraver ({when:%d/%m/%Y} at {when:%H:%M}):{duration}_ns:1({threads}):1:1({threads}:1)")
    prv, pcf, row = (stem.with_name(stem.name + s) for s in PARAVER_SUFFIXES)
    from pstudy.store.resultsdir import atomic_write
    atomic_write(prv, header + "\n" + "".join(rec[3] + "\n" for rec in records))
    atomic_write(pcf, paraver_pcf(values, title))
    atomic_write(row, paraver_row(threads, node, title))
    return prv, pcf, row


def _gradient_colour(i, n):
    """A distinct colour per value (a hue wheel), as Paraver's palettes give event values."""
    import colorsys
    r, g, b = colorsys.hsv_to_rgb((i * 0.61803) % 1.0, 0.65, 0.95)
    return int(r * 255), int(g * 255), int(b * 255)


def paraver_pcf(values, title=""):
    lines = ["DEFAULT_OPTIONS", "", "LEVEL               THREAD", "UNITS               NANOSEC",
             "LOOK_BACK           100", "SPEED               1", "FLAG_ICONS          ENABLED",
             "NUM_OF_STATE_COLORS 1000", "YMAX_SCALE          37", "", "",
             "DEFAULT_SEMANTIC", "", "THREAD_FUNC          State As Is", "", "",
             "STATES"]
    lines += [f"{v:<5d}{label}" for v, (label, _) in sorted(STATES.items())]
    lines += ["", "", "STATES_COLOR"]
    lines += [f"{v:<5d}{{{c[0]},{c[1]},{c[2]}}}" for v, (_, c) in sorted(STATES.items())]
    n_colours = max(len(v) for v in values.values())
    lines += ["", "", "GRADIENT_COLOR"]
    lines += [f"{i:<5d}{{{c[0]},{c[1]},{c[2]}}}" for i, c in
              ((i, _gradient_colour(i, n_colours)) for i in range(min(n_colours, 16)))]
    lines += ["", "", "GRADIENT_NAMES"]
    lines += [f"{i:<5d}Gradient {i}" for i in range(min(n_colours, 16))]
    for etype, name in EVENT_TYPES.items():
        lines += ["", "", "EVENT_TYPE", f"0    {etype}    {name}", "VALUES"]
        lines += [f"{v:<8d}{label}" for v, label in sorted(values[etype].items())]
    if title:
        lines += ["", "", f"# {title}"]
    return "\n".join(lines) + "\n"


def paraver_row(threads, node, title=""):
    lines = [f"LEVEL CPU SIZE {threads}"] + [f"{node}.{t + 1}" for t in range(threads)]
    lines += ["", "LEVEL NODE SIZE 1", node, "", f"LEVEL THREAD SIZE {threads}"]
    lines += [f"THREAD 1.1.{t + 1} (worker {t})" for t in range(threads)]
    return "\n".join(lines) + "\n"


HEADER = re.compile(r"#Paraver \((?P<date>\d\d/\d\d/\d{4}) at (?P<time>\d\d:\d\d)\):(?P<dur>\d+)(?:_ns)?:"
                    r"(?P<resources>\d+\((?:\d+)(?:,\d+)*\)|0):(?P<appl>\d+):(?P<apps>.+)")
APPL = re.compile(r"(?P<ntasks>\d+)\((?P<threads>\d+:\d+(?:,\d+:\d+)*)\)")


def _parse_pcf(text):
    """(states {value: label}, colours {value: rgb}, events {type: {value: label}}), or a problem."""
    states, colours, events = {}, {}, {}
    lines = text.splitlines()
    i, section = 0, None
    current_types = []
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line:
            continue
        if line in ("DEFAULT_OPTIONS", "DEFAULT_SEMANTIC", "STATES", "STATES_COLOR", "GRADIENT_COLOR",
                    "GRADIENT_NAMES"):
            section = line
            continue
        if line == "EVENT_TYPE":
            section, current_types = "EVENT_TYPE", []
            continue
        if line == "VALUES":
            if section != "EVENT_TYPE" or not current_types:
                return f"line {i}: VALUES without an EVENT_TYPE before it"
            section = "VALUES"
            continue
        if line.startswith("#"):
            continue
        if section == "STATES":
            m = re.fullmatch(r"(\d+)\s+(\S.*)", line)
            if not m:
                return f"line {i}: expected 'value label' in STATES, got {line!r}"
            states[int(m.group(1))] = m.group(2)
        elif section == "STATES_COLOR":
            m = re.fullmatch(r"(\d+)\s+\{\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\}", line)
            if not m or any(int(c) > 255 for c in m.groups()[1:]):
                return f"line {i}: expected 'value {{r,g,b}}' in STATES_COLOR, got {line!r}"
            colours[int(m.group(1))] = tuple(int(c) for c in m.groups()[1:])
        elif section == "EVENT_TYPE":
            m = re.fullmatch(r"(\d+)\s+(\d+)\s+(\S.*)", line)
            if not m:
                return f"line {i}: expected 'gradient type label' in EVENT_TYPE, got {line!r}"
            current_types.append(int(m.group(2)))
            events.setdefault(int(m.group(2)), {})
        elif section == "VALUES":
            m = re.fullmatch(r"(-?\d+)\s+(\S.*)", line)
            if not m:
                return f"line {i}: expected 'value label' in VALUES, got {line!r}"
            for etype in current_types:
                events[etype][int(m.group(1))] = m.group(2)
        elif section in ("DEFAULT_OPTIONS", "DEFAULT_SEMANTIC", "GRADIENT_COLOR", "GRADIENT_NAMES"):
            continue
        else:
            return f"line {i}: {line!r} outside any section"
    if not states:
        return "no STATES section"
    return states, colours, events


def _parse_row(text):
    """{level: [names]}, or a problem."""
    levels, lines, i = {}, text.splitlines(), 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line:
            continue
        m = re.fullmatch(r"LEVEL (\w+) SIZE (\d+)", line)
        if not m:
            return f"line {i}: expected 'LEVEL <name> SIZE <n>', got {line!r}"
        n = int(m.group(2))
        names = [name.strip() for name in lines[i:i + n]]
        if len(names) < n or any(not name for name in names):
            return f"line {i}: LEVEL {m.group(1)} declares {n} names, found fewer"
        levels[m.group(1)] = names
        i += n
    return levels


def check_paraver(stem):
    """Problems with the Paraver trace stem.prv/.pcf/.row (a list of strings; empty: accepted)."""
    stem = Path(stem)
    prv, pcf, row = (stem.with_name(stem.name + s) for s in PARAVER_SUFFIXES)
    problems = []
    texts = {}
    for path in (prv, pcf, row):
        try:
            texts[path] = path.read_text()
        except (OSError, UnicodeDecodeError) as err:
            problems.append(f"{path}: unreadable: {err}")
    if problems:
        return problems
    parsed = _parse_pcf(texts[pcf])
    if isinstance(parsed, str):
        return [f"{pcf}: {parsed}"]
    states, colours, events = parsed
    for v in states:
        if v not in colours:
            problems.append(f"{pcf}: state {v} ({states[v]}) has no colour in STATES_COLOR")
    for etype, vals in events.items():
        if not vals:
            problems.append(f"{pcf}: event type {etype} declares no VALUES")
    lines = texts[prv].splitlines()
    if not lines:
        return problems + [f"{prv}: empty"]
    m = HEADER.fullmatch(lines[0])
    if not m:
        return problems + [f"{prv}:1: header does not read "
                           "#Paraver (dd/mm/yyyy at hh:mm):<duration>_ns:<nodes>(<cpus>):<nappl>:<ntasks>(<nthreads>:<node>)"]
    try:
        datetime.datetime.strptime(f"{m['date']} {m['time']}", "%d/%m/%Y %H:%M")
    except ValueError:
        problems.append(f"{prv}:1: date {m['date']} at {m['time']} is not a real date and time")
    duration = int(m["dur"])
    cpus_per_node = [int(c) for c in re.findall(r"\d+", m["resources"])[1:]]
    n_nodes = int(re.match(r"\d+", m["resources"]).group())
    if n_nodes != len(cpus_per_node):
        problems.append(f"{prv}:1: {n_nodes} nodes declared but {len(cpus_per_node)} CPU counts given")
    n_cpus = sum(cpus_per_node)
    n_appl = int(m["appl"])
    app_specs = re.findall(r"\d+\([^)]*\)", m["apps"])
    if n_appl < 1 or len(app_specs) != n_appl or ":".join(app_specs) != m["apps"]:
        return problems + [f"{prv}:1: {n_appl} applications declared, their list {m['apps']!r} does not match"]
    threads_of = {}  # (appl, task) -> threads
    for a, spec in enumerate(app_specs, 1):
        am = APPL.fullmatch(spec)
        if not am:
            return problems + [f"{prv}:1: application {a}: expected <ntasks>(<nthreads>:<node>,...), got {spec!r}"]
        pairs = [p.split(":") for p in am["threads"].split(",")]
        if len(pairs) != int(am["ntasks"]):
            problems.append(f"{prv}:1: application {a} declares {am['ntasks']} tasks but lists {len(pairs)}")
        for t, (nthreads, node) in enumerate(pairs, 1):
            threads_of[(a, t)] = int(nthreads)
            if not 1 <= int(node) <= max(n_nodes, 1):
                problems.append(f"{prv}:1: application {a} task {t} runs on node {node}, not in 1..{n_nodes}")
    last_time = -1
    for lineno, line in enumerate(lines[1:], 2):
        if problems and len(problems) > 20:
            break
        if not line or line.startswith("#") or line.startswith("c:"):
            continue
        fields = line.split(":")
        if not all(re.fullmatch(r"-?\d+", f) for f in fields):
            problems.append(f"{prv}:{lineno}: non-integer field in {line!r}")
            continue
        f = [int(x) for x in fields]
        kind = f[0]
        if kind == 1:
            if len(f) != 8:
                problems.append(f"{prv}:{lineno}: a state record has 8 fields, this one {len(f)}")
                continue
            _, cpu, appl, task, thread, begin, end, state = f
            time = begin
            if not 0 <= begin <= end <= duration:
                problems.append(f"{prv}:{lineno}: state interval [{begin}, {end}] not within [0, {duration}]")
            if state not in states:
                problems.append(f"{prv}:{lineno}: state {state} not declared in {pcf.name}")
        elif kind == 2:
            if len(f) < 8 or len(f) % 2:
                problems.append(f"{prv}:{lineno}: an event record has 6 + 2k fields (k >= 1), this one {len(f)}")
                continue
            _, cpu, appl, task, thread, time = f[:6]
            if not 0 <= time <= duration:
                problems.append(f"{prv}:{lineno}: time {time} not within [0, {duration}]")
            for etype, value in zip(f[6::2], f[7::2]):
                if etype not in events:
                    problems.append(f"{prv}:{lineno}: event type {etype} not declared in {pcf.name}")
                elif value not in events[etype]:
                    problems.append(f"{prv}:{lineno}: value {value} of event type {etype} not declared in {pcf.name}")
        elif kind == 3:
            problems.append(f"{prv}:{lineno}: communication records are not expected in these traces")
            continue
        else:
            problems.append(f"{prv}:{lineno}: unknown record type {kind}")
            continue
        if not 0 <= cpu <= n_cpus:
            problems.append(f"{prv}:{lineno}: cpu {cpu} not in 0..{n_cpus}")
        if (appl, task) not in threads_of:
            problems.append(f"{prv}:{lineno}: application {appl} task {task} not declared in the header")
        elif not 1 <= thread <= threads_of[(appl, task)]:
            problems.append(f"{prv}:{lineno}: thread {thread} not in 1..{threads_of[(appl, task)]}")
        if time < last_time:
            problems.append(f"{prv}:{lineno}: time {time} before the previous record's {last_time}: records out of order")
        last_time = max(last_time, time)
    levels = _parse_row(texts[row])
    if isinstance(levels, str):
        problems.append(f"{row}: {levels}")
    else:
        total_threads = sum(threads_of.values())
        if "THREAD" not in levels:
            problems.append(f"{row}: no LEVEL THREAD")
        elif len(levels["THREAD"]) != total_threads:
            problems.append(f"{row}: LEVEL THREAD names {len(levels['THREAD'])} threads, the header {total_threads}")
        if "CPU" in levels and len(levels["CPU"]) != n_cpus:
            problems.append(f"{row}: LEVEL CPU names {len(levels['CPU'])} CPUs, the header {n_cpus}")
        if "NODE" in levels and len(levels["NODE"]) != n_nodes:
            problems.append(f"{row}: LEVEL NODE names {len(levels['NODE'])} nodes, the header {n_nodes}")
    return problems


# ---------------------------------------------------------------------------------------------
# Perfetto / Chrome JSON

def write_perfetto(chunks, threads, path, title=""):
    """Writes the chunks of one run as a Chrome JSON trace at `path`; returns the path."""
    threads = max(int(threads), int(chunks["thread"].max()) + 1)
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": title or "run"}}]
    events += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": t + 1, "args": {"name": f"worker {t}"}}
               for t in range(threads)]
    for t in range(threads):
        cursor = 0
        for r in chunks[chunks["thread"] == t].itertuples(index=False):
            b = max(nanoseconds(r.start_s), cursor)
            e = max(nanoseconds(r.end_s), b)
            cursor = e
            events.append({"ph": "X", "name": str(r.kernel), "cat": str(r.phase), "pid": 1, "tid": t + 1,
                           "ts": b / 1000, "dur": (e - b) / 1000,
                           "args": {"op": int(r.op), "label": str(r.label), "layer": int(r.layer),
                                    "phase": str(r.phase), "iteration": int(r.iteration),
                                    "range": {"b0": int(r.b0), "b1": int(r.b1), "x0": int(r.x0), "x1": int(r.x1)}}})
    from pstudy.store.resultsdir import atomic_write
    atomic_write(path, json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}, separators=(",", ":")) + "\n")
    return Path(path)


CHUNK_ARGS = ("op", "label", "layer", "phase", "iteration", "range")


def check_perfetto(path, max_start_us=10e6):
    """Problems with the Chrome JSON trace at `path` (a list of strings; empty: accepted)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as err:
        return [f"{path}: unreadable: {err}"]
    except ValueError as err:
        return [f"{path}: not JSON: {err}"]
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        return [f"{path}: expected an object with a list \"traceEvents\""]
    problems, spans, named, processes = [], {}, set(), set()
    number = (int, float)
    for i, ev in enumerate(data["traceEvents"]):
        where = f"{path}: traceEvents[{i}]"
        if len(problems) > 20:
            break
        if not isinstance(ev, dict):
            problems.append(f"{where}: not an object")
            continue
        ph = ev.get("ph")
        if not all(isinstance(ev.get(k), int) and not isinstance(ev.get(k), bool) for k in ("pid", "tid")):
            problems.append(f"{where}: pid and tid must be integers")
            continue
        if ph == "M":
            if ev.get("name") not in ("process_name", "thread_name") or not isinstance(ev.get("args"), dict) \
                    or not isinstance(ev["args"].get("name"), str):
                problems.append(f"{where}: a metadata event is process_name or thread_name with args.name")
            elif ev["name"] == "thread_name":
                named.add((ev["pid"], ev["tid"]))
            else:
                processes.add(ev["pid"])
            continue
        if ph != "X":
            problems.append(f"{where}: phase {ph!r}: only complete (X) and metadata (M) events are expected")
            continue
        missing = [k for k in ("name", "cat", "ts", "dur", "args") if k not in ev]
        if missing:
            problems.append(f"{where}: missing {', '.join(missing)}")
            continue
        if not isinstance(ev["name"], str) or not isinstance(ev["cat"], str) or not ev["name"]:
            problems.append(f"{where}: name and cat must be non-empty strings")
        ts, dur = ev["ts"], ev["dur"]
        if not isinstance(ts, number) or not isinstance(dur, number) or isinstance(ts, bool) \
                or not math.isfinite(ts) or not math.isfinite(dur):
            problems.append(f"{where}: ts and dur must be finite numbers")
            continue
        if ts < 0 or dur < 0:
            problems.append(f"{where}: negative {'ts' if ts < 0 else 'dur'}")
            continue
        args = ev["args"]
        if not isinstance(args, dict) or any(k not in args for k in CHUNK_ARGS):
            problems.append(f"{where}: args must hold {', '.join(CHUNK_ARGS)}")
        elif not isinstance(args["range"], dict) or any(not isinstance(args["range"].get(k), int)
                                                         for k in ("b0", "b1", "x0", "x1")):
            problems.append(f"{where}: args.range must hold integers b0, b1, x0, x1")
        spans.setdefault((ev["pid"], ev["tid"]), []).append((ts, dur, i))
    if not spans and not problems:
        problems.append(f"{path}: no complete (X) events")
    starts = [s[0] for evs in spans.values() for s in evs]
    if starts and min(starts) > max_start_us:
        problems.append(f"{path}: the first event starts at {min(starts):.0f} us: timestamps should start near 0")
    for (pid, tid), evs in sorted(spans.items()):
        if (pid, tid) not in named:
            problems.append(f"{path}: thread pid {pid} tid {tid} has no thread_name metadata event")
        if pid not in processes:
            problems.append(f"{path}: process {pid} has no process_name metadata event")
            processes.add(pid)
        evs.sort()
        for (ts0, dur0, i0), (ts1, _dur1, i1) in zip(evs, evs[1:]):
            if ts1 < ts0 + dur0 - 1e-6:
                problems.append(f"{path}: traceEvents[{i1}] starts at {ts1} us, before traceEvents[{i0}] of "
                                f"the same thread (tid {tid}) ends at {ts0 + dur0} us")
                break
    return problems


# ---------------------------------------------------------------------------------------------
# exporting the runs of a results directory

FORMATS = ("paraver", "perfetto")


def export_run(trace_csv, point, repetition, fmt, outdir, node="node"):
    """Exports the per-chunk CSV of one run (its point key and repetition) to `outdir` in `fmt`;
    returns the written paths."""
    from pstudy.store import resultsdir

    chunks = read_chunks(trace_csv)
    stem = resultsdir.run_stem(point, repetition)
    title = f"{vocabulary.point_label(point)} rep {repetition}"
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    target = resultsdir.export_path(outdir, fmt, stem)
    if fmt == "paraver":
        return list(write_paraver(chunks, point.threads, target, title=title, node=node))
    return [write_perfetto(chunks, point.threads, target, title=title)]


def export_checked(traces, chosen, fmt, outdir, node="node"):
    """Exports the runs `chosen` ((point key, repetition) pairs) from `traces` ({(point key,
    repetition): per-chunk CSV}) in `fmt` into `outdir`, checking each file written; returns
    (the paths written, the problems found)."""
    written, problems = [], []
    for key, rep in chosen:
        paths = export_run(traces[(key, rep)], key, rep, fmt, outdir, node=node)
        problems += check(fmt, paths[0])
        written += paths
    return written, problems


def check(fmt, path):
    """The problems of an exported file (Paraver: the stem or any of its three files)."""
    if fmt == "paraver":
        path = Path(path)
        if path.suffix in PARAVER_SUFFIXES:
            path = path.with_suffix("")
        return check_paraver(path)
    return check_perfetto(path)
