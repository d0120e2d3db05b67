"""Runs of small batches rendered a column at a time (``BatchGroupEvent``, ``cli/dump_columns.py``) give what the
per-record path gives, character for character: the batch lines and objects, the record lines and objects, the
findings and the end-of-file report.

The per-record path's lines are the ones the golden transcripts and the oracle comparisons hold against
kafka-dump-log and Kafka's reader (tests/cli/test_text_outputs.py, tests/dump/test_dump_text.py).  The segment
mixes what a run takes with everything that breaks one (and batches of hundreds of records, whose chunks are
formatted from columns too): keys and values that are not printable ASCII (their text
is the per-record path's function's), JSON's quote and backslash, null and empty keys and values, LogAppendTime,
transactional and delete-horizon batches, a stored CRC that does not match, sequences that wrap, an empty batch,
offsets that jump, a batch ending at Long.MAX_VALUE, headers, a control batch, records that do not decode, a
payload that does not decompress, more records than a run takes, and batches found after a zero gap.
"""

from __future__ import annotations

import io
import struct

import pytest

from kforensics.cli import dump as cli_dump
from kforensics.dump import batch_groups, segment
from kforensics.dump.batch_groups import BatchGroup, runs
from kforensics.formats.record_batch import (
    DELETE_HORIZON_BIT,
    RecordData,
    build_batch,
    encode_batch,
    encode_record,
)
from kforensics.log.segment_reader import SegmentReader
from kforensics.serialize import to_jsonable

TS = 1_700_000_000_000
MAX_LONG = (1 << 63) - 1


def _bad_crc(raw: bytes) -> bytes:
    crc = struct.unpack_from(">I", raw, 17)[0]
    return raw[:17] + struct.pack(">I", crc ^ 1) + raw[21:]


def _segment(tmp_path):
    horizon = b"".join(encode_record(RecordData(40 + i, TS + i, b"dk", b"dv"), 40, TS) for i in range(2))
    bad_lz4 = bytearray(build_batch([RecordData(60 + i, TS, b"x" * 50, b"y" * 50) for i in range(3)], codec=3,
                                    base_offset=60))
    bad_lz4[70:90] = b"\xee" * 20  # inside the lz4 frame: does not decompress (a finding, the batch on its own)
    parts = [
        build_batch([RecordData(0, TS, b"k\x00\x1b", "välue \u2028".encode()), RecordData(1, TS + 5, None, b"\xff"),
                     RecordData(2, TS - 3, b"", None)], producer_id=4, producer_epoch=1, base_sequence=2147483646),
        build_batch([RecordData(3 + i, TS + i, b'q"uote', b"back\\slash " + b"v" * i) for i in range(10)], codec=3,
                    transactional=True, producer_id=9, producer_epoch=2, base_sequence=5, partition_leader_epoch=7),
        build_batch([RecordData(13, TS, None, b"la"), RecordData(14, TS + 1, b"k", b"del\x7f")],
                    log_append_time=TS + 99, codec=4),
        encode_batch(horizon, base_offset=40, last_offset_delta=1, records_count=2, base_timestamp=TS,
                     max_timestamp=TS + 1, attributes=DELETE_HORIZON_BIT),  # offsets jump from 14 to 40
        _bad_crc(build_batch([RecordData(42, TS, b"c", b"crc")], codec=1)),
        build_batch([], base_offset=43, last_offset=44),  # empty (compacted away)
        build_batch([RecordData(45, TS, b"h", b"x", [("trace", b"1")]), RecordData(46, TS, b"p", b"y")]),
        build_batch([RecordData(47, TS, b"a", b"1"), RecordData(47, TS, b"b", b"2")], base_offset=47,
                    last_offset=48),  # offsets that do not increase: the per-batch decoder's finding
        encode_batch(b"".join(encode_record(RecordData(49 + i, TS), 49, TS) for i in range(2)), base_offset=49,
                     last_offset_delta=2, records_count=3, base_timestamp=TS, max_timestamp=TS),  # a record short
        bytes(bad_lz4),
        build_batch([RecordData(63 + i, TS + i, b"%d" % i, b"%d" % i) for i in range(5000)], codec=3),
        # a chunk of rows formatted from columns, with headers (those lines by the per-record path) and escapes
        build_batch([RecordData(5063 + i, TS + i, b"h%d" % i, "\u00fc\n".encode() if i % 50 == 0 else b'"v"',
                                [("hk", b"1")] if i % 7 == 0 else []) for i in range(300)], codec=4),
        build_batch([RecordData(MAX_LONG - 1, TS, b"m", b"1"), RecordData(MAX_LONG, TS, b"m", b"2")]),
        build_batch([RecordData(7, TS, b"after", b"max")]),  # after Long.MAX_VALUE: non-consecutive
        *[build_batch([RecordData(8 + i, TS, b"s%d" % i, b"t" * i)], codec=2) for i in range(5)],
    ]
    tail = [build_batch([RecordData(100 + i, TS, b"r", b"recovered")]) for i in range(2)]
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"".join(parts) + bytes(64) + b"".join(tail) + b"\x00\x00\x00")
    return seg


