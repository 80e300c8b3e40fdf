"""The communication of gpt2-mpi's step, replayed message by message on SimGrid (Debian's
python3-simgrid), the schedule variants/mpi_collectives.c runs under each --collective:

ring (the default):
  reduce-scatter  every rank posts its 4-byte loss to every other rank (counted as one latency, not
                  replayed); then R-1 steps around the ring: at step s rank r posts its partial sum
                  of shard r-s-1 to rank r+1 in blocks (at most comm_message_bytes, the info
                  line's, and at most an eighth of the widest shard: ring_floats) and receives
                  shard r-s-2's from rank r-1 block by block (the next block's receive posted before
                  the current one is added: two buffers), adding its own gradients in place (a read
                  of the received block, a read and a write of its own: 12 bytes a float through the
                  rank's memory bandwidth at its threads), and sends each block on to rank r+1 as
                  soon as it is added (step s+1 forwards what step s received: the steps pipeline)
  all-gather      R-1 steps: rank r posts shard r-s to rank r+1 and receives shard r-s-1 from r-1,
                  then waits for both
direct:
  reduce-scatter  every rank posts every block of every other rank's shard of its gradients to that
                  rank (MPI_Isend); then, block after block of its own shard, it receives that block
                  from rank 0, 1, ... R-1 in order (a blocking MPI_Recv each) and adds it in (R reads
                  and a write of the block through the memory interface)
  all-gather      every rank posts each block of its shard to every other rank and a receive of
                  each block of every other shard (MPI_Isend / MPI_Irecv), then waits for all

Large messages go by rendezvous, as Open MPI sends them: a transfer starts when both sides have
posted, so direct's receive order decides which links carry what when (all ranks pulling from rank
0 first, then rank 1...), where the ring's R-1 steps each move one shard over every link at once
(ranks r and r+1 of one node through shared memory: one flow a direction crosses each node's link,
(R-1)/R of the gradients at the link's bandwidth). SimGrid's flow model ("CM02": latency + size /
bandwidth, links shared max-min fairly, no factors) gives each transfer its share of every link it
crosses. The platform: per rank a split-duplex link (its shared-memory path: the network section's
intra bandwidth, half the intra latency each way), per node a split-duplex link into the fabric (its
bandwidth, half the latency each way) and a non-blocking fabric behind them (a fat tree's full
bisection). Two ranks of one node talk through their two rank links; of two nodes through both
rank links and both node links.

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


def spec(ranks, ranks_per_node, parameters, message_bytes, network, reduce_Bs, collective, algorithm="ring"):
    """The replay's input: a JSON-able dict."""
    if collective not in COLLECTIVES:
        raise ValueError(collective)
    if algorithm not in ALGORITHMS:
        raise StudyError(f"--collective: expected one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    sh = shards(parameters, ranks)
    widest = max(b - a for a, b in zip(sh, sh[1:]))
    # the replay's time grows faster than its messages (at 128 ranks, 20 s at 2 messages a shard,
    # 120 s at 8): past 32 ranks it merges the ring's blocks, REPLAY_MESSAGES a rank's step at
    # most; a coarser pipeline fills later, so the time comes out a little long (at 32 ranks, 7%
    # longer at 2 a shard than at 8, the binary's)
    depth = min(RING_DEPTH, max(2, REPLAY_MESSAGES // ranks))
    return {"ranks": ranks, "ranks_per_node": ranks_per_node, "shards": sh,
            "ring_floats": max(1, min(message_bytes // 4, -(-widest // depth))),
            "message_floats": max(1, message_bytes // 4), "latency_s": network.latency_s,
            "bandwidth_Bs": network.bandwidth_Bs, "intra_latency_s": network.intra_latency_s,
            "intra_bandwidth_Bs": network.intra_bandwidth_Bs, "reduce_Bs": reduce_Bs, "collective": collective,
            "algorithm": algorithm}


def replay(specs):
    """Seconds each spec's collective takes (from a common start to the last rank's end), in order.
    One child process for all of them; StudyError when SimGrid is missing or the replay fails."""
    keys = [json.dumps(s, sort_keys=True) for s in specs]
    todo = [s for k, s in zip(keys, specs) if k not in _replayed]
    if todo:
        for k, t in zip([json.dumps(s, sort_keys=True) for s in todo], _replay(todo)):
            _replayed[k] = t
    return [_replayed[k] for k in keys]


def _replay(specs):
    ok, why = available()
    if not ok:
        raise StudyError(f"distributed prediction: {why}")
    proc = subprocess.run([sys.executable, "-m", "pstudy.analyse.network"], input=json.dumps(specs),
                          capture_output=True, text=True, timeout=TIMEOUT_S,
                          cwd=None, env=_child_env())
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


def _run_all(specs):
    import simgrid as sg

    engine = sg.Engine(["pstudy", "--log=root.thres:critical", "--cfg=network/model:CM02",
                        "--cfg=network/crosstraffic:0"])
    root = sg.NetZone.create_full_zone("root")
    plans = []
    for n, s in enumerate(specs):
        R, ppn = s["ranks"], s["ranks_per_node"]
        hosts, rank_links = [], []
        for r in range(R):
            hosts.append(root.create_host(f"s{n}r{r}", s["reduce_Bs"]))
            rank_links.append(root.create_split_duplex_link(f"s{n}m{r}", s["intra_bandwidth_Bs"])
                              .set_latency(s["intra_latency_s"] / 2))
        nodes = (R + ppn - 1) // ppn
        nics = [root.create_split_duplex_link(f"s{n}n{k}", s["bandwidth_Bs"]).set_latency(s["latency_s"] / 2)
                for k in range(nodes)]
        up, down = sg.LinkInRoute.Direction.UP, sg.LinkInRoute.Direction.DOWN
        for a in range(R):
            for b in range(R):
                if a == b:
                    continue
                links = [sg.LinkInRoute(rank_links[a], up)]
                if a // ppn != b // ppn:
                    links += [sg.LinkInRoute(nics[a // ppn], up), sg.LinkInRoute(nics[b // ppn], down)]
                links.append(sg.LinkInRoute(rank_links[b], down))
                root.add_route(hosts[a].netpoint, hosts[b].netpoint, None, None, links, False)
        plans.append((s, hosts))
    root.seal()
    ends = [dict() for _ in specs]

    def puts(box, lo, hi, size):
        """Floats [lo, hi) sent to a mailbox in messages of at most `size`, asynchronously."""
        return [sg.Mailbox.by_name(box).put_async(count, 4 * count) for count in _blocks(lo, hi, size)]

    def reduce_scatter(n, s, me):
        sh, size = s["shards"], s["message_floats"]
        peers = [q for q in range(s["ranks"]) if q != me]
        # the 4-byte losses posted first travel beside the blocks in about one latency: added
        # to the result, not replayed (they would double the simulated messages)
        pending = [put for q in peers for put in puts(f"{n}:rs:{q}:{me}", sh[q], sh[q + 1], size)]
        for count in _blocks(sh[me], sh[me + 1], size):
            for q in range(s["ranks"]):  # every rank's block accumulated, this rank's own too
                if q != me:
                    sg.Mailbox.by_name(f"{n}:rs:{me}:{q}").get()
                sg.this_actor.execute(12.0 * count)  # acc += w * g: read g, read and write acc
            sg.this_actor.execute(8.0 * count)  # the block copied back into the gradients
        _wait(pending)

    def all_gather(n, s, me):
        sh, size = s["shards"], s["message_floats"]
        pending = []
        for q in (q for q in range(s["ranks"]) if q != me):
            pending += puts(f"{n}:ag:{q}:{me}", sh[me], sh[me + 1], size)
            pending += [sg.Mailbox.by_name(f"{n}:ag:{me}:{q}").get_async() for _ in _blocks(sh[q], sh[q + 1], size)]
        _wait(pending)

    def ring_reduce_scatter(n, s, me):
        sh, block, R = s["shards"], s["ring_floats"], s["ranks"]
        nxt, first = (me + 1) % R, (me - 1) % R
        out = sg.Mailbox.by_name(f"{n}:rr:{nxt}")
        box = sg.Mailbox.by_name(f"{n}:rr:{me}")
        pending = puts(f"{n}:rr:{nxt}", sh[first], sh[first + 1], block)
        for step in range(R - 1):
            recv_q = (me - step - 2) % R
            blocks = _blocks(sh[recv_q], sh[recv_q + 1], block)
            ahead = box.get_async() if blocks else None
            for i, count in enumerate(blocks):
                current, ahead = ahead, (box.get_async() if i + 1 < len(blocks) else None)
                current[0].wait()
                sg.this_actor.execute(12.0 * count)  # g = in + w * g: read in, read and write g
                if step + 1 < R - 1:  # forwarded as soon as added
                    pending.append(out.put_async(count, 4 * count))
        _wait(pending)

    def ring_all_gather(n, s, me):
        sh, size, R = s["shards"], s["message_floats"], s["ranks"]
        nxt = (me + 1) % R
        for step in range(R - 1):
            send_q, recv_q = (me - step) % R, (me - step - 1) % R
            box = sg.Mailbox.by_name(f"{n}:rg:{me}")
            pending = [box.get_async() for _ in _blocks(sh[recv_q], sh[recv_q + 1], size)]
            pending += puts(f"{n}:rg:{nxt}", sh[send_q], sh[send_q + 1], size)
            _wait(pending)

    def actor(n, me):
        s = plans[n][0]
        if s.get("algorithm", "ring") == "ring":
            (ring_reduce_scatter if s["collective"] == "reduce_scatter" else ring_all_gather)(n, s, me)
        else:
            (reduce_scatter if s["collective"] == "reduce_scatter" else all_gather)(n, s, me)
        ends[n][me] = sg.Engine.clock

    # every replay from time 0 on its own hosts and links: they share nothing, so they run side by side
    for n, (s, hosts) in enumerate(plans):
        for r, h in enumerate(hosts):
            sg.Actor.create(f"s{n}a{r}", h, actor, n, r)
    engine.run()
    return [(max(e.values()) if e else 0.0) + (s["latency_s"] if s["collective"] == "reduce_scatter" else 0.0)
            for e, s in zip(ends, specs)]


def _main():
    specs = json.loads(sys.stdin.read())
    print(json.dumps(_run_all(specs)))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
