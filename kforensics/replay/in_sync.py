"""The replay of a partition whose replicas are in sync: the same log on every broker, replayed once, not per replica.

A fleet's partitions are mostly like this (its replicas agree batch for batch,
checkpoint for checkpoint), and for them the engine's answer is known in
shape: one leader, followers that find nothing to truncate, every verdict
``OK``.  :func:`replay_in_sync` gives the same :class:`~.engine.PartitionReplay`
as :func:`~.engine.replay_partition` (the same values, field for field) with
the engine's own rules applied once instead of once per replica:

* **restart**: :func:`.restart.restart` reads only what the replicas share
  (the batches, log start, high watermark, epoch checkpoint, the recovery
  plan's reach), never the broker id, so one replica's restart stands for
  every replica's;
* **elect**: the engine's choice among equal replicas is the lowest broker id
  (:func:`~.engine.choose_leader`'s key differs only there); a new leader
  lacks nothing another replica committed, since every other replica's
  batches are its own (:func:`~.engine._lacked` is empty);
* **truncate and fetch**: a follower's decision reads its state and the
  leader's, equal for every follower, so one follower is replayed
  (:func:`.truncation.truncate_follower`) and its decision copied to the
  others with their id;
* **judge** and **divergence**: :func:`~.engine.judge` on the leader and that
  follower; one pair compared (:func:`.divergence.in_sync_divergence`).

Anything outside that is left to the engine (None is returned): a replica
whose evidence or batches differ, a recovery that cuts or keeps damage, a
log Kafka cannot load or that was not read, tiered storage, events other
than one clean election followed by every other replica, an epoch past
Kafka's largest, and any outcome but ``OK`` verdicts on every replica with
no finding (whose texts would name brokers).  ``KFORENSICS_REPLAY_FULL=1``
(or :data:`ENABLED` set False) sends every group through the engine.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from ..epoch.cache import LeaderEpochCache
from ..epoch.versions import LATEST, KafkaVersion
from ..log.file_kinds import segment_name
from .divergence import compared_from, first_difference, in_sync_divergence
from .engine import (
    EpochRun,
    PartitionReplay,
    ReplicaOutcome,
    _add_not_held,
    _add_unreachable,
    _check_invariants,
    _elect,
    _Election,
    default_epoch,
    default_events,
    epoch_runs,
    judge,
)
from .replica import Replica
from .restart import Restarted, restart
from .truncation import Decision, ReplicaState, truncate_follower
from .verdicts import Verdict

#: whether :func:`kforensics.replay.group.replay_group` tries this path first (the tests compare it with the engine)
ENABLED = os.environ.get("KFORENSICS_REPLAY_FULL", "") in ("", "0")

_ELECT_KEYS = frozenset(("op", "leader", "epoch"))


def _plan_is_plain(r: Replica) -> bool:
    """Whether loading keeps the whole log as it is: nothing cut, no damage kept, the log loads and was read."""
    p = r.recovery
    return (p is not None and p.unknown is None and not p.load_fails and not p.epoch_checkpoint_unreadable
            and p.truncate_segment is None and p.damage_kept is None and p.lost_first_offset is None)


def _recovered_from(r: Replica) -> int | None:
    """The first segment recovery reads, as restart finds it among the replica's segments (by name): its index,
    which is what restart compares the batches' segment column with; -1 when nothing is recovered, None when
    the segment is not among them."""
    p = r.recovery
    if p is None or not p.recovers or p.from_segment is None:
        return -1
    return r.segment_index(segment_name(p.from_segment, ".log"))


def _same_reach(r: Replica, first: Replica, reach: int | None) -> bool:
    """Whether restart reads the same segments of ``r`` as of ``first`` (whose :func:`_recovered_from` is
    ``reach``): the same plan reach, and the named segment found at the same index."""
    p, q = r.recovery, first.recovery
    if p is None or q is None or (p.recovers, p.from_segment) != (q.recovers, q.from_segment):
        return False
    if reach is None or reach == -1:
        return _recovered_from(r) == reach
    # segment_index is the first segment of that name: at ``reach``, and none before it
    return r.segment_index(str(first.segments[reach])) == reach


def in_sync(replicas: list[Replica]) -> bool:
    """Whether every replica holds what the first one holds, for everything the replay reads: the same batch
    rows (every column), log start, high watermark, epoch checkpoint, cleaner offset, window, and a recovery
    plan that cuts nothing and reaches the same segment; no tiered storage, no damage, offsets in order."""
    first = replicas[0]
    data = first.log.data
    if not first.log.is_sorted() or (len(data) and not bool(first.log.col("crc_valid").all())):
        return False
    raw = data.tobytes("A")
    reach = _recovered_from(first)
    for r in replicas:
        if r.tiered is not None or not _plan_is_plain(r):
            return False
        if r is first:
            continue
        if (r.log_start != first.log_start or r.high_watermark != first.high_watermark
                or r.epoch_checkpoint != first.epoch_checkpoint or r.cleaner_offset != first.cleaner_offset
                or r.prefix != first.prefix):
            return False
        other = r.log.data
        if other is not data and (other.shape != data.shape or other.strides != data.strides
                                  or other.tobytes("A") != raw):
            return False
        if not _same_reach(r, first, reach):
            return False
    return True


def _plain_events(events: list[dict[str, Any]], leader: int, ids: list[int]) -> bool:
    """One clean election of ``leader`` (no unclean flag, no evidence) followed by every other replica, once."""
    if not events or events[0].get("op") != "elect" or not set(events[0]) <= _ELECT_KEYS:
        return False
    if events[0].get("leader") != leader:
        return False
    follows: list[int] = [ev["broker"] for ev in events[1:] if ev.get("op") == "follow" and set(ev) == {"op", "broker"}
                          and isinstance(ev["broker"], int)]
    return len(follows) == len(events) - 1 and sorted(follows) == [b for b in ids if b != leader]


def _only_ok(verdicts: list[Verdict]) -> bool:
    return len(verdicts) == 1 and verdicts[0].code == "OK"


def _copy_decision(d: Decision, follower: int) -> Decision:
    """The template follower's decision as another follower's (its own lists: nothing is shared)."""
    return replace(d, follower=follower, rounds=[dict(x) for x in d.rounds], reasoning=list(d.reasoning),
                   repeating=None if d.repeating is None else [dict(x) for x in d.repeating])


def _runs(runs: list[EpochRun]) -> list[EpochRun]:
    return [EpochRun(x.start, x.end, x.epoch) for x in runs]


def _state(r: Replica, rs: Restarted, mode: KafkaVersion) -> ReplicaState:
    """A replica's state after the shared restart, with a cache of its own (elections and fetches change it)."""
    leo = rs.log_end_offset if rs.log_end_offset is not None else r.log_start
    return ReplicaState(r, rs.log, LeaderEpochCache(rs.cache.entries, mode=mode), rs.high_watermark, leo, mode,
                        rs.read_fails_from)


