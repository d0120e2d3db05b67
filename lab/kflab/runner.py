"""One lab run: start a cluster, write, stage an incident, freeze the evidence, predict, restart, observe."""

from __future__ import annotations

import random
import stat
import time
import traceback
from pathlib import Path

from . import cluster as cl
from . import netns
from .incidents import INCIDENTS, NEEDS_NETNS, topics_for
from .observe import elections, observe
from .predict import predict
from .procs import wait_for
from .workload import Workload

LAB_TOPICS = ["orders", "events", "payments"]


def wait_brokers(c: cl.Cluster, w: Workload, timeout_s: float = 120) -> None:
    def ok():
        dead = [n for n in c.procs if not c.alive(n)]
        if dead:
            raise RuntimeError(f"nodes exited at start: {dead}")
        return len(w.admin.list_topics(timeout=3).brokers) == len(cl.BROKERS)

    wait_for("3 brokers registered", ok, timeout_s)


def base_workload(w: Workload, rng: random.Random) -> None:
    """Records of every kind before the incident: acks=all idempotent, acks=1, a committed and an aborted
    transaction, and a consumer group that commits its offsets."""
    w.produce("orders", "all", rng.randint(10, 40))
    w.produce("orders", "one", rng.randint(5, 20))
    w.produce("events", "one", rng.randint(10, 40))
    w.transaction("payments", rng.randint(2, 6), commit=True)
    w.transaction("payments", rng.randint(2, 6), commit=False)
    w.consume_and_commit("orders", "lab-group", rng.randint(5, 30), timeout_s=20)


def read_only(root: Path) -> None:
    """Take write permission away from every file and dir of the evidence (kforensics only reads it)."""
    for p in sorted(root.rglob("*"), reverse=True) + [root]:
        mode = p.stat().st_mode
        p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def freeze_evidence(c: cl.Cluster, run_dir: Path) -> Path:
    """kill -9 everything, copy every data dir (brokers, and the controller or ZooKeeper) to run_dir/evidence."""
    c.kill_all()
    ev = run_dir / "evidence"
    for node in c.nodes:
        cl.copy_tree(c.data_dir(node), ev / cl.node_name(node))
    read_only(ev)
    return ev


def stage(run_dir: Path, version: str, scenario: str, seed: int) -> dict:
    """Start, write, stage the incident, freeze.  Returns the story (what happened and when)."""
    rng = random.Random(f"{scenario}/{seed}")
    run_id = f"r{seed}{scenario[:3]}{int(time.time()) % 100000}"
    story = {"scenario": scenario, "seed": seed, "version": version, "run_id": run_id, "steps": []}
    t0 = time.monotonic()
    net = netns.make_plan(cl.nodes(version), rng) if scenario in NEEDS_NETNS else None
    if net:
        story["netns"] = {"subnet": net.subnet, "addresses": {n: net.addr(n) for n in net.nodes}}
    c = cl.new_cluster(run_dir, version, net=net)
    try:
        c.start_all()
        w = Workload(c.bootstrap(), run_id)
        wait_brokers(c, w)
        w.create_topics(topics_for(scenario))
        story["topics"] = {t.name: t.configs() | {"partitions": t.partitions} for t in topics_for(scenario)}
        base_workload(w, rng)
        story["before_incident"] = {t: w.state(t) for t in LAB_TOPICS}
        INCIDENTS[scenario](c, w, rng, story)
        try:  # a group that has read what the incident left and committed it: its offsets may now point past the end
            story["late_group_read"] = w.consume_and_commit(["orders", "events"], "late-group", 100000, 25, idle_s=3)
        except Exception as e:  # noqa: BLE001 - a group that could not commit is part of the story
            story["late_group_read"] = f"error: {e}"
        story["at_freeze"] = _safe_states(w)
        w.close(5)
        story["acks"] = w.log.to_json()
    finally:
        story["evidence"] = str(freeze_evidence(c, run_dir))
        story["acked_absent_from_evidence"] = _acked_absent(story, Path(story["evidence"]))
        story["elections"] = elections(c)
        story["stage_seconds"] = round(time.monotonic() - t0, 1)
    return story


def _acked_absent(story: dict, evidence: Path) -> dict:
    """topic -> ids acknowledged to a producer that no replica holds in the evidence (lost while the cluster
    ran, before the freeze: what the lab's before/after checks cannot see)."""
    from .compare import contents

    held: set = set()
    for parts in contents(evidence).values():
        for pc in parts.values():
            held |= set(pc.get("records", {}).values())
    out: dict = {}
    for rid, where in ((story.get("acks") or {}).get("acked") or {}).items():
        if rid not in held:
            out.setdefault(where[0], []).append(rid)
    return {t: {"count": len(v), "first": sorted(v)[:10]} for t, v in out.items()}


def _safe_states(w: Workload) -> dict:
    out = {}
    for t in LAB_TOPICS:
        try:
            out[t] = w.state(t)
        except Exception as e:  # noqa: BLE001 - a state that cannot be read is part of the story
            out[t] = {"error": str(e)}
    return out


def restart_order(seed: int) -> list[int]:
    """The seeded order in which the restart starts the brokers."""
    order = list(cl.BROKERS)
    random.Random(f"restart/{seed}").shuffle(order)
    return order


def run_one(out_root: Path, version: str, scenario: str, seed: int) -> dict:
    """The whole pipeline for one incident; every stage's failure is recorded, not raised."""
    from .compare import compare
    from .report import write_run

    run_dir = Path(out_root) / f"{scenario}-{version}-s{seed}"
    if run_dir.exists() and any(run_dir.iterdir()):  # a run of the same seed before: kept aside, never mixed in
        run_dir.rename(run_dir.with_name(f"{run_dir.name}.prev-{int(time.time())}"))
    run_dir.mkdir(parents=True, exist_ok=True)
    result = {"scenario": scenario, "version": version, "seed": seed, "run_dir": str(run_dir)}
    try:
        result["story"] = stage(run_dir, version, scenario, seed)
        order = restart_order(seed)  # the plan, known before the prediction: kforensics is told it
        result["predictions"] = predict(
            run_dir / "evidence", run_dir / "predictions", kafka_version=version, restart_order=order
        )
        result["outcome"] = observe(run_dir, version, LAB_TOPICS, order=order)
        result["comparison"] = compare(run_dir, result)
        result["status"] = "compared"
    except netns.Unavailable as e:  # an incident this machine cannot stage: skipped, with the reason
        result["status"] = "skipped"
        result["error"] = f"network namespaces unavailable: {e}"
    except Exception as e:  # noqa: BLE001 - any stage failing is a recorded outcome of the run
        result["status"] = "harness-error"
        result["error"] = f"{type(e).__name__}: {e}"
        result["traceback"] = traceback.format_exc()[-4000:]
    except KeyboardInterrupt:
        result["status"] = "interrupted"
        raise
    finally:
        from .procs import kill_all

        kill_all()
        write_run(run_dir, result)
    return result
