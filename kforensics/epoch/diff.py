"""Comparing a leader-epoch checkpoint as written with the cache rebuilt from the log."""

from __future__ import annotations

from collections.abc import Iterable

from ..findings import Finding, finding
from .cache import LeaderEpochCache


def _pairs(entries: Iterable[tuple[int, int]]) -> list[list[int]]:
    return [[e, s] for e, s in entries]


_DIFF_ORDER = {
    "EPOCH_CHECKPOINT_NOT_MONOTONIC": 0,
    "EPOCH_ENTRY_BEYOND_LEO": 1,
    "EPOCH_EMPTY_AT_LEO": 2,
    "EPOCH_MISSING_FROM_LOG": 3,
    "EPOCH_MISSING_FROM_CHECKPOINT": 4,
    "EPOCH_START_DIFFERS": 5,
}


def diff_caches(
    written: LeaderEpochCache | Iterable[tuple[int, int]],
    rebuilt: LeaderEpochCache | Iterable[tuple[int, int]],
    log_end_offset: int | None,
    *,
    log_start_offset: int | None = None,
) -> list[Finding]:
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
    out: list[Finding] = []

    # Judged by the written cache's own version: before 2.0.1 two epochs could share a start offset.
    if not w_cache.is_monotonic:
        out.append(finding(
            "EPOCH_CHECKPOINT_NOT_MONOTONIC",
            "checkpoint entries are not increasing in epoch and start offset (or are negative); "
            f"Kafka {w_cache.mode.label} never writes such a file",
            entries=_pairs(w_entries)))

    # A damaged checkpoint may repeat an epoch; like a map keyed by epoch, the last line wins.
    w_map: dict[int, int] = {}
    for e, s in w_entries:
        w_map[e] = s
    r_map = dict(r_cache.entries)

    out += _checkpoint_entries_unmatched(w_map, r_map, log_end_offset)
    out += _log_epochs_unmatched(w_map, r_map)

    out.sort(key=lambda d: (d.facts.get("epoch", -1), _DIFF_ORDER[d.code]))
    return out


def _checkpoint_entries_unmatched(w_map: dict[int, int], r_map: dict[int, int],
                                  log_end_offset: int | None) -> list[Finding]:
    """The checkpoint's epochs the log does not bear out: beyond the log end, empty at it, or carried by no batch."""
    out: list[Finding] = []
    for epoch in sorted(w_map):
        start = w_map[epoch]
        if log_end_offset is not None and start > log_end_offset:
            out.append(finding(
                "EPOCH_ENTRY_BEYOND_LEO",
                f"checkpoint says epoch {epoch} starts at {start}, beyond the log end offset {log_end_offset}; "
                "typically a truncation whose asynchronous checkpoint flush had not happened yet",
                epoch=epoch, start_offset=start, log_end_offset=log_end_offset))
            beyond = True
        else:
            beyond = False
        if epoch in r_map:
            continue
        if beyond:
            continue
        if log_end_offset is not None and start == log_end_offset:
            out.append(finding(
                "EPOCH_EMPTY_AT_LEO",
                f"checkpoint says epoch {epoch} starts at the log end offset {start} and no batch carries it: "
                "the replica was elected leader in that epoch and wrote nothing yet",
                epoch=epoch, start_offset=start, log_end_offset=log_end_offset))
            continue
        out.append(finding(
            "EPOCH_MISSING_FROM_LOG",
            f"checkpoint lists epoch {epoch} from offset {start}, but no batch in the log carries it "
            "(removed by retention, compaction or truncation, or the checkpoint is stale)",
            epoch=epoch, start_offset=start))
    return out


def _log_epochs_unmatched(w_map: dict[int, int], r_map: dict[int, int]) -> list[Finding]:
    """The log's epochs the checkpoint lacks, or lists with another start offset."""
    out: list[Finding] = []
    for epoch in sorted(r_map):
        if epoch not in w_map:
            out.append(finding(
                "EPOCH_MISSING_FROM_CHECKPOINT",
                f"batches carry epoch {epoch} from offset {r_map[epoch]}, but the checkpoint does not list it",
                epoch=epoch, start_offset=r_map[epoch]))
        elif w_map[epoch] != r_map[epoch]:
            out.append(finding(
                "EPOCH_START_DIFFERS",
                f"epoch {epoch} starts at {w_map[epoch]} in the checkpoint but at {r_map[epoch]} in the log",
                epoch=epoch, checkpoint_start=w_map[epoch], rebuilt_start=r_map[epoch]))
    return out
