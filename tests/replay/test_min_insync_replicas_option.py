"""``--min-insync-replicas``: given, it overrides the metadata log's min.insync.replicas for the acknowledgement
classes, and the text and JSON say it was given; not given, the metadata log's config decides.

The case is fixtures/acks/acks-under-min-isr-hw-advanced (its controller record sets min.insync.replicas 2 and
shows the ISR [1] in epoch 1).  At 3.6.0 ``Partition.maybeIncrementLeaderHW`` advances with the leader alone, and
``checkEnoughReplicasReachOffset`` answers NOT_ENOUGH_REPLICAS_AFTER_APPEND while the ISR is below the minimum
(3.6.0): with 2, offsets 2-3 (idempotent, acks=all) are never-acked and 4-5 acked at append only (the derivation in
its scenario.json); with 1 the ISR [1] meets the minimum, so the HW 6 that passed them answered NONE: all four
acked-all.
"""

from __future__ import annotations

import json

from click.testing import CliRunner

from kforensics.cli import main
from tests.conftest import ROOT

CASE = ROOT / "fixtures" / "acks" / "acks-under-min-isr-hw-advanced"


def _replay(*extra: str) -> tuple[str, dict]:
    args = ["replay", "--scenario", str(CASE), "--kafka-version", "3.6.0", *extra]
    text = CliRunner().invoke(main, args).stdout
    doc = json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).stdout)
    return text, doc


def _loss(doc: dict) -> dict:
    (v,) = [v for r in doc["partitions"][0]["replicas"] for v in r["verdicts"] if v["code"] == "LOSS_COMMITTED"]
    return v["facts"]


def test_given_it_overrides_the_metadata_logs_config_and_says_so():
    text, doc = _replay("--min-insync-replicas", "1")
    facts = _loss(doc)
    assert facts["acknowledged"] == {"acked-all": 4, "acked-leader-only": 0, "never-acked": 0}
    assert (facts["acknowledgement_rule"]["min_insync_replicas"], facts["acknowledgement_rule"]["source"]) == (
        1, "given")
    assert doc["min_insync_replicas"] == 1
    assert "min.insync.replicas 1 given" in text


def test_not_given_the_metadata_logs_config_decides():
    text, doc = _replay()
    facts = _loss(doc)
    assert facts["acknowledged"] == {"acked-all": 0, "acked-leader-only": 2, "never-acked": 2}
    rule = facts["acknowledgement_rule"]
    assert rule["min_insync_replicas"] == 2 and rule["source"] != "given" and "topic config" in rule["source"]
    assert doc["min_insync_replicas"] is None
    assert "given" not in text.split("\n")[1] and "min.insync.replicas" not in text.split("\n")[2]


def test_a_count_below_one_is_refused():
    r = CliRunner().invoke(main, ["replay", "--scenario", str(CASE), "--min-insync-replicas", "0"])
    assert r.exit_code == 2 and "replica count" in r.output
