"""Streaming segment reader: framing, damage findings, resynchronisation, never crashing."""

from __future__ import annotations

import glob
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ORACLE, REALDATA, need_shared
from kforensics.formats import legacy
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log.segment_reader import SegmentReader


def make_segment(n=20, start=0, epoch=0, value_size=40):
    out = b""
    for i in range(n):
        out += build_batch(
            [RecordData(start + i, 1700000000000 + i, f"k{i}".encode(), bytes([i % 256]) * value_size)],
            partition_leader_epoch=epoch,
        )
    return out


def read(path, **kw):
    r = SegmentReader(path, **kw)
    batches = list(r.batches())
    return r, batches


def write(tmp_path, data, name="00000000000000000000.log"):
    p = tmp_path / name
    p.write_bytes(data)
    os.chmod(p, 0o444)  # evidence is read-only; the reader must not need more
    return p


def codes(r):
    return [f.code for f in r.summary.findings]


def test_healthy_segment_reads_every_batch_without_findings(tmp_path):
    data = make_segment(50)
    r, bs = read(write(tmp_path, data))
    assert [b.base_offset for b in bs] == list(range(50))
    assert all(b.is_valid and not b.recovered for b in bs)
    assert codes(r) == [] and r.summary.kafka_valid_bytes == len(data) and r.summary.kafka_stop is None


@pytest.mark.parametrize("window,max_entry", [(64, 1 << 20), (200, 1 << 20), (4096, 150)])
def test_tiny_windows_and_streamed_large_entries_give_the_same_batches(tmp_path, window, max_entry):
    data = make_segment(30, value_size=90)
    p = write(tmp_path, data)
    _, expected = read(p)
    r, bs = read(p, window=window, max_entry=max_entry, rows=7)
    assert [(b.position, b.last_offset, b.crc, b.is_valid) for b in bs] == [
        (b.position, b.last_offset, b.crc, b.is_valid) for b in expected
    ]
    if max_entry < 200:
        assert "BATCH_NOT_DECODED" in codes(r)


def test_zero_tail_is_reported_where_kafka_stops(tmp_path):
    data = make_segment(5)
    r, bs = read(write(tmp_path, data + bytes(1000)))
    assert len(bs) == 5
    (f,) = r.summary.findings
    assert (f.code, f.position, f.facts["length"]) == ("ZERO_TAIL", len(data), 1000)
    assert r.summary.kafka_valid_bytes == len(data)


def test_zero_gap_then_valid_batches_are_recovered(tmp_path):
    a, b = make_segment(5), make_segment(5, start=5)
    r, bs = read(write(tmp_path, a + bytes(4096) + b))
    assert [x.base_offset for x in bs] == list(range(10))
    assert [x.recovered for x in bs] == [False] * 5 + [True] * 5
    (f,) = r.summary.findings
    assert (f.code, f.position, f.facts["resumed_at"]) == ("ZERO_GAP", len(a), len(a) + 4096)


def test_torn_tail_is_a_truncated_batch(tmp_path):
    full = make_segment(4)
    last = make_segment(1, start=4)
    r, bs = read(write(tmp_path, full + last[:40]))
    assert len(bs) == 4
    (f,) = r.summary.findings
    assert f.code == "TRUNCATED_BATCH" and f.position == len(full)
    assert f.facts == {"declared_size": len(last), "available": 40}


def test_hostile_size_field_mid_file_is_skipped_by_resync(tmp_path):
    a, b, c = make_segment(3), make_segment(1, start=3), make_segment(3, start=4)
    bad = bytearray(b)
    bad[8:12] = (2**31 - 1).to_bytes(4, "big")
    r, bs = read(write(tmp_path, a + bytes(bad) + c))
    assert [x.base_offset for x in bs] == [0, 1, 2, 4, 5, 6]
    assert codes(r) == ["IMPLAUSIBLE_SIZE"]
    assert r.summary.findings[0].position == len(a)


def test_garbage_between_batches_is_a_corrupt_range(tmp_path):
    a, c = make_segment(3), make_segment(3, start=3)
    junk = bytes(range(1, 200))
    r, bs = read(write(tmp_path, a + junk + c))
    assert [x.base_offset for x in bs] == list(range(6))
    (f,) = r.summary.findings
    assert f.code == "CORRUPT_RANGE" and f.position == len(a) and f.facts["length"] == len(junk)


