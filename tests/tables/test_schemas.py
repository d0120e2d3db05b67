"""Table schemas: the docs are current, and any value evidence can hold fits its column."""

from __future__ import annotations

import pyarrow as pa

from kforensics.tables.schemas import SCHEMAS, fit, markdown, table
from tests.conftest import ROOT


def test_docs_tables_md_is_generated_from_the_schemas():
    assert (ROOT / "docs" / "tables.md").read_text(encoding="utf-8") == markdown(), \
        "docs/tables.md is stale: python -m kforensics.tables.schemas > docs/tables.md"


def test_values_beyond_the_column_types_become_null_not_a_crash():
    assert fit(3_000_000_000, pa.int32()) is None and fit(2**31 - 1, pa.int32()) == 2**31 - 1
    assert fit(10**20, pa.int64()) is None and fit(-(2**63), pa.int64()) == -(2**63)
    assert fit(True, pa.int64()) is None
    name = b"t\xff-0".decode("utf-8", "surrogateescape")  # a directory name that is not UTF-8
    assert fit(name, pa.string()) == "t\\xff-0"
    t = table("checkpoints", [{"broker_id": 3_000_000_000, "partition": 3_000_000_000, "offset": 10**20,
                               "topic": name, "kind": "k", "file": name}])
    row = t.to_pylist()[0]
    assert (row["broker_id"], row["partition"], row["offset"], row["topic"]) == (None, None, None, "t\\xff-0")


def test_every_table_has_the_snapshot_context_or_its_keys():
    for name, schema in SCHEMAS.items():
        # scan tables: the snapshot context; replay tables: the broker(s) of a replayed partition (a consumer
        # group's impact is on the partition's new leader)
        assert any({"cluster", key} <= set(schema.names) for key in ("broker_id", "broker_a", "leader")), name
        if "broker_id" in schema.names and name not in ("verdicts",):
            assert schema.names[:4] == ["snapshot_id", "snapshot_time", "cluster", "broker_id"], name


def test_one_module_declares_every_table():
    from kforensics.tables import impact_tables, schemas

    assert {"transactions", "committed_offsets", "consumer_impact"} <= set(SCHEMAS)
    assert impact_tables.SCHEMAS is schemas.SCHEMAS and set(schemas.DESCRIPTIONS) == set(SCHEMAS)
