"""Replay over many partitions and brokers: the JSON document and its text rendering."""

from __future__ import annotations

from typing import Any, TextIO

from .. import __version__
from .replay import SCHEMA_VERSION, replay_partition
from .replay_inputs import batch_digests, load_replicas

LOSS_CODES = ("LOSS_COMMITTED", "POSSIBLY_COMMITTED", "DISCARD_UNCOMMITTED", "FORK")


def _lost(p: dict) -> dict[str, int]:
    out = {c: 0 for c in LOSS_CODES}
    for r in p["replicas"]:
        for v in r["verdicts"]:
            if v["code"] in out:
                out[v["code"]] += v["records"]
    return out


def _timeline(reports, metadata=None):
    """The election timeline when a KRaft metadata log is among the inputs, else None."""
    dirs = list(metadata or [])
    for r in reports:
        for p in r.partitions:
            if p.topic == "__cluster_metadata":
                dirs.append(f"{p.log_dir}/{p.dir_name}")
    if not dirs:
        return None
    from .timeline import build_timeline

    return build_timeline(dirs)


def replay_all(brokers, *, kafka_version="latest", topic=None, partition=None, leader=None, what_if=False,
               events=None, digests=False, metadata=None) -> dict[str, Any]:
    """Replay every partition found on the brokers (filtered), as one JSON-ready document."""
    groups, reports = load_replicas(brokers, kafka_version=kafka_version)
    tl = _timeline(reports, metadata)
    parts = []
    for (t, p), replicas in sorted(groups.items()):
        if (topic is not None and t != topic) or (partition is not None and p != partition):
            continue
        ids = [r.broker_id for r in replicas]
        if leader is not None and leader not in ids:
            continue
        chosen, timeline_events = leader, events
        entries = tl.partitions.get((t, p), []) if tl is not None else []
        if entries and events is None and leader is None and entries[-1].leader in ids:
            # the controller's record of who leads, in which epoch, replaces the guess
            chosen = entries[-1].leader
            timeline_events = [{"op": "elect", "leader": chosen, "epoch": entries[-1].leader_epoch}] + [
                {"op": "follow", "broker": b} for b in sorted(ids) if b != chosen]
        rp = replay_partition(t, p, replicas, kafka_version=kafka_version, leader=chosen, events=timeline_events)
        if entries:
            from .timeline import check_replica_epochs

            for r in replicas:
                cp = r.epoch_checkpoint
                seen = sorted({int(e) for e in r.log.col("epoch").tolist() if e >= 0})
                for f in check_replica_epochs(tl, t, p, r.broker_id, cp, seen, r.source):
                    rp.findings.append({"code": f.code, "broker_id": r.broker_id, "message": f.message})
            for e in entries:
                if e.unclean:
                    rp.findings.append({"code": "UNCLEAN_ELECTION", "broker_id": e.leader,
                                        "message": f"metadata log offset {e.offset}: leader {e.leader} elected in epoch "
                                                   f"{e.leader_epoch} outside the previous ISR or recovering"})
        if digests:
            by_id = {r.broker_id: r for r in replicas}
            for out in rp.replicas:
                for v in out.verdicts:
                    if v.batches is not None and len(v.batches):
                        v.records_detail = batch_digests(by_id[out.broker_id], v.batches)
        result = rp.to_dict()
        if entries:
            result["timeline"] = [e.to_dict() for e in entries]
        if what_if:
            result["what_if"] = []
            for cand in sorted(ids):
                alt = replay_partition(t, p, replicas, kafka_version=kafka_version, leader=cand).to_dict()
                result["what_if"].append({"leader": cand, "lost_records": _lost(alt),
                                          "verdicts": {r["broker_id"]: [v["code"] for v in r["verdicts"]]
                                                       for r in alt["replicas"]}})
            best = min(result["what_if"], key=lambda w: (w["lost_records"]["LOSS_COMMITTED"],
                                                        w["lost_records"]["FORK"],
                                                        w["lost_records"]["POSSIBLY_COMMITTED"],
                                                        w["lost_records"]["DISCARD_UNCOMMITTED"]))
            result["least_loss_leader"] = best["leader"]
        parts.append(result)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "kforensics", "version": __version__},
        "kafka_version": kafka_version,
        "brokers": [{"broker_id": r.broker.node_id, "log_dirs": r.broker.log_dirs} for r in reports],
        "partitions": parts,
    }


def render_replay_text(doc: dict, out: TextIO) -> None:
    w = out.write
    w(f"replay with Kafka {doc['kafka_version']} rules, {len(doc['partitions'])} partition(s)\n")
    for p in doc["partitions"]:
        w(f"\n{p['topic']}-{p['partition']}: leader {p['leader']} (epoch {p['leader_epoch']}), "
          f"committed bound {p['committed_bound']}\n")
        for d in p["divergence"]:
            where = "agree" if d["first_divergent_offset"] is None else f"diverge at offset {d['first_divergent_offset']}"
            w(f"  brokers {d['brokers'][0]} and {d['brokers'][1]}: {where} (LEO {d['log_end_offsets'][0]} / "
              f"{d['log_end_offsets'][1]})\n")
        for r in p["replicas"]:
            codes = ", ".join(v["code"] for v in r["verdicts"])
            w(f"  broker {r['broker_id']} ({r['role']}): LEO {r['log_end_offset_before']} -> "
              f"{r['log_end_offset_after']}, HW {r['high_watermark']}: {codes}\n")
            for dec in r["decisions"]:
                for line in dec["reasoning"]:
                    w(f"      {line}\n")
            for v in r["verdicts"]:
                if v["code"] != "OK" and v["offsets"]:
                    rng = ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in v["offsets"][:8])
                    w(f"      {v['code']}: offsets {rng} ({v['records']} records, {v['bytes']} bytes) {v['detail']}\n")
        for f in p["findings"]:
            w(f"  ! {f['code']} (broker {f['broker_id']}): {f['message']}\n")
        if "what_if" in p:
            for alt in p["what_if"]:
                w(f"  what if broker {alt['leader']} leads: {alt['lost_records']}\n")
            w(f"  least loss with broker {p['least_loss_leader']} as leader\n")
