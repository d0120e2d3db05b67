"""The generated numba kernels agree with the Construct declarations they are generated from.

``walk`` must fill every batch-table column exactly as ``RecordBatchHeader`` /
``LegacyMessage`` parse the same bytes; ``decode_records`` must decode what
``record_batch.Record`` parses, and fail exactly when a Construct parse of the
records section fails; and the generated source may only contain numbers the
declarations give.
"""

from __future__ import annotations

import io
import re
import tokenize
import zlib

import crc32c
import numpy as np
import pytest
from construct import ConstructError
from hypothesis import given, settings
from hypothesis import strategies as st

from kforensics.formats import legacy, record_batch
from kforensics.formats.record_batch import (
    HEADER,
    RecordBatchHeader,
    RecordData,
    build_batch,
    encode_batch,
    encode_record,
)
from kforensics.log import kernels
from kforensics.log.kernels import codegen
from kforensics.log.batch_table import BATCH_COLUMNS, COL, new_batch_rows

INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
MAYBE_BYTES = st.one_of(st.none(), st.binary(max_size=40))
HEADERS = st.lists(st.tuples(st.one_of(st.text(max_size=6), st.binary(max_size=6)), MAYBE_BYTES), max_size=3)

KERNEL_SETTINGS = settings(max_examples=150, deadline=None)


@pytest.fixture(scope="module", params=["native", "numba"])
def K(request, tmp_path_factory):
    """Each test runs on both forms of the compiled kernels: numba's dispatchers, and the native library built
    from them afresh for this module (the form a command loads at start)."""
    if request.param == "numba":
        return kernels.jit()
    from kforensics.log.kernels import native

    if native.compiler() is None:
        pytest.skip("no C compiler driver (cc) to link the native kernels; numba's are tested")
    path = str(tmp_path_factory.mktemp("native") / "kernels.so")
    native.build(kernels.jit(), path)
    k = native.load(path, kernels.record_columns(), (kernels.CRC32C_FN, kernels.CRC32_FN), kernels.jit)
    assert k is not None and k.native == path
    return k


def _walk_all(K, buf: bytes, start: int, cap: int):
    arr = np.frombuffer(buf, dtype=np.uint8)
    out = new_batch_rows(cap)
    k, pos, status = K.walk(arr, len(buf), start, out, 0, cap)
    return out[:k], pos, status


# ---------------------------------------------------------------- batch builders (strategies)


@st.composite
def v2_batches(draw):
    """A v2 batch from ``build_batch`` (random records, codec, producer fields, flags), maybe with a wrong CRC."""
    base = draw(st.integers(0, 2**62))
    n = draw(st.integers(0, 4))
    deltas = draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n))
    offsets, cur = [], base
    for d in deltas:
        cur += d if offsets else 0
        offsets.append(cur)
        cur += 1
    ts0 = draw(st.integers(-1, 2**45))
    recs = [RecordData(o, ts0 + draw(st.integers(-10_000, 10_000)), draw(MAYBE_BYTES), draw(MAYBE_BYTES),
                       draw(HEADERS)) for o in offsets]
    codec = draw(st.sampled_from([0, 1, 2, 3, 4]))
    producer = draw(st.booleans())
    raw = build_batch(
        recs,
        codec=codec,
        partition_leader_epoch=draw(st.one_of(st.just(-1), st.integers(0, 2**31 - 1))),
        producer_id=draw(st.integers(0, 2**63 - 1)) if producer else -1,
        producer_epoch=draw(st.integers(0, 2**15 - 1)) if producer else -1,
        base_sequence=draw(st.integers(0, 2**31 - 1)) if producer else -1,
        log_append_time=draw(st.one_of(st.none(), st.integers(0, 2**45))),
        transactional=draw(st.booleans()),
        control=draw(st.booleans()),
        base_offset=base,
        last_offset=(offsets[-1] if offsets else base) + draw(st.integers(0, 3)),
    )
    if draw(st.booleans()):  # a stored CRC that is wrong: the kernel must still compute the real one
        raw = bytearray(raw)
        f = HEADER["crc"]
        raw[f.offset : f.offset + f.size] = draw(st.integers(0, 2**32 - 1)).to_bytes(4, "big")
        raw = bytes(raw)
    return raw


