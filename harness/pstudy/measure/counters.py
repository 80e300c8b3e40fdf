"""Hardware-counter backends: is one usable here, and what did it measure?

Three backends, tried in this order by detect_backend():

likwid  likwid-perfctr wraps the binary (built with -DUSE_LIKWID, so the
        kernels are marker-API regions named after the kernels) and writes a
        CSV file with -o. A memory group must exist for the CPU: MEM on Intel,
        MEM1 + MEM2 on AMD Zen 3, whose 8 DRAM channels are spread over 4
        data-fabric counters, so each group sees half the channels and two
        runs are summed (combine_channel_groups).
papi    the binary built with -DUSE_PAPI prints per-region counts in the
        format of core/counters.h, parsed by parse_papi_regions().
perf    `perf stat -x,` around a whole run: no regions, totals only.

Every *_available() returns (bool, reason) and never raises: a missing
binary, a VM without a PMU or a refused permission are reasons, kept so that
meta.json can say "counters: unavailable: <reasons>". The decisions are made
by pure functions of the tools' output (likwid_status, papi_status,
perf_status) so they can be tested on recorded outputs too.

Parsers raise CountersFormatError, whose message names the source and the
problem, on anything they do not understand; they never guess.
"""

import csv
import io
import math
import os
import re
import shutil

from pstudy import common

PROBE_TIMEOUT_S = 30


class CountersFormatError(ValueError):
    """Counter output that does not have the documented layout."""


def _last_line(text):
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not set(ln.strip()) <= set("-=")]
    return lines[-1] if lines else "(no output)"


def _number(text):
    """float of a counter field; None for LIKWID's '-'/'nan' and perf's <not counted>."""
    text = text.strip()
    if text in ("", "-", "nan", "<not counted>", "<not supported>"):
        return None
    value = float(text)
    return None if math.isnan(value) else value


# ---------------------------------------------------------------- likwid

def likwid_groups(listing):
    """Group names from `likwid-perfctr -a` (a 'Group name' header, then 'NAME<tab>Description')."""
    groups = []
    for line in listing.splitlines():
        parts = line.strip().split(None, 1)
        if not parts or parts[0] in ("Group", "") or set(parts[0]) <= set("-"):
            continue
        if len(parts) == 2 and re.fullmatch(r"[A-Z0-9_]+", parts[0]):
            groups.append(parts[0])
    return groups


def likwid_memory_groups(groups):
    """The groups that together measure all DRAM traffic: ['MEM'] or ['MEM1', 'MEM2'], else []."""
    if "MEM" in groups:
        return ["MEM"]
    if "MEM1" in groups and "MEM2" in groups:
        return ["MEM1", "MEM2"]
    return []


def likwid_status(listing, probe_rc, probe_output):
    """(available, reason) from `likwid-perfctr -a` and a probe `likwid-perfctr -C 0 -g GROUP true`."""
    memory = likwid_memory_groups(likwid_groups(listing))
    if not memory:
        return False, "likwid-perfctr lists no memory group (MEM, or MEM1+MEM2) for this CPU"
    failed = probe_rc != 0 or re.search(r"Cannot get access|ERROR|error", probe_output or "")
    if failed:
        return False, f"likwid-perfctr -g {memory[0]}: {_last_line(probe_output or '')}"
    return True, f"likwid-perfctr: memory groups {'+'.join(memory)}"


def likwid_available(likwid="likwid-perfctr"):
    """(available, reason): binary present, a memory group listed, and a probe measurement works."""
    if shutil.which(likwid) is None:
        return False, f"{likwid} not installed (Debian package: likwid)"
    rc, listing = common.tool_output([likwid, "-a"], PROBE_TIMEOUT_S)
    if rc != 0:
        return False, f"{likwid} -a: {_last_line(listing)}"
    memory = likwid_memory_groups(likwid_groups(listing))
    if not memory:
        return likwid_status(listing, None, "")
    probe_rc, probe_output = common.tool_output([likwid, "-C", "0", "-g", memory[0], "true"], PROBE_TIMEOUT_S)
    return likwid_status(listing, probe_rc, probe_output)


