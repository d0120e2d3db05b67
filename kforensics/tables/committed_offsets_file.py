"""The ``committed_offsets`` Parquet file, written a bounded slice of rows at a time.

A ``__consumer_offsets`` partition of a million groups is a million rows:
built as one list of row dicts and one Arrow table it cost gigabytes.  Rows
are made from ``ROWS`` committed offsets at a time and each slice is written
as its own row group, so memory holds one slice whatever the number of
groups.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow.parquet as pq

from ..consumers.committed_offsets import CommittedOffsets
from .impact_tables import committed_offset_rows
from .schemas import SCHEMA_VERSION, SCHEMAS, table

#: committed offsets per row group
ROWS = 1 << 13


def write_committed_offsets(committed: CommittedOffsets | None, path: str, context: Mapping[str, Any] | None = None,
                            *, filesystem: Any = None, rows: int = ROWS) -> None:
    """Write ``committed`` (None: no rows) to ``path``, one row group per ``rows`` offsets.

    Called from one thread at a time per file (the Parquet writer is not shared)."""
    schema = SCHEMAS["committed_offsets"].with_metadata({"kforensics.schema_version": str(SCHEMA_VERSION)})
    offsets = committed.offsets if committed is not None else []
    with pq.ParquetWriter(path, schema, filesystem=filesystem) as w:
        if not offsets:
            w.write_table(table("committed_offsets", []))
        for a in range(0, len(offsets), rows):
            part = CommittedOffsets(offsets=offsets[a : a + rows])
            w.write_table(table("committed_offsets", committed_offset_rows(part, context)))
