"""Transactions on a partition's log: Kafka-written oracle segments, scenarios, real brokers, the .txnindex,
the coordinator's view, properties against a reference model, the transactions table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kforensics.formats import txn_index
from kforensics.log.file_kinds import parse_partition_dir_name
from kforensics.log.partition import open_partition
from kforensics.serialize import dumps, to_jsonable
from kforensics.transactions.coordinator import coordinator_view
from kforensics.transactions.internal_log import coordinator_partition, java_string_hash
from kforensics.transactions.partition import read_partition_transactions
from kforensics.epoch.versions import parse_kafka_version
from tests.conftest import ORACLE, REALDATA, ROOT, load_manifest, need_shared
from tests.transactions.helpers import batches_of, data_batch, marker_batch, reference, write_partition

SCENARIOS = ROOT / "fixtures" / "scenarios"
EPOCH_CODES = {"TXN_PRODUCER_EPOCH_WENT_BACKWARDS", "TXN_COORDINATOR_EPOCH_WENT_BACKWARDS"}


def oracle_partition(case: str):
    d = need_shared(ORACLE) / "logs" / f"{case}-0"
    return open_partition(d, parse_partition_dir_name(d.name), [])


def manifest_transactions(case: str) -> dict:
    """What Kafka's own view of each batch (the manifest) implies: markers with their transaction's first offset,
    aborted ranges, transactions open at the end."""
    ongoing, markers, aborted = {}, [], []
    for seg in load_manifest(case)["segments"]:
        for b in seg["batches"]:
            if not b["isTransactional"]:
                continue
            pid = b["producerId"]
            if not b["isControl"]:
                ongoing.setdefault(pid, (b["baseOffset"], b["producerEpoch"]))
                continue
            ctl = b["records"][0]["control"]
            first = ongoing.pop(pid, None)
            markers.append((b["baseOffset"], pid, ctl["type"], b["producerEpoch"], ctl["coordinatorEpoch"],
                            None if first is None else first[0], None if first is None else first[1]))
            if ctl["type"] == "ABORT" and first is not None:
                aborted.append((pid, first[0], b["baseOffset"]))
    return {"markers": markers, "aborted": aborted, "open": sorted((f, pid, e) for pid, (f, e) in ongoing.items())}


@pytest.mark.parametrize("case", ["v2-transactions", "v2-compacted"])
def test_oracle_transactions_are_those_kafkas_manifest_implies(case):
    pt = read_partition_transactions(oracle_partition(case), check_txn_index=False)
    want = manifest_transactions(case)
    assert [(m.offset, m.producer_id, m.control_type, m.producer_epoch, m.coordinator_epoch, m.first_offset,
             m.data_epoch) for m in pt.markers] == want["markers"]
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in pt.aborted] == want["aborted"]
    assert [(t.first_offset, t.producer_id, t.producer_epoch) for t in pt.open] == want["open"]
    assert pt.last_stable_offset == min([f for f, _, _ in want["open"]] + [pt.log_end_offset])
    # the coordinator-fenced producer's ABORT one epoch above its data is no anomaly; nothing else is either
    assert {f.code for f in pt.findings} <= {"TXN_OPEN"}
    json.loads(dumps(pt))


def test_oracle_epoch_bump_and_last_stable_offsets_of_aborts():
    pt = read_partition_transactions(oracle_partition("v2-transactions"), check_txn_index=False)
    bumped = [m for m in pt.markers if m.epoch_bump == 1]
    assert [(m.producer_id, m.control_type, m.offset) for m in bumped] == [(2003, "ABORT", 17)]
    # AbortedTxn last stable offsets: no other transaction open at either abort -> marker + 1
    assert [(a.producer_id, a.last_stable_offset) for a in pt.aborted] == [(2001, 12), (2003, 18)]
    assert pt.commits == 3 and pt.aborts == 2 and pt.empty_markers == 0


def test_without_a_txnindex_every_abort_is_reported_missing():
    pt = read_partition_transactions(oracle_partition("v2-transactions"))
    missing = [f for f in pt.findings if f.code == "TXN_INDEX_MISSING_ABORT"]
    assert [(f.facts["producer_id"], f.facts["last_offset"]) for f in missing] == [(2001, 11), (2003, 17)]
    assert all(f.file.endswith("00000000000000000000.txnindex") and f.facts["txn_index_file"] is False
               for f in missing)


@pytest.mark.parametrize("broker", [1, 2])
def test_hanging_scenario_matches_its_hand_derivation(broker):
    from kforensics.scenario import load_scenario

    sc = load_scenario(SCENARIOS / "transaction-hanging")
    want = sc.doc["expected_transactions"][f"orders-0@broker-{broker}"]
    view = coordinator_view(sc.log_dirs)
    pd = open_partition(sc.brokers[broker][0] / "orders-0", parse_partition_dir_name("orders-0"), [])
    pt = read_partition_transactions(pd, broker_id=broker, high_watermark=13, coordinator=view)
    assert pt.last_stable_offset == want["last_stable_offset"]
    assert (pt.commits, pt.aborts) == (want["commits"], want["aborts"])
    assert [{k: getattr(t, k) for k in want["open"][0]} for t in pt.open] == want["open"]
    assert [[m.offset, m.producer_id, m.control_type, m.producer_epoch, m.epoch_bump] for m in pt.markers] == \
        want["markers"]
    assert [[a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset, a.in_txn_index]
            for a in pt.aborted] == want["aborted"]
    assert sorted({f.code for f in pt.findings}) == want["findings"]
    (hanging,) = pt.hanging
    assert "CompleteAbort" in hanging.why and hanging.age_ms > 15 * 60 * 1000


@pytest.mark.parametrize("version", ["0.10", "0.11", "2.0.0", "2.0.1", "2.8", "latest"])
def test_marker_lost_scenario_reopens_the_transaction(version):
    from kforensics.consumers.read_committed import transactions_after_replay
    from kforensics.replay.report import replay_all
    from kforensics.scenario import load_scenario

    sc = load_scenario(SCENARIOS / "transaction-marker-lost")
    want = sc.doc["expected_transactions"][f"orders-0@after-replay@{version}"]
    report = replay_all(sc.brokers, kafka_version=parse_kafka_version(version), events=sc.events, metadata=sc.metadata)
    assert report.partitions[0].verdict_codes() == sc.expected[version]
    (after,) = transactions_after_replay(report, log_dirs=sc.log_dirs)
    lt = after.leader_transactions
    assert after.leader == want["leader"] and lt.last_stable_offset == want["last_stable_offset"]
    assert [{k: getattr(t, k) for k in want["open"][0]} for t in lt.open] == want["open"]
    assert [[r.producer_id, r.first_offset, r.marker.control_type, r.marker.offset, r.broker_id, r.verdict]
            for r in after.reopened] == want["reopened"]
    assert sorted({f.code for f in lt.findings + after.findings}) == want["findings"]
    assert after.reopened[0].marker.epoch_bump == 1  # a transactions-v2 marker: no epoch anomaly
    to_jsonable(after)


def test_real_ksql_command_topic_commits_with_rising_epochs():
    corpus = need_shared(REALDATA / "Danielowo2000__BigDataTechnologies-Version-2__63c2bf1" / "kafka_data")
    d = corpus / "_confluent-ksql-default__command_topic-0"
    view = coordinator_view({1: [corpus]})
    pt = read_partition_transactions(open_partition(d, parse_partition_dir_name(d.name), []), coordinator=view)
    assert pt.commits == 4 and pt.aborts == 0 and not pt.open
    assert [m.producer_epoch for m in pt.markers] == [m.data_epoch for m in pt.markers] == [0, 1, 2, 3]
    assert not pt.findings
    # all 50 __transaction_state partitions are there, and all their logs are empty in this snapshot (the broker
    # was running): no state to disagree with, and no conclusion drawn from the absence
    assert view is not None and view.complete and not view.states and not view.findings


def test_java_string_hash_and_partition_for():
    assert java_string_hash("hello") == 99162322 and java_string_hash("") == 0
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE: Utils.abs gives 0
    assert coordinator_partition("polygenelubricants") == 0


# ---------------------------------------------------------------------------- streaming rules
def test_epoch_and_coordinator_epoch_going_backwards_are_findings(tmp_path):
    pd = write_partition(tmp_path, "t", 0, [
        data_batch(0, 7, 3, txn=True), marker_batch(1, 7, 3, "COMMIT", coordinator_epoch=5),
        data_batch(2, 7, 2, txn=True), marker_batch(3, 7, 4, "ABORT", coordinator_epoch=4)])
    pt = read_partition_transactions(pd, check_txn_index=False)
    codes = [(f.code, f.facts.get("offset")) for f in pt.findings]
    assert ("TXN_PRODUCER_EPOCH_WENT_BACKWARDS", 2) in codes and ("TXN_COORDINATOR_EPOCH_WENT_BACKWARDS", 3) in codes
    assert pt.findings[0].file.endswith(".log") and pt.findings[0].position is not None


def test_lso_counts_unreplicated_markers(tmp_path):
    pd = write_partition(tmp_path, "t", 0, [data_batch(0), data_batch(1, 9, 0, txn=True), data_batch(2),
                                            marker_batch(3, 9, 0, "COMMIT"), data_batch(4)])
    assert read_partition_transactions(pd, high_watermark=3).last_stable_offset == 1  # marker not below the HW
    assert read_partition_transactions(pd, high_watermark=4).last_stable_offset == 4
    assert read_partition_transactions(pd).last_stable_offset == 5  # no HW: bounded by the log end


def test_txn_index_entries_missing_unknown_and_different(tmp_path):
    batches = [data_batch(0, 1, 0, txn=True), data_batch(1, 2, 0, txn=True), marker_batch(2, 1, 0, "ABORT"),
               marker_batch(3, 2, 0, "ABORT"), data_batch(4, 3, 0, txn=True), marker_batch(5, 3, 0, "ABORT")]
    index = txn_index.encode([
        {"producer_id": 1, "first_offset": 0, "last_offset": 2, "last_stable_offset": 1},  # LSO: 2's txn from 1
        {"producer_id": 2, "first_offset": 0, "last_offset": 3, "last_stable_offset": 4},  # first offset differs
        {"producer_id": 8, "first_offset": 6, "last_offset": 9, "last_stable_offset": 10}])  # no such abort
    pt = read_partition_transactions(write_partition(tmp_path, "t", 0, batches, txn_index=index))
    assert [(a.producer_id, a.last_stable_offset, a.in_txn_index) for a in pt.aborted] == [
        (1, 1, True), (2, 4, True), (3, 6, False)]
    got = sorted((f.code, f.facts["producer_id"]) for f in pt.findings)
    assert got == [("TXN_INDEX_ENTRY_DIFFERS", 2), ("TXN_INDEX_MISSING_ABORT", 3), ("TXN_INDEX_UNKNOWN_ABORT", 8)]


def test_txn_index_entries_of_a_segment_without_aborts_are_unknown(tmp_path):
    """A segment whose log holds no abort at all, with a ``.txnindex`` that lists one: still compared (the
    comparison is skipped only without aborts and without an index)."""
    index = txn_index.encode([{"producer_id": 8, "first_offset": 0, "last_offset": 1, "last_stable_offset": 0}])
    batches = [data_batch(0), data_batch(1), data_batch(2, 5, 0, txn=True), marker_batch(3, 5, 0, "COMMIT")]
    pt = read_partition_transactions(write_partition(tmp_path, "t", 0, batches, txn_index=index))
    assert not pt.aborted
    assert [(f.code, f.facts["producer_id"]) for f in pt.findings] == [("TXN_INDEX_UNKNOWN_ABORT", 8)]
    plain = read_partition_transactions(write_partition(tmp_path / "b", "t", 0, batches))
    assert plain.findings == [] and plain.last_stable_offset == 4


def test_hanging_by_the_partitions_own_clock(tmp_path):
    minute = 60_000
    pd = write_partition(tmp_path, "t", 0, [data_batch(0, 4, 0, txn=True, ts=0), data_batch(1, ts=14 * minute),
                                            data_batch(2, 5, 0, txn=True, ts=14 * minute)])
    pt = read_partition_transactions(pd)
    assert [(t.producer_id, t.hanging) for t in pt.open] == [(4, False), (5, False)]
    pd2 = write_partition(tmp_path / "b", "t", 0, [data_batch(0, 4, 0, txn=True, ts=0),
                                                   data_batch(1, ts=16 * minute)])
    (t,) = read_partition_transactions(pd2).open
    assert t.hanging and t.age_ms == 16 * minute
    assert [f.code for f in read_partition_transactions(pd2).findings] == ["TXN_HANGING"]


OPS = st.lists(st.one_of(
    st.tuples(st.just("plain")),
    st.tuples(st.just("data"), st.integers(1, 4), st.integers(0, 2)),
    st.tuples(st.just("marker"), st.integers(1, 4), st.integers(0, 3), st.sampled_from(["COMMIT", "ABORT"]))),
    max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, rows=st.integers(1, 9), window=st.sampled_from([128, 512, 1 << 20]))
def test_tracker_agrees_with_the_reference_model(tmp_path_factory, ops, rows, window):
    from kforensics.transactions.producer_state import TransactionTracker

    root = tmp_path_factory.mktemp("txn")
    ref = reference(ops)
    if not ops:
        return
    pd = write_partition(root, "t", 0, batches_of(ops))
    pt = read_partition_transactions(pd, check_txn_index=False)
    # chunking and the reader's window change nothing (markers read from held bytes or, across a refill, alone)
    tr = TransactionTracker("t", 0)
    for seg in pd.sorted_segments():
        reader = seg.reader(window=window, rows=rows)
        tr.begin_segment(str(seg.log))
        for t in reader.tables():
            tr.feed(t, reader)
    assert to_jsonable(tr.finish()) == to_jsonable(pt)
    assert {t.producer_id: t.first_offset for t in pt.open} == ref["open"]
    assert [(a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset) for a in pt.aborted] == \
        ref["aborted"]
    assert [(m.offset, m.producer_id, m.control_type, m.first_offset) for m in pt.markers] == ref["markers"]
    assert pt.last_stable_offset == ref["lso"]
    assert sorted(f.facts["offset"] for f in pt.findings if f.code == "TXN_PRODUCER_EPOCH_WENT_BACKWARDS") == \
        ref["backwards"]
    # the index Kafka would have written matches: no index finding when it is given
    index = txn_index.encode([{"producer_id": p, "first_offset": f, "last_offset": last, "last_stable_offset": lso}
                              for p, f, last, lso in ref["aborted"]])
    pt2 = read_partition_transactions(write_partition(root / "i", "t", 0, batches_of(ops), txn_index=index))
    assert not [f for f in pt2.findings if f.code.startswith("TXN_INDEX")]
    assert all(a.in_txn_index for a in pt2.aborted)


def test_transactions_table(tmp_path):
    from kforensics.consumers.read_committed import transactions_after_replay
    from kforensics.replay.report import replay_all
    from kforensics.scenario import load_scenario
    from kforensics.tables.impact_tables import SCHEMAS, transactions_table

    pt = read_partition_transactions(oracle_partition("v2-transactions"), check_txn_index=False)
    sc = load_scenario(SCENARIOS / "transaction-marker-lost")
    after = transactions_after_replay(replay_all(sc.brokers, events=sc.events, metadata=sc.metadata),
                                      log_dirs=sc.log_dirs)
    t = transactions_table([pt], after, {"snapshot_id": "s", "cluster": "c"})
    assert t.schema == SCHEMAS["transactions"]
    rows = t.to_pylist()
    assert [r["kind"] for r in rows] == ["open"] + ["committed", "aborted", "committed", "aborted", "committed"] + \
        ["reopened"]
    assert rows[-1]["broker_id"] == 2 and rows[-1]["marker"] == "COMMIT" and rows[-1]["epoch_bump"] == 1
    assert rows[4]["epoch_bump"] == 1 and rows[4]["in_txn_index"] is None  # the index was not compared


def test_scan_style_feeding_gives_the_same_result():
    """The tracker fed from one SegmentReader pass (as the scan would) equals the partition reader."""
    from kforensics.transactions.producer_state import TransactionTracker

    pd = oracle_partition("v2-transactions")
    tr = TransactionTracker(pd.topic, pd.partition)
    for seg in pd.sorted_segments():
        reader = seg.reader(window=256, rows=3)  # small windows and chunks: markers read across refills
        tr.begin_segment(str(seg.log))
        for t in reader.tables():
            tr.feed(t, reader)
    assert to_jsonable(tr.finish()) == to_jsonable(read_partition_transactions(pd, check_txn_index=False))


def test_paths_are_strings_in_results():
    pt = read_partition_transactions(oracle_partition("v2-transactions"), check_txn_index=False)
    assert all(isinstance(m.file, str) and Path(m.file).name == "00000000000000000000.log" for m in pt.markers)


def test_coordinator_cross_check(tmp_path):
    from kforensics.formats import transaction_log as tl
    from kforensics.formats.record_batch import RecordData, build_batch
    from kforensics.scenario.writer import LogDirWriter
    from kforensics.transactions.coordinator import cross_check, read_transaction_state

    def state(tid, pid, epoch, status, parts=()):
        value = {"producerId": pid, "producerEpoch": epoch, "transactionTimeoutMs": 60000,
                 "transactionStatus": {v: k for k, v in tl.TRANSACTION_STATES.items()}[status],
                 "transactionPartitions": [{"topic": "t", "partitionIds": list(parts)}] if parts else [],
                 "transactionLastUpdateTimestampMs": 1, "transactionStartTimestampMs": 1}
        return tl.encode("TransactionLogValue", 0, {"transactionalId": tid}, value)

    records = [state("a", 7, 0, "Ongoing", [0]), state("b", 8, 0, "CompleteAbort"), state("c", 9, 0, "Ongoing", [0]),
               tl.encode("TransactionLogValue", 0, {"transactionalId": "c"}, None),
               state("d", 11, 0, "Ongoing", [1]), state("e", 13, 0, "PrepareCommit", [0])]
    lw = LogDirWriter(tmp_path / "coord", node_id=1, cluster_id="t")
    pw = lw.partition("__transaction_state", 0)
    for i, (k, v) in enumerate(records):
        pw.append(build_batch([RecordData(i, i, k, v)], partition_leader_epoch=0))
    lw.write()
    view = read_transaction_state([(1, open_partition(tmp_path / "coord" / "__transaction_state-0",
                                                      parse_partition_dir_name("__transaction_state-0"), []))])
    assert sorted(view.states) == ["a", "b", "d", "e"] and list(view.expired) == ["c"] and not view.complete
    pd = write_partition(tmp_path / "data", "t", 0, [
        data_batch(0, 7, 0, txn=True), data_batch(1, 8, 0, txn=True), marker_batch(2, 8, 0, "COMMIT"),
        data_batch(3, 9, 0, txn=True), data_batch(4, 11, 0, txn=True), data_batch(5, 12, 0, txn=True),
        data_batch(6, 13, 0, txn=True)])
    pt = read_partition_transactions(pd, coordinator=view, check_txn_index=False)
    by = {t.producer_id: t for t in pt.open}
    assert (by[7].hanging, by[7].coordinator_state) == (False, "Ongoing")
    assert (by[9].hanging, by[9].coordinator_state) == (True, "expired")
    assert (by[11].hanging, by[11].coordinator_state) == (True, "Ongoing") and "without this partition" in by[11].why
    assert not by[12].hanging and "no transactional id" in by[12].why  # unknown alone is not proof
    # at a restart (TransactionStateManager 3.9.0): an Ongoing one is aborted once its start + timeout has passed
    # (timedOutTransactions), a PrepareCommit one completed as the coordinator loads
    # (loadTransactionsForTxnTopicPartition), a hanging one stays open, and without a record nobody knows
    assert (by[7].at_restart, by[7].coordinator_timeout_at) == ("aborted once timed out", 1 + 60000)
    assert [by[p].at_restart for p in (9, 11, 12, 13)] == ["stays open", "stays open", "unknown",
                                                          "completed by the coordinator"]
    assert all(by[p].coordinator_timeout_at is None for p in (9, 11, 12, 13))
    (dis,) = [f for f in pt.findings if f.code == "TXN_COORDINATOR_DISAGREES"]
    assert dis.facts["producer_id"] == 8 and dis.facts["coordinator_state"] == "CompleteAbort"
    assert sorted(f.code for f in pt.findings if f.code.startswith("TXN_H")) == ["TXN_HANGING", "TXN_HANGING"]
    assert cross_check(pt, {}, view) == []


def test_every_real_partition_reads_without_findings(realdata_dir):
    from kforensics.log.log_dir import find_log_dirs, open_log_dir

    read = txn = 0
    for corpus in sorted(p for p in realdata_dir.iterdir() if p.is_dir() and not p.name.startswith("_")):
        for ld in find_log_dirs(corpus):
            for pd in open_log_dir(ld).partitions:
                pt = read_partition_transactions(pd)
                assert not pt.findings, (pd.path, pt.findings[:3])
                assert pt.last_stable_offset == pt.log_end_offset  # nothing open anywhere in this corpus
                read += 1
                txn += pt.transactional_batches
    assert read >= 600 and txn == 8  # the ksql command topic: 4 transactions and their markers


def test_published_schemas_name_every_restart_outcome():
    import json
    from pathlib import Path

    from kforensics.transactions.model import AT_RESTART

    for name in ("scan", "replay"):
        schema = json.loads((Path(__file__).parents[2] / "docs" / "schemas" / f"{name}.schema.json").read_text())
        found = []

        def walk(node):
            if isinstance(node, dict):
                if "at_restart" in (node.get("properties") or {}):
                    found.append(node["properties"]["at_restart"]["enum"])
                for v in node.values():
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)

        walk(schema)
        assert found and all(e == list(AT_RESTART) for e in found), name



def test_transactions_after_a_replay_that_affects_no_consumer_read_no_partition_dir(monkeypatch):
    """A replay that loses nothing leaves no transaction to read: the brokers' partition dirs are not listed (a
    healthy fleet's replay listed every one again); one that loses records lists them."""
    from kforensics.consumers import read_committed
    from kforensics.replay.report import replay_all
    from kforensics.scenario import load_scenario

    listed = []
    real = read_committed.partition_logs
    monkeypatch.setattr(read_committed, "partition_logs", lambda brokers: listed.append(1) or real(brokers))
    healthy = load_scenario(SCENARIOS / "healthy-3-brokers")
    report = replay_all(healthy.brokers, events=healthy.events, metadata=healthy.metadata)
    assert read_committed.transactions_after_replay(report, log_dirs=healthy.log_dirs) == [] and not listed
    lost = load_scenario(SCENARIOS / "transaction-marker-lost")
    report = replay_all(lost.brokers, events=lost.events, metadata=lost.metadata)
    assert len(read_committed.transactions_after_replay(report, log_dirs=lost.log_dirs)) == 1 and listed
