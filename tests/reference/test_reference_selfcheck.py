"""Self-checks of the float64 reference and its committed fixtures.

Run: /usr/bin/python3 -m pytest -q tests/reference
The numpy checks always run; the ones that need the torch generator are
skipped when torch is not importable.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
FIXTURE_NAMES = ["tiny_prime", "odd36", "heads4", "wide20"]

import check_reference
import components  # tests/components.py


def load_make_reference():
    components.require("torch")
    import make_reference
    return make_reference


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_committed_fixture_passes_numpy_check(name):
    r = check_reference.check_fixture(os.path.join(FIXTURES, name), fd_entries_per_tensor=3)
    assert r["logit_err"] < 1e-6


def corrupt(path, offset, new_bytes):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(new_bytes)


@pytest.mark.parametrize("damage", ["grad", "logit", "loss", "header", "truncate", "padded_grad"])
def test_checker_rejects_damaged_fixture(tmp_path, damage):
    d = tmp_path / "tiny_prime"
    shutil.copytree(os.path.join(FIXTURES, "tiny_prime"), d)
    state = str(d / "state.bin")
    B, T, V, C = 2, 7, 67, 32
    logits_off = 1024 + 8 * B * T
    loss_off = logits_off + 4 * B * T * V
    grads_off = loss_off + 4
    if damage == "grad":
        # scale every stored gradient: the finite differences must notice
        g = np.fromfile(state, dtype="<f4", offset=grads_off)
        corrupt(state, grads_off, (g * np.float32(1.01)).astype("<f4").tobytes())
    elif damage == "logit":
        x = np.fromfile(state, dtype="<f4", count=1, offset=logits_off + 4 * 100)
        corrupt(state, logits_off + 4 * 100, (x + np.float32(1e-4)).astype("<f4").tobytes())
    elif damage == "loss":
        x = np.fromfile(state, dtype="<f4", count=1, offset=loss_off)
        corrupt(state, loss_off, (x + np.float32(1e-4)).astype("<f4").tobytes())
    elif damage == "header":
        corrupt(str(d / "model.bin"), 4 * 5, np.array([3], "<i4").tobytes())  # NH
    elif damage == "truncate":
        with open(state, "r+b") as f:
            f.truncate(os.path.getsize(state) - 4)
    elif damage == "padded_grad":
        corrupt(state, grads_off + 4 * (V * C + 5), np.array([1e-3], "<f4").tobytes())
    with pytest.raises(check_reference.CheckError):
        check_reference.check_fixture(str(d))


def test_checker_cli_exit_status(tmp_path):
    ok = subprocess.run([sys.executable, os.path.join(HERE, "check_reference.py"),
                         os.path.join(FIXTURES, "wide20")], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([sys.executable, os.path.join(HERE, "check_reference.py"),
                          str(tmp_path / "missing")], capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "expected.json" in bad.stderr


def test_torch_gradients_match_finite_differences():
    mr = load_make_reference()
    import torch
    cfg = mr.CONFIGS["tiny_prime"]
    params, inputs, targets, _ = mr.build_fixture_data(cfg)
    _, loss, grads = mr.loss_and_grads(params, cfg, inputs, targets)
    gen = torch.Generator().manual_seed(7)
    h = 1e-6
    for i, (name, shape) in enumerate(mr.param_shapes(cfg)):
        for _ in range(2):
            rows = cfg["V"] if name == "wte" else shape[0]
            idx = (int(torch.randint(rows, (1,), generator=gen)),) + tuple(
                int(torch.randint(n, (1,), generator=gen)) for n in shape[1:])
            plus = [p.clone() for p in params]
            minus = [p.clone() for p in params]
            plus[i][idx] += h
            minus[i][idx] -= h
            lp = mr.forward(plus, cfg, inputs, targets)[1].item()
            lm = mr.forward(minus, cfg, inputs, targets)[1].item()
            fd = (lp - lm) / (2 * h)
            g = grads[i][idx].item()
            assert abs(fd - g) <= 1e-8 + 1e-6 * abs(g), (name, idx, g, fd)


def test_torch_autograd_gradcheck_on_small_slices():
    """torch's own gradcheck on the loss as a function of a few whole tensors."""
    mr = load_make_reference()
    import torch
    cfg = dict(mr.CONFIGS["tiny_prime"])
    params, inputs, targets, _ = mr.build_fixture_data(cfg)
    names = [n for n, _ in mr.param_shapes(cfg)]
    picked = [names.index(n) for n in ("ln1w", "qkvb", "fcprojb", "lnfb")]

    def loss_of(*tensors):
        ps = list(params)
        for i, t in zip(picked, tensors):
            ps[i] = t
        return mr.forward(ps, cfg, inputs, targets)[1]

    leaves = [params[i].clone().requires_grad_(True) for i in picked]
    assert torch.autograd.gradcheck(loss_of, leaves, eps=1e-6, atol=1e-7, rtol=1e-5)


def test_adamw_matches_torch_optim():
    """Our hand-written llm.c update and torch.optim.AdamW agree in exact arithmetic."""
    mr = load_make_reference()
    import torch
    cfg = mr.CONFIGS["wide20"]
    params, inputs, targets, _ = mr.build_fixture_data(cfg)
    ours = mr.adamw_run(params, cfg, inputs, targets, mr.OPTIM, mr.NUM_STEPS)
    leaves = [p.clone().requires_grad_(True) for p in params]
    o = mr.OPTIM
    opt = torch.optim.AdamW(leaves, lr=o["lr"], betas=(o["beta1"], o["beta2"]),
                            eps=o["eps"], weight_decay=o["wd"])
    theirs = []
    for _ in range(mr.NUM_STEPS):
        opt.zero_grad()
        loss = mr.forward(leaves, cfg, inputs, targets)[1]
        loss.backward()
        theirs.append(loss.item())
        opt.step()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)
    assert ours[-1] < ours[0] - 0.1  # the run visibly trains


def test_regeneration_is_byte_identical(tmp_path):
    mr = load_make_reference()
    assert mr.main(["--all", "--out", str(tmp_path)]) == 0
    for name in FIXTURE_NAMES:
        for fname in ("model.bin", "state.bin", "tokens.bin", "expected.json"):
            with open(os.path.join(FIXTURES, name, fname), "rb") as f:
                committed = f.read()
            with open(tmp_path / name / fname, "rb") as f:
                regenerated = f.read()
            assert committed == regenerated, f"{name}/{fname} differs after regeneration"


def test_unknown_fixture_name_is_rejected(tmp_path):
    components.require("torch")
    r = subprocess.run([sys.executable, os.path.join(HERE, "make_reference.py"),
                        "--out", str(tmp_path), "--name", "nope"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "nope" in r.stderr and r.stderr.count("\n") == 1
