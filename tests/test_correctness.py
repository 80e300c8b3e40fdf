"""The model against the PyTorch fixtures, and every parallel variant against
`seq`, bit for bit."""
import itertools
import json

import pytest

from variant_helpers import (COMPILERS, FIXTURES, PARALLEL, ROOT, RUNTIME, VARIANTS, binary, fixture_settings, make,
                             run, step_records)

FIXTURE_NAMES = ["tiny_prime", "odd36", "heads4", "wide20"]


def verify_args(name, steps=10):
    s = fixture_settings(name)
    d = FIXTURES / name
    return ["--model", d / "model.bin", "--verify", d / "state.bin", "--steps", steps, "--lr", s["lr"],
            "--wd", s["wd"], "--expect-losses", d / "losses.txt", "--tolerance", "1e-4", "--json"]


def check_verified(r):
    """A --verify --json run passed every check: logits, loss, 16 gradient tensors, the 10 losses."""
    assert r.returncode == 0, r.stderr
    checks = [rec for rec in map(json.loads, r.stdout.splitlines()) if "verify" in rec]
    assert len(checks) == 19, [c["verify"] for c in checks]
    assert all(c["ok"] for c in checks)
    assert all(c["max_abs_diff"] < 1e-4 for c in checks if "max_abs_diff" in c)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("kernels", ["fast", "reference"])
def test_seq_matches_pytorch(name, compiler, kernels):
    check_verified(run([binary("seq", compiler, kernels)] + verify_args(name)))


@pytest.mark.parametrize("variant", PARALLEL)
@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("kernels", ["fast", "reference"])
@pytest.mark.parametrize("name", ["odd36", "wide20"])
def test_parallel_variants_match_pytorch(variant, compiler, kernels, name):
    check_verified(run([binary(variant, compiler, kernels)] + verify_args(name) + [
        "--threads", "2", "--token-chunk", "5", "--tile-columns", "16", "--tile-in-channels", "24"]))


def test_verify_fails_beyond_tolerance():
    """A tolerance the float32 model cannot meet must fail the verification."""
    r = run([binary("seq")] + verify_args("odd36")[:-3] + ["--tolerance", "1e-12", "--json"])
    assert r.returncode == 1
    assert "verification failed" in r.stderr


def test_verify_detects_a_wrong_gradient(tmp_path):
    """Corrupting one stored gradient makes --verify fail on that tensor."""
    import struct
    d = FIXTURES / "tiny_prime"
    data = bytearray((d / "state.bin").read_bytes())
    # last float of the file is the last gradient (lnfb)
    value = struct.unpack_from("<f", data, len(data) - 4)[0]
    struct.pack_into("<f", data, len(data) - 4, value + 0.01)
    bad = tmp_path / "state.bin"
    bad.write_bytes(bytes(data))
    args = verify_args("tiny_prime", steps=0)
    args[args.index(d / "state.bin")] = bad
    r = run([binary("seq")] + [a for a in args if a not in ("--expect-losses", d / "losses.txt")])
    assert r.returncode == 1
    assert '"grad lnfb"' in r.stdout and '"ok": false' in r.stdout


def reference_run(model_args, steps, tmp_path, tag, kernels="fast"):
    out = tmp_path / f"seq-{tag}.bin"
    r = run([binary("seq", "gcc", kernels)] + model_args + ["--steps", steps, "--lr", "1e-3", "--wd", "0.01", "--json", "--save", out])
    assert r.returncode == 0, r.stderr
    return [rec["loss"] for rec in step_records(r.stdout)], out.read_bytes()


