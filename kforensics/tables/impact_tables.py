"""Tables of consumer impact, transactions and committed offsets: their fixed schemas and row builders.

Declared in the style of :mod:`.schemas` (the lead merges these declarations
into :data:`.schemas.SCHEMAS`); every value is made to fit its column with
:func:`.schemas.fit`.  Offset ranges are JSON lists of ``[first, last]``, as in
the ``verdicts`` table's ``offsets``.
"""

from __future__ import annotations

import json
import pyarrow as pa

from ..consumers.committed_offsets import CommittedOffsets
from ..consumers.impact import ConsumerImpact
from ..consumers.read_committed import TransactionsAfterReplay
from ..serialize import dumps
from ..transactions.model import PartitionTransactions
from .schemas import CONTEXT, fit

SCHEMAS: dict[str, pa.Schema] = {
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
    "transactions": pa.schema(CONTEXT + [
        ("topic", pa.string()), ("partition", pa.int32()), ("kind", pa.string()), ("producer_id", pa.int64()),
        ("producer_epoch", pa.int32()), ("first_offset", pa.int64()), ("last_offset", pa.int64()),
        ("marker", pa.string()), ("marker_epoch", pa.int32()), ("epoch_bump", pa.int32()),
        ("coordinator_epoch", pa.int32()), ("records", pa.int64()), ("age_ms", pa.int64()), ("hanging", pa.bool_()),
        ("coordinator_state", pa.string()), ("in_txn_index", pa.bool_()), ("last_stable_offset", pa.int64()),
        ("file", pa.string()), ("position", pa.int64()), ("detail", pa.string()),
    ]),
    "committed_offsets": pa.schema(CONTEXT + [
        ("group", pa.string()), ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
        ("leader_epoch", pa.int32()), ("metadata", pa.string()), ("commit_timestamp", pa.int64()),
        ("expire_timestamp", pa.int64()), ("value_version", pa.int32()), ("producer_id", pa.int64()),
        ("coordinator_partition", pa.int32()), ("log_offset", pa.int64()), ("file", pa.string()),
        ("position", pa.int64()), ("copies", pa.list_(pa.int32())),
    ]),
}

DESCRIPTIONS = {
    "consumer_impact": "one row per replayed partition and consumer group with records below its committed offset "
                       "that the new leader no longer serves, or a commit beyond its log end: what the group "
                       "consumed that is gone (`consumed_lost`, JSON ranges; `sources` per broker and verdict), "
                       "what it does when it resumes (`outcome`: FETCHES, OFFSET_OUT_OF_RANGE, TRUNCATION_DETECTED, "
                       "RESET_UNDEFINED_EPOCH; `next_position`), the new leader's offsets it never receives "
                       "(`skipped`) and those it receives again (`reread`).",
    "transactions": "one row per transaction seen on a partition's log: `kind` open (no marker up to the log end; "
                    "`hanging`, `age_ms`, the coordinator's state), committed or aborted (its marker: epoch, "
                    "`epoch_bump` over the data, coordinator epoch; an abort's `in_txn_index`), or reopened (its "
                    "marker lost by the replay while the new leader keeps its data); `last_stable_offset` is the "
                    "partition's, rebuilt from the log.",
    "committed_offsets": "one row per consumer group and partition: the committed offset, leader epoch, metadata "
                         "and commit time, and where in __consumer_offsets it was read (partition, record offset, "
                         "file, byte position of its batch, the brokers whose copy holds it).",
}


def table(name: str, rows: list[dict]) -> pa.Table:
    """An Arrow table of ``rows`` with the fixed schema of ``name``."""
    schema = SCHEMAS[name]
    types = {f.name: f.type for f in schema}
    return pa.Table.from_pylist([{k: fit(r.get(k), t) for k, t in types.items()} for r in rows], schema=schema)


def _context(context: dict | None) -> dict:
    return {k: (context or {}).get(k) for k, _ in CONTEXT}


# ---------------------------------------------------------------------------- consumer impact
def consumer_impact_rows(impacts: list[ConsumerImpact], cluster: str | None = None) -> list[dict]:
    rows = []
    for i in impacts:
        rows.append({
            "cluster": cluster, "topic": i.topic, "partition": i.partition, "group": i.group,
            "kafka_version": i.kafka_version, "leader": i.leader, "leader_epoch": i.leader_epoch,
            "log_start_offset": i.log_start_offset, "log_end_offset": i.log_end_offset,
            "committed_offset": i.committed_offset, "committed_leader_epoch": i.committed_leader_epoch,
            "commit_timestamp": i.commit_timestamp, "commit_file": i.commit_file,
            "commit_position": i.commit_position, "commit_log_offset": i.commit_log_offset,
            "coordinator_partition": i.coordinator_partition, "consumed_lost": json.dumps(i.consumed_lost),
            "consumed_lost_records": i.consumed_lost_records, "sources": dumps(i.sources), "outcome": i.outcome,
            "next_position": i.next_position, "validated": i.validated,
            "epoch_answer": None if i.epoch_answer is None else json.dumps(list(i.epoch_answer)),
            "skipped": json.dumps(i.skipped), "skipped_records": i.skipped_records, "reread": json.dumps(i.reread),
            "detail": i.detail,
        })
    return rows


