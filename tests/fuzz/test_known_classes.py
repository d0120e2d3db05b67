"""The known classes of hostile evidence from issue #12, one regression test each.

Every test here was written before its fix and failed on the code before it
(the campaign in ``scripts/fuzz_campaign.py`` and the fuzz tests beside this
file find new ones).  Bad input must become a finding with its file and
position, work must go on, and time and memory must be bounded by the bytes
that hold the damage, not by what the damage claims.
"""

from __future__ import annotations

import os
import struct
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest

from kforensics.formats import checkpoint, compression, control, legacy
from kforensics.formats.record_batch import RecordData, attributes_of, build_batch, encode_batch, encode_record
from kforensics.log.records import EntryRecords, iter_record_tables
from kforensics.log.segment_reader import SegmentReader

from . import wire

SEGMENT = "00000000000000000000.log"


def write(tmp_path: Path, data: bytes, name: str = SEGMENT) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def dump_findings(path: Path, deep: bool = True) -> list[tuple[str, int | None]]:
    from kforensics.dump.segment import DumpOptions, SegmentDump, dump_segment
    from kforensics.log.file_kinds import classify_name

    result = SegmentDump(str(path), classify_name(str(path)))
    for _ in dump_segment(path, DumpOptions(deep=deep), result):
        pass
    return [(f.code, f.position) for f in result.findings]


# ----------------------------------------------------------------------------- codecs
def test_lz4_decompression_is_linear_in_the_batch_size(monkeypatch):
    """A 44 MB lz4 batch took 89 s: the frame decompressor was handed the whole frame and drained 64 KiB at a time,
    and it copies the input it has not consumed on every call (quadratic).  It must be fed in pieces."""
    import lz4.frame

    real = lz4.frame.LZ4FrameDecompressor
    handed: list[int] = []

    class Spy:
        def __init__(self):
            self.d = real()

        def decompress(self, data, max_length=-1):
            handed.append(len(data))
            return self.d.decompress(data, max_length=max_length)

        def __getattr__(self, name):
            return getattr(self.d, name)

    monkeypatch.setattr(lz4.frame, "LZ4FrameDecompressor", Spy)
    data = os.urandom(8 << 20)
    frame = compression.compress(3, data, magic=2)
    assert compression.decompress(3, frame, magic=2, max_output=64 << 20) == data
    # fed in pieces, each byte once: no call is handed more than a piece (the quadratic copy was of what is left)
    assert sum(handed) == len(frame) and max(handed) <= 1 << 16


# ----------------------------------------------------------------------------- record offsets
def v2_with_deltas(deltas: list[int], last_delta: int, *, codec: int = 0, base: int = 0) -> bytes:
    payload = b"".join(encode_record(RecordData(base + d, 0, b"k", b"v"), base, 0) for d in deltas)
    if codec:
        payload = compression.compress(codec, payload, magic=2)
    return encode_batch(payload, base_offset=base, last_offset_delta=last_delta, records_count=len(deltas),
                        base_timestamp=0, max_timestamp=0, attributes=codec)


@pytest.mark.parametrize("codec", [0, 4])
@pytest.mark.parametrize("deltas,last,code", [
    ([0, 5], 1, "RECORD_OFFSET_OUT_OF_BATCH"),  # beyond the batch's last offset
    ([-1, 0], 1, "RECORD_OFFSET_OUT_OF_BATCH"),  # below its base offset
    ([1, 0], 1, "RECORD_OFFSETS_NOT_INCREASING"),
    ([0, 0], 1, "RECORD_OFFSETS_NOT_INCREASING"),
])
def test_a_record_offset_outside_its_batch_or_not_increasing_is_a_finding(tmp_path, codec, deltas, last, code):
    good = build_batch([RecordData(0, 0, b"k", b"v")])
    bad = v2_with_deltas(deltas, last, codec=codec, base=1)
    p = write(tmp_path, good + bad)
    # placed at the record when its bytes are in the file, else at the batch
    assert [c for c, at in dump_findings(p) if len(good) <= at < len(good) + len(bad)] == [code]
    errors = [(e.code, e.position) for _, rt in iter_record_tables(SegmentReader(p)) for e in rt.errors]
    assert (code, len(good)) in errors
    # a compacted batch (offsets increasing, with gaps, within the batch) is fine
    p2 = write(tmp_path, good + v2_with_deltas([0, 3, 7], 9, codec=codec, base=1), "00000000000000000001.log")
    assert dump_findings(p2) == []


