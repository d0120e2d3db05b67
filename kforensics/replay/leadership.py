"""Who leads the replay of one partition, and how that was decided: never a guess shown as the controller's record.

* ``--leader`` or a scenario's events: ``given``;
* with the controller's record (a KRaft metadata log): the election model's
  answer (:func:`kforensics.kraft.controller_choice.controller_choice`):
  ``controller-record``, ``predicted`` or ``offline``;
* without it: ``guessed`` — the replica with the highest epoch, then the
  longest log, then the lowest id (:func:`.engine.choose_leader`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..kraft.cluster_state import ClusterState
from ..kraft.controller_choice import LeaderElection, RestartEvidence, controller_choice
from .replica import Replica

GUESS = ("no controller's record (no KRaft metadata log among the inputs): the replica with the highest leader "
         "epoch, then the longest log, then the lowest broker id")


@dataclass
class Leadership:
    """What the replay is told: its events (None: the default election of ``leader``), or nobody leads."""

    events: list[dict[str, Any]] | None
    election: LeaderElection | None  # None until the replay has chosen (guessed or given)
    no_leader_epoch: int | None = None  # set when nobody leads: the epoch the controller leaves


def _evidence_text(e: Any) -> str:
    return (f"the controller's record (metadata offset {e.offset}) elects broker {e.leader} in epoch "
            f"{e.leader_epoch} outside the previous ISR" + (" (leader recovery state RECOVERING)"
                                                             if e.leader_recovery_state == 1 else ""))


def with_evidence(events: list[dict[str, Any]], entries: list[Any]) -> list[dict[str, Any]]:
    """Events whose elections the controller's record shows carry its word on whether they were unclean."""
    unclean = {(e.leader, e.leader_epoch): e for e in entries if e.leader_changed and e.unclean}
    out = []
    for ev in events:
        e = unclean.get((ev.get("leader"), ev.get("epoch"))) if ev.get("op") == "elect" else None
        out.append({**ev, "unclean": True, "evidence": _evidence_text(e)} if e is not None and "unclean" not in ev
                   else ev)
    return out


def _record_unclean(entries: list[Any], leader: int) -> Any:
    """The entry that granted the record's leader its epoch, when the record shows that election unclean."""
    elected = [e for e in entries if e.leader_changed or e is entries[0]]
    last = elected[-1] if elected else None
    return last if last is not None and last.unclean and last.leader == leader else None


def leadership(topic: str, replicas: list[Replica], entries: list[Any], *, leader: int | None,
               events: list[dict[str, Any]] | None, restart: RestartEvidence | None,
               tail_missing: bool = False, partition: int | None = None) -> Leadership:
    """The replay's election for one partition (``entries``: the controller's record of it, possibly empty;
    ``tail_missing``: the metadata log lost its tail, so a later record may have changed the registration;
    ``partition``: its number, for ZooKeeper's record when ``restart`` carries one)."""
    ids = sorted(r.broker_id for r in replicas)
    if leader is not None or events is not None:
        return Leadership(with_evidence(events, entries) if events is not None and entries else events, None)
    if not entries:
        zk = _zookeeper_choice(topic, partition, restart)
        return Leadership(None, None) if zk is None else _follow(zk, replicas, ids, [])
    if restart is None:  # no cluster state read: the brokers given are those that return, none known active
        restart = RestartEvidence(ClusterState(), tuple(ids))
    choice = controller_choice(entries[-1], topic, restart)
    if tail_missing:
        choice.detail += ("; the metadata log lost its tail (METADATA_LOG_INCOMPLETE): a record after the last one "
                          "read may have changed this registration")
        choice.assumptions["metadata log"] = "incomplete: the last registration read may not be the last written"
    return _follow(choice, replicas, ids, entries)


def _zookeeper_choice(topic: str, partition: int | None, restart: RestartEvidence | None) -> LeaderElection | None:
    """ZooKeeper's answer when the restart evidence carries a ZooKeeper-mode cluster's state (else None)."""
    if partition is None or getattr(restart, "zookeeper", None) is None:
        return None
    from ..zookeeper.election import zookeeper_choice

    return zookeeper_choice(topic, partition, restart)


def _follow(choice: LeaderElection, replicas: list[Replica], ids: list[int], entries: list[Any]) -> Leadership:
    """The replay's events for the controller's choice (KRaft's or ZooKeeper's)."""
    if choice.offline:
        return Leadership(None, choice, no_leader_epoch=choice.leader_epoch)
    if choice.leader not in ids:
        choice.detail += (f"; broker {choice.leader}'s log is not in the evidence, so the replay follows the "
                          "replica with the highest epoch, then the longest log, instead")
        return Leadership(None, choice)
    top = max((r.latest_epoch for r in replicas if r.latest_epoch is not None), default=-1)
    # an epoch at or below what a replica caches means the metadata lags the brokers: the replay's own next epoch;
    # except the recorded leader going on in its recorded epoch (the restart changed nothing), whose own batches
    # are what a replica caches in it (the lab: a 3.9.1 leader kept epoch 1 where the replay said 2)
    going_on = (choice.leader, choice.leader_epoch) == (choice.record_leader, choice.record_epoch)
    epoch = choice.leader_epoch if choice.leader_epoch > top or (going_on and choice.leader_epoch == top) else None
    ev: dict[str, Any] = {"op": "elect", "leader": choice.leader, "epoch": epoch}
    shown = _record_unclean(entries, choice.leader) if choice.how == "controller-record" else None
    if shown is not None:
        ev.update(unclean=True, evidence=_evidence_text(shown))
    elif choice.unclean:
        ev.update(unclean=True, evidence=f"predicted: {choice.detail}")
    return Leadership([ev] + [{"op": "follow", "broker": b} for b in ids if b != choice.leader], choice)


def settled(chosen: Leadership, rp: Any, *, given: bool) -> LeaderElection:
    """The election to report once the replay ran: the model's, or what the replay was given or guessed."""
    if chosen.election is not None:
        if chosen.election.leader != rp.leader and not chosen.election.offline:
            chosen.election.detail += f" (the replay's leader: broker {rp.leader})"
        return chosen.election
    if given:
        return LeaderElection(rp.leader, rp.leader_epoch, "given",
                              detail="named by --leader or the scenario's events")
    return LeaderElection(rp.leader, rp.leader_epoch, "guessed", detail=GUESS)
