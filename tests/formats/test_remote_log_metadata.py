"""__remote_log_metadata: the apiKey/version framed records of tiered storage."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kforensics.formats import remote_log_metadata as rlm
from tests.formats.test_message_schema import strategy_for

TOPIC_ID = "Uj5wn_FqTXirEASvVZRY1w"
TIP = {"name": "t", "id": TOPIC_ID, "partition": 3}


@pytest.mark.parametrize("name", [t.name for t in rlm.RECORD_TYPES])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_record_type_round_trips(name, data):
    t = rlm.BY_NAME[name]
    x = data.draw(strategy_for(t.layout(0)))
    key, value = rlm.encode(name, 0, x)
    assert key is None and value[:3] == bytes([1, t.api_key, 0])
    r = rlm.decode(None, value)
    assert r.findings == [] and (r.key_type, r.type_id, r.value_version, r.value) == (name, t.api_key, 0, x)
    assert rlm.encode(name, 0, r.value) == (None, value)


def test_delete_record_vector():
    _, value = rlm.encode("RemotePartitionDeleteMetadataRecord", 0,
                          {"topicIdPartition": TIP, "brokerId": 1, "eventTimestampMs": 99,
                           "remotePartitionDeleteState": 0})
    assert value == (b"\x01\x02\x00" + b"\x02t" + bytes.fromhex("523e709ff16a4d78ab1004af559458d7")
                     + struct.pack(">i", 3) + b"\x00" + struct.pack(">iqb", 1, 99, 0) + b"\x00")
    r = rlm.decode(None, value)
    assert r.value["topicIdPartition"] == TIP and rlm.PARTITION_DELETE_STATES[r.value["remotePartitionDeleteState"]] \
        == "DELETE_PARTITION_MARKED"


def test_segment_record_with_txn_index_empty_tag():
    seg = {"remoteLogSegmentId": {"topicIdPartition": TIP, "id": TOPIC_ID}, "startOffset": 0, "endOffset": 9,
           "brokerId": 1, "maxTimestampMs": 5, "eventTimestampMs": 6,
           "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 0}], "segmentSizeInBytes": 1024,
           "customMetadata": None, "remoteLogSegmentState": 1, "txnIndexEmpty": True}
    _, value = rlm.encode("RemoteLogSegmentMetadataRecord", 0, seg)
    assert value.endswith(b"\x01\x00\x01\x01")  # one tagged field: tag 0, 1 byte, true
    r = rlm.decode(None, value)
    assert r.value == seg and rlm.SEGMENT_STATES[r.value["remoteLogSegmentState"]] == "COPY_SEGMENT_FINISHED"


@pytest.mark.parametrize("value, code, position", [
    (None, "INTERNAL_RECORD_DECODE_ERROR", 0),
    (b"\x00\x02\x00", "INTERNAL_RECORD_DECODE_ERROR", 0),  # frame version 0
    (b"\x01\x09\x00\x00", "INTERNAL_RECORD_UNKNOWN_TYPE", 0),
    (b"\x01\x02\x05\x00", "INTERNAL_RECORD_UNKNOWN_VERSION", 0),
    (b"\x01\x02\x00\x02t", "INTERNAL_RECORD_DECODE_ERROR", 5),  # the uuid is missing
    (b"\x01\x80\x80\x80\x80\x80", "INTERNAL_RECORD_DECODE_ERROR", 6),  # an over-long varint
])
def test_known_damage(value, code, position):
    r = rlm.decode(None, value)
    assert [(f.code, f.position, f.facts["part"]) for f in r.findings] == [(code, position, "value")]


def test_trailing_bytes_are_an_error_as_in_kafka():
    _, value = rlm.encode("RemotePartitionDeleteMetadataRecord", 0,
                          {"topicIdPartition": TIP, "brokerId": 1, "eventTimestampMs": 99,
                           "remotePartitionDeleteState": 0})
    r = rlm.decode(None, value + b"\x00")
    assert r.value is None and [(f.code, f.position) for f in r.findings] == [
        ("INTERNAL_RECORD_DECODE_ERROR", len(value))]


@settings(max_examples=400, deadline=None)
@given(value=st.none() | st.binary(max_size=80))
def test_arbitrary_bytes_never_raise(value):
    r = rlm.decode(None, value)
    assert all(f.code.startswith("INTERNAL_RECORD_") for f in r.findings)
    assert (r.value is None) == bool(r.findings)
