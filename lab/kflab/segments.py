"""An independent reader of the record ids in a partition directory (uncompressed v2 batches only).

It is the lab's own ruler for what a replica holds before and after a restart, so that the
comparison does not use kforensics' decoder to judge kforensics.  The workload writes with
compression off, so every record's value is in clear.
"""

from __future__ import annotations

import struct
from pathlib import Path

HEADER = 61


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varint at pos -> (value, next pos)."""
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), pos


def _records(body: bytes, base: int, count: int) -> list[tuple[int, bytes | None]]:
    """The records of a batch's body, as far as they lie in it: a walk that would run past the body's end is damage
    (a flipped length or varint byte; Kafka refuses the batch by its CRC before reading a record), so the records
    from there on are not read (the lab's crc-flip run crc-flip-2.8.2-s315412625 ended its ruler there)."""
    out: list[tuple[int, bytes | None]] = []
    try:
        _walk(body, base, count, out)
    except IndexError:
        pass
    return out


def _walk(body: bytes, base: int, count: int, out: list[tuple[int, bytes | None]]) -> None:
    pos = 0
    for _ in range(count):
        length, pos = _varint(body, pos)
        rec_end = pos + length
        pos += 1  # attributes
        _, pos = _varint(body, pos)  # timestamp delta
        delta, pos = _varint(body, pos)
        klen, pos = _varint(body, pos)
        pos += max(klen, 0)
        vlen, pos = _varint(body, pos)
        if rec_end > len(body) or pos + max(vlen, 0) > rec_end:
            raise IndexError("a record past its batch's end")
        value = body[pos : pos + vlen] if vlen >= 0 else None
        out.append((base + delta, value))
        pos = rec_end


def _in_batch(records: list[tuple[int, bytes | None]], base: int, last: int) -> list[tuple[int, bytes | None]]:
    """The records whose offset lies in their batch's [base, last]: a delta outside it is damage in the batch
    (a flipped byte; Kafka refuses such a batch by its CRC before reading a record, DefaultRecordBatch
    .ensureValid), and an offset read from it would be invented, not held."""
    return [r for r in records if base <= r[0] <= last]


def read_segment(path: Path) -> tuple[list[dict], int]:
    """Batches of one .log file, as far as whole batches go -> (batches, valid bytes)."""
    data = Path(path).read_bytes()
    pos, batches = 0, []
    while pos + HEADER <= len(data):
        base, length, epoch, magic = struct.unpack_from(">qiib", data, pos)
        end = pos + 12 + length
        if magic != 2 or length < HEADER - 12 or end > len(data):
            break
        attrs, last_delta = struct.unpack_from(">hi", data, pos + 21)
        count = struct.unpack_from(">i", data, pos + 57)[0]
        control, txn = bool(attrs & 0x20), bool(attrs & 0x10)
        recs = [] if control or attrs & 0x07 else _records(data[pos + HEADER : end], base, count)
        recs = _in_batch(recs, base, base + last_delta)
        batches.append(
            {
                "base": base,
                "last": base + last_delta,
                "epoch": epoch,
                "control": control,
                "txn": txn,
                "position": pos,
                "size": end - pos,
                "records": recs,
            }
        )
        pos = end
    return batches, pos


def record_id(value: bytes | None) -> str | None:
    """The workload's id (first four '|' fields) of a value, or None for other records."""
    if not value:
        return None
    parts = value.split(b"|", 4)
    return b"|".join(parts[:4]).decode(errors="replace") if len(parts) >= 4 else None


def partition_content(pdir: Path) -> dict:
    """offset -> id (data records) or 'ctrl@epoch' (control batches) of one partition dir, and segment sizes."""
    content, sizes, epochs = {}, {}, {}
    for seg in sorted(Path(pdir).glob("*.log")):
        sizes[seg.name] = seg.stat().st_size
        batches, _ = read_segment(seg)
        for b in batches:
            epochs[b["base"]] = b["epoch"]
            if b["control"]:
                content[b["base"]] = f"ctrl@{b['epoch']}"
            for off, v in b["records"]:
                content[off] = record_id(v) or f"other@{off}"
    return {"records": content, "sizes": sizes, "batch_epochs": epochs}


def epoch_checkpoint(pdir: Path) -> list[tuple[int, int]]:
    """Entries [epoch, start offset] of leader-epoch-checkpoint (Kafka's own text file)."""
    p = Path(pdir) / "leader-epoch-checkpoint"
    if not p.exists():
        return []
    lines = p.read_text().split("\n")
    out = []
    for ln in lines[2:]:
        f = ln.split()
        if len(f) == 2:
            out.append((int(f[0]), int(f[1])))
    return out


def broker_partitions(log_dir: Path, topics: list[str]) -> dict[str, Path]:
    """'topic-p' -> partition dir, for the given topics (deleted/future dirs skipped)."""
    out = {}
    for d in Path(log_dir).iterdir():
        if d.is_dir() and "." not in d.name and "-" in d.name:
            t, _, p = d.name.rpartition("-")
            if t in topics and p.isdigit():
                out[d.name] = d
    return out
