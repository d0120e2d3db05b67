"""A leader epoch Kafka cannot hold is not invented by the replay.

Kafka keeps a leader epoch in an int32 everywhere: the leader-epoch checkpoint's epoch is read with
``Integer.parseInt`` (apache/kafka 3.9.0, storage/src/main/java/org/apache/kafka/storage/internals/checkpoint/
LeaderEpochCheckpointFile.java, ``Formatter.fromString``), and the controller's next epoch is ``leaderEpoch + 1``
on an ``int`` (metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java).  A checkpoint
epoch of 2147483647 is legal to read, but no election can follow it: "epoch 2147483648" does not exist.
"""

from __future__ import annotations

from kforensics.replay.report import replay_all
from kforensics.scenario import ScenarioBuilder, load_scenario


def test_an_epoch_of_int32_max_gives_a_finding_not_epoch_2147483648(tmp_path):
    sb = ScenarioBuilder("epoch-max", brokers=[1, 2], controller=False)
    sb.elect(1, epoch=0).produce(3).replicate(2)
    sb.high_watermark(1, 3).high_watermark(2, 3)
    sb.epoch_checkpoint(1, [(0, 0), (2147483647, 3)])
    sc = load_scenario(sb.write(tmp_path / "s"))
    (p,) = replay_all(sc.brokers).partitions
    notes = " ".join(n for r in p.replicas for n in r.notes)
    assert "2147483648" not in notes
    assert not any(ev.get("epoch") == 2**31 for ev in p.events)
    assert p.leader_epoch < 2**31
    (f,) = [f for f in p.findings if f.code == "LEADER_EPOCH_OVERFLOW"]
    assert f.facts["brokers"] == [1]
