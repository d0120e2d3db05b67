"""One committed offset: a group's position in a partition, as an offset commit record of ``__consumer_offsets``
leaves it, and where in the evidence it was read.

Its own module so that the commit store (:mod:`.offset_store`) and the reader (:mod:`.committed_offsets`) both
build it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

Key = tuple[str, str, int]  # group, topic, partition


@dataclass(slots=True)
class CommittedOffset:
    """A group's committed offset for one partition, and where in the evidence it was read."""

    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int | None  # None: the commit carries no epoch (value before v3, or -1)
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None
    value_version: int | None = None
    producer_id: int = -1  # >= 0 for a transactional offset commit (applied by its COMMIT marker)
    coordinator_partition: int | None = None  # the __consumer_offsets partition
    log_offset: int = -1  # the commit record's offset in it
    file: str | None = None
    position: int | None = None  # byte position of the record's batch in ``file``
    broker_id: int | None = None
    # brokers whose copy holds this same commit (a tuple: one shared by every commit of a single copy, where a list
    # each cost 56 bytes a group)
    copies: tuple[int | None, ...] = ()

    @property
    def key(self) -> Key:
        return self.group, self.topic, self.partition
