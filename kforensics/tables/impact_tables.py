"""Rows of the consumer impact, transactions and committed offsets tables (their schemas are in :mod:`.schemas`,
which declares every table); every value is made to fit its column with :func:`.schemas.fit`.  Offset ranges
are JSON lists of ``[first, last]``, as in the ``verdicts`` table's ``offsets``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ..consumers.committed_offsets import CommittedOffsets
from ..consumers.impact import ConsumerImpact
from ..consumers.read_committed import TransactionsAfterReplay
from ..serialize import dumps
from ..transactions.model import PartitionTransactions
from .schemas import CONTEXT as CONTEXT  # re-exported
from .schemas import DESCRIPTIONS as DESCRIPTIONS
from .schemas import SCHEMAS as SCHEMAS
from .schemas import table as table


def _context(context: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: (context or {}).get(k) for k, _ in CONTEXT}


# ---------------------------------------------------------------------------- consumer impact
def consumer_impact_rows(impacts: list[ConsumerImpact], cluster: str | None = None) -> list[dict[str, Any]]:
    rows = []
    for i in impacts:
        rows.append({
            "cluster": cluster, "topic": i.topic, "partition": i.partition, "group": i.group,
            "kafka_version": str(i.kafka_version), "leader": i.leader, "leader_epoch": i.leader_epoch,
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
def transaction_rows(pt: PartitionTransactions, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
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
                     "file": t.file, "position": t.position, "detail": t.why,
                     "transaction_version": t.transaction_version, "at_restart": t.at_restart,
                     "coordinator_timeout_at": t.coordinator_timeout_at})
    aborted = {(a.producer_id, a.last_offset): a for a in pt.aborted}
    for m in pt.markers:
        a = aborted.get((m.producer_id, m.offset))
        rows.append({**base, "kind": {"COMMIT": "committed", "ABORT": "aborted"}.get(m.control_type, "ended"),
                     "producer_id": m.producer_id, "producer_epoch": m.data_epoch, "first_offset": m.first_offset,
                     "last_offset": m.offset, "marker": m.control_type, "marker_epoch": m.producer_epoch,
                     "epoch_bump": m.epoch_bump, "coordinator_epoch": m.coordinator_epoch, "records": m.records,
                     "in_txn_index": None if a is None else a.in_txn_index, "file": m.file, "position": m.position,
                     "transaction_version": m.transaction_version, "fenced": m.fenced})
    return rows


def reopened_rows(after: TransactionsAfterReplay, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Rows of the transactions a replay reopens (on the new leader, with the lost marker's place)."""
    ctx = {**_context(context), "broker_id": after.leader}
    lso = after.leader_transactions.last_stable_offset if after.leader_transactions is not None else None
    return [{**ctx, "topic": r.topic, "partition": r.partition, "kind": "reopened", "producer_id": r.producer_id,
             "producer_epoch": r.producer_epoch, "first_offset": r.first_offset, "last_offset": r.last_offset,
             "marker": r.marker.control_type, "marker_epoch": r.marker.producer_epoch,
             "epoch_bump": r.marker.epoch_bump, "coordinator_epoch": r.marker.coordinator_epoch,
             "records": r.marker.records, "hanging": True, "last_stable_offset": lso, "file": r.marker.file,
             "position": r.marker.position, "detail": r.detail,
             "transaction_version": r.marker.transaction_version, "fenced": r.marker.fenced} for r in after.reopened]


def transactions_table(partitions: Sequence[PartitionTransactions] = (), after: Sequence[TransactionsAfterReplay] = (),
                       context: Mapping[str, Any] | None = None) -> pa.Table:
    rows = [row for pt in partitions for row in transaction_rows(pt, context)]
    rows += [row for a in after for row in reopened_rows(a, context)]
    return table("transactions", rows)


# ---------------------------------------------------------------------------- committed offsets
def committed_offset_rows(co: CommittedOffsets, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    ctx = _context(context)
    return [{**ctx, "broker_id": ctx.get("broker_id") if ctx.get("broker_id") is not None else c.broker_id,
             "group": c.group, "topic": c.topic, "partition": c.partition, "offset": c.offset,
             "leader_epoch": c.leader_epoch, "metadata": c.metadata, "commit_timestamp": c.commit_timestamp,
             "expire_timestamp": c.expire_timestamp, "value_version": c.value_version, "producer_id": c.producer_id,
             "coordinator_partition": c.coordinator_partition, "log_offset": c.log_offset, "file": c.file,
             "position": c.position, "copies": [b for b in c.copies if b is not None]} for c in co.offsets]


def committed_offsets_table(co: CommittedOffsets, context: Mapping[str, Any] | None = None) -> pa.Table:
    return table("committed_offsets", committed_offset_rows(co, context))
