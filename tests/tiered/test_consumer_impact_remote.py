"""A consumer group whose committed offset lies in a tiered partition's remote range is not reset.

Kafka (``ReplicaManager.handleOffsetOutOfRangeError``, 3.9.0-rc3 L1746-1790, core) answers a consumer's fetch at an
offset in ``[logStartOffset, localLogStartOffset)`` of a remote-enabled log with a remote read
(``RemoteStorageFetchInfo``); only a follower's or a future replica's fetch there gets
OFFSET_MOVED_TO_TIERED_STORAGE.  Out of range stays out of range: above the log end, ``OFFSET_OUT_OF_RANGE``.
"""

from __future__ import annotations

from kforensics.consumers.committed_offsets import CommittedOffset
from kforensics.consumers.fetch_position import OFFSET_OUT_OF_RANGE
from kforensics.consumers.impact import partition_impact
from kforensics.replay.report import replay_all
from tests.conftest import ROOT

CASE = ROOT / "fixtures" / "tiered" / "tiered-follower-below-local-start"


def _commit(group: str, offset: int) -> CommittedOffset:
    return CommittedOffset(group, "orders", 0, offset, None, "", 0)


def test_a_commit_in_the_remote_range_is_served_and_one_past_the_log_end_is_not():
    report = replay_all([str(CASE / "broker-1"), str(CASE / "broker-2")], metadata=[str(CASE / "controller")])
    p = next(x for x in report.partitions if x.topic == "orders")
    leader = next(r for r in p.replicas if r.broker_id == p.leader)
    # the fixture: leader 1 holds 20-24 locally, 0-19 in copied remote segments, log start 0 (scenario.json)
    assert p.leader == 1 and leader.log_after[0].start == 20 and leader.tiered_log_start_offset == 0
    impacts = partition_impact(p, [_commit("remote", 3), _commit("remote-edge", 19), _commit("local", 22),
                                   _commit("past", 40)])
    assert [(i.group, i.outcome) for i in impacts] == [("past", OFFSET_OUT_OF_RANGE)]
    assert impacts[0].log_start_offset == 0
