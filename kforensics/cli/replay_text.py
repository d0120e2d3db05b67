"""The text of ``replay``: per partition the leader, how replicas compare, each replica's verdicts; a summary."""

from __future__ import annotations

from collections import Counter
from typing import TextIO

from ..replay.engine import PartitionReplay
from ..replay.report import ReplayReport
from .common import finding_line, printable


def _range(offsets: list[tuple[int, int]], limit: int = 8) -> str:
    text = ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in offsets[:limit])
    return text + (f", … ({len(offsets) - limit} more)" if len(offsets) > limit else "")


def _s(v) -> str:
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
            what = f"agree up to offset {min(ea, eb)}; broker {longer} holds {n} more offsets"
        out.append(f"  brokers {a} and {b} on disk: {what}")
    return out


def render_partition(p: PartitionReplay, out: TextIO, *, digests: bool = False) -> None:
    w = out.write
    w(f"\n{printable(p.topic)}-{p.partition}: leader {p.leader} (epoch {p.leader_epoch}), committed bound "
      f"{p.committed_bound}\n")
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
                size = f" ({v.records} records, {v.bytes} bytes)" if v.records or v.bytes else ""
                w(f"      {v.code}: offsets {_range(v.offsets)}{size}"
                  + (f", caused by {v.cause}" if v.cause else "") + f": {printable(v.detail)}\n")
                if digests and v.digests:
                    for dg in v.digests[:20]:
                        w(f"        offset {dg.offset} key {_s(dg.key_sha256)} value {_s(dg.value_sha256)}\n")
                    if len(v.digests) > 20:
                        w(f"        … {len(v.digests) - 20} more records (all in --format json)\n")
            elif v.code != "OK":
                w(f"      {v.code}: {printable(v.detail)}\n")
    for f in p.findings:
        w(f"  ! {finding_line(f)}\n")
    if p.what_if:
        for alt in p.what_if:
            lost = ", ".join(f"{n} {code}" for code, n in alt.lost_records.items() if n) or "nothing lost"
            w(f"  what if broker {alt.leader} leads: {lost}\n")
        w(f"  least loss with broker {p.least_loss_leader} as leader\n")


def render_replay_text(report: ReplayReport, out: TextIO, *, digests: bool = False) -> None:
    out.write(f"replay with Kafka {report.kafka_version} rules, {len(report.partitions)} partition(s) on "
              f"{len(report.brokers)} broker(s)\n")
    for f in report.findings:
        out.write(f"! {finding_line(f)}\n")
    counts: Counter = Counter()
    for p in report.partitions:
        render_partition(p, out, digests=digests)
        for r in p.replicas:
            counts.update(v.code for v in r.verdicts)
    verdicts = ", ".join(f"{n} {code}" for code, n in sorted(counts.items(), key=lambda kv: (kv[0] == "OK", kv[0])))
    out.write(f"\nsummary: {len(report.partitions)} partition(s): {verdicts or 'no replicas'}\n")
