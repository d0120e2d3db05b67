"""``kforensics report`` over replay inputs: every section in the HTML, the Markdown's numbers are the JSON's,
the same bytes twice (but the generation line), outputs never in evidence, evidence text escaped."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from kforensics.plots_fleet import merge_ranges, union_count
from kforensics.report.from_replay import BUILDERS
from kforensics.severity import Severity
from kforensics.verdict_rules import IMPACT
from tests.conftest import REALDATA, ROOT, need_shared
from tests.report.helpers import md_tables, parse_html, replay_json, report, without_generation_line

SCENARIOS = ["unclean-leader-election", "transaction-marker-lost", "consumer-group-skips-forked-records",
             "damaged-batches-leader-zero-unclean"]
SECTION_IDS = ["summary", "evidence", "elections", "verdicts", "forks", "consumers", "transactions", "salvage",
               "restart", "findings"]
HIAGE = REALDATA / "hiage__kafka-raft__c5f680e" / "data"


def ranges(rs) -> str:
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in rs) if rs else "-"


@pytest.fixture(scope="module")
def scenario_reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    got = {}
    for name in SCENARIOS:
        src = f"fixtures/scenarios/{name}"
        html, md, r = report(out, name, "--scenario", src)
        got[name] = (html, md, r, replay_json("--scenario", src))
    return got


def check_numbers(md: str, doc: dict) -> None:
    """Every number the Markdown shows of verdicts, losses, consumers and findings is the JSON's."""
    tables = md_tables(md)
    rows = tables.get("Every verdict that is not OK", [])
    def acked(v: dict) -> str:  # what producers were told, as the replay's facts say
        return ", ".join(f"{n} {k}" for k, n in (v["facts"].get("acknowledged") or {}).items() if n) or "-"

    want = [(f"{p['topic']}-{p['partition']}", str(r["broker_id"]), v["code"], str(v["records"]),
             ranges(v["offsets"]), acked(v))
            for p in doc["partitions"] for r in p["replicas"] for v in r["verdicts"] if v["code"] != "OK"]
    shown = [(x["partition"], x["broker"], x["verdict"], x["records"], x["offsets"], x["acknowledged"])
             for x in rows]
    assert sorted(shown) == sorted(want)
    parts = {x["partition"]: x for x in next(v for k, v in tables.items() if k.startswith("Partitions, the worst"))}
    for p in doc["partitions"]:
        spans = merge_ranges([o for r in p["replicas"] for v in r["verdicts"] if v["code"] in IMPACT
                              for o in v["offsets"] or []])
        assert parts[f"{p['topic']}-{p['partition']}"]["records lost"] == str(union_count(spans))
    groups = tables.get("Consumer groups affected", [])
    assert sorted((g["partition"], g["group"], g["records"]) for g in groups) == sorted(
        (f"{i['topic']}-{i['partition']}", i["group"], str(i["consumed_lost_records"]))
        for i in doc["consumer_impact"])
    findings = doc["findings"] + [f for p in doc["partitions"] for f in p["findings"]]
    counts = Counter(f["severity"] for f in findings)
    by_sev = {x["severity"]: x["findings"] for x in tables["Findings by severity"]}
    assert by_sev == {str(s): str(counts.get(str(s), 0)) for s in Severity.worst_first()}
    listed = tables.get("Findings", [])
    assert sorted((f["code"], f["byte"]) for f in listed) == sorted(
        (f["code"], "-" if f["position"] is None else str(f["position"])) for f in findings)


@pytest.mark.parametrize("name", SCENARIOS)
def test_html_has_every_section_and_nothing_remote(scenario_reports, name):
    html, _md, _r, _doc = scenario_reports[name]
    p = parse_html(html)
    assert p.sections == SECTION_IDS == [b.__name__.removesuffix("_section") for b in BUILDERS]
    assert not p.remote, p.remote  # self-contained: no script, stylesheet, image or link outside the page
    assert "<svg" in html


