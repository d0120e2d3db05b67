"""Replay Kafka's replication on the replicas of one partition and judge the outcome.

The replay follows what Kafka does after an incident (docs/replay-at-restart.md):

1. **load**: each broker loads its log as at its next start
   (:func:`.restart.restart`: recovery's cut, the epoch cache truncated at
   load, the high watermark clamped); a log Kafka cannot load takes no part;
2. **elect**: the leader named by the events (by the controller's record, or
   the default choice) is elected in a new epoch;
3. **truncate and fetch**: each follower truncates with the rules of the
   version and catches up (:mod:`.truncation`);
4. **judge**: per replica, what recovery cut, what truncation discarded,
   lost or forked, what the leader lacked when elected, and whether the
   follower converges at all.

The same function serves ``kforensics replay`` and the Spark job (through
:func:`kforensics.replay.group.replay_group`).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from ..epoch.versions import LATEST, KafkaVersion
from ..findings import Finding, finding
from ..kraft.controller_choice import LeaderElection
from .divergence import Divergence, compared_from, divergence
from .replica import FETCHED, BatchLog, Prefix, Replica, first_difference
from .restart import Restarted, restart
from .truncation import Decision, ReplicaState, catch_up, truncate_follower
from .verdicts import Verdict, verdict_over


@dataclass
class EpochRun:
    """Consecutive batches written in one epoch: offsets ``[start, end]``."""

    start: int
    end: int
    epoch: int


def epoch_runs(log: BatchLog, prefix: Prefix | None = None) -> list[EpochRun]:
    """A log reduced to its runs of one epoch (what a timeline plot draws); ``prefix`` adds the runs of a
    windowed replica's elided batches."""
    runs = list(prefix.runs) if prefix is not None else []
    for run in log.runs():
        if runs and runs[-1][2] == run[2]:
            runs[-1] = (runs[-1][0], run[1], run[2])
        else:
            runs.append(run)
    return [EpochRun(a, b, e) for a, b, e in runs]


@dataclass
class ReplicaOutcome:
    """One replica after the replay: its role, logs before and after, decisions and verdicts."""

    broker_id: int
    role: str  # leader / follower / offline (its log does not load)
    log_end_offset_before: int  # on disk
    log_end_offset_after: int
    high_watermark: int | None  # checkpointed
    epoch_cache: list[tuple[int, int]]
    log_end_offset_at_restart: int | None = None  # after loading (None: it does not load)
    decisions: list[Decision] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    log_before: list[EpochRun] = field(default_factory=list)  # the log as found, by epoch run
    log_after: list[EpochRun] = field(default_factory=list)  # the log after the replay
    # a tiered log's log start (Kafka's, below its local log start: the offsets between are in remote storage);
    # None for a log that is not tiered
    tiered_log_start_offset: int | None = None


@dataclass
class WhatIf:
    """The replay with another replica as leader: records each verdict would cost, and the verdicts."""

    leader: int
    lost_records: dict[str, int]
    verdicts: dict[int, list[str]]


@dataclass
class PartitionReplay:
    """The replay of one partition: who led, what each replica became, and what was wrong."""

    topic: str
    partition: int
    kafka_version: KafkaVersion  # the rules replayed (serialised as its label)
    leader: int
    leader_epoch: int
    committed_bound: int
    replicas: list[ReplicaOutcome]
    divergence: list[Divergence]
    events: list[dict[str, Any]]
    findings: list[Finding] = field(default_factory=list)
    timeline: list[Any] | None = None  # the controller's record of this partition, when a metadata log was read
    what_if: list[WhatIf] | None = None
    least_loss_leader: int | None = None
    election: LeaderElection | None = None  # who leads and how that was decided (set by the group replay)

    def verdict_codes(self) -> dict[int, list[str]]:
        return {r.broker_id: [v.code for v in r.verdicts] for r in self.replicas}


def choose_leader(replicas: list[Replica], loaded: dict[int, Restarted] | None = None) -> int:
    """Kafka-like default among the replicas that load: the highest latest epoch, the longest log, the lowest id.

    With ``loaded`` the comparison is on each replica as its broker loads it.
    """
    def key(r: Replica) -> tuple[int, int, int]:
        if loaded is not None:
            rs = loaded[r.broker_id]
            latest = max(rs.cache.latest_epoch if rs.cache.latest_epoch is not None else -1,
                         r.max_batch_epoch(rs.log))
            return latest, rs.log_end_offset if rs.log_end_offset is not None else r.log_start, -r.broker_id
        return r.latest_epoch if r.latest_epoch is not None else -1, r.log_end_offset, -r.broker_id

    out = set() if loaded is None else {b for b, rs in loaded.items() if rs.load_fails or rs.unjudged}
    candidates = [r for r in replicas if r.broker_id not in out] or replicas
    return max(candidates, key=key).broker_id