def legacy_wrapper(magic: int, inner_offsets: list[int], wrapper_offset: int, codec: int = 1) -> bytes:
    inner = b"".join(legacy.encode_message(offset=o, magic=magic, key=b"k", value=b"v%d" % o,
                                           timestamp=5 if magic else -1) for o in inner_offsets)
    return legacy.encode_message(offset=wrapper_offset, magic=magic, key=None,
                                 value=compression.compress(codec, inner, magic=magic), timestamp=5 if magic else -1,
                                 attributes=codec)


@pytest.mark.parametrize("magic,inner,wrapper,code", [
    (0, [0, 5], 1, "RECORD_OFFSET_OUT_OF_BATCH"),  # v0: absolute inner offsets past the wrapper's (the last)
    (0, [1, 0], 1, "RECORD_OFFSETS_NOT_INCREASING"),
    (1, [1, 0], 5, "RECORD_OFFSETS_NOT_INCREASING"),  # v1: relative inner offsets
    (1, [0, -1], 5, "RECORD_OFFSET_OUT_OF_BATCH"),
    # Kafka's deep iterator throws: "wrapper offset is less than the last inner message offset and it is not zero"
    (1, [0, 1, 9], 4, "BAD_INNER_MESSAGE_SET"),
])
def test_legacy_inner_offsets_outside_the_wrapper_or_not_increasing_are_findings(tmp_path, magic, inner, wrapper,
                                                                                 code):
    p = write(tmp_path, legacy_wrapper(magic, inner, wrapper))
    assert (code, 0) in dump_findings(p)


def test_a_base_offset_of_min_long_is_reported_by_dump(tmp_path):
    raw = bytearray(build_batch([RecordData(0, 0, b"k", b"v")]))
    raw[0:8] = (-(2**63)).to_bytes(8, "big", signed=True)
    good = build_batch([RecordData(0, 0, b"k", b"v")])
    p = write(tmp_path, good + bytes(raw))
    assert ("OFFSET_OUT_OF_RANGE", len(good)) in dump_findings(p, deep=False)
    # the last offset overflowing a long (base near the top) too
    raw2 = bytearray(build_batch([RecordData(0, 0, b"k", b"v"), RecordData(1, 0, b"k", b"v")]))
    raw2[0:8] = (2**63 - 1).to_bytes(8, "big", signed=True)
    p2 = write(tmp_path, bytes(raw2), "00000000000000000001.log")
    assert ("OFFSET_OUT_OF_RANGE", 0) in dump_findings(p2, deep=False)


# ----------------------------------------------------------------------------- bounded by the bytes that hold them
TINY = encode_record(RecordData(0, 0, None, None), 0, 0)


def tiny_batch(n: int, codec: int) -> bytes:
    payload = TINY * n
    if codec:
        payload = compression.compress(codec, payload, magic=2)
    return encode_batch(payload, base_offset=0, last_offset_delta=0, records_count=n, base_timestamp=0,
                        max_timestamp=0, attributes=codec)


