"""Rebuilding a leader-epoch cache from the batches of a log, as Kafka's append path or recovery does.

Only the batches where the epoch (or the message format) changes can change
the cache: a later batch of the same epoch is a no-op for ``assign``.
:func:`epoch_transitions` keeps just those rows, so a rebuild costs one entry
per epoch change whatever the log's length; scan and replay both use it.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..findings import Finding, finding
from .cache import AssignResult, LeaderEpochCache
from .versions import KafkaVersion, as_version

#: the key of the row before the first one: never equal to a real key
_NO_KEY = -3
NO_KEY = _NO_KEY
_LEGACY_KEY = -2
#: the key of a v2 row whose base offset is negative (damage outside the CRC): never equal to a real key
_BAD_OFFSET_KEY = -4


def epoch_transitions(epochs: np.ndarray, bases: np.ndarray, magics: np.ndarray, previous_key: int = _NO_KEY
                      ) -> tuple[list[tuple[int, int, int]], int]:
    """``(epoch, base_offset, magic)`` of the rows where the epoch or the format changes, and the last key.

    ``previous_key`` carries the last key of an earlier chunk, so a log read
    in chunks gives the same transitions as one read whole.

    A v2 row with a negative base offset (a flipped bit outside the CRC) is
    always kept, and is no transition for the row after it: a rebuild skips
    it, so the next batch of the same epoch must still be there to start it.
    """
    n = len(epochs)
    if not n:
        return [], previous_key
    if n <= SMALL_ROWS:
        return _few_transitions(epochs.tolist(), bases.tolist(), magics.tolist(), previous_key)
    bad = (magics >= 2) & (bases < 0)
    key = np.where(magics < 2, _LEGACY_KEY, np.where(bad, _BAD_OFFSET_KEY, epochs))
    prev = np.concatenate(([previous_key], key[:-1]))
    keep = np.nonzero((key != prev) | bad)[0]
    rows = list(zip(epochs[keep].tolist(), bases[keep].tolist(), magics[keep].tolist()))
    return rows, int(key[-1])


#: up to this many rows :func:`epoch_transitions` walks them in Python: a small partition's few batches cost less
#: that way than numpy's passes (each with its fixed cost)
SMALL_ROWS = 64


def _few_transitions(epochs: list[int], bases: list[int], magics: list[int], key: int
                     ) -> tuple[list[tuple[int, int, int]], int]:
    """:func:`epoch_transitions` of a few rows, one at a time (the same rule)."""
    rows = []
    for epoch, base, magic in zip(epochs, bases, magics):
        bad = magic >= 2 and base < 0
        this = _LEGACY_KEY if magic < 2 else _BAD_OFFSET_KEY if bad else epoch
        if this != key or bad:
            rows.append((epoch, base, magic))
        key = this
    return rows, key


def _pairs(entries: Iterable[tuple[int, int]]) -> list[list[int]]:
    return [[e, s] for e, s in entries]


def rebuild_from_batches(
    batches: Iterable[tuple[int, int, int]],
    mode: str | KafkaVersion | None = None,
    *,
    recovery: bool = False,
) -> tuple[LeaderEpochCache, list[Finding]]:
    """Build a cache from ``(partition_leader_epoch, base_offset, magic)`` triples in log order.

    By default this replays Kafka's append path: every v2 batch with an epoch
    >= 0 is assigned, and a v0/v1 batch clears a non-empty cache.  A v2 batch
    with a negative base offset (damage outside the CRC, which the offset
    checks report with its file and byte position) is skipped like one without
    an epoch: its offset is no place for an epoch to start.  With
    ``recovery=True`` it replays segment recovery instead, which assigns only
    epochs newer than the latest cached one and leaves legacy batches alone.
    Versions without epochs keep no cache, so they get an empty one.

    Returns the cache and notes with codes ``EPOCH_CACHE_CLEARED_BY_LEGACY_BATCH``,
    ``EPOCH_WENT_BACKWARDS``, ``EPOCH_ASSIGN_DROPPED_ENTRIES`` and ``EPOCH_ASSIGN_IGNORED``.
    """
    version = as_version(mode)
    cache = LeaderEpochCache(mode=version)
    notes: list[Finding] = []
    if not version.has_epochs:
        return cache, notes
    for epoch, base_offset, magic in batches:
        epoch, base_offset, magic = int(epoch), int(base_offset), int(magic)
        if magic < 2:
            if recovery or not cache:
                continue
            dropped = cache.clear()
            notes.append(finding(
                "EPOCH_CACHE_CLEARED_BY_LEGACY_BATCH",
                f"a v{magic} batch at offset {base_offset} follows v2 batches; appending it empties the "
                "leader-epoch cache, so the next leader change falls back to high-watermark truncation",
                base_offset=base_offset, magic=magic, dropped_entries=_pairs(dropped)))
            continue
        if epoch < 0 or base_offset < 0:
            # No epoch stamped on the batch, or an offset no cache entry can hold (damaged): nothing to record.
            continue
        latest = cache.latest_entry
        backwards = latest is not None and epoch < latest[0]
        if recovery and latest is not None and epoch <= latest[0]:
            if backwards:
                notes.append(_backwards_note(epoch, base_offset, latest, AssignResult(False, (), (epoch, base_offset))))
            continue
        result = cache.assign(epoch, base_offset)
        if backwards and latest is not None:  # (backwards implies a latest entry)
            notes.append(_backwards_note(epoch, base_offset, latest, result))
        elif result.conflicting:
            notes.append(finding(
                "EPOCH_ASSIGN_DROPPED_ENTRIES",
                f"epoch {epoch} at offset {base_offset} conflicts with cached entries "
                f"{_pairs(result.removed)}; they were removed to keep the cache increasing",
                base_offset=base_offset, epoch=epoch, removed_entries=_pairs(result.removed)))
        elif not result.changed and latest is not None and not (epoch == latest[0] and base_offset >= latest[1]):
            # Only the pre-2.0.1 assign ignores an entry other than a same-epoch repeat.
            notes.append(finding(
                "EPOCH_ASSIGN_IGNORED",
                f"epoch {epoch} at offset {base_offset} does not extend the cache (latest {latest[0]} starts at "
                f"{latest[1]}); Kafka {version.label} ignores it",
                base_offset=base_offset, epoch=epoch, latest_epoch=latest[0], latest_start=latest[1]))
    return cache, notes


def _backwards_note(epoch: int, base_offset: int, latest: tuple[int, int], result: AssignResult) -> Finding:
    if result.changed:
        outcome = f"it replaces cached entries {_pairs(result.removed)}"
    else:
        outcome = "it is ignored"
    return finding(
        "EPOCH_WENT_BACKWARDS",
        f"batch at offset {base_offset} carries epoch {epoch}, older than the cached epoch {latest[0]}; {outcome}",
        base_offset=base_offset, epoch=epoch, previous_epoch=latest[0], applied=result.changed,
        removed_entries=_pairs(result.removed))
