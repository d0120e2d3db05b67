"""KRaft metadata records: the values of ``__cluster_metadata`` data records and of snapshots.

Frame (reference §6.1): ``uvarint frameVersion`` (must be 1), ``uvarint apiKey``,
``uvarint version``, then the record body in the flexible encoding (compact
strings, bytes and arrays; every struct closed by a tagged-field section).
Bytes left after the body are an error.

Every record type is declared below once, as a Construct :class:`Flexible`
struct per version: regular fields in wire order, then the tagged fields by
tag number.  Known tags are decoded into named fields; tags this module does
not know are kept raw (hex) under ``_unknownTaggedFields`` so that a record
re-encodes byte for byte.

Decoded records look like ``kafka-dump-log --cluster-metadata-decoder`` output:
``{"type": "PartitionChangeRecord", "apiKey": 5, "version": 0, "data": {...}}``
with the camelCase field names of Kafka's JSON form; uuids are Kafka's base64
text, ``bytes`` fields standard base64.  As in Kafka's JSON form, a tagged field
appears in ``data`` only when it is on the wire.
"""

from __future__ import annotations

import io
from typing import Any, cast

from construct import Construct, Flag, Float64b, Int8sb, Int16sb, Int16ub, Int32sb, Int64sb, Renamed

from ..findings import DecodeError

# the declaration machinery lives in message_schema (shared with every Kafka message schema);
# its names stay importable from here
from .message_schema import (  # noqa: F401 - re-exported
    UNKNOWN_TAGS,
    Base64Bytes,
    Decl,
    Flexible,
    NotNull,
    RecordType,
    Since,
    since,
)
from .message_schema import camel as _camel
from .message_schema import flat as _flat
from .message_schema import plain as _plain
from .protocol import CompactArray, CompactString, Uuid
from .varint import UVarInt, encode_uvarint

FRAME_VERSION = 1


# field types, named after the schema's type strings
String = NotNull(CompactString())
NullableString = CompactString()
Int32Array = NotNull(CompactArray(Int32sb))
NullableInt32Array = CompactArray(Int32sb)
UuidArray = NotNull(CompactArray(Uuid()))
NullableUuidArray = CompactArray(Uuid())
StringArray = NotNull(CompactArray(String))

Endpoint = Flexible(
    "name" / String,
    "host" / String,
    "port" / Int16ub,
    "securityProtocol" / Int16sb,
)
FeatureRange = Flexible(
    "name" / String,
    "minSupportedVersion" / Int16sb,
    "maxSupportedVersion" / Int16sb,
)
QuotaEntity = Flexible(
    "entityType" / String,
    "entityName" / NullableString,
)


# --------------------------------------------------------------------------- the record types
def _rt(api_key: int, name: str, max_version: int, *fields: Decl,
        tagged: dict[int, Renamed | Since] | None = None) -> RecordType:
    return RecordType(api_key, name, max_version, tuple(fields), dict(tagged or {}))


