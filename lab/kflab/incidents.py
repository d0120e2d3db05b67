"""Incidents staged on a live cluster.  Each takes (cluster, workload, rng, topics) and returns its story.

The story records what was done, to whom and when, so a disagreement can be read against it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

from . import netns, procs
from .cluster import BROKERS, Cluster, copy_tree
from .jars import LAB
from .procs import Timeout
from .segments import read_segment
from .workload import TopicSpec, Workload

ORDERS = TopicSpec("orders", partitions=2, min_isr=2, unclean=False)
EVENTS = TopicSpec("events", partitions=1, min_isr=1, unclean=True)
SAFE_EVENTS = TopicSpec("events", partitions=1, min_isr=1, unclean=False)
TXN = TopicSpec("payments", partitions=1, min_isr=2, unclean=False)


def _note(story: dict, what: str, **kw) -> None:
    story.setdefault("steps", []).append({"t": round(time.time(), 3), "what": what, **kw})


def _wait_out_of_isr(w: Workload, topic: str, part: int, gone: set, timeout_s: float) -> dict:
    from .procs import wait_for

    def ok():
        s = w.state(topic)[part]
        return s if not (set(s["isr"]) & gone) else None

    return wait_for(f"{sorted(gone)} out of {topic}-{part} ISR", ok, timeout_s)


def leader_crash(c: Cluster, w: Workload, rng: random.Random, story: dict) -> None:
    """(a) kill -9 of a partition leader mid-write; a clean election follows; writes go on."""
    topic, part = "orders", 0
    leader = w.state(topic)[part]["leader"]
    w.produce(topic, "one", rng.randint(5, 30), partition=part, flush_s=0)  # in flight when the leader dies
    c.kill9(leader)
    _note(story, "kill -9 leader", broker=leader, topic=topic, partition=part)
    w.producer("one").flush(20)
    new = w.wait_leader_not(topic, part, leader, 40)
    _note(story, "new leader", **new)
    w.produce(topic, "all", rng.randint(5, 30), partition=part)
    w.produce(topic, "one", rng.randint(0, 10), partition=part)


def unclean_election(c: Cluster, w: Workload, rng: random.Random, story: dict) -> None:
    """(b) followers frozen until out of the ISR, acks=1 writes on the lone leader, leader killed, followers back."""
    topic, part = "events", 0
    st = w.state(topic)[part]
    leader = st["leader"]
    followers = [b for b in st["replicas"] if b != leader]
    for f in followers:
        c.freeze(f)
    _note(story, "SIGSTOP followers", brokers=followers)
    _wait_out_of_isr(w, topic, part, set(followers), 45)
    _note(story, "followers out of ISR", **w.state(topic)[part])
    n = rng.randint(5, 40)
    w.produce(topic, "one", n, partition=part)
    _note(story, "acks=1 writes on the lone leader", records=n)
    c.kill9(leader)
    _note(story, "kill -9 leader", broker=leader)
    for f in followers:
        c.thaw(f)
    _note(story, "SIGCONT followers", brokers=followers)
    new = w.wait_leader_not(topic, part, leader, 60)
    _note(story, "new leader", **new)
    w.produce(topic, "one", rng.randint(3, 20), partition=part)


def _cut_tail(pdir: Path, rng: random.Random) -> dict | None:
    """Cut the active segment of a partition dir inside its last batch (a torn write)."""
    segs = sorted(pdir.glob("*.log"))
    if not segs:
        return None
    seg = segs[-1]
    batches, _ = read_segment(seg)
    if not batches:
        return None
    last = batches[-1]
    cut = last["position"] + rng.randint(1, last["size"] - 1)
    size = seg.stat().st_size
    os.truncate(seg, cut)
    return {
        "segment": str(seg.relative_to(pdir.parent.parent)),
        "size_before": size,
        "cut_at": cut,
        "torn_batch": [last["base"], last["last"]],
        "torn_batch_position": last["position"],
    }


def torn_tail(c: Cluster, w: Workload, rng: random.Random, story: dict) -> None:
    """(c) power loss of one broker, its active segments cut mid-batch; the others go on."""
    victim = rng.choice(BROKERS)
    w.produce("orders", "all", rng.randint(5, 20))
    c.kill9(victim)
    cuts = {}
    for pdir in sorted(c.data_dir(victim).iterdir()):
        if pdir.is_dir() and pdir.name.rpartition("-")[0] in ("orders", "events"):
            r = _cut_tail(pdir, rng)
            if r:
                cuts[pdir.name] = r
    _note(story, "kill -9 and torn tail", broker=victim, cuts=cuts)
    time.sleep(1)
    w.produce("orders", "all", rng.randint(5, 20))
    w.produce("events", "one", rng.randint(0, 10))


def power_loss_snapshot(c: Cluster, w: Workload, rng: random.Random, story: dict) -> None:
    """(d) a broker's dirs imaged while it is frozen; it runs on, is killed, and the old image is restored."""
    victim = rng.choice(BROKERS)
    c.freeze(victim)
    image = c.run_dir / "image" / f"broker-{victim}"
    copy_tree(c.data_dir(victim), image)
    c.thaw(victim)
    _note(story, "image taken while frozen", broker=victim)
    w.produce("orders", "all", rng.randint(5, 25))
    w.produce("events", "one", rng.randint(5, 25))
    c.kill9(victim)
    shutil.rmtree(c.data_dir(victim))
    image.rename(c.data_dir(victim))
    _note(story, "kill -9 and image restored (writes since the image lost)", broker=victim)
    w.produce("orders", "all", rng.randint(0, 10))


