"""Decompressors reused from batch to batch, and compressed batches decoded many per compiled call.

The expected payloads are the bytes that were compressed (built here with
the codec libraries, as Kafka's producers lay the frames out: a streaming
zstd frame without content size, an LZ4 frame of independent 64 KiB blocks);
the expected findings are the places the damage was put.  Each reuse test
runs a damaged frame and then a good one through the same decompressor: a
context left in a bad state by the first would spoil the second.
"""

from __future__ import annotations

import os

import lz4.frame
import numpy as np
import pytest
import zstandard

from kforensics.findings import DecodeError
from kforensics.formats import record_batch
from kforensics.formats.compression import Decompressor, decompress
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log import record_tables
from kforensics.log.records import EntryRecords, iter_record_tables
from kforensics.log.segment_reader import SegmentReader

LZ4, ZSTD = 3, 4
CAP = 1 << 20


def _zstd(data: bytes) -> bytes:
    c = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    return c.compress(data) + c.flush()


def _lz4(data: bytes) -> bytes:
    return lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                              content_checksum=False, store_size=False)


FRAME = {LZ4: _lz4, ZSTD: _zstd}
PLAIN = b"".join(b'{"event": %d, "user": "u%05d", "payload": "%s"}\n' % (i, i * 7, os.urandom(8).hex().encode())
                 for i in range(200))


def _damaged(codec: int) -> bytes:
    frame = bytearray(FRAME[codec](PLAIN))
    frame[12:40] = bytes(range(28))  # the first block's content
    return bytes(frame)


@pytest.mark.parametrize("codec", [LZ4, ZSTD])
def test_a_good_frame_after_a_damaged_one_decompresses_whole(codec):
    d = Decompressor()
    with pytest.raises(DecodeError) as bad:
        d.decompress(codec, _damaged(codec), magic=2, max_output=CAP)
    assert bad.value.code == "DECOMPRESSION_FAILED"
    # the same finding as a decompressor built for this payload alone
    with pytest.raises(DecodeError) as alone:
        decompress(codec, _damaged(codec), magic=2, max_output=CAP)
    assert (bad.value.code, bad.value.message) == (alone.value.code, alone.value.message)
    assert bytes(d.decompress(codec, FRAME[codec](PLAIN), magic=2, max_output=CAP)) == PLAIN
    # and again after a frame cut short (the context stops mid-frame)
    cut = FRAME[codec](PLAIN)[:-9]
    got_cut = bytes(d.decompress(codec, cut, magic=2, max_output=CAP)) if codec == ZSTD else None
    if codec == LZ4:
        with pytest.raises(DecodeError):
            d.decompress(codec, cut, magic=2, max_output=CAP)
    else:  # the streaming reader gives what the cut frame holds whole, as decompress() does
        assert got_cut == bytes(decompress(codec, cut, magic=2, max_output=CAP))
    assert bytes(d.decompress(codec, memoryview(FRAME[codec](PLAIN)), magic=2, max_output=CAP)) == PLAIN


def test_a_payload_one_call_does_not_settle_goes_the_long_way():
    d = Decompressor()
    # two zstd frames back to back (read across frames), bytes after an LZ4 frame (ignored, as Kafka's stream
    # stops at the end mark), and an LZ4 ratio past the first output guess
    two = _zstd(PLAIN) + _zstd(PLAIN[:100])
    assert d.one_call(ZSTD, two, CAP) is None
    assert bytes(d.decompress(ZSTD, two, magic=2, max_output=CAP)) == PLAIN + PLAIN[:100]
    assert bytes(d.decompress(LZ4, _lz4(PLAIN) + b"\0\0\0", magic=2, max_output=CAP)) == PLAIN
    zeros = bytes(600_000)
    assert d.one_call(LZ4, _lz4(zeros), CAP) is None
    assert bytes(d.decompress(LZ4, _lz4(zeros), magic=2, max_output=CAP)) == zeros


@pytest.mark.parametrize("codec", [LZ4, ZSTD])
def test_the_cap_holds_on_the_one_call_path(codec):
    d = Decompressor()
    big = bytes(200_000)
    with pytest.raises(DecodeError) as e:
        d.decompress(codec, FRAME[codec](big), magic=2, max_output=100_000)
    assert e.value.code == "DECOMPRESSION_BOMB"
    assert bytes(d.decompress(codec, FRAME[codec](big), magic=2, max_output=200_000)) == big


def _records(base: int, n: int, tag: bytes) -> list[RecordData]:
    return [RecordData(base + i, 1_700_000_000_000 + i, b"k%d" % (base + i), tag + b" %d" % i) for i in range(n)]