RECORD_TYPES: list[RecordType] = [
    # v4 (Kafka 4.4): cordoned log dirs, tagged (RegisterBrokerRecord.json)
    _rt(0, "RegisterBrokerRecord", 4,
        "brokerId" / Int32sb,
        since(2, "isMigratingZkBroker" / Flag),
        "incarnationId" / Uuid(),
        "brokerEpoch" / Int64sb,
        "endPoints" / NotNull(CompactArray(Endpoint)),
        "features" / NotNull(CompactArray(FeatureRange)),
        "rack" / NullableString,
        "fenced" / Flag,
        since(1, "inControlledShutdown" / Flag),
        tagged={0: since(3, "logDirs" / UuidArray),
                1: since(4, "cordonedLogDirs" / NullableUuidArray)}),
    _rt(1, "UnregisterBrokerRecord", 0,
        "brokerId" / Int32sb,
        "brokerEpoch" / Int64sb),
    _rt(2, "TopicRecord", 0,
        "name" / String,
        "topicId" / Uuid()),
    _rt(3, "PartitionRecord", 2,
        "partitionId" / Int32sb,
        "topicId" / Uuid(),
        "replicas" / Int32Array,
        "isr" / Int32Array,
        "removingReplicas" / Int32Array,
        "addingReplicas" / Int32Array,
        "leader" / Int32sb,
        "leaderEpoch" / Int32sb,
        "partitionEpoch" / Int32sb,
        since(1, "directories" / UuidArray),
        tagged={0: "leaderRecoveryState" / Int8sb,
                1: since(2, "eligibleLeaderReplicas" / NullableInt32Array),
                2: since(2, "lastKnownElr" / NullableInt32Array)}),
    _rt(4, "ConfigRecord", 0,
        "resourceType" / Int8sb,
        "resourceName" / String,
        "name" / String,
        "value" / NullableString),
    # everything but the partition is tagged: absent means unchanged
    _rt(5, "PartitionChangeRecord", 2,
        "partitionId" / Int32sb,
        "topicId" / Uuid(),
        tagged={0: "isr" / NullableInt32Array,
                1: "leader" / Int32sb,
                2: "replicas" / NullableInt32Array,
                3: "removingReplicas" / NullableInt32Array,
                4: "addingReplicas" / NullableInt32Array,
                5: "leaderRecoveryState" / Int8sb,
                6: since(2, "eligibleLeaderReplicas" / NullableInt32Array),
                7: since(2, "lastKnownElr" / NullableInt32Array),
                8: since(1, "directories" / NullableUuidArray)}),
    _rt(7, "FenceBrokerRecord", 0,
        "id" / Int32sb,
        "epoch" / Int64sb),
    _rt(8, "UnfenceBrokerRecord", 0,
        "id" / Int32sb,
        "epoch" / Int64sb),
    _rt(9, "RemoveTopicRecord", 0,
        "topicId" / Uuid()),
    _rt(10, "DelegationTokenRecord", 0,
        "owner" / String,
        "requester" / String,
        "renewers" / StringArray,
        "issueTimestamp" / Int64sb,
        "maxTimestamp" / Int64sb,
        "expirationTimestamp" / Int64sb,
        "tokenId" / String),
    _rt(11, "UserScramCredentialRecord", 0,
        "name" / String,
        "mechanism" / Int8sb,
        "salt" / Base64Bytes(),
        "storedKey" / Base64Bytes(),
        "serverKey" / Base64Bytes(),
        "iterations" / Int32sb),
    _rt(12, "FeatureLevelRecord", 0,
        "name" / String,
        "featureLevel" / Int16sb),
    _rt(14, "ClientQuotaRecord", 0,
        "entity" / NotNull(CompactArray(QuotaEntity)),
        "key" / String,
        "value" / Float64b,
        "remove" / Flag),
    _rt(15, "ProducerIdsRecord", 0,
        "brokerId" / Int32sb,
        "brokerEpoch" / Int64sb,
        "nextProducerId" / Int64sb),
    # v3 (Kafka 4.4): cordoned log dirs, tagged (BrokerRegistrationChangeRecord.json)
    _rt(17, "BrokerRegistrationChangeRecord", 3,
        "brokerId" / Int32sb,
        "brokerEpoch" / Int64sb,
        tagged={0: "fenced" / Int8sb,
                1: since(1, "inControlledShutdown" / Int8sb),
                2: since(2, "logDirs" / UuidArray),
                3: since(3, "cordonedLogDirs" / NullableUuidArray)}),
    _rt(18, "AccessControlEntryRecord", 0,
        "id" / Uuid(),
        "resourceType" / Int8sb,
        "resourceName" / String,
        "patternType" / Int8sb,
        "principal" / String,
        "host" / String,
        "operation" / Int8sb,
        "permissionType" / Int8sb),
    _rt(19, "RemoveAccessControlEntryRecord", 0,
        "id" / Uuid()),
    _rt(20, "NoOpRecord", 0),
    _rt(21, "ZkMigrationStateRecord", 0,
        "zkMigrationState" / Int8sb),
    _rt(22, "RemoveUserScramCredentialRecord", 0,
        "name" / String,
        "mechanism" / Int8sb),
    _rt(23, "BeginTransactionRecord", 0,
        tagged={0: "name" / NullableString}),
    _rt(24, "EndTransactionRecord", 0),
    _rt(25, "AbortTransactionRecord", 0,
        tagged={0: "reason" / NullableString}),
    _rt(26, "RemoveDelegationTokenRecord", 0,
        "tokenId" / String),
    _rt(27, "RegisterControllerRecord", 0,
        "controllerId" / Int32sb,
        "incarnationId" / Uuid(),
        "zkMigrationReady" / Flag,
        "endPoints" / NotNull(CompactArray(Endpoint)),
        "features" / NotNull(CompactArray(FeatureRange))),
    _rt(28, "ClearElrRecord", 0,
        "topicName" / String),
    # apiKey 29 has two different schemas in Kafka's history (reference §13.1):
    # a value is decoded with both and must fit exactly one of them
    _rt(29, "UnregisterControllerRecord", 0,
        "controllerId" / Int32sb),
    _rt(29, "ClusterIdRecord", 0,
        "clusterId" / String),
]

RECORD_TYPES_BY_NAME: dict[str, RecordType] = {t.name: t for t in RECORD_TYPES}
RECORD_TYPES_BY_KEY: dict[int, list[RecordType]] = {}
for _t in RECORD_TYPES:
    RECORD_TYPES_BY_KEY.setdefault(_t.api_key, []).append(_t)
