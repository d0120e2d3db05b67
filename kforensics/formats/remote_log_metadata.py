"""The records of ``__remote_log_metadata``: tiered storage's segment metadata (KIP-405).

Written by ``TopicBasedRemoteLogMetadataManager`` with ``RemoteLogMetadataSerde``:
the key is unused (null), the value is framed like a KRaft metadata record
(``AbstractApiMessageSerde``): ``uvarint frameVersion`` (1), ``uvarint
apiKey``, ``uvarint version``, then the flexible body; bytes after it are
an error.  Record types (all flexible, version 0):

0 ``RemoteLogSegmentMetadataRecord``, 1 ``RemoteLogSegmentMetadataUpdateRecord``,
2 ``RemotePartitionDeleteMetadataRecord``, 3 ``RemoteLogSegmentMetadataSnapshotRecord``
(the last is used in the manager's local snapshot files; decoded here too).
``remoteLogSegmentState``: 0 COPY_SEGMENT_STARTED, 1 COPY_SEGMENT_FINISHED,
2 DELETE_SEGMENT_STARTED, 3 DELETE_SEGMENT_FINISHED;
``remotePartitionDeleteState``: 0 DELETE_PARTITION_MARKED, 1 _STARTED, 2 _FINISHED.

The decoded :class:`CoordinatorRecord` has ``key_type``/``value_type`` = the
record type, ``type_id`` = apiKey, ``value_version`` = version and ``key``
None.  kafka-dump-log prints no key and ``payload: `` + the Java ``toString``
of the transformed object, e.g. ``RemoteLogSegmentMetadata{remoteLogSegmentId=
RemoteLogSegmentId{topicIdPartition=<topicId>:<topic>-<partition>, id=<uuid>},
startOffset=0, endOffset=9, brokerId=1, maxTimestampMs=..., eventTimestampMs=...,
segmentLeaderEpochs={0=0}, segmentSizeInBytes=1024, customMetadata=Optional.empty,
state=COPY_SEGMENT_STARTED}`` (``RemoteLogSegmentMetadataUpdate{...}``,
``RemotePartitionDeleteMetadata{topicPartition=..., state=..., eventTimestampMs=...,
brokerId=...}``), or ``Error at offset <o>, skipping. <message>``.

Sources: apache/kafka ``storage/src/main/resources/message/Remote*.json``
(``TxnIndexEmpty`` tag 0 from the newest stored versions) and T24
``RemoteLogMetadataSerde``/``BytesApiMessageSerde``.
"""

from __future__ import annotations

import io
from typing import Any

from ..findings import Finding, finding
from .internal_topics import CoordinatorRecord
from .message_schema import (
    BOOL,
    INT8,
    INT32,
    INT64,
    NULLABLE_BYTES,
    STRING,
    UUID,
    RecordType,
    array,
    camel,
    flat,
    parse_exact,
    struct,
    tagged,
)
from .varint import UVarInt, encode_uvarint

NAME = "remote-log-metadata"
FLAG = "--remote-log-metadata-decoder"
TOPIC = "__remote_log_metadata"
FRAME_VERSION = 1

SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                  3: "DELETE_SEGMENT_FINISHED"}
PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED",
                           2: "DELETE_PARTITION_FINISHED"}

_TOPIC_ID_PARTITION = struct("name" / STRING, "id" / UUID, "partition" / INT32)
_SEGMENT_ID = struct("topicIdPartition" / _TOPIC_ID_PARTITION, "id" / UUID)
_LEADER_EPOCHS = array(struct("leaderEpoch" / INT32, "offset" / INT64))

RECORD_TYPES: list[RecordType] = [
    RecordType(0, "RemoteLogSegmentMetadataRecord", 0, (
        "remoteLogSegmentId" / _SEGMENT_ID,
        "startOffset" / INT64,
        "endOffset" / INT64,
        "brokerId" / INT32,
        "maxTimestampMs" / INT64,
        "eventTimestampMs" / INT64,
        "segmentLeaderEpochs" / _LEADER_EPOCHS,
        "segmentSizeInBytes" / INT32,
        "customMetadata" / NULLABLE_BYTES,
        "remoteLogSegmentState" / INT8,
        tagged(0, "txnIndexEmpty" / BOOL, default=False))),
    RecordType(1, "RemoteLogSegmentMetadataUpdateRecord", 0, (
        "remoteLogSegmentId" / _SEGMENT_ID,
        "brokerId" / INT32,
        "eventTimestampMs" / INT64,
        "customMetadata" / NULLABLE_BYTES,
        "remoteLogSegmentState" / INT8)),
    RecordType(2, "RemotePartitionDeleteMetadataRecord", 0, (
        "topicIdPartition" / _TOPIC_ID_PARTITION,
        "brokerId" / INT32,
        "eventTimestampMs" / INT64,
        "remotePartitionDeleteState" / INT8)),
    RecordType(3, "RemoteLogSegmentMetadataSnapshotRecord", 0, (
        "segmentId" / UUID,
        "startOffset" / INT64,
        "endOffset" / INT64,
        "brokerId" / INT32,
        "maxTimestampMs" / INT64,
        "eventTimestampMs" / INT64,
        "segmentLeaderEpochs" / _LEADER_EPOCHS,
        "segmentSizeInBytes" / INT32,
        "customMetadata" / NULLABLE_BYTES,
        "remoteLogSegmentState" / INT8,
        tagged(0, "txnIndexEmpty" / BOOL, default=False))),
]
BY_KEY = {t.api_key: t for t in RECORD_TYPES}
BY_NAME = {t.name: t for t in RECORD_TYPES}


