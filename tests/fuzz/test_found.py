"""Bugs the fuzz campaign found (``scripts/fuzz_campaign.py``), one regression test each, written before the fix.

Each case is the smallest input showing the class, rebuilt by hand from the
campaign's saved reproducer.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

from kforensics.formats import compression, control, legacy
from kforensics.formats.record_batch import RecordData, attributes_of, build_batch, encode_batch, encode_record
from kforensics.log.segment_reader import SegmentReader

from . import wire
from .test_known_classes import dump_findings, side, write


def records_of(path: Path):
    from kforensics.log.records import EntryRecords

    out = []
    for b in SegmentReader(path).batches():
        dec = EntryRecords(b, with_data=True, file=str(path))
        out.append((list(dec), [(f.code, f.position) for f in dec.findings]))
    return out


def test_a_negative_key_length_is_a_null_key_as_kafka_reads_it(tmp_path):
    """``DefaultRecord.readFrom`` reads any negative key or value length as null: not a decoding error (it was
    reported as RECORD_DECODE_ERROR, "consumers fail on it", which they do not)."""
    toks = wire.record_tokens(b"k", b"v", 0)
    toks.tokens = [t for t in toks.tokens if t[0] != "key"]
    toks.tokens[3][1] = -5  # key length -5
    toks.length = None
    batch = encode_batch(toks.encode(), base_offset=0, last_offset_delta=0, records_count=1, base_timestamp=0,
                         max_timestamp=0)
    p = write(tmp_path, batch)
    [(recs, findings)] = records_of(p)
    assert findings == [] and recs[0].key is None and recs[0].key_size == -1 and recs[0].value == b"v"
    # a negative header key length is refused by Kafka ("Invalid negative header key size"): still an error
    toks = wire.record_tokens(b"k", b"v", 0, headers=[(b"h", b"x")])
    toks.tokens[[t[0] for t in toks.tokens].index("header_key_length")][1] = -1
    toks.tokens = [t for t in toks.tokens if t[0] != "header_key"]
    toks.length = None
    batch = encode_batch(toks.encode(), base_offset=0, last_offset_delta=0, records_count=1, base_timestamp=0,
                         max_timestamp=0)
    [(_, findings)] = records_of(write(tmp_path, batch, "00000000000000000001.log"))
    assert [c for c, _ in findings] == ["RECORD_DECODE_ERROR"]


def test_a_legacy_wrapper_with_an_unknown_codec_and_a_null_value_is_an_unknown_codec(tmp_path):
    """Kafka's iterator asks the codec first (``CompressionType.forId`` throws): it was reported as a null
    wrapper value."""
    raw = legacy.encode_message(offset=0, magic=1, key=None, value=None, timestamp=1, attributes=7)
    assert ("UNKNOWN_CODEC", 0) in dump_findings(write(tmp_path, raw))


def _wrapper(magic: int, inner: bytes, offset: int = 1) -> bytes:
    return legacy.encode_message(offset=offset, magic=magic, key=None,
                                 value=compression.compress(1, inner, magic=magic), timestamp=1 if magic else -1,
                                 attributes=1)


def test_a_damaged_inner_message_set_still_reports_the_inner_crc_before_the_damage(tmp_path):
    """The set's damage at its end was reported first and hid a bad inner CRC before it."""
    good = legacy.encode_message(offset=0, magic=1, key=b"k", value=b"v", timestamp=1)
    bad_crc = bytearray(legacy.encode_message(offset=1, magic=1, key=b"k", value=b"w", timestamp=1))
    bad_crc[12] ^= 1  # the stored CRC
    inner = good + bytes(bad_crc) + b"\x00" * 5  # a partial message at the end
    codes = {c for c, _ in dump_findings(write(tmp_path, _wrapper(1, inner)))}
    assert {"INNER_MESSAGE_CRC_MISMATCH", "BAD_INNER_MESSAGE_SET"} <= codes


