"""Replay Kafka's replication on the replicas of one partition and judge the outcome.

Input: the replicas as found on disk, a Kafka version and a sequence of
events (by default: the chosen leader is elected in a new epoch and every
other replica follows it).  Each follower's truncation is replayed with the
rules of that version (:mod:`.truncation`), then it catches up with the
leader.  The verdicts say, per replica, what was discarded, lost or forked,
with the offsets, sizes and producers affected.  The same function serves
``kforensics replay`` and the Spark job.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..epoch.versions import KafkaVersion, parse_kafka_version
from ..findings import Finding, finding
from .divergence import Divergence, cleaned_below, divergence, first_difference, missing_from
from .replica import BatchLog, Replica
from .truncation import Decision, ReplicaState, fetch, truncate_follower
from .verdicts import Verdict, verdict_over


@dataclass
class EpochRun:
    """Consecutive batches written in one epoch: offsets ``[start, end]``."""

    start: int
    end: int
    epoch: int


def epoch_runs(log: BatchLog) -> list[EpochRun]:
    """A log reduced to its runs of one epoch (what a timeline plot draws)."""
    if not len(log):
        return []
    ep = log.col("partition_leader_epoch")
    base, last = log.col("base_offset"), log.col("last_offset")
    starts = np.flatnonzero(np.concatenate(([True], ep[1:] != ep[:-1])))
    ends = np.concatenate((starts[1:] - 1, [len(ep) - 1]))
    return [EpochRun(int(base[a]), int(last[b]), int(ep[a])) for a, b in zip(starts.tolist(), ends.tolist())]


@dataclass
class ReplicaOutcome:
    """One replica after the replay: its role, logs before and after, decisions and verdicts."""

    broker_id: int
    role: str  # leader / follower
    log_end_offset_before: int
    log_end_offset_after: int
    high_watermark: int | None
    epoch_cache: list[tuple[int, int]]
    decisions: list[Decision] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    log_before: list[EpochRun] = field(default_factory=list)  # the log as found, by epoch run
    log_after: list[EpochRun] = field(default_factory=list)  # the log after the replay


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
    kafka_version: str
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

    def verdict_codes(self) -> dict[int, list[str]]:
        return {r.broker_id: [v.code for v in r.verdicts] for r in self.replicas}


def choose_leader(replicas: list[Replica]) -> int:
    """Kafka-like default: the replica with the highest latest epoch, then the longest log, then the lowest id."""
    def key(r: Replica):
        return (r.latest_epoch if r.latest_epoch is not None else -1, r.log_end_offset, -r.broker_id)

    return max(replicas, key=key).broker_id


def synthetic_batch(broker: int, offset: int, epoch: int, records: int = 1, size: int = 100) -> list[int]:
    """A batch appended during replay (scenario events): identity derived from who wrote what where."""
    crc = zlib.crc32(f"{broker}:{offset}:{epoch}".encode())
    return [offset, offset + records - 1, epoch, crc, records, size, -1, 2]


def default_events(replicas: list[Replica], leader: int, epoch: int | None = None) -> list[dict[str, Any]]:
    """The leader is elected (in a new epoch unless given) and every other replica follows it."""
    if epoch is None:
        epoch = max((r.latest_epoch for r in replicas if r.latest_epoch is not None), default=-1) + 1
    events: list[dict[str, Any]] = [{"op": "elect", "leader": leader, "epoch": epoch}]
    for r in sorted(replicas, key=lambda r: r.broker_id):
        if r.broker_id != leader:
            events.append({"op": "follow", "broker": r.broker_id})
    return events


def replay_partition(
    topic: str,
    partition: int,
    replicas: list[Replica],
    *,
    kafka_version: str | KafkaVersion = "latest",
    leader: int | None = None,
    events: list[dict[str, Any]] | None = None,
) -> PartitionReplay:
    """Replay one partition and judge every replica."""
    mode = parse_kafka_version(kafka_version)
    by_id = {r.broker_id: r for r in replicas}
    if leader is None:
        leader = next((e["leader"] for e in reversed(events or []) if e.get("op") == "elect"), None)
        if leader is None:
            leader = choose_leader(replicas)
    if events is None:
        events = default_events(replicas, leader)
    states = {
        r.broker_id: ReplicaState(r, r.log, r.epoch_cache(mode), r.high_watermark or 0, r.log_end_offset)
        for r in replicas
    }
    outcomes = {
        r.broker_id: ReplicaOutcome(r.broker_id, "follower", r.log_end_offset, r.log_end_offset, r.high_watermark, [])
        for r in replicas
    }
    bound = max((r.high_watermark or 0 for r in replicas), default=0)
    current, epoch = None, None
    pending: dict[int, Decision] = {}
    findings: list[Finding] = []
    for ev in events:
        op = ev["op"]
        if op == "elect":
            current = ev["leader"]
            epoch = ev.get("epoch")
            if epoch is None:
                epoch = max((s.cache.latest_epoch or -1) for s in states.values()) + 1
            st = states[current]
            if mode.leader_assigns_on_election and mode.has_epochs:
                st.cache.assign(epoch, st.leo)  # KAFKA-7415: the new leader records its epoch at its LEO
            outcomes[current].notes.append(f"elected leader in epoch {epoch} with LEO {st.leo}")
            _check_election(by_id, states, current, bound, findings)
        elif op in ("truncate", "follow"):
            f = states[ev["broker"]]
            d = truncate_follower(f, states[current], mode)
            outcomes[f.broker_id].decisions.append(d)
            pending[f.broker_id] = d
            if op == "follow":
                outcomes[f.broker_id].notes += fetch(f, states[current], mode, d)
        elif op == "fetch":
            f = states[ev["broker"]]
            outcomes[f.broker_id].notes += fetch(f, states[current], mode, pending.get(f.broker_id))
        elif op == "append":
            st = states[ev["broker"]]
            rows = [synthetic_batch(st.broker_id, st.leo + i, epoch if epoch is not None else 0)
                    for i in range(ev.get("batches", 1))]
            new = BatchLog.from_rows(rows)
            st.log = st.log.concat(new)
            st.leo = int(new.col("last_offset")[-1]) + 1
            if mode.has_epochs:
                for e, base, _magic in new.epoch_transitions():
                    st.cache.assign(e, base)
        elif op in ("down", "up"):
            outcomes[ev["broker"]].notes.append(f"broker {ev['broker']} {op}")
        else:
            raise ValueError(f"unknown replay event {op!r}")
    outcomes[current].role = "leader"
    leader_state = states[current]
    unclean_leader = any(f.code == "UNCLEAN_ELECTION" and f.facts.get("broker_id") == current for f in findings)
    for bid, st in states.items():
        out = outcomes[bid]
        out.log_end_offset_after = st.leo
        out.epoch_cache = st.cache.entries
        out.log_before, out.log_after = epoch_runs(by_id[bid].log), epoch_runs(st.log)
        out.verdicts = judge(st, leader_state, by_id[bid], bound, mode, out.decisions,
                             unclean=unclean_leader and bid == current)
        if bid != current:
            findings += _check_invariants(st, leader_state, bound)
    return PartitionReplay(
        topic, partition, mode.label, current, epoch if epoch is not None else -1, bound,
        [outcomes[b] for b in sorted(outcomes)], divergence(replicas), events, findings,
    )


def _check_election(by_id: dict[int, Replica], states: dict[int, ReplicaState], leader: int, bound: int,
                    findings: list[Finding]) -> None:
    st = states[leader]
    if st.leo < bound:
        findings.append(finding("UNCLEAN_ELECTION", f"leader's log ends at {st.leo}, below the committed bound {bound} "
                                "(the highest checkpointed high watermark): it was elected without the committed "
                                "prefix", broker_id=leader, log_end_offset=st.leo, committed_bound=bound))
        return
    for bid, r in by_id.items():
        if bid == leader or not r.high_watermark:
            continue
        committed = r.log.select(r.log.col("last_offset") < r.high_watermark)
        missing = missing_from(committed, st.log, cleaned_below(r, by_id[leader]))
        if len(missing):
            where = int(missing.col("base_offset")[0])
            findings.append(finding("UNCLEAN_ELECTION", f"broker {bid} holds {len(missing)} batch(es) below its "
                                    f"high watermark {r.high_watermark} that the leader does not have (first at "
                                    f"offset {where})", broker_id=leader, other_broker=bid, first_offset=where))
            return


def judge(st: ReplicaState, leader: ReplicaState, replica: Replica, bound: int, mode: KafkaVersion,
          decisions: list[Decision], unclean: bool) -> list[Verdict]:
    """The verdicts of one replica after the replay."""
    out: list[Verdict] = []
    if unclean:
        out.append(Verdict("UNCLEAN_ELECTION", cause="election", detail="elected without the committed prefix"))
    if any(d.path in ("hw", "pre-kip-101") for d in decisions) and mode.has_epochs:
        out.append(Verdict("NO_EPOCHS", cause="truncation",
                           detail="no leader epochs: truncation fell back to the high watermark"))
    # what was removed and not fetched back unchanged
    if st.removed:
        removed = BatchLog(np.concatenate([g.data for g, _ in st.removed]))
        final = set(map(tuple, st.log.identity().tolist()))
        lost = removed.select(np.array([tuple(r) not in final for r in removed.identity().tolist()], dtype=bool))
        own_hw = replica.high_watermark or 0
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
    # fork: retained batches that differ from the leader's at the same offsets
    if st is not leader:
        div = first_difference(st.log, leader.log, cleaned_below(replica, leader.replica))
        if div is not None:
            out.append(verdict_over("FORK", st.log.select(st.log.col("last_offset") >= div), cause="truncation",
                                    detail=f"retained batches from offset {div} differ from the leader's"))
    if not out:
        out.append(Verdict("OK"))
    return out


def _check_invariants(st: ReplicaState, leader: ReplicaState, bound: int) -> list[Finding]:
    out: list[Finding] = []
    div = first_difference(st.log, leader.log, cleaned_below(st.replica, leader.replica))
    if div is not None:
        out.append(finding("LOG_MATCHING_VIOLATED", f"after replay the follower's log is not a prefix of the "
                           f"leader's (from offset {div})", broker_id=st.broker_id, first_offset=div))
    if st.removed:
        final = set(map(tuple, st.log.identity().tolist()))
        for gone, _why in st.removed:
            lost = [r for r in gone.identity().tolist() if tuple(r) not in final and r[0] < bound]
            if lost:
                out.append(finding("COMMITTED_DATA_LOST", f"{len(lost)} batch(es) below the committed bound {bound} "
                                   f"were truncated and not fetched back (first at offset {lost[0][0]})",
                                   broker_id=st.broker_id, batches=len(lost), first_offset=lost[0][0]))
                break
    return out
