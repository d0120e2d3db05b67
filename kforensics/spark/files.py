"""Filesystem helpers of the Spark job: the local filesystem, or any pyarrow filesystem.

``filesystem`` None is the local filesystem (paths as the OS takes them);
otherwise a ``pyarrow.fs.FileSystem`` and paths inside it, as
:func:`kforensics.log.sources.split_uri` splits a URI.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from typing import TYPE_CHECKING, Optional, TypedDict

if TYPE_CHECKING:
    from pyarrow import fs as pafs

#: a pyarrow filesystem, or None for the local one
FileSystem = Optional["pafs.FileSystem"]


class Context(TypedDict):
    """The context columns of a table row (None where the row is about no snapshot, cluster or broker)."""

    snapshot_id: str | None
    snapshot_time: str | None
    cluster: str | None
    broker_id: int | None


def exists(fs: FileSystem, path: str) -> bool:
    if fs is None:
        return os.path.exists(path)
    from pyarrow import fs as pafs

    return fs.get_file_info(path).type != pafs.FileType.NotFound


def listdir(fs: FileSystem, path: str) -> list[str]:
    """The names in a directory, sorted; none when it does not exist.  (Light: the output is checked with it before
    anything heavy is imported.)"""
    if fs is None:
        return sorted(os.listdir(path)) if os.path.isdir(path) else []
    from pyarrow import fs as pafs

    return sorted(posixpath.basename(i.path) for i in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)))


def rmtree(fs: FileSystem, path: str) -> None:
    """Remove a directory and everything in it (a file, or nothing, alike)."""
    if fs is None:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.remove(path)
    elif exists(fs, path):
        fs.delete_dir(path)


def move(fs: FileSystem, src: str, dst: str) -> None:
    if fs is None:
        os.replace(src, dst)
    else:
        fs.move(src, dst)


def mkdirs(fs: FileSystem, path: str) -> None:
    if fs is None:
        os.makedirs(path, exist_ok=True)
    else:
        fs.create_dir(path, recursive=True)


def parquet_files(fs: FileSystem, path: str) -> list[str]:
    """Every ``.parquet`` file under ``path``."""
    if fs is None:
        return sorted(os.path.join(d, f) for d, _, names in os.walk(path) for f in names if f.endswith(".parquet"))
    from pyarrow import fs as pafs

    return sorted(i.path for i in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True))
                  if i.path.endswith(".parquet"))


def cluster_context(cluster: str | None) -> Context:
    """The context of a row about a whole cluster (no snapshot, no broker)."""
    return {"snapshot_id": None, "snapshot_time": None, "cluster": cluster, "broker_id": None}
