"""Results that travel between the Spark job's stages pickle as their fields' values (no field names), and come
back equal; an object holding more than its fields pickles the default way and loses nothing."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

from kforensics.pickling import ByFields
from kforensics.recovery.plan import RecoveryPlan
from kforensics.replay.replica import BatchLog, Replica
from kforensics.replay.summary import ReplicaSummary


@dataclass
class _Point(ByFields):
    x_coordinate: int
    y_coordinate: list[int] = field(default_factory=list)


def _round_trip(obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return data, pickle.loads(data)


def test_a_dataclass_pickles_as_its_values_and_comes_back_equal():
    data, back = _round_trip(_Point(3, [1, 2]))
    assert back == _Point(3, [1, 2]) and type(back) is _Point
    assert b"x_coordinate" not in data and b"y_coordinate" not in data


def test_an_attribute_besides_the_fields_is_kept():
    p = _Point(1)
    p.note = "set later"  # type: ignore[attr-defined]
    data, back = _round_trip(p)
    assert back == p and back.note == "set later"
    del p.note, p.y_coordinate
    data, back = _round_trip(p)
    assert "y_coordinate" not in vars(back) and back.x_coordinate == 1 and b"x_coordinate" not in data


def test_the_sketchs_parts_come_back_equal():
    plan = RecoveryPlan(recovers=True, log_end_offset=10, segments_deleted=["a.log"], note="n")
    replica = Replica(2, BatchLog.from_rows([[0, 0, 1, 7], [1, 4, 1, 8]]), log_start=0, high_watermark=5,
                      epoch_checkpoint=[(1, 0)], segments=["00000000000000000000.log"], recovery=plan)
    summary = ReplicaSummary(2, 1000, chunks=[0], log_end_offset=5, high_watermark=5)
    for obj in (plan, summary):
        data, back = _round_trip(obj)
        assert back == obj and b"log_end_offset" not in data
    data, back = _round_trip(replica)
    assert b"high_watermark" not in data and b"lost_committed_records" not in data
    assert back.recovery == plan and back.epoch_checkpoint == [(1, 0)] and back.high_watermark == 5
    assert (back.log.data == replica.log.data).all() and back.segments == replica.segments


def test_a_field_holding_an_array_and_a_field_not_held_come_back_as_they_were():
    import numpy as np

    p = _Point(np.arange(4))  # type: ignore[arg-type]
    del p.y_coordinate  # its place comes after the array's
    data, back = _round_trip(p)
    assert "y_coordinate" not in vars(back) and np.array_equal(back.x_coordinate, np.arange(4))
    assert b"x_coordinate" not in data
