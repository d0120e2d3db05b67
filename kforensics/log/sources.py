"""Where evidence lives: local directories, tar archives (read in place) and pyarrow.fs filesystems.

The log layer reads through a small path protocol that ``pathlib.Path``
already satisfies (``name``, ``parent``, ``/``, ``exists``, ``is_dir``,
``is_file``, ``iterdir``, ``stat().st_size``) plus :func:`open_binary` and
:func:`read_bounded`, the only ways file contents are read.
Archive and remote paths implement the same protocol, so the scan code is the
same for a broker dir on disk, a ``.tar``/``.tar.gz`` snapshot and an
HDFS/S3/GCS URI.

Evidence is only ever opened read-only, and only when it is a regular file:
a FIFO, device or socket named like a segment is refused before any read
could block (:class:`NotRegularFile`).  Archives are never extracted:
members are read where they lie.  Member names are never trusted as
filesystem paths: they are only keys in an in-memory tree, and absolute
names, ``..`` components and links are ignored (and counted).
"""

from __future__ import annotations

import io
import os
import posixpath
import stat
import tarfile
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz")


class NotRegularFile(OSError):
    """A path that is not a regular file (FIFO, device, socket, directory): never opened for reading."""


class FileTooLarge(OSError):
    """A file larger than the cap its kind allows (checked before reading it)."""

    def __init__(self, path: Any, size: int, cap: int):
        super().__init__(f"{size} bytes, more than the {cap} bytes a file of this kind can hold")
        self.size = size
        self.cap = cap
        self.filename = str(path)


def _is_local(path: Any) -> bool:
    return isinstance(path, (str, os.PathLike))


def open_binary(path) -> Any:
    """A read-only, unbuffered binary file object, for regular files only.

    Local files are opened with ``O_NONBLOCK`` and checked with ``fstat``
    before anything is read, so a FIFO planted in the evidence can neither
    block nor be consumed.
    """
    opener = getattr(path, "open_binary", None)
    if opener is not None:
        return opener()
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"not a regular file ({_file_type(st.st_mode)})", str(path))
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def file_size(path) -> int:
    """Size in bytes of a regular file (``NotRegularFile`` for anything else)."""
    if _is_local(path):
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"not a regular file ({_file_type(st.st_mode)})", str(path))
        return st.st_size
    return path.stat().st_size


def read_bounded(path, cap: int) -> bytes:
    """The whole content of a regular file of at most ``cap`` bytes (``FileTooLarge`` otherwise).

    The size is checked before reading, and the read never takes more than
    ``cap + 1`` bytes, so a sparse or growing file cannot balloon memory.
    """
    with open_binary(path) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
        except (AttributeError, io.UnsupportedOperation, OSError):
            size = file_size(path)
        if size > cap:
            raise FileTooLarge(path, size, cap)
        data = bytearray()
        while len(data) <= cap:
            piece = fh.read(min(1 << 20, cap + 1 - len(data)))
            if not piece:
                break
            data += piece
        if len(data) > cap:
            raise FileTooLarge(path, len(data), cap)
        return bytes(data)


def split_uri(spec: str) -> tuple[Any, str]:
    """``(pyarrow filesystem, path)`` for a URI such as ``hdfs://`` or ``s3://``; ``(None, path)`` for a local path."""
    if "://" in spec and not spec.startswith("file://"):
        from pyarrow import fs as pafs

        return pafs.FileSystem.from_uri(spec)
    return None, spec[len("file://"):] if spec.startswith("file://") else spec


@dataclass(frozen=True)
class _Stat:
    st_size: int


# --------------------------------------------------------------------------- tar archives
class _Member:
    __slots__ = ("info", "children")

    def __init__(self, info: tarfile.TarInfo | None):
        self.info = info
        self.children: dict[str, _Member] | None = None if info is not None and not info.isdir() else {}


class TarArchive:
    """An index of a tar archive's regular files and directories, built by reading headers only."""

    def __init__(self, source, label: str | None = None):
        self.source = source  # local path or ArrowPath of the archive
        self.label = label or str(source)
        self.root = _Member(None)
        self.untrusted: list[str] = []
        self._lock = threading.Lock()
        self._tar = None
        with self._open_tar() as tar:
            for info in tar:
                self._add(info)

    def _open_tar(self) -> tarfile.TarFile:
        fh = io.BufferedReader(open_binary(self.source), buffer_size=1 << 20)
        # "r:*" gives random access (gzip members are reached by decompressing the stream up to them)
        return tarfile.open(fileobj=fh, mode="r:*")

    def _add(self, info: tarfile.TarInfo) -> None:
        name = info.name
        parts = [p for p in PurePosixPath(name).parts if p not in (".", "")]
        if name.startswith("/") or ".." in parts or not (info.isfile() or info.isdir()):
            self.untrusted.append(name)  # absolute, escaping or link members are not followed
            return
        node = self.root
        for p in parts[:-1]:
            child = node.children.get(p) if node.children is not None else None
            if child is None:
                child = _Member(None)
                node.children[p] = child
            if child.children is None:
                self.untrusted.append(name)
                return
            node = child
        if not parts:
            return
        leaf = parts[-1]
        if info.isdir():
            node.children.setdefault(leaf, _Member(None))
        else:
            node.children[leaf] = _Member(info)

    def node(self, parts: tuple[str, ...]) -> _Member | None:
        node = self.root
        for p in parts:
            if node.children is None or p not in node.children:
                return None
            node = node.children[p]
        return node

    def open_member(self, info: tarfile.TarInfo):
        with self._lock:
            if self._tar is None:
                self._tar = self._open_tar()
            return _MemberFile(self, info)


