"""Several copies of the KRaft metadata log resolved as Raft resolves them, and what each copy lacks.

The metadata log is replicated by Raft (``KafkaRaftClient``), not by the
ISR protocol: every batch carries the Raft epoch of the leader that wrote
it, and two copies holding a batch of the same epoch at the same offset hold
the same records up to there (Raft's log matching).  So:

* **the reference lineage** is the copy with the greatest (last epoch, log
  end): a leader is only elected with a log at least as up to date as a
  majority's (``LeaderState``/``CandidateState`` vote checks), and the
  leader's log is what every follower ends up with;
* **a copy diverges** where its epoch at an offset differs from the
  reference's; a follower that finds such a divergence truncates to the
  end offset of the last epoch both share (the diverging-epoch handling of a
  fetch response in ``KafkaRaftClient.handleFetchResponse``, which calls
  ``ReplicatedLog.truncateToEndOffset``, at 3.9.0; KIP-595): the
  copy's tail from there was written by a deposed leader and never
  committed, so it is never replayed;
* **the committed prefix** is bounded below by the snapshots (a KRaft
  snapshot is only taken at or below the high watermark:
  ``KafkaMetadataLog.createNewSnapshot``, 3.8.0) and by what a majority of
  the voters hold in the reference lineage, counted as the leader counts it
  (``LeaderState.maybeUpdateHighWatermark``, 3.8.0): the offset a majority
  holds is committed only past the start of the leader's own epoch (the
  reference's last epoch), since a leader exposes nothing of earlier epochs
  before it commits a record of its own; voters come from ``VotersRecord``
  (KIP-853) or the static voter set of ``quorum-state`` (data version 0).
  The high watermark itself is not on disk (Raft keeps it in memory);
* **a copy is incomplete** when a witness on disk shows it held more than its
  segments now do: its own leader-epoch checkpoint names an epoch starting
  after its log end (an entry is written when a batch of that epoch is
  appended, ``UnifiedLog.maybeAssignEpochStartOffset``), or an epoch later
  than its last batch's starting at its log end (a leader assigns its epoch
  at its log end when elected, ``KafkaMetadataLog.initializeLeaderEpoch``,
  and appends its LeaderChange record there: ``KafkaRaftClient.onBecomeLeader``,
  3.8.0; that record is not here), or one of its snapshots ends after its
  log end.  Its ``quorum-state`` epoch beyond its last batch's is only a note:
  a candidate raises its epoch with no record written.

Memory is the epoch transitions of each copy, not its records.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LogCopy:
    """One node's copy of the metadata log, reduced to what Raft compares."""

    label: str  # the metadata dir it was read from
    epochs: tuple[tuple[int, int], ...]  # (Raft epoch, first offset) at each change of epoch, in offset order
    end_offset: int  # the offset after its last batch (its log end)
    node_id: int | None = None
    checkpoint: tuple[tuple[int, int], ...] = ()  # its leader-epoch-checkpoint entries (epoch, start offset)
    snapshot_ends: tuple[int, ...] = ()  # end offsets of its snapshots
    quorum_epoch: int | None = None  # leaderEpoch of its quorum-state
    voters: tuple[int, ...] | None = None  # static voters of its quorum-state (data version 0)
    quorum_leader: int | None = None  # leaderId of its quorum-state (-1: none known)

    @property
    def last_epoch(self) -> int:
        return self.epochs[-1][0] if self.epochs else -1

    def epoch_at(self, offset: int) -> int | None:
        """The Raft epoch of the batch holding ``offset`` (None beyond the log end or before its first batch)."""
        if offset >= self.end_offset or not self.epochs or offset < self.epochs[0][1]:
            return None
        i = bisect_right([s for _, s in self.epochs], offset) - 1
        return self.epochs[i][0]


@dataclass(frozen=True)
class CopyView:
    """What Raft makes of one copy."""

    label: str
    node_id: int | None
    log_end: int
    last_epoch: int
    valid_end: int  # where its agreement with the reference lineage ends (== log_end when it never diverged)
    deposed: tuple[int, int] | None  # [first, end) of the tail a deposed leader wrote: truncated, never replayed
    missing: tuple[str, ...] = ()  # the witnesses that show it lost its tail
    diverged_epoch: int | None = None  # the Raft epoch it holds at ``valid_end`` when it diverges
    reference_epoch: int | None = None  # the reference's epoch at that offset (None: the reference ends there)
    log_start: int | None = None  # its first batch's offset
    quorum_epoch: int | None = None
    quorum_leader: int | None = None
    notes: tuple[str, ...] = ()  # what its quorum-state says beyond its log (not proof of a loss)


@dataclass(frozen=True)
class QuorumView:
    """Every copy, the reference lineage and the committed bound."""

    copies: tuple[CopyView, ...]
    reference: str | None  # the copy whose lineage is the cluster's (the most complete committed metadata)
    committed_end: int  # offsets below are committed (a lower bound)
    committed_by: str  # "snapshot", "majority of voters [..]", or "unknown"
    voters: tuple[int, ...] | None = None
    notes: tuple[str, ...] = field(default=())


def _divergence(copy: LogCopy, ref: LogCopy) -> int:
    """The first offset where ``copy`` no longer matches ``ref`` (its log end when it matches throughout).

    Raft's truncation: the end offset, in the reference, of the last epoch the
    copy holds that the reference also holds at those offsets.
    """
    end = copy.end_offset
    # below the reference's first batch (its older segments deleted after a snapshot) nothing can be compared
    ref_first = ref.epochs[0][1] if ref.epochs else ref.end_offset
    for i, (epoch, start) in enumerate(copy.epochs):
        stop = copy.epochs[i + 1][1] if i + 1 < len(copy.epochs) else end
        lo = max(start, ref_first)
        if lo >= stop:
            continue
        if ref.epoch_at(lo) != epoch:
            return lo
        ref_end = _epoch_end(ref, epoch)
        if ref_end < stop:
            return ref_end
    return end


