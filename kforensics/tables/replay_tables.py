"""Replay results as table rows (verdicts, divergence, findings), and replicas rebuilt from table rows (the Spark
path)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..findings import Finding
from ..log.file_kinds import segment_order
from ..recovery.plan import RecoveryPlan
from ..replay.engine import PartitionReplay
from ..replay.replica import COLUMNS, BatchLog, Replica, unknown_broker_id
from ..scan.model import BrokerIdentity, ScanReport
from ..serialize import dumps
from .report_tables import findings_table
from .schemas import table

#: the ``batches`` columns the Spark replay reads (``dir_name`` tells a live dir's batches from a ``-delete``,
#: ``-future`` or ``-stray`` copy's; ``segment`` is the segment's file name)
BATCH_COLUMNS = ["cluster", "topic", "partition", "broker_id", "snapshot_id", "dir_name", "segment", "base_offset",
                 "last_offset", "partition_leader_epoch", "crc", "crc_valid", "records_count", "size_in_bytes",
                 "producer_id", "magic", "position"]
#: the ``partitions`` columns the Spark replay reads
PARTITION_COLUMNS = ["cluster", "topic", "partition", "broker_id", "snapshot_id", "snapshot_time", "log_dir",
                     "dir_name", "suffix", "topic_id", "high_watermark", "epoch_cache_written", "log_start_offset",
                     "cleaner_offset", "recovery"]


def verdict_rows(rp: PartitionReplay, cluster: str | None,
                 snapshots: Mapping[int, str | None] | None = None) -> list[dict[str, Any]]:
    rows = []
    how = rp.election.how + (f":{rp.election.rule}" if rp.election.rule else "") if rp.election is not None else None
    for out in rp.replicas:
        lines = [line for d in out.decisions for line in d.reasoning]
        reasoning = json.dumps(lines) if lines else "[]"
        for v in out.verdicts:
            rows.append({
                "cluster": cluster, "topic": rp.topic, "partition": rp.partition, "broker_id": out.broker_id,
                "snapshot_id": (snapshots or {}).get(out.broker_id), "role": out.role,
                "kafka_version": str(rp.kafka_version), "leader": rp.leader, "leader_epoch": rp.leader_epoch,
                "leader_how": how, "committed_bound": rp.committed_bound, "verdict": v.code, "cause": v.cause,
                "offsets": json.dumps(v.offsets) if v.offsets else "[]", "records": v.records, "bytes": v.bytes,
                "producer_ids": v.producer_ids, "detail": v.detail,
                "log_end_offset_before": out.log_end_offset_before, "log_end_offset_after": out.log_end_offset_after,
                "reasoning": reasoning, "facts": dumps(v.facts) if v.facts else "{}",
            })
    return rows


def divergence_rows(rp: PartitionReplay, cluster: str | None) -> list[dict[str, Any]]:
    return [{"cluster": cluster, "topic": rp.topic, "partition": rp.partition, "broker_a": d.brokers[0],
             "broker_b": d.brokers[1], "first_divergent_offset": d.first_divergent_offset,
             "compacted_below": d.compacted_below, "agreement": dumps(d.agreement)} for d in rp.divergence]


def verdicts_table(rows: list[dict[str, Any]]) -> pa.Table:
    return table("verdicts", rows)


def divergence_table(rows: list[dict[str, Any]]) -> pa.Table:
    return table("divergence", rows)


def findings_rows_table(findings: list[Finding], context: Mapping[str, Any]) -> pa.Table:
    """Findings as rows of the ``findings`` table, all with one snapshot context (the same rows ``scan`` writes)."""
    return findings_table(ScanReport(BrokerIdentity(), [], list(findings), []), context)


def replay_findings_table(rp: PartitionReplay, cluster: str | None) -> pa.Table:
    """A replay's findings (log matching, committed data lost, kept damage, the controller's checks) as
    ``findings`` rows of the cluster, each with the broker it is about (its ``broker_id`` fact).

    They come from the replicas of several snapshots, so no snapshot is named: rows with a ``snapshot_id``
    are the scan's findings about that snapshot, rows without one the cluster's (timeline and replay).
    """
    by_broker: dict[int | None, list[Finding]] = {}
    for f in rp.findings:
        bid = f.facts.get("broker_id")
        by_broker.setdefault(bid if isinstance(bid, int) and not isinstance(bid, bool) else None, []).append(f)
    parts = [findings_rows_table(fs, {"snapshot_id": None, "snapshot_time": None, "cluster": cluster,
                                      "broker_id": bid}) for bid, fs in by_broker.items()]
    return pa.concat_tables(parts) if parts else findings_rows_table([], {"cluster": cluster})


def _none(v: Any) -> Any:
    return None if v is None or (not isinstance(v, (str, list)) and pd.isna(v)) else v


def replica_rows(partitions: pd.DataFrame) -> pd.DataFrame:
    """The partition rows that become replicas: live dirs only, one per broker (its latest snapshot when
    several).  A row without a broker id (no meta.properties, none given) is a replica of its own."""
    parts = partitions[partitions["suffix"].isna()] if "suffix" in partitions else partitions
    parts = parts.sort_values(["broker_id", "snapshot_time", "snapshot_id"], na_position="first")
    known = parts[parts["broker_id"].notna()].drop_duplicates("broker_id", keep="last")
    return pd.concat([known, parts[parts["broker_id"].isna()]]) if parts["broker_id"].isna().any() else known


def replicas_from_frames(batches: pd.DataFrame, partitions: pd.DataFrame) -> list[Replica]:
    """One replica per broker from the ``batches`` and ``partitions`` rows of one partition (columns
    :data:`BATCH_COLUMNS` and :data:`PARTITION_COLUMNS`): the same replica
    :func:`kforensics.replay.inputs.load_replicas` builds from the disk.

    Batches are matched to their partition row by snapshot and directory, so a ``-delete`` or ``-future``
    copy's batches never mix into the live log.  A replica with no broker id gets a negative one (-1, -2, ...
    in snapshot order); its snapshot id names it.
    """
    replicas = []
    unknown = 0
    for row in replica_rows(partitions).itertuples(index=False):
        b = batches[(batches["snapshot_id"] == row.snapshot_id) & (batches["dir_name"] == row.dir_name)]
        segments = sorted(set(b["segment"]), key=segment_order) if len(b) else []
        if len(b):
            index = {name: i for i, name in enumerate(segments)}
            b = b.assign(_seg=b["segment"].map(index)).sort_values(["_seg", "position"], kind="stable")
            base, last = b["base_offset"].to_numpy(np.int64), b["last_offset"].to_numpy(np.int64)
            values = {
                "base_offset": np.where(base >= 0, base, last), "last_offset": last,
                "crc_valid": b["crc_valid"].to_numpy(bool).astype(np.int64),
                "segment": b["_seg"].to_numpy(np.int64),
            }
            cols = np.stack([values[c] if c in values else b[c].to_numpy(np.int64) for c in COLUMNS], axis=1)
        else:
            cols = BatchLog.empty().data
        if _none(row.broker_id) is None:
            unknown += 1
            broker_id = unknown_broker_id(unknown)
        else:
            broker_id = int(row.broker_id)
        replicas.append(replica_of_row(row, cols, segments, broker_id))
    return replicas


def replica_of_row(row: Any, cols: np.ndarray, segments: list[str], broker_id: int) -> Replica:
    """The replica of one partition row (attributes of :data:`PARTITION_COLUMNS`) holding the batch rows ``cols``
    (replay columns, in log order; ``segment``: an index into ``segments``, the segment names in offset order)."""
    recovery = _none(row.recovery)
    plan = RecoveryPlan(**json.loads(recovery)) if recovery is not None else None
    cache = _none(row.epoch_cache_written)
    return Replica(
        broker_id, BatchLog(cols),
        log_start=int(_none(row.log_start_offset) or 0),
        high_watermark=None if _none(row.high_watermark) is None else int(row.high_watermark),
        epoch_checkpoint=None if cache is None else [tuple(e) for e in json.loads(cache)],
        cleaner_offset=None if _none(row.cleaner_offset) is None else int(row.cleaner_offset),
        source=partition_path(row), segments=segments, recovery=plan,
        clean_shutdown=bool(plan.clean_shutdown) if plan is not None else False,
        cluster_id=_none(row.cluster), topic_id=_none(row.topic_id),
    )


def partition_path(row: Any) -> str:
    """The partition dir of a ``partitions`` row, as the scan names it (``PartitionScan.path``)."""
    return f"{str(row.log_dir).rstrip('/')}/{row.dir_name}"
