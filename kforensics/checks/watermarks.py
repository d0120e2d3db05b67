"""A partition's checkpointed high watermark and recovery point against its log, and the recovery plan's cost."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..findings import Finding, Severity, finding
from ..recovery.plan import RecoveryPlan, SegmentExtent


def check_watermarks(*, path: str, log_start: int | None, log_end: int | None, high_watermark: int | None,
                     recovery_point: int | None, complete: bool, hw_checkpoint_present: bool,
                     is_metadata_log: bool) -> list[Finding]:
    """HW above the LEO (committed records missing), HW below the log start, recovery point above the LEO.

    ``complete`` is False when a segment could not be read: the log end is
    then unknown, and nothing is concluded from it.
    """
    out: list[Finding] = []
    if log_end is None or not complete:
        return out
    hw, rp = high_watermark, recovery_point
    if hw is not None:
        if hw > log_end:
            out.append(finding("HW_ABOVE_LEO", f"checkpointed high watermark {hw} is above the log end offset "
                                               f"{log_end}: committed offsets {log_end}..{hw - 1} are missing from "
                                               "this replica", file=path, high_watermark=hw, log_end_offset=log_end,
                               missing=hw - log_end))
        if log_start is not None and hw < log_start:
            out.append(finding("HW_BELOW_LOG_START", f"high watermark {hw} is below the log start offset "
                                                     f"{log_start}; Kafka clamps it", file=path, high_watermark=hw,
                               log_start_offset=log_start))
    elif not is_metadata_log and hw_checkpoint_present:
        out.append(finding("NO_HW_ENTRY", "no replication-offset-checkpoint entry for this partition (Kafka starts "
                                          "it at HW 0)", file=path))
    if rp is not None and rp > log_end:
        # what is known: Kafka checkpointed that it had flushed offsets below rp; the files now end at log_end.
        # Whether a truncation after the checkpoint removed them (the checkpoint is written asynchronously) or the
        # files lost them since is not: both are said, and what Kafka does with it
        out.append(finding("RECOVERY_POINT_ABOVE_LEO",
                           f"recovery point {rp} is above the log end offset {log_end}: the checkpoint says offsets "
                           f"below {rp} were flushed to disk, but this log holds no offset from {log_end} on "
                           f"(truncated after the checkpoint was written, or lost from the files since); Kafka lowers "
                           f"the recovery point to {log_end} at the next start",
                           file=path, recovery_point=rp, log_end_offset=log_end))
    return out


@dataclass(frozen=True)
class RecoveryCost:
    """What the next start's recovery removes, in offsets and records, against the log start and the high watermark.

    Offsets below the log start offset were deleted already (no consumer reads them), offsets from the log start up
    to the high watermark were committed, offsets at or above it were not.  ``records`` counts the readable records
    among the removed offsets (a torn or damaged batch declares offsets whose records cannot be read).
    """

    first_offset: int | None  # offsets [first, last] removed (None: no offset, only bytes)
    last_offset: int | None
    records: int
    committed_records: int  # of ``records``, below the high watermark
    bytes: int
    high_watermark: int | None
    log_start_offset: int | None
    below_log_start: tuple[int, int] | None = None  # offset ranges [first, last] of each kind
    committed: tuple[int, int] | None = None
    uncommitted: tuple[int, int] | None = None
    torn: bool = False  # the cut falls on a torn final batch (its surviving header names the offsets)

    @property
    def offsets(self) -> int:
        if self.first_offset is None:
            return 0
        assert self.last_offset is not None  # first and last are set together
        return self.last_offset - self.first_offset + 1


def recovery_cost(plan: RecoveryPlan, *, high_watermark: int | None, log_start_offset: int | None = None,
                  segments: Iterable[SegmentExtent] = ()) -> RecoveryCost | None:
    """What ``plan`` costs, or None when it cuts nothing (``segments``: the partition's, to tell a torn batch)."""
    if not plan.truncates:
        return None
    first, last = plan.lost_first_offset, plan.lost_last_offset
    kw: dict[str, Any] = {}
    kw["torn"] = any(s.path == plan.truncate_segment and s.kafka_stop == "partial" and s.partial_offsets is not None
                     and s.first_invalid_position == plan.truncate_position for s in segments)
    if first is not None and last is not None:
        lo = first
        if log_start_offset is not None and first < log_start_offset:
            kw["below_log_start"] = (first, min(last, log_start_offset - 1))
            lo = log_start_offset
        if high_watermark is not None and lo <= last:
            if lo < high_watermark:
                kw["committed"] = (lo, min(last, high_watermark - 1))
            if last >= max(lo, high_watermark):
                kw["uncommitted"] = (max(lo, high_watermark), last)
    return RecoveryCost(first, last, plan.lost_records, plan.lost_committed_records, plan.lost_bytes,
                        high_watermark, log_start_offset, **kw)


def _span(r: tuple[int, int]) -> str:
    return f"{r[0]}..{r[1]}" if r[0] != r[1] else str(r[0])


def _records(n: int) -> str:
    return f"{n} record{'' if n == 1 else 's'}"


def cost_text(c: RecoveryCost) -> str:
    """The cost in an operator's words: which offsets go, how many records, committed or not (for the scan table)."""
    if c.first_offset is None:
        return f"cuts {c.bytes} bytes, no record lost"
    assert c.last_offset is not None  # first and last are set together
    what = _records(c.records) if c.records else "torn batch" if c.torn else "no readable record"
    head = f"loses {_span((c.first_offset, c.last_offset))} ({what})"
    kinds = [(c.below_log_start, f"below log start {c.log_start_offset}"), (c.committed, "committed"),
             (c.uncommitted, "uncommitted")]
    present = [(r, label) for r, label in kinds if r is not None]
    if c.high_watermark is None:
        parts = [f"{_span(r)} {label}" for r, label in present]
        return head + ": " + ", ".join(parts + ["HW unknown"]) if parts else head + ", HW unknown"
    if len(present) == 1:
        return f"{head}: all {present[0][1]} (HW {c.high_watermark})"
    return f"{head}: " + ", ".join(f"{_span(r)} {label}" for r, label in present) + f" (HW {c.high_watermark})"


def check_recovery(plan: RecoveryPlan, *, high_watermark: int | None, epoch_checkpoint: str | None = None,
                   log_start_offset: int | None = None, segments: Iterable[SegmentExtent] = ()) -> list[Finding]:
    """Say what the recovery plan costs in offsets and records, against the high watermark and the log start
    (``segments``: the partition's, to tell a torn final batch from a damaged one)."""
    out: list[Finding] = []
    cost = recovery_cost(plan, high_watermark=high_watermark, log_start_offset=log_start_offset, segments=segments)
    if cost is not None:
        deleted = (f" and deletes {len(plan.segments_deleted)} later segment(s)" if plan.segments_deleted else "")
        if cost.first_offset is None:
            lost = f"{cost.bytes} unreadable bytes go, and no record (nothing readable after the cut)"
        else:
            assert cost.last_offset is not None  # first and last are set together
            span = _span((cost.first_offset, cost.last_offset))
            lost = (f"offsets {span} go ({_records(cost.records)})" if cost.records else
                    f"offsets {span} go, in a torn final batch whose bytes are not all in the file (no readable "
                    "record)" if cost.torn else
                    f"offsets {span} go, in a damaged batch whose records cannot be read (no readable record)")
            said = []
            if cost.below_log_start is not None:
                said.append(f"{_span(cost.below_log_start)} below the log start offset {log_start_offset} "
                            "(deleted already)")
            if cost.committed is not None:
                said.append(f"{_span(cost.committed)} below the high watermark {high_watermark}: "
                            + (f"{_records(plan.lost_committed_records)} of committed data lost at the next start"
                               if plan.lost_committed_records else
                               "committed offsets whose records this replica no longer holds"))
            if cost.uncommitted is not None:
                said.append(f"{_span(cost.uncommitted)} at or above the high watermark {high_watermark} "
                            "(uncommitted)")
            if high_watermark is None:
                said.append("no high watermark to tell committed from uncommitted")
            lost += "; " + "; ".join(said)
        out.append(finding(
            "RECOVERY_WOULD_TRUNCATE",
            f"unclean shutdown: at the next start Kafka's recovery cuts the log at byte {plan.truncate_position}"
            f"{deleted}: {lost}; the log then ends at {plan.log_end_offset}",
            severity=Severity.CRITICAL if plan.lost_committed_records else None,
            file=plan.truncate_segment, position=plan.truncate_position, log_end_offset=plan.log_end_offset,
            lost_first_offset=plan.lost_first_offset, lost_last_offset=plan.lost_last_offset,
            lost_records=plan.lost_records, lost_committed_records=plan.lost_committed_records,
            lost_uncommitted_records=plan.lost_records - plan.lost_committed_records,
            high_watermark=high_watermark, log_start_offset=log_start_offset,
            lost_below_log_start=cost.below_log_start, lost_committed_offsets=cost.committed,
            lost_uncommitted_offsets=cost.uncommitted,
            bytes_dropped=plan.lost_bytes, segments_deleted=plan.segments_deleted))
    if plan.damage_kept is not None:
        why = ("clean-shutdown marker present, so Kafka skips recovery" if plan.clean_shutdown else
               "the segment lies below the recovery point's, so recovery does not read it")
        what = ("a torn final batch stays in the file: the next append lands after it, and readers of that offset "
                "then meet the torn batch" if plan.damage_kept_is_torn_tail else
                "Kafka serves the damaged segment as it is: readers of these offsets fail")
        out.append(finding("CORRUPTION_NOT_RECOVERED", f"{why}; {what}", file=plan.damage_kept,
                           position=plan.damage_kept_position))
    if plan.epoch_checkpoint_unreadable:
        out.append(finding("LOG_LOAD_FAILS", "the leader-epoch-checkpoint cannot be read: loading the log throws "
                                             "(up to Kafka 3.2 the broker does not start; from 3.3 this log dir goes "
                                             "offline)", file=epoch_checkpoint))
    if plan.load_fails:
        out.append(finding("LOG_LOAD_FAILS", "clean-shutdown marker present and the active segment holds a range "
                                             "Kafka's reader refuses (zeros or a size below the minimum): computing "
                                             "the log end at startup throws, and the broker does not start",
                           file=plan.damage_kept, position=plan.damage_kept_position))
    return out
