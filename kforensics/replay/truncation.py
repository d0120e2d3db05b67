"""Follower truncation and fetching against a leader, as each Kafka version does it, with the reasoning kept.

Modes (see :mod:`kforensics.epoch.versions`; the rules and their sources are
in docs/replay-at-restart.md, R8-R10):

* 0.10 and earlier: on becoming follower, truncate to the own high watermark;
  then fetch, and on OFFSET_OUT_OF_RANGE truncate to the leader's log end.
* 0.11 - 1.1: one OffsetsForLeaderEpoch round; the leader answers an offset
  only; the follower truncates to ``min(answer, LEO)`` (its HW when UNDEFINED).
* 2.0.0 - 2.7: the KIP-279 rounds (``getOffsetTruncationState``); an
  UNDEFINED answer truncates to the *current fetch offset*, which after an
  incomplete round is the offset that round truncated to.
* 2.8+: truncation during fetch: the leader checks the follower's last
  fetched epoch on every fetch and answers a diverging epoch (KAFKA-10554).

Kafka bounds none of these loops.  Evidence Kafka would not have written
(epochs going backwards, a checkpoint whose offsets do not increase) can make
them repeat forever; the replay detects the repeated state and reports the
rounds that repeat instead of a converged result.

A follower validates what it fetches and rejects a response holding a
damaged batch, then retries forever: it stalls before the first damaged
batch of the leader's log.

Truncating to an offset inside a batch removes the whole batch (Kafka cuts
at the start of the batch that contains it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..epoch.cache import LeaderEpochCache
from ..epoch.versions import KafkaVersion
from ..tiered.tier_state import offset_moved_to_tiered
from .replica import FETCHED, BatchLog, NeedRows, Replica

#: a backstop only: a repeating loop is found by its repeated state long before this
MAX_ROUNDS = 10_000


@dataclass
class ReplicaState:
    """A replica during replay (after its restart): its current log, cache and what happened to it."""

    replica: Replica
    log: BatchLog
    cache: LeaderEpochCache
    hw: int  # the high watermark Kafka uses (the checkpoint's, clamped at load)
    leo: int
    mode: KafkaVersion
    read_fails_from: int | None = None  # kept damage: a read that reaches this offset fails
    removed: list[tuple[BatchLog, str]] = field(default_factory=list)  # (batches, why)
    appended: list[BatchLog] = field(default_factory=list)

    @property
    def broker_id(self) -> int:
        return self.replica.broker_id

    def truncate_to(self, offset: int, why: str) -> int:
        """Truncate at the start of the batch containing ``offset`` (nothing when ``offset >= LEO``); new LEO."""
        if offset >= self.leo:
            if self.mode.kafka_10706:
                self.cache.truncate_from_end(self.leo)  # before 2.6.1 Log.truncateTo returned untouched
            return self.leo
        if self.replica.prefix is not None and offset < self.replica.prefix.end:
            raise NeedRows(offset)
        idx = self.log.containing_cut(offset)
        keep, gone = self.log.split(idx)
        new_leo = min(offset, int(gone.col("base_offset")[0])) if len(gone) else offset
        if len(gone):
            self.removed.append((gone, why))
        self.log = keep
        self.leo = new_leo
        self.cache.truncate_from_end(new_leo)
        self.hw = min(self.hw, new_leo)
        if self.read_fails_from is not None and self.read_fails_from >= new_leo:
            self.read_fails_from = None  # the damaged bytes went with the truncation
        return new_leo

    def append(self, new: BatchLog) -> None:
        """Append fetched (or produced) batches; the cache learns their epochs as the append path does."""
        self.log = self.log.concat(new)
        self.leo = int(new.col("last_offset")[-1]) + 1
        self.appended.append(new)
        if self.mode.has_epochs:
            for epoch, base, magic in new.epoch_transitions():
                if magic < 2:
                    self.cache.clear()  # a legacy batch on the append path clears the cache
                elif epoch >= 0 and base >= 0:  # a damaged base offset cannot start an epoch
                    self.cache.assign(epoch, base)

    def state_key(self, *extra: Any) -> tuple[Any, ...]:
        """What decides the next round: a loop that meets the same key again repeats forever."""
        last = tuple(self.log.identity()[-1].tolist()) if len(self.log) else ()
        return (self.leo, tuple(self.cache.entries), last, *extra)


@dataclass
class Decision:
    """One follower's truncation (and fetches) against one leader: what was chosen, and why."""

    follower: int
    leader: int
    path: str  # "hw", "pre-kip-101", "epoch-loop", "diverging-epoch", "offset-out-of-range", "none"
    truncate_to: int | None
    leo_before: int
    leo_after: int
    rounds: list[dict[str, Any]] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    converged: bool = True
    repeating: list[dict[str, Any]] | None = None  # the rounds that repeat, when it does not converge
    stalled_at: int | None = None  # the fetch offset where it stalls on a damaged leader batch

    def truncated(self, f: ReplicaState, offset: int, why: str) -> None:
        self.truncate_to = offset if self.truncate_to is None else min(self.truncate_to, offset)
        self.leo_after = f.truncate_to(offset, why)

    def repeats(self, since: int) -> None:
        self.converged = False
        self.repeating = self.rounds[since:]
        self.reasoning.append(f"rounds {since + 1}-{len(self.rounds)} repeat from here on: the follower never "
                              "converges (Kafka bounds neither loop)")