CASES = {
    # B=3, T=13 (prime), C=36, NH=3 from a checkpoint; V=250
    "odd36": ["--model", FIXTURES / "odd36" / "model.bin", "-B", "3", "-T", "13"],
    # embedded config, B=4, T=16, synthetic data
    "tiny": ["--config", "tiny", "-B", "4", "-T", "16", "--seed", "7"],
}
# (batch_subsize, token_chunk, tile_columns, tile_in_channels[, tile_sequences]): first none given (0: the chunking the
# executor chooses for its thread count; at 1 thread every row in one chunk and no pass that packs the
# weights); dividing and not dividing B and T, and larger than them (cut to B and T by within(): larger
# ones are bad input); then tiles of the products (0: the default) of whole panels, of widths that cut
# panels, down to a column, and as wide as the widest product (144 in odd36, C = 36); last, every row
# in one chunk with column tiles (no pass packs the weights: the automatic chunking wherever B x T <= C,
# d12 at B=4, T=64); then the products' rows in tiles of their own (tile_sequences): every
# sequence, fewer, and a count that is no multiple of BATCH_SUBSIZE (blocks of their common divisor);
# last, every product in a number of tiles (tiles_per_product, the automatic chunking's form where the
# rows are whole) with its rows whole and cut: with the rows whole in 16-column units (4 tiles: 16
# columns of tiny's C = 64, half a 32-column panel; odd36's C = 36 in tiles of 16, 16 and 4), with
# them cut in whole panels
CHUNKINGS = [(0, 0, 0, 0), (1, 1, 0, 0), (1, 5, 0, 0), (2, 4, 0, 0), (3, 7, 0, 0), (4, 13, 0, 0), (8, 100, 0, 0), (1, 16, 0, 0),
             (1, 5, 16, 32), (2, 4, 7, 20), (3, 7, 48, 1), (1, 16, 144, 144), (1, 1, 5, 3), (8, 100, 16, 32),
             (1, 13, 48, 36, 8), (1, 5, 16, 32, 2), (2, 4, 7, 20, 3), (1, 13, 0, 0, 8, 2), (1, 5, 0, 20, 0, 2),
             (1, 13, 0, 0, 8, 4), (1, 5, 0, 0, 0, 3)]
REPEATED = [(0, 0, 0, 0), (1, 1, 0, 0), (2, 4, 0, 0), (1, 5, 0, 0), (1, 5, 16, 32), (2, 4, 7, 20), (2, 4, 7, 20, 3)]
# make test's share of them (the whole lists run in the long tier, docs/testing.md): the automatic
# chunking, a prime token chunk, chunks that do not divide B or T, tiles that cut panels, the
# products' rows in tiles of their own, and a product in a number of tiles
QUICK_CHUNKINGS = [(0, 0, 0, 0), (1, 5, 0, 0), (3, 7, 0, 0), (2, 4, 7, 20), (1, 13, 48, 36, 8), (1, 5, 0, 20, 0, 2)]
QUICK_REPEATED = [(0, 0, 0, 0), (1, 5, 0, 0), (2, 4, 7, 20)]


def within(chunkings, case_args):
    """The chunkings with BATCH_SUBSIZE and k cut to the case's B and T (larger ones are refused as
    bad input: docs/variants.md, "Options"), duplicates dropped, in order: one chunk of the whole dimension."""
    B = int(case_args[case_args.index("-B") + 1]) if "-B" in case_args else 4
    T = int(case_args[case_args.index("-T") + 1]) if "-T" in case_args else 64
    out = []
    for bs, k, tc, ti, *rest in chunkings:
        ts, tp = (rest + [0, 0])[:2]
        c = (min(bs, B), min(k, T), tc, ti, min(ts, B) if ts else 0, tp)
        if c not in out:
            out.append(c)
    return out


@pytest.mark.parametrize("case,kernels", [("odd36", "fast"), ("tiny", "fast"), ("odd36", "reference")])
def test_parallel_variants_are_bit_identical_to_seq(case, kernels, tmp_path):
    """Within a kernel set, every variant, compiler, thread count and chunking
    gives seq's losses and final parameters exactly (the variants on a task runtime: below)."""
    thread_counts = [1, 2, 3, 4] if kernels == "fast" else [1, 3]
    runs, failures = bit_identity(case, kernels, [v for v in PARALLEL if v not in RUNTIME], COMPILERS, thread_counts,
                                  tmp_path)
    assert runs > (150 if kernels == "fast" else 60)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("case,kernels,thread_counts", [("odd36", "fast", [1, 2, 3]), ("tiny", "fast", [4]),
                                                        ("odd36", "reference", [3])])
def test_parallel_variants_are_bit_identical_to_seq_on_a_sample(case, kernels, thread_counts, tmp_path):
    """make test's sample of the test above: every variant and compiler, a chunking of each kind."""
    runs, failures = bit_identity(case, kernels, [v for v in PARALLEL if v not in RUNTIME], COMPILERS, thread_counts,
                                  tmp_path, QUICK_CHUNKINGS, QUICK_REPEATED)
    assert runs >= 2 * len(thread_counts) * (len(PARALLEL) - len(RUNTIME))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("kernels", ["fast", "reference"])
