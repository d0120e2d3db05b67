"""The records of ``__share_group_state``: the share coordinator's state per share-partition (KIP-932).

Framing as every coordinator (:mod:`.internal_topics`).  Type 0,
``ShareSnapshotKey``/``ShareSnapshotValue``: the whole state of one share-group
partition (start offset and the delivery state of in-flight batches); type 1,
``ShareUpdateKey``/``ShareUpdateValue``: a change applied on top of the last
snapshot.  Both values are flexible from v0; ``deliveryCompleteCount`` (tag
0) was added in 4.2 (KIP-1226).  ``deliveryState`` ids: 0 Available,
2 Acknowledged, 4 Archived.

Sources: apache/kafka ``share-coordinator/src/main/resources/common/message/
Share{Snapshot,Update}{Key,Value}.json`` (newest stored versions) and
``DumpLogSegmentsTest`` for the field order of ``ShareSnapshotValue``.
"""

from __future__ import annotations

from typing import Any

from .internal_topics import CoordinatorRecord, CoordinatorSerde, RecordPair, key_type, value_type
from .message_schema import INT8, INT16, INT32, INT64, STRING, UUID, array, struct, tagged

NAME = "share-group-state"
FLAG = "--share-group-state-decoder"
TOPIC = "__share_group_state"

#: StateBatch.deliveryState ids
DELIVERY_STATES = {0: "Available", 2: "Acknowledged", 4: "Archived"}

_KEY = ("groupId" / STRING, "topicId" / UUID, "partition" / INT32)
_STATE_BATCHES = array(struct("firstOffset" / INT64, "lastOffset" / INT64, "deliveryState" / INT8,
                              "deliveryCount" / INT16))

PAIRS = [
    RecordPair(key_type(0, "ShareSnapshotKey", *_KEY),
               value_type(0, "ShareSnapshotValue", 0,
                          "snapshotEpoch" / INT32,
                          "stateEpoch" / INT32,
                          "leaderEpoch" / INT32,
                          "startOffset" / INT64,
                          tagged(0, "deliveryCompleteCount" / INT32, default=-1),
                          "createTimestamp" / INT64,
                          "writeTimestamp" / INT64,
                          "stateBatches" / _STATE_BATCHES)),
    RecordPair(key_type(1, "ShareUpdateKey", *_KEY),
               value_type(1, "ShareUpdateValue", 0,
                          "snapshotEpoch" / INT32,
                          "leaderEpoch" / INT32,
                          "startOffset" / INT64,  # -1: not updated
                          tagged(0, "deliveryCompleteCount" / INT32, default=-1),
                          "stateBatches" / _STATE_BATCHES)),
]
SERDE = CoordinatorSerde(NAME, FLAG, PAIRS)


def decode(key: bytes | None, value: bytes | None) -> CoordinatorRecord:
    """One ``__share_group_state`` record; never raises (see :class:`CoordinatorRecord`)."""
    return SERDE.decode(key, value)


def encode(type_name: str, version: int | None, key: dict[str, Any],
           value: dict[str, Any] | None) -> tuple[bytes, bytes | None]:
    """Key and value bytes (``value`` None: a tombstone); ``ValueError`` for a caller's mistake."""
    return SERDE.encode(type_name, version, key, value)
