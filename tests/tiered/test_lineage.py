"""Which remote segments a leader's epoch lineage reaches: the cases of Kafka's own
``RemoteLogManagerTest.testRemoteSegmentWithinLeaderEpochs`` and ``...ForOverlappingSegments`` (core, 3.8.0),
and the 3.6.0 form of the rule, against :func:`kforensics.tiered.lineage.within_leader_epochs`."""

from __future__ import annotations

import pytest

from kforensics.epoch.versions import parse_kafka_version
from kforensics.tiered.lineage import DELETED_EPOCH_TRUNCATION, LEFT, cleanup_fate, within_leader_epochs
from kforensics.tiered.remote_segments import RemoteSegment

LINEAGE = [(0, 0), (1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (7, 70)]
LEO = 90


def seg(start: int, end: int, epochs: list[tuple[int, int]]) -> RemoteSegment:
    return RemoteSegment("s", "orders", "t", 0, start, end, epochs, 1, 100, "COPY_SEGMENT_FINISHED")


# (start, end, segment epochs, expected) from testRemoteSegmentWithinLeaderEpochs @3.8.0
KAFKA_CASES = [
    (15, 35, [(1, 15), (2, 20), (3, 30)], True),
    (15, 19, [(1, 15)], True),
    (0, 5, [(0, 0)], True),
    (70, 75, [(7, 70)], True),
    (15, 29, [(1, 15), (2, 20)], True),
    (55, 85, [(5, 55), (6, 60), (7, 70)], False),
    (15, 45, [(1, 15), (2, 20), (4, 40)], False),
    (15, 95, LINEAGE, False),
    (15, 90, LINEAGE, False),
    (5, 25, [(1, 5), (2, 20)], False),
    (15, 35, [(1, 15), (2, 20)], False),
]


@pytest.mark.parametrize("version", ["3.9.0", "3.6.0"])
@pytest.mark.parametrize("start,end,epochs,expected", KAFKA_CASES)
def test_kafkas_own_cases(start, end, epochs, expected, version):
    ok, why = within_leader_epochs(seg(start, end, epochs), LEO, LINEAGE, parse_kafka_version(version))
    assert ok is expected and (ok or why)


def test_overlapping_segments_after_the_log_start_moved():
    # testRemoteSegmentWithinLeaderEpochsForOverlappingSegments @3.8.0: leader {7: 51, 9: 100}, log end 210
    lineage = [(7, 51), (9, 100)]
    v38 = parse_kafka_version("3.9.0")
    assert within_leader_epochs(seg(14, 150, [(5, 14), (7, 15), (9, 100)]), 210, lineage, v38)[0]
    assert not within_leader_epochs(seg(2, 7, [(2, 5), (3, 6)]), 210, lineage, v38)[0]
    assert not within_leader_epochs(seg(15, 250, [(7, 15), (9, 100), (10, 200)]), 210, lineage, v38)[0]
    assert not within_leader_epochs(seg(75, 100, [(8, 75)]), 210, lineage, v38)[0]
    # at 3.6.0 the segment's first epoch 5 below the leader's first 7 already excludes it (3.6.0 ≈ L1136)
    assert not within_leader_epochs(seg(14, 150, [(5, 14), (7, 15), (9, 100)]), 210, lineage,
                                    parse_kafka_version("3.6.0"))[0]


def test_cleanup_deletes_only_segments_wholly_below_the_leaders_earliest_epoch():
    lineage = [(3, 100), (5, 200)]
    assert cleanup_fate(seg(0, 99, [(1, 0), (2, 50)]), lineage, 100) == DELETED_EPOCH_TRUNCATION
    assert cleanup_fate(seg(100, 199, [(4, 100)]), lineage, 100) == LEFT  # epoch 4: not listed, not below 3
    assert cleanup_fate(seg(50, 150, [(2, 50), (4, 100)]), lineage, 100) == LEFT
