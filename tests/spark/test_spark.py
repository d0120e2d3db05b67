"""The Spark pipeline equals the single-process scan and replay (and their consumer and transaction impact), from
dirs and tarballs; hostile snapshots; faults; the summary; reruns."""

from __future__ import annotations

import io
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
from types import SimpleNamespace

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tests.conftest import ORACLE, REALDATA, ROOT
from kforensics.cli import main
from kforensics.consumers.replay_impact import replay_impact
from kforensics.epoch.versions import parse_kafka_version
from kforensics.replay.report import replay_all
from kforensics.scan.broker import scan_log_dirs
from kforensics.scenario import load_scenario
from kforensics.severity import Severity
from kforensics.spark.inputs import Snapshot, parse_metadata, resolve_snapshots
from kforensics.scan.broker import finding_key
from kforensics.spark.job import run
from kforensics.spark.output import OutputExists
from kforensics.spark.plan import MetadataInputError, metadata_by_cluster
from kforensics.spark.schemas import TABLES
from kforensics.spark.report import exit_code, render_text
from kforensics.spark.tables import read, read_pandas
from kforensics.tables.impact_tables import consumer_impact_table, reopened_rows, table as table_of
from kforensics.tables.schemas import fit

SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if p.is_dir())
#: the scenarios with consumer groups and transactions: their internal topics are in a second log dir per broker
IMPACT = [s for s in SCENARIOS if (s / "coordinators").is_dir()]
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


def scenario_snapshots(jbod: dict[str, dict[int, Path]], with_controller: bool = True) -> list[Snapshot]:
    """Every scenario broker (an impact scenario's as one dir holding both its log dirs); and its controller dir
    or dirs (no meta.properties: its cluster is given)."""
    snaps = []
    for s in SCENARIOS:
        if s.name in jbod:
            snaps += [Snapshot(str(d), f"{s.name}--broker-{b}") for b, d in sorted(jbod[s.name].items())]
        else:
            snaps += [Snapshot(str(b), f"{s.name}--{b.name}") for b in sorted(s.glob("broker-*"))]
        # the controller's dir, or each controller's copy of the metadata log (controller-<id>/)
        for c in sorted(s.glob("controller*")) if with_controller else []:
            if c.is_dir():
                snaps.append(Snapshot(str(c), f"{s.name}--{c.name}", cluster=f"scenario-{s.name}"))
    return snaps


def scenario_events() -> dict[tuple[str, str, int], list]:
    """The impact scenarios' events (what happens after the snapshot: the new leader's appends), replayed as
    ``kforensics replay --scenario`` replays them, on their one partition."""
    out = {}
    for s in IMPACT:
        sc = load_scenario(s)
        if sc.events:
            out[(f"scenario-{s.name}", sc.topic, sc.partition)] = sc.events
    return out


@pytest.fixture(scope="module")
def jbod(tmp_path_factory) -> dict[str, dict[int, Path]]:
    """Each impact scenario's brokers as one dir per broker holding its two log dirs (orders; internal topics), as
    an archive of a JBOD broker holds them: ``scan`` and the Spark scan then see the coordinators' logs."""
    tmp = tmp_path_factory.mktemp("jbod")
    out: dict[str, dict[int, Path]] = {}
    for s in IMPACT:
        sc = load_scenario(s)
        for b, dirs in sc.log_dirs.items():
            d = tmp / s.name / f"broker-{b}"
            for i, src in enumerate(dirs):
                shutil.copytree(src, d / ("logs" if i == 0 else f"internal-{i}"))
            out.setdefault(s.name, {})[b] = d
    return out


def reference(s: Path, mode: str, jbod: dict[str, dict[int, Path]]):
    """``kforensics replay`` over a scenario's brokers and controller, as the Spark job has them: (report, its
    consumer and transaction impact).  An impact scenario's partition is replayed with its events
    (``replay --scenario``), the other partitions (internal topics) from the disks alone."""
    sc = load_scenario(s)
    mode = parse_kafka_version(mode)
    if s.name not in jbod:
        report = replay_all(sc.brokers, kafka_version=mode, metadata=sc.metadata)
        return report, replay_impact(report, report.log_dirs)
    dirs = {b: [d] for b, d in jbod[s.name].items()}
    report = replay_all(dirs, kafka_version=mode, metadata=sc.metadata)
    if sc.events:
        focused = replay_all(dirs, kafka_version=mode, metadata=sc.metadata, events=sc.events, topic=sc.topic,
                             partition=sc.partition)
        report.partitions = [focused.partitions[0] if (p.topic, p.partition) == (sc.topic, sc.partition) else p
                             for p in report.partitions]
    return report, replay_impact(report, report.log_dirs)


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


