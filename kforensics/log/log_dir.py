"""The log-dir model: a broker's log directory, its partition dirs and their segments (read-only).

Only directory listings are read here; file contents are decoded by the
format layer when the analysis asks for them.  Every entry of a log dir ends
up somewhere in the model: as a known file, a segment part, a leftover of an
interrupted operation, or in ``unknown`` — nothing is silently ignored.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .file_kinds import FileKind, classify_name

METADATA_TOPIC = "__cluster_metadata"
_PLAIN = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
# <topic>-<p>.<32 hex>-delete / -stray; <topic>-<p>.<32 hex>-future (older: <topic>-<p>.<uuid>-future)
_SUFFIXED = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)\.(?P<uid>[0-9a-fA-F]{32})-(?P<suffix>delete|future|stray)$")
_SKIPPED_DIRS = {"remote-log-index-cache"}


@dataclass(frozen=True)
class PartitionName:
    """What a partition directory's name says."""

    topic: str
    partition: int
    suffix: str | None = None  # "delete", "future", "stray"
    uid: str | None = None


def parse_partition_dir_name(name: str) -> PartitionName | None:
    """Split a partition dir name at the last ``-`` (topics may contain ``-`` and ``.``)."""
    m = _SUFFIXED.match(name)
    if m:
        return PartitionName(m["topic"], int(m["partition"]), m["suffix"], m["uid"])
    m = _PLAIN.match(name)
    if m:
        return PartitionName(m["topic"], int(m["partition"]))
    return None


@dataclass
class SegmentFiles:
    """The files that make up one segment, keyed by the base offset in their names."""

    base_offset: int
    log: Path | None = None
    offset_index: Path | None = None
    time_index: Path | None = None
    txn_index: Path | None = None
    leftovers: list[tuple[Path, FileKind]] = field(default_factory=list)


@dataclass
class PartitionDir:
    """One ``<topic>-<partition>`` directory."""

    path: Path
    name: PartitionName
    segments: dict[int, SegmentFiles] = field(default_factory=dict)
    producer_snapshots: dict[int, Path] = field(default_factory=dict)
    kraft_snapshots: list[tuple[Path, FileKind]] = field(default_factory=list)
    leader_epoch_checkpoint: Path | None = None
    partition_metadata: Path | None = None
    quorum_state: Path | None = None
    leftovers: list[tuple[Path, FileKind]] = field(default_factory=list)
    unknown: list[Path] = field(default_factory=list)

    @property
    def topic(self) -> str:
        return self.name.topic

    @property
    def partition(self) -> int:
        return self.name.partition

    @property
    def is_metadata_log(self) -> bool:
        return self.name.topic == METADATA_TOPIC

    def sorted_segments(self) -> list[SegmentFiles]:
        return [self.segments[k] for k in sorted(self.segments)]


@dataclass
class LogDir:
    """One of a broker's ``log.dirs``."""

    path: Path
    root_files: dict[str, Path] = field(default_factory=dict)  # kind -> path
    partitions: list[PartitionDir] = field(default_factory=list)
    leftovers: list[tuple[Path, FileKind]] = field(default_factory=list)
    unknown: list[Path] = field(default_factory=list)
    unreadable: list[tuple[Path, str]] = field(default_factory=list)


@dataclass(frozen=True)
class _Entry:
    name: str
    dir: bool

    def is_dir(self, follow_symlinks: bool = False) -> bool:
        return self.dir


def _listdir(path, unreadable: list) -> list:
    """Sorted entries (name, is_dir) of a local, archive or remote directory."""
    try:
        if isinstance(path, (str, os.PathLike)):
            with os.scandir(path) as it:
                return sorted(it, key=lambda e: e.name)
        return [_Entry(p.name, p.is_dir()) for p in path.iterdir()]
    except OSError as e:
        unreadable.append((path, str(e)))
        return []


