"""Kafka decides: the cluster restarted on a copy of the evidence, until every partition has a leader and
a full ISR (or a deadline: non-convergence is an outcome), then stopped cleanly."""

from __future__ import annotations

import json
import re
import stat
import time
from pathlib import Path

from .cluster import BROKERS, CONTROLLER, Cluster, copy_tree, node_name, nodes
from .procs import Timeout, wait_for
from .workload import Workload

INTERNAL = ["__consumer_offsets", "__transaction_state"]
GROUPS = ["lab-group", "late-group"]
RECOVERY_LINE = re.compile(r"Truncated (\d+) invalid bytes at the end of segment (\S+) during recovery")
INVALID_LINE = re.compile(r"Found invalid messages in log segment (\S+) at byte offset (\d+)")


def _writable(root: Path) -> None:
    for p in [root] + list(root.rglob("*")):
        p.chmod(p.stat().st_mode | stat.S_IWUSR)


def _converged(w: Workload, topics: list[str]) -> dict | None:
    states = {t: w.state(t) for t in topics}
    for parts in states.values():
        for s in parts.values():
            if s["leader"] < 0 or sorted(s["isr"]) != sorted(s["replicas"]):
                return None
    return states


def _unfenced(c: Cluster, broker: int) -> bool:
    """The controller's log shows this broker unfenced since the restart (its registration change, fenced=-1)."""
    pat = re.compile(rf"BrokerRegistrationChangeRecord\(brokerId={broker}, brokerEpoch=\d+, fenced=-1")
    return bool(pat.search(c.log_text(CONTROLLER)))


def start_in_order(c: Cluster, order: list[int], per_broker_s: float = 60) -> list[dict]:
    """Controller first, then each broker once the one before it is unfenced: the unfence order, and so
    the elections it drives at a restart, is the given order and not a race.  ZooKeeper mode: ZooKeeper
    first, then each broker once the one before it has started (registered; the first one up becomes the
    controller)."""
    c.start(c.meta)
    if c.zk:
        c.wait_zookeeper()
    ready = c.registered if c.zk else (lambda b: _unfenced(c, b))
    done = []
    for b in order:
        c.start(b)
        t = time.monotonic()
        try:
            wait_for(f"broker {b} unfenced", lambda b=b: ready(b) or (not c.alive(b) and _raise(b)), per_broker_s)
            done.append({"broker": b, "unfenced_after_s": round(time.monotonic() - t, 1)})
        except Timeout:
            done.append({"broker": b, "unfenced_after_s": None})
    return done


def _raise(b):
    raise RuntimeError(f"broker {b} exited during the restart")


def observe(
    run_dir: Path, version: str, topics: list[str], order: list[int] | None = None, deadline_s: float = 120
) -> dict:
    """Restart every node on a copy of run_dir/evidence (brokers one by one in the given order, or all at
    once when order is None); return leaders, ISRs, epochs, recovery lines and the controller's elections."""
    data = run_dir / "restart"
    for node in nodes(version):
        copy_tree(run_dir / "evidence" / node_name(node), data / node_name(node))
    _writable(data)
    c = Cluster(run_dir, version, data, tag="restart")
    c.configure()
    out = {"data": str(data), "converged": False, "order": order}
    t0 = time.monotonic()
    try:
        if order:
            out["restart"] = start_in_order(c, order)
        else:
            c.start_all()
        w = Workload(c.bootstrap(), "observe")
        try:
            states = wait_for(
                "leaders and full ISRs after restart", lambda: _converged(w, topics + INTERNAL), deadline_s, 1.0
            )
            out["converged"] = True
        except Timeout as e:
            out["timeout"] = str(e)
            states = {t: _try(lambda t=t: w.state(t)) for t in topics + INTERNAL}
        out["seconds_to_converge"] = round(time.monotonic() - t0, 1)
        out["states"] = states
        out["epochs"] = {
            t: _try(lambda t=t: w.leader_epochs(t, sorted(states[t])))
            for t in topics
            if isinstance(states.get(t), dict) and "error" not in states[t]
        }
        if c.zk:  # the partition state znodes are ZooKeeper mode's record of leader and epoch
            out["zk_states"] = zk_states(c, states)
            out["epochs_listoffsets"] = out["epochs"]
            out["epochs"] = {
                t: {p: s.get("leader_epoch") for p, s in parts.items()} for t, parts in out["zk_states"].items()
            }
        out["end_offsets"] = {
            t: _try(lambda t=t: w.end_offsets(t, sorted(states[t])))
            for t in topics
            if isinstance(states.get(t), dict) and "error" not in states[t]
        }
        out["group_offsets"] = {g: _try(lambda g=g: w.group_offsets(g)) for g in GROUPS}
        out["alive_before_stop"] = {n: c.alive(n) for n in c.nodes}
    finally:
        out["clean_stop"] = c.stop_clean()
    out["recovery"] = recovery_lines(c)
    out["elections"] = elections(c)
    return out


def zk_states(c: Cluster, states: dict) -> dict:
    """topic -> partition -> the state znode (/brokers/topics/<t>/partitions/<p>/state: leader,
    leader_epoch, isr, controller_epoch), read from ZooKeeper; {"error": ...} where it is absent."""
    keys = [(t, p) for t, parts in states.items() if isinstance(parts, dict) and "error" not in parts for p in parts]
    paths = [f"/brokers/topics/{t}/partitions/{p}/state" for t, p in keys]
    got = c.zk_get(paths) if paths else {}
    out: dict = {}
    for (t, p), path in zip(keys, paths):
        raw = got.get(path)
        out.setdefault(t, {})[p] = json.loads(raw) if raw else {"error": f"{path}: not read"}
    return out


def _try(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - what could not be read is recorded
        return {"error": str(e)}


def recovery_lines(c: Cluster) -> dict:
    """broker -> {partition dir: {segment: {"truncated_bytes": n, "invalid_at": byte}}} from the restart's logs."""
    out = {}
    for b in BROKERS:
        per = {}
        for m in RECOVERY_LINE.finditer(c.log_text(b)):
            seg = Path(m.group(2))
            per.setdefault(seg.parent.name, {}).setdefault(seg.name, {})["truncated_bytes"] = int(m.group(1))
        for m in INVALID_LINE.finditer(c.log_text(b)):
            seg = Path(m.group(1))
            per.setdefault(seg.parent.name, {}).setdefault(seg.name, {})["invalid_at"] = int(m.group(2))
        out[b] = per
    return out


ELECTION_LINE = re.compile(
    r"\[(\S+ \S+)\] INFO \[QuorumController id=\d+\] (UNCLEAN )?partition change for (\S+) "
    r"with topic ID \S+: (.*) \(org"
)


def elections(c: Cluster) -> list[dict]:
    """The controller's partition changes during the restart, in order (why a leader or epoch moved).
    KRaft only: in ZooKeeper mode the changes are in the state znodes (zk_states)."""
    if c.zk:
        return []
    return [
        {"time": m.group(1), "unclean": bool(m.group(2)), "partition": m.group(3), "change": m.group(4)}
        for m in ELECTION_LINE.finditer(c.log_text(CONTROLLER))
    ]
