"""__share_group_state: ShareSnapshot and ShareUpdate records."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kforensics.formats import share_coordinator as sc
from tests.formats.test_group_coordinator import jdump, s16
from tests.formats.test_message_schema import strategy_for

TOPIC_ID = "Uj5wn_FqTXirEASvVZRY1w"


@pytest.mark.parametrize("name", ["ShareSnapshotKey", "ShareUpdateKey"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_records_round_trip(name, data):
    pair = sc.SERDE.by_name[name]
    k = data.draw(strategy_for(pair.key.layout(0)))
    v = data.draw(strategy_for(pair.value.layout(0)))
    kb, vb = sc.encode(name, 0, k, v)
    r = sc.decode(kb, vb)
    assert r.findings == [] and (r.key_type, r.key, r.value) == (name, k, v)
    assert sc.encode(name, 0, r.key, r.value) == (kb, vb)


def test_snapshot_prints_as_kafka_dump_log_does():
    value = {"snapshotEpoch": 0, "stateEpoch": 0, "leaderEpoch": 0, "startOffset": 0, "createTimestamp": 7,
             "writeTimestamp": 8, "stateBatches": [{"firstOffset": 0, "lastOffset": 4, "deliveryState": 2,
                                                    "deliveryCount": 1}]}
    kb, vb = sc.encode("ShareSnapshotKey", 0, {"groupId": "gs1", "topicId": TOPIC_ID, "partition": 0}, value)
    assert kb == b"\x00\x00" + s16("gs1") + bytes.fromhex("523e709ff16a4d78ab1004af559458d7") + bytes(4)
    r = sc.decode(kb, vb)
    assert jdump(r.kafka_key()) == ('{"type":"0","data":{"groupId":"gs1","topicId":"Uj5wn_FqTXirEASvVZRY1w",'
                                    '"partition":0}}')
    assert jdump(r.kafka_payload()) == (
        '{"version":"0","data":{"snapshotEpoch":0,"stateEpoch":0,"leaderEpoch":0,"startOffset":0,'
        '"createTimestamp":7,"writeTimestamp":8,"stateBatches":[{"firstOffset":0,"lastOffset":4,'
        '"deliveryState":2,"deliveryCount":1}]}}')


def test_update_with_delivery_complete_count_and_tombstone():
    value = {"snapshotEpoch": 1, "leaderEpoch": 2, "startOffset": -1, "deliveryCompleteCount": 5, "stateBatches": []}
    kb, vb = sc.encode("ShareUpdateKey", 0, {"groupId": "g", "topicId": TOPIC_ID, "partition": 1}, value)
    assert vb == (b"\x00\x00" + struct.pack(">iiq", 1, 2, -1) + b"\x01" + b"\x01\x00\x04" + struct.pack(">i", 5))
    r = sc.decode(kb, vb)
    assert r.value == value and r.type_id == 1 and r.kafka_payload()["data"]["deliveryCompleteCount"] == 5
    t = sc.decode(kb, None)
    assert t.tombstone and t.key == {"groupId": "g", "topicId": TOPIC_ID, "partition": 1}


@settings(max_examples=300, deadline=None)
@given(key=st.none() | st.binary(max_size=40), value=st.none() | st.binary(max_size=60))
def test_arbitrary_bytes_never_raise(key, value):
    r = sc.decode(key, value)
    assert all(f.code.startswith("INTERNAL_RECORD_") for f in r.findings)


def test_known_damage():
    kb = b"\x00\x00" + s16("g") + bytes(16) + bytes(4)
    assert [(f.code, f.position, f.facts["part"]) for f in sc.decode(kb[:10], None).findings] == [
        ("INTERNAL_RECORD_DECODE_ERROR", 10, "key")]  # the uuid is cut: the bytes run out at the end of the key
    vb = b"\x00\x00" + struct.pack(">iiiq", 0, 0, 0, 0) + b"\x00" * 16 + b"\x05"  # 5 = 4 batches in 1 byte
    r = sc.decode(kb, vb)
    assert [(f.code, f.position, f.facts["part"]) for f in r.findings] == [
        ("INTERNAL_RECORD_DECODE_ERROR", len(vb), "value")]
