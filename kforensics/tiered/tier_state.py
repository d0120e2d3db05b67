"""Replication over tiered storage: a follower below the leader's local log start, and remote segments an
election leaves outside the new leader's epoch lineage.

**A follower below the leader's local log start.**  The leader answers a
fetch at an offset at or above its log start but below its local log start
with OFFSET_MOVED_TO_TIERED_STORAGE (``ReplicaManager``, 3.9.0 ≈ L1756); the
follower's fetcher hands over to ``TierStateMachine.start`` (3.9.0;
``ReplicaFetcherTierStateMachine`` at 3.6.0, ``AbstractFetcherThread.
handleOffsetsMovedToTieredStorage``):

1. it asks the leader for its earliest local (epoch, offset);
2. the target epoch is that epoch when it is 0, else the epoch the leader
   answers for the epoch before it (OffsetsForLeaderEpoch) when that epoch
   ends past local start − 1, else the local start's own epoch;
3. it looks up the remote segment holding (target epoch, local start − 1)
   (``RemoteLogManager.fetchRemoteLogSegmentMetadata``: only segments whose
   copy finished are listed under their epochs); none is a
   ``RemoteStorageException``: the fetcher marks the partition failed and
   retries, for ever while the metadata stays as it is;
4. it truncates fully and starts at that segment's end + 1
   (``truncateFullyAndStartAt``), takes the leader's log start, rebuilds its
   leader-epoch cache from the segment's epoch checkpoint and its producer
   state from the segment's snapshot, and fetches on from there.

What it truncated is in remote storage, in the leader's lineage (epoch-based
truncation came first): no record is lost.

**Remote segments outside the lineage.**  After the replay, every copied
remote segment of the partition is checked against the leader's epoch cache
and log end (:func:`~kforensics.tiered.lineage.within_leader_epochs`); one
outside is never served again, and the cleanup of the version leaves or
deletes it (:func:`~kforensics.tiered.lineage.cleanup_fate`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..epoch.versions import KafkaVersion
from .coverage import TieredFacts
from .lineage import Unreachable, cleanup_fate, within_leader_epochs
from .remote_segments import RemotePartition, RemoteSegment


@dataclass
class TieredReplica:
    """What the replay knows of one replica's tiered log: its facts and the partition's remote metadata."""

    facts: TieredFacts
    remote: RemotePartition | None = None
    notes: list[str] = field(default_factory=list)


def remote_segment_for(remote: RemotePartition | None, epoch: int, offset: int) -> RemoteSegment | None:
    """``RemoteLogMetadataCache.remoteLogSegmentMetadata(epoch, offset)``: the copied segment listed under
    ``epoch`` whose part in that epoch holds ``offset``."""
    for seg in remote.copied() if remote is not None else []:
        epochs = dict(seg.leader_epochs)
        if epoch not in epochs:
            continue
        later = [o for e, o in seg.leader_epochs if e > epoch]
        end = min(later) - 1 if later else seg.end_offset
        if epochs[epoch] <= offset <= end:
            return seg
    return None


def offset_moved_to_tiered(f: Any, leader: Any, fetch_offset: int, d: Any) -> bool | None:
    """The leader's answer to a fetch at ``fetch_offset`` when its log is tiered: None when the offset is not
    in remote storage (the ordinary rules apply), else whether the follower could start over from the leader's
    local log start (``f``, ``leader``: the replay's ``ReplicaState``; ``d``: the follower's ``Decision``)."""
    t: TieredReplica | None = getattr(leader.replica, "tiered", None)
    if t is None or t.facts.local_log_start_offset is None:
        return None
    local = t.facts.local_log_start_offset
    if not t.facts.log_start_offset <= fetch_offset < local:
        return None
    d.path = "tiered"
    epoch = leader.cache.epoch_for_offset(local)
    epoch = 0 if epoch is None else epoch
    target = epoch
    step = (f"fetch at {fetch_offset}: below the leader's local log start {local} (log start "
            f"{t.facts.log_start_offset}): OFFSET_MOVED_TO_TIERED_STORAGE; earliest local ({epoch}, {local})")
    if epoch != 0:
        e, o = (int(x) for x in leader.cache.end_offset_for(epoch - 1, leader.leo))
        if o > local - 1:
            target = e
    seg = remote_segment_for(t.remote, target, local - 1)
    rec: dict[str, Any] = {"fetch_offset": fetch_offset, "earliest_local": [epoch, local],
                           "target_epoch": target}
    d.rounds.append(rec)
    if seg is None:
        d.converged = False
        d.reasoning.append(f"{step}; no copied remote segment holds epoch {target} at offset {local - 1}: "
                           "RemoteStorageException, the fetcher retries for ever (TierStateMachine)")
        return False
    start = seg.end_offset + 1
    rec["remote_segment"] = seg.segment_id
    gone = len(f.log)
    first = int(f.log.col("base_offset")[0]) if gone else None
    f.log, _ = f.log.split(0)
    f.leo = start
    f.cache.clear()
    for e, o in leader.cache.entries:
        if o < start:
            f.cache.assign(e, o)  # the remote segment's leader-epoch checkpoint: the leader's lineage below it
    f.hw = min(f.hw, start)
    held = f" (its {gone} batch(es) from {first} are in remote storage: nothing lost)" if gone else ""
    d.reasoning.append(f"{step}; remote segment {seg.segment_id} ({seg.start_offset}-{seg.end_offset}) holds "
                       f"{local - 1}: truncate fully{held}, rebuild the epoch cache and producer state from it, "
                       f"fetch from {start}")
    d.leo_after = f.leo
    return True


def unreachable_segments(leader: Any, version: KafkaVersion) -> list[Unreachable]:
    """The copied remote segments outside the leader's lineage after the replay (``leader``: its
    ``ReplicaState``), with what the version's cleanup does with each."""
    t: TieredReplica | None = getattr(leader.replica, "tiered", None)
    if t is None or t.remote is None:
        return []
    lineage = leader.cache.entries
    out = []
    for seg in t.remote.copied():
        if seg.end_offset < leader.replica.log_start:
            continue  # below the log start: retention's to delete, no reader's to miss
        ok, why = within_leader_epochs(seg, leader.leo, lineage, version)
        if not ok:
            out.append(Unreachable(seg, why, cleanup_fate(seg, lineage, t.facts.log_start_offset)))
    return out


def unreachable_facts(found: list[Unreachable], version: KafkaVersion) -> dict[str, Any]:
    """The facts of the verdict on unreachable remote segments."""
    return {"kafka_version": version.label,
            "segments": [{**u.segment.facts(), "why": u.why, "cleanup": u.fate} for u in found]}