@pytest.mark.parametrize("name", SCENARIOS)
def test_markdown_numbers_are_the_replay_json(scenario_reports, name):
    _html, md, r, doc = scenario_reports[name]
    check_numbers(md, doc)
    assert r.returncode == 1  # every scenario here loses records: report exits as replay does


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_salvage_section_is_what_salvage_exports(tmp_path, scenario_reports, name):
    import json
    import subprocess
    import sys

    _html, md, _r, _doc = scenario_reports[name]
    got = subprocess.run([sys.executable, "-m", "kforensics", "salvage", "--scenario", f"fixtures/scenarios/{name}",
                          "--out", str(tmp_path / "salvage"), "--format", "json"], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert got.returncode in (0, 1), got.stderr
    doc = json.loads(got.stdout)
    rows = md_tables(md).get("Salvage: records the restart destroys that no replica keeps", [])
    assert sorted((r["topic"], r["partition"], r["cause"], r["records"], r["bytes"]) for r in rows) == sorted(
        (x["topic"], str(x["partition"]), x["cause"], str(x["records"]), str(x["bytes"]))
        for x in doc["summary"]["rows"] if x["records"])
    # every election is said with how it was reached
    elected = md_tables(md)["Who leads after the restart (controller-record, predicted by the controller's rules, "
                            "offline, given or guessed; -1: nobody)"]
    assert {e["how"] for e in elected} <= {"controller-record", "given", "guessed", "offline"} | {
        e["how"] for e in elected if e["how"].startswith("predicted")}


def test_same_bytes_twice_but_the_generation_line(tmp_path, scenario_reports):
    html, md, _r, _doc = scenario_reports["unclean-leader-election"]
    html2, md2, _ = report(tmp_path, "again", "--scenario", "fixtures/scenarios/unclean-leader-election")
    assert without_generation_line(html) == without_generation_line(html2)
    assert without_generation_line(md) == without_generation_line(md2)


def test_an_output_in_on_or_above_evidence_is_refused(tmp_path):
    from tests.report.helpers import kforensics

    ev = tmp_path / "evidence"
    shutil.copytree(ROOT / "fixtures/scenarios/unclean-leader-election", ev)
    before = sorted(p.relative_to(ev) for p in ev.rglob("*"))
    for args in (["--out", str(ev / "broker-1" / "r.html")], ["--markdown", str(ev / "r.md")],
                 ["--out", str(ev / "broker-1" / "meta.properties")], ["--out", str(tmp_path)]):
        r = kforensics("report", "--scenario", str(ev), *args)
        assert r.returncode == 2, (args, r.stderr)
        # above the evidence is a directory: click refuses a directory for a file output before we look
        assert "evidence" in r.stderr or "is a directory" in r.stderr
    assert sorted(p.relative_to(ev) for p in ev.rglob("*")) == before  # nothing written, nothing changed
    r = kforensics("report", "--tables", str(ev), "--out", str(ev / "x.html"))
    assert r.returncode == 2


def test_evidence_names_are_escaped(tmp_path):
    src = ROOT / "fixtures/scenarios/unclean-leader-election"
    for b in ("broker-1", "broker-2", "broker-3"):
        shutil.copytree(src / b, tmp_path / b)
        (tmp_path / b / "orders-0").rename(tmp_path / b / "<b>evil&'x-0")
    html, md, _r = report(tmp_path, "evil", *(str(tmp_path / b) for b in ("broker-1", "broker-2", "broker-3")))
    assert "<b>evil" not in html and "&lt;b&gt;evil&amp;&#x27;x-0" in html
    assert "\\<b\\>evil" in md


def test_a_real_three_broker_kraft_cluster(tmp_path):
    h = need_shared(HIAGE)
    inputs = [str(h / d) for d in ("kafka1", "kafka2", "kafka3")]
    html, md, _r = report(tmp_path, "hiage", *inputs)
    p = parse_html(html)
    assert p.sections == SECTION_IDS and not p.remote
    doc = replay_json(*inputs)
    check_numbers(md, doc)
    files = md_tables(md)
    listed = next(v for k, v in files.items() if k.startswith("Input files"))
    assert len(listed) == sum(1 for d in inputs for f in Path(d).rglob("*") if f.is_file())
    assert all(len(x["SHA-256"]) == 64 for x in listed)
