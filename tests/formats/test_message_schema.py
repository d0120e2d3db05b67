"""The shared declaration machinery: both encodings, versioned and tagged fields, bounded arrays, Kafka's JSON view."""

from __future__ import annotations

import base64
import struct

import pytest
from construct import Adapter, Flag, FormatField
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kforensics.formats import metadata_records, message_schema
from kforensics.formats.message_schema import (
    INT8,
    INT32,
    INT64,
    NULLABLE_BYTES,
    NULLABLE_STRING,
    STRING,
    UNKNOWN_TAGS,
    UUID,
    Base64Bytes,
    Flexible,
    NonFlexible,
    NotNull,
    NullableStruct,
    RecordType,
    array,
    kafka_json,
    nullable_array,
    nullable_struct,
    only,
    parse_exact,
    since,
    struct as struct_of,
    tagged,
)
from kforensics.formats.protocol import (
    ClassicArray,
    ClassicBytes,
    ClassicString,
    CompactArray,
    CompactBytes,
    CompactString,
    Uuid,
)


# --------------------------------------------------------------------------- hypothesis values for any layout
def strategy_for(con, depth: int = 0, nullable: bool = True, unknown_tags: bool = True):
    """A strategy for the values a compiled layout decodes to (shared by the decoder tests)."""
    def maybe_null(s):
        return st.none() | s if nullable else s

    if isinstance(con, Flexible):
        required = {f.name: strategy_for(f.subcon, depth + 1, unknown_tags=unknown_tags) for f in con.fields}
        optional = {f.name: strategy_for(f.subcon, depth + 1, unknown_tags=unknown_tags) for f in con.tagged.values()}
        if unknown_tags:
            free = [t for t in range(8) if t not in con.tagged]
            optional[UNKNOWN_TAGS] = st.dictionaries(st.sampled_from(free), st.binary(max_size=5).map(bytes.hex),
                                                     min_size=1, max_size=2)
        return st.fixed_dictionaries(required, optional=optional)
    if isinstance(con, NonFlexible):
        return st.fixed_dictionaries({f.name: strategy_for(f.subcon, depth + 1, unknown_tags=unknown_tags)
                                      for f in con.fields})
    if isinstance(con, NullableStruct):
        return st.none() | strategy_for(con.subcon, depth, unknown_tags=unknown_tags)
    if isinstance(con, NotNull):
        return strategy_for(con.subcon, depth, nullable=False, unknown_tags=unknown_tags)
    if isinstance(con, Base64Bytes):
        s = st.binary(max_size=10).map(lambda b: base64.b64encode(b).decode())
        return st.none() | s if con.nullable else s
    if isinstance(con, Uuid):
        return st.binary(min_size=16, max_size=16).map(lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode())
    if isinstance(con, (CompactString, ClassicString)):
        return maybe_null(st.text(max_size=8))
    if isinstance(con, (CompactBytes, ClassicBytes)):
        return maybe_null(st.binary(max_size=8))
    if isinstance(con, (CompactArray, ClassicArray)):
        return maybe_null(st.lists(strategy_for(con.subcon, depth + 1, unknown_tags=unknown_tags),
                                   max_size=2 if depth else 3))
    if con is Flag:
        return st.booleans()
    if isinstance(con, FormatField):
        if con.fmtstr == ">d":
            return st.floats(allow_nan=False)
        bits = 8 * con.length
        if con.fmtstr[-1].isupper():
            return st.integers(0, 2**bits - 1)
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if hasattr(con, "subcon"):  # Renamed and other wrappers
        return strategy_for(con.subcon, depth, nullable, unknown_tags)
    raise AssertionError(f"no strategy for {con!r}")


# --------------------------------------------------------------------------- a test schema in both encodings
SAMPLE = RecordType(
    7, "SampleRecord", 3, (
        "id" / INT32,
        "name" / STRING,
        since(1, "note" / NULLABLE_STRING),
        only(1, 1, "legacy" / INT64),
        "items" / array(struct_of("k" / STRING, "v" / INT8, tagged(0, "extra" / INT32, default=-1))),
        since(2, "blob" / NULLABLE_BYTES),
        since(3, tagged(0, "topicId" / UUID)),
        "opt" / nullable_array(INT32),
        since(3, "child" / nullable_struct("a" / INT32))),
    flexible_from=3)


def test_non_flexible_versions_use_int16_strings_int32_arrays_and_no_tagged_section():
    data = {"id": 1, "name": "ab", "note": None, "legacy": 9, "items": [{"k": "x", "v": 2}], "opt": None}
    raw = SAMPLE.layout(1).build(data)
    assert raw == (struct.pack(">i", 1) + b"\x00\x02ab" + b"\xff\xff" + struct.pack(">q", 9)
                   + struct.pack(">i", 1) + b"\x00\x01x\x02" + b"\xff\xff\xff\xff")
    assert parse_exact(SAMPLE.layout(1), raw) == (data, len(raw), None)


