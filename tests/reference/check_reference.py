#!/usr/bin/python3
"""Independent check of reference fixtures, with numpy only (no torch).

  /usr/bin/python3 tests/reference/check_reference.py tests/fixtures/tiny_prime [more dirs...]

For each fixture directory this reads model.bin, state.bin, tokens.bin and
expected.json back, verifies headers and exact file sizes, recomputes the
GPT-2 forward pass in float64 with its own numpy code, and checks
  - the stored logits and loss (to 1e-6) and expected.json's losses[0] (to 1e-9),
  - that the gradients of the padded wte rows V..Vp-1 are exactly zero,
  - one gradient entry of every parameter tensor against a central finite
    difference of the numpy loss.
Prints one OK line per fixture; on the first problem prints
"check_reference.py: FILE: problem" and exits with status 2.
"""
import json
import math
import os
import sys

import numpy as np

HEADER_INTS = 256
HEADER_BYTES = HEADER_INTS * 4
LN_EPS = 1e-5
LOGIT_TOL = 1e-6
LOSS_TOL = 1e-6
LOSS64_TOL = 1e-9
NUM_STEPS = 10


class CheckError(Exception):
    def __init__(self, path, problem):
        super().__init__(f"{path}: {problem}")


def shapes_of(L, C, Vp, maxT):
    """Checkpoint order, written out independently of make_reference.py."""
    return [("wte", (Vp, C)), ("wpe", (maxT, C)),
            ("ln1w", (L, C)), ("ln1b", (L, C)),
            ("qkvw", (L, 3 * C, C)), ("qkvb", (L, 3 * C)),
            ("attprojw", (L, C, C)), ("attprojb", (L, C)),
            ("ln2w", (L, C)), ("ln2b", (L, C)),
            ("fcw", (L, 4 * C, C)), ("fcb", (L, 4 * C)),
            ("fcprojw", (L, C, 4 * C)), ("fcprojb", (L, C)),
            ("lnfw", (C,)), ("lnfb", (C,))]


def read_exact(path, expected_size):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CheckError(path, f"cannot read: {e.strerror}")
    if len(data) != expected_size:
        raise CheckError(path, f"size {len(data)} bytes, expected {expected_size}")
    return data


def check_header(path, data, want):
    """want: the leading header values; all other header ints must be zero."""
    h = np.frombuffer(data, dtype="<i4", count=HEADER_INTS)
    full = np.zeros(HEADER_INTS, dtype=np.int64)
    full[:len(want)] = want
    bad = np.nonzero(h != full)[0]
    if bad.size:
        i = int(bad[0])
        raise CheckError(path, f"header[{i}] = {int(h[i])}, expected {int(full[i])}")


def split_params(path, flat, shapes):
    params, off = {}, 0
    for name, shape in shapes:
        n = int(np.prod(shape))
        params[name] = flat[off:off + n].reshape(shape)
        off += n
    if off != flat.size:
        raise CheckError(path, f"{flat.size} parameter floats, shapes need {off}")
    return params


def np_layernorm(x, w, b):
    mu = x.sum(axis=-1, keepdims=True) / x.shape[-1]
    d = x - mu
    var = (d * d).sum(axis=-1, keepdims=True) / x.shape[-1]
    return d * (1.0 / np.sqrt(var + LN_EPS)) * w + b


