"""The Spark pipeline equals the single-process scan and replay, from dirs and tarballs; faults; reruns."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ORACLE, REALDATA, ROOT
from kforensics.replay.report import replay_all
from kforensics.scan.broker import scan_log_dirs
from kforensics.scenario import load_scenario
from kforensics.spark.inputs import Snapshot, resolve_snapshots
from kforensics.spark.job import OutputExists, run

SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if p.is_dir())
BROKERS = ROOT / "fixtures" / "brokers"


@pytest.fixture(scope="module")
def job(spark, tmp_path_factory):
    """One run over: every scenario broker (dirs), the damaged brokers as tarballs, oracle logs, faults."""
    tmp = tmp_path_factory.mktemp("spark")
    snaps = [Snapshot(str(b), f"{s.name}--{b.name}") for s in SCENARIOS for b in sorted(s.glob("broker-*"))]
    for name, suffix, mode in (("damaged", ".tgz", "w:gz"), ("damaged-clean", ".tar", "w")):
        archive = tmp / f"{name}{suffix}"
        with tarfile.open(archive, mode) as tar:
            tar.add(BROKERS / name, arcname="data/kafka-logs")
        snaps.append(Snapshot(str(archive), name))
    if ORACLE.exists():
        snaps.append(Snapshot(str(ORACLE / "logs"), "oracle", broker_id=100, cluster="oracle"))
    if REALDATA.exists():
        snaps.append(Snapshot(str(REALDATA / "cobyforrester__kafka__77a7583" / "data" / "kafka"), "coby"))
    broken = tmp / "broken.tgz"
    broken.write_bytes((tmp / "damaged.tgz").read_bytes()[:300])
    snaps.append(Snapshot(str(broken), "broken"))
    snaps.append(Snapshot(str(tmp / "missing-dir"), "missing"))
    out = tmp / "out"
    summary = run(spark, snaps, str(out))
    return summary, out, snaps


def table(out: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(out / name)


def test_verdicts_equal_single_process_replay(job):
    summary, out, _ = job
    assert not summary["failed_tasks"]
    v = table(out, "verdicts")
    for s in SCENARIOS:
        sc = load_scenario(s)
        report = replay_all(sc.brokers)
        want = {(r.broker_id, x.code, json.dumps(x.offsets)) for p in report.partitions
                for r in p.replicas for x in r.verdicts}
        got_rows = v[v["cluster"] == f"scenario-{sc.name}"]
        got = {(int(r.broker_id), r.verdict, r.offsets) for r in got_rows.itertuples()}
        assert got == want, sc.name


def test_scan_tables_equal_single_process_scan_from_tarballs(job):
    _, out, _ = job
    parts = table(out, "partitions")
    findings = table(out, "findings")
    for name in ("damaged", "damaged-clean"):
        want = scan_log_dirs([BROKERS / name])
        got = parts[parts["snapshot_id"] == name]
        assert sorted(got["dir_name"]) == sorted(p.dir_name for p in want.partitions)
        assert dict(zip(got["dir_name"], got["log_end_offset"])) == {p.dir_name: p.log_end_offset for p in want.partitions}
        got_f = findings[findings["snapshot_id"] == name]
        assert sorted(zip(got_f["code"], got_f["position"].fillna(-1).astype(int))) == sorted(
            (f.code, -1 if f.position is None else f.position) for f in want.all_findings())
        assert all("!/data/kafka-logs" in p and os.path.basename(p.split("!/")[0]).startswith(f"{name}.t")
                   for p in got_f["file"].dropna()), "paths name the archive and the member"


def test_oracle_and_real_snapshots_scan_like_the_cli(job):
    _, out, snaps = job
    ids = {s.snapshot_id for s in snaps}
    parts = table(out, "partitions")
    batches = table(out, "batches")
    if "oracle" in ids:
        want = scan_log_dirs([ORACLE / "logs"])
        got = parts[parts["snapshot_id"] == "oracle"]
        assert len(got) == len(want.partitions)
        assert int(batches[batches["snapshot_id"] == "oracle"].shape[0]) == sum(p.batch_count for p in want.partitions)
    if "coby" in ids:
        want = scan_log_dirs([REALDATA / "cobyforrester__kafka__77a7583" / "data" / "kafka"])
        got = parts[parts["snapshot_id"] == "coby"]
        assert dict(zip(got["dir_name"], got["high_watermark"].astype("Int64"))) == {
            p.dir_name: p.high_watermark for p in want.partitions}


def test_faults_become_findings_and_the_job_completes(job):
    summary, out, _ = job
    f = table(out, "findings")
    assert set(f[f["snapshot_id"] == "broken"]["code"]) & {"SNAPSHOT_UNREADABLE", "NO_LOG_DIR"}
    assert set(f[f["snapshot_id"] == "missing"]["code"]) & {"SNAPSHOT_UNREADABLE", "NO_LOG_DIR"}
    assert not [n for n in os.listdir(out) if n.startswith(".staging")]
    assert set(os.listdir(out)) >= {"brokers", "partitions", "segments", "batches", "epochs", "findings", "files", "checkpoints",
                                    "verdicts", "divergence", "summary"}


def test_rerun_refuses_or_replaces_never_mixes(spark, tmp_path):
    out = tmp_path / "o"
    snap = [Snapshot(str(SCENARIOS[0] / "broker-1"), "one")]
    run(spark, snap, str(out))
    with pytest.raises(OutputExists):
        run(spark, snap, str(out))
    run(spark, [Snapshot(str(SCENARIOS[0] / "broker-2"), "two")], str(out), overwrite=True)
    assert set(table(out, "partitions")["snapshot_id"]) == {"two"}


def test_manifest_and_globs(tmp_path):
    m = tmp_path / "m.csv"
    m.write_text("path,broker_id,snapshot_time,cluster\n/a/b1.tgz,1,2026-01-01T00:00:00Z,c1\n")
    snaps = resolve_snapshots([str(SCENARIOS[0] / "broker-*")], str(m))
    assert snaps[0] == Snapshot("/a/b1.tgz", "b1", 1, "2026-01-01T00:00:00Z", "c1")
    assert [s.snapshot_id for s in snaps[1:]] == ["broker-1", "broker-2"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_job_runs_on_a_standalone_cluster(tmp_path):
    """A real master and worker from pyspark's own scripts, on loopback; the job runs through them."""
    pytest.importorskip("pyspark")
    import pyspark

    spark_home = os.path.dirname(pyspark.__file__)
    cls = os.path.join(spark_home, "bin", "spark-class")
    port, ui = _free_port(), _free_port()
    env = {**os.environ, "SPARK_HOME": spark_home, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    logs = tmp_path / "logs"
    logs.mkdir()
    master = subprocess.Popen([cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                               str(port), "--webui-port", str(ui)], env=env, stdout=open(logs / "master", "w"),
                              stderr=subprocess.STDOUT)
    worker = None
    try:
        url = f"spark://127.0.0.1:{port}"
        deadline = time.time() + 60
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.5)
        worker = subprocess.Popen([cls, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                                   "--cores", "2", "--memory", "2g", "--webui-port", str(_free_port()),
                                   "--work-dir", str(tmp_path / "work")], env=env,
                                  stdout=open(logs / "worker", "w"), stderr=subprocess.STDOUT)
        out = tmp_path / "out"
        sdir = ROOT / "fixtures" / "scenarios" / "kip101-s2-two-hard-failures"
        r = subprocess.run([sys.executable, "-m", "kforensics.cli", "spark", str(sdir / "broker-1"),
                            str(sdir / "broker-2"), "--out", str(out), "--master", url,
                            "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1"],
                           env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        v = pd.read_parquet(out / "verdicts")
        assert set(v["broker_id"]) == {1, 2}
        assert "app-" in "".join(os.listdir(tmp_path / "work"))  # executors really ran on the worker
    finally:
        for p in (worker, master):
            if p is not None:
                p.terminate()
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
