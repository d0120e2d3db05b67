"""The tiered-storage cases of fixtures/tiered (fixtures/make_tiered.py): what scan says of each tiered replica and
what the replay does, against the results each scenario.json derives by hand from Kafka's source (LogLoader,
TierStateMachine, RemoteLogMetadataCache, RemoteLogManager.isRemoteSegmentWithinLeaderEpochs and its cleanup, at
the tags cited there and in docs/tiered-storage.md)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kforensics.cli import main
from kforensics.epoch.versions import parse_kafka_version
from kforensics.replay.report import replay_all
from kforensics.scan.broker import scan_log_dirs
from kforensics.scenario import load_scenario
from tests.conftest import ROOT, file_tree, run_generator

TIERED = ROOT / "fixtures" / "tiered"
DIRS = sorted(p for p in TIERED.iterdir() if p.is_dir())
REPLAYS = [(d, v) for d in DIRS for v in json.loads((d / "scenario.json").read_text())["expected"]]
SCANS = [(d, b) for d in DIRS for b in json.loads((d / "scenario.json").read_text())["tiered"]["scan"]]
TIERED_CODES = {"REMOTE_LOCAL_GAP", "REMOTE_SEGMENT_COPYING", "REMOTE_SEGMENT_DELETING",
                "REMOTE_METADATA_NOT_APPLIED", "TIERED_METADATA_ABSENT", "EPOCH_MISSING_FROM_LOG",
                "EPOCH_START_DIFFERS"}


def _replay(sdir, version, **kw):
    sc = load_scenario(sdir)
    report = replay_all(sc.brokers, kafka_version=parse_kafka_version(version), metadata=sc.metadata,
                        events=sc.events, topic=sc.topic, **kw)
    (p,) = report.partitions
    return sc, p


@pytest.mark.parametrize("sdir,broker", SCANS, ids=[f"{d.name}@broker-{b}" for d, b in SCANS])
def test_scan_says_where_each_tiered_log_starts_and_what_remote_storage_holds(sdir, broker):
    want = json.loads((sdir / "scenario.json").read_text())["tiered"]["scan"][broker]
    report = scan_log_dirs([sdir / f"broker-{broker}"])
    (p,) = [p for p in report.partitions if p.topic == "orders"]
    t = p.tiered.as_dict()
    assert {k: t[k] for k in ("log_start_offset", "local_log_start_offset", "remote_ranges", "gaps")} == {
        k: want[k] for k in ("log_start_offset", "local_log_start_offset", "remote_ranges", "gaps")}
    found = sorted(f.code for f in [*p.findings, *report.findings] if f.code in TIERED_CODES)
    assert found == sorted(want["findings"])  # no epoch finding: the remote prefix explains the checkpoint


@pytest.mark.parametrize("sdir,version", REPLAYS, ids=[f"{d.name}@{v}" for d, v in REPLAYS])
def test_replay_follows_kafka_over_tiered_storage(sdir, version):
    sc, p = _replay(sdir, version)
    assert p.verdict_codes() == sc.expected[version]
    want = sc.doc["tiered"]["replay"].get(version, sc.doc["tiered"]["replay"]["latest"])
    for b, path in want.get("follower_path", {}).items():
        (r,) = [r for r in p.replicas if r.broker_id == int(b)]
        assert [d.path for d in r.decisions] == [path]
    got = [{"start_offset": s["start_offset"], "end_offset": s["end_offset"], "cleanup": s["cleanup"]}
           for r in p.replicas for v in r.verdicts if v.code == "REMOTE_SEGMENTS_UNREACHABLE"
           for s in v.facts["segments"]]
    assert got == want["unreachable"]
    assert sc.doc["sources"] and sc.doc["derivation"]


def test_what_the_follower_truncated_below_the_local_start_is_no_loss():
    _, p = _replay(TIERED / "tiered-follower-below-local-start", "latest")
    (f,) = [r for r in p.replicas if r.broker_id == 2]
    assert f.log_end_offset_after == 25 and f.epoch_cache == [(0, 0), (1, 10)]
    assert "nothing lost" in f.decisions[0].reasoning[0]


def test_what_if_says_what_each_leader_leaves_in_remote_storage():
    _, p = _replay(TIERED / "tiered-unclean-orphans-remote", "latest", what_if=True)
    by = {w.leader: w.lost_records for w in p.what_if}
    assert by[2]["REMOTE_SEGMENTS_UNREACHABLE"] == 10 and "REMOTE_SEGMENTS_UNREACHABLE" not in by[1]
    text = CliRunner().invoke(main, ["replay", "--scenario", str(TIERED / "tiered-unclean-orphans-remote"),
                                     "--topic", "orders", "--what-if"]).stdout
    assert "what if broker 2 leads: 5 LOSS_COMMITTED, 10 REMOTE_SEGMENTS_UNREACHABLE" in text
    assert "left in remote storage, unreferenced" in text


def test_scan_text_json_and_parquet_carry_the_tiered_facts():
    import jsonschema

    d = TIERED / "tiered-remote-local-gap" / "broker-1"
    text = CliRunner().invoke(main, ["scan", str(d)]).stdout
    assert "orders-0: log start 0, local log start 20, remote 0-9 (1 copying, 1 deleting); gap 10-19" in text
    doc = json.loads(CliRunner().invoke(main, ["scan", str(d), "--format", "json"]).stdout)
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "schemas" / "scan.schema.json").read_text()))
    (part,) = [p for p in doc["partitions"] if p["topic"] == "orders"]
    assert part["tiered"]["gaps"] == [[10, 19]]
    from kforensics.tables.report_tables import partitions_table

    rows = partitions_table(scan_log_dirs([d])).to_pylist()
    (row,) = [r for r in rows if r["topic"] == "orders"]
    assert json.loads(row["tiered"])["remote_ranges"] == [[0, 9]]
    assert all(r["tiered"] is None for r in rows if r["topic"] != "orders")


def test_tiered_fixtures_regenerate_byte_for_byte(tmp_path):
    run_generator(ROOT / "fixtures" / "make_tiered.py", tmp_path)
    assert file_tree(tmp_path) == file_tree(TIERED)


def test_a_topic_configured_for_remote_storage_is_tiered_without_remote_metadata():
    from kforensics.kraft.timeline import read_cluster_state
    from kforensics.tiered.coverage import apply_to_scans, tiered_topics

    sc = load_scenario(TIERED / "tiered-follower-below-local-start")
    topics = tiered_topics(read_cluster_state(sc.metadata))  # the ConfigRecord remote.storage.enable=true
    assert list(topics) == ["orders"]
    report = scan_log_dirs([sc.brokers[1][0]])
    (p,) = [p for p in report.partitions if p.topic == "orders"]
    apply_to_scans([p], {}, None, topics)  # as if no __remote_log_metadata were in the evidence
    assert (p.tiered.metadata_read, p.tiered.local_log_start_offset) == (False, 20)
    assert "TIERED_METADATA_ABSENT" in [f.code for f in p.findings]


def test_replay_json_with_unreachable_remote_segments_meets_its_schema():
    import jsonschema

    r = CliRunner().invoke(main, ["replay", "--scenario", str(TIERED / "tiered-unclean-orphans-remote"),
                                  "--format", "json", "--what-if"])
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "schemas" / "replay.schema.json").read_text()))
    (v,) = [v for p in doc["partitions"] for rp in p["replicas"] for v in rp["verdicts"]
            if v["code"] == "REMOTE_SEGMENTS_UNREACHABLE"]
    assert v["offsets"] == [[10, 19]] and v["facts"]["segments"][0]["leader_epochs"] == [[1, 10]]
    assert v["facts"]["acknowledged"]["acked-all"] == 10  # below the committed bound 25, no batch to read
