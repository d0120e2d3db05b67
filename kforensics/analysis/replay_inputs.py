"""Replicas for replay, from brokers' log dirs: scan each, group partitions across brokers."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from ..log import kernels as K
from .partition_scan import PartitionScan
from .replica import COLUMNS, BatchLog, Replica
from .scan import ScanReport, scan_log_dirs


def replica_from_scan(broker_id: int, p: PartitionScan) -> Replica:
    """The replay view of one scanned partition (needs ``keep_batches=True``)."""
    parts = []
    segments: list[str] = []
    for seg, data in p.batch_tables:
        if not segments or segments[-1] != seg:
            segments.append(seg)
        base = data[:, K.COL["base_offset"]]
        last = data[:, K.COL["last_offset"]]
        valid = data[:, K.COL["crc"]] == data[:, K.COL["crc_computed"]]
        cols = np.stack([
            np.where(base >= 0, base, last),  # legacy wrappers: first offset unknown without decompression
            last,
            data[:, K.COL["partition_leader_epoch"]],
            np.where(valid, data[:, K.COL["crc"]], -1),  # a damaged batch matches nothing
            data[:, K.COL["records_count"]],
            data[:, K.COL["size_in_bytes"]],
            data[:, K.COL["producer_id"]],
            data[:, K.COL["magic"]],
            np.full(data.shape[0], len(segments) - 1),
            data[:, K.COL["position"]],
        ], axis=1)
        parts.append(cols)
    arr = np.concatenate(parts) if parts else np.empty((0, len(COLUMNS)), dtype=np.int64)
    log = BatchLog(arr)
    return Replica(
        broker_id,
        log,
        log_start=p.log_start_offset or 0,
        high_watermark=p.high_watermark,
        epoch_checkpoint=p.epoch_cache_written,
        cleaner_offset=p.cleaner_offset,
        source=str(Path(p.log_dir) / p.dir_name),
        segments=segments,
    )


def batch_digests(replica: Replica, log: BatchLog, limit: int = 1000) -> list[dict]:
    """Key/value SHA-256 of the records of these batches, read back from the replica's segment files."""
    from ..log.records import decode_entry
    from ..log.segment_reader import Batch

    out: list[dict] = []
    for row in log.data.tolist():
        seg, pos, size = row[COLUMNS.index("segment")], row[COLUMNS.index("position")], row[COLUMNS.index("size")]
        if seg < 0 or pos < 0 or len(out) >= limit:
            continue
        with open(replica.segments[seg], "rb") as fh:
            fh.seek(pos)
            raw = fh.read(size)
        buf = np.frombuffer(raw, dtype=np.uint8)
        table = K.new_batch_table(1)
        k, _end, _st = K.walk(buf, len(raw), 0, table, 0, 1)
        if not k:
            continue
        res = decode_entry(Batch(table[0].tolist(), memoryview(raw)))
        for r in res.records:
            out.append({"offset": r["offset"], "key_sha256": r["key_sha256"], "value_sha256": r["value_sha256"],
                        "value_size": r["value_size"], "producer_id": row[COLUMNS.index("pid")]})
    return out[:limit]


def load_replicas(brokers: dict[int, list[str | Path]] | list[str | Path], *, kafka_version: str = "latest"
                  ) -> tuple[dict[tuple[str, int], list[Replica]], list[ScanReport]]:
    """Scan each broker's log dir(s) and group the replicas of each partition.

    ``brokers`` maps broker id to its log dirs, or is a list of log dirs whose
    broker ids come from meta.properties (or their position, when absent).
    """
    reports = []
    groups: dict[tuple[str, int], list[Replica]] = defaultdict(list)
    items = brokers.items() if isinstance(brokers, dict) else [(None, [d]) for d in brokers]
    for i, (bid, dirs) in enumerate(items):
        report = scan_log_dirs(dirs, kafka_version=kafka_version, keep_batches=True)
        reports.append(report)
        broker_id = bid if bid is not None else (report.broker.node_id if report.broker.node_id is not None else i)
        for p in report.partitions:
            if p.suffix is not None or p.topic == "__cluster_metadata":
                continue
            groups[(p.topic, p.partition)].append(replica_from_scan(broker_id, p))
    return dict(groups), reports


def load_scenario(path: str | Path) -> dict:
    """A scenario dir written by :class:`kforensics.scenario.ScenarioBuilder`: broker dirs, events, expectations."""
    import json

    root = Path(path)
    doc = json.loads((root / "scenario.json").read_text())
    brokers = {}
    for d in sorted(root.glob("broker-*")):
        brokers[int(d.name.split("-", 1)[1])] = [d]
    doc["brokers"] = brokers
    meta = root / "controller" / "__cluster_metadata-0"
    doc["metadata"] = [meta] if meta.exists() else []
    doc["expected"] = {v: {int(k): codes for k, codes in exp.items()} for v, exp in doc.get("expected", {}).items()}
    return doc
