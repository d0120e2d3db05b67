"""The Spark pipeline equals the single-process scan and replay, from dirs and tarballs; faults; reruns."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
import tarfile
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ORACLE, REALDATA, ROOT
from kforensics.replay.report import replay_all
from kforensics.scan.broker import scan_log_dirs
from kforensics.scenario import load_scenario
from kforensics.spark.inputs import Snapshot, parse_metadata, resolve_snapshots
from kforensics.spark.job import OutputExists, metadata_by_cluster, run

SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if p.is_dir())
BROKERS = ROOT / "fixtures" / "brokers"
#: the older truncation rules the second run replays with (0.11: epochs, without KIP-279's fixes)
OLDER = "0.11"
#: real KRaft clusters in ../shared (CATALOG.md): cluster label -> its brokers' log dirs, each a snapshot
KRAFT = {
    "hiage": [f"hiage__kafka-raft__c5f680e/data/kafka{i}" for i in (1, 2, 3)],  # three brokers, one cluster
    "niloufar": ["Niloufar1171__LDI-POC__8030792"],
    "ronem": ["ronem123__rupia-transaction-service__5d88e97/kafka-logs"],  # 125 KRaft snapshots, a timeline finding
}
#: a scenario whose controller's record shows an unclean election; its brokers are reused below
UNCLEAN = ROOT / "fixtures" / "scenarios" / "unclean-leader-election"


def scenario_snapshots(with_controller: bool = True) -> list[Snapshot]:
    """Every scenario broker; and its controller dir (no meta.properties: its cluster is given)."""
    snaps = []
    for s in SCENARIOS:
        snaps += [Snapshot(str(b), f"{s.name}--{b.name}") for b in sorted(s.glob("broker-*"))]
        if with_controller and (s / "controller").is_dir():
            snaps.append(Snapshot(str(s / "controller"), f"{s.name}--controller", cluster=f"scenario-{s.name}"))
    return snaps


def _combined_nodes(tmp: Path) -> list[Path]:
    """The unclean-election scenario's brokers as KRaft combined nodes: each log dir holds a copy of the metadata
    log, so ``scan`` checks its replicas against it and ``replay`` merges the copies."""
    out = []
    for b in sorted(UNCLEAN.glob("broker-*")):
        d = tmp / "combined" / b.name
        shutil.copytree(b, d)
        shutil.copytree(UNCLEAN / "controller" / "__cluster_metadata-0", d / "__cluster_metadata-0")
        out.append(d)
    return out


def _torn_metadata(tmp: Path) -> Path:
    """A copy of the unclean-election controller's metadata log with a torn batch at its end (a timeline finding;
    the elections are intact)."""
    d = tmp / "torn-controller" / "__cluster_metadata-0"
    shutil.copytree(UNCLEAN / "controller" / "__cluster_metadata-0", d)
    log = d / "00000000000000000000.log"
    log.write_bytes(log.read_bytes() + log.read_bytes()[:40])
    return d


def _truncated_names(tmp: Path) -> Path:
    """A broker whose ``-delete`` dir name holds a truncated topic (Kafka cuts long names); partition.metadata's
    topic id names it.  The deleted copy has batches of its own, which must not join the live log's replay."""
    from kforensics.formats.partition_metadata import encode as pm
    from kforensics.formats.record_batch import RecordData, build_batch
    from kforensics.log.writer import LogDirWriter

    lw = LogDirWriter(tmp / "trunc", node_id=1, cluster_id="trunc")
    live = lw.partition("a-very-long-topic-name", 0, topic_id="AAAAAAAAAAAAAAAAAAAABw")
    for i in range(2):
        live.append(build_batch([RecordData(i, 1_700_000_000_000 + i, value=b"x")], partition_leader_epoch=0))
    lw.write()
    gone = LogDirWriter(tmp / "gone", node_id=1)
    pw = gone.partition("a-very-long-topic-name", 0)
    for i in range(4):
        pw.append(build_batch([RecordData(i, 1_700_000_000_000 + i, value=b"y")], partition_leader_epoch=0))
    gone.write()
    d = tmp / "trunc" / "a-very-long-t-0.0123456789abcdef0123456789abcdef-delete"
    (tmp / "gone" / "a-very-long-topic-name-0").rename(d)
    (d / "partition.metadata").write_bytes(pm("AAAAAAAAAAAAAAAAAAAABw"))
    return tmp / "trunc"


