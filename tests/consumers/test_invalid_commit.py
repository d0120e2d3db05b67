"""A negative committed offset is an invalid commit, its own finding, and no impact of the replay.

The consumer takes an offset below 0 from OffsetFetch for "no committed offset" (apache/kafka 3.9.0,
clients/src/main/java/org/apache/kafka/clients/consumer/internals/ConsumerCoordinator.java,
``OffsetFetchResponseHandler``: ``partitionData.offset >= 0`` records the position, anything else logs
"Found no committed offset" and records null), so the group resets per ``auto.offset.reset`` before the incident
as after it: whatever the replay does to the partition, that commit says nothing about it.
"""

from __future__ import annotations

from kforensics.consumers.replay_impact import replay_impact
from kforensics.replay.report import replay_all
from kforensics.scenario import ScenarioBuilder, load_scenario


def _scenario(tmp_path):
    sb = ScenarioBuilder("invalid-commit", brokers=[1, 2], controller=False)
    sb.elect(1, epoch=0).produce(4).replicate(2, up_to=2)
    sb.high_watermark(1, 2).high_watermark(2, 2)
    sb.commit("broken", -5, leader_epoch=0).commit("fine", 1, leader_epoch=0)
    sb.then("elect", leader=2, epoch=1).then("follow", broker=1)
    return load_scenario(sb.write(tmp_path / "s"))


def test_a_negative_committed_offset_is_an_invalid_commit_not_consumer_impact(tmp_path):
    sc = _scenario(tmp_path)
    report = replay_all(sc.brokers, events=sc.events)
    (p,) = report.partitions
    assert any(v.code == "DISCARD_UNCOMMITTED" for r in p.replicas for v in r.verdicts)  # the replay affects groups
    impact = replay_impact(report, sc.log_dirs)
    assert not [i for i in impact.consumer_impact if i.group == "broken"]
    codes = [(f.code, f.facts.get("group")) for f in impact.findings]
    assert ("GROUP_OFFSET_OUT_OF_RANGE", "broken") not in codes
    invalid = [f for f in impact.findings if f.code == "GROUP_COMMIT_INVALID"]
    assert invalid and all(f.facts["group"] == "broken" and f.facts["committed_offset"] == -5 for f in invalid)
