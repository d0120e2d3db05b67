"""``kforensics spark`` before and around the job, without a SparkSession: outputs refused before Spark starts (and
nothing created, nothing touched), usage errors, an unreachable master, and what the job's functions do with a
failed task or a failed replay; the summary's text and exit code."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from kforensics.cli import main
from kforensics.outputs import relation
from kforensics.severity import Severity
from kforensics.spark.report import answer_line, exit_code, render_text, summary_line
from tests.conftest import ROOT, file_tree

SCENARIO = ROOT / "fixtures" / "scenarios" / "kip101-s2-two-hard-failures"
UNCLEAN = ROOT / "fixtures" / "scenarios" / "unclean-leader-election"


@pytest.fixture
def evidence(tmp_path):
    """A broker, a controller's metadata log and a manifest beside them, as an incident archive would hold them."""
    ev = tmp_path / "ev"
    shutil.copytree(SCENARIO / "broker-1", ev / "broker-1")
    shutil.copytree(UNCLEAN / "controller", ev / "controller")
    return ev


@pytest.fixture
def no_spark(monkeypatch):
    """Fail the test if anything starts Spark."""
    import kforensics.spark.session as spark_session

    def refuse(*a, **k):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(spark_session, "session", refuse)


def spark_cli(args: list[str], cwd: Path | None = None):
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        t = time.perf_counter()
        r = CliRunner().invoke(main, ["spark", *args])
        return r, time.perf_counter() - t
    finally:
        os.chdir(old)


def _cases(ev: Path, tmp: Path) -> dict[str, tuple[list[str], Path | None]]:
    """Each way of pointing --out into, onto or above the evidence: (arguments, working directory)."""
    b1 = ev / "broker-1"
    (tmp / "link-to-broker").symlink_to(b1, target_is_directory=True)
    (tmp / "link-to-ev").symlink_to(ev, target_is_directory=True)
    (tmp / "meta").mkdir()
    manifest = tmp / "meta" / "m.csv"
    manifest.write_text(f"path,broker_id\n{b1},1\n")
    return {
        "equal": ([str(b1), "--out", str(b1)], None),
        "inside": ([str(b1), "--out", str(b1 / "forensics")], None),
        "above": ([str(b1), "--out", str(ev)], None),
        "above --overwrite": ([str(b1), "--out", str(ev), "--overwrite"], None),
        "inside --overwrite": ([str(b1), "--out", str(b1 / "forensics"), "--overwrite"], None),
        "grandparent --overwrite": ([str(b1), "--out", str(tmp), "--overwrite"], None),
        "via a symlink to the evidence": ([str(b1), "--out", str(tmp / "link-to-broker" / "out")], None),
        "evidence given via a symlink": ([str(tmp / "link-to-ev" / "broker-1"), "--out", str(b1 / "out")], None),
        "via ..": ([str(b1), "--out", str(tmp / "elsewhere" / ".." / "ev" / "broker-1" / "x")], None),
        "relative": (["ev/broker-1", "--out", "ev/broker-1/out"], tmp),
        "relative above": (["ev/broker-1", "--out", ".", "--overwrite"], tmp),
        "file:// URI": ([str(b1), "--out", f"file://{b1}/out"], None),
        "a manifest's entry": (["--manifest", str(manifest), "--out", str(b1 / "out")], None),
        "above the manifest": (["--manifest", str(manifest), "--out", str(tmp / "meta"), "--overwrite"], None),
        "a --metadata input": ([str(b1), "--metadata", f"c={ev / 'controller'}", "--out",
                                str(ev / "controller" / "out")], None),
    }


CASES = ["equal", "inside", "above", "above --overwrite", "inside --overwrite", "grandparent --overwrite",
         "via a symlink to the evidence", "evidence given via a symlink", "via ..", "relative", "relative above",
         "file:// URI", "a manifest's entry", "above the manifest", "a --metadata input"]


