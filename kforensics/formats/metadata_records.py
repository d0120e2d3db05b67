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

import base64
import binascii
import io
from dataclasses import dataclass, field
from typing import Any

from construct import (
    Adapter,
    Construct,
    ExplicitError,
    Flag,
    Float64b,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int64sb,
    ListContainer,
    Renamed,
    SizeofError,
    stream_read,
    stream_write,
)

from ..findings import DecodeError
from .protocol import CompactArray, CompactBytes, CompactString, Uuid
from .varint import UVarInt, encode_uvarint

FRAME_VERSION = 1
#: key of ``data`` holding tagged fields this module does not know: ``{tag: hex}``
UNKNOWN_TAGS = "_unknownTaggedFields"


# --------------------------------------------------------------------------- building blocks
class NotNull(Adapter):
    """A compact string/bytes/array that the schema declares non-nullable: null on the wire is an error."""

    def _decode(self, obj, context, path):
        if obj is None:
            # Kafka's generated readers refuse a null in a non-nullable field
            raise ExplicitError("null in a non-nullable field", path=path)
        return obj

    def _encode(self, obj, context, path):
        if obj is None:
            raise ExplicitError("None for a non-nullable field", path=path)
        return obj


class Base64Bytes(Adapter):
    """Non-nullable compact bytes, shown as standard base64 text (how Kafka's JSON form writes ``bytes``)."""

    def __init__(self):
        super().__init__(NotNull(CompactBytes()))

    def _decode(self, obj, context, path):
        return base64.b64encode(obj).decode("ascii")

    def _encode(self, obj, context, path):
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return bytes(obj)
        try:
            return base64.b64decode(obj, validate=True)
        except (binascii.Error, TypeError, ValueError) as e:
            raise ExplicitError(f"not base64: {obj!r} ({e})", path=path) from None


@dataclass(frozen=True)
class Since:
    """A field that exists from record version ``version`` on."""

    version: int
    field: Renamed


def since(version: int, sub: Renamed) -> Since:
    return Since(version, sub)