def follower_freeze(c: Cluster, w: Workload, rng: random.Random, story: dict) -> None:
    """(e) a follower frozen until it leaves the ISR, writes go on, it is thawed and catches up."""
    topic, part = "orders", 1
    st = w.state(topic)[part]
    f = rng.choice([b for b in st["replicas"] if b != st["leader"]])
    c.freeze(f)
    _note(story, "SIGSTOP follower", broker=f)
    _wait_out_of_isr(w, topic, part, {f}, 45)
    w.produce(topic, "all", rng.randint(5, 25), partition=part)
    c.thaw(f)
    _note(story, "SIGCONT follower", broker=f)
    try:
        w.wait_isr(topic, part, 3, 30)
    except Timeout:
        _note(story, "follower did not rejoin the ISR in 30s")
    w.produce(topic, "all", rng.randint(0, 10), partition=part)


def crc_flip(c: Cluster, w: Workload, rng: random.Random, story: dict) -> None:
    """(f) a stopped broker's segment gets one byte flipped inside a batch's records (CRC mismatch)."""
    victim = rng.choice(BROKERS)
    c.kill9(victim)
    pdir = c.data_dir(victim) / "orders-0"
    seg = max(pdir.glob("*.log"))
    batches, _ = read_segment(seg)
    if batches:
        b = rng.choice(batches)
        pos = b["position"] + 61 + rng.randrange(max(1, b["size"] - 61))
        with open(seg, "r+b") as fh:
            fh.seek(pos)
            byte = fh.read(1)
            fh.seek(pos)
            fh.write(bytes([byte[0] ^ 0xFF]))
        _note(story, "byte flipped", broker=victim, segment=str(seg.name), position=pos, batch=[b["base"], b["last"]])
    w.produce("orders", "all", rng.randint(0, 10))


def controller_kill(c: Cluster, w: Workload, rng: random.Random, story: dict) -> None:
    """(g) kill -9 of the only controller (ZooKeeper mode: of ZooKeeper); a partition leader dies while there is
    none to elect another; the controller (ZooKeeper) comes back on its own dir and a leader is elected."""
    w.produce("orders", "all", rng.randint(5, 20))
    c.kill9(c.meta)
    _note(story, "kill -9 controller")
    w.produce("orders", "all", rng.randint(5, 20))  # brokers take writes without a controller
    leader = w.state("orders")[0]["leader"]
    c.kill9(leader)
    _note(story, "kill -9 leader while no controller runs", broker=leader)
    w.produce("orders", "all", rng.randint(1, 10), partition=0, flush_s=0)  # waits in the producer
    time.sleep(rng.uniform(1, 4))
    c.start(c.meta)
    _note(story, "controller restarted")
    new = w.wait_leader_not("orders", 0, leader, 60)
    _note(story, "new leader", **new)
    w.producer("all").flush(20)
    w.produce("orders", "all", rng.randint(0, 10))


