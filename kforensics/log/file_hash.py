"""SHA-256 of local evidence files, computed on a helper thread apart from the walk.

A scan hashes every segment it reads.  Hashing runs at about the speed the
walk does, so the two run side by side: each local file is hashed from its
own read-only descriptor on a helper thread (``hashlib`` and ``readinto``
release the GIL) while the walk uses the main thread.  A command can start
the hashing of the files it is about to read before it loads anything heavy
(:func:`prefetch`), so start-up overlaps the hashing too; a reader then takes
the digest that was started for its file (:func:`digest_of`), or starts one.

Light on purpose (no numpy): the command line imports it before the rest.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor

from .sources import open_binary

PIECE = 8 << 20
#: files up to this size are hashed by the reader itself, from its own reads (a thread costs more than their hash)
HASH_APART = 1 << 20
#: how far a prefetch goes: the hashes it starts only gain the time the command takes to load before its walk (a
#: fraction of a second: a few hundred MB of hashing), so it stops once this many bytes are queued or this many
#: files were looked at; the rest are hashed as they are read, beside the walk.  (Looking at every segment of a
#: fleet of 10 000 small partition dirs, none of them large enough to hash apart, cost 0.2 s of a 3.5 s scan.)
HEAD_START_BYTES = 1 << 30
LOOKED_AT = 1024

_POOL: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()
_PREFETCHED: dict[str, tuple[tuple[int, int, int, int], FileHash]] = {}


def _pool() -> ThreadPoolExecutor:
    # started on first use, so commands that hash nothing start no thread
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kforensics-file-sha256")
        return _POOL


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class FileHash:
    """The SHA-256 of one local file, hashed on the helper thread; ``cancel`` stops it between reads."""

    def __init__(self, path: str):
        self.path = path
        self._stop = False
        self._future: Future[str | None] = _pool().submit(self._run)

    def _run(self) -> str | None:
        h = hashlib.sha256()
        with open_binary(self.path) as fh:
            buf = bytearray(PIECE)
            mv = memoryview(buf)
            while not self._stop and (n := fh.readinto(buf)):
                h.update(mv[:n])
        return None if self._stop else h.hexdigest()

    def result(self) -> str | None:
        """The hex digest (waits for it); None when cancelled."""
        try:
            return self._future.result()
        except CancelledError:
            return None

    def cancel(self) -> None:
        self._stop = True
        self._future.cancel()


def prefetch(paths: Iterable[str], *, budget: int = HEAD_START_BYTES, looked_at: int = LOOKED_AT) -> int:
    """Start hashing these local files, in this order (the order they will be read in, as far as known), until
    ``budget`` bytes are queued or ``looked_at`` paths were looked at (``paths`` is not read further).

    Only regular files are queued; each is remembered with its identity
    (device, inode, size, mtime), so a reader takes the digest only for the
    very file that was hashed.  Returns how many were queued.
    """
    queued = seen = size = 0
    it = iter(paths)
    while seen < looked_at and size < budget:
        path = next(it, None)
        if path is None:
            break
        seen += 1
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size <= HASH_APART:
            continue
        key = os.path.abspath(path)
        with _LOCK:
            if key in _PREFETCHED:
                continue
        h = FileHash(path)
        with _LOCK:
            _PREFETCHED[key] = (_identity(st), h)
        queued += 1
        size += st.st_size
    return queued


def digest_of(path: str, fd: int) -> FileHash:
    """The hash of the local file ``path`` open as ``fd``: the prefetched one when it is for this very file,
    else one started now."""
    key = os.path.abspath(path)
    with _LOCK:
        hit = _PREFETCHED.pop(key, None)
    if hit is not None:
        if hit[0] == _identity(os.fstat(fd)):
            return hit[1]
        hit[1].cancel()
    return FileHash(path)


def cancel_prefetched() -> None:
    """Stop the prefetched hashes no reader took (a command that ends early, or read fewer files)."""
    with _LOCK:
        left = list(_PREFETCHED.values())
        _PREFETCHED.clear()
    for _ident, h in left:
        h.cancel()


def stop_hashing() -> None:
    """Stop the prefetched hashes no reader took and end the hashing thread (started again on next use): a process
    about to fork must run no other thread (:func:`kforensics.forked.may_fork`)."""
    global _POOL
    cancel_prefetched()
    with _LOCK:
        pool, _POOL = _POOL, None
    if pool is not None:
        pool.shutdown(wait=True)


def segment_files(roots: Iterable[str], depth: int = 3) -> Iterator[str]:
    """Segment files (``*.log``, KRaft ``*.checkpoint``) under local directories, down to ``depth`` levels, sorted
    per directory: what a scan of these roots will read, in about its order.  Symbolic links are not followed.
    Walked as they are taken: a directory is listed only when the files before it were taken."""

    def walk(d: str, level: int) -> Iterator[str]:
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if level < depth:
                        yield from walk(e.path, level + 1)
                elif e.name.endswith((".log", ".checkpoint")) and e.is_file(follow_symlinks=False):
                    yield e.path
            except OSError:
                continue

    for root in roots:
        if os.path.isdir(root) and not os.path.islink(root):
            yield from walk(root, 1)
