"""The sliding window a segment walk reads through, and the bytes it holds while a chunk is consumed.

The window reads a file forward in large pieces and hashes every byte once,
as it is first read.  A read that returns nothing before the size taken at
open is the end of the data: the file shrank while it was read (a live
broker truncating it), an archive member is cut (a partial copy) or a remote
read ended early.  The window then ends there (:attr:`Window.short_at`), so
no read loop can wait for bytes that will never come.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .file_hash import HASH_APART, FileHash
from .paths import EvidenceFile

if TYPE_CHECKING:
    from hashlib import _Hash

_HASH_POOL: ThreadPoolExecutor | None = None


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
        if need > self.buf.shape[0]:
            grown = np.empty(need, dtype=np.uint8)
            grown[:keep] = self.buf[keep_from : self.n]
            self.buf = grown
        elif keep:
            self.buf[:keep] = self.buf[keep_from : self.n]
        self.file_pos = new_start
        self.n = keep
        if self.at_eof:
            return
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
