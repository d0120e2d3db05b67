"""Write broker log dirs the way a Kafka broker lays them out, with kforensics' own encoders.

For fixtures, scenario dumps and benchmarks — never for evidence.  Indexes
are built per batch (as Kafka's recovery rebuilds them), the epoch checkpoint
with Kafka's ``assign`` rule (first batch of each new epoch), and the root
checkpoints from what the caller declares.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..formats import checkpoint, meta_properties, offset_index, partition_metadata, time_index
from ..formats.record_batch import ENTRY_PREFIX, HEADER, LOG_OVERHEAD, MAGIC, MAGIC_OFFSET, RecordBatchHeader
from ..log.file_kinds import segment_name


@dataclass
class PartitionWriter:
    """Accumulates batches for one partition and writes its directory."""

    topic: str
    partition: int
    segment_bytes: int = 1 << 30
    segments: list[tuple[int, bytearray]] = field(default_factory=list)
    epochs: list[tuple[int, int]] = field(default_factory=list)
    topic_id: str | None = None
    write_epoch_checkpoint: bool = True
    next_offset: int = 0
    # None: an index entry per batch (as recovery rebuilds them); Kafka's appends add one only after this many bytes
    index_interval_bytes: int | None = None

    @property
    def dir_name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def append(self, batch: bytes) -> None:
        """Append one encoded batch (any magic), rolling segments at ``segment_bytes``."""
        h = RecordBatchHeader.parse(batch) if batch[MAGIC_OFFSET] == MAGIC else None
        base = h.base_offset if h else int.from_bytes(batch[:8], "big", signed=True)
        last = base + h.last_offset_delta if h else base
        if not self.segments or len(self.segments[-1][1]) + len(batch) > self.segment_bytes:
            self.segments.append((base, bytearray()))
        self.segments[-1][1].extend(batch)
        if h and h.partition_leader_epoch >= 0:
            if not self.epochs or h.partition_leader_epoch > self.epochs[-1][0]:
                self.epochs.append((h.partition_leader_epoch, base))
        self.next_offset = last + 1

    def write(self, log_dir: Path, *, indexes: bool = True) -> Path:
        d = Path(log_dir) / self.dir_name
        d.mkdir(parents=True, exist_ok=True)
        for base, data in self.segments:
            (d / segment_name(base, ".log")).write_bytes(bytes(data))
            if indexes:
                entries, tentries = _index_entries(bytes(data), self.index_interval_bytes)
                (d / segment_name(base, ".index")).write_bytes(offset_index.encode(entries, base))
                (d / segment_name(base, ".timeindex")).write_bytes(time_index.encode(tentries, base))
        if self.write_epoch_checkpoint:
            (d / "leader-epoch-checkpoint").write_bytes(checkpoint.encode("leader_epoch_checkpoint", self.epochs))
        if self.topic_id:
            (d / "partition.metadata").write_bytes(partition_metadata.encode(self.topic_id))
        return d


def _index_entries(data: bytes, interval: int | None = None
                   ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(last offset, position) index entries and the time index of strictly rising max timestamps.

    With ``interval`` an entry is added as ``LogSegment.append`` does: for the
    batch appended once more than ``interval`` bytes went in since the last one.
    """
    entries: list[tuple[int, int]] = []
    tentries: list[tuple[int, int]] = []
    pos = 0
    best_ts = None
    since = 0
    size_field = HEADER["batch_length"]
    while pos + ENTRY_PREFIX <= len(data):
        size = int.from_bytes(data[pos + size_field.offset : pos + size_field.offset + size_field.size], "big",
                              signed=True)
        if data[pos + MAGIC_OFFSET] == MAGIC:
            f = dict(zip(HEADER.names, HEADER.struct.unpack_from(data, pos)))
            last = f["base_offset"] + f["last_offset_delta"]
            ts = f["max_timestamp"]
        else:
            last = int.from_bytes(data[pos : pos + HEADER["base_offset"].size], "big", signed=True)
            ts = -1
        if interval is None or since > interval:
            entries.append((last, pos))
            since = 0
            if ts >= 0 and (best_ts is None or ts > best_ts):
                best_ts = ts
                tentries.append((ts, last))
        since += LOG_OVERHEAD + size
        pos += LOG_OVERHEAD + size
    return entries, tentries


@dataclass
class LogDirWriter:
    """A broker log dir: identity, partitions and root checkpoints."""

    path: Path
    node_id: int | None = 1
    cluster_id: str | None = "kforensics-fixture-cluster"
    meta_version: int = 0
    partitions: list[PartitionWriter] = field(default_factory=list)
    high_watermarks: dict[tuple[str, int], int] = field(default_factory=dict)
    recovery_points: dict[tuple[str, int], int] = field(default_factory=dict)
    log_start_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    cleaner_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    clean_shutdown: bool = False

    def partition(self, topic: str, partition: int, **kw: Any) -> PartitionWriter:
        pw = PartitionWriter(topic, partition, **kw)
        self.partitions.append(pw)
        return pw

    def write(self, *, checkpoints: bool = True) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        if self.node_id is not None:
            (self.path / "meta.properties").write_bytes(
                meta_properties.encode(self.meta_version, self.node_id, self.cluster_id)
            )
        for pw in self.partitions:
            pw.write(self.path)
        if checkpoints:
            for name, table in (
                ("replication-offset-checkpoint", self.high_watermarks),
                ("recovery-point-offset-checkpoint", self.recovery_points),
                ("log-start-offset-checkpoint", self.log_start_offsets),
                ("cleaner-offset-checkpoint", self.cleaner_offsets),
            ):
                kind = name.replace("-", "_")
                entries = [(t, p, o) for (t, p), o in sorted(table.items())]
                (self.path / name).write_bytes(checkpoint.encode(kind, entries))
        if self.clean_shutdown:
            (self.path / ".kafka_cleanshutdown").write_bytes(b"")
        return self.path


def set_mtimes(root: Path, when: int = 1_700_000_000) -> None:
    """Fixed mtimes so fixtures are byte-and-metadata reproducible."""
    for dirpath, _, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(dirpath, f), (when, when))


def write_cases(cases: list[Any], out: str | None, default: Path) -> None:
    """A fixture generator's run: ``out`` (else ``default``) emptied, then each case function writes its case in
    it.  The fixture dirs are the generators' own output, never evidence."""
    import shutil

    root = Path(out) if out else default
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for case in cases:
        case(root)
