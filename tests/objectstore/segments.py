"""A large, valid segment, written fast: one batch built as Kafka lays it out, repeated with its base offset
moved on (the CRC-32C of a v2 batch covers the bytes from its attributes on, not its base offset)."""

from __future__ import annotations

import random
import struct
from pathlib import Path

from kforensics.formats.record_batch import RecordData, build_batch

RECORDS = 64
VALUE = 16 << 10  # bytes per record value: a batch of about 1 MiB


def batch_template() -> bytes:
    """One batch of RECORDS records of VALUE random bytes each (the same bytes every time: seeded)."""
    rnd = random.Random(0)
    return build_batch([RecordData(offset=i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i,
                                   value=rnd.randbytes(VALUE)) for i in range(RECORDS)], partition_leader_epoch=0)


def write_log_dir(root: Path, size: int, topic: str = "big") -> Path:
    """A log dir ``root`` with one partition ``topic-0`` whose segment holds about ``size`` bytes of batches."""
    part = root / f"{topic}-0"
    part.mkdir(parents=True, exist_ok=True)
    batch = bytearray(batch_template())
    with open(part / "00000000000000000000.log", "wb") as out:
        offset, written = 0, 0
        while written < size:
            struct.pack_into(">q", batch, 0, offset)
            out.write(batch)
            offset += RECORDS
            written += len(batch)
    return root


def renumbered(batch: bytes, count: int, first_offset: int = 0) -> bytes:
    """``count`` copies of ``batch`` one after another, each with the base offset that follows the one before."""
    out = bytearray()
    b = bytearray(batch)
    for i in range(count):
        struct.pack_into(">q", b, 0, first_offset + i * RECORDS)
        out += b
    return bytes(out)
