"""Replicas rebuilt from the scan tables (the Spark path) equal the replicas ``replay`` loads from the disk."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from kforensics.replay.engine import PartitionReplay
from kforensics.replay.inputs import load_replicas
from kforensics.replay.replica import COLUMNS
from kforensics.replay.verdicts import Verdict
from kforensics.scan.broker import scan_log_dirs
from kforensics.tables.replay_tables import (BATCH_COLUMNS, PARTITION_COLUMNS, replicas_from_frames, verdict_rows,
                                             verdicts_table)
from kforensics.tables.report_tables import partitions_table
from kforensics.tables.scan_tables import BatchesWriter
from tests.conftest import REALDATA, ROOT

SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if p.is_dir())
#: every scenario broker (damaged, torn, zeroed, compacted logs), the damaged fixture brokers, and real disks with
#: several segments, compaction and logs removed by retention when ../shared is there
DISKS = ([b for s in SCENARIOS for b in sorted(s.glob("broker-*"))]
         + [ROOT / "fixtures" / "brokers" / n for n in ("damaged", "damaged-clean", "healthy")]
         + [REALDATA / c for c in ("cobyforrester__kafka__77a7583/data/kafka",
                                   "DonaldY__kafka-2.7.1__13bb4a8/kafka-logs",
                                   "hiage__kafka-raft__c5f680e/data/kafka1")])


def _frames(disk: Path, tmp: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``batches`` and ``partitions`` rows ``scan --out`` (and each Spark task) writes for one broker."""
    context = {"snapshot_id": disk.name, "snapshot_time": None, "cluster": "c", "broker_id": 7}
    writer = BatchesWriter(str(tmp / "batches.parquet"), context)
    report = scan_log_dirs([disk], batch_sink=writer)
    writer.close()
    return pq.read_table(tmp / "batches.parquet").to_pandas(), partitions_table(report, context).to_pandas()


@pytest.mark.parametrize("disk", DISKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_replicas_from_frames_equal_replicas_loaded_from_disk(disk, tmp_path):
    if not disk.exists():
        pytest.skip(f"{disk} is absent: ../shared (real broker data) is not beside this checkout")
    loaded = load_replicas({7: [disk]})
    batches, partitions = _frames(disk, tmp_path)
    assert set(BATCH_COLUMNS) <= set(batches.columns) and set(PARTITION_COLUMNS) <= set(partitions.columns)
    assert loaded.groups, "nothing to compare"
    for (topic, partition), [want] in loaded.groups.items():
        keys = (partitions["topic"] == topic) & (partitions["partition"] == partition)
        bkeys = (batches["topic"] == topic) & (batches["partition"] == partition)
        [got] = replicas_from_frames(batches[bkeys][BATCH_COLUMNS], partitions[keys][PARTITION_COLUMNS])
        where = f"{disk.name}/{topic}-{partition}"
        assert got.log.data.shape == want.log.data.shape, where
        for i, c in enumerate(COLUMNS):
            assert np.array_equal(got.log.data[:, i], want.log.data[:, i]), f"{where}: column {c}"
        assert [Path(str(s)).name for s in got.segments] == [Path(str(s)).name for s in want.segments], where
        for attr in ("broker_id", "log_start", "high_watermark", "epoch_checkpoint", "cleaner_offset", "source",
                     "recovery", "clean_shutdown", "topic_id"):
            assert getattr(got, attr) == getattr(want, attr), f"{where}: {attr}"
        assert got.cluster_id == "c" and want.cluster_id == loaded.reports[0].broker.cluster_id


def test_copies_of_a_partition_never_mix_into_its_live_log(tmp_path):
    """A ``-delete`` (or ``-future``) dir of the same partition has its own batches: only the live dir's count."""
    from kforensics.formats.record_batch import RecordData, build_batch
    from kforensics.scenario.writer import LogDirWriter

    lw = LogDirWriter(tmp_path / "b", node_id=7, cluster_id="c")
    live = lw.partition("orders", 0, topic_id="AAAAAAAAAAAAAAAAAAAABw")
    for i in range(3):
        live.append(build_batch([RecordData(i, 1_700_000_000_000 + i, value=b"x")], partition_leader_epoch=0))
    lw.write()
    old = LogDirWriter(tmp_path / "old", node_id=7)
    gone = old.partition("orders", 0)
    for i in range(5):
        gone.append(build_batch([RecordData(i, 1_700_000_000_000 + i, value=b"y")], partition_leader_epoch=0))
    old.write()
    (tmp_path / "old" / "orders-0").rename(tmp_path / "b" / "orders-0.0123456789abcdef0123456789abcdef-delete")
    batches, partitions = _frames(tmp_path / "b", tmp_path)
    assert len(batches) == 8
    [got] = replicas_from_frames(batches[BATCH_COLUMNS], partitions[PARTITION_COLUMNS])
    [want] = load_replicas({7: [tmp_path / "b"]}).groups[("orders", 0)]
    assert len(got.log) == len(want.log) == 3 and np.array_equal(got.log.data, want.log.data)


def test_verdict_rows_carry_the_verdicts_facts_as_json():
    from kforensics.replay.engine import ReplicaOutcome

    v = Verdict("NOT_CONVERGING", facts={"repeating_rounds": [(1, 2)], "leader": 1})
    out = ReplicaOutcome(2, "follower", 5, 5, None, [], verdicts=[v])
    rp = PartitionReplay("t", 0, "latest", 1, 3, 5, [out], [], [])
    row = verdicts_table(verdict_rows(rp, "c", {2: "snap"})).to_pylist()[0]
    assert json.loads(row["facts"]) == {"repeating_rounds": [[1, 2]], "leader": 1}
    assert (row["snapshot_id"], row["verdict"]) == ("snap", "NOT_CONVERGING")
