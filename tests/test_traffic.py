"""The traffic model: its C unit test (hand counts on a tiny configuration) and
the --describe output of a real binary for GPT-2 124M (d12)."""
import json
import os
import subprocess
from pathlib import Path

import pytest

# Self-contained rather than `from conftest import ...`: when pytest collects tests/harness first,
# the module named conftest is tests/harness/conftest.py.
ROOT = Path(__file__).resolve().parent.parent


def binary(variant, compiler="gcc", kernels="fast"):
    path = ROOT / "build" / compiler / kernels / f"gpt2-{variant}"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make` first")
    return path


def run(args, timeout=60):
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, env=env)


def json_lines(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def describe(variant, *args, kernels="fast"):
    proc = run([binary(variant, kernels=kernels), "--json", "--describe", *args], timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    assert "info" in lines[0]
    return lines[0]["info"], lines[1:]


def test_describe_d12_totals():
    info, ops = describe("seq", "--config", "d12", "-B", "4", "-T", "64")
    assert len(ops) == info["ops_per_step"]
    assert [o["op"] for o in ops] == list(range(len(ops)))
    for o in ops:
        assert set(o) >= {"op", "kernel", "label", "layer", "phase", "split", "flops", "bytes", "intensity"}
        assert o["bytes"] == o["bytes_read"] + o["bytes_written"] > 0
        assert o["intensity"] == pytest.approx(o["flops"] / o["bytes"], rel=1e-5)
    B, T, C, L, Vp = info["B"], info["T"], info["C"], info["L"], info["Vp"]
    N = B * T
    # 2 FLOPs per matmul weight and row in each of forward, input and weight gradient, plus the
    # bias gradients (3C + C + 4C + C per layer) as plain adds
    matmul_weights = 12 * C * C * L + Vp * C
    matmul = sum(o["flops"] for o in ops if o["kernel"].startswith("matmul_"))
    assert matmul == 6 * N * matmul_weights + N * 9 * C * L
    total = sum(o["flops"] for o in ops)
    total_bytes = sum(o["bytes"] for o in ops)
    six_nbt = 6 * info["num_parameters"] * N
    print(f"d12 B=4 T=64: {total / 1e9:.2f} GFLOP per step (6*N*B*T = {six_nbt / 1e9:.2f}), "
          f"{total_bytes / 1e9:.3f} GB compulsory, {total / total_bytes:.1f} FLOP/B")
    assert 185e9 < total < 200e9
    # attention (forward and backward) is what comes on top of the products, beside small element-wise work
    attention = sum(o["flops"] for o in ops if o["kernel"].startswith("attention_"))
    assert 0.5e9 < attention < 2e9
    # AdamW reads grads and reads and writes params, m, v: 28 bytes per parameter
    adamw = sum(o["bytes"] for o in ops if o["kernel"] == "adamw")
    assert adamw == 28 * info["num_parameters"]


PACK_KINDS = ("pack_weight_fwd", "pack_weight_bwd_input")


def test_describe_same_for_every_variant():
    """Every variant describes the same step; the chunked ones (EXECUTOR_PACKS_WEIGHTS), with the
    products' rows cut (BATCH_SUBSIZE 1 of B = 2), add one pack operation before each row-split
    product of the transformer blocks (core/step.h, "Packed weights"), and nothing else changes
    (tiny's widths are whole panels: the packed weights are the weights' size); with the rows whole
    (the automatic chunking here: 32 rows, C = 64) they add none. The reference kernel set has no
    packed form: no pack operations."""
    _, seq = describe("seq", "--config", "tiny", "-B", "2", "-T", "16")

    def without_index(ops):
        return [{k: v for k, v in o.items() if k != "op"} for o in ops]

    for variant in ("forkjoin", "tasks", "taskiter"):
        info, other = describe(variant, "--config", "tiny", "-B", "2", "-T", "16", "--batch-subsize", "1",
                               "--token-chunk", "16")
        packs = [o for o in other if o["kernel"] in PACK_KINDS]
        if variant == "forkjoin":
            assert other == seq, variant
            continue
        # qkv, attproj, fc, fcproj per layer, forward and input gradient, none for the lm_head
        assert len(packs) == 8 * info["L"], variant
        assert all(o["flops"] == 0 and o["split"] == "channels" and "lm_head" not in o["label"] for o in packs)
        for o in packs:  # each directly before the product that reads it
            product = other[o["op"] + 1]
            assert product["kernel"] == ("matmul_fwd" if o["kernel"] == "pack_weight_fwd" else "matmul_bwd_input")
            assert product["label"].split()[1:] == o["label"].split()[1:]
        assert without_index([o for o in other if o["kernel"] not in PACK_KINDS]) == without_index(seq), variant
        _, reference = describe(variant, "--config", "tiny", "-B", "2", "-T", "16", "--batch-subsize", "1",
                                "--token-chunk", "16", kernels="reference")
        assert not [o for o in reference if o["kernel"] in PACK_KINDS], variant
        whole_info, whole = describe(variant, "--config", "tiny", "-B", "2", "-T", "16", "--threads", "2")
        assert not whole_info["weights_packed_per_step"] and without_index(whole) == without_index(seq), variant