def _f(code: str, message: str, position: int | None, **facts: Any) -> Finding:
    return finding(code, message, position=position, part="value", decoder=NAME, **facts)


def decode(key: bytes | None, value: bytes | None) -> CoordinatorRecord:
    """One ``__remote_log_metadata`` record (the key is not used); never raises."""
    fs: list[Finding] = []
    out: dict[str, Any] = {"decoder": NAME, "findings": fs}
    try:
        _decode(None if value is None else bytes(value), out, fs)
    except Exception as e:  # noqa: BLE001 - a decoder never raises; this is a bug, reported as a finding
        fs.append(_f("INTERNAL_RECORD_DECODE_ERROR", f"decoder failure: {flat(e)}", None))
    return CoordinatorRecord(**out)


def _decode(value: bytes | None, out: dict[str, Any], fs: list[Finding]) -> None:
    if value is None:
        fs.append(_f("INTERNAL_RECORD_DECODE_ERROR", "null value: remote log metadata is never deleted by key", 0))
        return
    header = []
    s = io.BytesIO(value)
    try:
        for _ in range(3):
            header.append(UVarInt.parse_stream(s))
    except Exception as e:  # noqa: BLE001 - hostile bytes
        fs.append(_f("INTERNAL_RECORD_DECODE_ERROR", f"unreadable frame header: {flat(e)}", s.tell()))
        return
    frame, api_key, version = header
    if frame != FRAME_VERSION:
        fs.append(_f("INTERNAL_RECORD_DECODE_ERROR", f"frame version {frame}, expected {FRAME_VERSION}", 0,
                     frame=frame))
        return
    out["type_id"] = api_key
    t = BY_KEY.get(api_key)
    if t is None:
        fs.append(_f("INTERNAL_RECORD_UNKNOWN_TYPE", f"unknown remote log metadata apiKey {api_key}", 0,
                     type_id=api_key))
        return
    out["key_type"] = out["value_type"] = t.name
    out["value_version"] = version
    if version not in t.versions:
        fs.append(_f("INTERNAL_RECORD_UNKNOWN_VERSION", f"{t.name} version {version} unknown", 0, type=t.name,
                     version=version))
        return
    layout = t.layout(version)
    out["_value_layout"] = layout
    data, end, err = parse_exact(layout, value, s.tell())
    if err is not None:
        fs.append(_f("INTERNAL_RECORD_DECODE_ERROR", f"{t.name} v{version} does not decode: {err}", end,
                     type=t.name, version=version))
        return
    if end != len(value):
        # AbstractApiMessageSerde refuses bytes after the body
        fs.append(_f("INTERNAL_RECORD_DECODE_ERROR", f"{len(value) - end} byte(s) left after {t.name} v{version}",
                     end, type=t.name, version=version))
        return
    out["value"] = data


def encode(type_name: str, version: int, value: dict[str, Any], key: dict[str, Any] | None = None
           ) -> tuple[None, bytes]:
    """``(None, value bytes)`` of one record (the key is always null); ``ValueError`` for a caller's mistake."""
    t = BY_NAME.get(type_name)
    if t is None or version not in t.versions:
        raise ValueError(f"no remote log metadata record {type_name} v{version}")
    if key:
        raise ValueError("remote log metadata records have no key")
    try:
        body = t.layout(version).build(camel(value))
    except Exception as e:  # noqa: BLE001 - caller data of any shape
        raise ValueError(f"{type_name} v{version}: {flat(e)}") from None
    return None, encode_uvarint(FRAME_VERSION) + encode_uvarint(t.api_key) + encode_uvarint(version) + body
