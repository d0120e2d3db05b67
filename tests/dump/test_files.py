"""Dumping side files: dump and scan report the same index fault with the same code and severity."""

from __future__ import annotations

from kforensics.dump.files import dump_file
from kforensics.scan.broker import scan_log_dirs
from tests.conftest import ROOT

DAMAGED = ROOT / "fixtures" / "brokers" / "damaged"
INDEX_CODES = {"INDEX_POINTS_WRONG", "INDEX_OFFSET_MISMATCH", "TIMEINDEX_POINTS_WRONG", "TIMEINDEX_TIMESTAMP_MISMATCH"}


def index_faults(findings):
    return {(f.file, f.code, f.severity, f.position, f.facts.get("count")) for f in findings if f.code in INDEX_CODES}


def test_verify_index_only_and_scan_agree_on_every_index_of_the_damaged_broker():
    scan = index_faults(scan_log_dirs([DAMAGED]).all_findings())
    dumped = set()
    for idx in sorted(DAMAGED.glob("*/*.index")) + sorted(DAMAGED.glob("*/*.timeindex")):
        if (idx.parent / (idx.name.rsplit(".", 1)[0] + ".log")).exists():
            dumped |= index_faults(dump_file(idx, verify_index=True).findings)
    assert scan, "the damaged broker has index faults"
    assert dumped == scan


def test_an_index_without_its_log_is_reported_not_verified(tmp_path):
    idx = tmp_path / "00000000000000000000.index"
    idx.write_bytes(bytes(16))
    d = dump_file(idx, verify_index=True)
    assert [(f.code, f.file) for f in d.findings if f.code == "INDEX_WITHOUT_LOG"] == [("INDEX_WITHOUT_LOG", str(idx))]
