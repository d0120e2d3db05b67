"""One partition group's replay, the same for ``kforensics replay`` and the Spark job.

A group is the replicas of one partition across brokers.  With the
controller's record (a KRaft timeline) the leader is the one the controller
will choose when the brokers come back (:mod:`.leadership`: its record, or
its rules applied to the record, or nobody), an election the record shows as
unclean is reported as one, and every replica's epochs are checked against
the controller's grants.  Without it the leader is guessed, and said to be.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..epoch.versions import LATEST, KafkaVersion
from ..findings import Finding, finding
from ..kraft.controller_choice import RestartEvidence
from ..verdict_rules import LOSS
from . import acknowledgements, in_sync
from .engine import PartitionReplay, WhatIf, replay_partition
from .leadership import leadership, settled
from .replica import NeedRows, Replica
from .summary import ReplicaSummary, needs_summaries, replay_window, summarize, windowed
from .verdicts import RecordDigest


def lost_records(p: PartitionReplay) -> dict[str, int]:
    """Records each loss verdict costs across the replicas of a partition."""
    out = {c: 0 for c in LOSS}
    for r in p.replicas:
        for v in r.verdicts:
            if v.code in out:
                out[v.code] += v.records
    return out


UNREACHABLE = "REMOTE_SEGMENTS_UNREACHABLE"


def with_unreachable(lost: dict[str, int], p: PartitionReplay) -> dict[str, int]:
    """``lost`` with the offsets of remote segments the leader's lineage leaves behind (tiered storage), when
    there are any: what ``--what-if`` says of each candidate."""
    n = sum(v.records for r in p.replicas for v in r.verdicts if v.code == UNREACHABLE)
    return {**lost, UNREACHABLE: n} if n else lost


Reload = Callable[[int], list[Replica]]


def _windows(replicas: list[Replica], kafka_version: KafkaVersion, summaries: list[ReplicaSummary | None] | None,
             reload: Reload | None) -> tuple[list[Replica], Reload]:
    """The replicas the replay starts from, and how it gets batches below their window when it must (the
    windowing rule of both front ends, :func:`~kforensics.replay.summary.replay_window`, over the replicas held)."""
    if reload is not None:
        return replicas, reload  # windowed by the caller, who knows where the rest is
    if summaries is None:
        summaries = [None] * len(replicas)
    if None in summaries and all(needs_summaries(r) for r in replicas):
        summaries = [summarize(r) for r in replicas]  # else window_floor keeps the group from 0, as the Spark job
    return replay_window(summaries, kafka_version, lambda floor: windowed(replicas, floor))


def _replay(replicas: list[Replica], reload: Reload, **kw: Any) -> tuple[PartitionReplay, list[Replica]]:
    """``replay_partition``, widening the window each time the replay reaches below it; replicas in sync are
    replayed once for all (:mod:`.in_sync`, the same result)."""
    while True:
        try:
            fast = in_sync.replay_in_sync(replicas=replicas, **kw) if in_sync.ENABLED else None
            return (fast if fast is not None else replay_partition(replicas=replicas, **kw)), replicas
        except NeedRows as e:
            wider = reload(e.offset)
            if all(w.window_start >= r.window_start for w, r in zip(wider, replicas)) and any(
                    r.prefix is not None for r in replicas):
                wider = reload(0)  # no progress: take everything
            replicas = wider


def replay_group(topic: str, partition: int, replicas: list[Replica], *, kafka_version: KafkaVersion = LATEST,
                 leader: int | None = None, events: list[dict[str, Any]] | None = None, timeline: Any = None,
                 what_if: bool = False, digests: Callable[[Replica, Any], list[RecordDigest]] | None = None,
                 summaries: list[ReplicaSummary | None] | None = None, reload: Reload | None = None,
                 restart: RestartEvidence | None = None, min_insync_replicas: int | None = None) -> PartitionReplay:
    """Replay one partition group, with the controller's record when there is one.

    The replay works on the batches from where the replicas' summaries say
    they can differ (:mod:`.summary`): with every batch at hand, pass the
    replicas whole (and their ``summaries`` if computed during the scan);
    a caller that loaded only a window passes ``reload(offset)``, which
    returns the group windowed lower.  ``digests(replica, batches)`` reads
    back the records of each verdict's batches (the CLI's ``--digests``).
    ``restart``: the cluster state, the brokers that come back and their
    shutdowns, for the controller's choice of leader (see :mod:`.leadership`).  ``min_insync_replicas``: given, it
    overrides the metadata log's config for the acknowledgement classes.
    """
    ids = [r.broker_id for r in replicas]
    topic_id = next((r.topic_id for r in replicas if r.topic_id), None)
    entries = timeline.entries(topic, partition, topic_id) if timeline is not None else []
    given = leader is not None or events is not None
    chosen = leadership(topic, replicas, entries, leader=leader, events=events, restart=restart,
                        tail_missing=bool(getattr(timeline, "tail_missing", False)), partition=partition)
    events = chosen.events
    work, reload = _windows(replicas, kafka_version, summaries, reload)
    rp, work = _replay(work, reload, topic=topic, partition=partition, kafka_version=kafka_version, leader=leader,
                       events=events, no_leader=chosen.no_leader_epoch)
    rp.election = settled(chosen, rp, given=given)
    acknowledgements.annotate(rp, acknowledgements.ack_rule(
        topic, kafka_version, rp.committed_bound, restart.cluster if restart is not None else None, entries,
        min_insync_replicas))
    if entries:
        rp.findings += controller_checks(timeline, topic, partition, replicas, entries)
        rp.timeline = entries
    if digests is not None:
        by_id = {r.broker_id: r for r in replicas}
        for out in rp.replicas:
            for v in out.verdicts:
                if v.batches is not None and len(v.batches):
                    v.digests = digests(by_id[out.broker_id], v.batches)
    if what_if:
        rp.what_if = []
        for cand in sorted(ids):
            alt, work = _replay(work, reload, topic=topic, partition=partition, kafka_version=kafka_version,
                                leader=cand)
            if alt.leader != cand:
                continue  # its log does not load: it cannot lead
            rp.what_if.append(WhatIf(cand, with_unreachable(lost_records(alt), alt), alt.verdict_codes()))
        if rp.what_if:
            best = min(rp.what_if, key=lambda w: (w.lost_records["LOSS_COMMITTED"],
                                                  w.lost_records.get(UNREACHABLE, 0), w.lost_records["FORK"],
                                                  w.lost_records["LOST_TO_RECOVERY"],
                                                  w.lost_records["POSSIBLY_COMMITTED"],
                                                  w.lost_records["DISCARD_UNCOMMITTED"]))
            rp.least_loss_leader = best.leader
    return rp


def controller_checks(timeline: Any, topic: str, partition: int, replicas: list[Replica], entries: list[Any]
                      ) -> list[Finding]:
    """Each replica's epochs against the controller's grants, and the unclean elections its record shows."""
    from ..kraft.grants import check_replica_epochs

    out: list[Finding] = []
    for r in replicas:
        # every epoch a batch carries starts a run, so the transitions name them all (elided batches included)
        seen = sorted({e for e, _b, m in r.transitions() if m >= 2 and e >= 0})
        out += check_replica_epochs(timeline, topic=topic, partition=partition, topic_id=r.topic_id,
                                    broker_id=r.broker_id, checkpoint=r.epoch_checkpoint, batch_epochs=seen,
                                    file=r.source)
    for e in entries:
        if e.unclean:
            out.append(finding("UNCLEAN_ELECTION", f"metadata log offset {e.offset}: leader {e.leader} elected in "
                               f"epoch {e.leader_epoch} outside the previous ISR or recovering", file=e.file,
                               broker_id=e.leader, metadata_offset=e.offset, leader_epoch=e.leader_epoch))
    return out
