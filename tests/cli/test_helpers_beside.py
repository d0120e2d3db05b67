"""A fleet's outputs made with a forked helper (#26) are the bytes made without one: the JSON lists converted by
this process and a helper in turn (``kforensics.cli.json_out._texts``), and ``scan --out``'s tables written by a
helper while the document is written (``kforensics.tables.scan_tables.tables_beside``).

The expected bytes are the same command's with no helper; the thresholds are lowered so that the fixtures' few
partitions are a "fleet", and each test checks that a helper was forked (and reaped), so a helped run that
quietly did everything itself would fail it.
"""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from kforensics import forked
from kforensics.cli import json_out, main
from kforensics.replay import broker_workers
from kforensics.tables import scan_tables
from tests.conftest import ROOT, all_reaped, file_tree

BROKERS = sorted(p for p in (ROOT / "fixtures" / "brokers").iterdir() if p.is_dir())


@pytest.fixture
def helped(monkeypatch, forks):
    """Helpers allowed in this test process (a pytest worker runs threads of its own, which forbid them) and used
    for every list and every scan; the pids of the processes forked."""
    monkeypatch.setattr(forked, "other_threads", lambda: False)
    monkeypatch.setattr(forked, "cores", lambda: 2)
    monkeypatch.setattr(json_out, "HELPED_FROM", 1)
    monkeypatch.setattr(json_out, "HELPED_RUN", 1)
    monkeypatch.setattr(scan_tables, "HELPED_FROM", 1)
    return forks


def _run(args: list[str]):
    got = CliRunner().invoke(main, args)
    assert got.exit_code in (0, 1), got.output
    return got.stdout


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Three brokers of 7 partitions (the benchmarks' small set, tiny): every scenario holds one partition only."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_spark import build

    return build(tmp_path_factory.mktemp("fleet"), "fleet", 3, 7, 10, topics=2)


@pytest.mark.parametrize("run", [1, 2, 3])
def test_a_replays_json_converted_with_a_helper_is_the_same(run, fleet, helped, monkeypatch):
    monkeypatch.setattr(json_out, "HELPED_RUN", run)
    monkeypatch.setattr(broker_workers, "worker_count", lambda jobs, log_dirs: 0)  # the JSON's helper alone
    args = ["replay", *map(str, fleet), "--format", "json"]
    alone = _run(args + ["--jobs", "1"])  # --jobs 1: no process beside this one
    assert helped == [] and len(json.loads(alone)["partitions"]) == 7
    assert _run(args + ["--jobs", "2"]) == alone
    assert len(helped) == 1 and all_reaped(helped)


@pytest.mark.parametrize("broker", BROKERS, ids=lambda p: p.name)
def test_a_scans_json_converted_with_a_helper_is_the_same(broker, helped, monkeypatch):
    args = ["scan", str(broker), "--format", "json"]
    with_helper = _run(args)
    assert all_reaped(helped)
    monkeypatch.setattr(json_out, "HELPED_FROM", 10**9)
    assert _run(args) == with_helper


@pytest.mark.parametrize("broker", BROKERS, ids=lambda p: p.name)
def test_tables_written_beside_the_document_are_the_same_files(broker, helped, monkeypatch, tmp_path):
    args = ["scan", str(broker), "--format", "json", "--out"]
    beside = _run(args + [str(tmp_path / "beside")])
    # one helper, the tables': the document's lists are converted here meanwhile (two helpers would share the cores)
    assert len(helped) == 1 and all_reaped(helped)
    monkeypatch.setattr(scan_tables, "HELPED_FROM", 10**9)
    assert _run(args + [str(tmp_path / "alone")]) == beside
    assert len(helped) == 1
    assert file_tree(tmp_path / "beside") == file_tree(tmp_path / "alone")


def test_a_failure_to_write_the_tables_beside_is_the_one_written_alone(helped, monkeypatch, tmp_path):
    def full(self, report, committed=None):
        raise OSError(28, "No space left on device", str(self.out / "partitions.parquet"))

    monkeypatch.setattr(scan_tables.ScanParquet, "write_tables", full)
    args = ["scan", str(BROKERS[0]), "--format", "json", "--out"]
    beside = CliRunner().invoke(main, args + [str(tmp_path / "beside")])
    assert len(helped) == 1 and all_reaped(helped)
    monkeypatch.setattr(scan_tables, "HELPED_FROM", 10**9)
    alone = CliRunner().invoke(main, args + [str(tmp_path / "alone")])
    assert beside.exit_code == alone.exit_code == 2
    assert beside.stderr.replace("beside", "alone") == alone.stderr
    assert "No space left on device" in alone.stderr
