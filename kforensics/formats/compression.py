"""Kafka's compression codecs as stored on disk, through libraries, with bounded output.

* gzip: RFC 1952 members (possibly concatenated) — ``zlib``.
* snappy: snappy-java's *xerial* block stream, not the official framing
  format: a 16-byte header then ``[int32 length][raw snappy block]*``.  The
  framing is parsed here; each block goes to ``cramjam``'s raw decoder.
* lz4: Kafka's LZ4 frame.  For magic 0 Kafka writes the frame header checksum
  over the magic bytes too (a historical bug) and skips checking it on read;
  liblz4 checks it, so for magic 0 the right checksum is put back first.
* zstd: a standard frame written by a streaming compressor (no content size).

Every decoder stops once the output would pass ``max_output``, so a
decompression bomb costs at most that much memory, and the output is built
once, in place (a ``bytearray``, never copied whole at the end): a payload
near the cap is held once, not twice.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import cramjam
import lz4.frame
import xxhash
import zstandard
from lz4.frame import _frame as _lz4f

from ..findings import DecodeError

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK = 32 * 1024
LZ4_MAGIC = b"\x04\x22\x4d\x18"
_PIECE = 1 << 16
_OUT_PIECE = 1 << 20
#: zstd's largest expansion: a raw-RLE block of 4 bytes (3-byte header, 1 byte) stands for a whole block of up to
#: 128 KiB (RFC 8878, 3.1.1.2), so ``n`` input bytes give at most ``n * _ZSTD_RATIO + _ZSTD_BLOCK`` output bytes
_ZSTD_RATIO = 1 << 15
_ZSTD_BLOCK = 1 << 17
#: the smallest output buffer a one-call LZ4 decompression gets (larger inputs get a few times their size)
_LZ4_GUESS = 1 << 16


def _bomb(limit: int) -> DecodeError:
    return DecodeError("DECOMPRESSION_BOMB", f"decompressed size exceeds the limit of {limit} bytes", None, limit=limit)


def decompress(
    codec_id: int, data: bytes | bytearray | memoryview, *, magic: int, max_output: int,
    zstd: zstandard.ZstdDecompressor | None = None,
) -> bytes | bytearray:
    """Decompress one batch payload (v2 records section or legacy wrapper value); bytes-like, held once.

    ``zstd``: a zstd context to reuse (:class:`Decompressor`'s); a new one otherwise."""
    data = bytes(data)
    if codec_id == 0:
        return data
    if codec_id not in CODECS:
        raise DecodeError("UNKNOWN_CODEC", f"unknown compression type id {codec_id}", None, codec=codec_id)
    if codec_id == 4 and magic < 2:
        raise DecodeError("CODEC_NOT_ALLOWED_FOR_MAGIC", f"zstd is not allowed with magic {magic}", None)
    try:
        if codec_id == 1:
            return _gunzip(data, max_output)
        if codec_id == 2:
            return _unsnappy(data, max_output)
        if codec_id == 3:
            return _unlz4(data, magic, max_output)
        return _unzstd(data, max_output, zstd)
    except DecodeError:
        raise
    except Exception as e:  # library errors on damaged input
        raise DecodeError(
            "DECOMPRESSION_FAILED", f"{CODECS[codec_id]} payload does not decompress: {e}", None,
            codec=CODECS[codec_id],
        ) from None


def _gunzip(data: bytes, limit: int) -> bytearray:
    """JDK's ``GZIPInputStream``: concatenated members; bytes after a member that do not start another (its
    readHeader fails: zero padding, garbage) end the stream, as Java ignores them.

    Input and output move in pieces, so neither the input (``unconsumed_tail``
    is a copy) nor the output is ever copied whole: linear time, one copy of
    the payload.
    """
    out = bytearray()
    view = memoryview(data)
    start = 0
    while True:
        d = zlib.decompressobj(wbits=31)
        pos = start
        while not d.eof:
            chunk: bytes | memoryview = d.unconsumed_tail
            if not chunk:
                chunk = view[pos : pos + _PIECE]
                pos += len(chunk)
                if not chunk:
                    raise DecodeError("DECOMPRESSION_FAILED", "gzip stream ends early", None, codec="gzip")
            out += d.decompress(chunk, min(limit + 1 - len(out), _OUT_PIECE))
            if len(out) > limit:
                raise _bomb(limit)
        start = pos - len(d.unused_data)  # where this member ended
        if not _gzip_header(view[start : start + 10]):
            return out


def _gzip_header(head: memoryview) -> bool:
    """Whether bytes start a gzip member header as ``GZIPInputStream.readHeader`` reads one (magic, deflate)."""
    return len(head) == 10 and head[0] == 0x1F and head[1] == 0x8B and head[2] == 8


def _raw_snappy_length(block: bytes) -> int:
    n = shift = 0
    for _i, b in enumerate(block[:5]):
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n
        shift += 7
    raise DecodeError("DECOMPRESSION_FAILED", "bad snappy block length", None, codec="snappy")


def _raw_snappy(block: bytes, budget: int, limit: int) -> bytes:
    if _raw_snappy_length(block) > budget:
        raise _bomb(limit)
    return bytes(cramjam.snappy.decompress_raw(block))


def _unsnappy(data: bytes, limit: int) -> bytes | bytearray:
    if not data.startswith(XERIAL_MAGIC):
        # snappy-java falls back to one raw block when the header is missing
        return _raw_snappy(data, limit, limit)
    out = bytearray()
    pos = len(XERIAL_HEADER)
    while pos < len(data):
        if pos + 4 > len(data):
            raise DecodeError("DECOMPRESSION_FAILED", "truncated xerial chunk length", None, codec="snappy")
        if data[pos : pos + 8] == XERIAL_MAGIC:  # a second concatenated stream
            pos += len(XERIAL_HEADER)
            continue
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise DecodeError("DECOMPRESSION_FAILED", f"xerial chunk of {n} bytes overruns the payload", None,
                              codec="snappy")
        out += _raw_snappy(data[pos : pos + n], limit - len(out), limit)
        pos += n
    return out


def lz4_header_checksum(frame: bytes, *, broken: bool) -> int:
    """The HC byte: xxh32 of the descriptor (Kafka's v0 writer wrongly includes the magic)."""
    flg = frame[4]
    desc_end = 6 + (8 if flg & 0x08 else 0)
    start = 0 if broken else 4
    return (xxhash.xxh32_intdigest(frame[start:desc_end]) >> 8) & 0xFF


def _unlz4(data: bytes, magic: int, limit: int) -> bytearray:
    if len(data) < 7 or not data.startswith(LZ4_MAGIC):
        raise DecodeError("DECOMPRESSION_FAILED", "not an LZ4 frame", None, codec="lz4")
    if magic == 0:
        fixed = bytearray(data)
        hc_at = 6 + (8 if data[4] & 0x08 else 0)
        if hc_at < len(fixed):
            fixed[hc_at] = lz4_header_checksum(data, broken=False)
        data = bytes(fixed)
    # The input goes in in pieces: the decompressor keeps the input it has not consumed and copies it on every
    # call, so handing it the whole frame and draining the output piece by piece is quadratic in the frame size.
    d = lz4.frame.LZ4FrameDecompressor()
    out = bytearray()
    view = memoryview(data)
    pos = 0
    while not d.eof:
        if d.needs_input:
            if pos >= len(data):
                raise DecodeError("DECOMPRESSION_FAILED", "LZ4 frame ends early", None, codec="lz4")
            chunk: bytes | memoryview = view[pos : pos + _PIECE]
            pos += len(chunk)
        else:
            chunk = b""  # output still pending from the input already given
        # at most a piece of output per call: the library allocates max_length up front
        got = d.decompress(chunk, max_length=min(limit + 1 - len(out), _OUT_PIECE))
        if not got and not chunk and not d.eof and not d.needs_input:
            raise DecodeError("DECOMPRESSION_FAILED", "LZ4 frame makes no progress", None, codec="lz4")
        out += got
        if len(out) > limit:
            raise _bomb(limit)
    return out


def _unzstd(data: bytes, limit: int, dctx: zstandard.ZstdDecompressor | None = None) -> bytearray:
    reader = (dctx or zstandard.ZstdDecompressor()).stream_reader(data, read_across_frames=True)
    out = bytearray()
    while True:
        piece = reader.read(min(_PIECE, limit + 1 - len(out)) or 1)
        if not piece:
            break
        out += piece
        if len(out) > limit:
            raise _bomb(limit)
    return out


class Decompressor:
    """Decompresses payload after payload with the same library contexts: :func:`decompress`'s results and errors,
    without building a context per payload (a context costs more than a small batch's decompression).

    A payload whose result one library call settles (one whole LZ4 frame
    within a first guess of its size; one whole zstd frame too short to pass
    the cap whatever it holds) is decompressed in that call; anything else
    (damage, trailing frames, a ratio past the guess, other codecs) goes
    through :func:`decompress`, so the answer is always its answer.  Not
    thread-safe: one per thread.
    """

    def __init__(self) -> None:
        self._zstd = zstandard.ZstdDecompressor()
        self._lz4 = _lz4f.create_decompression_context()

    def decompress(self, codec_id: int, data: bytes | bytearray | memoryview, *, magic: int,
                   max_output: int) -> bytes | bytearray:
        """One payload, as :func:`decompress` gives it (or raises)."""
        got = self.one_call(codec_id, data, max_output) if magic >= 2 else None
        if got is not None:
            return got
        return decompress(codec_id, data, magic=magic, max_output=max_output, zstd=self._zstd)

    def one_call(self, codec_id: int, data: bytes | bytearray | memoryview, limit: int) -> bytes | None:
        """A v2 payload decompressed in one library call, or None when one call does not settle it (then
        :meth:`decompress` does)."""
        if codec_id == 3:
            return self._one_lz4(data, limit)
        if codec_id == 4:
            return self._one_zstd(data, limit)
        return None

    def _one_zstd(self, data: bytes | bytearray | memoryview, limit: int) -> bytes | None:
        # bounded by construction: an input this short cannot expand past the cap
        if len(data) * _ZSTD_RATIO + _ZSTD_BLOCK > limit:
            return None
        d = self._zstd.decompressobj()
        try:
            out = d.decompress(data)
        except zstandard.ZstdError:
            return None
        # one frame and nothing after it: what the streaming reader across frames gives too
        return out if d.eof and not d.unused_data and len(out) <= limit else None

    def _one_lz4(self, data: bytes | bytearray | memoryview, limit: int) -> bytes | None:
        if len(data) < 7 or data[:4] != LZ4_MAGIC:
            return None
        try:
            # lz4.frame's C entry point: its Python wrapper costs more than a small frame's decompression
            out, _read, eof = _lz4f.decompress_chunk(self._lz4, data, min(limit + 1, max(_LZ4_GUESS, 4 * len(data))))
        except Exception:  # noqa: BLE001 - the library's error on damage; decompress() gives the finding
            eof = False
        if not eof:  # damaged, cut, or larger than the guess: the context is mid-frame
            _lz4f.reset_decompression_context(self._lz4)
            return None
        # the frame ended (bytes after it are ignored, as decompress() ignores them); a whole frame leaves the
        # context ready for the next
        return out if len(out) <= limit else None


def compress(codec_id: int, data: bytes, *, magic: int) -> bytes:
    """Compress a payload the way Kafka's producers lay it out (for writing fixtures)."""
    if codec_id == 0:
        return bytes(data)
    if codec_id == 1:
        return gzip.compress(data, mtime=0)
    if codec_id == 2:
        out = bytearray(XERIAL_HEADER)
        for i in range(0, len(data), XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[i : i + XERIAL_BLOCK]))
            out += struct.pack(">i", len(block)) + block
        return bytes(out)
    if codec_id == 3:
        frame = bytearray(
            lz4.frame.compress(
                data,
                block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                block_linked=False,
                content_checksum=False,
                store_size=False,
            )
        )
        if magic == 0:
            frame[6] = lz4_header_checksum(bytes(frame), broken=True)
        return bytes(frame)
    if codec_id == 4:
        if magic < 2:
            raise ValueError("zstd needs magic 2")
        return _zstd_stream(data)
    raise ValueError(f"unknown codec {codec_id}")


def _zstd_stream(data: bytes) -> bytes:
    # a streaming compressor, as zstd-jni's output stream: no content size in the frame header
    c = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    return c.compress(data) + c.flush()