@pytest.mark.parametrize("case", CASES)
def test_output_into_onto_or_above_evidence_is_refused_before_spark_starts(case, evidence, tmp_path, no_spark):
    args, cwd = _cases(evidence, tmp_path)[case]
    before = file_tree(tmp_path)
    links = sorted(str(p) for p in tmp_path.rglob("*") if p.is_symlink())
    r, took = spark_cli(args, cwd)
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert len(r.stderr.splitlines()) == 1 and "the evidence" in r.stderr, r.stderr
    assert took < 10, f"refused after {took:.1f} s"
    # nothing created, nothing changed, nothing deleted: not one file, not one directory
    assert file_tree(tmp_path) == before
    assert sorted(str(p) for p in tmp_path.rglob("*") if p.is_symlink()) == links
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".staging") or p.name in ("forensics", "out")]


def test_existing_output_is_refused_before_spark_starts(evidence, tmp_path, no_spark):
    out = tmp_path / "out"
    (out / "partitions").mkdir(parents=True)
    (out / "partitions" / "x.parquet").write_bytes(b"earlier run")
    before = file_tree(tmp_path)
    r, took = spark_cli([str(evidence / "broker-1"), "--out", str(out)])
    assert r.exit_code == 2 and "--overwrite" in r.stderr, r.output
    assert took < 10 and file_tree(tmp_path) == before


def test_overwrite_replaces_only_kforensics_tables(evidence, tmp_path, no_spark):
    """--overwrite never deletes what is not a table of an earlier run (a home directory given by mistake)."""
    out = tmp_path / "home"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "thesis.tex").write_text("years of work")
    (out / "partitions").mkdir()
    before = file_tree(tmp_path)
    r, _ = spark_cli([str(evidence / "broker-1"), "--out", str(out), "--overwrite"])
    assert r.exit_code == 2 and "notes" in r.stderr, r.output
    assert file_tree(tmp_path) == before and (out / "partitions").is_dir()


def test_refusal_happens_before_a_jvm_starts():
    """As a user runs it: exit 2 in well under Spark's start-up time, and not one line from Spark."""
    b1 = SCENARIO / "broker-1"
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "kforensics.cli", "spark", str(b1), "--out", str(b1 / "forensics")],
                       capture_output=True, text=True, timeout=120)
    took = time.perf_counter() - t
    assert r.returncode == 2 and "is inside the evidence" in r.stderr, r.stderr
    assert took < 8, f"{took:.1f} s"
    assert not [m for m in ("log4j", "SparkContext", "WARN", "Using Spark") if m in r.stderr], r.stderr
    assert not (b1 / "forensics").exists()


@pytest.mark.parametrize("out,ev,want", [
    ("s3://bucket/ev/out", "s3://bucket/ev", "inside"),
    ("s3a://bucket/ev/out", "s3://bucket/ev", "inside"),  # one store, two schemes
    ("S3://Bucket/ev", "s3://bucket/ev/b1.tgz", "above"),
    ("s3://bucket/evidence", "s3://bucket/ev", None),
    ("s3://other/ev/out", "s3://bucket/ev", None),
    ("hdfs:///forensics/ev/x", "hdfs://nn:8020/forensics/ev", "inside"),  # the default namenode may be that one
    ("hdfs://nn:8020/forensics", "hdfs:///forensics/ev/b1.tgz", "above"),
    ("gs://b/a/../ev/x", "gcs://b/ev", "inside"),
    ("hdfs://nn/ev", "/ev", None),
    ("/ev/b1.tgz", "/ev/b1.tgz!/data/kafka-logs", "equal"),
    ("/ev", "/ev/b1.tgz!/data/kafka-logs", "above"),
])
def test_remote_and_archive_locations(out, ev, want):
    assert relation(out, ev) == want


def test_file_uri_and_local_path_are_one_location(tmp_path):
    (tmp_path / "ev").mkdir()
    assert relation(f"file://{tmp_path}/ev/x", tmp_path / "ev") == "inside"
    assert relation(tmp_path, f"file://{tmp_path}/ev") == "above"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_master_is_one_line_and_exit_2(tmp_path, no_spark):
    """Before: 77 s of retries, 132 lines of Spark's log, then an 'internal error' (exit 3) of a whole Java stack."""
    out = tmp_path / "out"
    r, took = spark_cli([str(SCENARIO / "broker-1"), "--out", str(out), "--master",
                         f"spark://127.0.0.1:{_free_port()}"])
    assert r.exit_code == 2, r.output
    assert len(r.stderr.strip().splitlines()) == 1 and "cannot reach the Spark master" in r.stderr, r.stderr
    assert took < 15 and not out.exists()


