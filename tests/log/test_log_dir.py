"""The log-dir model: every entry of a log dir lands somewhere; FIFOs and dangling links are never opened;
log dirs are found in nested corpora."""

from __future__ import annotations

import builtins
import io
import os
import re
import threading
from pathlib import Path

import pytest

from tests.conftest import REALDATA, need_shared
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log.file_kinds import FileKind, PartitionName
from kforensics.log.log_dir import find_log_dirs, looks_like_log_dir, open_log_dir
from kforensics.scan.broker import scan_log_dirs

UID = "0123456789abcdef0123456789abcdef"
BATCH = build_batch([RecordData(0, 1_700_000_000_000, b"k", b"v")], partition_leader_epoch=0)


def touch(p: Path, data: bytes = b"") -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """A log dir with one entry of every sort a log dir can hold."""
    d = tmp_path / "kafka-logs"
    for name in ("meta.properties", "replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                 "log-start-offset-checkpoint", "cleaner-offset-checkpoint", ".kafka_cleanshutdown", ".lock",
                 "bootstrap.checkpoint"):
        touch(d / name)
    touch(d / "replication-offset-checkpoint.tmp")  # leftover
    touch(d / "notes.txt")  # unknown file
    (d / "lost+found").mkdir()  # unknown dir
    (d / "remote-log-index-cache").mkdir()  # skipped, as Kafka's LogManager does
    os.mkfifo(d / "log-start-offset-checkpoint.fifo")
    os.symlink(d / "does-not-exist", d / "dangling")
    os.symlink(d / "notes.txt", d / "meta-link")  # a link to a regular file counts as one

    p = d / "orders-0"
    touch(p / "00000000000000000000.log", BATCH)
    touch(p / "00000000000000000000.index")
    touch(p / "00000000000000000000.timeindex")
    touch(p / "00000000000000000001.log")
    touch(p / "00000000000000000001.txnindex")
    touch(p / "00000000000000000001.snapshot")
    touch(p / "00000000000000000000.log.deleted")
    touch(p / "leader-epoch-checkpoint")
    touch(p / "partition.metadata")
    touch(p / "README")
    (p / "subdir").mkdir()
    os.mkfifo(p / "00000000000000000002.log")
    os.symlink(p / "gone.index", p / "00000000000000000003.index")

    m = d / "__cluster_metadata-0"
    touch(m / "00000000000000000000.log", BATCH)
    touch(m / "00000000000000017073-0000000004.checkpoint")
    touch(m / "quorum-state")
    touch(d / f"orders-1.{UID}-delete" / "00000000000000000000.log", BATCH)
    return d


def test_every_root_entry_is_placed(log_dir):
    ld = open_log_dir(log_dir)
    assert set(ld.root_files) == {"meta_properties", "replication_offset_checkpoint",
                                  "recovery_point_offset_checkpoint", "log_start_offset_checkpoint",
                                  "cleaner_offset_checkpoint", "clean_shutdown", "lock", "bootstrap_snapshot"}
    assert ld.root_files["meta_properties"] == log_dir / "meta.properties"
    assert ld.leftovers == [(log_dir / "replication-offset-checkpoint.tmp",
                             FileKind("replication_offset_checkpoint", leftover=".tmp"))]
    assert sorted(ld.unknown) == sorted([log_dir / "lost+found", log_dir / "meta-link", log_dir / "notes.txt"])
    assert sorted(ld.not_regular) == [(log_dir / "dangling", "dangling symbolic link"),
                                      (log_dir / "log-start-offset-checkpoint.fifo", "FIFO")]
    assert sorted(p.dir_name for p in ld.partitions) == sorted(["__cluster_metadata-0", f"orders-1.{UID}-delete",
                                                                "orders-0"])
    assert not ld.is_bare and ld.unreadable == []
    # nothing is lost: every name in the listing is in exactly one place (the remote index cache is skipped)
    placed = ([p for p in ld.root_files.values()] + [p for p, _ in ld.leftovers] + ld.unknown
              + [p for p, _ in ld.not_regular] + [p.path for p in ld.partitions])
    assert sorted(x.name for x in placed) == sorted(set(os.listdir(log_dir)) - {"remote-log-index-cache"})


