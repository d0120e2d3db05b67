"""Follower truncation against a leader, as each Kafka version does it, with the reasoning kept.

Modes (see :mod:`kforensics.epoch.versions`):

* 0.10 and earlier: on becoming follower, truncate to the own high watermark;
  then fetch, and on OFFSET_OUT_OF_RANGE truncate to the leader's log end.
* 0.11 – 1.1: one OffsetsForLeaderEpoch round; the leader answers an offset
  only; the follower truncates to ``min(answer, LEO)`` (HW when UNDEFINED).
* 2.0.0 – 2.7: the KIP-279 multi-round loop (``getOffsetTruncationState``).
* 2.8+: truncation during fetch (diverging epoch, KAFKA-10554), same decision rule.

Truncating to an offset inside a batch removes the whole batch (Kafka cuts
at the start of the batch that contains it).  A replica without epochs falls
back to high-watermark truncation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..epoch.cache import LeaderEpochCache
from ..epoch.versions import KafkaVersion
from .replica import BatchLog, Replica

MAX_ROUNDS = 1000  # each round drops at least one epoch; this only guards against damaged caches


@dataclass
class ReplicaState:
    """A replica during replay: its current log, cache and what happened to it."""

    replica: Replica
    log: BatchLog
    cache: LeaderEpochCache
    hw: int
    leo: int
    removed: list[tuple[BatchLog, str]] = field(default_factory=list)  # (batches, why)
    appended: list[BatchLog] = field(default_factory=list)

    @property
    def broker_id(self) -> int:
        return self.replica.broker_id

    def truncate_to(self, offset: int, why: str) -> int:
        """Truncate at the start of the batch containing ``offset`` (nothing when ``offset >= LEO``); new LEO."""
        if offset >= self.leo:
            self.cache.truncate_from_end(self.leo)
            return self.leo
        idx = self.log.containing_cut(offset)
        keep, gone = self.log.split(idx)
        new_leo = min(offset, int(gone.col("base_offset")[0])) if len(gone) else offset
        if len(gone):
            self.removed.append((gone, why))
        self.log = keep
        self.leo = new_leo
        self.cache.truncate_from_end(new_leo)
        self.hw = min(self.hw, new_leo)
        return new_leo


@dataclass
class Decision:
    """One follower's truncation against one leader: the offset chosen and the reasoning chain."""

    follower: int
    leader: int
    path: str  # "hw", "pre-kip-101", "epoch-loop", "diverging-epoch", "offset-out-of-range", "none"
    truncate_to: int | None
    leo_before: int
    leo_after: int
    rounds: list[dict[str, Any]] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)


def _answer(leader: ReplicaState, epoch: int, mode: KafkaVersion) -> tuple[int, int]:
    e, o = leader.cache.end_offset_for(epoch, leader.leo)
    return int(e), int(o)


def _truncation_state(f: ReplicaState, le: int, lo: int, fetch_offset: int, rec: dict | None = None
                      ) -> tuple[int, bool, str]:
    """getOffsetTruncationState: (offset, complete, why) for a leader answer (le, lo).

    ``rec`` receives the follower's own answer for the leader's epoch, when one is asked.
    """
    leo = f.leo
    if lo == -1:
        return fetch_offset, True, f"leader has no answer: truncate to the fetch offset {fetch_offset}"
    if le == -1:
        return min(lo, leo), True, f"leader answered offset {lo} only: truncate to min({lo}, LEO {leo})"
    mine = f.cache.end_offset_for(le, leo)
    if rec is not None:
        rec["follower_answer"] = [int(mine.epoch), int(mine.end_offset)]
    if mine.end_offset == -1:
        return min(lo, leo), True, f"follower tracks no epoch <= {le}: truncate to min({lo}, LEO {leo})"
    if mine.epoch != le:
        return (min(mine.end_offset, leo), False,
                f"follower's own answer for epoch {le} is ({mine.epoch}, {mine.end_offset}): epochs differ, "
                f"truncate to {min(mine.end_offset, leo)} and ask again")
    off = min(mine.end_offset, lo, leo)
    return off, True, f"both end epoch {le}: follower at {mine.end_offset}, leader at {lo}: truncate to {off}"


