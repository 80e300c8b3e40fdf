"""The native replay engine: harness/replay/replay.c, which `make` builds as
build/harness/libreplay.so, bound with ctypes.

pstudy.analyse.simulate is the reference and states the rules; the C engine follows them event for
event with the same arithmetic, so the two give the same step times bit for bit
(tests/harness/test_replay.py). simulate.step_time uses the native engine when the library is
built and PERFSTUDY_REPLAY is not "python", and the Python one otherwise: the same answer, 16 to 80
times slower on d12's graphs (bench/replay.py; `perfstudy predict --best` over 1..112 cores:
20 s against 4 min 24 s).
"""

import ctypes
import math
import os
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[3]
LIBRARY = REPO_ROOT / "build" / "harness" / "libreplay.so"
STATIC, PHASES, ITERATIONS = 0, 1, 2
_OK, _DEADLOCK, _NO_MEMORY = 0, 1, 2

_int32_p = ctypes.POINTER(ctypes.c_int32)
_double_p = ctypes.POINTER(ctypes.c_double)


class _Graph(ctypes.Structure):
    _fields_ = [("n_tasks", ctypes.c_int64), ("mode", ctypes.c_int32), ("iterations", ctypes.c_int32),
                ("op", _int32_p), ("thread", _int32_p), ("phase", _int32_p),
                ("succ_start", _int32_p), ("succ", _int32_p), ("next_start", _int32_p), ("next_succ", _int32_p)]


class _Work(ctypes.Structure):
    _fields_ = [("duration", _double_p), ("memory_demand", _double_p), ("compute_demand", _double_p)]


class _Node(ctypes.Structure):
    _fields_ = [("cores", ctypes.c_int32), ("shared", ctypes.c_int32), ("bandwidth", _double_p),
                ("phi", _double_p), ("core_of", _int32_p), ("psi", ctypes.c_double),
                ("background", ctypes.c_double), ("speed", _double_p)]


class _Result(ctypes.Structure):
    _fields_ = [("makespan", ctypes.c_double), ("nominal", ctypes.c_double),
                ("stretch_bandwidth", ctypes.c_double), ("stretch_compute", ctypes.c_double),
                ("busy", _double_p), ("iteration_end", _double_p)]


_loaded = {}


def library():
    """The loaded engine, or None: not built, or PERFSTUDY_REPLAY=python asks for the reference."""
    if os.environ.get("PERFSTUDY_REPLAY", "").lower() == "python":
        return None
    path = Path(os.environ.get("PERFSTUDY_REPLAY_LIBRARY") or LIBRARY)
    if path not in _loaded:
        lib = None
        if path.is_file():
            try:
                lib = ctypes.CDLL(str(path))
            except OSError:
                lib = None
            if lib is not None:
                lib.replay_step.argtypes = [ctypes.POINTER(_Graph), ctypes.POINTER(_Work), ctypes.POINTER(_Node),
                                            ctypes.POINTER(_Result)]
                lib.replay_step.restype = ctypes.c_int
        _loaded[path] = lib
    return _loaded[path]


def engine_name():
    """"native (PATH)" or "Python (why)", for a command to say which replay it ran."""
    if library() is not None:
        return f"native ({os.environ.get('PERFSTUDY_REPLAY_LIBRARY') or LIBRARY})"
    if os.environ.get("PERFSTUDY_REPLAY", "").lower() == "python":
        return "Python (PERFSTUDY_REPLAY=python)"
    return f"Python ({LIBRARY} not built: run make)"


def _ptr(array, kind):
    return array.ctypes.data_as(kind)


def run(graph, work, machine, cores, mode, iterations, node):
    """(makespan, busy, nominal, stretch, iteration ends) of one replay, as simulate's engine
    computes them; RuntimeError on a deadlock, as simulate raises it."""
    lib = library()
    a = graph.arrays()
    n = graph.n_tasks
    # the engine trusts its arrays: what would make it read out of bounds is refused here
    lengths = {len(work.duration), len(work.dram_bytes), n} | ({len(work.compute)} if work.compute is not None else set())
    if len(lengths) != 1 or cores < 1 or (mode == STATIC and n and int(a["thread"].max()) >= cores):
        raise ValueError(f"replay: {n} tasks on {cores} cores with work for {sorted(lengths)} tasks")
    duration = np.asarray(work.duration, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        memory = np.asarray(work.dram_bytes, dtype=np.float64) / duration
    compute = (np.asarray(work.compute, dtype=np.float64) if work.compute is not None
               else np.zeros(n, dtype=np.float64))
    bandwidth = np.full(cores + 2, math.inf)
    phi = np.ones(cores + 1)
    core_of = np.arange(cores, dtype=np.int32)
    shared, psi, background, speed = 0, 1.0, 0.0, None
    if node is not None:
        for k in range(1, cores + 1):
            bandwidth[k] = node.bandwidth(k)
        if node.background > 0:
            bandwidth[cores + 1] = node.bandwidth(cores + 1)
        for m in range(cores + 1):
            phi[m] = node.phi(m)
        placed = list(node.core[:cores])
        core_of = np.asarray(placed + list(range(len(placed), cores)), dtype=np.int32)
        shared, psi, background = int(node.shared), float(node.psi), float(node.background)
        if node.speeds is not None:
            speed = np.asarray(node.speeds[:cores] + [1.0] * (cores - len(node.speeds[:cores])), dtype=np.float64)
    elif machine is not None:
        for k in range(1, cores + 1):
            bandwidth[k] = machine.bandwidth(k)
    busy = np.zeros(cores, dtype=np.float64)
    ends = np.zeros(max(1, iterations), dtype=np.float64)
    g = _Graph(n, mode, iterations, _ptr(a["op"], _int32_p), _ptr(a["thread"], _int32_p), _ptr(a["phase"], _int32_p),
               _ptr(a["succ_start"], _int32_p), _ptr(a["succ"], _int32_p), _ptr(a["next_start"], _int32_p),
               _ptr(a["next_succ"], _int32_p))
    w = _Work(_ptr(duration, _double_p), _ptr(memory, _double_p), _ptr(compute, _double_p))
    nd = _Node(cores, shared, _ptr(bandwidth, _double_p), _ptr(phi, _double_p), _ptr(core_of, _int32_p), psi,
               background, _ptr(speed, _double_p) if speed is not None else None)
    result = _Result(0.0, 0.0, 0.0, 0.0, _ptr(busy, _double_p), _ptr(ends, _double_p))
    status = lib.replay_step(ctypes.byref(g), ctypes.byref(w), ctypes.byref(nd), ctypes.byref(result))
    if status == _DEADLOCK:
        raise RuntimeError("simulation deadlock: tasks remain but none is ready")
    if status != _OK:
        raise MemoryError("replay: out of memory")
    return (result.makespan, busy.tolist(), result.nominal,
            {"bandwidth": result.stretch_bandwidth, "compute": result.stretch_compute}, ends.tolist())
