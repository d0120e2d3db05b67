"""The Parquet tables a report reads (``scan --out`` or ``spark --out``), loaded once.

``scan --out`` writes ``DIR/<table>.parquet``; ``spark --out`` writes
``DIR/<table>/`` directories of parts whose rows keep their cluster and
topic.  The batches table (the largest) is read only for the partitions
that lose records, and only the columns their times need.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .model import time_range

#: the batch columns the lost records' times need (the batches table can be the fleet's largest)
_BATCH_COLUMNS = ["cluster", "topic", "partition", "broker_id", "base_offset", "last_offset", "records_count",
                  "base_timestamp", "max_timestamp"]


@dataclass
class Tables:
    """The tables found in one output directory (empty frames for the absent ones)."""

    path: str
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)
    lost_batches: pd.DataFrame | None = None

    def get(self, name: str) -> pd.DataFrame:
        return self.frames.get(name, pd.DataFrame())


def _location(path: str, name: str) -> str | None:
    for cand in (os.path.join(path, f"{name}.parquet"), os.path.join(path, name)):
        if os.path.exists(cand):
            return cand
    return None


def _read(where: str, columns: list[str] | None = None, flt: Any = None) -> pd.DataFrame:
    import pyarrow.dataset as ds

    dataset = ds.dataset(where, format="parquet")  # no partitioning: the rows keep cluster and topic
    cols = [c for c in columns if c in dataset.schema.names] if columns else None
    return dataset.to_table(columns=cols, filter=flt).to_pandas()


def load_tables(path: str) -> Tables:
    """Every table the report uses from ``path``; the batches only of the partitions that lose records."""
    from ..errors import InputError

    t = Tables(path)
    for name in ("files", "findings", "partitions", "segments", "verdicts", "divergence", "consumer_impact",
                 "transactions"):
        where = _location(path, name)
        if where is not None:
            t.frames[name] = _read(where)
            t.present.add(name)
    if not t.present:
        raise InputError(f"{path} holds no kforensics table (files, findings, verdicts, ...): give the directory "
                         "`scan --out` or `spark --out` wrote")
    where = _location(path, "batches")
    if where is not None and not t.get("verdicts").empty:
        _lost_batches(t, where)
    return t


def _lost_batches(t: Tables, where: str) -> None:
    import pyarrow.compute as pc

    from ..plots_fleet import lost_batches_frame
    from ..verdict_rules import IMPACT

    v = t.get("verdicts")
    hit = v[v["verdict"].isin(IMPACT)]
    if hit.empty:
        return
    flt = pc.field("topic").isin(sorted(set(hit["topic"]))) & pc.field("partition").isin(
        sorted({int(p) for p in hit["partition"]}))
    t.lost_batches = lost_batches_frame(v, _read(where, _BATCH_COLUMNS, flt))
    t.present.add("batches")


def replica_times(t: Tables) -> dict[tuple[str, str, int, int], str | None]:
    """(cluster, topic, partition, broker) -> the time range of its lost batches."""
    lb = t.lost_batches
    if lb is None or lb.empty:
        return {}
    out = {}
    for key, g in lb.groupby(["cluster", "topic", "partition", "broker_id"], sort=True):
        base, mx = g["base_timestamp"][g["base_timestamp"] >= 0], g["max_timestamp"][g["max_timestamp"] >= 0]
        out[(str(key[0]), str(key[1]), int(key[2]), int(key[3]))] = time_range(
            int(base.min()) if len(base) else None, int(mx.max()) if len(mx) else None)
    return out


def facts_of(value: Any) -> dict[str, Any]:
    """A ``facts`` column's JSON as a dict (empty when absent or not JSON)."""
    if not isinstance(value, str):
        return {}
    try:
        d = json.loads(value)
    except ValueError:
        return {}
    return d if isinstance(d, dict) else {}
