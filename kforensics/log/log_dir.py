"""The log-dir model: a broker's log directory, its root files and partition dirs (read-only).

Only directory listings are read here; file contents are read through the
objects' ``read_*`` methods, which go through the bounded side-file reader.
Every entry of a log dir ends up somewhere in the model: as a known file, a
partition dir, a leftover of an interrupted operation, something that is not
a regular file (never opened), or in ``unknown``: nothing is silently
ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .file_kinds import OFFSET_CHECKPOINTS, ROOT_FILES, SKIPPED_DIRS, FileKind, classify_name, parse_partition_dir_name
from .listing import as_path, list_dir
from .partition import PartitionLog, deferred_partition
from .side_files import SideFile, read_side_file

#: root files that identify a directory as a broker log dir
_IDENTIFYING = {"meta_properties", *OFFSET_CHECKPOINTS}
#: how the names of identifying files begin (:func:`~.file_kinds.classify_name` says which are one)
_IDENTIFYING_NAMES = tuple(name for name, kind in ROOT_FILES.items() if kind in _IDENTIFYING)
#: the name of a log dir's meta.properties
_META_PROPERTIES = next(name for name, kind in ROOT_FILES.items() if kind == "meta_properties")
#: files that make a ``<topic>-<n>`` directory a partition dir
_PARTITION_EVIDENCE = {"log", "leader_epoch_checkpoint", "kraft_snapshot", "quorum_state", "partition_metadata"}


@dataclass
class LogDir:
    """One of a broker's ``log.dirs``."""

    path: Any
    root_files: dict[str, Any] = field(default_factory=dict)  # kind -> path
    partitions: list[PartitionLog] = field(default_factory=list)
    leftovers: list[tuple[Any, FileKind]] = field(default_factory=list)
    unknown: list[Any] = field(default_factory=list)
    not_regular: list[tuple[Any, str]] = field(default_factory=list)
    unlisted: list[tuple[Any, str]] = field(default_factory=list)  # the log dir itself, when it cannot be listed

    @property
    def unreadable(self) -> list[tuple[Any, str]]:
        """Every directory that could not be listed, with why: the log dir, then its partition dirs in name order
        (each partition dir is listed now if it was not yet)."""
        return self.unlisted + [x for pd in self.partitions for x in pd.listing_failures]

    def read_root(self, kind: str) -> SideFile | None:
        """Read one root file (``meta_properties``, an offset checkpoint, ``clean_shutdown``), None when absent."""
        p = self.root_files.get(kind)
        return None if p is None else read_side_file(p, kind)

    @property
    def is_bare(self) -> bool:
        """No meta.properties and no root checkpoint: partition dirs copied without their broker's files."""
        return not (_IDENTIFYING & set(self.root_files))


def open_log_dir(path: Any, keep: Callable[[str], bool] | None = None) -> LogDir:
    """Build the model of one log dir from its listing (nothing is opened for writing); each partition dir is
    listed when its contents are first read.  ``keep``: a model of only the entries whose name it accepts (see
    :func:`read_meta_properties` and :func:`topic_partitions`)."""
    ld = LogDir(as_path(path))
    for entry in list_dir(ld.path, ld.unlisted, keep):
        p = entry.path
        if entry.is_dir:
            if entry.name in SKIPPED_DIRS:
                continue
            name = parse_partition_dir_name(entry.name)
            if name is None:
                ld.unknown.append(p)
            else:
                ld.partitions.append(deferred_partition(p, name))
            continue
        if not entry.is_file:
            ld.not_regular.append((p, entry.what))
            continue
        kind = classify_name(entry.name)
        if kind.leftover:
            ld.leftovers.append((p, kind))
        elif kind.kind in ROOT_FILES.values():
            ld.root_files[kind.kind] = p
        else:
            ld.unknown.append(p)
    return ld


def read_meta_properties(path: Any) -> SideFile | None:
    """A log dir's ``meta.properties`` as :meth:`LogDir.read_root` reads it (None: absent), without a model of the
    rest of the dir."""
    return open_log_dir(path, _META_PROPERTIES.__eq__).read_root("meta_properties")


def topic_partitions(path: Any, topic: str) -> list[PartitionLog]:
    """The partition dirs of ``topic`` in a log dir, as :func:`open_log_dir` models them (deferred), in name
    order; the other entries are not modelled (the coordinators' partitions among ten thousand others)."""
    prefix = topic + "-"
    return [pd for pd in open_log_dir(path, lambda name: name.startswith(prefix)).partitions if pd.topic == topic]


def looks_like_log_dir(path: Any) -> bool:
    """A directory holding meta.properties, a root checkpoint or a ``<topic>-<n>`` dir with a partition's files."""
    # the identifying files first, from the names that can be one (not an entry of each of ten thousand dirs)
    for e in list_dir(as_path(path), keep=lambda name: name.startswith(_IDENTIFYING_NAMES)):
        if e.is_file and classify_name(e.name).kind in _IDENTIFYING:
            return True
    entries = list_dir(as_path(path))
    for e in entries:
        if e.is_dir and parse_partition_dir_name(e.name):
            if any(classify_name(x.name).kind in _PARTITION_EVIDENCE for x in list_dir(e.path)):
                return True
    return False


def find_log_dirs(root: Any) -> list[Any]:
    """Every log dir at or below ``root`` (a corpus or snapshot may hold several brokers)."""
    root = as_path(root)
    if looks_like_log_dir(root):
        return [root]
    found = []
    stack = [root]
    while stack:
        d = stack.pop()
        for e in list_dir(d):
            if e.is_dir:
                if looks_like_log_dir(e.path):
                    found.append(e.path)
                else:
                    stack.append(e.path)
    return sorted(found, key=str)
