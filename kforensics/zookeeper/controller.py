"""The ZooKeeper-era controller at a restart: who leads each partition, in which epoch, from ZooKeeper's record.

Rules, as read at tags 2.8.2 and 3.9.0-rc3 (``core/src/main/scala/kafka/controller/``; the two agree on leader
and epoch, 3.x only marks an unclean leader RECOVERING):

* **Who is controller.**  ``/controller`` is ephemeral: the broker whose session holds it stays controller
  while it runs.  Otherwise, once that session is gone, the first live broker to create the znode is elected
  (``KafkaController.elect``).  A broker registers ``/brokers/ids/<id>`` before it tries, and cannot register
  while its previous session's znode is still there (``KafkaZkClient.registerBroker``, a checked ephemeral
  create): so at a cold restart the sessions the evidence holds expire before anyone registers, and the first
  broker back is controller and the only live broker.
* **Failover** (``onControllerFailover``): ``ReplicaStateMachine.startup`` moves every replica of a broker that
  is not live to ``OfflineReplica``, grouped by broker (``replicas.groupBy(_.replica)``: an immutable Scala 2.13
  ``HashMap``, iterated in the order of :func:`champ_order`); each removal takes the replica out of the ISR
  (``doRemoveReplicasFromIsr``: not the last one, which stays), sets the leader to -1 when it was the leader,
  and writes ``newLeaderAndIsr``: leader epoch + 1.  Then ``PartitionStateMachine.startup`` elects for every
  partition whose leader is not live (``OfflinePartitionLeaderElectionStrategy``).
* **Election** (``Election.leaderForOffline``, ``offlinePartitionLeaderElection``): the first replica in
  assignment order that is live and in the ISR; else, where the topic allows it (``unclean.leader.election
  .enable``: the topic's override, else the controller's broker config), the first live replica.  The new ISR is
  the live part of the old one (the leader alone after an unclean election); epoch + 1.  No candidate: the
  partition stays as it is, offline.  A partition without a state znode gets the first live replica as leader,
  every live replica as ISR, epoch 0 (``initializeLeaderAndIsrForPartitions``).
* **A broker comes back** (``onBrokerStartup``): it is live; partitions without a live leader are elected again.
* **A broker whose session expires while the controller runs** (``onBrokerFailure``, ``onReplicasBecomeOffline``):
  partitions it led are elected without it, then its replicas leave the ISRs as above.

Not modelled: reassignments in flight, topic deletion, preferred-leader elections (``auto.leader.rebalance
.enable``, the ``/admin/preferred_replica_election`` znode), controlled shutdown, ISR changes the leaders make
after the restart (they move no leader and bump no epoch).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .partition_state import PartitionState

NO_LEADER = -1
#: most return orders tried per partition when the order is not given
MAX_ORDERS = 720


def _improve(h: int) -> int:
    """``scala.collection.Hashing.improve`` (Scala 2.13), on 32-bit ints."""
    m = 0xFFFFFFFF
    h &= m
    h = (h + (~(h << 9) & m)) & m
    h ^= h >> 14
    h = (h + (h << 4)) & m
    return h ^ (h >> 10)


def champ_order(ids: Iterable[int], shift: int = 0) -> list[int]:
    """Broker ids in the order an immutable Scala 2.13 ``HashMap`` keyed by them iterates (CHAMP: a node's own
    entries in the order of their 5-bit hash slice, then its sub-nodes, depth first): the order in which
    ``groupBy(_.replica)`` hands the controller each broker's replicas."""
    by_slot: dict[int, list[int]] = {}
    for b in set(ids):
        by_slot.setdefault((_improve(b) >> shift) & 31, []).append(b)
    own = [bs[0] for slot, bs in sorted(by_slot.items()) if len(bs) == 1]
    subs = [b for slot, bs in sorted(by_slot.items()) if len(bs) > 1
            for b in (champ_order(bs, shift + 5) if shift < 30 else sorted(bs))]
    return own + subs