def _torn_combined(tmp: Path) -> Path:
    """A KRaft combined node whose metadata log ends in a torn batch: the scan reads the torn batch, the timeline
    too; ``scan`` reports it once."""
    b = sorted(UNCLEAN.glob("broker-*"))[0]
    d = tmp / "torn-combined" / b.name
    shutil.copytree(b, d)
    shutil.copytree(_torn_metadata(tmp / "torn-combined-src"), d / "__cluster_metadata-0")
    return d


def _hostile(tmp: Path) -> dict[str, Path]:
    """Snapshots that crashed the job or were read differently from ``scan``: no meta.properties, a node id beyond
    int32, a partition dir whose name is not UTF-8.  (An archive cut before any log dir is refused, as ``scan``
    refuses it: test_spark_cli.py.)"""
    from kforensics.formats.meta_properties import encode

    src = SCENARIOS_BY_NAME["kip101-s2-two-hard-failures"]
    out = {}
    nometa = tmp / "hostile" / "nometa"
    shutil.copytree(src / "broker-1", nometa)
    (nometa / "meta.properties").unlink()
    out["nometa"] = nometa
    big = tmp / "hostile" / "bigid"
    shutil.copytree(src / "broker-2", big)
    (big / "meta.properties").write_bytes(encode(1, 3_000_000_000, "bigid"))
    out["bigid"] = big
    raw = tmp / "hostile" / "nonutf8"
    shutil.copytree(src / "broker-1", raw)
    os.rename(raw / "orders-0", os.fsdecode(bytes(raw) + b"/caf\xe9-0"))
    out["nonutf8"] = raw
    return out


SCENARIOS_BY_NAME = {s.name: s for s in SCENARIOS}


def _truncated_names(tmp: Path) -> Path:
    """A broker whose ``-delete`` dir name holds a truncated topic (Kafka cuts long names); partition.metadata's
    topic id names it.  The deleted copy has batches of its own, which must not join the live log's replay."""
    from kforensics.formats.partition_metadata import encode as pm
    from kforensics.formats.record_batch import RecordData, build_batch
    from kforensics.scenario.writer import LogDirWriter

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
def job(spark, tmp_path_factory, jbod):
    """One run over: every scenario broker and controller (dirs; the impact scenarios with their events), the
    damaged brokers as tarballs, oracle logs, real KRaft clusters, combined KRaft nodes (one with a torn metadata
    log), a controller's log given as ``metadata``, a truncated topic name, hostile snapshots.  (Inputs ``scan``
    and ``replay`` refuse are refused before the job: test_one_answer.py.)"""
    tmp = tmp_path_factory.mktemp("spark")
    snaps = scenario_snapshots(jbod)
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
    snaps.append(Snapshot(str(_torn_combined(tmp)), "torn-combined", cluster="torn-combined"))
    snaps += [Snapshot(str(p), name, cluster=None if name == "nometa" else name)
              for name, p in _hostile(tmp).items()]
    out = tmp / "out"
    torn = _torn_metadata(tmp)
    t = time.perf_counter()
    summary = run(spark, snaps, str(out), metadata=[("torn", str(torn))], events=scenario_events())
    summary["test_seconds"] = time.perf_counter() - t
    return summary, out, snaps, tmp, torn


@pytest.fixture(scope="module")
def older(spark, tmp_path_factory, jbod):
    """The scenario brokers and controllers replayed with older truncation rules."""
    out = tmp_path_factory.mktemp("spark-older") / "out"
    run(spark, scenario_snapshots(jbod), str(out), kafka_version=OLDER, events=scenario_events())
    return out


