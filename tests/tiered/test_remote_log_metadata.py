"""``__remote_log_metadata`` as a broker writes it, read and folded as ``RemoteLogMetadataCache`` folds it.

No real corpus in /work/shared holds ``__remote_log_metadata`` (no evidence set there ran tiered storage), so
the records a broker writes come from Kafka's own code: the bytes below were produced by Kafka 3.9.1's
``RemoteLogMetadataSerde.serialize`` (kafka-storage-3.9.1.jar, run once with java), and the metadata
partitions by its ``RemoteLogMetadataTopicPartitioner(50).metadataPartition`` for the fixtures' topic ids.
"""

from __future__ import annotations

import json

import pytest

from kforensics.findings import FindingLog
from kforensics.formats.remote_log_metadata import decode, encode
from kforensics.tiered.metadata_partition import metadata_partition, murmur2
from kforensics.tiered.remote_segments import RemoteLogMetadata, apply_record
from tests.conftest import ROOT

TIERED = ROOT / "fixtures" / "tiered"
TOPIC_ID = "dGllcmVkLXVuY2xlYW4tbw"
SEGMENT_ID = "AAECAwQFBgcICQoLDA0ODw"
# RemoteLogMetadataSerde.serialize (Kafka 3.9.1) of: RemoteLogSegmentMetadata(orders-0 of TOPIC_ID, SEGMENT_ID,
# 0-19, maxTimestamp 1700000000019, broker 1, event 1700000000020, 2000 bytes, epochs {0: 0, 1: 10},
# COPY_SEGMENT_STARTED); its update to COPY_SEGMENT_FINISHED (event ...21, broker 1); and
# RemotePartitionDeleteMetadata(DELETE_PARTITION_MARKED, event ...22, broker 1)
KAFKA_ADD = bytes.fromhex(
    "010000076f72646572737469657265642d756e636c65616e2d6f0000000000000102030405060708090a0b0c0d0e0f000000000000"
    "0000000000000000000013000000010000018bcfe568130000018bcfe56814030000000000000000000000000000000001000000000000"
    "000a00000007d0000000")
KAFKA_UPDATE = bytes.fromhex(
    "010100076f72646572737469657265642d756e636c65616e2d6f0000000000000102030405060708090a0b0c0d0e0f00000000010000"
    "018bcfe56815000100")
KAFKA_DELETE = bytes.fromhex(
    "010200076f72646572737469657265642d756e636c65616e2d6f0000000000000000010000018bcfe568160000")


def test_murmur2_is_kafkas():
    # UtilsTest.testMurmur2 @3.8.0 (clients)
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829, b"abc": 479470107,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971}
    assert {k: murmur2(k) for k in cases} == cases


@pytest.mark.parametrize("case,topic_id,expected", [
    ("tiered-follower-below-local-start", "dGllcmVkLWZvbGxvd2VyLQ", 3),
    ("tiered-unclean-orphans-remote", TOPIC_ID, 13),
    ("tiered-remote-local-gap", "dGllcmVkLXJlbW90ZS1sbw", 38)])
def test_the_metadata_partition_is_the_one_kafkas_partitioner_picks(case, topic_id, expected):
    # expected: RemoteLogMetadataTopicPartitioner(50).metadataPartition(orders-0 of topic_id), Kafka 3.9.1
    assert metadata_partition(topic_id, 0) == expected
    assert json.loads((TIERED / case / "scenario.json").read_text())["tiered"]["metadata_partition"] == expected
    assert (TIERED / case / "broker-1" / f"__remote_log_metadata-{expected}").is_dir()


def test_records_kafkas_serde_wrote_are_decoded():
    add = decode(None, KAFKA_ADD)
    assert not add.findings and add.value_type == "RemoteLogSegmentMetadataRecord"
    v = add.value
    assert (v["startOffset"], v["endOffset"], v["brokerId"], v["segmentSizeInBytes"]) == (0, 19, 1, 2000)
    assert v["remoteLogSegmentId"] == {"topicIdPartition": {"name": "orders", "id": TOPIC_ID, "partition": 0},
                                       "id": SEGMENT_ID}
    assert v["segmentLeaderEpochs"] == [{"leaderEpoch": 0, "offset": 0}, {"leaderEpoch": 1, "offset": 10}]
    assert decode(None, KAFKA_UPDATE).value["remoteLogSegmentState"] == 1
    assert decode(None, KAFKA_DELETE).value["remotePartitionDeleteState"] == 0


def test_the_encoder_the_fixtures_use_writes_what_kafkas_serde_writes():
    tip = {"Name": "orders", "Id": TOPIC_ID, "Partition": 0}
    _, add = encode("RemoteLogSegmentMetadataRecord", 0, {
        "RemoteLogSegmentId": {"TopicIdPartition": tip, "Id": SEGMENT_ID}, "StartOffset": 0, "EndOffset": 19,
        "BrokerId": 1, "MaxTimestampMs": 1700000000019, "EventTimestampMs": 1700000000020,
        "SegmentLeaderEpochs": [{"LeaderEpoch": 0, "Offset": 0}, {"LeaderEpoch": 1, "Offset": 10}],
        "SegmentSizeInBytes": 2000, "CustomMetadata": None, "RemoteLogSegmentState": 0})
    _, update = encode("RemoteLogSegmentMetadataUpdateRecord", 0, {
        "RemoteLogSegmentId": {"TopicIdPartition": tip, "Id": SEGMENT_ID}, "BrokerId": 1,
        "EventTimestampMs": 1700000000021, "CustomMetadata": None, "RemoteLogSegmentState": 1})
    assert (add, update) == (KAFKA_ADD, KAFKA_UPDATE)


def _fold(*values: bytes) -> tuple[RemoteLogMetadata, list]:
    out, log = RemoteLogMetadata(), FindingLog()
    for i, v in enumerate(values):
        apply_record(out, 13, i, "f", i * 100, decode(None, v), log)
    return out, log.findings()


def test_the_fold_keeps_the_last_state_of_each_segment():
    out, found = _fold(KAFKA_ADD, KAFKA_UPDATE, KAFKA_DELETE)
    assert not found
    part = out.of("orders", 0)
    (seg,) = part.copied()
    assert (seg.segment_id, seg.leader_epochs, seg.states) == (
        SEGMENT_ID, [(0, 0), (1, 10)], ["COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED"])
    assert part.delete_state == "DELETE_PARTITION_MARKED"


def test_what_the_cache_refuses_is_not_applied():
    # RemoteLogSegmentState.isValidTransition @3.8.0: FINISHED cannot go back to STARTED (an update to STARTED is
    # refused outright); an update of a segment never added is RemoteResourceNotFoundException
    back = KAFKA_UPDATE[:-2] + b"\x00\x00"
    out, found = _fold(KAFKA_UPDATE, KAFKA_ADD, KAFKA_UPDATE, back)
    assert [f.code for f in found] == ["REMOTE_METADATA_NOT_APPLIED"] * 2
    assert [f.facts["offset"] for f in found] == [0, 3]
    assert out.of("orders", 0).copied()[0].state == "COPY_SEGMENT_FINISHED"