@pytest.mark.parametrize("broker_id", ["3000000000", "100000000000000000000", "abc", "-2147483649"])
def test_manifest_broker_id_beyond_int32_is_a_usage_error(broker_id, tmp_path, no_spark):
    """Before: 3000000000 was taken (and became null in every table), 1e20 crashed the job on the driver."""
    m = tmp_path / "m.csv"
    m.write_text(f"path,broker_id\n{SCENARIO / 'broker-1'},{broker_id}\n")
    r, took = spark_cli(["--manifest", str(m), "--out", str(tmp_path / "out")])
    assert r.exit_code == 2 and "broker_id" in r.stderr and "int32" in r.stderr, r.output
    assert took < 10 and not (tmp_path / "out").exists()


def test_manifest_that_is_not_one_is_a_usage_error(tmp_path, no_spark):
    m = tmp_path / "m.json"
    m.write_text('{"snapshots": [{"broker_id": 1}]}')
    r, _ = spark_cli(["--manifest", str(m), "--out", str(tmp_path / "out")])
    assert r.exit_code == 2 and "path" in r.stderr, r.output


# ----------------------------------------------------------------------------- a failed task, a failed replay
def _task(**over):
    from kforensics.spark.schemas import TASK_COLUMNS

    row = {"snapshot_id": "s", "log_dir": "", "dir_name": "orders-0",
           "raw": json.dumps(["", "orders-0".encode().hex()]), "broker_id": 1, "cluster": "c",
           "snapshot_time": None, "context": json.dumps({}), "part": "s-s--orders-0", "topic": "orders",
           "partition": 0, **over}
    return pd.DataFrame([row], columns=TASK_COLUMNS)


def test_a_failed_scan_task_is_a_finding_and_a_status(tmp_path):
    from kforensics.epoch.versions import LATEST
    from kforensics.spark.scan_task import scan_tasks

    staging = tmp_path / "staging"
    info = {"s": {"spec": str(SCENARIO / "broker-1"), "log_dirs": [""], "transaction_state": False}}
    frames = [_task(), _task(context="{not json", part="s-s--bad", dir_name="bad-0",
                             raw=json.dumps(["", "orders-0".encode().hex()]))]
    out = pd.concat(list(scan_tasks(str(staging), LATEST, info)(iter(frames))))
    assert list(out["status"]) == ["ok", "failed"] and "JSONDecodeError" in out["error"].iloc[1]
    # one file per table, cluster (and topic) for the whole task, not one per partition dir
    files = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*.parquet"))
    assert [f for f in files if f.startswith("findings/")] and len([f for f in files if f.startswith("findings/")]) == 1
    f = _flat(staging / "findings")
    assert "SCAN_FAILED" in list(f["code"]) and set(f["cluster"]) == {"c"}
    assert not [f for f in files if "s-s--bad" in f], "no batch rows without their partition row"
    # a small dir's batch rows join the task's file for its cluster and topic (no file per dir)
    batch_files = [f for f in files if f.startswith("batches/")]
    assert len(batch_files) == 1 and batch_files[0].startswith("batches/cluster=c/topic=orders/s-")
    parts = _flat(staging / "partitions")
    assert list(parts["dir_name"]) == ["orders-0"] and parts["batch_count"].iloc[0] > 0
    assert len(_flat(staging / "batches")) == parts["batch_count"].iloc[0], "only the scanned dir's rows"
    assert sum(json.loads(out["findings"].iloc[1]).values()) == 1  # the summary counts it