def test_every_partition_entry_is_placed(log_dir):
    ld = open_log_dir(log_dir)
    p = next(x for x in ld.partitions if x.dir_name == "orders-0")
    d = log_dir / "orders-0"
    assert p.name == PartitionName("orders", 0) and (p.topic, p.partition) == ("orders", 0)
    assert sorted(p.segments) == [0, 1]
    s0, s1 = p.segments[0], p.segments[1]
    assert (s0.log, s0.offset_index, s0.time_index, s0.txn_index) == (
        d / "00000000000000000000.log", d / "00000000000000000000.index", d / "00000000000000000000.timeindex", None)
    assert (s1.log, s1.offset_index, s1.txn_index) == (d / "00000000000000000001.log", None,
                                                       d / "00000000000000000001.txnindex")
    assert s0.leftovers == [(d / "00000000000000000000.log.deleted", FileKind("log", 0, leftover=".deleted"))]
    assert p.leftovers == s0.leftovers
    assert p.producer_snapshots == {1: d / "00000000000000000001.snapshot"}
    assert p.leader_epoch_checkpoint == d / "leader-epoch-checkpoint"
    assert p.partition_metadata == d / "partition.metadata"
    assert sorted(p.unknown) == [d / "README", d / "subdir"]
    assert sorted(p.not_regular) == [(d / "00000000000000000002.log", "FIFO"),
                                     (d / "00000000000000000003.index", "dangling symbolic link")]
    # the FIFO and the dangling link are not segments
    assert 2 not in p.segments and 3 not in p.segments

    meta = next(x for x in ld.partitions if x.dir_name == "__cluster_metadata-0")
    assert meta.is_metadata_log and meta.quorum_state == log_dir / meta.dir_name / "quorum-state"
    assert meta.kraft_snapshots == [(log_dir / meta.dir_name / "00000000000000017073-0000000004.checkpoint",
                                     FileKind("kraft_snapshot", 17073, 4))]
    deleted = next(x for x in ld.partitions if x.name.suffix == "delete")
    assert deleted.name == PartitionName("orders", 1, "delete", UID) and sorted(deleted.segments) == [0]


def test_a_symlink_to_a_directory_is_not_followed(tmp_path):
    d = tmp_path / "logs"
    touch(d / "meta.properties")
    touch(tmp_path / "elsewhere" / "orders-0" / "00000000000000000000.log", BATCH)
    os.symlink(tmp_path / "elsewhere" / "orders-0", d / "orders-0")
    ld = open_log_dir(d)
    assert ld.partitions == []
    assert ld.not_regular == [(d / "orders-0", "symbolic link to a directory")]


def test_an_unlistable_dir_is_reported_unreadable(tmp_path):
    ld = open_log_dir(tmp_path / "absent")
    assert ld.partitions == [] and ld.root_files == {}
    assert [p for p, _ in ld.unreadable] == [tmp_path / "absent"]


def test_a_dir_without_identity_files_is_bare(tmp_path):
    touch(tmp_path / "orders-0" / "00000000000000000000.log", BATCH)
    ld = open_log_dir(tmp_path)
    assert ld.is_bare and [p.dir_name for p in ld.partitions] == ["orders-0"]


# ---------------------------------------------------------------- FIFOs are never opened; the scan cannot hang


