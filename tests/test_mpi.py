"""gpt2-mpi under a real `mpirun -np 2`: the PyTorch fixtures, the losses of gpt2-seq (B divisible
by the rank count or not), bit-identical results across repeats, executors and threads per rank
for both update modes, the communication in traces, and bad input."""
import os
import signal
import struct
import subprocess
import time

import pytest

import components
from variant_helpers import FIXTURES, RUNTIME, binary, fixture_settings, json_lines, run, step_records

pytestmark = pytest.mark.needs("mpi")
# the runs that train on every rank with several threads are marked serial (tests/conftest.py); the bad
# input and disagreement cases end before any training and run beside other tests


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


@pytest.mark.serial
@pytest.mark.parametrize("overlap", ["off", "on"])
@pytest.mark.parametrize("update", ["sharded", "replicated"])
@pytest.mark.parametrize("name,compiler", [("odd36", "gcc"), ("tiny_prime", "clang")])
def test_mpi_matches_pytorch(name, compiler, update, overlap):
    """odd36 has B=3: one sequence on rank 0, two on rank 1."""
    r = mpirun(2, [binary("mpi", compiler)] + verify_args(name) + ["--update", update, "--threads", "1",
                                                                   "--overlap", overlap])
    assert r.returncode == 0, r.stderr
    checks = [rec for rec in json_lines(r.stdout) if "verify" in rec]
    assert len(checks) == 19 and all(c["ok"] for c in checks)  # logits, loss, 16 gradients, the losses
    info = json_lines(r.stdout)[0]["info"]
    assert info["ranks"] == 2 and info["update"] == update
    assert [p["sequences"] for p in info["rank_placement"]] == \
        ([[0, 1], [1, 3]] if name == "odd36" else [[0, 1], [1, 2]])


STEPS = 10
TRAIN = ["--config", "tiny", "-T", "16", "--steps", STEPS, "--lr", "1e-3", "--json"]


def losses_and_params(tmp_path, tag, args, ranks=2):
    out = tmp_path / f"{tag}.bin"
    r = mpirun(ranks, [binary("mpi")] + TRAIN + args + ["--save", out]) if ranks else \
        run([binary("seq")] + TRAIN + args + ["--save", out])
    assert r.returncode == 0, r.stderr
    losses = [s["loss"] for s in step_records(r.stdout)]
    # every step's loss: the comparisons zip two runs' losses, which would stop at a short one
    assert len(losses) == STEPS, (tag, losses)
    return losses, out.read_bytes()


@pytest.mark.serial
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


def every_executor(tmp_path, prefix, options, ranks):
    """{PREFIX-EXECUTOR-THREADS: (losses, params)} of a 3-sequence run with `options` under every node
    executor, forkjoin at 1 and 2 threads."""
    runs = {}
    for executor, threads in (("forkjoin", 1), ("forkjoin", 2), ("tasks", 2), ("taskiter", 2)):
        tag = f"{prefix}-{executor}-{threads}"
        runs[tag] = losses_and_params(tmp_path, tag, ["-B", 3, *options, "--executor", executor, "--threads", threads],
                                      ranks)
    return runs


@pytest.mark.serial
@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_ring_and_direct_collectives_at_1_2_3_ranks_every_executor(tmp_path, ranks):
    """The ring (default) at 1, 2 and 3 ranks with every node executor: within 1e-5 of seq, bit for
    bit across executors, threads and a repeat (its summation order depends on the rank count
    only); the direct collective within 1e-6 of it (the same bits up to 2 ranks, a different order
    at 3)."""
    seq_losses, seq_params = losses_and_params(tmp_path, "seq", ["-B", 3], ranks=0)
    results = every_executor(tmp_path, "ring", ["--collective", "ring"], ranks)
    results["repeat"] = losses_and_params(tmp_path, "repeat", ["-B", 3, "--threads", 1], ranks)
    losses, params = results["ring-forkjoin-1"]
    assert max(abs(a - b) for a, b in zip(losses, seq_losses)) < 1e-5
    if ranks == 1:
        assert (losses, params) == (seq_losses, seq_params)
    for tag, other in results.items():
        assert other == (losses, params), tag
    direct_losses, direct_params = losses_and_params(tmp_path, "direct", ["-B", 3, "--collective", "direct",
                                                                          "--threads", 1], ranks)
    assert max(abs(a - b) for a, b in zip(losses, direct_losses)) < 1e-6
    if ranks <= 2:
        assert (direct_losses, direct_params) == (losses, params)


