"""The index of a tar archive's members: each regular file a number and a few machine words, not objects.

:class:`~kforensics.log.sources.TarArchive` builds it from the headers, once;
:class:`Entry` objects are made only for the members opened or reported.
"""

from __future__ import annotations

import tarfile
from array import array
from typing import cast


class Entry:
    """Where one regular-file member's data lies (made when a member is opened or reported; the index itself
    keeps these as columns, :class:`MemberIndex`)."""

    __slots__ = ("name", "offset", "offset_data", "size", "sparse")

    def __init__(self, name: str, offset: int, offset_data: int, size: int,
                 sparse: list[tuple[int, int]] | None = None):
        self.name = name
        self.offset = offset  # of its header
        self.offset_data = offset_data
        self.size = size
        self.sparse = sparse  # None, or the (offset, size) regions a sparse member stores

    @classmethod
    def of(cls, info: tarfile.TarInfo) -> Entry:
        # typeshed declares TarInfo.sparse as bytes: tarfile stores the regions
        return cls(info.name, info.offset, info.offset_data, info.size,
                   cast("list[tuple[int, int]] | None", info.sparse))


class MemberIndex:
    """The regular-file members of an archive as columns: a member is a number, its header and data offsets and
    size three machine words (an archive of 400 000 members held an object, a name and three integers each:
    about 450 bytes a member).  Names are kept only where the member's path in the tree does not spell them."""

    def __init__(self) -> None:
        self.offset = array("q")
        self.offset_data = array("q")
        self.size = array("q")
        self.sparse: dict[int, list[tuple[int, int]]] = {}
        self.names: dict[int, str] = {}  # member -> its name, when not its path's parts joined by "/"

    def add(self, entry: Entry, path: str) -> int:
        n = len(self.size)
        self.offset.append(entry.offset)
        self.offset_data.append(entry.offset_data)
        self.size.append(entry.size)
        if entry.sparse:
            self.sparse[n] = entry.sparse
        if entry.name != path:
            self.names[n] = entry.name
        return n

    def entry(self, n: int, path: str) -> Entry:
        """Member ``n``, whose path in the tree is ``path``."""
        return Entry(self.names.get(n, path), self.offset[n], self.offset_data[n], self.size[n], self.sparse.get(n))


class Directory:
    """A directory of the archive's tree: its children by name, a regular file as its member number."""

    __slots__ = ("children",)

    def __init__(self) -> None:
        self.children: dict[str, Directory | int] = {}
