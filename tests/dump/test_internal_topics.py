"""``kforensics dump`` of Kafka's internal topics: decoders chosen by the partition directory's topic or forced with
kafka-dump-log's flags, kafka-dump-log's text, NDJSON objects, and records that do not decode as findings.

kafka-dump-log's lines (``DumpLogSegments.dumpLog`` and ``OffsetsMessageParser``, apache/kafka 4.x): after the record
metadata, ``" key: " + {"type":"<id>","data":{...}}`` then ``" payload: " + {"version":"<v>","data":{...}}`` or
``<DELETE>`` for a null value; ``key: Unknown record type <t> at offset <o>, skipping.`` or ``key: Error at offset
<o>, skipping. <message>`` when the record does not decode; the decoder flags imply --print-data-log (hence deep
iteration); control batches are never decoded.
"""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from kforensics.cli import main
from kforensics.formats import group_coordinator, remote_log_metadata, share_coordinator, transaction_log
from kforensics.formats.control import encode_control_key, encode_end_txn_marker
from kforensics.formats.record_batch import RecordData, build_batch
from tests.conftest import REALDATA, need_shared

COBY = REALDATA / "cobyforrester__kafka__77a7583" / "data" / "kafka" / "__consumer_offsets-21" / \
    "00000000000000000000.log"
RONEM = REALDATA / "ronem123__rupia-transaction-service__5d88e97" / "kafka-logs"
LEGACY = REALDATA / "xpxwo100__bullShit__3ba36dd" / "tmp" / "kafka-logs" / "__consumer_offsets-40" / \
    "00000000000000000000.log"
