"""Acknowledgement classes of the lost ranges: the cases of fixtures/acks (fixtures/make_acks.py).

Each case's classes are derived by hand in its scenario.json from Partition.appendRecordsToLeader,
checkEnoughReplicasReachOffset and maybeIncrementLeaderHW at 3.6.0 and 3.7.0 (KAFKA-15583, commit edc7e10a745)
and ProducerConfig's idempotence rule (acks=all), at the tags cited there.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kforensics.cli import main
from kforensics.epoch.versions import parse_kafka_version
from kforensics.replay.report import replay_all
from kforensics.scenario import load_scenario
from tests.conftest import ROOT, file_tree, run_generator

ACKS = ROOT / "fixtures" / "acks"
CASES = [(d, v) for d in sorted(p for p in ACKS.iterdir() if p.is_dir())
         for v in json.loads((d / "scenario.json").read_text())["acknowledged"]]


def _replay(sdir, version):
    sc = load_scenario(sdir)
    report = replay_all(sc.brokers, kafka_version=parse_kafka_version(version), metadata=sc.metadata,
                        events=sc.events)
    (p,) = report.partitions
    return sc, p


@pytest.mark.parametrize("sdir,version", CASES, ids=[f"{d.name}@{v}" for d, v in CASES])
def test_each_lost_range_says_what_its_producers_were_told(sdir, version):
    sc, p = _replay(sdir, version)
    assert p.verdict_codes() == sc.expected[version]
    got = {str(r.broker_id): {v.code: v.facts["acknowledged"] for v in r.verdicts if "acknowledged" in v.facts}
           for r in p.replicas}
    assert {b: v for b, v in got.items() if v} == sc.doc["acknowledged"][version]
    assert sc.doc["sources"] and sc.doc["derivation"]


def test_the_rule_and_the_ranges_are_stated():
    _, p = _replay(ACKS / "acks-under-min-isr-hw-held", "3.6.0")
    (v,) = [v for r in p.replicas for v in r.verdicts if v.code == "DISCARD_UNCOMMITTED"]
    assert v.facts["acknowledged_offsets"] == {"acked-all": [], "acked-leader-only": [[4, 5]],
                                               "never-acked": [[2, 3]]}
    rule = v.facts["acknowledgement_rule"]
    assert (rule["min_insync_replicas"], rule["hw_waits_for_min_isr"], rule["isr_from_controller_record"]) == (
        2, False, True)
    assert "acknowledged: 2 acked-leader-only, 2 never-acked" in v.detail


def test_json_output_carries_the_classes():
    r = CliRunner().invoke(main, ["replay", "--scenario", str(ACKS / "acks-never-acked-idempotent-tail"),
                                  "--format", "json"])
    doc = json.loads(r.stdout)
    facts = [v["facts"] for rp in doc["partitions"][0]["replicas"] for v in rp["verdicts"]
             if v["code"] == "DISCARD_UNCOMMITTED"]
    assert facts and facts[0]["acknowledged"]["never-acked"] == 2
    import jsonschema

    jsonschema.validate(doc, json.loads((ROOT / "docs" / "schemas" / "replay.schema.json").read_text()))
    bad = json.loads(r.stdout)
    for rp in bad["partitions"][0]["replicas"]:
        for v in rp["verdicts"]:
            v["facts"].get("acknowledged", {}).pop("never-acked", None)
    with pytest.raises(jsonschema.ValidationError):  # the schema holds the classes to their names
        jsonschema.validate(bad, json.loads((ROOT / "docs" / "schemas" / "replay.schema.json").read_text()))


def test_ack_fixtures_regenerate_byte_for_byte(tmp_path):
    run_generator(ROOT / "fixtures" / "make_acks.py", tmp_path)
    assert file_tree(tmp_path) == file_tree(ACKS)


def test_a_config_that_is_no_number_falls_back_to_kafkas_default():
    from types import SimpleNamespace

    from kforensics.epoch.versions import LATEST
    from kforensics.replay.acknowledgements import ack_rule

    cluster = SimpleNamespace(topic_config=lambda topic, name: ("two", "topic config of orders"))
    rule = ack_rule("orders", LATEST, 4, cluster)
    assert rule.min_insync_replicas == 1 and "'two'" in rule.source
    given = ack_rule("orders", parse_kafka_version("3.6.0"), 4, cluster, min_insync_replicas=3)
    assert (given.min_insync_replicas, given.source, given.hw_waits_for_min_isr) == (3, "given", False)
    assert ack_rule("orders", parse_kafka_version("3.7.0"), 4).hw_waits_for_min_isr  # KAFKA-15583's first tag
