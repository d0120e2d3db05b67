"""What a ZooKeeper-mode cluster's controller reads from ZooKeeper, decoded from the znodes Kafka writes.

The znodes and their JSON (``core/src/main/scala/kafka/zk/ZkData.scala`` at tags 2.8.2 and 3.9.0-rc3):

* ``/brokers/topics/<topic>`` (``TopicZNode``): ``{"version": 1..3, "partitions": {"<p>": [replicas]},
  "adding_replicas": ..., "removing_replicas": ..., "topic_id": ...}`` — the assignment, in replica order;
* ``/brokers/topics/<topic>/partitions/<p>/state`` (``TopicPartitionStateZNode``): ``{"version": 1,
  "leader", "leader_epoch", "isr", "controller_epoch"}`` (and ``leader_recovery_state`` from 3.2);
* ``/config/topics/<topic>`` and ``/config/brokers/<default>`` (``ConfigEntityZNode``): ``{"version": 1,
  "config": {...}}`` — a topic's overrides and the cluster-wide dynamic broker defaults;
* ``/brokers/ids/<id>`` (``BrokerIdZNode``, ephemeral: owned by the broker's ZooKeeper session);
* ``/controller`` (``ControllerZNode``, ephemeral): ``{"version": 1, "brokerid", "timestamp"}``;
  ``/controller_epoch`` (``ControllerEpochZNode``): the epoch as text.

A znode whose JSON does not decode is a finding (``ZOOKEEPER_ZNODE_UNREADABLE``) and is left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..findings import Finding, finding
from ..kraft.cluster_state import BROKER, TOPIC, ClusterState
from ..log.zookeeper_data_dir import ZooKeeperData, read_zookeeper_dir

DEFAULT_ENTITY = "<default>"  # ConfigEntityName.Default: the cluster-wide dynamic broker config


@dataclass(frozen=True)
class PartitionState:
    """``LeaderIsrAndControllerEpoch`` as the state znode records it."""

    leader: int  # -1: no leader (LeaderAndIsr.NoLeader)
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zxid: int = 0  # the transaction that last wrote it (mzxid)
    recovering: bool = False  # leader_recovery_state 1 (3.2 on)


@dataclass
class ZooKeeperCluster:
    """The controller's inputs from ZooKeeper: assignments, partition states, configs, registrations."""

    data: ZooKeeperData
    assignments: dict[str, dict[int, tuple[int, ...]]] = field(default_factory=dict)
    states: dict[tuple[str, int], PartitionState] = field(default_factory=dict)
    configs: ClusterState = field(default_factory=ClusterState)  # topic and cluster-default configs
    registered: dict[int, int] = field(default_factory=dict)  # broker id -> the session owning /brokers/ids/<id>
    controller: int | None = None  # /controller's brokerid
    controller_session: int | None = None
    controller_epoch: int | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def source(self) -> str:
        return self.data.source

    @property
    def incomplete(self) -> bool:
        return self.data.incomplete

    def replicas(self, topic: str, partition: int) -> tuple[int, ...] | None:
        return self.assignments.get(topic, {}).get(partition)

    def all_replicas(self) -> set[int]:
        """Every broker id some partition is assigned to."""
        return {b for parts in self.assignments.values() for rs in parts.values() for b in rs}


def read_zookeeper_cluster(path: Any) -> ZooKeeperCluster:
    """Read a ZooKeeper data dir (:func:`~kforensics.log.zookeeper_data_dir.read_zookeeper_dir`) and decode
    Kafka's znodes."""
    return zookeeper_cluster(read_zookeeper_dir(path))


def zookeeper_cluster(data: ZooKeeperData) -> ZooKeeperCluster:
    """Kafka's znodes of a data dir read, decoded."""
    out = ZooKeeperCluster(data, findings=list(data.findings))
    tree = data.tree
    for topic in tree.children("/brokers/topics"):
        assignment = _json(out, f"/brokers/topics/{topic}")
        parts = assignment.get("partitions") if isinstance(assignment, dict) else None
        if isinstance(parts, dict):
            out.assignments[topic] = {int(p): tuple(rs) for p, rs in parts.items() if _ids(rs) and p.isdigit()}
        for p in tree.children(f"/brokers/topics/{topic}/partitions"):
            path = f"/brokers/topics/{topic}/partitions/{p}/state"
            state = _state(out, path, (tree.nodes[path].mzxid if path in tree.nodes else 0))
            if state is not None and p.isdigit():
                out.states[(topic, int(p))] = state
    for kind, entity_path in ((TOPIC, "/config/topics"), (BROKER, "/config/brokers")):
        for name in tree.children(entity_path):
            conf = _json(out, f"{entity_path}/{name}")
            values = conf.get("config") if isinstance(conf, dict) else None
            if isinstance(values, dict) and (kind == TOPIC or name == DEFAULT_ENTITY):
                out.configs.configs[(kind, name if kind == TOPIC else "")] = {k: str(v) for k, v in values.items()}
    for b in tree.children("/brokers/ids"):
        node = tree.nodes.get(f"/brokers/ids/{b}")
        if b.isdigit() and node is not None:
            out.registered[int(b)] = node.ephemeral_owner
    controller = _json(out, "/controller")
    if isinstance(controller, dict) and isinstance(controller.get("brokerid"), int):
        out.controller = controller["brokerid"]
        out.controller_session = tree.nodes["/controller"].ephemeral_owner
    epoch = tree.data("/controller_epoch")
    if epoch is not None and epoch.strip().isdigit():
        out.controller_epoch = int(epoch)
    return out


def _ids(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(b, int) and not isinstance(b, bool) for b in value)


def _json(out: ZooKeeperCluster, path: str) -> Any:
    """The znode's JSON, None when it is absent or empty; a finding when it does not decode."""
    data = out.data.tree.data(path)
    if not data:
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        out.findings.append(finding("ZOOKEEPER_ZNODE_UNREADABLE", f"{path}: not JSON ({e})", file=out.source,
                                    znode=path))
        return None


def _state(out: ZooKeeperCluster, path: str, zxid: int) -> PartitionState | None:
    """``TopicPartitionStateZNode.decode``: leader, leader_epoch, isr and controller_epoch, each required."""
    js = _json(out, path)
    if js is None:
        return None
    ok = (isinstance(js, dict) and all(isinstance(js.get(k), int) for k in ("leader", "leader_epoch",
                                                                              "controller_epoch"))
          and _ids(js.get("isr")))
    if not ok:
        out.findings.append(finding("ZOOKEEPER_ZNODE_UNREADABLE", f"{path}: not a partition state Kafka writes "
                                    "(leader, leader_epoch, isr, controller_epoch)", file=out.source, znode=path))
        return None
    return PartitionState(js["leader"], js["leader_epoch"], tuple(js["isr"]), js["controller_epoch"], zxid,
                          js.get("leader_recovery_state") == 1)
