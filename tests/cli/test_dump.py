"""``kforensics dump`` end to end: kafka-dump-log text, NDJSON, index verification, exit codes, evidence."""

from __future__ import annotations

import hashlib
import json
import os

from click.testing import CliRunner

from tests.conftest import ORACLE, load_manifest, need_shared
from kforensics.cli import main
from kforensics.formats import offset_index
from kforensics.formats.record_batch import RecordData, build_batch

VECTOR_LINES = [
    "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
    "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 "
    "CreateTime: 1700000000000 size: 73 magic: 2 compresscodec: none crc: 3863061579 isvalid: true",
    "| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] payload: hello",
]


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def seg(tmp_path, data, name="00000000000000000000.log"):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def test_text_output_matches_kafka_dump_log_for_the_reference_vector(tmp_path):
    p = seg(tmp_path, build_batch([RecordData(0, 1700000000000, None, b"hello")], partition_leader_epoch=0))
    r = run("dump", "--print-data-log", p)
    assert r.exit_code == 0
    assert r.output.splitlines() == [f"Dumping {p}", "Log starting offset: 0", *VECTOR_LINES]


def test_json_is_ndjson_with_manifest_fields_and_findings(tmp_path):
    need_shared(ORACLE)
    man = load_manifest("zero-gap")
    r = run("dump", "--format", "json", "--deep", str(ORACLE / man["segments"][0]["file"]))
    objs = [json.loads(x) for x in r.output.splitlines()]
    batches = [o for o in objs if o["kind"] == "batch"]
    records = [o for o in objs if o["kind"] == "record"]
    findings = [o for o in objs if o["kind"] == "finding"]
    assert [b["base_offset"] for b in batches] == [0, 2, 4]
    assert [b["recovered"] for b in batches] == [False, False, True]
    # records follow their batch, each naming it by position
    assert records[0]["batch_position"] == batches[0]["position"]
    assert records[0]["value_sha256"] == man["segments"][0]["batches"][0]["records"][0]["valueSha256"]
    (summary,) = [o for o in objs if o["kind"] == "summary"]
    assert summary["kafka_valid_bytes"] == 322 and summary["trailing_invalid_bytes"] > 0
    assert [(f["code"], f["position"]) for f in findings] == [("ZERO_GAP", 322)]
    assert r.exit_code == 1


def test_exit_codes(tmp_path):
    good = seg(tmp_path, build_batch([RecordData(0, 1, None, b"x")]))
    assert run("dump", good).exit_code == 0
    bad = seg(tmp_path, build_batch([RecordData(0, 1, None, b"x")]) + bytes(40), "00000000000000000001.log")
    assert run("dump", bad).exit_code == 1
    assert run("dump", str(tmp_path / "missing.log")).exit_code == 2


def test_verify_index_only_compares_against_the_batch_last_offset(tmp_path):
    b0 = build_batch([RecordData(o, 1, None, b"v") for o in range(3)])  # offsets 0..2
    b1 = build_batch([RecordData(3, 2, None, b"w")])
    seg(tmp_path, b0 + b1)
    idx = seg(tmp_path, offset_index.encode([(2, 0), (4, len(b0))], 0), "00000000000000000000.index")
    r = run("dump", "--verify-index-only", idx)
    assert r.exit_code == 1
    assert "Index offset: 4, log offset: 3" in r.output
    assert "Index offset: 2" not in r.output


def test_index_sanity_check_and_plain_index_dump(tmp_path):
    idx = seg(tmp_path, offset_index.encode([(5, 0), (9, 100)], 0, preallocate_to=64), "00000000000000000000.index")
    r = run("dump", "--index-sanity-check", idx)
    assert f"{idx} passed sanity check." in r.output
    r = run("dump", idx)
    assert r.stdout.splitlines()[1:] == ["offset: 5 position: 0", "offset: 9 position: 100"]


def test_dump_never_touches_the_evidence(tmp_path):
    need_shared(ORACLE)
    files = sorted(str(p) for p in (ORACLE / "logs").glob("*/*.log"))

    def state():
        return {f: (hashlib.sha256(open(f, "rb").read()).hexdigest(), os.stat(f).st_mtime_ns) for f in files}

    before = state()
    dirs_before = {d: sorted(os.listdir(d)) for d in {os.path.dirname(f) for f in files}}
    run("dump", "--deep", "--format", "json", *files)
    assert state() == before
    assert {d: sorted(os.listdir(d)) for d in dirs_before} == dirs_before


def test_unknown_files_are_reported_not_ignored(tmp_path):
    p = seg(tmp_path, b"hello", "notes.txt")
    r = run("dump", p)
    assert f"Ignoring unknown file {p}" in r.output
    assert r.exit_code == 1


def test_non_consecutive_offsets_are_reported_on_stderr(tmp_path):
    p = seg(tmp_path, build_batch([RecordData(0, 1, None, b"a")]) + build_batch([RecordData(5, 2, None, b"b")]))
    r = run("dump", p)
    assert r.stderr.splitlines()[:2] == [f"Non-consecutive offsets in {p}", "  0 is followed by 5"]
    assert "Non-consecutive" not in r.stdout
