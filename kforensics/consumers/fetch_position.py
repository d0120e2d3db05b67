"""Where a consumer fetches after resuming from a committed offset: Kafka's consumer and broker rules.

A consumer that resumes from a committed offset sets its position there, with
the commit's leader epoch (``ConsumerCoordinator.refreshCommittedOffsetsIfNeeded``
→ ``SubscriptionState.seekUnvalidated``, 2.3.0 – 3.8.0).  Then:

1. **validation (KIP-320)**: when the position has an epoch and the leader's
   broker answers OffsetsForLeaderEpoch v3+ (brokers 2.3+; ``OffsetFetcherUtils.
   hasUsableOffsetForLeaderEpochVersion``), the consumer asks the leader for the
   end offset of that epoch (``Partition.lastOffsetForLeaderEpoch`` →
   ``LeaderEpochFileCache.endOffsetFor``, on the leader's log end).  If the end
   offset is below the position, truncation is detected: with a reset policy
   the consumer seeks to that end offset, with ``auto.offset.reset=none`` it
   raises ``LogTruncationException``.  An undefined answer resets per
   ``auto.offset.reset`` (2.8+; ``SubscriptionState.maybeCompleteValidation``).
   Without an epoch in the commit (value before v3, clients before 2.1) or
   against an older broker, validation is skipped.
2. **fetch**: the leader refuses a fetch below its log start or above its log
   end with OFFSET_OUT_OF_RANGE (``UnifiedLog.checkLogStartOffset``,
   ``LocalLog.read``, 3.8.0; ``Log.read`` 2.0.0); a fetch at the log end, or
   between the high watermark and the log end, returns nothing and no error.
   On OFFSET_OUT_OF_RANGE the consumer resets per ``auto.offset.reset``
   (earliest: the log start; latest: the log end; none:
   ``OffsetOutOfRangeException``; ``Fetcher`` 2.0.0, ``FetchCollector`` 3.8.0).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..epoch.cache import LeaderEpochCache
from ..epoch.versions import KafkaVersion

#: outcomes of resuming at a committed offset
FETCHES = "FETCHES"  # fetches at the committed offset: no error, whatever lies below it is never delivered
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"  # the fetch fails; reset per auto.offset.reset
TRUNCATION_DETECTED = "TRUNCATION_DETECTED"  # KIP-320: seeks back to the epoch's end offset
RESET_UNDEFINED_EPOCH = "RESET_UNDEFINED_EPOCH"  # KIP-320: the leader cannot place the epoch; reset per policy


@dataclass
class NextPosition:
    """What a consumer resuming at a committed offset does, and where it fetches next."""

    outcome: str
    position: int | None  # the next fetch offset; None: wherever auto.offset.reset puts it
    validated: bool  # whether KIP-320 validation ran
    epoch_answer: tuple[int, int] | None = None  # the leader's (epoch, end offset) for the commit's epoch
    reason: str = ""


def broker_validates(kafka_version: KafkaVersion) -> bool:
    """Whether brokers of this version answer the consumer's OffsetsForLeaderEpoch (v3+, Kafka 2.3+)."""
    return kafka_version.at_least(2, 3, 0)


def next_position(committed: int, committed_epoch: int | None, *, log_start: int, log_end: int,
                  leader_cache: LeaderEpochCache | None, validates: bool = True) -> NextPosition:
    """Where a consumer resuming at ``committed`` (with ``committed_epoch``, None when the commit has none)
    fetches on a leader whose log spans ``[log_start, log_end)``; ``validates``: the client and the broker
    support KIP-320 validation (both 2.3+)."""
    position = committed
    answer = None
    validated = False
    if committed_epoch is not None and validates and leader_cache is not None:
        validated = True
        ans = leader_cache.end_offset_for(committed_epoch, log_end)
        answer = (ans.epoch, ans.end_offset)
        if ans.end_offset < 0 or ans.epoch < 0:
            return NextPosition(RESET_UNDEFINED_EPOCH, None, True, answer,
                                f"the leader has no end offset for epoch {committed_epoch}: the consumer resets per "
                                "auto.offset.reset (2.8+)")
        if ans.end_offset < committed:
            return NextPosition(TRUNCATION_DETECTED, ans.end_offset, True, answer,
                                f"epoch {committed_epoch} ends at {ans.end_offset} on the leader, below the committed "
                                f"offset {committed}: truncation detected, the consumer seeks to {ans.end_offset} "
                                "(auto.offset.reset=none: LogTruncationException)")
    if position < log_start or position > log_end:
        return NextPosition(OFFSET_OUT_OF_RANGE, None, validated, answer,
                            f"fetch offset {position} is outside the leader's log [{log_start}, {log_end}]: "
                            "OFFSET_OUT_OF_RANGE, the consumer resets per auto.offset.reset (earliest: "
                            f"{log_start}, latest: the log end, none: OffsetOutOfRangeException)")
    why = ("validated: " if validated else "no epoch to validate: " if committed_epoch is None else
           "not validated (client or broker before 2.3): ")
    return NextPosition(FETCHES, position, validated, answer, why + f"the consumer fetches at {position}")