#: the largest leader epoch Kafka can hold: ``leaderEpoch`` is an int32 everywhere (LeaderAndIsr, PartitionRecord,
#: the batch header's partitionLeaderEpoch, LeaderEpochCheckpointFile's Integer.parseInt)
MAX_LEADER_EPOCH = 2**31 - 1


def synthetic_batch(broker: int, offset: int, epoch: int, records: int = 1, size: int = 100) -> list[int]:
    """A batch appended during replay (scenario events): identity derived from who wrote what where."""
    crc = zlib.crc32(f"{broker}:{offset}:{epoch}".encode())
    return [offset, offset + records - 1, epoch, crc, records, size, -1, 2]


def default_epoch(replicas: list[Replica]) -> int | None:
    """The epoch of the default election: one above the latest any replica holds (None: no epoch follows Kafka's
    largest)."""
    top = max((e for e in (r.latest_epoch for r in replicas) if e is not None), default=-1)
    return top + 1 if top < MAX_LEADER_EPOCH else None


def default_events(replicas: list[Replica], leader: int, epoch: int | None = None) -> list[dict[str, Any]]:
    """The leader is elected (in a new epoch unless given) and every other replica follows it."""
    if epoch is None:
        epoch = default_epoch(replicas)
    events: list[dict[str, Any]] = [{"op": "elect", "leader": leader, "epoch": epoch}]
    for r in sorted(replicas, key=lambda r: r.broker_id):
        if r.broker_id != leader:
            events.append({"op": "follow", "broker": r.broker_id})
    return events


@dataclass
class _Election:
    leader: int
    epoch: int | None  # None: past Kafka's largest epoch
    leo: int
    unclean: bool
    evidence: str | None
    lacks: BatchLog
    lacks_from: list[int]


class _ElectionFacts(TypedDict):
    """The facts of an election verdict (``UNCLEAN_ELECTION``, ``LEADER_LACKS_COMMITTED``)."""

    leader_epoch: int | None
    log_end_offset: int
    own_high_watermark: int
    lost_them_itself: bool
    other_brokers: list[int]


def replay_partition(
    topic: str,
    partition: int,
    replicas: list[Replica],
    *,
    kafka_version: KafkaVersion = LATEST,
    leader: int | None = None,
    events: list[dict[str, Any]] | None = None,
    no_leader: int | None = None,
) -> PartitionReplay:
    """Replay one partition from the brokers' restart on, and judge every replica.

    ``no_leader`` (the epoch the controller leaves the partition in): nobody is elected, so no follower
    truncates; each replica is judged on what its own restart does (see :func:`_without_leader`)."""
    mode = kafka_version
    by_id = {r.broker_id: r for r in replicas}
    loaded = {r.broker_id: restart(r, mode) for r in replicas}
    # replicas that take no part: their broker cannot load the log, or their evidence could not be read
    offline = {b for b, rs in loaded.items() if rs.load_fails or rs.unjudged}
    if no_leader is not None:
        return _without_leader(topic, partition, replicas, loaded, offline, mode, no_leader)
    if leader is None:
        leader = next((e["leader"] for e in reversed(events or []) if e.get("op") == "elect"), None)
    if leader is None or leader in offline:
        leader = choose_leader(replicas, loaded)
    if events is None:
        events = default_events(replicas, leader)
    states = {
        b: ReplicaState(by_id[b], rs.log, rs.cache, rs.high_watermark,
                        rs.log_end_offset if rs.log_end_offset is not None else by_id[b].log_start, mode,
                        rs.read_fails_from)
        for b, rs in loaded.items()
    }
    outcomes = {
        r.broker_id: ReplicaOutcome(r.broker_id, _role(loaded[r.broker_id]) if r.broker_id in offline else "follower",
                                    r.log_end_offset, r.log_end_offset, r.high_watermark, [],
                                    None if r.broker_id in offline else states[r.broker_id].leo,
                                    notes=list(loaded[r.broker_id].notes),
                                    tiered_log_start_offset=r.log_start if r.tiered is not None else None)
        for r in replicas
    }
    bound = max((r.high_watermark or 0 for r in replicas), default=0)
    run = _EventRun(states, by_id, offline, outcomes, leader, mode)
    for ev in events:
        run.apply(ev)
    current, epoch = run.current, run.epoch
    if current is None:
        current = leader
    outcomes[current].role = "leader"
    findings = run.findings + _judge_replicas(states, outcomes, by_id, loaded, offline, current, bound, mode,
                                              run.elections)
    _add_not_held(outcomes[current], replicas, loaded, states[current].leo, bound)
    _add_unreachable(outcomes[current], states[current], mode)
    return PartitionReplay(
        topic, partition, mode, current, epoch if epoch is not None else -1, bound,
        [outcomes[b] for b in sorted(outcomes)], divergence([r for r in replicas if not loaded[r.broker_id].unjudged]),
        events, findings,
    )


