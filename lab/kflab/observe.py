"""Kafka decides: the cluster restarted on a copy of the evidence, until every partition has a leader and
a full ISR (or a deadline: non-convergence is an outcome), then stopped cleanly."""

from __future__ import annotations

import json
import re
import stat
import time
from pathlib import Path

from .cluster import BROKERS, CONTROLLER, CONTROLLER_CONF, Cluster, copy_tree, node_name, nodes
from .jars import major
from .procs import Timeout, wait_for
from .transactions import TXN_SWEEP_S, observe_transactions
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


#: the broker's own line once the controller has unfenced it (BrokerLifecycleManager, core/src/main/scala/kafka/
#: server/BrokerLifecycleManager.scala, apache/kafka 3.3.1 and 3.7.0; the same words in 4.4.0's logs).  The
#: controller's log is no witness of an unfence at a restart: at its start it replays, and logs, every broker
#: registration change of the metadata log, the unfences from before the evidence was frozen among them.
UNFENCED_LINE = "The broker has been unfenced"
#: the controller's own registration of a broker (ClusterControlManager.registerBroker, metadata/src/main/java/org/
#: apache/kafka/controller/ClusterControlManager.java, 4.3.1): logged when it acts, never when it replays
REGISTERED_LINE = re.compile(r"(?:Registering a new incarnation of|No previous registration found for) broker (\d+)")
#: the controller fencing a broker whose session ran out (ReplicationControlManager.maybeFenceOneStaleBroker)
SESSION_FENCED_LINE = re.compile(r"Fencing broker (\d+) (?:at epoch \d+ )?because its session has timed out")
#: the controller active, its replay of the metadata log done (QuorumController, 3.9.1 and 4.3.1)
ACTIVE_LINE = "Becoming the active controller"
_REPLAYED_BROKER = re.compile(
    r"Replayed (?:initial )?(RegisterBrokerRecord|BrokerRegistrationChangeRecord|"
    r"FenceBrokerRecord|UnfenceBrokerRecord)\b.*?(?:broker|brokerId=|id=)\s*(\d+)"
)


def unfenced_since(log_text: str, since: int = 0) -> bool:
    """Whether a broker's log, from character ``since`` on (its start), says the controller unfenced it."""
    return UNFENCED_LINE in log_text[since:]


def _unfenced(c: Cluster, broker: int, since: int = 0) -> bool:
    """This broker unfenced since it was started (its log from ``since`` on)."""
    return unfenced_since(c.log_text(broker), since)


def registration_order(controller_log: str) -> list[int]:
    """Brokers in the order the controller registered them (its own actions, not its replay of the log)."""
    return [int(m.group(1)) for m in REGISTERED_LINE.finditer(controller_log)]


def active_sessions(controller_log: str) -> set[int]:
    """Brokers the controller's log shows unfenced now: the registrations it replayed (a new one is fenced; a
    change record's fenced=1/-1) less those whose session it let expire.  Read before any broker is back, these
    are the brokers it holds active although they are down: on activation it gives every unfenced registration
    a fresh session (ClusterControlManager.activate, 4.3.1), and until that expires a dead broker is eligible."""
    active: set[int] = set()
    for line in controller_log.splitlines():
        m = _REPLAYED_BROKER.search(line)
        if m:
            kind, b = m.group(1), int(m.group(2))
            if kind == "FenceBrokerRecord" or re.search(r"\bfenced=(?:1|true),", line):
                active.discard(b)
            elif kind == "UnfenceBrokerRecord" or re.search(r"\bfenced=(?:-1|false),", line):
                active.add(b)
            continue
        f = SESSION_FENCED_LINE.search(line)
        if f:
            active.discard(int(f.group(1)))
    return active


def wait_sessions_expired(c: Cluster, timeout_s: float) -> dict:
    """Until the restarted controller has fenced every broker it held active (their sessions expire: the cold
    restart the replay models); returns what was waited for."""
    t = time.monotonic()
    wait_for(
        "controller active",
        lambda: ACTIVE_LINE in c.log_text(CONTROLLER) or not c.alive(CONTROLLER) and _raise(CONTROLLER),
        timeout_s,
    )
    held = sorted(active_sessions(c.log_text(CONTROLLER)))
    if held and major(c.version) == 3:
        # 3.x schedules the fencing of stale sessions only when a broker registers or heartbeats
        # (QuorumController.registerBroker/processBrokerHeartbeat -> rescheduleMaybeFenceStaleBrokers, 3.9.0):
        # with no broker up it never fences, and waiting changes nothing.  Once the sessions given at activation
        # are older than broker.session.timeout.ms, the first broker's registration fences them all.
        time.sleep(SESSION_S + 1.0)  # from the activation (seen within one poll): every such session expired
        return {"held_active": held, "expired": "at the first registration (3.x)", "after_s": _since(t)}
    try:
        wait_for(f"sessions of {held} expired", lambda: not active_sessions(c.log_text(CONTROLLER)), timeout_s)
        expired = True
    except Timeout:
        expired = False
    return {"held_active": held, "expired": expired, "after_s": _since(t)}


def _since(t: float) -> float:
    return round(time.monotonic() - t, 1)


SESSION_S = CONTROLLER_CONF["broker.session.timeout.ms"] / 1000