def test_an_inner_message_of_another_magic_is_reported_and_the_rest_still_read(tmp_path):
    """Kafka's reader takes an inner message of another magic as it is; it stopped the whole wrapper, hiding a
    bad CRC after it."""
    v0 = legacy.encode_message(offset=0, magic=0, key=b"k", value=b"v")
    bad_crc = bytearray(legacy.encode_message(offset=1, magic=1, key=b"k", value=b"w", timestamp=1))
    bad_crc[12] ^= 1  # the stored CRC
    p = write(tmp_path, _wrapper(1, v0 + bytes(bad_crc)))
    [(recs, findings)] = records_of(p)
    assert {c for c, _ in findings} == {"BAD_INNER_MESSAGE", "INNER_MESSAGE_CRC_MISMATCH"}
    assert [r.value for r in recs] == [b"v", b"w"]


def test_an_inner_message_whose_lengths_overrun_it_does_not_end_the_wrapper(tmp_path):
    """One unreadable inner message ended the wrapper's records, hiding the set's damage after it."""
    good = legacy.encode_message(offset=0, magic=0, key=b"k", value=b"v")
    overrun = bytearray(legacy.encode_message(offset=1, magic=0, key=b"k", value=b"w"))
    overrun[18:22] = (100).to_bytes(4, "big")  # key length past the message
    overrun[12:16] = zlib.crc32(bytes(overrun[16:])).to_bytes(4, "big")
    last = legacy.encode_message(offset=2, magic=0, key=b"k", value=b"x")
    inner = good + bytes(overrun) + last + (-1).to_bytes(8, "big", signed=True) + (-1).to_bytes(4, "big",
                                                                                                  signed=True)
    p = write(tmp_path, _wrapper(0, inner, offset=2))
    [(recs, findings)] = records_of(p)
    assert {c for c, _ in findings} == {"BAD_MESSAGE", "BAD_INNER_MESSAGE_SET"}
    assert [r.value for r in recs] == [b"v", b"x"]


def test_bytes_after_a_gzip_member_that_start_no_member_are_ignored_as_java_does():
    """``GZIPInputStream`` ends the stream where the next member's header does not read; they were a
    decompression failure."""
    data = b"records" * 100
    for tail in (b"\x00" * 7, b"garbage!!", b"\x1f\x8b"):
        assert compression.decompress(1, gzip.compress(data) + tail, magic=2, max_output=1 << 20) == data
    # a second member is read
    assert compression.decompress(1, gzip.compress(data) * 2, magic=2, max_output=1 << 20) == data * 2


def test_an_infinite_float_in_quorum_state_is_a_finding_not_a_crash(tmp_path):
    """``1e999`` was read as an infinity, which JSON output cannot carry (``ValueError`` at output)."""
    from kforensics.serialize import to_jsonable

    sf, codes, _ = side(tmp_path, "quorum-state", b'{"leaderId":1,"leaderEpoch":1e999,"votedId":-1,'
                                                  b'"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}')
    assert ("QUORUM_STATE_MALFORMED", True) in codes
    json.dumps(to_jsonable(sf.value), allow_nan=False)


def test_control_records_with_negative_lengths_are_judged_as_kafka_reads_them(tmp_path):
    """A COMMIT marker whose key length is -3 has a null key to Kafka: a bad control key, not a decoding error."""
    toks = wire.record_tokens(None, control.encode_end_txn_marker(3), 0)
    toks.tokens[3][1] = -3
    batch = encode_batch(toks.encode(), base_offset=0, last_offset_delta=0, records_count=1, base_timestamp=0,
                         max_timestamp=0, attributes=attributes_of(control=True, transactional=True),
                         producer_id=1, producer_epoch=0)
    assert dump_findings(write(tmp_path, batch)) == [("BAD_CONTROL_KEY", 0)]
    # and a good marker beside it decodes
    good = build_batch([RecordData(1, 0, control.encode_control_key("COMMIT"), control.encode_end_txn_marker(3))],
                       control=True, transactional=True, producer_id=1, producer_epoch=0)
    assert dump_findings(write(tmp_path, good, "00000000000000000001.log")) == []


