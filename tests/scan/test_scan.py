"""``kforensics scan``: golden outputs on the bundled brokers, the oracle logs, real brokers, evidence discipline."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from tests.conftest import file_tree, run_generator, ORACLE, REALDATA, ROOT, need_shared
from kforensics.cli import main
from kforensics.cli.json_out import document
from kforensics.scan.broker import scan_log_dirs
from kforensics.serialize import to_jsonable
from kforensics.tables.scan_tables import ScanParquet
from kforensics.findings import Severity
from kforensics.log.log_dir import find_log_dirs

FIXTURES = ROOT / "fixtures" / "brokers"
GOLDEN = Path(__file__).parents[1] / "golden"
CORRUPTION = {"CRC_MISMATCH", "TRUNCATED_BATCH", "ZERO_TAIL", "ZERO_GAP", "CORRUPT_RANGE", "IMPLAUSIBLE_SIZE",
              "TRAILING_BYTES"}


def normalised(report, root: Path) -> dict:
    """The report with paths relative to ``root`` and run-specific values removed."""
    doc = json.loads(json.dumps(document("scan", report)).replace(str(root) + "/", "").replace(str(root), "."))
    doc["broker"]["log_dirs"] = [os.path.basename(p) for p in doc["broker"]["log_dirs"]]
    doc["broker"]["clean_shutdown"] = {os.path.basename(k): v for k, v in doc["broker"]["clean_shutdown"].items()}
    doc.pop("tool")
    doc["findings"].sort(key=lambda f: (f["file"] or "", f["position"] or -1, f["code"]))
    doc["files"].sort(key=lambda f: f["path"])
    doc["partitions"].sort(key=lambda p: p["dir_name"])
    return doc


@pytest.mark.parametrize("broker", ["healthy", "damaged", "damaged-clean"])
def test_fixture_scans_match_golden_json(broker):
    doc = normalised(scan_log_dirs([FIXTURES / broker]), FIXTURES / broker)
    golden = GOLDEN / f"scan-{broker}.json"
    if os.environ.get("KFORENSICS_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    assert doc == json.loads(golden.read_text())


def test_healthy_broker_is_clean_and_damaged_broker_covers_every_damage():
    healthy = scan_log_dirs([FIXTURES / "healthy"])
    assert healthy.all_findings() == []
    assert {(p.dir_name, p.log_end_offset, p.high_watermark) for p in healthy.partitions} == {
        ("orders-0", 24, 24), ("payments.v1-events-2", 9, 9)}
    orders = next(p for p in healthy.partitions if p.topic == "orders")
    assert orders.epoch_cache_written == orders.epoch_cache_rebuilt == [(0, 0), (1, 8), (3, 16)]
    codes = {f.code for f in scan_log_dirs([FIXTURES / "damaged"]).all_findings()}
    assert codes >= {
        "CRC_MISMATCH", "TRUNCATED_BATCH", "ZERO_GAP", "ZERO_TAIL", "CORRUPT_RANGE", "HW_ABOVE_LEO",
        "RECOVERY_POINT_ABOVE_LEO", "OFFSET_NOT_INCREASING", "SEGMENT_BELOW_NAME", "LEGACY_FORMAT", "NO_HW_ENTRY",
        "LEFTOVER_FILE", "UNKNOWN_FILE", "SNAPSHOT_BEYOND_LEO", "INDEX_WITHOUT_LOG", "INDEX_POINTS_WRONG",
        "EPOCH_ENTRY_BEYOND_LEO", "CHECKPOINT_ENTRY_WITHOUT_PARTITION", "RECOVERY_WOULD_TRUNCATE",
    }
    codes = {f.code for f in scan_log_dirs([FIXTURES / "damaged-clean"]).all_findings()}
    assert codes >= {
        "CORRUPTION_NOT_RECOVERED", "EPOCH_WENT_BACKWARDS", "CHECKPOINT_COUNT_MISMATCH", "SNAPSHOT_CRC_MISMATCH",
        "HW_BELOW_LOG_START", "INDEX_MISSING", "IMPLAUSIBLE_SIZE", "TRAILING_BYTES", "NO_EPOCH_CHECKPOINT",
        "TIMEINDEX_POINTS_WRONG", "INVALID_ATTRIBUTES",
    }


def test_fixtures_regenerate_byte_for_byte(tmp_path):
    run_generator(ROOT / "fixtures" / "make_fixtures.py", tmp_path)
    assert file_tree(tmp_path) == file_tree(FIXTURES)


def test_oracle_logs_report_corruption_exactly_for_damaged_cases():
    need_shared(ORACLE)
    report = scan_log_dirs([ORACLE / "logs"])
    assert len(report.partitions) == len(list((ORACLE / "logs").iterdir()))
    damaged = {}
    for f in report.all_findings():
        if f.code in CORRUPTION:
            damaged.setdefault(Path(f.file).parent.name, set()).add(f.code)
    assert damaged == {
        "corrupt-crc-0": {"CRC_MISMATCH"},
        "truncated-tail-0": {"TRUNCATED_BATCH"},
        "zero-tail-0": {"ZERO_TAIL"},
        "zero-gap-0": {"ZERO_GAP"},
    }
    # the absent broker files are reported once, at low severity
    root = [f for f in report.findings if f.code in ("NO_META_PROPERTIES", "CHECKPOINTS_ABSENT")]
    assert len(root) == 2 and all(f.severity == Severity.LOW for f in root)
    per_partition = [f for p in report.partitions for f in p.findings
                     if f.code in ("INDEX_MISSING", "NO_EPOCH_CHECKPOINT")]
    assert all(f.severity == Severity.INFO for f in per_partition)


def real_log_dirs():
    if not REALDATA.exists():
        return []
    return [d for c in sorted(REALDATA.iterdir()) if c.is_dir() and not c.name.startswith("_") for d in find_log_dirs(c)]


@pytest.mark.parametrize("log_dir", real_log_dirs() or [None], ids=lambda d: "absent" if d is None else
                         str(d.relative_to(REALDATA)))
def test_every_real_log_dir_scans(log_dir):
    need_shared(REALDATA)
    report = scan_log_dirs([log_dir])
    dirs = [p for p in log_dir.iterdir() if p.is_dir() and "-" in p.name and p.name.rsplit("-", 1)[1].isdigit()]
    assert len(report.partitions) == len(dirs)
    assert not [f for f in report.all_findings() if f.code in CORRUPTION]  # the catalog: no corruption in real data
    # no transaction open, hanging or at odds with its .txnindex anywhere in the real data (ksql's 4 are complete)
    assert not [f for f in report.all_findings() if f.code.startswith("TXN_")]
    assert not [p for p in report.partitions if p.open_transactions]
    json.dumps(to_jsonable(report))


def test_real_anomalies_are_reported_precisely():
    need_shared(REALDATA)
    # Danielowo kafka_data: committed HWs on partitions whose .log files are empty in the snapshot
    r = scan_log_dirs([REALDATA / "Danielowo2000__BigDataTechnologies-Version-2__63c2bf1" / "kafka_data"])
    hw = {Path(f.file).name: f.facts for f in r.all_findings() if f.code == "HW_ABOVE_LEO"}
    assert hw["__consumer_offsets-27"] == {"high_watermark": 14, "log_end_offset": 0, "missing": 14}
    # ronem123: index files whose 4 MiB segment was not in the snapshot
    r = scan_log_dirs([REALDATA / "ronem123__rupia-transaction-service__5d88e97" / "kafka-logs"])
    orphans = sorted(Path(f.file).name for f in r.all_findings() if f.code == "INDEX_WITHOUT_LOG")
    assert orphans == ["00000000000000839130.index", "00000000000000839130.timeindex"]
    # cobyforrester: the compacted __consumer_offsets-21 starts at 52 inside segment 0, cleaner offset 56
    r = scan_log_dirs([REALDATA / "cobyforrester__kafka__77a7583" / "data" / "kafka"])
    p = next(p for p in r.partitions if p.dir_name == "__consumer_offsets-21")
    assert p.cleaner_offset == 56 and p.segments[0].first_offset == 52


def test_scan_of_a_read_only_copy_changes_nothing(tmp_path):
    src = tmp_path / "evidence"
    shutil.copytree(FIXTURES / "damaged", src)
    for root, dirs, files in os.walk(src):
        for f in files:
            os.chmod(os.path.join(root, f), stat.S_IRUSR | stat.S_IRGRP)
        os.chmod(root, stat.S_IRUSR | stat.S_IXUSR)

    def state():
        out = {}
        for root, dirs, files in os.walk(src):
            out[root] = (sorted(dirs), sorted(files), os.stat(root).st_mtime_ns)
            for f in files:
                p = os.path.join(root, f)
                out[p] = (hashlib.sha256(open(p, "rb").read()).hexdigest(), os.stat(p).st_mtime_ns)
        return out

    before = state()
    try:
        out = tmp_path / "out"
        r = CliRunner().invoke(main, ["scan", str(src), "--out", str(out), "--format", "json"])
        assert r.exit_code == 1, r.output
        assert state() == before
        # sha256 of every file read is in the report
        doc = json.loads(r.stdout)
        by_path = {f["path"]: f for f in doc["files"]}
        log = str(src / "torn-0" / "00000000000000000000.log")
        assert by_path[log]["sha256"] == hashlib.sha256(open(log, "rb").read()).hexdigest()
        # refusing to write into the evidence
        r = CliRunner().invoke(main, ["scan", str(src), "--out", str(src / "x")])
        assert r.exit_code == 2
    finally:
        for root, dirs, files in os.walk(src):
            os.chmod(root, stat.S_IRWXU)


def test_parquet_tables_read_back_with_pandas(tmp_path):
    out = ScanParquet(tmp_path)
    report = scan_log_dirs([FIXTURES / "damaged"], batch_sink=out.batches)
    paths = out.finish(report)
    assert set(paths) == {"partitions", "segments", "batches", "epochs", "findings", "files", "checkpoints", "transactions",
                          "committed_offsets"}
    cps = pd.read_parquet(paths["checkpoints"])
    assert ("ghost", 0, 10) in set(zip(cps.topic, cps.partition, cps.offset))
    parts = pd.read_parquet(paths["partitions"])
    assert len(parts) == len(report.partitions)
    batches = pd.read_parquet(paths["batches"])
    assert len(batches) == sum(p.batch_count for p in report.partitions)
    assert (~batches["crc_valid"]).sum() == 1
    assert batches["recovered"].sum() == 2 + 2  # after the zero gap and after the garbage
    findings = pd.read_parquet(paths["findings"])
    assert set(findings["code"]) == {f.code for f in report.all_findings()}


def test_fail_on_threshold_and_exit_codes():
    run = CliRunner().invoke
    assert run(main, ["scan", str(FIXTURES / "healthy")]).exit_code == 0
    assert run(main, ["scan", str(FIXTURES / "damaged")]).exit_code == 1
    # damaged holds critical findings (committed records its recovery would cut); damaged-clean one (a
    # leader-epoch-checkpoint Kafka cannot read: the log does not load); healthy none
    assert run(main, ["scan", str(FIXTURES / "damaged"), "--fail-on", "critical"]).exit_code == 1
    r = run(main, ["scan", str(FIXTURES / "damaged-clean"), "--fail-on", "critical", "--format", "json"])
    assert r.exit_code == 1
    import json

    doc = json.loads(r.stdout)
    critical = {f["code"] for f in doc["findings"] if f["severity"] == "critical"}
    assert critical == {"LOG_LOAD_FAILS"}
    assert run(main, ["scan", str(FIXTURES / "healthy"), "--fail-on", "critical"]).exit_code == 0
    assert run(main, ["scan", str(FIXTURES / "damaged-clean"), "--fail-on", "high"]).exit_code == 1
    assert run(main, ["scan", str(FIXTURES / "damaged"), "--fail-on", "bogus"]).exit_code == 2


def test_partition_dir_names_and_truncated_topics(tmp_path):
    from kforensics.formats.partition_metadata import encode as pm
    from kforensics.log.file_kinds import parse_partition_dir_name
    from kforensics.scenario.writer import LogDirWriter

    assert parse_partition_dir_name("my.topic-with-dashes-12").topic == "my.topic-with-dashes"
    n = parse_partition_dir_name("orders-3.0123456789abcdef0123456789abcdef-delete")
    assert (n.topic, n.partition, n.suffix) == ("orders", 3, "delete")
    assert parse_partition_dir_name("orders-3.0123456789abcdef0123456789abcdef-future").suffix == "future"
    assert parse_partition_dir_name("not_a_partition") is None
    lw = LogDirWriter(tmp_path / "b", node_id=1)
    lw.partition("a-very-long-topic-name", 0, topic_id="AAAAAAAAAAAAAAAAAAAABw")
    lw.write()
    d = tmp_path / "b" / "a-very-long-t-0.0123456789abcdef0123456789abcdef-delete"
    d.mkdir()
    (d / "partition.metadata").write_bytes(pm("AAAAAAAAAAAAAAAAAAAABw"))
    r = scan_log_dirs([tmp_path / "b"])
    deleted = next(p for p in r.partitions if p.suffix == "delete")
    assert deleted.topic == "a-very-long-topic-name"
    assert "TOPIC_NAME_FROM_TOPIC_ID" in {f.code for f in r.all_findings()}


def test_unknown_codec_with_valid_crc_is_reported(tmp_path):
    from kforensics.formats.record_batch import encode_batch
    from kforensics.scenario.writer import LogDirWriter

    lw = LogDirWriter(tmp_path / "b", node_id=1)
    pw = lw.partition("t", 0)
    pw.append(encode_batch(b"", base_offset=0, last_offset_delta=0, records_count=0, base_timestamp=0,
                           max_timestamp=0, attributes=6, partition_leader_epoch=0))
    lw.high_watermarks[("t", 0)] = 1
    lw.write()
    f = [f for f in scan_log_dirs([tmp_path / "b"]).all_findings() if f.code == "INVALID_ATTRIBUTES"]
    assert len(f) == 1 and f[0].position == 0
