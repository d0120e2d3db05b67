"""Predictable damage to segments Kafka wrote gives the right finding code at the right byte.

Oracle segments (written by kafka-clients, with Kafka's own view in a
manifest) and a segment a real broker wrote are damaged in ways whose effect
is known in advance: a flipped byte under a CRC, a torn tail, a zeroed batch,
a zeroed tail, a flipped bit in the base offset (which no CRC covers).
Arbitrary damage must never make the reader raise.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ORACLE, REALDATA, need_shared
from kforensics.catalogue import CATALOGUE
from kforensics.formats import legacy, record_batch
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log.records import EntryRecords
from kforensics.log.segment_reader import SegmentReader
from kforensics.log.writer import LogDirWriter
from kforensics.scan.broker import scan_log_dirs

ORACLE_CASES = ["v2-none", "v2-gzip", "v1-none", "v0-none"]
REAL_SEGMENT = "williamjie__kafakainfo__fb12177/data/test-0/00000000000000000000.log"
CASES = ORACLE_CASES + ["realdata"]


def source(case: str) -> tuple[bytes, list[dict]]:
    """A segment's bytes and its entries as Kafka reports them (position, size, crc, magic, offsets)."""
    if case == "realdata":
        path = need_shared(REALDATA / REAL_SEGMENT)
        r = SegmentReader(path)
        batches = [dict(position=b.position, sizeInBytes=b.size_in_bytes, crc=b.crc, magic=b.magic,
                        lastOffset=b.last_offset) for b in r.batches()]
        assert r.summary.findings == [] and len(batches) == 2032  # the catalogue: every batch passes its CRC
        return path.read_bytes(), batches
    manifest = json.loads((need_shared(ORACLE) / "manifests" / f"{case}.json").read_text(encoding="utf-8"))
    (seg,) = manifest["segments"]
    data = (ORACLE / seg["file"]).read_bytes()
    assert len(data) == seg["sizeInBytes"]
    return data, seg["batches"]


def crc_start(magic: int) -> int:
    return record_batch.CRC_START if magic == record_batch.MAGIC else legacy.CRC_START


def read(tmp_path: Path, data: bytes, name: str = "00000000000000000000.log"):
    p = tmp_path / name
    p.write_bytes(data)
    os.chmod(p, 0o444)
    r = SegmentReader(p, window=4096)
    batches = list(r.batches())
    return r, batches, p


def summary(r) -> list[tuple[str, int | None]]:
    return [(f.code, f.position) for f in r.summary.findings]