def _without_leader(topic: str, partition: int, replicas: list[Replica], loaded: dict[int, Restarted],
                    offline: set[int], mode: KafkaVersion, epoch: int) -> PartitionReplay:
    """The controller elects nobody: each replica loads its log (recovery cuts what it cuts) and waits; nothing
    is served and no follower truncates until a replica becomes eligible (it returns, or unclean election is
    enabled).  Every replica that loads gets ``NO_LEADER`` besides what its own recovery costs."""
    outcomes = []
    bound = max((r.high_watermark or 0 for r in replicas), default=0)
    for r in replicas:
        rs = loaded[r.broker_id]
        st = ReplicaState(r, rs.log, rs.cache, rs.high_watermark,
                          rs.log_end_offset if rs.log_end_offset is not None else r.log_start, mode,
                          rs.read_fails_from)
        out = ReplicaOutcome(r.broker_id, _role(rs) if r.broker_id in offline else "waiting", r.log_end_offset,
                             r.log_end_offset if r.broker_id in offline else st.leo, r.high_watermark,
                             st.cache.entries, None if r.broker_id in offline else st.leo, notes=list(rs.notes))
        out.log_before = epoch_runs(r.log, r.prefix)
        out.log_after = epoch_runs(r.log if r.broker_id in offline else st.log, r.prefix)
        if rs.unjudged:
            out.verdicts = [Verdict("NOT_JUDGED", cause="evidence", detail=rs.notes[0])]
        elif r.broker_id in offline:
            out.verdicts = [Verdict("LOG_LOAD_FAILS", cause="restart", detail=rs.notes[0])]
        else:
            out.verdicts = _recovery_verdicts(st, rs, out.notes) + [Verdict(
                "NO_LEADER", cause="election", facts={"leader_epoch": epoch},
                detail="the controller elects no leader (no eligible replica): the partition is offline; this "
                       "replica keeps its log until a leader is elected")]
        outcomes.append(out)
    waiting = [o for o in outcomes if o.role == "waiting"]
    if waiting:
        keeper = max(waiting, key=lambda o: (o.log_end_offset_after, -o.broker_id))
        _add_not_held(keeper, replicas, loaded, keeper.log_end_offset_after, bound)
    return PartitionReplay(topic, partition, mode, -1, epoch, bound, sorted(outcomes, key=lambda o: o.broker_id),
                           divergence([r for r in replicas if not loaded[r.broker_id].unjudged]), [], [])


def _add_not_held(out: ReplicaOutcome, replicas: list[Replica], loaded: dict[int, Restarted], serves_to: int,
                  bound: int) -> None:
    """``COMMITTED_NOT_HELD`` on the replica that serves the partition: offsets below the committed bound that no
    replica holds on disk (nor fetches), so no verdict about a replica's records can count them (scan's
    HW_ABOVE_LEO seen from the partition)."""
    read = [r for r in replicas if not loaded[r.broker_id].unjudged]
    if not read or len(read) < len(replicas):
        return  # a replica not read may hold them: unknown, and its NOT_JUDGED says so
    held = max(r.log_end_offset for r in read)
    start = max(held, serves_to)
    if start >= bound:
        return
    who = ", ".join(f"{r.broker_id} ({r.high_watermark})" for r in read if (r.high_watermark or 0) > start)
    v = Verdict("COMMITTED_NOT_HELD", [(start, bound - 1)], records=bound - start, cause="before the evidence",
                detail=f"offsets {start} to {bound - 1} are below the high watermark checkpointed by broker(s) {who} "
                       f"but no replica's log reaches them (the longest ends at {held}): committed, then lost "
                       "before the evidence was taken",
                facts={"first_offset": start, "committed_bound": bound, "longest_log_end": held})
    out.verdicts = [x for x in out.verdicts if x.code != "OK"] + [v]


