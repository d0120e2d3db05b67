"""Producer-state snapshots ``<offset>.snapshot`` (``ProducerSnapshot`` v1, CRC-32C over bytes 6..EOF)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import crc32c
from construct import Int16sb, Int32sb, Int32ub, Int64sb, Struct

from ..findings import Finding, Severity
from .index_common import decode_entries

SnapshotHeader = Struct("version" / Int16sb, "crc" / Int32ub, "entry_count" / Int32sb)
ProducerEntry = Struct(
    "producer_id" / Int64sb,
    "epoch" / Int16sb,
    "last_sequence" / Int32sb,
    "last_offset" / Int64sb,
    "offset_delta" / Int32sb,
    "timestamp" / Int64sb,
    "coordinator_epoch" / Int32sb,
    "current_txn_first_offset" / Int64sb,
)
HEADER_SIZE = SnapshotHeader.sizeof()
ENTRY_SIZE = ProducerEntry.sizeof()
CRC_FROM = 6


@dataclass
class ProducerSnapshot:
    version: int | None
    crc: int | None
    computed_crc: int | None
    entries: list[dict]
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"kind": "producer_snapshot", "version": self.version, "crc": self.crc,
                "computed_crc": self.computed_crc, "entries": self.entries}


def decode(data: bytes) -> ProducerSnapshot:
    if len(data) < HEADER_SIZE:
        s = ProducerSnapshot(None, None, None, [])
        s.findings.append(Finding("SNAPSHOT_TRUNCATED", Severity.MEDIUM, f"{len(data)} bytes, shorter than the header",
                                  position=0))
        return s
    h = SnapshotHeader.parse(data)
    computed = crc32c.crc32c(data[CRC_FROM:])
    arr, trailing = decode_entries(data[HEADER_SIZE:], ProducerEntry)
    s = ProducerSnapshot(h.version, h.crc, computed, [dict(zip(arr.dtype.names, map(int, r))) for r in arr.tolist()])
    if h.version != 1:
        s.findings.append(Finding("SNAPSHOT_BAD_VERSION", Severity.MEDIUM, f"version {h.version}, expected 1", position=0))
    if computed != h.crc:
        s.findings.append(Finding("SNAPSHOT_CRC_MISMATCH", Severity.MEDIUM,
                                  f"CRC-32C stored {h.crc}, computed {computed}: Kafka discards this snapshot",
                                  position=2, facts={"stored": h.crc, "computed": computed}))
    if h.entry_count != len(arr) or trailing:
        s.findings.append(Finding("SNAPSHOT_COUNT_MISMATCH", Severity.MEDIUM,
                                  f"declares {h.entry_count} entries, holds {len(arr)} (+{trailing} bytes)",
                                  position=6, facts={"declared": h.entry_count, "actual": len(arr)}))
    return s


def encode(entries: list[dict]) -> bytes:
    body = SnapshotHeader.build(dict(version=1, crc=0, entry_count=len(entries)))[CRC_FROM:]
    body += b"".join(ProducerEntry.build(e) for e in entries)
    return Int16sb.build(1) + Int32ub.build(crc32c.crc32c(body)) + body


def text_lines(s: ProducerSnapshot) -> Iterator[str]:
    for e in s.entries:
        txn = "OptionalLong.empty" if e["current_txn_first_offset"] < 0 else f"OptionalLong[{e['current_txn_first_offset']}]"
        line = (f"producerId: {e['producer_id']} producerEpoch: {e['epoch']} coordinatorEpoch: {e['coordinator_epoch']} "
                f"currentTxnFirstOffset: {txn} lastTimestamp: {e['timestamp']}")
        if e["last_offset"] >= 0:
            first = (e["last_sequence"] - e["offset_delta"]) % 2147483648 if e["last_sequence"] >= 0 else -1
            line += (f" firstSequence: {first} lastSequence: {e['last_sequence']} lastOffset: {e['last_offset']} "
                     f"offsetDelta: {e['offset_delta']} timestamp: {e['timestamp']}")
        yield line