def _cpulist_text(cpulist):
    if isinstance(cpulist, str):
        if not re.fullmatch(r"[0-9,\-]+", cpulist):
            raise ValueError(f"cpulist: expected e.g. '0-3' or '0,2', got {cpulist!r}")
        return cpulist
    cpus = [int(c) for c in cpulist]
    if not cpus or min(cpus) < 0:
        raise ValueError(f"cpulist: expected non-negative CPU ids, got {cpulist!r}")
    return ",".join(str(c) for c in cpus)


def likwid_command(binary_argv, group, cpulist, out_csv, marker=True, likwid="likwid-perfctr"):
    """argv measuring `binary_argv` with one group on `cpulist`, results as CSV in out_csv.

    With marker=True (-m) only the marker regions are measured; the binary must
    be built with -DUSE_LIKWID. -C pins thread i to the i-th CPU of the list,
    so the list should have as many CPUs as the run has threads. Zen 3 needs
    two runs, one per group of likwid_memory_groups().
    """
    if not binary_argv:
        raise ValueError("binary_argv: empty")
    if not re.fullmatch(r"[A-Za-z0-9_]+", group):
        raise ValueError(f"group: expected a LIKWID group name such as MEM, got {group!r}")
    argv = [likwid, "-C", _cpulist_text(cpulist)]
    if marker:
        argv.append("-m")
    argv += ["-g", group, "-o", str(out_csv)]
    return argv + [str(a) for a in binary_argv]


_TABLE_KINDS = ("Raw", "Raw STAT", "Metric", "Metric STAT")


def _parse_table_header(fields, source, lineno):
    """(region, group_index, kind, group, nrows) of a 'TABLE,...' line."""
    try:
        if fields[1].startswith("Region "):
            region, what, group, nrows = fields[1][len("Region "):], fields[2], fields[3], int(fields[4])
        else:
            region, what, group, nrows = "", fields[1], fields[2], int(fields[3])
    except (IndexError, ValueError):
        raise CountersFormatError(f"{source}:{lineno}: malformed TABLE line: {','.join(fields)}") from None
    m = re.fullmatch(r"Group (\d+) (Raw|Raw STAT|Metric|Metric STAT)", what)
    if not m:
        raise CountersFormatError(f"{source}:{lineno}: unknown table kind {what!r}")
    return region, int(m.group(1)), m.group(2), group, nrows


def parse_likwid_csv(text, source="<likwid csv>"):
    """Parse likwid-perfctr's CSV output (-o FILE.csv), marker regions or a whole run.

    Layout (likwid 5.x): per region and group, a STRUCT,Info block (CPU name,
    type, clock), then tables introduced by
        TABLE,Region <name>,Group <g> Raw|Raw STAT|Metric|Metric STAT,<GROUP>,<rows>
    (without 'Region <name>,' for a run without -m). A Raw table of a region
    starts with 'Region Info,HWThread <c>,...' rows (RDTSC Runtime [s], call
    count), then 'Event,Counter,HWThread <c>,...' and one row per event;
    Metric tables are 'Metric,HWThread <c>,...' plus one row per metric; STAT
    tables hold Sum,Min,Max,Avg columns. Lines are padded with commas.

    Returns {"info": {...}, "regions": {name: {"group": G, "cpus": [c...],
    "runtime_s": {c: s}, "calls": {c: n}, "counters": {event: counter},
    "events": {event: {c: value}}, "metrics": {metric: {c: value}},
    "metric_stats": {metric: {"sum","min","max","avg"}}}}}. A run without
    -m is region "". Values LIKWID could not compute ('-', 'nan') are None.
    """
    rows = [[f.strip() for f in row] for row in csv.reader(io.StringIO(text))]
    for row in rows:  # drop the padding commas
        while row and row[-1] == "":
            row.pop()
    info, regions = {}, {}
    i = 0
    while i < len(rows):
        fields, lineno = rows[i], i + 1
        i += 1
        if not fields:
            continue
        if fields[0] == "STRUCT":
            try:
                count = int(fields[2])
            except (IndexError, ValueError):
                raise CountersFormatError(f"{source}:{lineno}: malformed STRUCT line") from None
            for row in rows[i:i + count]:
                if row:
                    info[row[0].rstrip(":")] = ",".join(row[1:])
            i += count
            continue
        if fields[0] != "TABLE":
            continue  # likwid-perfctr writes nothing else, but a wrapper may prepend lines
        region, group_index, kind, group, nrows = _parse_table_header(fields, source, lineno)
        body = []
        while i < len(rows) and (not rows[i] or rows[i][0] not in ("TABLE", "STRUCT")):
            if rows[i]:
                body.append((i + 1, rows[i]))
            i += 1
        entry = regions.setdefault(region, {"group": group, "group_index": group_index, "cpus": [],
                                            "runtime_s": {}, "calls": {}, "counters": {},
                                            "events": {}, "metrics": {}, "metric_stats": {}})
        if (entry["group"], entry["group_index"]) != (group, group_index):
            raise CountersFormatError(
                f"{source}:{lineno}: region {region!r} measured with groups {entry['group']} and {group}; "
                "run one group per likwid-perfctr call")
        _fill_table(entry, kind, nrows, body, source, lineno)
    if not regions:
        raise CountersFormatError(f"{source}: no TABLE lines: not likwid-perfctr CSV output")
    return {"info": info, "regions": regions}


