"""Distributed prediction (gpt2-mpi): the SimGrid replay of its messages against hand-worked times,
the two engines (the replay, the binary under SMPI) against each other, and `perfstudy predict
--distributed` on a real tiny sweep (its times are never judged here; the accuracy is checked on
recordings, tests/harness/test_validation.py)."""

import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import warm_perfstudy

from pstudy.analyse import distributed, network, smpi, validation
from pstudy.errors import StudyError
from pstudy.store import machinefiles, validationdata

REPO = Path(__file__).resolve().parents[2]
PERFSTUDY = REPO / "harness" / "perfstudy"
BUILD = REPO / "build" / "gcc" / "fast"
SIMGRID, WHY = network.available()
needs_simgrid = pytest.mark.skipif(not SIMGRID, reason=WHY)
SMPI_BINARY = REPO / "build" / "smpi" / "gpt2-mpi"
needs_smpi = pytest.mark.skipif(not SMPI_BINARY.exists() or shutil.which("smpirun") is None,
                                reason="build/smpi/gpt2-mpi (make smpi) and smpirun (libsimgrid-dev) needed")

MB4 = 4 << 20


def net(latency=2e-6, bw=10e9, intra_latency=1e-6, intra_bw=5e9):
    return machinefiles.Network(False, latency, bw, 1, 64, intra_latency, intra_bw)


@needs_simgrid
def test_two_ranks_of_one_node_by_hand():
    """2 ranks, one node, each shard one message of c floats (direct): the all-gather is one
    transfer each way at the shared-memory bandwidth; the reduce-scatter is that transfer, then the
    adds (2 x 12 bytes a float: own and received blocks) and the copy back (8), at the rank's memory
    bandwidth, plus one latency for the losses. The ring's one step receives the shard in 8 blocks
    (variants/mpi_collectives.c's RING_DEPTH) into two buffers, adding each (12 bytes a float) while the next
    arrives: at least the transfer and the last block's adds, less than the transfer and every
    block's adds one after the other."""
    n, reduce_bw = 2_000_000, 20e9
    c = n // 2
    nw = net()
    rs, ag, ring_rs, ring_ag = network.replay([
        network.spec(2, 2, n, MB4 * 4, nw, reduce_bw, "reduce_scatter", "direct"),
        network.spec(2, 2, n, MB4 * 4, nw, reduce_bw, "all_gather", "direct"),
        network.spec(2, 2, n, MB4 * 4, nw, reduce_bw, "reduce_scatter", "ring"),
        network.spec(2, 2, n, MB4 * 4, nw, reduce_bw, "all_gather", "ring")])
    transfer = nw.intra_latency_s + 4 * c / nw.intra_bandwidth_Bs
    assert ag == pytest.approx(transfer, rel=1e-6) and ring_ag == pytest.approx(transfer, rel=1e-6)
    assert rs == pytest.approx(transfer + 32 * c / reduce_bw + nw.latency_s, rel=1e-6)
    pipelined = 4 * c / nw.intra_bandwidth_Bs + 12 * (c / 8) / reduce_bw + nw.latency_s
    assert pipelined < ring_rs < transfer + 12 * c / reduce_bw + nw.latency_s


@needs_simgrid
def test_receive_order_makes_a_hotspot():
    """R nodes, one rank each, one message per shard. The all-gather's transfers all run at once:
    each node link carries R-1 blocks each way, (R-1) S / bw. The reduce-scatter receives from rank
    0, then 1, ...: most ranks pull from one sender at a time, whose link they share (4x longer at
    R = 8 in this replay); a formula of bytes over bandwidth misses that."""
    R, shard = 8, 1 << 20
    nw = net(bw=10e9, intra_bw=1e12)
    rs, ag = network.replay([network.spec(R, 1, R * shard, MB4, nw, 1e15, "reduce_scatter", "direct"),
                             network.spec(R, 1, R * shard, MB4, nw, 1e15, "all_gather", "direct")])
    even = (R - 1) * 4 * shard / nw.bandwidth_Bs
    assert even == pytest.approx(distributed.bandwidth_bound(nw, R, R, R * shard))
    assert ag == pytest.approx(even, rel=0.01)
    assert rs > 3 * even
    # deterministic: the same replay, the same times
    assert network.replay([network.spec(R, 1, R * shard, MB4, nw, 1e15, "reduce_scatter", "direct")]) == [rs]


