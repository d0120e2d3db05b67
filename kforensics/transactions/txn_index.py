"""The aborted transactions a segment's log implies, against its ``.txnindex`` (``TransactionIndex``).

A read_committed fetch returns, besides the records, the aborted transactions
overlapping them, read from the ``.txnindex`` files (``LogSegment.collectAbortedTxns``);
the consumer drops a producer's records inside an aborted range and nothing
else (``CompletedFetch.nextFetchedRecord``, 3.8.0).  So an ABORT the index
lacks delivers aborted records as if committed, and an entry no ABORT backs
hides that producer's records in its range.  Kafka writes the entry when the
ABORT marker is appended (``LogSegment.updateTxnIndex``) and rebuilds the index
only when it recovers the segment.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, finding
from ..formats.txn_index import TxnIndex
from .model import AbortedRange


def compare_txn_index(aborts: list[AbortedRange], abort_markers: set[tuple[int, int]], index: TxnIndex | None,
                      file: str | None, end_offset: int | None = None) -> Iterator[Finding]:
    """Findings for one segment: ``aborts`` (non-empty aborted transactions whose marker is in it),
    ``abort_markers`` (every ABORT marker in it, as (producer id, offset)) and its decoded ``.txnindex``
    (None: no index file, which Kafka reads as no entries).  Sets each range's ``in_txn_index``."""
    entries = {}
    for entry in index.entries() if index is not None else ():
        if end_offset is None or entry.last_offset < end_offset:
            entries[(entry.producer_id, entry.last_offset)] = entry
    where = _txn_index_name(file) if file else None
    for ar in aborts:
        e = entries.pop((ar.producer_id, ar.last_offset), None)
        ar.in_txn_index = e is not None
        if e is None:
            yield finding(
                "TXN_INDEX_MISSING_ABORT",
                f"the transaction of producer {ar.producer_id} aborted at offset {ar.last_offset} (from "
                f"{ar.first_offset}) is not in the segment's .txnindex"
                + ("" if index is not None else " (there is no .txnindex file)")
                + ": read_committed consumers receive its records as if committed", file=where,
                producer_id=ar.producer_id, first_offset=ar.first_offset, last_offset=ar.last_offset,
                txn_index_file=index is not None)
        elif (e.first_offset, e.last_stable_offset) != (ar.first_offset, ar.last_stable_offset):
            yield finding(
                "TXN_INDEX_ENTRY_DIFFERS",
                f"the .txnindex entry of producer {ar.producer_id}'s abort at offset {ar.last_offset} says first "
                f"offset {e.first_offset} and last stable offset {e.last_stable_offset}; the log gives "
                f"{ar.first_offset} and {ar.last_stable_offset}", file=where, producer_id=ar.producer_id,
                last_offset=ar.last_offset, index_first_offset=e.first_offset, log_first_offset=ar.first_offset,
                index_last_stable_offset=e.last_stable_offset, log_last_stable_offset=ar.last_stable_offset)
    for (pid, last), e in sorted(entries.items(), key=lambda kv: kv[0][1]):
        if (pid, last) in abort_markers:
            continue  # the ABORT is there; its data is gone (retention, compaction) or before what was read
        yield finding(
            "TXN_INDEX_UNKNOWN_ABORT",
            f".txnindex lists an aborted transaction of producer {pid} over offsets {e.first_offset}-{last} with no "
            "ABORT marker at its last offset: read_committed consumers drop that producer's records in the range",
            file=where, producer_id=pid, first_offset=e.first_offset, last_offset=last)


def _txn_index_name(log_file: str) -> str:
    return log_file[: -len(".log")] + ".txnindex" if log_file.endswith(".log") else log_file + ".txnindex"
