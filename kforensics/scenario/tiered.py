"""Tiered storage in a scenario: remote segments as ``__remote_log_metadata`` records, local retention, the
``remote.storage.enable`` config.

The records are what a broker writes (storage, 3.9.0): its
``TopicBasedRemoteLogMetadataManager`` produces them with an idempotent
``acks=all`` producer (``TopicBasedRemoteLogMetadataManagerConfig``), a null
key and the ``RemoteLogMetadataSerde`` value (``formats/remote_log_metadata``:
frame version, apiKey, version, body) to the metadata partition
``RemoteLogMetadataTopicPartitioner`` picks for the user partition
(:func:`kforensics.tiered.metadata_partition.metadata_partition`).  The
partition is replicated on every broker (the builder's history says nothing
of its own replication); each broker's ``log-start-offset-checkpoint`` names
the tiered partition's log start, as ``LogManager`` writes it for every
remote-enabled log (3.9.0 ≈ L871).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..formats import checkpoint
from ..formats.metadata_records import encode_metadata_record
from ..formats.protocol import uuid_to_str
from ..formats.record_batch import HEADER, LOG_OVERHEAD, RecordData, build_batch
from ..formats.remote_log_metadata import TOPIC, encode
from ..tiered.metadata_partition import DEFAULT_PARTITIONS, metadata_partition
from .builder import ScenarioBuilder
from .disk import INDEX_INTERVAL_BYTES, T0
from .writer import PartitionWriter

STATES = {"COPY_SEGMENT_STARTED": 0, "COPY_SEGMENT_FINISHED": 1, "DELETE_SEGMENT_STARTED": 2,
          "DELETE_SEGMENT_FINISHED": 3}
RLMM_PRODUCER = 9000  # + broker id: each broker's metadata manager has its own idempotent producer


def topic_id(sb: ScenarioBuilder) -> str:
    """The topic id the builder's metadata log gives the scenario's topic."""
    return uuid_to_str(sb.name.encode().ljust(16, b"\0")[:16])


@dataclass
class RemoteLog:
    """The remote segments of the scenario's partition, as the records that say them, in order."""

    sb: ScenarioBuilder
    partitions: int = DEFAULT_PARTITIONS
    records: list[tuple[int, bytes]] = field(default_factory=list)  # (broker that wrote it, value)

    @property
    def metadata_partition(self) -> int:
        return metadata_partition(topic_id(self.sb), self.sb.partition, self.partitions)

    def segment_id(self, start: int, end: int, broker: int) -> str:
        return uuid_to_str(hashlib.md5(f"{self.sb.name}:{start}-{end}:{broker}".encode()).digest())

    def _tip(self) -> dict[str, Any]:
        return {"Name": self.sb.topic, "Id": topic_id(self.sb), "Partition": self.sb.partition}

    def copy(self, start: int, end: int, epochs: list[tuple[int, int]], *, broker: int,
             states: tuple[str, ...] = ("COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED")) -> str:
        """Leader ``broker`` copies offsets ``start``-``end`` (its ``epochs``: (epoch, first offset)) and the
        segment goes through ``states`` (the first must be COPY_SEGMENT_STARTED, the record that adds it)."""
        sid = self.segment_id(start, end, broker)
        seg = {"TopicIdPartition": self._tip(), "Id": sid}
        _, value = encode("RemoteLogSegmentMetadataRecord", 0, {
            "RemoteLogSegmentId": seg, "StartOffset": start, "EndOffset": end, "BrokerId": broker,
            "MaxTimestampMs": T0 + end, "EventTimestampMs": T0 + end, "SegmentSizeInBytes": 100 * (end - start + 1),
            "SegmentLeaderEpochs": [{"LeaderEpoch": e, "Offset": o} for e, o in epochs], "CustomMetadata": None,
            "RemoteLogSegmentState": STATES[states[0]]})
        self.records.append((broker, value))
        for st in states[1:]:
            self.update(sid, st, broker=broker)
        return sid

    def update(self, segment_id: str, state: str, *, broker: int) -> None:
        _, value = encode("RemoteLogSegmentMetadataUpdateRecord", 0, {
            "RemoteLogSegmentId": {"TopicIdPartition": self._tip(), "Id": segment_id}, "BrokerId": broker,
            "EventTimestampMs": T0 + len(self.records), "CustomMetadata": None,
            "RemoteLogSegmentState": STATES[state]})
        self.records.append((broker, value))

    def batches(self) -> list[bytes]:
        """The records as the brokers' producers wrote them: one batch each, in order."""
        out: list[bytes] = []
        seq: dict[int, int] = {}
        for i, (broker, value) in enumerate(self.records):
            pid = RLMM_PRODUCER + broker
            n = seq.get(pid, 0)
            seq[pid] = n + 1
            out.append(build_batch([RecordData(i, T0 + i, None, value)], partition_leader_epoch=0,
                                   producer_id=pid, producer_epoch=0, base_sequence=n))
        return out

    def write(self, root: Path, *, log_start: int = 0) -> None:
        """Each broker's copy of the metadata partition, and the checkpoints that name it and the tiered log."""
        batches = self.batches()
        for b in sorted(self.sb.brokers):
            d = root / f"broker-{b}"
            pw = PartitionWriter(TOPIC, self.metadata_partition, index_interval_bytes=INDEX_INTERVAL_BYTES)
            for data in batches:
                pw.append(data)
            pw.write(d)
            extra = {(TOPIC, self.metadata_partition): len(batches)}
            for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
                _add_entries(d / name, extra)
            _add_entries(d / "log-start-offset-checkpoint", {(self.sb.topic, self.sb.partition): log_start})


def _add_entries(path: Path, entries: dict[tuple[str, int], int]) -> None:
    kind = path.name.replace("-", "_")
    table = checkpoint.decode(path.read_bytes(), kind).offsets() if path.exists() else {}
    table.update(entries)
    path.write_bytes(checkpoint.encode(kind, [(t, p, o) for (t, p), o in sorted(table.items())]))


def retain_locally_from(sb: ScenarioBuilder, broker: int, offset: int) -> None:
    """Local retention on ``broker`` deleted the segments below ``offset`` (they are in remote storage); its
    leader-epoch cache keeps their epochs (truncated only from the log start, ``LogLoader``)."""
    b = sb.brokers[broker]
    b.batches = [x for x in b.batches if x[0] >= offset]


def enable_remote_storage(root: Path, sb: ScenarioBuilder) -> None:
    """Append ``remote.storage.enable=true`` for the scenario's topic to the controller's metadata log."""
    log = root / "controller" / "__cluster_metadata-0" / "00000000000000000000.log"
    data = log.read_bytes()
    count = _batches(data)
    value = encode_metadata_record("ConfigRecord", 0, {"ResourceType": 2, "ResourceName": sb.topic,
                                                       "Name": "remote.storage.enable", "Value": "true"})
    log.write_bytes(data + build_batch([RecordData(count, T0 + count, None, value)], partition_leader_epoch=1))


def _batches(data: bytes) -> int:
    """One-record batches in a metadata log the builder wrote: the next offset."""
    size = HEADER["batch_length"]
    n, pos = 0, 0
    while pos + LOG_OVERHEAD <= len(data):
        pos += LOG_OVERHEAD + int.from_bytes(data[pos + size.offset: pos + size.offset + size.size], "big")
        n += 1
    return n
