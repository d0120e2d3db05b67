"""Reading every file that is not a sequence of batches: bounded, decoded, placed, and hashed for custody.

Indexes, text checkpoints, producer snapshots, ``partition.metadata``,
``meta.properties``, ``quorum-state`` and ``.kafka_cleanshutdown`` all go
through :func:`read_side_file`: the size is capped per kind before anything
is read, only regular files are opened, the decoder's findings are placed in
the file, and the bytes read are hashed for the chain of custody.  Nothing
else in kforensics reads these files.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..findings import Finding, finding
from .file_kinds import FileKind, classify_name
from .sources import FileTooLarge, NotRegularFile, read_bounded

KiB, MiB = 1 << 10, 1 << 20
#: the largest file of each kind that is read; larger ones are reported, not read
CAPS = {
    "offset_index": 64 * MiB,  # segment.index.bytes is 10 MiB by default
    "time_index": 64 * MiB,
    "txn_index": 64 * MiB,
    "producer_snapshot": 16 * MiB,  # 46 bytes per producer: 350 000 producers
    "replication_offset_checkpoint": 64 * MiB,  # one line per partition of the broker
    "recovery_point_offset_checkpoint": 64 * MiB,
    "log_start_offset_checkpoint": 64 * MiB,
    "cleaner_offset_checkpoint": 64 * MiB,
    "leader_epoch_checkpoint": 4 * MiB,  # one line per epoch
    "partition_metadata": 64 * KiB,
    "meta_properties": 64 * KiB,
    "quorum_state": 1 * MiB,
    "clean_shutdown": 64 * KiB,
    "lock": 0,
}


@dataclass(frozen=True)
class FileRecord:
    """An input file that was read: for the report's chain of custody."""

    path: str
    kind: str
    size: int
    sha256: str | None


@dataclass
class SideFile:
    """A side file as read: its decoded value (None when unreadable) and what was wrong with it."""

    path: str
    kind: str
    value: Any = None
    record: FileRecord | None = None
    findings: list[Finding] = field(default_factory=list)


#: side-file kind -> the format module that decodes it (imported only when such a file is read)
_MODULES = {
    "partition_metadata": "partition_metadata", "meta_properties": "meta_properties", "quorum_state": "quorum_state",
    "clean_shutdown": "clean_shutdown", "producer_snapshot": "producer_snapshot", "offset_index": "offset_index",
    "time_index": "time_index", "txn_index": "txn_index", "replication_offset_checkpoint": "checkpoint",
    "recovery_point_offset_checkpoint": "checkpoint", "log_start_offset_checkpoint": "checkpoint",
    "cleaner_offset_checkpoint": "checkpoint", "leader_epoch_checkpoint": "checkpoint",
}


@functools.cache
def _format_module(name: str) -> Any:
    return importlib.import_module(f"..formats.{name}", __package__)


def decoder(kind: str, base_offset: int | None = None) -> Callable[[bytes], Any] | None:
    """The format decoder for a side-file kind (None for kinds with no content to decode)."""
    name = _MODULES.get(kind)
    if name is None:
        return None
    module = _format_module(name)
    if kind in ("offset_index", "time_index"):
        return lambda data: module.decode(data, base_offset or 0)
    if kind == "txn_index":
        return lambda data: module.decode(data, base_offset)
    if name == "checkpoint":
        return lambda data: module.decode(data, kind)
    decode: Callable[[bytes], Any] = module.decode
    return decode


def read_side_file(path: Any, kind: FileKind | str | None = None, *, base_offset: int | None = None) -> SideFile:
    """Read and decode one side file (never raises for what the evidence holds)."""
    if kind is None:
        kind = classify_name(str(getattr(path, "name", path)))
    if isinstance(kind, FileKind):
        base_offset = kind.base_offset if base_offset is None else base_offset
        kind = kind.kind
    label = str(path)
    out = SideFile(label, kind)
    cap = CAPS.get(kind, 64 * MiB)
    try:
        data = read_bounded(path, cap)
    except FileTooLarge as e:
        # our cap, not Kafka's: Kafka reads a checkpoint whole (CheckpointFile.read), so what the file says is
        # unknown here, and nothing (a load failure, an epoch) may be concluded from it
        out.findings.append(finding("FILE_TOO_LARGE", f"not read: {e.size} bytes, more than the {cap} bytes "
                                                      f"kforensics reads of a {kind}; what it holds is unknown",
                                    file=label, size=e.size, cap=cap, read=False))
        return out
    except NotRegularFile as e:
        out.findings.append(finding("NOT_A_REGULAR_FILE", f"{e.strerror}: not opened", file=label))
        return out
    except OSError as e:
        out.findings.append(finding("UNREADABLE_FILE", f"cannot read: {e.strerror or e}", file=label))
        return out
    out.record = FileRecord(label, kind, len(data), hashlib.sha256(data).hexdigest())
    decode = decoder(kind, base_offset)
    if decode is not None:
        out.value = decode(data)
        out.findings += [f.at(label) for f in getattr(out.value, "findings", [])]
    return out


#: the largest content :func:`read_side_files` decodes once for every file that holds it
_SHARED = 4 * KiB
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def read_local(path: Path, cap: int) -> bytes | None:
    """The bytes of a local regular file of at most ``cap`` bytes read whole; None for anything else (a file that
    is not there, not regular, too large, unreadable, or shorter than its size): :func:`read_side_file` says what."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
            return None
        data = os.read(fd, st.st_size + 1) if st.st_size else b""
        return data if len(data) == st.st_size else None
    except OSError:
        return None
    finally:
        os.close(fd)


def read_side_files(paths: Sequence[Any], kind: str) -> list[SideFile]:
    """:func:`read_side_file` of many files of one kind whose name carries no offset (checkpoints,
    ``partition.metadata``): the same results, the local files read in one loop and a small content that many
    files hold (a fleet's leader-epoch checkpoints) decoded once, as the decoders are pure (bytes in, value out)."""
    cap = CAPS.get(kind, 64 * MiB)
    decode = decoder(kind)
    seen: dict[bytes, tuple[str, Any]] = {}
    out = []
    for path in paths:
        data = read_local(path, cap) if isinstance(path, Path) else None
        if data is None:
            out.append(read_side_file(path, kind))
            continue
        label = str(path)
        known = seen.get(data)
        digest = known[0] if known is not None else hashlib.sha256(data).hexdigest()
        sf = SideFile(label, kind, record=FileRecord(label, kind, len(data), digest))
        if decode is not None:
            value = known[1] if known is not None else decode(data)
            sf.value = value
            sf.findings = [f.at(label) for f in getattr(value, "findings", [])]
        if known is None and len(data) <= _SHARED:
            seen[data] = (digest, sf.value)
        out.append(sf)
    return out
