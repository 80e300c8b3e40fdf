"""The communication of gpt2-mpi's step, replayed message by message on SimGrid (Debian's
python3-simgrid), the schedule variants/mpi_collectives.c runs under each --collective:

ring (the default):
  reduce-scatter  every rank posts its 4-byte loss to every other rank (counted as one latency, not
                  replayed); then R-1 steps around the ring: at step s rank r posts its partial sum
                  of shard r-s-1 to rank r+1 in blocks (at most comm_message_bytes, the info
                  line's, and at most an eighth of the widest shard: ring_floats) and receives
                  shard r-s-2's from rank r-1 block by block (the next block's receive posted before
                  the current one is added: two buffers), adding its own gradients in place (a read
                  of the received block, a read and a write of its own: 12 bytes a float at the
                  adds' speed, the host's), and sends each block on to rank r+1 as soon as it is
                  added (step s+1 forwards what step s received: the steps pipeline)
  all-gather      R-1 steps: rank r posts shard r-s to rank r+1 and receives shard r-s-1 from r-1,
                  then waits for both
direct:
  reduce-scatter  every rank posts every block of every other rank's shard of its gradients to that
                  rank (MPI_Isend); then, block after block of its own shard, it receives that block
                  from rank 0, 1, ... R-1 in order (a blocking MPI_Recv each) and adds it in (R reads
                  and a write of the block through the memory interface)
  all-gather      every rank posts each block of its shard to every other rank and a receive of
                  each block of every other shard (MPI_Isend / MPI_Irecv), then waits for all

Channels (the binary's --comm-threads K): each collective runs as K channels, each an actor of its
own on each rank. Channel c owns slice c of every shard (the shard cut into K nearly equal
consecutive parts) and runs the collective above over those slices, its blocks cut from its widest
slice as the ring cuts a shard; odd channels go round the ring backward (rank r sends to r-1), so
that from two channels on both directions of every link carry half the bytes. With K = 1 it is the
schedule above.

Large messages go by rendezvous, as Open MPI sends them: a transfer starts when both sides have
posted, so direct's receive order decides which links carry what when (all ranks pulling from rank
0 first, then rank 1...), where the ring's R-1 steps each move one shard over every link at once.
SimGrid's flow model ("CM02": latency + size / bandwidth, links shared max-min fairly, no factors)
gives each transfer its share of every link it crosses. The platform:
- per rank and channel a host, whose speed is the bytes a second of the channel's adds (the caller
  sets it: the rank's threads', or one core's when the channel's thread adds alone), and a
  split-duplex link at the network section's intra bandwidth (half the intra latency each way):
  one core's copy of a message between two ranks of a node through shared memory, made by the
  channel's thread;
- with more than one channel, per rank a split-duplex link at copy_Bs: the rank's channels' copies
  together, as far as its memory bandwidth at K cores allows;
- per node a split-duplex link into the fabric (its bandwidth, half the latency each way) and a
  non-blocking fabric behind them (a fat tree's full bisection).
Two ranks of one node talk through their channel's links (and the ranks' links); two ranks of
different nodes through the two node links alone: Open MPI sends a large message between nodes by
RDMA rendezvous, from the sender's memory through the NICs into the receiver's, copied by no core,
so it crosses no rank's shared-memory link. With two ranks a node the ring's hop inside a node (one
core's copy, the whole (R-1)/R of the buffer one way) is then its bound where the intra bandwidth
is below the node link's; from two channels both directions of it carry half.

SimGrid allows one engine per process, so the replays run in a child process (`python -m
pstudy.analyse.network` reading the specs as JSON on stdin, printing the times), side by side on
platforms that share nothing. Deterministic: SimGrid's engine is, and the actors' order is fixed.
"""

import json
import subprocess
import sys

from pstudy.errors import StudyError

