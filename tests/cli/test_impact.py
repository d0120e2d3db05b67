"""Consumer and transaction impact through the CLI: ``replay --scenario`` and ``scan --out`` on the four impact
scenarios give the expectations derived by hand in their scenario.json (``expected_impact``,
``expected_transactions``), in text and JSON, with the exit codes the findings imply."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from kforensics.cli import main
from kforensics.verdict_rules import FAILING_FINDINGS as BAD_FINDINGS
from kforensics.verdict_rules import FAILS_REPLAY as BAD
from kforensics.scenario import ScenarioBuilder, load_scenario
from tests.conftest import ROOT

SCENARIOS = ROOT / "fixtures" / "scenarios"
IMPACT = ("consumer-group-resets", "consumer-group-skips-forked-records", "transaction-hanging",
          "transaction-marker-lost")
KEYS = ("group", "committed_offset", "committed_leader_epoch", "consumed_lost", "consumed_lost_records", "outcome",
        "next_position", "skipped", "reread")
CASES = [(name, v) for name in IMPACT for v in load_scenario(SCENARIOS / name).expected]


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("name,version", CASES, ids=[f"{n}@{v}" for n, v in CASES])
def test_replay_json_gives_each_scenarios_hand_derived_impact(name, version):
    sc = load_scenario(SCENARIOS / name)
    r = run("replay", "--scenario", SCENARIOS / name, "--kafka-version", version, "--format", "json")
    doc = json.loads(r.stdout)
    (p,) = doc["partitions"]
    assert {x["broker_id"]: [v["code"] for v in x["verdicts"]] for x in p["replicas"]} == sc.expected[version]
    assert [{k: i[k] for k in KEYS} for i in doc["consumer_impact"]] == sc.doc.get("expected_impact", {}).get(
        version, [])
    for i in doc["consumer_impact"]:  # each group's commit record, where it was read
        assert "/coordinators/broker-" in i["commit_file"] and "__consumer_offsets-" in i["commit_file"]
    want = sc.doc.get("expected_transactions", {}).get(f"orders-0@after-replay@{version}")
    if want is None:
        assert not [a for a in doc["transactions"] if a["reopened"]]
    else:
        (after,) = doc["transactions"]
        lt = after["leader_transactions"]
        assert after["leader"] == want["leader"] and lt["last_stable_offset"] == want["last_stable_offset"]
        assert [{k: t[k] for k in want["open"][0]} for t in lt["open"]] == want["open"]
        assert [[x["producer_id"], x["first_offset"], x["marker"]["control_type"], x["marker"]["offset"],
                 x["broker_id"], x["verdict"]] for x in after["reopened"]] == want["reopened"]
        assert set(want["findings"]) <= {f["code"] for f in doc["findings"]}
    # the impact's findings are in the document's findings, and count toward the exit code
    codes = {f["code"] for f in doc["findings"]}
    groups = {i["group"] for i in doc["consumer_impact"]}
    assert groups == {f["facts"]["group"] for f in doc["findings"] if f["code"] == "CONSUMED_RECORDS_LOST"}
    assert {i["group"] for i in doc["consumer_impact"] if i["outcome"] == "OFFSET_OUT_OF_RANGE"} == \
        {f["facts"]["group"] for f in doc["findings"] if f["code"] == "GROUP_OFFSET_OUT_OF_RANGE"}
    bad = any(c in BAD for codes_ in sc.expected[version].values() for c in codes_) or bool(codes & BAD_FINDINGS)
    assert r.exit_code == (1 if bad else 0)
    committed = doc["committed_offsets"]
    assert all(c["topic"] == "orders" and c["partition"] == 0 for c in committed["offsets"])


def test_replay_text_shows_the_consumer_impact_and_the_reopened_transaction():
    r = run("replay", "--scenario", SCENARIOS / "transaction-marker-lost")
    assert r.exit_code == 1
    text = r.stdout
    start = text.index("\nconsumer impact:")
    section = text[start:text.index("\n\n", start + 1)].strip("\n").splitlines()
    assert section == [
        "consumer impact: 1 group affected (1 committed offset of the partitions that lose records, read from 2 "
        "__consumer_offsets partition copies)",
        "  orders-0 group reader: committed 5 (leader epoch 0); the new leader, broker 2, serves 0-4",
        "      consumed 3-4 (2 records), which no longer exist",
        "      TRUNCATION_DETECTED: seeks to 3; receives 3-4 again",
    ]
    start = text.index("\ntransactions after the replay:")
    section = text[start:text.index("\n\n", start + 1)].strip("\n").splitlines()
    assert section == [
        "transactions after the replay: 1 reopened by lost markers",
        "  orders-0 on the new leader, broker 2: LSO 1, 1 open, 0 committed, 0 aborted",
        "      HANGING: producer 500 (epoch 0) from offset 1 to 2, coordinator: CompleteCommit; at a restart: stays open",
        "      REOPENED: producer 500 from offset 1: broker 1's COMMIT marker at offset 3 is lost (LOSS_COMMITTED)",
    ]
    findings = [line for line in text.splitlines() if line.startswith("! ")]
    assert [line.split()[1:3] for line in findings] == [
        ["HIGH", "TXN_MARKER_LOST"], ["HIGH", "TXN_HANGING"], ["HIGH", "CONSUMED_RECORDS_LOST"],
        ["MEDIUM", "GROUP_TRUNCATION_DETECTED"]]
    assert "@ byte 339: broker 1's COMMIT marker of producer 500 at offset 3 is lost" in findings[0]
    assert text.splitlines()[-1] == ("summary: 1 partition, 2 replicas; verdicts: 1 LOSS_COMMITTED, "
                                     "1 UNCLEAN_ELECTION; 1 group-partition affected; 1 transaction reopened; "
                                     "1 hanging transaction")


def test_replay_text_of_groups_that_reset_and_skip():
    text = run("replay", "--scenario", SCENARIOS / "consumer-group-skips-forked-records", "--kafka-version",
               "2.0.1").stdout
    assert ("  orders-0 group billing: committed 5; the new leader, broker 2, serves 0-6\n"
            "      consumed 3-4 (2 records), which no longer exist\n"
            "      FETCHES: fetches at 5; never receives 3-4 (the new leader's records there)\n") in text
    text = run("replay", "--scenario", SCENARIOS / "consumer-group-resets").stdout
    assert ("      OFFSET_OUT_OF_RANGE: resets per auto.offset.reset; with earliest it receives 0-2 again\n") in text
    assert "group reports" not in text  # its commit (2) is below every lost offset


def test_consumer_loss_alone_makes_replay_exit_1(tmp_path):
    """A follower's truncation above every checkpointed HW is DISCARD_UNCOMMITTED (not a bad verdict), but a
    group committed beyond it (the HW checkpoint lagged the real HW): the group consumed records that are gone."""
    sb = ScenarioBuilder("stale-hw", brokers=[1, 2])
    sb.elect(1, epoch=0).produce(3).replicate(2).produce(3)
    sb.high_watermark(1, 3).high_watermark(2, 3)
    sb.commit("late", 6, leader_epoch=0)
    sb.then("down", broker=1).then("elect", leader=2, epoch=1).then("up", broker=1).then("follow", broker=1)
    d = sb.write(tmp_path / "s")
    r = run("replay", "--scenario", d, "--format", "json")
    doc = json.loads(r.stdout)
    assert [v["code"] for x in doc["partitions"][0]["replicas"] for v in x["verdicts"]] == ["DISCARD_UNCOMMITTED",
                                                                                             "OK"]
    assert {f["code"] for f in doc["findings"]} >= {"CONSUMED_RECORDS_LOST"}
    assert r.exit_code == 1
    assert not {"DISCARD_UNCOMMITTED", "OK"} & BAD


def test_consumer_offsets_are_read_only_when_a_partition_loses_records(monkeypatch):
    import kforensics.consumers.committed_offsets as co

    def boom(*a, **k):
        raise AssertionError("__consumer_offsets read although nothing is lost")

    monkeypatch.setattr(co, "read_committed_offsets", boom)
    r = run("replay", "--scenario", SCENARIOS / "transaction-hanging", "--format", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["consumer_impact"] == [] and doc["transactions"] == []


def test_replay_without_internal_topics_has_empty_impact():
    r = run("replay", "--scenario", SCENARIOS / "kip101-s2-two-hard-failures", "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["consumer_impact"] == [] and doc["committed_offsets"]["offsets"] == []
    text = run("replay", "--scenario", SCENARIOS / "kip101-s2-two-hard-failures").stdout
    assert "consumer impact" not in text and "transactions after the replay" not in text


# ---------------------------------------------------------------------------- scan --out
def _scan(tmp_path, name, broker):
    sc = load_scenario(SCENARIOS / name)
    out = tmp_path / f"{name}-{broker}"
    r = run("scan", *sc.log_dirs[broker], "--out", out)
    return r, {t: pq.read_table(out / f"{t}.parquet").to_pylist() for t in
               ("transactions", "committed_offsets", "partitions", "findings")}


@pytest.mark.parametrize("broker", [1, 2])
def test_scan_out_transactions_of_the_hanging_scenario(tmp_path, broker):
    sc = load_scenario(SCENARIOS / "transaction-hanging")
    want = sc.doc["expected_transactions"][f"orders-0@broker-{broker}"]
    r, t = _scan(tmp_path, "transaction-hanging", broker)
    assert r.exit_code == 1  # TXN_HANGING is high
    rows = [x for x in t["transactions"] if x["topic"] == "orders"]
    assert {x["last_stable_offset"] for x in rows} == {want["last_stable_offset"]}
    opened = [x for x in rows if x["kind"] == "open"]
    assert [{k: x[k] for k in want["open"][0]} for x in opened] == want["open"]
    ended = [x for x in rows if x["kind"] != "open"]
    assert [[x["last_offset"], x["producer_id"], x["marker"], x["marker_epoch"], x["epoch_bump"]] for x in ended] == \
        want["markers"]
    assert [[x["producer_id"], x["first_offset"], x["last_offset"], x["in_txn_index"]] for x in ended
            if x["kind"] == "aborted"] == [[a[0], a[1], a[2], a[4]] for a in want["aborted"]]
    assert all(x["broker_id"] == broker and x["file"].endswith("orders-0/00000000000000000000.log") for x in rows)
    (orders,) = [p for p in t["partitions"] if p["topic"] == "orders"]
    assert (orders["last_stable_offset"], orders["open_transactions"]) == (want["last_stable_offset"], 1)
    assert sorted({f["code"] for f in t["findings"]}) == want["findings"]
    # text: the open transaction, hanging, with the coordinator's state
    text = run("scan", *sc.log_dirs[broker]).stdout
    assert ("transactions open at the log end (1, 1 hanging; read_committed consumers stop at the LSO)\n"
            "  orders-0: LSO 6 (HW 13, LEO 13)\n"
            "    HANGING: producer 300 (epoch 0) from offset 6 to 6, 1 record(s), 1200006 ms old, coordinator: "
            "CompleteAbort; at a restart: stays open\n") in text


def test_scan_out_committed_offsets_and_the_v2_marker(tmp_path):
    r, t = _scan(tmp_path, "consumer-group-resets", 1)
    assert r.exit_code == 0
    got = sorted((x["group"], x["topic"], x["partition"], x["offset"], x["leader_epoch"], x["value_version"],
                  x["coordinator_partition"], x["copies"]) for x in t["committed_offsets"])
    assert got == [("audit", "orders", 0, 6, 0, 3, 5, [1]), ("billing", "orders", 0, 6, None, 1, 9, [1]),
                   ("reports", "orders", 0, 2, 0, 3, 49, [1])]
    assert all("__consumer_offsets-" in x["file"] and x["broker_id"] == 1 for x in t["committed_offsets"])
    assert t["transactions"] == []
    # transaction-marker-lost, broker 1 before the replay: the transaction is committed with a v2 marker (epoch + 1)
    r, t = _scan(tmp_path, "transaction-marker-lost", 1)
    (commit,) = [x for x in t["transactions"] if x["topic"] == "orders"]
    assert (commit["kind"], commit["first_offset"], commit["last_offset"], commit["epoch_bump"]) == \
        ("committed", 1, 3, 1)
    assert not [f for f in t["findings"] if f["code"].startswith("TXN_")]  # the epoch bump is no anomaly


def test_scan_without_out_does_not_decode_consumer_offsets(tmp_path, monkeypatch):
    import kforensics.consumers.committed_offsets as co

    def boom(*a, **k):
        raise AssertionError("committed offsets read without --out")

    monkeypatch.setattr(co, "read_committed_offsets", boom)
    sc = load_scenario(SCENARIOS / "consumer-group-resets")
    assert run("scan", *sc.log_dirs[1], "--format", "json").exit_code == 0
