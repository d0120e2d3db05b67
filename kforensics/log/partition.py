"""One partition directory (``<topic>-<n>``): its segments and side files, classified from the listing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .file_kinds import SEGMENT_PARTS, FileKind, PartitionName, classify_name
from .listing import Entry, list_dir
from .segment import LogSegment
from .side_files import SideFile, read_side_file

#: offsets in file names are Java longs, KRaft snapshot epochs ints: Kafka cannot parse larger ones
MAX_OFFSET = 2**63 - 1
MAX_EPOCH = 2**31 - 1


@dataclass
class PartitionLog:
    """One partition directory: every file in it ends up in exactly one field (a name whose offset or epoch
    Kafka cannot parse goes to ``out_of_range``, never read)."""

    path: Any
    name: PartitionName
    segments: dict[int, LogSegment] = field(default_factory=dict)
    producer_snapshots: dict[int, Any] = field(default_factory=dict)
    kraft_snapshots: list[tuple[Any, FileKind]] = field(default_factory=list)
    leader_epoch_checkpoint: Any = None
    partition_metadata: Any = None
    quorum_state: Any = None
    leftovers: list[tuple[Any, FileKind]] = field(default_factory=list)
    unknown: list[Any] = field(default_factory=list)
    not_regular: list[tuple[Any, str]] = field(default_factory=list)  # (path, what it is): never opened
    out_of_range: list[tuple[Any, FileKind]] = field(default_factory=list)  # names Kafka cannot parse: not read
    unlisted: str | None = None  # why the directory could not be listed (its files are then unknown, not absent)

    @property
    def topic(self) -> str:
        return self.name.topic

    @property
    def partition(self) -> int:
        return self.name.partition

    @property
    def dir_name(self) -> str:
        return self.path.name

    @property
    def is_metadata_log(self) -> bool:
        return self.name.is_metadata_log

    def sorted_segments(self) -> list[LogSegment]:
        return [self.segments[k] for k in sorted(self.segments)]

    def read_leader_epoch_checkpoint(self) -> SideFile | None:
        p = self.leader_epoch_checkpoint
        return None if p is None else read_side_file(p, "leader_epoch_checkpoint")

    def read_partition_metadata(self) -> SideFile | None:
        p = self.partition_metadata
        return None if p is None else read_side_file(p, "partition_metadata")

    def read_quorum_state(self) -> SideFile | None:
        p = self.quorum_state
        return None if p is None else read_side_file(p, "quorum_state")

    def read_producer_snapshot(self, offset: int) -> SideFile:
        return read_side_file(self.producer_snapshots[offset], "producer_snapshot", base_offset=offset)


def open_partition(path: Any, name: PartitionName, unreadable: list) -> PartitionLog:
    """Classify every entry of a partition directory (only the listing is read)."""
    pd = PartitionLog(path, name)
    before = len(unreadable)
    for entry in list_dir(path, unreadable):
        _place(pd, entry)
    if len(unreadable) > before:
        pd.unlisted = unreadable[-1][1]
    return pd


def _place(pd: PartitionLog, entry: Entry) -> None:
    p = entry.path
    if entry.is_dir:
        pd.unknown.append(p)
        return
    if not entry.is_file:
        pd.not_regular.append((p, entry.what))
        return
    kind = classify_name(entry.name)
    if (kind.base_offset or 0) > MAX_OFFSET or (kind.epoch or 0) > MAX_EPOCH:
        pd.out_of_range.append((p, kind))
        return
    if kind.leftover:
        pd.leftovers.append((p, kind))
        if kind.base_offset is not None and kind.kind in SEGMENT_PARTS:
            pd.segments.setdefault(kind.base_offset, LogSegment(kind.base_offset)).leftovers.append((p, kind))
        return
    if kind.kind in SEGMENT_PARTS and kind.base_offset is not None:
        setattr(pd.segments.setdefault(kind.base_offset, LogSegment(kind.base_offset)), kind.kind, p)
    elif kind.kind == "producer_snapshot" and kind.base_offset is not None:
        pd.producer_snapshots[kind.base_offset] = p
    elif kind.kind == "kraft_snapshot":
        pd.kraft_snapshots.append((p, kind))
    elif kind.kind in ("leader_epoch_checkpoint", "partition_metadata", "quorum_state"):
        setattr(pd, kind.kind, p)
    else:
        pd.unknown.append(p)
