"""The sliding window a segment walk reads through, and the bytes it holds while a chunk is consumed.

The window reads a file forward in large pieces and hashes every byte once,
as it is first read.  A read that returns nothing before the size taken at
open is the end of the data: the file shrank while it was read (a live
broker truncating it), an archive member is cut (a partial copy) or a remote
read ended early.  The window then ends there (:attr:`Window.short_at`), so
no read loop can wait for bytes that will never come.

A local file is read ahead: while the walk consumes the window, the next
window's bytes are read on a helper thread (``os.preadv`` into a second
buffer: the file's offset is not moved, the evidence is only read), so the
copy out of the page cache runs beside the decoding instead of before it.
What the read ahead brings is taken only when the walk goes on where it
stopped; anything it did not bring (a short read, a walk that jumps) is read
as before, so a file that shrinks still ends the window where it ends.
"""

from __future__ import annotations

import hashlib
import io
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .file_hash import HASH_APART, FileHash
from .paths import EvidenceFile

if TYPE_CHECKING:
    from hashlib import _Hash

_HASH_POOL: ThreadPoolExecutor | None = None
_READ_POOL: ThreadPoolExecutor | None = None
#: room kept before the bytes read ahead for the end of the window that is kept (an entry cut by the window's
#: end); a longer end is read again, without the read ahead
AHEAD_ROOM = 1 << 20
#: windows below this are not read ahead (a small file: a thread costs more than its read)
AHEAD_MIN = 1 << 20


def _read_pool() -> ThreadPoolExecutor:
    global _READ_POOL
    if _READ_POOL is None:
        _READ_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kforensics-read-ahead")
    return _READ_POOL


def _pread_full(fd: int, buf: memoryview, at: int) -> int:
    """Bytes read into ``buf`` from file position ``at`` until it is full or a read returns nothing."""
    got = 0
    while got < len(buf):
        n = os.preadv(fd, [buf[got:]], at + got)
        if n <= 0:
            break
        got += n
    return got


def _hash_pool() -> ThreadPoolExecutor:
    # started on first use, so commands that hash nothing start no thread
    global _HASH_POOL
    if _HASH_POOL is None:
        _HASH_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kforensics-sha256")
    return _HASH_POOL


@dataclass(frozen=True)
class HeldBytes:
    """The bytes the reader holds while a chunk is consumed: ``buf[0:n]`` are file bytes from ``file_pos``."""

    buf: np.ndarray
    file_pos: int
    n: int

    @property
    def end(self) -> int:
        return self.file_pos + self.n

    def view(self, position: int, length: int) -> memoryview | None:
        """The bytes at file ``position`` if they are all held."""
        rel = position - self.file_pos
        if rel < 0 or rel + length > self.n:
            return None
        return self.buf.data[rel : rel + length]


