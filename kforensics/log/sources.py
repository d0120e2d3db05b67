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
names, ``..`` components and links are ignored (and counted).  Damage to an
archive never costs what it holds: a truncated or corrupt archive yields
every member before the damage, members that share a name all stay
reachable, and :meth:`TarArchive.findings` says what was lost and where.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import EvidenceUnreadable
from .archive_index import Directory, Entry, MemberIndex
from .archive_spool import INFLATE_ERRORS, Spool, decompressor
from .arrow_path import ArrowPath, Stat

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz")


class NotRegularFile(EvidenceUnreadable):
    """A path that is not a regular file (FIFO, device, socket, directory): never opened for reading.

    ``strerror`` says what it is; ``filename`` is the path.
    """

    def __init__(self, what: str, path: Any):
        super().__init__(what)
        self.strerror = what
        self.filename = str(path)

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


class FileTooLarge(EvidenceUnreadable):
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
    """``(pyarrow filesystem, path)`` for a URI such as ``hdfs://`` or ``s3://``; ``(None, path)`` for a local path.

    ``s3://`` (and ``s3a://``) go through :mod:`.object_store`: its endpoint, bounded retries and counted reads.
    """
    from .object_store import filesystem, is_store_uri, split_store_uri

    if is_store_uri(spec):
        bucket, key = split_store_uri(spec)
        return filesystem(), f"{bucket}/{key}" if key else bucket
    if "://" in spec and not spec.startswith("file://"):
        from pyarrow import fs as pafs

        return pafs.FileSystem.from_uri(spec)
    return None, spec[len("file://"):] if spec.startswith("file://") else spec


# --------------------------------------------------------------------------- tar archives
#: member names kept per kind of problem (ignored members); the rest are counted
LISTED = 100
#: what reading a damaged archive can raise (gzip: EOFError, zlib.error, BadGzipFile; tarfile: ReadError)
_ARCHIVE_ERRORS = (tarfile.TarError, EOFError, zlib.error, OSError, ValueError)


class ArchiveUnreadable(EvidenceUnreadable):
    """An archive that cannot be opened at all (not a tar, or damaged before its first member)."""


@dataclass
class ArchiveCopy:
    """A member that is not reachable by its name (another member of that name is): still evidence."""

    name: str
    info: Entry
    why: str


