"""KRaft snapshots in the timeline: one the log reaches is checked against the replayed state, one after a gap is
adopted as the new starting state."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..findings import finding
from ..log.file_kinds import snapshot_id
from .metadata_log_records import read_records
from .timeline_model import RECOVERING, STATE_FIELDS, Timeline
from .timeline_registrations import RegistrationState, decode_record


def load_snapshot(path: Any, tl: Timeline) -> tuple[RegistrationState, int, int] | None:
    """The state a snapshot holds, its end offset and its timestamp (None when it is unusable).

    Its control batches are read first (header and footer decide whether it is used at all), then its
    records are replayed as they are read."""
    controls: dict[str, Any] = {}
    for _ in read_records(path, tl, controls, data=False, report=False):
        pass
    if "SNAPSHOT_FOOTER" not in controls or "SNAPSHOT_HEADER" not in controls:
        for _ in read_records(path, tl, {}):
            pass  # not replayed, but what is wrong with the file is still reported
        missing = [c for c in ("SNAPSHOT_HEADER", "SNAPSHOT_FOOTER") if c not in controls]
        tl.log.add(finding("SNAPSHOT_INCOMPLETE", f"snapshot without {' and '.join(missing)}: not used", file=str(path),
                           missing=missing))
        return None
    header = controls["SNAPSHOT_HEADER"]
    ts = header.get("lastContainedLogTimestamp", -1)
    end = (snapshot_id(path.name) or (0, 0))[0]
    st = RegistrationState(tl, emit=False)
    for r in read_records(path, tl, {}):
        if r.value is None:
            continue
        d = decode_record(r, tl)
        if d is not None:
            st.record(r, d, "snapshot")
    return st, end, ts


def adopt_snapshot(tl: Timeline, state: RegistrationState, snap: RegistrationState, path: Any, end: int,
                   ts: int) -> RegistrationState:
    """Make a snapshot (which follows a gap) the current state; partitions it shows changed get an entry."""
    snap.emit = True
    for tid, name in snap.names.items():
        tl.topic_names[tid] = name
    for tid in set(state.names) - set(snap.names):
        tl.removed_topics.setdefault(tid, {"name": state.names[tid], "offset": None, "timestamp": None,
                                           "before_snapshot": str(path)})
    for (tid, p), reg in sorted(snap.parts.items()):
        prev = state.parts.get((tid, p))
        if prev is not None and prev.same_registration(reg):
            snap.parts[(tid, p)] = prev
            continue
        e = replace(reg, offset=end - 1, timestamp=ts, record="snapshot", source="snapshot", file=str(path),
                    leader_changed=prev is None or reg.leader_epoch != prev.leader_epoch, unclean=False)
        if prev is not None:
            # only one election in the gap is certain when the epoch moved by exactly one
            one = e.leader_epoch == prev.leader_epoch + 1
            e.unclean = (e.leader_recovery_state == RECOVERING and prev.leader_recovery_state != RECOVERING) or (
                one and e.leader >= 0 and e.leader not in prev.isr and e.leader not in prev.elr)
        snap.parts[(tid, p)] = e
        tl.partitions.setdefault((snap.name(tid), p), []).append(e)
    tl.snapshots_loaded.append(str(path))
    return snap


def check_snapshot(tl: Timeline, state: RegistrationState, snap: RegistrationState, path: Any) -> None:
    """A snapshot the log reaches without a gap must hold the replayed state."""
    tl.snapshots_checked.append(str(path))
    diffs = []
    for key in sorted(set(state.parts) | set(snap.parts)):
        a, b = state.parts.get(key), snap.parts.get(key)
        if a is None or b is None or not a.same_registration(b):
            diffs.append({"topic": state.name(key[0]), "partition": key[1],
                          "replayed": None if a is None else {k: getattr(a, k) for k in STATE_FIELDS},
                          "snapshot": None if b is None else {k: getattr(b, k) for k in STATE_FIELDS}})
    if set(state.names.items()) != set(snap.names.items()):
        diffs.append({"topics_replayed": len(state.names), "topics_snapshot": len(snap.names)})
    if diffs:
        tl.log.add(finding("SNAPSHOT_DISAGREES_WITH_LOG", f"{len(diffs)} difference(s) between the snapshot and the "
                           "log replayed up to its end offset", file=str(path), differences=diffs[:10]))



def snapshot_end_offset(path: Any) -> int:
    return (snapshot_id(path.name) or (-1, -1))[0]
