"""What the controller's metadata log says of brokers, features and configs: the inputs of an election.

Folded from the records as the timeline replays them (log and snapshots):

* brokers: ``RegisterBrokerRecord`` (a registration starts fenced unless
  its ``fenced`` field says otherwise; it carries the broker epoch the
  controller compares with the broker's ``.kafka_cleanshutdown`` at the next
  registration), ``BrokerRegistrationChangeRecord`` (``fenced`` 1 fence, −1
  unfence; ``inControlledShutdown`` 1), ``FenceBrokerRecord``,
  ``UnfenceBrokerRecord``, ``UnregisterBrokerRecord``
  (``BrokerRegistrationFencingChange``, ``ClusterControlManager.replay`` at
  4.1.0);
* features: ``FeatureLevelRecord`` (``metadata.version`` and
  ``eligible.leader.replicas.version``; ELR is on from level 1,
  ``FeatureControlManager.isElrFeatureEnabled`` at 4.0.0+);
* configs: ``ConfigRecord`` for topics (resource type 2) and brokers (4; the
  name ``""`` is the cluster default); a null value deletes.  A topic's
  effective value is its own, else the cluster default, else the broker's
  static configuration — which the metadata log does not hold, so Kafka's
  default is used and said to be a default
  (``ConfigurationControlManager.getTopicConfig`` at 4.1.0).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TOPIC, BROKER = 2, 4  # ConfigResource.Type ids
ELR_FEATURE = "eligible.leader.replicas.version"
METADATA_VERSION = "metadata.version"
#: Kafka's defaults for the topic configs an election reads (TopicConfig / ServerLogConfigs)
DEFAULTS = {"unclean.leader.election.enable": "false", "min.insync.replicas": "1"}


@dataclass
class BrokerRegistration:
    """One broker as the controller last recorded it."""

    broker_id: int
    epoch: int
    fenced: bool = True
    in_controlled_shutdown: bool = False
    offset: int | None = None  # metadata offset of the last record about it

    @property
    def active(self) -> bool:
        """``ClusterControlManager.isActive``: registered, unfenced, not in controlled shutdown."""
        return not self.fenced and not self.in_controlled_shutdown


@dataclass
class ClusterState:
    """Brokers, finalized features and configs, as of the last record replayed."""

    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)

    def apply(self, kind: str, data: dict[str, Any], offset: int | None = None) -> None:
        """Fold one decoded metadata record (records of other kinds are ignored)."""
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, data, offset)

    # ---------------------------------------------------------------- queries
    def active_brokers(self) -> set[int]:
        """Brokers the controller takes as alive."""
        return {b for b, r in self.brokers.items() if r.active}

    @property
    def metadata_version(self) -> int | None:
        return self.features.get(METADATA_VERSION)

    @property
    def elr_enabled(self) -> bool | None:
        """Whether eligible leader replicas are on; None when no feature record says (older clusters)."""
        level = self.features.get(ELR_FEATURE)
        return None if level is None else level >= 1

    def topic_config(self, topic: str, name: str) -> tuple[str, str]:
        """(value, where it came from): the topic's own, the cluster default, or Kafka's default."""
        own = self.configs.get((TOPIC, topic), {})
        if name in own:
            return own[name], f"topic config of {topic}"
        cluster = self.configs.get((BROKER, ""), {})
        if name in cluster:
            return cluster[name], "cluster default config"
        return DEFAULTS[name], "Kafka's default (a broker's static configuration is not in the metadata log)"


def _register(s: ClusterState, d: dict[str, Any], offset: int | None) -> None:
    s.brokers[d["brokerId"]] = BrokerRegistration(d["brokerId"], d["brokerEpoch"], bool(d.get("fenced", True)),
                                                  bool(d.get("inControlledShutdown", False)), offset)


def _unregister(s: ClusterState, d: dict[str, Any], offset: int | None) -> None:
    s.brokers.pop(d["brokerId"], None)


def _change(s: ClusterState, d: dict[str, Any], offset: int | None) -> None:
    r = s.brokers.get(d["brokerId"])
    if r is None:
        return
    fenced = d.get("fenced", 0) or 0
    if fenced == 1:
        r.fenced = True
    elif fenced == -1:
        r.fenced = False
    if (d.get("inControlledShutdown", 0) or 0) == 1:
        r.in_controlled_shutdown = True
    r.offset = offset


def _fence(fenced: bool) -> Callable[[ClusterState, dict[str, Any], int | None], None]:
    def apply(s: ClusterState, d: dict[str, Any], offset: int | None) -> None:
        r = s.brokers.get(d["id"])
        if r is not None:
            r.fenced = fenced
            r.offset = offset
    return apply


def _feature(s: ClusterState, d: dict[str, Any], offset: int | None) -> None:
    if d["featureLevel"] == 0:
        s.features.pop(d["name"], None)  # level 0 removes a finalized feature
    else:
        s.features[d["name"]] = d["featureLevel"]


def _config(s: ClusterState, d: dict[str, Any], offset: int | None) -> None:
    key = (d["resourceType"], d["resourceName"])
    if d.get("value") is None:
        s.configs.get(key, {}).pop(d["name"], None)
    else:
        s.configs.setdefault(key, {})[d["name"]] = d["value"]


_HANDLERS = {
    "RegisterBrokerRecord": _register,
    "UnregisterBrokerRecord": _unregister,
    "BrokerRegistrationChangeRecord": _change,
    "FenceBrokerRecord": _fence(True),
    "UnfenceBrokerRecord": _fence(False),
    "FeatureLevelRecord": _feature,
    "ConfigRecord": _config,
}
