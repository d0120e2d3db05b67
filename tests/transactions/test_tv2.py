"""Transactions v2 (KIP-890): a marker's transaction version and whether it ends a fenced producer's transaction.

Expected values from Kafka 4.0.0's coordinator (kafka_2.13 sources, ``kafka.coordinator.transaction``):
``TransactionMetadata.prepareAbortOrCommit`` bumps the producer epoch at every commit or abort when
``clientTransactionVersion.supportsEpochBump`` (level 2), and the producer goes on in that epoch;
``prepareFenceProducerEpoch`` bumps once to fence (timeout, or ``InitProducerId`` while ``Ongoing``) and under v2
``TransactionCoordinator.endTransaction`` then bumps again for the abort; before v2 a COMMIT is never above its data.
A fenced producer calls ``InitProducerId`` again, which bumps (``prepareIncrementProducerEpoch``).  The marker value
itself is ``EndTxnMarker`` v0 only ({version, coordinator epoch}) at 4.0.0 and 4.1.0 (clients
``EndTransactionMarker``): it carries no transaction version.  The LSO rule is ``ProducerStateManager.
firstUnstableOffset`` (storage 4.0.0), the same for every version.
"""

from __future__ import annotations

from kforensics.formats import transaction_log as tl
from kforensics.formats.control import decode_control
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log.file_kinds import parse_partition_dir_name
from kforensics.log.partition import open_partition
from kforensics.scenario.writer import LogDirWriter
from kforensics.transactions.coordinator import read_transaction_state
from kforensics.transactions.partition import read_partition_transactions
from tests.transactions.helpers import data_batch, marker_batch, write_partition


def _markers(pt):
    return [(m.offset, m.control_type, m.epoch_bump, m.transaction_version, m.fenced) for m in pt.markers]


def test_tv2_epoch_bumps_are_no_fencing_and_no_anomaly(tmp_path):
    # v2: data e0, COMMIT e1; data e1, ABORT e2 (the producer's own abort); data e2, COMMIT e3
    pd = write_partition(tmp_path, "t", 0, [
        data_batch(0, 5, 0, txn=True), marker_batch(1, 5, 1, "COMMIT"),
        data_batch(2, 5, 1, txn=True), marker_batch(3, 5, 2, "ABORT"),
        data_batch(4, 5, 2, txn=True), marker_batch(5, 5, 3, "COMMIT")])
    pt = read_partition_transactions(pd, check_txn_index=False)
    assert _markers(pt) == [(1, "COMMIT", 1, "2", False),
                            # settled by the next transaction in the marker's epoch
                            (3, "ABORT", 1, "2", False),
                            (5, "COMMIT", 1, "2", False)]
    assert pt.transaction_versions == {"2": 3}
    assert not [f for f in pt.findings if f.code == "TXN_PRODUCER_EPOCH_WENT_BACKWARDS"]
    assert pt.last_stable_offset == 6 and not pt.open


def test_before_v2_no_bump_and_a_fence(tmp_path):
    # v0/v1: data e0, COMMIT e0; data e0, ABORT e1 (a fence: timeout); the producer re-inits: data e2, open
    pd = write_partition(tmp_path, "t", 0, [
        data_batch(0, 6, 0, txn=True), marker_batch(1, 6, 0, "COMMIT"),
        data_batch(2, 6, 0, txn=True), marker_batch(3, 6, 1, "ABORT"),
        data_batch(4, 6, 2, txn=True)])
    pt = read_partition_transactions(pd, check_txn_index=False)
    # the ABORT one above its data is a v2 abort or a fence before v2: the epochs alone do not decide
    assert _markers(pt) == [(1, "COMMIT", 0, "0-1", False), (3, "ABORT", 1, None, None)]
    assert pt.last_stable_offset == 4  # the open transaction from offset 4 (firstUnstableOffset)


def test_tv2_fence_is_two_bumps(tmp_path):
    pd = write_partition(tmp_path, "t", 0, [data_batch(0, 7, 3, txn=True), marker_batch(1, 7, 5, "ABORT")])
    pt = read_partition_transactions(pd, check_txn_index=False)
    assert _markers(pt) == [(1, "ABORT", 2, "2", True)]


def _coordinator(tmp_path, version):
    value = {"producerId": 6, "producerEpoch": 1, "transactionTimeoutMs": 60000,
             "transactionStatus": {v: k for k, v in tl.TRANSACTION_STATES.items()}["CompleteAbort"],
             "transactionPartitions": [], "transactionLastUpdateTimestampMs": 1, "transactionStartTimestampMs": 1}
    if version >= 2:
        value["clientTransactionVersion"] = version
    k, v = tl.encode("TransactionLogValue", 1 if version >= 2 else 0, {"transactionalId": "x"}, value)
    lw = LogDirWriter(tmp_path / "coord", node_id=1, cluster_id="t")
    lw.partition("__transaction_state", 0).append(build_batch([RecordData(0, 0, k, v)], partition_leader_epoch=0))
    lw.write()
    return read_transaction_state([(1, open_partition(tmp_path / "coord" / "__transaction_state-0",
                                                      parse_partition_dir_name("__transaction_state-0"), []))])