@pytest.fixture(scope="module")
def cli(job, jbod):
    """``kforensics replay`` (``replay_all``; the controller decides, events only for the impact scenarios'
    partition) and its consumer and transaction impact over the job's clusters: cluster -> (report, impact)."""
    _, _, snaps, _, torn = job
    out = {f"scenario-{s.name}": reference(s, "latest", jbod) for s in SCENARIOS}
    report = replay_all(load_scenario(UNCLEAN).brokers, metadata=[torn])
    out["torn"] = report, replay_impact(report, report.log_dirs)
    report = replay_all([Path(s.spec) for s in snaps if s.cluster == "combined"])
    out["combined"] = report, replay_impact(report, report.log_dirs)
    for name, snaps_ in kraft_snapshots().items():
        report = replay_all([s.spec for s in snaps_])
        out[name] = report, replay_impact(report, report.log_dirs)
    return out


def table(out: Path, name: str) -> pd.DataFrame:
    return read_pandas(str(out), name)


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
def test_verdicts_equal_single_process_replay_with_the_controllers_record(mode, request, jbod):
    """Every scenario, its controller dir among the snapshots: the controller decides the leader, in both."""
    out = request.getfixturevalue("job")[1] if mode == "latest" else request.getfixturevalue("older")
    v = table(out, "verdicts")
    assert set(v["kafka_version"]) == {mode}
    reports = request.getfixturevalue("cli") if mode == "latest" else {}
    compared = 0
    for s in SCENARIOS:
        sc = load_scenario(s)
        report = (reports.get(f"scenario-{sc.name}") or reference(s, mode, jbod))[0]
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
        report = cli[name][0]
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
    assert spark_by_broker(v[v["cluster"] == "combined"]) == by_broker(cli["combined"][0])
    assert spark_by_broker(v[v["cluster"] == "torn"]) == by_broker(cli["torn"][0])
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


def test_batches_rows_equal_scan_outs_whatever_file_they_went_to(job, tmp_path):
    """The ``batches`` rows Spark publishes (small dirs' rows in their task's file per topic, larger dirs' in files
    of their own) are the rows ``scan --out`` writes for the same snapshot, field for field."""
    from kforensics.tables.scan_tables import BatchesWriter

    _, out, snaps, *_ = job
    ids = {s.snapshot_id for s in snaps}
    batches = table(out, "batches")
    keys = ["dir_name", "segment", "position"]
    compared = 0
    for sid, path in (("oracle", ORACLE / "logs"), ("damaged", BROKERS / "damaged")):
        if sid not in ids:
            continue
        w = BatchesWriter(str(tmp_path / f"{sid}.parquet"))
        scan_log_dirs([path], batch_sink=w)
        w.close()
        want = pd.read_parquet(tmp_path / f"{sid}.parquet")
        got = batches[batches["snapshot_id"] == sid]
        cols = [c for c in want.columns if c not in ("snapshot_id", "snapshot_time", "cluster", "broker_id")]
        want = want[cols].sort_values(keys).reset_index(drop=True)
        got = got[cols].sort_values(keys).reset_index(drop=True)
        assert len(want) and len(got) == len(want), sid
        for c in cols:
            assert [None if pd.isna(v) else v for v in got[c].astype(object)] == [
                None if pd.isna(v) else v for v in want[c].astype(object)], (sid, c)
        compared += 1
    assert compared


def _key(code, file, position, message) -> tuple:
    """A finding row as the tables are compared: code, file, position, and its message or severity."""
    return code, file, None if position is None or pd.isna(position) else int(position), message


def cli_findings(report, impact) -> Counter:
    """What ``kforensics replay`` reports: the timeline's findings and each partition's (controller checks,
    unclean elections, log matching, committed data lost, damage kept), and the consumer and transaction impact's
    (records consumed and lost, groups that reset or skip, reopened and hanging transactions)."""
    return Counter(_key(f.code, f.file, f.position, f.message)
                   for f in list(report.findings) + [f for p in report.partitions for f in p.findings]
                   + list(impact.findings))


def _scan_keys(doc: dict) -> set:
    return {finding_key(SimpleNamespace(code=f["code"], file=f["file"], position=f["position"], line=f["line"],
                                        facts=f["facts"])) for f in doc["findings"]}


