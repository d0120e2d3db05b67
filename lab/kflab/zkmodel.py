"""What a ZooKeeper-mode controller does to a partition's leader and epoch at the lab's cold restart: used to
explain the leader and leader_epoch disagreements of ZooKeeper-mode runs (kforensics reads no ZooKeeper
data, so it cannot see the ISR and epoch the controller starts from).

Rules, from Kafka 2.8.2 (core/src/main/scala/kafka/controller/):
- The first broker back is the controller and the only live broker when it starts.  ReplicaStateMachine.startup
  moves every replica of a dead broker to OfflineReplica; doRemoveReplicasFromIsr (ReplicaStateMachine.scala)
  takes each dead replica that is in the ISR out of it (not the last one: an ISR of one stays as it is), the
  leader becoming -1 (NoLeader) when it is the one removed, and every such change is
  LeaderAndIsr.newLeaderAndIsr (core/src/main/scala/kafka/api/LeaderAndIsr.scala): leader epoch + 1.
- PartitionStateMachine then elects for every partition without a live leader, and again each time a broker
  comes back (onBrokerStartup, KafkaController.scala): offlinePartitionLeaderElection (PartitionStateMachine
  .scala) takes the first replica in assignment order that is live and in the ISR, else, where the topic allows
  unclean election, the first live one; the new ISR is the live part of the old one (the new leader alone
  after an unclean election), the epoch + 1.  A partition whose leader is live is not touched.
"""

from __future__ import annotations


def restart(frozen: dict, assignment: list[int], order: list[int], unclean: bool = False) -> tuple[int, int]:
    """(leader, leader_epoch) after brokers come back one at a time in ``order`` onto the frozen state
    ``{"leader", "leader_epoch", "isr"}`` of a partition whose replicas are ``assignment``; unclean: the topic's
    unclean.leader.election.enable."""
    leader, epoch, isr = frozen["leader"], frozen["leader_epoch"], list(frozen["isr"])
    first = order[0]
    for r in sorted(set(assignment) - {first}):  # the dead replicas as the controller starts
        if r in isr:
            if r == leader:
                leader = -1
            if len(isr) > 1:
                isr.remove(r)
            epoch += 1
    for k in range(len(order)):
        live = set(order[: k + 1])
        if leader in live:
            continue
        cand = next((a for a in assignment if a in live and a in isr), None)
        if cand is not None:
            leader, epoch = cand, epoch + 1
            isr = [b for b in isr if b in live]
        elif unclean and (cand := next((a for a in assignment if a in live), None)) is not None:
            leader, epoch, isr = cand, epoch + 1, [cand]
    return leader, epoch


def explain(result: dict) -> list[dict]:
    """Per lab partition of a ZooKeeper-mode run: the model's leader and epoch beside Kafka's and kforensics'."""
    o = result.get("outcome") or {}
    steps = o.get("restart") or []
    frozen = next((s["zookeeper"].get("frozen_states") for s in steps if "zookeeper" in s), None)
    if not frozen or not o.get("order"):
        return []
    checks = {(c["check"], c["topic"], c["partition"]): c for c in (result.get("comparison") or {}).get("checks", [])}
    out = []
    for key, st in sorted(frozen.items()):
        topic, _, p = key.rpartition("-")
        parts = (o.get("states") or {}).get(topic) or {}
        ps = parts.get(p) or parts.get(int(p)) if isinstance(parts, dict) else None
        if not isinstance(ps, dict) or "replicas" not in ps:
            continue
        conf = ((result.get("story") or {}).get("topics") or {}).get(topic) or {}
        unclean = str(conf.get("unclean.leader.election.enable", "false")).lower() == "true"
        leader, epoch = restart(st, ps["replicas"], o["order"], unclean)
        lc, ec = checks.get(("leader", topic, int(p))), checks.get(("leader_epoch", topic, int(p)))
        out.append(
            {
                "partition": key,
                "model": [leader, epoch],
                "kafka": [lc and lc["observed"], ec and ec["observed"]],
                "kforensics": [lc and lc["predicted"], ec and ec["predicted"]],
            }
        )
    return out
