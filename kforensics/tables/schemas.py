"""The fixed schemas of every output table, and the one guard that makes any value fit its column.

Every table starts with the snapshot context columns ``snapshot_id``,
``snapshot_time``, ``cluster`` (null for a plain scan) and ``broker_id``.
Column reference: ``docs/tables.md`` (generated from these schemas).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..log.batch_table import BATCH_COLUMNS
from .arrow_columns import column

SCHEMA_VERSION = 2
CONTEXT = [("snapshot_id", pa.string()), ("snapshot_time", pa.string()), ("cluster", pa.string()),
           ("broker_id", pa.int32())]
#: batch-table columns written to Parquet (the legacy value/key locations are the reader's business)
BATCH_FIELDS = [c for c in BATCH_COLUMNS if c not in ("value_position", "value_length", "key_length")]
_PART = [("topic", pa.string()), ("partition", pa.int32()), ("dir_name", pa.string())]

SCHEMAS: dict[str, pa.Schema] = {
    "partitions": pa.schema(CONTEXT + [
        ("log_dir", pa.string()), ("dir_name", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
        ("suffix", pa.string()), ("topic_id", pa.string()), ("log_start_offset", pa.int64()),
        ("log_end_offset", pa.int64()), ("high_watermark", pa.int64()), ("recovery_point", pa.int64()),
        ("cleaner_offset", pa.int64()), ("uncommitted", pa.int64()), ("segment_count", pa.int32()),
        ("batch_count", pa.int64()), ("record_count", pa.int64()), ("bytes", pa.int64()),
        ("epochs_seen", pa.list_(pa.int32())), ("producer_ids", pa.list_(pa.int64())),
        ("open_transactions", pa.int32()), ("last_stable_offset", pa.int64()), ("epoch_cache_written", pa.string()),
        ("recovers", pa.bool_()), ("recovery_log_end_offset", pa.int64()), ("recovery_lost_first_offset", pa.int64()),
        ("recovery_lost_last_offset", pa.int64()), ("recovery_lost_records", pa.int64()),
        ("recovery_lost_committed_records", pa.int64()), ("recovery", pa.string()), ("complete", pa.bool_()),
        # a tiered partition's log start, local log start, remote coverage and gaps (JSON; null when not tiered)
        ("tiered", pa.string()),
    ]),
    "segments": pa.schema(CONTEXT + _PART + [
        ("base_offset", pa.int64()), ("path", pa.string()), ("size", pa.int64()), ("batches", pa.int64()),
        ("records", pa.int64()), ("first_offset", pa.int64()), ("last_offset", pa.int64()),
        ("kafka_valid_bytes", pa.int64()), ("first_invalid_position", pa.int64()), ("valid_end_offset", pa.int64()),
        ("has_index", pa.bool_()), ("has_time_index", pa.bool_()), ("has_txn_index", pa.bool_()),
        ("magics", pa.list_(pa.int32())), ("codecs", pa.list_(pa.int32())), ("readable", pa.bool_()),
    ]),
    "batches": pa.schema(CONTEXT + _PART + [("segment", pa.string())]
                         + [(c, pa.int64()) for c in BATCH_FIELDS]
                         + [("crc_valid", pa.bool_()), ("recovered", pa.bool_())]),
    "epochs": pa.schema(CONTEXT + _PART + [("source", pa.string()), ("epoch", pa.int32()),
                                           ("start_offset", pa.int64())]),
    "findings": pa.schema(CONTEXT + [
        ("code", pa.string()), ("severity", pa.string()), ("severity_level", pa.int8()), ("file", pa.string()),
        ("position", pa.int64()), ("line", pa.int64()), ("message", pa.string()), ("facts", pa.string()),
    ]),
    "files": pa.schema(CONTEXT + [("path", pa.string()), ("kind", pa.string()), ("size", pa.int64()),
                                  ("sha256", pa.string())]),
    "checkpoints": pa.schema(CONTEXT + [("kind", pa.string()), ("file", pa.string()), ("topic", pa.string()),
                                        ("partition", pa.int32()), ("offset", pa.int64())]),
    "verdicts": pa.schema([
        ("cluster", pa.string()), ("topic", pa.string()), ("partition", pa.int32()), ("broker_id", pa.int32()),
        ("snapshot_id", pa.string()), ("role", pa.string()), ("kafka_version", pa.string()), ("leader", pa.int32()),
        ("leader_epoch", pa.int32()), ("leader_how", pa.string()), ("committed_bound", pa.int64()),
        ("verdict", pa.string()),
        ("cause", pa.string()), ("offsets", pa.string()), ("records", pa.int64()), ("bytes", pa.int64()),
        ("producer_ids", pa.list_(pa.int64())), ("detail", pa.string()), ("log_end_offset_before", pa.int64()),
        ("log_end_offset_after", pa.int64()), ("reasoning", pa.string()), ("facts", pa.string()),
    ]),
    "divergence": pa.schema([
        ("cluster", pa.string()), ("topic", pa.string()), ("partition", pa.int32()), ("broker_a", pa.int32()),
        ("broker_b", pa.int32()), ("first_divergent_offset", pa.int64()), ("compacted_below", pa.int64()),
        ("agreement", pa.string()),
    ]),
    "transactions": pa.schema(CONTEXT + [
        ("topic", pa.string()), ("partition", pa.int32()), ("kind", pa.string()), ("producer_id", pa.int64()),
        ("producer_epoch", pa.int32()), ("first_offset", pa.int64()), ("last_offset", pa.int64()),
        ("marker", pa.string()), ("marker_epoch", pa.int32()), ("epoch_bump", pa.int32()),
        ("coordinator_epoch", pa.int32()), ("records", pa.int64()), ("age_ms", pa.int64()), ("hanging", pa.bool_()),
        ("coordinator_state", pa.string()), ("in_txn_index", pa.bool_()), ("last_stable_offset", pa.int64()),
        ("file", pa.string()), ("position", pa.int64()), ("detail", pa.string()),
        ("transaction_version", pa.string()), ("fenced", pa.bool_()),
        ("at_restart", pa.string()), ("coordinator_timeout_at", pa.int64()),
    ]),
    "committed_offsets": pa.schema(CONTEXT + [
        ("group", pa.string()), ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
        ("leader_epoch", pa.int32()), ("metadata", pa.string()), ("commit_timestamp", pa.int64()),
        ("expire_timestamp", pa.int64()), ("value_version", pa.int32()), ("producer_id", pa.int64()),
        ("coordinator_partition", pa.int32()), ("log_offset", pa.int64()), ("file", pa.string()),
        ("position", pa.int64()), ("copies", pa.list_(pa.int32())),
    ]),
    "consumer_impact": pa.schema([
        ("cluster", pa.string()), ("topic", pa.string()), ("partition", pa.int32()), ("group", pa.string()),
        ("kafka_version", pa.string()), ("leader", pa.int32()), ("leader_epoch", pa.int32()),
        ("log_start_offset", pa.int64()), ("log_end_offset", pa.int64()), ("committed_offset", pa.int64()),
        ("committed_leader_epoch", pa.int32()), ("commit_timestamp", pa.int64()), ("commit_file", pa.string()),
        ("commit_position", pa.int64()), ("commit_log_offset", pa.int64()), ("coordinator_partition", pa.int32()),
        ("consumed_lost", pa.string()), ("consumed_lost_records", pa.int64()), ("sources", pa.string()),
        ("outcome", pa.string()), ("next_position", pa.int64()), ("validated", pa.bool_()),
        ("epoch_answer", pa.string()), ("skipped", pa.string()), ("skipped_records", pa.int64()),
        ("reread", pa.string()), ("detail", pa.string()),
    ]),
}

#: what each table holds, for the generated docs
DESCRIPTIONS = {
    "partitions": "one row per partition directory: log start/end, high watermark, recovery point, cleaner offset, "
                  "uncommitted offsets (above the HW), counts, epochs seen, producers, open transactions and the "
                  "last stable offset rebuilt from the log, the leader-epoch checkpoint "
                  "as written (JSON), and what Kafka's recovery would do at the next start, in offsets and records "
                  "(lost, and lost below the HW), with the whole plan as JSON.",
    "segments": "one row per segment: size, batches, records, first/last offset, where Kafka's reader stops "
                "(`kafka_valid_bytes`), where recovery would cut (`first_invalid_position`, `valid_end_offset`), "
                "which index files exist.",
    "batches": "one row per batch header (shallow read): the v2 header fields (legacy entries use -1 where they "
               "lack a field), stored and computed CRC, `crc_valid`, `recovered` (found past corruption).",
    "epochs": "the leader-epoch cache per partition, as checkpointed (`source` = checkpoint) and as rebuilt from "
              "the batches (`source` = rebuilt).",
    "findings": "every finding: code, severity, file, byte position or line, message, facts (JSON).",
    "files": "every file read, with its size and SHA-256 (chain of custody).",
    "checkpoints": "every entry of the log dirs' root offset checkpoints (HW, recovery point, log start, cleaner).",
    "verdicts": "one row per replica and verdict of the replay; `facts` holds the verdict's code-specific facts "
                "(JSON), e.g. the repeating rounds of NOT_CONVERGING, and on loss and election verdicts the "
                "acknowledgement classes (`acknowledged`: acked-all, acked-leader-only, never-acked records); "
                "`leader_how` says how the leader was reached "
                "(`controller-record`, `predicted:<rule>`, `offline`, `given` or `guessed`; leader -1: nobody leads).",
    "divergence": "one row per pair of replicas: where they first differ, and an agreement map (JSON).",
    "transactions": "one row per transaction seen on a partition's log: `kind` open (no marker up to the log end; "
                    "`hanging`, `age_ms`, the coordinator's state), committed or aborted (its marker: epoch, "
                    "`epoch_bump` over the data, coordinator epoch; an abort's `in_txn_index`), or reopened (its "
                    "marker lost by the replay while the new leader keeps its data); `last_stable_offset` is the "
                    "partition's, rebuilt from the log. Markers listed are each partition's last 1000. "
                    "`transaction_version` (KIP-890): 0, 1 or 2 from the coordinator's record, 2 or 0-1 from the "
                    "epochs (a marker does not carry it); `fenced`: the coordinator aborted it by fencing the "
                    "producer (null: not known). On an open one, `at_restart` says what the restarted coordinator "
                    "does with it (stays open, completed by the coordinator, aborted once timed out, or unknown) and "
                    "`coordinator_timeout_at` when its timeout passes (ms since the epoch, from the coordinator's "
                    "record).",
    "committed_offsets": "one row per consumer group and partition: the committed offset, leader epoch, metadata "
                         "and commit time, and where in __consumer_offsets it was read (partition, record offset, "
                         "file, byte position of its batch, the brokers whose copy holds it). `scan --out` writes "
                         "the offsets found in the scanned log dirs.",
    "consumer_impact": "one row per replayed partition and consumer group with records below its committed offset "
                       "that the new leader no longer serves, or a commit beyond its log end: what the group "
                       "consumed that is gone (`consumed_lost`, JSON ranges; `sources` per broker and verdict), "
                       "what it does when it resumes (`outcome`: FETCHES, OFFSET_OUT_OF_RANGE, TRUNCATION_DETECTED, "
                       "RESET_UNDEFINED_EPOCH; `next_position`), the new leader's offsets it never receives "
                       "(`skipped`) and those it receives again (`reread`).",
}

_INT_RANGES = {pa.int8(): 2**7, pa.int32(): 2**31, pa.int64(): 2**63}


def fit(value: Any, typ: pa.DataType) -> Any:
    """``value`` made to fit a column of type ``typ``: out-of-range integers become null, strings that are
    not valid UTF-8 (undecodable file names) are escaped.  Evidence can hold anything; a table never fails."""
    if value is None:
        return None
    if pa.types.is_integer(typ):
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        half = _INT_RANGES.get(typ, 2**63)
        return value if -half <= value < half else None
    if pa.types.is_string(typ):
        text = str(value)
        if not _surrogates(text):
            return text
        # an undecodable file name: its original bytes back (surrogateescape), the bad ones as \xNN escapes
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if pa.types.is_list(typ):
        return [fit(v, typ.value_type) for v in value]
    return value


def fit_column(values: list[Any], typ: pa.DataType) -> list[Any]:
    """:func:`fit` of every value of a column (the common cases decided once per column, not once per value)."""
    if pa.types.is_integer(typ):
        half = _INT_RANGES.get(typ, 2**63)
        return [v if type(v) is int and -half <= v < half else fit(v, typ) for v in values]
    if pa.types.is_string(typ):
        return [v if type(v) is str and v.isascii() else fit(v, typ) for v in values]
    if not pa.types.is_list(typ):
        return list(values)  # fit leaves every other type's values as they are
    if pa.types.is_integer(typ.value_type):
        # lists of in-range ints (epochs, producer ids, magics, codecs: one per partition or segment) as they are
        half = _INT_RANGES.get(typ.value_type, 2**63)
        return [v if type(v) is list and all(type(x) is int and -half <= x < half for x in v) else fit(v, typ)
                for v in values]
    return [fit(v, typ) for v in values]


def _surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def fit_rows(name: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` as the table ``name`` holds them: every column of its schema, each value made to fit (what
    :func:`table` of them gives back row by row, without building a table)."""
    if not rows:
        return []
    fields = _FIELDS.get(name)
    if fields is None:
        fields = _FIELDS[name] = [(f.name, f.type) for f in SCHEMAS[name]]
    if len(rows) <= _ROW_WISE:
        # a dir's one finding: a value at a time costs less than a column at a time
        return [{k: fit(r.get(k), t) for k, t in fields} for r in rows]
    # a column at a time (:func:`fit_column` decides the common cases once per column), then back into rows
    names = [k for k, _ in fields]
    columns = [fit_column([r.get(k) for r in rows], t) for k, t in fields]
    return [dict(zip(names, values)) for values in zip(*columns)]