def _ns_producer(c: Cluster, broker: int, topic: str, part: int, run_id: str) -> tuple[procs.Proc, Path, Path]:
    """Start the acks=1 producer inside the broker's namespace, writing to topic-part through that broker."""
    assert c.net is not None
    out, stop = c.run_dir / "netproducer.json", c.run_dir / "netproducer.stop"
    argv = c.net.exec_prefix(broker) + [
        sys.executable,
        "-m",
        "kflab.netproducer",
        f"{c.addr(broker)}:{c.ports[broker]}",
        topic,
        str(part),
        run_id,
        str(out),
        str(stop),
    ]
    p = procs.spawn("netproducer", argv, str(c.log_dir / "netproducer.log"), 300, cwd=str(LAB))
    return p, out, stop


def network_partition(c: Cluster, w: Workload, rng: random.Random, story: dict) -> None:
    """(h) the leader of events-0 cut off from the other brokers and the controller (its network namespace
    leaves the bridge) while an acks=1 producer on its side of the split keeps writing to it; a new leader is
    elected on the other side and takes acks=1 writes.  Seeded variant: the partition heals and the producer
    writes on a while (the old leader truncates before the evidence is frozen), or the evidence is frozen
    while the leader is still cut off (the restart is the heal: Kafka decides on the divergent tail)."""
    if c.net is None:
        raise netns.Unavailable("the network-partition incident needs the cluster in network namespaces")
    topic, part = "events", 0
    leader = w.state(topic)[part]["leader"]
    heal = rng.random() < 0.5
    p, out, stop = _ns_producer(c, leader, topic, part, w.run_id)
    time.sleep(rng.uniform(1, 3))
    c.net.partition(leader)
    _note(story, "leader partitioned (its acks=1 producer on its side)", broker=leader, subnet=c.net.subnet)
    try:
        new = w.wait_leader_not(topic, part, leader, 60)
        _note(story, "new leader on the other side", **new)
        w.produce(topic, "one", rng.randint(3, 20), partition=part)
        time.sleep(rng.uniform(0, 3))
    finally:
        if heal:
            c.net.heal(leader)
            _note(story, "partition healed", broker=leader)
            time.sleep(rng.uniform(2, 10))
    _stop_ns_producer(w, p, out, stop, story)
    if not heal:
        _note(story, "evidence frozen while partitioned (the restart heals)", broker=leader)


def _stop_ns_producer(w: Workload, p: procs.Proc, out: Path, stop: Path, story: dict) -> None:
    """Stop the namespace's producer and add what it was told to the workload's acknowledgement log."""
    stop.write_text("stop\n")
    try:
        p.popen.wait(timeout=40)
    except Exception:  # noqa: BLE001 - a producer that does not stop is killed; what it logged is lost
        p.kill()
    acks = json.loads(out.read_text()) if out.exists() else {"acked": {}, "failed": {}}
    w.log.acked.update({k: tuple(v) for k, v in acks["acked"].items()})
    w.log.failed.update(acks["failed"])
    _note(story, "namespace producer stopped", acked=len(acks["acked"]), failed=len(acks["failed"]))


# The CI subset's three incidents in one cluster (brokers 1, 2, 3): broker 1 leads orders-0 and events-0; events
# has two replicas (1, 2), so freezing broker 2 alone leaves events-0's ISR at its leader while orders-0 keeps two
# in-sync replicas (1, 3) and goes on taking acks=all writes.
COMBINED_ORDERS = TopicSpec("orders", partitions=2, min_isr=2, unclean=False, assignment=[[1, 3, 2], [3, 2, 1]])
COMBINED_EVENTS = TopicSpec("events", partitions=1, min_isr=1, unclean=True, assignment=[[1, 2]])


