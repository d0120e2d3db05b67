"""Producer-state snapshots ``<offset>.snapshot`` (the ``ProducerSnapshot`` message, version 1, not flexible).

A 10-byte header (version, CRC-32C over bytes [6, EOF), entry count), then
46-byte entries, one per producer.  Kafka refuses a snapshot whose version is
not 1 or whose CRC does not match; it deletes it and rebuilds producer state
by replaying the log, so corruption here is MEDIUM.  ``last_offset < 0``
means an entry without batch metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import crc32c
from construct import Int16sb, Int32sb, Int32ub, Int64sb, Struct

from ..findings import Finding, finding
from .index_common import decode_entries

#: the one declaration of the header and of an entry; decode derives its fast paths from them
HEADER = Struct("version" / Int16sb, "crc" / Int32ub, "entry_count" / Int32sb)
ENTRY = Struct(
    "producer_id" / Int64sb,
    "epoch" / Int16sb,
    "last_sequence" / Int32sb,
    "last_offset" / Int64sb,
    "offset_delta" / Int32sb,
    "timestamp" / Int64sb,
    "coordinator_epoch" / Int32sb,
    "current_txn_first_offset" / Int64sb,
)
HEADER_SIZE = HEADER.sizeof()
ENTRY_SIZE = ENTRY.sizeof()
CRC_FROM = HEADER_SIZE - Int32sb.sizeof()  # the CRC covers the entry count and everything after it
VERSION = 1
_INT32_MAX = 2**31 - 1


def _int32(value: int) -> int:
    """``value`` wrapped to a Java int."""
    return (value + 2**31) % 2**32 - 2**31


@dataclass(frozen=True)
class ProducerEntry:
    """One producer's state: identity, epochs, its last batch (when ``last_offset >= 0``) and open transaction."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int  # -1: no open transaction

    @property
    def has_batch_metadata(self) -> bool:
        return self.last_offset >= 0

    @property
    def first_sequence(self) -> int:
        """The last batch's first sequence: ``last_sequence - offset_delta``, wrapping as Kafka's sequences do."""
        if self.last_sequence < self.offset_delta:
            # sequences wrap from Int32.MAX to 0; Java int arithmetic throughout
            return _int32(_INT32_MAX - _int32(self.offset_delta - self.last_sequence) + 1)
        return _int32(self.last_sequence - self.offset_delta)

    def __json__(self) -> dict[str, Any]:
        return {**asdict(self), "first_sequence": self.first_sequence if self.has_batch_metadata else None}


@dataclass
class ProducerSnapshot:
    """A decoded producer snapshot: header fields, the CRC as computed, the entries and findings.

    Fields are None where the file is too short to hold them.
    """

    version: int | None = None
    crc: int | None = None
    computed_crc: int | None = None
    entry_count: int | None = None  # as declared in the header
    entries: list[ProducerEntry] = field(default_factory=list)
    trailing_bytes: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def crc_ok(self) -> bool:
        return self.crc is not None and self.crc == self.computed_crc



def decode(data: bytes) -> ProducerSnapshot:
    """Decode a producer snapshot; whatever is readable is returned, every problem is a finding."""
    s = ProducerSnapshot()

    def problem(code: str, message: str, position: int, **facts: Any) -> None:
        s.findings.append(finding(code, message, position=position, **facts))

    if len(data) < HEADER_SIZE:
        problem("SNAPSHOT_TRUNCATED", f"{len(data)} bytes, shorter than the {HEADER_SIZE}-byte header", 0,
                length=len(data))
        if len(data) >= 2:
            s.version = Int16sb.parse(data[:2])
        return s
    h = HEADER.parse(data)
    s.version, s.crc, s.entry_count = h.version, h.crc, h.entry_count
    s.computed_crc = crc32c.crc32c(data[CRC_FROM:])
    if h.version != VERSION:
        problem("SNAPSHOT_BAD_VERSION", f"version {h.version}, expected {VERSION}: Kafka refuses this snapshot", 0,
                version=h.version)
    if s.computed_crc != h.crc:
        problem("SNAPSHOT_CRC_MISMATCH", f"CRC-32C stored {h.crc}, computed {s.computed_crc}: Kafka discards this "
                "snapshot", 2, stored=h.crc, computed=s.computed_crc)
    arr, partial = decode_entries(data[HEADER_SIZE:], ENTRY)
    whole = len(arr)
    if h.entry_count < 0:
        problem("SNAPSHOT_COUNT_MISMATCH", f"negative entry count {h.entry_count}; {whole} entries fit in the file",
                CRC_FROM, declared=h.entry_count, actual=whole)
        take = whole  # nothing to trust in the count: show what is there
    elif h.entry_count > whole:
        problem("SNAPSHOT_TRUNCATED", f"declares {h.entry_count} entries, the file holds {whole}"
                + (f" and {partial} bytes of another" if partial else ""), HEADER_SIZE + whole * ENTRY_SIZE,
                declared=h.entry_count, actual=whole, partial_bytes=partial)
        take = whole
    else:
        take = h.entry_count
    s.entries = [ProducerEntry(**dict(zip(cast(tuple[str, ...], arr.dtype.names), row))) for row in arr[:take].tolist()]
    end = HEADER_SIZE + take * ENTRY_SIZE
    if h.entry_count >= 0 and len(data) > end:
        s.trailing_bytes = len(data) - end
        problem("SNAPSHOT_COUNT_MISMATCH", f"declares {h.entry_count} entries, followed by {s.trailing_bytes} more "
                "bytes (Kafka ignores them)", end, declared=h.entry_count, actual=whole,
                trailing_bytes=s.trailing_bytes)
    return s


def encode(entries: Iterable[ProducerEntry | Mapping[str, Any]], version: int = VERSION) -> bytes:
    """Entries (objects, or mappings of their fields) as a snapshot, CRC included."""
    fields = [asdict(e) if isinstance(e, ProducerEntry) else e for e in entries]
    body: bytes = Int32sb.build(len(fields)) + b"".join(ENTRY.build(e) for e in fields)
    return HEADER.build({"version": version, "crc": crc32c.crc32c(body), "entry_count": len(fields)}) + body[4:]
