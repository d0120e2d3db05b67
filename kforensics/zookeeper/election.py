"""The replay's election for a ZooKeeper-mode cluster: the controller model (:mod:`.controller`) applied to
ZooKeeper's record (:mod:`.partition_state`), answered as the KRaft path answers
(:class:`~kforensics.kraft.controller_choice.LeaderElection`: ``controller-record``, ``predicted`` or
``offline``), so the replay's output and Spark's tables need nothing of their own.

The restart's inputs are the replay's (``--alive``, ``--running``, ``--restart-order``:
:class:`~kforensics.kraft.controller_choice.RestartEvidence`), carried with the ZooKeeper state in
:class:`ZooKeeperRestartEvidence`.  Without ``--restart-order`` every order of return is tried: when they
agree the answer is settled, else the one the replay follows is picked as the KRaft path picks it (the
record's leader when some order keeps it, else a clean election some order gives, else the ascending order's)
and the others are listed as alternatives.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..kraft.controller_choice import LeaderElection, RestartEvidence
from .controller import NO_LEADER, Outcome, Restart, outcomes
from .partition_state import PartitionState, ZooKeeperCluster


@dataclass(frozen=True)
class ZooKeeperRestartEvidence(RestartEvidence):
    """The restart's inputs with ZooKeeper's record of the cluster (its configs are ``cluster``'s)."""

    zookeeper: ZooKeeperCluster | None = None


def zookeeper_restart(zk: ZooKeeperCluster, brokers: Iterable[int], alive: tuple[int, ...] | None = None,
                      running: tuple[int, ...] = (), order: tuple[int, ...] | None = None,
                      release: tuple[int, int, int] | None = None,
                      shutdown_epochs: Mapping[int, frozenset[int]] | None = None) -> ZooKeeperRestartEvidence:
    """The evidence of a restart of the brokers given, with ZooKeeper's state."""
    return ZooKeeperRestartEvidence(zk.configs, tuple(brokers), alive, dict(shutdown_epochs or {}), release, running,
                                    order, zookeeper=zk)


def with_zookeeper(evidence: RestartEvidence, zk: ZooKeeperCluster) -> ZooKeeperRestartEvidence:
    """``evidence`` (the brokers, --alive, --running, --restart-order, markers) with ZooKeeper's state, whose
    configs become its cluster's."""
    return ZooKeeperRestartEvidence(zk.configs, evidence.brokers, evidence.alive, evidence.shutdown_epochs,
                                    evidence.release, evidence.running, evidence.order, zookeeper=zk)


def zookeeper_choice(topic: str, partition: int, evidence: Any) -> LeaderElection | None:
    """The leader ZooKeeper-mode Kafka gives the partition at the restart; None when ZooKeeper does not know the
    partition (or no ZooKeeper state was read)."""
    zk: ZooKeeperCluster | None = getattr(evidence, "zookeeper", None)
    assignment = zk.replicas(topic, partition) if zk is not None else None
    if zk is None or assignment is None:
        return None
    state = zk.states.get((topic, partition))
    value, source = zk.configs.topic_config(topic, "unclean.leader.election.enable")
    running = frozenset(evidence.running)
    restart = Restart(evidence.returning, running, zk.controller is not None and zk.controller in running,
                      frozenset(b for b in zk.registered if b not in running),
                      frozenset(zk.all_replicas() | set(evidence.brokers)))
    given = evidence.order is not None
    base, seen = outcomes(assignment, state, value.strip().lower() == "true", restart, given)
    pick = base if given or len(seen) == 1 else _likeliest(base, seen, state, restart.returning)
    leader = NO_LEADER if pick.state is None else pick.state.leader
    if leader == NO_LEADER:
        how, rule = "offline", None
    elif state is not None and leader == state.leader and not pick.unclean:
        how, rule = "controller-record", None
    else:
        how, rule = "predicted", pick.rule
    epoch = pick.state.leader_epoch if pick.state is not None and leader != NO_LEADER else (
        state.leader_epoch if state is not None else -1)
    out = LeaderElection(leader, epoch, how, rule, pick.unclean, None if state is None else state.leader,
                         None if state is None else state.leader_epoch, None, list(restart.returning),
                         evidence.alive is not None, sorted(running), given, sorted(set(seen) - {leader}),
                         list(pick.steps), _assumptions(zk, topic, partition, state, evidence, restart,
                                                        f"{value} ({source})"),
                         _detail(how, pick, state, value))
    if zk.incomplete:
        out.detail += ("; ZooKeeper's data dir could not be read to its end (ZOOKEEPER_STATE_INCOMPLETE): a later "
                       "transaction may have changed this partition's state")
    return out


def _likeliest(base: Outcome, seen: dict[int, Outcome], state: PartitionState | None,
               returning: tuple[int, ...]) -> Outcome:
    """Of the outcomes the orders give, the one the replay follows (the KRaft path's rule, ``_likeliest``)."""
    if state is not None and state.leader in returning and state.leader in seen:
        return seen[state.leader]
    if base.unclean or base.state is None or base.state.leader == NO_LEADER:
        return next((o for b, o in sorted(seen.items()) if b != NO_LEADER and not o.unclean), base)
    return base


def _ids(bs: Iterable[int]) -> str:
    return ", ".join(map(str, sorted(bs)))


def _assumptions(zk: ZooKeeperCluster, topic: str, partition: int, state: PartitionState | None, evidence: Any,
                 restart: Restart, unclean: str) -> dict[str, str]:
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    record = (f"ZooKeeper's {path} (zxid {state.zxid:#x})" if state is not None else
              f"no {path} in ZooKeeper: the controller initialises the partition")
    data = zk.data
    read = (f"{data.source}: snapshot {data.snapshot or 'none'} and logs to zxid {data.last_zxid:#x}"
            + (" (incomplete: damage stopped the reading)" if data.incomplete else ""))
    out = {
        "controller's record": f"{record} in {read}",
        "controller rules": "Kafka's ZooKeeper-mode controller (2.8.2 and 3.9: onControllerFailover, "
                            "ReplicaStateMachine, OfflinePartitionLeaderElectionStrategy)",
        "unclean.leader.election.enable": unclean.replace("metadata log", "ZooKeeper data"),
        "returning brokers": (f"{_ids(restart.returning)} (--alive)" if evidence.alive is not None else
                              f"{_ids(restart.returning)} (every broker whose evidence was given)"),
    }
    held = sorted(zk.registered)
    if restart.controller_running:
        out["restart"] = (f"broker {zk.controller} holds /controller and never stopped (--running): no failover; "
                          "the sessions of the other registered brokers expire, then each broker comes back")
    else:
        out["restart"] = ("cold: the sessions ZooKeeper holds (registrations of brokers "
                          f"{_ids(held) or 'none'}, /controller of broker {zk.controller}) expire before any broker "
                          "registers again; the first broker back is controller, each later one starts once the "
                          "one before has registered")
    if evidence.order is not None:
        out["restart order"] = f"{', '.join(map(str, restart.returning))} (--restart-order)"
    if restart.running:
        out["restart"] += f"; brokers {_ids(restart.running)} never stopped (--running): live throughout"
    return out


def _detail(how: str, pick: Outcome, state: PartitionState | None, unclean: str) -> str:
    """One sentence: why this broker (or nobody) leads."""
    if state is None:
        said = "ZooKeeper holds no state for this partition"
    else:
        said = (f"ZooKeeper's partition state names broker {state.leader}" if state.leader != NO_LEADER else
                "ZooKeeper's partition state names no leader") + \
               f" (epoch {state.leader_epoch}, ISR [{_ids(state.isr)}])"
    end = pick.state
    if how == "offline" or end is None:
        why = "no replica of its ISR comes back" + ("" if unclean.strip().lower() == "true" else
                                                     ", and unclean leader election is off")
        return f"{said}; the ZooKeeper-mode controller elects nobody: {why}"
    if how == "controller-record":
        again = ("" if state is not None and end.leader_epoch == state.leader_epoch else
                 f" (in epoch {end.leader_epoch}: each change the controller writes to the state znode bumps it)")
        return f"{said}, which comes back and leads again{again}"
    reasons = {"isr": "the first replica in assignment order that is live and in the ISR",
               "unclean": "no ISR member is live: an unclean election (unclean.leader.election.enable is on), the "
                          "first live replica in assignment order"}
    reason = reasons.get(pick.rule or "", "the first live replica of a partition without a state")
    return (f"{said}; the ZooKeeper-mode controller elects broker {end.leader} in epoch {end.leader_epoch}: "
            f"{reason}")
