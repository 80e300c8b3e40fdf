"""The operation costs of a step, owned here: what `gpt2-<variant> --json --describe` prints
(core/traffic.c) and a results directory keeps as ops/<variant>_<compiler>_<kernels>.json.

One JSON object per line: first {"info": {...}}, then one object per operation of the step with
its number `op`, `kernel`, `label`, `layer`, `phase`, FLOPs and compulsory bytes (`flops`,
`bytes`) for the run's model, B and T. Read by the roofline and the cache simulation.
"""

import json
from pathlib import Path

import pandas as pd

from pstudy.errors import StudyError

OP_KEYS = ("op", "kernel", "label", "flops", "bytes")


def read(path):
    """The operations of a --describe file as a DataFrame indexed by op."""
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        raise StudyError(f"{path}: not found (write it with gpt2-<variant> --json --describe)") from None
    except OSError as err:
        raise StudyError(f"{path}: {err.strerror}") from None
    rows = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise StudyError(f"{path}:{lineno}: not JSON: {err.msg}") from None
        if not isinstance(obj, dict):
            raise StudyError(f"{path}:{lineno}: expected a JSON object")
        if "info" in obj:
            continue
        missing = [k for k in OP_KEYS if k not in obj]
        if missing:
            raise StudyError(f"{path}:{lineno}: operation without {', '.join(missing)}")
        if not all(isinstance(obj[k], (int, float)) and obj[k] >= 0 for k in ("op", "flops", "bytes")):
            raise StudyError(f"{path}:{lineno}: op, flops and bytes must be non-negative numbers")
        rows.append({k: obj.get(k) for k in ("op", "kernel", "label", "layer", "phase", "flops", "bytes")})
    if not rows:
        raise StudyError(f"{path}: no operations (expected the output of --json --describe)")
    ops = pd.DataFrame(rows).set_index("op")
    if not ops.index.is_unique:
        raise StudyError(f"{path}: an op number appears twice")
    return ops
