"""Reading records back from a replica's evidence: its partition dir, the batches a verdict names, its markers.

Everything goes through the log layer (listings, ``read_entry``, the
streaming segment reader); nothing is opened for writing.  A batch that no
longer frames where the replay found it (the file changed, a cut copy) is a
finding with file and byte, and the reading goes on.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from ..findings import Finding, finding
from ..formats import record_batch
from ..log.log_entry import Batch, read_entry
from ..log.partition import PartitionLog
from ..log.record_types import TIMESTAMP_TYPES, Record
from ..log.records import EntryRecords

_Q = struct.Struct(">qhi")


@dataclass(slots=True)
class ReadRecord:
    """One data record read back with the fields of its batch salvage needs."""

    offset: int
    leader_epoch: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    producer_id: int
    producer_epoch: int
    sequence: int
    transactional: bool
    size_in_bytes: int
    digest: bytes  # 16 bytes: content (key, value, headers) and producer identity (id, epoch, sequence)
    crc_valid: bool = True  # False: its batch fails its CRC (the bytes are not what the producer wrote)


def content_digest(key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]],
                   producer_id: int, producer_epoch: int, sequence: int) -> bytes:
    """What makes two records the same record: key, value, headers (in order) and the producer's id, epoch and
    sequence (all -1 for a producer that is not idempotent).  Lengths are framed, so no two differ only in where
    one field ends."""
    h = hashlib.blake2b(digest_size=16)
    h.update(_Q.pack(producer_id, producer_epoch, sequence))
    for part in (key, value):
        h.update(b"\xff" if part is None else len(part).to_bytes(4, "big") + part)
    h.update(len(headers).to_bytes(4, "big"))
    for k, v in headers:
        kb = k.encode("utf-8", "surrogateescape")
        h.update(len(kb).to_bytes(4, "big") + kb)
        h.update(b"\xff" if v is None else len(v).to_bytes(4, "big") + v)
    return h.digest()


def digest64(d: bytes) -> int:
    """The digest's first 8 bytes as a signed 64-bit integer (for sorted numpy lookups)."""
    return int.from_bytes(d[:8], "big", signed=True)


def batch_records(b: Batch, file: str, findings: list[Finding]) -> Iterator[ReadRecord]:
    """The data records of one entry (none for a control batch), with their data; decoding problems become
    findings and the records decoded before them are kept."""
    attrs = b.attributes
    if b.magic == record_batch.MAGIC and attrs & record_batch.CONTROL_BIT:
        return
    v2 = b.magic == record_batch.MAGIC
    ts_type = (TIMESTAMP_TYPES[bool(attrs & record_batch.TIMESTAMP_TYPE_BIT)] if b.magic >= 1
               else "NoTimestampType")
    pid, pepoch = (b.producer_id, b.producer_epoch) if v2 else (-1, -1)
    txn = bool(v2 and attrs & record_batch.TRANSACTIONAL_BIT)
    epoch = b.partition_leader_epoch if v2 else -1
    entry = EntryRecords(b, with_data=True, file=file)
    valid = b.is_valid
    for r in entry:
        rec = _read_record(r, epoch, ts_type, pid, pepoch, txn if v2 else False)
        rec.crc_valid = valid
        yield rec
    findings.extend(entry.findings)


def _read_record(r: Record, epoch: int, ts_type: str, pid: int, pepoch: int, txn: bool) -> ReadRecord:
    headers = [(h.key, h.value) for h in r.headers]
    seq = r.sequence if pid >= 0 else -1
    return ReadRecord(r.offset, epoch, r.timestamp, ts_type, r.key, r.value, headers, pid, pepoch, seq, txn,
                      r.size_in_bytes, content_digest(r.key, r.value, headers, pid, pepoch, seq))


def read_batch_at(pd: PartitionLog, base: int, last: int, crc: int, position: int, size: int
                  ) -> tuple[Batch, str] | None:
    """The batch the replay found at ``position`` (``size`` bytes) holding offsets ``base..last``, from the
    segment that holds it: the segments named at or below its base offset are tried from the nearest down, and
    a batch is taken only when its offsets and stored CRC are the ones the replay saw."""
    segs = [s for s in pd.sorted_segments() if s.log is not None]
    below = [s for s in segs if s.base_offset <= base]
    for seg in list(reversed(below)) + [s for s in segs if s.base_offset > base]:
        b = read_entry(seg.log, position, size)
        if b is None or b.crc != crc or b.last_offset != last:
            continue
        first = b.base_offset if b.magic == record_batch.MAGIC else None
        if first is not None and first != base:
            continue
        return b, str(seg.log)
    return None


def not_read(pd: PartitionLog | None, broker: int, topic: str, partition: int, base: int, last: int,
             position: int) -> Finding:
    """The finding for a lost batch that could not be read back (its records are not salvaged)."""
    where = pd.path if pd is not None else None
    return finding("SALVAGE_BATCH_NOT_READ", f"broker {broker} {topic}-{partition}: the batch at offsets "
                   f"{base}..{last} (byte {position}) no longer reads back as the replay found it; its records "
                   "are not salvaged", file=where, position=position, broker_id=broker, base_offset=base,
                   last_offset=last)


def control_markers(pd: PartitionLog, from_offset: int, findings: list[Finding]) -> list[tuple[int, int, str]]:
    """``(offset, producer id, COMMIT|ABORT)`` of every transaction marker at or after ``from_offset`` in the
    partition's log, in offset order (only control batches are decoded)."""
    out: list[tuple[int, int, str]] = []
    for seg in pd.sorted_segments():
        if seg.log is None:
            continue
        reader = seg.reader()
        for table in reader.tables():
            for row in table.data.tolist():
                b = Batch(row, None)
                if (b.magic != record_batch.MAGIC or not b.attributes & record_batch.CONTROL_BIT
                        or b.last_offset < from_offset):
                    continue
                full = Batch(row, reader.entry_bytes(b.position, b.size_in_bytes))
                entry = EntryRecords(full, file=str(seg.log))
                for r in entry:
                    kind = (r.control or {}).get("type")
                    if kind in ("COMMIT", "ABORT"):
                        out.append((r.offset, b.producer_id, kind))
                findings.extend(entry.findings)
    out.sort()
    return out