def crash_unclean_torn(c: Cluster, w: Workload, rng: random.Random, story: dict) -> None:
    """(a)+(b)+(c) in one cluster: the follower of events-0 frozen until out of its ISR; acks=1 writes on the
    lone leader of events-0 and acks=all writes in flight to the same broker as leader of orders-0; that broker
    killed (power loss: its active segments of orders and events cut mid-batch) and the follower thawed: orders-0
    elects cleanly within its ISR, events-0 uncleanly; writes go on to both new leaders."""
    st = w.state("events")[0]
    victim = st["leader"]
    follower = next(b for b in st["replicas"] if b != victim)
    _note(story, "leaders", events=victim, orders=w.state("orders")[0]["leader"])
    c.freeze(follower)
    _note(story, "SIGSTOP follower", broker=follower)
    _wait_out_of_isr(w, "events", 0, {follower}, 45)
    n = rng.randint(5, 30)
    w.produce("events", "one", n, partition=0)
    _note(story, "acks=1 writes on the lone leader", records=n)
    w.produce("orders", "all", rng.randint(5, 20), partition=0, flush_s=0)  # in flight when the leader dies
    c.kill9(victim)
    cuts = {}
    for pdir in sorted(c.data_dir(victim).iterdir()):
        if pdir.is_dir() and pdir.name in ("orders-0", "events-0"):
            r = _cut_tail(pdir, rng)
            if r:
                cuts[pdir.name] = r
    _note(story, "kill -9 leader and torn tail", broker=victim, cuts=cuts)
    c.thaw(follower)
    _note(story, "SIGCONT follower", broker=follower)
    w.producer("all").flush(20)
    for topic in ("orders", "events"):
        _note(story, "new leader", topic=topic, **w.wait_leader_not(topic, 0, victim, 60))
    w.produce("orders", "all", rng.randint(5, 20), partition=0)
    w.produce("events", "one", rng.randint(3, 15), partition=0)


#: the open transaction's timeout (transaction.timeout.ms): short enough to have passed when the lab restarts the
#: cluster (the prediction alone takes longer), long enough to outlast the incident's end and the freeze; or long
#: (under the brokers' default transaction.max.timeout.ms, 15 min), so that the coordinator still waits after it
OPEN_TXN_TIMEOUTS_MS = (30_000, 600_000)


def open_transaction(c: Cluster, w: Workload, rng: random.Random, story: dict) -> None:
    """(i) a transactional producer's records acknowledged on payments-0 and the orders partitions, the cluster
    crashing before it commits: the transaction is left open.  Sometimes the leader of payments-0 dies first (a
    clean election); the timeout is short (the restarted coordinator aborts it) or long (it is still open)."""
    if rng.random() < 0.5:
        leader = w.state("payments")[0]["leader"]
        c.kill9(leader)
        _note(story, "kill -9 leader", broker=leader, topic="payments", partition=0)
        _note(story, "new leader", **w.wait_leader_not("payments", 0, leader, 40))
    timeout_ms = rng.choice(OPEN_TXN_TIMEOUTS_MS)
    counts = {"payments": rng.randint(2, 8), "orders": rng.randint(1, 6)}
    w.open_transaction(counts, timeout_ms)
    _note(story, "transaction left open", timeout_ms=timeout_ms, records=counts)


INCIDENTS = {
    "crash-unclean-torn": crash_unclean_torn,
    "leader-crash": leader_crash,
    "unclean-election": unclean_election,
    "torn-tail": torn_tail,
    "power-loss-image": power_loss_snapshot,
    "follower-freeze": follower_freeze,
    "crc-flip": crc_flip,
    "controller-kill": controller_kill,
    "network-partition": network_partition,
    "open-transaction": open_transaction,
}
NEEDS_NETNS = {"network-partition"}  # staged on a cluster whose nodes each have a network namespace
TOPICS = {"unclean-election": [ORDERS, EVENTS, TXN], "crash-unclean-torn": [COMBINED_ORDERS, COMBINED_EVENTS, TXN]}


def topics_for(name: str) -> list[TopicSpec]:
    return TOPICS.get(name, [ORDERS, SAFE_EVENTS, TXN])
