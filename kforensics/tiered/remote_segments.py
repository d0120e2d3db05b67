"""The remote segments of each topic partition, from the ``__remote_log_metadata`` records in the evidence.

Each broker's ``TopicBasedRemoteLogMetadataManager`` consumes the metadata
partitions of its user partitions and folds their records into a
``RemoteLogMetadataCache`` (storage, 3.6.0 and 3.9.0), which this module
does for every topic partition found:

* a ``RemoteLogSegmentMetadataRecord`` adds a segment; only in state
  COPY_SEGMENT_STARTED (``addCopyInProgressSegment``; another state is an
  ``IllegalArgumentException``, the record is not applied);
* a ``RemoteLogSegmentMetadataUpdateRecord`` moves a known segment to a new
  state (``updateRemoteLogSegmentMetadata``): an unknown segment is
  ``RemoteResourceNotFoundException``, a transition
  ``RemoteLogSegmentState.isValidTransition`` refuses is dropped (null ->
  STARTED; STARTED -> FINISHED or DELETE_STARTED; FINISHED -> DELETE_STARTED;
  DELETE_STARTED -> DELETE_FINISHED; the same state again is allowed);
  DELETE_SEGMENT_FINISHED removes the segment from the cache;
* a ``RemotePartitionDeleteMetadataRecord`` marks the partition deleted
  (``RemotePartitionMetadataStore``);
* ``RemoteLogSegmentMetadataSnapshotRecord`` lives only in the manager's local
  snapshot files, never in the topic: one found in the topic is not applied.

The last state per segment id is what the cache holds.  A metadata partition
found on several brokers is read from the copy with the most records (the
others are replicas of a prefix of it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..findings import Finding, FindingLog, finding
from ..formats.remote_log_metadata import PARTITION_DELETE_STATES, SEGMENT_STATES, TOPIC, decode
from ..log.partition import PartitionLog
from ..transactions.internal_log import coordinator_copies, logged_records

COPY_STARTED, COPY_FINISHED, DELETE_STARTED, DELETE_FINISHED = (SEGMENT_STATES[i] for i in range(4))
#: ``RemoteLogSegmentState.isValidTransition`` (storage-api, 3.8.0): source state -> the states it may move to
TRANSITIONS: dict[str | None, tuple[str, ...]] = {
    None: (COPY_STARTED,), COPY_STARTED: (COPY_FINISHED, DELETE_STARTED), COPY_FINISHED: (DELETE_STARTED,),
    DELETE_STARTED: (DELETE_FINISHED,), DELETE_FINISHED: ()}


@dataclass
class RemoteSegment:
    """One remote log segment as the cache holds it after the last record about it."""

    segment_id: str
    topic: str
    topic_id: str
    partition: int
    start_offset: int
    end_offset: int
    leader_epochs: list[tuple[int, int]]  # (epoch, first offset in the segment), in epoch order
    broker_id: int  # the leader that copied it
    size_in_bytes: int
    state: str
    states: list[str] = field(default_factory=list)  # every state applied, in order
    metadata_offset: int = -1  # offset of the record that set the state, in its __remote_log_metadata partition
    file: str | None = None

    @property
    def live(self) -> bool:
        """Still in the cache (DELETE_SEGMENT_FINISHED removes it)."""
        return self.state != DELETE_FINISHED

    def facts(self) -> dict[str, Any]:
        return {"segment_id": self.segment_id, "start_offset": self.start_offset, "end_offset": self.end_offset,
                "leader_epochs": [list(e) for e in self.leader_epochs], "state": self.state,
                "broker_id": self.broker_id, "size_in_bytes": self.size_in_bytes}


@dataclass
class RemotePartition:
    """What the metadata says of one topic partition's remote log."""

    topic: str
    topic_id: str
    partition: int
    segments: dict[str, RemoteSegment] = field(default_factory=dict)  # by segment id, in order added
    delete_state: str | None = None  # RemotePartitionDeleteMetadataRecord's last state
    metadata_partition: int | None = None

    def live_segments(self) -> list[RemoteSegment]:
        """Segments still in the cache, by start offset."""
        return sorted((s for s in self.segments.values() if s.live), key=lambda s: (s.start_offset, s.end_offset))

    def copied(self) -> list[RemoteSegment]:
        """Segments whose copy finished and whose deletion did not start: what remote reads can serve."""
        return [s for s in self.live_segments() if s.state == COPY_FINISHED]


@dataclass
class RemoteLogMetadata:
    """Every topic partition's remote segments, from the ``__remote_log_metadata`` partitions read."""

    partitions: dict[tuple[str, int], RemotePartition] = field(default_factory=dict)
    metadata_partitions_read: list[int] = field(default_factory=list)
    records: int = 0
    findings: list[Finding] = field(default_factory=list)

    def of(self, topic: str, partition: int) -> RemotePartition | None:
        return self.partitions.get((topic, partition))


