"""The election model against what real Kafka elected when the lab restarted its brokers (fixtures/lab).

Each fixture set holds the evidence frozen after an incident (the brokers' and the controller's dirs) and what
Kafka then did when the lab restarted it: the controller first, then the brokers one at a time in a recorded
order, each after the previous one was unfenced (a cold restart).  The model reads only the evidence, and is told
the order; the expected leader and leader epoch are Kafka's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kforensics.epoch.versions import parse_kafka_version
from kforensics.kraft.controller_choice import RestartEvidence, controller_choice, marker_epochs
from kforensics.kraft.timeline import build_timeline, read_cluster_state
from kforensics.scan.broker import resolve_log_dirs

LAB = Path(__file__).resolve().parents[2] / "fixtures" / "lab"
SETS = sorted(p for p in LAB.glob("*") if (p / "outcome.json").exists() and (p / "before").is_dir())


def _markers(before: Path) -> dict[int, frozenset[int]]:
    """Per broker, the broker epochs its ``.kafka_cleanshutdown`` markers name."""
    return {int(tgz.name.split("-")[1].split(".")[0]): marker_epochs(resolve_log_dirs([str(tgz)]))
            for tgz in sorted(before.glob("broker-*.tgz"))}


def _cold(outcome: dict) -> bool:
    """The lab's restart was cold: it waited for the controller to fence every broker it held (its first step says
    so; a 3.x controller fences them only once the first broker registers) and started each broker once the one
    before was unfenced.  A set recorded before (a broker registering while the controller was still fencing the
    others: a race the order does not describe) cannot judge the model."""
    first = (outcome["outcome"].get("restart") or [{}])[0]
    return "sessions" in first


def _cases():
    for s in SETS:
        outcome = json.loads((s / "outcome.json").read_text())
        if not outcome["outcome"].get("converged") or not outcome["outcome"].get("order"):
            continue
        if not (s / "before" / "controller-100.tgz").exists():
            continue  # ZooKeeper mode: no controller's record to elect from
        yield pytest.param(s, outcome, id=s.name)


def test_every_kraft_set_was_restarted_cold():
    cases = list(_cases())
    assert len(cases) >= 10
    assert all(_cold(c.values[1]) for c in cases), [c.id for c in cases if not _cold(c.values[1])]


@pytest.mark.parametrize("fixture, observed", list(_cases()))
def test_the_leader_and_epoch_kafka_chose_at_the_restart(fixture, observed):
    """replay --restart-order's election (the lab's order) names the leader and epoch Kafka chose."""
    controller = [str(p) for p in sorted((fixture / "before").glob("controller-*.tgz"))]
    timeline = build_timeline(controller)
    cluster = read_cluster_state(controller)
    seen = observed["outcome"]
    markers = _markers(fixture / "before")
    evidence = RestartEvidence(cluster, tuple(sorted(markers)), None, markers,
                               parse_kafka_version(observed["version"]).release, (), tuple(seen["order"]))
    checked = 0
    for topic, parts in seen["epochs"].items():
        for p, kafka_epoch in parts.items():
            entries = timeline.entries(topic, int(p))
            assert entries, f"{topic}-{p} is not in the controller's record"
            c = controller_choice(entries[-1], topic, evidence)
            kafka_leader = seen["states"][topic][p]["leader"]
            assert (c.leader, c.leader_epoch) == (kafka_leader, kafka_epoch), (
                f"{topic}-{p}: model {c.leader} in epoch {c.leader_epoch} ({c.how}; steps {c.steps}), "
                f"Kafka {kafka_leader} in epoch {kafka_epoch}")
            assert not c.alternatives, "the order is given: no other leader is possible"
            checked += 1
    assert checked
