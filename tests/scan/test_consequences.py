"""What the next start costs, in an operator's terms: offsets, records, committed or not against the HW and the log
start, on the table, in the finding and its facts (JSON and Parquet carry the facts)."""

from __future__ import annotations

import io

import pytest

from tests.conftest import ROOT
from kforensics.checks.watermarks import check_recovery, cost_text, recovery_cost
from kforensics.cli.scan_text import MAX_EPOCHS, next_start, render_scan_text, rows
from kforensics.recovery.plan import RecoveryPlan
from kforensics.scan.broker import scan_log_dirs
from kforensics.scan.model import BrokerIdentity, PartitionScan, ScanReport

FIXTURES = ROOT / "fixtures" / "brokers"


def _row(report, name):
    (row,) = [r for r in rows(report, set()) if r[0] == name]
    return dict(zip(("partition", "segs", "batches", "log start", "LEO", "HW", "uncommitted", "at next start",
                     "epochs", "findings"), row))


def test_the_table_says_which_offsets_go_how_many_records_and_whether_committed():
    # HEAD: torn-0 read "truncated to 6: -0 records", orders-0 "truncated to 12: -12 records (12 committed)",
    # tail-0 "cut at byte 214 (torn bytes only)" (it is 2048 zero bytes)
    report = scan_log_dirs([FIXTURES / "damaged"])
    assert _row(report, "torn-0")["at next start"] == "loses 6..7 (torn batch): all committed (HW 9)"
    assert _row(report, "orders-0")["at next start"] == "loses 12..23 (12 records): all committed (HW 24)"
    assert _row(report, "zeros-0")["at next start"] == "loses 2..3 (2 records): all committed (HW 4)"
    assert _row(report, "tail-0")["at next start"] == "cuts 2048 bytes, no record lost"
    assert _row(report, "legacy-0")["at next start"] == "recovered, no loss"
    assert _row(report, "torn-0")["uncommitted"] == "0"  # HW 9 above LEO 6: HW_ABOVE_LEO says so, never "-3"


def _plan(first, last, records, committed, lost_bytes=100):
    return RecoveryPlan(recovers=True, truncate_segment="/d/t-0/00000000000000000000.log", truncate_position=50,
                        log_end_offset=first, lost_first_offset=first, lost_last_offset=last, lost_records=records,
                        lost_committed_records=committed, lost_bytes=lost_bytes)


@pytest.mark.parametrize("plan,hw,log_start,text", [
    (_plan(10, 19, 10, 5), 15, 0, "loses 10..19 (10 records): 10..14 committed, 15..19 uncommitted (HW 15)"),
    (_plan(15, 19, 5, 0), 15, 0, "loses 15..19 (5 records): all uncommitted (HW 15)"),
    (_plan(15, 15, 1, 0), 15, 0, "loses 15 (1 record): all uncommitted (HW 15)"),
    (_plan(10, 19, 10, 10), 20, 12, "loses 10..19 (10 records): 10..11 below log start 12, 12..19 committed (HW 20)"),
    (_plan(10, 19, 10, 0), None, 0, "loses 10..19 (10 records), HW unknown"),
    (_plan(10, 13, 0, 0), 14, 0, "loses 10..13 (no readable record): all committed (HW 14)"),
])
def test_cost_text_splits_the_offsets_at_the_log_start_and_the_high_watermark(plan, hw, log_start, text):
    assert cost_text(recovery_cost(plan, high_watermark=hw, log_start_offset=log_start)) == text


def test_the_finding_says_it_in_offsets_and_records_and_carries_them_as_facts():
    (f,) = check_recovery(_plan(10, 19, 10, 5), high_watermark=15)
    assert "offsets 10..19 go (10 records)" in f.message
    assert "10..14 below the high watermark 15: 5 records of committed data lost at the next start" in f.message
    assert "15..19 at or above the high watermark 15 (uncommitted)" in f.message
    assert f.facts["lost_committed_offsets"] == (10, 14) and f.facts["lost_uncommitted_offsets"] == (15, 19)
    assert f.facts["lost_records"] == 10 and f.facts["lost_committed_records"] == 5
    assert f.facts["lost_uncommitted_records"] == 5 and f.facts["high_watermark"] == 15
    assert str(f.severity) == "critical"
    (f,) = check_recovery(_plan(10, 19, 10, 0), high_watermark=10)
    assert "10..19 at or above the high watermark 10 (uncommitted)" in f.message and str(f.severity) == "high"


def test_a_torn_batch_cut_by_recovery_is_named_with_its_offsets():
    # HEAD: "offsets 6..7 (0 readable records)" and nothing on the HW: the HW 9 makes them committed offsets
    report = scan_log_dirs([FIXTURES / "damaged"])
    (f,) = [f for f in report.all_findings() if f.code == "RECOVERY_WOULD_TRUNCATE" and "torn-0" in f.file]
    assert "offsets 6..7 go, in a torn final batch whose bytes are not all in the file (no readable record)" in f.message
    assert "6..7 below the high watermark 9: committed offsets whose records this replica no longer holds" in f.message
    assert f.facts["lost_committed_offsets"] == (6, 7) and f.facts["lost_uncommitted_offsets"] is None


