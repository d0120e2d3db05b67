"""The ``inflate`` kernel: lz4/zstd records sections decompressed many per compiled call by the codec libraries.

Expected payloads are the bytes that were compressed (frames built here with
the codec libraries, laid out as Kafka's producers write them: a streaming
zstd frame without content size, an LZ4 frame of independent 64 KiB
blocks); what the kernel leaves to the caller is checked against the rule it
shares with ``Decompressor.one_call`` (one whole frame settled by the
library, nothing else), and whole segments decoded with the kernel are
checked against the same segments decoded batch by batch in Python.
"""

from __future__ import annotations

import hashlib

import lz4.frame
import numpy as np
import pytest
import zstandard

from kforensics.formats import record_batch
from kforensics.formats.compression import compress
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log import kernels, record_tables
from kforensics.log.kernels import codecs
from kforensics.log.kernels.inflate import INFLATE_DONE, INFLATE_FALLBACK, INFLATE_FULL
from kforensics.log.records import iter_record_tables
from kforensics.log.segment_reader import SegmentReader

pytestmark = pytest.mark.skipif(not codecs.HAVE_INFLATE, reason="the zstd/lz4 C libraries were not found")

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4


def _zstd(data: bytes) -> bytes:
    c = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    return c.compress(data) + c.flush()


def _lz4(data: bytes) -> bytes:
    return lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                              content_checksum=False, store_size=False)


FRAME = {LZ4: _lz4, ZSTD: _zstd}


def _plain(i: int, n: int = 40) -> bytes:
    """A payload of ``n`` JSON-like lines, the same for the same arguments."""
    return b"".join(b'{"batch": %d, "i": %d, "pad": "%s"}' % (i, k, hashlib.sha256(b"%d/%d" % (i, k)).hexdigest()[:12]
                                                               .encode()) for k in range(n))


class _Run:
    """The kernel over a list of (codec, section) pairs, driven as the columnar path drives it."""

    def __init__(self, sections: list[tuple[int, bytes]], dst_size: int = 1 << 16, limit: int = 1 << 20):
        self.K = kernels.get()
        self.ctx = codecs.Contexts()
        self.src = np.frombuffer(b"".join(s for _, s in sections), dtype=np.uint8)
        ends = np.cumsum([len(s) for _, s in sections])
        self.info = np.empty((len(sections), 3), dtype=np.int64)
        self.info[:, 0] = [c for c, _ in sections]
        self.info[:, 1] = ends - [len(s) for _, s in sections]
        self.info[:, 2] = ends
        self.out = np.full((len(sections), 2), -1, dtype=np.int64)
        self.dst = np.zeros(dst_size, dtype=np.uint8)
        self.limit = limit

    def call(self, j: int) -> tuple[int, int]:
        done, status = self.K.inflate(self.src, self.info[j:], self.dst, self.limit, self.ctx.zstd, self.ctx.lz4,
                                      np.zeros(6, dtype=np.int64), self.out[j:])
        return int(done), int(status)

    def payload(self, j: int) -> bytes:
        return self.dst[self.out[j, 0] : self.out[j, 1]].tobytes()

    def all(self) -> tuple[list[bytes | None], list[int]]:
        """Every section's payload (None: left to the caller), and the statuses seen."""
        got: list[bytes | None] = []
        statuses = []
        j = 0
        while j < len(self.info):
            done, status = self.call(j)
            statuses.append(status)
            got += [self.payload(j + k) for k in range(done)]
            j += done
            if status == INFLATE_FALLBACK:
                got.append(None)
                j += 1
        self.ctx.close()
        return got, statuses


def test_every_payload_of_both_codecs_comes_out_whole_in_one_buffer():
    plains = [_plain(i, 1 + i % 7) for i in range(60)]
    run = _Run([((LZ4, ZSTD)[i % 2], FRAME[(LZ4, ZSTD)[i % 2]](p)) for i, p in enumerate(plains)])
    done, status = run.call(0)
    assert (done, status) == (60, INFLATE_DONE)
    assert [run.payload(j) for j in range(60)] == plains
    # one after another in the buffer
    assert run.out[1:, 0].tolist() == run.out[:-1, 1].tolist()


@pytest.mark.parametrize("codec", [LZ4, ZSTD])
def test_a_damaged_frame_is_left_to_the_caller_and_the_good_frames_around_it_decompress(codec):
    good = [_plain(i) for i in range(3)]
    bad = bytearray(FRAME[codec](_plain(9)))
    bad[12:40] = bytes(range(28))  # the first block's content
    got, statuses = _Run([(codec, FRAME[codec](good[0])), (codec, bytes(bad)), (codec, FRAME[codec](good[1])),
                          (codec, bytes(bad)), (codec, FRAME[codec](good[2]))]).all()
    assert got == [good[0], None, good[1], None, good[2]]
    # after a payload the kernel first tries the damaged frame again in an empty buffer, then leaves it
    assert statuses[:2] == [INFLATE_FULL, INFLATE_FALLBACK]


