"""The records of ``__consumer_offsets``: the group coordinator's offsets and group state.

Framing (``GroupCoordinatorRecordSerde``; before 4.0 ``GroupMetadataManager``):
a key is ``int16 type`` + a non-flexible key body, a value ``int16 version`` +
the body, a null value a tombstone (the key's state is deleted).  Types:

* 0 and 1: offset commits.  Type 0 (``LegacyOffsetCommitKey``, the key
  version 0 of brokers before 0.10) and type 1 (``OffsetCommitKey``) have the
  same key layout; both carry an ``OffsetCommitValue`` v0-v4 (v1 adds
  ``expireTimestamp``, v3 ``leaderEpoch`` and drops the former, v4 is flexible
  and may carry the committed topic's id as tag 0).  Kafka 4.x declares type
  0's value as ``LegacyOffsetCommitValue`` (v0 only, the same layout as
  ``OffsetCommitValue`` v0); this decoder reads every ``OffsetCommitValue``
  version under both types, as the brokers that wrote them did.
* 2: classic group metadata, ``GroupMetadataValue`` v0-v4 (v4 flexible).  When
  the group's ``protocolType`` is ``consumer``, each member's ``subscription``
  and ``assignment`` are decoded as ``ConsumerProtocolSubscription`` /
  ``ConsumerProtocolAssignment`` (an ``int16`` version, then a non-flexible
  body; versions 0-3) in place of their base64 bytes, with the embedded
  version kept as ``_version``; bytes that do not decode stay base64 with a
  ``CONSUMER_PROTOCOL_UNDECODED`` finding.
* 3-24: the KIP-848/932/1071 group records, declared in :mod:`.group_records`.

Sources: apache/kafka ``group-coordinator/src/main/resources/common/message``
(newest stored versions, up to 4.3 trunk; tags added after 4.2 are marked),
``clients/.../ConsumerProtocol{Subscription,Assignment}.json``, T24
``1eb7644`` for framing and ``GroupMetadataManager``.
"""

from __future__ import annotations

import base64
import struct as _struct
from typing import Any

from ..findings import Finding, finding
from .group_records import CONSUMER_GROUP_PAIRS, GROUP, SHARE_GROUP_PAIRS, STREAMS_GROUP_PAIRS
from .internal_topics import CoordinatorRecord, CoordinatorSerde, RecordPair, key_type, value_type
from .message_schema import (
    BYTES,
    INT32,
    INT64,
    NULLABLE_BYTES,
    NULLABLE_STRING,
    STRING,
    UUID,
    RecordType,
    array,
    camel,
    only,
    parse_exact,
    since,
    struct,
    tagged,
)

NAME = "offsets"
FLAG = "--offsets-decoder"
TOPIC = "__consumer_offsets"
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

_OFFSET_KEY = ("group" / STRING, "topic" / STRING, "partition" / INT32)

OFFSET_COMMIT_VALUE = value_type(
    1, "OffsetCommitValue", 4,
    "offset" / INT64,
    since(3, "leaderEpoch" / INT32),
    "metadata" / STRING,
    "commitTimestamp" / INT64,
    only(1, 1, "expireTimestamp" / INT64),
    since(4, tagged(0, "topicId" / UUID, default=ZERO_UUID)),  # 4.1: commits by topic id (KIP-848)
    flexible_from=4)

GROUP_METADATA_VALUE = value_type(
    2, "GroupMetadataValue", 4,
    "protocolType" / STRING,
    "generation" / INT32,
    "protocol" / NULLABLE_STRING,
    "leader" / NULLABLE_STRING,
    since(2, "currentStateTimestamp" / INT64),
    "members" / array(struct(
        "memberId" / STRING,
        since(3, "groupInstanceId" / NULLABLE_STRING),
        "clientId" / STRING,
        "clientHost" / STRING,
        since(1, "rebalanceTimeout" / INT32),
        "sessionTimeout" / INT32,
        "subscription" / BYTES,
        "assignment" / BYTES)),
    flexible_from=4)

CLASSIC_PAIRS = [
    RecordPair(key_type(0, "LegacyOffsetCommitKey", *_OFFSET_KEY), OFFSET_COMMIT_VALUE),
    RecordPair(key_type(1, "OffsetCommitKey", *_OFFSET_KEY), OFFSET_COMMIT_VALUE),
    RecordPair(key_type(2, "GroupMetadataKey", "group" / STRING), GROUP_METADATA_VALUE),
]
PAIRS = CLASSIC_PAIRS + CONSUMER_GROUP_PAIRS + SHARE_GROUP_PAIRS + STREAMS_GROUP_PAIRS

