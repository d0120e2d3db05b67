"""What a replay does to consumer groups and transactions, gathered for the front ends (CLI and Spark alike)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ReplayImpact:
    """What the replay does to consumers and transactions: the analyses' results, gathered for rendering."""

    committed: Any  # CommittedOffsets of the replayed partitions
    consumer_impact: list[Any] = field(default_factory=list)  # ConsumerImpact per affected group and partition
    transactions: list[Any] = field(default_factory=list)  # TransactionsAfterReplay per partition that loses records
    findings: list[Any] = field(default_factory=list)

    def __json__(self) -> dict:
        return {"committed_offsets": self.committed, "consumer_impact": self.consumer_impact,
                "transactions": self.transactions}


def replay_impact(report, log_dirs) -> ReplayImpact:
    """Committed offsets, consumer impact and the transactions after the replay, from the brokers' log dirs
    (``log_dirs``: broker id -> log dirs, with the internal topics' partitions).  Only partitions whose replay
    loses or forks records can affect a group or a transaction: without any, ``__consumer_offsets`` is not read."""
    from .committed_offsets import TOPIC, CommittedOffsets, coordinator_copies, read_committed_offsets
    from .impact import IMPACT_CODES, consumer_impact, impact_findings
    from .read_committed import transactions_after_replay

    affected = {(p.topic, p.partition) for p in report.partitions
                if any(v.code in IMPACT_CODES for r in p.replicas for v in r.verdicts)}
    committed = CommittedOffsets()
    if affected:
        committed = read_committed_offsets(coordinator_copies(log_dirs, TOPIC),
                                           keep=lambda group, topic, partition: (topic, partition) in affected)
    impacts = consumer_impact(report, committed)
    after = transactions_after_replay(report, log_dirs=log_dirs)
    findings = list(committed.findings) + impact_findings(impacts)
    for a in after:
        findings += (a.leader_transactions.findings if a.leader_transactions is not None else []) + a.findings
    return ReplayImpact(committed, impacts, after, findings)
