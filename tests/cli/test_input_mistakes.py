"""Mistakes in what is pointed at: each is a usage error (exit 2) with a message naming what is wrong, or a
finding (issue #13, "Mistakes in what is pointed at pass silently").  Replicas of different clusters and a broker id
given twice: tests/replay/test_replay.py::test_brokers_of_different_clusters_or_given_twice_are_usage_errors."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from kforensics.cli import main

BROKERS = ROOT / "fixtures" / "brokers"
SCENARIOS = ROOT / "fixtures" / "scenarios"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def usage_error(r, *words):
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    for w in words:
        assert w in r.output, (w, r.output)


def test_scan_of_the_parent_of_several_brokers_log_dirs_names_them():
    # HEAD (issue): exit 0 with one LOW UNKNOWN_FILE
    r = run("scan", SCENARIOS / "healthy-3-brokers")
    usage_error(r, "holds the log dirs of several brokers", "broker-1 (broker 1", "broker-2 (broker 2",
                "broker-3 (broker 3")


def test_scan_of_the_parent_of_one_brokers_log_dir_searches_it(tmp_path):
    shutil.copytree(BROKERS / "healthy", tmp_path / "kafka-logs")
    r = run("scan", tmp_path, "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["broker"]["log_dirs"] == [str(tmp_path / "kafka-logs")] and len(doc["partitions"]) == 2


def test_scan_of_a_directory_holding_no_log_dir(tmp_path):
    (tmp_path / "notes").mkdir()
    usage_error(run("scan", tmp_path), "holds no Kafka log dir")


def test_a_log_dir_given_twice_is_scanned_once_and_said(tmp_path):
    # HEAD (issue): the rows doubled, "no findings"
    r = run("scan", BROKERS / "healthy", str(BROKERS / "healthy") + "/", "--format", "json")
    doc = json.loads(r.stdout)
    assert len(doc["partitions"]) == 2
    assert [f["code"] for f in doc["findings"]] == ["DUPLICATE_LOG_DIR"]


def test_one_partition_in_two_jbod_dirs_is_a_finding_that_fails_the_scan(tmp_path):
    # Kafka refuses to start with a partition in two log dirs
    for d in ("a", "b"):
        shutil.copytree(BROKERS / "healthy", tmp_path / d)
    r = run("scan", tmp_path / "a", tmp_path / "b")
    assert r.exit_code == 1
    assert "HIGH DUPLICATE_PARTITION" in r.stdout and "Kafka refuses to start" in r.stdout


@pytest.mark.parametrize("command", [
    ["scan", BROKERS / "healthy"],
    ["replay", "--scenario", SCENARIOS / "healthy-3-brokers"],
])
def test_an_unknown_kafka_version_is_a_usage_error(command):
    # HEAD (issue): scan --kafka-version banana printed a traceback
    usage_error(run(*command, "--kafka-version", "banana"), "--kafka-version", "banana", "known: 0.8, 0.9")


@pytest.mark.parametrize("command", [
    ["scan", BROKERS / "healthy"],
    ["replay", "--scenario", SCENARIOS / "healthy-3-brokers"],
])
def test_a_version_kafka_never_released_is_refused_not_modelled_as_the_newest(command):
    # before: "--kafka-version 9.9" was accepted and replayed with the newest rules
    usage_error(run(*command, "--kafka-version", "9.9"), "--kafka-version", "unknown Kafka version '9.9'", "4.0")


def test_scan_of_a_topic_the_log_dirs_do_not_hold():
    # HEAD: an empty table, "0 partition(s)", exit 0
    usage_error(run("scan", BROKERS / "healthy", "--topic", "nosuch", "--topic", "orders"),
                "--topic", "'nosuch'", "topics: orders, payments.v1-events")
    assert run("scan", BROKERS / "healthy", "--topic", "orders").exit_code == 0


def test_scan_names_the_option_whose_severity_is_wrong():
    # HEAD: a wrong --min-severity was reported as "Invalid value for --fail-on"
    usage_error(run("scan", BROKERS / "healthy", "--min-severity", "bad"), "--min-severity", "'bad'")
    usage_error(run("scan", BROKERS / "healthy", "--fail-on", "bad"), "--fail-on")


@pytest.mark.parametrize("args,words", [
    (["--leader", "9"], ["--leader 9 is not one of the brokers given (1, 2, 3)"]),
    (["--topic", "nosuch"], ["no partition of topic 'nosuch'", "topics: orders"]),
    (["--partition", "99"], ["no partition 99"]),
])
def test_replay_of_a_leader_topic_or_partition_that_is_not_there(args, words):
    # HEAD (issue): "0 partition(s)", exit 0
    usage_error(run("replay", "--scenario", SCENARIOS / "healthy-3-brokers", *args), *words)


@pytest.mark.parametrize("command", [("replay",), ("salvage", "--out", "OUT"), ("report", "--out", "OUT/r.html")])
def test_a_scenario_whose_events_name_a_broker_it_lacks(tmp_path, command):
    # before: exit 3, an internal error (KeyError: 3) from the engine applying the events
    sdir = tmp_path / "scenario"
    shutil.copytree(SCENARIOS / "unclean-leader-election", sdir)
    shutil.rmtree(sdir / "broker-3")
    r = run(*(str(c).replace("OUT", str(tmp_path / "out")) for c in command), "--scenario", sdir)
    usage_error(r, "the events name broker 3, which no log dir given is (brokers: 1, 2)")


@pytest.mark.parametrize("command", [("replay",), ("salvage", "--out", "OUT"), ("report", "--out", "OUT/r.html")])
def test_a_scenario_whose_events_name_a_broker_lacking_one_of_its_partitions(tmp_path, command):
    # before: exit 3, an internal error (KeyError: 3) from the engine applying the events to orders-1
    sdir = tmp_path / "scenario"
    shutil.copytree(SCENARIOS / "unclean-leader-election", sdir)
    for b in (1, 2):  # a second partition, on brokers 1 and 2 only
        shutil.copytree(sdir / f"broker-{b}" / "orders-0", sdir / f"broker-{b}" / "orders-1")
    out = [str(c).replace("OUT", str(tmp_path / "out")) for c in command]
    usage_error(run(*out, "--scenario", sdir), "the events name broker 3, which holds no replica of orders-1 (its "
                                                 "replicas: 1, 2)", "take --topic and --partition")
    if command[0] != "report":  # the partition every broker the events name holds is replayed as before
        r = run(*out, "--scenario", sdir, "--topic", "orders", "--partition", "0")
        assert r.exit_code in (0, 1), r.output


def test_replay_takes_log_dirs_or_broker_ids_not_both():
    b1 = SCENARIOS / "healthy-3-brokers" / "broker-1"
    usage_error(run("replay", b1, "--broker", f"2={b1}"), "not both")
    usage_error(run("replay", "--broker", f"x={b1}"), "is not ID=DIR")
    usage_error(run("replay"), "give broker log dirs")


@pytest.mark.parametrize("args,words", [
    (["--topic", "nosuch"], ["--topic", "'nosuch'"]),
    (["--partition", "99"], ["--partition", "no partition 99"]),
])
def test_timeline_of_a_topic_or_partition_the_metadata_log_does_not_hold(args, words):
    # HEAD: timeline --partition 99 printed "0 partition(s)" and exited 0
    usage_error(run("timeline", SCENARIOS / "healthy-3-brokers" / "controller", *args), *words)


def test_timeline_of_a_dir_without_a_metadata_log():
    r = run("timeline", BROKERS / "healthy")
    assert r.exit_code == 2 and "no KRaft metadata log or snapshot" in r.output


def test_dump_of_a_directory_or_a_missing_file():
    usage_error(run("dump", BROKERS / "healthy"), "is a directory")
    usage_error(run("dump", BROKERS / "healthy" / "nosuch.log"), "does not exist")
