#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora, tests/fuzz/corpus/<target>/: small
valid files for the model of tests/fuzz/fuzz.h (FUZZ_CONFIG) and broken ones
(truncated, wrong magic or version, dimensions that overflow, counts that do
not match). Deterministic; run it again after changing it:

    python3 tests/fuzz/make_corpus.py

Files named regression-* are crashing inputs found by fuzzing; this script
leaves them alone."""
import random
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
# maxT, V, Vp, L, NH, C as in fuzz.h
TINY = dict(maxT=4, V=5, Vp=8, L=1, NH=2, C=4)
FUZZ_VOCAB = 512


def num_parameters(maxT, V, Vp, L, NH, C):
    per_layer = 2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + 4 * C * C + 4 * C + 4 * C * C + C
    return Vp * C + maxT * C + L * per_layer + 2 * C


def header(magic, version, *values):
    ints = [magic, version, *values] + [0] * (256 - 2 - len(values))
    return struct.pack("<256i", *[((v + 2**31) % 2**32) - 2**31 for v in ints])


def checkpoint_header(maxT, V, Vp, L, NH, C):
    return header(20240326, 3, maxT, V, L, NH, C, Vp)


def floats(n, rng):
    return struct.pack(f"<{n}f", *[rng.uniform(-0.1, 0.1) for _ in range(n)])


def checkpoints(rng):
    out = {}
    for i, cfg in enumerate([TINY, dict(maxT=2, V=3, Vp=3, L=2, NH=1, C=2), dict(maxT=1, V=1, Vp=1, L=1, NH=1, C=1)]):
        out[f"valid-{i}.bin"] = checkpoint_header(**cfg) + floats(num_parameters(**cfg), rng)
    valid = out["valid-0.bin"]
    out["truncated-header.bin"] = valid[:100]
    out["truncated-params.bin"] = valid[:-4]
    out["header-only.bin"] = valid[:1024]
    out["empty.bin"] = b""
    out["wrong-magic.bin"] = header(20240327, 3) + valid[1024:]
    out["wrong-version.bin"] = header(20240326, 2) + valid[1024:]
    out["nh-not-dividing-c.bin"] = checkpoint_header(**dict(TINY, NH=3)) + valid[1024:]
    out["vp-below-v.bin"] = checkpoint_header(**dict(TINY, Vp=4)) + valid[1024:]
    # C = 2^29, maxT near 2^31: the int products 4*C wrapped and the
    # parameter count came out as 0, matching a header-only file
    out["issue23-wrap.bin"] = checkpoint_header(maxT=2**31 - 7 - 32, V=32, Vp=32, L=1, NH=1, C=2**29)
    out["c-at-int-max.bin"] = checkpoint_header(**dict(TINY, C=2**31 - 1, NH=1)) + valid[1024:]
    out["negative-layers.bin"] = checkpoint_header(**dict(TINY, L=-1)) + valid[1024:]
    return out


def token_files(rng):
    tokens = [rng.randrange(FUZZ_VOCAB) for _ in range(16)]
    valid = header(20240520, 1, len(tokens)) + struct.pack(f"<{len(tokens)}H", *tokens)
    return {
        "valid.bin": valid,
        "one-token.bin": header(20240520, 1, 1) + struct.pack("<H", FUZZ_VOCAB - 1),
        "outside-vocab.bin": header(20240520, 1, 2) + struct.pack("<2H", 1, FUZZ_VOCAB),
        "count-zero.bin": header(20240520, 1, 0),
        "count-negative.bin": header(20240520, 1, -1) + b"\0\0",
        "count-int-max.bin": header(20240520, 1, 2**31 - 1) + b"\0\0",
        "count-too-large.bin": header(20240520, 1, 17) + valid[1024:],
        "truncated.bin": valid[:1030],
        "wrong-magic.bin": header(20240326, 1, 16) + valid[1024:],
    }


def debug_states(rng):
    n = num_parameters(**TINY)
    V, maxT = TINY["V"], TINY["maxT"]

    def state(B, T, tokens=None):
        toks = tokens or [rng.randrange(V) for _ in range(2 * B * T)]
        return (header(20240327, 2, B, T) + struct.pack(f"<{2 * B * T}i", *toks) + floats(B * T * V, rng)
                + struct.pack("<f", 1.6) + floats(n, rng))

    valid = state(1, 2)
    return {
        "valid-1x2.bin": valid,
        "valid-2x4.bin": state(2, maxT),
        "t-above-maxt.bin": header(20240327, 2, 1, maxT + 1) + valid[1024:],
        "b-int-max.bin": header(20240327, 2, 2**31 - 1, maxT) + valid[1024:],
        "b-times-t-wraps.bin": header(20240327, 2, 2**30, 4) + valid[1024:],
        "negative-b.bin": header(20240327, 2, -1, 2) + valid[1024:],
        "input-outside-vocab.bin": state(1, 2, [0, V, 1, 1]),
        "target-negative.bin": state(1, 2, [0, 1, -1, 1]),
        "truncated.bin": valid[:-4],
        "wrong-version.bin": header(20240327, 1, 1, 2) + valid[1024:],
    }


def loss_files():
    return {
        "valid.txt": b"10.98\n10.5\n10.1\n",
        "commas.txt": b"1.5, 2.5,3.5\t4.5\r\n",
        "more-than-max.txt": b" ".join(b"%d.25" % i for i in range(12)),
        "not-a-number.txt": b"1.0 x2.0\n",
        "nan-inf.txt": b"nan inf -inf 1e40 0x1p3\n",
        "nul-byte.txt": b"1.0\0 2.0\n",
        "empty.txt": b"",
        "long-word.txt": b"1" * 300 + b"\n",
    }


def command_lines():
    """For fuzz_options: a first byte (bit 0: the distributed front; bits 1-2: ranks - 1), then
    arguments separated by NUL bytes."""
    def line(front, *args):
        return bytes([front]) + b"\0".join(a.encode() for a in args)
    return {
        "plain.bin": line(0, "--config", "tiny", "-B", "2", "-T", "8", "--steps", "1", "--json"),
        "spellings.bin": line(0, "--config=small", "-B4", "-T", "16", "--steps=3", "--lr", "1e-3", "--wd=0.1",
                              "--seed", "7"),
        "chunks.bin": line(0, "--config", "d6", "-B", "4", "-T", "64", "--batch-subsize", "2", "--token-chunk",
                           "16", "--channel-chunk", "128", "--threads", "2"),
        "chunk-too-large.bin": line(0, "--config", "tiny", "-T", "32", "--token-chunk", "64"),
        "tiles.bin": line(0, "--config", "small", "-B", "3", "--tile-columns", "96", "--tile-in-channels", "1024",
                          "--tile-sequences", "2", "--batch-subsize", "1"),
        "outputs.bin": line(0, "--config", "tiny", "--trace", "t.csv", "--save", "/dev/null",
                            "--describe-graph", "g.json", "--describe"),
        "verify.bin": line(0, "--model", "m.bin", "--verify", "s.bin", "--expect-losses", "l.txt",
                           "--tolerance", "1e-3"),
        "data.bin": line(0, "--config", "d12", "--data", "tok.bin", "--shuffle", "--data-order", "--check"),
        "mpi.bin": line(1 | (1 << 1), "--config", "tiny", "-B", "3", "-T", "8", "--update", "replicated",
                        "--executor", "taskiter"),
        "mpi-ranks.bin": line(1 | (3 << 1), "--config", "d12", "-B", "2", "--update", "sharded"),
        "memory.bin": line(0, "--config", "d12", "-B", "1048576", "-T", "1024"),
        "repeated.bin": line(0, "--steps", "1", "--steps", "2"),
        "whitespace.bin": line(0, "--threads", " 3", "--lr", "1e-3 "),
        "unknown.bin": line(0, "--frobnicate", "-x", "--", "extra"),
        "missing-value.bin": line(0, "--config", "tiny", "-T"),
        "control-bytes.bin": line(0, "--threads", "3\n4", "--update", "\x01"),
        "abbreviated.bin": line(1, "--thr", "2", "--upd", "sharded", "--s", "1"),
        "help.bin": line(0, "--config", "tiny", "--help"),
        "empty.bin": b"\0",
    }


def main():
    rng = random.Random(23)
    for target, files in [("checkpoint", checkpoints(rng)), ("tokens", token_files(rng)),
                          ("debug_state", debug_states(rng)), ("losses", loss_files()),
                          ("options", command_lines())]:
        d = HERE / "corpus" / target
        d.mkdir(parents=True, exist_ok=True)
        for old in d.iterdir():
            if not old.name.startswith("regression-"):
                old.unlink()
        for name, data in files.items():
            (d / name).write_bytes(data)


if __name__ == "__main__":
    main()
