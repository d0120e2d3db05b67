"""The records of ``__transaction_state``: the transaction coordinator's state per transactional id.

Framing as every coordinator (:mod:`.internal_topics`): key ``int16 type``
(only type 0, ``TransactionLogKey``) + non-flexible key, value ``int16
version`` + body, null value a tombstone (the transactional id expired).
``TransactionLogValue`` v0 is non-flexible; v1 (transactions v2, KIP-890) is
flexible and carries the tagged ``previousProducerId`` (tag 0),
``nextProducerId`` (tag 1) and ``clientTransactionVersion`` (tag 2).
``transactionStatus`` is a :data:`TRANSACTION_STATES` id.

Sources: apache/kafka ``transaction-coordinator/src/main/resources/common/
message/TransactionLog{Key,Value}.json`` and ``TransactionState.java``
(newest stored versions, 2025 trunk).
"""

from __future__ import annotations

from typing import Any

from .internal_topics import CoordinatorRecord, CoordinatorSerde, RecordPair, key_type, value_type
from .message_schema import INT8, INT16, INT32, INT64, STRING, array, nullable_array, struct, tagged

NAME = "transaction-log"
FLAG = "--transaction-log-decoder"
TOPIC = "__transaction_state"

#: TransactionState ids and the names Kafka gives them
TRANSACTION_STATES: dict[int, str] = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}

TRANSACTION_LOG_VALUE = value_type(
    0, "TransactionLogValue", 1,
    "producerId" / INT64,
    tagged(0, "previousProducerId" / INT64, default=-1),
    tagged(1, "nextProducerId" / INT64, default=-1),
    "producerEpoch" / INT16,
    "transactionTimeoutMs" / INT32,
    "transactionStatus" / INT8,
    "transactionPartitions" / nullable_array(struct("topic" / STRING, "partitionIds" / array(INT32))),
    "transactionLastUpdateTimestampMs" / INT64,
    "transactionStartTimestampMs" / INT64,
    tagged(2, "clientTransactionVersion" / INT16, default=0),
    flexible_from=1)

PAIRS = [RecordPair(key_type(0, "TransactionLogKey", "transactionalId" / STRING), TRANSACTION_LOG_VALUE)]
SERDE = CoordinatorSerde(NAME, FLAG, PAIRS)


def state_name(status: int | None) -> str | None:
    """The name of a ``transactionStatus`` id (None for an id Kafka does not define)."""
    return TRANSACTION_STATES.get(status) if status is not None else None


def decode(key: bytes | None, value: bytes | None) -> CoordinatorRecord:
    """One ``__transaction_state`` record; never raises (see :class:`CoordinatorRecord`)."""
    return SERDE.decode(key, value)


def encode(type_name: str, version: int | None, key: dict[str, Any],
           value: dict[str, Any] | None) -> tuple[bytes, bytes | None]:
    """Key and value bytes (``value`` None: a tombstone); ``ValueError`` for a caller's mistake."""
    return SERDE.encode(type_name, version, key, value)