@st.composite
def v2_raw_headers(draw):
    """A v2 batch around arbitrary header values (any signs, flags, epochs) via ``encode_batch``."""
    payload = draw(st.binary(max_size=30))
    return encode_batch(
        payload,
        base_offset=draw(INT64),
        last_offset_delta=draw(INT32),
        records_count=draw(INT32),
        base_timestamp=draw(INT64),
        max_timestamp=draw(INT64),
        attributes=draw(INT16),
        partition_leader_epoch=draw(INT32),
        producer_id=draw(INT64),
        producer_epoch=draw(INT16),
        base_sequence=draw(INT32),
    )


@st.composite
def legacy_entries(draw):
    """A legacy v0/v1 message (``encode_message``) or compressed wrapper (``encode_wrapper``)."""
    magic = draw(st.sampled_from([0, 1]))
    if draw(st.booleans()):
        inner_n = draw(st.integers(1, 3))
        first = draw(st.integers(0, 2**40))
        inner = [(first + i, draw(MAYBE_BYTES), draw(MAYBE_BYTES), draw(st.integers(0, 2**45)))
                 for i in range(inner_n)]
        raw = legacy.encode_wrapper(
            inner, magic=magic, codec=draw(st.sampled_from([1, 2, 3])),
            log_append_time=draw(st.one_of(st.none(), st.integers(0, 2**45))) if magic else None)
    else:
        raw = legacy.encode_message(
            offset=draw(st.integers(0, 2**62)), magic=magic, key=draw(MAYBE_BYTES), value=draw(MAYBE_BYTES),
            timestamp=draw(INT64) if magic else -1,
            attributes=draw(st.sampled_from([0, record_batch.TIMESTAMP_TYPE_BIT])) if magic else 0)
    if draw(st.booleans()):
        raw = bytearray(raw)
        f = legacy.PREFIX["crc"]
        raw[f.offset : f.offset + f.size] = draw(st.integers(0, 2**32 - 1)).to_bytes(4, "big")
        raw = bytes(raw)
    return raw


# ---------------------------------------------------------------- what Construct says a row must hold


def _java_long(v: int) -> int:
    """``v`` wrapped to a signed 64-bit value, as Java's ``long`` addition does."""
    return (v + 2**63) % 2**64 - 2**63


def expected_row(raw: bytes, position: int) -> dict[str, int]:
    """Every batch-table column for one entry, from the Construct declarations and the library CRCs."""
    magic = raw[record_batch.MAGIC_OFFSET]
    row = {"position": position, "size_in_bytes": len(raw), "magic": magic, "flags": 0}
    if magic == record_batch.MAGIC:
        h = RecordBatchHeader.parse(raw)
        for name in BATCH_COLUMNS:
            if name in h:
                row[name] = h[name]
        # Java long arithmetic, as DefaultRecordBatch.lastOffset(): it wraps on overflow
        row["last_offset"] = _java_long(h.base_offset + h.last_offset_delta)
        row["crc_computed"] = crc32c.crc32c(raw[record_batch.CRC_START :])
        row.update(value_position=-1, value_length=-1, key_length=-1)
        return row
    m = legacy.LegacyMessage.parse(raw)
    codec = m.attributes & record_batch.COMPRESSION_MASK
    value_len = len(m.value) if m.value is not None else 0
    row.update(
        base_offset=m.offset if codec == 0 else -1,
        last_offset=m.offset,
        partition_leader_epoch=-1,
        crc=m.crc,
        crc_computed=zlib.crc32(raw[legacy.CRC_START :]),
        attributes=m.attributes,
        base_timestamp=-1,
        max_timestamp=m.timestamp if m.timestamp is not None else -1,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records_count=1 if codec == 0 else -1,
        # the value is the last field: it ends where the entry ends
        value_position=position + len(raw) - value_len,
        value_length=m.value_length,
        key_length=m.key_length,
    )
    return row


def assert_rows_match(rows: np.ndarray, entries: list[bytes], start: int) -> None:
    assert rows.shape[0] == len(entries)
    pos = start
    for got, raw in zip(rows.tolist(), entries):
        want = expected_row(raw, pos)
        assert set(want) == set(BATCH_COLUMNS)
        assert {name: got[COL[name]] for name in BATCH_COLUMNS} == want
        pos += len(raw)


