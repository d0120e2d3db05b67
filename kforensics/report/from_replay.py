"""The report of a replay: its sections, built from the document ``replay --format json`` prints.

Every number comes from that document (so the report and the JSON agree by
construction); the typed :class:`~kforensics.replay.report.ReplayReport` is
used only for the figures and to read back the lost batches' timestamps.
:data:`BUILDERS` lists the sections in order: a new analysis adds one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..severity import Severity
from ..verdict_rules import IMPACT, fails_replay
from .evidence import EvidenceFile
from .model import Section, count, ranges_text, time_range, utc
from .partition_facts import (
    at_risk,
    below,
    impact_ranges,
    impact_records,
    name,
    partition_order_key,
    union_count,
    worst_code,
)
from .salvage_section import salvage_section

#: rows a table shows before it says how many it left out (the Markdown goes into tickets)
MAX_ROWS = 2000
#: partitions whose replica timeline is drawn, the worst first
MAX_TIMELINES = 6


@dataclass
class ReplayEvidence:
    """What a replay report is built from."""

    doc: dict[str, Any]  # the replay's JSON document, as ``replay --format json`` prints it
    files: list[EvidenceFile]
    report: Any = None  # the typed ReplayReport (figures, lost times); None: no figures
    times: dict[tuple[str, int, int], tuple[int | None, int | None]] = field(default_factory=dict)
    salvage: Any = None  # the salvage summary (kforensics.salvage), None when salvage was not run
    salvage_command: str = "kforensics salvage <the same inputs> --out DIR"

    def partitions(self) -> list[dict[str, Any]]:
        """The replayed partitions, the worst first."""
        return sorted(self.doc.get("partitions") or [], key=partition_order_key)

    def findings(self) -> list[dict[str, Any]]:
        """Every finding of the document (the report's and each partition's), the worst first, then by file and
        byte."""
        out = list(self.doc.get("findings") or [])
        for p in self.doc.get("partitions") or []:
            out += p.get("findings") or []
        return sorted(out, key=lambda f: (-Severity.parse(f["severity"]), f["code"], str(f.get("file") or ""),
                                          f.get("position") or -1, f.get("message") or ""))


def summary_section(ev: ReplayEvidence) -> Section:
    """The answer first: what is lost, how much of it committed, who noticed, and the findings by severity."""
    s = Section("summary", "Summary")
    parts = ev.partitions()
    lost = [p for p in parts if impact_records(p)]
    records = sum(impact_records(p) for p in lost)
    committed = sum(union_count(below(impact_ranges(p), p.get("committed_bound"))) for p in lost)
    groups = sorted({(i["group"]) for i in ev.doc.get("consumer_impact") or []})
    reopened = sum(len(t.get("reopened") or []) for t in ev.doc.get("transactions") or [])
    codes = [v["code"] for p in parts for r in p["replicas"] for v in r["verdicts"]]
    findings = ev.findings()
    fails = fails_replay(codes, (f["code"] for f in findings))
    s.text(f"{count(len(parts), 'partition')} replayed across {count(len(ev.doc.get('brokers') or []), 'broker')} "
           f"with Kafka {ev.doc.get('kafka_version')} rules. " + (
               f"{count(len(lost), 'partition')} lose {count(records, 'record')} the new leader does not serve, "
               f"{committed} of them below the committed bound (acknowledged to acks=all producers)." if lost else
               "No partition loses records."))
    s.text(f"{count(len(groups), 'consumer group')} affected; {count(reopened, 'transaction')} reopened by the "
           f"replay; {count(sum(1 for p in parts if at_risk(p)), 'partition')} at risk (a replica cannot come back "
           "or was not judged). " + ("replay exits 1: look at the verdicts." if fails else "replay exits 0."))
    counts = Counter(f["severity"] for f in findings)
    s.table(["severity", "findings"], [[str(sev), counts.get(str(sev), 0)] for sev in Severity.worst_first()],
            caption="Findings by severity")
    by_verdict = Counter(codes)
    s.table(["verdict", "replicas"], [[c, n] for c, n in sorted(by_verdict.items(), key=lambda kv: kv[0])],
            caption="Replicas by verdict")
    return s


def evidence_section(ev: ReplayEvidence) -> Section:
    """The brokers and every input file with its size and SHA-256, and what could not be read."""
    s = Section("evidence", "Evidence")
    s.table(["broker", "cluster", "log dirs"],
            [[b.get("broker_id"), b.get("cluster_id"), b.get("log_dirs")] for b in ev.doc.get("brokers") or []],
            caption="Brokers")
    s.table(["file", "bytes", "SHA-256"], [[f.path, f.size, f.sha256] for f in ev.files if f.problem is None],
            caption=f"Input files ({sum(1 for f in ev.files if f.problem is None)}, "
                    f"{sum(f.size or 0 for f in ev.files if f.problem is None)} bytes)", limit=MAX_ROWS,
            what="files")
    unread: list[list[str | None]] = [[f.path, f.problem] for f in ev.files if f.problem is not None]
    unread += [[f"{name(p)} on broker {r['broker_id']}", f"NOT_JUDGED: {v.get('detail') or ''}"]
               for p in ev.partitions() for r in p["replicas"] for v in r["verdicts"] if v["code"] == "NOT_JUDGED"]
    unread += [[_where(f), f"{f['code']}: {f['message']}"] for f in ev.findings()
               if (f.get("facts") or {}).get("read") is False]
    s.table(["what", "why it was not read"], unread, caption="What could not be read")
    if not unread:
        s.text("Every input file was read.")
    return s


def elections_section(ev: ReplayEvidence) -> Section:
    """Who leads each partition after the restart and how that was reached; then the controller's record of each
    partition's leaders and ISRs, in the metadata log's order."""
    s = Section("elections", "Elections: who leads after the restart, and the controller's record")
    chosen = [[name(p), e.get("leader"), e.get("leader_epoch"), e.get("how") + (f": {e['rule']}" if e.get("rule")
                                                                               else ""),
               ", ".join(map(str, e.get("alternatives") or [])) or "-", e.get("detail")]
              for p in ev.partitions() if (e := p.get("election"))]
    if chosen:
        s.table(["partition", "leader", "epoch", "how", "other orders of return", "why"], chosen,
                caption="Who leads after the restart (controller-record, predicted by the controller's rules, "
                        "offline, given or guessed; -1: nobody)", limit=MAX_ROWS, what="partitions")
    rows = []
    for p in sorted(ev.doc.get("partitions") or [], key=lambda p: (p["topic"], p["partition"])):
        for e in p.get("timeline") or []:
            rows.append([name(p), e.get("offset"), utc(e.get("timestamp")), e.get("leader"), e.get("leader_epoch"),
                         e.get("isr"), e.get("replicas"), "UNCLEAN" if e.get("unclean") else "",
                         e.get("record"), e.get("file")])
    if not rows:
        hows = {(p.get("election") or {}).get("how") for p in ev.partitions()}
        s.text("No KRaft metadata log among the inputs: " + (
            "the leaders above follow the controller's state read from ZooKeeper's data dir (the ZooKeeper-era "
            "controller's rules)." if hows & {"controller-record", "predicted"} else
            "each partition's leader is the replay's default choice (highest latest epoch, then longest log)."))
        return s
    s.table(["partition", "metadata offset", "time (UTC)", "leader", "epoch", "ISR", "replicas", "unclean",
             "record", "file"], rows, caption="The controller's record, in the metadata log's order",
            limit=MAX_ROWS, what="records")
    return s


def acknowledged_text(facts: dict[str, Any]) -> str:
    """What producers were told of a verdict's records (``facts["acknowledged"]``, :mod:`kforensics.replay.
    acknowledgements`): ``3 acked-all, 2 acked-leader-only``; ``-`` when the verdict has no such facts."""
    acked = facts.get("acknowledged") or {}
    return ", ".join(f"{n} {k}" for k, n in acked.items() if n) or "-"


def verdicts_section(ev: ReplayEvidence) -> Section:
    """Per partition (the worst first) what is lost and when it was written; then every verdict that is not OK."""
    s = Section("verdicts", "Verdicts by partition")
    rows = []
    for p in ev.partitions():
        ranges = impact_ranges(p)
        t = _partition_time(ev, p)
        rows.append([name(p), worst_code(p), p.get("leader"), p.get("leader_epoch"), p.get("committed_bound"),
                     impact_records(p), union_count(below(ranges, p.get("committed_bound"))), ranges_text(ranges),
                     t])
    s.table(["partition", "worst verdict", "leader", "epoch", "committed bound", "records lost",
             "committed lost", "offsets lost", "written (UTC)"], rows,
            caption="Partitions, the worst first (records lost: the union over replicas of the offsets the new "
                    "leader does not serve)", limit=MAX_ROWS, what="partitions")
    if ev.report is not None:
        _add_timelines(ev, s)
    detail = []
    for p in ev.partitions():
        for r in sorted(p["replicas"], key=lambda r: r["broker_id"]):
            for v in r["verdicts"]:
                if v["code"] == "OK":
                    continue
                committed = union_count(below(v.get("offsets") or [], p.get("committed_bound")))
                tr = ev.times.get((p["topic"], p["partition"], r["broker_id"]))
                detail.append([name(p), r["broker_id"], r.get("role"), v["code"], v.get("cause"),
                               ranges_text(v.get("offsets")), v.get("records"), v.get("bytes"), committed,
                               acknowledged_text(v.get("facts") or {}), time_range(*tr) if tr else None,
                               v.get("detail")])
    s.table(["partition", "broker", "role", "verdict", "cause", "offsets", "records", "bytes", "committed",
             "acknowledged", "written (UTC)", "detail"], detail, caption="Every verdict that is not OK",
            limit=MAX_ROWS,
            what="verdicts")
    if ev.report is not None and any(worst_code(p) != "OK" for p in ev.partitions()):
        from .. import plots
        from .figures import svg_figure

        s.blocks.append(svg_figure(plots.divergence_map(ev.report),
                                   "Worst verdict per replica (partitions × brokers, the worst partitions first)"))
    return s


def forks_section(ev: ReplayEvidence) -> Section:
    """Pairs of replicas whose logs differ at the same offsets, and the replicas that fork."""
    s = Section("forks", "Forks and divergence")
    rows = []
    for p in ev.partitions():
        for d in p.get("divergence") or []:
            if d.get("first_divergent_offset") is None:
                continue
            a, b = d["brokers"]
            rows.append([name(p), a, b, d["first_divergent_offset"], d.get("log_end_offsets"),
                         d.get("compacted_below")])
    forks = [[name(p), r["broker_id"], ranges_text(v.get("offsets")), v.get("records"), v.get("detail")]
             for p in ev.partitions() for r in p["replicas"] for v in r["verdicts"] if v["code"] == "FORK"]
    s.table(["partition", "broker", "offsets", "records", "detail"], forks, caption="Replicas that fork")
    s.table(["partition", "broker A", "broker B", "first divergent offset", "log ends", "compacted below"], rows,
            caption="Replica pairs whose records differ at the same offset")
    if not rows and not forks:
        s.text("No two replicas hold different records at the same offset.")
    return s


def consumers_section(ev: ReplayEvidence) -> Section:
    """Each consumer group that read records that are gone, and what it does when it resumes."""
    s = Section("consumers", "Consumer groups affected")
    rows = [[f"{i['topic']}-{i['partition']}", i["group"], i.get("committed_offset"), utc(i.get("commit_timestamp")),
             ranges_text(i.get("consumed_lost")), i.get("consumed_lost_records"), i.get("outcome"),
             i.get("next_position"), ranges_text(i.get("skipped")), i.get("skipped_records"),
             ranges_text(i.get("reread")), _where({"file": i.get("commit_file"), "position": i.get("commit_position")})]
            for i in sorted(ev.doc.get("consumer_impact") or [],
                            key=lambda i: (i["topic"], i["partition"], i["group"]))]
    s.table(["partition", "group", "committed offset", "committed at (UTC)", "consumed and lost", "records",
             "on resume", "next position", "skipped", "skipped records", "re-read", "commit (file @ byte)"], rows,
            limit=MAX_ROWS, what="groups")
    if not rows:
        s.text("No consumer group had committed past records the new leader does not serve"
               + ("" if any(impact_records(p) for p in ev.partitions()) else " (no partition loses records).")
               )
    return s


def transactions_section(ev: ReplayEvidence) -> Section:
    """Transactions whose marker the replay loses, and the new leader's open (hanging) transactions."""
    s = Section("transactions", "Transactions affected")
    reopened, open_rows = [], []
    for t in sorted(ev.doc.get("transactions") or [], key=lambda t: (t["topic"], t["partition"])):
        for r in t.get("reopened") or []:
            m = r.get("marker") or {}
            reopened.append([f"{r['topic']}-{r['partition']}", r.get("producer_id"), r.get("broker_id"),
                             m.get("control_type"), m.get("offset"), r.get("first_offset"), r.get("last_offset"),
                             r.get("verdict"), _where(m)])
        lt = t.get("leader_transactions") or {}
        for o in lt.get("open") or []:
            open_rows.append([f"{t['topic']}-{t['partition']}", t.get("leader"), o.get("producer_id"),
                              o.get("first_offset"), o.get("last_offset"), o.get("records"),
                              time_range(o.get("first_timestamp"), o.get("last_timestamp")), o.get("hanging"),
                              _at_restart(o), o.get("why"), _where(o)])
    s.table(["partition", "producer", "broker", "marker", "marker offset", "first offset", "last offset", "verdict",
             "marker (file @ byte)"], reopened, caption="Transactions reopened (their marker is lost)")
    s.table(["partition", "leader", "producer", "first offset", "last offset", "records", "written (UTC)",
             "hanging", "at a restart", "why", "file @ byte"], open_rows, caption="Open transactions on the new leader")
    if not reopened and not open_rows:
        s.text("No transaction is reopened or left open by the replay.")
    return s


def _at_restart(o: dict[str, Any]) -> str:
    """What the restarted transaction coordinator does with an open transaction (``at_restart``), with the instant
    its timeout passes when it aborts it then; ``-`` when not known (no coordinator's record was read)."""
    what = o.get("at_restart") or "unknown"
    if what == "unknown":
        return "-"
    when = utc(o.get("coordinator_timeout_at")) if what == "aborted once timed out" else None
    return f"{what} (at {when})" if when else what


def restart_section(ev: ReplayEvidence) -> Section:
    """What each broker's restart does to its replica (recovery's cut), and where the replay leaves it."""
    s = Section("restart", "What a restart will do")
    rows, same = [], 0
    for p in sorted(ev.doc.get("partitions") or [], key=lambda p: (p["topic"], p["partition"])):
        for r in sorted(p["replicas"], key=lambda r: r["broker_id"]):
            before, at, after = (r.get("log_end_offset_before"), r.get("log_end_offset_at_restart"),
                                 r.get("log_end_offset_after"))
            if before == at == after and not any(v["code"] in IMPACT for v in r["verdicts"]):
                same += 1
                continue
            cut = before - at if isinstance(before, int) and isinstance(at, int) else None
            rows.append([name(p), r["broker_id"], r.get("role"), before, at, cut, after,
                         "; ".join(r.get("notes") or [])])
    s.text("Each broker restarts as Kafka's LogLoader would (recovery cuts a log without the clean-shutdown marker "
           "at its first damaged batch), then the leader is elected and each follower truncates and fetches. "
           f"{same} replicas are unchanged by both.")
    s.table(["partition", "broker", "role", "log end as found", "after restart", "cut at restart",
             "after replay", "notes"], rows, limit=MAX_ROWS, what="replicas")
    return s


def findings_section(ev: ReplayEvidence) -> Section:
    """Every finding, the worst first, with its file and byte."""
    s = Section("findings", "Findings")
    fs = ev.findings()
    s.table(["severity", "code", "file", "byte", "message"],
            [[f["severity"], f["code"], f.get("file"), f.get("position"), f.get("message")] for f in fs],
            limit=MAX_ROWS * 5, what="findings")
    if not fs:
        s.text("No finding.")
    return s


def _where(f: dict[str, Any]) -> str | None:
    """``file @ byte N`` (or the file alone) of a finding or a located fact."""
    file, pos = f.get("file"), f.get("position")
    if file is None:
        return None
    return f"{file} @ byte {pos}" if pos is not None else str(file)


def _partition_time(ev: ReplayEvidence, p: dict[str, Any]) -> str | None:
    got = [ev.times[k] for k in ev.times if k[:2] == (p["topic"], p["partition"])]
    firsts = [a for a, _ in got if a is not None]
    lasts = [b for _, b in got if b is not None]
    return time_range(min(firsts) if firsts else None, max(lasts) if lasts else None)


def _add_timelines(ev: ReplayEvidence, s: Section) -> None:
    """The replica timeline of the worst partitions (at most :data:`MAX_TIMELINES`)."""
    from .. import plots
    from .figures import svg_figure

    by_name = {(p.topic, p.partition): p for p in ev.report.partitions}
    shown = [p for p in ev.partitions() if worst_code(p) != "OK"][:MAX_TIMELINES]
    for p in shown:
        rp = by_name.get((p["topic"], p["partition"]))
        if rp is not None:
            s.blocks.append(svg_figure(plots.replica_timeline(rp), f"Replica timeline of {name(p)}: each replica's "
                                       "log as found, after restart and after the replay, coloured by epoch"))


#: the sections of a replay report, in order; each takes the evidence and returns its section
def salvage(ev: ReplayEvidence) -> Section:
    """The salvage section (:mod:`.salvage_section`)."""
    return salvage_section(ev.salvage, ev.salvage_command)


BUILDERS: list[Callable[[ReplayEvidence], Section]] = [
    summary_section, evidence_section, elections_section, verdicts_section, forks_section, consumers_section,
    transactions_section, salvage, restart_section, findings_section]


def replay_sections(ev: ReplayEvidence) -> list[Section]:
    """Every section of the report, in order."""
    return [b(ev) for b in BUILDERS]


def read_lost_times(ev: ReplayEvidence) -> None:
    """Fill ``ev.times``: per (topic, partition, broker) the time range of the batches its impact verdicts name,
    read from that broker's copy of the partition."""
    from .lost_times import lost_batch_times

    if ev.report is None:
        return
    dirs = ev.report.log_dirs
    for p in ev.doc.get("partitions") or []:
        for r in p["replicas"]:
            ranges = [x for v in r["verdicts"] if v["code"] in IMPACT for x in (v.get("offsets") or [])]
            if ranges and r["broker_id"] in dirs:
                ev.times[(p["topic"], p["partition"], r["broker_id"])] = lost_batch_times(
                    dirs[r["broker_id"]], p["topic"], p["partition"], ranges)
