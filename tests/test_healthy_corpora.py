"""On the healthy real corpora in ../shared, no finding at low or above whose code the catalogue marks "not in a
healthy cluster".

Which corpora are healthy is decided here from ``realdata/CATALOG.md`` and
the evidence, and every corpus there must be decided (a new one fails the
test until someone says which it is).  Where a copy left out a broker's file
(``_manifests/<corpus>.tsv`` lists every file of the commit and whether it
was extracted), findings about that partition are the copy's, not Kafka's,
and are left out; every other exception is listed by corpus, code and file
with its reason.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kforensics.catalogue import CATALOGUE
from kforensics.findings import Finding
from kforensics.severity import Severity
from tests.conftest import REALDATA, need_shared

#: healthy corpora: corpus dir -> (each broker's log dir in it, why it is healthy).  Replicas of one cluster are
#: replayed together too.
HEALTHY: dict[str, tuple[list[str], str]] = {
    "hiage__kafka-raft__c5f680e": (
        ["data/kafka1", "data/kafka2", "data/kafka3"],
        "three KRaft brokers (3.3.1) of one cluster: replicated partitions identical, metadata logs prefixes of each "
        "other (copied moments apart)"),
    "cesaralcancio__study-kafka__66aa23e": (
        ["data/kafka1", "data/kafka2", "data/kafka3", "data/kafka4", "data/kafka5"],
        "five ZooKeeper-mode brokers (2.7.0) of one cluster, replicas byte-identical: CATALOG.md's negative control"),
    "asayers__kafkalite__1b639b2": (["tests/test-data/fs-data"], "a 0.8/0.9 broker's log dir, v0 messages"),
    "xpxwo100__bullShit__3ba36dd": (["tmp/kafka-logs"], "one 0.10.1 broker, v1 messages"),
    "williamjie__kafakainfo__fb12177": (["data"], "one 1.0.0 broker"),
    "KAIPASUBHASH__kafka-logs__4008d90": (["."], "one 0.11..2.3 broker"),
    "cobyforrester__kafka__77a7583": (["data/kafka"], "one 2.6.0 broker with a compacted __consumer_offsets"),
    "DonaldY__kafka-2.7.1__13bb4a8": (["kafka-logs"], "one 2.7.1 broker: compaction, retention"),
    "Danielowo2000__BigDataTechnologies-Version-2__63c2bf1": (
        ["kafka_2.13-3.5.0/kraft-combined-logs"], "a 3.5.0 KRaft node shut down cleanly (its other log dir is not "
                                                   "healthy: see NOT_HEALTHY)"),
    "Niloufar1171__LDI-POC__8030792": (["."], "a 3.7.0 KRaft node"),
    "ronem123__rupia-transaction-service__5d88e97": (["kafka-logs"], "a long-lived 4.1 KRaft node with snapshots"),
}

#: corpora (or log dirs) that are not healthy, and why
NOT_HEALTHY: dict[str, str] = {
    "suryavansh__food-ordering-service__dcd0c80/kafka/data":
        "copied while the broker ran: three segments were not copied (over 3 MiB) and _confluent-metrics-0's "
        "checkpointed high watermark is one beyond its log",
    "Danielowo2000__BigDataTechnologies-Version-2__63c2bf1/kafka_data":
        "ten partitions (e.g. RIDERSNEARMOUNTAINVIEW-0, __transaction_state-44) have empty segments under a "
        "checkpointed high watermark of up to 16: committed records the segments do not hold",
}

#: findings left out of the check, by (corpus, code, file ending) -> why: what the copy, not the broker, did
COPY_ARTIFACTS: dict[tuple[str, str, str], str] = {
    ("Niloufar1171__LDI-POC__8030792", "CHECKPOINT_ENTRY_WITHOUT_PARTITION", "offset-checkpoint"):
        "the repository was uploaded file by file (CATALOG.md) and holds no file of __consumer_offsets-14, which "
        "the broker's checkpoints name",
}


def not_copied(corpus: str) -> set[str]:
    """Partition dirs (corpus-relative) where the copy left out a segment (.log): the manifest's status."""
    path = REALDATA / "_manifests" / f"{corpus}.tsv"
    out = set()
    with path.open(encoding="utf-8") as f:
        rows = [r for r in csv.reader((line for line in f if not line.startswith("#")), delimiter="\t")]
    for row in rows[1:]:
        if len(row) >= 3 and row[0].endswith(".log") and row[2] != "extracted":
            out.add(str(Path(row[0]).parent))
    return out


