"""crafted headers whose sizes overflow. A generator builds
checkpoint, debug-state and token-file headers that overflow each size
product, among them checkpoints that passed the old size check (the int
products 3*C and 4*C wrapped, and the parameter count wrapped to what a 1 KB
file holds). Every variant, normal and ASan+UBSan builds, must refuse each
with exit status 2 and one line naming the file: never a signal, a sanitizer
report or a hang."""
import struct
import subprocess

import pytest

from variant_helpers import FIXTURES, ROOT, VARIANTS, binary, make, run

MODEL = FIXTURES / "odd36" / "model.bin"   # maxT 32, V 250, Vp 256, L 3, NH 3, C 36
STATE = FIXTURES / "odd36" / "state.bin"
TOKENS = FIXTURES / "odd36" / "tokens.bin"
INT_MAX = 2**31 - 1
# model.h
LIMITS = {"maxT": 65536, "V": 1 << 20, "Vp": 1 << 20, "L": 1024, "NH": 1024, "C": 16384}
TINY = {"maxT": 4, "V": 5, "Vp": 8, "L": 1, "NH": 2, "C": 4}
SAN_ENV = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0", "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
           "LSAN_OPTIONS": f"suppressions={ROOT / 'tests' / 'lsan.supp'}"}


def i32(v):
    return ((v + 2**31) % 2**32) - 2**31


def header(magic, version, *values):
    ints = [magic, version, *values] + [0] * (256 - 2 - len(values))
    return struct.pack("<256i", *[i32(v) for v in ints])


def checkpoint_header(maxT, V, Vp, L, NH, C):
    return header(20240326, 3, maxT, V, L, NH, C, Vp)


def num_parameters(maxT, V, Vp, L, NH, C):
    return Vp * C + maxT * C + L * (12 * C * C + 13 * C) + 2 * C


def old_parameter_count(maxT, V, Vp, L, NH, C):
    """The parameter count as the code before the fix computed it: shapes in
    int (3*C and 4*C wrap at 32 bits), each tensor's size a size_t product of
    the sign-extended ints, the sum modulo 2**64."""
    M = 2**64
    shapes = [(Vp, C, 0), (maxT, C, 0)] + [(r, c, 1) for r, c in [
        (C, 1), (C, 1), (i32(3 * C), C), (i32(3 * C), 1), (C, C), (C, 1), (C, 1), (C, 1),
        (i32(4 * C), C), (i32(4 * C), 1), (C, i32(4 * C)), (C, 1)]] + [(C, 1, 0), (C, 1, 0)]
    return sum((r % M) * (c % M) * (L if per_layer else 1) for r, c, per_layer in shapes) % M


def passed_old_check(cfg, file_size):
    c = cfg
    if min(c.values()) <= 0 or c["Vp"] < c["V"] or c["C"] % c["NH"] or c["C"] * c["Vp"] > 2**34 or c["L"] > 4096:
        return False
    return (1024 + 4 * old_parameter_count(**c)) % 2**64 == file_size


