"""__consumer_offsets: every record type and version round-trips, hand-built vectors, Kafka's JSON text,
hostile bytes that only ever become findings, and every real broker's partitions decoding completely."""

from __future__ import annotations

import base64
import json
import struct
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kforensics.formats import group_coordinator as gc
from kforensics.formats.message_schema import UNKNOWN_TAGS
from tests.conftest import REALDATA, need_shared
from tests.formats.test_message_schema import strategy_for


def records_of(path):
    """(offset, key, value) of every data record of a segment (the one place that knows the log layer)."""
    from kforensics.log.segment_reader import SegmentReader

    try:
        from kforensics.log.records import decode_entry

        def entry_records(b):
            return decode_entry(b, with_data=True).records
    except ImportError:
        from kforensics.log.records import EntryRecords

        def entry_records(b):
            return EntryRecords(b, with_data=True)
    for b in SegmentReader(path).batches():
        if b.is_valid and not (b.attributes & 0x20):  # skip control batches
            for r in entry_records(b):
                get = r.get if isinstance(r, dict) else (lambda name, r=r: getattr(r, name))
                key, value = get("key"), get("value")
                yield get("offset"), None if key is None else bytes(key), None if value is None else bytes(value)


def s16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def jdump(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------- round trips
CASES = [(p.key.name, v) for p in gc.PAIRS for v in p.value.versions]


@pytest.mark.parametrize("name, version", CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_record_type_and_version_round_trips(name, version, data):
    pair = gc.SERDE.by_name[name]
    k = data.draw(strategy_for(pair.key.layout(0)))
    v = data.draw(strategy_for(pair.value.layout(version)))
    kb, vb = gc.encode(name, version, k, v)
    assert kb[:2] == struct.pack(">h", pair.key.api_key) and vb[:2] == struct.pack(">h", version)
    r = gc.decode(kb, vb)
    assert r.findings == []
    assert (r.key_type, r.type_id, r.value_type, r.value_version, r.tombstone) == (
        name, pair.key.api_key, pair.value.name, version, False)
    assert r.key == k
    if v.get("protocolType") != gc.CONSUMER_PROTOCOL_TYPE:  # else members may be decoded in place
        assert r.value == v
    assert gc.encode(name, version, r.key, r.value) == (kb, vb)


@pytest.mark.parametrize("name", [p.key.name for p in gc.PAIRS])
def test_a_null_value_is_a_tombstone(name):
    pair = gc.SERDE.by_name[name]
    key = {f.name: ("AAAAAAAAAAAAAAAAAAAAAA" if "Id" in f.name and f.name == "topicId" else 0 if "partition" in f.name
                    else "x") for f in pair.key.layout(0).fields}
    kb, vb = gc.encode(name, None, key, None)
    r = gc.decode(kb, None)
    assert vb is None and r.tombstone and r.value is None and r.findings == []
    assert r.key == key and r.kafka_payload() == "<DELETE>"


# --------------------------------------------------------------------------- hand-built vectors
KEY = b"\x00\x01" + s16("g1") + s16("orders") + struct.pack(">i", 3)


def test_offset_commit_v1_and_v3_vectors():
    v1 = b"\x00\x01" + struct.pack(">q", 42) + s16("meta") + struct.pack(">qq", 1000, 2000)
    r = gc.decode(KEY, v1)
    assert r.key_type == "OffsetCommitKey" and r.key == {"group": "g1", "topic": "orders", "partition": 3}
    assert r.value == {"offset": 42, "metadata": "meta", "commitTimestamp": 1000, "expireTimestamp": 2000}
    v3 = b"\x00\x03" + struct.pack(">qi", 42, 7) + s16("") + struct.pack(">q", 1000)
    r = gc.decode(KEY, v3)
    assert r.value == {"offset": 42, "leaderEpoch": 7, "metadata": "", "commitTimestamp": 1000} and not r.findings
    assert jdump(r.kafka_key()) == '{"type":"1","data":{"group":"g1","topic":"orders","partition":3}}'
    assert jdump(r.kafka_payload()) == ('{"version":"3","data":{"offset":42,"leaderEpoch":7,"metadata":"",'
                                        '"commitTimestamp":1000}}')


def test_offset_commit_v4_is_flexible_with_a_tagged_topic_id():
    topic_id = bytes(range(16))
    v4 = (b"\x00\x04" + struct.pack(">qi", 42, 7) + b"\x01" + struct.pack(">q", 1000)
          + b"\x01\x00\x10" + topic_id)
    r = gc.decode(KEY, v4)
    assert r.findings == []
    assert r.value == {"offset": 42, "leaderEpoch": 7, "metadata": "", "commitTimestamp": 1000,
                       "topicId": base64.urlsafe_b64encode(topic_id).rstrip(b"=").decode()}
    # the legacy key type 0 carries the same values
    assert gc.decode(b"\x00\x00" + KEY[2:], v4).key_type == "LegacyOffsetCommitKey"


def _subscription_v3() -> bytes:
    return (b"\x00\x03" + struct.pack(">i", 1) + s16("foo") + b"\xff\xff\xff\xff" + struct.pack(">i", 1) + s16("foo")
            + struct.pack(">ii", 1, 0) + struct.pack(">i", 0) + s16("rack"))


def _assignment_v3() -> bytes:
    return b"\x00\x03" + struct.pack(">i", 1) + s16("foo") + struct.pack(">ii", 1, 0) + b"\xff\xff\xff\xff"


def _group_value(subscription: bytes, assignment: bytes) -> dict:
    return {"protocolType": "consumer", "generation": 10, "protocol": "range", "leader": "member",
            "currentStateTimestamp": -1,
            "members": [{"memberId": "member", "groupInstanceId": "instance", "clientId": "client",
                         "clientHost": "host", "rebalanceTimeout": 1000, "sessionTimeout": 100,
                         "subscription": base64.b64encode(subscription).decode(),
                         "assignment": base64.b64encode(assignment).decode()}]}


def test_group_metadata_decodes_the_consumer_protocol_as_kafka_dump_log_prints_it():
    kb, vb = gc.encode("GroupMetadataKey", 4, {"group": "group"}, _group_value(_subscription_v3(), _assignment_v3()))
    r = gc.decode(kb, vb)
    assert r.findings == []
    sub = r.value["members"][0]["subscription"]
    assert sub == {"_version": 3, "topics": ["foo"], "userData": None,
                   "ownedPartitions": [{"topic": "foo", "partitions": [0]}], "generationId": 0, "rackId": "rack"}
    # the text DumpLogSegmentsTest expects for the same record
    assert jdump(r.kafka_key()) == '{"type":"2","data":{"group":"group"}}'
    assert jdump(r.kafka_payload()) == (
        '{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range","leader":"member",'
        '"currentStateTimestamp":-1,"members":[{"memberId":"member","groupInstanceId":"instance",'
        '"clientId":"client","clientHost":"host","rebalanceTimeout":1000,"sessionTimeout":100,'
        '"subscription":{"topics":["foo"],"userData":null,"ownedPartitions":[{"topic":"foo","partitions":[0]}],'
        '"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":[{"topic":"foo","partitions":[0]}],'
        '"userData":null}}]}}')
    # decoded members encode back to the same bytes
    assert gc.encode("GroupMetadataKey", 4, r.key, r.value) == (kb, vb)


def test_group_metadata_keeps_bytes_that_are_not_the_consumer_protocol_with_a_finding():
    kb, vb = gc.encode("GroupMetadataKey", 4, {"group": "group"}, _group_value(b"Subscription", b"Assignment"))
    r = gc.decode(kb, vb)
    assert r.value["members"][0]["subscription"] == "U3Vic2NyaXB0aW9u"
    assert r.value["members"][0]["assignment"] == "QXNzaWdubWVudA=="
    assert [(f.code, f.position, f.facts["field"]) for f in r.findings] == [
        ("CONSUMER_PROTOCOL_UNDECODED", vb.index(b"Subscription"), "subscription"),
        ("CONSUMER_PROTOCOL_UNDECODED", vb.index(b"Assignment"), "assignment")]
    # another protocol type is never decoded, and is no finding
    other = dict(_group_value(_subscription_v3(), _assignment_v3()), protocolType="connect")
    r = gc.decode(*gc.encode("GroupMetadataKey", 3, {"group": "g"}, other))
    assert r.findings == [] and isinstance(r.value["members"][0]["subscription"], str)


def test_kip848_records_print_as_kafka_does():
    kb, vb = gc.encode("ConsumerGroupMetadataKey", 0, {"groupId": "group"}, {"epoch": 10})
    r = gc.decode(kb, vb)
    assert jdump(r.kafka_key()) == '{"type":"3","data":{"groupId":"group"}}'
    assert jdump(r.kafka_payload()) == '{"version":"0","data":{"epoch":10}}'
    # a tagged field equal to its default is on the wire but not in Kafka's JSON
    r = gc.decode(*gc.encode("ConsumerGroupMetadataKey", 0, {"groupId": "g"}, {"epoch": 1, "metadataHash": 0,
                                                                              "creationTimeMs": 5}))
    assert r.value == {"epoch": 1, "metadataHash": 0, "creationTimeMs": 5}
    assert r.kafka_payload()["data"] == {"epoch": 1, "creationTimeMs": 5}


# --------------------------------------------------------------------------- hostile bytes
KNOWN_CODES = {"INTERNAL_RECORD_UNKNOWN_TYPE", "INTERNAL_RECORD_UNKNOWN_VERSION", "INTERNAL_RECORD_DECODE_ERROR",
               "INTERNAL_RECORD_TRAILING_BYTES", "INTERNAL_RECORD_MISSING_KEY", "CONSUMER_PROTOCOL_UNDECODED"}


@settings(max_examples=400, deadline=None)
@given(key=st.none() | st.binary(max_size=40), value=st.none() | st.binary(max_size=80))
def test_arbitrary_bytes_never_raise(key, value):
    r = gc.decode(key, value)
    assert {f.code for f in r.findings} <= KNOWN_CODES
    assert all(f.facts["part"] in ("key", "value") for f in r.findings)
    # a null value deletes whatever its key names, once the record type is known (the key may still be damaged)
    assert r.tombstone == (value is None and r.key_type is not None)


V3 = b"\x00\x03" + struct.pack(">qi", 42, 7) + s16("m") + struct.pack(">q", 1000)


@settings(max_examples=300, deadline=None)
@given(pos=st.integers(0, len(KEY) + len(V3) - 1), byte=st.integers(0, 255), cut=st.booleans())
def test_mutated_records_never_raise(pos, byte, cut):
    raw = bytearray(KEY + V3)
    raw[pos] = byte
    key, value = bytes(raw[:len(KEY)]), bytes(raw[len(KEY):])
    if cut:
        value = value[: pos % len(value)]
    r = gc.decode(key, value)
    assert {f.code for f in r.findings} <= KNOWN_CODES


@pytest.mark.parametrize("key, value, code, part, position", [
    (b"\x7f\xff" + KEY[2:], V3, "INTERNAL_RECORD_UNKNOWN_TYPE", "key", 0),
    (KEY, V3[:10], "INTERNAL_RECORD_DECODE_ERROR", "value", 10),  # cut inside leaderEpoch
    (KEY, b"\x00\x09" + V3[2:], "INTERNAL_RECORD_UNKNOWN_VERSION", "value", 0),
    (KEY, V3 + b"\x00", "INTERNAL_RECORD_TRAILING_BYTES", "value", len(V3)),
    (KEY + b"zz", V3, "INTERNAL_RECORD_TRAILING_BYTES", "key", len(KEY)),
    (KEY[:5], V3, "INTERNAL_RECORD_DECODE_ERROR", "key", 5),
    (None, V3, "INTERNAL_RECORD_MISSING_KEY", "key", 0),
    (b"\x00", None, "INTERNAL_RECORD_DECODE_ERROR", "key", 0),
    # a huge member count: refused right after it
    (b"\x00\x02" + s16("g"), b"\x00\x03" + s16("consumer") + struct.pack(">i", 1) + b"\x00\x00" * 2
     + struct.pack(">q", 0) + b"\x7f\xff\xff\xff", "INTERNAL_RECORD_DECODE_ERROR", "value", 32),
])
def test_known_damage_gives_the_expected_finding_at_the_expected_position(key, value, code, part, position):
    r = gc.decode(key, value)
    assert [(f.code, f.facts["part"], f.position) for f in r.findings] == [(code, part, position)]


# --------------------------------------------------------------------------- real brokers' data
def offsets_partitions() -> list[Path]:
    return sorted(p for p in need_shared(REALDATA).rglob("__consumer_offsets-*") if p.is_dir())


def test_every_real_consumer_offsets_partition_decodes_completely():
    counts: Counter = Counter()
    for part in offsets_partitions():
        for seg in sorted(part.glob("*.log")):
            for offset, key, value in records_of(seg):
                r = gc.decode(key, value)
                assert r.findings == [], (seg, offset, r.findings)
                assert UNKNOWN_TAGS not in json.dumps(r.value)
                assert gc.encode(r.key_type, r.value_version, r.key, r.value) == (key, value), (seg, offset)
                counts[(r.key_type, "tombstone" if r.tombstone else r.value_version)] += 1
    # what ../shared/realdata holds (Kafka 0.10.1 to 4.1 brokers)
    assert counts == {("OffsetCommitKey", 1): 868, ("OffsetCommitKey", 3): 22754, ("OffsetCommitKey", 4): 1,
                      ("OffsetCommitKey", "tombstone"): 5, ("GroupMetadataKey", 1): 11,
                      ("GroupMetadataKey", 3): 37, ("GroupMetadataKey", "tombstone"): 12}
