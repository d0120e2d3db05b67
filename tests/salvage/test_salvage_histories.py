"""Salvage on random crash histories: the salvaged records are exactly the replicas' records the new leader's log
lacks, by content.

The histories are the replay's (``tests/replay/test_histories.py``: what a
cluster under Kafka's 2.0.1+ rules could have written, crashes with torn
tails included, then a last election).  What each broker's disk holds and
what the leader keeps come from the history's own model of the disks, not
from kforensics' reading: every replica's batches, minus the elected
leader's (a leader keeps its whole valid log: ``LogLoader`` recovery drops
only invalid bytes, and a leader never truncates itself).  Each batch holds
one record whose value names its offset, epoch and writer, so equal bytes
are equal content.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kforensics.replay.report import replay_all
from kforensics.salvage.records import Salvage
from kforensics.scenario import load_scenario
from tests.replay.test_histories import History, op

_VALUE = re.compile(rb"history offset \d+ epoch -?\d+ broker \d+")


def _records(batches) -> set[tuple[int, bytes]]:
    out = set()
    for base, _last, _epoch, data in batches:
        m = _VALUE.search(data)
        assert m is not None
        out.add((base, m.group()))
    return out


@given(st.lists(op, min_size=5, max_size=40), st.integers(0, 2), st.booleans())
@settings(max_examples=int(os.environ.get("KF_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
def test_salvaged_records_are_the_replicas_records_the_leader_lacks(ops, pick, may_be_unclean):
    h = History()
    h.elect(1, False)
    for o in ops:
        h.apply(o)
    h.finish(pick, may_be_unclean)
    with tempfile.TemporaryDirectory() as tmp:
        sc = load_scenario(h.sb.write(Path(tmp) / "h"))
        report = replay_all(sc.brokers, events=sc.events or None, metadata=sc.metadata)
        (p,) = report.partitions
        everything = set().union(*(_records(b.batches) for b in h.sb.brokers.values()))
        expected = everything - _records(h.sb.brokers[p.leader].batches)
        s = Salvage(report)
        got = [(r.offset, r.value) for r in s.records()]
        event(f"salvaged {min(len(expected), 3)}+, kept by leader {min(s.summary.kept_by_leader, 1)}")
    assert len(got) == len(set(got)), "a record salvaged twice"
    assert set(got) == expected
    assert [o for o, _v in got] == sorted(o for o, _v in got)