def replay_in_sync(topic: str, partition: int, replicas: list[Replica], *, kafka_version: KafkaVersion = LATEST,
                   leader: int | None = None, events: list[dict[str, Any]] | None = None,
                   no_leader: int | None = None) -> PartitionReplay | None:
    """:func:`~.engine.replay_partition`'s result for replicas :func:`in_sync`, or None when the engine must
    replay them (see the module's text for what it leaves to the engine)."""
    if no_leader is not None or not replicas or not in_sync(replicas):
        return None
    ids = sorted(r.broker_id for r in replicas)
    if len(set(ids)) != len(ids):
        return None
    mode = kafka_version
    rs = restart(replicas[0], mode)
    if rs.load_fails or rs.unjudged or rs.read_fails_from is not None or len(rs.lost_to_recovery) or rs.lost_unread:
        return None
    if leader is None:
        leader = next((e["leader"] for e in reversed(events or []) if e.get("op") == "elect"), None)
    if leader is None:
        leader = ids[0]  # choose_leader's key (latest epoch, log end, -id) differs only in the id
    if leader not in ids:
        return None
    if events is None:
        events = default_events(replicas, leader, default_epoch(replicas[:1]))  # every replica's latest epoch
    if not _plain_events(events, leader, ids):
        return None
    return _replay(topic, partition, replicas, rs, mode, leader, events, ids)


def _replay(topic: str, partition: int, replicas: list[Replica], rs: Restarted, mode: KafkaVersion, leader: int,
            events: list[dict[str, Any]], ids: list[int]) -> PartitionReplay | None:
    """The engine's steps on the leader and one follower (the template of every follower)."""
    by_id = {r.broker_id: r for r in replicas}
    followers = [b for b in ids if b != leader]
    lst = _state(by_id[leader], rs, mode)
    states = {leader: lst}
    fst = None
    if followers:
        fst = states[followers[0]] = _state(by_id[followers[0]], rs, mode)
    end = replicas[0].log_end_offset
    outcomes = {r.broker_id: ReplicaOutcome(r.broker_id, "follower", end, end, r.high_watermark, [], lst.leo,
                                            notes=list(rs.notes))
                for r in replicas}
    elections: list[_Election] = []
    # _lacked reads the other replicas' batches: they are the leader's own, so only the leader is passed
    current, epoch = _elect(events[0], states, {leader: by_id[leader]}, set(), outcomes, leader, mode, elections)
    if epoch is None or current != leader:
        return None  # past Kafka's largest epoch: the engine's finding names every holder
    bound = replicas[0].high_watermark or 0
    outcomes[leader].role = "leader"
    if not _only_ok(judge(lst, lst, rs, bound, mode, [], elections, outcomes[leader].notes, None)):
        return None
    prefix = replicas[0].prefix
    before = epoch_runs(replicas[0].log, prefix)
    after_leader = epoch_runs(lst.log, prefix)
    done = {leader: (lst, after_leader, [Verdict("OK")])}
    if fst is not None:
        d = truncate_follower(fst, lst, mode, fetch=True)
        notes = list(rs.notes)
        differs_at = first_difference(fst.log, lst.log, compared_from(fst.replica, lst.replica))
        if (not d.converged or not _only_ok(judge(fst, lst, rs, bound, mode, [d], [], notes, differs_at))
                or notes != rs.notes or _check_invariants(fst, bound, differs_at)):
            return None
        after = epoch_runs(fst.log, prefix)
        for b in followers:
            outcomes[b].decisions.append(d if b == followers[0] else _copy_decision(d, b))
            done[b] = (fst, after, [Verdict("OK")])
    for b, (st, after, verdicts) in done.items():
        out = outcomes[b]
        out.log_end_offset_after = st.leo
        out.epoch_cache = st.cache.entries
        out.log_before, out.log_after, out.verdicts = _runs(before), _runs(after), verdicts
    _add_not_held(outcomes[leader], replicas, {b: rs for b in ids}, lst.leo, bound)
    _add_unreachable(outcomes[leader], lst, mode)
    return PartitionReplay(topic, partition, mode, current, epoch, bound, [outcomes[b] for b in sorted(outcomes)],
                           in_sync_divergence(replicas), events, [])
