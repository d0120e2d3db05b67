"""A replica's leader epochs against the epochs the KRaft controller granted (the timeline's record)."""

from __future__ import annotations

from typing import Any

from ..findings import Finding, finding
from ..severity import Severity
from .timeline import NO_LEADER, Timeline


def check_replica_epochs(tl: Timeline, *, topic: str, partition: int, topic_id: str | None = None,
                         broker_id: int | None = None, checkpoint: list[tuple[int, int]] | None = None,
                         batch_epochs: list[int] | tuple = (), file: str | None = None) -> list[Finding]:
    """Findings from comparing one replica's leader epochs with the epochs the controller granted.

    ``checkpoint`` is the replica's leader-epoch-checkpoint (None when
    absent), ``batch_epochs`` the epochs its batches carry.  Codes:
    ``EPOCH_NOT_GRANTED`` (an epoch beyond the last one granted, or one
    granted with no leader; nothing is said of an epoch beyond the last grant
    when a witness shows the metadata log lost its tail, :attr:`Timeline.tail_missing`),
    ``GRANT_NOT_SEEN`` (the broker was elected in an
    epoch its checkpoint lacks), ``TOPIC_ID_MISMATCH``,
    ``REPLICA_NOT_ASSIGNED``, ``REPLICA_OF_DELETED_TOPIC`` and
    ``PARTITION_NOT_IN_METADATA``.
    """
    return _check(tl, topic, partition, topic_id, broker_id, checkpoint, list(batch_epochs), file)


def _check(tl: Timeline, topic: str, partition: int, topic_id: str | None, broker_id: int | None,
           checkpoint: list[tuple[int, int]] | None, batch_epochs: list[int], file: str | None) -> list[Finding]:
    out: list[Finding] = []
    facts: dict[str, Any] = {"topic": topic, "partition": partition}
    if broker_id is not None:
        facts["broker_id"] = broker_id
    all_entries = tl.partitions.get((topic, partition), [])
    if not all_entries:
        if tl.complete and tl.partitions and topic not in set(tl.topic_names.values()):
            out.append(finding("PARTITION_NOT_IN_METADATA", f"{topic}-{partition} is on disk but the controller's "
                               "metadata never registered "
                               "the topic", file=file, **facts))
        return out
    entries = tl.entries(topic, partition, topic_id)
    if not entries:
        ids = sorted({e.topic_id for e in all_entries if e.topic_id})
        out.append(finding("TOPIC_ID_MISMATCH", f"the replica's topic id {topic_id} is not the one the controller "
                           f"gave {topic} ({', '.join(ids)}): a leftover of a deleted topic?" + _lost_tail(tl),
                           severity=Severity.INFO if tl.tail_missing else None, file=file,
                           **{**facts, "topic_id": topic_id, "controller_topic_ids": ids}))
        return out
    first, last = entries[0].leader_epoch, entries[-1].leader_epoch
    leaders = {e.leader_epoch: e.leader for e in entries if e.leader_changed or e is entries[0]}
    cp_epochs = [e for e, _ in (checkpoint or [])]
    held = sorted({e for e in cp_epochs + batch_epochs if e >= 0})
    # batches written in an epoch past the last grant, by a broker whose own copy of the metadata log is given: the
    # copy held the grant (a checkpoint entry alone is weaker: one can be damaged or stale)
    witnessed = max(batch_epochs, default=-1) > last and not tl.tail_missing and _own_copy(tl, broker_id)
    if witnessed:
        out.append(_own_log_lost_tail(tl, max(batch_epochs), last, entries[-1].offset, file, facts))
    for epoch in held:
        where = ("checkpoint" if epoch in cp_epochs else "") + ("+batches" if epoch in batch_epochs else "")
        reason = None
        if epoch > last and (tl.tail_missing or witnessed):
            continue  # granted, perhaps, in the part of the metadata log the copies lost (METADATA_LOG_INCOMPLETE)
        if epoch > last:
            reason = (f"beyond the last epoch the controller granted ({last}, metadata offset {entries[-1].offset}; "
                      f"the metadata given ends at offset {tl.trusted_end if tl.trusted_end is not None else '?'})")
        elif leaders.get(epoch) == NO_LEADER:
            reason = "granted with no leader, so no broker could have written in it"
        if reason:
            out.append(finding("EPOCH_NOT_GRANTED", f"leader epoch {epoch} ({where.strip('+')}) was never granted "
                               f"to a leader: {reason}",
                               file=file, **{**facts, "epoch": epoch, "first_granted": first,
                                                 "last_granted": last}))
    if broker_id is not None and checkpoint is not None:
        top = max(cp_epochs, default=-1)
        for e in entries:
            # brokers apply only committed metadata: a grant past the committed bound may never have reached them
            if (e.leader_changed and e.leader == broker_id and e.leader_epoch > top and e.source == "log"
                    and e.committed is not False):
                out.append(_grant_not_seen(broker_id, e.leader_epoch, e.offset, top, batch_epochs, file, facts))
                break
    removed = tl.removed_topics.get(entries[-1].topic_id or "")
    if removed is not None and removed.get("offset") is not None and removed["offset"] > entries[-1].offset:
        out.append(finding("REPLICA_OF_DELETED_TOPIC", f"the controller deleted topic {topic} (metadata offset "
                           f"{removed['offset']}); this replica "
                           "is a leftover", file=file, **{**facts, "metadata_offset": removed["offset"]}))
    elif broker_id is not None and broker_id not in entries[-1].replicas:
        out.append(finding("REPLICA_NOT_ASSIGNED", f"the controller's replicas of {topic}-{partition} are "
                           f"{entries[-1].replicas}, without broker {broker_id}" + _lost_tail(tl),
                           severity=Severity.INFO if tl.tail_missing else None, file=file,
                           **{**facts, "replicas": entries[-1].replicas}))
    return out