class Flexible(Construct):
    """A flexible-version struct: ``fields`` in order, then the tagged-field section.

    ``tagged`` maps tag numbers to named fields; each is decoded from its tag's
    bytes (which it must fill exactly).  Unknown tags end up in
    ``_unknownTaggedFields`` as ``{tag: hex}``.  Building writes a tagged field
    when its name is a key of the object, and refuses keys the struct does not
    have (a misspelt field would otherwise vanish silently).
    """

    def __init__(self, *fields: Renamed, tagged: dict[int, Renamed] | None = None):
        super().__init__()
        self.fields = list(fields)
        self.tagged = dict(sorted((tagged or {}).items()))
        self.names = {f.name for f in self.fields} | {f.name for f in self.tagged.values()} | {UNKNOWN_TAGS}

    def _parse(self, stream, context, path):
        obj: dict[str, Any] = {}
        for f in self.fields:
            obj[f.name] = f._parsereport(stream, context, f"{path} -> {f.name}")
        count = UVarInt._parsereport(stream, context, path)
        last = -1
        unknown: dict[int, str] = {}
        for _ in range(count):
            tag = UVarInt._parsereport(stream, context, path)
            if tag <= last:
                # the writer sorts tags and writes each once; anything else is damage
                raise ExplicitError(f"tagged fields out of order ({tag} after {last})", path=path)
            last = tag
            size = UVarInt._parsereport(stream, context, path)
            raw = stream_read(stream, size, path)
            f = self.tagged.get(tag)
            if f is None:
                unknown[tag] = raw.hex()
                continue
            sub = io.BytesIO(raw)
            obj[f.name] = f._parsereport(sub, context, f"{path} -> {f.name}")
            if sub.tell() != size:
                raise ExplicitError(f"tagged field {f.name} (tag {tag}) leaves {size - sub.tell()} of {size} bytes",
                                    path=path)
        if unknown:
            obj[UNKNOWN_TAGS] = unknown
        return obj

    def _build(self, obj, stream, context, path):
        if not isinstance(obj, dict):
            raise ExplicitError(f"a struct needs a dict, got {type(obj).__name__}", path=path)
        extra = sorted(set(obj) - self.names)
        if extra:
            raise ExplicitError(f"no such field(s) in this record version: {', '.join(extra)}", path=path)
        for f in self.fields:
            if f.name not in obj:
                raise ExplicitError(f"missing field {f.name}", path=path)
            f._build(obj[f.name], stream, context, f"{path} -> {f.name}")
        entries: dict[int, bytes] = {}
        for tag, f in self.tagged.items():
            if f.name in obj:
                entries[tag] = f.build(obj[f.name])
        for tag, raw in (obj.get(UNKNOWN_TAGS) or {}).items():
            tag = int(tag)
            if tag in self.tagged or tag in entries:
                raise ExplicitError(f"unknown tagged field {tag} is a known tag of this record", path=path)
            entries[tag] = bytes.fromhex(raw) if isinstance(raw, str) else bytes(raw)
        UVarInt._build(len(entries), stream, context, path)
        for tag in sorted(entries):
            UVarInt._build(tag, stream, context, path)
            UVarInt._build(len(entries[tag]), stream, context, path)
            stream_write(stream, entries[tag], len(entries[tag]), path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError("flexible structs have no fixed size", path=path)


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
@dataclass(frozen=True)
class RecordType:
    """One metadata record type: its apiKey, name, highest known version and fields (some from a version on)."""

    api_key: int
    name: str
    max_version: int
    fields: tuple = ()
    tagged: dict = field(default_factory=dict)

    def layout(self, version: int) -> Flexible:
        """The Construct declaration of this record at ``version``."""
        return _LAYOUTS[(self.name, version)]

    def _make(self, version: int) -> Flexible:
        def present(f) -> bool:
            return not isinstance(f, Since) or version >= f.version

        def unwrap(f) -> Renamed:
            return f.field if isinstance(f, Since) else f

        return Flexible(*[unwrap(f) for f in self.fields if present(f)],
                        tagged={tag: unwrap(f) for tag, f in self.tagged.items() if present(f)})


def _rt(api_key, name, max_version, *fields, tagged=None) -> RecordType:
    return RecordType(api_key, name, max_version, tuple(fields), dict(tagged or {}))


RECORD_TYPES: list[RecordType] = [
    _rt(0, "RegisterBrokerRecord", 3,
        "brokerId" / Int32sb,
        since(2, "isMigratingZkBroker" / Flag),
        "incarnationId" / Uuid(),
        "brokerEpoch" / Int64sb,
        "endPoints" / NotNull(CompactArray(Endpoint)),
        "features" / NotNull(CompactArray(FeatureRange)),
        "rack" / NullableString,
        "fenced" / Flag,
        since(1, "inControlledShutdown" / Flag),
        tagged={0: since(3, "logDirs" / UuidArray)}),
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
    _rt(17, "BrokerRegistrationChangeRecord", 2,
        "brokerId" / Int32sb,
        "brokerEpoch" / Int64sb,
        tagged={0: "fenced" / Int8sb,
                1: since(1, "inControlledShutdown" / Int8sb),
                2: since(2, "logDirs" / UuidArray)}),
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
_LAYOUTS: dict[tuple[str, int], Flexible] = {
    (t.name, v): t._make(v) for t in RECORD_TYPES for v in range(t.max_version + 1)
}
#: name -> apiKey, for callers that only need the numbers
RECORD_KEYS = {t.name: t.api_key for t in RECORD_TYPES}


# --------------------------------------------------------------------------- decode / encode
def _plain(obj: Any) -> Any:
    # Construct hands back ListContainers; callers get plain lists and dicts
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, ListContainer)):
        return [_plain(v) for v in obj]
    return obj


def _flat(e: Exception) -> str:
    return str(e).replace("\n", " ").strip() or type(e).__name__


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
    return _plain(body)


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


def _camel(obj: Any) -> Any:
    # the schema files spell fields in PascalCase; Kafka's JSON form (and this module) in camelCase
    if isinstance(obj, dict):
        return {(k[0].lower() + k[1:] if k and k[0].isupper() else k): (v if k == UNKNOWN_TAGS else _camel(v))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_camel(v) for v in obj]
    return obj


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
