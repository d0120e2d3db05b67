"""The path protocol the log layer reads evidence through, declared (``log/sources.py`` describes it in words).

``pathlib.Path`` satisfies it; so do the archive paths (``TarPath``) and the
paths on a pyarrow filesystem (``ArrowPath``), which add ``open_binary``.
File contents are read only through ``sources.open_binary`` and
``sources.read_bounded``, never through the path itself, so the protocol
holds no method that reads.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Protocol, TypeAlias


class FileStat(Protocol):
    """What the log layer asks of a ``stat()``: the size."""

    @property
    def st_size(self) -> int: ...


class EvidencePath(Protocol):
    """A file or directory of the evidence: local, inside an archive, or on a remote filesystem."""

    @property
    def name(self) -> str: ...

    @property
    def parent(self) -> EvidencePath: ...

    def __truediv__(self, other: str, /) -> EvidencePath: ...

    def exists(self) -> bool: ...

    def is_dir(self) -> bool: ...

    def is_file(self) -> bool: ...

    def iterdir(self) -> Iterator[EvidencePath]: ...

    def stat(self) -> FileStat: ...


#: what the log layer's functions take for a file or directory: a local path (a string or ``os.PathLike``, made a
#: ``Path`` by ``listing.as_path``) or any :class:`EvidencePath`
Evidence: TypeAlias = "str | os.PathLike[str] | EvidencePath"


class EvidenceFile(Protocol):
    """An open, read-only evidence file as ``sources.open_binary`` gives it (a local file, an archive member, a
    remote file): read, read into, seek."""

    def read(self, size: int = -1, /) -> bytes: ...

    def readinto(self, buffer: memoryview, /) -> int | None: ...

    def seek(self, offset: int, whence: int = 0, /) -> int: ...

    def close(self) -> None: ...

    def fileno(self) -> int: ...  # a local file's descriptor; others raise OSError (they are sized by stat())
