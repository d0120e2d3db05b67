"""Archive and pyarrow.fs sources: scanning a snapshot in place gives the same report as the directory."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from tests.conftest import ROOT
from kforensics.scan.broker import scan_log_dirs
from kforensics.log.log_dir import find_log_dirs
from kforensics.log.sources import ArrowPath, TarPath, resolve
from kforensics.serialize import to_jsonable

BROKER = ROOT / "fixtures" / "brokers" / "damaged"


def normal(report, prefix: str) -> str:
    doc = to_jsonable(report)
    text = json.dumps(doc, sort_keys=True, default=str)
    return text.replace(prefix, "<root>")


@pytest.mark.parametrize("mode,suffix", [("w", ".tar"), ("w:gz", ".tar.gz"), ("w:gz", ".tgz")])
def test_scanning_an_archive_in_place_matches_the_directory(tmp_path, mode, suffix):
    archive = tmp_path / f"snap{suffix}"
    with tarfile.open(archive, mode) as tar:
        tar.add(BROKER, arcname="kafka-logs")
    root = resolve(str(archive))
    assert isinstance(root, TarPath)
    (log_dir,) = find_log_dirs(root)
    assert str(log_dir) == f"{archive}!/kafka-logs"
    got = scan_log_dirs([log_dir])
    want = scan_log_dirs([BROKER])
    assert normal(got, f"{archive}!/kafka-logs") == normal(want, str(BROKER))
    assert not list(tmp_path.glob("**/*.log"))  # nothing was extracted


def test_hostile_member_names_are_not_followed(tmp_path):
    archive = tmp_path / "evil.tar"
    with tarfile.open(archive, "w") as tar:
        for name in ("../escape.log", "/abs/meta.properties", "ok/orders-0/00000000000000000000.log"):
            data = b"x" * 10
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("ok/link")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    root = TarPath.open(str(archive))
    assert sorted(root.archive.untrusted) == ["../escape.log", "/abs/meta.properties", "ok/link"]
    assert [p.name for p in root.iterdir()] == ["ok"]
    assert not (tmp_path.parent / "escape.log").exists()


def test_arrow_filesystem_paths_scan_like_local_ones():
    root = ArrowPath.from_uri(f"file://{BROKER}")
    got = scan_log_dirs([root])
    want = scan_log_dirs([BROKER])
    assert [p.log_end_offset for p in got.partitions] == [p.log_end_offset for p in want.partitions]
    assert sorted(f.code for f in got.all_findings()) == sorted(f.code for f in want.all_findings())