@pytest.mark.parametrize("limit", [4096, 1], ids=["rows-held", "file-of-its-own"])
def test_a_scan_task_failing_after_its_scan_leaves_no_batch_rows(tmp_path, monkeypatch, limit):
    """A dir whose scan succeeded but whose task then fails (here: building its report rows) leaves no batch rows:
    neither the rows held for the task's file nor a file of its own (a larger dir's)."""
    import kforensics.spark.batch_files as batch_files
    from kforensics.epoch.versions import LATEST
    from kforensics.spark import scan_task

    monkeypatch.setattr(batch_files, "INLINE_ROWS", limit)
    monkeypatch.setattr(batch_files.DirBatches.__init__, "__defaults__", (None, limit))
    real = scan_task.report_rows
    calls = []

    def failing(report, context):
        calls.append(1)
        if len(calls) == 1:  # the first dir: after its scan
            raise RuntimeError("boom after the scan")
        return real(report, context)

    monkeypatch.setattr(scan_task, "report_rows", failing)
    staging = tmp_path / "staging"
    info = {"s": {"spec": str(SCENARIO / "broker-1"), "log_dirs": [""], "transaction_state": False}}
    frames = [_task(), _task(part="s-s--orders-0-again")]
    out = pd.concat(list(scan_task.scan_tasks(str(staging), LATEST, info)(iter(frames))))
    assert list(out["status"]) == ["failed", "ok"] and "boom after the scan" in out["error"].iloc[0]
    batches = _flat(staging / "batches")
    parts = _flat(staging / "partitions")
    assert len(parts) == 1 and len(batches) == parts["batch_count"].iloc[0], "only the dir that succeeded"
    assert not [p for p in staging.rglob("s-s--orders-0.parquet") if "batches" in p.parts]


def _flat(path):
    """A staged table's rows (files hold their cluster and topic columns: no partitioning inferred)."""
    import pyarrow.dataset as ds

    return ds.dataset(str(path), format="parquet", partitioning=None).to_table().to_pandas()


def test_a_failed_replay_is_a_finding_and_the_other_groups_go_on(tmp_path):
    """Before: an exception in one group's replay failed the whole Spark job."""
    from kforensics.scan.broker import scan_log_dirs
    from kforensics.spark.replay import Shared, replay_groups
    from kforensics.tables.replay_tables import BATCH_COLUMNS, PARTITION_COLUMNS
    from kforensics.tables.report_tables import partitions_table
    from kforensics.tables.scan_tables import BatchesWriter

    frames = []
    for b in (1, 2):
        w = BatchesWriter(str(tmp_path / f"b{b}.parquet"), {"cluster": "c", "broker_id": b, "snapshot_id": f"s{b}"})
        report = scan_log_dirs([SCENARIO / f"broker-{b}"], batch_sink=w)
        w.close()
        frames.append((pd.read_parquet(tmp_path / f"b{b}.parquet"),
                       partitions_table(report, {"cluster": "c", "broker_id": b, "snapshot_id": f"s{b}"}).to_pandas()))
    batches = pd.concat([b for b, _ in frames])[BATCH_COLUMNS]
    partitions = pd.concat([p for _, p in frames])[PARTITION_COLUMNS]
    broken = partitions.assign(topic="broken", recovery='{"no_such_field": 1}')
    staging = tmp_path / "staging"
    fn = replay_groups(Shared(), str(staging))
    good = fn(batches, partitions)
    bad = fn(batches.assign(topic="broken"), broken)
    assert list(good["status"]) == ["ok"] and good["verdicts"].iloc[0] >= 2
    assert list(bad["status"]) == ["failed"] and "TypeError" in bad["error"].iloc[0]
    findings = _flat(staging / "findings")
    failed = findings[findings["code"] == "REPLAY_FAILED"]
    assert len(failed) == 1 and failed["severity"].iloc[0] == "high"
    assert json.loads(failed["facts"].iloc[0])["topic"] == "broken" and failed["cluster"].iloc[0] == "c"
    assert set(_flat(staging / "verdicts")["topic"]) == {"orders"}
    assert json.loads(bad["findings"].iloc[0]) == {"high": 1} and json.loads(good["summary"].iloc[0])


