"""The text of ``replay``: the answer first; per partition the leader, how replicas compare, each replica's verdicts;
what that does to consumer groups and transactions; the findings below medium counted per code; a summary.

The answer line and what makes a partition worth showing come from
:mod:`kforensics.verdict_rules` (the verdict classes) and the findings'
severities: findings at or above medium (``--min-severity``, or every one
with ``--verbose``) are listed where they belong, the rest counted per code.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, TextIO

from ..findings import Finding
from ..replay.engine import PartitionReplay
from ..replay.report import ReplayReport
from ..severity import Severity
from ..verdict_rules import FAILING_FINDINGS, IMPACT, NO_LOSS_FAILING, fails_replay, verdict_codes, worst
from .common import (
    LISTED_BY_DEFAULT,
    at_restart_text,
    by_listing,
    counted_lines,
    finding_line,
    number_ranges,
    plural,
    printable,
)


def _range(offsets: list[tuple[int, int]], limit: int = 8) -> str:
    text = ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in offsets[:limit])
    return text + (f", … ({len(offsets) - limit} more)" if len(offsets) > limit else "")


def _s(v: object) -> str:
    return "-" if v is None else str(v)


def _compare(p: PartitionReplay) -> list[str]:
    out = []
    for d in p.divergence:
        a, b = d.brokers
        ea, eb = d.log_end_offsets
        if d.first_divergent_offset is not None:
            what = f"differ from offset {d.first_divergent_offset}"
        elif ea == eb:
            what = f"identical up to their end ({ea})"
        else:
            longer, n = (a, ea - eb) if ea > eb else (b, eb - ea)
            what = f"agree below offset {min(ea, eb)}; broker {longer} holds {n} more offset{'' if n == 1 else 's'}"
        out.append(f"  brokers {a} and {b} on disk: {what}")
    return out


def leader_text(p: PartitionReplay) -> str:
    """``leader 2 (epoch 7, predicted: isr)``, ``no leader (offline, epoch 7)``: the leader and how it was reached."""
    e = p.election
    epoch = f"epoch {p.leader_epoch}" if p.leader_epoch >= 0 else "epoch unknown"
    if e is None:
        return f"leader {p.leader} ({epoch})"
    if e.offline:
        return f"no leader (offline, {epoch})"
    how = e.how + (f": {e.rule}" if e.rule else "")
    return f"leader {p.leader} ({epoch}, {how})"


def render_partition(p: PartitionReplay, out: TextIO, *, digests: bool = False,
                     threshold: Severity = Severity.INFO) -> None:
    """One partition in detail; its findings at or above ``threshold`` (the rest are counted at the end)."""
    w = out.write
    w(f"\n{printable(p.topic)}-{p.partition}: {leader_text(p)}, committed bound {p.committed_bound}\n")
    if p.election is not None and p.election.how not in ("given",):
        w(f"  leader: {printable(p.election.detail)}\n")
        others = [b for b in p.election.alternatives if b >= 0]
        if others:
            w(f"  another return order elects broker(s) {', '.join(map(str, others))} instead\n")
        if len(others) < len(p.election.alternatives):
            w("  another return order leaves it without a leader\n")
    for line in _compare(p):
        w(line + "\n")
    for r in p.replicas:
        codes = ", ".join(v.code for v in r.verdicts)
        at_restart = ("" if r.log_end_offset_at_restart in (None, r.log_end_offset_before)
                      else f" (after restart {r.log_end_offset_at_restart})")
        w(f"  broker {r.broker_id} ({r.role}): LEO {r.log_end_offset_before}{at_restart} -> "
          f"{r.log_end_offset_after}, HW {_s(r.high_watermark)}: {codes}\n")
        for note in r.notes:
            w(f"      {printable(note)}\n")
        for dec in r.decisions:
            for line in dec.reasoning:
                w(f"      {printable(line)}\n")
        for v in r.verdicts:
            if v.code != "OK" and v.offsets:
                size = (f" ({v.records} record{'' if v.records == 1 else 's'}, {v.bytes} bytes)" if v.records else
                        " (no readable record)")
                one = len(v.offsets) == 1 and v.offsets[0][0] == v.offsets[0][1]
                w(f"      {v.code}: offset{'' if one else 's'} {_range(v.offsets)}{size}"
                  + (f", caused by {v.cause}" if v.cause else "") + f": {printable(v.detail)}\n")
                if digests and v.digests:
                    for dg in v.digests[:20]:
                        w(f"        offset {dg.offset} key {_s(dg.key_sha256)} value {_s(dg.value_sha256)}\n")
                    if len(v.digests) > 20:
                        w(f"        … {len(v.digests) - 20} more records (all in --format json)\n")
            elif v.code != "OK":
                w(f"      {v.code}: {printable(v.detail)}\n")
    for f in p.findings:
        if f.severity >= threshold:
            w(f"  ! {finding_line(f)}\n")
    if p.what_if:
        for alt in p.what_if:
            lost = ", ".join(f"{n} {code}" for code, n in alt.lost_records.items() if n) or "nothing lost"
            w(f"  what if broker {alt.leader} leads: {lost}\n")
        w(f"  least loss with broker {p.least_loss_leader} as leader\n")


def _offsets(ranges: list[tuple[int, int]]) -> str:
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges) or "-"


def _consumer_next(i: Any) -> str:
    """What a group does when it resumes, in one line (the finding on its commit record gives the reasoning)."""
    verb = "seeks to" if i.outcome == "TRUNCATION_DETECTED" else "fetches at"
    text: str = i.outcome + (f": {verb} {i.next_position}" if i.next_position is not None else "")
    if i.outcome in ("OFFSET_OUT_OF_RANGE", "RESET_UNDEFINED_EPOCH"):
        text += ": resets per auto.offset.reset"
        if i.skipped:
            text += f"; with latest it never receives {_offsets(i.skipped)}"
        if i.reread:
            text += f"; with earliest it receives {_offsets(i.reread)} again"
        return text
    if i.skipped:
        text += f"; never receives {_offsets(i.skipped)} (the new leader's records there)"
    if i.reread:
        text += f"; receives {_offsets(i.reread)} again"
    return text


def render_consumer_impact(impact: Any, out: TextIO, *, digests: bool = False) -> None:
    """Per affected group and partition: what it consumed that is gone, and what it does when it resumes."""
    w = out.write
    co = impact.committed
    groups = {i.group for i in impact.consumer_impact}
    copies = plural(len(co.partitions_read), "__consumer_offsets partition copy", "__consumer_offsets partition copies")
    w(f"\nconsumer impact: {plural(len(groups), 'group')} affected ({plural(len(co.offsets), 'committed offset')} "
      f"of the partitions that lose records, read from {copies})\n")
    for i in impact.consumer_impact:
        epoch = f" (leader epoch {i.committed_leader_epoch})" if i.committed_leader_epoch is not None else ""
        serves = f"{i.log_start_offset}-{i.log_end_offset - 1}" if i.log_end_offset > i.log_start_offset else "nothing"
        w(f"  {printable(i.topic)}-{i.partition} group {printable(i.group)}: committed {i.committed_offset}{epoch}; "
          f"the new leader, broker {i.leader}, serves {serves}\n")
        if i.consumed_lost:
            w(f"      consumed {_offsets(i.consumed_lost)} ({plural(i.consumed_lost_records, 'record')}), "
              "which no longer exist\n")
        w(f"      {_consumer_next(i)}\n")
        if digests and i.digests:
            for dg in i.digests[:20]:
                w(f"        offset {dg.offset} key {_s(dg.key_sha256)} value {_s(dg.value_sha256)}\n")
            if len(i.digests) > 20:
                w(f"        … {len(i.digests) - 20} more records (all in --format json)\n")


def render_transactions(impact: Any, out: TextIO) -> None:
    """Per partition that loses records and has transactions: the new leader's last stable offset and open
    transactions, and the transactions reopened by lost markers."""
    shown = [a for a in impact.transactions if a.reopened or (a.leader_transactions is not None
                                                              and a.leader_transactions.transactional_batches)]
    if not shown:
        return
    w = out.write
    reopened = sum(len(a.reopened) for a in shown)
    w(f"\ntransactions after the replay: {reopened} reopened by lost markers\n")
    for a in shown:
        lt = a.leader_transactions
        w(f"  {printable(a.topic)}-{a.partition} on the new leader, broker {a.leader}: "
          f"LSO {_s(lt.last_stable_offset)}, {len(lt.open)} open, {lt.commits} committed, {lt.aborts} aborted\n")
        for t in lt.open:
            coord = f", coordinator: {printable(t.coordinator_state)}" if t.coordinator_state else ""
            then = at_restart_text(t.at_restart, t.coordinator_timeout_at)
            w(f"      {'HANGING' if t.hanging else 'open'}: producer {t.producer_id} (epoch {t.producer_epoch}) from "
              f"offset {t.first_offset} to {t.last_offset}{coord}{then}\n")
        for r in a.reopened:
            w(f"      REOPENED: producer {r.producer_id} from offset {r.first_offset}: broker {r.broker_id}'s "
              f"{r.marker.control_type} marker at offset {r.marker.offset} is lost ({r.verdict})\n")


def quiet(p: PartitionReplay, threshold: Severity = Severity.INFO) -> bool:
    """Whether a partition has nothing to report: every replica OK and none cut at restart or truncated, no
    divergence on disk, no finding at or above ``threshold`` (those below it are counted at the end)."""
    if any(f.severity >= threshold for f in p.findings):
        return False
    if p.what_if and any(n for alt in p.what_if for n in alt.lost_records.values()):
        return False  # another leader would lose something: the comparison is worth reading
    if any(d.first_divergent_offset is not None for d in p.divergence):
        return False
    for r in p.replicas:
        if any(v.code != "OK" for v in r.verdicts) or not r.verdicts:
            return False
        if r.log_end_offset_at_restart not in (None, r.log_end_offset_before):
            return False
        if r.log_end_offset_after < r.log_end_offset_before:
            return False
    return True



def quiet_lines(partitions: list[PartitionReplay]) -> list[str]:
    """One line per topic for the partitions with nothing to report."""
    by_topic: dict[str, list[PartitionReplay]] = {}
    for p in partitions:
        by_topic.setdefault(p.topic, []).append(p)
    out = []
    for topic, ps in by_topic.items():
        replicas = sum(len(p.replicas) for p in ps)
        fetched = sum(1 for p in ps for r in p.replicas if r.log_end_offset_after > r.log_end_offset_before)
        numbers = number_ranges([p.partition for p in ps])
        which = f"partition {numbers}" if len(ps) == 1 else f"partitions {numbers} ({len(ps)})"
        fetching = f", {fetched} of them {'catches' if fetched == 1 else 'catch'} up by fetching" if fetched else ""
        out.append(f"  {printable(topic)}: {which}, {replicas} replica{'' if replicas == 1 else 's'}" + fetching)
    return out


def answer_line(report: ReplayReport, impact: Any = None) -> str:
    """What matters first: brokers that will not start, partitions that lose records or cannot recover (by
    :mod:`kforensics.verdict_rules`), consumer and transaction impact; or that nothing is lost."""
    failing = [p for p in report.partitions if fails_replay(verdict_codes(p))]
    impact_hits = [f for f in (impact.findings if impact is not None else []) if f.code in FAILING_FINDINGS]
    if not failing and not impact_hits:
        codes = set().union(*(verdict_codes(p) for p in report.partitions)) if report.partitions else set()
        if codes <= {"OK"}:
            return f"answer: nothing lost: {_counted_partitions(report)}, every replica OK"
        discarded = [p for p in report.partitions if verdict_codes(p) & set(IMPACT)]
        tail = (f"; {plural(len(discarded), 'partition')} only {'discards' if len(discarded) == 1 else 'discard'} "
                "uncommitted records" if discarded else "")
        return f"answer: nothing committed is lost: {_counted_partitions(report)}{tail}"
    parts = []
    # LogLoader cannot load the log: LogManager.loadLogs fails and the broker does not start (LOG_LOAD_FAILS)
    stopped = sorted({r.broker_id for p in failing for r in p.replicas if any(v.code == "LOG_LOAD_FAILS"
                                                                               for v in r.verdicts)})
    if stopped:
        parts.append(f"{'broker' if len(stopped) == 1 else 'brokers'} {', '.join(map(str, stopped))} will not start")
    # evidence that could not be read: unknown, neither a loss nor health (NOT_JUDGED)
    unread = [p for p in failing if verdict_codes(p) & {"NOT_JUDGED"}]
    if unread:
        parts.append(f"unknown for {plural(len(unread), 'partition')}, evidence not read: "
                     + ", ".join(f"{printable(p.topic)}-{p.partition}" for p in unread[:4]))
    # the controller elects nobody (NO_LEADER): unavailable, not a loss
    leaderless = [p for p in failing if p.leader < 0 and p.election is not None and p.election.offline]
    if leaderless:
        one = len(leaderless) == 1
        parts.append(f"{plural(len(leaderless), 'partition')} {'has' if one else 'have'} no eligible leader and "
                     f"{'stays' if one else 'stay'} offline: "
                     + ", ".join(f"{printable(p.topic)}-{p.partition}" for p in leaderless[:4])
                     + (f", … ({len(leaderless) - 4} more)" if len(leaderless) > 4 else ""))
    failing = [p for p in failing if fails_replay(verdict_codes(p) - NO_LOSS_FAILING)]
    if failing:
        names = [f"{printable(p.topic)}-{p.partition} ({worst(verdict_codes(p))})" for p in failing]
        shown = ", ".join(names[:4]) + (f", … ({len(names) - 4} more)" if len(names) > 4 else "")
        parts.append(f"{plural(len(failing), 'partition')} {'loses' if len(failing) == 1 else 'lose'} records or "
                     f"cannot recover: {shown}")
    if impact_hits:
        hit_codes = ", ".join(sorted({f.code for f in impact_hits}))
        parts.append(f"{plural(len(impact_hits), 'finding')} on consumer groups and transactions ({hit_codes})")
    return "answer: " + "; ".join(parts)


_HOW_TEXT = {"controller-record": "as the controller's record names",
             "predicted": "predicted by the controller's rules", "offline": "offline (nobody eligible)",
             "given": "given (--leader or the scenario's events)",
             "guessed": "guessed (no metadata log: highest epoch, then longest log)"}


def leaders_line(partitions: list[PartitionReplay]) -> str:
    """How each partition's leader was reached, counted: ``leaders: 40 as the controller's record names, 3
    predicted ... (brokers coming back: 1, 2, 3, every broker given)``."""
    hows = Counter(p.election.how for p in partitions if p.election is not None)
    if not hows:
        return ""
    text = ", ".join(f"{n} {_HOW_TEXT.get(h, h)}" for h, n in sorted(hows.items(), key=lambda kv: -kv[1]))
    shown = next((p.election for p in partitions if p.election is not None
                  and p.election.how in ("controller-record", "predicted", "offline")), None)
    if shown is not None:
        back = ", ".join(map(str, shown.returning))
        given = "--alive" if shown.returning_given else "every broker given"
        if shown.order_given:
            given += ", started in this order (--restart-order)"
        if shown.running:
            given = (f"{given}, less those that never stopped: {', '.join(map(str, shown.running))} (--running)")
        text += f" (brokers coming back: {back}; {given})"
    return f"leaders: {text}"


def _counted_partitions(report: ReplayReport) -> str:
    """``60 partitions, 80 replicas (1 to 3 per partition)`` or ``55 partitions, 3 replicas each``."""
    per = sorted({len(p.replicas) for p in report.partitions})
    n = sum(len(p.replicas) for p in report.partitions)
    head = plural(len(report.partitions), "partition")
    if len(per) == 1 and len(report.partitions) > 1:
        return f"{head}, {per[0]} replica{'' if per[0] == 1 else 's'} each"
    if len(per) <= 1:
        return f"{head}, {plural(n, 'replica')}"
    return f"{head}, {plural(n, 'replica')} ({per[0]} to {per[-1]} per partition)"


def render_replay_text(report: ReplayReport, out: TextIO, *, digests: bool = False, impact: Any = None,
                       verbose: bool = False, min_severity: Severity | None = None) -> None:
    """The replay's text; ``impact`` (a :class:`~kforensics.cli.replay.ReplayImpact`) adds the consumer-impact and
    transactions sections and their findings.  Partitions with nothing to report (:func:`quiet`) are one line per
    topic unless ``verbose``; findings below ``min_severity`` (default medium; every one with ``verbose``) are
    counted per code at the end."""
    threshold = min_severity if min_severity is not None else Severity.INFO if verbose else LISTED_BY_DEFAULT
    out.write(answer_line(report, impact) + "\n")
    out.write(f"replay with Kafka {report.kafka_version} rules, {plural(len(report.partitions), 'partition')} on "
              f"{plural(len(report.brokers), 'broker')}\n")
    if getattr(report, "min_insync_replicas", None) is not None:
        out.write(f"min.insync.replicas {report.min_insync_replicas} given: the acknowledgement classes apply it to "
                  "every topic instead of the metadata log's configs\n")
    leaders = leaders_line(report.partitions)
    if leaders:
        out.write(leaders + "\n")
    counted: list[Finding] = []
    listed, below = by_listing(report.findings, threshold)
    counted += below
    for f in listed:
        out.write(f"! {finding_line(f)}\n")
    counts: Counter[str] = Counter()
    hidden = []
    for p in report.partitions:
        for r in p.replicas:
            counts.update(v.code for v in r.verdicts)
        counted += [f for f in p.findings if f.severity < threshold]
        if not verbose and quiet(p, threshold):
            hidden.append(p)
            continue
        render_partition(p, out, digests=digests, threshold=threshold)
    if hidden:
        out.write(f"\nnothing to report on {plural(len(hidden), 'partition')}: every replica OK, nothing cut or "
                  "truncated (--verbose shows each)\n")
        for line in quiet_lines(hidden):
            out.write(line + "\n")
    extra = _render_impact(impact, out, digests, threshold, counted) if impact is not None else ""
    if counted:
        out.write("\n")
        for line in counted_lines(counted, "--verbose or --min-severity"):
            out.write(line + "\n")
    verdicts = ", ".join(f"{n} {code}" for code, n in sorted(counts.items(), key=lambda kv: (kv[0] == "OK", kv[0])))
    out.write(f"\nsummary: {_counted_partitions(report)}; verdicts: {verdicts or 'none'}{extra}\n")


def _render_impact(impact: Any, out: TextIO, digests: bool, threshold: Severity, counted: list[Finding]) -> str:
    """The consumer-impact and transactions sections and their findings at or above ``threshold`` (the rest go to
    ``counted``); returns the summary's tail."""
    if impact.committed.offsets or impact.consumer_impact:
        render_consumer_impact(impact, out, digests=digests)
    if impact.transactions:
        render_transactions(impact, out)
    listed, below = by_listing(impact.findings, threshold)
    counted += below
    if listed:
        out.write(f"\n{plural(len(listed), 'finding')} of the consumer and transaction impact\n")
        for f in listed:
            out.write(f"! {finding_line(f)}\n")
    groups = len({(i.group, i.topic, i.partition) for i in impact.consumer_impact})
    reopened = sum(len(a.reopened) for a in impact.transactions)
    hanging = sum(len(a.leader_transactions.hanging) for a in impact.transactions
                  if a.leader_transactions is not None)
    return "".join(part for part, n in ((f"; {plural(groups, 'group-partition')} affected", groups),
                                        (f"; {plural(reopened, 'transaction')} reopened", reopened),
                                        (f"; {plural(hanging, 'hanging transaction')}", hanging)) if n)