def test_json_and_parquet_carry_the_cost(tmp_path):
    import json

    import pandas as pd
    from click.testing import CliRunner

    from kforensics.cli import main

    r = CliRunner().invoke(main, ["scan", str(FIXTURES / "damaged"), "--format", "json", "--out", str(tmp_path / "o")])
    doc = json.loads(r.stdout)
    (p,) = [p for p in doc["partitions"] if p["dir_name"] == "orders-0"]
    assert (p["recovery"]["lost_first_offset"], p["recovery"]["lost_last_offset"]) == (12, 23)
    assert p["recovery"]["lost_records"] == p["recovery"]["lost_committed_records"] == 12
    (f,) = [f for f in doc["findings"] if f["code"] == "RECOVERY_WOULD_TRUNCATE" and "orders-0" in f["file"]]
    assert f["facts"]["lost_committed_offsets"] == [12, 23] and f["facts"]["high_watermark"] == 24
    parts = pd.read_parquet(tmp_path / "o" / "partitions.parquet")
    row = parts[parts.dir_name == "orders-0"].iloc[0]
    assert (row.recovery_lost_first_offset, row.recovery_lost_last_offset, row.recovery_lost_records,
            row.recovery_lost_committed_records, row.high_watermark, row.log_start_offset) == (12, 23, 12, 12, 24, 0)
    findings = pd.read_parquet(tmp_path / "o" / "findings.parquet")
    facts = [json.loads(x) for x, c in zip(findings.facts, findings.code) if c == "RECOVERY_WOULD_TRUNCATE"]
    assert {tuple(x["lost_committed_offsets"]) for x in facts if x["lost_committed_offsets"]} >= {(12, 23), (6, 7)}


def _partition(**kw) -> PartitionScan:
    base = dict(log_dir="/d", dir_name="t-0", topic="t", partition=0, log_start_offset=0, log_end_offset=12,
                high_watermark=24, batch_count=3)
    return PartitionScan(**{**base, **kw})


def test_an_unread_segment_leaves_the_log_end_and_the_uncommitted_offsets_unknown():
    # HEAD: LEO "12?" beside uncommitted "0", computed from the log end the unread segment hides
    report = ScanReport(BrokerIdentity(node_id=1, log_dirs=["/d"]), [_partition(complete=False)], [], [])
    row = _row(report, "t-0")
    assert (row["LEO"], row["uncommitted"]) == ("12?", "?")


def test_the_epochs_column_marks_entries_left_out():
    # HEAD: the last four entries and nothing to say there were more
    cache = [(e, e * 10) for e in range(6)]
    report = ScanReport(BrokerIdentity(node_id=1, log_dirs=["/d"]), [_partition(epoch_cache_written=cache)], [], [])
    assert _row(report, "t-0")["epochs"] == "… " + " ".join(f"{e}:{o}" for e, o in cache[-MAX_EPOCHS:])
    report.partitions[0].epoch_cache_written = cache[:MAX_EPOCHS]
    assert _row(report, "t-0")["epochs"] == " ".join(f"{e}:{o}" for e, o in cache[:MAX_EPOCHS])
    out = io.StringIO()
    render_scan_text(report, out)
    assert "0:0 1:10 2:20 3:30" in out.getvalue()


@pytest.mark.parametrize("plan,text", [
    (RecoveryPlan(note="-delete directory"), "deleted"),
    (RecoveryPlan(clean_shutdown=True, damage_kept="/d/t-0/0.log"), "damage kept (clean shutdown)"),
    (RecoveryPlan(recovers=True, damage_kept="/d/t-0/0.log"), "damage kept (below the recovery point)"),
    (RecoveryPlan(clean_shutdown=True, load_fails=True, damage_kept="/d/t-0/0.log"), "log does not load"),
    (RecoveryPlan(epoch_checkpoint_unreadable=True), "log does not load"),
    (RecoveryPlan(rebuilds_indexes=["/d/t-0/0.log"]), "rebuilds 1 index(es)"),
    (RecoveryPlan(recovers=True), "recovered, no loss"),
    (RecoveryPlan(), "-"),
])
def test_the_next_start_cell_for_each_plan_without_a_cut(plan, text):
    assert next_start(_partition(recovery=plan)) == text


def test_a_recovery_point_above_the_log_end_says_what_is_known():
    # HEAD: "recovery point 50 is above the log end offset 2: offsets 2..49 were flushed and are gone"
    report = scan_log_dirs([FIXTURES / "damaged"])
    (f,) = [f for f in report.all_findings() if f.code == "RECOVERY_POINT_ABOVE_LEO"]
    assert "gone" not in f.message
    assert ("the checkpoint says offsets below 50 were flushed to disk, but this log holds no offset from 2 on "
            "(truncated after the checkpoint was written, or lost from the files since); Kafka lowers the recovery "
            "point to 2 at the next start") in f.message


@pytest.mark.parametrize("make", ["fifo", "dangling link", "directory"])
def test_a_segment_that_cannot_be_opened_leaves_the_log_end_unknown(tmp_path, make):
    # HEAD: the segment was left out, the log "ended" at 12, and HW_ABOVE_LEO, RECOVERY_POINT_ABOVE_LEO ("offsets
    # 12..23 were flushed and are gone") and INDEX_WITHOUT_LOG ("segment .log is missing") followed from that
    import os
    import shutil

    d = tmp_path / "b"
    shutil.copytree(FIXTURES / "healthy", d)
    seg = d / "orders-0" / "00000000000000000012.log"
    seg.unlink()
    {"fifo": lambda: os.mkfifo(seg), "dangling link": lambda: seg.symlink_to(tmp_path / "nosuch"),
     "directory": seg.mkdir}[make]()
    report = scan_log_dirs([d])
    row = _row(report, "orders-0")
    assert (row["LEO"], row["uncommitted"]) == ("12?", "?")
    codes = {f.code for f in report.all_findings()}
    assert not codes & {"HW_ABOVE_LEO", "RECOVERY_POINT_ABOVE_LEO", "INDEX_WITHOUT_LOG"}, codes