def kraft_snapshots() -> dict[str, list[Snapshot]]:
    """The real KRaft brokers, when ../shared is there."""
    if not REALDATA.exists():
        return {}
    return {name: [Snapshot(str(REALDATA / d), f"{name}-{i}") for i, d in enumerate(dirs)]
            for name, dirs in KRAFT.items()}


@pytest.fixture(scope="module")
def job(spark, tmp_path_factory):
    """One run over: every scenario broker and controller (dirs), the damaged brokers as tarballs, oracle logs,
    real KRaft clusters, combined KRaft nodes, a controller's log given as ``metadata``, a truncated topic name,
    faults."""
    tmp = tmp_path_factory.mktemp("spark")
    snaps = scenario_snapshots()
    for name, suffix, mode in (("damaged", ".tgz", "w:gz"), ("damaged-clean", ".tar", "w")):
        archive = tmp / f"{name}{suffix}"
        with tarfile.open(archive, mode) as tar:
            tar.add(BROKERS / name, arcname="data/kafka-logs")
        snaps.append(Snapshot(str(archive), name))
    if ORACLE.exists():
        snaps.append(Snapshot(str(ORACLE / "logs"), "oracle", broker_id=100, cluster="oracle"))
    if REALDATA.exists():
        snaps.append(Snapshot(str(REALDATA / "cobyforrester__kafka__77a7583" / "data" / "kafka"), "coby"))
    for snaps_ in kraft_snapshots().values():
        snaps += snaps_
    snaps += [Snapshot(str(d), f"combined-{d.name}", cluster="combined") for d in _combined_nodes(tmp)]
    snaps += [Snapshot(str(b), f"torn-{b.name}", cluster="torn") for b in sorted(UNCLEAN.glob("broker-*"))]
    snaps.append(Snapshot(str(_truncated_names(tmp)), "trunc"))
    broken = tmp / "broken.tgz"
    broken.write_bytes((tmp / "damaged.tgz").read_bytes()[:300])
    snaps.append(Snapshot(str(broken), "broken"))
    snaps.append(Snapshot(str(tmp / "missing-dir"), "missing"))
    out = tmp / "out"
    torn = _torn_metadata(tmp)
    summary = run(spark, snaps, str(out), metadata=[("torn", str(torn))])
    return summary, out, snaps, tmp, torn


@pytest.fixture(scope="module")
def older(spark, tmp_path_factory):
    """The scenario brokers and controllers replayed with older truncation rules."""
    out = tmp_path_factory.mktemp("spark-older") / "out"
    run(spark, scenario_snapshots(), str(out), kafka_version=OLDER)
    return out


@pytest.fixture(scope="module")
def cli(job):
    """``kforensics replay`` (``replay_all``, no events: the controller decides) over the job's clusters:
    cluster -> report."""
    _, _, snaps, _, torn = job
    out = {f"scenario-{s.name}": replay_all(load_scenario(s).brokers, metadata=load_scenario(s).metadata)
           for s in SCENARIOS}
    out["torn"] = replay_all(load_scenario(UNCLEAN).brokers, metadata=[torn])
    out["combined"] = replay_all([Path(s.spec) for s in snaps if s.cluster == "combined"])
    for name, snaps_ in kraft_snapshots().items():
        out[name] = replay_all([s.spec for s in snaps_])
    return out