def read_remote_log_metadata(log_dirs: dict[int | None, list[Any]]) -> RemoteLogMetadata | None:
    """The remote log metadata in these brokers' log dirs (broker id -> log dirs); None when none holds a
    ``__remote_log_metadata`` partition."""
    copies = coordinator_copies(log_dirs, TOPIC)
    return fold_partitions([pd for _, pd in copies]) if copies else None


def fold_partitions(parts: Iterable[PartitionLog]) -> RemoteLogMetadata:
    """Fold the records of ``__remote_log_metadata`` partition dirs (several copies of one partition: the one with
    the most records is read)."""
    out = RemoteLogMetadata()
    log = FindingLog()
    best: dict[int, tuple[int, PartitionLog]] = {}
    for pd in parts:
        if pd.topic != TOPIC or pd.name.suffix is not None:
            continue
        # counted, not kept: one record in memory at a time however long the partition
        n = sum(1 for r in logged_records(pd) if r.control is None)
        if pd.partition not in best or n > best[pd.partition][0]:
            best[pd.partition] = (n, pd)
    for n in sorted(best):
        out.metadata_partitions_read.append(n)
        for r in logged_records(best[n][1], log):
            if r.control is None:
                out.records += 1
                apply_record(out, n, r.offset, r.file, r.position, decode(r.key, r.value), log)
    out.findings = log.findings()
    return out


def apply_record(out: RemoteLogMetadata, metadata_partition: int, offset: int, file: str | None,
                 position: int | None, rec: Any, log: FindingLog) -> None:
    """Apply one decoded record to the fold, as ``RemoteLogMetadataCache`` would."""
    for f in rec.findings:
        log.add(finding(f.code, f.message, file=file, position=position, offset=offset))
    v = rec.value
    if v is None:
        return
    where = {"file": file, "position": position, "offset": offset}
    if rec.value_type == "RemotePartitionDeleteMetadataRecord":
        tip = v["topicIdPartition"]
        part = _partition(out, tip, metadata_partition)
        part.delete_state = PARTITION_DELETE_STATES.get(v["remotePartitionDeleteState"], "UNKNOWN")
        return
    if rec.value_type == "RemoteLogSegmentMetadataSnapshotRecord":
        _dropped(log, where, "a RemoteLogSegmentMetadataSnapshotRecord, which Kafka writes only to its local "
                 "snapshot files, is in the topic: not applied")
        return
    sid = v["remoteLogSegmentId"]
    tip = sid["topicIdPartition"]
    part = _partition(out, tip, metadata_partition)
    seg_id = sid["id"]
    state = SEGMENT_STATES.get(v["remoteLogSegmentState"], "UNKNOWN")
    existing = part.segments.get(seg_id)
    if rec.value_type == "RemoteLogSegmentMetadataRecord":
        if state != COPY_STARTED:
            _dropped(log, where, f"segment {seg_id} added in state {state}: addCopyInProgressSegment takes only "
                     f"{COPY_STARTED}")
            return
        if existing is not None and state not in TRANSITIONS[existing.state] and state != existing.state:
            _dropped(log, where, f"segment {seg_id} added again in {state} after {existing.state}")
            return
        epochs = sorted((int(e["leaderEpoch"]), int(e["offset"])) for e in v["segmentLeaderEpochs"])
        part.segments[seg_id] = RemoteSegment(
            seg_id, tip["name"], tip["id"], int(tip["partition"]), int(v["startOffset"]), int(v["endOffset"]),
            epochs, int(v["brokerId"]), int(v["segmentSizeInBytes"]), state, [state], offset, file)
        return
    if existing is None:
        _dropped(log, where, f"update of segment {seg_id} to {state}, a segment no record added "
                 "(RemoteResourceNotFoundException)")
        return
    if state != existing.state and state not in TRANSITIONS[existing.state]:
        _dropped(log, where, f"segment {seg_id}: {existing.state} cannot move to {state} "
                 "(RemoteLogSegmentState.isValidTransition)")
        return
    existing.state = state
    existing.states.append(state)
    existing.metadata_offset = offset
    existing.file = file


def _partition(out: RemoteLogMetadata, tip: dict[str, Any], metadata_partition: int) -> RemotePartition:
    key = (tip["name"], int(tip["partition"]))
    part = out.partitions.get(key)
    if part is None:
        part = out.partitions[key] = RemotePartition(tip["name"], tip["id"], int(tip["partition"]),
                                                     metadata_partition=metadata_partition)
    return part


def _dropped(log: FindingLog, where: dict[str, Any], why: str) -> None:
    log.add(finding("REMOTE_METADATA_NOT_APPLIED", f"__remote_log_metadata record not applied: {why}",
                    file=where["file"], position=where["position"], offset=where["offset"]))
