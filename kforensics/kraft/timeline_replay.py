"""The replay of the resolved metadata log, record by record, with the snapshots taken over where the log cannot be
placed (older segments deleted, a gap) and checked where it reaches them."""

from __future__ import annotations

from typing import Any

from ..findings import finding
from ..log.metadata_log import MetadataEntry as _Rec
from .timeline_model import Timeline
from .timeline_registrations import RegistrationState, decode_record
from .timeline_snapshots import adopt_snapshot, check_snapshot, load_snapshot, snapshot_end_offset


class LogReplay:
    """The replay of one merged metadata log, with the snapshots taken over where the log cannot be placed."""

    def __init__(self, tl: Timeline, snapshots: list[Any]):
        self.tl = tl
        self.snapshots = snapshots
        self.si = 0  # the next snapshot not yet reached
        self.state = RegistrationState(tl, emit=True)
        self.pos: int | None = None  # next offset the replay expects
        self.skipped: list[int] = []  # the first and the last offset skipped since the last flush (not every one)

    def snapshot(self, path: Any) -> None:
        """Check the replay against a snapshot it reached, or take the snapshot's state over."""
        loaded = load_snapshot(path, self.tl)
        if loaded is None:
            return
        snap, end, ts = loaded
        if self.pos == end:
            check_snapshot(self.tl, self.state, snap, path)
        else:
            self.state = adopt_snapshot(self.tl, self.state, snap, path, end, ts)
            self.pos = end
            self.tl.complete = True

    def flush_skipped(self) -> None:
        if self.skipped:
            first, last = self.skipped[0], self.skipped[-1]
            self.tl.log.add(finding("METADATA_RECORDS_SUPERSEDED", f"log offsets {first}-{last} have no known state "
                                    "to apply to (they precede the first snapshot or follow a gap); the next "
                                    "snapshot's state covers them", first=first, last=last))
            self.skipped.clear()

    def skip(self, offset: int) -> None:
        if self.skipped:
            self.skipped[1:] = [offset]
        else:
            self.skipped.append(offset)

    def _placed(self, rec: _Rec) -> bool:
        """Whether ``rec`` applies to the state replayed so far (else it is skipped or already covered)."""
        tl = self.tl
        if self.pos is None and rec.offset > 0 and any(snapshot_end_offset(s) > rec.offset
                                                       for s in self.snapshots[self.si:]):
            self.skip(rec.offset)  # snapshot first: the log before it cannot be placed on any state
            return False
        if self.pos is None:
            tl.complete = rec.offset == 0
            if rec.offset > 0:
                tl.log.add(finding("METADATA_HISTORY_INCOMPLETE", f"the metadata log starts at offset {rec.offset} "
                                   "with no snapshot before it: partitions created earlier are unknown until a "
                                   "change names them", file=rec.file, offset=rec.offset))
            self.pos = rec.offset
        if rec.offset < self.pos:
            return False  # a snapshot already covers it
        if rec.offset > self.pos:
            if any(snapshot_end_offset(s) > rec.offset for s in self.snapshots[self.si:]):
                self.skip(rec.offset)
                return False
            tl.log.add(finding("METADATA_LOG_GAP", f"metadata offsets {self.pos}-{rec.offset - 1} are missing and no "
                               "snapshot covers them: epochs after the gap may be lower than the controller's",
                               file=rec.file, first_missing=self.pos, next=rec.offset))
        return True

    def apply(self, rec: _Rec) -> None:
        """Replay one log record (after the snapshots that end at or before it)."""
        while self.si < len(self.snapshots) and snapshot_end_offset(self.snapshots[self.si]) <= rec.offset:
            self.flush_skipped()
            self.snapshot(self.snapshots[self.si])
            self.si += 1
        if not self._placed(rec):
            return
        tl = self.tl
        self.pos = rec.offset + 1
        if tl.log_start is None:
            tl.log_start = rec.offset
        tl.log_end = self.pos
        if rec.value is not None:
            d = decode_record(rec, tl)
            if d is not None:
                self.state.record(rec, d, "log")

    def finish(self) -> None:
        """The log's end: the snapshots past it, and a metadata transaction left open."""
        self.flush_skipped()
        for s in self.snapshots[self.si:]:
            self.snapshot(s)
        if self.state.txn_overflow:
            self.tl.log.add(finding("METADATA_TRANSACTION_OPEN", "the log ends inside a metadata transaction too "
                                    "large to hold; its records were replayed", replayed=True))
        if self.state.txn:
            self.tl.log.add(finding("METADATA_TRANSACTION_OPEN", f"the log ends inside a metadata transaction; its "
                                    f"{len(self.state.txn)} record(s) are not replayed", records=len(self.state.txn)))