def pick(batches: list[dict]) -> list[int]:
    """First, a middle and the last entry."""
    return sorted({0, len(batches) // 2, len(batches) - 1})


# ---------------------------------------------------------------- a flipped byte under the CRC


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("where", ["middle", "last_byte"])
def test_flipped_byte_under_the_crc_is_a_crc_mismatch_at_that_batch(tmp_path, case, where):
    data, batches = source(case)
    for i in pick(batches):
        b = batches[i]
        pos, size, start = b["position"], b["sizeInBytes"], crc_start(b["magic"])
        # skip the legacy magic byte itself: changing it changes the framing, not just the CRC
        lo = start + (1 if b["magic"] < 2 else 0)
        at = pos + (lo + (size - lo) // 2 if where == "middle" else size - 1)
        bad = bytearray(data)
        bad[at] ^= 0x5A
        r, got, _ = read(_fresh(tmp_path, f"{i}-{where}"), bytes(bad))
        assert summary(r) == [("CRC_MISMATCH", pos)]
        (f,) = r.summary.findings
        assert f.facts["stored"] == b["crc"] != f.facts["computed"]
        assert f.facts["magic"] == b["magic"] and f.facts["last_offset"] == b["lastOffset"]
        assert [x.position for x in got] == [x["position"] for x in batches]
        assert [x.is_valid for x in got] == [j != i for j in range(len(batches))]
        assert not any(x.recovered for x in got)


def _fresh(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    return d


# ---------------------------------------------------------------- a torn tail


@pytest.mark.parametrize("case", CASES)
def test_file_cut_inside_its_last_batch_is_a_truncated_batch_there(tmp_path, case):
    data, batches = source(case)
    last = batches[-1]
    pos, size = last["position"], last["sizeInBytes"]
    assert pos + size == len(data)
    # at least the 17 bytes up to the magic: fewer are trailing bytes to Kafka (see below)
    for keep in sorted({record_batch.ENTRY_PREFIX, max(record_batch.ENTRY_PREFIX, size // 2), size - 1}):
        r, got, _ = read(_fresh(tmp_path, str(keep)), data[: pos + keep])
        assert summary(r) == [("TRUNCATED_BATCH", pos)]
        assert r.summary.findings[0].facts == {"declared_size": size, "available": keep}
        assert [x.position for x in got] == [x["position"] for x in batches[:-1]]
        assert r.summary.kafka_valid_bytes == pos


@pytest.mark.parametrize("case", CASES)
def test_file_cut_inside_the_last_entry_header_leaves_trailing_bytes(tmp_path, case):
    data, batches = source(case)
    pos = batches[-1]["position"]
    r, got, _ = read(tmp_path, data[: pos + record_batch.ENTRY_PREFIX - 1])
    assert summary(r) == [("TRAILING_BYTES", pos)]
    assert r.summary.findings[0].facts["length"] == record_batch.ENTRY_PREFIX - 1
    assert len(got) == len(batches) - 1


# ---------------------------------------------------------------- zeroed ranges


@pytest.mark.parametrize("case", CASES)
def test_zeroed_middle_batch_is_a_zero_gap_and_later_batches_are_recovered(tmp_path, case):
    data, batches = source(case)
    i = len(batches) // 2
    assert 0 < i < len(batches) - 1
    pos, size = batches[i]["position"], batches[i]["sizeInBytes"]
    bad = bytearray(data)
    bad[pos : pos + size] = bytes(size)
    r, got, _ = read(tmp_path, bytes(bad))
    assert summary(r) == [("ZERO_GAP", pos)]
    facts = r.summary.findings[0].facts
    assert (facts["length"], facts["end"], facts["resumed_at"]) == (size, pos + size, pos + size)
    assert [x.position for x in got] == [b["position"] for j, b in enumerate(batches) if j != i]
    assert [x.recovered for x in got] == [j > i for j in range(len(batches)) if j != i]
    assert all(x.is_valid for x in got)
    assert r.summary.kafka_valid_bytes == pos and r.summary.recovered_batches == len(batches) - i - 1


@pytest.mark.parametrize("case", CASES)
def test_zeroed_tail_is_a_zero_tail_at_its_start(tmp_path, case):
    data, batches = source(case)
    for i in sorted({len(batches) // 2, len(batches) - 1}):
        pos = batches[i]["position"]
        bad = data[:pos] + bytes(len(data) - pos)
        r, got, _ = read(_fresh(tmp_path, str(i)), bad)
        assert summary(r) == [("ZERO_TAIL", pos)]
        assert r.summary.findings[0].facts["length"] == len(data) - pos
        assert [x.position for x in got] == [b["position"] for b in batches[:i]]
        assert not any(x.recovered for x in got)


# ---------------------------------------------------------------- a flipped bit in a v2 base offset (outside the CRC)

N_BATCHES = 5
RECORDS_PER_BATCH = 2


def _broker_with_flipped_base_offset(tmp_path: Path, batch: int, bit: int, epochs=(0,) * N_BATCHES):
    """A log dir of one partition (5 v2 batches of 2 records), with one bit of one batch's baseOffset flipped."""
    w = LogDirWriter(tmp_path / "broker")
    pw = w.partition("orders", 0)
    positions, size = [], 0
    for i in range(N_BATCHES):
        first = i * RECORDS_PER_BATCH
        raw = build_batch([RecordData(first + j, 1_700_000_000_000 + first + j, b"k", b"v" * 10)
                           for j in range(RECORDS_PER_BATCH)], partition_leader_epoch=epochs[i])
        positions.append(size)
        size += len(raw)
        pw.append(raw)
    end = N_BATCHES * RECORDS_PER_BATCH
    w.high_watermarks[("orders", 0)] = end
    w.recovery_points[("orders", 0)] = end
    d = w.write()
    seg = d / "orders-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    f = record_batch.HEADER["base_offset"]
    data[positions[batch] + f.offset + f.size - 1 - bit // 8] ^= 1 << (bit % 8)
    seg.write_bytes(bytes(data))
    return d, seg, positions


def _log_findings(report, seg: Path) -> set[tuple[str, int]]:
    return {(f.code, f.position) for f in report.all_findings() if f.file == str(seg)}


@pytest.mark.parametrize("batch,bit,expected", [
    # 4 -> 5: offset 4 is missing, and the batch now ends at 6 where the next one starts
    (2, 0, {("OFFSET_GAP", 2), ("OFFSET_NOT_INCREASING", 3)}),
    # 4 -> 0: the batch goes back below its predecessor; the next one then jumps
    (2, 2, {("OFFSET_NOT_INCREASING", 2), ("OFFSET_GAP", 3)}),
    # 4 -> 2**40 + 4: a huge jump, then the next batch goes back
    (2, 40, {("OFFSET_GAP", 2), ("OFFSET_NOT_INCREASING", 3)}),
    # the sign bit: negative offsets
    (2, 63, {("OFFSET_OUT_OF_RANGE", 2), ("OFFSET_NOT_INCREASING", 2)}),
    # the first batch has no predecessor: the damage shows at the next batch
    (0, 0, {("OFFSET_NOT_INCREASING", 1)}),
    # the last batch has no successor: only the jump shows (no cleaner entry: consistent with compaction)
    (4, 40, {("OFFSET_GAP", 4)}),
])
def test_flipped_base_offset_bit_is_an_offset_finding_and_no_crc_finding(tmp_path, batch, bit, expected):
    d, seg, positions = _broker_with_flipped_base_offset(tmp_path, batch, bit)
    report = scan_log_dirs([d])
    got = _log_findings(report, seg)
    assert got == {(code, positions[i]) for code, i in expected}
    # and the reader alone sees a valid batch: the CRC does not cover the base offset
    r, batches, _ = read(tmp_path, seg.read_bytes(), name="copy.log")
    assert r.summary.findings == [] and all(b.is_valid for b in batches)


@pytest.mark.xfail(strict=True, reason="scan_log_dirs raises ValueError when a v2 batch that starts an epoch has a "
                                       "negative baseOffset: the epoch-cache rebuild assigns the negative offset")
@pytest.mark.parametrize("batch,epochs", [(0, (0,) * N_BATCHES), (2, (0, 0, 1, 1, 2)), (4, (0, 0, 1, 1, 2))])
def test_sign_bit_flipped_in_the_first_batch_of_an_epoch_is_reported_not_raised(tmp_path, batch, epochs):
    d, seg, positions = _broker_with_flipped_base_offset(tmp_path, batch, 63, epochs)
    report = scan_log_dirs([d])
    got = _log_findings(report, seg)
    assert ("OFFSET_OUT_OF_RANGE", positions[batch]) in got
    assert not any(code == "CRC_MISMATCH" for code, _ in got)


# ---------------------------------------------------------------- arbitrary damage


def _mutation_sources() -> list[tuple[str, bytes]]:
    out = []
    if ORACLE.exists():
        for case in ("v2-none", "v2-gzip", "v2-lz4", "v1-gzip", "v0-none", "mixed-magic", "v2-transactions"):
            manifest = json.loads((ORACLE / "manifests" / f"{case}.json").read_text(encoding="utf-8"))
            out.append((case, (ORACLE / manifest["segments"][0]["file"]).read_bytes()))
    if (REALDATA / REAL_SEGMENT).exists():
        out.append(("realdata", (REALDATA / REAL_SEGMENT).read_bytes()[:20_000]))
    return out


SOURCES = _mutation_sources()


@st.composite
def mutated(draw):
    name, data = draw(st.sampled_from(SOURCES))
    seg = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "cut", "zeros", "insert_zeros"]))
        at = draw(st.integers(0, max(0, len(seg) - 1)))
        if kind == "flip" and seg:
            seg[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "cut":
            del seg[at:]
        elif kind == "zeros":
            n = draw(st.integers(1, 300))
            seg[at : at + n] = bytes(len(seg[at : at + n]))
        else:
            seg[at:at] = bytes(draw(st.integers(1, 300)))
    return name, bytes(seg)


@pytest.mark.skipif(not SOURCES, reason="../shared (oracle fixtures, real broker data) is absent")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=mutated())
def test_arbitrary_damage_never_raises_and_every_finding_is_located(tmp_path_factory, m):
    _name, data = m
    p = tmp_path_factory.mktemp("mut") / "00000000000000000000.log"
    p.write_bytes(data)
    r = SegmentReader(p, window=512)
    positions = []
    decode_findings = []
    for b in r.batches():
        positions.append(b.position)
        assert 0 <= b.position and b.position + b.size_in_bytes <= len(data)
        dec = EntryRecords(b, file=str(p))
        for _ in dec:
            pass
        if dec.error is not None:
            decode_findings.append(dec.error)
    assert positions == sorted(set(positions))
    for f in r.summary.findings:
        assert f.code in CATALOGUE
        assert f.file == str(p)
        assert f.position is not None and 0 <= f.position < len(data), f
    for f in decode_findings:  # deep decoding of the damaged batches: known codes, in this file
        assert f.code in CATALOGUE and f.file == str(p)
        assert f.position is None or 0 <= f.position < len(data), f
    # where Kafka's reader stops is a place in the file, at or before the first finding of damage
    assert 0 <= r.summary.kafka_valid_bytes <= len(data)


def _crc_valid_v2_with_broken_payload(codec: int) -> bytes:
    """A v2 batch whose compressed records are damaged but whose CRC was recomputed over the damage."""
    raw = bytearray(build_batch([RecordData(i, 1_700_000_000_000, b"k", b"value %d" % i) for i in range(20)],
                                codec=codec))
    h = record_batch.HEADER_SIZE
    raw[h + 10 : h + 30] = bytes(range(20))
    crc = record_batch.compute_crc(bytes(raw))
    f = record_batch.HEADER["crc"]
    raw[f.offset : f.offset + f.size] = crc.to_bytes(4, "big")
    return bytes(raw)


@pytest.mark.xfail(strict=True, reason="a DecodeError without a position (decompression failure) becomes a finding "
                                       "with position None: Finding.at(offset=batch.position) keeps None")
@pytest.mark.parametrize("codec", [1, 3, 4])
def test_decompression_failure_is_located_at_its_batch(tmp_path, codec):
    good = build_batch([RecordData(0, 1, b"k", b"v")])
    data = good + _crc_valid_v2_with_broken_payload(codec)
    r, batches, p = read(tmp_path, data)
    assert r.summary.findings == [] and len(batches) == 2
    dec = EntryRecords(batches[1], file=str(p))
    assert list(dec) == []
    assert dec.error.code == "DECOMPRESSION_FAILED"
    assert dec.error.position == len(good)
