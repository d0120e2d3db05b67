"""Filesystem helpers of the Spark job (local, or any pyarrow filesystem) and the layout its table files take.

``filesystem`` None is the local filesystem (paths as the OS takes them);
otherwise a ``pyarrow.fs.FileSystem`` and paths inside it, as
:func:`kforensics.log.sources.split_uri` splits a URI.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from collections.abc import Iterable
from typing import TYPE_CHECKING, Optional

import pyarrow as pa

from ..findings import Finding
from ..tables.replay_tables import findings_rows_table
from ..tables.scan_tables import write_table
from ..tables.schemas import fit
from .names import present
from .schemas import TABLE_SCHEMAS, hive_dir

if TYPE_CHECKING:
    from pyarrow import fs as pafs

#: a pyarrow filesystem, or None for the local one
FileSystem = Optional["pafs.FileSystem"]
#: the context columns of a table row (snapshot id and time, cluster, broker id)
Context = dict[str, object]


def exists(fs: FileSystem, path: str) -> bool:
    if fs is None:
        return os.path.exists(path)
    from pyarrow import fs as pafs

    return fs.get_file_info(path).type != pafs.FileType.NotFound


def listdir(fs: FileSystem, path: str) -> list[str]:
    """The names in a directory, sorted; none when it does not exist."""
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


def _runs(name: str, t: pa.Table) -> list[tuple[tuple[str | None, ...], pa.Table]]:
    """A table's rows split by cluster (and topic), each run's rows in their order."""
    keys = ["cluster"] + (["topic"] if "topic" in TABLE_SCHEMAS[name].names else [])
    cols = [t.column(k).to_pylist() for k in keys]
    combos = list(zip(*cols))
    if all(c == combos[0] for c in combos):
        return [(combos[0], t)]
    t = t.append_column("_i", pa.array(range(len(t)), pa.int64())).sort_by(
        [(k, "ascending") for k in keys] + [("_i", "ascending")]).drop_columns(["_i"])
    cols = [t.column(k).to_pylist() for k in keys]
    runs, start = [], 0
    for i in range(1, len(t) + 1):
        if i == len(t) or any(c[i] != c[start] for c in cols):
            runs.append((tuple(c[start] for c in cols), t.slice(start, i - start)))
            start = i
    return runs


def write(name: str, t: pa.Table, staging: str, part: str, filesystem: FileSystem = None) -> None:
    """Write a table's rows under ``staging/name/cluster=C[/topic=T]/part.parquet``, one file per cluster and
    topic (the published layout: every file whole, rows keeping their ``cluster`` and ``topic`` columns; rows of
    one cluster and topic in their order)."""
    if not len(t):
        return
    for key, rows in _runs(name, t):
        d = f"{staging.rstrip('/')}/{hive_dir(name, *key)}"
        mkdirs(filesystem, d)
        write_table(rows, f"{d}/{part}.parquet", filesystem)


def write_findings(findings: Iterable[Finding], staging: str, part: str, context: Context,
                   filesystem: FileSystem = None) -> None:
    """Findings as ``findings`` rows with ``context`` (nothing is written for none)."""
    findings = list(findings)
    if findings:
        write("findings", findings_rows_table(findings, context), staging, part, filesystem)


def table_of_rows(name: str, rows: list[dict[str, object]]) -> pa.Table:
    """Rows of one of the job's own tables (``brokers``, ``summary``) fitted to its schema."""
    schema = TABLE_SCHEMAS[name]

    def value(v: object, typ: pa.DataType) -> object:
        v = present(v)
        # integers that pandas held as floats beside nulls (counts: exact below 2**53)
        return int(v) if isinstance(v, float) and pa.types.is_integer(typ) and v.is_integer() else v

    return pa.Table.from_pylist([{f.name: fit(value(r.get(f.name), f.type), f.type) for f in schema} for r in rows],
                                schema=schema)


def cluster_context(cluster: str | None) -> Context:
    """The context of a row about a whole cluster (no snapshot, no broker)."""
    return {"snapshot_id": None, "snapshot_time": None, "cluster": cluster, "broker_id": None}