def _cli(seg, monkeypatch, groups: bool, fmt: str, print_data: bool, skip: bool, min_run: int = 0):
    """The dump command's output and findings, with runs rendered a column at a time or every record alone."""
    real = segment.DumpOptions
    monkeypatch.setattr(batch_groups, "MIN_RUN_RECORDS", min_run)
    monkeypatch.setattr(segment, "DumpOptions",
                        lambda **kw: real(**{**kw, "chunks": groups and kw["chunks"], "groups": groups}))
    out = io.StringIO()
    findings = cli_dump._dump_batches(str(seg), {"deep": True, "print_data": print_data}, fmt, skip, out)
    monkeypatch.undo()
    return out.getvalue(), [to_jsonable(f) for f in findings]


@pytest.mark.parametrize("fmt,print_data,skip", [("text", False, False), ("text", True, False), ("text", True, True),
                                                 ("json", False, False), ("json", True, False)])
def test_runs_render_as_the_per_record_path(tmp_path, monkeypatch, fmt, print_data, skip):
    seg = _segment(tmp_path)
    fast, fast_findings = _cli(seg, monkeypatch, True, fmt, print_data, skip)
    short, short_findings = _cli(seg, monkeypatch, True, fmt, print_data, skip, min_run=1 << 20)  # batch by batch
    slow, slow_findings = _cli(seg, monkeypatch, False, fmt, print_data, skip)
    assert fast.count("\n") > 5300
    assert fast.splitlines() == slow.splitlines()
    assert fast == short == slow
    assert fast_findings == short_findings
    assert {f["code"] for f in slow_findings} >= {"RECORD_OFFSETS_NOT_INCREASING", "RECORD_DECODE_ERROR",
                                                  "DECOMPRESSION_FAILED", "CRC_MISMATCH"}
    assert fast_findings == slow_findings


def test_what_runs_take(tmp_path):
    """The batches that can be rendered from columns are in runs; the others come on their own (so the test above
    covers both kinds of rendering)."""
    seg = _segment(tmp_path)
    reader = SegmentReader(str(seg))
    alone, grouped = [], []
    for table in reader.tables():
        for item in runs(reader, table.data, 1 << 28):
            if isinstance(item, BatchGroup):
                grouped += item.batches[:, 3].tolist()  # base offsets
                assert len(item.records) == item.first_record[-1] == item.batches[:, 14].sum()
            else:
                alone.append(int(table.data[item, 3]))
    assert {0, 3, 13, 40, 42, 43, 7, 8, 12} <= set(grouped)
    # headers, offsets out of order, a record short, no lz4 frame, 5000 records, Long.MAX_VALUE, recovered
    assert {45, 47, 49, 60, 63, 5063, MAX_LONG - 1, 100, 101} <= set(alone)
    assert not set(alone) & set(grouped)