# ----------------------------------------------------------------------------- the summary
def _summary(**over):
    base = {"snapshots": 2, "partitions": 3, "failed_tasks": [], "failed_groups": [], "unreadable_snapshots": [],
            "findings": {"critical": 0, "high": 0, "medium": 0, "low": 2, "info": 1}, "out": "/tmp/o",
            "clusters": [{"cluster": "c1", "snapshots": 2, "partitions": 3, "batches": 10, "bytes": 100,
                          "failed_tasks": 0, "failed_groups": 0,
                          "findings": {"critical": 0, "high": 0, "medium": 0, "low": 2, "info": 1},
                          "verdicts": {"OK": 2, "LOSS_COMMITTED": 1}}]}
    return {**base, **over}


def test_exit_code_follows_fail_on_and_failures_always_count():
    assert exit_code(_summary(), Severity.HIGH) == 0
    assert exit_code(_summary(), Severity.LOW) == 1
    failed = [{"snapshot_id": "s", "dir_name": "t-0", "status": "failed", "error": "ValueError: x"}]
    assert exit_code(_summary(failed_tasks=failed), Severity.CRITICAL) == 1
    assert exit_code(_summary(failed_groups=[{"cluster": "c", "topic": "t", "partition": 0, "error": "e"}]),
                     Severity.CRITICAL) == 1
    assert exit_code(_summary(unreadable_snapshots=["broken"]), Severity.CRITICAL) == 1


def test_text_names_the_failures_and_ends_with_one_summary_line():
    failed = [{"snapshot_id": "s\x1b[31m", "dir_name": "t-0", "status": "failed", "error": "ValueError: x"}]
    buf = io.StringIO()
    render_text(_summary(failed_tasks=failed, unreadable_snapshots=["broken"]), buf)
    text = buf.getvalue()
    lines = text.splitlines()
    # the answer first, as scan and replay give it: the LOSS_COMMITTED replica, and what could not be judged
    assert lines[0] == ("answer: 1 replica loses records or cannot recover (LOSS_COMMITTED 1); unknown where 2 "
                        "task(s), replay(s) or snapshot(s) failed")
    healthy = {"clusters": [{"verdicts": {"OK": 6}}], "partitions": 2}
    assert answer_line(healthy) == ("answer: nothing lost: 2 partition(s) in 1 cluster(s), no verdict that fails "
                                    "the replay")
    assert lines[1] == "clusters" and lines[2].split()[:5] == ["cluster", "snapshots", "partitions", "batches",
                                                               "failed"]
    assert lines[3].split()[0] == "c1" and lines[3].endswith("OK 2, LOSS_COMMITTED 1")
    assert "failed tasks (1; SCAN_FAILED in the findings table)" in text and "s\\x1b[31m t-0: ValueError: x" in text
    assert "unreadable snapshots (1; SNAPSHOT_UNREADABLE or NO_LOG_DIR): broken" in text
    assert lines[-1] == summary_line(_summary(failed_tasks=failed)) == (
        "summary: 3 findings (2 low, 1 info), 2 snapshot(s), 3 partition(s), 1 failed task(s), 0 failed replay(s)")
    assert "\x1b" not in text


# ----------------------------------------------------------------------------- planning on the driver
def test_ignored_archive_members_are_counted_all_and_reported_once(tmp_path):
    """Archive findings as plan_log_dir reports them for scan (before: a second ARCHIVE_MEMBERS_IGNORED of Spark's
    own, and the count of the names kept, capped at 100, in the brokers table)."""
    import tarfile

    from kforensics.spark.inputs import Snapshot
    from kforensics.spark.plan import plan

    archive = tmp_path / "b1.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(SCENARIO / "broker-1", arcname="data/kafka-logs")
        for i in range(150):
            info = tarfile.TarInfo(f"data/kafka-logs/link-{i}")
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
    planned = plan([Snapshot(str(archive), "b1")], str(tmp_path / "staging"))
    ignored = [f for f in planned.findings["b1"] if f.code == "ARCHIVE_MEMBERS_IGNORED"]
    assert len(ignored) == 1 and ignored[0].facts["count"] == 150
    assert planned.brokers[0]["archive_members_ignored"] == 150
    assert list(planned.tasks["dir_name"]) == ["orders-0"]


