"""A partition's checkpointed high watermark and recovery point against its log, and the recovery plan's cost."""

from __future__ import annotations

from ..findings import Finding, Severity, finding
from ..recovery.plan import RecoveryPlan


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
        out.append(finding("RECOVERY_POINT_ABOVE_LEO", f"recovery point {rp} is above the log end offset {log_end}: "
                                                       f"offsets {log_end}..{rp - 1} were flushed and are gone",
                           file=path, recovery_point=rp, log_end_offset=log_end))
    return out


def check_recovery(plan: RecoveryPlan, *, high_watermark: int | None, epoch_checkpoint: str | None = None
                   ) -> list[Finding]:
    """Say what the recovery plan costs in offsets and records, against the high watermark."""
    out: list[Finding] = []
    if plan.truncates:
        lost = ("no readable batch below the cut" if plan.lost_first_offset is None else
                f"offsets {plan.lost_first_offset}..{plan.lost_last_offset} ({plan.lost_records} readable records)")
        deleted = (f" and deletes {len(plan.segments_deleted)} later segment(s)" if plan.segments_deleted else "")
        committed = ""
        if plan.lost_committed_records and high_watermark is not None:
            committed = (f"; {plan.lost_committed_records} of them below the high watermark {high_watermark}: "
                         "committed records lost at the next start")
        elif high_watermark is not None and plan.lost_records:
            committed = f"; all above the high watermark {high_watermark} (uncommitted)"
        out.append(finding(
            "RECOVERY_WOULD_TRUNCATE",
            f"unclean shutdown: at the next start Kafka's recovery cuts the log at byte {plan.truncate_position}"
            f"{deleted}: {lost}{committed}; the log then ends at "
            f"{plan.log_end_offset}",
            severity=Severity.CRITICAL if plan.lost_committed_records else None,
            file=plan.truncate_segment, position=plan.truncate_position, log_end_offset=plan.log_end_offset,
            lost_first_offset=plan.lost_first_offset, lost_last_offset=plan.lost_last_offset,
            lost_records=plan.lost_records, lost_committed_records=plan.lost_committed_records,
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
