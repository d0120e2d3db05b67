"""``replay`` names the partitions it does not replay, and why, in its JSON and its text.

``__cluster_metadata-0`` is the controllers' Raft log: a voter's log is made to match the leader's by Raft's fetch
(``KafkaRaftClient.handleFetchResponse`` truncating at the diverging epoch, apache/kafka 3.9.0
raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java), not by the ISR replication replay models; one
node's copy holding records the others lack is reported, pointing at ``kforensics timeline``.
"""

from __future__ import annotations

import json

from kforensics.scenario import ScenarioBuilder, load_scenario
from tests.hostile.helpers import partition_record, run, topic_record, write_metadata_log


def _brokers(tmp_path):
    sb = ScenarioBuilder("left-out", brokers=[1, 2], controller=False)
    sb.elect(1, epoch=0).produce(3).replicate(2)
    sb.high_watermark(1, 3).high_watermark(2, 3)
    sc = load_scenario(sb.write(tmp_path / "s"))
    b1, b2 = sc.brokers[1][0], sc.brokers[2][0]
    write_metadata_log(b1, [topic_record(), partition_record(), partition_record(epoch=1)])
    write_metadata_log(b2, [topic_record(), partition_record()])  # one record fewer: broker 1 holds offset 2 alone
    return b1, b2


def test_replay_names_the_metadata_log_it_does_not_replay_and_the_copies_that_differ(tmp_path):
    b1, b2 = _brokers(tmp_path)
    r = run("replay", str(b1), str(b2), "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [(p["topic"], p["partition"]) for p in doc["partitions"]] == [("orders", 0)]
    left = [f for f in doc["findings"] if f["code"] == "PARTITION_NOT_REPLAYED"]
    assert sorted(f["facts"]["broker"] for f in left) == [1, 2]
    assert all(f["facts"]["topic"] == "__cluster_metadata" and "Raft" in f["message"] for f in left)
    (differ,) = [f for f in doc["findings"] if f["code"] == "METADATA_COPIES_DIFFER"]
    assert differ["facts"]["brokers_ahead"] == [1] and "timeline" in differ["message"]
    text = run("replay", str(b1), str(b2), "--min-severity", "info").stdout
    assert "PARTITION_NOT_REPLAYED" in text and "METADATA_COPIES_DIFFER" in text
