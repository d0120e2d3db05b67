"""More of the same classes as issue #12's examples, found while fixing them (scan, listing, archives, the CLI).

Each test says how the code before its fix ("HEAD", commit 739ed78) behaved.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.hostile.helpers import (HEALTHY, add_member, add_tree, broker, codes, findings_of, partition_record, run,
                                   run_json, snapshot_bytes, topic_record, write_metadata_log)


def test_file_names_whose_offsets_do_not_fit_a_long(tmp_path):
    # HEAD: scan exit 3 (OverflowError decoding 99999999999999999999.index: "Python int too large to convert to C
    # long"), and dump of that index exit 3 too.  Kafka's Long.parseLong fails on such a name.
    b = broker(tmp_path)
    part = b / "orders-0"
    for suffix in (".log", ".index", ".timeindex", ".snapshot"):
        shutil.copy(part / f"00000000000000000012{suffix if suffix != '.snapshot' else '.log'}",
                    part / f"99999999999999999999{suffix}")
    write_metadata_log(b, [topic_record(), partition_record()])
    (b / "__cluster_metadata-0" / "00000000000000000001-9999999999.checkpoint").write_bytes(
        snapshot_bytes([topic_record()]))
    r = run("scan", b, "--format", "json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    named = {Path(f["file"]).name for f in findings_of(doc, "OFFSET_NAME_OUT_OF_RANGE")}
    assert named == {"99999999999999999999.log", "99999999999999999999.index", "99999999999999999999.timeindex",
                     "99999999999999999999.snapshot", "00000000000000000001-9999999999.checkpoint"}
    assert {p["dir_name"]: p["log_end_offset"] for p in doc["partitions"]}["orders-0"] == 24
    r = run("dump", part / "99999999999999999999.index", part / "00000000000000000000.index")
    assert r.exit_code == 1 and "OFFSET_NAME_OUT_OF_RANGE" in r.stderr and "offset: 3 position: 0" in r.stdout


def _non_utf8(b: Path) -> Path:
    d = Path(os.fsdecode(os.fsencode(str(b)) + b"/caf\xe9-0"))
    d.mkdir()
    shutil.copy(HEALTHY / "orders-0" / "00000000000000000000.log", d / "00000000000000000000.log")
    return d


def test_json_output_of_undecodable_names_is_valid_utf8(tmp_path):
    # HEAD: scan, dump and timeline --format json died writing a lone surrogate to a UTF-8 stdout: exit 3,
    # UnicodeEncodeError (any locale but C/POSIX).  The byte is shown as \xe9, as in the Parquet tables.
    b = broker(tmp_path)
    d = _non_utf8(b)
    scan = run_json("scan", b)
    assert "caf\\xe9-0" in {p["dir_name"] for p in scan["partitions"]}
    assert "caf\\xe9-0" in run("scan", b, "--no-progress").stdout  # the text shows the byte the same way
    r = run("dump", "--format", "json", d / "00000000000000000000.log")
    assert r.exit_code == 0, r.output
    assert all(json.loads(line)["file"].endswith("caf\\xe9-0/00000000000000000000.log") for line in
               r.stdout.splitlines())
    m = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/m\xff"))
    write_metadata_log(m, [topic_record(), partition_record()])
    doc = run_json("timeline", m)
    assert doc["sources"] and all("m\\xff" in s for s in doc["sources"])


def test_archive_members_that_are_not_followed_are_reported(tmp_path):
    # HEAD: `scan` of an archive ignored absolute, escaping and link members without a word
    # (only the Spark job reported them).
    a = tmp_path / "snap.tar"
    with tarfile.open(a, "w") as tar:
        add_tree(tar, HEALTHY, "kafka-logs")
        add_member(tar, "../escape.log", b"x")
        add_member(tar, "/abs/meta.properties", b"x")
        link = tarfile.TarInfo("kafka-logs/orders-0/00000000000000000024.log")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    doc = run_json("scan", a)
    [f] = findings_of(doc, "ARCHIVE_MEMBERS_IGNORED")
    assert f["file"] == str(a) and f["facts"]["count"] == 3
    assert sorted(f["facts"]["members"]) == ["../escape.log", "/abs/meta.properties",
                                             "kafka-logs/orders-0/00000000000000000024.log"]


def test_duplicate_members_cost_bounded_findings(tmp_path):
    # HEAD: silently the last copy of each name.  Damage repeated N times must not give N findings.
    a = tmp_path / "snap.tar"
    with tarfile.open(a, "w") as tar:
        add_tree(tar, HEALTHY, "kafka-logs")
        for i in range(300):
            for _ in range(2):
                add_member(tar, f"kafka-logs/orders-0/junk-{i:04d}", b"j")
    doc = run_json("scan", a)
    assert len(findings_of(doc, "ARCHIVE_DUPLICATE_MEMBER")) == 100
    [more] = [f for f in findings_of(doc, "MORE_FINDINGS") if f["facts"]["finding_code"] == "ARCHIVE_DUPLICATE_MEMBER"]
    assert more["facts"]["total"] == 300


@pytest.mark.skipif(shutil.which("tar") is None, reason="GNU tar is needed to write sparse members")
def test_sparse_archive_members_are_read_as_their_content(tmp_path):
    # HEAD: a sparse member (GNU tar -S, as for Kafka's preallocated indexes) was read from its stored bytes as
    # if they were its content, running on into the next members' headers.
    src = tmp_path / "kafka-logs"
    shutil.copytree(HEALTHY, src)
    idx = src / "orders-0" / "00000000000000000000.index"
    data = idx.read_bytes()
    with open(idx, "r+b") as fh:  # as an active segment's index: entries, then preallocated zeros
        fh.truncate(10 << 20)
        fh.seek(4 << 20)
        fh.write(b"\x00\x00\x00\x07" * 1024)  # data in the middle of the holes: several sparse regions
        fh.seek(0)
        fh.write(data)
    a = tmp_path / "snap.tgz"
    subprocess.run(["tar", "-S", "-czf", str(a), "-C", str(tmp_path), "kafka-logs"], check=True)
    with tarfile.open(a) as tar:
        assert tar.getmember("kafka-logs/orders-0/00000000000000000000.index").sparse  # really a sparse member
    on_disk = run_json("scan", src)
    in_tar = run_json("scan", a)
    digest = hashlib.sha256(idx.read_bytes()).hexdigest()
    assert {f["sha256"] for f in in_tar["files"] if f["path"].endswith("orders-0/00000000000000000000.index")} == \
        {digest}
    assert sorted(codes(in_tar)) == sorted(codes(on_disk))


def test_usage_errors_escape_what_they_quote_from_the_evidence(tmp_path):
    # HEAD: the "log dirs of several brokers" message printed the cluster ids raw: an ESC in meta.properties
    # reached the terminal.
    root = tmp_path / "corpus"
    for n, cid in ((1, "a\x1b[2Jb"), (2, "c")):
        d = broker(root, f"b{n}")
        (d / "meta.properties").write_text(f"version=0\nbroker.id={n}\ncluster.id={cid}\n")
    r = run("scan", root)
    assert r.exit_code == 2 and "\x1b" not in r.output and "a\\x1b[2Jb" in r.output


def test_scan_reads_quorum_state(tmp_path):
    # HEAD: scan never read a metadata dir's quorum-state: not in the files, damage unreported.
    b = broker(tmp_path)
    write_metadata_log(b, [topic_record(), partition_record()])
    qs = b / "__cluster_metadata-0" / "quorum-state"
    qs.write_text('{"leaderId": 1, "leaderEpoch": [[[')
    doc = run_json("scan", b)
    assert {f["path"]: f["sha256"] for f in doc["files"]}[str(qs)] == hashlib.sha256(qs.read_bytes()).hexdigest()
    assert any(f["file"] == str(qs) for f in doc["findings"])


def test_an_unreadable_metadata_segment_is_a_finding(tmp_path, monkeypatch):
    # HEAD: the timeline's read raised PermissionError out of scan: exit 2, nothing reported.
    import kforensics.log.segment_reader as sr

    b = broker(tmp_path)
    seg = write_metadata_log(b, [topic_record(), partition_record()])
    real = sr.open_binary

    def denied(path):
        if str(path) == str(seg):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(sr, "open_binary", denied)
    r = run("scan", b, "--format", "json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    unreadable = [f for f in findings_of(doc, "UNREADABLE_FILE") if f["file"] == str(seg)]
    assert len(unreadable) == 1 and {p["dir_name"] for p in doc["partitions"]} >= {"orders-0", "__cluster_metadata-0"}


def test_timeline_reports_what_the_archive_holds(tmp_path):
    # HEAD: `timeline` of a truncated .tgz: exit 2 with no message (EOFError taken for click's Abort).
    b = tmp_path / "kafka-logs"
    write_metadata_log(b, [topic_record(), partition_record()])
    (b / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=c\n")
    full = tmp_path / "full.tgz"
    with tarfile.open(full, "w:gz") as tar:
        add_tree(tar, b, "kafka-logs")
        add_member(tar, "kafka-logs/zz-padding", os.urandom(50_000))
    cut = tmp_path / "cut.tgz"
    cut.write_bytes(full.read_bytes()[:-20_000])
    doc = run_json("timeline", cut)
    assert doc["records"] == 2 and "ARCHIVE_TRUNCATED" in codes(doc)
    r = run("timeline", cut)
    assert r.exit_code == 1 and "HIGH ARCHIVE_TRUNCATED" in r.stderr


def test_an_archive_that_is_not_one_is_an_io_error(tmp_path):
    # a file named .tgz that holds no archive: exit 2 with the reason (HEAD: exit 3, tarfile.ReadError)
    a = tmp_path / "snap.tgz"
    a.write_bytes(b"not an archive at all" * 100)
    r = run("scan", a)
    assert r.exit_code == 2 and "not a readable tar archive" in r.stderr and "internal error" not in r.output
    # an archive cut before its first log dir: the usage error says why it holds none (HEAD: exit 2, no message)
    full = tmp_path / "full.tgz"
    with tarfile.open(full, "w:gz") as tar:
        add_member(tar, "data/README", os.urandom(50_000))
        add_tree(tar, HEALTHY, "data/kafka-logs")
    cut = tmp_path / "cut.tgz"
    cut.write_bytes(full.read_bytes()[:10_000])
    r = run("scan", cut)
    assert r.exit_code == 2 and "holds no Kafka log dir" in r.stderr and "cannot be read past" in r.stderr


def test_replay_says_what_an_archive_lost(tmp_path):
    # HEAD: `replay` of a truncated .tgz: exit 2 with no message (click's Abort); once the archive could be read,
    # replay still said nothing of the partitions the cut cost (it prints the timeline's findings only).
    full = tmp_path / "full.tgz"
    with tarfile.open(full, "w:gz") as tar:
        add_tree(tar, HEALTHY, "kafka-logs")
    cut = tmp_path / "cut.tgz"
    cut.write_bytes(full.read_bytes()[: len(full.read_bytes()) * 2 // 3])
    doc = run_json("replay", cut)
    [f] = findings_of(doc, "ARCHIVE_TRUNCATED")
    assert f["file"] == str(cut)
