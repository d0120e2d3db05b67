"""The partitions ``replay`` leaves out, and why: said in the report rather than skipped without a word.

* ``__cluster_metadata-0`` is the KRaft controllers' Raft log: replicated by Raft (a voter truncates its
  uncommitted tail where the leader's log diverges: ``KafkaRaftClient.handleFetchResponse``,
  ``log.truncateToEndOffset(divergingOffsetAndEpoch)``, apache/kafka 3.9.0
  raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java), not by the ISR protocol the replay models.  When
  the nodes' copies end at different offsets, one copy holds records the others lack; ``kforensics timeline``
  merges and compares the copies.
* A ``-delete``, ``-future`` or ``-stray`` dir is no replica taking part in replication: Kafka deletes the first,
  the second is a replica being moved between log dirs (``ReplicaAlterLogDirsThread``), the third one the
  controller no longer assigns to this broker (KRaft, 3.7+): none is fetched from or elected.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ..findings import Finding, finding
from ..log.file_kinds import METADATA_TOPIC

_WHY_SUFFIX = {
    "delete": "a partition dir Kafka is deleting: no replica of the partition",
    "future": "a replica being moved between this broker's log dirs (ReplicaAlterLogDirsThread): not the one "
              "that replicates",
    "stray": "a replica the controller no longer assigns to this broker: not fetched from or elected",
}


@dataclass(frozen=True)
class LeftOut:
    """One partition dir of one broker that the replay does not replay."""

    broker_id: int
    path: str
    topic: str
    partition: int
    suffix: str | None
    log_end_offset: int | None


def left_out(broker_id: int, p: Any) -> LeftOut | None:
    """``p`` (a ``PartitionScan``) as a partition dir left out, or None when it is a replica to replay."""
    if p.suffix is None and p.topic != METADATA_TOPIC:
        return None
    return LeftOut(broker_id, p.path, p.topic, p.partition, p.suffix, p.log_end_offset)


def not_replayed_findings(out: list[LeftOut]) -> list[Finding]:
    """One finding per partition dir left out, saying why; the metadata log's copies compared by their ends."""
    findings = []
    metadata: dict[int, list[LeftOut]] = defaultdict(list)
    for o in out:
        if o.suffix is None:
            metadata[o.partition].append(o)
            why = ("the KRaft controllers' metadata log: replicated by Raft, not by the ISR protocol replay "
                   "models (kforensics timeline reads it)")
        else:
            why = _WHY_SUFFIX.get(o.suffix, f"a {o.suffix} dir: no replica taking part in replication")
        findings.append(finding("PARTITION_NOT_REPLAYED", f"broker {o.broker_id}: {o.topic}-{o.partition} not "
                                f"replayed: {why}", file=o.path, broker=o.broker_id, topic=o.topic,
                                partition=o.partition, reason="raft" if o.suffix is None else o.suffix))
    for n, copies in sorted(metadata.items()):
        findings += _copies_differ(n, copies)
    return findings


def _copies_differ(n: int, copies: list[LeftOut]) -> list[Finding]:
    ends = {o.broker_id: o.log_end_offset for o in copies if o.log_end_offset is not None}
    if len(ends) < 2 or len(set(ends.values())) == 1:
        return []
    top = max(ends.values())
    short = min(ends.values())
    ahead = sorted(b for b, e in ends.items() if e == top)
    per = ", ".join(f"broker {b}: {e}" for b, e in sorted(ends.items()))
    return [finding("METADATA_COPIES_DIFFER", f"the copies of {METADATA_TOPIC}-{n} end at different offsets "
                    f"({per}): broker(s) {', '.join(map(str, ahead))} hold offsets {short}..{top - 1} that "
                    f"another copy lacks (a lagging voter, copies taken at different moments, or an uncommitted "
                    f"tail Raft truncates); kforensics timeline merges and compares them",
                    file=next(o.path for o in copies if o.broker_id == ahead[0]), log_end_offsets=ends,
                    brokers_ahead=ahead)]