def test_findings_are_the_scans_and_the_replays_each_once(job, cli, tmp_path):
    """Every cluster ``kforensics replay`` is compared on: the findings table's rows are what ``scan --out`` reports
    for each of its snapshots and what ``replay`` reports (timeline, controller checks, unclean elections, log
    matching, committed data lost, damage kept, consumer and transaction impact) that no scan reported, each once
    (before: the replay stage's copies of the scan stage's findings were listed too, and the timelines' findings
    once per node and once more)."""
    _, out, snaps, *_ = job
    f = table(out, "findings")
    brokers = table(out, "brokers")
    cluster_of = dict(zip(brokers["snapshot_id"], brokers["cluster"]))
    clusters = {name: cluster_of[snaps_[0].snapshot_id] for name, snaps_ in kraft_snapshots().items()}
    seen: set[str] = set()
    for i, (name, (report, impact)) in enumerate(cli.items()):
        cluster = clusters.get(name, name)
        docs = [cli_scan(s.spec, tmp_path / f"{i}-{j}") for j, s in enumerate(snaps)
                if cluster_of.get(s.snapshot_id) == cluster]
        keys = set().union(*(_scan_keys(d) for d in docs))
        replayed = list(report.findings) + [x for p in report.partitions for x in p.findings] + list(impact.findings)
        want = Counter([_key(x["code"], x["file"], x["position"], x["severity"]) for d in docs for x in d["findings"]]
                       + [_key(x.code, x.file, x.position, str(x.severity)) for x in replayed
                          if finding_key(x) not in keys])
        rows = f[f["cluster"] == cluster]
        got = Counter(_key(r.code, r.file, r.position, r.severity) for r in rows.itertuples())
        assert got == want, (cluster, sorted((got - want).items())[:5], sorted((want - got).items())[:5])
        seen |= {k[0] for k in got}
    assert seen >= {"GRANT_NOT_SEEN", "UNCLEAN_ELECTION", "COMMITTED_DATA_LOST", "CORRUPTION_NOT_RECOVERED",
                    "TRUNCATED_BATCH", "CONSUMED_RECORDS_LOST", "GROUP_TRUNCATION_DETECTED", "TXN_MARKER_LOST"}
    if REALDATA.exists():
        assert "METADATA_RECORDS_SUPERSEDED" in seen  # ronem's 125 snapshots
    about = f[f["snapshot_id"].isna() & (f["code"] == "GRANT_NOT_SEEN")]
    assert about["broker_id"].notna().all(), "a finding about one replica names its broker"


def cli_scan(spec: str, tmp: Path) -> dict:
    """``kforensics scan SPEC --out DIR --format json``, as a user runs it (transactions checked against the
    broker's own coordinator log, committed offsets read): its JSON document."""
    r = CliRunner().invoke(main, ["scan", spec, "--format", "json", "--out", str(tmp)])
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)


def test_broker_checks_run_per_snapshot_like_scan(job, tmp_path):
    """``scan``'s broker-level checks run in Spark too: each snapshot's findings are exactly ``scan``'s (the
    replicas against the broker's own metadata log included, the timeline's findings reported once), and a
    truncated topic name is corrected in the partitions, segments and epochs tables; the deleted copy's batches
    stay out of the replay."""
    _, out, snaps, *_ = job
    f = table(out, "findings")
    named = {name: table(out, name) for name in ("partitions", "segments", "epochs")}
    checked = [s for s in snaps if s.snapshot_id in ("trunc", "torn-combined") or s.cluster == "combined"
               or s.snapshot_id.split("-")[0] in KRAFT or any(s.snapshot_id.startswith(f"{x.name}--broker-")
                                                             for x in IMPACT)]
    assert len(checked) >= 10
    for i, s in enumerate(checked):
        doc = cli_scan(s.spec, tmp_path / str(i))
        want = SimpleNamespace(partitions=[SimpleNamespace(**p) for p in doc["partitions"]])
        got = f[f["snapshot_id"] == s.snapshot_id]
        assert Counter(_key(r.code, r.file, r.position, r.message) for r in got.itertuples()) == Counter(
            _key(x["code"], x["file"], x["position"], x["message"]) for x in doc["findings"]), s.snapshot_id
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
    with pytest.raises(MetadataInputError, match="nothing"):
        metadata_by_cluster([str(tmp_path / "nothing")], {"a"})
    assert parse_metadata([str(ctl), "c1=/x/__cluster_metadata-0", "s3://b/k=v"]) == [
        str(ctl), ("c1", "/x/__cluster_metadata-0"), "s3://b/k=v"]