def truncation_state(f: ReplicaState, le: int, lo: int, fetch_offset: int, rec: dict[str, Any] | None = None
                     ) -> tuple[int, bool, str]:
    """``getOffsetTruncationState``: (offset, complete, why) for a leader answer ``(le, lo)``.

    ``rec`` receives the follower's own answer for the leader's epoch, when one is asked.
    """
    leo = f.leo
    if lo == -1:
        return fetch_offset, True, f"leader has no answer: truncate to the current fetch offset {fetch_offset}"
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


def truncate_follower(f: ReplicaState, leader: ReplicaState, mode: KafkaVersion, *, fetch: bool = True
                      ) -> Decision:
    """Replay ``f`` becoming a follower of ``leader``: truncation, then (``fetch``) catching up."""
    d = Decision(f.broker_id, leader.broker_id, "none", None, f.leo, f.leo)
    if not mode.has_epochs:
        d.path = "pre-kip-101"
        d.reasoning.append(f"Kafka {mode.label} (before KIP-101): a new follower truncates to its high "
                           f"watermark {f.hw}")
        d.truncated(f, min(f.hw, f.leo), "truncated to the high watermark on becoming follower")
    elif mode.truncate_on_fetch:
        _fetch_loop(f, leader, mode, d, append=fetch)
        return d
    elif f.cache.latest_epoch is None:
        d.path = "hw"
        d.reasoning.append(f"follower has no leader epochs (empty cache or message format < v2): "
                           f"truncate to its high watermark {f.hw}")
        d.truncated(f, min(f.hw, f.leo), "no epochs: truncated to the high watermark")
    else:
        _epoch_loop(f, leader, mode, d)
    if fetch and d.converged:
        catch_up(f, leader, mode, d)
    return d


def _epoch_loop(f: ReplicaState, leader: ReplicaState, mode: KafkaVersion, d: Decision) -> None:
    """OffsetsForLeaderEpoch before 2.8: one round (0.11 - 1.1) or KIP-279 rounds (2.0 - 2.7)."""
    d.path = "epoch-loop"
    fetch_offset = f.leo if mode.initial_fetch_from_leo else f.hw
    seen: dict[tuple[Any, ...], int] = {}
    for rnd in range(MAX_ROUNDS):
        ask = f.cache.latest_epoch
        if ask is None:
            # the cache emptied during the rounds: nothing left to ask, so the fetch offset stands
            d.reasoning.append(f"no epochs left: fetch from {fetch_offset}")
            d.truncated(f, min(fetch_offset, f.leo), "epochs exhausted: truncated to the fetch offset")
            return
        key = f.state_key(fetch_offset)
        if key in seen:
            d.repeats(seen[key])
            return
        seen[key] = len(d.rounds)
        le, lo = (int(x) for x in leader.cache.end_offset_for(ask, leader.leo))
        rec: dict[str, Any] = {"asked_epoch": ask, "leader_answer": [le, lo]}
        if lo == -1 and not mode.answers_with_epoch:
            off, complete, why = min(f.hw, f.leo), True, f"UNDEFINED: truncate to the high watermark {f.hw}"
        else:
            off, complete, why = truncation_state(f, le, lo, fetch_offset, rec)
        rec.update(truncate_to=off, complete=complete)
        d.rounds.append(rec)
        d.reasoning.append(f"round {rnd + 1}: OffsetsForLeaderEpoch({ask}) -> ({le}, {lo}); {why}")
        d.truncated(f, off, f"OffsetsForLeaderEpoch round {rnd + 1}")
        fetch_offset = min(off, f.leo)  # every round, complete or not, moves the fetch offset there
        if complete or not mode.answers_with_epoch:
            return
    d.converged = False
    d.reasoning.append(f"stopped after {MAX_ROUNDS} rounds")


