"""KRaft metadata records: real brokers' logs and snapshots decode completely, hand-built vectors, round trips,
and hostile bytes that may only ever raise DecodeError."""

from __future__ import annotations

import base64
import json
import random
import struct
from collections import Counter
from pathlib import Path

import pytest
from construct import Adapter, Flag, FormatField
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kforensics.findings import DecodeError
from kforensics.formats.metadata_records import (
    RECORD_TYPES,
    UNKNOWN_TAGS,
    Base64Bytes,
    Flexible,
    NotNull,
    decode_metadata_record,
    encode_metadata_record,
)
from kforensics.formats.protocol import CompactArray, CompactBytes, CompactString, Uuid
from kforensics.log.segment_reader import SegmentReader
from tests.conftest import REALDATA, SHARED, entry_records

#: the KRaft brokers in ../shared/realdata (roots holding their metadata logs, snapshots and bootstrap files)
KRAFT_ROOTS = [
    "hiage__kafka-raft__c5f680e/data/kafka1",
    "hiage__kafka-raft__c5f680e/data/kafka2",
    "hiage__kafka-raft__c5f680e/data/kafka3",
    "Danielowo2000__BigDataTechnologies-Version-2__63c2bf1/kafka_data",
    "Danielowo2000__BigDataTechnologies-Version-2__63c2bf1/kafka_2.13-3.5.0/kraft-combined-logs",
    "Niloufar1171__LDI-POC__8030792",
    "ronem123__rupia-transaction-service__5d88e97/kafka-logs",
]


def need_realdata() -> Path:
    if not REALDATA.exists():
        pytest.skip(f"{REALDATA} is absent: the real broker data in ../shared is not beside this checkout")
    return REALDATA


def metadata_files(root: Path) -> list[Path]:
    """Metadata log segments, snapshots and bootstrap files below one broker root."""
    files = sorted(root.glob("__cluster_metadata-0/*.log")) + sorted(root.glob("__cluster_metadata-0/*.checkpoint"))
    return files + sorted(root.glob("bootstrap.checkpoint"))


@pytest.fixture(scope="module")
def real_values() -> list[tuple[str, int, bytes]]:
    """(file, offset, value) of every metadata data record of every real KRaft broker."""
    base = need_realdata()
    out = []
    for root in KRAFT_ROOTS:
        for f in metadata_files(base / root):
            for b in SegmentReader(f).batches():
                records, error = entry_records(b, with_data=True)
                assert error is None, (f, b.position, error)
                for r in records:
                    if r.control is None:
                        out.append((str(f), r.offset, bytes(r.value)))
    return out


# --------------------------------------------------------------------------- real data
def test_real_metadata_decodes_completely_with_no_unknown_records(real_values):
    types: Counter = Counter()
    per_file: Counter = Counter()
    for f, offset, value in real_values:
        d = decode_metadata_record(value)  # raises on unknown apiKeys or versions, bad frames, leftover bytes
        assert UNKNOWN_TAGS not in json.dumps(d), (f, offset, d)  # no tagged field unknown either
        json.dumps(d)  # JSON-ready, as kafka-dump-log prints it
        types[(d["type"], d["version"])] += 1
        per_file[Path(f).name.endswith(".checkpoint")] += 1
    assert sum(types.values()) == len(real_values) > 79_000
    assert per_file[True] > 3_000  # snapshots (ronem123's 125 of them) and bootstrap files were read too
    names = {t for t, _ in types}
    assert {"RegisterBrokerRecord", "TopicRecord", "PartitionRecord", "ConfigRecord", "PartitionChangeRecord",
            "FeatureLevelRecord", "ProducerIdsRecord", "BrokerRegistrationChangeRecord", "NoOpRecord",
            "ZkMigrationStateRecord", "BeginTransactionRecord", "EndTransactionRecord",
            "RegisterControllerRecord"} <= names
    # every version of the versioned types occurs in the real data
    assert {v for t, v in types if t == "PartitionRecord"} == {0, 1, 2}
    assert {v for t, v in types if t == "PartitionChangeRecord"} == {0, 1, 2}
    assert {v for t, v in types if t == "RegisterBrokerRecord"} == {1, 2, 3}