# ---------------------------------------------------------------- walk == Construct


@KERNEL_SETTINGS
@given(entries=st.lists(st.one_of(v2_batches(), legacy_entries()), min_size=1, max_size=5),
       pad=st.binary(max_size=20))
def test_walk_rows_equal_what_the_declarations_parse(K, entries, pad):
    buf = pad + b"".join(entries)
    rows, pos, status = _walk_all(K, buf, len(pad), len(entries) + 1)
    assert_rows_match(rows, entries, len(pad))
    assert (pos, status) == (len(buf), kernels.ST_NEED_MORE)


@KERNEL_SETTINGS
@given(raw=v2_raw_headers())
def test_walk_reads_every_signed_v2_header_field_as_construct_does(K, raw):
    rows, pos, status = _walk_all(K, raw, 0, 2)
    assert_rows_match(rows, [raw], 0)
    assert (pos, status) == (len(raw), kernels.ST_NEED_MORE)


@KERNEL_SETTINGS
@given(entries=st.lists(st.one_of(v2_batches(), legacy_entries()), min_size=2, max_size=4),
       cap=st.integers(1, 2))
def test_walk_stops_when_the_table_is_full_and_resumes_where_it_stopped(K, entries, cap):
    buf = b"".join(entries)
    arr = np.frombuffer(buf, dtype=np.uint8)
    out = new_batch_rows(cap)
    got, pos = [], 0
    while True:
        k, pos, status = K.walk(arr, len(buf), pos, out, 0, cap)
        got += out[:k].tolist()
        if status != kernels.ST_FULL:
            break
    assert status == kernels.ST_NEED_MORE and pos == len(buf)
    assert_rows_match(np.array(got, dtype=np.int64), entries, 0)


def test_walk_status_for_each_framing_failure(K):
    ok = build_batch([RecordData(0, 1, b"k", b"v")])
    size = record_batch.HEADER["batch_length"]

    def with_size(raw, n):
        b = bytearray(raw)
        b[size.offset : size.offset + size.size] = n.to_bytes(size.size, "big", signed=True)
        return bytes(b)

    assert _walk_all(K, ok[: record_batch.ENTRY_PREFIX - 1], 0, 4)[1:] == (0, kernels.ST_NEED_MORE)
    assert _walk_all(K, ok[:-1], 0, 4)[1:] == (0, kernels.ST_NEED_MORE)
    assert _walk_all(K, with_size(ok, legacy.MIN_MESSAGE_SIZE[0] - 1), 0, 4)[1:] == (0, kernels.ST_SIZE_TOO_SMALL)
    assert _walk_all(K, with_size(ok, record_batch.MIN_BATCH_SIZE - 1), 0, 4)[1:] == (0, kernels.ST_TOO_SMALL_FOR_MAGIC)
    v1 = legacy.encode_message(offset=0, magic=1, key=None, value=None, timestamp=0)
    assert _walk_all(K, with_size(v1, legacy.MIN_MESSAGE_SIZE[1] - 1), 0, 4)[1:] == (0, kernels.ST_TOO_SMALL_FOR_MAGIC)
    bad = bytearray(ok)
    bad[record_batch.MAGIC_OFFSET] = 3
    assert _walk_all(K, ok + bytes(bad), 0, 4)[1:] == (len(ok), kernels.ST_BAD_MAGIC)


@KERNEL_SETTINGS
@given(magic=st.sampled_from([0, 1]), key=MAYBE_BYTES, value=MAYBE_BYTES, key_len=INT32, value_len=INT32,
       which=st.sampled_from(["key", "value", "both"]))