@pytest.mark.parametrize("variant", RUNTIME)
def test_runtime_variants_are_bit_identical_to_seq(variant, kernels, tmp_path):
    """The variants on a task runtime (nosv: taskiter's graph, starpu: tasks'), every chunking at 1, 2
    and 3 threads, the races' repetitions included, on one model per kernel set and the gcc build: a
    run costs about ten times a taskiter run (the runtime's start and stop), and what the runtime
    orders is the same graph whatever the model, the compiler or a fourth thread."""
    runs, failures = bit_identity("odd36", kernels, [variant], ["gcc"], [1, 2, 3], tmp_path)
    assert runs > 80
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("variant", RUNTIME)
def test_runtime_variants_are_bit_identical_to_seq_on_a_sample(variant, tmp_path):
    """make test's sample of the test above: a chunking of each kind at 1, 2 and 3 threads."""
    runs, failures = bit_identity("odd36", "fast", [variant], ["gcc"], [1, 2, 3], tmp_path, QUICK_CHUNKINGS,
                                  QUICK_REPEATED)
    assert runs > 3 * len(QUICK_CHUNKINGS)
    assert not failures, "\n".join(failures)


def bit_identity(case, kernels, variants, compilers, thread_counts, tmp_path, chunkings=CHUNKINGS,
                 repeated=REPEATED):
    """(runs, failures) of `variants` against seq's losses and final parameters after 10 steps, at
    every compiler, thread count and chunking (forkjoin: its own), several repetitions of the
    chunkings in `repeated` beyond 1 thread."""
    steps = 10
    expected_losses, expected_params = reference_run(CASES[case], steps, tmp_path, case, kernels)
    failures = []
    runs = 0
    for compiler, threads in itertools.product(compilers, thread_counts):
        for variant in variants:
            cases = [(0, 0, 0, 0, 0, 0)] if variant == "forkjoin" else within(chunkings, CASES[case])
            # several repetitions: a race shows up as a difference in one of them
            repetitions = 3 if threads > 1 else 1
            for (bs, k, tc, ti, ts, tp), rep in itertools.product(cases, range(repetitions)):
                if variant != "forkjoin" and rep > 0 and (bs, k, tc, ti, ts, tp) not in within(repeated, CASES[case]):
                    continue
                out = tmp_path / f"{variant}-{compiler}-{threads}-{bs}-{k}-{tc}-{ti}-{ts}-{tp}-{rep}.bin"
                args = [binary(variant, compiler, kernels)] + CASES[case] + [
                    "--steps", steps, "--lr", "1e-3", "--wd", "0.01", "--json", "--threads", threads, "--save", out]
                if bs:
                    args += ["--batch-subsize", bs, "--token-chunk", k]
                if tc:
                    args += ["--tile-columns", tc, "--tile-in-channels", ti]
                if ts:
                    args += ["--tile-sequences", ts]
                if tp:
                    args += ["--tiles-per-product", tp] + (["--tile-in-channels", ti] if ti else [])
                r = run(args)
                runs += 1
                label = f"{variant}/{compiler}/threads={threads}/bs={bs}/k={k}/tiles={tc},{ti},{ts},{tp}/rep={rep}"
                if r.returncode != 0:
                    failures.append(f"{label}: exit {r.returncode}: {r.stderr.strip()}")
                    continue
                losses = [rec["loss"] for rec in step_records(r.stdout)]
                if losses != expected_losses:
                    failures.append(f"{label}: losses {losses} != {expected_losses}")
                elif out.read_bytes() != expected_params:
                    failures.append(f"{label}: parameters differ after {steps} steps")
                out.unlink()
    return runs, failures


def test_training_lowers_the_loss():
    r = run([binary("seq"), "--config", "tiny", "-B", "4", "-T", "32", "--steps", "40", "--lr", "3e-3", "--json"])
    assert r.returncode == 0, r.stderr
    losses = [rec["loss"] for rec in step_records(r.stdout)]
    assert len(losses) == 40
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < first - 0.5, (first, last)


def test_json_keys_are_the_same_for_every_variant():
    keys = set()
    for variant in VARIANTS:
        r = run([binary(variant), "--config", "tiny", "-B", "2", "-T", "8", "--steps", "2", "--json", "--threads", "2"])
        assert r.returncode == 0, r.stderr
        records = step_records(r.stdout)
        assert [rec["step"] for rec in records] == [0, 1]
        keys.add(tuple(sorted(records[0])))
        info = __import__("json").loads(r.stdout.splitlines()[0])["info"]
        assert info["variant"] == variant
        assert info["omp_runtime"] in (("none",) if variant == "seq" else ("libgomp",))
    assert keys == {("backward_s", "forward_s", "involuntary_switches", "loss", "steal_s", "step", "step_s", "update_s")}


