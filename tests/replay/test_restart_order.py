"""``--restart-order``: the operator's order of restart settles the controller's choice; real Kafka is the judge.

The evidence is a lab set (fixtures/lab/leader-crash-4.4.0): a real 4.4.0 cluster frozen after its
``orders-0`` leader was killed, then restarted cold by the lab (the controller alone until it fenced brokers 3
and 1, then broker 2, 1 and 3 in turn, each once the one before was unfenced).  Kafka elected broker 1 for every
lab partition, by the last-known-leader rule (KIP-966: fencing 3 then 1 left 1 as the last leader, and its
unclean registration took it out of the ELR), in the epochs outcome.json holds.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kforensics.cli import main
from tests.conftest import ROOT

SET = ROOT / "fixtures" / "lab" / "leader-crash-4.4.0"


def _args(*extra: str) -> list[str]:
    before = SET / "before"
    return ["replay", *(str(p) for p in sorted(before.glob("broker-*.tgz"))), "--metadata",
            str(before / "controller-100.tgz"), "--kafka-version", "4.4.0", "--format", "json", *extra]


@pytest.fixture(scope="module")
def outcome() -> dict:
    if not SET.exists():
        pytest.skip("fixtures/lab/leader-crash-4.4.0 is not in this checkout")
    return json.loads((SET / "outcome.json").read_text())["outcome"]


def test_the_order_kafka_was_restarted_in_gives_kafkas_leaders_and_epochs(outcome):
    order = ",".join(map(str, outcome["order"]))
    r = CliRunner().invoke(main, _args("--restart-order", order))
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.stdout)
    checked = 0
    for p in doc["partitions"]:
        topic, part = p["topic"], str(p["partition"])
        if topic not in outcome["epochs"] or part not in outcome["epochs"][topic]:
            continue
        e = p["election"]
        assert (e["leader"], e["leader_epoch"]) == (outcome["states"][topic][part]["leader"],
                                                    outcome["epochs"][topic][part]), (topic, part, e["steps"])
        assert e["order_given"] and e["returning"] == outcome["order"] and e["alternatives"] == []
        assert "--restart-order" in e["assumptions"]["restart order"]
        checked += 1
    assert checked == 4


def test_without_the_order_every_order_is_tried(outcome):
    doc = json.loads(CliRunner().invoke(main, _args()).stdout)
    elections = [p["election"] for p in doc["partitions"] if p["topic"] == "orders"]
    assert elections and not any(e["order_given"] for e in elections)
    assert all(e["returning"] == [1, 2, 3] for e in elections)


@pytest.mark.parametrize("order, extra, says", [
    ("1,4", [], "names broker 4, which is not one of the brokers given"),
    ("1,1", [], "names a broker twice"),
    ("2,1", ["--running", "1"], "which --running says never stopped"),
    ("3,1", ["--alive", "1,2"], "which --alive leaves out"),
    ("1,x", [], "is not a comma-separated list of broker ids"),
])
def test_an_order_that_cannot_be_is_refused(outcome, order, extra, says):
    r = CliRunner().invoke(main, _args("--restart-order", order, *extra))
    assert r.exit_code == 2 and says in r.output, r.output