class Window:
    """A sliding window over the file: ``buf[0:n]`` holds file bytes from ``file_pos``.

    ``size`` is where the data ends: the size taken at open, lowered to the
    first short read's position (``short_at``; ``opened_size`` keeps the size
    taken at open).
    """

    def __init__(self, fh: EvidenceFile, size: int, capacity: int, hasher: _Hash | None = None):
        self.fh = fh
        self.size = size
        self.opened_size = size
        self.short_at: int | None = None
        self.hasher = hasher  # fed every byte once, in order, as it is first read
        self.hashed = 0
        self._pending: Future[None] | None = None
        self.buf = np.empty(capacity, dtype=np.uint8)
        self.file_pos = 0
        self.n = 0
        # read ahead: a local file, hashed apart or not at all, in windows large enough to be worth a thread
        self._fd = fh.fileno() if isinstance(fh, io.FileIO) and hasher is None and capacity >= AHEAD_MIN else None
        self._spare: np.ndarray | None = None  # the other buffer: AHEAD_ROOM, then a window's bytes read ahead
        self._ahead: Future[int] | None = None
        self._ahead_at = 0  # file position of the bytes read ahead
        self.capacity = capacity  # bytes a window reads ahead (the buffer may be grown past it, or hold more)

    @property
    def end(self) -> int:
        """File position just past the bytes held."""
        return self.file_pos + self.n

    @property
    def at_eof(self) -> bool:
        return self.end >= self.size

    def ended_short(self, at: int) -> None:
        """The data ends at ``at``, before the size taken at open: nothing past it is ever asked for again."""
        if self.short_at is None or at < self.short_at:
            self.short_at = at
        self.size = min(self.size, at)

    def slide(self, new_start: int, need: int = 0) -> None:
        """Keep bytes from file position ``new_start`` at the front and read more after them.

        Grows the buffer when ``need`` (bytes wanted from ``new_start``) exceeds it.
        """
        self.join_hash()
        keep_from = new_start - self.file_pos
        keep = max(0, self.n - keep_from)
        if self._take_ahead(new_start, keep_from, keep, need):
            self._read_more()
            return
        if need > self.buf.shape[0]:
            grown = np.empty(need, dtype=np.uint8)
            grown[:keep] = self.buf[keep_from : self.n]
            self.buf = grown
        elif keep:
            self.buf[:keep] = self.buf[keep_from : self.n]
        self.file_pos = new_start
        self.n = keep
        self._read_more()

    def _read_more(self) -> None:
        """Fill the buffer after the bytes held (to the end of the data), then start reading the next window
        ahead."""
        if not self.at_eof:
            self.fh.seek(self.end)
            mv = self.buf.data
            while self.n < self.buf.shape[0] and not self.at_eof:
                at = self.end
                got = self.fh.readinto(mv[self.n : self.n + self.size - at])
                if not got:
                    self.ended_short(at)  # a short read is the end of the data
                    break
                self._hash(mv, at, got)
                self.n += got
        self._start_ahead()

    def _start_ahead(self) -> None:
        if self._fd is None or self.at_eof or self.n < self.buf.shape[0]:
            return
        cap = self.capacity
        if self._spare is None:
            self._spare = np.empty(AHEAD_ROOM + cap, dtype=np.uint8)
        self._ahead_at = self.end
        target = self._spare.data[AHEAD_ROOM : AHEAD_ROOM + min(cap, self.size - self.end)]
        self._ahead = _read_pool().submit(_pread_full, self._fd, target, self._ahead_at)

    def join_ahead(self) -> int:
        """Wait for the read ahead, if one runs: the bytes it read (0 when none, or when it failed)."""
        fut, self._ahead = self._ahead, None
        if fut is None:
            return 0
        try:
            return fut.result()
        except OSError:
            return 0  # read again the ordinary way, which reports what is wrong

    def _take_ahead(self, new_start: int, keep_from: int, keep: int, need: int) -> bool:
        """Slide onto the bytes read ahead when they follow what is kept: the kept end copied in front of them,
        the buffers swapped.  False (nothing changed) when they cannot serve."""
        got = self.join_ahead()
        spare = self._spare
        if (not got or spare is None or self._ahead_at != self.end or not 0 <= keep_from <= self.n
                or keep > AHEAD_ROOM or need > keep + got):
            return False
        start = AHEAD_ROOM - keep
        spare[start:AHEAD_ROOM] = self.buf[keep_from : self.n]
        old = self.buf
        while isinstance(old.base, np.ndarray):  # the whole array, when the buffer is a view of it
            old = old.base
        # the buffer given up reads the next window ahead, when it is one of the pair (not the first, nor a grown one)
        self._spare = old if old.shape[0] == spare.shape[0] else None
        self.buf = spare[start:]
        self.file_pos = new_start
        self.n = keep + got
        return True

    def _hash(self, mv: memoryview, at: int, got: int) -> None:
        if self.hasher is None or not at <= self.hashed < at + got:
            return
        piece = mv[self.n + self.hashed - at : self.n + got]
        if len(piece) < HASH_APART:
            self.hasher.update(piece)  # a few pieces of a small file: handing them over costs more
        else:
            # hashing runs on a helper thread (hashlib releases the GIL) while the walk
            # proceeds on the same, read-only bytes; it is joined before they are overwritten
            self._pending = _hash_pool().submit(self.hasher.update, piece)
        self.hashed = at + got

    def join_hash(self) -> None:
        """Wait for the hash of the bytes read (before they are overwritten, or at the end)."""
        if self._pending is not None:
            self._pending.result()
            self._pending = None

    def finish_hash(self) -> str | None:
        """Hash whatever was never read through the window (skipped huge entries) and return the digest."""
        self.join_hash()
        if self.hasher is None:
            return None
        self.fh.seek(self.hashed)
        while self.hashed < self.size:
            piece = self.fh.read(min(8 << 20, self.size - self.hashed))
            if not piece:
                self.ended_short(self.hashed)
                break
            self.hasher.update(piece)
            self.hashed += len(piece)
        return self.hasher.hexdigest()

    def bytes_at(self, pos: int, length: int) -> memoryview | None:
        """Bytes at file position ``pos`` if they are in the window."""
        rel = pos - self.file_pos
        if rel < 0 or rel + length > self.n:
            return None
        return self.buf.data[rel : rel + length]


def file_digest(file_hash: FileHash | None, win: Window) -> str | None:
    """The file's SHA-256: from its hash apart (``file_hash``), or from the walk's reads.  When the hash apart
    could not read the file (it went away or was replaced since it was opened), the file this reader holds
    open is hashed again from its start: the digest is always of the bytes the walk read."""
    if file_hash is None:
        return win.finish_hash()
    try:
        digest = file_hash.result()
    except OSError:
        digest = None
    if digest is None:
        win.hasher, win.hashed = hashlib.sha256(), 0
        return win.finish_hash()
    return digest