@pytest.mark.serial
@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_overlap_at_1_2_3_ranks_every_executor(tmp_path, ranks):
    """--overlap on (the gradients reduced bucket by bucket beside the backward pass) at 1, 2 and 3
    ranks with every node executor: within 1e-5 of seq, bit for bit across executors, threads, a
    repeat and the update modes; within 1e-6 of --overlap off, the same bits up to 2 ranks (a sum
    of two terms has one value in either order) and with the direct collective at any rank count
    (its sums run in rank order either way)."""
    seq_losses, seq_params = losses_and_params(tmp_path, "seq", ["-B", 3], ranks=0)
    results = every_executor(tmp_path, "on", ["--overlap", "on"], ranks)
    results["repeat"] = losses_and_params(tmp_path, "repeat", ["-B", 3, "--overlap", "on", "--threads", 1], ranks)
    results["replicated"] = losses_and_params(tmp_path, "replicated", ["-B", 3, "--overlap", "on", "--update",
                                                                       "replicated", "--executor", "taskiter",
                                                                       "--threads", 2], ranks)
    losses, params = results["on-forkjoin-1"]
    assert max(abs(a - b) for a, b in zip(losses, seq_losses)) < 1e-5
    if ranks == 1:
        assert (losses, params) == (seq_losses, seq_params)
    for tag, other in results.items():
        assert other == (losses, params), tag
    off_losses, off_params = losses_and_params(tmp_path, "off", ["-B", 3, "--overlap", "off", "--threads", 1], ranks)
    assert max(abs(a - b) for a, b in zip(losses, off_losses)) < 1e-6
    if ranks <= 2:
        assert (off_losses, off_params) == (losses, params)
    direct = [losses_and_params(tmp_path, f"direct-{o}", ["-B", 3, "--collective", "direct", "--overlap", o,
                                                           "--executor", "tasks", "--threads", 2], ranks)
              for o in ("on", "off")]
    assert direct[0] == direct[1]


@pytest.mark.serial
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("runtime", RUNTIME)
def test_runtime_executors_on_every_rank_are_taskiter(tmp_path, runtime, ranks):
    """--executor nosv and starpu (the variants on a task runtime, run inside each rank) at 2 and 3
    ranks, --overlap off and on: the same bits as --executor taskiter, whose chunking they share,
    and the info line names the runtime."""
    for overlap in ("off", "on"):
        common = ["-B", 3, "--overlap", overlap, "--threads", 2]
        want = losses_and_params(tmp_path, f"taskiter-{overlap}", common + ["--executor", "taskiter"], ranks)
        got = losses_and_params(tmp_path, f"{runtime}-{overlap}", common + ["--executor", runtime], ranks)
        assert got == want, overlap
    r = mpirun(ranks, [binary("mpi"), "--config", "tiny", "-T", 16, "-B", 3, "--steps", 1, "--json", "--executor",
                       runtime, "--threads", 1])
    assert r.returncode == 0, r.stderr
    info = json_lines(r.stdout)[0]["info"]
    assert info["executor"] == runtime and info["runtime"]["name"] == runtime and info["ranks"] == ranks


