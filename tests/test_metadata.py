"""KRaft metadata records and the election timeline: real metadata logs, round trips, epochs vs checkpoints."""

from __future__ import annotations

import glob
import json
import random

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ORACLE, REALDATA, load_manifest, need_shared
from kforensics.analysis.scan import scan_log_dirs
from kforensics.analysis.timeline import build_timeline, check_replica_epochs
from kforensics.cli import main
from kforensics.findings import FormatError
from kforensics.formats.metadata_records import decode_metadata_record, encode_metadata_record
from kforensics.log.records import decode_entry
from kforensics.log.segment_reader import SegmentReader

KRAFT_BROKERS = [
    "hiage__kafka-raft__c5f680e/data/kafka1", "hiage__kafka-raft__c5f680e/data/kafka2",
    "hiage__kafka-raft__c5f680e/data/kafka3",
    "Danielowo2000__BigDataTechnologies-Version-2__63c2bf1/kafka_data",
    "Danielowo2000__BigDataTechnologies-Version-2__63c2bf1/kafka_2.13-3.5.0/kraft-combined-logs",
    "Niloufar1171__LDI-POC__8030792", "ronem123__rupia-transaction-service__5d88e97/kafka-logs",
]


def real_metadata_values():
    need_shared(REALDATA)
    files = glob.glob(str(REALDATA / "**" / "__cluster_metadata-0" / "*.log"), recursive=True)
    files += glob.glob(str(REALDATA / "**" / "*.checkpoint"), recursive=True)
    for p in sorted(files):
        for b in SegmentReader(p).batches():
            for r in decode_entry(b, with_data=True).records:
                if r["control"] is None and r["value"] is not None:
                    yield p, r["value"]


def test_every_real_metadata_record_decodes_with_no_unknown_records():
    types = {}
    n = 0
    for _path, value in real_metadata_values():
        d = decode_metadata_record(value)  # raises on unknown apiKeys, versions or trailing bytes
        types[d["type"]] = types.get(d["type"], 0) + 1
        n += 1
    assert n > 79_000
    assert {"PartitionRecord", "PartitionChangeRecord", "TopicRecord", "RegisterBrokerRecord", "FeatureLevelRecord",
            "RegisterControllerRecord", "ConfigRecord", "ProducerIdsRecord", "NoOpRecord"} <= set(types)


def test_real_records_rebuild_byte_for_byte():
    seen = set()
    for _path, value in real_metadata_values():
        d = decode_metadata_record(value)
        key = (d["type"], d["version"])
        if key in seen and d["type"] == "NoOpRecord":
            continue
        seen.add(key)
        assert encode_metadata_record(d["type"], d["version"], d["data"]) == value, key


@pytest.mark.parametrize("broker", KRAFT_BROKERS)
def test_timeline_matches_the_leader_epoch_checkpoints(broker):
    need_shared(REALDATA)
    path = REALDATA / broker
    tl = build_timeline([path])
    report = scan_log_dirs([path])
    checked = 0
    for p in report.partitions:
        if p.topic == "__cluster_metadata" or not p.epoch_cache_written:
            continue
        granted = tl.granted_epochs(p.topic, p.partition)
        assert granted, (p.topic, p.partition)
        # a snapshot starts the timeline mid-history: epochs before its first known one are not in it
        first_known = min(granted)
        for epoch, _start in p.epoch_cache_written:
            assert epoch in granted or epoch < first_known, (p.topic, p.partition, epoch, granted)
        assert p.epoch_cache_written[-1][0] <= max(granted)
        assert not check_replica_epochs(tl, p.topic, p.partition, report.broker.node_id, p.epoch_cache_written,
                                        p.epochs_seen)
        checked += 1
    assert checked > 0
    assert not [f for f in tl.findings if f.severity > 1]


def test_hiage_timeline_epochs_follow_partition_changes():
    need_shared(REALDATA)
    tl = build_timeline([REALDATA / "hiage__kafka-raft__c5f680e" / "data" / "kafka3"])
    for entries in tl.partitions.values():
        for a, b in zip(entries, entries[1:]):
            assert b.partition_epoch == a.partition_epoch + 1
            assert b.leader_epoch == a.leader_epoch + (1 if b.leader_changed else 0)