def _cpu_columns(header, source, lineno):
    cpus = []
    for name in header:
        m = re.fullmatch(r"HWThread (\d+)", name)
        if not m:
            raise CountersFormatError(f"{source}:{lineno}: expected 'HWThread <n>' columns, got {name!r}")
        cpus.append(int(m.group(1)))
    return cpus


def _values(row, ncols, source, lineno):
    if len(row) != ncols:
        raise CountersFormatError(f"{source}:{lineno}: expected {ncols} fields, got {len(row)}")
    try:
        return [_number(v) for v in row]
    except ValueError:
        raise CountersFormatError(f"{source}:{lineno}: non-numeric value in {','.join(row)}") from None


def _fill_table(entry, kind, nrows, body, source, lineno):
    """Stores one table's rows into a region entry; checks the declared row count."""
    if kind == "Raw" and body and body[0][1][0] == "Region Info":
        (ln, header), body = body[0], body[1:]
        cpus = _cpu_columns(header[1:], source, ln)
        info_rows = {}
        while body and body[0][1][0] in ("RDTSC Runtime [s]", "call count"):
            ln, row = body.pop(0)
            info_rows[row[0]] = _values(row[1:], len(cpus), source, ln)
        for cpu, runtime, calls in zip(cpus, info_rows.get("RDTSC Runtime [s]", []), info_rows.get("call count", [])):
            entry["runtime_s"][cpu] = runtime
            entry["calls"][cpu] = None if calls is None else int(calls)
    if not body:
        raise CountersFormatError(f"{source}:{lineno}: {kind} table has no header row")
    (ln, header), rows = body[0], body[1:]
    if len(rows) != nrows:
        raise CountersFormatError(f"{source}:{lineno}: {kind} table declares {nrows} rows, has {len(rows)}")
    if kind == "Raw":
        if header[:2] != ["Event", "Counter"]:
            raise CountersFormatError(f"{source}:{ln}: expected 'Event,Counter,...', got {','.join(header)}")
        cpus = _cpu_columns(header[2:], source, ln)
        entry["cpus"] = cpus
        for ln, row in rows:
            values = _values(row[2:], len(cpus), source, ln)
            entry["counters"][row[0]] = row[1]
            entry["events"][row[0]] = dict(zip(cpus, values))
    elif kind == "Metric":
        if header[0] != "Metric":
            raise CountersFormatError(f"{source}:{ln}: expected 'Metric,...', got {','.join(header)}")
        cpus = _cpu_columns(header[1:], source, ln)
        entry["cpus"] = entry["cpus"] or cpus
        for ln, row in rows:
            entry["metrics"][row[0]] = dict(zip(cpus, _values(row[1:], len(cpus), source, ln)))
    elif kind == "Metric STAT":
        if header != ["Metric", "Sum", "Min", "Max", "Avg"]:
            raise CountersFormatError(f"{source}:{ln}: expected 'Metric,Sum,Min,Max,Avg', got {','.join(header)}")
        for ln, row in rows:
            name = row[0][:-len(" STAT")] if row[0].endswith(" STAT") else row[0]
            entry["metric_stats"][name] = dict(zip(("sum", "min", "max", "avg"), _values(row[1:], 4, source, ln)))
    # Raw STAT repeats the Raw table's sums; nothing in it is not already kept.


