"""Transactions in the scan: the scan's one pass over the batch headers gives what the transactions package reads
on its own, the coordinator's view is read once and only when a partition has transactions, and the JSON shows
each partition's last stable offset and transactions once."""

from __future__ import annotations

import json

import pytest

from kforensics.cli.json_out import document
from kforensics.log.file_kinds import parse_partition_dir_name
from kforensics.log.partition import open_partition
from kforensics.scan.broker import scan_log_dirs
from kforensics.scan.model import PartitionContext
from kforensics.scan.partition import CoordinatorSource, scan_partition, transaction_coordinator
from kforensics.scenario import load_scenario
from kforensics.serialize import to_jsonable
from kforensics.transactions.coordinator import coordinator_view
from kforensics.transactions.partition import read_partition_transactions
from tests.conftest import ORACLE, ROOT, need_shared

SCENARIOS = ROOT / "fixtures" / "scenarios"
HANGING = SCENARIOS / "transaction-hanging"


def _partition(d):
    return open_partition(d, parse_partition_dir_name(d.name), [])


@pytest.mark.parametrize("case", ["v2-transactions", "v2-idempotent", "v2-none", "v2-compacted"])
def test_the_scans_pass_gives_what_the_partition_reader_gives(case):
    """One pass of the scan (large windows, the index and epoch checks beside) and the transactions package's own
    read agree, .txnindex comparison included."""
    pd = _partition(need_shared(ORACLE) / "logs" / f"{case}-0")
    scan = scan_partition(pd, PartitionContext())
    assert to_jsonable(scan.transactions) == to_jsonable(read_partition_transactions(pd))
    assert scan.open_transactions == scan.transactions.open
    assert {f.code for f in scan.transactions.findings} <= {f.code for f in scan.findings}


def test_the_coordinator_decides_whether_an_open_transaction_hangs():
    sc = load_scenario(HANGING)
    orders = sc.brokers[1][0] / "orders-0"
    # without the coordinator's log: hanging by the partition's own clock only
    alone = scan_partition(_partition(orders), PartitionContext(high_watermark=13))
    (t,) = alone.open_transactions
    assert (t.producer_id, t.hanging, t.coordinator_state) == (300, True, None)
    assert "maximum transaction timeout" in t.why
    # with it (given, or set around the scan), the coordinator's CompleteAbort without this partition
    view = coordinator_view(sc.log_dirs)
    given = scan_partition(_partition(orders), PartitionContext(high_watermark=13), coordinator=view)
    with transaction_coordinator(CoordinatorSource(sc.log_dirs)):
        ambient = scan_log_dirs(sc.log_dirs[1])
    (p,) = [p for p in ambient.partitions if p.topic == "orders"]
    for scan in (given, p):
        (t,) = scan.open_transactions
        assert (t.hanging, t.coordinator_state) == (True, "CompleteAbort") and "'payments'" in t.why
        assert scan.last_stable_offset == 6
        assert [f.code for f in scan.findings] == ["TXN_HANGING"]


def test_the_coordinators_log_is_read_only_when_needed(monkeypatch):
    import kforensics.transactions.coordinator as coordinator

    reads = []
    real = coordinator.coordinator_view
    monkeypatch.setattr(coordinator, "coordinator_view", lambda dirs: reads.append(dirs) or real(dirs))
    plain = load_scenario(SCENARIOS / "consumer-group-resets")
    source = CoordinatorSource(plain.log_dirs)
    with transaction_coordinator(source):
        report = scan_log_dirs(plain.log_dirs[1])
    assert not source.read and not reads  # no partition has a transaction (nor a marker to check)
    assert all(p.last_stable_offset == p.high_watermark for p in report.partitions)
    sc = load_scenario(HANGING)
    source = CoordinatorSource(sc.log_dirs)
    with transaction_coordinator(source):
        report = scan_log_dirs(sc.log_dirs[1] + sc.log_dirs[2])  # two copies of orders-0 with transactions
    assert len(reads) == 1 and source.view is not None  # read once for both
    assert [t.coordinator_state for p in report.partitions for t in p.open_transactions] == ["CompleteAbort"] * 2


def test_scan_json_shows_the_lso_and_the_transactions_once():
    sc = load_scenario(SCENARIOS / "transaction-marker-lost")
    doc = json.loads(json.dumps(document("scan", scan_log_dirs(sc.log_dirs[1]))))
    (p,) = [p for p in doc["partitions"] if p["topic"] == "orders"]
    assert p["last_stable_offset"] == p["high_watermark"] == 5 and p["open_transactions"] == []
    t = p["transactions"]
    assert not {"findings", "open", "topic", "partition", "high_watermark", "last_stable_offset"} & set(t)
    (m,) = t["markers"]
    assert (m["offset"], m["control_type"], m["producer_epoch"], m["data_epoch"]) == (3, "COMMIT", 1, 0)
    assert (t["commits"], t["aborts"], t["transactional_batches"]) == (1, 0, 3)