class TarArchive:
    """An index of a tar archive's regular files and directories, built by reading headers only.

    Damage never costs what the archive does hold: a truncated or corrupt
    archive keeps every member indexed before the damage (:attr:`stopped`
    says where and why reading stopped), a member whose data cannot be read
    is read as far as it can be (:attr:`damaged`), and members that share a
    name are all kept (the last regular file is reachable by its name, as an
    extraction would leave it; the others are :attr:`copies`).  Directories
    win over regular files of the same name, so one hostile member cannot
    hide a partition.  :meth:`findings` reports all of it.
    """

    def __init__(self, source, label: str | None = None):
        self.source = source  # local path or ArrowPath of the archive
        self.label = label or str(source)
        self.root = Directory()
        self.members = MemberIndex()
        self.untrusted: list[str] = []  # the first LISTED names; untrusted_count counts them all
        self.untrusted_count = 0
        self.copies: list[ArchiveCopy] = []
        self.copy_names: dict[str, int] = {}  # name -> members of that name
        self.stopped: dict[str, Any] | None = None  # where reading the headers stopped early, and why
        self.damaged: dict[str, dict[str, Any]] = {}  # member name -> where reading its data failed
        self.reported = False  # set by the scan that reports findings() for the archive (once, whatever it holds)
        self._last: Entry | None = None
        self._lock = threading.Lock()
        # an archive in an object store is read with ranged requests: a small buffer keeps reading a header (512
        # bytes) from fetching a megabyte of the member after it; member data is read in the readers' own windows
        buffer = 1 << 20 if _is_local(self.source) else 64 << 10
        self._raw = io.BufferedReader(open_binary(self.source), buffer_size=buffer)
        self.spool: Spool | None = None  # the inflated content of a compressed archive (see archive_spool)
        self._data: io.BufferedReader | Spool = self._raw  # what member data is read from: the archive, or its spool
        try:
            self._index()
        except BaseException:
            self.close()
            raise

    def _index(self) -> None:
        """Read every header once, in order (a compressed archive is inflated once, into its spool)."""
        try:
            stream = decompressor(self._raw)
            if stream is not None:
                self.spool = self._data = Spool(stream)
            tar = tarfile.open(fileobj=self._data, mode="r:")
        except (tarfile.TarError, *INFLATE_ERRORS) as e:
            raise ArchiveUnreadable(f"not a readable tar archive: {e}") from None
        try:
            while (info := tar.next()) is not None:
                # the index keeps an Entry per member, the tar reader none (typeshed does not declare the list of
                # headers read, TarFile.members)
                tar.members.clear()  # type: ignore[attr-defined]
                self._last = entry = Entry.of(info)
                self._add(info, entry)
            self._verify()
        except _ARCHIVE_ERRORS as e:
            self._stop(e)

    def _verify(self) -> None:
        """Read a compressed archive to its end, so that its checksum (gzip CRC-32, xz, bzip2) is verified:
        the tar reader stops at the end-of-archive blocks, before the compressor's trailer."""
        if self.spool is not None:
            self.spool.seek(0, 2)
            if self.spool.error is not None:
                raise self.spool.error.with_traceback(None)

    def close(self) -> None:
        """Let go of the archive's handle and its spool (the temporary file is deleted)."""
        if self.spool is not None:
            self.spool.close()
        self._raw.close()

    def _stop(self, e: BaseException) -> None:
        """Reading the headers failed: keep what was indexed, and say where and which member it cost."""
        truncated = isinstance(e, EOFError) or "unexpected end of data" in str(e) or "truncated" in str(e)
        last = self._last
        member = None
        if last is not None and last.size and not self._readable_to_end(last):
            member = last.name
        self.stopped = {"truncated": truncated, "error": f"{type(e).__name__}: {e}", "member": member,
                        "after": None if last is None else last.name,
                        "tar_offset": None if last is None else last.offset_data + last.size}

    def _readable_to_end(self, info: Entry) -> bool:
        """Whether the last byte of a member's data can be read."""
        if not info.size:
            return True
        end = info.offset_data + info.size
        if self.spool is not None:
            return self.spool.reaches(end)
        try:
            self._raw.seek(end - 1)
            return len(self._raw.read(1)) == 1
        except _ARCHIVE_ERRORS:
            return False

    def _ignore(self, name: str) -> None:
        self.untrusted_count += 1
        if len(self.untrusted) < LISTED:
            self.untrusted.append(name)

    def _shadow(self, name: str, info: Entry, why: str) -> None:
        self.copies.append(ArchiveCopy(name, info, why))
        self.copy_names[name] = self.copy_names.get(name, 1) + 1

    def _add(self, info: tarfile.TarInfo, entry: Entry) -> None:
        name = info.name
        # split here, not by PurePosixPath: it interns every part, which kept each member's name a second time
        parts = [p for p in name.split("/") if p not in (".", "")]
        if name.startswith("/") or ".." in parts or not (info.isfile() or info.isdir()):
            self._ignore(name)  # absolute, escaping or link members are not followed
            return
        if not parts:
            return
        children = self.root.children
        for i, p in enumerate(parts[:-1]):
            children = self._directory(children, p, "/".join(parts[: i + 1]),
                                       "a directory of the same name holds members")
        leaf, path = parts[-1], "/".join(parts)
        if info.isdir():
            self._directory(children, leaf, path, "a directory of the same name")
            return
        old = children.get(leaf)
        if old is None:
            children[leaf] = self.members.add(entry, path)
        elif isinstance(old, Directory):
            self._shadow(path, entry, "a directory of the same name")
        else:
            # as an extraction would: the last regular file of a name is the one found there
            self._shadow(path, self.members.entry(old, path), "a later member of the same name")
            children[leaf] = self.members.add(entry, path)

    def _directory(self, children: dict[str, Directory | int], name: str, path: str,
                   why: str) -> dict[str, Directory | int]:
        """The children of directory ``name`` among ``children``, made one if it is not: a directory wins over a
        regular file of its name, which stays a copy (``why``)."""
        node = children.get(name)
        if isinstance(node, Directory):
            return node.children
        if node is not None:
            self._shadow(path, self.members.entry(node, path), why)
        made = children[name] = Directory()
        return made.children

    def node(self, parts: tuple[str, ...]) -> Directory | int | None:
        """The directory or the member number at ``parts`` (None: nothing there)."""
        node: Directory | int = self.root
        for p in parts:
            if not isinstance(node, Directory) or p not in node.children:
                return None
            node = node.children[p]
        return node

    def entry(self, parts: tuple[str, ...]) -> Entry | None:
        """The regular file at ``parts`` (None: nothing there, or a directory)."""
        node = self.node(parts)
        return None if node is None or isinstance(node, Directory) else self.members.entry(node, "/".join(parts))

    def open_member(self, info: Entry):
        return _MemberFile(self, info)

    def read_at(self, offset: int, n: int) -> bytes:
        """``n`` bytes of the archive's (inflated) content at ``offset`` (fewer where it ends or is cut)."""
        with self._lock:
            self._data.seek(offset)
            return self._data.read(n)

    def note_damage(self, info: Entry, position: int, why: str) -> None:
        """Reading a member's data failed at ``position`` (in the member): what it holds up to there is kept."""
        seen = self.damaged.get(info.name)
        if seen is None or position < seen["position"]:
            self.damaged[info.name] = {"position": position, "size": info.size, "error": why}

    def path_of(self, name: str) -> str:
        return f"{self.label}!/{name}"

    def read_copy(self, copy: ArchiveCopy):
        """A read-only file object over a member that is not reachable by its name."""
        return io.BufferedReader(self.open_member(copy.info), buffer_size=1 << 20)

    def findings(self) -> list:
        """What the archive itself holds besides a log dir: ignored members, copies, truncation, damage."""
        from ..findings import finding

        out = []
        if self.untrusted_count:
            out.append(finding("ARCHIVE_MEMBERS_IGNORED", f"{self.untrusted_count} archive member(s) with absolute, "
                               "escaping or link names (or below a link) are not followed", file=self.label,
                               count=self.untrusted_count, members=list(self.untrusted)))
        names = list(self.copy_names.items())
        for name, n in names[:LISTED]:
            copies = [c for c in self.copies if c.name == name]
            out.append(finding("ARCHIVE_DUPLICATE_MEMBER", f"{n} members are named {name}; only one is found by "
                               "that name (a directory, else the last file, as an extraction leaves it); scan "
                               "lists every copy among its files with its SHA-256", file=self.path_of(name),
                               member=name, members=n,
                               copies=[{"header_position": c.info.offset, "size": c.info.size, "why": c.why}
                                       for c in copies[:LISTED]]))
        if len(names) > LISTED:
            out.append(finding("MORE_FINDINGS", f"{len(names) - LISTED} more ARCHIVE_DUPLICATE_MEMBER findings not "
                               f"listed ({len(names)} in all)", file=self.label,
                               finding_code="ARCHIVE_DUPLICATE_MEMBER",
                               total=len(names), listed=LISTED))
        st = self.stopped
        if st is not None:
            cut = f"; member {st['member']} is cut" if st["member"] else ""
            if st["truncated"]:
                out.append(finding("ARCHIVE_TRUNCATED", f"the archive ends before its last member ({st['error']}); "
                                   f"every member before the cut is read{cut}", file=self.label, **st))
            else:
                out.append(finding("ARCHIVE_DAMAGED", f"the archive cannot be read past a damaged point "
                                   f"({st['error']}); every member before it is read{cut}", file=self.label, **st))
        for name, d in list(self.damaged.items())[:LISTED]:
            if st is not None and name == st["member"]:
                continue
            out.append(finding("ARCHIVE_DAMAGED", f"member {name} can be read up to byte {d['position']} of "
                               f"{d['size']} ({d['error']}); findings past that point are the archive's damage",
                               file=self.label, member=name, **d))
        return out


