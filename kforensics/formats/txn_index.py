"""``.txnindex`` (TransactionIndex): 34-byte ``AbortedTxn`` entries, append-only, never preallocated.

Only aborted transactions are recorded, each in the segment holding its ABORT
marker, in strictly increasing ``last_offset`` order.  ``first_offset`` may lie
in an earlier segment.  Kafka ignores a partial trailing entry.

Quirk: ``version`` is written as an int16 but Kafka reads back only its first
byte (signed) and rejects a value above 0.  Both readings agree on 0, the
only version that exists; :attr:`TxnIndex.kafka_versions` is what Kafka sees.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, cast

import numpy as np
from construct import Int16sb, Int64sb, Struct

from ..findings import Finding, finding
from .index_common import decode_entries, first_of

#: the one declaration of an entry; decode derives its numpy dtype from it
ENTRY = Struct(
    "version" / Int16sb,
    "producer_id" / Int64sb,
    "first_offset" / Int64sb,
    "last_offset" / Int64sb,
    "last_stable_offset" / Int64sb,
)
ENTRY_SIZE = ENTRY.sizeof()
CURRENT_VERSION = 0
_WHAT = "aborted-transaction"


class AbortedTxn(NamedTuple):
    """One aborted transaction: its producer, its offset range and the LSO when the abort completed."""

    version: int  # as Kafka reads it (the first byte)
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


@dataclass
class TxnIndex:
    """A decoded ``.txnindex``: its entries (a structured array) and what was odd about the file."""

    base_offset: int | None
    array: np.ndarray = field(default_factory=lambda: np.empty(0, np.dtype([("version", ">i2")])))
    trailing_bytes: int = 0
    findings: list[Finding] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.array)

    @property
    def kafka_versions(self) -> np.ndarray:
        """The version of each entry as Kafka reads it: the int16's first (high) byte, signed."""
        v = self.array["version"].astype(np.int64)
        return ((v >> 8) & 0xFF).astype(np.uint8).view(np.int8).astype(np.int64)

    def entries(self) -> Iterator[AbortedTxn]:
        a = self.array
        names = cast(tuple[str, ...], a.dtype.names)  # a structured array
        for row in zip(self.kafka_versions.tolist(), *(a[n].tolist() for n in names[1:])):
            yield AbortedTxn(*row)


def decode(data: bytes, base_offset: int | None = None) -> TxnIndex:
    """Decode a ``.txnindex``; with ``base_offset`` (the segment's) Kafka's sanity check runs too."""
    arr, trailing = decode_entries(data, ENTRY)
    idx = TxnIndex(base_offset, arr, trailing)
    if trailing:
        idx.findings.append(finding("INDEX_PARTIAL_ENTRY", f"{trailing} bytes of a partial entry at the end (Kafka "
                                                           "ignores them)", position=len(arr) * ENTRY_SIZE,
                                    trailing_bytes=trailing))
    version = arr["version"].astype(np.int64)
    read_as = idx.kafka_versions
    first, last = arr["first_offset"].astype(np.int64), arr["last_offset"].astype(np.int64)
    prev = np.concatenate(([np.iinfo(np.int64).min], last[:-1])) if len(arr) else last
    idx.findings += first_of(read_as > CURRENT_VERSION, "TXN_INDEX_BAD_VERSION",
                             "with a version Kafka refuses (it stops reading the index)", ENTRY_SIZE, _WHAT,
                             version=version, kafka_version=read_as)
    idx.findings += first_of((read_as <= CURRENT_VERSION) & (version != CURRENT_VERSION), "TXN_INDEX_VERSION_QUIRK",
                             "whose int16 version is not 0 but whose first byte, all Kafka reads, passes",
                             ENTRY_SIZE, _WHAT, version=version)
    idx.findings += first_of(first > last, "TXN_INDEX_BAD_RANGE", "whose first offset is after its last offset",
                             ENTRY_SIZE, _WHAT, first_offset=first, last_offset=last)
    idx.findings += first_of(last <= prev, "TXN_INDEX_NOT_INCREASING",
                             "whose last offset does not exceed the previous entry's", ENTRY_SIZE, _WHAT,
                             last_offset=last)
    if base_offset is not None:
        # TransactionIndex.sanityCheck: a failure makes Kafka recover the segment
        idx.findings += first_of(last < base_offset, "TXN_INDEX_BEFORE_SEGMENT",
                                 f"whose last offset is below the segment's base offset {base_offset}", ENTRY_SIZE,
                                 _WHAT, last_offset=last)
    return idx


def encode(entries: Iterable[Mapping[str, int]]) -> bytes:
    """Entries (mappings of the entry's fields, ``version`` optional) as a ``.txnindex``."""
    return b"".join(ENTRY.build({"version": CURRENT_VERSION, **e}) for e in entries)