def test_unclean_election_is_marked():
    tid = "AAAAAAAAAAAAAAAAAAAABw"
    recs = [
        encode_metadata_record("TopicRecord", 0, {"Name": "t", "TopicId": tid}),
        encode_metadata_record("PartitionRecord", 0, {"PartitionId": 0, "TopicId": tid, "Replicas": [1, 2, 3],
                                                      "Isr": [1, 2], "RemovingReplicas": [], "AddingReplicas": [],
                                                      "Leader": 1, "LeaderEpoch": 0, "PartitionEpoch": 0}),
        encode_metadata_record("PartitionChangeRecord", 0, {"PartitionId": 0, "TopicId": tid, "Isr": [2]}),
        encode_metadata_record("PartitionChangeRecord", 0, {"PartitionId": 0, "TopicId": tid, "Leader": 3,
                                                            "Isr": [3], "LeaderRecoveryState": 1}),
    ]
    from kforensics.analysis.timeline import Timeline, _apply

    tl, state, ids = Timeline(), {}, {}
    for i, v in enumerate(recs):
        _apply(tl, state, ids, "log", i, 0, decode_metadata_record(v))
    es = tl.partitions[("t", 0)]
    assert [(e.leader, e.leader_epoch, e.partition_epoch, e.unclean) for e in es] == [
        (1, 0, 0, False), (1, 0, 1, False), (3, 1, 2, True)]


def test_kraft_control_oracle_case_decodes_in_dump():
    need_shared(ORACLE)
    man = load_manifest("v2-kraft-control")
    seg = ORACLE / man["segments"][0]["file"]
    r = CliRunner().invoke(main, ["dump", "--deep", "--format", "json", str(seg)])
    controls = [rec["control"] for o in map(json.loads, r.stdout.splitlines()) if o["kind"] == "batch"
                for rec in o["records"] if rec["control"]]
    want = [rec["control"] for b in man["segments"][0]["batches"] for rec in b["records"] if rec["control"]]
    assert [{k: v for k, v in c.items() if k != "detail"} for c in controls] == want


def test_timeline_cli():
    need_shared(REALDATA)
    r = CliRunner().invoke(main, ["timeline", str(REALDATA / "hiage__kafka-raft__c5f680e" / "data" / "kafka1"),
                                  "--topic", "test1", "--format", "json"])
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and {p["topic"] for p in doc["partitions"]} == {"test1"}


ints = st.lists(st.integers(-1, 2**31 - 1), max_size=5)
uuid = st.binary(min_size=16, max_size=16).map(lambda b: __import__("base64").urlsafe_b64encode(b).rstrip(b"=").decode())


@given(st.integers(0, 2**31 - 1), uuid, ints, ints, st.integers(-1, 100), st.integers(0, 2**31 - 1),
       st.one_of(st.none(), ints), st.sampled_from([0, 1, 2]))
@settings(max_examples=200)
def test_partition_records_round_trip(pid, tid, replicas, isr, leader, epoch, elr, version):
    data = {"PartitionId": pid, "TopicId": tid, "Replicas": replicas, "Isr": isr, "RemovingReplicas": [],
            "AddingReplicas": None, "Leader": leader, "LeaderEpoch": epoch, "PartitionEpoch": epoch}
    if version >= 1:
        data["Directories"] = [tid]
    if version >= 2 and elr is not None:
        data["EligibleLeaderReplicas"] = elr
    assert decode_metadata_record(encode_metadata_record("PartitionRecord", version, data))["data"] == data
    change = {"PartitionId": pid, "TopicId": tid, "Leader": leader, "Isr": isr}
    assert decode_metadata_record(encode_metadata_record("PartitionChangeRecord", 0, change))["data"] == change


@given(st.binary(max_size=120))
@settings(max_examples=500)
def test_garbage_and_mutations_raise_only_format_errors(data):
    for value in (data, b"\x01" + data, b"\x01\x03\x02" + data):
        try:
            decode_metadata_record(value)
        except FormatError:
            pass


def test_mutated_real_records_never_raise_anything_else():
    rnd = random.Random(5)
    for i, (_p, value) in enumerate(real_metadata_values()):
        if i % 50:
            continue
        v = bytearray(value)
        v[rnd.randrange(len(v))] = rnd.randrange(256)
        try:
            decode_metadata_record(bytes(v))
        except FormatError:
            pass


def test_scan_cross_checks_epochs_against_the_metadata_log(tmp_path):
    need_shared(REALDATA)
    import shutil

    src = REALDATA / "hiage__kafka-raft__c5f680e" / "data" / "kafka1"
    clean = scan_log_dirs([src])
    assert not [f for f in clean.all_findings() if f.code == "EPOCH_NOT_GRANTED"]
    # a copy whose test1-0 checkpoint claims an epoch the controller never granted
    dst = tmp_path / "kafka1"
    shutil.copytree(src, dst)
    from kforensics.formats import checkpoint

    cp = dst / "test1-0" / "leader-epoch-checkpoint"
    epochs = checkpoint.decode(cp.read_bytes(), "leader_epoch_checkpoint").epochs()
    cp.write_bytes(checkpoint.encode("leader_epoch_checkpoint", epochs + [(77, 999_999)]))
    bad = [f for f in scan_log_dirs([dst]).all_findings() if f.code == "EPOCH_NOT_GRANTED"]
    assert len(bad) == 1 and bad[0].facts["epoch"] == 77