def _fetch_loop(f: ReplicaState, leader: ReplicaState, mode: KafkaVersion, d: Decision, *, append: bool) -> None:
    """Fetching from 2.8: every fetch carries the last fetched epoch and may come back diverging.

    With ``append`` false only the truncation is replayed: the loop stops at
    the first fetch that does not diverge.
    """
    d.path = "diverging-epoch"
    last_epoch = f.cache.latest_epoch
    if last_epoch is None:
        d.reasoning.append(f"follower has no leader epoch: it starts by truncating to its high watermark {f.hw}")
        if f.hw < f.leo:
            d.path = "hw"
        d.truncated(f, min(f.hw, f.leo), "no epochs: truncated to the high watermark")
    seen: dict[tuple[Any, ...], int] = {}
    for rnd in range(MAX_ROUNDS):
        fetch_offset = f.leo
        key = f.state_key(last_epoch)
        if key in seen:
            d.repeats(seen[key])
            return
        seen[key] = len(d.rounds)
        rec: dict[str, Any] = {"fetch_offset": fetch_offset, "last_fetched_epoch": last_epoch}
        d.rounds.append(rec)
        step = f"fetch {rnd + 1} ({fetch_offset}, epoch {'none' if last_epoch is None else last_epoch})"
        if last_epoch is not None:
            e, o = (int(x) for x in leader.cache.end_offset_for(last_epoch, leader.leo))
            rec["leader_answer"] = [e, o]
            if e == -1 or o == -1:
                d.reasoning.append(f"{step}: the leader has no end offset for epoch {last_epoch}: OFFSET_OUT_OF_RANGE")
                d.path = "offset-out-of-range"
                if not _out_of_range(f, leader, d):
                    return
                last_epoch = f.cache.latest_epoch
                continue
            if e < last_epoch or o < fetch_offset:
                off, _complete, why = truncation_state(f, e, o, fetch_offset, rec)
                rec["truncate_to"] = off
                d.reasoning.append(f"{step} -> diverging epoch ({e}, {o}); {why}")
                d.truncated(f, off, f"diverging epoch in fetch {rnd + 1}")
                last_epoch = f.cache.latest_epoch
                continue
        moved = offset_moved_to_tiered(f, leader, fetch_offset, d)  # None: not in remote storage
        if moved is not None:
            if not moved:
                return
            last_epoch = f.cache.latest_epoch
            continue
        if fetch_offset > leader.leo or fetch_offset < leader.replica.log_start:
            d.reasoning.append(f"{step}: OFFSET_OUT_OF_RANGE")
            if not _out_of_range(f, leader, d):
                return
            last_epoch = f.cache.latest_epoch
            continue
        if not append:
            d.reasoning.append(f"{step}: no divergence")
            return
        new, stalled = _fetchable(f, leader)
        if len(new):
            f.append(new)
            rec["appended"] = [int(new.col("base_offset")[0]), int(new.col("last_offset")[-1])]
            d.reasoning.append(f"{step}: appends {len(new)} batch(es) {rec['appended'][0]}..{rec['appended'][1]}")
            last_epoch = _last_fetched_epoch(new, last_epoch)
            continue
        if stalled:
            _stall(f, leader, d)
            return
        d.reasoning.append(f"{step}: caught up with the leader (log end {leader.leo})")
        _finish(f, leader)
        return
    d.converged = False
    d.reasoning.append(f"stopped after {MAX_ROUNDS} fetches")


