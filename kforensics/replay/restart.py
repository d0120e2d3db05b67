"""A replica as its broker has it after a restart: loaded as ``LogLoader`` would, before any election.

Kafka does not truncate the bytes as they lie on disk; it truncates the log
each broker has after loading it (docs/replay-at-restart.md, R1-R7):

* the log is cut where the scan's recovery plan says (the same plan ``scan``
  reports; nothing is recomputed here), and a log Kafka cannot load takes no
  part at all;
* the leader-epoch cache is the checkpoint (read through ``assign`` from
  2.7), plus the epochs recovery meets that are newer than the latest
  cached one, then truncated from the end at the recovered log end and from
  the start at the log start offset;
* the high watermark is the checkpoint's, capped at the log end (and, from
  2.4, raised to the log start).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..epoch.cache import LeaderEpochCache
from ..epoch.rebuild import NO_KEY, epoch_transitions
from ..epoch.versions import KafkaVersion
from ..log.file_kinds import segment_name
from ..recovery.plan import RecoveryPlan
from .replica import BatchLog, NeedRows, Replica


@dataclass
class Restarted:
    """One replica after its broker's restart."""

    log: BatchLog  # what the broker has after loading
    cache: LeaderEpochCache
    high_watermark: int  # as Kafka uses it after loading (the checkpoint's, clamped)
    lost_to_recovery: BatchLog  # batches on disk that loading cuts
    load_fails: bool = False
    # offsets loading cuts that no readable batch shows (a torn final batch, zeroed bytes): [first, last] ranges
    lost_unread: list[tuple[int, int]] = field(default_factory=list)
    # damage the restart keeps: a fetch or read that reaches this offset fails (None: every kept batch reads)
    read_fails_from: int | None = None
    notes: list[str] = field(default_factory=list)
    # why this replica cannot be judged: its evidence could not be read, so neither its log nor what its broker
    # loads is known (None: judged)
    unjudged: str | None = None

    @property
    def log_end_offset(self) -> int | None:
        return self.log.end_offset


def _cut_mask(r: Replica) -> np.ndarray:
    """Rows the recovery plan cuts: from the cut position in its segment on, and every later segment."""
    log, plan = r.log, r.recovery
    cut = np.zeros(len(log), dtype=bool)
    if plan is None or not plan.truncates:
        return cut
    seg = r.segment_index(plan.truncate_segment)
    if seg is None:
        return cut
    segs, pos = log.col("segment"), log.col("position")
    mask: np.ndarray = (segs > seg) | ((segs == seg) & (pos >= plan.truncate_position))
    return mask


def _recovered_rows(r: Replica, kept: BatchLog) -> BatchLog:
    """The kept batches of the segments recovery reads (from the one holding the recovery point), of those at hand
    (a windowed replica's: those in its window)."""
    plan = r.recovery
    if plan is None or not plan.recovers or plan.from_segment is None:
        return kept.select(np.zeros(len(kept), dtype=bool))
    first = r.segment_index(segment_name(plan.from_segment, ".log"))
    if first is None:
        return kept
    return kept.select(kept.col("segment") >= first)


def _transitions(log: BatchLog, key: int = NO_KEY) -> list[tuple[int, int, int]]:
    return epoch_transitions(log.col("partition_leader_epoch"), log.col("base_offset"), log.col("magic"), key)[0]


def recovered_transitions(r: Replica, kept: BatchLog) -> list[tuple[int, int, int]]:
    """``epoch_transitions`` over the kept batches recovery reads (:func:`_recovered_rows` of the whole log, the
    first of them a transition with its own base offset), for a windowed replica too: the part below its window
    from its prefix, which tells where each elided segment starts and the transitions after that
    (:attr:`~kforensics.replay.replica.Prefix.segment_starts`; recovery cuts nothing below a window, see
    :func:`restart`).  Raises :class:`NeedRows` when the prefix cannot tell and recovery reads below the window."""
    recovered = _recovered_rows(r, kept)
    p, plan = r.prefix, r.recovery
    if p is None or plan is None or not plan.recovers or plan.from_segment is None:
        return _transitions(recovered)
    first = r.segment_index(segment_name(plan.from_segment, ".log"))
    if first is None:
        return r.transitions(kept)  # every kept batch, the elided ones first
    starts = p.segment_starts
    if starts is None:
        if plan.from_segment < p.end:
            raise NeedRows(plan.from_segment)  # recovery may re-read batches below the window
        return _transitions(recovered)
    i = next((k for k, s in enumerate(starts) if s[0] >= first), None)
    if i is None:
        return _transitions(recovered)  # no elided batch is in a recovered segment
    _seg, epoch, base, magic, through = starts[i]
    head, _ = epoch_transitions(np.array([epoch]), np.array([base]), np.array([magic]))
    # after the first recovered batch each row's key is compared with the previous row's, as over the whole log
    return head + p.transitions[through:] + _transitions(recovered, p.last_key)


def _cut_below_window(r: Replica, cut: np.ndarray) -> bool:
    """Whether recovery's cut takes the first batch at hand of a windowed replica.  The window's floor is at or
    below the offsets the plan cuts from, so this is rare (a floor exactly at them, or batches overlapping others),
    but then the cut may reach elided batches, and a log it leaves no batch at hand ends where no window row says:
    the rows below are needed."""
    return r.prefix is not None and len(cut) > 0 and bool(cut[0])