def _add_unreachable(out: ReplicaOutcome, leader: ReplicaState, mode: KafkaVersion) -> None:
    """``REMOTE_SEGMENTS_UNREACHABLE`` on the leader: copied remote segments outside its epoch lineage."""
    from ..tiered.tier_state import unreachable_facts, unreachable_segments

    found = unreachable_segments(leader, mode)
    if not found:
        return
    ranges = sorted((u.segment.start_offset, u.segment.end_offset) for u in found)
    fates = sorted({u.fate for u in found})
    v = Verdict("REMOTE_SEGMENTS_UNREACHABLE", ranges, records=sum(b - a + 1 for a, b in ranges),
                cause="election", facts=unreachable_facts(found, mode),
                detail=f"{len(found)} remote segment(s) ({', '.join(f'{a}-{b}' for a, b in ranges)}) lie outside "
                       f"leader {out.broker_id}'s epoch lineage: never served again; {'; '.join(fates)}")
    out.verdicts = [x for x in out.verdicts if x.code != "OK"] + [v]


def _role(rs: Restarted) -> str:
    """A replica's role when it takes no part: ``offline`` (its log does not load) or ``unknown`` (not read)."""
    return "unknown" if rs.unjudged else "offline"


class _EventRun:
    """The events after the restart (elections, truncations, fetches, appends), applied in order."""

    def __init__(self, states: dict[int, ReplicaState], by_id: dict[int, Replica], offline: set[int],
                 outcomes: dict[int, ReplicaOutcome], leader: int, mode: KafkaVersion):
        self.states, self.by_id, self.offline, self.outcomes = states, by_id, offline, outcomes
        self.leader, self.mode = leader, mode
        self.current: int | None = None  # the leader now
        self.epoch: int | None = None  # its epoch
        self.pending: dict[int, Decision] = {}  # each follower's last truncation, which fetches continue
        self.elections: list[_Election] = []
        self.findings: list[Finding] = []

    def apply(self, ev: dict[str, Any]) -> None:
        """Apply one event; an event naming an offline broker, or a follower before any leader, does nothing."""
        op = ev["op"]
        if op == "elect":
            self.current, self.epoch = _elect(ev, self.states, self.by_id, self.offline, self.outcomes, self.leader,
                                              self.mode, self.elections)
            if self.epoch is None and not any(f.code == "LEADER_EPOCH_OVERFLOW" for f in self.findings):
                self.findings.append(_overflow(self.states))
        elif op in ("truncate", "follow", "fetch"):
            self._follow(op, ev["broker"])
        elif op == "append":
            b = ev["broker"]
            if b in self.offline:
                return
            st = self.states[b]
            rows = [synthetic_batch(b, st.leo + i, self.epoch if self.epoch is not None else 0)
                    for i in range(ev.get("batches", 1))]
            st.append(BatchLog.from_rows(rows))
        elif op in ("down", "up"):
            self.outcomes[ev["broker"]].notes.append(f"broker {ev['broker']} {op}")
        else:
            raise ValueError(f"unknown replay event {op!r}")

    def _follow(self, op: str, b: int) -> None:
        if b in self.offline or b == self.current or self.current is None:
            return
        f = self.states[b]
        if op == "fetch" and b in self.pending:
            _fetch_more(f, self.states[self.current], self.mode, self.pending[b])
            return
        d = truncate_follower(f, self.states[self.current], self.mode, fetch=op != "truncate")
        self.outcomes[b].decisions.append(d)
        self.pending[b] = d


