"""Consumer impact of a replay: the scenarios' hand-derived expectations, the consumer's fetch-position rules as
properties, the classification of groups against lost and forked ranges, findings, the consumer_impact table."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kforensics.consumers.committed_offsets import CommittedOffset
from kforensics.consumers.fetch_position import FETCHES, OFFSET_OUT_OF_RANGE, RESET_UNDEFINED_EPOCH, \
    TRUNCATION_DETECTED, broker_validates, next_position
from kforensics.consumers.impact import committed_offsets_of, consumer_impact, impact_findings, partition_impact
from kforensics.epoch.cache import LeaderEpochCache
from kforensics.replay.report import replay_all
from kforensics.scenario import load_scenario
from kforensics.serialize import dumps, to_jsonable
from kforensics.epoch.versions import parse_kafka_version
from tests.conftest import ROOT

SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if (p / "scenario.json").exists() and
                   "expected_impact" in json.loads((p / "scenario.json").read_text()))
CASES = [(s, v) for s in SCENARIOS for v in json.loads((s / "scenario.json").read_text())["expected_impact"]]
KEYS = ("group", "committed_offset", "committed_leader_epoch", "consumed_lost", "consumed_lost_records", "outcome",
        "next_position", "skipped", "reread")


def test_the_required_scenarios_exist():
    names = {s.name for s in SCENARIOS}
    assert {"consumer-group-resets", "consumer-group-skips-forked-records", "transaction-marker-lost"} <= names
    for s in SCENARIOS:
        doc = json.loads((s / "scenario.json").read_text())
        assert any("@" in src for src in doc["sources"]) and doc["derivation"]  # Kafka functions at tags


@pytest.mark.parametrize("sdir,version", CASES, ids=[f"{s.name}@{v}" for s, v in CASES])
def test_scenario_impact_matches_its_hand_derivation(sdir, version):
    sc = load_scenario(sdir)
    report = replay_all(sc.brokers, kafka_version=parse_kafka_version(version), events=sc.events or None, metadata=sc.metadata)
    (p,) = [p for p in report.partitions if p.topic == sc.topic]
    assert p.verdict_codes() == sc.expected[version]
    committed = committed_offsets_of(report, sc.log_dirs)
    impacts = consumer_impact(report, committed)
    got = [{k: to_jsonable(getattr(i, k)) for k in KEYS} for i in impacts]
    assert got == sc.doc["expected_impact"][version]
    for i in impacts:  # where the commit was read, and what the new leader is
        assert i.commit_file.endswith(".log") and "__consumer_offsets-" in i.commit_file
        assert i.leader == p.leader and i.log_end_offset == next(r for r in p.replicas
                                                                 if r.broker_id == p.leader).log_end_offset_after
        assert i.consumed_lost_records == sum(b - a + 1 for a, b in i.consumed_lost)  # one record per offset here
    json.loads(dumps(impacts))


def test_impact_findings_and_table():
    from kforensics.tables.impact_tables import SCHEMAS, committed_offsets_table, consumer_impact_table

    sc = load_scenario(ROOT / "fixtures" / "scenarios" / "consumer-group-skips-forked-records")
    report = replay_all(sc.brokers, events=sc.events, metadata=sc.metadata, digests=True)
    committed = committed_offsets_of(report, sc.log_dirs)
    impacts = consumer_impact(report, committed)
    codes = sorted((f.code, f.facts["group"]) for f in impact_findings(impacts))
    assert codes == [("CONSUMED_RECORDS_LOST", "audit"), ("CONSUMED_RECORDS_LOST", "billing"),
                     ("GROUP_SKIPS_RECORDS", "billing"), ("GROUP_TRUNCATION_DETECTED", "audit")]
    # the lost records' digests, read back from broker 1's segment: those the groups consumed (3-4)
    assert [d.offset for d in impacts[0].digests] == [3, 4]
    t = consumer_impact_table(impacts, "c")
    assert t.schema == SCHEMAS["consumer_impact"] and t.num_rows == 2
    row = t.to_pylist()[1]
    assert (row["group"], row["outcome"], json.loads(row["skipped"])) == ("billing", "FETCHES", [[3, 4]])
    assert json.loads(row["sources"])[0]["verdict"] == "LOSS_COMMITTED"
    co = committed_offsets_table(committed, {"cluster": "c"})
    assert co.schema == SCHEMAS["committed_offsets"] and sorted(co.column("group").to_pylist()) == ["audit", "billing"]


# ---------------------------------------------------------------------------- the consumer's rules
CACHES = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), max_size=4).map(
    lambda steps: [(sum(e for e, _ in steps[:i + 1]) + i, sum(s for _, s in steps[:i + 1])) for i in
                   range(len(steps))])


@settings(max_examples=200, deadline=None)
@given(cache=CACHES, start=st.integers(0, 5), extra=st.integers(0, 20), committed=st.integers(0, 30),
       epoch=st.one_of(st.none(), st.integers(0, 12)), validates=st.booleans())
def test_next_position_follows_kafkas_rules(cache, start, extra, committed, epoch, validates):
    end = max(start, cache[-1][1] if cache else 0) + extra
    lc = LeaderEpochCache(cache, mode="latest")
    n = next_position(committed, epoch, log_start=start, log_end=end, leader_cache=lc, validates=validates)
    if epoch is None or not validates:
        assert not n.validated
        assert n.outcome == (FETCHES if start <= committed <= end else OFFSET_OUT_OF_RANGE)
        assert n.position == (committed if n.outcome == FETCHES else None)
        return
    answer = lc.end_offset_for(epoch, end)
    assert n.validated and n.epoch_answer == (answer.epoch, answer.end_offset)
    if answer.end_offset < 0 or answer.epoch < 0:
        assert n.outcome == RESET_UNDEFINED_EPOCH and n.position is None
    elif answer.end_offset < committed:
        assert n.outcome == TRUNCATION_DETECTED and n.position == answer.end_offset <= end
    else:
        assert n.outcome == (FETCHES if start <= committed <= end else OFFSET_OUT_OF_RANGE)
    if n.outcome == FETCHES:
        assert start <= n.position <= end


def test_brokers_answer_consumer_validation_from_2_3():
    assert [broker_validates(parse_kafka_version(v)) for v in ("0.10", "2.0.1", "2.2", "2.3", "2.8", "latest")] == [
        False, False, False, True, True, True]


# ---------------------------------------------------------------------------- classification on a replay
@dataclass
class _Run:
    start: int
    end: int
    epoch: int


@dataclass
class _Verdict:
    code: str
    offsets: list
    records: int = 0
    batches: object = None
    digests: list | None = None


@dataclass
class _Outcome:
    broker_id: int
    verdicts: list
    log_end_offset_after: int = 0
    epoch_cache: list = field(default_factory=list)
    log_after: list = field(default_factory=list)
    role: str = "follower"


@dataclass
class _Replay:
    topic: str
    partition: int
    kafka_version: str
    leader: int
    leader_epoch: int
    replicas: list


def _commit(offset: int, epoch: int | None) -> CommittedOffset:
    return CommittedOffset("g", "t", 0, offset, epoch, "", 0)


@settings(max_examples=300, deadline=None)
@given(lost_first=st.integers(0, 20), lost_len=st.integers(0, 10), leader_end=st.integers(0, 40),
       committed=st.integers(0, 45), code=st.sampled_from(["LOSS_COMMITTED", "DISCARD_UNCOMMITTED", "FORK",
                                                           "LOST_TO_RECOVERY", "POSSIBLY_COMMITTED"]),
       epoch=st.one_of(st.none(), st.just(0)))
def test_groups_are_classified_against_lost_ranges_and_the_new_log_end(lost_first, lost_len, leader_end, committed,
                                                                       code, epoch):
    lost = (lost_first, lost_first + lost_len)
    leader = _Outcome(2, [_Verdict("OK", [])], leader_end, [(0, 0), (1, min(lost_first, leader_end))],
                      [_Run(0, leader_end - 1, 0)] if leader_end else [], "leader")
    follower = _Outcome(1, [_Verdict(code, [lost])])
    p = _Replay("t", 0, parse_kafka_version("latest"), 2, 1, [follower, leader])
    rows = partition_impact(p, [_commit(committed, epoch)])
    affected = lost[0] < committed or committed > leader_end
    assert len(rows) == int(affected)
    if not rows:
        return
    (i,) = rows
    consumed = [(lost[0], min(lost[1], committed - 1))] if lost[0] < committed else []
    assert i.consumed_lost == consumed and i.consumed_lost_records == sum(b - a + 1 for a, b in consumed)
    replaced = [(a, min(b, leader_end - 1)) for a, b in consumed if a < leader_end]
    if i.outcome == FETCHES:
        assert i.next_position == committed <= leader_end
        assert i.skipped == replaced  # every replaced record below the commit is never delivered
    elif i.outcome == TRUNCATION_DETECTED:
        assert epoch == 0 and i.next_position < committed
        assert i.skipped == [(a, min(b, i.next_position - 1)) for a, b in replaced if a < i.next_position]
        assert all(a >= i.next_position for a, _ in i.reread)
    else:
        assert i.outcome == OFFSET_OUT_OF_RANGE and committed > leader_end and i.next_position is None
    assert all(a <= b for a, b in i.skipped + i.reread)
