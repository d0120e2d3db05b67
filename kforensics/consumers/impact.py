"""Consumer impact of a replay: per partition and group, what it consumed that is gone and what it does next.

A group's committed offset ``X`` proves it was delivered the records below
``X`` (consumers only read below the high watermark, so ``X`` also proves
those records were exposed).  After the replay the partition is what its new
leader serves (its log after the replay).  For every partition with a
verdict that loses or forks records (DISCARD_UNCOMMITTED, LOSS_COMMITTED,
POSSIBLY_COMMITTED, LOST_TO_RECOVERY, FORK, LEADER_LACKS_COMMITTED,
UNCLEAN_ELECTION), each group with such records below its commit, or with a
commit beyond the new leader's log end, gets one :class:`ConsumerImpact`:

* ``consumed_lost``: offsets below the commit whose records (on the brokers
  named in ``sources``) the new leader no longer has;
* ``outcome``/``next_position``: what the consumer does when it resumes
  (:mod:`.fetch_position`): fetch at its commit, OFFSET_OUT_OF_RANGE and a
  reset per ``auto.offset.reset``, or KIP-320 truncation detection;
* ``skipped``: offsets where the new leader holds other records than those
  the group consumed, below where it fetches next: it never receives them
  (after OFFSET_OUT_OF_RANGE: what ``auto.offset.reset=latest`` skips, the
  new leader's records from the first lost offset to its log end);
* ``reread``: offsets it receives again (after truncation detection; after
  OFFSET_OUT_OF_RANGE: what ``earliest`` re-reads below the commit).

``consumed_lost_records`` counts the lost batches' records (each offset once
across the replicas that held it); ``skipped_records`` counts offsets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..epoch.cache import LeaderEpochCache
from ..findings import Finding, finding
from ..offset_ranges import Range, below, intersect, span, union
from ..verdict_rules import IMPACT
from .committed_offsets import CommittedOffset, CommittedOffsets
from .fetch_position import (
    FETCHES,
    OFFSET_OUT_OF_RANGE,
    RESET_UNDEFINED_EPOCH,
    TRUNCATION_DETECTED,
    broker_validates,
    next_position,
)


@dataclass
class LostRange:
    """Records one verdict says the new leader does not serve: whose, which offsets, how many records."""

    broker_id: int
    verdict: str
    first_offset: int
    last_offset: int
    records: int


@dataclass
class ConsumerImpact:
    """One group on one replayed partition: what it consumed that is gone and what happens next."""

    topic: str
    partition: int
    group: str
    committed_offset: int
    committed_leader_epoch: int | None
    commit_timestamp: int
    commit_file: str | None
    commit_position: int | None
    commit_log_offset: int
    coordinator_partition: int | None
    leader: int  # the partition's leader after the replay
    leader_epoch: int
    log_start_offset: int
    log_end_offset: int  # the new leader's log end after the replay
    kafka_version: str  # the label of the rules replayed
    consumed_lost: list[Range] = field(default_factory=list)
    consumed_lost_records: int = 0
    sources: list[LostRange] = field(default_factory=list)
    outcome: str = FETCHES
    next_position: int | None = None
    validated: bool = False
    epoch_answer: tuple[int, int] | None = None
    skipped: list[Range] = field(default_factory=list)
    skipped_records: int = 0  # offsets the new leader holds in ``skipped``
    reread: list[Range] = field(default_factory=list)
    detail: str = ""
    digests: list[Any] | None = None  # RecordDigest of consumed-and-lost records, when the replay read them




# ---------------------------------------------------------------------------- per partition
def lost_ranges(p: Any) -> list[tuple[LostRange, Any]]:
    """Every verdict range of a :class:`~kforensics.replay.engine.PartitionReplay` whose records the new leader
    does not serve, with the verdict (for its batches and digests)."""
    out = []
    for r in p.replicas:
        for v in r.verdicts:
            if v.code not in IMPACT:
                continue
            for a, b in v.offsets:
                out.append((LostRange(r.broker_id, v.code, a, b, _records_in(v, a, b + 1)), v))
    return out


def _records_in(v: Any, start: int, end: int) -> int:
    """Records of verdict ``v`` with offsets in ``[start, end)``: its batches' record counts (a batch cut by the
    bounds counts at most its offsets inside them), and one per offset of its ranges no readable batch stands
    for (a torn or zeroed batch)."""
    log = v.batches
    total, covered = 0, []
    if log is not None:
        for base, last, count in zip(log.col("base_offset").tolist(), log.col("last_offset").tolist(),
                                     log.col("records_count").tolist()):
            lo, hi = max(base, start), min(last, end - 1)
            if lo > hi:
                continue
            n = max(count, 0)
            total += n if (lo, hi) == (base, last) else min(n, hi - lo + 1)
            covered.append((lo, hi))
    listed = intersect([(start, end - 1)], union([tuple(r) for r in v.offsets]))
    return total + max(0, span(listed) - span(intersect(listed, union(covered))))


def _leader(p: Any) -> Any:
    return next(r for r in p.replicas if r.broker_id == p.leader)


def partition_impact(p: Any, commits: list[CommittedOffset], *, validates: bool = True) -> list[ConsumerImpact]:
    """The impact on each group of one replayed partition (``p`` a ``PartitionReplay``; ``commits`` its groups'
    committed offsets); ``validates``: the consumers are 2.3+ (KIP-320 validation where the broker has it)."""
    leader = _leader(p)
    runs = [(r.start, r.end) for r in leader.log_after]
    coverage = union(runs)
    log_end = leader.log_end_offset_after
    log_start = coverage[0][0] if coverage else log_end
    tiered_start = getattr(leader, "tiered_log_start_offset", None)
    if tiered_start is not None and tiered_start < log_start:
        # a consumer's fetch in [logStartOffset, localLogStartOffset) of a remote-enabled log is read from remote
        # storage (RemoteStorageFetchInfo), not answered OFFSET_OUT_OF_RANGE: only followers get
        # OFFSET_MOVED_TO_TIERED_STORAGE (ReplicaManager.handleOffsetOutOfRangeError, 3.9.0-rc3 L1746-1790)
        log_start = tiered_start
    cache = LeaderEpochCache(leader.epoch_cache, mode=p.kafka_version)
    check = validates and broker_validates(p.kafka_version)
    lost = lost_ranges(p)
    out = []
    for c in sorted(commits, key=lambda c: c.group):
        if c.offset < 0:
            continue  # an invalid commit (GROUP_COMMIT_INVALID): the group resets before and after alike
        x = c.offset
        mine = [(lr, v) for lr, v in lost if lr.first_offset < x]
        if not mine and log_start <= x <= log_end:
            continue
        nxt = next_position(x, c.leader_epoch, log_start=log_start, log_end=log_end, leader_cache=cache,
                            validates=check)
        consumed = union([(lr.first_offset, min(lr.last_offset, x - 1)) for lr, _ in mine])
        sources = [LostRange(lr.broker_id, lr.verdict, lr.first_offset, min(lr.last_offset, x - 1),
                             _records_in(v, lr.first_offset, min(lr.last_offset + 1, x))) for lr, v in mine]
        imp = ConsumerImpact(
            p.topic, p.partition, c.group, x, c.leader_epoch, c.commit_timestamp, c.file, c.position, c.log_offset,
            c.coordinator_partition, p.leader, p.leader_epoch, log_start, log_end, str(p.kafka_version),
            consumed, _distinct_records(mine, x), sources, nxt.outcome, nxt.position, nxt.validated,
            nxt.epoch_answer)
        replaced = intersect(consumed, coverage)  # where the new leader holds other records than those consumed
        at = nxt.position  # where it fetches next (None: wherever auto.offset.reset puts it)
        if nxt.outcome == FETCHES and at is not None:
            imp.skipped = below(replaced, at)
            imp.detail = nxt.reason + (
                f"; it never receives the new leader's records at {_text(imp.skipped)}, which replaced those it "
                "consumed" if imp.skipped else "")
        elif nxt.outcome == TRUNCATION_DETECTED and at is not None:
            imp.skipped = below(replaced, at)
            imp.reread = intersect([(at, min(x, log_end) - 1)], coverage) if at < min(x, log_end) else []
            imp.detail = nxt.reason + (f"; it receives {_text(imp.reread)} again, now the new leader's records"
                                       if imp.reread else "")
        else:
            gap = [(lr.first_offset, log_end - 1) for lr, _ in mine if lr.first_offset < log_end]
            imp.skipped = intersect(union(gap + replaced), coverage)
            imp.reread = intersect([(log_start, min(x, log_end) - 1)], coverage)
            imp.detail = nxt.reason + (
                f"; with latest it never receives {_text(imp.skipped)}" if imp.skipped else "") + (
                f"; with earliest it receives {_text(imp.reread)} again" if imp.reread else "") + (
                f"; if the new leader's log reaches {x} before the consumer fetches, it fetches at {x} without "
                f"error and never receives offsets {log_end}-{x - 1} either" if nxt.outcome == OFFSET_OUT_OF_RANGE
                and x > log_end else "")
        imp.skipped_records = span(imp.skipped)
        digests = [d for _, v in mine for d in (v.digests or []) if d.offset < x]
        if any(v.digests is not None for _, v in mine):
            seen: set[int] = set()
            imp.digests = []
            for d in digests:
                if d.offset not in seen:
                    seen.add(d.offset)
                    imp.digests.append(d)
        out.append(imp)
    return out


def _distinct_records(mine: list[tuple[LostRange, Any]], end: int) -> int:
    """Records below ``end`` across the sources, each offset counted once (the first source that has it)."""
    total, counted = 0, list[Range]()
    for lr, v in sorted(mine, key=lambda m: (m[0].first_offset, m[0].broker_id)):
        todo = [(lr.first_offset, min(lr.last_offset, end - 1))]
        for a, b in counted:
            todo = [piece for lo, hi in todo for piece in ((lo, min(hi, a - 1)), (max(lo, b + 1), hi)) if
                    piece[0] <= piece[1]]
        for a, b in todo:
            total += _records_in(v, a, b + 1)
        counted = union(counted + todo)
    return total


def _text(ranges: list[Range]) -> str:
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


def consumer_impact(report: Any, committed: CommittedOffsets, *, validates: bool = True) -> list[ConsumerImpact]:
    """Every group's impact on every partition of a :class:`~kforensics.replay.report.ReplayReport`."""
    out = []
    for p in report.partitions:
        commits = committed.for_partition(p.topic, p.partition)
        if commits:
            out += partition_impact(p, commits, validates=validates)
    return out