def _judge_replicas(states: dict[int, ReplicaState], outcomes: dict[int, ReplicaOutcome], by_id: dict[int, Replica],
                    loaded: dict[int, Restarted], offline: set[int], current: int, bound: int, mode: KafkaVersion,
                    elections: list[_Election]) -> list[Finding]:
    """Fill in each replica's outcome after the events (its log, cache and verdicts); the findings of the checks."""
    leader_state = states[current]
    findings: list[Finding] = []
    for b, st in states.items():
        out = outcomes[b]
        out.log_end_offset_after = st.leo if b not in offline else out.log_end_offset_before
        out.epoch_cache = st.cache.entries
        prefix = by_id[b].prefix
        out.log_before = epoch_runs(by_id[b].log, prefix)
        out.log_after = epoch_runs(st.log if b not in offline else by_id[b].log, prefix)
        if loaded[b].unjudged:
            out.verdicts = [Verdict("NOT_JUDGED", cause="evidence", detail=loaded[b].notes[0])]
            continue
        if b in offline:
            out.verdicts = [Verdict("LOG_LOAD_FAILS", cause="restart", detail=loaded[b].notes[0])]
            continue
        differs_at = None if b == current else first_difference(st.log, leader_state.log,
                                                                 compared_from(st.replica, leader_state.replica))
        out.verdicts = judge(st, leader_state, loaded[b], bound, mode, out.decisions,
                             [e for e in elections if e.leader == b], out.notes, differs_at)
        findings += _kept_damage(st, loaded[b])
        if b != current and all(d.converged for d in out.decisions):
            findings += _check_invariants(st, bound, differs_at)
    return findings


def _elect(ev: dict[str, Any], states: dict[int, ReplicaState], by_id: dict[int, Replica], offline: set[int],
           outcomes: dict[int, ReplicaOutcome], fallback: int, mode: KafkaVersion, elections: list[_Election]
           ) -> tuple[int, int | None]:
    chosen = ev["leader"]
    if chosen in offline or chosen not in states:
        outcomes[fallback].notes.append(f"broker {chosen} takes no part (its log does not load, or could not be "
                                        f"read), so it cannot be elected: broker {fallback} is elected instead")
        chosen = fallback
    epoch = ev.get("epoch")
    if epoch is None:
        epoch = _next_epoch(states)
    st = states[chosen]
    if mode.leader_assigns_on_election and epoch is not None and epoch >= 0 and st.leo >= 0:
        st.cache.assign(epoch, st.leo)  # KAFKA-7415: the new leader records its epoch at its LEO
    outcomes[chosen].notes.append(f"elected leader in {_epoch_text(epoch)} with LEO {st.leo}")
    lacks, sources = _lacked(st, by_id)
    elections.append(_Election(chosen, epoch, st.leo, bool(ev.get("unclean")), ev.get("evidence"), lacks, sources))
    return chosen, epoch


def _next_epoch(states: dict[int, ReplicaState]) -> int | None:
    """The epoch the controller gives the next leader, one above every epoch the replicas cached; None when any
    replica, as found or loaded, holds Kafka's largest epoch (the controller's ``leaderEpoch + 1`` would overflow
    its int32: the epoch is unknown)."""
    if any(s.replica.latest_epoch == MAX_LEADER_EPOCH for s in states.values()):
        return None
    top = max((s.cache.latest_epoch if s.cache.latest_epoch is not None else -1) for s in states.values())
    return top + 1 if top < MAX_LEADER_EPOCH else None


def _epoch_text(epoch: int | None) -> str:
    return f"epoch {epoch}" if epoch is not None else f"an unknown epoch (past {MAX_LEADER_EPOCH}, Kafka's largest)"


def _overflow(states: dict[int, ReplicaState]) -> Finding:
    holders = sorted(b for b, s in states.items()
                     if MAX_LEADER_EPOCH in (s.cache.latest_epoch, s.replica.latest_epoch))
    return finding("LEADER_EPOCH_OVERFLOW", f"broker(s) {', '.join(map(str, holders))} cache leader epoch "
                   f"{MAX_LEADER_EPOCH}, the largest Kafka's int32 holds: the next election's epoch (one above) "
                   "cannot exist, so the replay elects in an unknown epoch; such an epoch on disk is damage, not "
                   "a history a controller wrote", brokers=holders, epoch=MAX_LEADER_EPOCH)