def _unread(plan: RecoveryPlan | None, lost: BatchLog) -> list[tuple[int, int]]:
    """The parts of the plan's lost offset range that no cut batch covers."""
    if plan is None or plan.lost_first_offset is None or plan.lost_last_offset is None:
        return []
    first, last = plan.lost_first_offset, plan.lost_last_offset
    if not len(lost):
        return [(first, last)]
    out = []
    lo, hi = int(lost.col("base_offset")[0]), int(lost.col("last_offset")[-1])
    if first < lo:
        out.append((first, lo - 1))
    if hi < last:
        out.append((hi + 1, last))
    return out


def _read_fails_from(r: Replica, kept: BatchLog) -> int | None:
    """Where reads of the kept log fail: at a kept CRC-invalid batch, or where kept framing damage lies.

    A torn final entry does not count: Kafka's reader stops before it, as it
    would at the end of the file.
    """
    plan = r.recovery
    bad = kept.first_damaged()
    fails = int(kept.col("base_offset")[bad]) if bad is not None else None
    seg = r.segment_index(plan.damage_kept) if plan is not None and plan.damage_kept else None
    if seg is not None and plan is not None and plan.damage_kept_position is not None:
        segs, pos = kept.col("segment"), kept.col("position")
        after = np.flatnonzero((segs > seg) | ((segs == seg) & (pos >= plan.damage_kept_position)))
        if len(after):  # valid batches follow the damage: a read across it meets the damage first
            i = int(after[0])
            at = int(kept.col("last_offset")[i - 1]) + 1 if i else int(kept.col("base_offset")[i])
            fails = at if fails is None else min(fails, at)
    return fails


def load_cache(r: Replica, kept: BatchLog, log_end: int, mode: KafkaVersion) -> LeaderEpochCache:
    """The leader-epoch cache after loading (R6)."""
    if not mode.has_epochs:
        return LeaderEpochCache(mode=mode)
    if r.recovery is None:
        cache = r.epoch_cache(mode)  # no disk behind this replica: its checkpoint stands for its batches
    else:
        entries = [(e, s) for e, s in (r.epoch_checkpoint or []) if e >= 0 and s >= 0]
        if mode.at_least(2, 7, 0):
            # from 2.7 the checkpoint is read through assign, which drops conflicting entries
            cache = LeaderEpochCache(mode=mode)
            for e, s in entries:
                cache.assign(e, s)  # entries with a negative value were dropped above
        else:
            cache = LeaderEpochCache(r.epoch_checkpoint or [], mode=mode)
        for epoch, base, magic in recovered_transitions(r, kept):
            latest = cache.latest_entry
            # LogSegment.recover assigns only epochs newer than the latest cached one
            if magic == 2 and epoch >= 0 and base >= 0 and (latest is None or epoch > latest[0]):
                cache.assign(epoch, base)
    cache.truncate_from_end(log_end)
    cache.truncate_from_start(r.log_start)
    return cache


def restart(r: Replica, mode: KafkaVersion) -> Restarted:
    """The replica as its broker loads it at the next start."""
    plan = r.recovery
    if plan is not None and plan.unknown:
        # unread evidence is no empty log and no healthy one: the replica takes no part and is not judged
        return Restarted(BatchLog.empty(), LeaderEpochCache(mode=mode), 0, BatchLog.empty(), unjudged=plan.unknown,
                         notes=[f"not judged: {plan.unknown}; what this broker holds and loads is unknown"])
    if plan is not None and plan.load_fails:
        return Restarted(BatchLog.empty(), LeaderEpochCache(mode=mode), 0, BatchLog.empty(), load_fails=True,
                         notes=["the broker cannot load this log (the marker skips recovery and the active segment "
                                "holds a range Kafka's reader refuses): it does not start"])
    if plan is not None and plan.epoch_checkpoint_unreadable and mode.has_epochs:
        return Restarted(BatchLog.empty(), LeaderEpochCache(mode=mode), 0, BatchLog.empty(), load_fails=True,
                         notes=["the broker cannot read this log's leader-epoch-checkpoint: loading throws (up to "
                                "3.2 the broker does not start, from 3.3 the log dir goes offline)"])
    if plan is None or not plan.truncates:
        kept, lost = r.log, BatchLog(r.log.data[:0])  # nothing cut (the masks' answer, without them)
    else:
        cut = _cut_mask(r)
        if _cut_below_window(r, cut) and r.prefix is not None:
            raise NeedRows(r.prefix.end - 1)
        kept, lost = r.log.select(~cut), r.log.select(cut)
    kept_end = kept.end_offset if len(kept) else None
    log_end: int = kept_end if kept_end is not None else (r.prefix.end if r.prefix is not None else r.log_start)
    cache = load_cache(r, kept, log_end, mode)
    hw = r.high_watermark or 0
    # Partition: min(checkpoint, LEO) up to 2.3; clamped to [log start, LEO] from 2.4
    hw = max(r.log_start, min(hw, log_end)) if mode.at_least(2, 4, 0) else min(hw, log_end)
    unread = _unread(plan, lost)
    notes = []
    if len(lost) or unread:
        first = int(lost.col("base_offset")[0]) if len(lost) else unread[0][0]
        notes.append(f"restart: recovery cuts the log at offset {min([first] + [u[0] for u in unread])}; "
                     f"it ends at {log_end}")
    if plan is not None and plan.damage_kept:
        notes.append("restart: damage kept (recovery does not read it); readers of those offsets fail")
    return Restarted(kept, cache, hw, lost, lost_unread=unread, read_fails_from=_read_fails_from(r, kept),
                     notes=notes)