@pytest.mark.parametrize("codec", [LZ4, ZSTD])
def test_a_cut_frame_is_left_to_the_caller(codec):
    got, _ = _Run([(codec, FRAME[codec](_plain(1))[:-9]), (codec, FRAME[codec](_plain(2)))]).all()
    assert got == [None, _plain(2)]


def test_what_one_call_does_not_settle_is_left_to_the_caller():
    p = _plain(3)
    sections = [
        (ZSTD, _zstd(p) + _zstd(p[:100])),  # a second frame after the first: read across frames, the long way
        (LZ4, _lz4(p)[:5]),  # too short to hold an LZ4 frame
        (LZ4, b"not lz4 at all"),
        (GZIP, compress(GZIP, p, magic=2)),  # other codecs: Python's
        (SNAPPY, compress(SNAPPY, p, magic=2)),
        (ZSTD, b""),  # nothing: no frame ends
        (LZ4, _lz4(p) + b"\0\0\0"),  # bytes after an LZ4 frame are ignored, as decompress() ignores them
    ]
    got, _ = _Run(sections).all()
    assert got == [None, None, None, None, None, None, p]


@pytest.mark.parametrize("codec", [LZ4, ZSTD])
def test_a_bomb_writes_no_byte_past_the_cap(codec):
    limit = 100_000
    run = _Run([(codec, FRAME[codec](bytes(5_000_000)))], dst_size=1 << 20, limit=limit)
    run.dst[:] = 0xAB
    assert run.call(0) == (0, INFLATE_FALLBACK)
    assert not np.any(run.dst[limit:] != 0xAB)
    # within the cap and the buffer it decompresses
    run2 = _Run([(codec, FRAME[codec](bytes(200_000)))], dst_size=1 << 20, limit=200_000)
    assert run2.all()[0] == [bytes(200_000)]


@pytest.mark.parametrize("codec", [LZ4, ZSTD])
def test_a_payload_larger_than_the_buffer_is_left_to_the_caller(codec):
    big = _plain(5, 3000)  # about 130 KB
    got, statuses = _Run([(codec, FRAME[codec](_plain(4))), (codec, FRAME[codec](big))], dst_size=1 << 16).all()
    assert got == [_plain(4), None]
    assert statuses == [INFLATE_FULL, INFLATE_FALLBACK]


def _records(base: int, n: int, tag: bytes) -> list[RecordData]:
    return [RecordData(base + i, 1_700_000_000_000 + i, b"k%d" % (base + i), tag + b" %d" % i) for i in range(n)]


def _damaged(batch: bytes) -> bytes:
    raw = bytearray(batch)
    h = record_batch.HEADER_SIZE
    raw[h + 10 : h + 30] = bytes(range(20))
    f = record_batch.HEADER["crc"]
    raw[f.offset : f.offset + f.size] = record_batch.compute_crc(bytes(raw)).to_bytes(4, "big")
    return bytes(raw)


def _decoded(p, monkeypatch, native: bool) -> tuple[list, list]:
    with monkeypatch.context() as m:
        m.setattr(record_tables, "HAVE_INFLATE", native)
        m.setattr(record_tables, "GROUP_BYTES", 3000)  # several runs and groups per chunk
        rows, errors = [], []
        for t, rt in iter_record_tables(SegmentReader(p)):
            rows += list(zip(t["position"][rt.batch_index].tolist(), rt.data.tolist(), rt.offset.tolist(),
                             rt.timestamp.tolist()))
            errors += [(e.code, e.position, e.message, e.facts) for e in rt.errors]
    return rows, errors


def test_a_segment_decodes_the_same_with_the_kernel_as_batch_by_batch_in_python(tmp_path, monkeypatch):
    batches, offset, want = [], 0, []
    for k in range(80):
        codec = (LZ4, ZSTD, ZSTD, LZ4, GZIP, SNAPPY, 0)[k % 7]
        n = 1 + k % 11
        recs = _records(offset, n, b"value %d " % k + bytes(k * 40))
        raw = build_batch(recs, codec=codec)
        if k in (9, 10, 33, 52):
            raw = _damaged(raw)
        else:
            want += [r.offset for r in recs]
        batches.append(raw)
        offset += n
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(b"".join(batches))
    native = _decoded(p, monkeypatch, True)
    python = _decoded(p, monkeypatch, False)
    assert native == python
    # every record of every batch that is not damaged (a chunk's uncompressed batches come before its compressed
    # ones, each kind in file order)
    assert sorted(r[2] for r in native[0]) == want
    assert [e[0] for e in native[1]] == ["DECOMPRESSION_FAILED"] * 4