def consumer_impact_table(impacts: list[ConsumerImpact], cluster: str | None = None) -> pa.Table:
    return table("consumer_impact", consumer_impact_rows(impacts, cluster))


# ---------------------------------------------------------------------------- transactions
def transaction_rows(pt: PartitionTransactions, context: dict | None = None) -> list[dict]:
    """Rows of one partition's transactions: open ones, then each listed marker."""
    ctx = _context(context)
    if pt.broker_id is not None and ctx.get("broker_id") is None:
        ctx["broker_id"] = pt.broker_id
    base = {**ctx, "topic": pt.topic, "partition": pt.partition, "last_stable_offset": pt.last_stable_offset}
    rows = []
    for t in pt.open:
        rows.append({**base, "kind": "open", "producer_id": t.producer_id, "producer_epoch": t.producer_epoch,
                     "first_offset": t.first_offset, "last_offset": t.last_offset, "records": t.records,
                     "age_ms": t.age_ms, "hanging": t.hanging, "coordinator_state": t.coordinator_state,
                     "file": t.file, "position": t.position, "detail": t.why})
    aborted = {(a.producer_id, a.last_offset): a for a in pt.aborted}
    for m in pt.markers:
        a = aborted.get((m.producer_id, m.offset))
        rows.append({**base, "kind": {"COMMIT": "committed", "ABORT": "aborted"}.get(m.control_type, "ended"),
                     "producer_id": m.producer_id, "producer_epoch": m.data_epoch, "first_offset": m.first_offset,
                     "last_offset": m.offset, "marker": m.control_type, "marker_epoch": m.producer_epoch,
                     "epoch_bump": m.epoch_bump, "coordinator_epoch": m.coordinator_epoch, "records": m.records,
                     "in_txn_index": None if a is None else a.in_txn_index, "file": m.file, "position": m.position})
    return rows


def reopened_rows(after: TransactionsAfterReplay, context: dict | None = None) -> list[dict]:
    """Rows of the transactions a replay reopens (on the new leader, with the lost marker's place)."""
    ctx = {**_context(context), "broker_id": after.leader}
    lso = after.leader_transactions.last_stable_offset if after.leader_transactions is not None else None
    return [{**ctx, "topic": r.topic, "partition": r.partition, "kind": "reopened", "producer_id": r.producer_id,
             "producer_epoch": r.producer_epoch, "first_offset": r.first_offset, "last_offset": r.last_offset,
             "marker": r.marker.control_type, "marker_epoch": r.marker.producer_epoch,
             "epoch_bump": r.marker.epoch_bump, "coordinator_epoch": r.marker.coordinator_epoch,
             "records": r.marker.records, "hanging": True, "last_stable_offset": lso, "file": r.marker.file,
             "position": r.marker.position, "detail": r.detail} for r in after.reopened]


def transactions_table(partitions: list[PartitionTransactions] = (), after: list[TransactionsAfterReplay] = (),
                       context: dict | None = None) -> pa.Table:
    rows = [row for pt in partitions for row in transaction_rows(pt, context)]
    rows += [row for a in after for row in reopened_rows(a, context)]
    return table("transactions", rows)


# ---------------------------------------------------------------------------- committed offsets
def committed_offset_rows(co: CommittedOffsets, context: dict | None = None) -> list[dict]:
    ctx = _context(context)
    return [{**ctx, "broker_id": ctx.get("broker_id") if ctx.get("broker_id") is not None else c.broker_id,
             "group": c.group, "topic": c.topic, "partition": c.partition, "offset": c.offset,
             "leader_epoch": c.leader_epoch, "metadata": c.metadata, "commit_timestamp": c.commit_timestamp,
             "expire_timestamp": c.expire_timestamp, "value_version": c.value_version, "producer_id": c.producer_id,
             "coordinator_partition": c.coordinator_partition, "log_offset": c.log_offset, "file": c.file,
             "position": c.position, "copies": [b for b in c.copies if b is not None]} for c in co.offsets]


def committed_offsets_table(co: CommittedOffsets, context: dict | None = None) -> pa.Table:
    return table("committed_offsets", committed_offset_rows(co, context))


def markdown() -> str:
    """These tables' columns, in ``docs/tables.md``'s format (for the lead's merge)."""
    out = []
    for name, schema in SCHEMAS.items():
        out += [f"## {name}", "", DESCRIPTIONS[name], "", "| column | type |", "|---|---|"]
        out += [f"| `{f.name}` | {f.type} |" for f in schema]
        out.append("")
    return "\n".join(out)