def test_timelines_travel_to_the_executors():
    from kforensics.kraft.timeline import build_timeline

    tl = build_timeline([UNCLEAN / "controller" / "__cluster_metadata-0"])
    back = pickle.loads(pickle.dumps(tl))
    assert back.partitions == tl.partitions and back.entries("orders", 0)


def test_cli_metadata_of_no_known_cluster_is_a_usage_error(tmp_path, monkeypatch):
    """Found while planning, before Spark starts (before: after Spark's start-up); nothing is left behind."""
    import kforensics.spark.session as spark_session

    monkeypatch.setattr(spark_session, "session", lambda *a, **k: pytest.fail("Spark was started"))
    r = CliRunner().invoke(main, ["spark", str(SCENARIOS[0] / "broker-1"), str(UNCLEAN / "broker-1"), "--out",
                                  str(tmp_path / "o"), "--metadata", str(UNCLEAN / "controller"), "--master",
                                  "local[2]"])
    assert r.exit_code == 2 and "CLUSTER=PATH" in r.output, r.output
    assert not (tmp_path / "o").exists()


def test_the_job_completes_and_publishes_every_table(job):
    summary, out, *_ = job
    assert not [n for n in os.listdir(out) if n.startswith(".staging")]
    assert set(os.listdir(out)) == set(TABLES) >= {
        "brokers", "partitions", "segments", "batches", "epochs", "findings", "files", "checkpoints", "transactions",
        "committed_offsets", "verdicts", "divergence", "consumer_impact", "summary"}
    assert not summary["failed_tasks"] and not summary["failed_groups"] and not summary["unreadable_snapshots"]


def test_hostile_snapshots_are_findings_and_read_as_scan_reads_them(job):
    """No meta.properties (before: `cannot convert float NaN to integer`), a node id of 3e9 (before: the job died on
    the driver), a partition dir whose name is not UTF-8 (before: the executor opened an escaped name and found
    NO_SEGMENTS where scan reads its batches)."""
    summary, out, snaps, *_ = job
    spec = {s.snapshot_id: s.spec for s in snaps}
    f = table(out, "findings")
    codes = {sid: set(f[f["snapshot_id"] == sid]["code"]) for sid in ("nometa", "bigid", "nonutf8")}
    assert "NO_META_PROPERTIES" in codes["nometa"]
    assert "META_PROPERTIES_BAD_ID" in codes["bigid"]
    brokers = table(out, "brokers").set_index("snapshot_id")
    assert pd.isna(brokers.loc["nometa", "broker_id"]) and pd.isna(brokers.loc["bigid", "broker_id"])
    v = table(out, "verdicts")
    assert len(v[v["cluster"] == "bigid"]) == 1 and len(v[v["cluster"].isna() & (v["topic"] == "orders")]) >= 1
    parts = table(out, "partitions")
    raw = parts[parts["snapshot_id"] == "nonutf8"]
    want = scan_log_dirs([spec["nonutf8"]])
    assert dict(zip(raw["dir_name"], raw["batch_count"])) == {fit(p.dir_name, pa.string()): p.batch_count
                                                               for p in want.partitions}
    assert list(raw["batch_count"]) == [want.partitions[0].batch_count] and want.partitions[0].batch_count > 0
    assert "NO_SEGMENTS" not in codes["nonutf8"]
    assert not summary["failed_tasks"] and not summary["failed_groups"]


def test_every_table_file_carries_the_schema_version(job):
    """docs/tables.md promises `kforensics.schema_version` in every file (before: not in the tables Spark wrote:
    verdicts, divergence, summary, brokers, the replay's findings)."""
    _, out, *_ = job
    files = sorted(out.rglob("*.parquet"))
    assert {p.relative_to(out).parts[0] for p in files} == set(TABLES)
    missing = [str(p.relative_to(out)) for p in files
               if b"kforensics.schema_version" not in (pq.read_schema(p).metadata or {})]
    assert not missing, missing[:10]