def truncate_follower(f: ReplicaState, leader: ReplicaState, mode: KafkaVersion) -> Decision:
    """Replay the truncation phase of ``f`` becoming a follower of ``leader``."""
    d = Decision(f.broker_id, leader.broker_id, "none", None, f.leo, f.leo)
    latest = f.cache.latest_epoch
    if not mode.has_epochs:
        d.path = "pre-kip-101"
        target = min(f.hw, f.leo)
        d.reasoning.append(f"Kafka {mode.label} (before KIP-101): a new follower truncates to its high watermark {f.hw}")
        d.truncate_to = target
        d.leo_after = f.truncate_to(target, "truncated to the high watermark on becoming follower")
        return d
    if latest is None:
        d.path = "hw"
        d.reasoning.append(f"follower has no leader epochs (empty cache or message format < v2): "
                           f"truncate to its high watermark {f.hw}")
        d.truncate_to = min(f.hw, f.leo)
        d.leo_after = f.truncate_to(d.truncate_to, "no epochs: truncated to the high watermark")
        return d
    if mode.truncate_on_fetch:
        return _fetch_path(f, leader, mode, d)
    d.path = "epoch-loop"
    fetch_offset = f.hw  # before 2.8 the initial fetch offset is the high watermark
    for rnd in range(MAX_ROUNDS if mode.answers_with_epoch else 1):
        ask = f.cache.latest_epoch
        if ask is None:
            d.reasoning.append(f"no epochs left: truncate to the high watermark {f.hw}")
            d.truncate_to = min(f.hw, f.leo)
            d.leo_after = f.truncate_to(d.truncate_to, "epochs exhausted: truncated to the high watermark")
            return d
        le, lo = _answer(leader, ask, mode)
        rec: dict[str, Any] = {"asked_epoch": ask, "leader_answer": [le, lo]}
        off, complete, why = _truncation_state(f, le, lo, fetch_offset, rec)
        rec.update(truncate_to=off, complete=complete)
        d.rounds.append(rec)
        d.reasoning.append(f"round {rnd + 1}: OffsetsForLeaderEpoch({ask}) -> ({le}, {lo}); {why}")
        d.truncate_to = off
        d.leo_after = f.truncate_to(off, f"OffsetsForLeaderEpoch round {rnd + 1}")
        if complete or not mode.answers_with_epoch:
            return d
    d.reasoning.append("stopped after too many rounds (damaged epoch caches?)")
    return d


def _fetch_path(f: ReplicaState, leader: ReplicaState, mode: KafkaVersion, d: Decision) -> Decision:
    d.path = "diverging-epoch"
    for rnd in range(MAX_ROUNDS):
        last_epoch = f.cache.latest_epoch
        fetch_offset = f.leo
        if last_epoch is None:
            d.reasoning.append(f"fetch {rnd + 1}: no last fetched epoch: plain fetch from {fetch_offset}")
            return d
        e, o = _answer(leader, last_epoch, mode)
        rec = {"fetch_offset": fetch_offset, "last_fetched_epoch": last_epoch, "leader_answer": [e, o]}
        d.rounds.append(rec)
        if e == -1 or o == -1:
            d.reasoning.append(f"fetch {rnd + 1}: leader has no end offset for epoch {last_epoch}: OFFSET_OUT_OF_RANGE")
            return _out_of_range(f, leader, d)
        if e < last_epoch or o < fetch_offset:
            off, _complete, why = _truncation_state(f, e, o, fetch_offset, rec)
            rec["truncate_to"] = off
            d.reasoning.append(f"fetch {rnd + 1}: ({fetch_offset}, epoch {last_epoch}) -> diverging epoch ({e}, {o}); {why}")
            d.truncate_to = off
            d.leo_after = f.truncate_to(off, f"diverging epoch in fetch {rnd + 1}")
            continue
        d.reasoning.append(f"fetch {rnd + 1}: ({fetch_offset}, epoch {last_epoch}) -> leader end ({e}, {o}): no divergence")
        return d
    return d


def _out_of_range(f: ReplicaState, leader: ReplicaState, d: Decision) -> Decision:
    if leader.leo < f.leo:
        d.path = "offset-out-of-range"
        d.reasoning.append(f"leader log end {leader.leo} is below the follower's {f.leo}: truncate to it")
        d.truncate_to = leader.leo
        d.leo_after = f.truncate_to(leader.leo, "offset out of range: truncated to the leader's log end")
    elif leader.replica.log_start > f.leo:
        d.path = "offset-out-of-range"
        d.reasoning.append(f"leader log start {leader.replica.log_start} is above the follower's end: truncate fully")
        d.truncate_to = leader.replica.log_start
        d.leo_after = f.truncate_to(0, "offset out of range: truncated fully")
    return d


def fetch(f: ReplicaState, leader: ReplicaState, mode: KafkaVersion, d: Decision | None = None) -> list[str]:
    """Catch the follower up with the leader; returns what happened (OFFSET_OUT_OF_RANGE included)."""
    notes = []
    if f.leo > leader.leo:
        notes.append(f"fetch at {f.leo} is beyond the leader's log end {leader.leo}: OFFSET_OUT_OF_RANGE, "
                     f"truncate to {leader.leo}")
        f.truncate_to(leader.leo, "offset out of range: truncated to the leader's log end")
        if d is not None:
            d.path = d.path if d.path != "none" else "offset-out-of-range"
            d.truncate_to = leader.leo if d.truncate_to is None else min(d.truncate_to, leader.leo)
            d.leo_after = f.leo
    new = leader.log.from_offset(f.leo)
    if len(new):
        # fetched copies live on the leader's disk, not this replica's
        new = BatchLog(new.data.copy())
        new.col("segment")[:] = -1
        new.col("position")[:] = -1
        f.log = f.log.concat(new)
        f.leo = int(new.col("last_offset")[-1]) + 1
        f.appended.append(new)
        for epoch, base, magic in new.epoch_transitions():
            if magic == 2 and epoch >= 0 and mode.has_epochs:
                f.cache.assign(epoch, base)
        notes.append(f"fetched {len(new)} batches ({int(new.col('base_offset')[0])}..{int(new.col('last_offset')[-1])}) "
                     "from the leader")
    if leader.leo > f.leo:  # the leader's log start or a compacted tail: take its end
        f.leo = leader.leo
    f.hw = min(leader.hw, f.leo)
    return notes