def fit_values(name: str, row: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    """``columns`` of one row of table ``name`` as the table holds them (each value fitted to its column)."""
    types = _TYPES.get(name)
    if types is None:
        types = _TYPES[name] = {f.name: f.type for f in SCHEMAS[name]}
    return {c: fit(row.get(c), types[c]) for c in columns}


#: per table, its columns' types by name (:func:`fit_values` is called per partition dir by the Spark scan tasks)
_TYPES: dict[str, dict[str, pa.DataType]] = {}
#: rows up to this many are fitted a value at a time by :func:`fit_rows`
_ROW_WISE = 4
#: per table, its columns' names and types (:func:`fit_rows` is called per partition dir by the Spark scan tasks)
_FIELDS: dict[str, list[tuple[str, pa.DataType]]] = {}


def table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """An Arrow table of ``rows`` with the fixed schema of ``name``; every value is made to fit its column."""
    schema = SCHEMAS[name]
    # a column at a time (one Arrow array per column, not a dict per row)
    return pa.Table.from_arrays([column(fit_column([r.get(f.name) for r in rows], f.type), f.type)
                                 for f in schema], schema=schema)


def table_of_columns(name: str, columns: dict[str, list[Any]], n: int) -> pa.Table:
    """:func:`table` of the rows whose columns are ``columns`` (each ``n`` values; a column of the schema not
    given is null), built without a dict per row."""
    schema = SCHEMAS[name]
    return pa.Table.from_arrays([column(fit_column(columns[f.name], f.type), f.type) if f.name in columns
                                 else pa.nulls(n, f.type) for f in schema], schema=schema)


def markdown() -> str:
    """``docs/tables.md``: every table's columns (a test fails when it is stale)."""
    out = [f"# Output tables (schema version {SCHEMA_VERSION})", "",
           "Generated from `kforensics/tables/schemas.py` (`python -m kforensics.tables.schemas > docs/tables.md`).",
           "",
           "`kforensics scan --out DIR` writes `DIR/<table>.parquet` (the scan tables: `partitions` to "
           "`checkpoints`, `transactions` and `committed_offsets`); `kforensics spark --out DIR` writes "
           "`DIR/<table>/` directories of Parquet parts with the same columns, plus `brokers`, `verdicts`, "
           "`divergence`, `consumer_impact` and `summary`. Every file carries `kforensics.schema_version` in its "
           "metadata; columns are only ever added within a version.", "",
           "Context columns on every scan table: `snapshot_id`, `snapshot_time`, `cluster` (null for `scan`), "
           "`broker_id`. The replay tables (`verdicts`, `divergence`, `consumer_impact`) are keyed by cluster, topic "
           "and partition.", ""]
    for name, schema in SCHEMAS.items():
        out += [f"## {name}", "", DESCRIPTIONS[name], "", "| column | type |", "|---|---|"]
        out += [f"| `{f.name}` | {f.type} |" for f in schema]
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    print(markdown(), end="")
