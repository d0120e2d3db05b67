"""Per cluster, what the controller's choice of leader at the restart reads: as ``kforensics replay`` reads it.

The cluster state of the cluster's metadata log (the explicit inputs first,
then the snapshots' log dirs that hold one, as the timeline is built), the
brokers whose snapshots are given, those that come back (``--alive``, else
all of them), those that never stopped (``--running``) and the broker epochs their clean-shutdown markers name
(:class:`kforensics.kraft.controller_choice.RestartEvidence`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..epoch.versions import KafkaVersion
from ..kraft.controller_choice import RestartEvidence, check_restart_order
from ..kraft.timeline import Timeline
from .plan import Plan


def restart_evidence(plan_: Plan, timelines: Mapping[str | None, Timeline], kafka_version: KafkaVersion,
                     alive: tuple[int, ...] | None, running: tuple[int, ...] = (),
                     order: tuple[int, ...] | None = None) -> dict[str | None, RestartEvidence]:
    """One :class:`RestartEvidence` per cluster whose timeline was built: its cluster state is the timeline's."""
    brokers = _brokers(plan_)
    out = {}
    for cluster, tl in timelines.items():
        ids = brokers.get(cluster, {})
        check_restart_order(order, ids, alive, running)
        out[cluster] = RestartEvidence(tl.cluster, tuple(sorted(ids)), alive, dict(ids), kafka_version.release,
                                       running, order)
    return out


def _brokers(plan_: Plan) -> dict[str | None, dict[int, frozenset[int]]]:
    """Per cluster, its brokers and the broker epochs their clean-shutdown markers name."""
    brokers: dict[str | None, dict[int, frozenset[int]]] = {}
    for sid, ctx in plan_.contexts.items():
        bid = ctx.get("broker_id")
        if isinstance(bid, int):
            mine = brokers.setdefault(ctx.get("cluster"), {})  # type: ignore[arg-type]
            mine[bid] = mine.get(bid, frozenset()) | plan_.shutdown_epochs.get(sid, frozenset())
    return brokers


def zookeeper_restart_evidence(plan_: Plan, zookeeper: list[str], kafka_version: KafkaVersion,
                               alive: tuple[int, ...] | None, running: tuple[int, ...] = (),
                               order: tuple[int, ...] | None = None) -> tuple[dict[str | None, RestartEvidence],
                                                                              list[Any]]:
    """A ZooKeeper-mode cluster: the restart evidence with ZooKeeper's state (``replay``'s
    :func:`~kforensics.zookeeper.election.with_zookeeper`) for every cluster of the snapshots (one ZooKeeper is
    one cluster), and the findings of reading it."""
    from ..zookeeper.election import with_zookeeper
    from ..zookeeper.inputs import read_zookeeper_inputs

    zk = read_zookeeper_inputs(list(zookeeper))
    out: dict[str | None, RestartEvidence] = {}
    for cluster, ids in _brokers(plan_).items():
        check_restart_order(order, ids, alive, running)
        out[cluster] = with_zookeeper(RestartEvidence(zk.configs, tuple(sorted(ids)), alive, dict(ids),
                                                      kafka_version.release, running, order), zk)
    return out, list(zk.findings)
