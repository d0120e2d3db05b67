"""``.txnindex`` (TransactionIndex): 34-byte ``AbortedTxn`` entries, append-only.

Kafka writes ``version`` as an int16 but reads it back as one byte; both
readings agree for version 0, the only one that exists.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from construct import Int16sb, Int64sb, Struct

from ..findings import Finding, Severity
from .index_common import decode_entries

AbortedTxn = Struct(
    "version" / Int16sb,
    "producer_id" / Int64sb,
    "first_offset" / Int64sb,
    "last_offset" / Int64sb,
    "last_stable_offset" / Int64sb,
)
ENTRY_SIZE = AbortedTxn.sizeof()


@dataclass
class TxnIndex:
    entries: list[dict]
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"kind": "txn_index", "entries": self.entries}


def decode(data: bytes, base_offset: int | None = None) -> TxnIndex:
    arr, trailing = decode_entries(data, AbortedTxn)
    entries = [dict(zip(arr.dtype.names, map(int, row))) for row in arr.tolist()]
    idx = TxnIndex(entries)
    if trailing:  # Kafka ignores a partial trailing entry
        idx.findings.append(Finding("INDEX_PARTIAL_ENTRY", Severity.LOW, f"{trailing} bytes of a partial entry at the end",
                                    position=len(arr) * ENTRY_SIZE, facts={"trailing_bytes": trailing}))
    prev = None
    for i, e in enumerate(entries):
        if e["version"] != 0:
            idx.findings.append(Finding("TXN_INDEX_BAD_VERSION", Severity.MEDIUM, f"entry {i}: version {e['version']}",
                                        position=i * ENTRY_SIZE, facts={"version": e["version"]}))
        if base_offset is not None and e["last_offset"] < base_offset:
            idx.findings.append(Finding("TXN_INDEX_BEFORE_SEGMENT", Severity.MEDIUM,
                                        f"entry {i}: last offset {e['last_offset']} below base offset {base_offset}",
                                        position=i * ENTRY_SIZE, facts=dict(e)))
        if prev is not None and e["last_offset"] <= prev:
            idx.findings.append(Finding("INDEX_NOT_INCREASING", Severity.MEDIUM,
                                        f"entry {i}: last offset {e['last_offset']} after {prev}",
                                        position=i * ENTRY_SIZE, facts=dict(e)))
        prev = e["last_offset"]
    return idx


def encode(entries: list[dict]) -> bytes:
    return b"".join(AbortedTxn.build({"version": 0, **e}) for e in entries)


def text_lines(idx: TxnIndex) -> Iterator[str]:
    for e in idx.entries:
        yield (
            f"version: {e['version']} producerId: {e['producer_id']} firstOffset: {e['first_offset']} "
            f"lastOffset: {e['last_offset']} lastStableOffset: {e['last_stable_offset']}"
        )