def test_real_records_re_encode_byte_for_byte(real_values):
    seen_noop = False
    for f, offset, value in real_values:
        d = decode_metadata_record(value)
        if d["type"] == "NoOpRecord":
            if seen_noop:
                continue
            seen_noop = True
        assert encode_metadata_record(d["type"], d["version"], d["data"]) == value, (f, offset, d)


def test_real_partition_change_record_fields(real_values):
    """A v2 PartitionChangeRecord from a real broker shows its tagged fields by name."""
    changes = [decode_metadata_record(v) for _f, _o, v in real_values if v[:3] == b"\x01\x05\x02"]
    assert changes
    with_elr = [c for c in changes if "eligibleLeaderReplicas" in c["data"]]
    assert with_elr and all(set(c["data"]) <= {"partitionId", "topicId", "isr", "leader", "replicas",
                                               "removingReplicas", "addingReplicas", "leaderRecoveryState",
                                               "eligibleLeaderReplicas", "lastKnownElr", "directories"}
                            for c in changes)


@pytest.mark.parametrize("seed", range(4))
def test_mutated_real_records_raise_only_format_errors(real_values, seed):
    rnd = random.Random(seed)
    interesting = [v for _f, _o, v in real_values if v[1] != 20] + [v for _f, _o, v in real_values[:50]]
    for value in rnd.sample(interesting, min(1500, len(interesting))):
        v = bytearray(value)
        op = rnd.randrange(4)
        if op == 0:
            for _ in range(rnd.randint(1, 3)):
                v[rnd.randrange(len(v))] = rnd.randrange(256)
        elif op == 1:
            del v[rnd.randrange(len(v)):]
        elif op == 2:
            v += bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 8)))
        else:
            i = rnd.randrange(len(v))
            v[i:i] = bytes([rnd.randrange(256)])
        try:
            d = decode_metadata_record(bytes(v))
        except DecodeError as e:
            assert e.code in ("BAD_METADATA_FRAME", "UNKNOWN_METADATA_RECORD", "METADATA_RECORD_DECODE_ERROR")
        else:
            json.dumps(d)


# --------------------------------------------------------------------------- hand-built vectors
TID = "AAAAAAAAAAAAAAAAAAAABw"
TID_RAW = base64.urlsafe_b64decode(TID + "==")


def u32(x: int) -> bytes:
    return struct.pack(">i", x)


def test_partition_change_record_vector():
    """Bytes assembled by hand from reference §6.1/§6.2: tags 0 (Isr) and 1 (Leader)."""
    isr = bytes([3]) + u32(1) + u32(2)  # compact array of two int32
    body = u32(7) + TID_RAW + bytes([2, 0, len(isr)]) + isr + bytes([1, 4]) + u32(2)
    d = decode_metadata_record(b"\x01\x05\x00" + body)
    assert d == {"type": "PartitionChangeRecord", "apiKey": 5, "version": 0,
                 "data": {"partitionId": 7, "topicId": TID, "isr": [1, 2], "leader": 2}}
    assert encode_metadata_record("PartitionChangeRecord", 0, d["data"]) == b"\x01\x05\x00" + body


def test_partition_record_v2_vector():
    arr = bytes([2]) + u32(3)  # [3]
    body = (u32(0) + TID_RAW + arr + arr + b"\x01" + b"\x01" + u32(3) + u32(5) + u32(9)
            + bytes([2]) + TID_RAW  # directories v1+
            + bytes([3, 0, 1, 1, 1, 5]) + arr + bytes([2, 1, 0]))  # tags: 0 LRS=1, 1 ELR=[3], 2 lastKnownElr=null
    d = decode_metadata_record(b"\x01\x03\x02" + body)["data"]
    assert d == {"partitionId": 0, "topicId": TID, "replicas": [3], "isr": [3], "removingReplicas": [],
                 "addingReplicas": [], "leader": 3, "leaderEpoch": 5, "partitionEpoch": 9, "directories": [TID],
                 "leaderRecoveryState": 1, "eligibleLeaderReplicas": [3], "lastKnownElr": None}
    assert encode_metadata_record("PartitionRecord", 2, d) == b"\x01\x03\x02" + body