@pytest.mark.serial
def test_overlap_trace_records_every_bucket_on_the_communication_thread(tmp_path):
    """Per step and rank: each bucket's reduction and its parameters' all-gather on the rank's
    communication thread (numbered after every worker: rank r's is ranks x threads + r), and the
    start and wait operations of both on the workers."""
    trace = tmp_path / "trace.csv"
    r = mpirun(2, [binary("mpi"), "--config", "tiny", "-B", "2", "-T", "16", "--steps", "2", "--json",
                   "--threads", "1", "--executor", "taskiter", "--overlap", "on", "--trace", trace])
    assert r.returncode == 0, r.stderr
    assert json_lines(r.stdout)[0]["info"]["overlap"] == "on"
    rows = [line.split(",") for line in trace.read_text().splitlines()[1:]]
    comm = [row for row in rows if row[2] == "comm"]
    buckets = [f"comm {what} {layer}" for what in ("grad reduce-scatter", "param all-gather")
               for layer in ("L1", "L0", "wte+wpe+lnf")]
    for rank in (0, 1):
        mine = [row for row in comm if row[10] == str(2 + rank)]
        assert sorted(row[5] for row in mine) == sorted(buckets * 2)  # two steps
        workers = [row[5] for row in comm if row[10] == str(rank)]
        for bucket in buckets:
            assert workers.count(f"{bucket} start") == workers.count(f"{bucket} wait") == 2
    steps = step_records(r.stdout)
    assert all(s["comm_s"] > 0 for s in steps)


@pytest.mark.serial
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


def test_mpi_trace_of_no_steps_is_its_header(tmp_path):
    # nothing traced on any rank: the gathering has nothing to grow, which is no lack of memory
    trace = tmp_path / "trace.csv"
    r = mpirun(2, [binary("mpi"), "--config", "tiny", "-B", "2", "-T", "16", "--steps", "0", "--threads", "1",
                   "--trace", trace])
    assert r.returncode == 0 and "out of memory" not in r.stderr, r.stderr
    assert trace.read_text().count("\n") == 1


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
    (["--collective", "tree"], "--collective: 'tree' is neither ring nor direct"),
    (["--overlap", "yes"], "--overlap: 'yes' is neither on nor off"),
    (["--overlap"], "--overlap: missing value"),
    (["--executor", "seq"], "--executor: unknown executor 'seq' (known: forkjoin, tasks, taskiter{runtimes})"),
])
def test_mpi_bad_input_is_one_line_exit_2(args, expect):
    """gpt2-mpi knows the runtime executors too where the build found their runtimes."""
    expect = expect.format(runtimes="".join(f", {r}" for r in RUNTIME if not components.missing(r)))
    r = mpirun(2, [binary("mpi"), "--config", "tiny", "-T", "8", "--steps", "1"] + args)
    assert r.returncode == 2
    [line] = r.stderr.strip().splitlines()
    assert line.startswith(f"gpt2-mpi: {expect}")


# ----------------------------------------------------------------------------
# ranks agree before any collective work; a failure on one rank ends the whole job

AGREE_TIMEOUT = 20  # every case below must end within this many seconds
BASE = ["--config", "tiny", "-B", "3", "-T", "8", "--steps", "3", "--threads", "1"]


def launcher():
    out = ["mpirun", "-q", "--oversubscribe", "--bind-to", "none"]
    return out + (["--allow-run-as-root"] if os.geteuid() == 0 else [])


def mpmd(per_rank, timeout=AGREE_TIMEOUT):
    """mpirun's MPMD form, one rank per argument list: `-np 1 A : -np 1 B ...`."""
    cmd = launcher()
    for i, args in enumerate(per_rank):
        cmd += ([":"] if i else []) + ["-np", "1"] + [str(a) for a in args]
    return run(cmd, timeout=timeout)


def token_file(path, count, vocab=512, offset=0):
    tokens = [(offset + 7 * i) % vocab for i in range(count)]
    path.write_bytes(struct.pack("<256i", 20240520, 1, count, *([0] * 253)) + struct.pack(f"<{count}H", *tokens))
    return path