def _lacked(leader: ReplicaState, by_id: dict[int, Replica]) -> tuple[BatchLog, list[int]]:
    """Batches below another replica's checkpointed high watermark (on its disk) that the new leader lacks."""
    parts, sources = [], []
    for b, r in sorted(by_id.items()):
        if b == leader.broker_id or not r.high_watermark:
            continue
        log = r.log
        floor = compared_from(r, leader.replica)
        committed = log.select((log.col("last_offset") < r.high_watermark) & (log.col("last_offset") >= floor))
        missing = committed.select(~committed.held_in(leader.log))
        if len(missing):
            parts.append(missing)
            sources.append(b)
    if not parts:
        return BatchLog.empty(), []
    allm = BatchLog(np.concatenate([p.data for p in parts]))
    # one row per distinct batch, in offset order
    _, first = np.unique(allm.identity(), axis=0, return_index=True)
    rows = allm.data[np.sort(first)]
    return BatchLog(rows[np.argsort(rows[:, 0], kind="stable")]), sources


def _fetch_more(f: ReplicaState, leader: ReplicaState, mode: KafkaVersion, d: Decision) -> None:
    """A ``fetch`` event after a ``truncate``: the follower goes on with the same decision."""
    if mode.truncate_on_fetch:
        more = truncate_follower(f, leader, mode, fetch=True)
        d.rounds += more.rounds
        d.reasoning += more.reasoning
        d.converged, d.repeating, d.stalled_at = more.converged, more.repeating, more.stalled_at
        if more.truncate_to is not None:
            d.truncate_to = more.truncate_to if d.truncate_to is None else min(d.truncate_to, more.truncate_to)
        d.leo_after = f.leo
    else:
        catch_up(f, leader, mode, d)
        d.leo_after = f.leo


def judge(st: ReplicaState, leader: ReplicaState, loaded: Restarted, bound: int, mode: KafkaVersion,
          decisions: list[Decision], elections: list[_Election], notes: list[str], differs_at: int | None
          ) -> list[Verdict]:
    """The verdicts of one replica after the replay (``notes`` receives what is worth saying but costs nothing;
    ``differs_at`` is where its final log first differs from the leader's)."""
    out: list[Verdict] = []
    replica = st.replica
    own_hw = replica.high_watermark or 0
    out += _recovery_verdicts(st, loaded, notes)
    out += _election_verdicts(elections, own_hw)
    if mode.has_epochs and any(d.path in ("hw", "pre-kip-101") and d.leo_after < d.leo_before for d in decisions):
        out.append(Verdict("NO_EPOCHS", cause="truncation",
                           detail="no leader epochs: truncation fell back to the high watermark"))
    # what truncation removed from the loaded log and did not fetch back unchanged
    converged = all(d.converged for d in decisions)
    if st.removed:
        removed = BatchLog(np.concatenate([g.data for g, _ in st.removed]))
        # copies fetched during the replay and truncated again cost nothing: the leader still has them
        lost = removed.select(~removed.held_in(st.log) & (removed.col("segment") != FETCHED))
        base = lost.col("base_offset")
        for code, mask, detail in (
            ("LOSS_COMMITTED", base < own_hw, f"below this replica's own high watermark {own_hw}"),
            ("POSSIBLY_COMMITTED", (base >= own_hw) & (base < bound),
             f"below the committed bound {bound} (highest checkpointed HW) but not below its own HW {own_hw}"),
            ("DISCARD_UNCOMMITTED", base >= max(bound, own_hw), f"above every known high watermark ({bound})"),
        ):
            part = lost.select(mask)
            if len(part):
                out.append(verdict_over(code, part, cause="truncation", detail=detail))
    for d in decisions:
        if not d.converged:
            out.append(_not_converging(d))
            break
    # fork: retained batches that differ from the leader's at the same offsets (a follower that never
    # converges is caught mid-loop: what it holds then is no outcome)
    if st is not leader and converged and differs_at is not None:
        out.append(verdict_over("FORK", st.log.select(st.log.col("last_offset") >= differs_at), cause="truncation",
                                detail=f"retained batches from offset {differs_at} differ from the leader's"))
    if not out:
        out.append(Verdict("OK"))
    return out