_BANDWIDTH = re.compile(r"Memory bandwidth( \(.*\))? \[MBytes/s\]")
_VOLUME = re.compile(r"Memory data volume( \(.*\))? \[GBytes\]")


def region_summary(parsed):
    """Per region: calls, runtime (slowest thread) and DRAM bandwidth and volume, summed over threads.

    Memory counters are per socket, so LIKWID reports them on one thread per
    socket and 0 on the others; the sum over threads is the socket total.
    """
    summary = {}
    for name, entry in parsed["regions"].items():
        def total(pattern):
            found = [m for m in entry["metrics"] if pattern.fullmatch(m)]
            if not found:
                return None
            return sum(v for v in entry["metrics"][found[0]].values() if v is not None)
        runtimes = [t for t in entry["runtime_s"].values() if t is not None]
        if not runtimes and "Runtime (RDTSC) [s]" in entry["metrics"]:
            runtimes = [t for t in entry["metrics"]["Runtime (RDTSC) [s]"].values() if t is not None]
        calls = [c for c in entry["calls"].values() if c is not None]
        summary[name] = {"group": entry["group"], "calls": max(calls) if calls else None,
                         "runtime_s": max(runtimes) if runtimes else None,
                         "memory_bandwidth_MBs": total(_BANDWIDTH), "memory_volume_GB": total(_VOLUME)}
    return summary


def combine_channel_groups(*summaries):
    """Adds the DRAM figures of runs that each saw some channels (Zen 3: MEM1 + MEM2), per region."""
    if not summaries:
        raise ValueError("combine_channel_groups: no summaries")
    names = set(summaries[0])
    for s in summaries[1:]:
        if set(s) != names:
            raise CountersFormatError(f"channel groups measured different regions: {sorted(names)} vs {sorted(s)}")
    combined = {}
    for name in sorted(names):
        parts = [s[name] for s in summaries]
        def add(key):
            values = [p[key] for p in parts]
            return None if any(v is None for v in values) else sum(values)
        runtimes = [p["runtime_s"] for p in parts if p["runtime_s"] is not None]
        combined[name] = {"groups": [p["group"] for p in parts], "calls": parts[0]["calls"],
                          "runtime_s": max(runtimes) if runtimes else None,
                          "memory_bandwidth_MBs": add("memory_bandwidth_MBs"),
                          "memory_volume_GB": add("memory_volume_GB")}
    return combined


# ---------------------------------------------------------------- PAPI

def papi_status(component_avail, command_line_output):
    """(available, reason) from `papi_component_avail` and `papi_command_line PAPI_TOT_CYC`.

    The component list can promise counters the kernel cannot deliver (a VM
    whose PMU is hidden lists 'Counters: 6' and then fails to add any event),
    so a probe that actually adds an event decides.
    """
    def perf_event_block(text):
        m = re.search(r"Name:\s+perf_event\s.*?(?=\nName:|\Z)", text, re.S)
        return m.group(0) if m else None
    compiled, _, active = component_avail.partition("Active components:")
    block = perf_event_block(compiled)
    if block is None:
        return False, "papi_component_avail: PAPI was built without the perf_event component"
    disabled = re.search(r"Disabled:\s*(.+)", block)
    if disabled:
        return False, f"PAPI perf_event component disabled: {disabled.group(1).strip()}"
    block = perf_event_block(active)
    counters = re.search(r"Counters:\s*(\d+)", block) if block else None
    if counters is None:
        return False, "papi_component_avail: perf_event component not active"
    if int(counters.group(1)) == 0:
        return False, "PAPI perf_event component: 0 hardware counters"
    failed = re.search(r"Failed adding:\s*(\S+)\s*\n\s*because:\s*(.+)", command_line_output)
    if failed:
        return False, (f"PAPI lists {counters.group(1)} counters but adding {failed.group(1)} fails: "
                       f"{failed.group(2).strip()}")
    if not re.search(r"PAPI_TOT_CYC\s*:\s*\d+", command_line_output):
        return False, f"papi_command_line PAPI_TOT_CYC: {_last_line(command_line_output)}"
    return True, f"PAPI perf_event: {counters.group(1)} counters"