def test_the_coordinators_record_decides_an_abort_the_epochs_leave_open(tmp_path):
    batches = [data_batch(0, 6, 0, txn=True), marker_batch(1, 6, 1, "ABORT")]
    for version, tv, fenced in ((0, "0", True), (2, "2", False)):
        pd = write_partition(tmp_path / f"d{version}", "t", 0, batches)
        pt = read_partition_transactions(pd, check_txn_index=False, coordinator=_coordinator(tmp_path / f"c{version}",
                                                                                            version))
        (m,) = pt.markers
        assert (m.transaction_version, m.fenced) == (tv, fenced)
        assert "ClientTransactionVersion" in m.transaction_version_basis


def test_the_marker_value_carries_no_transaction_version():
    # COMMIT key (version 0, type 1) and an EndTxnMarker v0 value: version 0, coordinator epoch 3
    out = decode_control(bytes([0, 0, 0, 1]), bytes([0, 0, 0, 0, 0, 3]))
    assert (out["type"], out["valueVersion"], out["coordinatorEpoch"]) == ("COMMIT", 0, 3)
    assert not any("ransaction" in k for k in out)


def test_a_hanging_transaction_states_its_version(tmp_path):
    from tests.transactions.helpers import T0

    pd = write_partition(tmp_path, "t", 0, [
        data_batch(0, 5, 0, txn=True, ts=T0), marker_batch(1, 5, 1, "COMMIT", ts=T0),
        data_batch(2, 5, 1, txn=True, ts=T0), data_batch(3, ts=T0 + 20 * 60 * 1000)])
    pt = read_partition_transactions(pd, check_txn_index=False)
    (t,) = pt.open
    assert t.hanging and t.transaction_version == "2" and "under transactions v2" in t.why
    assert pt.last_stable_offset == 2  # firstUnstableOffset: the hanging transaction's first offset


def test_the_hanging_scenario_mixes_versions_and_each_marker_says_which():
    # fixtures/scenarios/transaction-hanging: producer 100 commits under v1 (marker in its data's epoch), producer
    # 200 aborts then commits under v2 (each marker one epoch up, the next transaction in the bumped epoch),
    # producer 300's transaction hangs (the coordinator says CompleteAbort with clientTransactionVersion absent: 0)
    from kforensics.scenario import load_scenario
    from kforensics.transactions.coordinator import coordinator_view
    from tests.conftest import ROOT

    sc = load_scenario(ROOT / "fixtures" / "scenarios" / "transaction-hanging")
    pd = open_partition(sc.brokers[1][0] / "orders-0", parse_partition_dir_name("orders-0"), [])
    pt = read_partition_transactions(pd, broker_id=1, high_watermark=13, coordinator=coordinator_view(sc.log_dirs))
    assert [(m.producer_id, m.control_type, m.transaction_version, m.fenced) for m in pt.markers] == [
        (100, "COMMIT", "0-1", False), (200, "ABORT", "2", False), (200, "COMMIT", "2", False)]
    (t,) = pt.open
    assert (t.producer_id, t.hanging, t.transaction_version) == (300, True, "0")
    assert "under transactions v2" not in t.why
    assert pt.transaction_versions == {"0-1": 1, "2": 2}


TV2 = "fixtures/tv2/tv2-markers"


def test_tv2_fixture_markers_match_their_derivation():
    # fixtures/make_tv2.py: each marker's version and fence derived from the 4.0.0 coordinator (cited there)
    from kforensics.scenario import load_scenario
    from kforensics.transactions.coordinator import coordinator_view
    from tests.conftest import ROOT

    sc = load_scenario(ROOT / TV2)
    pd = open_partition(sc.brokers[1][0] / "orders-0", parse_partition_dir_name("orders-0"), [])
    pt = read_partition_transactions(pd, broker_id=1, coordinator=coordinator_view(sc.log_dirs))
    got = [[m.offset, m.producer_id, m.control_type, m.epoch_bump, m.transaction_version, m.fenced]
           for m in pt.markers]
    assert got == sc.doc["expected_transactions"]["orders-0@broker-1"]["markers"]
    assert not pt.findings  # no epoch anomaly: every bump is the coordinator's
    assert sc.doc["sources"] and sc.doc["derivation"]["latest"]


def test_tv2_fixture_regenerates_byte_for_byte(tmp_path):
    from tests.conftest import ROOT, file_tree, run_generator

    run_generator(ROOT / "fixtures" / "make_tv2.py", tmp_path)
    assert file_tree(tmp_path) == file_tree(ROOT / "fixtures" / "tv2")