def wrapping_checkpoints(limit=8):
    """Headers that the old check accepted for a file of 1024 + 4k bytes
    (k < 256): the count is linear in maxT, so solve maxT*C = k - rest
    (mod 2**62) for maxT, over C with many factors of two (where 3*C, 4*C
    and the products wrap), a few L and Vp."""
    found = []
    for e in range(30, 19, -1):
        for m in (1, 3, 5, 7):
            C = m << e
            if C > INT_MAX:
                continue
            g = 1 << e
            mod = 2**62 // g
            inv = pow(C // g, -1, mod)
            for L in (1, 2, 3, 5, 16):
                for Vp in (1, 7, 32, 128):
                    if C * Vp > 2**34:
                        continue
                    cfg = {"maxT": 0, "V": Vp, "Vp": Vp, "L": L, "NH": 1, "C": C}
                    rest = old_parameter_count(**cfg)
                    k = rest % g  # maxT*C is a multiple of g: the payload k must match rest mod g
                    if k >= 256:
                        continue
                    maxT = ((k - rest) // g * inv) % mod
                    if not 0 < maxT <= INT_MAX:
                        continue
                    cfg["maxT"] = maxT
                    size = 1024 + 4 * k
                    if passed_old_check(cfg, size):
                        found.append((f"wrap-C{C}-L{L}-Vp{Vp}", checkpoint_header(**cfg) + b"\0" * (4 * k)))
                        break
                if len(found) >= limit:
                    return found
    return found


def checkpoint_cases():
    cases = wrapping_checkpoints()
    assert any(name.startswith("wrap-C536870912-L1") for name, _ in cases), "the header that wrapped the old 32-bit check is generated"
    payload = struct.pack(f"<{num_parameters(**TINY)}f", *([0.01] * num_parameters(**TINY)))
    # each dimension alone just above its limit, at 2^29 and at INT_MAX; zero and negative
    for dim, limit in LIMITS.items():
        for value in (limit + 1, 2**29, INT_MAX, 0, -1):
            cfg = dict(TINY, **{dim: value})
            if dim == "V":
                cfg["Vp"] = max(cfg["Vp"], value)
            cases.append((f"{dim}={value}", checkpoint_header(**cfg) + payload))
    # products that overflow 32 and 64 bits with every dimension within int
    for name, cfg in [("C*C*L", dict(TINY, C=2**16, NH=1, L=2**15)), ("Vp*C", dict(TINY, Vp=2**30, C=2**30, NH=1)),
                      ("maxT*C", dict(TINY, maxT=INT_MAX, C=2**30, NH=2)), ("4C", dict(TINY, C=2**29 + 4))]:
        cases.append((f"product-{name}", checkpoint_header(**cfg)))
        cases.append((f"product-{name}-payload", checkpoint_header(**cfg) + payload))
    return cases


def debug_state_cases():
    body = STATE.read_bytes()[1024:]
    cases = []
    for B, T in [(INT_MAX, 32), (2**30, 4), (2**24, 32), (2**21, 13), (1, INT_MAX), (INT_MAX, INT_MAX), (3, 33),
                 (0, 13), (-1, 13), (3, -5), (2**31 // 13 + 1, 13), (8589935, 1)]:
        cases.append((f"B={B},T={T}", header(20240327, 2, B, T) + body))
        cases.append((f"B={B},T={T}-header-only", header(20240327, 2, B, T)))
    return cases


def token_cases():
    body = TOKENS.read_bytes()[1024:]
    return [(f"count={n}", header(20240520, 1, n) + body) for n in (INT_MAX, 2**30, 2**31 - 2, -1, -(2**31), 0, 301)]


@pytest.fixture(scope="module")
def asan_build():
    r = make("asan")
    assert r.returncode == 0, r.stdout + r.stderr
    return ROOT / "build" / "asan"


def binaries(asan_dir, case, matrix):
    """The variants a case is run on, each in the normal and the ASan+UBSan build. The loader is
    shared, so in the quick tier every case goes to seq and to one other variant in turn (each variant
    still meets a share of every kind of header); the long tier runs every case on every variant."""
    chosen = VARIANTS if matrix == "every-variant" else [VARIANTS[0], VARIANTS[1 + case % (len(VARIANTS) - 1)]]
    return [(binary(v), None) for v in chosen] + [(asan_dir / f"gpt2-{v}", SAN_ENV) for v in chosen]


def check_refused(cases, tmp_path, asan_dir, matrix, args_for):
    failures = []
    for i, (name, data) in enumerate(cases):
        path = tmp_path / f"hostile-{i}.bin"
        path.write_bytes(data)
        for exe, env in binaries(asan_dir, i, matrix):
            args = [exe, *args_for(path), "--steps", "1"]
            if "seq" not in exe.name:
                args += ["--threads", "2"]
            try:
                r = run(args, timeout=60, env=env)
            except subprocess.TimeoutExpired:
                failures.append(f"{name}: {exe}: hang")
                continue
            lines = r.stderr.strip().splitlines()
            if (r.returncode != 2 or r.stdout or len(lines) != 1 or str(path) not in lines[0]
                    or "Sanitizer" in r.stderr or "runtime error" in r.stderr):
                failures.append(f"{name}: {exe}: rc {r.returncode}: {r.stderr[-600:]}")
    assert not failures, "\n".join(failures[:10])


# every case on seq and one other variant in turn, or on every variant (the long tier)
MATRIX = pytest.mark.parametrize("matrix", ["rotating", "every-variant"])


def test_generator_reproduces_the_old_wrap():
    # the file that wrapped the old check: 1 KB, C = 2^29, maxT near 2^31, accepted by it
    cfg = {"maxT": 2**31 - 7 - 32, "V": 32, "Vp": 32, "L": 1, "NH": 1, "C": 2**29}
    assert passed_old_check(cfg, 1024)
    assert len(wrapping_checkpoints()) >= 4


@MATRIX
def test_hostile_checkpoints_are_refused(tmp_path, asan_build, matrix):
    check_refused(checkpoint_cases(), tmp_path, asan_build, matrix, lambda p: ["--model", p, "-B", "1", "-T", "1"])


@MATRIX
def test_hostile_debug_states_are_refused(tmp_path, asan_build, matrix):
    check_refused(debug_state_cases(), tmp_path, asan_build, matrix, lambda p: ["--model", MODEL, "--verify", p])


@MATRIX
def test_hostile_token_files_are_refused(tmp_path, asan_build, matrix):
    check_refused(token_cases(), tmp_path, asan_build, matrix, lambda p: ["--model", MODEL, "--data", p, "-B", "1", "-T", "4"])


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("B,T,needle", [(2**20, 32, "B*T=33554432 exceeds the limit"),
                                        (300000, 32, "more than the limit")])
def test_state_beyond_limits_is_refused_before_allocation(variant, B, T, needle):
    r = run([binary(variant), "--model", MODEL, "-B", str(B), "-T", str(T), "--steps", "1"], timeout=60)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr


@pytest.mark.parametrize("variant", ["tasks", "taskiter"])
def test_too_many_tasks_is_refused(variant):
    # one token per chunk: over 2^22 tasks per step
    r = run([binary(variant), "--model", MODEL, "-B", "4096", "-T", "32", "--batch-subsize", "1", "--token-chunk", "1",
             "--steps", "1"],
            timeout=120)
    assert r.returncode == 2, r.stderr
    assert "tasks per step exceed the limit" in r.stderr.strip().splitlines()[-1]
