"""Machine descriptions for `predict`: machines/*.toml, read and written here.

Keys (README.md, "Predicting other core counts", lists them with units):
    name                   a short name (figures, the output directory's name)
    measured               true when the figures were measured on the machine (perfstudy ceilings),
                           false when they come from public figures
    cores                  cores the simulator may use
    peak_gflops_per_core   single-precision peak of one core, GFLOP/s (1e9)
    bandwidth_cores        active core counts, ascending, the first 1
    bandwidth_GBs          sustained memory bandwidth (STREAM triad, GB/s = 1e9 B/s) with that many
                           cores active; linear in between, flat after the last point
    source                 (optional) where the figures come from, one line
"""

import math
from dataclasses import dataclass
from pathlib import Path

from pstudy.store import config
from pstudy.errors import StudyError

REPO_ROOT = Path(__file__).resolve().parents[3]
MACHINES_DIR = REPO_ROOT / "machines"


@dataclass(frozen=True)
class Machine:
    name: str
    measured: bool
    cores: int
    peak_gflops_per_core: float
    bandwidth_cores: tuple
    bandwidth_GBs: tuple
    source: str = ""
    path: str = ""

    def bandwidth(self, active):
        """Sustained bandwidth in bytes/s with `active` cores busy (at least 1)."""
        xs, ys = self.bandwidth_cores, self.bandwidth_GBs
        n = max(1, active)
        if n >= xs[-1]:
            return ys[-1] * 1e9
        for i in range(1, len(xs)):
            if n <= xs[i]:
                x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
                return (y0 + (y1 - y0) * (n - x0) / (x1 - x0)) * 1e9
        return ys[-1] * 1e9


def check(raw, path):
    """A Machine from a decoded TOML table; StudyError "PATH: KEY: problem"."""
    def bad(key, problem):
        raise StudyError(f"{path}: {key}: {problem}")

    def number(key, positive=True):
        v = raw.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (positive and v <= 0):
            bad(key, f"expected a positive number, got {v!r}")
        return float(v)

    for key in raw:
        if key not in ("name", "measured", "cores", "peak_gflops_per_core", "bandwidth_cores", "bandwidth_GBs",
                       "source"):
            bad(key, "unknown key")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        bad("name", f"expected a non-empty string, got {name!r}")
    measured = raw.get("measured")
    if not isinstance(measured, bool):
        bad("measured", f"expected true or false, got {measured!r}")
    cores = raw.get("cores")
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        bad("cores", f"expected a positive integer, got {cores!r}")
    peak = number("peak_gflops_per_core")
    xs, ys = raw.get("bandwidth_cores"), raw.get("bandwidth_GBs")
    if not isinstance(xs, list) or not xs or not all(isinstance(x, int) and not isinstance(x, bool) for x in xs):
        bad("bandwidth_cores", f"expected a list of integers, got {xs!r}")
    if xs[0] != 1 or any(b <= a for a, b in zip(xs, xs[1:])):
        bad("bandwidth_cores", "must start at 1 and increase")
    if not isinstance(ys, list) or len(ys) != len(xs) or not all(
            isinstance(y, (int, float)) and not isinstance(y, bool) and math.isfinite(y) and y > 0 for y in ys):
        bad("bandwidth_GBs", f"expected {len(xs)} positive numbers (one per bandwidth_cores entry), got {ys!r}")
    source = raw.get("source", "")
    if not isinstance(source, str):
        bad("source", f"expected a string, got {source!r}")
    return Machine(name.strip(), measured, cores, peak, tuple(xs), tuple(float(y) for y in ys), source, str(path))


def load(path):
    """A machine file: a path, or a name in machines/ ("mn5-gpp" -> machines/mn5-gpp.toml)."""
    p = Path(path)
    if not p.exists() and "/" not in str(path) and (MACHINES_DIR / f"{path}.toml").exists():
        p = MACHINES_DIR / f"{path}.toml"
    _, raw = config.read_toml(p, "machine description")
    return check(raw, p)


def from_ceilings(data, name, cores=None):
    """The machine a ceilings.json (pstudy.ceilings' format, already validated) describes: peak per
    core from its 1-thread entry (else the smallest thread count's, divided by it), the bandwidth
    curve from STREAM triad at each thread count."""
    entries = sorted(data["per_threads"], key=lambda e: e["threads"])
    first = entries[0]
    peak = first["best_gflops"] / first["threads"]
    xs, ys = [], []
    for e in entries:
        xs.append(e["threads"])
        ys.append(e["stream_GBs"]["triad"])
    if xs[0] != 1:  # no 1-thread figure: assume bandwidth grows linearly up to the first one
        xs.insert(0, 1)
        ys.insert(0, ys[0] / entries[0]["threads"])
    cores = cores or data.get("host", {}).get("logical_cpus") or xs[-1]
    source = f"measured by perfstudy ceilings on {data.get('host', {}).get('hostname', '?')}, {data.get('date', '?')}"
    return Machine(name, True, int(max(cores, xs[-1])), float(peak), tuple(xs), tuple(float(y) for y in ys), source)


def to_toml(machine):
    """The text of a machine file for `machine`."""
    def q(s):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return (f"# {'Measured' if machine.measured else 'From public figures, not measured'}. Keys: harness/pstudy/store/machinefiles.py\n"
            f"name = {q(machine.name)}\n"
            f"measured = {'true' if machine.measured else 'false'}\n"
            f"source = {q(machine.source)}\n"
            f"cores = {machine.cores}\n"
            f"peak_gflops_per_core = {machine.peak_gflops_per_core:.6g}\n"
            f"bandwidth_cores = [{', '.join(str(x) for x in machine.bandwidth_cores)}]\n"
            f"bandwidth_GBs = [{', '.join(f'{y:.6g}' for y in machine.bandwidth_GBs)}]\n")
