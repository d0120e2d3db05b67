"""``dump``'s words about a damaged file, its JSON flags, keys and payloads, and kafka-dump-log's flags."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kforensics.cli import main
from kforensics.formats.record_batch import RecordData, build_batch
from tests.conftest import ORACLE, ROOT, load_manifest, need_shared

FIXTURES = ROOT / "fixtures" / "brokers"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def tail(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if not line.startswith(("baseOffset", "Dumping", "Log starting"))]


def test_a_zero_gap_with_batches_after_it_is_not_called_invalid_bytes_at_the_end():
    # HEAD: "Found 4310 invalid bytes at the end of 00000000000000000000.log (from byte 214; ...)": 4310 counts the
    # two valid batches after the gap, and the gap is not at the end
    r = run("dump", FIXTURES / "damaged" / "zeros-0" / "00000000000000000000.log")
    assert tail(r.stdout) == [
        "Kafka's reader stops at byte 214 of 00000000000000000000.log (record size 0 below minimum (14): "
        "kafka-dump-log throws CorruptRecordException there); valid batches follow:",
        "  bytes 214..4309: 4096 zero bytes",
        "  bytes 4310..4523: 2 valid batches, offsets 2..3 (listed above with recovered: true)",
    ]
    assert "invalid bytes at the end" not in r.stdout


def test_garbage_and_an_implausible_size_say_what_is_there():
    r = run("dump", FIXTURES / "damaged" / "garbage-0" / "00000000000000000000.log")
    assert tail(r.stdout)[1:] == ["  bytes 214..333: 120 bytes unreadable (unknown magic 102)",
                                  "  bytes 334..547: 2 valid batches, offsets 2..3 (listed above with recovered: true)"]
    r = run("dump", FIXTURES / "damaged-clean" / "hostile-0" / "00000000000000000000.log")
    lines = tail(r.stdout)
    assert 'kafka-dump-log reports "Found 396 invalid bytes at the end" there); valid batches follow:' in lines[0]
    assert lines[1] == "  bytes 132..263: 132 bytes, an entry whose size field claims 2147483659 bytes, past the end " \
                       "of the file"


@pytest.mark.parametrize("broker,name,count", [("damaged", "torn-0", 30), ("damaged", "tail-0", 2048),
                                               ("damaged-clean", "trailing-0", 9)])
def test_kafka_dump_logs_line_stays_where_it_is_true(broker, name, count):
    r = run("dump", FIXTURES / broker / name / "00000000000000000000.log")
    assert tail(r.stdout) == [f"Found {count} invalid bytes at the end of 00000000000000000000.log"]


def test_batches_between_two_damaged_ranges(tmp_path):
    a = build_batch([RecordData(0, 1, None, b"a")], partition_leader_epoch=0)
    b = build_batch([RecordData(1, 2, None, b"b")], partition_leader_epoch=0)
    c = build_batch([RecordData(2, 3, None, b"c"), RecordData(3, 3, None, b"d")], partition_leader_epoch=0)
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(a + bytes(100) + b + c + c[:30])
    r = run("dump", seg)
    start = len(a) + 100
    assert tail(r.stdout)[1:] == [
        f"  bytes {len(a)}..{start - 1}: 100 zero bytes",
        f"  bytes {start}..{start + len(b) + len(c) - 1}: 2 valid batches, offsets 1..3 (listed above with "
        "recovered: true)",
        f"  bytes {start + len(b) + len(c)}..{start + len(b) + len(c) + 29}: 30 bytes, a torn batch: it declares "
        f"{len(c)} bytes",
    ]
    doc = [json.loads(x) for x in run("dump", "--format", "json", seg).stdout.splitlines()]
    (summary,) = [o for o in doc if o["kind"] == "summary"]
    assert summary["damaged_ranges"] == [
        {"code": "ZERO_GAP", "position": len(a), "end": start, "length": 100},
        {"code": "TRUNCATED_BATCH", "position": start + len(b) + len(c), "end": start + len(b) + len(c) + 30,
         "length": 30}]
    assert summary["recovered_batches"] == 2 and summary["kafka_stop_kind"] == "corrupt"
    assert summary["kafka_valid_bytes"] == len(a)


def test_the_oracle_zero_gap_is_described_as_kafka_reads_it():
    need_shared(ORACLE)
    man = load_manifest("zero-gap")
    r = run("dump", ORACLE / man["segments"][0]["file"])
    lines = tail(r.stdout)
    assert lines[0].startswith("Kafka's reader stops at byte 322 of ") and lines[0].endswith("valid batches follow:")
    assert "invalid bytes at the end" not in r.stdout


def test_json_flags_non_consecutive_offsets_on_the_batch_and_in_the_summary(tmp_path):
    # HEAD: only the summary listed the pairs; a batch did not say it broke the sequence
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(build_batch([RecordData(0, 1, None, b"a")]) + build_batch([RecordData(5, 2, None, b"b")])
                    + build_batch([RecordData(6, 3, None, b"c")]))
    objs = [json.loads(x) for x in run("dump", "--format", "json", seg).stdout.splitlines()]
    batches = [o for o in objs if o["kind"] == "batch"]
    assert [(b["base_offset"], b["non_consecutive"], b["previous_last_offset"]) for b in batches] == [
        (0, False, None), (5, True, 0), (6, False, None)]
    (summary,) = [o for o in objs if o["kind"] == "summary"]
    assert summary["non_consecutive"] == [[0, 5]] and summary["non_consecutive_count"] == 1


def test_max_message_size_is_refused_with_what_it_meant_to_kafka_dump_log(tmp_path):
    # HEAD (issue): --max-message-size was stored and never read
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(build_batch([RecordData(0, 1, None, b"a")]))
    r = CliRunner().invoke(main, ["dump", "--max-message-size", "1000", str(seg)])
    assert r.exit_code == 2
    assert "--max-message-size" in r.output and "each .index entry" in r.output and "--max-bytes" in r.output
    assert "--max-message-size" not in run("dump", "--help").stdout


KEYS = [b"plain-key", "ключ ✓".encode(), b"k\x1b[2J\x00", b"\xff\xfe"]
VALUES = [b"hello world", "日本語".encode(), b"line1\nline2\t\x07", b"\x80\x81binary"]


def _records(tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(build_batch([RecordData(i, 1, k, v) for i, (k, v) in enumerate(zip(KEYS, VALUES))]
                                + [RecordData(4, 1, None, None)]))
    return seg


def test_print_data_shows_printable_text_and_escapes_everything_else(tmp_path):
    # HEAD (issue): raw NUL and control bytes reached the terminal, invalid UTF-8 became U+FFFD
    r = run("dump", "--print-data", _records(tmp_path))
    recs = [line for line in r.stdout.splitlines() if line.startswith("| offset")]
    shown = [line.split(" headerKeys: [] ", 1)[1] for line in recs]
    assert shown == [
        "key: plain-key payload: hello world",
        "key: ключ ✓ payload: 日本語",
        "key: k\\x1b[2J\\x00 payload: line1\\nline2\\t\\x07",
        "key: \\xff\\xfe payload: \\x80\\x81binary",
        "payload: null",
    ]
    assert "\ufffd" not in r.stdout and not any(ord(c) < 0x20 for c in r.stdout.replace("\n", ""))


def test_json_gives_key_and_value_one_representation_with_its_encoding(tmp_path):
    # HEAD (issue): the key as a string, the value as {"hex": ...}
    import base64

    objs = [json.loads(x) for x in run("dump", "--print-data", "--format", "json", _records(tmp_path)).stdout
            .splitlines()]
    recs = [o for o in objs if o["kind"] == "record"]
    for o, k, v in zip(recs, KEYS, VALUES):
        for field, raw in (("key", k), ("value", v)):
            rep = o[field]
            assert set(rep) == {"encoding", "data"}
            back = rep["data"].encode() if rep["encoding"] == "utf-8" else base64.b64decode(rep["data"])
            assert back == raw
    assert [o["key"]["encoding"] for o in recs[:4]] == ["utf-8", "utf-8", "utf-8", "base64"]
    assert [o["value"]["encoding"] for o in recs[:4]] == ["utf-8", "utf-8", "utf-8", "base64"]
    assert recs[4]["key"] is None and recs[4]["value"] is None


def test_what_stderr_says_of_a_file_follows_its_dump():
    # HEAD: kafka-dump-log's "Mismatches in :..." came before the index's "Dumping" line, and the findings before
    # the whole dump whenever stdout was not a terminal (a 2>&1 file)
    r = run("dump", "--verify-index-only", FIXTURES / "damaged" / "zeros-0" / "00000000000000000000.index")
    lines = r.output.splitlines()
    assert lines[0].startswith("Dumping ") and lines[1].startswith("Mismatches in :/")
    assert lines[2] == "  Index offset: 3, log offset: -" and lines[3].startswith("MEDIUM INDEX_POINTS_WRONG ")
    r = run("dump", FIXTURES / "damaged" / "torn-0" / "00000000000000000000.log")
    lines = r.output.splitlines()
    assert lines[0].startswith("Dumping ") and lines[-1].startswith("HIGH TRUNCATED_BATCH ")


def test_max_bytes_reads_the_batches_within_the_limit_and_says_nothing_past_it():
    # kafka-dump-log --max-bytes: the batches that end within the first N bytes; "Found N invalid bytes at the end"
    # only when the limit is left at its default.  HEAD: the JSON summary said 0 valid bytes and 537 invalid ones
    seg = FIXTURES / "damaged" / "torn-0" / "00000000000000000000.log"
    for limit, batches in ((168, 0), (169, 1), (338, 2), (506, 2), (100000, 3)):
        r = run("dump", "--max-bytes", limit, seg)
        assert sum(line.startswith("baseOffset") for line in r.stdout.splitlines()) == batches, limit
        assert "invalid bytes" not in r.stdout
    assert "Found 30 invalid bytes at the end of" in run("dump", seg).stdout
    objs = [json.loads(x) for x in run("dump", "--format", "json", "--max-bytes", 200, seg).stdout.splitlines()]
    (summary,) = [o for o in objs if o["kind"] == "summary"]
    assert (summary["batches"], summary["kafka_valid_bytes"], summary["trailing_invalid_bytes"],
            summary["kafka_stop"], summary["max_bytes"]) == (1, 169, 0, None, 200)
    # a limit past the point Kafka's reader stops: that point, and the bytes within the limit after it
    zeros = FIXTURES / "damaged" / "zeros-0" / "00000000000000000000.log"
    objs = [json.loads(x) for x in run("dump", "--format", "json", "--max-bytes", 4400, zeros).stdout.splitlines()]
    (summary,) = [o for o in objs if o["kind"] == "summary"]
    assert (summary["batches"], summary["kafka_valid_bytes"], summary["trailing_invalid_bytes"],
            summary["recovered_batches"]) == (2, 214, 4186, 0)
    assert summary["kafka_stop_kind"] == "corrupt"


def test_skip_record_metadata_leaves_key_and_payload():
    seg = FIXTURES / "healthy" / "payments.v1-events-2" / "00000000000000000000.log"
    lines = run("dump", "--print-data", "--skip-record-metadata", seg).stdout.splitlines()
    records = [line for line in lines if line.startswith("|")]
    assert records[:2] == ["| key: pay-k0 payload: pay value 0pay value 0pay value 0",
                           "| key: pay-k1 payload: pay value 1pay value 1pay value 1"]
    assert not [line for line in records if "offset:" in line or "keySize" in line or "CreateTime" in line]