def test_walk_marks_a_legacy_message_malformed_exactly_when_construct_cannot_parse_it(K, magic, key, value, key_len,
                                                                                      value_len, which):
    raw = bytearray(legacy.encode_message(offset=3, magic=magic, key=key, value=value, timestamp=9))
    at_key = legacy.PREFIX.size + (8 if magic else 0)
    at_value = at_key + 4 + (len(key) if key is not None else 0)
    if which in ("value", "both"):
        raw[at_value : at_value + 4] = value_len.to_bytes(4, "big", signed=True)
    if which in ("key", "both"):
        raw[at_key : at_key + 4] = key_len.to_bytes(4, "big", signed=True)
    raw = bytes(raw)
    try:
        m = legacy.LegacyMessage.parse(raw)
    except ConstructError:
        m = None
    rows, _, _ = _walk_all(K, raw, 0, 2)
    row = rows[0]
    assert (row[COL["value_length"]] == -2) == (m is None)
    if m is not None:
        assert (row[COL["key_length"]], row[COL["value_length"]]) == (m.key_length, m.value_length)
        key_bytes = len(m.key) if m.key is not None else 0
        assert row[COL["value_position"]] == at_key + 4 + key_bytes + 4
        assert raw[row[COL["value_position"]] :][: max(m.value_length, 0)] == (m.value or b"")


def test_legacy_lengths_running_past_the_message_are_marked_minus_two(K):
    raw = bytearray(legacy.encode_message(offset=7, magic=1, key=b"abc", value=b"hello", timestamp=5))
    vl = len(raw) - 5 - 4  # the value length field
    raw[vl : vl + 4] = (50).to_bytes(4, "big")
    rows, _, _ = _walk_all(K, bytes(raw), 0, 2)
    assert rows[0, COL["value_length"]] == -2 and rows[0, COL["key_length"]] == 3
    raw = bytearray(legacy.encode_message(offset=7, magic=0, key=b"abc", value=b"hello"))
    kl = legacy.PREFIX.size
    raw[kl : kl + 4] = (1000).to_bytes(4, "big")  # the key swallows the value length field
    rows, _, _ = _walk_all(K, bytes(raw), 0, 2)
    assert rows[0, COL["key_length"]] == 1000 and rows[0, COL["value_length"]] == -2


# ---------------------------------------------------------------- decode_records == Construct


def construct_records(section: bytes, count: int):
    """Parse ``count`` records with the ``Record`` declaration: (rows like the kernel's, ok).

    ``Record`` is ``Prefixed(VarInt, RecordBody)``; like Kafka's
    ``DefaultRecord.readFrom`` (and the kernel), a body must use exactly the
    bytes its length prefix gives, which Construct's ``Prefixed`` alone does
    not check, so that is checked here.  ``ok`` means all ``count`` records
    parsed and the section ends right after them.
    """
    rows: list[list[int]] = []
    if count < 0:
        return rows, False
    length_field, body = record_batch.Record.lengthfield, record_batch.Record.subcon
    s = io.BytesIO(section)
    for _ in range(count):
        start = s.tell()
        try:
            length = length_field.parse_stream(s)
            if length < 0:
                return rows, False
            data_at = s.tell()
            data = s.read(length)
            if len(data) != length:
                return rows, False
            bs = io.BytesIO(data)
            fields: dict = {}
            where: dict = {}
            for sub in body.subcons:  # field by field, to know where each one lies
                where[sub.name] = bs.tell()
                fields[sub.name] = sub.parse_stream(bs)
                where[sub.name + "_end"] = bs.tell()
            if bs.tell() != length:
                return rows, False
            # headers_pos: just after the header count varint
            hs = io.BytesIO(data)
            hs.seek(where["headers"])
            headers_field = next(c for c in body.subcons if c.name == "headers")
            headers_field.subcon.countfield.parse_stream(hs)
        except ConstructError:
            return rows, False
        key, value = fields["key"], fields["value"]
        rows.append([
            start,
            data_at - start + length,
            fields["attributes"],
            fields["timestamp_delta"],
            fields["offset_delta"],
            data_at + where["key_end"] - (len(key) if key is not None else 0),
            len(key) if key is not None else -1,
            data_at + where["value_end"] - (len(value) if value is not None else 0),
            len(value) if value is not None else -1,
            data_at + hs.tell(),
            len(fields["headers"]),
        ])
    return rows, s.tell() == len(section)


def kernel_records(K, section: bytes, count: int, cap: int | None = None):
    buf = np.frombuffer(section, dtype=np.uint8)
    table = K.new_record_table(max(count, 1) if cap is None else cap)
    n, stop, status = K.decode_records(buf, 0, len(section), count, table)
    return table[:n].tolist(), stop, status


