"""Directory listings over every source (local, tar archive, remote): name, kind of entry, path.

Only the listing is read.  An entry is a directory, a regular file (a
symlink counts when it leads to one), or something else that is never
opened (a FIFO, device, socket or dangling link), named by :attr:`Entry.what`.
"""

from __future__ import annotations

import operator
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from ..findings import Finding, finding
from .paths import Evidence, EvidencePath

#: where a directory that could not be listed goes: (the directory, why)
Unreadable = list[tuple[Any, str]]


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    path: EvidencePath
    is_dir: bool
    is_file: bool
    what: str = "regular file"


def as_path(path: Evidence) -> Path | EvidencePath:
    """A local path as ``Path``; archive and remote paths as they are."""
    if isinstance(path, Path) and is_local(path):
        return path  # already one (a Path is immutable: the same object serves)
    return Path(path) if isinstance(path, (str, os.PathLike)) else path


_LOCAL = type(Path())


def is_local(path: Any) -> bool:
    """Whether ``path`` is a local file system path (not an archive member's or a remote object's)."""
    return type(path) is _LOCAL


#: a child path from a plain name, without parsing it again (CPython's pathlib has it; ``/`` where it does not)
_CHILD = getattr(Path, "_make_child_relpath", None)


#: whether a child path can be handed its text (CPython's pathlib caches it in ``_str``; 3.12 and later differ)
_TEXT_SLOT = _CHILD is not None and "_str" in getattr(PurePath, "__slots__", ())


def _local_entry(base: Path, e: os.DirEntry[str], text: bool) -> Entry:
    # a listed name holds no separator: the child is built without parsing (a fleet lists 100 000 of them)
    p: Path = _CHILD(base, e.name) if _CHILD is not None else base / e.name
    if text:
        # the listing's own text of the child (its dir's text, a separator, its name) is the text pathlib would
        # build when the file is opened: 2 us a path, three paths a partition dir
        p._str = e.path  # type: ignore[attr-defined]
    try:
        if e.is_dir(follow_symlinks=False):
            return Entry(e.name, p, True, False, "directory")
        if e.is_file(follow_symlinks=False):
            # the listing's own file type (no stat call): a regular file, not a link to one
            return Entry(e.name, p, False, True)
        st = os.stat(e.path)  # follows a symlink: Kafka would read what it leads to
    except OSError:
        return Entry(e.name, p, False, False, "dangling symbolic link" if e.is_symlink() else "unreadable entry")
    if stat.S_ISREG(st.st_mode):
        return Entry(e.name, p, False, True)
    if stat.S_ISDIR(st.st_mode):
        return Entry(e.name, p, False, False, "symbolic link to a directory")
    kinds = ((stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
             (stat.S_ISSOCK, "socket"))
    return Entry(e.name, p, False, False, next((n for t, n in kinds if t(st.st_mode)), "special file"))


_by_name = operator.attrgetter("name")


def unlisted_dir(path: Any, why: str) -> Finding:
    """The finding of a directory that could not be listed (a log dir, a partition dir), ``why`` from
    :data:`Unreadable`."""
    return finding("UNREADABLE_DIR", f"cannot list: {why}", file=path)


def list_dir(path: Evidence, unreadable: Unreadable | None = None, keep: Callable[[str], bool] | None = None
             ) -> list[Entry]:
    """Sorted entries of a local, archive or remote directory; a failure to list goes to ``unreadable``.
    ``keep``: only the entries whose name it accepts (a reader of one root file or one topic's partition dirs
    does not make an entry of each of a log dir's ten thousand names)."""
    base = as_path(path)
    try:
        if isinstance(base, Path):
            with os.scandir(base) as it:
                listed = sorted(it if keep is None else (e for e in it if keep(e.name)), key=_by_name)
            # the base's text was just made (scandir took it); "." lists "./name" where pathlib says "name"
            text = _TEXT_SLOT and is_local(base) and str(base) != "."
            return [_local_entry(base, e, text) for e in listed]
        out = []
        for p in base.iterdir():
            if keep is not None and not keep(p.name):
                continue
            d = p.is_dir()
            out.append(Entry(p.name, p, d, not d, "directory" if d else "regular file"))
        return sorted(out, key=lambda e: e.name)
    except OSError as e:
        if unreadable is not None:
            unreadable.append((base, e.strerror or str(e)))
        return []


def iter_dir(path: Evidence, unreadable: Unreadable | None = None) -> Iterator[Entry]:
    """The entries of :func:`list_dir`, in the same order, one at a time where the source lists in name order
    itself (archive and remote directories): a directory of 400 000 members is never held as 400 000 entries."""
    base = as_path(path)
    if isinstance(base, Path):
        yield from list_dir(base, unreadable)
        return
    try:
        for p in base.iterdir():
            d = p.is_dir()
            yield Entry(p.name, p, d, not d, "directory" if d else "regular file")
    except OSError as e:
        if unreadable is not None:
            unreadable.append((base, e.strerror or str(e)))