TIMEOUT_S = 600
COLLECTIVES = ("reduce_scatter", "all_gather")
ALGORITHMS = ("ring", "direct")  # variants/mpi.c's --collective
RING_DEPTH = 8  # variants/mpi_collectives.c's: the ring cuts a shard into at least this many messages
REPLAY_MESSAGES = 256
_replayed = {}  # spec (as JSON) -> seconds: a layout's collectives depend on neither batch nor scaling


def available():
    """(True, version) when SimGrid's Python module imports, else (False, why)."""
    proc = subprocess.run([sys.executable, "-c", "import simgrid; print(simgrid.simgrid_version)"],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        return False, "SimGrid's Python module is not installed (Debian package python3-simgrid)"
    return True, proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "?"


def shards(parameters, ranks):
    """Shard boundaries in floats: R nearly equal ranges (variants/mpi.c moves each down to the start
    of its parameter row, a difference of less than one row)."""
    return [parameters * q // ranks for q in range(ranks + 1)]


def slices(shards, channels):
    """Per channel, per shard, its slice [lo, hi) in floats: the shard's elements in memory order cut
    into `channels` nearly equal consecutive parts (variants/mpi_collectives.c's channels)."""
    return [[(a + (b - a) * c // channels, a + (b - a) * (c + 1) // channels) for a, b in zip(shards, shards[1:])]
            for c in range(channels)]


def spec(ranks, ranks_per_node, parameters, message_bytes, network, reduce_Bs, collective, algorithm="ring",
         channels=1, copy_Bs=None):
    """The replay's input: a JSON-able dict. `reduce_Bs`: the bytes/s of one channel's adds;
    `channels`: the binary's --comm-threads; `copy_Bs`: with more than one channel, the bytes/s the
    rank's channels copy through shared memory together (the module comment)."""
    if collective not in COLLECTIVES:
        raise ValueError(collective)
    if algorithm not in ALGORITHMS:
        raise StudyError(f"--collective: expected one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    sh = shards(parameters, ranks)
    # the replay's time grows faster than its messages (at 128 ranks, 20 s at 2 messages a shard,
    # 120 s at 8): past REPLAY_MESSAGES a rank's step it merges the ring's blocks, 2 a slice at
    # least; a coarser pipeline fills later, so the time comes out long (at 32 ranks, 7% longer at
    # 2 a shard than at 8, the binary's), more where one core's adds bound the ring (each step's
    # first block arrives before its adds start: two channels at 128 ranks of d12, 26%)
    depth = min(RING_DEPTH, max(2, REPLAY_MESSAGES // (ranks * channels)))
    ring_floats = [max(1, min(message_bytes // 4, -(-max(b - a for a, b in cut) // depth)))
                   for cut in slices(sh, channels)]
    return {"ranks": ranks, "ranks_per_node": ranks_per_node, "shards": sh, "channels": channels,
            "ring_floats": ring_floats, "message_floats": max(1, message_bytes // 4), "latency_s": network.latency_s,
            "bandwidth_Bs": network.bandwidth_Bs, "intra_latency_s": network.intra_latency_s,
            "intra_bandwidth_Bs": network.intra_bandwidth_Bs, "copy_Bs": copy_Bs if channels > 1 else None,
            # the all-gather adds nothing: one spec whatever the adds' speed
            "reduce_Bs": reduce_Bs if collective == "reduce_scatter" else None, "collective": collective,
            "algorithm": algorithm}


def replay(specs):
    """Seconds each spec's collective takes (from a common start to the last rank's end), in order.
    One child process for all of them; StudyError when SimGrid is missing or the replay fails."""
    keys = [json.dumps(s, sort_keys=True) for s in specs]
    todo = {k: s for k, s in zip(keys, specs) if k not in _replayed}
    if todo:
        for k, t in zip(todo, _replay(list(todo.values()))):
            _replayed[k] = t
    return [_replayed[k] for k in keys]


def _replay(specs):
    ok, why = available()
    if not ok:
        raise StudyError(f"distributed prediction: {why}")
    try:
        proc = subprocess.run([sys.executable, "-m", "pstudy.analyse.network"], input=json.dumps(specs),
                              capture_output=True, text=True, timeout=TIMEOUT_S, cwd=None, env=_child_env())
    except subprocess.TimeoutExpired:
        raise StudyError(f"distributed prediction: the SimGrid replay ran past {TIMEOUT_S} s (fewer ranks or "
                         "--comm-threads replay faster)") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise StudyError(f"distributed prediction: the SimGrid replay failed: {last}")
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise StudyError("distributed prediction: the SimGrid replay printed no result") from None


def _child_env():
    import os
    from pathlib import Path
    env = dict(os.environ)
    harness = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = harness + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# ---------------------------------------------------------------------------------------------
# the child: one SimGrid engine, every spec in turn on its own platform (zones are cheap)

def _blocks(lo, hi, size):
    out, at = [], lo
    while at < hi:
        n = min(size, hi - at)
        out.append(n)
        at += n
    return out


def _wait(pending):
    """Waits for sends (a Comm) and receives (get_async's (Comm, holder): the holder must outlive
    the wait)."""
    for c in pending:
        (c[0] if isinstance(c, tuple) else c).wait()


def _platform(sg, root, n, s):
    """Spec n's hosts, [rank][channel], and the routes between the hosts of a channel that its
    collective uses (the module comment)."""
    R, ppn, K = s["ranks"], s["ranks_per_node"], s["channels"]
    up, down = sg.LinkInRoute.Direction.UP, sg.LinkInRoute.Direction.DOWN
    hosts = [[root.create_host(f"s{n}r{r}c{c}", s["reduce_Bs"] or 1.0) for c in range(K)] for r in range(R)]
    copies = [[root.create_split_duplex_link(f"s{n}m{r}c{c}", s["intra_bandwidth_Bs"])
               .set_latency(s["intra_latency_s"] / 2) for c in range(K)] for r in range(R)]
    cores = [root.create_split_duplex_link(f"s{n}m{r}", s["copy_Bs"]) for r in range(R)] if s["copy_Bs"] else None
    nics = [root.create_split_duplex_link(f"s{n}n{k}", s["bandwidth_Bs"]).set_latency(s["latency_s"] / 2)
            for k in range(-(-R // ppn))]
    if s.get("algorithm", "ring") == "ring":
        pairs = {(a, (a + d) % R) for a in range(R) for d in (1, -1)} - {(a, a) for a in range(R)}
    else:
        pairs = {(a, b) for a in range(R) for b in range(R) if a != b}
    for a, b in sorted(pairs):
        for c in range(K):
            if a // ppn != b // ppn:  # RDMA from memory to memory: the NICs alone
                links = [sg.LinkInRoute(nics[a // ppn], up), sg.LinkInRoute(nics[b // ppn], down)]
            else:  # a core's copy through shared memory
                links = [sg.LinkInRoute(copies[a][c], up), sg.LinkInRoute(copies[b][c], down)]
                if cores:
                    links[1:1] = [sg.LinkInRoute(cores[a], up), sg.LinkInRoute(cores[b], down)]
            root.add_route(hosts[a][c].netpoint, hosts[b][c].netpoint, None, None, links, False)
    return hosts


def _run_all(specs):
    import simgrid as sg

    engine = sg.Engine(["pstudy", "--log=root.thres:critical", "--cfg=network/model:CM02",
                        "--cfg=network/crosstraffic:0"])
    root = sg.NetZone.create_full_zone("root")
    plans = [(s, _platform(sg, root, n, s)) for n, s in enumerate(specs)]
    root.seal()
    ends = [dict() for _ in specs]

    def puts(box, lo, hi, size):
        """Floats [lo, hi) sent to a mailbox in messages of at most `size`, asynchronously."""
        return [sg.Mailbox.by_name(box).put_async(count, 4 * count) for count in _blocks(lo, hi, size)]

    def reduce_scatter(n, s, me, c, sl):
        size, R = s["message_floats"], s["ranks"]
        peers = [q for q in range(R) if q != me]
        # the 4-byte losses posted first travel beside the blocks in about one latency: added
        # to the result, not replayed (they would double the simulated messages)
        pending = [put for q in peers for put in puts(f"{n}:rs:{c}:{q}:{me}", *sl[q], size)]
        for count in _blocks(*sl[me], size):
            for q in range(R):  # every rank's block accumulated, this rank's own too
                if q != me:
                    sg.Mailbox.by_name(f"{n}:rs:{c}:{me}:{q}").get()
                sg.this_actor.execute(12.0 * count)  # acc += w * g: read g, read and write acc
            sg.this_actor.execute(8.0 * count)  # the block copied back into the gradients
        _wait(pending)

    def all_gather(n, s, me, c, sl):
        size = s["message_floats"]
        pending = []
        for q in (q for q in range(s["ranks"]) if q != me):
            pending += puts(f"{n}:ag:{c}:{q}:{me}", *sl[me], size)
            pending += [sg.Mailbox.by_name(f"{n}:ag:{c}:{me}:{q}").get_async() for _ in _blocks(*sl[q], size)]
        _wait(pending)

    def ring_reduce_scatter(n, s, me, c, sl):
        block, R, d = s["ring_floats"][c], s["ranks"], (1 if c % 2 == 0 else -1)  # odd channels go backward
        out = f"{n}:rr:{c}:{(me + d) % R}"
        box = sg.Mailbox.by_name(f"{n}:rr:{c}:{me}")
        pending = puts(out, *sl[(me - d) % R], block)
        for step in range(R - 1):
            blocks = _blocks(*sl[(me - d * (step + 2)) % R], block)
            ahead = box.get_async() if blocks else None
            for i, count in enumerate(blocks):
                current, ahead = ahead, (box.get_async() if i + 1 < len(blocks) else None)
                current[0].wait()
                sg.this_actor.execute(12.0 * count)  # g = in + w * g: read in, read and write g
                if step + 1 < R - 1:  # forwarded as soon as added
                    pending += puts(out, 0, count, count)
        _wait(pending)

    def ring_all_gather(n, s, me, c, sl):
        size, R, d = s["message_floats"], s["ranks"], (1 if c % 2 == 0 else -1)
        box = sg.Mailbox.by_name(f"{n}:rg:{c}:{me}")
        for step in range(R - 1):
            pending = [box.get_async() for _ in _blocks(*sl[(me - d * (step + 1)) % R], size)]
            pending += puts(f"{n}:rg:{c}:{(me + d) % R}", *sl[(me - d * step) % R], size)
            _wait(pending)

    def actor(n, me, c, sl):
        s = plans[n][0]
        if s.get("algorithm", "ring") == "ring":
            (ring_reduce_scatter if s["collective"] == "reduce_scatter" else ring_all_gather)(n, s, me, c, sl)
        else:
            (reduce_scatter if s["collective"] == "reduce_scatter" else all_gather)(n, s, me, c, sl)
        ends[n][me, c] = sg.Engine.clock

    # every replay from time 0 on its own hosts and links: they share nothing, so they run side by side
    for n, (s, hosts) in enumerate(plans):
        cut = slices(s["shards"], s["channels"])
        for r, channels in enumerate(hosts):
            for c, h in enumerate(channels):
                sg.Actor.create(f"s{n}a{r}c{c}", h, actor, n, r, c, cut[c])
    engine.run()
    return [(max(e.values()) if e else 0.0) + (s["latency_s"] if s["collective"] == "reduce_scatter" else 0.0)
            for e, s in zip(ends, specs)]


def _main():
    specs = json.loads(sys.stdin.read())
    print(json.dumps(_run_all(specs)))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