def test_an_archive_cut_before_any_log_dir_is_refused_as_scan_refuses_it(tmp_path, no_spark):
    """Before: planned as a snapshot of NO_LOG_DIR and ARCHIVE_TRUNCATED findings, exit 1 after Spark ran; ``scan``
    refuses it (exit 2) with a sentence that says where the archive stops."""
    import tarfile

    (tmp_path / "notes.bin").write_bytes(os.urandom(20_000))
    full = tmp_path / "full.tgz"
    with tarfile.open(full, "w:gz") as tar:
        tar.add(tmp_path / "notes.bin", arcname="snap/AAA-notes.bin")
        tar.add(SCENARIO / "broker-1", arcname="snap/kafka-logs")
    cut = tmp_path / "cut.tgz"
    cut.write_bytes(full.read_bytes()[:12_000])
    scan = CliRunner().invoke(main, ["scan", str(cut)])
    r, took = spark_cli([str(cut), "--out", str(tmp_path / "out")])
    assert scan.exit_code == r.exit_code == 2, r.output
    said = r.stderr.strip().splitlines()[-1].split("kforensics: ", 1)[1]
    assert said in scan.stderr and "holds no Kafka log dir" in said, (r.stderr, scan.stderr)
    assert not (tmp_path / "out").exists() and took < 10


def test_spark_submit_entry_is_the_spark_command(evidence, tmp_path):
    """spark-submit's script runs ``kforensics spark`` itself: the same refusals, sentences and exit codes (before:
    an argparse copy of its options that took ``--kafka-version 9.9`` and differed in its messages).  Run as
    spark-submit runs it, as a script, outside its package."""
    import kforensics.spark.submit as submit

    b1 = evidence / "broker-1"
    m = tmp_path / "m.csv"
    m.write_text(f"path,broker_id\n{b1},3000000000\n")
    before = file_tree(tmp_path)
    for args in ([str(b1), "--out", str(b1 / "out")], [str(b1), "--out", str(tmp_path), "--overwrite"],
                 ["--manifest", str(m), "--out", str(tmp_path / "o")],
                 [str(b1), "--out", str(tmp_path / "o"), "--kafka-version", "9.9"],
                 [str(b1), str(tmp_path / "missing"), "--out", str(tmp_path / "o")]):
        script = subprocess.run([sys.executable, submit.__file__, *args], capture_output=True, text=True,
                                timeout=120, cwd=tmp_path)
        command = CliRunner().invoke(main, ["spark", *args])
        assert script.returncode == command.exit_code == 2, (args, script.stderr, command.output)
        assert script.stderr.splitlines()[-1] == command.stderr.splitlines()[-1], args
        assert not [m for m in ("log4j", "SparkContext", "WARN") if m in script.stderr], script.stderr
    assert file_tree(tmp_path) == before


def test_a_failed_job_is_an_internal_error_of_one_line(tmp_path, monkeypatch):
    """The job itself failing (not a task or a group: those are findings) exits 3 with one line; the Java stack of
    a Py4J error is not that line; --debug shows the traceback."""
    import kforensics.spark.job as job

    class Py4JJavaError(Exception):
        java_exception = type("J", (), {"toString": lambda self: "org.apache.spark.SparkException: Job aborted due "
                                        "to stage failure: executor lost\n\tat org.apache.spark.Foo(Foo.scala:1)"})()

    Py4JJavaError.__module__ = "py4j.protocol"

    def failing(*a, **k):
        raise Py4JJavaError("An error occurred while calling o1.collect.\n: org.apache.spark.SparkException: ...")

    monkeypatch.setattr(job, "run", failing)
    r = CliRunner().invoke(main, ["spark", str(SCENARIO / "broker-1"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 3, r.output
    assert r.stderr.strip().splitlines() == [
        "kforensics: internal error: SparkJobFailed: the Spark job failed: org.apache.spark.SparkException: Job "
        "aborted due to stage failure: executor lost (run with --debug for the traceback)"]
    r = CliRunner().invoke(main, ["--debug", "spark", str(SCENARIO / "broker-1"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 3 and "Traceback" in r.stderr and "Py4JJavaError" in r.stderr
