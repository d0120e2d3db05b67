"""The dump's fast paths say what the per-record path says, byte for byte, findings included: lines written by the
native library (``kforensics/dump/native_lines.py``, for a command writing to a binary stdout) and large zstd
records sections decompressed a window at a time (``kforensics/dump/streamed_section.py``).

The per-record path's lines are the ones the golden transcripts and the oracle comparisons hold against
kafka-dump-log and Kafka's reader (tests/cli/test_text_outputs.py, tests/dump/test_dump_text.py).  Kafka reads a
compressed batch as a stream and, after the declared count, asks for one byte more
(``DefaultRecordBatch.compressedIterator`` and ``ensureNoneRemaining``, clients/.../record/DefaultRecordBatch.java,
tag 3.9.0-rc3): a batch with records left over, one with too few, one cut inside a record and one whose frame does not
decompress are here, with windows a few bytes long so that records are cut at every window's end.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from kforensics.cli import dump as cli_dump
from kforensics.dump import batch_groups, native_lines, segment, streamed_section
from kforensics.findings import DecodeError
from kforensics.formats.compression import compress, decompress
from kforensics.formats.record_batch import (
    MAGIC,
    RecordData,
    attributes_of,
    encode_batch,
    encode_record,
)
from kforensics.serialize import to_jsonable

from .test_batch_groups import _segment as mixed_segment

TS = 1_700_000_000_000
CASES = [("text", False, False), ("text", True, False), ("text", True, True), ("json", False, False),
         ("json", True, False)]

pytestmark = pytest.mark.skipif(native_lines.library() is None,
                                reason="no native record lines here (no C compiler or no OpenSSL libcrypto)")


def _zstd_batch(records: bytes, base: int, count: int, last_delta: int | None = None) -> bytes:
    return encode_batch(compress(4, records, magic=MAGIC), base_offset=base,
                        last_offset_delta=count - 1 if last_delta is None else last_delta, records_count=count,
                        base_timestamp=TS, max_timestamp=TS + 9, attributes=attributes_of(4))


def _streamed_segment(tmp_path):
    recs = [RecordData(i, TS + i % 7, None if i % 11 == 0 else b"k%d" % i,
                       "\u00fc".encode() if i % 97 == 0 else (b'q"\\' if i % 5 == 0 else b"v" * (i % 40)),
                       [("h", b"1")] if i % 301 == 0 else []) for i in range(1500)]
    body = b"".join(encode_record(r, 0, TS) for r in recs)
    two = b"".join(encode_record(RecordData(3000 + i, TS), 3000, TS) for i in range(2))
    parts = [
        _zstd_batch(body, 0, 1500),
        _zstd_batch(two, 3000, 3),  # a record short: the section ends first
        _zstd_batch(two, 3003, 1, 1),  # a record left over (Incorrect declared batch size)
        _zstd_batch(two[:-2], 3005, 2),  # the last record cut
        _zstd_batch(b"".join(encode_record(RecordData(3007, TS, b"a", b"b"), 3007, TS) for _ in range(2)), 3007, 2),
        bytes(bytearray(_zstd_batch(body[:500], 3009, 40))[:90]) + b"\xee" * 20  # not zstd past its header
        + _zstd_batch(body[:500], 3009, 40)[110:],
        _zstd_batch(body[:300], 4000, 20),
    ]
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"".join(parts))
    return seg


def _cli(seg, monkeypatch, fmt, print_data, skip, *, fast: bool, binary: bool):
    """The dump command's output (as bytes) and findings: runs and chunks rendered from columns (``fast``) or every
    record alone, written to a binary stdout (``binary``: the native lines) or to text."""
    real = segment.DumpOptions
    monkeypatch.setattr(batch_groups, "MIN_RUN_RECORDS", 0)
    monkeypatch.setattr(segment, "DumpOptions",
                        lambda **kw: real(**{**kw, "chunks": fast and kw["chunks"], "groups": fast}))
    buf = io.BytesIO()
    out = io.TextIOWrapper(buf, encoding="utf-8", newline="\n") if binary else io.StringIO()
    findings = cli_dump._dump_batches(str(seg), {"deep": True, "print_data": print_data}, fmt, skip, out)
    out.flush()
    monkeypatch.undo()
    text = buf.getvalue() if binary else out.getvalue().encode("utf-8")
    return text, [to_jsonable(f) for f in findings]


@pytest.mark.parametrize("fmt,print_data,skip", CASES)
def test_native_lines_are_the_per_record_paths(tmp_path, monkeypatch, fmt, print_data, skip):
    seg = mixed_segment(tmp_path)
    native, native_findings = _cli(seg, monkeypatch, fmt, print_data, skip, fast=True, binary=True)
    columns, _ = _cli(seg, monkeypatch, fmt, print_data, skip, fast=True, binary=False)
    slow, slow_findings = _cli(seg, monkeypatch, fmt, print_data, skip, fast=False, binary=False)
    assert native.count(b"\n") > 5300
    assert native.splitlines() == slow.splitlines()
    assert native == columns == slow
    assert native_findings == slow_findings


@pytest.mark.parametrize("fmt,print_data,skip", CASES)
def test_streamed_sections_are_the_held_ones(tmp_path, monkeypatch, fmt, print_data, skip):
    seg = _streamed_segment(tmp_path)
    slow, slow_findings = _cli(seg, monkeypatch, fmt, print_data, skip, fast=False, binary=False)
    held, held_findings = _cli(seg, monkeypatch, fmt, print_data, skip, fast=True, binary=True)
    for window in (7, 4096):
        monkeypatch.setattr(streamed_section, "STREAM_FROM", 0)
        monkeypatch.setattr(streamed_section, "WINDOW", window)
        monkeypatch.setattr(streamed_section, "_PIECE", window)  # windows of a few bytes: records cut at each end
        streamed, streamed_findings = _cli(seg, monkeypatch, fmt, print_data, skip, fast=True, binary=True)
        assert streamed.splitlines() == slow.splitlines()
        assert streamed == held == slow
        assert streamed_findings == held_findings == slow_findings
    codes = {f["code"] for f in slow_findings}
    assert {"RECORD_DECODE_ERROR", "RECORD_OFFSETS_NOT_INCREASING", "DECOMPRESSION_FAILED"} <= codes
    messages = " ".join(f["message"] for f in slow_findings)
    assert "Incorrect declared batch size" in messages or "ends before" in messages


def test_a_streamed_bomb_is_the_held_ones_finding():
    section = compress(4, bytes(5000), magic=MAGIC)
    with pytest.raises(DecodeError) as held:
        decompress(4, section, magic=MAGIC, max_output=1000)
    with pytest.raises(DecodeError) as streamed:
        streamed_section.check_stream(section, 1000)
    assert streamed.value.finding == held.value.finding
    with pytest.raises(DecodeError) as held:
        decompress(4, section[:-3] + b"\x01\x02\x03", magic=MAGIC, max_output=1 << 20)
    with pytest.raises(DecodeError) as streamed:
        streamed_section.check_stream(section[:-3] + b"\x01\x02\x03", 1 << 20)
    assert streamed.value.finding == held.value.finding


def test_a_streamed_section_is_held_a_window_at_a_time(tmp_path, monkeypatch):
    """No window holds much more than asked for (a read's piece more): the section is never held whole."""
    body = b"".join(encode_record(RecordData(i, TS, b"k", b"v" * 40), 0, TS) for i in range(20000))
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(_zstd_batch(body, 0, 20000))
    monkeypatch.setattr(streamed_section, "STREAM_FROM", 0)
    monkeypatch.setattr(streamed_section, "WINDOW", 512)
    largest = rows = 0
    for ev in segment.dump_segment(str(seg), segment.DumpOptions(deep=True, chunks=True)):
        if isinstance(ev, segment.RecordChunkEvent):
            for payload, chunk in ev.records.chunks():
                largest, rows = max(largest, len(payload)), rows + len(chunk)
            assert not ev.records.findings
    assert rows == 20000
    assert 0 < largest <= 512 + (1 << 16) < len(body) // 4


def test_a_library_cut_short_is_built_again(tmp_path, monkeypatch):
    """A library in the cache that is not whole (a partial copy, a crash while writing) is never loaded: it is
    removed and built again."""
    from kforensics.log.kernels import native

    monkeypatch.setenv("KFORENSICS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(native_lines, "_LOADED", [])
    lib = native_lines.library()
    assert lib is not None and lib.path.startswith(str(tmp_path / "cache"))
    data = open(lib.path, "rb").read()
    with open(lib.path, "wb") as fh:
        fh.write(data[: len(data) // 2])
    monkeypatch.setattr(native_lines, "_LOADED", [])
    again = native_lines.library()
    assert again is not None and again.path == lib.path
    assert native.unsealed(open(again.path, "rb").read()) is None


@pytest.mark.parametrize("fmt,print_data,skip", [("text", True, False), ("json", True, False)])
def test_without_a_compiler_the_lines_are_pyarrows(tmp_path, monkeypatch, fmt, print_data, skip):
    """No C compiler (and no library built before): the runs are formatted by pyarrow, the same bytes."""
    from kforensics.log.kernels import native

    monkeypatch.setenv("KFORENSICS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(native_lines, "_LOADED", [])
    monkeypatch.setattr(native, "compiler", lambda: None)
    assert native_lines.library() is None
    seg = mixed_segment(tmp_path)
    fallback, fallback_findings = _cli(seg, monkeypatch, fmt, print_data, skip, fast=True, binary=True)
    monkeypatch.setattr(native_lines, "_LOADED", [])
    slow, slow_findings = _cli(seg, monkeypatch, fmt, print_data, skip, fast=False, binary=False)
    assert fallback == slow and fallback_findings == slow_findings


def test_numbers_are_written_as_python_writes_them():
    """Every width of decimal, both signs and the longs' ends, as ``str(int)``."""
    lib = native_lines.library()
    values = [0, 1, 9, 10, 99, 100, 101, 999, 1000, 12345, 10**9, 2**31 - 1, -1, -9, -10, -100, -(2**31), 10**18,
              2**63 - 1, -(2**63), -(2**63) + 1, *[10**k - 1 for k in range(1, 19)], *[10**k for k in range(19)]]
    n = len(values)
    col = np.array(values, dtype=np.int64)
    lines = native_lines.record_lines(lib, [col, col, col, 0, 0, -1, 0, -1, 0, 1, 0], n, b"", 0)
    text = bytes(lines.data[: lines.size]).decode().splitlines()
    assert text == [f"| offset: {v} LogAppendTime: {v} keySize: -1 valueSize: -1 sequence: {v} headerKeys: []"
                    for v in values]


def test_a_library_that_does_not_build_leaves_the_lines_to_pyarrow(tmp_path, monkeypatch, caplog):
    """A compiler that fails: one warning line, and no native lines (the dump goes on with pyarrow's)."""
    monkeypatch.setenv("KFORENSICS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(native_lines, "_LOADED", [])
    monkeypatch.setattr(native_lines, "SOURCE", native_lines.SOURCE + "\nthis is not C\n")
    assert native_lines.library() is None
    assert "native record lines not used" in caplog.text