def _epoch_end(log: LogCopy, epoch: int) -> int:
    """The offset after the last batch of ``epoch`` in ``log``."""
    for i, (e, _start) in enumerate(log.epochs):
        if e == epoch:
            return log.epochs[i + 1][1] if i + 1 < len(log.epochs) else log.end_offset
    return -1


def _missing(copy: LogCopy) -> tuple[str, ...]:
    """What the copy's own witnesses show it held beyond its log end."""
    end, last = copy.end_offset, copy.last_epoch
    out = [f"its leader-epoch-checkpoint starts epoch {e} at offset {s}, after its log end {end}"
           for e, s in copy.checkpoint if s > end]
    out += [f"its leader-epoch-checkpoint starts epoch {e} at its log end {end}, later than its last batch's epoch "
            f"{last}: the epoch's first record (a new leader's LeaderChange) is not here"
            for e, s in copy.checkpoint if s == end and e > last]
    out += [f"its snapshot ends at offset {x}, after its log end {copy.end_offset}"
            for x in copy.snapshot_ends if x > copy.end_offset]
    return tuple(out)


def resolve(copies: Sequence[LogCopy], voters: Sequence[int] | None = None,
            voter_history: Sequence[tuple[int, tuple[int, ...]]] = ()) -> QuorumView:
    """Resolve the copies as Raft would.  ``voter_history`` is the (offset, voters) of each ``VotersRecord`` (KIP-853)
    in offset order: the majority at an offset is counted among the voters in force there; ``voters`` (one set for
    the whole log) overrides quorum-state's static voters when there is no history."""
    if not copies:
        return QuorumView((), None, 0, "unknown")
    ref = max(copies, key=lambda c: (c.last_epoch, c.end_offset))
    views = [_view(c, ref) for c in copies]
    static = tuple(voters) if voters else next((c.voters for c in copies if c.voters), None)
    history = sorted(voter_history)
    if not history:
        committed, how = _committed(copies, views, [(static, -1, None)] if static else [])
        return QuorumView(tuple(views), ref.label, committed, how, static)
    committed, how = _committed(copies, views, _reigns(history, static))
    return QuorumView(tuple(views), ref.label, committed, how, history[-1][1])


Reign = tuple[tuple[int, ...], int, int | None]  # voters, first offset they rule (-1: from the start), end (None: on)


def _reigns(history: Sequence[tuple[int, tuple[int, ...]]], static: tuple[int, ...] | None) -> list[Reign]:
    """The voter sets in force over the log: each VotersRecord's from its offset (a voter set takes effect when it
    is appended, KIP-853) to the next one's; before the first, quorum-state's static set, else the first record's."""
    out: list[Reign] = [(static or history[0][1], -1, history[0][0])]
    for i, (offset, voters) in enumerate(history):
        out.append((voters, offset, history[i + 1][0] if i + 1 < len(history) else None))
    return out


def _view(c: LogCopy, ref: LogCopy) -> CopyView:
    valid = _divergence(c, ref) if c is not ref else c.end_offset
    deposed = (valid, c.end_offset) if valid < c.end_offset else None
    notes: tuple[str, ...] = ()
    if c.quorum_epoch is not None and c.quorum_epoch > c.last_epoch:
        notes = (f"its quorum-state is at epoch {c.quorum_epoch}, later than its last batch's epoch {c.last_epoch}: an "
                 "election after its last record (a candidate raises its epoch without writing one)",)
    return CopyView(c.label, c.node_id, c.end_offset, c.last_epoch, valid, deposed, _missing(c),
                    diverged_epoch=c.epoch_at(valid) if deposed else None,
                    reference_epoch=ref.epoch_at(valid) if deposed else None,
                    log_start=c.epochs[0][1] if c.epochs else None, quorum_epoch=c.quorum_epoch,
                    quorum_leader=c.quorum_leader, notes=notes)


def _committed(copies: Sequence[LogCopy], views: Sequence[CopyView], reigns: Sequence[Reign]) -> tuple[int, str]:
    """A lower bound of the committed prefix: the highest snapshot, or what a majority of the voters in force hold
    past the start of the reference's last epoch (the high watermark's rule in ``LeaderState.
    maybeUpdateHighWatermark``, 3.8.0), within the offsets where those voters were in force."""
    snap = max((x for c in copies for x in c.snapshot_ends), default=0)
    ref = max(copies, key=lambda c: (c.last_epoch, c.end_offset))
    epoch_start = ref.epochs[-1][1] if ref.epochs else 0
    best, how_best = 0, ""
    for voters, first, end in reigns:
        held = _majority_holds(views, voters)
        if end is not None:
            held = min(held, end)
        if held > max(first, epoch_start) and held > best:
            best, how_best = held, f"majority of voters {list(voters)}"
    if best > snap:
        return best, how_best
    if snap:
        return snap, "snapshot"
    return 0, "unknown"


def _majority_holds(views: Sequence[CopyView], voters: tuple[int, ...]) -> int:
    """The offset below which a majority of ``voters`` hold the reference lineage (0: no majority of them given)."""
    per_node: dict[int, int] = {}
    for v in views:  # two copies of one node (taken at two moments) count once, by the longer
        if v.node_id is not None and v.node_id in voters:
            per_node[v.node_id] = max(per_node.get(v.node_id, 0), v.valid_end)
    held = sorted(per_node.values(), reverse=True)
    need = len(voters) // 2 + 1
    return held[need - 1] if len(held) >= need else 0