def np_forward(P, cfg, inputs, targets):
    """float64 forward; returns (logits over the first V tokens (B,T,V), loss)."""
    L, NH, C, V = cfg["L"], cfg["NH"], cfg["C"], cfg["V"]
    B, T = inputs.shape
    hs = C // NH
    x = P["wte"][inputs] + P["wpe"][np.arange(T)][None, :, :]
    upper = np.triu(np.ones((T, T), dtype=bool), k=1)  # future positions
    for l in range(L):
        a = np_layernorm(x, P["ln1w"][l], P["ln1b"][l])
        qkv = np.einsum("btc,oc->bto", a, P["qkvw"][l]) + P["qkvb"][l]
        atty = np.empty((B, T, C))
        for h in range(NH):
            cols = slice(h * hs, (h + 1) * hs)
            q = qkv[:, :, 0 * C:1 * C][:, :, cols]
            k = qkv[:, :, 1 * C:2 * C][:, :, cols]
            v = qkv[:, :, 2 * C:3 * C][:, :, cols]
            s = np.einsum("bti,bui->btu", q, k) / math.sqrt(hs)
            s[:, upper] = -np.inf
            s = s - s.max(axis=-1, keepdims=True)
            e = np.exp(s)
            w = e / e.sum(axis=-1, keepdims=True)
            atty[:, :, cols] = np.einsum("btu,bui->bti", w, v)
        res2 = x + np.einsum("btc,oc->bto", atty, P["attprojw"][l]) + P["attprojb"][l]
        a2 = np_layernorm(res2, P["ln2w"][l], P["ln2b"][l])
        hpre = np.einsum("btc,oc->bto", a2, P["fcw"][l]) + P["fcb"][l]
        g = 0.5 * hpre * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (hpre + 0.044715 * hpre ** 3)))
        x = res2 + np.einsum("btf,of->bto", g, P["fcprojw"][l]) + P["fcprojb"][l]
    xf = np_layernorm(x, P["lnfw"], P["lnfb"])
    logits = np.einsum("btc,vc->btv", xf, P["wte"][:V])  # padded rows never enter
    z = logits - logits.max(axis=-1, keepdims=True)
    logsumexp = np.log(np.exp(z).sum(axis=-1))
    bi, ti = np.meshgrid(np.arange(B), np.arange(T), indexing="ij")
    nll = logsumexp - z[bi, ti, targets]
    return logits, float(nll.mean())


