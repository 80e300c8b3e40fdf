"""callgrind's output format, read in one place (for pstudy.instructions and pstudy.cachesim), and
the map from the step's kernel kinds to the functions that carry their cost.

The format (valgrind's documentation, "Callgrind Format Specification"): `events:` names the
columns; `fn=` starts a function's block; a cost line is a position and the event counts (missing
trailing counts are 0); after `calls=` the next cost line is the inclusive cost of the call to
`cfn=`, so a function's inclusive cost is its own lines plus its calls' (no kernel is recursive).
Names may be compressed: `fn=(12) name` defines id 12, `fn=(12)` refers to it (one id space for fn
and cfn). `totals:` or `summary:` is the whole run's cost.
"""

import re

from pstudy.errors import StudyError

# The step's operation kinds (core/step.c, OP_KIND_NAMES) and the functions op_run calls for each;
# a kernel's cost is the inclusive cost of these entry functions, so the gemm micro-kernels count
# for the product that calls them. A product on a packed weight (core/gemm.h) has its own entry
# function, and its packing is an operation of its own (pack_weight_*).
KERNEL_FUNCTIONS = {
    "load_batch": ("batch_source_next",),
    "encoder_fwd": ("encoder_forward",),
    "layernorm_fwd": ("layernorm_forward",),
    "pack_weight_fwd": ("matmul_pack_forward_weight",),
    "matmul_fwd": ("matmul_forward_block", "matmul_forward_packed"),
    "attention_fwd": ("attention_forward",),
    "residual_fwd": ("residual_forward",),
    "gelu_fwd": ("gelu_forward",),
    "crossentropy_fwd": ("crossentropy_softmax_forward",),
    "loss_mean": ("mean_loss",),
    "crossentropy_bwd": ("crossentropy_softmax_backward",),
    "pack_weight_bwd_input": ("matmul_pack_backward_input_weight",),
    "matmul_bwd_input": ("matmul_backward_input_block", "matmul_backward_input_packed"),
    "matmul_bwd_weight": ("matmul_backward_weight_channels",),
    "layernorm_bwd_input": ("layernorm_backward_input",),
    "layernorm_bwd_params": ("layernorm_backward_params",),
    "gelu_bwd": ("gelu_backward",),
    "attention_bwd": ("attention_backward",),
    "encoder_bwd": ("encoder_backward",),
    "adamw": ("adamw_update",),
    "comm": (),  # gpt2-mpi's messages between ranks: MPI calls in variants/mpi.c, no core function
}


def read(path):
    """(functions, totals, events) of a callgrind output file: {function: {event: inclusive count}},
    {event: the run's total} (None when the file has no totals: or summary: line) and the event
    names (None without an events: line). StudyError naming the file and line when it is not such
    a file."""
    names, inclusive = {}, {}
    events, totals, current = None, None, None

    def name_of(spec, lineno):
        m = re.fullmatch(r"\((\d+)\)(?:\s+(.*))?", spec)
        if not m:
            return spec
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
            return m.group(2)
        if m.group(1) not in names:
            raise StudyError(f"{path}:{lineno}: not a callgrind output file: name id ({m.group(1)}) used before "
                             "it is defined")
        return names[m.group(1)]

    try:
        f = open(path, errors="replace")
    except OSError as err:
        raise StudyError(f"{path}: cannot read callgrind output: {err.strerror}") from None
    with f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            if line[0].isdigit() or line[0] in "+-*":
                if current is None:
                    raise StudyError(f"{path}:{lineno}: not a callgrind output file: a cost line before any fn=")
                if events is None:
                    raise StudyError(f"{path}:{lineno}: not a callgrind output file: a cost line before events:")
                try:
                    values = [int(v) for v in line.split()[1:]]
                except ValueError:
                    raise StudyError(f"{path}:{lineno}: not a callgrind output file: cost {line!r}") from None
                acc = inclusive[current]
                for i, v in enumerate(values[:len(events)]):
                    acc[i] += v
                continue
            if line.startswith("events:"):
                events = line.split(":", 1)[1].split()
                continue
            if line.startswith("totals:") or line.startswith("summary:"):
                try:
                    totals = [int(v) for v in line.split(":", 1)[1].split()]
                except ValueError:
                    raise StudyError(f"{path}:{lineno}: not a callgrind output file: {line!r}") from None
                continue
            key, _, value = line.partition("=")
            if key == "fn":
                current = name_of(value.strip(), lineno)
                inclusive.setdefault(current, [0] * len(events or ()))
                if len(inclusive[current]) < len(events or ()):
                    inclusive[current] += [0] * (len(events) - len(inclusive[current]))
            elif key == "cfn":
                name_of(value.strip(), lineno)
    if events is None:
        return {}, None, None
    functions = {fn: dict(zip(events, v)) for fn, v in inclusive.items()}
    if totals is not None:
        totals = dict(zip(events, totals + [0] * (len(events) - len(totals))))
    return functions, totals, events


def without_totals(path):
    return StudyError(f"{path}: callgrind output without a total (no totals: or summary: line; truncated?)")
