"""Every name Kafka gives a file or directory in a log dir (``LogFileUtils``, ``UnifiedLog``), in one place.

Files are classified by name: segment parts (``<20-digit offset>.log`` and
its indexes), producer snapshots, KRaft snapshots
(``<endOffset>-<epoch>.checkpoint``), the root and partition side files, and
the leftovers of interrupted operations (``.deleted``, ``.cleaned``,
``.swap``, ``.tmp``, ``.part``), so that nothing in a log dir is silently
ignored.  Partition directory names (``<topic>-<n>`` and the ``-delete``,
``-future`` and ``-stray`` forms) are parsed here too.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

SEGMENT_SUFFIXES = {
    ".log": "log",
    ".index": "offset_index",
    ".timeindex": "time_index",
    ".txnindex": "txn_index",
    ".snapshot": "producer_snapshot",
}
#: the kinds that make up one segment, keyed by the base offset in their names
SEGMENT_PARTS = ("log", "offset_index", "time_index", "txn_index")
LEFTOVER_SUFFIXES = (".deleted", ".cleaned", ".swap", ".tmp", ".part")
ROOT_FILES = {
    "replication-offset-checkpoint": "replication_offset_checkpoint",
    "recovery-point-offset-checkpoint": "recovery_point_offset_checkpoint",
    "log-start-offset-checkpoint": "log_start_offset_checkpoint",
    "cleaner-offset-checkpoint": "cleaner_offset_checkpoint",
    "meta.properties": "meta_properties",
    ".kafka_cleanshutdown": "clean_shutdown",
    ".lock": "lock",
    "bootstrap.checkpoint": "bootstrap_snapshot",
}
PARTITION_FILES = {
    "leader-epoch-checkpoint": "leader_epoch_checkpoint",
    "partition.metadata": "partition_metadata",
    "quorum-state": "quorum_state",
}
FILE_NAMES = {**ROOT_FILES, **PARTITION_FILES}
#: the four offset checkpoints at the root of a log dir
OFFSET_CHECKPOINTS = (
    "replication_offset_checkpoint",
    "recovery_point_offset_checkpoint",
    "log_start_offset_checkpoint",
    "cleaner_offset_checkpoint",
)
#: kinds whose content is a sequence of record batches
BATCH_KINDS = {"log", "kraft_snapshot", "bootstrap_snapshot"}

METADATA_TOPIC = "__cluster_metadata"
#: directories LogManager skips in a log dir
SKIPPED_DIRS = {"remote-log-index-cache"}

_OFFSET_NAME = re.compile(r"^(\d{20})$")
_KRAFT_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_PLAIN_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
# <topic>-<p>.<32 hex>-delete / -stray / -future
_SUFFIXED_DIR = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)\.(?P<uid>[0-9a-fA-F]{32})-(?P<suffix>delete|future|stray)$")
#: the largest partition number (partition ids are int32)
MAX_PARTITION = 2**31 - 1


@dataclass(frozen=True)
class FileKind:
    """What a file is: ``kind``, the offset its name carries, and any leftover suffix."""

    kind: str
    base_offset: int | None = None
    epoch: int | None = None  # KRaft snapshot epoch
    leftover: str | None = None  # ".deleted", ".cleaned", ".swap", ...

    @property
    def is_batches(self) -> bool:
        return self.kind in BATCH_KINDS


def segment_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log``: a segment file's name."""
    return f"{base_offset:020d}{suffix}"


def segment_order(name: str) -> tuple[int, str]:
    """Sort key of segment file names: by the base offset the name carries (a name that carries none, first),
    then by name (the ``.log`` of a base offset before its ``.log.deleted``)."""
    stem = str(name).split(".", 1)[0]
    return (int(stem) if stem.isdigit() else -1, str(name))


def classify_name(path: str | os.PathLike[str]) -> FileKind:
    """Classify a file by its name alone."""
    name = os.path.basename(os.fspath(path))
    leftover = None
    for suffix in LEFTOVER_SUFFIXES:
        if name.endswith(suffix) and name != suffix:
            leftover = suffix
            name = name[: -len(suffix)]
            break
    if name in FILE_NAMES:
        return FileKind(FILE_NAMES[name], leftover=leftover)
    m = _KRAFT_SNAPSHOT.match(name)
    if m:
        return FileKind("kraft_snapshot", int(m.group(1)), int(m.group(2)), leftover)
    stem, dot, suffix = name.rpartition(".")
    if dot and "." + suffix in SEGMENT_SUFFIXES:
        # a segment-like suffix with a non-standard name is still decodable; its offset is unknown
        base = int(stem) if _OFFSET_NAME.match(stem) else None
        return FileKind(SEGMENT_SUFFIXES["." + suffix], base, leftover=leftover)
    if name.endswith(".checkpoint"):
        return FileKind("kraft_snapshot", leftover=leftover)
    return FileKind("unknown", leftover=leftover)


def snapshot_id(name: str) -> tuple[int, int] | None:
    """``(end offset, epoch)`` of a KRaft snapshot file name, None for any other name."""
    m = _KRAFT_SNAPSHOT.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


@dataclass(frozen=True)
class PartitionName:
    """What a partition directory's name says."""

    topic: str
    partition: int
    suffix: str | None = None  # "delete", "future", "stray"
    uid: str | None = None

    @property
    def is_metadata_log(self) -> bool:
        return self.topic == METADATA_TOPIC


def parse_partition_dir_name(name: str) -> PartitionName | None:
    """Split a partition dir name at the last ``-`` (topics may contain ``-`` and ``.``).

    None when the name is not a partition directory's, including partition
    numbers beyond int32 that Kafka could not have created.
    """
    m = _SUFFIXED_DIR.match(name) or _PLAIN_DIR.match(name)
    if not m:
        return None
    partition = int(m["partition"])
    if partition > MAX_PARTITION:
        return None
    groups = m.groupdict()
    return PartitionName(m["topic"], partition, groups.get("suffix"), groups.get("uid"))


def is_metadata_dir(name: str) -> bool:
    """Whether a directory name is a KRaft metadata log's (``__cluster_metadata-0``)."""
    p = parse_partition_dir_name(name)
    return p is not None and p.suffix is None and p.is_metadata_log
