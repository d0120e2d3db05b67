"""What a replay does to consumer groups and transactions, gathered for the front ends (CLI and Spark alike)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..findings import Finding
    from .committed_offsets import CommittedOffset, CommittedOffsets
    from .impact import ConsumerImpact
    from .read_committed import TransactionsAfterReplay


@dataclass
class ReplayImpact:
    """What the replay does to consumers and transactions: the analyses' results, gathered for rendering."""

    committed: CommittedOffsets  # of the replayed partitions
    consumer_impact: list[ConsumerImpact] = field(default_factory=list)  # per affected group and partition
    transactions: list[TransactionsAfterReplay] = field(default_factory=list)  # per partition that loses records
    findings: list[Finding] = field(default_factory=list)

    def __json__(self) -> dict[str, Any]:
        return {"committed_offsets": self.committed, "consumer_impact": self.consumer_impact,
                "transactions": self.transactions}


def replay_impact(report: Any, log_dirs: dict[int | None, list[Any]]) -> ReplayImpact:
    # report: a kforensics.replay.report.ReplayReport (the replay is above this package: not imported)
    """Committed offsets, consumer impact and the transactions after the replay, from the brokers' log dirs
    (``log_dirs``: broker id -> log dirs, with the internal topics' partitions).  Only partitions whose replay
    loses or forks records can affect a group or a transaction: without any, ``__consumer_offsets`` is not read."""
    from ..formats.group_coordinator import TOPIC
    from ..transactions.internal_log import coordinator_copies
    from ..verdict_rules import affects_consumers
    from .committed_offsets import CommittedOffsets, read_committed_offsets
    from .impact import consumer_impact, impact_findings
    from .read_committed import transactions_after_replay

    affected = {(p.topic, p.partition) for p in report.partitions
                if affects_consumers(p)}
    committed = CommittedOffsets()
    if affected:
        committed = read_committed_offsets(coordinator_copies(log_dirs, TOPIC),
                                           keep=lambda group, topic, partition: (topic, partition) in affected)
    impacts = consumer_impact(report, committed)
    after = transactions_after_replay(report, log_dirs=log_dirs)
    findings = list(committed.findings) + impact_findings(impacts)
    for a in after:
        findings += transaction_findings(a)
    return ReplayImpact(committed, impacts, after, findings)


def transaction_findings(after: TransactionsAfterReplay) -> list[Finding]:
    """The findings of one partition's transactions after the replay (``after``: a ``TransactionsAfterReplay``):
    the new leader's (open, hanging) and the reopened ones'."""
    return (after.leader_transactions.findings if after.leader_transactions is not None else []) + after.findings


def partition_replay_impact(p: Any, commits: list[CommittedOffset] | None,
                            logs: dict[tuple[int | None, str, int], Any] | None, *, coordinator: Any = None
                            ) -> ReplayImpact:
    """What the replay of one partition (``p``, a ``PartitionReplay``) does to its consumer groups and
    transactions, as :func:`replay_impact` finds it for a whole report: ``commits`` are the groups' committed
    offsets of this partition (from every broker's copy of ``__consumer_offsets``), ``logs`` the replicas'
    partition logs by (broker id, topic, partition) (None: transactions are not read), ``coordinator`` the
    cluster's ``__transaction_state`` view.  Nothing unless the replay leaves records the new leader does not
    serve (:func:`kforensics.verdict_rules.affects_consumers`).  Its ``committed`` is empty: the caller holds
    the commits."""
    from ..verdict_rules import affects_consumers
    from .committed_offsets import CommittedOffsets
    from .impact import impact_findings, partition_impact
    from .read_committed import partition_after_replay

    if not affects_consumers(p):
        return ReplayImpact(CommittedOffsets())
    impacts = partition_impact(p, commits) if commits else []
    after = [partition_after_replay(p, logs, coordinator=coordinator)] if logs is not None else []
    findings = impact_findings(impacts) + [f for a in after for f in transaction_findings(a)]
    return ReplayImpact(CommittedOffsets(), impacts, after, findings)