def test_tags_known_only_from_their_version_are_kept_raw_before_it():
    # tag 8 (Directories) exists from PartitionChangeRecord v1 on; in v0 it is an unknown tag
    dirs = bytes([2]) + TID_RAW
    body = u32(0) + TID_RAW + bytes([1, 8, len(dirs)]) + dirs
    v0 = decode_metadata_record(b"\x01\x05\x00" + body)["data"]
    assert v0 == {"partitionId": 0, "topicId": TID, UNKNOWN_TAGS: {8: dirs.hex()}}
    assert encode_metadata_record("PartitionChangeRecord", 0, v0) == b"\x01\x05\x00" + body
    v1 = decode_metadata_record(b"\x01\x05\x01" + body)["data"]
    assert v1 == {"partitionId": 0, "topicId": TID, "directories": [TID]}
    # unknown tags survive a trip through JSON (string keys)
    again = json.loads(json.dumps(v0))
    assert encode_metadata_record("PartitionChangeRecord", 0, again) == b"\x01\x05\x00" + body


def test_nested_struct_tags_and_nullability():
    ep = {"name": "PLAINTEXT", "host": "h", "port": 65535, "securityProtocol": 0}
    data = {"controllerId": 1, "incarnationId": TID, "zkMigrationReady": False,
            "endPoints": [{**ep, UNKNOWN_TAGS: {3: "ff"}}], "features": []}
    v = encode_metadata_record("RegisterControllerRecord", 0, data)
    assert decode_metadata_record(v)["data"] == data
    # null where the schema forbids it (Rack may be null, Host may not)
    assert decode_metadata_record(encode_metadata_record("RegisterBrokerRecord", 0, {
        "brokerId": 1, "incarnationId": TID, "brokerEpoch": 2, "endPoints": [ep], "features": [], "rack": None,
        "fenced": True}))["data"]["rack"] is None
    bad = v.replace(b"\x02h", b"\x00")  # the host string made null
    with pytest.raises(DecodeError) as e:
        decode_metadata_record(bad)
    assert e.value.code == "METADATA_RECORD_DECODE_ERROR" and "non-nullable" in e.value.message


@pytest.mark.parametrize("value, code", [
    (b"", "BAD_METADATA_FRAME"),
    (None, "BAD_METADATA_FRAME"),
    (b"\x00\x02\x00" + bytes(10), "BAD_METADATA_FRAME"),  # frame 0 was the 2.8 preview
    (b"\x01\xff\xff\xff\xff\xff", "BAD_METADATA_FRAME"),  # a varint longer than 5 bytes
    (b"\x01\x06\x00\x00", "UNKNOWN_METADATA_RECORD"),  # 6: the retired AccessControlRecord
    (b"\x01\x0d\x00\x00", "UNKNOWN_METADATA_RECORD"),  # 13 never existed
    (b"\x01\x1e\x00\x00", "UNKNOWN_METADATA_RECORD"),  # 30: not declared
    (b"\x01\x03\x03" + bytes(40), "UNKNOWN_METADATA_RECORD"),  # PartitionRecord v3
    (b"\x01\x14\x00\x00\x00", "METADATA_RECORD_DECODE_ERROR"),  # NoOpRecord with a trailing byte
    (b"\x01\x14\x00", "METADATA_RECORD_DECODE_ERROR"),  # NoOpRecord without its tag section
    (b"\x01\x02\x00\x05ab", "METADATA_RECORD_DECODE_ERROR"),  # truncated TopicRecord
    (b"\x01\x05\x00" + bytes(20) + b"\x02\x01\x04" + u32(1) + b"\x00\x01\x00", "METADATA_RECORD_DECODE_ERROR"),
    (b"\x01\x05\x00" + bytes(20) + b"\x01\x01\x05" + u32(1) + b"\x00", "METADATA_RECORD_DECODE_ERROR"),
])
def test_bad_values_raise_format_errors_with_their_codes(value, code):
    with pytest.raises(DecodeError) as e:
        decode_metadata_record(value)
    assert e.value.code == code, e.value.message