def _rows(path: Path, **where) -> list[dict]:
    rows = read(str(path.parent), path.name).to_pylist()
    return [r for r in rows if all(r.get(k) == v for k, v in where.items())]


def _sorted(rows: list[dict], drop=("snapshot_id", "snapshot_time")) -> list[dict]:
    rows = [{k: v for k, v in r.items() if k not in drop} for r in rows]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


IMPACT_KEYS = ("group", "committed_offset", "committed_leader_epoch", "consumed_lost", "consumed_lost_records",
               "outcome", "next_position", "skipped", "reread")


@pytest.mark.parametrize("mode", ["latest", OLDER])
def test_consumer_impact_and_transactions_equal_the_single_process_analysis(mode, request, jbod, tmp_path):
    """The four impact scenarios: the ``consumer_impact`` and ``transactions`` tables equal what ``kforensics
    replay --scenario`` and ``kforensics scan --out`` find, and the scenarios' hand-derived expectations."""
    out = request.getfixturevalue("job")[1] if mode == "latest" else request.getfixturevalue("older")
    assert {s.name for s in IMPACT} == {"consumer-group-resets", "consumer-group-skips-forked-records",
                                        "transaction-hanging", "transaction-marker-lost"}
    checked = Counter()
    for s in IMPACT:
        sc = load_scenario(s)
        cluster = f"scenario-{s.name}"
        report, impact = reference(s, mode, jbod)
        got = _rows(out / "consumer_impact", cluster=cluster)
        assert _sorted(got) == _sorted(consumer_impact_table(impact.consumer_impact, cluster).to_pylist()), s.name
        expected = sc.doc.get("expected_impact", {}).get(mode)
        if expected is not None:
            mine = sorted((r for r in got if r["topic"] == sc.topic), key=lambda r: r["group"])
            assert [{k: json.loads(r[k]) if k in ("consumed_lost", "skipped", "reread") else r[k] for k in IMPACT_KEYS}
                    for r in mine] == expected, s.name
            checked["expected_impact"] += 1
        tx = _rows(out / "transactions", cluster=cluster)
        reopened = [r for r in tx if r["kind"] == "reopened"]
        assert _sorted(reopened) == _sorted(table_of("transactions", [
            r for a in impact.transactions for r in reopened_rows(a, {"cluster": cluster})]).to_pylist()), s.name
        for b, d in sorted(jbod[s.name].items()):
            cli_scan(str(d), tmp_path / f"{s.name}-{b}")
            want = pq.read_table(tmp_path / f"{s.name}-{b}" / "transactions.parquet").to_pylist()
            mine = [r for r in tx if r["kind"] != "reopened" and r["broker_id"] == b]
            assert _sorted(mine) == _sorted(want), (s.name, b)
            exp = sc.doc.get("expected_transactions", {}).get(f"{sc.topic}-{sc.partition}@broker-{b}")
            if exp is not None:
                rows = [r for r in mine if (r["topic"], r["partition"]) == (sc.topic, sc.partition)]
                assert {r["last_stable_offset"] for r in rows} == {exp["last_stable_offset"]}
                assert [{k: r[k] for k in exp["open"][0]} for r in rows if r["kind"] == "open"] == exp["open"]
                assert [[r["last_offset"], r["producer_id"], r["marker"], r["marker_epoch"], r["epoch_bump"]]
                        for r in rows if r["kind"] in ("committed", "aborted")] == exp["markers"]
                checked["expected_transactions"] += 1
        exp = sc.doc.get("expected_transactions", {}).get(f"{sc.topic}-{sc.partition}@after-replay@{mode}")
        if exp is not None:
            assert [[r["producer_id"], r["first_offset"], r["marker"], r["broker_id"], r["last_stable_offset"]]
                    for r in reopened] == [[p, first, m, exp["leader"], exp["last_stable_offset"]]
                                           for p, first, m, *_ in exp["reopened"]]
            assert all(f"at offset {x[3]} is lost ({x[5]})" in r["detail"] for r, x in zip(reopened, exp["reopened"]))
            checked["expected_after_replay"] += 1
    assert checked == {"expected_impact": 3, "expected_transactions": 2, "expected_after_replay": 1}, checked


