"""Acknowledgement classes: what the producers of a lost range were told, by the rules of the Kafka version.

Each offset range a replay verdict loses (the classes of
:data:`kforensics.verdict_rules.IMPACT`) is split into:

* ``acked-all`` — below a high watermark that, by the version's rule, an
  ``acks=all`` producer was told was committed;
* ``acked-leader-only`` — appended by a leader and acknowledged at append to
  ``acks=1`` (or ``acks=0``) producers, but not committed for ``acks=all``:
  above the high watermark, or (before 3.7) below one that advanced while the
  ISR was below ``min.insync.replicas``;
* ``never-acked`` — written by ``acks=all`` producers that got no success:
  their batches are above the high watermark, or (before 3.7) below one that
  advanced while the ISR was below ``min.insync.replicas``.

The rules, from Kafka's source:

* the leader refuses an ``acks=all`` append while the ISR is below
  ``min.insync.replicas`` (``NotEnoughReplicasException``, nothing written);
  ``acks=0/1`` appends are taken and answered at append
  (``Partition.appendRecordsToLeader``, core, 3.6.0 and 3.7.0);
* an ``acks=all`` produce is answered once the high watermark passes its last
  offset, with ``NOT_ENOUGH_REPLICAS_AFTER_APPEND`` when the ISR is then below
  ``min.insync.replicas`` (``Partition.checkEnoughReplicasReachOffset``, 3.6.0
  and 3.7.0): before 3.7 the high watermark advances with the ISR down to the
  leader alone (``maybeIncrementLeaderHW``, 3.6.0), so records below it may
  have been answered with that error;
* from 3.7.0 the high watermark does not advance while the ISR is below the
  effective ``min.insync.replicas`` (``min(min.insync.replicas, replication
  factor)``, ``Partition.isUnderMinIsr`` / ``effectiveMinIsr``): KAFKA-15583,
  apache/kafka commit ``edc7e10a745`` ("Enforce HWM advance only if partition
  is not under-min-ISR", #14594), first in tag 3.7.0.  Below such a high
  watermark every ``acks=all`` producer was told its write succeeded;
* a producer with a producer id is idempotent (or transactional), and an
  idempotent producer uses ``acks=all`` (``ProducerConfig``: "Must set acks to
  all in order to use the idempotent producer", clients, 3.8.0); a batch with
  no producer id may come from any ``acks``.

The high watermark the evidence shows is the highest checkpointed one (the
replay's committed bound).  The leader's high watermark in memory may have
been higher (the checkpoint is written every
``replica.high.watermark.checkpoint.interval.ms``), so the classes above it
are what the evidence proves, not more.  The ISR at a batch's write comes
from the controller's record by the batch's leader epoch when there is one;
without it the ISR is taken to have met ``min.insync.replicas`` (said in the
facts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..offset_ranges import uncovered
from ..verdict_rules import IMPACT
from .replica import BatchLog
from .verdicts import Verdict, offset_ranges

ACKED_ALL = "acked-all"
ACKED_LEADER_ONLY = "acked-leader-only"
NEVER_ACKED = "never-acked"
CLASSES = (ACKED_ALL, ACKED_LEADER_ONLY, NEVER_ACKED)
#: the first release whose high watermark waits for min.insync.replicas (KAFKA-15583, commit edc7e10a745)
HW_WAITS_FOR_MIN_ISR = (3, 7, 0)
KAFKA_DEFAULT_MIN_ISR = 1  # TopicConfig MIN_IN_SYNC_REPLICAS default


@dataclass(frozen=True)
class AckRule:
    """What decides the classes for one partition."""

    min_insync_replicas: int
    source: str  # where the setting came from
    hw_waits_for_min_isr: bool  # 3.7.0+
    committed_bound: int  # the highest checkpointed high watermark
    isr_below_min: dict[int, str]  # leader epoch -> "always" / "sometimes" (ISR below the effective minimum)
    isr_from_record: bool = False  # the ISR came from the controller's record (else: assumed to meet the minimum)

    def facts(self) -> dict[str, Any]:
        return {"min_insync_replicas": self.min_insync_replicas, "source": self.source,
                "high_watermark": self.committed_bound,
                "hw_waits_for_min_isr": self.hw_waits_for_min_isr,
                "isr_from_controller_record": self.isr_from_record}


def ack_rule(topic: str, kafka_version: Any, committed_bound: int, cluster: Any = None,
             entries: list[Any] | None = None, min_insync_replicas: int | None = None) -> AckRule:
    """The rule for ``topic``: ``min.insync.replicas`` given, else from the metadata log's configs
    (``ClusterState.topic_config``), else Kafka's default; the ISR per leader epoch from the controller's
    ``entries`` (the timeline)."""
    if min_insync_replicas is not None:
        mir, source = min_insync_replicas, "given"
    elif cluster is not None:
        value, where = cluster.topic_config(topic, "min.insync.replicas")
        try:
            mir, source = int(value), where
        except (TypeError, ValueError):  # a config Kafka would refuse: say so, judge with the default
            mir, source = KAFKA_DEFAULT_MIN_ISR, f"default (the {where} holds {value!r}, not a number)"
    else:
        mir, source = KAFKA_DEFAULT_MIN_ISR, "default"
    waits = kafka_version.at_least(*HW_WAITS_FOR_MIN_ISR)
    below: dict[int, str] = {}
    by_epoch: dict[int, list[bool]] = {}
    for e in entries or []:
        if e.leader < 0:
            continue
        # 3.7.0+: the effective minimum is min(min.insync.replicas, replication factor) (effectiveMinIsr)
        need = min(mir, len(e.replicas)) if waits and e.replicas else mir
        by_epoch.setdefault(e.leader_epoch, []).append(len(e.isr) < need)
    for epoch, flags in by_epoch.items():
        if all(flags):
            below[epoch] = "always"
        elif any(flags):
            below[epoch] = "sometimes"
    return AckRule(mir, source, waits, committed_bound, below, bool(entries))


def classify_batches(batches: BatchLog, rule: AckRule) -> dict[str, np.ndarray]:
    """Per class, a mask over ``batches``."""
    base = batches.col("base_offset")
    idempotent = batches.col("producer_id") >= 0
    committed = base < rule.committed_bound
    if not rule.hw_waits_for_min_isr and rule.isr_below_min:
        epochs = batches.col("partition_leader_epoch")
        always = [e for e, how in rule.isr_below_min.items() if how == "always"]
        # before 3.7 the HW passed these while the ISR was below the minimum: acks=all got an error
        committed_ok = committed & ~np.isin(epochs, always)
    else:
        committed_ok = committed
    return {ACKED_ALL: committed_ok,
            ACKED_LEADER_ONLY: ~committed_ok & ~idempotent,
            NEVER_ACKED: ~committed_ok & idempotent}


def classify(v: Verdict, rule: AckRule) -> dict[str, Any]:
    """The acknowledgement facts of one verdict: records and offset ranges per class, and the rule."""
    counts = {c: 0 for c in CLASSES}
    ranges: dict[str, list[list[int]]] = {c: [] for c in CLASSES}
    batches = v.batches
    covered: list[tuple[int, int]] = []
    if batches is not None and len(batches):
        for c, mask in classify_batches(batches, rule).items():
            part = batches.select(mask)
            counts[c] = int(part.col("records_count").clip(min=0).sum())
            ranges[c] = [[a, b] for a, b in offset_ranges(part.col("base_offset"), part.col("last_offset"))]
        covered = offset_ranges(batches.col("base_offset"), batches.col("last_offset"))
    unknown: list[list[int]] = []
    for a, b in v.offsets:
        for lo, hi in uncovered(a, b, covered):
            if hi < rule.committed_bound:  # below the HW with no batch to read (COMMITTED_NOT_HELD, torn bytes)
                counts[ACKED_ALL] += hi - lo + 1
                ranges[ACKED_ALL].append([lo, hi])
            else:
                unknown.append([lo, hi])  # above it, who wrote them is not known
    out: dict[str, Any] = {"acknowledged": counts, "acknowledged_offsets": ranges,
                           "acknowledgement_rule": rule.facts()}
    if unknown:
        out["acknowledgement_unknown_offsets"] = unknown
    uncertain = _uncertain_epochs(batches, rule)
    if uncertain:
        out["acknowledgement_rule"]["isr_below_min_in_epochs"] = uncertain
    return out


def _uncertain_epochs(batches: BatchLog | None, rule: AckRule) -> list[int]:
    """Leader epochs of the batches in which the ISR was below the minimum only part of the time (pre-3.7:
    whether their acks=all producers got an error is not known; they are counted acked-all)."""
    if batches is None or not len(batches) or rule.hw_waits_for_min_isr:
        return []
    seen = {int(e) for e in np.unique(batches.col("partition_leader_epoch"))}
    return sorted(e for e, how in rule.isr_below_min.items() if how == "sometimes" and e in seen)


def summary_text(counts: dict[str, int]) -> str:
    """``acknowledged: 3 acked-all, 2 never-acked`` (the classes with records)."""
    parts = [f"{n} {c}" for c, n in counts.items() if n]
    return "acknowledged: " + (", ".join(parts) if parts else "none")


def annotate(replay: Any, rule: AckRule) -> None:
    """Add the acknowledgement facts to every loss and election verdict of a partition's replay, and a short
    mention to its detail line."""
    for r in replay.replicas:
        for v in r.verdicts:
            if v.code not in IMPACT:
                continue
            facts = classify(v, rule)
            v.facts.update(facts)
            text = summary_text(facts["acknowledged"])
            v.detail = f"{v.detail}; {text}" if v.detail else text
