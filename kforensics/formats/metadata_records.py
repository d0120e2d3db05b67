"""KRaft metadata records (the values of ``__cluster_metadata`` data records and of snapshots).

Frame: ``uvarint frameVersion (= 1), uvarint apiKey, uvarint version`` then the
record's body in the flexible encoding (compact strings/arrays, a tagged-field
section closing every struct).  The record layouts are declared below as a
table of fields (name, type, versions, tag), from which one Construct
``Struct`` per (apiKey, version) is built; tagged fields that the table
names are decoded, unknown tags are kept as raw bytes.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from construct import (
    Construct,
    ConstructError,
    Flag,
    Float64b,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int64sb,
    Struct,
)

from ..findings import FormatError
from .protocol import CompactArray, CompactBytes, CompactString, TaggedFields, Uuid
from .varint import UVarInt, encode_uvarint

FRAME_VERSION = 1


@dataclass(frozen=True)
class F:
    """One field of a record layout: ``type`` is a scalar name, ``[]<scalar>`` or a tuple of sub-fields."""

    name: str
    type: Any
    versions: int = 0  # present from this version on
    tag: int | None = None


_END = [F("Name", "string"), F("Host", "string"), F("Port", "uint16"), F("SecurityProtocol", "int16")]
_FEAT = [F("Name", "string"), F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16")]

#: apiKey -> (name, highest version known, fields)
RECORDS: dict[int, tuple[str, int, list[F]]] = {
    0: ("RegisterBrokerRecord", 3, [
        F("BrokerId", "int32"), F("IsMigratingZkBroker", "bool", 2), F("IncarnationId", "uuid"),
        F("BrokerEpoch", "int64"), F("EndPoints", tuple(_END)), F("Features", tuple(_FEAT)),
        F("Rack", "string?"), F("Fenced", "bool"), F("InControlledShutdown", "bool", 1),
        F("LogDirs", "[]uuid", 3, tag=0)]),
    1: ("UnregisterBrokerRecord", 0, [F("BrokerId", "int32"), F("BrokerEpoch", "int64")]),
    2: ("TopicRecord", 0, [F("Name", "string"), F("TopicId", "uuid")]),
    3: ("PartitionRecord", 2, [
        F("PartitionId", "int32"), F("TopicId", "uuid"), F("Replicas", "[]int32"), F("Isr", "[]int32"),
        F("RemovingReplicas", "[]int32?"), F("AddingReplicas", "[]int32?"), F("Leader", "int32"),
        F("LeaderRecoveryState", "int8", tag=0), F("LeaderEpoch", "int32"), F("PartitionEpoch", "int32"),
        F("Directories", "[]uuid", 1), F("EligibleLeaderReplicas", "[]int32?", 2, tag=1),
        F("LastKnownElr", "[]int32?", 2, tag=2)]),
    4: ("ConfigRecord", 0, [F("ResourceType", "int8"), F("ResourceName", "string"), F("Name", "string"),
                            F("Value", "string?")]),
    5: ("PartitionChangeRecord", 2, [
        F("PartitionId", "int32"), F("TopicId", "uuid"), F("Isr", "[]int32?", tag=0), F("Leader", "int32", tag=1),
        F("Replicas", "[]int32?", tag=2), F("RemovingReplicas", "[]int32?", tag=3),
        F("AddingReplicas", "[]int32?", tag=4), F("LeaderRecoveryState", "int8", tag=5),
        F("EligibleLeaderReplicas", "[]int32?", tag=6), F("LastKnownElr", "[]int32?", tag=7),
        F("Directories", "[]uuid?", tag=8)]),
    7: ("FenceBrokerRecord", 0, [F("Id", "int32"), F("Epoch", "int64")]),
    8: ("UnfenceBrokerRecord", 0, [F("Id", "int32"), F("Epoch", "int64")]),
    9: ("RemoveTopicRecord", 0, [F("TopicId", "uuid")]),
    10: ("DelegationTokenRecord", 0, [
        F("Owner", "string"), F("Requester", "string"), F("Renewers", "[]string"), F("IssueTimestamp", "int64"),
        F("MaxTimestamp", "int64"), F("ExpirationTimestamp", "int64"), F("TokenId", "string")]),
    11: ("UserScramCredentialRecord", 0, [
        F("Name", "string"), F("Mechanism", "int8"), F("Salt", "bytes"), F("StoredKey", "bytes"),
        F("ServerKey", "bytes"), F("Iterations", "int32")]),
    12: ("FeatureLevelRecord", 0, [F("Name", "string"), F("FeatureLevel", "int16")]),
    14: ("ClientQuotaRecord", 0, [
        F("Entity", (F("EntityType", "string"), F("EntityName", "string?"))), F("Key", "string"),
        F("Value", "float64"), F("Remove", "bool")]),
    15: ("ProducerIdsRecord", 0, [F("BrokerId", "int32"), F("BrokerEpoch", "int64"), F("NextProducerId", "int64")]),
    17: ("BrokerRegistrationChangeRecord", 2, [
        F("BrokerId", "int32"), F("BrokerEpoch", "int64"), F("Fenced", "int8", tag=0),
        F("InControlledShutdown", "int8", 1, tag=1), F("LogDirs", "[]uuid", 2, tag=2)]),
    18: ("AccessControlEntryRecord", 0, [
        F("Id", "uuid"), F("ResourceType", "int8"), F("ResourceName", "string"), F("PatternType", "int8"),
        F("Principal", "string"), F("Host", "string"), F("Operation", "int8"), F("PermissionType", "int8")]),
    19: ("RemoveAccessControlEntryRecord", 0, [F("Id", "uuid")]),
    20: ("NoOpRecord", 0, []),
    21: ("ZkMigrationStateRecord", 0, [F("ZkMigrationState", "int8")]),
    22: ("RemoveUserScramCredentialRecord", 0, [F("Name", "string"), F("Mechanism", "int8")]),
    23: ("BeginTransactionRecord", 0, [F("Name", "string?", tag=0)]),
    24: ("EndTransactionRecord", 0, []),
    25: ("AbortTransactionRecord", 0, [F("Reason", "string?", tag=0)]),
    26: ("RemoveDelegationTokenRecord", 0, [F("TokenId", "string")]),
    27: ("RegisterControllerRecord", 0, [
        F("ControllerId", "int32"), F("IncarnationId", "uuid"), F("ZkMigrationReady", "bool"),
        F("EndPoints", tuple(_END)), F("Features", tuple(_FEAT))]),
    28: ("ClearElrRecord", 0, [F("TopicName", "string")]),
}
RECORD_KEYS = {name: key for key, (name, _, _) in RECORDS.items()}

_SCALARS: dict[str, Construct] = {
    "int8": Int8sb, "int16": Int16sb, "int32": Int32sb, "int64": Int64sb, "uint16": Int16ub, "bool": Flag,
    "float64": Float64b, "uuid": Uuid(), "string": CompactString(), "string?": CompactString(),
    "bytes": CompactBytes(),
}


def _type(t: Any, version: int) -> Construct:
    if isinstance(t, tuple):
        return CompactArray(_struct(list(t), version))
    if t.startswith("[]"):
        return CompactArray(_SCALARS[t[2:].rstrip("?")])
    return _SCALARS[t]


def _struct(fields: list[F], version: int) -> Struct:
    regular = [f.name / _type(f.type, version) for f in fields if f.tag is None and version >= f.versions]
    return Struct(*regular, "_tagged" / TaggedFields())


@lru_cache(maxsize=None)
def layout(api_key: int, version: int) -> tuple[Struct, dict[int, tuple[str, Construct]]]:
    """The Construct declaration of one record version, and its known tagged fields by tag."""
    _name, _max, fields = RECORDS[api_key]
    tags = {f.tag: (f.name, _type(f.type, version)) for f in fields if f.tag is not None and version >= f.versions}
    return _struct(fields, version), tags


def _plain(obj: Any, tags: dict[int, tuple[str, Construct]] | None = None) -> Any:
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k == "_tagged":
                for tag, raw in (v or {}).items():
                    if tags and tag in tags:
                        name, con = tags[tag]
                        out[name] = _plain(con.parse(raw))
                    else:
                        out.setdefault("_unknownTaggedFields", {})[str(tag)] = raw.hex()
            elif not k.startswith("_"):
                out[k] = _plain(v)
        return out
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    if isinstance(obj, (bytes, bytearray)):
        return obj.hex()
    return obj


def decode_metadata_record(value: bytes) -> dict[str, Any]:
    """``{"type", "apiKey", "version", "data"}`` of one metadata record value, like kafka-dump-log's decoder."""
    if value is None:
        raise FormatError("BAD_METADATA_FRAME", "metadata record with a null value", 0)
    s = io.BytesIO(value)
    try:
        frame = UVarInt.parse_stream(s)
        api_key = UVarInt.parse_stream(s)
        version = UVarInt.parse_stream(s)
    except ConstructError as e:
        raise FormatError("BAD_METADATA_FRAME", f"unreadable frame header: {e}".replace("\n", " "), 0) from None
    if frame != FRAME_VERSION:
        raise FormatError("BAD_METADATA_FRAME", f"frame version {frame}, expected {FRAME_VERSION}", 0, frame=frame)
    if api_key not in RECORDS or version > RECORDS[api_key][1]:
        raise FormatError("UNKNOWN_METADATA_RECORD", f"unknown metadata record apiKey {api_key} version {version}",
                          0, api_key=api_key, version=version)
    con, tags = layout(api_key, version)
    start = s.tell()
    try:
        body = con.parse_stream(s)
        data = _plain(body, tags)
    except ConstructError as e:
        raise FormatError("METADATA_RECORD_DECODE_ERROR",
                          f"{RECORDS[api_key][0]} v{version} does not decode: {e}".replace("\n", " "), start) from None
    if s.tell() != len(value):
        raise FormatError("METADATA_RECORD_DECODE_ERROR",
                          f"{len(value) - s.tell()} bytes left after {RECORDS[api_key][0]} v{version}", s.tell())
    return {"type": RECORDS[api_key][0], "apiKey": api_key, "version": version, "data": data}


def _unplain(data: dict, fields: list[F], version: int, tags: dict) -> dict:
    out: dict[str, Any] = {"_tagged": {}}
    for f in fields:
        if version < f.versions or f.name not in data:
            continue
        v = data[f.name]
        if isinstance(f.type, tuple) and v is not None:
            sub_tags = {x.tag: (x.name, _type(x.type, version)) for x in f.type if x.tag is not None}
            v = [_unplain(item, list(f.type), version, sub_tags) for item in v]
        elif f.type == "bytes" and isinstance(v, str):
            v = bytes.fromhex(v)
        if f.tag is None:
            out[f.name] = v
        else:
            out["_tagged"][f.tag] = tags[f.tag][1].build(v)
    return out


def encode_metadata_record(type_name: str, version: int, data: dict[str, Any]) -> bytes:
    """The frame and body of one metadata record (tagged fields written when present in ``data``)."""
    api_key = RECORD_KEYS[type_name]
    con, tags = layout(api_key, version)
    body = con.build(_unplain(data, RECORDS[api_key][2], version, tags))
    return encode_uvarint(FRAME_VERSION) + encode_uvarint(api_key) + encode_uvarint(version) + body
