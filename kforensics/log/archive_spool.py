"""A compressed archive's content, inflated once, forward, into a private temporary file.

A ``.tgz`` read in place through :mod:`gzip` re-inflates its stream from the
start on every backward seek: members stored in another order than the scan
reads them (or a large padding member before them) cost the archive's size
per member.  The spool inflates the stream once, in order, as far as any
read has asked, into an unlinked temporary file (never beside the
evidence); every later read is a positioned read of that file.  Inflating
costs each byte once, whatever the order of the reads.

Temporary space is bounded by the inflated size less its runs of zeros:
whole zero chunks are left as holes (a sparse file), so a padding of zeros
costs no disk.  A stream that fails to inflate (a cut copy, damage) keeps
what came before the failure; reads past it raise the decompressor's error
again (the archive reader turns that into a finding), never inflating the
stream a second time.
"""

from __future__ import annotations

import io
import os
import tempfile
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

#: bytes inflated per read of the decompressor
CHUNK = 1 << 20
_ZEROS = bytes(CHUNK)
#: what a decompressor raises on a damaged or cut stream
INFLATE_ERRORS = (EOFError, zlib.error, OSError, ValueError)

GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"


def decompressor(raw: io.BufferedReader) -> io.BufferedIOBase | None:
    """A forward reader of the inflated content of ``raw`` (a binary file object at its start), or None when
    the stream is not compressed (or not in a format this reader knows)."""
    head = raw.peek(6)[:6] if hasattr(raw, "peek") else b""
    if head.startswith(GZIP_MAGIC):
        import gzip

        return gzip.GzipFile(fileobj=raw, mode="rb")
    if head.startswith(BZIP2_MAGIC):
        import bz2

        return bz2.BZ2File(raw, mode="rb")
    if head.startswith(XZ_MAGIC):
        import lzma

        return lzma.LZMAFile(raw, mode="rb")
    return None


class Spool(io.RawIOBase):
    """A seekable, read-only view of a forward-only stream, backed by an unlinked temporary file.

    ``inflated`` counts the bytes taken from the stream (each once);
    ``error`` is the stream's failure, at byte ``spooled``, if it failed.
    Not thread-safe: the archive that owns it serialises reads under its lock.
    """

    def __init__(self, stream: io.BufferedIOBase, *, directory: str | None = None):
        super().__init__()
        self.stream = stream
        self._tmp = tempfile.TemporaryFile(prefix="kforensics-spool-", dir=directory)
        self._fd = self._tmp.fileno()
        self.spooled = 0
        self.inflated = 0
        self.ended = False
        self.error: BaseException | None = None
        self.pos = 0
        self._read1 = getattr(stream, "read1", stream.read)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 2:
            self._fill(None)
            base = self.spooled
        else:
            base = self.pos if whence == 1 else 0
        self.pos = max(0, base + offset)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def _fill(self, upto: int | None) -> None:
        """Inflate forward until ``upto`` bytes are spooled (None: to the end of the stream)."""
        while (upto is None or self.spooled < upto) and not self.ended and self.error is None:
            try:
                # read1: what the decompressor has, at most one read of input (read() would loop, and lose
                # what it inflated when the stream fails before CHUNK bytes)
                piece = self._read1(CHUNK)
            except INFLATE_ERRORS as e:
                self.error = e
                return
            if not piece:
                self.ended = True
                return
            self.inflated += len(piece)
            # a chunk of zeros is left as a hole: a padding of zeros costs no disk
            if not (piece == _ZEROS if len(piece) == CHUNK else piece.count(0) == len(piece)):
                os.pwrite(self._fd, piece, self.spooled)
            self.spooled += len(piece)

    def readinto(self, b: WriteableBuffer) -> int:
        mv = memoryview(b).cast("B")
        want = len(mv)
        if not want:
            return 0
        self._fill(self.pos + want)
        n = min(want, self.spooled - self.pos)
        if n <= 0:
            if self.error is not None:
                raise self.error.with_traceback(None)
            return 0
        got = os.preadv(self._fd, [mv[:n]], self.pos)
        if got < n:
            mv[got:n] = bytes(n - got)  # a hole at the end of the temporary file: zeros
        self.pos += n
        return n

    def reaches(self, end: int) -> bool:
        """Whether the content holds byte ``end - 1`` (inflating up to it)."""
        self._fill(end)
        return self.spooled >= end

    def close(self) -> None:
        if not self.closed:
            self._tmp.close()
            try:
                self.stream.close()
            except INFLATE_ERRORS:
                pass
        super().close()