class _MemberFile(io.RawIOBase):
    """A read-only view of one archive member (reads the archive's content under its lock).

    Sparse members are read as their expanded content (holes are zeros).  A
    member whose data the archive does not hold in full (truncated, corrupt)
    reads as far as it can and then ends: every read at or past that point
    returns nothing (a short read, the end of the data), reads before it
    still work, and the archive notes where.
    """

    def __init__(self, archive: TarArchive, info: Entry):
        super().__init__()
        self.archive = archive
        self.info = info
        self.pos = 0
        self.fail_at: int | None = None  # where the member's data ends in this archive, when before its size

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
        end = self.info.size if self.fail_at is None else self.fail_at
        n = min(len(b), end - self.pos)
        if n <= 0:
            return 0
        try:
            data = self._sparse(n) if self.info.sparse else self.archive.read_at(self.info.offset_data + self.pos, n)
        except _ARCHIVE_ERRORS as e:
            self._ends(self.pos, f"{type(e).__name__}: {e}")
            return 0
        if len(data) < n:
            self._ends(self.pos + len(data), "the archive ends inside the member")
        b[: len(data)] = data
        self.pos += len(data)
        return len(data)

    def _ends(self, at: int, why: str) -> None:
        self.fail_at = at if self.fail_at is None else min(at, self.fail_at)
        self.archive.note_damage(self.info, at, why)

    def _sparse(self, n: int) -> bytes:
        """``n`` bytes of a sparse member's expanded content from ``pos``: its stored regions, zeros between."""
        out = bytearray(n)
        lo_want, hi_want = self.pos, self.pos + n
        stored = 0
        for off, size in self.info.sparse or ():
            lo, hi = max(off, lo_want), min(off + size, hi_want)
            if lo < hi:
                chunk = self.archive.read_at(self.info.offset_data + stored + (lo - off), hi - lo)
                out[lo - lo_want: lo - lo_want + len(chunk)] = chunk
                if len(chunk) < hi - lo:
                    return bytes(out[: lo - lo_want + len(chunk)])
            stored += size
        return bytes(out)

    def fileno(self):  # not a real file: callers use stat() on the path
        raise io.UnsupportedOperation("archive member")


