"""Replay results as table rows (verdicts, divergence), and replicas rebuilt from table rows (the Spark path)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa

from ..replay.engine import PartitionReplay
from ..recovery.plan import RecoveryPlan
from ..replay.replica import COLUMNS, BatchLog, Replica
from ..serialize import dumps
from .schemas import table

#: the ``batches`` columns the Spark replay reads, named as the table names them
BATCH_COLUMNS = ["broker_id", "snapshot_id", "base_offset", "last_offset", "partition_leader_epoch", "crc",
                 "crc_valid", "records_count", "size_in_bytes", "producer_id", "magic", "position"]
PARTITION_COLUMNS = ["broker_id", "snapshot_id", "snapshot_time", "cluster", "topic", "partition",
                     "high_watermark", "epoch_cache_written", "log_start_offset", "cleaner_offset", "suffix", "recovery"]


def verdict_rows(rp: PartitionReplay, cluster: str | None, snapshots: dict[int, str] | None = None) -> list[dict]:
    rows = []
    for out in rp.replicas:
        reasoning = json.dumps([line for d in out.decisions for line in d.reasoning])
        for v in out.verdicts:
            rows.append({
                "cluster": cluster, "topic": rp.topic, "partition": rp.partition, "broker_id": out.broker_id,
                "snapshot_id": (snapshots or {}).get(out.broker_id), "role": out.role,
                "kafka_version": rp.kafka_version, "leader": rp.leader, "leader_epoch": rp.leader_epoch,
                "committed_bound": rp.committed_bound, "verdict": v.code, "cause": v.cause,
                "offsets": json.dumps(v.offsets), "records": v.records, "bytes": v.bytes,
                "producer_ids": v.producer_ids, "detail": v.detail,
                "log_end_offset_before": out.log_end_offset_before, "log_end_offset_after": out.log_end_offset_after,
                "reasoning": reasoning,
            })
    return rows


def divergence_rows(rp: PartitionReplay, cluster: str | None) -> list[dict]:
    return [{"cluster": cluster, "topic": rp.topic, "partition": rp.partition, "broker_a": d.brokers[0],
             "broker_b": d.brokers[1], "first_divergent_offset": d.first_divergent_offset,
             "compacted_below": d.compacted_below, "agreement": dumps(d.agreement)} for d in rp.divergence]


def verdicts_table(rows: list[dict]) -> pa.Table:
    return table("verdicts", rows)


def divergence_table(rows: list[dict]) -> pa.Table:
    return table("divergence", rows)


def replicas_from_frames(batches: pd.DataFrame, partitions: pd.DataFrame) -> list[Replica]:
    """One replica per broker (its latest snapshot when several), from the table rows of one partition."""
    parts = partitions[partitions["suffix"].isna()] if "suffix" in partitions else partitions
    parts = parts.sort_values(["broker_id", "snapshot_time", "snapshot_id"], na_position="first")
    parts = parts.drop_duplicates("broker_id", keep="last")
    replicas = []
    for row in parts.itertuples(index=False):
        b = batches[(batches["broker_id"] == row.broker_id) & (batches["snapshot_id"] == row.snapshot_id)]
        segments = sorted(set(b["segment"]), key=_segment_base) if len(b) else []
        if len(b):
            index = {name: i for i, name in enumerate(segments)}
            b = b.assign(_seg=b["segment"].map(index)).sort_values(["_seg", "position"])
            base, last = b["base_offset"].to_numpy(np.int64), b["last_offset"].to_numpy(np.int64)
            values = {
                "base_offset": np.where(base >= 0, base, last), "last_offset": last,
                "crc_valid": b["crc_valid"].to_numpy(bool).astype(np.int64),
                "segment": b["_seg"].to_numpy(np.int64),
            }
            cols = np.stack([values[c] if c in values else b[c].to_numpy(np.int64) for c in COLUMNS], axis=1)
        else:
            cols = BatchLog.empty().data
        plan = None if row.recovery is None or pd.isna(row.recovery) else RecoveryPlan(**json.loads(row.recovery))
        cache = None if row.epoch_cache_written is None or pd.isna(row.epoch_cache_written) else [
            tuple(e) for e in json.loads(row.epoch_cache_written)]
        replicas.append(Replica(
            int(row.broker_id), BatchLog(cols),
            log_start=0 if pd.isna(row.log_start_offset) else int(row.log_start_offset),
            high_watermark=None if pd.isna(row.high_watermark) else int(row.high_watermark),
            epoch_checkpoint=cache,
            cleaner_offset=None if pd.isna(row.cleaner_offset) else int(row.cleaner_offset),
            source=str(row.snapshot_id), segments=segments, recovery=plan,
            clean_shutdown=bool(plan.clean_shutdown) if plan is not None else False,
            cluster_id=None if pd.isna(row.cluster) else row.cluster,
        ))
    return replicas


def _segment_base(name: str) -> tuple[int, str]:
    stem = str(name).split(".", 1)[0]
    return (int(stem) if stem.isdigit() else -1, str(name))
