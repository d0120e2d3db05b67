"""``Replica.as_broker`` is ``dataclasses.replace(replica, broker_id=...)`` without ``__init__``: the same object,
attribute for attribute, for every replica of the scenario fixtures (windowed ones and ones whose segment names
were worked out already included)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kforensics.replay.inputs import load_replicas
from kforensics.replay.replica import elide
from tests.conftest import ROOT

SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if p.is_dir())


@pytest.mark.parametrize("scenario", SCENARIOS[:8], ids=lambda p: p.name)
def test_as_broker_is_replace_of_the_broker_id(scenario):
    brokers = sorted(p for p in scenario.glob("broker-*") if p.is_dir())
    if not brokers:
        pytest.skip("no brokers")
    loaded = load_replicas({i + 1: [b] for i, b in enumerate(brokers)})
    compared = 0
    for group in loaded.groups.values():
        for r in group:
            r.segment_index("x")  # its segment names worked out (a field __init__ does not take)
            for made in (r, elide(r, 2)):
                got, want = made.as_broker(77), replace(made, broker_id=77)
                assert vars(got) == vars(want) and got == want and got is not made
                assert made.broker_id == r.broker_id  # the original keeps its id
                compared += 1
    assert compared