def check_one_line(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert not [line for line in r.stdout.splitlines() if '"step"' in line]  # nothing trained


def last_rank_case(case, tmp_path):
    """(arguments of every rank but the last, the last rank's, the words its line must hold)."""
    good = token_file(tmp_path / "good.bin", 200)
    common = BASE + ["--data", good]
    if case == "missing file":
        return common, BASE + ["--data", tmp_path / "nonexistent.bin"], ["nonexistent.bin", "No such file"]
    if case == "unreadable file":
        bad = tmp_path / "unreadable.bin"
        if os.geteuid() == 0:  # root reads any mode: a directory cannot be read as a token file either
            bad.mkdir()
            words = ["unreadable.bin", "directory"]
        else:
            token_file(bad, 200).chmod(0)
            words = ["unreadable.bin", "Permission denied"]
        return common, BASE + ["--data", bad], words
    if case == "token file too short":
        return common, BASE + ["--data", token_file(tmp_path / "short.bin", 3 * 8)], ["short.bin", "fewer than"]
    if case == "model":
        return BASE, ["--config", "small"] + BASE[2:], ["the model", "L=4"]
    if case == "B":
        return BASE, BASE + ["-B", "4"], ["-B", "4 there, 3 on rank 0"]
    if case == "T":
        return BASE, BASE + ["-T", "16"], ["-T", "16 there, 8 on rank 0"]
    if case == "data":
        other = token_file(tmp_path / "other.bin", 200, offset=1)
        return common, BASE + ["--data", other], ["--data"]
    if case == "update mode":
        return BASE, None, ["--update"]
    raise AssertionError(case)


def without_repeats(args):
    """The last value of each option given twice (the cases above add to BASE)."""
    out, seen = [], {}
    for i in range(0, len(args), 2):
        if args[i] in seen:
            out[seen[args[i]] + 1] = args[i + 1]
        else:
            seen[args[i]] = len(out)
            out += args[i:i + 2]
    return out


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("update", ["sharded", "replicated"])
@pytest.mark.parametrize("case", ["missing file", "unreadable file", "token file too short", "model", "B", "T",
                                  "data", "update mode"])
def test_one_rank_bad_or_disagreeing_ends_the_job_with_one_line(tmp_path, ranks, update, case):
    """Before ranks agreed first, a bad input on one rank hung the job (rank 0 waited in reduce_scatter for a
    rank that had left), and ranks given different B, T or update modes trained on inconsistent
    work and exited 0. Now every rank checks, then all agree: one line from rank 0 naming the
    rank, exit 2, within seconds."""
    others, last, words = last_rank_case(case, tmp_path)
    if case == "update mode":
        others, last = BASE + ["--update", update], BASE + ["--update", "replicated" if update == "sharded"
                                                             else "sharded"]
    else:
        others, last = others + ["--update", update], last + ["--update", update]
    per_rank = [[binary("mpi")] + without_repeats(others)] * (ranks - 1) + [[binary("mpi")] + without_repeats(last)]
    start = time.monotonic()
    r = mpmd(per_rank)
    check_one_line(r, f"rank {ranks - 1}", *words)
    assert time.monotonic() - start < AGREE_TIMEOUT


@pytest.mark.parametrize("extra,words", [
    (["--steps", "2"], ["--steps", "2 there, 3 on rank 0"]),
    (["--seed", "5"], ["--seed"]), (["--lr", "0.5"], ["--lr"]), (["--frobnicate"], ["unknown option"]),
    (["--json"], ["--json"]), (["--check"], ["what to run", "--check"]),
    (["--collective", "direct"], ["--collective", "direct there, ring on rank 0"]),
    (["--overlap", "on"], ["--overlap", "on there, off on rank 0"]),
])
def test_other_settings_that_must_match(extra, words):
    r = mpmd([[binary("mpi")] + BASE, [binary("mpi")] + without_repeats(BASE + extra)])
    check_one_line(r, "rank 1", *words)


def test_shuffle_and_vocabulary_on_one_rank(tmp_path):
    good = token_file(tmp_path / "good.bin", 200)
    r = mpmd([[binary("mpi")] + BASE + ["--data", good], [binary("mpi")] + BASE + ["--data", good, "--shuffle"]])
    check_one_line(r, "rank 1", "--shuffle")
    outside = token_file(tmp_path / "outside.bin", 200, vocab=60000, offset=1000)
    r = mpmd([[binary("mpi")] + BASE + ["--data", good], [binary("mpi")] + BASE + ["--data", outside]])
    check_one_line(r, "rank 1", "outside.bin")


def test_agreeing_ranks_train_and_the_same_failure_everywhere_names_no_rank(tmp_path):
    good = token_file(tmp_path / "good.bin", 200)
    r = mpmd([[binary("mpi")] + BASE + ["--data", good, "--json"]] * 3)
    assert r.returncode == 0, r.stderr
    assert len(step_records(r.stdout)) == 3
    r = mpmd([[binary("mpi")] + BASE + ["--data", tmp_path / "none.bin"]] * 2)
    check_one_line(r, "none.bin")
    assert not r.stderr.startswith("gpt2-mpi: rank")


def test_a_later_failure_on_one_rank_aborts_every_rank():
    """After the agreement (here: rank 1's allocation fails under a smaller address-space limit),
    the failing rank prints its line and MPI_Abort ends every rank: mpirun exits 2."""
    # d12's state for one sequence of 64 tokens is 2.1 GB; 1 GB of address space is ample for MPI
    args = [binary("mpi"), "--config", "d12", "-B", "2", "-T", "64", "--steps", "2", "--threads", "1"]
    limited = ["sh", "-c", "ulimit -v 1000000 && exec \"$0\" \"$@\""] + args
    start = time.monotonic()
    r = mpmd([args, limited])
    assert r.returncode == 2, (r.returncode, r.stderr)
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("gpt2-mpi: rank 1: out of memory"), line
    assert time.monotonic() - start < AGREE_TIMEOUT


def rank_pids(launcher_pid, rank):
    """The pids of the processes below launcher_pid that MPI started as `rank`."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat_fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
                children.setdefault(int(stat_fields[1]), []).append(int(entry))
            except OSError:
                pass
    below, todo = [], [launcher_pid]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            below.append(child)
            todo.append(child)
    out = []
    for pid in below:
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env and exe.endswith("gpt2-mpi"):
            out.append(pid)
    return out


@pytest.mark.serial
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("update", ["sharded", "replicated"])
def test_a_rank_killed_mid_step_ends_the_job(ranks, update):
    """A rank killed with SIGKILL while training: mpirun ends the job at once (Open MPI: exit 137)."""
    cmd = launcher() + ["-np", str(ranks), str(binary("mpi")), "--config", "tiny", "-B", "3", "-T", "8",
                        "--steps", "100000", "--threads", "1", "--update", update, "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:  # training has started: a step record from rank 0
            if '"step"' in line:
                break
        victims = rank_pids(proc.pid, ranks - 1)
        assert victims
        killed_at = time.monotonic()
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        proc.communicate(timeout=AGREE_TIMEOUT)
        assert proc.returncode != 0
        assert time.monotonic() - killed_at < AGREE_TIMEOUT
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_describe_graph_is_refused_before_the_info_line(tmp_path):
    """gpt2-mpi --describe-graph printed its info line, then refused."""
    r = run([binary("mpi"), "--config", "tiny", "-T", "8", "--json", "--describe-graph", tmp_path / "g.json"])
    assert r.returncode == 2 and r.stdout == ""
    [line] = r.stderr.strip().splitlines()
    assert "--describe-graph" in line and "does not describe its schedule" in line