def _release(fifos: list[Path]) -> None:
    """Unblock any reader stuck on a FIFO (a writer opening it releases the reader)."""
    for f in fifos:
        try:
            fd = os.open(f, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue  # no reader: nothing is blocked on it
        os.close(fd)


def test_scan_never_opens_fifos_or_dangling_links_and_does_not_hang(log_dir, monkeypatch):
    fifos = [log_dir / "log-start-offset-checkpoint.fifo", log_dir / "orders-0" / "00000000000000000002.log"]
    never = {str(p) for p in fifos} | {str(log_dir / "dangling"), str(log_dir / "orders-0" / "00000000000000000003.index")}
    opened: list[str] = []
    real_os_open, real_open = os.open, builtins.open

    def spy_os_open(path, *a, **kw):
        opened.append(os.fspath(path) if not isinstance(path, int) else "")
        return real_os_open(path, *a, **kw)

    def spy_open(file, *a, **kw):
        opened.append(os.fspath(file) if not isinstance(file, int) else "")
        return real_open(file, *a, **kw)

    monkeypatch.setattr(os, "open", spy_os_open)
    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(io, "open", spy_open)
    result: dict = {}

    def run():
        try:
            result["report"] = scan_log_dirs([log_dir])
        except BaseException as e:  # reported below
            result["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout=120)
    hung = t.is_alive()
    monkeypatch.undo()
    if hung:
        _release(fifos)
        t.join(timeout=10)
    assert not hung, "the scan blocked (on a FIFO?)"
    assert "error" not in result, result.get("error")
    assert str(log_dir / "orders-0" / "00000000000000000000.log") in opened  # the spy sees the reads
    assert never.isdisjoint(opened)
    report = result["report"]
    not_regular = {f.file for f in report.all_findings() if f.code == "NOT_A_REGULAR_FILE"}
    assert not_regular == never


# ---------------------------------------------------------------- finding log dirs


def test_a_log_dir_is_recognised_by_its_identity_files_or_a_partition(tmp_path):
    touch(tmp_path / "a" / "meta.properties")
    touch(tmp_path / "b" / "replication-offset-checkpoint")
    touch(tmp_path / "c" / "orders-0" / "00000000000000000000.log")
    touch(tmp_path / "d" / "orders-0" / "leader-epoch-checkpoint")
    touch(tmp_path / "e" / "__cluster_metadata-0" / "quorum-state")
    touch(tmp_path / "f" / "release-1" / "README")  # looks like <topic>-<n> but holds no partition file
    touch(tmp_path / "g" / "orders-0.txt")  # a file, not a dir
    (tmp_path / "h").mkdir()
    assert [looks_like_log_dir(tmp_path / x) for x in "abcdefgh"] == [True] * 5 + [False] * 3


def test_find_log_dirs_in_a_nested_corpus(tmp_path):
    touch(tmp_path / "docker" / "data" / "kafka1" / "meta.properties")
    touch(tmp_path / "docker" / "data" / "kafka2" / "meta.properties")
    touch(tmp_path / "old" / "backup" / "deep" / "logs" / "orders-3" / "00000000000000000000.log")
    # a log dir inside a log dir is part of the outer one, not another log dir
    touch(tmp_path / "docker" / "data" / "kafka1" / "nested" / "meta.properties")
    touch(tmp_path / "src" / "topic-1" / "README")
    os.symlink(tmp_path, tmp_path / "src" / "loop")  # a cycle: links to dirs are not followed
    assert find_log_dirs(tmp_path) == [tmp_path / "docker" / "data" / "kafka1", tmp_path / "docker" / "data" / "kafka2",
                                       tmp_path / "old" / "backup" / "deep" / "logs"]
    assert find_log_dirs(tmp_path / "docker" / "data" / "kafka2") == [tmp_path / "docker" / "data" / "kafka2"]
    assert find_log_dirs(tmp_path / "src") == []


def test_find_log_dirs_on_real_corpora_matches_the_catalogue():
    catalog = need_shared(REALDATA / "CATALOG.md").read_text(encoding="utf-8")
    rows = [line for line in catalog.splitlines() if re.match(r"^\| \d+ \|", line)]
    assert len(rows) >= 10
    for line in rows:
        cells = [c.strip() for c in line.split("|")]
        corpus, listed = cells[2].strip("`"), sorted(d.strip() for d in cells[4].split(","))
        found = sorted(str(p.relative_to(REALDATA / corpus)) for p in find_log_dirs(REALDATA / corpus))
        assert found == listed, corpus


def _model(ld):
    """What a log-dir model holds, as comparable values."""
    return {"root": ld.root_files, "partitions": [(pd.path, pd.name) for pd in ld.partitions],
            "leftovers": ld.leftovers, "unknown": ld.unknown, "not_regular": ld.not_regular, "unlisted": ld.unlisted}


def _restricted(ld, keep):
    """The full model with only the entries whose name ``keep`` accepts."""
    name = lambda p: p.name  # noqa: E731
    return {"root": {k: p for k, p in ld.root_files.items() if keep(name(p))},
            "partitions": [(pd.path, pd.name) for pd in ld.partitions if keep(name(pd.path))],
            "leftovers": [x for x in ld.leftovers if keep(name(x[0]))],
            "unknown": [p for p in ld.unknown if keep(name(p))],
            "not_regular": [x for x in ld.not_regular if keep(name(x[0]))], "unlisted": ld.unlisted}


@pytest.mark.parametrize("keep", [lambda n: n == "meta.properties", lambda n: n.startswith("orders"),
                                  lambda n: n.startswith("log-start"), lambda n: "." in n, lambda n: False])
def test_a_model_of_some_names_is_the_full_model_restricted_to_them(log_dir, keep):
    touch(log_dir / "orders-ext-0" / "00000000000000000000.log", BATCH)  # a topic whose name extends another's
    assert _model(open_log_dir(log_dir, keep)) == _restricted(open_log_dir(log_dir), keep)


def test_meta_properties_and_topic_partitions_read_only_their_names(log_dir, monkeypatch):
    from kforensics.log import listing
    from kforensics.log.log_dir import read_meta_properties, topic_partitions

    touch(log_dir / "meta.properties", b"version=1\nbroker.id=4\ncluster.id=abc\n")
    touch(log_dir / "orders-ext-0" / "00000000000000000000.log", BATCH)
    full = open_log_dir(log_dir)
    made = []
    real = listing._local_entry
    monkeypatch.setattr(listing, "_local_entry", lambda base, e, text: made.append(e.name) or real(base, e, text))
    assert read_meta_properties(log_dir).value == full.read_root("meta_properties").value
    assert made == ["meta.properties"]
    made.clear()
    got = topic_partitions(log_dir, "orders")
    assert [(pd.path, pd.name) for pd in got] == [(pd.path, pd.name) for pd in full.partitions if pd.topic == "orders"]
    assert sorted(pd.name.suffix or "" for pd in got) == ["", "delete"]
    assert set(made) == {"orders-0", "orders-ext-0", f"orders-1.{UID}-delete"}  # no entry made of the other names
    assert read_meta_properties(log_dir / "absent") is None


@pytest.mark.parametrize("name,is_dir", [("meta.properties", False), ("meta.properties.tmp", False),
                                         ("cleaner-offset-checkpoint.deleted", False), ("xmeta.properties", False),
                                         ("meta.properties", True), ("replication-offset-checkpoint", False),
                                         ("meta.properties-old", False), ("notes.txt", False)])
def test_a_dir_is_a_log_dir_by_a_file_that_classifies_as_identifying(tmp_path, name, is_dir):
    """Whatever the names around it (the identifying ones are looked for among the names that can be one)."""
    from kforensics.log.file_kinds import classify_name
    from kforensics.log.log_dir import _IDENTIFYING

    d = tmp_path / "d"
    d.mkdir()
    for n in range(3):
        (d / f"zz-{n}").mkdir()  # not partition dirs: no partition files in them
    (d / name).mkdir() if is_dir else touch(d / name)
    assert looks_like_log_dir(d) is (not is_dir and classify_name(name).kind in _IDENTIFYING)


@pytest.mark.parametrize("base", [".", "kafka-logs", "./kafka-logs", "kafka-logs/", "ABS", "ABS/", "/"])
def test_a_listed_path_is_the_path_pathlib_builds(tmp_path, monkeypatch, base):
    """The listing hands each child its text (see ``listing._local_entry``): that text, the path's equality and
    hash are the ones of ``Path(base) / name`` whatever the base's spelling (``.`` lists ``./name``)."""
    from kforensics.log.listing import list_dir

    touch(tmp_path / "kafka-logs" / "meta.properties")
    (tmp_path / "kafka-logs" / "t-0").mkdir()
    monkeypatch.chdir(tmp_path / "kafka-logs" if base == "." else tmp_path)
    base = base.replace("ABS", str(tmp_path / "kafka-logs"))
    entries = list_dir(base)
    assert entries
    for e in entries:
        built = Path(base) / e.name
        assert (str(e.path), os.fspath(e.path), e.path, hash(e.path)) == (str(built), str(built), built, hash(built))
        assert e.path.parent == built.parent and e.path.name == e.name
