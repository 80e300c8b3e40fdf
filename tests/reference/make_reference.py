#!/usr/bin/python3
"""Float64 PyTorch reference for the C GPT-2 core, written as llm.c-format fixtures.

For one small named configuration this builds a GPT-2 with deterministic random
weights, runs forward + backward in float64 and writes, into DIR/NAME/:

  model.bin      llm.c checkpoint (header 20240326 v3, float32 parameters)
  state.bin      llm.c debug state (header 20240327 v2): inputs, targets,
                 logits (first V of each row), loss, gradients of all parameters
  losses.txt     the same losses, one per line (for gpt2-<variant> --expect-losses)
  expected.json  configuration, optimizer settings and the float64 losses of a
                 10-step AdamW run on the same batch
  tokens.bin     a small llm.c token file (header 20240520 v1, uint16 tokens)

Usage:
  /usr/bin/python3 tests/reference/make_reference.py --out tests/fixtures --name tiny_prime
  /usr/bin/python3 tests/reference/make_reference.py --all --out tests/fixtures

The parameters are drawn in float64, rounded to float32 (what the checkpoint
holds) and computed with in float64 from those float32 values, so the only
float32 rounding in the files is the final store. The 10-step run keeps its
parameters in float64 after the first update (no re-rounding).
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

# Named configurations. Shapes are chosen to catch layout bugs: prime T,
# V not a multiple of 8, several heads, C not a power of two, Vp > V.
CONFIGS = {
    "tiny_prime": dict(L=2, NH=2, C=32, V=67, maxT=16, B=2, T=7, seed=1001),
    "odd36": dict(L=3, NH=3, C=36, V=250, maxT=32, B=3, T=13, seed=1002),
    "heads4": dict(L=1, NH=4, C=64, V=128, maxT=8, B=4, T=8, seed=1003),
    "wide20": dict(L=2, NH=5, C=20, V=301, maxT=24, B=2, T=11, seed=1004),
}

# Optimizer settings shared by all fixtures (llm.c's AdamW defaults, with a
# learning rate large enough that 10 steps visibly move the loss).
OPTIM = dict(lr=1e-3, wd=0.01, beta1=0.9, beta2=0.999, eps=1e-8)
NUM_STEPS = 10
NUM_FILE_TOKENS = 300  # length of tokens.bin, enough for several B*T+1 windows

MODEL_MAGIC, MODEL_VERSION = 20240326, 3
STATE_MAGIC, STATE_VERSION = 20240327, 2
TOKENS_MAGIC, TOKENS_VERSION = 20240520, 1
LN_EPS = 1e-5


def padded_vocab(V):
    """llm.c pads the vocabulary to a multiple of 128 for aligned matmuls."""
    return (V + 127) // 128 * 128


def param_shapes(cfg):
    """(name, shape) of every parameter, in checkpoint order."""
    L, C, V, maxT = cfg["L"], cfg["C"], cfg["V"], cfg["maxT"]
    Vp = padded_vocab(V)
    return [
        ("wte", (Vp, C)),
        ("wpe", (maxT, C)),
        ("ln1w", (L, C)),
        ("ln1b", (L, C)),
        ("qkvw", (L, 3 * C, C)),
        ("qkvb", (L, 3 * C)),
        ("attprojw", (L, C, C)),
        ("attprojb", (L, C)),
        ("ln2w", (L, C)),
        ("ln2b", (L, C)),
        ("fcw", (L, 4 * C, C)),
        ("fcb", (L, 4 * C)),
        ("fcprojw", (L, C, 4 * C)),
        ("fcprojb", (L, C)),
        ("lnfw", (C,)),
        ("lnfb", (C,)),
    ]


def init_distribution(name, cfg):
    """(mean, std) of the initial values of a parameter.

    Biases and LayerNorm parameters get random values, not GPT-2's zeros and
    ones, so that a gradient bug in any of them changes the loss trajectory.
    """
    residual_std = 0.02 / math.sqrt(2 * cfg["L"])  # projections into the residual stream
    table = {
        "wte": (0.0, 0.02), "wpe": (0.0, 0.01),
        "qkvw": (0.0, 0.02), "fcw": (0.0, 0.02),
        "attprojw": (0.0, residual_std), "fcprojw": (0.0, residual_std),
        "qkvb": (0.0, 0.02), "attprojb": (0.0, 0.02), "fcb": (0.0, 0.02), "fcprojb": (0.0, 0.02),
        "ln1w": (1.0, 0.1), "ln2w": (1.0, 0.1), "lnfw": (1.0, 0.1),
        "ln1b": (0.0, 0.02), "ln2b": (0.0, 0.02), "lnfb": (0.0, 0.02),
    }
    return table[name]


def build_fixture_data(cfg):
    """Deterministic parameters (float64 holding float32 values) and token data.

    Everything is drawn from one generator in a fixed order: parameters in
    checkpoint order, then inputs, targets, and the token file.
    """
    gen = torch.Generator().manual_seed(cfg["seed"])
    params = []
    for name, shape in param_shapes(cfg):
        mean, std = init_distribution(name, cfg)
        p = torch.randn(shape, generator=gen, dtype=torch.float64) * std + mean
        if name == "wte":
            p[cfg["V"]:] = 0.0  # padded rows are never real tokens
        params.append(p.float().double())
    B, T, V = cfg["B"], cfg["T"], cfg["V"]
    inputs = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int64)
    targets = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int64)
    file_tokens = torch.randint(0, V, (NUM_FILE_TOKENS,), generator=gen, dtype=torch.int64)
    return params, inputs, targets, file_tokens


def layernorm(x, w, b):
    # biased variance, as llm.c's layernorm_forward
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + LN_EPS) * w + b


def gelu_tanh(h):
    return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h ** 3)))


def forward(params, cfg, inputs, targets):
    """GPT-2 forward as in llm.c. Returns (logits (B,T,Vp), mean cross-entropy loss)."""
    (wte, wpe, ln1w, ln1b, qkvw, qkvb, attprojw, attprojb,
     ln2w, ln2b, fcw, fcb, fcprojw, fcprojb, lnfw, lnfb) = params
    L, NH, C, V = cfg["L"], cfg["NH"], cfg["C"], cfg["V"]
    B, T = inputs.shape
    hs = C // NH
    causal = torch.ones(T, T, dtype=torch.bool).tril()

    x = wte[inputs] + wpe[:T]  # (B,T,C)
    for l in range(L):
        ln1 = layernorm(x, ln1w[l], ln1b[l])
        qkv = ln1 @ qkvw[l].T + qkvb[l]  # (B,T,3C) = [q | k | v]
        q, k, v = qkv.split(C, dim=-1)
        # head h owns channels h*hs .. (h+1)*hs-1 of q, k and v
        q = q.view(B, T, NH, hs).transpose(1, 2)  # (B,NH,T,hs)
        k = k.view(B, T, NH, hs).transpose(1, 2)
        v = v.view(B, T, NH, hs).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(hs)  # (B,NH,T,T)
        scores = scores.masked_fill(~causal, float("-inf"))
        att = torch.softmax(scores, dim=-1)
        atty = (att @ v).transpose(1, 2).reshape(B, T, C)
        res2 = x + atty @ attprojw[l].T + attprojb[l]
        ln2 = layernorm(res2, ln2w[l], ln2b[l])
        fch = ln2 @ fcw[l].T + fcb[l]  # (B,T,4C)
        x = res2 + gelu_tanh(fch) @ fcprojw[l].T + fcprojb[l]
    lnf = layernorm(x, lnfw, lnfb)
    logits = lnf @ wte.T  # (B,T,Vp)
    # the padded logits V..Vp-1 take no part in the softmax
    logp = torch.log_softmax(logits[..., :V], dim=-1)
    loss = -logp.gather(-1, targets.unsqueeze(-1)).mean()
    return logits, loss


def loss_and_grads(params, cfg, inputs, targets):
    leaves = [p.detach().clone().requires_grad_(True) for p in params]
    logits, loss = forward(leaves, cfg, inputs, targets)
    grads = torch.autograd.grad(loss, leaves)
    return logits.detach(), loss.detach(), [g.detach() for g in grads]


def adamw_run(params, cfg, inputs, targets, opt, num_steps):
    """llm.c's AdamW on every parameter, same batch each step. Returns the losses
    before each update (losses[0] is the initial loss)."""
    b1, b2, eps, lr, wd = opt["beta1"], opt["beta2"], opt["eps"], opt["lr"], opt["wd"]
    params = [p.clone() for p in params]
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    losses = []
    for t in range(1, num_steps + 1):
        _, loss, grads = loss_and_grads(params, cfg, inputs, targets)
        losses.append(loss.item())
        for i, g in enumerate(grads):
            m[i] = b1 * m[i] + (1.0 - b1) * g
            v[i] = b2 * v[i] + (1.0 - b2) * g * g
            mhat = m[i] / (1.0 - b1 ** t)
            vhat = v[i] / (1.0 - b2 ** t)
            params[i] = params[i] - lr * (mhat / (torch.sqrt(vhat) + eps) + wd * params[i])
    return losses


def header(*values):
    h = np.zeros(256, dtype="<i4")
    h[:len(values)] = values
    return h.tobytes()


def f32_bytes(t):
    return t.detach().numpy().astype("<f4").tobytes()


def write_fixture(name, cfg, out_dir):
    torch.set_num_threads(1)  # fixed reduction order: same bytes on every machine we run on
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    L, NH, C, V, maxT, B, T = (cfg[k] for k in ("L", "NH", "C", "V", "maxT", "B", "T"))
    Vp = padded_vocab(V)

    params, inputs, targets, file_tokens = build_fixture_data(cfg)
    logits, loss, grads = loss_and_grads(params, cfg, inputs, targets)
    losses = adamw_run(params, cfg, inputs, targets, OPTIM, NUM_STEPS)
    assert losses[0] == loss.item()

    with open(os.path.join(d, "model.bin"), "wb") as f:
        f.write(header(MODEL_MAGIC, MODEL_VERSION, maxT, V, L, NH, C, Vp))
        for p in params:
            f.write(f32_bytes(p))
    with open(os.path.join(d, "state.bin"), "wb") as f:
        f.write(header(STATE_MAGIC, STATE_VERSION, B, T))
        f.write(inputs.numpy().astype("<i4").tobytes())
        f.write(targets.numpy().astype("<i4").tobytes())
        f.write(f32_bytes(logits[..., :V]))
        f.write(f32_bytes(loss.reshape(1)))
        for g in grads:
            f.write(f32_bytes(g))
    with open(os.path.join(d, "tokens.bin"), "wb") as f:
        f.write(header(TOKENS_MAGIC, TOKENS_VERSION, len(file_tokens)))
        f.write(file_tokens.numpy().astype("<u2").tobytes())
    expected = {
        "config": dict(L=L, NH=NH, C=C, V=V, Vp=Vp, maxT=maxT, B=B, T=T),
        "num_parameters": sum(p.numel() for p in params),
        "seed": cfg["seed"],
        **OPTIM,
        "steps": NUM_STEPS,
        "losses": losses,
    }
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    # the same losses as plain text, for the C front's --expect-losses
    with open(os.path.join(d, "losses.txt"), "w") as f:
        f.write("".join(f"{x!r}\n" for x in losses))
    return losses


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="directory that receives NAME/ subdirectories")
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--name", help="one of: " + ", ".join(CONFIGS))
    which.add_argument("--all", action="store_true", help="write every named fixture")
    args = ap.parse_args(argv)
    if args.name is not None and args.name not in CONFIGS:
        print(f"make_reference.py: --name: unknown fixture '{args.name}' "
              f"(known: {', '.join(CONFIGS)})", file=sys.stderr)
        return 2
    names = list(CONFIGS) if args.all else [args.name]
    for name in names:
        losses = write_fixture(name, CONFIGS[name], args.out)
        print(f"{name}: loss {losses[0]:.6f} -> {losses[-1]:.6f} after {len(losses)} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
