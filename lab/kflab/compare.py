"""Predictions against what Kafka did, per partition and per replica.

Each check is ``{check, topic, partition, broker, predicted, observed, agree}``.  The observed side comes
only from Kafka: the restarted cluster's answers (leaders, ISRs, ListOffsets epochs), its own log lines
(recovery cuts) and the records its replicas hold after the restart, read with the lab's own reader.
"""

from __future__ import annotations

from pathlib import Path

from .cluster import BROKERS, node_name
from .predict import load, replay_verdicts
from .segments import partition_content

TOPICS = ["orders", "events", "payments"]
SHOW = 25  # ids shown per set in the report (agreement is decided on the whole sets)


def _is_id(v) -> bool:
    return isinstance(v, str) and not v.startswith(("ctrl@", "other@"))


def _ids(content: dict) -> set:
    return {v for v in content.values() if _is_id(v)}


def _check(name, topic, part, broker, predicted, observed, **extra) -> dict:
    agree = predicted == observed
    if isinstance(predicted, set):
        extra.setdefault("predicted_count", len(predicted))
        extra.setdefault("observed_count", len(observed))
        predicted, observed = sorted(predicted)[:SHOW], sorted(observed)[:SHOW]
    return {
        "check": name,
        "topic": topic,
        "partition": part,
        "broker": broker,
        "predicted": predicted,
        "observed": observed,
        "agree": agree,
        **extra,
    }


def contents(root: Path) -> dict:
    """broker -> 'topic-p' -> partition_content, for the lab's topics."""
    out = {}
    for b in BROKERS:
        d = root / node_name(b)
        out[b] = (
            {
                p.name: partition_content(p)
                for p in sorted(d.iterdir())
                if p.is_dir() and p.name.rpartition("-")[0] in TOPICS
            }
            if d.exists()
            else {}
        )
    return out


def first_change(before: dict, after: dict) -> int | None:
    """First offset whose record the replica held before and no longer holds (None: all kept)."""
    changed = [o for o, v in before.items() if after.get(o) != v]
    return min(changed) if changed else None


def predicted_after(rp: dict, leader_rec: dict, own: dict, lead: dict) -> tuple[dict, int]:
    """The replica's content that kforensics' numbers imply: its own records below the truncation point
    (recovery cut or fetch truncation), the predicted leader's above it, up to the predicted log end."""
    cut = rp.get("log_end_offset_at_restart")
    cut = rp["log_end_offset_before"] if cut is None else cut
    for d in rp.get("decisions") or []:
        if d.get("truncate_to") is not None:
            cut = min(cut, d["truncate_to"])
    end = rp.get("log_end_offset_after", cut)
    lead_end = leader_rec.get("log_end_offset_at_restart") or leader_rec.get("log_end_offset_before")
    out = {o: v for o, v in own.items() if o < cut}
    if rp["broker_id"] != leader_rec["broker_id"]:
        out.update({o: v for o, v in lead.items() if cut <= o < min(end, lead_end)})
    return out, cut


def _fork_offsets(rp: dict) -> set:
    out = set()
    for v in rp.get("verdicts") or []:
        if v.get("code") == "FORK":
            offs = v.get("offsets") or []
            pairs = offs if offs and isinstance(offs[0], list) else [offs] if len(offs) == 2 else []
            for a, b in pairs:
                out.update(range(a, b + 1))
    return out