@needs_simgrid
@pytest.mark.parametrize("R,ppn", [(8, 1), (16, 2), (7, 1)])
def test_the_ring_reaches_the_bandwidth_bound(R, ppn):
    """The ring's steps move one shard over every link at once: its reduce-scatter (the adds
    pipelined behind the transfers) and all-gather within 20% of the bandwidth bound, where
    direct's receive order makes the hotspot above. (With two ranks a node the ring still sends
    (R-1)/R of the data through each node's link where (nodes-1)/nodes would do: 7% more at 8
    nodes.)"""
    shard = 1 << 20
    nw = net(bw=10e9, intra_bw=20e9)
    rs, ag = network.replay([network.spec(R, ppn, R * shard, MB4, nw, 200e9, what, "ring")
                             for what in network.COLLECTIVES])
    bound = distributed.bandwidth_bound(nw, R, -(-R // ppn), R * shard)
    assert bound <= rs < 1.2 * bound
    assert bound <= ag < 1.2 * bound


@needs_simgrid
def test_messages_between_nodes_cross_no_shared_memory_link():
    """Open MPI sends a large message between nodes by RDMA from memory to memory: with one rank a
    node and shared-memory links a thousandth of the node links' bandwidth, the all-gather of two
    nodes is one message each way at the node link's bandwidth and latency alone."""
    shard = MB4 // 4
    nw = net(latency=2e-6, bw=10e9, intra_latency=1e-3, intra_bw=10e6)
    times = network.replay([network.spec(2, 1, 2 * shard, MB4, nw, 1e15, "all_gather", algorithm)
                            for algorithm in network.ALGORITHMS])
    assert times == pytest.approx([nw.latency_s + 4 * shard / nw.bandwidth_Bs] * 2, rel=1e-6)


@needs_simgrid
def test_two_channels_halve_the_ring_where_the_hop_inside_a_node_bounds_it():
    """Two nodes of two ranks, the node links 20x the shared-memory links: at one channel the ring's
    hop inside each node (rank 0 to 1, 2 to 3) carries (R-1)/R of the buffer one way at the intra
    bandwidth, its bound. The second channel goes round backward, through that link's other
    direction: the transfers (adds 1000x faster than the links) take half as long, with the rank's
    copies together no faster than one core's."""
    R, shard = 4, 2_000_000
    nw = net(bw=100e9, intra_bw=5e9)
    rs1, ag1, rs2, ag2 = network.replay([network.spec(R, 2, R * shard, MB4, nw, 1e13, what, "ring", channels, 5e9)
                                         for channels in (1, 2) for what in network.COLLECTIVES])
    one_way = (R - 1) / R * 4 * R * shard / nw.intra_bandwidth_Bs
    assert ag1 == pytest.approx(one_way, rel=0.01) and rs1 == pytest.approx(one_way, rel=0.02)
    assert ag1 / ag2 == pytest.approx(2.0, rel=0.02) and rs1 / rs2 == pytest.approx(2.0, rel=0.03)
    # the same bytes: a channel's slice of every shard, its messages cut from it
    assert sum(b - a for cut in network.slices(network.shards(R * shard, R), 2) for a, b in cut) == R * shard


def test_the_adds_run_where_the_binary_runs_them():
    """--overlap off at one channel: the ring's adds on the rank's threads, direct's on its main
    thread; --overlap on (variants/mpi_overlap.c's communication thread adds alone) and every
    channel from two on: one core each, K of them at once sharing the rank's bandwidth at K cores."""
    m = machinefiles.Machine("m", False, 8, 10.0, (1, 2, 4, 8), (10.0, 18.0, 30.0, 40.0))
    v = distributed.rank_view(m, 2)  # 4 cores a rank: v.bandwidth(n) = m.bandwidth(2 n) / 2
    ring, direct = distributed.Layout(4, 3, 2), distributed.Layout(4, 3, 2, "sharded", "direct")
    two = distributed.Layout(4, 2, 2, comm_threads=2)
    assert distributed.adds_Bs(v, ring, False) == pytest.approx(17.5e9)  # 3 threads
    assert distributed.adds_Bs(v, ring, True) == pytest.approx(9e9)  # one core
    assert distributed.adds_Bs(v, direct, False) == distributed.adds_Bs(v, direct, True) == pytest.approx(9e9)
    assert distributed.adds_Bs(v, two, False) == distributed.adds_Bs(v, two, True) == pytest.approx(15e9 / 2)
    # the channels' copies: one core's, or what two cores' memory bandwidth is over one core's
    nw = net(intra_bw=5e9)
    assert distributed.copy_Bs(nw, v, ring) == pytest.approx(5e9)
    assert distributed.copy_Bs(nw, v, two) == pytest.approx(5e9 * 15 / 9)


def test_the_communication_threads_have_cores_of_their_own():
    """The default threads a rank are its cores less the communication threads (none held by one rank
    alone); threads given that do not fit beside them are refused."""
    mn5 = machinefiles.load("mn5-gpp")
    layouts, _ = distributed.layouts_for(mn5, nodes=[1, 2], comm_threads=4)
    assert [(lay.threads, lay.comm_threads) for lay in layouts] == [(52, 4), (52, 4)]
    assert distributed.layouts_for(mn5, ranks=[1])[0][0].threads == 112
    with pytest.raises(StudyError, match="--threads-per-rank 56: with --comm-threads 1 a rank needs 57 cores"):
        distributed.layouts_for(mn5, nodes=[2], threads=56)
    with pytest.raises(StudyError, match="--comm-threads: expected an integer from 1 to 64, got 0"):
        distributed.layouts_for(mn5, nodes=[2], comm_threads=0)
    # the replay's messages grow with the ranks and the channels: fewer ranks a layout at more channels
    with pytest.raises(StudyError, match="--nodes 64: 128 ranks .* over the limit of 64 ranks a prediction replays "
                                         "at 16 channels"):
        distributed.layouts_for(mn5, nodes=[64], comm_threads=16)
    layouts, left_out = distributed.layouts_for(mn5, comm_threads=16)
    assert max(lay.ranks for lay in layouts) == 64 and left_out == [64, 128, 256]


def test_smpi_platform_is_the_replays():
    """The SMPI engine's platform: a host and a link a rank, a link a node, full routes: two ranks of
    a node through their shared-memory links, of two nodes through the node links alone (RDMA), each
    link half its latency each way."""
    root = ET.fromstring(smpi.platform_xml(4, 2, net(latency=2e-6, bw=10e9, intra_latency=1e-6, intra_bw=5e9), 3e9))
    zone = root.find("zone")
    assert [h.get("id") for h in zone.iter("host")] == ["r0", "r1", "r2", "r3"]
    links = {link.get("id"): link for link in zone.iter("link")}
    assert sorted(links) == ["m0", "m1", "m2", "m3", "n0", "n1"]
    assert float(links["n1"].get("bandwidth")[:-3]) == 10e9 and float(links["n1"].get("latency")[:-1]) == 1e-6
    assert float(links["m0"].get("bandwidth")[:-3]) == 5e9 and float(links["m0"].get("latency")[:-1]) == 0.5e-6
    routes = {(r.get("src"), r.get("dst")): [(c.get("id"), c.get("direction")) for c in r] for r in zone.iter("route")}
    assert len(routes) == 12
    assert routes[("r0", "r1")] == [("m0", "UP"), ("m1", "DOWN")]
    assert routes[("r3", "r0")] == [("n1", "UP"), ("n0", "DOWN")]
    assert smpi.model_args(["-B", "4", "-T", "64", "--config", "d12"]) == ["--config", "d12"]
    # --overlap on: a core for the walk of the step and one for the communication
    assert {h.get("core") for h in zone.iter("host")} == {None}
    two = ET.fromstring(smpi.platform_xml(4, 2, net(), 3e9, 2)).find("zone")
    assert {h.get("core") for h in two.iter("host")} == {"2"}


@needs_simgrid
@needs_smpi
def test_the_engines_agree_on_d12():
    """d12's gradients (124M parameters) on mn5-gpp's network, two ranks a node: the binary's own
    collectives under SMPI and the replay of its messages within 10% on the communication and the
    step, compute and AdamW stood in by 50 and 5 ms."""
    mn5 = machinefiles.load("mn5-gpp")
    parameters, compute, update = 124_475_904, 0.05, 0.005
    layouts = [distributed.Layout(2, 56, 2), distributed.Layout(8, 56, 2),
               distributed.Layout(8, 56, 2, "sharded", "direct"), distributed.Layout(4, 56, 2, "replicated")]
    host_Bs = distributed.rank_view(mn5, 2).bandwidth(56)
    specs = [network.spec(lay.ranks, 2, parameters, MB4, mn5.network, host_Bs, what, lay.collective)
             for lay in layouts for what in network.COLLECTIVES]
    times = network.replay(specs)
    for i, lay in enumerate(layouts):
        comm = times[2 * i] + times[2 * i + 1]
        got = smpi.run(SMPI_BINARY, lay, lay.ranks, 64, ["--config", "d12"], mn5.network, host_Bs, compute, update)
        assert got["comm_s"] == pytest.approx(comm, rel=0.10), lay
        assert got["step_s"] == pytest.approx(compute + comm + update, rel=0.10), lay
        assert got["step_s"] == pytest.approx(compute + got["comm_s"] + update, rel=1e-3), lay
        if lay.update == "sharded":
            assert got["reduce_scatter_s"] == pytest.approx(times[2 * i], rel=0.10), lay


def test_overlapped_step_by_hand():
    """Forward 4 s, backward 6 s, two buckets of half the parameters each, final at half and at the end
    of the backward pass: the first bucket's collective hides behind the backward pass while it is
    shorter than the rest of it; the last bucket's never does, but the first bucket's AdamW (half the
    update) runs beside it."""
    profile = [(0.5, 0.5), (1.0, 0.5)]
    assert distributed.overlapped_step(10.0, 4.0, profile, 2.0, 1.0) == pytest.approx(11.5)  # 10 + 1, + 0.5
    assert distributed.overlapped_step(10.0, 4.0, profile, 10.0, 1.0) == pytest.approx(17.5)  # 7 + 5, + 5, + 0.5
    assert distributed.overlapped_step(10.0, 4.0, [(1.0, 1.0)], 3.0, 1.0) == pytest.approx(14.0)  # nothing hidden
    # each bucket's collective given on its own: the first's 1 s hides, the last's 3 s does not
    assert distributed.overlapped_step(10.0, 4.0, profile, [1.0, 3.0], 1.0) == pytest.approx(13.5)


def test_parameter_gathers_beside_the_forward_pass_by_hand():
    """The same step with the sharded update's parameter all-gathers beside the forward pass: two
    buckets, read from the start and from half of the forward pass. Each layer waits for its own
    all-gather alone: what the forward pass does meanwhile hides the rest."""
    profile = [(0.5, 0.5), (1.0, 0.5)]
    # 4 s of all-gathers: forward from 2 s (the first's), its second half from 4 s; ends at 6 s
    assert distributed.overlapped_step(10.0, 4.0, profile, 2.0, 1.0, [(0.0, 0.5), (0.5, 0.5)], 4.0) == \
        pytest.approx(13.5)  # 6 + 3 + 1 -> 10, + 1 from 12 -> 13, then + 0.5; 15.5 after the update instead
    # 2 s: only the first bucket's 0.5 s shows
    assert distributed.overlapped_step(10.0, 4.0, profile, 2.0, 1.0, [(0.0, 0.25), (0.5, 0.75)], 2.0) == \
        pytest.approx(12.0)
    # every all-gather before the forward pass: all of it on top of the step
    assert distributed.overlapped_step(10.0, 4.0, profile, 2.0, 1.0, [(0.0, 1.0)], 4.0) == \
        pytest.approx(4.0 + distributed.overlapped_step(10.0, 4.0, profile, 2.0, 1.0))


def test_dist_share_and_rank_view():
    assert [distributed.dist_share(5, r, 2) for r in range(2)] == [(0, 2), (2, 5)]
    m = machinefiles.Machine("m", False, 8, 10.0, (1, 2, 4, 8), (10.0, 18.0, 30.0, 40.0),
                             peak_threads=(1, 8), peak_gflops=(10.0, 64.0))
    v = distributed.rank_view(m, 2)
    # 4 cores each; at 4 threads a rank has half the node's 8-thread bandwidth
    assert v.cores == 4 and v.bandwidth(4) == pytest.approx(20e9) and v.bandwidth(1) == pytest.approx(9e9)
    assert v.peak_gflops[3] == pytest.approx(64.0 / 2)


CONFIG = """
[model]
config = "tiny"
B = 4
T = 64
[run]
steps = 3
warmup = 1
repetitions = 1
timeout_s = 120
[sweep]
variants = ["forkjoin", "mpi"]
compilers = ["gcc"]
kernels = ["fast"]
threads = [1]
ranks = [1, 2]
[analysis]
trace = true
ceilings = false
roofline = false
"""

HERE = """name = "here"
measured = false
cores = 2
peak_gflops_per_core = 50
bandwidth_cores = [1, 2]
bandwidth_GBs = [10, 20]
"""


def perfstudy(*args, env=None):
    return warm_perfstudy.perfstudy(*args, timeout=600, cwd=REPO, env=None if env is None else dict(os.environ, **env))


@pytest.fixture(scope="module")
def mpi_sweep(tmp_path_factory):
    import shutil
    if not (BUILD / "gpt2-mpi").exists() or shutil.which("mpirun") is None:
        pytest.skip("build/gcc/fast/gpt2-mpi and mpirun needed")
    if not SIMGRID:
        pytest.skip(WHY)
    tmp = tmp_path_factory.mktemp("dist")
    (tmp / "tiny-mpi.toml").write_text(CONFIG)
    (tmp / "here.toml").write_text(HERE)
    proc = perfstudy("run", tmp / "tiny-mpi.toml", "--results-root", tmp / "results")
    assert proc.returncode == 0, proc.stderr
    return Path(proc.stdout.strip().splitlines()[-1]), tmp


def test_predict_distributed_here_and_on_mn5(mpi_sweep):
    directory, tmp = mpi_sweep
    proc = perfstudy("predict", directory, "--source-machine", tmp / "here.toml", "--distributed", "--ranks", "1,2")
    assert proc.returncode == 0, proc.stderr
    import pandas as pd
    out = directory / "predict-here"
    frame = pd.read_csv(out / "distributed.csv")
    assert list(frame["ranks"]) == [1, 2] and set(frame["label"]) == {"predicted"}
    parts = frame["compute_s"] + frame["reduce_scatter_s"] + frame["all_gather_s"] + frame["update_s"]
    assert list(parts) == pytest.approx(list(frame["predicted_step_s"]))
    assert frame["reduce_scatter_s"].iloc[0] == 0 and frame["reduce_scatter_s"].iloc[1] > 0
    # --overlap on: nothing to hide at one rank; at two, between no communication before the update and none hidden
    overlap = frame["predicted_step_overlap_s"]
    assert overlap.iloc[0] == pytest.approx(frame["predicted_step_s"].iloc[0])
    # sharded: the parameters' all-gather beside the next forward pass hides too, all but its first bucket's
    floor = frame["compute_s"] + frame["update_s"]
    assert floor.iloc[1] < overlap.iloc[1] < frame["predicted_step_s"].iloc[1]
    assert "overlap_s" in proc.stdout
    val = pd.read_csv(out / "distributed_validation.csv")
    assert sorted(zip(val["ranks"], val["threads"])) == [(1, 1), (2, 1)]
    assert list(val["comm_threads"]) == [1, 1]  # each point's knobs as run: none swept, the binary's default
    assert "validation" in proc.stdout and "error" in proc.stdout
    # mn5-gpp: weak scaling over nodes, two ranks a node
    proc = perfstudy("predict", directory, "--source-machine", tmp / "here.toml", "--machine", "mn5-gpp",
                     "--distributed", "--scaling", "weak", "--nodes", "4,8")
    assert proc.returncode == 0, proc.stderr
    mn5 = pd.read_csv(directory / "predict-mn5-gpp" / "distributed.csv")
    # 56 cores a rank, one of them the communication thread's (--comm-threads 1)
    assert list(mn5["nodes"]) == [4, 8] and list(mn5["ranks"]) == [8, 16] and list(mn5["threads"]) == [55, 55]
    # --overlap on's reduce-scatter adds on the communication thread's one core, off's on the rank's 55
    # threads; the all-gather adds nothing
    assert (mn5["reduce_scatter_overlap_s"] > mn5["reduce_scatter_s"]).all() and set(mn5["comm_threads"]) == {1}
    assert set(mn5["network"]) == {"not measured"} and "PREDICTED" in proc.stdout
    data = (directory / "predict-mn5-gpp" / "predict_distributed.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"


@needs_smpi
def test_predict_distributed_with_both_engines(mpi_sweep):
    """The tiny model on mn5-gpp at 2, 4 and 8 ranks (one, two and four nodes), weak scaling:
    `--engine smpi` runs the binary for each layout and agrees with the replay within 10% on the
    communication and the step, and with --overlap on (a second run of the binary, its step walked
    operation by operation beside the buckets' collectives) on the overlapped step."""
    import pandas as pd
    directory, tmp = mpi_sweep
    frames = {}
    for engine in distributed.ENGINES:
        proc = perfstudy("predict", directory, "--source-machine", tmp / "here.toml", "--machine", "mn5-gpp",
                         "--distributed", "--scaling", "weak", "--nodes", "1,2,4", "--engine", engine,
                         "--out", tmp / engine)
        assert proc.returncode == 0, proc.stderr
        frames[engine] = pd.read_csv(tmp / engine / "distributed.csv")
    replay, under_smpi = frames["replay"], frames["smpi"]
    assert list(under_smpi["ranks"]) == [2, 4, 8] and set(under_smpi["engine"]) == {"smpi"}
    assert list(under_smpi["compute_s"]) == list(replay["compute_s"])
    assert list(under_smpi["comm_s"]) == pytest.approx(list(replay["comm_s"]), rel=0.10)
    assert list(under_smpi["predicted_step_s"]) == pytest.approx(list(replay["predicted_step_s"]), rel=0.10)
    # --overlap on (the parameters' all-gathers beside the next forward pass, sharded): the binary's
    # own schedule under SMPI, the replay's model of it
    assert list(under_smpi["predicted_step_overlap_s"]) == \
        pytest.approx(list(replay["predicted_step_overlap_s"]), rel=0.10)
    # on one node the backward pass covers all the buckets' reductions but the last: the binary's
    # overlapped step is the shorter there (on more nodes the communication thread's adds on one core
    # may outweigh the overlap of so small a model), yet never shorter than its compute and update
    one_node = under_smpi["ranks"] == 2
    assert (under_smpi["predicted_step_overlap_s"] < under_smpi["predicted_step_s"])[one_node].all()
    assert (under_smpi["predicted_step_overlap_s"] > under_smpi["compute_s"] + under_smpi["update_s"]).all()


@needs_smpi
@pytest.mark.parametrize("text,message", [
    ("0.1 load_batch inputs+targets\nabc encoder_fwd wte+wpe\n", "line 2: expected seconds (a number, 0 or more)"),
    ("-1 load_batch inputs+targets\n", "line 1: expected seconds (a number, 0 or more)"),
    ("0.1\n", "line 1: expected seconds (a number, 0 or more), a space and the operation's label, got '0.1'"),
    ("", "no operations"),
    (None, "No such file or directory"),
])
def test_smpi_refuses_a_bad_op_seconds_file(tmp_path, text, message):
    """--overlap on under SMPI: a bad GPT2_SMPI_OP_SECONDS file is one line and exit status 2, before
    the ranks agree."""
    path = tmp_path / "op-seconds"
    if text is not None:
        path.write_text(text)
    (tmp_path / "platform.xml").write_text(smpi.platform_xml(2, 2, net(), 1e9, 2))
    (tmp_path / "hosts").write_text("r0\nr1\n")
    proc = subprocess.run([smpi.smpirun(), "-np", "2", "-platform", str(tmp_path / "platform.xml"), "-hostfile",
                           str(tmp_path / "hosts"), f"--cfg=smpi/tmpdir:{tmp_path}", "--log=root.thres:critical",
                           str(SMPI_BINARY), "--config", "tiny", "-B", "2", "-T", "16", "--threads", "1",
                           "--steps", "1", "--overlap", "on"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env=dict(os.environ, GPT2_SMPI_OP_SECONDS=str(path)))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert f"GPT2_SMPI_OP_SECONDS: {path}" in proc.stderr and message in proc.stderr


def test_predict_engine_bad_input_before_any_work(tmp_path):
    for args, message in ((("--distributed", "--engine", "nosuch"), "--engine: expected one of replay, smpi"),
                          (("--engine", "smpi"), "--engine smpi: only with --distributed")):
        proc = perfstudy("predict", tmp_path / "nothing", *args)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert message in proc.stderr


def test_predict_smpi_engine_bad_input(mpi_sweep):
    """A bad [network] and a missing smpirun: one line each, exit 2."""
    directory, tmp = mpi_sweep
    (tmp / "badnet.toml").write_text(HERE + "[network]\nmeasured = false\nlatency_us = 1\nbandwidth_GBs = -5\n"
                                     "ranks_per_node = 1\n")
    for args, env, message in (
            (("--machine", tmp / "badnet.toml"), None, "badnet.toml: network.bandwidth_GBs"),
            ((), {"PERFSTUDY_SMPIRUN": str(tmp / "no-smpirun")}, "install Debian's libsimgrid-dev")):
        proc = perfstudy("predict", directory, "--source-machine", tmp / "here.toml", "--distributed", "--ranks", "2",
                         "--engine", "smpi", *args, env=env)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert message in proc.stderr


@pytest.mark.parametrize("args,message", [
    (("--distributed", "--ranks", "8"), "8 ranks: more than the 4 sequences"),
    (("--distributed", "--ranks", "2", "--update", "halfway"), "--update: expected one of"),
    (("--distributed", "--ranks", "2", "--collective", "tree"), "--collective: expected one of"),
    (("--distributed", "--ranks", "2", "--batch", "0"), "--batch: expected a positive integer"),
    (("--distributed", "--ranks", "2", "--threads-per-rank", "1"), "with --comm-threads 1 a rank needs 2 cores"),
    (("--distributed", "--ranks", "2", "--comm-threads", "65"), "--comm-threads: expected an integer from 1 to 64"),
    (("--distributed", "--ranks", "2", "--comm-threads", "2", "--engine", "smpi"), "SMPI gives MPI_THREAD_SINGLE"),
    (("--distributed", "--nodes", "x"), "--nodes: expected comma-separated integers"),
    (("--distributed", "--ranks", "1", "--executor", "seq"), "no 1-thread traces of seq"),
])
def test_predict_distributed_bad_input(mpi_sweep, args, message):
    directory, tmp = mpi_sweep
    proc = perfstudy("predict", directory, "--source-machine", tmp / "here.toml", *args)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert message in proc.stderr


def test_pack_and_validate_mpi_points(mpi_sweep, tmp_path):
    directory, tmp = mpi_sweep
    ceilings = {"schema": "pstudy-ceilings/1", "date": "2026-11-25T00:00:00Z",
                "host": {"hostname": "test", "cpu_model": "test", "logical_cpus": 2},
                "environment": {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"},
                "source": {"stream": {"binary": "stream"}, "peakflops": {"binary": "peakflops"}},
                "per_threads": [{"threads": 1, "stream_GBs": {"copy": 10.0, "scale": 10.0, "add": 10.0, "triad": 10.0},
                                 "peak_gflops": {"avx2": 50.0}, "best_isa": "avx2", "best_gflops": 50.0}]}
    (directory / "ceilings.json").write_text(json.dumps(ceilings))
    out = tmp_path / "recording"
    validation.pack({"tiny-mpi": directory}, out, "test")
    frame = validation.validate(validationdata.Recording(out))
    mpi = frame[frame["kind"] == "distributed"]
    assert sorted(mpi["mode"]) == ["1 ranks", "2 ranks"] and set(mpi["target"]) == {0.10}
    assert (mpi["predicted_step_s"] > 0).all()
    with pytest.raises(StudyError):
        validationdata.read_graph(out, "tiny-mpi", ("forkjoin", "gcc", "fast", 1, None, None, None), batch=3)
