"""gpt2-mpi --comm-threads K under a real mpirun: every collective cut into K channels, each on a
thread of its own, odd channels round the ring backward (docs/mpi.md, "Communication channels").
The same bits as one channel wherever the sums' order cannot differ (up to 3 ranks on the ring,
any rank count with the direct collective), close to them and repeatable where it can (4 ranks),
the runtime executors' bits equal to taskiter's, one trace record per job, and bad values refused."""
import pytest

import components
from test_mpi import BASE, check_one_line, losses_and_params, mpirun, mpmd
from variant_helpers import RUNTIME, binary, json_lines, run

pytestmark = pytest.mark.needs("mpi")


def channels(tmp_path, tag, ranks, K, *options):
    return losses_and_params(tmp_path, f"{tag}-k{K}", ["-B", 4, "--threads", 1, "--comm-threads", K, *options],
                             ranks)


@pytest.mark.serial
@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_channels_give_the_bits_of_one_up_to_3_ranks(tmp_path, ranks):
    """On the ring a backward channel sums shard q from rank q-1 down to q: at 2 ranks a sum of two
    terms, at 3 the same first two terms swapped (which commute) then the owner's: one value, so
    checkpoint and losses are bit for bit those of --comm-threads 1, in both update modes and with
    --overlap on and off."""
    for overlap in ("off", "on"):
        for update in ("sharded", "replicated"):
            tag = f"{overlap}-{update}"
            one = channels(tmp_path, tag, ranks, 1, "--overlap", overlap, "--update", update)
            for K in (2, 3):
                assert channels(tmp_path, tag, ranks, K, "--overlap", overlap, "--update", update) == one, (tag, K)


@pytest.mark.serial
@pytest.mark.parametrize("overlap", ["off", "on"])
def test_channels_at_4_ranks_are_close_to_one_and_repeatable(tmp_path, overlap):
    """At 4 ranks a backward channel's sums run in another order: within 1e-6 of one channel, and bit
    for bit the same in a repeat."""
    one_losses, _ = channels(tmp_path, overlap, 4, 1, "--overlap", overlap)
    for K in (2, 3):
        losses, params = channels(tmp_path, overlap, 4, K, "--overlap", overlap)
        assert max(abs(a - b) for a, b in zip(losses, one_losses)) < 1e-6, K
        assert channels(tmp_path, f"{overlap}-repeat", 4, K, "--overlap", overlap) == (losses, params), K


@pytest.mark.serial
@pytest.mark.parametrize("overlap", ["off", "on"])
def test_direct_collective_gives_the_same_bits_on_every_channel_count(tmp_path, overlap):
    """The direct collective sums in rank order on every channel: 3 ranks (where the ring's and the
    direct's bits differ), two channels, the bits of one."""
    one = channels(tmp_path, "direct", 3, 1, "--collective", "direct", "--overlap", overlap)
    assert channels(tmp_path, "direct", 3, 2, "--collective", "direct", "--overlap", overlap) == one
    assert channels(tmp_path, "ring", 3, 2, "--overlap", overlap) != one


@pytest.mark.serial
@pytest.mark.parametrize("runtime", RUNTIME)
def test_runtime_executors_with_channels_are_taskiter(tmp_path, runtime):
    """--executor nosv and starpu beside two communication threads (--overlap on) or a team of two
    (off): the bits of taskiter."""
    if components.missing(runtime):
        pytest.skip(f"{runtime} not built")
    for overlap in ("off", "on"):
        common = ["--overlap", overlap, "--threads", 2, "-B", 3, "--comm-threads", 2]
        want = losses_and_params(tmp_path, f"taskiter-{overlap}", common + ["--executor", "taskiter"], 2)
        assert losses_and_params(tmp_path, f"{runtime}-{overlap}", common + ["--executor", runtime], 2) == want


@pytest.mark.serial
def test_one_trace_record_per_job_and_the_info_line(tmp_path):
    """Three channels run each bucket's reduction and all-gather; the rank's communication thread
    still records each once per step (from the first channel's start to the last one's end), and
    the info line says how many channels ran."""
    rows = {}
    for K in (1, 3):
        trace = tmp_path / f"trace-{K}.csv"
        r = mpirun(2, [binary("mpi"), "--config", "tiny", "-B", 2, "-T", 16, "--steps", 2, "--json", "--threads", 1,
                       "--overlap", "on", "--comm-threads", K, "--trace", trace])
        assert r.returncode == 0, r.stderr
        assert json_lines(r.stdout)[0]["info"]["comm_threads"] == K
        table = [line.split(",") for line in trace.read_text().splitlines()[1:]]
        rows[K] = sorted((row[5], row[10]) for row in table if row[2] == "comm")
        assert all(float(row[11]) <= float(row[12]) for row in table if row[2] == "comm")
    assert rows[3] == rows[1] and rows[1]


@pytest.mark.parametrize("value,expect", [
    ("0", "--comm-threads: 0 is out of range [1, 64]"),
    ("65", "--comm-threads: 65 is out of range [1, 64]"),
    ("abc", "--comm-threads: 'abc' is not an integer"),
])
def test_bad_channel_counts_are_one_line_exit_2(value, expect):
    r = mpirun(2, [binary("mpi"), "--config", "tiny", "-T", 8, "--steps", 1, "--comm-threads", value])
    assert r.returncode == 2
    [line] = r.stderr.strip().splitlines()
    assert line == f"gpt2-mpi: {expect}"


def test_channel_counts_that_differ_across_ranks_are_refused():
    r = mpmd([[binary("mpi")] + BASE, [binary("mpi")] + BASE + ["--comm-threads", 2]])
    check_one_line(r, "rank 1", "--comm-threads", "2 there, 1 on rank 0")


def test_help_lists_the_option():
    r = run([binary("mpi"), "--help"])
    assert r.returncode == 0 and "--comm-threads K" in r.stdout