def partition_checks(p: dict, outcome: dict, before: dict, after: dict) -> list[dict]:
    """Leader, epoch, and every replica's truncation, lost ids and forks for one replayed partition."""
    topic, part = p["topic"], p["partition"]
    key = f"{topic}-{part}"
    st = (outcome.get("states") or {}).get(topic, {})
    st = st.get(str(part), st.get(part)) if isinstance(st, dict) else None
    ep = (outcome.get("epochs") or {}).get(topic, {})
    ep = ep.get(str(part), ep.get(part)) if isinstance(ep, dict) else None
    zst = (outcome.get("zk_states") or {}).get(topic, {})  # ZooKeeper mode: the leader as its znode records it
    zst = zst.get(str(part), zst.get(part)) if isinstance(zst, dict) else None
    leader = (zst or {}).get("leader") if zst is not None else (st or {}).get("leader")
    out = [
        _check("leader", topic, part, None, p.get("leader"), leader),
        _check("leader_epoch", topic, part, None, p.get("leader_epoch"), ep),
    ]
    reps = {r["broker_id"]: r for r in p.get("replicas") or []}
    lead_rec = reps.get(p.get("leader")) or {}
    lead_before = before.get(p.get("leader"), {}).get(key, {}).get("records", {})
    union_before, union_after, union_pred = set(), set(), set()
    for b, rp in sorted(reps.items()):
        own = before.get(b, {}).get(key, {}).get("records", {})
        obs = after.get(b, {}).get(key, {}).get("records", {})
        pred, _ = predicted_after(rp, lead_rec, own, lead_before) if lead_rec else ({}, None)
        union_before |= _ids(own)
        union_after |= _ids(obs)
        union_pred |= _ids(pred)
        out.append(_check("truncation_point", topic, part, b, first_change(own, pred), first_change(own, obs)))
        out.append(_check("lost_ids_replica", topic, part, b, _ids(own) - _ids(pred), _ids(own) - _ids(obs)))
        # a fork as kforensics means it: after the restart the replica holds other records than Kafka's
        # leader at the same offsets (records replaced by truncation and refetch are not forks)
        kafka_leader = after.get((st or {}).get("leader"), {}).get(key, {}).get("records", {})
        obs_forks = {o for o, v in obs.items() if o in kafka_leader and kafka_leader[o] != v and _is_id(v)}
        out.append(_check("fork_offsets", topic, part, b, _fork_offsets(rp), obs_forks))
    out.append(_check("lost_ids_all", topic, part, None, union_before - union_pred, union_before - union_after))
    return out


def recovery_checks(scans: dict, outcome: dict, before: dict) -> list[dict]:
    """scan's predicted recovery cut (segment, byte) against the restarted broker's own recovery lines."""
    out = []
    rec = outcome.get("recovery") or {}
    for b, scan in scans.items():
        b = int(b)  # keys are strings once a result went through JSON
        lines = rec.get(str(b), rec.get(b, {})) or {}
        for sp in (scan or {}).get("partitions", []):
            if sp.get("topic") not in TOPICS:
                continue
            r = sp.get("recovery") or {}
            pred = None
            if r.get("truncate_segment") is not None and r.get("truncate_position") is not None:
                pred = [
                    Path(str(r["truncate_segment"])).name
                    if not isinstance(r["truncate_segment"], int)
                    else f"{r['truncate_segment']:020d}.log",
                    r["truncate_position"],
                ]
            obs = None
            sizes = before.get(b, {}).get(sp["dir_name"], {}).get("sizes", {})
            for seg, info in sorted((lines.get(sp["dir_name"]) or {}).items()):
                if "truncated_bytes" in info and seg in sizes:
                    obs = [seg, sizes[seg] - info["truncated_bytes"]]
                elif "invalid_at" in info:
                    obs = [seg, info["invalid_at"]]
                break
            out.append(_check("recovery_cut", sp["topic"], sp["partition"], b, pred, obs))
    return out


def group_checks(replay: dict, outcome: dict) -> list[dict]:
    """Whether a group's committed offset points past the partition's end after the restart: kforensics'
    consumer impact (committed offset against the new leader's log end) against the coordinator's answer
    and the leader's ListOffsets after the restart."""
    out = []
    impacts = {(ci["group"], ci["topic"], ci["partition"]): ci for ci in replay.get("consumer_impact") or []}
    for group, offs in (outcome.get("group_offsets") or {}).items():
        if not isinstance(offs, dict) or "error" in offs:
            continue
        for tp, off in sorted(offs.items()):
            topic, _, p = tp.rpartition("-")
            ends = (outcome.get("end_offsets") or {}).get(topic) or {}
            end = ends.get(p, ends.get(int(p))) if isinstance(ends, dict) else None
            if topic not in TOPICS or off is None or off < 0 or not isinstance(end, int):
                continue
            ci = impacts.get((group, topic, int(p)))
            pred = bool(ci) and ci["committed_offset"] > ci["log_end_offset"]
            out.append(
                _check(
                    "group_offset_past_end",
                    topic,
                    int(p),
                    None,
                    pred,
                    off > end,
                    group=group,
                    committed=off,
                    end=end,
                    predicted_end=ci["log_end_offset"] if ci else None,
                )
            )
    return out