def test_a_v2_base_offset_of_minus_one_is_out_of_range(tmp_path):
    """-1 is the batch table's "first offset unknown" for a legacy wrapper; a v2 batch whose baseOffset (outside
    the CRC) became -1 was taken for one and reported nowhere."""
    batch = bytearray(build_batch([RecordData(0, 0, b"k", b"v"), RecordData(1, 0, b"k", b"w")]))
    batch[0:8] = (-1).to_bytes(8, "big", signed=True)
    seg = write(tmp_path, bytes(batch))
    assert ("OFFSET_OUT_OF_RANGE", 0) in dump_findings(seg)
    # the text shows the value as Kafka's reader prints it, not a Python None
    from click.testing import CliRunner
    from kforensics.cli import main
    out = CliRunner().invoke(main, ["dump", "--deep", str(seg)]).output
    assert "baseOffset: -1 lastOffset: 0 count: 2" in out and "None" not in out, out
    # a legacy wrapper's row keeps -1 as "unknown" and is not reported
    inner = legacy.encode_message(offset=0, magic=1, key=b"k", value=b"v", timestamp=1)
    assert dump_findings(write(tmp_path, _wrapper(1, inner, offset=0), "00000000000000000001.log")) == []


def test_a_digit_beyond_the_basic_multilingual_plane_is_no_digit_to_java():
    """``Long.parseLong`` walks UTF-16 chars: MATHEMATICAL BOLD DIGIT ONE (U+1D7CF) is two surrogates, which
    ``Character.digit`` refuses, so Kafka refuses the checkpoint; it was read as 1 (the model agreed, so the
    campaign could not see it)."""
    from kforensics.formats import checkpoint
    from kforensics.formats.java_text import INT64, parse_int

    from .kafka_model import java_parse, judge_checkpoint

    assert parse_int("\U0001d7cf", INT64) is None and java_parse("\U0001d7cf", 64) is None
    assert parse_int("\uff11", INT64) == 1  # a fullwidth digit is one char: Java reads it
    data = "0\n1\nt 0 \U0001d7cf\n".encode()
    cp = checkpoint.decode(data, "replication_offset_checkpoint")
    assert judge_checkpoint(data, "replication_offset_checkpoint")
    assert cp.kafka_refuses and [(f.code, f.line) for f in cp.findings] == [("CHECKPOINT_MALFORMED_LINE", 3)]


def test_an_enormous_metadata_transaction_is_held_only_up_to_a_limit(tmp_path, monkeypatch):
    """Every record of an open metadata transaction was held until its end: a BeginTransactionRecord followed by
    one batch of millions of tiny records (under the decompression cap) grew memory without bound."""
    import base64

    from kforensics.formats.metadata_records import encode_metadata_record
    from kforensics.kraft import timeline, timeline_registrations

    monkeypatch.setattr(timeline_registrations, "MAX_TXN_RECORDS", 5)
    held: list[int] = []
    real_record = timeline_registrations.RegistrationState.record

    def record(self, rec, d, source):
        real_record(self, rec, d, source)
        held.append(len(self.txn or []))

    monkeypatch.setattr(timeline_registrations.RegistrationState, "record", record)

    def tid(i: int) -> str:
        return base64.urlsafe_b64encode(bytes(15) + bytes([i + 1])).decode().rstrip("=")

    values = [encode_metadata_record("BeginTransactionRecord", 0, {"name": "big"})]
    values += [encode_metadata_record("TopicRecord", 0, {"name": f"t{i}", "topicId": tid(i)}) for i in range(12)]
    values.append(encode_metadata_record("EndTransactionRecord", 0, {}))
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(
        build_batch([RecordData(i, 0, None, v) for i, v in enumerate(values)], partition_leader_epoch=1,
                    codec=4))
    tl = timeline.build_timeline(tmp_path)
    codes = [f.code for f in tl.findings]
    assert codes.count("METADATA_TRANSACTION_TOO_LARGE") == 1 and "METADATA_TRANSACTION_OPEN" not in codes
    assert max(held) < 5 and len(tl.topic_names) == 12  # all replayed, never more than the limit held
    # an ordinary transaction is still held to its end and an aborted one not replayed
    monkeypatch.setattr(timeline_registrations, "MAX_TXN_RECORDS", 100)
    values[-1] = encode_metadata_record("AbortTransactionRecord", 0, {"reason": "test"})
    (d / "00000000000000000000.log").write_bytes(
        build_batch([RecordData(i, 0, None, v) for i, v in enumerate(values)], partition_leader_epoch=1))
    tl = timeline.build_timeline(tmp_path)
    assert [f.code for f in tl.findings if f.code.startswith("METADATA_TRANSACTION")] == \
        ["METADATA_TRANSACTION_ABORTED"] and tl.topic_names == {}
