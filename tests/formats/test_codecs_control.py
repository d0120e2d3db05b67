"""Codecs against Kafka-written payloads, round trips, bombs; control records against the oracle."""

from __future__ import annotations

import glob
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ORACLE, REALDATA, entry_records, load_manifest, need_shared
from kforensics.findings import DecodeError
from kforensics.formats import compression, control
from kforensics.formats.compression import compress, decompress
from kforensics.log.segment_reader import SegmentReader

CODEC_MAGIC = [(c, m) for c in (1, 2, 3, 4) for m in (0, 1, 2) if not (c == 4 and m < 2)]


@pytest.mark.parametrize("codec,magic", CODEC_MAGIC)
@given(data=st.binary(max_size=200_000))
@settings(max_examples=15, deadline=None)
def test_compress_decompress_round_trip(codec, magic, data):
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic, max_output=len(data)) == data


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_bomb_is_bounded(codec):
    blob = compress(codec, bytes(50 << 20), magic=2)
    with pytest.raises(DecodeError) as e:
        decompress(codec, blob, magic=2, max_output=1 << 20)
    assert e.value.code == "DECOMPRESSION_BOMB"


def test_v0_lz4_frames_carry_kafkas_broken_header_checksum_and_still_decode():
    frame = compress(3, b"hello" * 100, magic=0)
    assert frame[:7] == bytes.fromhex("04224d1860401a")  # HC 0x1a, where the standard value is 0x82
    assert compress(3, b"x", magic=1)[:7] == bytes.fromhex("04224d18604082")
    assert decompress(3, frame, magic=0, max_output=1000) == b"hello" * 100


def test_zstd_needs_magic_2_and_unknown_codecs_are_findings():
    with pytest.raises(DecodeError) as e:
        decompress(4, b"x", magic=1, max_output=10)
    assert e.value.code == "CODEC_NOT_ALLOWED_FOR_MAGIC"
    with pytest.raises(DecodeError) as e:
        decompress(6, b"x", magic=2, max_output=10)
    assert e.value.code == "UNKNOWN_CODEC"


@given(codec=st.sampled_from([1, 2, 3, 4]), magic=st.sampled_from([0, 1, 2]), data=st.binary(max_size=300))
@settings(max_examples=300, deadline=None)
def test_garbage_payloads_raise_only_format_errors(codec, magic, data):
    try:
        decompress(codec, data, magic=magic, max_output=1 << 16)
    except DecodeError:
        pass


def test_every_compressed_oracle_and_real_batch_decompresses():
    need_shared(ORACLE)
    files = glob.glob(str(ORACLE / "logs" / "*" / "*.log")) + glob.glob(str(REALDATA / "**" / "*.log"), recursive=True)
    seen = set()
    for path in files:
        if "corrupt-crc" in path:
            continue
        for b in SegmentReader(path).batches():
            if b.codec:
                _records, error = entry_records(b)
                assert error is None, (path, b.position, error)
                seen.add((b.magic, b.codec))
    assert {(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3), (2, 4)} <= seen


def test_control_records_match_the_oracle():
    need_shared(ORACLE)
    for case in ("v2-transactions", "v2-kraft-control", "v2-compacted"):
        man = load_manifest(case)
        for seg in man["segments"]:
            for b, exp in zip(SegmentReader(ORACLE / seg["file"]).batches(), seg["batches"]):
                ours, _ = entry_records(b)
                for r, e in zip(ours, exp["records"]):
                    if e["control"] is not None:
                        got = {k: v for k, v in r.control.items() if k != "detail"}
                        assert got == e["control"]


def test_real_kraft_snapshots_decode_their_control_records():
    need_shared(REALDATA)
    snaps = sorted(glob.glob(str(REALDATA / "ronem123*" / "**" / "*.checkpoint"), recursive=True))[:5]
    assert snaps
    for p in snaps:
        types = [r.control["type"] for b in SegmentReader(p).batches() for r in entry_records(b)[0] if r.control]
        assert types[:3] == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS"] and types[-1] == "SNAPSHOT_FOOTER"


@given(leader=st.integers(-1, 2**31 - 1), voters=st.lists(st.integers(0, 2**31 - 1), max_size=5),
       epoch=st.integers(-(2**31), 2**31 - 1))
def test_control_round_trips(leader, voters, epoch):
    d = control.decode_control(control.encode_control_key("LEADER_CHANGE"), control.encode_leader_change(leader, voters, voters[:1]))
    assert (d["leaderId"], d["voters"], d["grantingVoters"]) == (leader, voters, voters[:1])
    d = control.decode_control(control.encode_control_key("COMMIT"), control.encode_end_txn_marker(epoch))
    assert (d["type"], d["coordinatorEpoch"]) == ("COMMIT", epoch)
    d = control.decode_control(control.encode_control_key("KRAFT_VERSION"), control.encode_kraft_version(1))
    assert d["kRaftVersion"] == 1


@given(key=st.binary(max_size=6), value=st.one_of(st.none(), st.binary(max_size=60)))
@settings(max_examples=300)
def test_bad_control_bytes_raise_only_format_errors(key, value):
    try:
        control.decode_control(key, value)
    except DecodeError:
        pass