def papi_available():
    """(available, reason) from papi-tools' papi_component_avail and papi_command_line."""
    if shutil.which("papi_component_avail") is None:
        return False, "papi_component_avail not installed (Debian package: papi-tools)"
    rc, components = common.tool_output(["papi_component_avail"], PROBE_TIMEOUT_S)
    if rc != 0:
        return False, f"papi_component_avail: {_last_line(components)}"
    _, probe = common.tool_output(["papi_command_line", "PAPI_TOT_CYC"], PROBE_TIMEOUT_S)
    return papi_status(components, probe)


def parse_papi_regions(text, source="<papi output>"):
    """Parse the per-region counts core/counters.c prints with -DUSE_PAPI.

    Lines not starting with 'papi ' are ignored (the binary prints other
    things). Returns {"events": [...], "threads": T, "unavailable": reason or
    None, "regions": {name: {thread: {"calls": n, EVENT: count, ...}}}}.
    """
    result = {"events": None, "threads": None, "unavailable": None, "regions": {}}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.startswith("papi "):
            continue
        rest = line[len("papi "):].strip()
        if rest.startswith("unavailable:"):
            result["unavailable"] = rest[len("unavailable:"):].strip()
            continue
        try:
            fields = dict(item.split("=", 1) for item in rest.split())
        except ValueError:
            raise CountersFormatError(f"{source}:{lineno}: expected key=value fields: {line}") from None
        if "events" in fields:
            result["events"] = [e for e in fields["events"].split(",") if e]
            try:
                result["threads"] = int(fields["threads"])
            except (KeyError, ValueError):
                raise CountersFormatError(f"{source}:{lineno}: header without a thread count: {line}") from None
            continue
        if result["events"] is None:
            raise CountersFormatError(f"{source}:{lineno}: region line before the 'papi events=' header")
        missing = [k for k in ["region", "thread", "calls"] + result["events"] if k not in fields]
        if missing:
            raise CountersFormatError(f"{source}:{lineno}: missing {', '.join(missing)}: {line}")
        try:
            thread = int(fields["thread"])
            counts = {"calls": int(fields["calls"])}
            counts.update({e: int(fields[e]) for e in result["events"]})
        except ValueError:
            raise CountersFormatError(f"{source}:{lineno}: non-integer count: {line}") from None
        per_thread = result["regions"].setdefault(fields["region"], {})
        if thread in per_thread:
            raise CountersFormatError(f"{source}:{lineno}: region {fields['region']} thread {thread} twice")
        per_thread[thread] = counts
    if result["events"] is None and result["unavailable"] is None:
        raise CountersFormatError(f"{source}: no 'papi events=' or 'papi unavailable:' line")
    return result


# ---------------------------------------------------------------- perf

