"""v2 RecordBatch and legacy message declarations: known vectors, round trips, and oracle bytes."""

from __future__ import annotations

import glob

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ORACLE, need_shared
from kforensics.formats import legacy, record_batch
from kforensics.formats.record_batch import (
    HEADER,
    Record,
    RecordBatchHeader,
    RecordData,
    build_batch,
    encode_batch,
)
from kforensics.log.segment_reader import SegmentReader

# reference §12: one record, null key, value "hello", ts 1700000000000, epoch 0
V2_HELLO = bytes.fromhex(
    "0000000000000000" "0000003d" "00000000" "02" "e641a44b" "0000" "00000000"
    "0000018bcfe56800" "0000018bcfe56800" "ffffffffffffffff" "ffff" "ffffffff" "00000001"
    "16" "00" "00" "00" "01" "0a" "68656c6c6f" "00"
)
V1_HELLO = bytes.fromhex("0000000000000000" "0000001b" "8ee30bba" "01" "00" "0000018bcfe56800" "ffffffff" "00000005" "68656c6c6f")
V0_HELLO = bytes.fromhex("0000000000000000" "00000013" "87a77ab2" "00" "00" "ffffffff" "00000005" "68656c6c6f")


def test_v2_vector_builds_byte_for_byte():
    assert build_batch([RecordData(0, 1700000000000, None, b"hello")], partition_leader_epoch=0) == V2_HELLO


def test_v2_header_layout_is_61_bytes_and_crc_starts_at_attributes():
    assert HEADER.size == 61
    assert record_batch.CRC_START == 21
    assert HEADER.struct.format == ">qllbLhlqqqhll"
    h = RecordBatchHeader.parse(V2_HELLO)
    assert h.crc == 3863061579 and h.records_count == 1 and h.batch_length == 61


def test_legacy_vectors_build_byte_for_byte():
    assert legacy.encode_message(offset=0, magic=1, key=None, value=b"hello", timestamp=1700000000000) == V1_HELLO
    assert legacy.encode_message(offset=0, magic=0, key=None, value=b"hello") == V0_HELLO


headers = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=16))), max_size=3)
records = st.builds(
    lambda delta, ts, key, value, hdrs: dict(
        attributes=0, timestamp_delta=ts, offset_delta=delta, key=key, value=value,
        headers=[dict(key=k.encode(), value=v) for k, v in hdrs],
    ),
    st.integers(0, 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.one_of(st.none(), st.binary(max_size=300)),
    headers,
)


@given(records)
@settings(max_examples=200)
def test_record_round_trip(rec):
    parsed = Record.parse(Record.build(rec))
    assert parsed.offset_delta == rec["offset_delta"]
    assert parsed.timestamp_delta == rec["timestamp_delta"]
    assert parsed.key == rec["key"] and parsed.value == rec["value"]
    assert [(h.key, h.value) for h in parsed.headers] == [(h["key"], h["value"]) for h in rec["headers"]]


def _oracle_segments():
    return sorted(glob.glob(str(ORACLE / "logs" / "*" / "*.log")))


def test_oracle_entries_rebuild_byte_for_byte():
    """build(parse(bytes)) == bytes for every entry Kafka wrote (CRC recomputed where valid)."""
    need_shared(ORACLE)
    checked = 0
    for path in _oracle_segments():
        for b in SegmentReader(path).batches():
            raw = bytes(b.raw)
            if b.magic == 2:
                h = RecordBatchHeader.parse(raw)
                rebuilt = encode_batch(
                    raw[HEADER.size :],
                    **{k: h[k] for k in HEADER.names if k not in ("batch_length", "magic", "crc")},
                )
                if b.is_valid:
                    assert rebuilt == raw, (path, b.position)
                else:  # same bytes but for the CRC that the corruption broke
                    assert rebuilt[:17] == raw[:17] and rebuilt[21:] == raw[21:]
                    assert rebuilt[17:21] != raw[17:21]
                assert RecordBatchHeader.build(h) == raw[: HEADER.size]
            else:
                m = legacy.LegacyMessage.parse(raw)
                assert legacy.LegacyMessage.build(m) == raw
            checked += 1
    assert checked > 200