def start_in_order(
    c: Cluster, order: list[int], per_broker_s: float = 60, cold: bool = True, serial: int | None = None
) -> list[dict]:
    """Controller first, then each broker once the one before it is unfenced: the unfence order, and so
    the elections it drives at a restart, is the given order and not a race.  ``cold``: no broker starts before
    the controller has fenced those it still holds active (their sessions expired), so which broker is back
    first does not depend on how fast a JVM starts.  ``serial``: only the first ``serial`` brokers one by one,
    the rest at once after them (their order left to the race).  ZooKeeper mode: ZooKeeper
    first, then each broker once the one before it has started (registered; the first one up becomes the
    controller)."""
    c.start(c.meta)
    done: list[dict] = []
    if c.zk:
        c.wait_zookeeper()
        done.append({"zookeeper": wait_zk_sessions_expired(c, per_broker_s)})
    elif cold:
        done.append({"sessions": wait_sessions_expired(c, per_broker_s)})
    n = len(order) if serial is None else serial
    steps = [[b] for b in order[:n]] + ([list(order[n:])] if order[n:] else [])
    for step in steps:
        ready = {}
        for b in step:
            since = len(c.log_text(b))  # a broker's log is appended to: only its lines from this start count
            ready[b] = (lambda b=b: c.registered(b)) if c.zk else (lambda b=b, s=since: _unfenced(c, b, s))
            c.start(b)
        t = time.monotonic()
        for b in step:
            try:
                wait_for(
                    f"broker {b} unfenced", lambda b=b, r=ready[b]: r() or (not c.alive(b) and _raise(b)), per_broker_s
                )
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
                "leaders and full ISRs after restart", lambda: _converged(w, topics + INTERNAL), deadline_s, 0.5
            )
            out["converged"] = True
        except Timeout as e:
            out["timeout"] = str(e)
            states = {t: _try(lambda t=t: w.state(t)) for t in topics + INTERNAL}
        t_conv = time.monotonic()
        out["seconds_to_converge"] = round(t_conv - t0, 1)
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
        # transactions left open, as Kafka's TransactionsCommand reports them (the topics the lab's transactions
        # write: payments, and orders for an open-transaction incident)
        _after_a_sweep(t_conv)
        parts = [(t, p) for t in ("payments", "orders") for p in sorted(states.get(t) or {})]
        out["transactions"] = _try(lambda: observe_transactions(c, parts))
        if isinstance(out["transactions"], dict):
            out["transactions"]["observed_at_ms"] = int(time.time() * 1000)
        out["alive_before_stop"] = {n: c.alive(n) for n in c.nodes}
    finally:
        out["clean_stop"] = c.stop_clean()
    out["recovery"] = recovery_lines(c)
    out["elections"] = elections(c)
    return out


def _after_a_sweep(since: float) -> None:
    """Sleep until one sweep of the coordinator's timed-out transactions (and a second) has passed since ``since``
    (a monotonic time): the observation follows a sweep."""
    left = TXN_SWEEP_S + 1 - (time.monotonic() - since)
    if left > 0:
        time.sleep(left)


LAB_PARTITIONS = [("orders", 0), ("orders", 1), ("events", 0), ("payments", 0)]


def wait_zk_sessions_expired(c: Cluster, timeout_s: float) -> dict:
    """ZooKeeper mode's cold restart: ZooKeeper restored from the evidence keeps the frozen brokers' sessions,
    and with them /controller and /brokers/ids/<id>, until they time out; a broker started before that cannot
    register and no controller is elected, so which broker is back first would be a race.  Waits until those
    znodes are gone; returns what was held, whether it expired, and the partition state znodes as frozen."""
    t = time.monotonic()
    paths = ["/controller"] + [f"/brokers/ids/{b}" for b in BROKERS]
    state_paths = [f"/brokers/topics/{tp}/partitions/{p}/state" for tp, p in LAB_PARTITIONS]
    first = c.zk_get(paths + state_paths)
    held = [p for p in paths if first.get(p)]
    frozen = {f"{tp}-{p}": json.loads(first[sp]) for (tp, p), sp in zip(LAB_PARTITIONS, state_paths) if first.get(sp)}
    try:
        wait_for(f"{held} gone from ZooKeeper", lambda: not any(c.zk_get(paths).values()), timeout_s, 1.0)
        expired = True
    except Timeout:
        expired = False
    return {"held": held, "expired": expired, "after_s": round(time.monotonic() - t, 1), "frozen_states": frozen}


def zk_states(c: Cluster, states: dict) -> dict:
    """topic -> partition -> the state znode (/brokers/topics/<t>/partitions/<p>/state: leader,
    leader_epoch, isr, controller_epoch), read from ZooKeeper; {"error": ...} where it is absent."""
    keys = [(t, p) for t, parts in states.items() if isinstance(parts, dict) and "error" not in parts for p in parts]
    paths = [f"/brokers/topics/{t}/partitions/{p}/state" for t, p in keys]
    got = c.zk_get(paths) if paths else {}
    out: dict = {}
    for (t, p), path in zip(keys, paths):
        raw = got.get(path)
        ok = raw and raw.startswith("{")
        out.setdefault(t, {})[p] = json.loads(raw) if ok else {"error": f"{path}: not read ({raw})"}
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
