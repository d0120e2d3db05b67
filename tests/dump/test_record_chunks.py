"""The dump's chunked path (records a chunk of rows at a time, small batches decoded in groups) says what the
per-record path says, character for character, findings included.

The per-record path's lines are the ones the golden transcripts and the oracle comparisons hold against
kafka-dump-log and Kafka's reader (tests/cli/test_text_outputs.py, tests/dump/test_dump_text.py); here every
kind of batch the chunked path treats differently is put through both: grouped and alone, compressed, with
headers (rendered by the per-record path inside a chunk), damaged (decoded alone again, so its findings are the
per-batch decoder's), and one of more records than a group takes.
"""

from __future__ import annotations

import functools

import pytest

from kforensics.cli.dump import _record_json
from kforensics.cli.dump_text import batch_line, record_chunk_json, record_chunk_lines, record_line
from kforensics.cli.json_out import dumps
from kforensics.dump.segment import BatchEvent, DumpOptions, RecordChunkEvent, SegmentDump, dump_segment
from kforensics.formats.record_batch import RecordData, build_batch, encode_batch, encode_record
from kforensics.serialize import to_jsonable

TS = 1_700_000_000_000


def _segment(tmp_path):
    recs = [RecordData(0, TS, b"k\x00\x1b", "välue \u2028".encode()), RecordData(1, TS + 5, None, b"\xff\xfe"),
            RecordData(2, TS - 3, b"", None)]
    parts = [
        build_batch(recs, producer_id=4, producer_epoch=1, base_sequence=2147483646),
        build_batch([RecordData(3 + i, TS + i, b"k%d" % i, b"v" * i) for i in range(10)], codec=3),
        build_batch([RecordData(13, TS, b"h", b"x", [("trace", b"1"), ("\x07bell", None)]),
                     RecordData(14, TS, b"plain", b"y")], codec=4),
        build_batch([RecordData(15, TS, b"a", b"b"), RecordData(16, TS, b"c", b"d")], log_append_time=TS + 99,
                    codec=1),
        # offsets that do not increase: the per-batch decoder's finding
        build_batch([RecordData(17, TS, b"a", b"1"), RecordData(17, TS, b"b", b"2")], base_offset=17,
                    last_offset=18),
        # a count above the records present
        encode_batch(b"".join(encode_record(RecordData(19 + i, TS), 19, TS) for i in range(2)), base_offset=19,
                     last_offset_delta=2, records_count=3, base_timestamp=TS, max_timestamp=TS),
        build_batch([RecordData(22 + i, TS + i, None, b"%d" % i) for i in range(5000)]),  # more than a group's
        build_batch([RecordData(5022, TS, b"z", b"\t")], codec=2),
    ]
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"".join(parts) + b"\x00\x00\x00")
    return seg


def _render(seg, chunks: bool, print_data: bool, fmt: str, skip: bool = False):
    result = SegmentDump(str(seg), None)  # type: ignore[arg-type]
    out = []
    for ev in dump_segment(str(seg), DumpOptions(deep=True, print_data=print_data, chunks=chunks), result):
        if isinstance(ev, BatchEvent):
            out.append(batch_line(ev.entry) + "\n")
        elif isinstance(ev, RecordChunkEvent):
            if fmt == "text":
                out += record_chunk_lines(ev.entry, ev.records, print_data, skip)
            else:
                out += record_chunk_json(ev.entry, ev.records, print_data, dumps(str(seg)),
                                         functools.partial(_record_json, str(seg), ev.entry, print_data=print_data))
        elif fmt == "text":
            out.append(record_line(ev.entry, ev.record, print_data, skip_metadata=skip) + "\n")
        else:
            out.append(_record_json(str(seg), ev.entry, ev.record, print_data) + "\n")
    return "".join(out), [to_jsonable(f) for f in result.findings]


@pytest.mark.parametrize("fmt,print_data,skip", [("text", False, False), ("text", True, False), ("text", True, True),
                                                 ("json", False, False), ("json", True, False)])
def test_chunked_records_are_the_per_record_paths(tmp_path, fmt, print_data, skip):
    seg = _segment(tmp_path)
    fast, fast_findings = _render(seg, True, print_data, fmt, skip)
    slow, slow_findings = _render(seg, False, print_data, fmt, skip)
    assert fast.count("\n") > 5000 and fast == slow
    assert {f["code"] for f in slow_findings} >= {"RECORD_OFFSETS_NOT_INCREASING", "RECORD_DECODE_ERROR"}
    assert fast_findings == slow_findings