def test_bit_flip_in_payload_is_a_crc_mismatch_and_reading_continues(tmp_path):
    data = bytearray(make_segment(3))
    first = len(make_segment(1))
    data[first + 70] ^= 0x01  # inside the second batch's record
    r, bs = read(write(tmp_path, bytes(data)))
    assert [b.is_valid for b in bs] == [True, False, True]
    (f,) = r.summary.findings
    assert f.code == "CRC_MISMATCH" and f.facts["stored"] != f.facts["computed"]


def test_legacy_and_v2_entries_mix(tmp_path):
    data = legacy.encode_message(offset=0, magic=0, key=None, value=b"a")
    data += legacy.encode_message(offset=1, magic=1, key=b"k", value=b"b", timestamp=5)
    data += make_segment(2, start=2)
    r, bs = read(write(tmp_path, data))
    assert [(b.magic, b.last_offset, b.is_valid) for b in bs] == [(0, 0, True), (1, 1, True), (2, 2, True), (2, 3, True)]


def test_empty_file(tmp_path):
    r, bs = read(write(tmp_path, b""))
    assert bs == [] and codes(r) == []


@given(st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_mutated_segments_never_raise_and_positions_stay_ordered(tmp_path_factory, data):
    seg = bytearray(make_segment(8, value_size=30))
    for _ in range(data.draw(st.integers(1, 6))):
        kind = data.draw(st.sampled_from(["flip", "zero", "cut", "insert"]))
        at = data.draw(st.integers(0, max(0, len(seg) - 1)))
        if kind == "flip" and seg:
            seg[at] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "zero":
            seg[at : at + data.draw(st.integers(1, 64))] = bytes(min(64, len(seg) - at))
        elif kind == "cut":
            del seg[at:]
        else:
            seg[at:at] = data.draw(st.binary(min_size=1, max_size=40))
    p = tmp_path_factory.mktemp("m") / "00000000000000000000.log"
    p.write_bytes(bytes(seg))
    r = SegmentReader(p, window=128)
    positions = [b.position for b in r.batches()]
    assert positions == sorted(set(positions))
    assert all(0 <= x < len(seg) for x in positions)
    assert all(f.position is None or 0 <= f.position <= len(seg) for f in r.summary.findings)


def test_mutated_oracle_and_realdata_segments_never_raise(tmp_path):
    need_shared(ORACLE)
    files = sorted(glob.glob(str(ORACLE / "logs" / "*" / "*.log")))
    files += sorted(glob.glob(str(REALDATA / "**" / "*.log"), recursive=True))[:40]
    import random

    rnd = random.Random(7)
    for i, src in enumerate(files):
        data = bytearray(open(src, "rb").read()[:200_000])
        for _ in range(5):
            if data:
                data[rnd.randrange(len(data))] = rnd.randrange(256)
        p = tmp_path / f"{i:020d}.log"
        p.write_bytes(bytes(data))
        r = SegmentReader(p, window=4096)
        list(r.batches())


def test_resync_never_accepts_a_large_candidate_whose_crc_does_not_match(tmp_path):
    # garbage, then a batch too large for the window and the in-memory limit whose body is damaged, then a good
    # batch: the reader must skip the damaged one (its CRC is checked by streaming) and resume at the good one
    a = make_segment(1)
    big = bytearray(make_segment(1, start=1, value_size=180))
    big[-1] ^= 0xFF  # inside the CRC-covered body
    b = make_segment(1, start=2)
    p = write(tmp_path, a + b"\xff" * 50 + bytes(big) + b)
    r, bs = read(p, window=128, max_entry=150)
    assert [(x.base_offset, x.recovered) for x in bs] == [(0, False), (2, True)]
    (corrupt,) = [f for f in r.summary.findings if f.code == "CORRUPT_RANGE"]
    assert corrupt.position == len(a) and corrupt.facts["resumed_at"] == len(a) + 50 + len(big)
    assert "CRC_MISMATCH" not in codes(r)
