"""A large zstd records section decompressed as its records are decoded: a window of it held at a time, never the
whole, so a batch of tens of millions of records is dumped in bounded memory.

Kafka reads a compressed batch the same way: ``DefaultRecordBatch``'s
``compressedIterator`` pulls records one at a time through the codec's input
stream (clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java,
tag 3.9.0-rc3), and after the declared count it asks the stream for one byte more
(``ensureNoneRemaining``: "Incorrect declared batch size, records still
remaining in file").

What the dump reports does not change with the window.  The frame is first
read through once with nothing kept (:func:`check_stream`), with the calls
:func:`kforensics.formats.compression.decompress` makes, so a frame that does
not decompress gives the same finding and no records, as when the section is
held whole.  Then :func:`windows` hands out the decompressed bytes in windows
that never cut a record: a record the decoder finds cut at a window's end is
decoded again from its start once the next window holds it whole.
"""

from __future__ import annotations

import zstandard

from ..findings import DecodeError

#: a zstd records section at least this long (compressed) is streamed (a smaller one is decompressed whole)
STREAM_FROM = 1 << 20
#: the decompressed bytes a streamed section may reach.  A section held whole is capped at
#: ``DEFAULT_MAX_DECOMPRESSED`` (256 MiB) to bound memory; streamed, at most a window is held, so the cap only
#: bounds the time a decompression bomb costs (a few seconds at this size)
STREAM_MAX_DECOMPRESSED = 1 << 32
#: decompressed bytes held at a time (a window grows only to hold one record whole)
WINDOW = 8 << 20
#: what one read asks of the stream (the piece :mod:`kforensics.formats.compression` reads a zstd stream in)
_PIECE = 1 << 16


def _reader(section: bytes) -> zstandard.ZstdDecompressionReader:
    return zstandard.ZstdDecompressor().stream_reader(section, read_across_frames=True)


def check_stream(section: bytes, limit: int) -> None:
    """Read the whole frame, keeping nothing; raises the :class:`DecodeError` decompressing it whole raises (the
    library's error as ``DECOMPRESSION_FAILED``, ``DECOMPRESSION_BOMB`` past ``limit`` bytes)."""
    try:
        reader = _reader(section)
        total = 0
        while True:
            piece = reader.read(min(_PIECE, limit + 1 - total) or 1)
            if not piece:
                return
            total += len(piece)
            if total > limit:
                raise DecodeError("DECOMPRESSION_BOMB", f"decompressed size exceeds the limit of {limit} bytes", None,
                                  limit=limit)
    except DecodeError:
        raise
    except Exception as e:  # library errors on damaged input, worded as decompress() words them
        raise DecodeError("DECOMPRESSION_FAILED", f"zstd payload does not decompress: {e}", None,
                          codec="zstd") from None


class Windows:
    """The decompressed section as windows: ``window`` holds the stream's bytes from ``base`` on; :meth:`more`
    drops what is before position ``keep`` of the window and reads until ``want`` bytes from there are held (or the
    stream ends: ``eof``)."""

    def __init__(self, section: bytes):
        self._reader = _reader(section)
        self.window = b""
        self.base = 0
        self.eof = False

    def more(self, keep: int, want: int | None = None) -> int:
        """Keep the window from ``keep``, read on (to :data:`WINDOW` bytes held unless ``want`` says more); returns
        the new position of ``keep`` (0)."""
        want = WINDOW if want is None else want
        parts = [self.window[keep:]]
        held = len(parts[0])
        while held < want and not self.eof:
            piece = self._reader.read(_PIECE)
            if not piece:
                self.eof = True
                break
            parts.append(piece)
            held += len(piece)
        self.base += keep
        self.window = b"".join(parts)
        return 0


def record_end(window: bytes, p: int) -> int | None:
    """Where the record starting at ``p`` ends by its length prefix (a zig-zag varint), or None when the window
    ends inside the prefix."""
    value = shift = 0
    for q in range(p, min(len(window), p + 5)):
        byte = window[q]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return q + 1 + ((value >> 1) ^ -(value & 1))
        shift += 7
    return None if len(window) < p + 5 else p + 5  # a prefix too long: the decoder's own error


def windows_needed(window: bytes, p: int) -> int | None:
    """How many bytes from ``p`` the record there needs held to be decoded whole (None: it is whole already)."""
    end = record_end(window, p)
    if end is None:
        return len(window) - p + 5
    return end - p if end > len(window) else None