@pytest.mark.parametrize("codec", [0, 4])
def test_record_tables_of_a_million_record_batch_are_bounded(tmp_path, codec):
    """A 1M-record batch took 1.2 GB: every record of a batch became one row of one table."""
    n = 1_000_000
    p = write(tmp_path, tiny_batch(n, codec))
    tracemalloc.start()
    try:
        rows = sum(len(rt) for _, rt in iter_record_tables(SegmentReader(p)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rows == n
    # the payload (7 MB) and bounded tables, not a 112-byte row per record
    assert peak < 48 << 20, peak


def test_record_headers_are_parsed_from_their_record_only(tmp_path, monkeypatch):
    """Each record's headers were parsed from a copy of the rest of the payload: quadratic in the batch."""
    from kforensics.formats import record_batch

    handed: list[int] = []
    real = record_batch.CountPrefixedArray.parse

    def spy(self, data, **kw):
        handed.append(len(data))
        return real(self, data, **kw)

    monkeypatch.setattr(record_batch.CountPrefixedArray, "parse", spy)
    p = write(tmp_path, build_batch([RecordData(i, 0, None, b"v", [("h", b"x")]) for i in range(5_000)]))
    (b,) = SegmentReader(p).batches()
    recs = list(EntryRecords(b))
    assert len(recs) == 5_000 and recs[-1].headers[0].key == "h"
    assert len(handed) == 5_000 and max(handed) <= max(r.size_in_bytes for r in recs)


# ----------------------------------------------------------------------------- small JSON files
def side(tmp_path: Path, name: str, data: bytes):
    from kforensics.log.side_files import read_side_file

    p = write(tmp_path, data, name)
    sf = read_side_file(p)
    return sf, [(f.code, f.file == str(p)) for f in sf.findings], p


@pytest.mark.parametrize("name,code", [("quorum-state", "QUORUM_STATE_MALFORMED"),
                                       (".kafka_cleanshutdown", "CLEAN_SHUTDOWN_MALFORMED")])
@pytest.mark.parametrize("data", [
    b"[" * 30_000 + b"]" * 30_000,  # nested far deeper than Python's recursion limit
    b'{"brokerEpoch":' + b"9" * 60_000 + b',"leaderEpoch":1}',  # an integer of 60,000 digits
    b'{"brokerEpoch":' + b"[" * 50 + b"1" + b"]" * 50 + b"}",
    b'{"brokerEpoch":1e999,"leaderEpoch":1e999}',  # a float that is infinite in Python (and not JSON to emit)
])
def test_hostile_json_in_the_marker_and_quorum_state_is_a_finding(tmp_path, name, code, data):
    import json

    from kforensics.serialize import to_jsonable

    sf, codes, _ = side(tmp_path, name, data)
    assert (code, True) in codes
    json.dumps(to_jsonable(sf.value), allow_nan=False)  # nothing unrepresentable reaches the output


@pytest.mark.parametrize("text", [
    b'{"leaderId":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}',  # no leaderEpoch
    b'{"leaderId":1,"leaderEpoch":2147483648,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
    b'"data_version":1}',  # an epoch past an int32
    b'{"leaderId":1,"leaderEpoch":"7","votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}',
    b'{"leaderId":1,"leaderEpoch":7,"votedId":-1,"votedDirectoryId":"not a uuid","data_version":1}',
    b'{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,"currentVoters":[],"data_version":0}',  # v0: offset
])
def test_a_quorum_state_kafka_cannot_read_is_a_finding(tmp_path, text):
    """FileQuorumStateStore reads every field of its data_version: one missing or out of range fails the read."""
    _, codes, _ = side(tmp_path, "quorum-state", text)
    assert ("QUORUM_STATE_BAD_FIELD", True) in codes


def test_only_the_first_line_of_quorum_state_is_read(tmp_path):
    good = b'{"leaderId":1,"leaderEpoch":7,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
    sf, codes, _ = side(tmp_path, "quorum-state", good + b"\n{garbage")
    assert codes == [] and sf.value.leader_epoch == 7


# ----------------------------------------------------------------------------- numbers in text files, as Java reads them
@pytest.mark.parametrize("token,value", [
    ("2_4", None), ("9223372036854775808", None), ("-9223372036854775809", None), ("+7", 7), ("-0", 0),
    (" 7", None), ("0x10", None), ("1e3", None), ("", None), ("-", None),
    # Integer.parseInt/Long.parseLong read any Unicode decimal digit (Character.digit) and any number of zeros
    ("\u0663\u0662", 32), ("\uff14\uff12", 42), ("0" * 40 + "42", 42), ("-" + "0" * 30 + "9223372036854775808",
                                                                         -(2**63)),
    ("9" * 5000, None),
])
def test_checkpoint_numbers_are_read_as_javas_parse_long(token, value):
    from kforensics.formats.java_text import INT64, parse_int

    assert parse_int(token, INT64) == value


def test_a_checkpoint_kafka_reads_is_not_reported_as_refused():
    cp = checkpoint.decode("0\n2\norders 0 \u0663\u0662\norders 1 000000000000000000000000000005\n".encode(),
                           "replication_offset_checkpoint")
    assert cp.findings == [] and cp.offsets() == {("orders", 0): 32, ("orders", 1): 5}
    for bad, line in ((b"0\n1\nt 0 2_4\n", 3), (b"0\n1\nt 0 9223372036854775808\n", 3), (b"0\n1\n2147483648 5\n", 3)):
        kind = "leader_epoch_checkpoint" if bad.count(b" ") == 1 else "replication_offset_checkpoint"
        cp = checkpoint.decode(bad, kind)
        assert cp.kafka_refuses and [(f.code, f.line) for f in cp.findings] == [("CHECKPOINT_MALFORMED_LINE", line)]


def test_a_time_index_starting_at_min_long_is_not_out_of_order():
    import warnings

    from kforensics.formats import time_index

    data = time_index.encode([(-(2**63), 3), (5, 4)], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning: the first entry was compared with MIN - 1
        idx = time_index.decode(data, 0)
    assert "TIMEINDEX_OUT_OF_ORDER" not in {f.code for f in idx.findings}


# ----------------------------------------------------------------------------- junk in text files
def test_megabytes_of_junk_in_a_leader_epoch_checkpoint_are_bounded(tmp_path):
    import json

    from kforensics.serialize import to_jsonable

    # past the kind's cap (8 MiB of junk lines): reported, never read
    sf, codes, _ = side(tmp_path, "leader-epoch-checkpoint", b"0\n1\n" + b"junk line\n" * (800 << 10))
    assert codes == [("FILE_TOO_LARGE", True)] and sf.value is None
    # under the cap: a hundred findings per code and a count, whatever the number of bad lines
    sf, codes, _ = side(tmp_path, "leader-epoch-checkpoint", b"0\n1\n" + b"junk line\n" * (40 << 10))
    assert len(codes) <= 103 and ("MORE_FINDINGS", True) in codes and sf.value.kafka_refuses
    # one enormous line: its text is not copied into the finding (nor the output)
    sf, codes, _ = side(tmp_path, "leader-epoch-checkpoint", b"0\n1\n" + b"x" * (3 << 20) + b"\n")
    assert len(json.dumps(to_jsonable(sf.findings))) < 4096


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_a_decompressed_payload_is_held_once(codec):
    """A zstd batch of 37 M tiny records (under the cap) took more than twice its payload: the output was copied
    once whole at the end."""
    data = TINY * (8 << 20)  # 56 MiB of tiny records
    frame = compression.compress(codec, data, magic=2)
    tracemalloc.start()
    try:
        out = compression.decompress(codec, frame, magic=2, max_output=256 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out == data
    assert peak < 1.3 * len(data), peak / len(data)


# ----------------------------------------------------------------------------- the KRaft timeline streams
def test_metadata_records_are_replayed_as_they_are_read(tmp_path, monkeypatch):
    """A 3 KB metadata segment (one zstd batch of 3 M tiny records) took 46 s and 530 MB in the timeline: every
    record of every copy was materialised (a few hundred bytes each; 7 GB at the decompression cap) before the
    replay began.  Records must stream: the first is replayed before the second batch is read."""
    from kforensics.kraft import timeline, timeline_replay
    from kforensics.formats.metadata_records import encode_metadata_record
    from kforensics.log import records

    read: list[int] = []
    real_iter = records.EntryRecords.__iter__

    def counting_iter(self):
        read.append(self.batch.position)
        return real_iter(self)

    monkeypatch.setattr(records.EntryRecords, "__iter__", counting_iter)
    first_decode: list[int] = []
    real_decode = timeline_replay.decode_record

    def decode(rec, tl, emit=True):
        if not first_decode:
            first_decode.append(len(read))
        return real_decode(rec, tl, emit)

    monkeypatch.setattr(timeline_replay, "decode_record", decode)
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    value = encode_metadata_record("TopicRecord", 0, {"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAABw"})
    write(d, b"".join(build_batch([RecordData(i, 0, None, value)], partition_leader_epoch=1) for i in range(50)))
    tl = timeline.build_timeline(tmp_path)
    assert tl.records == 50 and len(read) == 50
    assert first_decode[0] <= 2  # the first record (and the next, to see it is the only one at its offset)


def test_a_dump_of_a_million_out_of_order_batches_keeps_a_bounded_report(tmp_path):
    """kafka-dump-log's non-consecutive report kept a pair per out-of-order batch: memory grew with the damage."""
    from kforensics.dump.segment import MAX_NON_CONSECUTIVE, DumpOptions, SegmentDump, dump_segment
    from kforensics.log.file_kinds import classify_name

    one = build_batch([RecordData(0, 0, None, b"v")])
    p = write(tmp_path, one * 5_000)  # every batch at offset 0: each one does not follow the previous
    result = SegmentDump(str(p), classify_name(str(p)))
    for _ in dump_segment(p, DumpOptions(), result):
        pass
    assert result.batches == 5_000 and result.non_consecutive_count == 4_999
    assert len(result.non_consecutive) == MAX_NON_CONSECUTIVE


# ----------------------------------------------------------------------------- silent acceptance (issue #12, class 5)
def control_batch(key: bytes | None, value: bytes | None) -> bytes:
    return encode_batch(encode_record(RecordData(0, 0, key, value), 0, 0), base_offset=0, last_offset_delta=0,
                        records_count=1, base_timestamp=0, max_timestamp=0,
                        attributes=attributes_of(control=True, transactional=True), producer_id=1, producer_epoch=0)


@pytest.mark.parametrize("key,value,code", [
    # ControlRecordType.parse: "Invalid version found for control record" / fewer than 4 bytes
    (struct.pack(">hh", -1, 1), control.encode_end_txn_marker(3), "BAD_CONTROL_KEY"),
    (struct.pack(">hh", 0, 1)[:3], control.encode_end_txn_marker(3), "BAD_CONTROL_KEY"),
    # EndTransactionMarker.deserializeValue: a COMMIT/ABORT value of fewer than 6 bytes, or a negative version
    (control.encode_control_key("COMMIT"), b"\x00\x00", "BAD_CONTROL_VALUE"),
    (control.encode_control_key("ABORT"), struct.pack(">hi", -1, 3), "BAD_CONTROL_VALUE"),
])
def test_a_control_record_kafka_cannot_parse_is_a_finding_in_its_batch(tmp_path, key, value, code):
    good = build_batch([RecordData(0, 0, b"k", b"v")], producer_id=1, producer_epoch=0, transactional=True)
    bad = control_batch(key, value)
    p = write(tmp_path, good + bad)
    assert [c for c, at in dump_findings(p) if at is not None and len(good) <= at < len(good) + len(bad)] == [code]
    # the same record with a well-formed key and value is no finding
    ok = control_batch(control.encode_control_key("COMMIT"), control.encode_end_txn_marker(3))
    assert dump_findings(write(tmp_path, good + ok, "00000000000000000001.log")) == []


@pytest.mark.parametrize("magic", [0, 1])
def test_an_inner_message_with_a_bad_crc_is_a_finding_not_only_is_valid_false(tmp_path, magic):
    """A consumer checks each inner message's CRC (``ensureValid``): it was only ``is_valid: false`` in dump."""
    ts = 5 if magic else -1
    inner = [bytearray(legacy.encode_message(offset=o, magic=magic, key=b"k", value=b"v%d" % o, timestamp=ts))
             for o in (0, 1)]
    inner[1][-1] ^= 1  # the value's last byte, under the inner CRC
    p = write(tmp_path, legacy.encode_message(offset=1, magic=magic, key=None, timestamp=ts, attributes=1,
                                              value=compression.compress(1, b"".join(inner), magic=magic)))
    assert dump_findings(p) == [("INNER_MESSAGE_CRC_MISMATCH", 0)]


def test_a_legacy_message_whose_value_length_overruns_it_is_a_finding(tmp_path):
    """``LegacyRecord.value()`` fails on a value length past the message; the CRC was made to match."""
    raw = bytearray(legacy.encode_message(offset=0, magic=1, key=None, value=b"value", timestamp=5))
    raw[30:34] = (1000).to_bytes(4, "big")  # value length (v1: key length at 26, null key, value length at 30)
    raw[12:16] = zlib.crc32(bytes(raw[16:])).to_bytes(4, "big")
    good = legacy.encode_message(offset=1, magic=1, key=None, value=b"v", timestamp=5)
    assert ("BAD_MESSAGE", 0) in dump_findings(write(tmp_path, bytes(raw) + good))
    # and as a wrapper: a gzip wrapper whose value length runs past it
    wrapper = bytearray(legacy_wrapper(1, [0, 1], 1))
    wrapper[30:34] = (len(wrapper)).to_bytes(4, "big")
    wrapper[12:16] = zlib.crc32(bytes(wrapper[16:])).to_bytes(4, "big")
    assert ("BAD_MESSAGE", 0) in dump_findings(write(tmp_path, bytes(wrapper), "00000000000000000001.log"))


# ----------------------------------------------------------------------------- bounded by the damage (class 4)
def test_a_ten_mib_index_of_ff_bytes_costs_bounded_findings_and_output(tmp_path):
    """A 10 MiB ``.index`` of 0xFF took 3.8 GB and wrote 776 MB of JSON: one finding per damaged entry (1 MiB
    here: the same entries per finding code)."""
    import json

    from kforensics.dump.files import dump_file
    from kforensics.serialize import to_jsonable

    (tmp_path / SEGMENT).write_bytes(build_batch([RecordData(0, 0, b"k", b"v")]))
    p = write(tmp_path, b"\xff" * (1 << 20), "00000000000000000000.index")  # 131,072 damaged entries
    dump_file(p, verify_index=True, sanity_check=True)  # imports and compiled kernels out of the measure
    tracemalloc.start()
    try:
        d = dump_file(p, verify_index=True, sanity_check=True)
        findings = json.dumps(to_jsonable(d.findings))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert d.findings and len(findings) < 1 << 20, len(findings)
    per_code: dict[str, int] = {}
    for f in d.findings:
        per_code[f.code] = per_code.get(f.code, 0) + 1
    assert max(per_code.values()) <= 101, per_code
    assert peak < 32 << 20, peak  # the entries as arrays (1 MiB), not a Python object per entry (over 100 MB)


def test_a_legacy_wrapper_of_many_inner_messages_is_decoded_a_bounded_table_at_a_time(tmp_path, monkeypatch):
    """A v0 gzip wrapper of 10 M inner messages exhausted 8 GiB in ``dump --deep``: every inner message became a
    row of one table, then a Python object, at once.  The rows are decoded a chunk at a time, turned into Python
    values a slice at a time, and the first record is out before the second chunk is decoded."""
    from kforensics.log import records

    monkeypatch.setattr(records, "RECORD_CHUNK", 1000)
    handed: list[int] = []
    real = records._py_rows

    def spy(table):
        handed.append(len(table))
        return real(table)

    monkeypatch.setattr(records, "_py_rows", spy)
    one = legacy.encode_message(offset=0, magic=0, key=None, value=None)
    n = 5_000
    inner = b"".join(struct.pack(">q", i) + one[8:] for i in range(n))
    p = write(tmp_path, legacy.encode_message(offset=n - 1, magic=0, key=None, attributes=1,
                                              value=compression.compress(1, inner, magic=0)))
    (b,) = SegmentReader(p).batches()
    it = iter(EntryRecords(b))
    first = next(it)
    assert first.offset == 0 and handed == [1000]  # one chunk decoded, not the whole set
    assert 1 + sum(1 for _ in it) == n and [h for h in handed if h] == [1000] * 5
