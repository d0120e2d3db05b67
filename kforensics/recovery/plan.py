"""Log loading at the next start (``LogLoader``): which segments it reads, where it cuts, what is lost.

The rules (docs/replay-at-restart.md R1-R5, from ``Log.recoverLog`` /
``LogLoader.recoverLog``, ``LogSegment.recover``, ``LogManager.loadLogs``):

* Without a ``.kafka_cleanshutdown`` marker, every segment from the one that
  *contains* the recovery point on is recovered (an absent or unreadable
  recovery point means 0): the first invalid entry (CRC mismatch, a size
  below the minimum such as zeros, a torn or impossible batch) cuts the log
  there and every later segment is deleted.  Damage in segments wholly below
  that one is not looked at: it stays.
* With the marker nothing is recovered and damage stays in place; but if the
  active segment's reader throws (zeros, a size below the minimum) Kafka
  cannot even compute the log end: the broker does not start.
* A segment without its ``.index`` is recovered either way (without deleting
  later segments).

The plan is computed once, from the scan's segment facts; scan reports it and
replay starts each replica from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..pickling import ByFields


class SegmentExtent(Protocol):
    base_offset: int
    path: str | None
    size: int
    batches: int
    records: int
    first_offset: int | None
    last_offset: int | None
    first_invalid_position: int | None
    kafka_stop: str | None
    valid_end_offset: int | None
    partial_offsets: tuple[int, int] | None
    valid_records: int
    cut_records_below_hw: int
    has_index: bool
    index_last_position: int | None
    kafka_valid_bytes: int


@dataclass
class RecoveryPlan(ByFields):
    """What log loading would do to one partition (computed, never done)."""

    recovers: bool = False  # any segment is recovered
    clean_shutdown: bool = False
    from_segment: int | None = None  # base offset of the first segment recovered
    truncate_segment: str | None = None  # the segment recovery cuts
    truncate_position: int | None = None  # ... at this byte
    log_end_offset: int | None = None  # the LEO after loading
    lost_first_offset: int | None = None  # offsets [first, last] that recovery removes
    lost_last_offset: int | None = None
    lost_records: int = 0
    lost_committed_records: int = 0  # of those, records below the high watermark
    lost_bytes: int = 0
    segments_deleted: list[str] = field(default_factory=list)
    rebuilds_indexes: list[str] = field(default_factory=list)
    damage_kept: str | None = None  # a segment whose damage stays (recovery skips it)
    damage_kept_position: int | None = None
    damage_kept_offset: int | None = None  # the offset where the kept damage starts (its segment's valid end)
    damage_kept_is_torn_tail: bool = False  # only a torn final entry: readers stop before it, as at the file's end
    load_fails: bool = False  # Kafka cannot load this log (the broker does not start)
    # Kafka (0.11+) cannot read the leader-epoch-checkpoint: up to 3.2 the broker does not start, from 3.3
    # (KAFKA-13773) the log dir goes offline; either way the replica takes no part
    epoch_checkpoint_unreadable: bool = False
    note: str | None = None
    # evidence that could not be read (a segment, the partition dir's listing): what loading does is then unknown,
    # and this says why; the rest of the plan covers only what was read
    unknown: str | None = None

    @property
    def truncates(self) -> bool:
        return self.truncate_segment is not None


def _torn_tail(s: SegmentExtent) -> bool:
    """Whether a segment's only damage is a partial entry at its end (nothing valid after it)."""
    return (s.kafka_stop == "partial" and s.first_invalid_position is not None
            and s.first_invalid_position >= s.kafka_valid_bytes
            and (s.last_offset is None or s.valid_end_offset == s.last_offset + 1))


def plan_recovery(segments: list[SegmentExtent], *, clean_shutdown: bool, recovery_point: int | None,
                  log_end_offset: int | None, deleting: bool = False,
                  epoch_checkpoint_unreadable: bool = False) -> RecoveryPlan:
    """The recovery plan for a partition's segments (in offset order)."""
    plan = RecoveryPlan(clean_shutdown=clean_shutdown, log_end_offset=log_end_offset,
                        epoch_checkpoint_unreadable=epoch_checkpoint_unreadable)
    if deleting:
        plan.note = "-delete directory: loaded without recovery and deleted"
        return plan
    segs = [s for s in segments if s.path]
    plan.rebuilds_indexes = [s.path for s in segs if s.path is not None and not s.has_index and s.batches]
    if clean_shutdown:
        bad = next((s for s in segs if s.first_invalid_position is not None), None)
        if bad is not None:
            plan.damage_kept, plan.damage_kept_position = bad.path, bad.first_invalid_position
            plan.damage_kept_offset = bad.valid_end_offset if bad.valid_end_offset is not None else bad.base_offset
            plan.damage_kept_is_torn_tail = _torn_tail(bad)
        # LogSegment.readNextOffset reads the active segment on from its last index entry: if it walks into
        # a range the reader refuses (zeros, a size below the minimum) it throws and the broker does not start
        active = segs[-1] if segs else None
        plan.load_fails = active is not None and active.kafka_stop == "corrupt" and \
            active.kafka_valid_bytes >= (active.index_last_position or 0)
        return plan
    rp = recovery_point if recovery_point is not None else 0
    start = 0
    for i, s in enumerate(segs):
        if s.base_offset <= rp:
            start = i
    below = next((s for s in segs[:start] if s.first_invalid_position is not None), None)
    if below is not None:
        plan.damage_kept, plan.damage_kept_position = below.path, below.first_invalid_position
        plan.damage_kept_offset = below.valid_end_offset if below.valid_end_offset is not None else below.base_offset
        plan.damage_kept_is_torn_tail = _torn_tail(below)
    if start < len(segs):
        plan.recovers = True
        plan.from_segment = segs[start].base_offset
    for i, s in enumerate(segs[start:], start):
        if s.first_invalid_position is None:
            continue
        later = segs[i + 1 :]
        plan.truncate_segment, plan.truncate_position = s.path, s.first_invalid_position
        plan.segments_deleted = [x.path for x in later if x.path is not None]  # (segs all have one)
        plan.lost_bytes = (s.size - s.first_invalid_position) + sum(x.size for x in later)
        plan.lost_records = (s.records - s.valid_records) + sum(x.records for x in later)
        plan.lost_committed_records = s.cut_records_below_hw + sum(x.cut_records_below_hw for x in later)
        kept_end = s.valid_end_offset if s.valid_end_offset is not None else s.base_offset
        ends = [x.last_offset for x in [s, *later] if x.last_offset is not None]
        ends += [x.partial_offsets[1] for x in [s, *later] if x.partial_offsets is not None]
        if ends and max(ends) >= kept_end:
            plan.lost_first_offset, plan.lost_last_offset = kept_end, max(ends)
        plan.log_end_offset = kept_end
        break
    return plan
