"""The leader-epoch cache: a pure model of Kafka's ``epoch -> start offset`` map (``LeaderEpochFileCache``).

Its update and query rules follow the release chosen (:mod:`.versions`); see
the reference's §7.  Nothing here reads or writes files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from .versions import KafkaVersion, as_version

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class EpochEndOffset(NamedTuple):
    """An answer to an epoch query: the epoch the answer is about and where it ends."""

    epoch: int
    end_offset: int

    @property
    def undefined(self) -> bool:
        """True when the end offset is unknown, so a follower falls back to its high watermark."""
        return self.end_offset == UNDEFINED_OFFSET


UNDEFINED = EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_OFFSET)



@dataclass(frozen=True)
class AssignResult:
    """What one ``assign`` did: whether the cache changed, and which entries it removed.

    Truthy when the cache changed; unpacks as ``changed, removed``.
    """

    changed: bool
    removed: tuple[tuple[int, int], ...] = ()
    entry: tuple[int, int] | None = None

    @property
    def conflicting(self) -> bool:
        """True when the removal lost information, i.e. more than an empty epoch at the same start was replaced.

        This is the case Kafka warns about; replacing one entry that starts at
        the new entry's offset only drops an epoch that held no records.
        """
        if not self.removed:
            return False
        return len(self.removed) > 1 or self.entry is None or self.removed[0][1] != self.entry[1]

    def __bool__(self) -> bool:
        return self.changed

    def __iter__(self) -> Iterator[Any]:
        return iter((self.changed, self.removed))


class LeaderEpochCache:
    """An ordered ``epoch -> start offset`` map with Kafka's update and query rules for one version.

    The constructor takes entries verbatim (e.g. a checkpoint as written), so
    a damaged checkpoint can be represented and compared; see
    :attr:`is_monotonic`.  The update and query methods assume a well-formed
    cache (strictly increasing in both epoch and start offset), which is what
    every sequence of :meth:`assign` calls produces.
    """

    __slots__ = ("_entries", "mode")

    def __init__(self, entries: Iterable[tuple[int, int]] = (), mode: str | KafkaVersion | None = None) -> None:
        self._entries: list[tuple[int, int]] = [(int(e), int(s)) for e, s in entries]
        self.mode: KafkaVersion = as_version(mode)

    # ---- views

    @property
    def entries(self) -> list[tuple[int, int]]:
        """The ``(epoch, start_offset)`` entries in order (a copy)."""
        return list(self._entries)

    @property
    def epochs(self) -> list[int]:
        return [e for e, _ in self._entries]

    @property
    def latest_entry(self) -> tuple[int, int] | None:
        return self._entries[-1] if self._entries else None

    @property
    def earliest_entry(self) -> tuple[int, int] | None:
        return self._entries[0] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        """The highest cached epoch, or ``None`` for an empty cache."""
        return self._entries[-1][0] if self._entries else None

    @property
    def is_monotonic(self) -> bool:
        """Whether entries are non-negative and increasing the way this version's ``assign`` keeps them.

        2.0.1+ keeps both epoch and start offset strictly increasing.  The
        older ``assign`` accepted a new epoch at the latest start offset, so
        there epochs are strictly increasing and start offsets only non-decreasing.
        """
        strict_offsets = self.mode.monotonic_assign
        prev: tuple[int, int] | None = None
        for e, s in self._entries:
            if e < 0 or s < 0:
                return False
            if prev is not None and (e <= prev[0] or s < prev[1] or (strict_offsets and s == prev[1])):
                return False
            prev = (e, s)
        return True

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch of the last entry starting at or before ``offset``; ``None`` if ``offset`` precedes them all."""
        found = None
        for e, s in self._entries:
            if s > offset:
                break
            found = e
        return found

    # ---- updates

    def assign(self, epoch: int, start_offset: int) -> AssignResult:
        """Record that ``epoch`` starts at ``start_offset``, with this version's rules.

        Raises ``ValueError`` for a negative epoch or offset.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"epoch and start offset must be >= 0, got epoch={epoch} start_offset={start_offset}")
        entry = (epoch, start_offset)
        latest = self.latest_entry
        if not self.mode.monotonic_assign:
            # Before KAFKA-7415 the cache only ever grew at the end; anything that
            # would not extend it (an older or equal epoch, an earlier offset) was dropped.
            if latest is None or (epoch > latest[0] and start_offset >= latest[1]):
                self._entries.append(entry)
                return AssignResult(True, (), entry)
            return AssignResult(False, (), entry)
        # Later batches of the current epoch (same epoch, same or later offset) change nothing.
        if latest is not None and latest[0] == epoch and latest[1] <= start_offset:
            return AssignResult(False, (), entry)
        # Keep the map strictly increasing in both keys: whatever at the tail is not
        # strictly below the new entry in epoch *and* offset cannot coexist with it.
        removed: list[tuple[int, int]] = []
        while self._entries and (self._entries[-1][0] >= epoch or self._entries[-1][1] >= start_offset):
            removed.append(self._entries.pop())
        removed.reverse()
        self._entries.append(entry)
        return AssignResult(True, tuple(removed), entry)

    def truncate_from_end(self, end_offset: int) -> list[tuple[int, int]]:
        """Remove every trailing entry starting at or after ``end_offset``; return the removed entries."""
        if end_offset < 0 or not self._entries or self._entries[-1][1] < end_offset:
            return []
        removed: list[tuple[int, int]] = []
        while self._entries and self._entries[-1][1] >= end_offset:
            removed.append(self._entries.pop())
        removed.reverse()
        return removed

    def truncate_from_start(self, start_offset: int) -> list[tuple[int, int]]:
        """Drop leading entries starting at or before ``start_offset`` and restart the last of them there.

        Returns the entries removed (before the re-insert).
        """
        n = 0
        while n < len(self._entries) and self._entries[n][1] <= start_offset:
            n += 1
        if n == 0:
            return []
        removed = self._entries[:n]
        # The epoch that was current at the new log start still owns the records from there on.
        self._entries = [(removed[-1][0], start_offset)] + self._entries[n:]
        return removed

    def clear(self) -> list[tuple[int, int]]:
        """Remove every entry; return what was there."""
        removed, self._entries = self._entries, []
        return removed

    # ---- queries

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> EpochEndOffset:
        """Answer an OffsetsForLeaderEpoch query the way this version's leader would.

        Returns ``(epoch, end_offset)``; :data:`UNDEFINED` is ``(-1, -1)``.
        Versions before 2.0.0 answer with an offset only, so their epoch is
        always ``-1``.  Versions without epochs always answer UNDEFINED.
        """
        mode = self.mode
        if not mode.has_epochs or requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED
        if self._entries and requested_epoch == self._entries[-1][0]:
            return self._answer(requested_epoch, log_end_offset)
        higher = next(((e, s) for e, s in self._entries if e > requested_epoch), None)
        if higher is None:
            # Newer than anything cached (or nothing cached): the leader cannot say.
            return UNDEFINED
        floor = None
        for e, s in self._entries:
            if e > requested_epoch:
                break
            floor = (e, s)
        if floor is None:
            if not mode.kafka_7415:
                return UNDEFINED
            # The requested epoch predates the cache; its end is approximated by the first cached start.
            return EpochEndOffset(requested_epoch, higher[1])
        return self._answer(floor[0], higher[1])

    def _answer(self, epoch: int, end_offset: int) -> EpochEndOffset:
        return EpochEndOffset(epoch if self.mode.answers_with_epoch else UNDEFINED_EPOCH, end_offset)

    # ---- plumbing

    def copy(self) -> LeaderEpochCache:
        return LeaderEpochCache(self._entries, self.mode)

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(list(self._entries))

    def __eq__(self, other: object) -> bool:
        # Equality is about content: two caches with the same entries are equal whatever their version mode.
        if isinstance(other, LeaderEpochCache):
            return self._entries == other._entries
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        body = ", ".join(f"{e}:{s}" for e, s in self._entries)
        return f"LeaderEpochCache({{{body}}}, mode={self.mode.label!r})"
