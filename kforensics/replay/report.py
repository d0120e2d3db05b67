"""Replay over many partitions and brokers: one typed report (rendered by the front ends)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..findings import Finding, finding
from .engine import PartitionReplay, WhatIf, replay_partition
from .inputs import batch_digests, load_replicas

LOSS_CODES = ("LOSS_COMMITTED", "POSSIBLY_COMMITTED", "DISCARD_UNCOMMITTED", "FORK")


@dataclass
class BrokerInput:
    """One broker whose log dirs were read."""

    broker_id: int | None
    log_dirs: list[str]
    cluster_id: str | None = None


@dataclass
class ReplayReport:
    """Every partition replayed, with the brokers they came from."""

    kafka_version: str
    brokers: list[BrokerInput]
    partitions: list[PartitionReplay]
    findings: list[Finding] = field(default_factory=list)  # from the metadata log, when one was read


def lost_records(p: PartitionReplay) -> dict[str, int]:
    """Records each loss verdict costs across the replicas of a partition."""
    out = {c: 0 for c in LOSS_CODES}
    for r in p.replicas:
        for v in r.verdicts:
            if v.code in out:
                out[v.code] += v.records
    return out


def _timeline(loaded, metadata):
    """The election timeline when a KRaft metadata log is among the inputs, else None."""
    from ..log.log_dir import open_log_dir

    inputs = list(metadata or [])
    for dirs in loaded.log_dirs:
        for d in dirs:
            ld = open_log_dir(d)
            if any(pd.is_metadata_log for pd in ld.partitions):
                inputs.append(ld)
    if not inputs:
        return None
    from ..kraft.timeline import build_timeline

    return build_timeline(inputs)


def replay_all(brokers, *, kafka_version: str = "latest", topic: str | None = None, partition: int | None = None,
               leader: int | None = None, what_if: bool = False, events: list[dict[str, Any]] | None = None,
               digests: bool = False, metadata: list[Any] | None = None) -> ReplayReport:
    """Replay every partition found on the brokers (filtered)."""
    loaded = load_replicas(brokers, kafka_version=kafka_version)
    topics = {t for t, _ in loaded.groups}
    if topic is not None and topic not in topics:
        raise ValueError(f"no partition of topic {topic!r} on these brokers (topics: {', '.join(sorted(topics))})")
    if partition is not None and not any(p == partition and (topic is None or t == topic) for t, p in loaded.groups):
        raise ValueError(f"no partition {partition}" + (f" of topic {topic!r}" if topic else "") + " on these brokers")
    if leader is not None and leader not in loaded.broker_ids:
        raise ValueError(f"--leader {leader} is not one of the brokers given ({', '.join(map(str, loaded.broker_ids))})")
    tl = _timeline(loaded, metadata)
    report = ReplayReport(kafka_version, [BrokerInput(b, r.broker.log_dirs, r.broker.cluster_id)
                                          for b, r in zip(loaded.broker_ids, loaded.reports)], [],
                          list(tl.findings) if tl is not None else [])
    for (t, p), replicas in sorted(loaded.groups.items()):
        if (topic is not None and t != topic) or (partition is not None and p != partition):
            continue
        ids = [r.broker_id for r in replicas]
        if leader is not None and leader not in ids:
            continue
        chosen, timeline_events = leader, events
        entries = tl.entries(t, p) if tl is not None else []
        if entries and events is None and leader is None and entries[-1].leader in ids:
            # the controller's record of who leads, in which epoch, replaces the guess
            chosen = entries[-1].leader
            timeline_events = [{"op": "elect", "leader": chosen, "epoch": entries[-1].leader_epoch}] + [
                {"op": "follow", "broker": b} for b in sorted(ids) if b != chosen]
        rp = replay_partition(t, p, replicas, kafka_version=kafka_version, leader=chosen, events=timeline_events)
        if entries:
            from ..kraft.grants import check_replica_epochs

            for r in replicas:
                seen = sorted({int(e) for e in r.log.col("partition_leader_epoch").tolist() if e >= 0})
                rp.findings += check_replica_epochs(tl, topic=t, partition=p, broker_id=r.broker_id,
                                                    checkpoint=r.epoch_checkpoint, batch_epochs=seen, file=r.source)
            for e in entries:
                if e.unclean:
                    rp.findings.append(finding("UNCLEAN_ELECTION", f"metadata log offset {e.offset}: leader "
                                               f"{e.leader} elected in epoch {e.leader_epoch} outside the previous "
                                               "ISR or recovering", file=e.file, broker_id=e.leader,
                                               metadata_offset=e.offset, leader_epoch=e.leader_epoch))
            rp.timeline = entries
        if digests:
            by_id = {r.broker_id: r for r in replicas}
            for out in rp.replicas:
                for v in out.verdicts:
                    if v.batches is not None and len(v.batches):
                        v.digests = batch_digests(by_id[out.broker_id], v.batches)
        if what_if:
            rp.what_if = []
            for cand in sorted(ids):
                alt = replay_partition(t, p, replicas, kafka_version=kafka_version, leader=cand)
                rp.what_if.append(WhatIf(cand, lost_records(alt), alt.verdict_codes()))
            best = min(rp.what_if, key=lambda w: (w.lost_records["LOSS_COMMITTED"], w.lost_records["FORK"],
                                                  w.lost_records["POSSIBLY_COMMITTED"],
                                                  w.lost_records["DISCARD_UNCOMMITTED"]))
            rp.least_loss_leader = best.leader
        report.partitions.append(rp)
    return report