def _as_path(path):
    return Path(path) if isinstance(path, (str, os.PathLike)) else path


def open_partition_dir(path: Path, name: PartitionName, unreadable: list) -> PartitionDir:
    """Classify every file of a partition directory."""
    pd = PartitionDir(_as_path(path), name)
    for entry in _listdir(pd.path, unreadable):
        p = pd.path / entry.name
        if entry.is_dir(follow_symlinks=False):
            pd.unknown.append(p)
            continue
        kind = classify_name(entry.name)
        if kind.leftover:
            pd.leftovers.append((p, kind))
            if kind.base_offset is not None and kind.kind in ("log", "offset_index", "time_index", "txn_index"):
                pd.segments.setdefault(kind.base_offset, SegmentFiles(kind.base_offset)).leftovers.append((p, kind))
            continue
        if kind.kind in ("log", "offset_index", "time_index", "txn_index") and kind.base_offset is not None:
            seg = pd.segments.setdefault(kind.base_offset, SegmentFiles(kind.base_offset))
            setattr(seg, kind.kind, p)
        elif kind.kind == "producer_snapshot" and kind.base_offset is not None:
            pd.producer_snapshots[kind.base_offset] = p
        elif kind.kind == "kraft_snapshot":
            pd.kraft_snapshots.append((p, kind))
        elif kind.kind == "leader_epoch_checkpoint":
            pd.leader_epoch_checkpoint = p
        elif kind.kind == "partition_metadata":
            pd.partition_metadata = p
        elif kind.kind == "quorum_state":
            pd.quorum_state = p
        else:
            pd.unknown.append(p)
    return pd


def open_log_dir(path: str | os.PathLike) -> LogDir:
    """Build the model of one log dir from its listing (nothing is opened for writing)."""
    ld = LogDir(_as_path(path))
    for entry in _listdir(ld.path, ld.unreadable):
        p = ld.path / entry.name
        if entry.is_dir(follow_symlinks=False):
            if entry.name in _SKIPPED_DIRS:
                continue
            name = parse_partition_dir_name(entry.name)
            if name is None:
                ld.unknown.append(p)
            else:
                ld.partitions.append(open_partition_dir(p, name, ld.unreadable))
            continue
        kind = classify_name(entry.name)
        if kind.leftover:
            ld.leftovers.append((p, kind))
        elif kind.kind in (
            "replication_offset_checkpoint",
            "recovery_point_offset_checkpoint",
            "log_start_offset_checkpoint",
            "cleaner_offset_checkpoint",
            "meta_properties",
            "clean_shutdown",
            "lock",
            "bootstrap_snapshot",
        ):
            ld.root_files[kind.kind] = p
        else:
            ld.unknown.append(p)
    return ld


def looks_like_log_dir(path) -> bool:
    """A directory holding meta.properties, a root checkpoint or a ``<topic>-<n>`` partition dir with segments."""
    entries = _listdir(_as_path(path), [])
    for e in entries:
        if not e.is_dir() and classify_name(e.name).kind in (
            "meta_properties",
            "replication_offset_checkpoint",
            "recovery_point_offset_checkpoint",
        ):
            return True
    for e in entries:
        if e.is_dir() and parse_partition_dir_name(e.name):
            inner = _listdir(_as_path(path) / e.name, [])
            if any(classify_name(x.name).kind in ("log", "leader_epoch_checkpoint") for x in inner):
                return True
    return False


def find_log_dirs(root) -> list:
    """Every log dir at or below ``root`` (a corpus or snapshot may hold several brokers)."""
    root = _as_path(root)
    if looks_like_log_dir(root):
        return [root]
    found = []
    stack = [root]
    while stack:
        d = stack.pop()
        for e in _listdir(d, []):
            if e.is_dir():
                child = d / e.name
                if looks_like_log_dir(child):
                    found.append(child)
                else:
                    stack.append(child)
    return sorted(found, key=str)