# --------------------------------------------------------------------------- the embedded consumer protocol
_TOPIC_PARTITIONS = struct("topic" / STRING, "partitions" / array(INT32))
#: the classic consumer protocol's member metadata (never flexible)
CONSUMER_PROTOCOL_SUBSCRIPTION = RecordType(
    -1, "ConsumerProtocolSubscription", 3, (
        "topics" / array(STRING),
        "userData" / NULLABLE_BYTES,
        since(1, "ownedPartitions" / array(_TOPIC_PARTITIONS)),
        since(2, "generationId" / INT32),
        since(3, "rackId" / NULLABLE_STRING)),
    flexible_from=None)
CONSUMER_PROTOCOL_ASSIGNMENT = RecordType(
    -1, "ConsumerProtocolAssignment", 3, (
        "assignedPartitions" / array(_TOPIC_PARTITIONS),
        "userData" / NULLABLE_BYTES),
    flexible_from=None)
CONSUMER_PROTOCOL_TYPE = "consumer"
EMBEDDED_VERSION = "_version"
#: the member fields that hold an embedded consumer-protocol message, and its schema
_EMBEDDED = (("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION), ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT))


def decode_embedded(rt: RecordType, raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """An embedded consumer-protocol message: ``(fields with _version, None)`` or ``(None, why not)``.

    Kafka reads a newer version with the newest layout it knows (the schema
    promises only to append fields); bytes such a version appends cannot be
    re-encoded, so they leave the message undecoded here.
    """
    if len(raw) < 2:
        return None, f"{len(raw)} byte(s), no version"
    version = _struct.unpack_from(">h", raw)[0]
    if version < 0:
        return None, f"negative version {version}"
    data, end, err = parse_exact(rt.layout(min(version, rt.max_version)), raw, 2)
    if err is not None:
        return None, f"v{version} does not decode: {err}"
    if end != len(raw):
        return None, f"{len(raw) - end} byte(s) left after v{version}"
    if version > rt.max_version:
        return None, f"v{version} is newer than v{rt.max_version}"
    return {EMBEDDED_VERSION: version, **data}, None


def encode_embedded(rt: RecordType, obj: dict[str, Any]) -> bytes:
    data = dict(obj)
    version = data.pop(EMBEDDED_VERSION)
    return _struct.pack(">h", version) + rt.layout(version).build(camel(data))


def _after_decode(type_name: str, data: dict[str, Any], value: bytes, findings: list[Finding]) -> None:
    if type_name != GROUP_METADATA_VALUE.name or data.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
        return
    search_from = 0
    for i, member in enumerate(data.get("members") or []):
        for name, rt in _EMBEDDED:
            raw = base64.b64decode(member[name])
            # members are in wire order and each field's bytes follow its length: search onwards
            at = value.find(raw, search_from) if raw else -1
            if at >= 0:
                search_from = at + len(raw)
            decoded, why = decode_embedded(rt, raw)
            if decoded is None:
                findings.append(finding(
                    "CONSUMER_PROTOCOL_UNDECODED",
                    f"member {i} ({member.get('memberId')}): {name} is not a {rt.name}: {why}; kept as base64",
                    position=at if at >= 0 else None, part="value", decoder=NAME, member=i, field=name))
            else:
                member[name] = decoded


def _before_encode(type_name: str, data: dict[str, Any]) -> dict[str, Any]:
    if type_name != GROUP_METADATA_VALUE.name:
        return data
    members = []
    for member in data.get("members") or []:
        member = dict(member)
        for name, rt in _EMBEDDED:
            if isinstance(member.get(name), dict):
                member[name] = encode_embedded(rt, member[name])
        members.append(member)
    return {**data, "members": members} if "members" in data else data


SERDE = CoordinatorSerde(NAME, FLAG, PAIRS, after_decode=_after_decode, before_encode=_before_encode)
PAIRS_BY_KEY = SERDE.by_id


def decode(key: bytes | None, value: bytes | None) -> CoordinatorRecord:
    """One ``__consumer_offsets`` record; never raises (see :class:`CoordinatorRecord`)."""
    return SERDE.decode(key, value)


def encode(type_name: str, version: int | None, key: dict[str, Any],
           value: dict[str, Any] | None) -> tuple[bytes, bytes | None]:
    """Key and value bytes (``value`` None: a tombstone).  ``type_name`` is a key or value schema name.

    Decoded consumer-protocol members (dicts with ``_version``) are encoded
    back to their bytes.  Raises ``ValueError`` for a caller's mistake.
    """
    try:
        return SERDE.encode(type_name, version, key, value)
    except (KeyError, TypeError) as e:
        raise ValueError(f"{type_name}: {e}") from None


__all__ = ["NAME", "FLAG", "TOPIC", "PAIRS", "SERDE", "decode", "encode", "GROUP", "CONSUMER_PROTOCOL_SUBSCRIPTION",
           "CONSUMER_PROTOCOL_ASSIGNMENT", "decode_embedded", "encode_embedded"]
