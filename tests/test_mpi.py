"""gpt2-mpi under a real `mpirun -np 2`: the PyTorch fixtures, the losses of gpt2-seq (B divisible
by the rank count or not), bit-identical results across repeats, executors and threads per rank
for both update modes, the communication in traces, and bad input."""
import os
import shutil

import pytest

from variant_helpers import FIXTURES, binary, fixture_settings, json_lines, run, step_records

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun missing: scripts/install-deps.sh")


def mpirun(ranks, args, timeout=120):
    """`mpirun -q -np RANKS` (consent to run as root only when root; more ranks than cores allowed:
    the machine may have fewer cores than the test's ranks x threads)."""
    launcher = ["mpirun", "-q", "-np", str(ranks), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        launcher.append("--allow-run-as-root")
    return run(launcher + [str(a) for a in args], timeout=timeout)


def verify_args(name, steps=10):
    s = fixture_settings(name)
    d = FIXTURES / name
    return ["--model", d / "model.bin", "--verify", d / "state.bin", "--steps", steps, "--lr", s["lr"],
            "--wd", s["wd"], "--expect-losses", d / "losses.txt", "--tolerance", "1e-4", "--json"]


@pytest.mark.parametrize("update", ["sharded", "replicated"])
@pytest.mark.parametrize("name,compiler", [("odd36", "gcc"), ("tiny_prime", "clang")])
def test_mpi_matches_pytorch(name, compiler, update):
    """odd36 has B=3: one sequence on rank 0, two on rank 1."""
    r = mpirun(2, [binary("mpi", compiler)] + verify_args(name) + ["--update", update, "--threads", "1"])
    assert r.returncode == 0, r.stderr
    checks = [rec for rec in json_lines(r.stdout) if "verify" in rec]
    assert len(checks) == 19 and all(c["ok"] for c in checks)  # logits, loss, 16 gradients, the losses
    info = json_lines(r.stdout)[0]["info"]
    assert info["ranks"] == 2 and info["update"] == update
    assert [p["sequences"] for p in info["rank_placement"]] == \
        ([[0, 1], [1, 3]] if name == "odd36" else [[0, 1], [1, 2]])


TRAIN = ["--config", "tiny", "-T", "16", "--steps", "10", "--lr", "1e-3", "--json"]


def losses_and_params(tmp_path, tag, args, ranks=2):
    out = tmp_path / f"{tag}.bin"
    r = mpirun(ranks, [binary("mpi")] + TRAIN + args + ["--save", out]) if ranks else \
        run([binary("seq")] + TRAIN + args + ["--save", out])
    assert r.returncode == 0, r.stderr
    return [s["loss"] for s in step_records(r.stdout)], out.read_bytes()


@pytest.mark.parametrize("B", [3, 4])
def test_mpi_is_seq_up_to_rounding_and_bit_identical_across_executors_threads_repeats(tmp_path, B):
    seq_losses, _ = losses_and_params(tmp_path, "seq", ["-B", B], ranks=0)
    results = {}
    for update in ("sharded", "replicated"):
        for executor, threads in (("forkjoin", 1), ("forkjoin", 2), ("taskiter", 2)):
            tag = f"{update}-{executor}-{threads}"
            results[tag] = losses_and_params(tmp_path, tag, ["-B", B, "--update", update, "--executor",
                                                             executor, "--threads", threads])
        results[f"{update}-repeat"] = losses_and_params(tmp_path, f"{update}-repeat",
                                                        ["-B", B, "--update", update, "--threads", 1])
    losses, params = results["sharded-forkjoin-1"]
    assert max(abs(a - b) for a, b in zip(losses, seq_losses)) < 1e-5
    for tag, (other_losses, other_params) in results.items():
        # bit for bit: the reductions' order depends on the rank count only (the two update
        # modes also agree: AdamW is elementwise on the same averaged gradient)
        assert other_losses == losses, tag
        assert other_params == params, tag


def test_mpi_trace_records_communication(tmp_path):
    trace = tmp_path / "trace.csv"
    r = mpirun(2, [binary("mpi"), "--config", "tiny", "-B", "2", "-T", "16", "--steps", "2", "--json",
                   "--threads", "1", "--executor", "tasks", "--trace", trace])
    assert r.returncode == 0, r.stderr
    rows = [line.split(",") for line in trace.read_text().splitlines()[1:]]
    comm = [row for row in rows if row[2] == "comm"]
    # per step and rank: the gradients' reduce-scatter and the parameters' all-gather
    assert sorted({(row[5], row[10]) for row in comm}) == [
        ("comm grad reduce-scatter", "0"), ("comm grad reduce-scatter", "1"),
        ("comm param all-gather", "0"), ("comm param all-gather", "1")]
    assert len(comm) == 2 * 2 * 2
    assert {row[10] for row in rows} == {"0", "1"}  # rank 1's thread 0 is worker 1
    steps = step_records(r.stdout)
    assert all(s["comm_s"] > 0 for s in steps)


def test_mpi_one_rank_without_mpirun_is_seq(tmp_path):
    """Run directly, gpt2-mpi is one rank (MPI's singleton): the same bits as gpt2-seq."""
    out_seq, out_mpi = tmp_path / "seq.bin", tmp_path / "mpi.bin"
    a = run([binary("seq")] + TRAIN + ["-B", "3", "--save", out_seq])
    b = run([binary("mpi")] + TRAIN + ["-B", "3", "--save", out_mpi, "--threads", "2"])
    assert a.returncode == 0 and b.returncode == 0, b.stderr
    assert [s["loss"] for s in step_records(a.stdout)] == [s["loss"] for s in step_records(b.stdout)]
    assert out_seq.read_bytes() == out_mpi.read_bytes()


@pytest.mark.parametrize("args,expect", [
    (["-B", "1"], "-B: a batch of 1 sequences cannot be split over 2 ranks"),
    (["--update", "mirrored"], "--update: 'mirrored' is neither replicated nor sharded"),
    (["--executor", "seq"], "--executor: unknown executor 'seq' (known: forkjoin, tasks, taskiter)"),
])
def test_mpi_bad_input_is_one_line_exit_2(args, expect):
    r = mpirun(2, [binary("mpi"), "--config", "tiny", "-T", "8", "--steps", "1"] + args)
    assert r.returncode == 2
    [line] = r.stderr.strip().splitlines()
    assert line.startswith(f"gpt2-mpi: {expect}")
