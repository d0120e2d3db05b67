"""Leader-epoch cache: a pure-Python model of Kafka's ``epoch -> start offset`` map.

The model follows the reference (kafka-formats.md §7) release by release:

* before 0.11 there is no cache at all;
* 0.11.0 – 1.1.x answer epoch queries with an offset only, answer UNDEFINED
  for an epoch below the first cached one, and ``assign`` only appends;
* 2.0.0 (KIP-279) answers with ``(epoch, end offset)``;
* 2.0.1+ (KAFKA-7415) answers a request below the first cached epoch with
  ``(requested, first start)`` and ``assign`` drops conflicting tail entries.

Everything here is pure data manipulation: nothing reads or writes files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = [
    "UNDEFINED_EPOCH",
    "UNDEFINED_OFFSET",
    "UNDEFINED",
    "EpochEndOffset",
    "KafkaVersion",
    "KAFKA_0_10",
    "KAFKA_0_11",
    "KAFKA_2_0_0",
    "KAFKA_2_0_1",
    "LATEST",
    "parse_kafka_version",
    "AssignResult",
    "LeaderEpochCache",
    "EpochNote",
    "EpochCacheDiff",
    "rebuild_from_batches",
    "diff_caches",
]

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


# ---------------------------------------------------------------------------
# Kafka versions (behaviour modes)

# Stands in for "newer than every release we know about" when comparing.
_LATEST_RELEASE = (1 << 30, 0, 0)


@dataclass(frozen=True)
class KafkaVersion:
    """A Kafka release, reduced to the epoch-related behaviour it implies.

    ``release`` is ``(major, minor, patch)``; for the 0.x line Kafka's own
    numbering is used, so ``0.10.2.1`` is ``(0, 10, 2)``.  ``None`` means the
    newest behaviour.  ``label`` is only for display and is ignored by ``==``.
    """

    label: str = field(compare=False)
    release: tuple[int, int, int] | None

    def at_least(self, *release: int) -> bool:
        """Whether this version is the given release or newer."""
        want = tuple(release) + (0,) * (3 - len(release))
        have = self.release if self.release is not None else _LATEST_RELEASE
        return have >= want

    @property
    def is_latest(self) -> bool:
        return self.release is None

    @property
    def has_epochs(self) -> bool:
        """Whether the broker keeps a leader-epoch cache at all (KIP-101, 0.11.0+)."""
        return self.at_least(0, 11, 0)

    @property
    def answers_with_epoch(self) -> bool:
        """Whether epoch queries are answered with ``(epoch, offset)`` rather than an offset (KIP-279, 2.0.0+)."""
        return self.at_least(2, 0, 0)

    @property
    def kafka_7415(self) -> bool:
        """Whether the KAFKA-7415 changes are in (2.0.1+): below-first answers, monotonic assign, leader self-assign."""
        return self.at_least(2, 0, 1)

    @property
    def monotonic_assign(self) -> bool:
        """Whether ``assign`` removes conflicting tail entries instead of ignoring the new one."""
        return self.kafka_7415

    @property
    def leader_assigns_on_election(self) -> bool:
        """Whether a new leader records its epoch at its LEO before writing anything in it."""
        return self.kafka_7415

    @property
    def truncate_on_fetch(self) -> bool:
        """Whether followers learn of divergence from fetch responses (KAFKA-10554, 2.8.0+)."""
        return self.at_least(2, 8, 0)

    @property
    def cache_mode(self) -> str:
        """The cache behaviour this version falls into: ``none``, ``0.11``, ``2.0.0`` or ``2.0.1``."""
        if not self.has_epochs:
            return "none"
        if not self.answers_with_epoch:
            return "0.11"
        if not self.kafka_7415:
            return "2.0.0"
        return "2.0.1"

    def __str__(self) -> str:
        return self.label


KAFKA_0_10 = KafkaVersion("0.10", (0, 10, 0))
KAFKA_0_11 = KafkaVersion("0.11", (0, 11, 0))
KAFKA_2_0_0 = KafkaVersion("2.0.0", (2, 0, 0))
KAFKA_2_0_1 = KafkaVersion("2.0.1", (2, 0, 1))
LATEST = KafkaVersion("latest", None)

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+][0-9a-z.\-]*)?$")


def parse_kafka_version(text: str | KafkaVersion) -> KafkaVersion:
    """Map a user's version string ("0.10", "1.1", "2.0.1", "3.9", "latest") to a :class:`KafkaVersion`.

    A two-part version means its ``.0`` release, so "2.0" behaves as 2.0.0.
    Suffixes such as ``-SNAPSHOT`` or ``-IV1`` are accepted and ignored.
    Raises ``ValueError`` for anything else.
    """
    if isinstance(text, KafkaVersion):
        return text
    s = str(text).strip().lower()
    if s in ("latest", "trunk", "newest"):
        return LATEST
    m = _VERSION_RE.match(s)
    if not m:
        raise ValueError(f"not a Kafka version: {text!r}")
    major, minor, third, fourth = (None if g is None else int(g) for g in m.groups())
    if major == 0:
        # 0.x releases were numbered 0.<minor>.<patch>.<fix>; the fourth part never changed epoch behaviour.
        release = (0, minor, third or 0)
    else:
        if fourth is not None:
            raise ValueError(f"not a Kafka version: {text!r} (too many parts)")
        release = (major, minor, third or 0)
    return KafkaVersion(s.lstrip("v"), release)


def _as_version(mode: str | KafkaVersion | None) -> KafkaVersion:
    return LATEST if mode is None else parse_kafka_version(mode)


# ---------------------------------------------------------------------------
# The cache


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
        self.mode: KafkaVersion = _as_version(mode)

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

    def start_offset_of(self, epoch: int) -> int | None:
        """The cached start offset of ``epoch``, or ``None`` if it is not cached."""
        for e, s in self._entries:
            if e == epoch:
                return s
        return None

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


# ---------------------------------------------------------------------------
# Rebuilding from batches


@dataclass
class EpochNote:
    """Something noteworthy seen while rebuilding a cache from batches."""

    code: str
    message: str
    facts: dict[str, Any] = field(default_factory=dict)


def _pairs(entries: Iterable[tuple[int, int]]) -> list[list[int]]:
    return [[e, s] for e, s in entries]


def rebuild_from_batches(
    batches: Iterable[tuple[int, int, int]],
    mode: str | KafkaVersion | None = None,
    *,
    recovery: bool = False,
) -> tuple[LeaderEpochCache, list[EpochNote]]:
    """Build a cache from ``(partition_leader_epoch, base_offset, magic)`` triples in log order.

    By default this replays Kafka's append path: every v2 batch with an epoch
    >= 0 is assigned, and a v0/v1 batch clears a non-empty cache.  With
    ``recovery=True`` it replays segment recovery instead, which assigns only
    epochs newer than the latest cached one and leaves legacy batches alone.
    Versions without epochs keep no cache, so they get an empty one.

    Returns the cache and notes with codes ``EPOCH_CACHE_CLEARED_BY_LEGACY_BATCH``,
    ``EPOCH_WENT_BACKWARDS``, ``EPOCH_ASSIGN_DROPPED_ENTRIES`` and ``EPOCH_ASSIGN_IGNORED``.
    """
    version = _as_version(mode)
    cache = LeaderEpochCache(mode=version)
    notes: list[EpochNote] = []
    if not version.has_epochs:
        return cache, notes
    for epoch, base_offset, magic in batches:
        epoch, base_offset, magic = int(epoch), int(base_offset), int(magic)
        if magic < 2:
            if recovery or not cache:
                continue
            dropped = cache.clear()
            notes.append(EpochNote(
                "EPOCH_CACHE_CLEARED_BY_LEGACY_BATCH",
                f"a v{magic} batch at offset {base_offset} follows v2 batches; appending it empties the "
                "leader-epoch cache, so the next leader change falls back to high-watermark truncation",
                {"base_offset": base_offset, "magic": magic, "dropped_entries": _pairs(dropped)}))
            continue
        if epoch < 0:
            # No epoch stamped on the batch: Kafka has nothing to record for it.
            continue
        latest = cache.latest_entry
        backwards = latest is not None and epoch < latest[0]
        if recovery and latest is not None and epoch <= latest[0]:
            if backwards:
                notes.append(_backwards_note(epoch, base_offset, latest, AssignResult(False, (), (epoch, base_offset))))
            continue
        result = cache.assign(epoch, base_offset)
        if backwards:
            notes.append(_backwards_note(epoch, base_offset, latest, result))
        elif result.conflicting:
            notes.append(EpochNote(
                "EPOCH_ASSIGN_DROPPED_ENTRIES",
                f"epoch {epoch} at offset {base_offset} conflicts with cached entries "
                f"{_pairs(result.removed)}; they were removed to keep the cache increasing",
                {"base_offset": base_offset, "epoch": epoch, "removed_entries": _pairs(result.removed)}))
        elif not result.changed and latest is not None and not (epoch == latest[0] and base_offset >= latest[1]):
            # Only the pre-2.0.1 assign ignores an entry other than a same-epoch repeat.
            notes.append(EpochNote(
                "EPOCH_ASSIGN_IGNORED",
                f"epoch {epoch} at offset {base_offset} does not extend the cache (latest {latest[0]} starts at "
                f"{latest[1]}); Kafka {version.label} ignores it",
                {"base_offset": base_offset, "epoch": epoch, "latest_epoch": latest[0], "latest_start": latest[1]}))
    return cache, notes


def _backwards_note(epoch: int, base_offset: int, latest: tuple[int, int], result: AssignResult) -> EpochNote:
    if result.changed:
        outcome = f"it replaces cached entries {_pairs(result.removed)}"
    else:
        outcome = "it is ignored"
    return EpochNote(
        "EPOCH_WENT_BACKWARDS",
        f"batch at offset {base_offset} carries epoch {epoch}, older than the cached epoch {latest[0]}; {outcome}",
        {"base_offset": base_offset, "epoch": epoch, "previous_epoch": latest[0], "applied": result.changed,
         "removed_entries": _pairs(result.removed)})


# ---------------------------------------------------------------------------
# Comparing a checkpoint with a rebuilt cache

_DIFF_ORDER = {
    "EPOCH_CHECKPOINT_NOT_MONOTONIC": 0,
    "EPOCH_ENTRY_BEYOND_LEO": 1,
    "EPOCH_EMPTY_AT_LEO": 2,
    "EPOCH_MISSING_FROM_LOG": 3,
    "EPOCH_MISSING_FROM_CHECKPOINT": 4,
    "EPOCH_START_DIFFERS": 5,
}


@dataclass
class EpochCacheDiff:
    """One difference between a leader-epoch checkpoint as written and the cache rebuilt from the log."""

    code: str
    message: str
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def epoch(self) -> int | None:
        return self.facts.get("epoch")


def diff_caches(
    written: LeaderEpochCache | Iterable[tuple[int, int]],
    rebuilt: LeaderEpochCache | Iterable[tuple[int, int]],
    log_end_offset: int | None,
    *,
    log_start_offset: int | None = None,
) -> list[EpochCacheDiff]:
    """List the differences between ``written`` (the checkpoint) and ``rebuilt`` (from the batches).

    Codes: ``EPOCH_CHECKPOINT_NOT_MONOTONIC`` (judged by ``written``'s
    version mode), ``EPOCH_ENTRY_BEYOND_LEO`` (a
    checkpoint entry starts after the LEO), ``EPOCH_EMPTY_AT_LEO`` (a
    checkpoint epoch starts exactly at the LEO and has no batches: what a
    2.0.1+ leader records on election), ``EPOCH_MISSING_FROM_LOG``,
    ``EPOCH_MISSING_FROM_CHECKPOINT`` and ``EPOCH_START_DIFFERS``.  When
    ``log_start_offset`` is given, the rebuilt side is first truncated from
    the start there, as Kafka does after loading.  Ordered by epoch.
    """
    w_cache = written if isinstance(written, LeaderEpochCache) else LeaderEpochCache(written)
    w_entries = w_cache.entries
    r_cache = rebuilt.copy() if isinstance(rebuilt, LeaderEpochCache) else LeaderEpochCache(rebuilt)
    if log_start_offset is not None:
        r_cache.truncate_from_start(log_start_offset)
    out: list[EpochCacheDiff] = []

    # Judged by the written cache's own version: before 2.0.1 two epochs could share a start offset.
    if not w_cache.is_monotonic:
        out.append(EpochCacheDiff(
            "EPOCH_CHECKPOINT_NOT_MONOTONIC",
            "checkpoint entries are not increasing in epoch and start offset (or are negative); "
            f"Kafka {w_cache.mode.label} never writes such a file",
            {"entries": _pairs(w_entries)}))

    # A damaged checkpoint may repeat an epoch; like a map keyed by epoch, the last line wins.
    w_map: dict[int, int] = {}
    for e, s in w_entries:
        w_map[e] = s
    r_map = dict(r_cache.entries)

    for epoch in sorted(w_map):
        start = w_map[epoch]
        if log_end_offset is not None and start > log_end_offset:
            out.append(EpochCacheDiff(
                "EPOCH_ENTRY_BEYOND_LEO",
                f"checkpoint says epoch {epoch} starts at {start}, beyond the log end offset {log_end_offset}; "
                "typically a truncation whose asynchronous checkpoint flush had not happened yet",
                {"epoch": epoch, "start_offset": start, "log_end_offset": log_end_offset}))
            beyond = True
        else:
            beyond = False
        if epoch in r_map:
            continue
        if beyond:
            continue
        if log_end_offset is not None and start == log_end_offset:
            out.append(EpochCacheDiff(
                "EPOCH_EMPTY_AT_LEO",
                f"checkpoint says epoch {epoch} starts at the log end offset {start} and no batch carries it: "
                "the replica was elected leader in that epoch and wrote nothing yet",
                {"epoch": epoch, "start_offset": start, "log_end_offset": log_end_offset}))
            continue
        out.append(EpochCacheDiff(
            "EPOCH_MISSING_FROM_LOG",
            f"checkpoint lists epoch {epoch} from offset {start}, but no batch in the log carries it "
            "(removed by retention, compaction or truncation, or the checkpoint is stale)",
            {"epoch": epoch, "start_offset": start}))

    for epoch in sorted(r_map):
        if epoch not in w_map:
            out.append(EpochCacheDiff(
                "EPOCH_MISSING_FROM_CHECKPOINT",
                f"batches carry epoch {epoch} from offset {r_map[epoch]}, but the checkpoint does not list it",
                {"epoch": epoch, "start_offset": r_map[epoch]}))
        elif w_map[epoch] != r_map[epoch]:
            out.append(EpochCacheDiff(
                "EPOCH_START_DIFFERS",
                f"epoch {epoch} starts at {w_map[epoch]} in the checkpoint but at {r_map[epoch]} in the log",
                {"epoch": epoch, "checkpoint_start": w_map[epoch], "rebuilt_start": r_map[epoch]}))

    out.sort(key=lambda d: (-1 if d.epoch is None else d.epoch, _DIFF_ORDER[d.code]))
    return out