def unhealthy(corpus: str, findings: list[Finding]) -> list[str]:
    """The findings at low or above whose code cannot occur in a healthy cluster, less the copy's artifacts."""
    root = REALDATA / corpus
    skipped = {str((root / d).resolve()) for d in not_copied(corpus)}
    out = []
    for f in findings:
        if f.severity < Severity.LOW or CATALOGUE[f.code].healthy:
            continue
        file = str(Path(f.file).resolve()) if f.file else ""
        if any(file == d or file.startswith(d + "/") for d in skipped):
            continue
        if any(c == corpus and code == f.code and file.endswith(end) for (c, code, end) in COPY_ARTIFACTS):
            continue
        out.append(f"{f.severity} {f.code} {f.file}: {f.message}")
    return out


def scan_findings(log_dir: Path) -> list[Finding]:
    from kforensics.scan.broker import resolve_log_dirs, scan_log_dirs

    return list(scan_log_dirs(resolve_log_dirs([str(log_dir)])).all_findings())


def replay_findings(log_dirs: list[Path]) -> tuple[list[Finding], set[str]]:
    """Every finding of the replay of these brokers, and every verdict code it gave."""
    from kforensics.replay.report import replay_all

    report = replay_all([str(d) for d in log_dirs])
    found = list(report.findings) + [f for p in report.partitions for f in p.findings]
    return found, {v.code for p in report.partitions for r in p.replicas for v in r.verdicts}


def test_every_corpus_is_decided():
    root = need_shared(REALDATA)
    corpora = {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("_")}
    decided = set(HEALTHY) | {k.split("/", 1)[0] for k in NOT_HEALTHY}
    assert corpora == decided, f"say whether these are healthy: {sorted(corpora - decided)}"


@pytest.mark.parametrize("corpus", sorted(HEALTHY))
def test_scan_of_a_healthy_corpus_raises_nothing_a_healthy_cluster_cannot_show(corpus):
    root = need_shared(REALDATA / corpus)
    for d in HEALTHY[corpus][0]:
        bad = unhealthy(corpus, scan_findings(root / d))
        assert not bad, (corpus, d, bad[:5])


@pytest.mark.parametrize("corpus", [c for c, (dirs, _) in sorted(HEALTHY.items()) if len(dirs) > 1])
def test_replay_of_a_healthy_cluster_loses_nothing_and_raises_nothing_a_healthy_cluster_cannot_show(corpus):
    from kforensics.catalogue import VERDICTS

    root = need_shared(REALDATA / corpus)
    found, verdicts = replay_findings([root / d for d in HEALTHY[corpus][0]])
    assert not unhealthy(corpus, found), unhealthy(corpus, found)[:5]
    assert verdicts and all(VERDICTS[v].healthy for v in verdicts), verdicts


@pytest.mark.parametrize("where", sorted(NOT_HEALTHY))
def test_the_check_fails_on_the_corpora_that_are_not_healthy(where):
    # what the test above asserts can fail: the same check on the damaged corpora finds what CATALOG.md's notes
    # and the evidence show (committed offsets the segments lack)
    corpus, log_dir = where.split("/", 1)
    root = need_shared(REALDATA / corpus)
    findings = scan_findings(root / log_dir)
    found = [f for f in findings if f.code == "HW_ABOVE_LEO"]
    assert found and any(f.severity >= Severity.LOW and not CATALOGUE[f.code].healthy for f in found)
    kept = unhealthy(corpus, findings)
    assert kept, where  # the manifest rule leaves the partitions whose every segment was copied