def parse_perf_stat_csv(text, source="<perf stat -x,>"):
    """Parse `perf stat -x,` output (perf writes it to stderr).

    Each event line is value,unit,event,run-time,percent-measured[,metric,
    metric-unit]; with -A / --per-thread a CPU ('CPU3') or thread ('comm-tid')
    field comes first. Values perf could not count are None, with
    status '<not supported>' or '<not counted>'. Comment and blank lines are
    skipped. Returns a list of {"event", "value", "unit", "status", "cpu",
    "run_time_ns", "percent_measured", "metric_value", "metric_unit"}.
    """
    rows = []
    for lineno, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not row or not "".join(row).strip() or row[0].startswith("#"):
            continue
        where = None
        if re.fullmatch(r"CPU\d+", row[0]) or (
                len(row) >= 4 and not _is_value(row[0]) and _is_value(row[1])):
            where, row = row[0], row[1:]
        if len(row) < 3 or not _is_value(row[0]) or not row[2]:
            raise CountersFormatError(f"{source}:{lineno}: not a perf stat -x, event line: {','.join(row)}")
        status = row[0] if row[0].startswith("<") else None
        def field(k):
            return _number(row[k]) if len(row) > k and row[k] != "" else None
        try:
            rows.append({"event": row[2], "value": None if status else float(row[0]), "unit": row[1] or None,
                         "status": status, "cpu": where, "run_time_ns": field(3), "percent_measured": field(4),
                         "metric_value": field(5), "metric_unit": row[6] if len(row) > 6 and row[6] else None})
        except ValueError:
            raise CountersFormatError(f"{source}:{lineno}: non-numeric field: {','.join(row)}") from None
    if not rows:
        raise CountersFormatError(f"{source}: no event lines")
    return rows


def _is_value(text):
    if text in ("<not supported>", "<not counted>"):
        return True
    try:
        float(text)
        return True
    except ValueError:
        return False


def perf_totals(rows):
    """{event: value summed over CPUs/threads}, None where any part was not counted."""
    totals = {}
    for r in rows:
        if r["event"] in totals and totals[r["event"]] is None:
            continue
        totals[r["event"]] = None if r["value"] is None else totals.get(r["event"], 0.0) + r["value"]
    return totals


def perf_status(rc, output):
    """(available, reason) from `perf stat -x, -e cycles,instructions true`."""
    if rc != 0:
        return False, f"perf stat: {_last_line(output)}"
    try:
        rows = parse_perf_stat_csv(output)
    except CountersFormatError:
        return False, f"perf stat: {_last_line(output)}"
    missing = [f"{r['event']} {r['status']}" for r in rows if r["status"]]
    if missing:
        pmu = "" if os.path.exists("/sys/bus/event_source/devices/cpu") else \
            " (no 'cpu' PMU in /sys/bus/event_source/devices: hardware events hidden, e.g. by a VM)"
        return False, f"perf stat: {', '.join(missing)}{pmu}"
    return True, "perf stat: cycles and instructions counted"


def perf_available(perf="perf"):
    """(available, reason): does `perf stat` count cycles and instructions here?"""
    if shutil.which(perf) is None:
        return False, f"{perf} not installed (Debian package: linux-perf)"
    rc, output = common.tool_output([perf, "stat", "-x,", "-e", "cycles,instructions", "true"], PROBE_TIMEOUT_S)
    return perf_status(rc if rc is not None else 1, output)


# ---------------------------------------------------------------- choice

BACKENDS = ("likwid", "papi", "perf")
_PROBES = {"likwid": likwid_available, "papi": papi_available, "perf": perf_available}


def detect_backend(preferred=None):
    """The first usable backend, trying likwid, then papi, then perf.

    preferred: None or "auto" tries all in that order; a backend name tries
    only that one; "none" disables counters. Returns {"backend": name or
    None, "reason": text, "reasons": {name: reason for every backend tried}}.
    With no backend, reason reads 'unavailable: likwid: ...; papi: ...'.
    """
    if preferred == "none":
        return {"backend": None, "reason": "disabled by request", "reasons": {}}
    if preferred in (None, "auto"):
        order = BACKENDS
    elif preferred in BACKENDS:
        order = (preferred,)
    else:
        raise ValueError(f"counters backend: expected one of auto, none, {', '.join(BACKENDS)}; got {preferred!r}")
    reasons = {}
    for name in order:
        try:
            ok, reason = _PROBES[name]()
        except Exception as err:  # a probe must never take the harness down
            ok, reason = False, f"probe failed: {type(err).__name__}: {err}"
        reasons[name] = reason
        if ok:
            return {"backend": name, "reason": reason, "reasons": reasons}
    text = "; ".join(f"{name}: {reason}" for name, reason in reasons.items())
    return {"backend": None, "reason": f"unavailable: {text}", "reasons": reasons}