def table(out: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(out / name)


def by_broker(report) -> dict:
    """Per broker: (leader, leader epoch, [(verdict, offsets, records)...]) as ``kforensics replay`` reports it."""
    return {(p.topic, p.partition, r.broker_id): (p.leader, p.leader_epoch,
                                                  [(v.code, json.dumps(v.offsets), v.records) for v in r.verdicts])
            for p in report.partitions for r in p.replicas}


def spark_by_broker(v: pd.DataFrame) -> dict:
    """The same from the Spark ``verdicts`` rows (in the order they were written)."""
    out = {}
    for (t, p, b), rows in v.groupby(["topic", "partition", "broker_id"], sort=False):
        out[(t, int(p), int(b))] = (int(rows["leader"].iloc[0]), int(rows["leader_epoch"].iloc[0]),
                                    [(r.verdict, r.offsets, int(r.records)) for r in rows.itertuples()])
    return out


@pytest.mark.parametrize("mode", ["latest", OLDER])
def test_verdicts_equal_single_process_replay_with_the_controllers_record(mode, request):
    """Every scenario, its controller dir among the snapshots: the controller decides the leader, in both."""
    out = request.getfixturevalue("job")[1] if mode == "latest" else request.getfixturevalue("older")
    v = table(out, "verdicts")
    assert set(v["kafka_version"]) == {mode}
    reports = request.getfixturevalue("cli") if mode == "latest" else {}
    compared = 0
    for s in SCENARIOS:
        sc = load_scenario(s)
        report = reports.get(f"scenario-{sc.name}") or replay_all(sc.brokers, kafka_version=mode,
                                                                 metadata=sc.metadata)
        want = by_broker(report)
        got = spark_by_broker(v[v["cluster"] == f"scenario-{sc.name}"])
        assert got == want, sc.name
        compared += bool(sc.metadata)
    assert compared >= 20


def test_real_kraft_clusters_replay_like_the_cli(job, cli):
    """Real KRaft clusters (../shared): leader, leader epoch and verdicts per broker and partition."""
    _, out, *_ = job
    clusters = kraft_snapshots()
    if not clusters:
        pytest.skip(f"{REALDATA} is absent: ../shared (real broker data) is not beside this checkout")
    v = table(out, "verdicts")
    compared = 0
    for name, snaps in clusters.items():
        report = cli[name]
        want = by_broker(report)
        got = spark_by_broker(v[v["snapshot_id"].isin([s.snapshot_id for s in snaps])])
        assert got == want, name
        assert report.partitions and all(p.timeline for p in report.partitions), f"{name}: the controller decides"
        compared += len(report.partitions)
    assert compared >= 150  # hiage 60, niloufar 53, ronem 51


def test_combined_nodes_and_metadata_given_apart_replay_like_the_cli(job, cli):
    """Metadata-log copies in every broker's log dir are merged into the cluster's timeline; a metadata log
    given as ``metadata`` (``--metadata``) belongs to the cluster it names."""
    summary, out, *_ = job
    v = table(out, "verdicts")
    assert spark_by_broker(v[v["cluster"] == "combined"]) == by_broker(cli["combined"])
    assert spark_by_broker(v[v["cluster"] == "torn"]) == by_broker(cli["torn"])
    assert {"combined", "torn", f"scenario-{UNCLEAN.name}"} <= set(summary["clusters_with_metadata"])
    assert set(v[v["cluster"] == "torn"]["verdict"]) >= {"UNCLEAN_ELECTION"}


def test_scan_tables_equal_single_process_scan_from_tarballs(job):
    _, out, *_ = job
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
    _, out, snaps, *_ = job
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


def _key(code, file, position, message) -> tuple:
    return code, file, None if position is None or pd.isna(position) else int(position), message


def cli_findings(report) -> Counter:
    """What ``kforensics replay`` reports: the timeline's findings and each partition's (controller checks,
    unclean elections, log matching, committed data lost, damage kept)."""
    return Counter(_key(f.code, f.file, f.position, f.message)
                   for f in list(report.findings) + [f for p in report.partitions for f in p.findings])


def test_findings_hold_what_the_cli_replay_reports(job, cli):
    """The cluster-level rows (no snapshot) of the findings table are the timeline's and the replay's findings,
    exactly those ``kforensics replay`` reports for the same inputs."""
    _, out, *_ = job
    f = table(out, "findings")
    brokers = table(out, "brokers")
    clusters = {name: brokers[brokers["snapshot_id"] == snaps_[0].snapshot_id]["cluster"].iloc[0]
                for name, snaps_ in kraft_snapshots().items()}
    seen: set[str] = set()
    for name, report in cli.items():
        cluster = clusters.get(name, name)
        rows = f[f["snapshot_id"].isna() & (f["cluster"] == cluster)]
        got = Counter(_key(r.code, r.file, r.position, r.message) for r in rows.itertuples())
        assert got == cli_findings(report), cluster
        seen |= {k[0] for k in got}
    assert seen >= {"GRANT_NOT_SEEN", "UNCLEAN_ELECTION", "COMMITTED_DATA_LOST", "CORRUPTION_NOT_RECOVERED",
                    "TRUNCATED_BATCH"}
    if REALDATA.exists():
        assert "METADATA_RECORDS_SUPERSEDED" in seen  # ronem's 125 snapshots
    about = f[f["snapshot_id"].isna() & (f["code"] == "GRANT_NOT_SEEN")]
    assert about["broker_id"].notna().all(), "a finding about one replica names its broker"


def test_broker_checks_run_per_snapshot_like_scan(job):
    """``scan``'s broker-level checks run in Spark too: each snapshot's findings are exactly ``scan``'s (the
    replicas against the broker's own metadata log included), and a truncated topic name is corrected in the
    partitions, segments and epochs tables; the deleted copy's batches stay out of the replay."""
    _, out, snaps, *_ = job
    f = table(out, "findings")
    named = {name: table(out, name) for name in ("partitions", "segments", "epochs")}
    checked = [s for s in snaps if s.snapshot_id == "trunc" or s.cluster == "combined"
               or s.snapshot_id.startswith("hiage-")]
    for s in checked:
        want = scan_log_dirs([s.spec])
        got = f[f["snapshot_id"] == s.snapshot_id]
        assert Counter(_key(r.code, r.file, r.position, r.message) for r in got.itertuples()) == Counter(
            _key(x.code, x.file, x.position, x.message) for x in want.all_findings()), s.snapshot_id
        for name, t in named.items():
            t = t[t["snapshot_id"] == s.snapshot_id]
            assert dict(zip(t["dir_name"], t["topic"])) == {p.dir_name: p.topic for p in want.partitions
                                                            if name == "partitions" or p.dir_name in set(t["dir_name"])}
    combined = f[f["snapshot_id"].str.startswith("combined-", na=False)]
    assert {"GRANT_NOT_SEEN"} <= set(combined["code"]), "checked against the broker's own metadata log"
    parts = table(out, "partitions")
    trunc = parts[parts["snapshot_id"] == "trunc"]
    assert set(trunc["topic"]) == {"a-very-long-topic-name"} and len(trunc) == 2
    assert "TOPIC_NAME_FROM_TOPIC_ID" in set(f[f["snapshot_id"] == "trunc"]["code"])
    v = table(out, "verdicts")
    assert v[v["cluster"] == "trunc"][["verdict", "log_end_offset_before"]].values.tolist() == [["OK", 2]]


def test_metadata_inputs_find_their_cluster(tmp_path):
    ctl = UNCLEAN / "controller" / "__cluster_metadata-0"
    assert metadata_by_cluster([str(ctl)], {"a"}) == {"a": [str(ctl)]}
    with pytest.raises(ValueError, match="CLUSTER=PATH"):
        metadata_by_cluster([str(ctl)], {"a", "b"})
    assert metadata_by_cluster([("b", str(ctl))], {"a", "b"}) == {"b": [str(ctl)]}
    kraft = REALDATA / KRAFT["hiage"][0]
    if kraft.exists():  # meta.properties beside the metadata log names its cluster
        assert metadata_by_cluster([str(kraft)], {"a", "b"}) == {"EP6hyiddQNW5FPrAvR9kWw": [str(kraft)]}
    with pytest.raises(FileNotFoundError):
        metadata_by_cluster([str(tmp_path / "nothing")], {"a"})
    assert parse_metadata([str(ctl), "c1=/x/__cluster_metadata-0", "s3://b/k=v"]) == [
        str(ctl), ("c1", "/x/__cluster_metadata-0"), "s3://b/k=v"]


def test_timelines_travel_to_the_executors():
    from kforensics.kraft.timeline import build_timeline

    tl = build_timeline([UNCLEAN / "controller" / "__cluster_metadata-0"])
    back = pickle.loads(pickle.dumps(tl))
    assert back.partitions == tl.partitions and back.entries("orders", 0)


def test_cli_metadata_of_no_known_cluster_is_a_usage_error(spark, tmp_path):
    from click.testing import CliRunner

    from kforensics.cli import main

    r = CliRunner().invoke(main, ["spark", str(SCENARIOS[0] / "broker-1"), str(UNCLEAN / "broker-1"), "--out",
                                  str(tmp_path / "o"), "--metadata", str(UNCLEAN / "controller"), "--master",
                                  "local[2]"])
    assert r.exit_code == 2 and "CLUSTER=PATH" in r.output, r.output
    assert not [n for n in os.listdir(tmp_path / "o") if n.startswith(".staging")]


def test_faults_become_findings_and_the_job_completes(job):
    summary, out, *_ = job
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
    assert [s.snapshot_id for s in snaps[1:]] == sorted(b.name for b in SCENARIOS[0].glob("broker-*"))


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

