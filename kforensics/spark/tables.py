"""Reading the tables a Spark run wrote: ``OUT/<table>/cluster=C[/topic=T]/*.parquet`` (hive-style).

Every file holds whole rows (its ``cluster`` and ``topic`` columns too), so a
file can be read alone; a table is read with Spark
(``spark.read.parquet("OUT/verdicts")``) or with :func:`read`, which prunes
the directories a filter on ``cluster`` or ``topic`` excludes.  (Plain
``pandas.read_parquet(dir)`` infers the directory values as categories that
clash with the columns: pass ``partitioning=None`` to it, or use :func:`read`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from .files import FileSystem

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow.compute as pc
    import pyarrow.dataset as ds


def dataset(out: str, name: str, filesystem: FileSystem = None) -> ds.Dataset:
    """The ``pyarrow.dataset`` of one output table, partitioned by cluster (and topic) as strings."""
    import pyarrow.dataset as ds

    from ..log.sources import split_uri
    from .schemas import TABLE_SCHEMAS

    if filesystem is None:
        filesystem, out = split_uri(str(out))
    schema = TABLE_SCHEMAS[name]
    keys = [k for k in ("cluster", "topic") if k in schema.names]
    part = ds.partitioning(pa.schema([(k, pa.string()) for k in keys]), flavor="hive")
    return ds.dataset(f"{str(out).rstrip('/')}/{name}", schema=schema, format="parquet", partitioning=part,
                      filesystem=filesystem)


def read(out: str, name: str, *, cluster: object = ..., topic: object = ..., columns: list[str] | None = None,
         filter: pc.Expression | None = None) -> pa.Table:
    """One output table (optionally one ``cluster`` and/or ``topic``: only their directories are read), rows
    with the table's schema."""
    import pyarrow.compute as pc

    expr = filter
    for key, value in (("cluster", cluster), ("topic", topic)):
        if value is not ...:
            e = pc.field(key).is_null() if value is None else pc.field(key) == value
            expr = e if expr is None else expr & e
    return dataset(out, name).to_table(columns=columns, filter=expr)


def read_pandas(out: str, name: str, *, cluster: object = ..., topic: object = ..., columns: list[str] | None = None,
                filter: pc.Expression | None = None) -> pd.DataFrame:
    """:func:`read` as a pandas frame."""
    return read(out, name, cluster=cluster, topic=topic, columns=columns, filter=filter).to_pandas()