TOPIC_ID = "Uj5wn_FqTXirEASvVZRY1w"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def objects(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def write_log(tmp_path, dir_name: str, records: list[tuple[bytes | None, bytes | None]], *, batches=None) -> str:
    """A segment in ``tmp_path/dir_name`` holding one batch per (key, value) record (or the given batches)."""
    d = tmp_path / dir_name
    d.mkdir(parents=True, exist_ok=True)
    data = b"".join(build_batch([RecordData(i, 1_700_000_000_000 + i, k, v)], partition_leader_epoch=0)
                    for i, (k, v) in enumerate(records)) if batches is None else b"".join(batches)
    p = d / "00000000000000000000.log"
    p.write_bytes(data)
    return str(p)


# ---------------------------------------------------------------------------- real __consumer_offsets partitions
def real_offsets_logs() -> list:
    if not REALDATA.exists():
        return []
    return sorted(p for p in REALDATA.glob("*/**/__consumer_offsets-*/*.log") if p.stat().st_size)


def test_every_real_consumer_offsets_record_decodes_by_the_directorys_topic():
    """Every record of every real __consumer_offsets segment decodes, with the decoder chosen by the directory
    name: no unknown record type, value version or tagged field, no finding at all."""
    logs = need_shared(REALDATA) and real_offsets_logs()
    assert len(logs) >= 25
    r = run("dump", "--deep", "--format", "json", *logs)
    assert r.exit_code == 0
    objs = objects(r)
    assert not [o for o in objs if o["kind"] == "finding"]
    records = [o for o in objs if o["kind"] == "record"]
    assert len(records) > 23000
    kinds = set()
    for o in records:
        d = o["decoded"]
        assert d["decoder"] == "offsets" and d["key"] is not None and d["payload"] is not None, o
        assert d["payload"] == "<DELETE>" if d["tombstone"] else d["payload"]["version"] == str(d["value_version"])
        assert "_unknown" not in json.dumps(d)  # unknown tagged fields would be kept under that name
        kinds.add((d["key_type"], d["value_version"]))
    assert {("OffsetCommitKey", 1), ("OffsetCommitKey", 3), ("OffsetCommitKey", 4), ("GroupMetadataKey", 1),
            ("GroupMetadataKey", 3), ("GroupMetadataKey", None)} <= kinds


def test_real_records_print_as_kafka_dump_log_prints_them():
    """Lines derived by hand from the bytes and DumpLogSegments' format (``--offsets-decoder``)."""
    need_shared(REALDATA)
    # offset 52: key 00 01 | 00 08 "APP-NAME" | 00 0b "first_topic" | 00 00 00 00 -> OffsetCommitKey (type 1);
    # value 00 03 | offset 4 | leaderEpoch -1 | metadata "" | commitTimestamp 0x0175a438a90e -> OffsetCommitValue v3
    lines = run("dump", "--deep", COBY).stdout.splitlines()
    assert lines[3] == (
        '| offset: 52 CreateTime: 1604777978126 keySize: 29 valueSize: 24 sequence: 0 headerKeys: [] '
        'key: {"type":"1","data":{"group":"APP-NAME","topic":"first_topic","partition":0}} '
        'payload: {"version":"3","data":{"offset":4,"leaderEpoch":-1,"metadata":"","commitTimestamp":1604777978126}}')
    # offset 55: GroupMetadataKey (type 2) with an empty consumer group (GroupMetadataValue v3, no members)
    assert lines[7] == (
        '| offset: 55 CreateTime: 1604777978130 keySize: 12 valueSize: 32 sequence: -1 headerKeys: [] '
        'key: {"type":"2","data":{"group":"APP-NAME"}} payload: {"version":"3","data":{"protocolType":"consumer",'
        '"generation":2,"protocol":null,"leader":null,"currentStateTimestamp":1604777978130,"members":[]}}')
    # a deleted offset and group: null values are <DELETE>
    lines = run("dump", "--deep", RONEM / "__consumer_offsets-44" / "00000000000000000009.log").stdout.splitlines()
    assert lines[3].endswith(' headerKeys: [] key: {"type":"1","data":{"group":"rupia-transaction-group",'
                             '"topic":"topic_transactions","partition":0}} payload: <DELETE>')
    assert lines[4].endswith(' key: {"type":"2","data":{"group":"rupia-transaction-group"}} payload: <DELETE>')
    # the consumer protocol's subscription and assignment are decoded, as kafka-dump-log 4.x does
    text = run("dump", "--deep", RONEM / "__consumer_offsets-31" / "00000000000000000000.log").stdout
    assert ('"subscription":{"topics":["topic_transactions"],"userData":null,"ownedPartitions":[],"generationId":1,'
            '"rackId":null},"assignment":{"assignedPartitions":[{"topic":"topic_transactions","partitions":[0]}],'
            '"userData":null}') in text
    # Kafka 0.10.1, magic v1 messages: the legacy line with the decoded key and payload
    (line,) = [x for x in run("dump", "--deep", LEGACY).stdout.splitlines() if x.startswith("| offset: 0 ")]
    assert line.startswith('| offset: 0 CreateTime: 1479457454628 keySize: 10 valueSize: 206 isValid: true crc: '
                           '3881556165 key: {"type":"2","data":{"group":"GroupA"}} payload: {"version":"1","data":'
                           '{"protocolType":"consumer","generation":1,"protocol":"range"')


def test_skip_record_metadata_and_shallow_dumps():
    need_shared(REALDATA)
    lines = run("dump", "--skip-record-metadata", COBY).stdout.splitlines()
    assert lines[3] == ('| key: {"type":"1","data":{"group":"APP-NAME","topic":"first_topic","partition":0}} '
                        'payload: {"version":"3","data":{"offset":4,"leaderEpoch":-1,"metadata":"",'
                        '"commitTimestamp":1604777978126}}')
    # without --deep, batches only (as kafka-dump-log without a decoder flag)
    assert not [x for x in run("dump", COBY).stdout.splitlines() if x.startswith("|")]


# ---------------------------------------------------------------------------- decoder flags on other directories
def test_flags_force_a_decoder_on_a_directory_of_another_name(tmp_path):
    need_shared(REALDATA)
    d = tmp_path / "copied-offsets-0"
    d.mkdir()
    shutil.copy(COBY, d / COBY.name)
    p = d / COBY.name
    auto = run("dump", "--deep", COBY).stdout.splitlines()[3:]
    plain = run("dump", "--deep", p).stdout.splitlines()[3:]
    assert "key:" not in "\n".join(plain)  # no internal topic by name: no decoding
    forced = run("dump", "--offsets-decoder", p)
    assert forced.exit_code == 0 and forced.stdout.splitlines()[3:] == auto  # the flag implies deep
    # the wrong decoder: each record is kafka-dump-log's "Unknown record type" line, and a finding
    wrong = run("dump", "--transaction-log-decoder", p)
    assert wrong.exit_code == 1
    records = [x for x in wrong.stdout.splitlines() if x.startswith("|")]
    assert records[0].endswith("headerKeys: [] key: Unknown record type 1 at offset 52, skipping.")
    assert "LOW INTERNAL_RECORD_UNKNOWN_TYPE " + str(p) + " @ byte 0: unknown record type 1" in wrong.stderr
    # the share-group-state decoder knows type 1 (ShareUpdateKey, which these keys are not) but not type 2: the
    # group record at offset 55, in the batch at byte 241
    objs = objects(run("dump", "--share-group-state-decoder", "--format", "json", p))
    (f, *_) = [o for o in objs if o["kind"] == "finding" and o["code"] == "INTERNAL_RECORD_UNKNOWN_TYPE"]
    assert (f["file"], f["position"], f["facts"]["offset"], f["facts"]["decoder"]) == (str(p), 241, 55,
                                                                                     "share-group-state")
    rec = next(o for o in objs if o["kind"] == "record" and o["offset"] == 55)
    assert rec["decoded"]["key"] is None and rec["decoded"]["type_id"] == 2
    # one decoder at a time
    r = CliRunner().invoke(main, ["dump", "--offsets-decoder", "--transaction-log-decoder", str(p)])
    assert r.exit_code == 2 and "one decoder" in r.output


def test_transaction_log_by_name_and_tombstones(tmp_path):
    value = {"producerId": 7, "producerEpoch": 1, "transactionTimeoutMs": 60000, "transactionStatus": 4,
             "transactionPartitions": [], "transactionLastUpdateTimestampMs": 5, "transactionStartTimestampMs": 4,
             "previousProducerId": 6, "clientTransactionVersion": 2}
    k, v = transaction_log.encode("TransactionLogValue", 1, {"transactionalId": "tx"}, value)
    p = write_log(tmp_path, "__transaction_state-3", [(k, v), (k, None)])
    lines = run("dump", "--deep", p).stdout.splitlines()
    assert lines[3].endswith(
        ' key: {"type":"0","data":{"transactionalId":"tx"}} payload: {"version":"1","data":{"producerId":7,'
        '"previousProducerId":6,"producerEpoch":1,"transactionTimeoutMs":60000,"transactionStatus":4,'
        '"transactionPartitions":[],"transactionLastUpdateTimestampMs":5,"transactionStartTimestampMs":4,'
        '"clientTransactionVersion":2}}')
    assert lines[5].endswith(' key: {"type":"0","data":{"transactionalId":"tx"}} payload: <DELETE>')
    objs = [o for o in objects(run("dump", "--deep", "--format", "json", p)) if o["kind"] == "record"]
    assert [(o["decoded"]["tombstone"], o["decoded"]["payload"] == "<DELETE>") for o in objs] == [(False, False),
                                                                                                   (True, True)]
    assert objs[0]["decoded"]["payload"]["data"]["clientTransactionVersion"] == 2
    assert "key" not in objs[0] and "value" not in objs[0]  # raw bytes only with --print-data


def test_share_group_state_and_remote_log_metadata(tmp_path):
    kb, vb = share_coordinator.encode("ShareUpdateKey", 0, {"groupId": "g", "topicId": TOPIC_ID, "partition": 1},
                                      {"snapshotEpoch": 1, "leaderEpoch": 2, "startOffset": -1, "stateBatches": []})
    p = write_log(tmp_path, "__share_group_state-0", [(kb, vb)])
    (line,) = [x for x in run("dump", "--deep", p).stdout.splitlines() if x.startswith("|")]
    assert line.endswith(' key: {"type":"1","data":{"groupId":"g","topicId":"Uj5wn_FqTXirEASvVZRY1w","partition":1}} '
                         'payload: {"version":"0","data":{"snapshotEpoch":1,"leaderEpoch":2,"startOffset":-1,'
                         '"stateBatches":[]}}')
    _, value = remote_log_metadata.encode("RemotePartitionDeleteMetadataRecord", 0, {
        "topicIdPartition": {"name": "t", "id": TOPIC_ID, "partition": 3}, "brokerId": 1, "eventTimestampMs": 99,
        "remotePartitionDeleteState": 0})
    p = write_log(tmp_path, "__remote_log_metadata-0", [(None, value), (None, b"\x01\x09\x00")])
    r = run("dump", "--deep", p)
    lines = [x for x in r.stdout.splitlines() if x.startswith("|")]
    # no key: the payload only (kafka-dump-log prints the record's Java toString there; kforensics its JSON)
    assert lines[0].endswith(' headerKeys: [] payload: {"version":"0","data":{"topicIdPartition":{"name":"t",'
                             '"id":"Uj5wn_FqTXirEASvVZRY1w","partition":3},"brokerId":1,"eventTimestampMs":99,'
                             '"remotePartitionDeleteState":0}}')
    assert " payload: Error at offset 1, skipping. " in lines[1]
    assert r.exit_code == 1 and "INTERNAL_RECORD_UNKNOWN_TYPE" in r.stderr


def test_unknown_versions_and_bad_bytes_are_findings_at_their_batch(tmp_path):
    key = group_coordinator.encode("OffsetCommitValue", 3, {"group": "g", "topic": "t", "partition": 0},
                                   {"offset": 1, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 1})[0]
    good = build_batch([RecordData(0, 1, key, b"\x00\x03" + bytes(8) + b"\xff\xff\xff\xff\x00\x00" + bytes(8))],
                       partition_leader_epoch=0)
    p = write_log(tmp_path, "__consumer_offsets-0", [], batches=[
        good,
        build_batch([RecordData(1, 1, key, b"\x00\x63" + bytes(20))], partition_leader_epoch=0),  # version 99
        build_batch([RecordData(2, 1, key, b"\x00\x03\x01")], partition_leader_epoch=0),  # cut short
        build_batch([RecordData(3, 1, None, b"\x00\x03")], partition_leader_epoch=0),  # no key
    ])
    r = run("dump", "--deep", p)
    assert r.exit_code == 1
    lines = [x for x in r.stdout.splitlines() if x.startswith("|")]
    assert ' payload: {"version":"3","data":{"offset":0,"leaderEpoch":-1,' in lines[0]
    assert lines[1].endswith(" key: Error at offset 1, skipping. OffsetCommitValue version 99 unknown (known 0-4)")
    assert " key: Error at offset 2, skipping. OffsetCommitValue v3 does not decode" in lines[2]
    assert " key: Error at offset 3, skipping. record with a null key" in lines[3]
    found = {o["code"]: o for o in objects(run("dump", "--deep", "--format", "json", p)) if o["kind"] == "finding"}
    second = len(good)  # the batch of offset 1 starts where the first ends
    assert (found["INTERNAL_RECORD_UNKNOWN_VERSION"]["position"], found["INTERNAL_RECORD_UNKNOWN_VERSION"]["facts"][
        "offset"], found["INTERNAL_RECORD_UNKNOWN_VERSION"]["facts"]["value_position"]) == (second, 1, 0)
    assert found["INTERNAL_RECORD_DECODE_ERROR"]["facts"]["offset"] == 2
    assert found["INTERNAL_RECORD_MISSING_KEY"]["facts"]["offset"] == 3
    assert all(f["file"] == p for f in found.values())


def test_markers_in_an_internal_topic_are_not_decoded(tmp_path):
    k, v = group_coordinator.encode("OffsetCommitValue", 3, {"group": "g", "topic": "t", "partition": 0},
                                    {"offset": 1, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 1})
    p = write_log(tmp_path, "__consumer_offsets-1", [], batches=[
        build_batch([RecordData(0, 1, k, v)], partition_leader_epoch=0, producer_id=9, producer_epoch=0,
                    base_sequence=0, transactional=True),
        build_batch([RecordData(1, 2, encode_control_key("COMMIT"), encode_end_txn_marker(0))],
                    partition_leader_epoch=0, producer_id=9, producer_epoch=0, transactional=True, control=True)])
    r = run("dump", "--deep", p)
    assert r.exit_code == 0 and not r.stderr
    lines = [x for x in r.stdout.splitlines() if x.startswith("|")]
    assert ' key: {"type":"1","data":{"group":"g","topic":"t","partition":0}}' in lines[0]
    assert lines[1].endswith("endTxnMarker: COMMIT coordinatorEpoch: 0")


@pytest.mark.parametrize("flag", ["--offsets-decoder", "--cluster-metadata-decoder"])
def test_a_forced_decoder_is_only_for_segments(tmp_path, flag):
    """Side files are dumped as always whatever decoder is asked for."""
    p = tmp_path / "__consumer_offsets-0" / "leader-epoch-checkpoint"
    p.parent.mkdir()
    p.write_text("0\n1\n0 0\n")
    r = run("dump", flag, p)
    assert r.exit_code == 0 and r.stdout.splitlines()[1:] == ["version: 0 entries: 1", "epoch: 0 start_offset: 0"]
