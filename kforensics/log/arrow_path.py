"""Paths on a pyarrow.fs filesystem (HDFS, S3, GCS, local), read-only, in the log layer's path protocol."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Stat:
    """What the log layer asks of a ``stat()``: the size."""

    st_size: int


class ArrowPath:
    """A path on a pyarrow.fs filesystem (HDFS, S3, GCS, local), read-only."""

    def __init__(self, fs: Any, path: str):  # fs: a pyarrow.fs.FileSystem (pyarrow ships no types)
        self.fs = fs
        self.path = path.rstrip("/") or "/"

    @classmethod
    def from_uri(cls, uri: str) -> ArrowPath:
        from pyarrow import fs as pafs

        fs, path = pafs.FileSystem.from_uri(uri)
        return cls(fs, path)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)

    @property
    def parent(self) -> ArrowPath:
        return ArrowPath(self.fs, posixpath.dirname(self.path))

    def __truediv__(self, other: str) -> ArrowPath:
        return ArrowPath(self.fs, posixpath.join(self.path, other))

    def __str__(self) -> str:
        return f"{self.fs.type_name}://{self.path}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArrowPath) and other.path == self.path and bool(other.fs.equals(self.fs))

    def __hash__(self) -> int:
        return hash(self.path)

    def __lt__(self, other: ArrowPath) -> bool:
        return self.path < other.path

    def _info(self) -> Any:  # a pyarrow.fs.FileInfo
        return self.fs.get_file_info(self.path)

    def exists(self) -> bool:
        from pyarrow import fs as pafs

        return bool(self._info().type != pafs.FileType.NotFound)

    def is_dir(self) -> bool:
        from pyarrow import fs as pafs

        return bool(self._info().type == pafs.FileType.Directory)

    def is_file(self) -> bool:
        from pyarrow import fs as pafs

        return bool(self._info().type == pafs.FileType.File)

    def iterdir(self) -> Iterator[ArrowPath]:
        from pyarrow import fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(self.path))
        for info in sorted(infos, key=lambda i: i.path):
            yield ArrowPath(self.fs, info.path)

    def stat(self) -> Stat:
        return Stat(self._info().size or 0)

    def open_binary(self) -> Any:  # a pyarrow NativeFile, read-only
        return self.fs.open_input_file(self.path)
