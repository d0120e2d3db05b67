"""Replay Kafka's replication on the replicas of one partition and judge the outcome.

Input: the replicas as found on disk, a Kafka version and a sequence of
events (by default: the chosen leader is elected in a new epoch and every
other replica follows it).  Each follower's truncation is replayed with the
rules of that version (:mod:`kforensics.analysis.truncation`), then it catches
up with the leader.  The verdicts say, per replica, what was discarded, lost
or forked, with the offsets, sizes and producers affected.

Verdict codes: ``OK``, ``DISCARD_UNCOMMITTED``, ``LOSS_COMMITTED``,
``POSSIBLY_COMMITTED``, ``FORK``, ``UNCLEAN_ELECTION``, ``NO_EPOCHS``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .divergence import divergence
from .epoch_cache import KafkaVersion, parse_kafka_version
from .replica import COLUMNS, BatchLog, Replica
from .truncation import Decision, ReplicaState, fetch, truncate_follower

SCHEMA_VERSION = 1


@dataclass
class Verdict:
    code: str
    offsets: list[list[int]] = field(default_factory=list)  # [base, last] ranges
    records: int = 0
    bytes: int = 0
    producer_ids: list[int] = field(default_factory=list)
    detail: str = ""
    batches: BatchLog | None = None  # the affected batches (for digests on demand); not serialised
    records_detail: list[dict] | None = None  # key/value digests, when asked for

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k not in ("batches", "records_detail")}
        if self.records_detail is not None:
            d["records_detail"] = self.records_detail
        return d


@dataclass
class ReplicaOutcome:
    broker_id: int
    role: str  # leader / follower
    log_end_offset_before: int
    log_end_offset_after: int
    high_watermark: int | None
    epoch_cache: list[list[int]]
    decisions: list[Decision] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "broker_id": self.broker_id,
            "role": self.role,
            "log_end_offset_before": self.log_end_offset_before,
            "log_end_offset_after": self.log_end_offset_after,
            "high_watermark": self.high_watermark,
            "epoch_cache": self.epoch_cache,
            "decisions": [d.to_dict() for d in self.decisions],
            "notes": self.notes,
            "verdicts": [v.to_dict() for v in self.verdicts],
        }


@dataclass
class PartitionReplay:
    topic: str
    partition: int
    kafka_version: str
    leader: int
    leader_epoch: int
    committed_bound: int
    replicas: list[ReplicaOutcome]
    divergence: list[dict[str, Any]]
    events: list[dict[str, Any]]
    findings: list[dict[str, Any]] = field(default_factory=list)

    def verdict_codes(self) -> dict[int, list[str]]:
        return {r.broker_id: [v.code for v in r.verdicts] for r in self.replicas}

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "kafka_version": self.kafka_version,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "committed_bound": self.committed_bound,
            "replicas": [r.to_dict() for r in self.replicas],
            "divergence": self.divergence,
            "events": self.events,
            "findings": self.findings,
        }


def choose_leader(replicas: list[Replica]) -> int:
    """Kafka-like default: the replica with the highest latest epoch, then the longest log, then the lowest id."""
    def key(r: Replica):
        return (r.latest_epoch if r.latest_epoch is not None else -1, r.log_end_offset, -r.broker_id)

    return max(replicas, key=key).broker_id


def synthetic_batch(broker: int, offset: int, epoch: int, records: int = 1, size: int = 100) -> list[int]:
    """A batch appended during replay (scenario events): identity derived from who wrote what where."""
    crc = zlib.crc32(f"{broker}:{offset}:{epoch}".encode())
    return [offset, offset + records - 1, epoch, crc, records, size, -1, 2]


def default_events(replicas: list[Replica], leader: int) -> list[dict[str, Any]]:
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
    findings: list[dict[str, Any]] = []
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
            _check_election(by_id, states, current, bound, outcomes, findings)
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
            rows = []
            for _ in range(ev.get("batches", 1)):
                rows.append(synthetic_batch(st.broker_id, st.leo + len(rows), epoch if epoch is not None else 0))
            new = BatchLog.from_rows(rows)
            st.log = st.log.concat(new)
            st.leo = int(new.col("last")[-1]) + 1
            for row in rows:
                if mode.has_epochs:
                    st.cache.assign(row[2], row[0])
        elif op in ("down", "up"):
            outcomes[ev["broker"]].notes.append(f"broker {ev['broker']} {op}")
        else:
            raise ValueError(f"unknown replay event {op!r}")
    outcomes[current].role = "leader"
    leader_state = states[current]
    for bid, st in states.items():
        out = outcomes[bid]
        out.log_end_offset_after = st.leo
        out.epoch_cache = [list(e) for e in st.cache.entries]
        out.verdicts = _verdicts(st, leader_state, by_id[bid], bound, mode, out.decisions,
                                 unclean=any(f["code"] == "UNCLEAN_ELECTION" for f in findings) and bid == current)
        if bid != current:
            _check_invariants(st, leader_state, bound, findings)
    return PartitionReplay(
        topic, partition, mode.label, current, epoch if epoch is not None else -1, bound,
        [outcomes[b] for b in sorted(outcomes)],
        divergence(replicas), events, findings,
    )


def _check_election(by_id, states, leader, bound, outcomes, findings):
    st = states[leader]
    if st.leo < bound:
        findings.append({"code": "UNCLEAN_ELECTION", "broker_id": leader,
                         "message": f"leader's log ends at {st.leo}, below the committed bound {bound} "
                                    "(the highest checkpointed high watermark): it was elected without the committed prefix"})
        return
    ident_leader = None
    for bid, r in by_id.items():
        if bid == leader or not r.high_watermark:
            continue
        # batches both cleaners may have removed are no evidence of anything
        committed = r.log.data[(r.log.col("last") < r.high_watermark)
                               & (r.log.col("base") >= _cleaned(r, by_id[leader]))]
        n = min(len(committed), len(st.log))
        if n == len(committed) and np.array_equal(committed[:, :4], st.log.identity()[:n]):
            continue  # the usual case: the leader holds the same prefix
        if ident_leader is None:
            ident_leader = {tuple(x) for x in st.log.identity().tolist()}
        missing = [tuple(x) for x in committed[:, :4].tolist() if tuple(x) not in ident_leader]
        if missing:
            findings.append({"code": "UNCLEAN_ELECTION", "broker_id": leader,
                             "message": f"broker {bid} holds {len(missing)} batch(es) below its high watermark "
                                        f"{r.high_watermark} that the leader does not have (first at offset {missing[0][0]})"})
            return


def _ranges(log: BatchLog) -> dict[str, Any]:
    return {
        "offsets": [[int(b), int(l)] for b, l in zip(log.col("base").tolist(), log.col("last").tolist())][:1000],
        "records": int(log.col("count").clip(min=0).sum()),
        "bytes": int(log.col("size").sum()),
        "producer_ids": sorted({int(p) for p in np.unique(log.col("pid")) if p >= 0})[:1000],
    }


def _verdicts(st: ReplicaState, leader: ReplicaState, replica: Replica, bound: int, mode: KafkaVersion,
              decisions: list[Decision], unclean: bool) -> list[Verdict]:
    out: list[Verdict] = []
    if unclean:
        out.append(Verdict("UNCLEAN_ELECTION", detail="elected without the committed prefix"))
    if any(d.path in ("hw", "pre-kip-101") for d in decisions) and mode.has_epochs:
        out.append(Verdict("NO_EPOCHS", detail="no leader epochs: truncation fell back to the high watermark"))
    # what was removed and not fetched back unchanged
    if st.removed:
        removed = BatchLog(np.concatenate([g.data for g, _ in st.removed]))
        final = {tuple(r) for r in st.log.identity().tolist()}
        lost_mask = np.array([tuple(r) not in final for r in removed.identity().tolist()], dtype=bool)
        lost = BatchLog(removed.data[lost_mask])
        own_hw = replica.high_watermark or 0
        base = lost.col("base")
        for code, mask, detail in (
            ("LOSS_COMMITTED", base < own_hw, f"below this replica's own high watermark {own_hw}"),
            ("POSSIBLY_COMMITTED", (base >= own_hw) & (base < bound),
             f"below the committed bound {bound} (highest checkpointed HW) but not below its own HW {own_hw}"),
            ("DISCARD_UNCOMMITTED", base >= max(bound, own_hw), f"above every known high watermark ({bound})"),
        ):
            part = BatchLog(lost.data[mask])
            if len(part):
                r = _ranges(part)
                out.append(Verdict(code, r["offsets"], r["records"], r["bytes"], r["producer_ids"], detail, part))
    # fork: retained batches that differ from the leader's at the same offsets
    if st is not leader:
        div = _first_difference(st.log, leader.log, _cleaned(replica, leader.replica))
        if div is not None:
            differ = BatchLog(st.log.data[st.log.col("last") >= div])
            r = _ranges(differ)
            out.append(Verdict("FORK", r["offsets"], r["records"], r["bytes"], r["producer_ids"],
                               f"retained batches from offset {div} differ from the leader's", differ))
    if not out:
        out.append(Verdict("OK"))
    return out


def _cleaned(a: Replica, b: Replica) -> int:
    """Below this offset both replicas' cleaners have run, so their batches need not match."""
    if a.cleaner_offset is None or b.cleaner_offset is None:
        return -1
    return min(a.cleaner_offset, b.cleaner_offset)


