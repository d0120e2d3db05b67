"""One answer (#22): on the same evidence ``kforensics spark`` says what ``scan`` and ``replay`` say.

Its findings (each once: the scan stage's and the replay stage's copies of one observation were both listed), its
verdicts and its partitions equal the single-process commands' row for row; it refuses the inputs they refuse, with
their sentences, exit 2, before a JVM starts (before: a missing path or a non-Kafka dir started Spark, wrote 14
empty tables and exited 1; the parent of several broker dirs was taken as one snapshot; two snapshots of broker 1
were replayed as one replica).
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from kforensics.cli import main
from kforensics.consumers.replay_impact import replay_impact
from kforensics.formats.meta_properties import encode
from kforensics.replay.report import replay_all
from kforensics.scan.broker import finding_key
from kforensics.spark.inputs import Snapshot
from kforensics.spark.job import run
from kforensics.spark.tables import read_pandas
from tests.conftest import REALDATA, ROOT, file_tree
from tests.kraft.election_histories import write_history

SCENARIOS = ROOT / "fixtures" / "scenarios"
UNCLEAN = SCENARIOS / "unclean-leader-election"
HEALTHY = SCENARIOS / "healthy-3-brokers"


# ----------------------------------------------------------------------------- refusals, before a JVM starts
@pytest.fixture
def no_spark(monkeypatch):
    """Fail the test if anything starts Spark."""
    import kforensics.spark.session as spark_session

    def refuse(*a, **k):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(spark_session, "session", refuse)


def invoke(*args: str):
    t = time.perf_counter()
    r = CliRunner().invoke(main, list(args))
    return r, time.perf_counter() - t


def sentence(stderr: str) -> str:
    """The refusal's sentence, however the command frames it (click's ``Error: Invalid value for X:`` or
    ``kforensics:``)."""
    line = [ln for ln in stderr.splitlines() if ln.startswith(("Error:", "kforensics:"))][-1]
    line = line.split(": ", 1)[1]
    return line.split(": ", 1)[1] if line.startswith("Invalid value for") else line


def refused(tmp_path: Path, *snapshots: str, extra: tuple[str, ...] = ()) -> str:
    """``kforensics spark SNAPSHOTS --out OUT``: exit 2, fast, nothing written; its sentence."""
    before = file_tree(tmp_path)
    r, took = invoke("spark", *snapshots, "--out", str(tmp_path / "out"), *extra)
    assert r.exit_code == 2, r.output
    assert not r.stdout and "Traceback" not in r.stderr, r.output
    assert took < 10 and file_tree(tmp_path) == before and not (tmp_path / "out").exists()
    return sentence(r.stderr)


def test_a_missing_snapshot_is_refused_as_replay_refuses_it(tmp_path, no_spark):
    missing = tmp_path / "gone"
    r, _ = invoke("replay", str(HEALTHY / "broker-1"), str(missing))
    assert r.exit_code == 2
    said = refused(tmp_path, str(HEALTHY / "broker-1"), str(missing))
    assert said == sentence(r.stderr) == f"Path {str(missing)!r} does not exist."


def test_a_dir_that_is_not_kafka_is_refused_as_scan_refuses_it(tmp_path, no_spark):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "README.txt").write_text("not a broker")
    r, _ = invoke("scan", str(notes))
    assert r.exit_code == 2 and "holds no Kafka log dir" in r.stderr
    assert refused(tmp_path, str(HEALTHY / "broker-1"), str(notes)) == sentence(r.stderr)


def test_the_parent_of_several_brokers_is_refused_as_scan_refuses_it(tmp_path, no_spark):
    """Before: taken as one snapshot (every partition's replicas became one broker's)."""
    r, _ = invoke("scan", str(HEALTHY))
    assert r.exit_code == 2 and "holds the log dirs of several brokers" in r.stderr
    assert refused(tmp_path, str(HEALTHY)) == sentence(r.stderr)


def test_two_snapshots_of_one_broker_are_refused_as_replay_refuses_them(tmp_path, no_spark):
    """Two snapshots that are both broker 1 of one cluster, with different data (before: both scanned, one of them
    replayed, verdict OK, no finding).  Snapshots of one broker at different times (a manifest's snapshot_time) are
    a history, not a mistake: the latest is replayed."""
    other = tmp_path / "ev" / "broker-2-as-1"
    shutil.copytree(HEALTHY / "broker-2", other)
    (other / "meta.properties").write_bytes(encode(1, 1, "scenario-healthy-3-brokers"))
    r, _ = invoke("replay", str(HEALTHY / "broker-1"), str(other))
    assert r.exit_code == 2
    want = sentence(r.stderr)
    said = refused(tmp_path, str(HEALTHY / "broker-1"), str(other))
    clause = f"two of the log dirs given are broker 1 ({HEALTHY / 'broker-1'} and {other}): give each broker once"
    assert want.startswith(clause) and said.startswith(clause), (want, said)
    manifest = tmp_path / "m.csv"
    manifest.write_text(f"path,snapshot_time\n{HEALTHY / 'broker-1'},2026-01-01\n{other},2026-01-02\n")
    from kforensics.spark.inputs import locate, resolve_snapshots

    assert len(locate(resolve_snapshots([], str(manifest)))) == 2


def test_an_unknown_kafka_version_is_refused_with_the_known_ones(tmp_path, no_spark):
    """Before: ``--kafka-version 9.9`` was taken as Kafka 9.9's rules."""
    said = refused(tmp_path, str(HEALTHY / "broker-1"), extra=("--kafka-version", "9.9"))
    assert "9.9" in said and "known" in said and "3.9" in said, said


def test_events_naming_a_broker_without_a_replica_of_their_partition_are_refused_as_replay_refuses_them(tmp_path):
    """Before: ``replay --scenario`` ended in an internal error (KeyError), and the Spark job replayed the group
    as failed; both refuse it now, before anything is scanned (the job before it starts Spark)."""
    from kforensics.errors import InputError
    from kforensics.scenario.loading import load_scenario

    sdir = tmp_path / "scenario"
    shutil.copytree(UNCLEAN, sdir)
    for b in (1, 2):  # a second partition, on brokers 1 and 2 only
        shutil.copytree(sdir / f"broker-{b}" / "orders-0", sdir / f"broker-{b}" / "orders-1")
    r, _ = invoke("replay", "--scenario", str(sdir))
    assert r.exit_code == 2, r.output
    events = load_scenario(sdir).events
    assert events and {3} <= {ev.get("broker", ev.get("leader")) for ev in events}

    def no_session():
        raise AssertionError("Spark was started")

    snaps = [Snapshot(str(b), b.name, cluster="forked") for b in sorted(sdir.glob("broker-*"))]
    with pytest.raises(InputError) as e:
        run(no_session, snaps, str(tmp_path / "out"), events={("forked", "orders", 0): events,
                                                              ("forked", "orders", 1): events})
    assert not (tmp_path / "out").exists()
    clause, replicas = "the events name broker 3, which holds no replica of orders-1", "(its replicas: 1, 2)"
    for said in (sentence(r.stderr), str(e.value)):
        assert said.startswith(clause) and replicas in said, said
    assert "of cluster forked" in str(e.value)


# ----------------------------------------------------------------------------- the same answer
def _combined(tmp: Path, scenario: Path = UNCLEAN, name: str = "combined") -> list[Path]:
    """A scenario's brokers as KRaft combined nodes (a copy of the metadata log in each log dir): ``scan`` checks
    each broker's replicas against its copy, and ``replay`` checks them again."""
    out = []
    for b in sorted(scenario.glob("broker-*")):
        d = tmp / name / b.name
        shutil.copytree(b, d)
        shutil.copytree(scenario / "controller" / "__cluster_metadata-0", d / "__cluster_metadata-0")
        out.append(d)
    return out


#: the election cases whose brokers all come back: the controller's choice (predicted, offline) in both front ends
ELECTIONS = [p for p in sorted((ROOT / "fixtures" / "elections").glob("election-*"))
             if "alive" not in json.loads((p / "scenario.json").read_text())]


#: the tiered-storage cases (KIP-405, #28): the scan stage and the replay stage get the remote metadata as ``scan`` and
#: ``replay`` do (before: a follower below the leader's local log start replayed as LOSS_COMMITTED in Spark)
TIERED = sorted((ROOT / "fixtures" / "tiered").glob("tiered-*"))


#: real Kafka's open transactions (the lab's set, #24): the coordinator's record says what a restart does to each
LAB_OPEN_TXN = ROOT / "fixtures" / "lab" / "open-transaction-4.4.0" / "before"


#: random election histories (tests/kraft/election_histories.py) the two front ends must agree on
RANDOM_SEEDS = range(12)


def clusters(tmp: Path) -> dict[str, list[Path]]:
    """The clusters compared: combined KRaft nodes, a damaged broker alone, a healthy scenario, the election and
    tiered-storage cases as combined nodes, random histories, every scenario and bundled broker, and every real
    corpus when ../shared is there."""
    out = {"combined": _combined(tmp), "damaged": [ROOT / "fixtures" / "brokers" / "damaged"],
           "healthy": sorted(HEALTHY.glob("broker-*"))}
    for e in ELECTIONS:
        out[e.name] = _combined(tmp, e, e.name)
    for t in TIERED:
        out[t.name] = _combined(tmp, t, t.name)
    for seed in RANDOM_SEEDS:  # random registrations, configs, markers and logs: the same leader, how and verdicts
        h = write_history(tmp / "random", f"random-{seed}", seed)
        out[f"random-{seed}"] = _combined(tmp, h, f"random-{seed}")
    for sc in sorted(p for p in SCENARIOS.iterdir() if (p / "scenario.json").exists()):
        # every scenario: those with a controller's record as combined nodes, the others as their brokers
        out[f"scenario-{sc.name}"] = (_combined(tmp, sc, f"scenario-{sc.name}") if (sc / "controller").exists()
                                      else sorted(sc.glob("broker-*")))
    for b in sorted(d for d in (ROOT / "fixtures" / "brokers").iterdir() if d.is_dir() and d.name != "damaged"):
        out[f"fixture-{b.name}"] = [b]
    if LAB_OPEN_TXN.exists():  # the brokers' archives as the lab kept them
        out["lab-open-transaction"] = sorted(LAB_OPEN_TXN.glob("broker-*.tgz"))
    out.update(real_clusters())
    return out


def real_clusters() -> dict[str, list[Path]]:
    """Every real corpus in ../shared: the multi-broker clusters together, every other log dir on its own."""
    from tests.cli.json_samples import REAL_CLUSTERS, real_log_dirs

    out: dict[str, list[Path]] = {}
    together = {d for c in REAL_CLUSTERS for d in c}
    for c in REAL_CLUSTERS:
        if all(d.exists() for d in c):
            out[f"real-{c[0].parent.parent.name}"] = c
    for d in real_log_dirs():
        if not any(d == t or t in d.parents for t in together):
            out[f"real-{d.relative_to(REALDATA)}".replace("/", "~")] = [d]
    return out


@pytest.fixture(scope="module")
def both(spark, tmp_path_factory):
    """Per cluster: what ``scan --out`` (each broker) and ``replay`` (all of them) say, and the Spark job's tables."""
    tmp = tmp_path_factory.mktemp("one-answer")
    cases = clusters(tmp)
    snaps = [Snapshot(str(d), f"{name}-{i}", cluster=name) for name, dirs in cases.items()
             for i, d in enumerate(dirs)]
    run(spark, snaps, str(tmp / "out"))
    cli = {}
    for name, dirs in cases.items():
        scans = {}
        for i, d in enumerate(dirs):
            r = CliRunner().invoke(main, ["scan", str(d), "--format", "json", "--out", str(tmp / f"scan-{name}-{i}")])
            assert r.exit_code in (0, 1), r.output
            scans[f"{name}-{i}"] = json.loads(r.stdout)
        report = replay_all([str(d) for d in dirs])
        cli[name] = SimpleNamespace(scans=scans, replay=report, impact=replay_impact(report, report.log_dirs))
    tables = {t: read_pandas(str(tmp / "out"), t) for t in ("findings", "verdicts", "partitions", "transactions")}
    return cli, tables, tmp


def _row(code, file, position, severity) -> tuple:
    return code, file, None if position is None or position != position else int(position), str(severity)


def expected_findings(c: SimpleNamespace) -> Counter:
    """``scan``'s findings of every broker, and ``replay``'s (with its consumer and transaction impact) that no
    scan reported: each observation once."""
    scanned = [f for doc in c.scans.values() for f in doc["findings"]]
    keys = {finding_key(SimpleNamespace(code=f["code"], file=f["file"], position=f["position"], line=f["line"],
                                        facts=f["facts"])) for f in scanned}
    replayed = list(c.replay.findings) + [f for p in c.replay.partitions for f in p.findings] + list(c.impact.findings)
    return Counter([_row(f["code"], f["file"], f["position"], f["severity"]) for f in scanned]
                   + [_row(f.code, f.file, f.position, f.severity) for f in replayed if finding_key(f) not in keys])


def test_findings_are_scans_and_replays_each_once(both):
    """Row for row (code, file, position, severity) per cluster.  Before: the replicas' epochs against the
    controller's grants were listed by the scan stage and again by the replay stage (on the real 3-broker KRaft
    cluster, 334 rows where the three scans have 212), and the timeline's findings once per node and once more."""
    cli, tables, _ = both
    f = tables["findings"]
    for name, c in cli.items():
        rows = f[f["cluster"] == name]
        got = Counter(_row(r.code, r.file, r.position, r.severity) for r in rows.itertuples())
        want = expected_findings(c)
        assert got == want, (name, sorted((got - want).items())[:5], sorted((want - got).items())[:5])
    combined = f[f["cluster"] == "combined"]
    assert "GRANT_NOT_SEEN" in set(combined["code"]), "the case where both stages check the grants"


def test_verdicts_and_partitions_are_replays_and_scans(both):
    cli, tables, _ = both
    v, parts = tables["verdicts"], tables["partitions"]
    for name, c in cli.items():
        got = Counter((r.topic, int(r.partition), int(r.broker_id), r.verdict, r.offsets, int(r.records),
                       int(r.leader), r.leader_how) for r in v[v["cluster"] == name].itertuples())
        want = Counter((p.topic, p.partition, r.broker_id, vd.code, json.dumps(vd.offsets), vd.records, p.leader,
                        p.election.how + (f":{p.election.rule}" if p.election.rule else ""))
                       for p in c.replay.partitions for r in p.replicas for vd in r.verdicts)
        assert got == want, name
        cols = ("dir_name", "log_end_offset", "high_watermark", "batch_count")
        for sid, doc in c.scans.items():
            mine = parts[parts["snapshot_id"] == sid]
            assert Counter(tuple(None if x is None or x != x else x for x in (getattr(r, k) for k in cols))
                           for r in mine.itertuples()) == Counter(tuple(p[k] for k in cols)
                                                                  for p in doc["partitions"]), sid
    hows = {r.leader_how for r in v.itertuples() if r.cluster in {e.name for e in ELECTIONS}}
    assert {"offline", "predicted:elr", "predicted:unclean"} <= hows, hows


def test_tiered_partitions_are_scans(both):
    """The ``tiered`` column of each snapshot's partitions (log start, local log start, remote coverage, gaps)
    equals ``scan``'s ``partitions[].tiered``; and the tiered cases' verdicts include what only the tiered path
    gives (``REMOTE_SEGMENTS_UNREACHABLE``, and a follower below the leader's local log start judged ``OK``)."""
    cli, tables, _ = both
    parts, v = tables["partitions"], tables["verdicts"]
    tiered_rows = 0
    for t in TIERED:
        for sid, doc in cli[t.name].scans.items():
            mine = parts[parts["snapshot_id"] == sid]
            got = {r.dir_name: None if r.tiered is None or r.tiered != r.tiered else json.loads(r.tiered)
                   for r in mine.itertuples()}
            want = {p["dir_name"]: p.get("tiered") for p in doc["partitions"]}
            assert got == want, sid
            tiered_rows += sum(x is not None for x in got.values())
    assert tiered_rows >= 2 * len(TIERED), tiered_rows
    codes = {(r.cluster, r.topic, int(r.broker_id), r.verdict) for r in v.itertuples()
             if str(r.cluster).startswith("tiered-")}
    assert ("tiered-unclean-orphans-remote", "orders", 2, "REMOTE_SEGMENTS_UNREACHABLE") in codes, codes
    assert ("tiered-follower-below-local-start", "orders", 2, "OK") in codes, codes
    assert ("tiered-remote-local-gap", "orders", 2, "NOT_CONVERGING") in codes, codes


def test_transactions_are_scans_with_what_a_restart_does(both):
    """The ``transactions`` table of each snapshot equals ``scan --out``'s, row for row, with ``at_restart`` and
    ``coordinator_timeout_at`` (before: neither table had them; only scan's JSON and text said what the restarted
    coordinator does with an open transaction).  The lab's set holds real Kafka's open transactions, each Ongoing
    in the coordinator's record: aborted once its start plus timeout has passed."""
    import pyarrow.parquet as pq

    cli, tables, tmp = both
    spark = tables["transactions"]
    cols = ("topic", "partition", "kind", "producer_id", "first_offset", "last_offset", "at_restart",
            "coordinator_timeout_at")

    def key(row) -> tuple:
        return tuple(None if x is None or x != x else x for x in row)

    compared = 0
    for name, c in cli.items():
        for i, sid in enumerate(c.scans):
            path = tmp / f"scan-{name}-{i}" / "transactions.parquet"
            want = Counter(key(tuple(r[k] for k in cols)) for r in pq.read_table(path).to_pylist()) \
                if path.exists() else Counter()
            mine = spark[spark["snapshot_id"] == sid]
            got = Counter(key(tuple(getattr(r, k) for k in cols)) for r in mine.itertuples())
            assert got == want, (sid, sorted((got - want).items())[:3], sorted((want - got).items())[:3])
            compared += sum(want.values())
    assert compared, "no transaction compared"
    if LAB_OPEN_TXN.exists():
        lab = spark[(spark["cluster"] == "lab-open-transaction") & (spark["kind"] == "open")]
        assert len(lab) and set(lab["at_restart"]) == {"aborted once timed out"}, lab
        assert all(int(t) > 0 for t in lab["coordinator_timeout_at"])