class _MemberFile(io.RawIOBase):
    """A read-only view of one archive member (shares the archive handle under a lock)."""

    def __init__(self, archive: TarArchive, info: tarfile.TarInfo):
        super().__init__()
        self.archive = archive
        self.info = info
        self.pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.info.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def readinto(self, b) -> int:
        n = min(len(b), self.info.size - self.pos)
        if n <= 0:
            return 0
        with self.archive._lock:
            fobj = self.archive._tar.fileobj
            fobj.seek(self.info.offset_data + self.pos)
            data = fobj.read(n)
        b[: len(data)] = data
        self.pos += len(data)
        return len(data)

    def fileno(self):  # not a real file: callers use stat() on the path
        raise io.UnsupportedOperation("archive member")


class TarPath:
    """A path inside a tar archive (same protocol as ``pathlib.Path`` for what the log layer uses)."""

    def __init__(self, archive: TarArchive, parts: tuple[str, ...] = ()):
        self.archive = archive
        self.parts = parts

    @classmethod
    def open(cls, source, label: str | None = None) -> "TarPath":
        return cls(TarArchive(source, label))

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else ""

    @property
    def parent(self) -> "TarPath":
        return TarPath(self.archive, self.parts[:-1])

    def __truediv__(self, other: str) -> "TarPath":
        return TarPath(self.archive, self.parts + tuple(p for p in PurePosixPath(other).parts if p not in (".", "")))

    def __str__(self) -> str:
        return f"{self.archive.label}!/{'/'.join(self.parts)}"

    __fspath__ = None  # not a filesystem path

    def __repr__(self) -> str:
        return f"TarPath({str(self)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, TarPath) and other.archive is self.archive and other.parts == self.parts

    def __hash__(self) -> int:
        return hash((id(self.archive), self.parts))

    def __lt__(self, other) -> bool:
        return self.parts < other.parts

    def exists(self) -> bool:
        return self.archive.node(self.parts) is not None

    def is_dir(self) -> bool:
        node = self.archive.node(self.parts)
        return node is not None and node.children is not None

    def is_file(self) -> bool:
        node = self.archive.node(self.parts)
        return node is not None and node.info is not None and node.children is None

    def iterdir(self):
        node = self.archive.node(self.parts)
        if node is None or node.children is None:
            raise NotADirectoryError(str(self))
        for name in sorted(node.children):
            yield self / name

    def stat(self) -> _Stat:
        node = self.archive.node(self.parts)
        if node is None:
            raise FileNotFoundError(str(self))
        return _Stat(node.info.size if node.info is not None else 0)

    def open_binary(self):
        node = self.archive.node(self.parts)
        if node is None or node.info is None:
            raise FileNotFoundError(str(self))
        return io.BufferedReader(self.archive.open_member(node.info), buffer_size=1 << 20)



# --------------------------------------------------------------------------- pyarrow.fs
class ArrowPath:
    """A path on a pyarrow.fs filesystem (HDFS, S3, GCS, local), read-only."""

    def __init__(self, fs, path: str):
        self.fs = fs
        self.path = path.rstrip("/") or "/"

    @classmethod
    def from_uri(cls, uri: str) -> "ArrowPath":
        from pyarrow import fs as pafs

        fs, path = pafs.FileSystem.from_uri(uri)
        return cls(fs, path)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)

    @property
    def parent(self) -> "ArrowPath":
        return ArrowPath(self.fs, posixpath.dirname(self.path))

    def __truediv__(self, other: str) -> "ArrowPath":
        return ArrowPath(self.fs, posixpath.join(self.path, other))

    def __str__(self) -> str:
        return f"{self.fs.type_name}://{self.path}"

    def __eq__(self, other) -> bool:
        return isinstance(other, ArrowPath) and other.path == self.path and other.fs.equals(self.fs)

    def __hash__(self) -> int:
        return hash(self.path)

    def __lt__(self, other) -> bool:
        return self.path < other.path

    def _info(self):
        return self.fs.get_file_info(self.path)

    def exists(self) -> bool:
        from pyarrow import fs as pafs

        return self._info().type != pafs.FileType.NotFound

    def is_dir(self) -> bool:
        from pyarrow import fs as pafs

        return self._info().type == pafs.FileType.Directory

    def is_file(self) -> bool:
        from pyarrow import fs as pafs

        return self._info().type == pafs.FileType.File

    def iterdir(self):
        from pyarrow import fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(self.path))
        for info in sorted(infos, key=lambda i: i.path):
            yield ArrowPath(self.fs, info.path)

    def stat(self) -> _Stat:
        return _Stat(self._info().size or 0)

    def open_binary(self):
        return self.fs.open_input_file(self.path)



def resolve(spec: str):
    """A root path for a snapshot spec: a local dir or archive, or a URI (``hdfs://``, ``s3://``, ...)."""
    is_archive = spec.endswith(ARCHIVE_SUFFIXES)
    fs, path = split_uri(spec)
    if fs is not None:
        root = ArrowPath(fs, path)
        return TarPath.open(root, spec) if is_archive else root
    if is_archive:
        return TarPath.open(path, path)
    return Path(path)
