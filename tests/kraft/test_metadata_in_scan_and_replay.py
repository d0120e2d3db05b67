"""KRaft metadata through the front ends: dump of control records, the timeline command, scan's epoch cross-check."""

from __future__ import annotations

import json

from click.testing import CliRunner

from tests.conftest import ORACLE, REALDATA, load_manifest, need_shared
from kforensics.scan.broker import scan_log_dirs
from kforensics.cli import main


def test_kraft_control_oracle_case_decodes_in_dump():
    need_shared(ORACLE)
    man = load_manifest("v2-kraft-control")
    seg = ORACLE / man["segments"][0]["file"]
    r = CliRunner().invoke(main, ["dump", "--deep", "--format", "json", str(seg)])
    controls = [o["control"] for o in map(json.loads, r.stdout.splitlines()) if o["kind"] == "record" and o["control"]]
    want = [rec["control"] for b in man["segments"][0]["batches"] for rec in b["records"] if rec["control"]]
    assert [{k: v for k, v in c.items() if k != "detail"} for c in controls] == want


def test_timeline_cli():
    need_shared(REALDATA)
    r = CliRunner().invoke(main, ["timeline", str(REALDATA / "hiage__kafka-raft__c5f680e" / "data" / "kafka1"),
                                  "--topic", "test1", "--format", "json"])
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and {p["topic"] for p in doc["partitions"]} == {"test1"}


def test_scan_cross_checks_epochs_against_the_metadata_log(tmp_path):
    need_shared(REALDATA)
    import shutil

    src = REALDATA / "hiage__kafka-raft__c5f680e" / "data" / "kafka1"
    clean = scan_log_dirs([src])
    assert not [f for f in clean.all_findings() if f.code == "EPOCH_NOT_GRANTED"]
    # a copy whose test1-0 checkpoint claims an epoch the controller never granted
    dst = tmp_path / "kafka1"
    shutil.copytree(src, dst)
    from kforensics.formats import checkpoint

    cp = dst / "test1-0" / "leader-epoch-checkpoint"
    epochs = checkpoint.decode(cp.read_bytes(), "leader_epoch_checkpoint").epochs()
    cp.write_bytes(checkpoint.encode("leader_epoch_checkpoint", epochs + [(77, 999_999)]))
    bad = [f for f in scan_log_dirs([dst]).all_findings() if f.code == "EPOCH_NOT_GRANTED"]
    assert len(bad) == 1 and bad[0].facts["epoch"] == 77