def check_fixture(d, fd_entries_per_tensor=1):
    ej_path = os.path.join(d, "expected.json")
    try:
        with open(ej_path) as f:
            ej = json.load(f)
        cfg = ej["config"]
        L, NH, C, V, Vp, maxT, B, T = (int(cfg[k]) for k in ("L", "NH", "C", "V", "Vp", "maxT", "B", "T"))
        losses = [float(x) for x in ej["losses"]]
        for k in ("seed", "lr", "wd", "beta1", "beta2", "eps"):
            float(ej[k])
    except OSError as e:
        raise CheckError(ej_path, f"cannot read: {e.strerror}")
    except (ValueError, KeyError, TypeError) as e:
        raise CheckError(ej_path, f"malformed: {e!r}")
    if Vp % 128 or not V <= Vp < V + 128:
        raise CheckError(ej_path, f"Vp={Vp} is not V={V} rounded up to a multiple of 128")
    if C % NH:
        raise CheckError(ej_path, f"C={C} not divisible by NH={NH}")
    if T > maxT:
        raise CheckError(ej_path, f"T={T} exceeds maxT={maxT}")
    if len(losses) != NUM_STEPS or not all(math.isfinite(x) for x in losses):
        raise CheckError(ej_path, f"expected {NUM_STEPS} finite losses, got {losses}")

    shapes = shapes_of(L, C, Vp, maxT)
    nparams = sum(int(np.prod(s)) for _, s in shapes)
    if ej.get("num_parameters") != nparams:
        raise CheckError(ej_path, f"num_parameters {ej.get('num_parameters')}, shapes give {nparams}")

    # checkpoint
    mpath = os.path.join(d, "model.bin")
    mdata = read_exact(mpath, HEADER_BYTES + 4 * nparams)
    check_header(mpath, mdata, [20240326, 3, maxT, V, L, NH, C, Vp])
    flat = np.frombuffer(mdata, dtype="<f4", offset=HEADER_BYTES).astype(np.float64)
    P = split_params(mpath, flat, shapes)
    if np.any(P["wte"][V:] != 0.0):
        raise CheckError(mpath, "padded wte rows V..Vp-1 are not zero")

    # debug state
    spath = os.path.join(d, "state.bin")
    BT = B * T
    sdata = read_exact(spath, HEADER_BYTES + 4 * (2 * BT + BT * V + 1 + nparams))
    check_header(spath, sdata, [20240327, 2, B, T])
    off = HEADER_BYTES
    inputs = np.frombuffer(sdata, "<i4", BT, off).reshape(B, T).astype(np.int64); off += 4 * BT
    targets = np.frombuffer(sdata, "<i4", BT, off).reshape(B, T).astype(np.int64); off += 4 * BT
    logits_ref = np.frombuffer(sdata, "<f4", BT * V, off).reshape(B, T, V).astype(np.float64); off += 4 * BT * V
    loss_ref = float(np.frombuffer(sdata, "<f4", 1, off)[0]); off += 4
    gflat = np.frombuffer(sdata, "<f4", nparams, off).astype(np.float64)
    G = split_params(spath, gflat, shapes)
    for what, a in (("inputs", inputs), ("targets", targets)):
        if a.min() < 0 or a.max() >= V:
            raise CheckError(spath, f"{what} outside [0, {V})")

    # tokens
    tpath = os.path.join(d, "tokens.bin")
    try:
        ntok = int(np.fromfile(tpath, dtype="<i4", count=3)[2])
    except (OSError, IndexError):
        raise CheckError(tpath, "cannot read header")
    tdata = read_exact(tpath, HEADER_BYTES + 2 * ntok)
    check_header(tpath, tdata, [20240520, 1, ntok])
    toks = np.frombuffer(tdata, "<u2", ntok, HEADER_BYTES)
    if ntok < BT + 1 or toks.max() >= V:
        raise CheckError(tpath, f"{ntok} tokens (need > B*T={BT}), max {toks.max()} (need < V={V})")

    # forward
    logits, loss = np_forward(P, cfg, inputs, targets)
    err = np.abs(logits - logits_ref).max()
    if err > LOGIT_TOL:
        raise CheckError(spath, f"logits differ from numpy forward by {err:.3g} (tol {LOGIT_TOL})")
    if abs(loss - loss_ref) > LOSS_TOL:
        raise CheckError(spath, f"loss {loss_ref!r} but numpy forward gives {loss!r}")
    if abs(loss - losses[0]) > LOSS64_TOL:
        raise CheckError(ej_path, f"losses[0] {losses[0]!r} but numpy forward gives {loss!r}")

    # gradients
    if np.any(G["wte"][V:] != 0.0):
        raise CheckError(spath, "gradient of padded wte rows V..Vp-1 is not zero")
    rng = np.random.default_rng(12345)
    worst = 0.0
    for name, shape in shapes:
        rows = V if name == "wte" else shape[0]  # padded wte rows checked above
        for _ in range(fd_entries_per_tensor):
            idx = (int(rng.integers(rows)),) + tuple(int(rng.integers(n)) for n in shape[1:])
            h = 1e-5
            orig = P[name][idx]
            P[name][idx] = orig + h
            lp = np_forward(P, cfg, inputs, targets)[1]
            P[name][idx] = orig - h
            lm = np_forward(P, cfg, inputs, targets)[1]
            P[name][idx] = orig
            fd = (lp - lm) / (2 * h)
            g = G[name][idx]
            # float32 storage of g plus O(h^2) truncation and float64 round-off in fd
            tol = 1e-7 + 1e-5 * abs(fd)
            if abs(fd - g) > tol:
                raise CheckError(spath, f"gradient of {name}{list(idx)} is {g!r}, "
                                        f"finite difference gives {fd!r}")
            worst = max(worst, abs(fd - g))
    return dict(loss=loss, logit_err=float(err), grad_err=worst)


def main(argv):
    if not argv:
        print("usage: check_reference.py FIXTURE_DIR...", file=sys.stderr)
        return 2
    for d in argv:
        try:
            r = check_fixture(d)
        except CheckError as e:
            print(f"check_reference.py: {e}", file=sys.stderr)
            return 2
        print(f"OK {d}: loss {r['loss']:.9f}, max logit err {r['logit_err']:.2g}, "
              f"max grad err {r['grad_err']:.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