def test_committed_offsets_are_scans_per_snapshot(job, jbod, tmp_path):
    """The ``committed_offsets`` table holds, per snapshot, what ``scan --out`` writes for the broker."""
    _, out, *_ = job
    for s in IMPACT:
        for b, d in sorted(jbod[s.name].items()):
            cli_scan(str(d), tmp_path / f"{s.name}-{b}")
            want = pq.read_table(tmp_path / f"{s.name}-{b}" / "committed_offsets.parquet").to_pylist()
            got = _rows(out / "committed_offsets", snapshot_id=f"{s.name}--broker-{b}")
            assert _sorted(got) == _sorted(want), (s.name, b)


def test_summary_counts_what_the_tables_hold(job):
    summary, out, snaps, *_ = job
    f = table(out, "findings")
    assert summary["findings"] == {s: int((f["severity"] == s).sum()) for s in
                                   ("critical", "high", "medium", "low", "info")}
    v = table(out, "verdicts")
    assert summary["verdicts"] == dict(Counter(v["verdict"]))
    by_cluster = {c["cluster"]: c for c in summary["clusters"]}
    for cluster in ("scenario-consumer-group-resets", "combined", "torn"):
        c = by_cluster[cluster]
        assert c["verdicts"] == dict(Counter(v[v["cluster"] == cluster]["verdict"]))
        assert sum(c["findings"].values()) == int((f["cluster"] == cluster).sum())
        assert c["snapshots"] == sum(1 for s in snaps if s.cluster == cluster) or cluster.startswith("scenario-")
    parts = table(out, "partitions")
    assert summary["partitions"] == len(parts) and summary["batches"] == len(table(out, "batches"))
    assert summary["failed_tasks"] == [] and summary["failed_groups"] == []
    buf = io.StringIO()
    render_text(summary, buf)
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("answer: ")
    assert {ln.split()[0] for ln in lines[3:3 + len(summary["clusters"])]} == {
        "-" if c["cluster"] is None else c["cluster"] for c in summary["clusters"]}
    assert lines[-1].startswith(f"summary: {sum(summary['findings'].values())} findings (")
    print(f"job: {summary['test_seconds']:.1f} s, {summary['timings']}")


