"""A KRaft broker in a .tgz: scan, replay and timeline give exactly what they give on the directory."""

from __future__ import annotations

import json
import tarfile

import pytest
from click.testing import CliRunner

from kforensics.cli import main
from tests.conftest import REALDATA, need_shared

KRAFT = "hiage__kafka-raft__c5f680e/data"


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    need_shared(REALDATA)
    tmp = tmp_path_factory.mktemp("kraft-tgz")
    out = {}
    for b in ("kafka1", "kafka2", "kafka3"):
        p = tmp / f"{b}.tgz"
        with tarfile.open(p, "w:gz") as tar:
            tar.add(REALDATA / KRAFT / b, arcname=f"snapshot/{b}")
        out[b] = p
    return out


def run_json(*args: str) -> dict:
    r = CliRunner().invoke(main, [*args, "--format", "json"])
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)


def strip(doc, *paths: str):
    text = json.dumps(doc)
    for p in paths:
        text = text.replace(p, "<root>")
    return json.loads(text)


def test_scan_of_an_archive_equals_the_scan_of_the_directory(archives):
    src = REALDATA / KRAFT / "kafka1"
    on_disk = strip(run_json("scan", str(src)), str(src))
    in_tar = strip(run_json("scan", str(archives["kafka1"])), f"{archives['kafka1']}!/snapshot/kafka1")
    assert in_tar == on_disk
    # the metadata log inside the archive was read: the epochs were checked against the controller's grants
    assert on_disk["partitions"] and not [f for f in on_disk["findings"] if f["code"] == "EPOCH_NOT_GRANTED"]


def test_timeline_of_an_archive_equals_the_timeline_of_the_directory(archives):
    src = REALDATA / KRAFT / "kafka1"
    on_disk = strip(run_json("timeline", str(src)), str(src))
    in_tar = strip(run_json("timeline", str(archives["kafka1"])), f"{archives['kafka1']}!/snapshot/kafka1")
    assert on_disk["records"] > 2000 and in_tar == on_disk


def test_replay_of_archives_equals_the_replay_of_the_directories(archives):
    dirs = [str(REALDATA / KRAFT / b) for b in ("kafka1", "kafka2", "kafka3")]
    on_disk = run_json("replay", *dirs)
    in_tar = run_json("replay", *(str(archives[b]) for b in ("kafka1", "kafka2", "kafka3")))

    def verdicts(doc):
        return {(p["topic"], p["partition"], p["leader"], p["leader_epoch"], r["broker_id"],
                 tuple(v["code"] for v in r["verdicts"])) for p in doc["partitions"] for r in p["replicas"]}

    assert verdicts(in_tar) == verdicts(on_disk) and len(verdicts(on_disk)) > 50
    # the controller's record decides the leader in both
    assert all(p.get("timeline") for p in in_tar["partitions"])