@st.composite
def record_sections(draw):
    base_offset = draw(st.integers(0, 2**40))
    base_ts = draw(st.integers(-1, 2**45))
    n = draw(st.integers(0, 5))
    recs = [RecordData(base_offset + draw(st.integers(0, 2**31 - 1)), base_ts + draw(st.integers(-(2**40), 2**40)),
                       draw(MAYBE_BYTES), draw(MAYBE_BYTES), draw(HEADERS)) for _ in range(n)]
    return b"".join(encode_record(r, base_offset, base_ts) for r in recs), n


def test_record_table_columns_follow_the_record_declaration(K):
    body = record_batch.Record.subcon
    expected = ["position", "size_in_bytes"]
    for sub in body.subcons:
        if sub.name in ("key", "value", "headers"):
            expected += [f"{sub.name}_pos", f"{sub.name}_count" if sub.name == "headers" else f"{sub.name}_len"]
        else:
            expected.append(sub.name)
    assert list(K.RECORD_COLUMNS) == expected
    assert K.RCOL == {c: i for i, c in enumerate(expected)}
    assert kernels.record_columns() == K.RECORD_COLUMNS


@KERNEL_SETTINGS
@given(sec=record_sections())
def test_decode_records_equals_construct_on_valid_sections(K, sec):
    section, n = sec
    want, ok = construct_records(section, n)
    got, stop, status = kernel_records(K, section, n)
    assert ok and len(want) == n
    assert (got, stop, status) == (want, len(section), kernels.RS_OK)


@st.composite
def mutated_sections(draw):
    section, n = draw(record_sections())
    data = bytearray(section)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "cut"]))
        at = draw(st.integers(0, len(data)))
        if kind == "flip" and at < len(data):
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "set" and at < len(data):
            data[at] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF]))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=6))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 6))]
        else:
            del data[at:]
    count = n + draw(st.sampled_from([0, 0, 0, -1, 1, -(n + 1)]))
    return bytes(data), count


@settings(max_examples=200, deadline=None)
@given(sec=mutated_sections())
def test_decode_records_fails_exactly_when_construct_fails_on_mutated_bytes(K, sec):
    section, count = sec
    want, ok = construct_records(section, count)
    got, stop, status = kernel_records(K, section, count)
    assert (status == kernels.RS_OK) == ok, (status, ok)
    assert status != kernels.RS_FULL
    # any negative key or value length means null (DefaultRecord.readFrom): the table keeps the length read, the
    # reader (log/records.py) and this oracle say -1
    for row in got:
        for name in ("key_len", "value_len"):
            row[K.RCOL[name]] = max(row[K.RCOL[name]], -1)
    # the records decoded before the failure are the ones Construct decodes before it fails
    assert got == want
    if ok:
        assert stop == len(section)


@KERNEL_SETTINGS
@given(sec=record_sections(), cap=st.integers(1, 3))
def test_decode_records_in_chunks_resumes_with_the_same_rows(K, sec, cap):
    section, n = sec
    buf = np.frombuffer(section, dtype=np.uint8)
    table = K.new_record_table(cap)
    got, p, done = [], 0, 0
    while True:
        k, p, status = K.decode_records(buf, p, len(section), n - done, table)
        got += table[:k].tolist()
        done += k
        if status != kernels.RS_FULL:
            break
    assert status == kernels.RS_OK and done == n
    assert got == construct_records(section, n)[0]


@KERNEL_SETTINGS
@given(secs=st.lists(mutated_sections(), min_size=1, max_size=4))
def test_decode_records_many_agrees_with_decode_records_per_batch(K, secs):
    buf = b"".join(s for s, _ in secs)
    starts, ends, counts = [], [], []
    p = 0
    for s, c in secs:
        starts.append(p)
        p += len(s)
        ends.append(p)
        counts.append(c)
    cap = max(1, sum(max(c, 0) for c in counts))
    out = K.new_record_table(cap)
    bout = np.empty(cap, dtype=np.int64)
    status = np.full(len(secs), -1, dtype=np.int64)
    done, rows = K.decode_records_many(np.frombuffer(buf, dtype=np.uint8), np.array(starts, dtype=np.int64),
                                       np.array(ends, dtype=np.int64), np.array(counts, dtype=np.int64),
                                       out, bout, status)
    assert done == len(secs)
    k = 0
    for b, ((s, c), start) in enumerate(zip(secs, starts)):
        single, _, st_single = kernel_records(K, s, c)
        assert status[b] == st_single
        mine = out[k : k + len(single)].tolist()
        for r in mine:  # many: positions are in the shared buffer
            for col in ("position", "key_pos", "value_pos", "headers_pos"):
                r[K.RCOL[col]] -= start
        assert mine == single and list(bout[k : k + len(single)]) == [b] * len(single)
        k += len(single)
    assert rows == k