def test_cli_prints_a_table_and_a_summary_line_and_exits_by_fail_on(spark, tmp_path):
    """``kforensics spark`` (this session reused): findings at or above --fail-on exit 1, with a table per cluster
    and one summary line; ``--format json`` prints the summary inside the envelope every command's JSON has (before:
    a bare document), valid against docs/schemas/spark.schema.json; a clean run exits 0."""
    jsonschema = pytest.importorskip("jsonschema")
    from kforensics.cli.json_out import SCHEMA_VERSIONS

    healthy = SCENARIOS_BY_NAME["healthy-3-brokers"]
    r = CliRunner().invoke(main, ["spark", str(healthy / "broker-1"), str(BROKERS / "damaged"), "--out",
                                  str(tmp_path / "o1"), "--master", "local[2]"])
    assert r.exit_code == 1, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith("answer: ") and lines[1] == "clusters" and lines[2].split()[0] == "cluster"
    assert any(ln.startswith("scenario-healthy-3-brokers ") for ln in lines)
    assert lines[-1].startswith("summary: ") and "2 snapshot(s)" in lines[-1]
    r = CliRunner().invoke(main, ["spark", *(str(b) for b in sorted(healthy.glob("broker-*"))),
                                  str(healthy / "controller"), "--out", str(tmp_path / "o2"), "--format", "json",
                                  "--fail-on", "critical"])
    doc = json.loads(r.stdout)
    assert r.exit_code == exit_code(doc, Severity.CRITICAL) == 0, r.output
    assert doc["failed_tasks"] == [] and set(doc["verdicts"]) == {"OK"} and doc["snapshots"] == 4
    assert doc["schema_version"] == SCHEMA_VERSIONS["spark"] and doc["tool"]["name"] == "kforensics"
    schema = json.loads((ROOT / "docs" / "schemas" / "spark.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["x-schema-version"] == SCHEMA_VERSIONS["spark"]
    assert not [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]
    bare = {k: v for k, v in doc.items() if k not in ("schema_version", "tool")}
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(bare)), "the envelope is required"


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


def _wait_for(port: int, seconds: float) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


@pytest.mark.slow
def test_spark_submit_on_a_standalone_cluster_as_the_readme_says(spark, tmp_path):
    """A real master and two workers on loopback; kforensics built as a wheel and shipped with --py-files, the
    driver run by spark-submit exactly as README.md's recipe says; its verdicts equal the local run's.  The
    executors' Python has kforensics' dependencies but not kforensics itself (no site processing, so no
    installed or editable kforensics): they can only use the wheel."""
    import pyspark
    import sysconfig

    spark_home = os.path.dirname(pyspark.__file__)
    cls = os.path.join(spark_home, "bin", "spark-class")
    dist, src = tmp_path / "dist", tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=lambda d, names: [n for n in names if n not in ("kforensics", "pyproject.toml",
                                                                                      "README.md", "LICENSE")]
                    if Path(d) == ROOT else [n for n in names if n == "__pycache__"])
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(src), "-w", str(dist)], check=True,
                   capture_output=True, timeout=120)
    # Spark puts only .zip/.egg/.jar py-files on the executors' sys.path: the wheel goes as a .zip (it is one)
    wheel = tmp_path / "kforensics.zip"
    shutil.copy(next(dist.glob("kforensics-*.whl")), wheel)
    bare = tmp_path / "python-without-kforensics"
    bare.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    bare.chmod(0o755)
    port = _free_port()
    env = {**os.environ, "SPARK_HOME": spark_home, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": str(bare),
           "PYSPARK_DRIVER_PYTHON": sys.executable, "PYTHONPATH": sysconfig.get_paths()["purelib"],
           "SPARK_NO_DAEMONIZE": "1"}
    env.pop("KFORENSICS_DEBUG", None)
    logs = tmp_path / "logs"
    logs.mkdir()
    procs = []
    try:
        procs.append(subprocess.Popen([cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                                       str(port), "--webui-port", str(_free_port())], env=env,
                                      stdout=open(logs / "master", "w"), stderr=subprocess.STDOUT))
        url = f"spark://127.0.0.1:{port}"
        _wait_for(port, 60)
        for i in (1, 2):
            procs.append(subprocess.Popen([cls, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                                           "--cores", "1", "--memory", "1g", "--webui-port", str(_free_port()),
                                           "--work-dir", str(tmp_path / f"work{i}")], env=env,
                                          stdout=open(logs / f"worker{i}", "w"), stderr=subprocess.STDOUT))
        sdir = ROOT / "fixtures" / "scenarios" / "kip101-s2-two-hard-failures"
        brokers = [str(sdir / "broker-1"), str(sdir / "broker-2")]
        out = tmp_path / "out"
        # the README's recipe (### Many brokers on Spark)
        driver = subprocess.run([sys.executable, "-c", "import kforensics.spark.submit as m; print(m.__file__)"],
                                capture_output=True, text=True, check=True).stdout.strip()
        r = subprocess.run([os.path.join(spark_home, "bin", "spark-submit"), "--master", url, "--py-files",
                            str(wheel), "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
                            "--conf", "spark.executor.memory=512m", driver, *brokers, "--out", str(out)],
                           env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path)
        (logs / "submit").write_text(r.stderr)
        assert r.returncode in (0, 1), (r.stdout[-2000:], [x for x in r.stderr.splitlines() if "Error" in x][-20:])
        assert r.stdout.splitlines()[-1].startswith("summary: "), r.stdout
        got = read_pandas(str(out), "verdicts")
        local = tmp_path / "local"
        run(spark, [Snapshot(b, Path(b).name) for b in brokers], str(local))
        want = read_pandas(str(local), "verdicts")
        key = ["topic", "partition", "broker_id", "verdict", "offsets", "records", "leader", "leader_epoch"]
        assert sorted(map(tuple, got[key].astype(str).values)) == sorted(map(tuple, want[key].astype(str).values))
        assert set(got["broker_id"]) == {1, 2}
        apps = [p for i in (1, 2) for p in (tmp_path / f"work{i}").glob("app-*/*")]
        assert apps, "executors ran on the workers"
        assert any(p.glob("kforensics.zip") for p in apps), "the wheel was shipped to the executors"
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()

