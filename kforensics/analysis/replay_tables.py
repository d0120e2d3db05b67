"""Replay from the Parquet tables (batches + partitions) instead of log dirs: the Spark pipeline's path.

Given the rows of one (cluster, topic, partition) group — each broker's
batches and partition facts — rebuild the replicas and run the same
:func:`~kforensics.analysis.replay.replay_partition` as ``kforensics replay``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa

from .replay import replay_partition
from .replica import BatchLog, Replica

VERDICT_SCHEMA = pa.schema([
    ("cluster", pa.string()), ("topic", pa.string()), ("partition", pa.int32()), ("broker_id", pa.int32()),
    ("snapshot_id", pa.string()), ("role", pa.string()), ("kafka_version", pa.string()), ("leader", pa.int32()),
    ("leader_epoch", pa.int32()), ("committed_bound", pa.int64()), ("verdict", pa.string()),
    ("offsets", pa.string()), ("records", pa.int64()), ("bytes", pa.int64()), ("producer_ids", pa.list_(pa.int64())),
    ("detail", pa.string()), ("log_end_offset_before", pa.int64()), ("log_end_offset_after", pa.int64()),
    ("reasoning", pa.string()),
])
DIVERGENCE_SCHEMA = pa.schema([
    ("cluster", pa.string()), ("topic", pa.string()), ("partition", pa.int32()), ("broker_a", pa.int32()),
    ("broker_b", pa.int32()), ("first_divergent_offset", pa.int64()), ("compacted_differences", pa.int64()),
    ("agreement", pa.string()),
])

BATCH_COLUMNS = ["broker_id", "snapshot_id", "base_offset", "last_offset", "partition_leader_epoch", "crc",
                 "crc_valid", "records_count", "size_in_bytes", "producer_id", "magic", "position"]
PARTITION_COLUMNS = ["broker_id", "snapshot_id", "snapshot_time", "cluster", "topic", "partition",
                     "high_watermark", "epoch_cache_written", "log_start_offset", "cleaner_offset", "suffix"]


def replicas_from_frames(batches: pd.DataFrame, partitions: pd.DataFrame) -> list[Replica]:
    """One replica per broker (its latest snapshot when several), from table rows of one partition."""
    parts = partitions[partitions["suffix"].isna()] if "suffix" in partitions else partitions
    parts = parts.sort_values(["broker_id", "snapshot_time", "snapshot_id"], na_position="first")
    parts = parts.drop_duplicates("broker_id", keep="last")
    replicas = []
    for row in parts.itertuples(index=False):
        b = batches[(batches["broker_id"] == row.broker_id) & (batches["snapshot_id"] == row.snapshot_id)]
        b = b.sort_values(["base_offset", "position"]) if len(b) else b
        base = b["base_offset"].to_numpy(np.int64)
        last = b["last_offset"].to_numpy(np.int64)
        cols = np.stack([
            np.where(base >= 0, base, last), last, b["partition_leader_epoch"].to_numpy(np.int64),
            np.where(b["crc_valid"].to_numpy(bool), b["crc"].to_numpy(np.int64), -1),
            b["records_count"].to_numpy(np.int64), b["size_in_bytes"].to_numpy(np.int64),
            b["producer_id"].to_numpy(np.int64), b["magic"].to_numpy(np.int64),
            np.full(len(b), -1, np.int64), b["position"].to_numpy(np.int64),
        ], axis=1) if len(b) else BatchLog.empty().data
        cache = None if row.epoch_cache_written is None or pd.isna(row.epoch_cache_written) else [
            tuple(e) for e in json.loads(row.epoch_cache_written)]
        replicas.append(Replica(
            int(row.broker_id), BatchLog(cols),
            log_start=0 if pd.isna(row.log_start_offset) else int(row.log_start_offset),
            high_watermark=None if pd.isna(row.high_watermark) else int(row.high_watermark),
            epoch_checkpoint=cache,
            cleaner_offset=None if pd.isna(row.cleaner_offset) else int(row.cleaner_offset),
            source=str(row.snapshot_id),
        ))
    return replicas


def divergence_group(batches: pd.DataFrame, partitions: pd.DataFrame) -> pd.DataFrame:
    """Divergence rows for one (cluster, topic, partition) group (no replay needed)."""
    from .divergence import divergence

    first = partitions.iloc[0]
    cluster, topic, partition = first["cluster"], first["topic"], int(first["partition"])
    div = [{"cluster": cluster, "topic": topic, "partition": partition, "broker_a": d["brokers"][0],
            "broker_b": d["brokers"][1], "first_divergent_offset": d["first_divergent_offset"],
            "compacted_differences": d["compacted_differences"], "agreement": json.dumps(d["agreement"])}
           for d in divergence(replicas_from_frames(batches, partitions))]
    return pa.Table.from_pylist(div, schema=DIVERGENCE_SCHEMA).to_pandas()


def replay_group(batches: pd.DataFrame, partitions: pd.DataFrame, kafka_version: str = "latest"
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Verdict and divergence rows for one (cluster, topic, partition) group."""
    first = partitions.iloc[0]
    cluster, topic, partition = first["cluster"], first["topic"], int(first["partition"])
    replicas = replicas_from_frames(batches, partitions)
    snap = {int(r.broker_id): r.snapshot_id for r in partitions.itertuples(index=False)}
    rp = replay_partition(topic, partition, replicas, kafka_version=kafka_version)
    rows = []
    for out in rp.replicas:
        reasoning = json.dumps([line for d in out.decisions for line in d.reasoning])
        for v in out.verdicts:
            rows.append({
                "cluster": cluster, "topic": topic, "partition": partition, "broker_id": out.broker_id,
                "snapshot_id": snap.get(out.broker_id), "role": out.role, "kafka_version": rp.kafka_version,
                "leader": rp.leader, "leader_epoch": rp.leader_epoch, "committed_bound": rp.committed_bound,
                "verdict": v.code, "offsets": json.dumps(v.offsets), "records": v.records, "bytes": v.bytes,
                "producer_ids": v.producer_ids, "detail": v.detail,
                "log_end_offset_before": out.log_end_offset_before, "log_end_offset_after": out.log_end_offset_after,
                "reasoning": reasoning,
            })
    div = [{"cluster": cluster, "topic": topic, "partition": partition, "broker_a": d["brokers"][0],
            "broker_b": d["brokers"][1], "first_divergent_offset": d["first_divergent_offset"],
            "compacted_differences": d["compacted_differences"], "agreement": json.dumps(d["agreement"])}
           for d in rp.divergence]
    return (pa.Table.from_pylist(rows, schema=VERDICT_SCHEMA).to_pandas(),
            pa.Table.from_pylist(div, schema=DIVERGENCE_SCHEMA).to_pandas())