def impact_findings(impacts: list[ConsumerImpact]) -> list[Finding]:
    """The findings the impacts make, placed at each group's commit record in ``__consumer_offsets``."""
    out = []
    for i in impacts:
        where: dict[str, Any] = dict(file=i.commit_file, position=i.commit_position, group=i.group, topic=i.topic,
                                     partition=i.partition, committed_offset=i.committed_offset)
        tp = f"{i.topic}-{i.partition}"
        if i.consumed_lost:
            out.append(finding("CONSUMED_RECORDS_LOST", f"group {i.group!r} consumed {i.consumed_lost_records} "
                               f"record(s) of {tp} at {_text(i.consumed_lost)} that no longer exist",
                               offsets=i.consumed_lost, records=i.consumed_lost_records, **where))
        if i.outcome in (OFFSET_OUT_OF_RANGE, RESET_UNDEFINED_EPOCH):
            out.append(finding("GROUP_OFFSET_OUT_OF_RANGE", f"group {i.group!r} on {tp}: {i.detail}",
                               log_end_offset=i.log_end_offset, outcome=i.outcome, **where))
        elif i.outcome == TRUNCATION_DETECTED:
            out.append(finding("GROUP_TRUNCATION_DETECTED", f"group {i.group!r} on {tp}: {i.detail}",
                               next_position=i.next_position, **where))
        elif i.skipped:
            out.append(finding("GROUP_SKIPS_RECORDS", f"group {i.group!r} on {tp}: {i.detail}", skipped=i.skipped,
                               **where))
    return out


def committed_offsets_of(report: Any, log_dirs: dict[int | None, list[Any]] | None = None, **kw: Any
                         ) -> CommittedOffsets:
    """The committed offsets of the groups of the partitions a replay report replayed, from the
    ``__consumer_offsets`` partitions in its brokers' log dirs (or in ``log_dirs``, broker id -> log dirs:
    e.g. a scenario's ``Scenario.log_dirs``)."""
    from ..transactions.internal_log import coordinator_copies
    from .committed_offsets import read_committed_offsets

    wanted = {(p.topic, p.partition) for p in report.partitions}
    dirs = log_dirs if log_dirs is not None else {b.broker_id: list(b.log_dirs) for b in report.brokers}
    copies = coordinator_copies(dirs, "__consumer_offsets")
    return read_committed_offsets(copies, keep=lambda g, t, n: (t, n) in wanted, **kw)