def _restart_data(run_dir: Path, data: str) -> Path:
    """Where the restart's copy is: as recorded, or (a path recorded relative to where the lab ran, or a run
    copied elsewhere) the run dir's own ``restart``; never an empty reading taken as "every record lost"."""
    recorded = Path(data)
    if recorded.is_absolute() and recorded.is_dir():
        return recorded
    own = Path(run_dir) / "restart"
    if own.is_dir():
        return own
    if recorded.is_dir():
        return recorded
    raise FileNotFoundError(f"{run_dir}: the restart's copy is neither at {data} nor at {own}")


def compare(run_dir: Path, result: dict) -> dict:
    """All checks of one run, with the replay's and scans' JSON as kforensics wrote them."""
    preds = result["predictions"]
    replay = load(preds["replay"])
    scans = {b: load(rec) for b, rec in preds["scan"].items()}
    outcome = result["outcome"]
    before = contents(run_dir / "evidence")
    after = contents(_restart_data(run_dir, outcome["data"]))
    checks = recovery_checks(scans, outcome, before)
    if replay is None:
        return {"checks": checks, "error": "replay gave no JSON: " + str(preds["replay"].get("error"))[:500]}
    for p in replay.get("partitions", []):
        if p.get("topic") in TOPICS:
            checks += partition_checks(p, outcome, before, after)
    checks += group_checks(replay, outcome)
    checks += spark_checks(replay, preds.get("spark"))
    checks += transaction_checks(replay, scans, outcome)
    checks.append(_check("converged", None, None, None, _predicted_converges(replay), bool(outcome.get("converged"))))
    return {"checks": checks}


def transaction_checks(replay: dict, scans: dict, outcome: dict) -> list[dict]:
    """Producers with a transaction open per partition after the restart: kforensics' (replay's transactions
    impact, else the predicted leader's scan) against Kafka's DescribeProducers on the restarted leader (Kafka
    3.0 and later; none where it was not observed)."""
    from .transactions import predicted_open

    seen = (outcome.get("transactions") or {}).get("open")
    if not isinstance(seen, dict):
        return []
    pred = predicted_open(replay, {int(b): s for b, s in scans.items() if s},
                          (outcome.get("transactions") or {}).get("observed_at_ms"))
    out = []
    for key, obs in sorted(seen.items()):
        topic, _, part = key.rpartition("-")
        if topic in TOPICS:
            out.append(_check("open_transactions", topic, int(part), None, pred.get(key, []), obs))
    return out


def spark_checks(replay: dict, spark_rec: dict | None) -> list[dict]:
    """The spark front end against replay on the same evidence (not Kafka: the two must agree, and a
    difference is a kforensics bug): per replica of the lab's topics, leader, epoch, verdict codes and log
    end after the restart.  None when Spark was not run; one failed check when it ran and gave no table."""
    if not spark_rec:
        return []
    spark = load(spark_rec)
    if spark is None:
        return [
            _check("spark_vs_replay", None, None, None, "replay", "no spark verdicts", error=spark_rec.get("error"))
        ]
    mine = replay_verdicts(replay)
    out = []
    for key in sorted(set(mine) | set(spark)):
        tp, _, b = key.partition("/")
        topic, _, part = tp.rpartition("-")
        if topic in TOPICS:
            out.append(_check("spark_vs_replay", topic, int(part), int(b), mine.get(key), spark.get(key)))
    return out


def _predicted_converges(replay: dict) -> bool:
    for p in replay.get("partitions", []):
        for r in p.get("replicas") or []:
            if any(v.get("code") == "NOT_CONVERGING" for v in r.get("verdicts") or []):
                return False
            if any(d.get("converged") is False for d in r.get("decisions") or []):
                return False
    return True