def test_clang_builds_run_on_llvm_openmp():
    r = run([binary("tasks", "clang"), "--config", "tiny", "-B", "2", "-T", "8", "--steps", "1", "--json"])
    assert r.returncode == 0, r.stderr
    assert __import__("json").loads(r.stdout.splitlines()[0])["info"]["omp_runtime"] == "libomp"


def test_checkpoint_round_trip(tmp_path):
    src = FIXTURES / "wide20" / "model.bin"
    out = tmp_path / "copy.bin"
    r = run([binary("seq"), "--model", src, "-B", "2", "-T", "11", "--steps", "0", "--save", out])
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == src.read_bytes()


def test_token_file_is_used(tmp_path):
    d = FIXTURES / "odd36"
    base = [binary("seq"), "--model", d / "model.bin", "-B", "2", "-T", "8", "--steps", "2", "--json"]
    with_file = run(base + ["--data", d / "tokens.bin"])
    synthetic = run(base)
    assert with_file.returncode == 0 and synthetic.returncode == 0, with_file.stderr + synthetic.stderr
    assert step_records(with_file.stdout)[0]["loss"] != step_records(synthetic.stdout)[0]["loss"]


def test_trace_records_every_chunk(tmp_path):
    import csv
    trace = tmp_path / "trace.csv"
    r = run([binary("tasks"), "--config", "tiny", "-B", "2", "-T", "8", "--steps", "2", "--json", "--threads", "2",
             "--token-chunk", "4", "--trace", trace])
    assert r.returncode == 0, r.stderr
    info = __import__("json").loads(r.stdout.splitlines()[0])["info"]
    rows = list(csv.DictReader(trace.open()))
    assert len(rows) == 2 * info["tasks_per_step"]
    assert {row["phase"] for row in rows} == {"forward", "backward", "update"}
    assert all(float(row["end_s"]) >= float(row["start_s"]) for row in rows)
    assert {row["iteration"] for row in rows} == {"0", "1"}


def test_avx2_builds_are_bit_identical_to_the_native_ones(tmp_path):
    """`make avx2` (-mavx2 -mfma instead of -march=native: the 6x16 micro-kernel where the native
    build may use the 8x32 AVX-512 one) gives the native builds' losses and parameters exactly, in
    each variant and chunking, and holds no AVX-512 instruction."""
    import subprocess
    names = [f"build/gcc/fast-avx2/gpt2-{v}" for v in ["seq"] + PARALLEL]
    built = make("-j2", *names)
    assert built.returncode == 0, built.stderr
    expected_losses, expected_params = reference_run(CASES["odd36"], 5, tmp_path, "native")
    for name in names:
        disassembly = subprocess.run(["objdump", "-d", ROOT / name], capture_output=True, text=True).stdout
        assert "zmm" not in disassembly, f"{name}: AVX-512 instructions"
        variant = name.rsplit("gpt2-", 1)[1]
        chunkings = [[]] if variant in ("seq", "forkjoin") else [[], ["--batch-subsize", "1", "--token-chunk", "5",
                                                                      "--tile-columns", "16", "--tile-in-channels", "24"]]
        for chunking in chunkings:
            out = tmp_path / f"{variant}-avx2.bin"
            r = run([ROOT / name] + CASES["odd36"] + ["--steps", 5, "--lr", "1e-3", "--wd", "0.01", "--json",
                                                      "--threads", 2, "--save", out] + chunking)
            assert r.returncode == 0, r.stderr
            assert [rec["loss"] for rec in step_records(r.stdout)] == expected_losses, (name, chunking)
            assert out.read_bytes() == expected_params, (name, chunking)


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("bind", [{}, {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"},
                                  {"OMP_PROC_BIND": "spread", "OMP_PLACES": "threads"}])
def test_nosv_runs_a_worker_per_thread_under_every_placement(compiler, bind):
    """nOS-V takes its CPUs from the thread that starts it, which OpenMP binds to one place under
    OMP_PROC_BIND (libgomp at start, libomp at its first call): the variant must still run as many
    workers as threads, where OpenMP would put them."""
    import json
    import os
    threads = min(2, len(os.sched_getaffinity(0)))
    r = run([binary("nosv", compiler), "--config", "tiny", "-B", "2", "-T", "8", "--steps", "1", "--json",
             "--threads", threads], env=bind)
    assert r.returncode == 0, r.stderr
    runtime = json.loads(r.stdout.splitlines()[0])["info"]["runtime"]
    assert runtime["workers"] == threads and len(set(runtime["cpus"])) == threads, runtime
