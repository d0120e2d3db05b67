"""``replay`` on partition dirs scanned together (issue 26) answers as on dirs scanned one by one: every scenario
fixture's replay document, with ``scan_log_dirs``' batched path on and off."""

from __future__ import annotations

import json

import pytest

from kforensics.replay.report import replay_all
from kforensics.scan import broker as broker_module
from kforensics.scenario.loading import load_scenario
from kforensics.serialize import to_jsonable
from tests.conftest import ROOT

SCENARIOS = sorted(p.name for p in (ROOT / "fixtures" / "scenarios").iterdir() if p.is_dir())


@pytest.mark.parametrize("name", SCENARIOS)
def test_replay_of_dirs_scanned_together_is_the_replay_of_dirs_scanned_one_by_one(name, monkeypatch):
    sc = load_scenario(ROOT / "fixtures" / "scenarios" / name)
    documents = []
    for batched in (False, True):
        monkeypatch.setattr(broker_module, "BATCHED", batched)
        report = replay_all(sc.brokers, events=sc.events or None, metadata=sc.metadata)
        documents.append(json.dumps(to_jsonable(report.partitions), sort_keys=True)
                         + json.dumps(to_jsonable(report.findings), sort_keys=True))
    assert documents[1] == documents[0]