def _broken_payload(batch: bytes) -> bytes:
    """The batch with its compressed section damaged and its CRC made over the damage."""
    raw = bytearray(batch)
    h = record_batch.HEADER_SIZE
    raw[h + 10 : h + 30] = bytes(range(20))
    f = record_batch.HEADER["crc"]
    raw[f.offset : f.offset + f.size] = record_batch.compute_crc(bytes(raw)).to_bytes(4, "big")
    return bytes(raw)


def _claims_more(batch: bytes) -> bytes:
    """The batch with a records count one above what it holds, CRC made over the change (Kafka's iterator
    throws when the records section ends first)."""
    raw = bytearray(batch)
    f = record_batch.HEADER["records_count"]
    n = int.from_bytes(raw[f.offset : f.offset + f.size], "big")
    raw[f.offset : f.offset + f.size] = (n + 1).to_bytes(4, "big")
    c = record_batch.HEADER["crc"]
    raw[c.offset : c.offset + c.size] = record_batch.compute_crc(bytes(raw)).to_bytes(4, "big")
    return bytes(raw)


def test_compressed_batches_decoded_together_give_each_batchs_records_and_findings_in_batch_order(tmp_path,
                                                                                                 monkeypatch):
    monkeypatch.setattr(record_tables, "GROUP_BYTES", 1500)  # several groups, a group flushed between findings
    batches, want, damaged, short = [], [], [], []
    offset = 0
    for k in range(40):
        codec = (LZ4, ZSTD)[k % 2]
        n = 1 + k % 10
        recs = _records(offset, n, b"value of batch %d" % k)
        raw = build_batch(recs, codec=codec)
        if k in (7, 8, 21):
            raw = _broken_payload(raw)
            damaged.append(sum(len(b) for b in batches))
        elif k == 14:  # its records decode, then the section ends before the count it claims
            raw = _claims_more(raw)
            short.append((sum(len(b) for b in batches), n))
            want += [(r.offset, r.timestamp, r.key, r.value) for r in recs]
        else:
            want += [(r.offset, r.timestamp, r.key, r.value) for r in recs]
        batches.append(raw)
        offset += n
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(b"".join(batches))
    got, errors = [], []
    for t, rt in iter_record_tables(SegmentReader(p)):
        errors += rt.errors
        pos = t["position"][rt.batch_index] + record_batch.HEADER_SIZE
        for row, section, off, ts in zip(rt.data.tolist(), pos.tolist(), rt.offset.tolist(), rt.timestamp.tolist()):
            got.append((off, ts, row, section))
    # each at its batch, in file order, as decoding batch by batch gives them
    failed = "DECOMPRESSION_FAILED"
    assert [e.code for e in errors] == [failed, failed, "RECORD_DECODE_ERROR", failed]
    assert [e.position for e in errors] == damaged[:2] + [short[0][0]] + damaged[2:]
    assert errors[2].facts["record_index"] == short[0][1]
    assert [(off, ts) for off, ts, _, _ in got] == [(o, t) for o, t, _, _ in want]
    # key and value positions are relative to each batch's decompressed records section: check them through
    # the per-batch decoder, which decompresses each batch alone
    by_offset = _values_by_batch(p)
    for (off, _ts, row, _section), (_o, _t, key, value) in zip(got, want):
        payload = by_offset[off]
        cols = {name: row[i] for i, name in enumerate(_rcols())}
        assert payload[cols["key_pos"] : cols["key_pos"] + cols["key_len"]] == key
        assert payload[cols["value_pos"] : cols["value_pos"] + cols["value_len"]] == value


def _rcols() -> tuple[str, ...]:
    from kforensics.log import kernels
    return kernels.get().RECORD_COLUMNS


def _values_by_batch(p) -> dict[int, bytes]:
    """Each record's offset -> its batch's decompressed records section (decompressed alone)."""
    out = {}
    for b in SegmentReader(p).batches():
        try:
            payload = bytes(decompress(b.attributes & 7, b.raw[record_batch.HEADER_SIZE :], magic=2,
                                       max_output=CAP))
        except DecodeError:
            continue
        for r in EntryRecords(b):
            out[r.offset] = payload
    return out


def test_a_compressed_batch_of_more_records_than_a_table_spans_tables(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(build_batch(_records(0, 3, b"x"), codec=LZ4) + build_batch(_records(3, 300, b"v"), codec=ZSTD))
    pairs = list(iter_record_tables(SegmentReader(p), rows=64))
    assert all(len(rt) <= 64 + 3 for _, rt in pairs)
    offsets = np.concatenate([rt.offset for _, rt in pairs])
    assert offsets.tolist() == list(range(303))
    assert not [e for _, rt in pairs for e in rt.errors]
