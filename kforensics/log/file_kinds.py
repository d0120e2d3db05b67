"""Which Kafka file a path is: by name, as Kafka's ``LogFileUtils`` names files, confirmed by content.

Every file a log dir can hold is classified, including the leftovers of
interrupted operations (``.deleted``, ``.cleaned``, ``.swap``, ``.tmp``), so
that nothing in a log dir is silently ignored.
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
LEFTOVER_SUFFIXES = (".deleted", ".cleaned", ".swap", ".tmp", ".part")
ROOT_FILES = {
    "replication-offset-checkpoint": "replication_offset_checkpoint",
    "recovery-point-offset-checkpoint": "recovery_point_offset_checkpoint",
    "log-start-offset-checkpoint": "log_start_offset_checkpoint",
    "cleaner-offset-checkpoint": "cleaner_offset_checkpoint",
    "leader-epoch-checkpoint": "leader_epoch_checkpoint",
    "partition.metadata": "partition_metadata",
    "meta.properties": "meta_properties",
    "quorum-state": "quorum_state",
    ".kafka_cleanshutdown": "clean_shutdown",
    ".lock": "lock",
    "bootstrap.checkpoint": "bootstrap_snapshot",
}
_OFFSET_NAME = re.compile(r"^(\d{20})$")
_KRAFT_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")

#: Kinds whose content is a sequence of record batches.
BATCH_KINDS = {"log", "kraft_snapshot", "bootstrap_snapshot"}


@dataclass(frozen=True)
class FileKind:
    """What a file is: ``kind``, the base offset its name carries, and any leftover suffix."""

    kind: str
    base_offset: int | None = None
    epoch: int | None = None  # KRaft snapshot epoch
    leftover: str | None = None  # ".deleted", ".cleaned", ".swap", ...

    @property
    def is_batches(self) -> bool:
        return self.kind in BATCH_KINDS


def classify_name(path: str | os.PathLike) -> FileKind:
    """Classify by file name alone."""
    name = os.path.basename(os.fspath(path))
    leftover = None
    for suffix in LEFTOVER_SUFFIXES:
        if name.endswith(suffix) and name != suffix:
            leftover = suffix
            name = name[: -len(suffix)]
            break
    if name in ROOT_FILES:
        return FileKind(ROOT_FILES[name], leftover=leftover)
    m = _KRAFT_SNAPSHOT.match(name)
    if m:
        return FileKind("kraft_snapshot", int(m.group(1)), int(m.group(2)), leftover)
    stem, dot, suffix = name.rpartition(".")
    if dot and "." + suffix in SEGMENT_SUFFIXES and _OFFSET_NAME.match(stem):
        return FileKind(SEGMENT_SUFFIXES["." + suffix], int(stem), leftover=leftover)
    if dot and "." + suffix in SEGMENT_SUFFIXES:
        # a segment-like suffix with a non-standard name: still decodable, offset unknown
        return FileKind(SEGMENT_SUFFIXES["." + suffix], None, leftover=leftover)
    if name.endswith(".checkpoint"):
        return FileKind("kraft_snapshot", leftover=leftover)
    return FileKind("unknown", leftover=leftover)


def sniff(head: bytes) -> str | None:
    """Guess a kind from the first bytes of a file (to confirm or correct the name)."""
    if not head:
        return None
    if len(head) >= 17 and head[16] in (0, 1, 2) and int.from_bytes(head[8:12], "big", signed=True) >= 14:
        return "batches"
    text = head[:64]
    if text[:1].isdigit() and b"\n" in text:
        return "text_checkpoint"
    if text.startswith(b"{"):
        return "json"
    if text.startswith(b"#") or b"=" in text:
        return "properties"
    if text.startswith(b"version:"):
        return "partition_metadata"
    return None