def test_api_key_29_has_two_candidate_schemas():
    cluster = encode_metadata_record("ClusterIdRecord", 0, {"clusterId": "0wHLXdrKStejkyBzi8qBEw"})
    assert decode_metadata_record(cluster) == {"type": "ClusterIdRecord", "apiKey": 29, "version": 0,
                                               "data": {"clusterId": "0wHLXdrKStejkyBzi8qBEw"}}
    ctrl = encode_metadata_record("UnregisterControllerRecord", 0, {"controllerId": 3})
    assert ctrl == b"\x01\x1d\x00" + u32(3) + b"\x00"
    assert decode_metadata_record(ctrl)["type"] == "UnregisterControllerRecord"
    # a three-character cluster id is also a valid int32 controller id: reported, not guessed
    with pytest.raises(DecodeError) as e:
        decode_metadata_record(encode_metadata_record("ClusterIdRecord", 0, {"clusterId": "abc"}))
    assert e.value.code == "UNKNOWN_METADATA_RECORD" and e.value.finding.facts["candidates"]
    with pytest.raises(DecodeError) as e:
        decode_metadata_record(b"\x01\x1d\x00\x00")
    assert e.value.code == "METADATA_RECORD_DECODE_ERROR"


def test_encode_refuses_bad_data_as_caller_errors():
    with pytest.raises(ValueError, match="no metadata record NoSuchRecord"):
        encode_metadata_record("NoSuchRecord", 0, {})
    with pytest.raises(ValueError, match="no metadata record TopicRecord v1"):
        encode_metadata_record("TopicRecord", 1, {"name": "t", "topicId": TID})
    for data in ({"name": "t"}, {"name": "t", "topicId": TID, "extra": 1}, {"name": "t", "topicId": "not-a-uuid"},
                 {"name": None, "topicId": TID}, {"name": 5, "topicId": TID}):
        with pytest.raises(ValueError, match="TopicRecord v0") as e:
            encode_metadata_record("TopicRecord", 0, data)
        assert not isinstance(e.value, DecodeError)
    with pytest.raises(ValueError):
        encode_metadata_record("PartitionRecord", 0, {"partitionId": 0, "topicId": TID, "replicas": [], "isr": [],
                                                      "removingReplicas": [], "addingReplicas": [], "leader": 0,
                                                      "leaderEpoch": 0, "partitionEpoch": 0, "directories": []})


def test_schema_file_names_are_accepted_for_encoding():
    pascal = encode_metadata_record("FeatureLevelRecord", 0, {"Name": "metadata.version", "FeatureLevel": 7})
    camel = encode_metadata_record("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 7})
    assert pascal == camel == b"\x01\x0c\x00" + b"\x11metadata.version" + b"\x00\x07\x00"


# --------------------------------------------------------------------------- round trips
def _strategy(con, depth=0, nullable=True):
    """A hypothesis strategy for the values a Construct declaration of this module decodes to."""
    def maybe_null(strategy):
        return st.none() | strategy if nullable else strategy

    if isinstance(con, Flexible):
        required = {f.name: _strategy(f.subcon, depth + 1) for f in con.fields}
        optional = {f.name: _strategy(f.subcon, depth + 1) for f in con.tagged.values()}
        free = [t for t in range(12) if t not in con.tagged]
        optional[UNKNOWN_TAGS] = st.dictionaries(st.sampled_from(free), st.binary(max_size=6).map(bytes.hex),
                                                 min_size=1, max_size=2)
        return st.fixed_dictionaries(required, optional=optional)
    if isinstance(con, NotNull):
        return _strategy(con.subcon, depth, nullable=False)
    if isinstance(con, Base64Bytes):
        return st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())
    if isinstance(con, Uuid):
        return st.binary(min_size=16, max_size=16).map(lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode())
    if isinstance(con, CompactString):
        return maybe_null(st.text(max_size=10))
    if isinstance(con, CompactBytes):
        return maybe_null(st.binary(max_size=10))
    if isinstance(con, CompactArray):
        return maybe_null(st.lists(_strategy(con.subcon, depth + 1), max_size=2 if depth else 4))
    if con is Flag:
        return st.booleans()
    if isinstance(con, FormatField):
        if con.fmtstr == ">d":
            return st.floats(allow_nan=False)
        bits = 8 * con.length
        if con.fmtstr[-1].isupper():
            return st.integers(0, 2**bits - 1)
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if isinstance(con, Adapter):
        return _strategy(con.subcon, depth, nullable)
    raise AssertionError(f"no strategy for {con!r}")