def test_record_with_a_length_prefix_longer_than_its_fields_is_a_length_mismatch(K):
    good = encode_record(RecordData(0, 0, b"k", b"v"), 0, 0)
    body = good[1:] + b"\x00"  # one byte more than the fields use
    section = record_batch.Record.lengthfield.build(len(body)) + body
    assert kernel_records(K, section, 1)[2] == kernels.RS_LENGTH_MISMATCH
    assert construct_records(section, 1)[1] is False
    # Construct's Prefixed alone accepts it: the kernel (like Kafka) is stricter than the bare declaration
    assert record_batch.Record.parse(section).key == b"k"


@pytest.mark.parametrize("count,section,status", [
    (-1, b"", kernels.RS_NEGATIVE_COUNT),
    (1, b"", kernels.RS_TOO_FEW),
    (0, b"\x00", kernels.RS_TRAILING_BYTES),
    (1, b"\x80\x80\x80\x80\x80\x00", kernels.RS_BAD_VARINT),  # a 6-byte varint length
    (1, b"\x01", kernels.RS_NEGATIVE_LENGTH),  # zig-zag 1 = length -1
    (1, b"\x14\x00", kernels.RS_TRUNCATED),  # length 10, 1 byte left
])
def test_decode_records_status_per_failure(K, count, section, status):
    assert kernel_records(K, section, count)[2] == status


# ---------------------------------------------------------------- derived constants


def test_sizes_derive_from_the_declarations():
    # Kafka's LegacyRecord: RECORD_OVERHEAD_V0 = 14, RECORD_OVERHEAD_V1 = 22
    assert legacy.MIN_MESSAGE_SIZE == {0: 14, 1: 22}
    assert record_batch.ENTRY_PREFIX == 17 == HEADER.offset("magic") + HEADER["magic"].size
    assert record_batch.MIN_BATCH_SIZE == 49 == HEADER.size - HEADER.offset("partition_leader_epoch")
    assert record_batch.MIN_RECORD_SIZE == 7
    assert record_batch.LOG_OVERHEAD == legacy.LOG_OVERHEAD == 12
    assert (record_batch.CRC_START, legacy.CRC_START) == (21, 16)


def test_legacy_body_names_the_fields_in_declaration_order():
    def shape(magic):
        return [(kind, name, spec if kind == "bytes" else spec.length) for kind, name, spec in kernels.legacy_body(magic)]

    assert shape(0) == [("int", "key_length", 4), ("bytes", "key", "key_length"),
                        ("int", "value_length", 4), ("bytes", "value", "value_length")]
    assert shape(1) == [("int", "timestamp", 8)] + shape(0)
    declared = [s.name for s in legacy.LegacyMessage.subcons[len(legacy.LegacyPrefix.subcons):]]
    assert [n for _, n, _ in kernels.legacy_body(1)] == declared


# ---------------------------------------------------------------- no numbers the declarations do not give


def _function_source(name: str) -> str:
    src, _ = kernels.source()
    start = src.index(f"def {name}(")
    end = src.find("\ndef ", start + 1)
    return src[start : end if end > 0 else len(src)]


def _number_literals(src: str) -> list[int]:
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.NUMBER:
            out.append(int(tok.string, 0))
    return out


def _rd(size: int, signed: bool, at: str) -> str:
    return f"_rd{size}{'s' if signed else 'u'}(buf, {at})"


