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


def is_object_store(fs: FileSystem) -> bool:
    """Whether ``fs`` is an object store (S3): keys under prefixes, no directories (see :func:`mkdirs`)."""
    return fs is not None and getattr(fs, "type_name", "") == "s3"


def rmtree(fs: FileSystem, path: str) -> None:
    """Remove a directory and everything in it (a file, or nothing, alike)."""
    if fs is None:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.remove(path)
    elif is_object_store(fs):
        _delete_objects(fs, path)
    elif exists(fs, path):
        fs.delete_dir(path)


def _delete_objects(fs: pafs.FileSystem, path: str) -> None:
    """Every object under the prefix ``path`` deleted, then each "directory" the deepest first.

    Not pyarrow's ``delete_dir`` alone: it deletes every key under the prefix in one ``DeleteObjects`` request, in
    listing order, so a directory's key comes before the keys inside it; a store that keeps keys as files cannot
    remove a directory that still holds files (s3proxy's ``filesystem-nio2`` answers 500 DirectoryNotEmpty, its
    older ``filesystem`` backend retries for 10 s per directory).  S3 itself deletes in any order.
    """
    from pyarrow import fs as pafs

    infos = {i.path: i.type for i in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True))}
    for p in sorted(infos, key=lambda p: (-p.count("/"), p)):
        try:
            if infos[p] == pafs.FileType.File:
                fs.delete_file(p)
            else:
                fs.delete_dir(p)  # its files are gone, and so are the directories inside it
        except FileNotFoundError:
            pass  # a directory that was only the prefix of the keys just deleted
    try:
        fs.delete_dir(path)
    except FileNotFoundError:
        pass


def move(fs: FileSystem, src: str, dst: str) -> None:
    """Move a file or a directory (on an object store, which renames nothing, each object under ``src`` is copied
    to the same key under ``dst`` and then ``src`` is deleted: pyarrow's ``move`` moves one object only)."""
    if fs is None:
        os.replace(src, dst)
    elif is_object_store(fs) and fs.get_file_info(src).type == _directory():
        from pyarrow import fs as pafs

        for info in fs.get_file_info(pafs.FileSelector(src, recursive=True)):
            if info.type == pafs.FileType.File:
                fs.copy_file(info.path, dst + info.path[len(src):])
        _delete_objects(fs, src)
    else:
        fs.move(src, dst)


def _directory() -> object:
    from pyarrow import fs as pafs

    return pafs.FileType.Directory


def mkdirs(fs: FileSystem, path: str) -> None:
    """Create a directory; nothing on an object store, where a key needs no parent: the empty "directory marker"
    object pyarrow would write there is deleted with the objects under it in one ``DeleteObjects`` request, which
    stores that keep keys as files refuse while the directory still holds them (s3proxy's backends)."""
    if fs is None:
        os.makedirs(path, exist_ok=True)
    elif not is_object_store(fs):
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