def _first_difference(a: BatchLog, b: BatchLog, cleaned: int = -1) -> int | None:
    if cleaned > 0:
        a = BatchLog(a.data[a.col("base") >= cleaned])
        b = BatchLog(b.data[b.col("base") >= cleaned])
    n = min(len(a), len(b))
    ia, ib = a.identity()[:n], b.identity()[:n]
    diff = np.nonzero(np.any(ia != ib, axis=1))[0]
    if len(diff):
        return int(min(ia[diff[0], 0], ib[diff[0], 0]))
    return None


def _check_invariants(st: ReplicaState, leader: ReplicaState, bound: int, findings: list) -> None:
    div = _first_difference(st.log, leader.log, _cleaned(st.replica, leader.replica))
    if div is not None:
        findings.append({"code": "LOG_MATCHING_VIOLATED", "broker_id": st.broker_id,
                         "message": f"after replay the follower's log is not a prefix of the leader's (from offset {div})"})
    if len(st.removed):
        final = {tuple(r) for r in st.log.identity().tolist()}
        for gone, _why in st.removed:
            lost = [r for r in gone.identity().tolist() if tuple(r) not in final and r[0] < bound]
            if lost:
                findings.append({"code": "COMMITTED_DATA_LOST", "broker_id": st.broker_id,
                                 "message": f"{len(lost)} batch(es) below the committed bound {bound} were truncated "
                                            f"and not fetched back (first at offset {lost[0][0]})"})
                break


__all__ = ["replay_partition", "choose_leader", "default_events", "PartitionReplay", "Verdict", "COLUMNS"]
