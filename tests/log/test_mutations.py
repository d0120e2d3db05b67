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
from kforensics.formats import compression, legacy, record_batch
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.findings import DecodeError, finding
from kforensics.log.records import EntryRecords, iter_record_tables
from kforensics.log.segment_reader import SegmentReader
from kforensics.scenario.writer import LogDirWriter
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


@pytest.mark.parametrize("batch,epochs,log_expected,rebuilt,epoch_expected", [
    # the first batch: nothing before it to infer its offset from; epoch 0 then starts at the next batch
    (0, (0,) * N_BATCHES, {("OFFSET_OUT_OF_RANGE", 0), ("SEGMENT_BELOW_NAME", 0)}, [(0, 2)],
     {("EPOCH_START_DIFFERS", 0)}),
    # the first batch of epoch 1: the epoch starts at its second batch, not lost
    (2, (0, 0, 1, 1, 2), {("OFFSET_OUT_OF_RANGE", 2), ("OFFSET_NOT_INCREASING", 2)}, [(0, 0), (1, 6), (2, 8)],
     {("EPOCH_START_DIFFERS", 1)}),
    # the only batch of epoch 2 (the last one): the epoch has no batch left, and the log ends before it
    (4, (0, 0, 1, 1, 2), {("OFFSET_OUT_OF_RANGE", 4), ("OFFSET_NOT_INCREASING", 4)}, [(0, 0), (1, 4)],
     {("EPOCH_EMPTY_AT_LEO", 2)}),
])
def test_sign_bit_flipped_in_the_first_batch_of_an_epoch_is_reported_not_raised(tmp_path, batch, epochs,
                                                                                  log_expected, rebuilt,
                                                                                  epoch_expected):
    d, seg, positions = _broker_with_flipped_base_offset(tmp_path, batch, 63, epochs)
    report = scan_log_dirs([d])  # the epoch-cache rebuild used to raise ValueError here
    assert _log_findings(report, seg) == {(code, positions[i]) for code, i in log_expected}
    (f,) = [f for f in report.all_findings() if f.code == "OFFSET_OUT_OF_RANGE"]
    assert f.file == str(seg) and f.position == positions[batch] and f.facts["base_offset"] < 0
    # the scan went on: the damaged batch is skipped by the rebuild, the checkpoint is compared with the rest
    (p,) = report.partitions
    assert p.epoch_cache_written == [(e, i * RECORDS_PER_BATCH) for i, e in enumerate(epochs)
                                     if i == 0 or epochs[i - 1] != e]
    assert p.epoch_cache_rebuilt == rebuilt
    checkpoint = str(seg.parent / "leader-epoch-checkpoint")
    assert {(f.code, f.facts.get("epoch")) for f in report.all_findings() if f.file == checkpoint} == epoch_expected
    assert not any(f.code == "CRC_MISMATCH" for f in report.all_findings())


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
        assert f.position is not None and 0 <= f.position < len(data), f
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


CODEC_NAMES = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_failure_is_located_at_its_batch(tmp_path, codec):
    good = build_batch([RecordData(0, 1, b"k", b"v")])
    data = good + _crc_valid_v2_with_broken_payload(codec)
    r, batches, p = read(tmp_path, data)
    assert r.summary.findings == [] and len(batches) == 2
    dec = EntryRecords(batches[1], file=str(p))
    assert list(dec) == []
    # the decoders cannot say where in the compressed stream it broke: the finding is placed at the batch
    assert (dec.error.code, dec.error.file, dec.error.position) == ("DECOMPRESSION_FAILED", str(p), len(good))
    assert dec.error.facts["codec"] == CODEC_NAMES[codec]
    # the columnar deep path places it the same way
    errors = [e for _, rt in iter_record_tables(SegmentReader(p)) for e in rt.errors]
    assert [(e.code, e.file, e.position) for e in errors] == [("DECOMPRESSION_FAILED", str(p), len(good))]


def _crc_valid_legacy_wrapper_with_broken_payload(magic: int, codec: int) -> bytes:
    """A compressed v0/v1 wrapper whose value is not a stream of its codec (the CRC covers it as it is)."""
    inner = legacy.encode_wrapper([(i, b"k", b"value %d" % i, 1_700_000_000_000) for i in range(20)],
                                  magic=magic, codec=codec)
    m = legacy.LegacyMessage.parse(inner)
    value = bytearray(m.value)
    value[10:30] = bytes(range(20))
    return legacy.encode_message(offset=19, magic=magic, key=None, value=bytes(value),
                                 timestamp=m.timestamp if magic else -1, attributes=m.attributes)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [1, 2, 3])
def test_decompression_failure_of_a_legacy_wrapper_is_located_at_the_wrapper(tmp_path, magic, codec):
    good = legacy.encode_message(offset=0, magic=magic, key=b"k", value=b"v", timestamp=1 if magic else -1)
    data = good + _crc_valid_legacy_wrapper_with_broken_payload(magic, codec)
    r, batches, p = read(tmp_path, data)
    assert r.summary.findings == [] and len(batches) == 2 and batches[1].value_position > len(good)
    dec = EntryRecords(batches[1], file=str(p))
    assert list(dec) == []
    assert (dec.error.code, dec.error.file, dec.error.position) == ("DECOMPRESSION_FAILED", str(p), len(good))
    assert dec.error.facts["codec"] == CODEC_NAMES[codec]


def test_a_position_the_decoder_gives_is_shifted_by_the_compressed_sections_start(tmp_path, monkeypatch):
    # no decoder places its errors today; one that does gives a position in the bytes it was handed
    def failing(codec_id, data, *, magic, max_output, **_):
        raise DecodeError("DECOMPRESSION_FAILED", "broken at byte 7 of the stream", 7, codec="gzip")

    # both deep paths decompress through formats.compression's Decompressor, which settles gzip with decompress()
    monkeypatch.setattr(compression, "decompress", failing)
    good = build_batch([RecordData(0, 1, b"k", b"v")])
    wrapper = legacy.encode_wrapper([(1, b"k", b"v", 5)], magic=1, codec=1)
    data = good + build_batch([RecordData(2 + i, 1, b"k", b"v") for i in range(3)], codec=1) + wrapper
    r, batches, p = read(tmp_path, data)
    assert r.summary.findings == [] and len(batches) == 3
    v2, old = batches[1], batches[2]
    dec = EntryRecords(v2, file=str(p))
    assert list(dec) == []
    assert (dec.error.code, dec.error.position) == ("DECOMPRESSION_FAILED", v2.position + record_batch.HEADER_SIZE + 7)
    errors = [e for _, rt in iter_record_tables(SegmentReader(p)) for e in rt.errors]
    assert [(e.code, e.file, e.position) for e in errors] == [
        ("DECOMPRESSION_FAILED", str(p), v2.position + record_batch.HEADER_SIZE + 7)]
    dec = EntryRecords(old, file=str(p))
    assert list(dec) == []
    assert old.value_position > old.position
    assert (dec.error.code, dec.error.file, dec.error.position) == ("DECOMPRESSION_FAILED", str(p),
                                                                    old.value_position + 7)


def test_finding_at_shifts_a_position_and_places_one_without_at_the_default():
    f = finding("DECOMPRESSION_FAILED", "x", position=7)
    assert f.at("a.log", offset=100, default=3).position == 107
    unplaced = finding("DECOMPRESSION_FAILED", "x")
    assert unplaced.at("a.log", offset=100).position is None
    moved = unplaced.at("a.log", offset=100, default=3)
    assert (moved.file, moved.position, moved.code) == ("a.log", 3, "DECOMPRESSION_FAILED")
