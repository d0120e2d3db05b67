"""Which remote segments a leader's epoch lineage reaches, and what the leader's cleanup does with the others.

``RemoteLogManager.isRemoteSegmentWithinLeaderEpochs`` (core, 3.6.0 to 4.0.0;
storage from 4.1.0) decides whether a remote segment belongs to the leader's
lineage, both for serving and for retention.  Both the segment's epochs and
the leader's are first filtered by ``buildFilteredLeaderEpochMap`` (an epoch
whose start offset equals the next one's holds no record and is dropped).

* 3.6.0, 3.7.x: the segment's first epoch must not be below the leader's
  first, its last not above the leader's last;
* 3.8.0 onwards (the same at 3.9.0, 4.0.0, 4.1.0): only the segment's last
  epoch is bounded, and the check starts at the segment's first epoch at or
  above the leader's first (``ceilingKey``), whose offset is checked only
  when the leader has an earlier epoch;

then, in both, every checked epoch must be in the leader's lineage with the
same next entry, the last epoch's segment end must be below the leader's
next epoch start, and the segment must end below the leader's log end.

Cleanup (``RLMTask.cleanupExpiredRemoteLogSegments``, 3.6.0, 3.9.0, 4.0.0,
4.1.0): the leader lists remote segments only under the epochs of its own
lineage (``listRemoteLogSegments(tp, epoch)``) and deletes, among them,
those breaching the log start offset (all epochs at or below its first
epoch and ending below its log start) or, when inside the lineage, the
retention limits; a segment outside the lineage that it visits is kept.
Then it deletes the segments all of whose epochs are below its earliest
epoch (``deleteLogSegmentsDueToLeaderEpochCacheTruncation``).  A segment
whose epochs the leader's lineage does not name, and not all below its
earliest epoch, is never visited: it stays in remote storage, unreferenced.
No release read (3.6.0, 3.9.0, 4.0.0, 4.1.0) changes this; 4.0.0 adds only
the retry of DELETE_SEGMENT_STARTED segments it visits.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..epoch.versions import KafkaVersion
from .remote_segments import RemoteSegment

#: the release whose isRemoteSegmentWithinLeaderEpochs bounds only the segment's last epoch (ceilingKey)
CEILING_FROM = (3, 8, 0)
LEFT = "left in remote storage, unreferenced"
DELETED_EPOCH_TRUNCATION = "deleted by the leader's cleanup (all its epochs are below the leader's earliest epoch)"
DELETED_LOG_START = "deleted by the leader's cleanup (below the log start offset)"


def filtered_epochs(entries: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``buildFilteredLeaderEpochMap``: drop an epoch whose start offset equals the next epoch's (no record)."""
    ordered = sorted(entries)
    return [e for i, e in enumerate(ordered) if i + 1 >= len(ordered) or ordered[i + 1][1] != e[1]]


def _next(entries: list[tuple[int, int]], epoch: int) -> tuple[int, int] | None:
    return next((e for e in entries if e[0] > epoch), None)


def within_leader_epochs(seg: RemoteSegment, log_end: int, leader_epochs: list[tuple[int, int]],
                         version: KafkaVersion) -> tuple[bool, str]:
    """``isRemoteSegmentWithinLeaderEpochs`` for ``version``: whether the segment is in the lineage, and why not."""
    lineage = filtered_epochs(leader_epochs)
    mine = filtered_epochs(seg.leader_epochs)
    if not lineage or not mine:
        return False, "no epochs to compare"
    by_epoch = dict(lineage)
    first_l, last_l = lineage[0][0], lineage[-1][0]
    first_s, last_s = mine[0][0], mine[-1][0]
    ceiling = version.at_least(*CEILING_FROM)
    if last_s > last_l or (last_s < first_l if ceiling else first_s < first_l):
        return False, f"its epochs {_text(mine)} fall outside the leader's {first_l}..{last_l}"
    start = next((e for e, _ in mine if e >= first_l), None) if ceiling else first_s
    if start is None:
        return False, f"none of its epochs {_text(mine)} is at or above the leader's first epoch {first_l}"
    for epoch, offset in mine:
        if epoch < start:
            continue
        if epoch not in by_epoch:
            return False, f"epoch {epoch} is not in the leader's lineage {_text(lineage)}"
        earlier = any(e < epoch for e, _ in lineage)
        if epoch == start and (earlier or not ceiling) and offset < by_epoch[epoch]:
            return False, f"its epoch {epoch} starts at {offset}, before the leader's {by_epoch[epoch]}"
        nxt = _next(lineage, epoch)
        if epoch == last_s and nxt is not None and seg.end_offset > nxt[1] - 1:
            return False, (f"it ends at {seg.end_offset}, past the leader's epoch {epoch}, which ends at "
                           f"{nxt[1] - 1}")
        if epoch != last_s and nxt != _next(mine, epoch):
            return False, f"after epoch {epoch} its next epoch {_next(mine, epoch)} is not the leader's {nxt}"
    if seg.end_offset >= log_end:
        return False, f"it ends at {seg.end_offset}, at or past the leader's log end {log_end}"
    return True, ""


def cleanup_fate(seg: RemoteSegment, leader_epochs: list[tuple[int, int]], log_start: int) -> str:
    """What the leader's remote cleanup does with a segment outside its lineage (see the module's text)."""
    lineage = filtered_epochs(leader_epochs)
    if not lineage:
        return LEFT
    seg_epochs = [e for e, _ in seg.leader_epochs]
    earliest = min(e for e, _ in leader_epochs)
    if seg_epochs and all(e < earliest for e in seg_epochs):
        return DELETED_EPOCH_TRUNCATION
    listed = any(e in dict(lineage) for e in seg_epochs)
    if listed and all(e <= lineage[0][0] for e in seg_epochs) and seg.end_offset < log_start:
        return DELETED_LOG_START
    return LEFT


@dataclass
class Unreachable:
    """A remote segment outside the leader's lineage: never served again."""

    segment: RemoteSegment
    why: str
    fate: str


def _text(entries: list[tuple[int, int]]) -> str:
    return "{" + ", ".join(f"{e}: {o}" for e, o in entries) + "}"
