"""A log dir's partition dirs listed when first read (issue 26) against each listed at once, as before.

The deferred path must be the eager one, field for field: on the bundled brokers (healthy, damaged) and on
a log dir of every kind of partition dir the listing sorts (empty, orphan indexes, leftovers, special files,
links, a sub-directory, names Kafka cannot parse, one that cannot be listed, diverging segments), both the
model and the whole scan report.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from kforensics.log import log_dir as log_dir_module
from kforensics.log.file_kinds import parse_partition_dir_name
from kforensics.log.log_dir import open_log_dir
from kforensics.log.partition import PartitionLog, open_partition
from kforensics.scan.broker import scan_log_dirs
from kforensics.serialize import to_jsonable
from tests.conftest import ROOT

BROKERS = ROOT / "fixtures" / "brokers"
CONTENTS = [f for f in PartitionLog.__dataclass_fields__ if f not in ("path", "name")]


def _varied(tmp_path: Path) -> Path:
    """A copy of the damaged broker with partition dirs of every kind the listing sorts."""
    b = tmp_path / "broker"
    shutil.copytree(BROKERS / "damaged", b)
    (b / "empty-0").mkdir()
    orphans = b / "orphans-0"
    orphans.mkdir()
    for i in range(12):
        (orphans / f"{100 + i:020d}.index").write_bytes(b"")
    odd = b / "odd-3"
    shutil.copytree(BROKERS / "healthy" / "orders-0", odd)
    (odd / "00000000000000000012.log.deleted").write_bytes(b"")
    (odd / "00000000000000000040.index.swap").write_bytes(b"")
    (odd / "notes.txt").write_text("unknown")
    (odd / "sub").mkdir()
    (odd / f"{2**63:020d}.log").write_bytes(b"")  # an offset Kafka cannot parse
    os.mkfifo(odd / "00000000000000000099.log")
    (odd / "dangling.snapshot").symlink_to(tmp_path / "nowhere")
    (odd / "00000000000000000012.snapshot").symlink_to(odd / "partition.metadata")
    # a replica that diverges from the others: its second segment cut short
    cut = b / "cut-0"
    shutil.copytree(BROKERS / "healthy" / "orders-0", cut)
    seg = cut / "00000000000000000012.log"
    seg.write_bytes(seg.read_bytes()[:-30])
    (b / "unlistable-1").mkdir()
    return b


def _fields(pd: PartitionLog) -> dict:
    return {f: getattr(pd, f) for f in CONTENTS}


def _refuse_unlistable(monkeypatch) -> None:
    """``unlistable-1`` cannot be listed (a permission a root test cannot take away is refused here)."""
    real = os.scandir

    def scandir(path=".", *a):
        if str(path).endswith("unlistable-1"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *a)

    monkeypatch.setattr(os, "scandir", scandir)


@pytest.mark.parametrize("broker", ["healthy", "damaged", "varied"])
def test_a_deferred_partition_dir_is_the_one_listed_at_once(tmp_path, monkeypatch, broker):
    root = _varied(tmp_path) if broker == "varied" else BROKERS / broker
    _refuse_unlistable(monkeypatch)
    ld = open_log_dir(root)
    assert ld.partitions and all("_deferred" in pd.__dict__ for pd in ld.partitions)  # nothing listed yet
    eager_unreadable: list = []
    for pd in ld.partitions:
        eager = open_partition(pd.path, parse_partition_dir_name(pd.dir_name), eager_unreadable)
        assert _fields(pd) == _fields(eager), pd.dir_name
        assert pd == eager
    assert ld.unreadable == ld.unlisted + eager_unreadable
    for f in CONTENTS:  # whichever field is read first lists the directory (a field's default is no answer)
        for pd, again in zip(open_log_dir(root).partitions, ld.partitions):
            assert getattr(pd, f) == getattr(again, f), (pd.dir_name, f)
    if broker == "varied":
        assert [p.name for p, _ in ld.unreadable] == ["unlistable-1"]


def test_unreadable_lists_every_partition_dir_in_name_order_whatever_was_read_first(tmp_path, monkeypatch):
    root = _varied(tmp_path)
    _refuse_unlistable(monkeypatch)
    first = open_log_dir(root)
    second = open_log_dir(root)
    for pd in reversed(second.partitions):  # read in another order first
        pd.segments  # noqa: B018
    assert first.unreadable == second.unreadable


def _eager_scan(root: Path, monkeypatch) -> dict:
    with monkeypatch.context() as m:
        m.setattr(log_dir_module, "deferred_partition", lambda p, name: open_partition(p, name, []))
        return to_jsonable(scan_log_dirs([root]))


@pytest.mark.parametrize("broker", ["damaged", "varied"])
def test_the_scan_of_deferred_partition_dirs_is_the_scan_of_eager_ones(tmp_path, monkeypatch, broker):
    root = _varied(tmp_path) if broker == "varied" else BROKERS / broker
    _refuse_unlistable(monkeypatch)
    eager = _eager_scan(root, monkeypatch)
    deferred = to_jsonable(scan_log_dirs([root]))
    assert json.dumps(deferred, sort_keys=True) == json.dumps(eager, sort_keys=True)
    if broker == "varied":
        codes = {f["code"] for f in deferred["findings"]}
        assert {"UNREADABLE_DIR", "INDEX_WITHOUT_LOG", "NO_SEGMENTS"} <= codes


def test_a_deferred_partition_dir_survives_pickling_unlisted(tmp_path):
    """Spark ships partition dirs to executors: one not yet listed is listed where it is read."""
    import pickle

    pd = open_log_dir(BROKERS / "healthy").partitions[0]
    copy = pickle.loads(pickle.dumps(pd))
    assert "_deferred" in copy.__dict__
    assert _fields(copy) == _fields(pd)


def test_the_scan_names_the_remote_log_metadata_topic_as_its_decoder_does():
    """The scan looks for the tiered evidence only where it can be, without loading its decoders first."""
    from kforensics.formats.remote_log_metadata import TOPIC
    from kforensics.scan.broker import REMOTE_LOG_METADATA

    assert REMOTE_LOG_METADATA == TOPIC