def _election_verdicts(elections: list[_Election], own_hw: int) -> list[Verdict]:
    out: list[Verdict] = []
    for e in elections[-1:]:  # the last time this replica was elected decides what it serves
        facts: _ElectionFacts = {"leader_epoch": e.epoch, "log_end_offset": e.leo, "own_high_watermark": own_hw,
                                 "lost_them_itself": own_hw > e.leo, "other_brokers": e.lacks_from}
        if e.unclean:
            out.append(verdict_over("UNCLEAN_ELECTION", e.lacks, cause="election",
                                    detail=e.evidence or "elected outside the last ISR", **facts))
        elif len(e.lacks):
            who = ", ".join(map(str, e.lacks_from))
            why = (f"its own checkpointed high watermark {own_hw} is above its log end {e.leo}: it lost them "
                   "itself (unflushed or cut at restart)" if own_hw > e.leo else
                   "they never reached it")
            out.append(verdict_over("LEADER_LACKS_COMMITTED", e.lacks, cause="election",
                                    detail=f"elected in {_epoch_text(e.epoch)} with log end {e.leo}, without records "
                                           f"below the high watermark of broker(s) {who}; {why}", **facts))
    return out


def _recovery_verdicts(st: ReplicaState, loaded: Restarted, notes: list[str]) -> list[Verdict]:
    cut = loaded.lost_to_recovery
    if not len(cut) and not loaded.lost_unread:
        return []  # recovery cut nothing
    gone = cut.select(~cut.held_in(st.log))
    unread = [(a, b) for a, b in loaded.lost_unread if not st.log.covers(a)]
    if not len(gone) and not unread:
        if len(cut) or loaded.lost_unread:
            notes.append("its own recovery cut batches at restart; it fetched them back unchanged")
        return []
    first = min(([int(gone.col("base_offset")[0])] if len(gone) else []) + [a for a, _ in unread])
    return [verdict_over("LOST_TO_RECOVERY", gone, cause="recovery", extra=unread,
                         detail=f"broker {st.broker_id}'s log recovery at restart cuts its log at offset {first} "
                                "(damaged, zeroed or torn batch) and deletes what follows",
                         broker_id=st.broker_id)]


def _not_converging(d: Decision) -> Verdict:
    if d.path == "tiered":
        return Verdict("NOT_CONVERGING", cause="tiered storage", detail=d.reasoning[-1],
                       facts={"leader": d.leader, "path": d.path, "rounds": d.rounds[-1:]})
    if d.stalled_at is not None:
        return Verdict("NOT_CONVERGING", [(d.stalled_at, d.stalled_at)], cause="corrupt batch on leader",
                       detail=f"fetching at offset {d.stalled_at} returns a damaged batch from broker {d.leader}; "
                              "the follower rejects it and retries forever",
                       facts={"stalled_at": d.stalled_at, "leader": d.leader})
    rounds = d.repeating or d.rounds[-5:]
    return Verdict("NOT_CONVERGING", cause="truncation",
                   detail=f"{len(rounds)} round(s) against broker {d.leader} repeat forever: the follower never "
                          "catches up (evidence Kafka's rules cannot reconcile)",
                   facts={"repeating_rounds": rounds, "leader": d.leader, "path": d.path})


def _kept_damage(st: ReplicaState, loaded: Restarted) -> list[Finding]:
    plan = st.replica.recovery
    if plan is None or not plan.damage_kept:
        return []
    where = (f"reads from offset {loaded.read_fails_from} fail until it is truncated away"
             if loaded.read_fails_from is not None and st.read_fails_from is not None else
             "a torn entry stays in the file; the next append lands after it")
    return [finding("CORRUPTION_NOT_RECOVERED", f"broker {st.broker_id} keeps damage at its restart (the "
                    f"clean-shutdown marker or the recovery point skips it): {where}", file=plan.damage_kept,
                    position=plan.damage_kept_position, broker_id=st.broker_id,
                    read_fails_from=loaded.read_fails_from)]


def _check_invariants(st: ReplicaState, bound: int, div: int | None) -> list[Finding]:
    out: list[Finding] = []
    if div is not None:
        out.append(finding("LOG_MATCHING_VIOLATED", f"after replay broker {st.broker_id}'s log is not a prefix of the "
                           f"leader's (from offset {div})", broker_id=st.broker_id, first_offset=div))
    if st.removed:
        removed = BatchLog(np.concatenate([g.data for g, _ in st.removed]))
        lost = removed.select(~removed.held_in(st.log) & (removed.col("base_offset") < bound)
                              & (removed.col("segment") != FETCHED))
        if len(lost):
            first = int(lost.col("base_offset")[0])
            out.append(finding("COMMITTED_DATA_LOST", f"broker {st.broker_id}: {len(lost)} batch(es) below the "
                               f"committed bound {bound} were truncated and not fetched back (first at offset {first})",
                               broker_id=st.broker_id, batches=len(lost), first_offset=first))
    return out