def _last_fetched_epoch(new: BatchLog, previous: int | None) -> int | None:
    """After an append the next fetch names the epoch of the last appended batch."""
    epoch, magic = int(new.col("partition_leader_epoch")[-1]), int(new.col("magic")[-1])
    return epoch if magic >= 2 and epoch >= 0 else previous


def _fetchable(f: ReplicaState, leader: ReplicaState) -> tuple[BatchLog, bool]:
    """What a fetch at the follower's log end returns that it accepts, and whether it then stalls.

    The follower validates the whole response before writing any of it and
    retries forever on a damaged batch; the replay lets it take every batch
    before the damage (responses that stop short of it) and no more.
    """
    new = leader.log.from_offset(f.leo)
    if not len(new):
        return new, False
    stop = len(new)
    bad = new.first_damaged()
    if bad is not None:
        stop = bad
    if leader.read_fails_from is not None:
        stop = min(stop, int(np.searchsorted(new.col("last_offset"), leader.read_fails_from, side="left")))
    stalled = stop < len(new) or (leader.read_fails_from is not None and f.leo >= leader.read_fails_from
                                  and leader.leo > f.leo)
    # fetched copies live on the leader's disk, not this replica's
    out = BatchLog(new.data[:stop].copy())
    out.col("segment")[:] = FETCHED
    out.col("position")[:] = -1
    return out, stalled


def _stall(f: ReplicaState, leader: ReplicaState, d: Decision) -> None:
    d.converged = False
    d.stalled_at = f.leo
    d.reasoning.append(f"fetch at {f.leo}: the leader's response holds a damaged batch; the follower rejects it "
                       "and retries forever (it stalls here and leaves the ISR)")


def _finish(f: ReplicaState, leader: ReplicaState) -> None:
    if leader.leo > f.leo and not len(leader.log.from_offset(f.leo)):
        f.leo = leader.leo  # the leader's log start or a compacted tail: take its end
    f.hw = min(leader.hw, f.leo)


def _out_of_range(f: ReplicaState, leader: ReplicaState, d: Decision) -> bool:
    """OFFSET_OUT_OF_RANGE: truncate to the leader's log end (or start over at its log start).

    Returns whether the follower's position changed (otherwise it cannot go on).
    """
    if leader.leo < f.leo:
        d.path = "offset-out-of-range" if d.path == "none" else d.path
        d.reasoning.append(f"the leader's log end {leader.leo} is below the follower's {f.leo}: truncate to it")
        d.truncated(f, leader.leo, "offset out of range: truncated to the leader's log end")
        return True
    if leader.replica.log_start > f.leo:
        d.path = "offset-out-of-range" if d.path == "none" else d.path
        d.reasoning.append(f"the leader's log start {leader.replica.log_start} is above the follower's end: "
                           "truncate fully and fetch from there")
        d.truncated(f, 0, "offset out of range: truncated fully")
        f.leo = leader.replica.log_start
        f.cache.clear()
        return True
    return False


def catch_up(f: ReplicaState, leader: ReplicaState, mode: KafkaVersion, d: Decision | None = None) -> list[str]:
    """Fetch before 2.8: catch the follower up with the leader (no epoch check on the way)."""
    notes: list[str] = []
    if d is None:
        d = Decision(f.broker_id, leader.broker_id, "none", None, f.leo, f.leo)
    if f.leo > leader.leo:
        caveat = ("" if mode.kafka_7415 else " (before 2.0.1 only with unclean.leader.election.enable for the "
                  "topic; otherwise the follower's broker exits)")
        notes.append(f"fetch at {f.leo} is beyond the leader's log end {leader.leo}: OFFSET_OUT_OF_RANGE, "
                     f"truncate to {leader.leo}{caveat}")
        _out_of_range(f, leader, d)
    new, stalled = _fetchable(f, leader)
    if len(new):
        f.append(new)
        notes.append(f"fetched {len(new)} batches ({int(new.col('base_offset')[0])}.."
                     f"{int(new.col('last_offset')[-1])}) from the leader")
    if stalled:
        _stall(f, leader, d)
        notes.append(d.reasoning[-1])
        return notes
    _finish(f, leader)
    d.reasoning += [n for n in notes if n not in d.reasoning]
    return notes