class TarPath:
    """A path inside a tar archive (same protocol as ``pathlib.Path`` for what the log layer uses)."""

    def __init__(self, archive: TarArchive, parts: tuple[str, ...] = ()):
        self.archive = archive
        self.parts = parts

    @classmethod
    def open(cls, source, label: str | None = None) -> TarPath:
        return cls(TarArchive(source, label))

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else ""

    @property
    def parent(self) -> TarPath:
        return TarPath(self.archive, self.parts[:-1])

    def __truediv__(self, other: str) -> TarPath:
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
        return isinstance(self.archive.node(self.parts), Directory)

    def is_file(self) -> bool:
        node = self.archive.node(self.parts)
        return node is not None and not isinstance(node, Directory)

    def iterdir(self):
        node = self.archive.node(self.parts)
        if not isinstance(node, Directory):
            raise NotADirectoryError(str(self))
        for name in sorted(node.children):
            yield TarPath(self.archive, (*self.parts, name))

    def stat(self) -> Stat:
        node = self.archive.node(self.parts)
        if node is None:
            raise FileNotFoundError(str(self))
        return Stat(0 if isinstance(node, Directory) else self.archive.members.size[node])

    def open_binary(self):
        entry = self.archive.entry(self.parts)
        if entry is None:
            raise FileNotFoundError(str(self))
        return io.BufferedReader(self.archive.open_member(entry), buffer_size=1 << 20)



def resolve(spec: str):
    """A root path for a snapshot spec: a local dir or archive, or a URI (``hdfs://``, ``s3://``, ...)."""
    from .object_store import StorePath, is_store_uri

    is_archive = spec.endswith(ARCHIVE_SUFFIXES)
    if is_store_uri(spec):
        store_root = StorePath.from_uri(spec)
        return TarPath.open(store_root, spec) if is_archive else store_root
    fs, path = split_uri(spec)
    if fs is not None:
        root = ArrowPath(fs, path)
        return TarPath.open(root, spec) if is_archive else root
    if is_archive:
        return TarPath.open(path, path)
    return Path(path)
