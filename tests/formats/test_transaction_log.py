"""__transaction_state: TransactionLogKey/Value v0 (classic) and v1 (flexible, transactions v2 tags)."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kforensics.formats import transaction_log as tl
from tests.conftest import REALDATA, need_shared
from tests.formats.test_group_coordinator import jdump, records_of, s16
from tests.formats.test_message_schema import strategy_for

PAIR = tl.PAIRS[0]


@pytest.mark.parametrize("version", [0, 1])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_value_versions_round_trip(version, data):
    k = data.draw(strategy_for(PAIR.key.layout(0)))
    v = data.draw(strategy_for(PAIR.value.layout(version)))
    kb, vb = tl.encode("TransactionLogKey", version, k, v)
    r = tl.decode(kb, vb)
    assert r.findings == [] and (r.key, r.value, r.value_version) == (k, v, version)
    assert tl.encode("TransactionLogValue", version, r.key, r.value) == (kb, vb)


KEY = b"\x00\x00" + s16("txn-1")


def test_v0_vector_and_state_names():
    v0 = (b"\x00\x00" + struct.pack(">qhib", 1000, 3, 60000, 1) + struct.pack(">i", 1) + s16("t")
          + struct.pack(">ii", 1, 2) + struct.pack(">qq", 5, 4))
    r = tl.decode(KEY, v0)
    assert r.findings == [] and r.key == {"transactionalId": "txn-1"}
    assert r.value == {"producerId": 1000, "producerEpoch": 3, "transactionTimeoutMs": 60000, "transactionStatus": 1,
                       "transactionPartitions": [{"topic": "t", "partitionIds": [2]}],
                       "transactionLastUpdateTimestampMs": 5, "transactionStartTimestampMs": 4}
    assert tl.state_name(r.value["transactionStatus"]) == "Ongoing"
    assert [tl.state_name(i) for i in range(8)] == ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
                                                    "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"]
    assert tl.state_name(9) is None
    # a null partition list (v0 INT32 -1)
    r = tl.decode(KEY, v0[:17] + b"\xff\xff\xff\xff" + v0[-16:])
    assert r.findings == [] and r.value["transactionPartitions"] is None


def test_v1_tagged_fields_print_as_kafka_dump_log_does():
    value = {"producerId": 12, "previousProducerId": 11, "nextProducerId": 10, "producerEpoch": 2,
             "transactionTimeoutMs": 14, "transactionStatus": 0,
             "transactionPartitions": [{"topic": "topic1", "partitionIds": [0, 1, 2]},
                                       {"topic": "topic2", "partitionIds": [3, 4, 5]}],
             "transactionLastUpdateTimestampMs": 123, "transactionStartTimestampMs": 13,
             "clientTransactionVersion": 0}
    kb, vb = tl.encode("TransactionLogKey", 1, {"transactionalId": "txnId"}, value)
    assert vb.endswith(b"\x03\x00\x08" + struct.pack(">q", 11) + b"\x01\x08" + struct.pack(">q", 10)
                       + b"\x02\x02\x00\x00")
    r = tl.decode(kb, vb)
    assert r.value == value
    # DumpLogSegmentsTest's expected text: clientTransactionVersion 0 is the default, so not printed
    assert jdump(r.kafka_key()) == '{"type":"0","data":{"transactionalId":"txnId"}}'
    assert jdump(r.kafka_payload()) == (
        '{"version":"1","data":{"producerId":12,"previousProducerId":11,"nextProducerId":10,"producerEpoch":2,'
        '"transactionTimeoutMs":14,"transactionStatus":0,"transactionPartitions":[{"topic":"topic1",'
        '"partitionIds":[0,1,2]},{"topic":"topic2","partitionIds":[3,4,5]}],"transactionLastUpdateTimestampMs":123,'
        '"transactionStartTimestampMs":13}}')


def test_tombstone_unknown_type_and_damage():
    assert tl.decode(KEY, None).tombstone and tl.decode(KEY, None).kafka_payload() == "<DELETE>"
    assert [(f.code, f.position) for f in tl.decode(b"\x00\x01" + s16("x"), None).findings] == [
        ("INTERNAL_RECORD_UNKNOWN_TYPE", 0)]
    assert [(f.code, f.position) for f in tl.decode(KEY, b"\x00\x02" + bytes(30)).findings] == [
        ("INTERNAL_RECORD_UNKNOWN_VERSION", 0)]
    r = tl.decode(KEY, b"\x00\x01" + struct.pack(">q", 1) + b"\x01\x00\x09")  # tag 0 longer than the value
    assert [f.code for f in r.findings] == ["INTERNAL_RECORD_DECODE_ERROR"]


@settings(max_examples=300, deadline=None)
@given(key=st.none() | st.binary(max_size=20), value=st.none() | st.binary(max_size=60))
def test_arbitrary_bytes_never_raise(key, value):
    r = tl.decode(key, value)
    assert all(f.code.startswith("INTERNAL_RECORD_") for f in r.findings)


def test_real_transaction_state_partitions_decode_completely():
    parts = sorted(p for p in need_shared(REALDATA).rglob("__transaction_state-*") if p.is_dir())
    assert len(parts) == 50  # Danielowo2000 kafka_data (Kafka 3.4): every partition, no record written
    n = 0
    for part in parts:
        for seg in sorted(part.glob("*.log")):
            for offset, key, value in records_of(seg):
                r = tl.decode(key, value)
                assert r.findings == [], (seg, offset, r.findings)
                assert tl.encode(r.key_type, r.value_version, r.key, r.value) == (key, value)
                n += 1
    assert n == 0, json.dumps(n)