def test_walk_reads_every_field_at_its_declared_offset():
    walk = _function_source("walk")
    for f in HEADER.fields:
        assert f"{f.name} = {_rd(f.size, f.signed, f'pos + {f.offset}')}" in walk
    for f in legacy.PREFIX.fields:
        assert f"{f.name} = {_rd(f.size, f.signed, f'pos + {f.offset}')}" in walk
    # the framing: size and magic before the format is known, then each magic's minimum
    size_f, magic_f = HEADER["batch_length"], HEADER["magic"]
    assert f"size = {_rd(size_f.size, True, f'pos + {size_f.offset}')}" in walk
    assert f"magic = {_rd(magic_f.size, True, f'pos + {magic_f.offset}')}" in walk
    assert f"pos + {HEADER.offset('magic')}" in walk
    assert f"n - pos < {record_batch.ENTRY_PREFIX}" in walk
    assert f"end = pos + {record_batch.LOG_OVERHEAD} + size" in walk
    assert f"size < {record_batch.MIN_BATCH_SIZE}" in walk
    for m, least in legacy.MIN_MESSAGE_SIZE.items():
        assert f"elif magic == {m}:\n            if size < {least}:" in walk
    assert f"base + pos + {record_batch.CRC_START}" in walk or not kernels.HAVE_CRC32C
    assert f"base + pos + {legacy.CRC_START}" in walk or not kernels.HAVE_CRC32
    assert f"q = pos + {legacy.PREFIX.size}" in walk
    # every batch-table column is written to its own index
    for name in BATCH_COLUMNS:
        assert f"row[{COL[name]}] = " in walk


def test_walk_source_has_no_number_the_declarations_do_not_give():
    walk = _function_source("walk")
    walk = re.sub(r"row\[\d+\]", "row[C]", walk)  # column indices are checked above
    allowed = {0, 1, 2, 0xFFFFFFFF}  # 0/1/2: magics, sentinels -1 and -2, loop steps; the CRC-32C inversion
    for layout in (HEADER, legacy.PREFIX):
        allowed |= {f.offset for f in layout.fields} | {f.size for f in layout.fields} | {layout.size}
    allowed |= {spec.length for kind, _, spec in kernels.legacy_body(1) if kind == "int"}
    allowed |= set(legacy.MIN_MESSAGE_SIZE.values()) | set(legacy.MIN_MESSAGE_SIZE)
    allowed |= {record_batch.MIN_BATCH_SIZE, record_batch.ENTRY_PREFIX, record_batch.LOG_OVERHEAD,
                record_batch.CRC_START, legacy.CRC_START, record_batch.MAGIC, record_batch.COMPRESSION_MASK}
    allowed |= {kernels.ST_NEED_MORE, kernels.ST_SIZE_TOO_SMALL, kernels.ST_BAD_MAGIC,
                kernels.ST_TOO_SMALL_FOR_MAGIC, kernels.ST_FULL}
    stray = sorted(set(_number_literals(walk)) - allowed)
    assert stray == []


def test_generated_walk_follows_a_changed_declaration(monkeypatch):
    # the generator reads the declared minimums when it runs: change them and the source changes with them
    monkeypatch.setattr(record_batch, "MIN_BATCH_SIZE", 4321)
    monkeypatch.setattr(legacy, "MIN_MESSAGE_SIZE", {0: 1234, 1: 2345})
    walk = codegen.gen_walk()
    assert "size < 4321" in walk and "size < 1234" in walk and "size < 2345" in walk
    assert f"size < {49}" not in walk and "size < 22" not in walk


def test_records_kernel_reads_varints_with_the_declared_limits():
    src = _function_source("records")
    lf = record_batch.Record.lengthfield
    assert f"length, p, ok = _varint(buf, p, end, {lf.max_bytes}, {lf.zigzag})" in src
    for sub in record_batch.Record.subcon.subcons:
        c = sub.subcon
        if hasattr(c, "max_bytes"):  # timestamp_delta (varlong), offset_delta (varint)
            assert f"{sub.name}, p, ok = _varint(buf, p, rend, {c.max_bytes}, {c.zigzag})" in src
    assert "_varint(buf, p, rend, 10, True)" in src and "_varint(buf, p, rend, 5, True)" in src


def test_last_offset_wraps_as_javas_long_addition(K):
    raw = encode_batch(b"", base_offset=2**63 - 1, last_offset_delta=1, records_count=0, base_timestamp=-1,
                       max_timestamp=-1)
    rows, _, _ = _walk_all(K, raw, 0, 1)
    assert rows[0, COL["last_offset"]] == -(2**63)  # DefaultRecordBatch.lastOffset() overflows the same way