def _lost_tail(tl: Timeline) -> str:
    """What a finding drawn from the last registration must add when the metadata log lost its tail (the topic
    may have been re-created, the partition reassigned, after the offset the timeline holds to)."""
    if not tl.tail_missing:
        return ""
    return (f" (the metadata log given lost its tail after offset {tl.trusted_end}, METADATA_LOG_INCOMPLETE: the "
            "registration may have changed since)")


def _grant_not_seen(broker_id: int, epoch: int, offset: int, top: int, batch_epochs: list[int], file: str | None,
                    facts: dict) -> Finding:
    """GRANT_NOT_SEEN: the broker was elected in ``epoch`` and its checkpoint's last epoch is ``top`` (-1: empty).

    INFO when no batch of the replica carries ``epoch`` or a later one: the broker never appended in it, and that
    is normal.  Kafka writes an entry on append (``LeaderEpochFileCache.assign``) and, from 2.0.1, at the election
    at the log end (``Partition.makeLeader`` -> ``maybeAssignEpochStartOffset``, 2.0.1 Partition.scala, 3.3.1 and
    3.8.0 the same); an entry that starts at the log end is dropped when the broker, now a follower, truncates to
    its log end (``UnifiedLog.truncateTo``: "a conflicting epoch entry at the end of the log ... failed to append
    any entries before another leader was elected", 2.8.0 Log.scala, 3.3.1 and 3.8.0 UnifiedLog.scala) and when it
    loads the log (``LogLoader``: ``truncateFromEnd(nextOffset)``, 3.3.1, 3.8.0).  LOW when its batches do carry
    the epoch or a later one: it appended, so Kafka recorded the epoch and the checkpoint lost it.
    """
    appended = any(b >= epoch for b in batch_epochs)
    held = "its leader-epoch-checkpoint is empty" if top < 0 else f"its leader-epoch-checkpoint stops at epoch {top}"
    if appended:
        why = (f"; yet its batches carry epoch {epoch} or a later one, and Kafka records an epoch on every append: "
               "the checkpoint lost it")
    else:
        why = (f"; it never appended in epoch {epoch} (no batch carries it or a later one): normal, the election's "
               "entry at the log end is dropped when the broker truncates to its log end as a follower or loads "
               "the log")
    return finding("GRANT_NOT_SEEN", f"broker {broker_id} was elected leader in epoch {epoch} (metadata offset "
                   f"{offset}) but {held}{why}", severity=Severity.LOW if appended else None, file=file,
                   **{**facts, "epoch": epoch, "checkpoint_last": top, "metadata_offset": offset})


def _own_copy(tl: Timeline, broker_id: int | None) -> bool:
    """Whether the broker's own copy of the metadata log is among the copies the timeline was built from."""
    return broker_id is not None and tl.quorum is not None and any(c.node_id == broker_id for c in tl.quorum.copies)


def _own_log_lost_tail(tl: Timeline, epoch: int, last: int, offset: int, file: str | None,
                       facts: dict[str, Any]) -> Finding:
    """METADATA_LOG_INCOMPLETE from a partition's own epochs: a KRaft broker takes its partitions' leader epochs only
    from the metadata image it replays from its own copy of the metadata log (``BrokerMetadataPublisher.
    onMetadataUpdate`` -> ``ReplicaManager.applyDelta`` -> ``Partition.makeLeader``/``makeFollower``, 3.8.0), so a
    replica holding batches of an epoch past the last grant of that copy (and of every other copy given) shows the
    copy once held the grant and lost it."""
    return finding("METADATA_LOG_INCOMPLETE", f"broker {facts.get('broker_id')}'s replica holds batches of leader "
                   f"epoch {epoch}, "
                   f"past the last epoch the metadata log grants ({last}, metadata offset {offset}); a broker takes "
                   "its partitions' epochs only from its own copy of the metadata log, which is among those given: the "
                   f"copy once held the grant and lost it (the metadata given ends at offset {tl.trusted_end}); no "
                   "EPOCH_NOT_GRANTED is drawn from epochs past it", file=file,
                   **{**facts, "epoch": epoch, "last_granted": last, "metadata_end": tl.trusted_end,
                      "witness": "the partition's own leader epochs"})