def test_flexible_versions_use_compact_forms_tagged_sections_and_schema_order():
    data = {"id": 1, "name": "ab", "note": "n", "items": [{"k": "x", "v": 2, "extra": 5}], "blob": "AQI=",
            "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "opt": [3], "child": {"a": 4}}
    raw = SAMPLE.layout(3).build(data)
    uuid = bytes(15) + b"\x01"
    assert raw == (struct.pack(">i", 1) + b"\x03ab" + b"\x02n" + b"\x02" + b"\x02x\x02"
                   + b"\x01\x00\x04\x00\x00\x00\x05"
                   + b"\x03\x01\x02" + b"\x02" + struct.pack(">i", 3) + b"\x01" + struct.pack(">i", 4) + b"\x00"
                   + b"\x01\x00\x10" + uuid)
    decoded, end, err = parse_exact(SAMPLE.layout(3), raw)
    assert err is None and end == len(raw)
    # tagged fields are placed where the schema declares them, as Kafka's JSON form prints them
    assert list(decoded) == ["id", "name", "note", "items", "blob", "topicId", "opt", "child"]
    assert list(decoded["items"][0]) == ["k", "v", "extra"]
    assert decoded == data


def test_versions_select_fields():
    assert [f.name for f in SAMPLE.layout(0).fields] == ["id", "name", "items", "opt"]
    assert [f.name for f in SAMPLE.layout(2).fields] == ["id", "name", "note", "items", "blob", "opt"]
    assert isinstance(SAMPLE.layout(2), NonFlexible) and isinstance(SAMPLE.layout(3), Flexible)
    assert list(SAMPLE.layout(3).tagged) == [0]
    with pytest.raises(KeyError):
        SAMPLE.layout(4)


@pytest.mark.parametrize("version", list(SAMPLE.versions))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_sample_round_trips_in_every_version(version, data):
    layout = SAMPLE.layout(version)
    x = data.draw(strategy_for(layout))
    raw = layout.build(x)
    decoded, end, err = parse_exact(layout, raw)
    assert err is None and end == len(raw)
    assert decoded == x
    assert layout.build(decoded) == raw


def test_null_in_a_non_nullable_field_and_odd_lengths_are_errors():
    assert "non-nullable" in parse_exact(SAMPLE.layout(0), struct.pack(">i", 1) + b"\xff\xff")[2]
    # Kafka writes only -1 for null; another negative length cannot be re-encoded: damage
    assert "negative string length" in parse_exact(ClassicString(), b"\xff\xfe")[2]
    assert parse_exact(ClassicBytes(), b"\xff\xff\xff\xff") == (None, 4, None)


@pytest.mark.parametrize("con, raw", [
    (ClassicArray(INT32), b"\x7f\xff\xff\xff" + bytes(10)),
    (CompactArray(INT32), b"\xff\xff\xff\xff\x07" + bytes(10)),
])
def test_an_array_count_beyond_the_remaining_bytes_is_refused_at_once(con, raw):
    value, end, err = parse_exact(con, raw)
    assert value is None and "remaining bytes" in err
    assert end in (4, 5)  # just after the count: no element was read


def test_unknown_tags_are_kept_and_kafka_json_drops_them_and_defaults():
    layout = SAMPLE.layout(3)
    data = {"id": 1, "name": "", "note": None, "items": [{"k": "", "v": 0, "extra": -1}], "blob": None, "opt": None,
            "child": None, UNKNOWN_TAGS: {5: "0102"}}
    raw = layout.build(data)
    decoded = parse_exact(layout, raw)[0]
    assert decoded[UNKNOWN_TAGS] == {5: "0102"}
    assert kafka_json(layout, decoded) == {"id": 1, "name": "", "note": None, "items": [{"k": "", "v": 0}],
                                           "blob": None, "opt": None, "child": None}


def test_building_refuses_unknown_and_missing_fields():
    with pytest.raises(Exception, match="no such field"):
        SAMPLE.layout(0).build({"id": 1, "name": "", "items": [], "opt": None, "nope": 1})
    with pytest.raises(Exception, match="missing field"):
        SAMPLE.layout(0).build({"id": 1})


def test_metadata_records_use_the_shared_machinery():
    assert metadata_records.Flexible is message_schema.Flexible
    assert metadata_records.RecordType is message_schema.RecordType
    assert metadata_records.UNKNOWN_TAGS == UNKNOWN_TAGS
    rt = metadata_records.RECORD_TYPES_BY_NAME["PartitionRecord"]
    assert isinstance(rt.layout(2), Flexible) and sorted(rt.layout(2).tagged) == [0, 1, 2]
    assert sorted(rt.layout(0).tagged) == [0]
    assert isinstance(Base64Bytes(), Adapter) and not Base64Bytes().nullable
