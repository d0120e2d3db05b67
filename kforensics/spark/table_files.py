"""Writing the job's tables in their hive-style layout: ``<table>/cluster=C[/topic=T]/<part>.parquet``."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from ..findings import Finding
from ..tables.replay_tables import findings_rows_table
from ..tables.scan_tables import write_table
from ..tables.schemas import fit
from .files import Context, FileSystem, mkdirs
from .names import present
from .schemas import TABLE_SCHEMAS, hive_dir


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
