"""One partition directory (``<topic>-<n>``): its segments and side files, classified from the listing."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .file_kinds import SEGMENT_PARTS, FileKind, PartitionName
from .file_kinds import classify_name as _classify_name
from .listing import Entry, Unreadable, as_path, iter_dir, list_dir
from .paths import Evidence, EvidencePath
from .segment import LogSegment
from .side_files import SideFile, read_side_file

#: a file name's kind (a frozen value): the names of a fleet's partition dirs repeat from dir to dir
classify_name = functools.lru_cache(maxsize=1 << 14)(_classify_name)

#: offsets in file names are Java longs, KRaft snapshot epochs ints: Kafka cannot parse larger ones
MAX_OFFSET = 2**63 - 1
MAX_EPOCH = 2**31 - 1
#: index files without their segment's .log kept by path (the rest counted): Kafka deletes them at startup, and a
#: directory (an archive) may hold hundreds of thousands of them
ORPHANS_KEPT = 10
INDEX_PARTS = ("offset_index", "time_index", "txn_index")


@dataclass
class OrphanIndexes:
    """The index files of a partition directory whose segment has no ``.log`` (nor any file of a segment but other
    indexes): counted, the first :data:`ORPHANS_KEPT` in name order kept, never a segment each."""

    count: int = 0
    kept: list[tuple[EvidencePath, FileKind]] = field(default_factory=list)  # (path, kind), in name order
    lowest: int | None = None  # the lowest and highest base offset among them all
    highest: int | None = None

    def add(self, path: EvidencePath, kind: FileKind) -> None:
        base = kind.base_offset
        assert base is not None
        self.count += 1
        if len(self.kept) < ORPHANS_KEPT:
            self.kept.append((path, kind))
        self.lowest = base if self.lowest is None else min(self.lowest, base)
        self.highest = base if self.highest is None else max(self.highest, base)


@dataclass
class PartitionLog:
    """One partition directory: every file in it ends up in exactly one field (a name whose offset or epoch
    Kafka cannot parse goes to ``out_of_range``, never read).

    One made by :func:`deferred_partition` knows only its path and name until a field of its contents is first
    read; then its directory is listed, as :func:`open_partition` lists it."""

    path: EvidencePath
    name: PartitionName
    segments: dict[int, LogSegment] = field(default_factory=dict)
    orphan_indexes: OrphanIndexes = field(default_factory=OrphanIndexes)
    producer_snapshots: dict[int, EvidencePath] = field(default_factory=dict)
    kraft_snapshots: list[tuple[EvidencePath, FileKind]] = field(default_factory=list)
    leader_epoch_checkpoint: EvidencePath | None = None
    partition_metadata: EvidencePath | None = None
    quorum_state: EvidencePath | None = None
    leftovers: list[tuple[EvidencePath, FileKind]] = field(default_factory=list)
    unknown: list[EvidencePath] = field(default_factory=list)
    not_regular: list[tuple[EvidencePath, str]] = field(default_factory=list)  # (path, what it is): never opened
    out_of_range: list[tuple[EvidencePath, FileKind]] = field(default_factory=list)  # names Kafka cannot parse
    unlisted: str | None = None  # why the directory could not be listed (its files are then unknown, not absent)

    def __getattr__(self, attr: str) -> Any:
        # only reached for a field not set yet: the contents of a deferred partition dir, listed now
        deferred = self.__dict__.get("_deferred")
        if deferred is None or attr not in _CONTENTS:
            raise AttributeError(attr)
        del self.__dict__["_deferred"]
        listed = open_partition(self.path, self.name, deferred)
        for f in _CONTENTS:
            self.__dict__[f] = listed.__dict__[f]
        return self.__dict__[attr]

    @property
    def listing_failures(self) -> list[tuple[Any, str]]:
        """What could not be listed in this directory, as ``open_partition`` reports it (lists it if deferred)."""
        if "_deferred" in self.__dict__:
            self.unlisted  # noqa: B018 - listed now
        return [(self.path, self.unlisted)] if self.unlisted is not None else []

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

    def named_offsets(self) -> list[int]:
        """The base offsets the segment files' names carry, orphan indexes included (the lowest and highest of
        those), sorted."""
        o = self.orphan_indexes
        return sorted({*self.segments, *(x for x in (o.lowest, o.highest) if x is not None)})

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


#: the fields of a partition dir that its listing fills (what a deferred one lists on first use)
_CONTENTS = tuple(f.name for f in fields(PartitionLog) if f.name not in ("path", "name"))
# a field with a plain default is also a class attribute, which an instance without it would read instead of
# listing its directory: the defaults stay in ``__init__`` and ``fields()``, not on the class
for _f in _CONTENTS:
    if _f in vars(PartitionLog):
        delattr(PartitionLog, _f)


def deferred_partition(path: Evidence, name: PartitionName) -> PartitionLog:
    """A partition dir whose directory is listed only when its contents are first read: a log dir's other readers
    (the coordinators' partitions, the broker's identity) look at the names of ten thousand partition dirs and
    list one or none of them."""
    pd = PartitionLog.__new__(PartitionLog)
    pd.__dict__.update(path=as_path(path), name=name, _deferred=[])
    return pd


def open_partition(path: Evidence, name: PartitionName, unreadable: Unreadable) -> PartitionLog:
    """Classify every entry of a partition directory (only the listing is read)."""
    pd = PartitionLog(as_path(path), name)
    before = len(unreadable)
    # the base offsets that have a segment: a .log (even one that cannot be opened) or a leftover of a segment part;
    # an index of any other offset is an orphan, counted without a segment of its own.  Two passes over the listing:
    # a local directory is listed once (sorted, held), an archive's directory twice, in name order from its index,
    # never held
    base = pd.path
    listed: Iterable[Entry] = list_dir(base, unreadable) if isinstance(base, Path) else iter_dir(base, [])
    segments: set[int] = set()
    for entry in listed:
        k = classify_name(entry.name)
        if k.kind in SEGMENT_PARTS and k.base_offset is not None and (k.kind == "log" or k.leftover):
            segments.add(k.base_offset)
    for entry in (listed if isinstance(base, Path) else iter_dir(base, unreadable)):
        _place(pd, entry, segments)
    if len(unreadable) > before:
        pd.unlisted = unreadable[-1][1]
    return pd


def _place(pd: PartitionLog, entry: Entry, segments: set[int]) -> None:
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
    if kind.kind in INDEX_PARTS and kind.base_offset is not None and kind.base_offset not in segments:
        pd.orphan_indexes.add(p, kind)
    elif kind.kind in SEGMENT_PARTS and kind.base_offset is not None:
        setattr(pd.segments.setdefault(kind.base_offset, LogSegment(kind.base_offset)), kind.kind, p)
    elif kind.kind == "producer_snapshot" and kind.base_offset is not None:
        pd.producer_snapshots[kind.base_offset] = p
    elif kind.kind == "kraft_snapshot":
        pd.kraft_snapshots.append((p, kind))
    elif kind.kind in ("leader_epoch_checkpoint", "partition_metadata", "quorum_state"):
        setattr(pd, kind.kind, p)
    else:
        pd.unknown.append(p)