LAYOUTS = [(t.name, v) for t in RECORD_TYPES for v in range(t.max_version + 1)]


@pytest.mark.parametrize("name, version", LAYOUTS, ids=[f"{n}-v{v}" for n, v in LAYOUTS])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_record_type_round_trips(name, version, data):
    rt = next(t for t in RECORD_TYPES if t.name == name)
    x = data.draw(_strategy(rt.layout(version)))
    value = encode_metadata_record(name, version, x)
    try:
        d = decode_metadata_record(value)
    except DecodeError as e:
        # apiKey 29's two schemas may both fit a value (a 3-byte cluster id is also an int32): never guessed
        assert rt.api_key == 29 and e.code in ("UNKNOWN_METADATA_RECORD", "METADATA_RECORD_DECODE_ERROR")
        return
    assert d == {"type": name, "apiKey": rt.api_key, "version": version, "data": x}
    assert encode_metadata_record(name, version, d["data"]) == value


def test_all_declared_types_are_the_reference_list():
    keys = sorted({t.api_key for t in RECORD_TYPES})
    assert keys == [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 14, 15, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29]
    versions = {t.name: t.max_version for t in RECORD_TYPES}
    # Kafka 4.4.0's kafka-metadata jar: RegisterBrokerRecord 0-4 and BrokerRegistrationChangeRecord 0-3 (cordoned
    # log dirs, tagged)
    assert versions["RegisterBrokerRecord"] == 4 and versions["PartitionRecord"] == 2
    assert versions["PartitionChangeRecord"] == 2 and versions["BrokerRegistrationChangeRecord"] == 3


@settings(max_examples=400, deadline=None)
@given(st.sampled_from([b"", b"\x01", b"\x01\x03\x02", b"\x01\x05\x02", b"\x01\x00\x03", b"\x01\x0e\x00",
                        b"\x01\x0b\x00", b"\x01\x1d\x00", b"\x01\x11\x02"]), st.binary(max_size=80))
def test_arbitrary_bytes_raise_only_format_errors(prefix, tail):
    try:
        json.dumps(decode_metadata_record(prefix + tail))
    except DecodeError as e:
        assert e.code in ("BAD_METADATA_FRAME", "UNKNOWN_METADATA_RECORD", "METADATA_RECORD_DECODE_ERROR")


def test_kafka_4_4_broker_records_with_cordoned_log_dirs_decode():
    # RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3 (Kafka 4.4.0) add CordonedLogDirs as a tagged,
    # nullable uuid array (tag 1 and tag 3): before, such records were UNKNOWN_METADATA_RECORD
    reg = {"brokerId": 2, "isMigratingZkBroker": False, "incarnationId": "AAAAAAAAAAAAAAAAAAAAAA", "brokerEpoch": 7,
           "endPoints": [], "features": [], "rack": None, "fenced": False, "inControlledShutdown": False,
           "logDirs": ["AAAAAAAAAAAAAAAAAAAAAQ"], "cordonedLogDirs": ["AAAAAAAAAAAAAAAAAAAAAg"]}
    d = decode_metadata_record(encode_metadata_record("RegisterBrokerRecord", 4, reg))
    assert (d["version"], d["data"]["brokerEpoch"], d["data"]["fenced"]) == (4, 7, False)
    assert len(d["data"]["cordonedLogDirs"]) == 1
    change = {"brokerId": 2, "brokerEpoch": 7, "fenced": -1, "cordonedLogDirs": []}
    d = decode_metadata_record(encode_metadata_record("BrokerRegistrationChangeRecord", 3, change))
    assert (d["version"], d["data"]["fenced"], d["data"]["cordonedLogDirs"]) == (3, -1, [])