_LAYOUTS: dict[tuple[str, int], Construct] = {
    (t.name, v): t.layout(v) for t in RECORD_TYPES for v in range(t.max_version + 1)
}


# --------------------------------------------------------------------------- decode / encode
def _parse_body(t: RecordType, version: int, value: bytes, start: int) -> dict[str, Any]:
    s = io.BytesIO(value)
    s.seek(start)
    try:
        body = t.layout(version).parse_stream(s)
    except Exception as e:  # noqa: BLE001 - hostile bytes: every failure to decode is a decode error
        raise DecodeError("METADATA_RECORD_DECODE_ERROR", f"{t.name} v{version} does not decode: {_flat(e)}",
                          s.tell(), api_key=t.api_key, version=version, type=t.name) from None
    if s.tell() != len(value):
        raise DecodeError("METADATA_RECORD_DECODE_ERROR",
                          f"{len(value) - s.tell()} byte(s) left after {t.name} v{version}", s.tell(),
                          api_key=t.api_key, version=version, type=t.name)
    return cast(dict[str, Any], _plain(body))  # a struct parses to a dict


def decode_metadata_record(value: bytes) -> dict[str, Any]:
    """``{"type", "apiKey", "version", "data"}`` of one metadata record value.

    Raises :class:`DecodeError` (and nothing else): ``BAD_METADATA_FRAME`` for a
    null value, an unreadable header or a frame version other than 1;
    ``UNKNOWN_METADATA_RECORD`` for an apiKey or version this module does not
    declare; ``METADATA_RECORD_DECODE_ERROR`` when the body does not decode or
    leaves bytes behind.
    """
    if value is None:
        raise DecodeError("BAD_METADATA_FRAME", "metadata record with a null value", 0)
    try:
        value = bytes(value)
        s = io.BytesIO(value)
        frame = UVarInt.parse_stream(s)
        api_key = UVarInt.parse_stream(s)
        version = UVarInt.parse_stream(s)
    except Exception as e:  # noqa: BLE001 - see _parse_body
        raise DecodeError("BAD_METADATA_FRAME", f"unreadable frame header: {_flat(e)}", 0) from None
    if frame != FRAME_VERSION:
        raise DecodeError("BAD_METADATA_FRAME", f"frame version {frame}, expected {FRAME_VERSION}", 0, frame=frame)
    types = RECORD_TYPES_BY_KEY.get(api_key, [])
    candidates = [t for t in types if version <= t.max_version]
    if not candidates:
        known = ", ".join(f"{t.name} 0-{t.max_version}" for t in types) or "none"
        raise DecodeError("UNKNOWN_METADATA_RECORD",
                          f"unknown metadata record apiKey {api_key} version {version} (known: {known})", 0,
                          api_key=api_key, version=version)
    start = s.tell()
    decoded, errors = [], []
    for t in candidates:
        try:
            decoded.append((t, _parse_body(t, version, value, start)))
        except DecodeError as e:
            errors.append(e)
    if len(decoded) > 1:
        names = " and ".join(t.name for t, _ in decoded)
        raise DecodeError("UNKNOWN_METADATA_RECORD",
                          f"apiKey {api_key} v{version} decodes as both {names}; cannot tell which", 0,
                          api_key=api_key, version=version, candidates=[t.name for t, _ in decoded])
    if not decoded:
        if len(errors) == 1:
            raise errors[0]
        raise DecodeError("METADATA_RECORD_DECODE_ERROR",
                          f"apiKey {api_key} v{version} fits none of its schemas: "
                          + "; ".join(e.message for e in errors), errors[0].position,
                          api_key=api_key, version=version)
    t, data = decoded[0]
    return {"type": t.name, "apiKey": api_key, "version": version, "data": data}


def encode_metadata_record(type_name: str, version: int, data: dict[str, Any]) -> bytes:
    """Frame and body of one metadata record (the inverse of :func:`decode_metadata_record`'s ``data``).

    Tagged fields are written when their key is in ``data``.  Field names may
    also be given in the schema files' PascalCase.  Raises ``ValueError`` for
    an unknown type or version, or data that does not fit it (a caller's
    mistake, not evidence).
    """
    t = RECORD_TYPES_BY_NAME.get(type_name)
    if t is None or not 0 <= version <= t.max_version:
        raise ValueError(f"no metadata record {type_name} v{version}")
    try:
        body = t.layout(version).build(_camel(data))
    except Exception as e:  # noqa: BLE001 - caller data of any shape: do not leak construct errors
        raise ValueError(f"{type_name} v{version}: {_flat(e)}") from None
    return encode_uvarint(FRAME_VERSION) + encode_uvarint(t.api_key) + encode_uvarint(version) + body