@dataclass
class PartitionRun:
    """One partition through the controller's actions: its state znode as the model rewrites it."""

    assignment: tuple[int, ...]
    state: PartitionState | None
    unclean_allowed: bool
    steps: list[str] = field(default_factory=list)
    rule: str | None = None  # how the last leader was chosen: isr | unclean | None (kept, or a new partition)
    unclean: bool = False  # an unclean election happened on the way

    def _write(self, leader: int, isr: Sequence[int], why: str) -> None:
        old = self.state
        epoch = 0 if old is None else old.leader_epoch + 1  # LeaderAndIsr.newLeaderAndIsr: epoch + 1
        self.state = PartitionState(leader, epoch, tuple(isr), 0 if old is None else old.controller_epoch)
        self.steps.append(f"{why}: leader {leader}, ISR [{', '.join(map(str, isr))}], epoch {epoch}")

    def remove_from_isr(self, broker: int) -> None:
        """``doRemoveReplicasFromIsr`` for one offline replica."""
        s = self.state
        if s is None or broker not in s.isr:
            return
        leader = NO_LEADER if s.leader == broker else s.leader
        isr = s.isr if len(s.isr) == 1 else tuple(b for b in s.isr if b != broker)
        self._write(leader, isr, f"replica {broker} offline, out of the ISR")

    def elect(self, live: set[int]) -> None:
        """``OfflinePartition -> OnlinePartition`` when the leader is not live (a new partition: initialised)."""
        s = self.state
        live_replicas = [b for b in self.assignment if b in live]
        if s is None:
            if live_replicas:
                self._write(live_replicas[0], live_replicas, "new partition initialised")
                self.rule = None
            return
        if s.leader in live:
            return
        leader = next((b for b in self.assignment if b in live and b in s.isr), None)
        if leader is not None:
            self._write(leader, [b for b in s.isr if b in live], "offline partition, leader elected from the ISR")
            self.rule = "isr"
        elif self.unclean_allowed and live_replicas:
            self._write(live_replicas[0], [live_replicas[0]], "offline partition, unclean election")
            self.rule, self.unclean = "unclean", True


@dataclass(frozen=True)
class Restart:
    """How the brokers come back, as the controller sees it."""

    returning: tuple[int, ...]  # in the order they start
    running: frozenset[int] = frozenset()  # never stopped: their sessions stay
    controller_running: bool = False  # the broker holding /controller is one of them: no failover
    expiring: frozenset[int] = frozenset()  # registered in the evidence, not running: their sessions expire
    everyone: frozenset[int] = frozenset()  # every broker some partition is assigned to (the offline replicas)


def run_restart(p: PartitionRun, r: Restart) -> PartitionRun:
    """The controller's actions on one partition, cold: the evidence's sessions expire, then the brokers return
    one at a time in order, each once the one before has registered."""
    live = set(r.running)
    back = list(r.returning)
    if r.controller_running:
        gone = sorted(r.expiring)
        if gone:
            p.steps.append(f"the controller (running) sees brokers {_ids(gone)} expire")
            p.elect(live)
            for b in champ_order(gone):
                if b in p.assignment:
                    p.remove_from_isr(b)
    else:
        if not live and back:
            live.add(back.pop(0))
        p.steps.append(f"controller failover, live brokers {_ids(live) or 'none'}")
        for b in champ_order(r.everyone - live):
            if b in p.assignment:
                p.remove_from_isr(b)
        p.elect(live)
    for b in back:
        live.add(b)
        p.steps.append(f"broker {b} starts")
        p.elect(live)
    return p


def _ids(bs: Iterable[int]) -> str:
    return ", ".join(map(str, sorted(bs)))


@dataclass(frozen=True)
class Outcome:
    """The partition after one order of return."""

    order: tuple[int, ...]
    state: PartitionState | None
    rule: str | None
    unclean: bool
    steps: tuple[str, ...]


def outcomes(assignment: tuple[int, ...], state: PartitionState | None, unclean_allowed: bool,
             restart: Restart, order_given: bool) -> tuple[Outcome, dict[int, Outcome]]:
    """The outcome of the order given (else the ascending one), and per leader some order gives, the first such
    order's outcome (every order of the partition's returning replicas, up to :data:`MAX_ORDERS`)."""
    def one(order: tuple[int, ...]) -> Outcome:
        run = run_restart(PartitionRun(assignment, state, unclean_allowed), Restart(
            order, restart.running, restart.controller_running, restart.expiring, restart.everyone))
        return Outcome(order, run.state, run.rule, run.unclean, tuple(run.steps))

    base = one(restart.returning)
    seen = {_leader(base): base}
    if not order_given:
        for order in _orders(restart.returning, assignment):
            o = one(order)
            seen.setdefault(_leader(o), o)
    return base, seen


def _orders(returning: tuple[int, ...], assignment: tuple[int, ...]) -> Iterable[tuple[int, ...]]:
    """The orders of return tried: all of them up to six brokers; else those of the partition's replicas, the
    other brokers after them (and once, one of the others first: it becomes controller with no replica live)."""
    if len(returning) <= 6:
        yield from itertools.permutations(returning)
        return
    mine = [b for b in returning if b in assignment]
    others = [b for b in returning if b not in assignment]
    for perm in itertools.islice(itertools.permutations(mine), MAX_ORDERS):
        yield (*perm, *others)
    if others:
        yield (others[0], *mine, *others[1:])


def _leader(o: Outcome) -> int:
    return NO_LEADER if o.state is None else o.state.leader
