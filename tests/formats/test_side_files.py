"""Indexes, checkpoints, producer snapshots and metadata files: real data, round trips, damage."""

from __future__ import annotations

import glob
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import REALDATA, need_shared
from dataclasses import asdict

from kforensics.catalogue import CATALOGUE
from kforensics.findings import Severity
from kforensics.formats import (
    checkpoint,
    meta_properties,
    offset_index,
    partition_metadata,
    producer_snapshot,
    quorum_state,
    time_index,
    txn_index,
)
from kforensics.log.file_kinds import FileKind, classify_name
from kforensics.log.side_files import decoder

def decode_file(path, kind: FileKind, data: bytes):
    return decoder(kind.kind, kind.base_offset)(data)


SIDE_KINDS = {"offset_index", "time_index", "txn_index", "producer_snapshot", "partition_metadata", "meta_properties",
              "quorum_state", "clean_shutdown", *checkpoint.KINDS}


def real_side_files():
    need_shared(REALDATA)
    out = []
    for p in glob.glob(str(REALDATA / "**" / "*"), recursive=True) + glob.glob(
        str(REALDATA / "**" / ".kafka_cleanshutdown"), recursive=True
    ):
        if os.path.isfile(p) and "_manifests" not in p and classify_name(p).kind in SIDE_KINDS:
            out.append(p)
    return out


def test_every_real_side_file_decodes_without_problems():
    files = real_side_files()
    kinds = {classify_name(p).kind for p in files}
    assert kinds >= {"offset_index", "time_index", "producer_snapshot", "leader_epoch_checkpoint", "meta_properties",
                     "quorum_state", "partition_metadata", "replication_offset_checkpoint", "clean_shutdown"}
    for p in files:
        d = decode_file(p, classify_name(p), open(p, "rb").read())
        assert [f for f in d.findings if f.severity > Severity.INFO] == [], p


def test_known_real_values():
    need_shared(REALDATA)
    r = REALDATA
    cp = checkpoint.decode((r / "cobyforrester__kafka__77a7583/data/kafka/cleaner-offset-checkpoint").read_bytes(),
                           "cleaner_offset_checkpoint")
    assert cp.offsets()[("__consumer_offsets", 21)] == 56
    qs = quorum_state.decode((r / "hiage__kafka-raft__c5f680e/data/kafka1/__cluster_metadata-0/quorum-state").read_bytes())
    assert (qs.leader_id, qs.leader_epoch, qs.data_version) == (1, 1, 0)
    qs = quorum_state.decode((r / "ronem123__rupia-transaction-service__5d88e97/kafka-logs/__cluster_metadata-0/quorum-state").read_bytes())
    assert qs.data_version == 1
    snap = producer_snapshot.decode((r / "DonaldY__kafka-2.7.1__13bb4a8/kafka-logs/myTopic-0/00000000000000000038.snapshot").read_bytes())
    assert [e.producer_id for e in snap.entries] == [4001, 4002, 4003] and snap.crc == snap.computed_crc
    mp = meta_properties.decode((r / "Niloufar1171__LDI-POC__8030792/meta.properties").read_bytes())
    assert (mp.version, mp.node_id) == (1, 1) and mp.directory_id and mp.cluster_id
    mp = meta_properties.decode((r / "williamjie__kafakainfo__fb12177/data/meta.properties").read_bytes())
    assert (mp.version, mp.node_id, mp.cluster_id) == (0, 1, None)
    pm = partition_metadata.decode((r / "hiage__kafka-raft__c5f680e/data/kafka1/__cluster_metadata-0/partition.metadata").read_bytes())
    assert pm.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"


def test_preallocated_index_tail_is_info_and_stops_decoding():
    data = offset_index.encode([(100, 0), (105, 4100), (110, 8300)], 100, preallocate_to=800)
    idx = offset_index.decode(data, 100)
    assert list(idx.entries()) == [(100, 0), (105, 4100), (110, 8300)] and idx.padding_entries == 97
    assert [(f.code, f.severity) for f in idx.findings] == [("INDEX_PREALLOCATED_TAIL", Severity.INFO)]
    assert offset_index.sanity_findings(idx) == []
    tdata = time_index.encode([(1000, 100), (2000, 110)], 100, preallocate_to=120)
    tidx = time_index.decode(tdata, 100)
    assert list(tidx.entries()) == [(1000, 100), (2000, 110)] and tidx.padding_entries == 8
    # a zero-padded time index fails Kafka's sanity check (last timestamp below the first): what every active
    # segment's time index looks like, so only INFO
    sanity = time_index.sanity_findings(tidx)
    assert [(f.code, f.severity, f.position) for f in sanity] == [("INDEX_SANITY_CHECK_FAILED", Severity.INFO, 108)]


def test_index_damage_findings():
    data = offset_index.encode([(10, 0), (9, 50)], 0) + b"\x01\x02\x03"
    found = {(f.code, f.position) for f in offset_index.decode(data, 0).findings}
    assert found == {("INDEX_NOT_INCREASING", 8), ("INDEX_PARTIAL_ENTRY", 16)}


@pytest.mark.parametrize(
    "text,code,line",
    [
        (b"1\n1\nt 0 5\n", "CHECKPOINT_BAD_VERSION", 1),
        (b"0\n2\nt 0 5\n", "CHECKPOINT_COUNT_MISMATCH", 2),
        (b"0\n1\nt 0\n", "CHECKPOINT_MALFORMED_LINE", 3),
        (b"0\n1\nt x 5\n", "CHECKPOINT_MALFORMED_LINE", 3),
        (b"0\n1\nt\xff 0 5\n", "CHECKPOINT_NOT_UTF8", 3),
    ],
)
def test_checkpoint_problems_carry_line_numbers(text, code, line):
    cp = checkpoint.decode(text, "replication_offset_checkpoint")
    assert (code, line) in {(f.code, f.line) for f in cp.findings}
    # Kafka refuses the whole file, and takes the log dir offline, for each of these
    assert all(f.severity == Severity.HIGH for f in cp.findings)


def test_a_negative_offset_is_read_by_kafka_so_it_is_not_a_refusal():
    # Long.parseLong("-5") succeeds: the file loads, it just carries an impossible offset
    cp = checkpoint.decode(b"0\n1\nt 0 -5\n", "replication_offset_checkpoint")
    assert [(f.code, f.line, f.severity) for f in cp.findings] == [("CHECKPOINT_NEGATIVE", 3, Severity.LOW)]
    ep = checkpoint.decode(b"0\n1\n-1 5\n", "leader_epoch_checkpoint")
    assert [(f.code, f.severity) for f in ep.findings] == [("CHECKPOINT_NEGATIVE", Severity.HIGH)]


@pytest.mark.parametrize("line", [b"t 1 2_4", b"t 1 9223372036854775808", b"t 3000000000 5", b"t 1 1e3", b"t 1 +"])
def test_checkpoint_numbers_are_read_as_java_reads_them(line):
    cp = checkpoint.decode(b"0\n1\n" + line + b"\n", "replication_offset_checkpoint")
    assert [(f.code, f.line) for f in cp.findings] == [("CHECKPOINT_MALFORMED_LINE", 3)]
    assert cp.entries == []


def test_junk_checkpoint_lines_are_capped():
    cp = checkpoint.decode(b"0\n100000\n" + b"junk\n" * 100_000, "leader_epoch_checkpoint")
    codes = [f.code for f in cp.findings]
    assert codes.count("CHECKPOINT_MALFORMED_LINE") == 100
    more = next(f for f in cp.findings if f.code == "MORE_FINDINGS")
    assert more.facts == {"finding_code": "CHECKPOINT_MALFORMED_LINE", "total": 100_000, "listed": 100}


entries3 = st.lists(st.tuples(st.from_regex(r"[a-zA-Z0-9._-]{1,20}", fullmatch=True), st.integers(0, 10**4),
                              st.integers(0, 2**62)), max_size=20, unique_by=lambda e: e[:2])


@given(entries3)
def test_offset_checkpoint_round_trip(entries):
    cp = checkpoint.decode(checkpoint.encode("replication_offset_checkpoint", entries), "replication_offset_checkpoint")
    assert cp.findings == [] and [(e.topic, e.partition, e.offset) for e in cp.entries] == entries


@given(st.lists(st.tuples(st.integers(1, 1000), st.integers(0, 5000), st.integers(1, 10**6)), max_size=30))
def test_index_round_trips(steps):
    base, off, pos, ts = 1000, 1000, 0, 0
    entries, tentries = [], []
    for do, dp, dt in steps:
        entries.append((off, pos))
        tentries.append((ts + dt, off))
        off, pos, ts = off + do, pos + dp, ts + dt
    idx = offset_index.decode(offset_index.encode(entries, base), base)
    assert list(idx.entries()) == entries and idx.findings == []
    tidx = time_index.decode(time_index.encode(tentries, base), base)
    assert list(tidx.entries()) == tentries and tidx.findings == []


@given(st.lists(st.fixed_dictionaries({
    "producer_id": st.integers(-1, 2**63 - 1), "epoch": st.integers(-1, 32767), "last_sequence": st.integers(-1, 2**31 - 1),
    "last_offset": st.integers(-1, 2**62), "offset_delta": st.integers(0, 2**31 - 1), "timestamp": st.integers(-1, 2**62),
    "coordinator_epoch": st.integers(-1, 2**31 - 1), "current_txn_first_offset": st.integers(-1, 2**62)}), max_size=5))
def test_producer_snapshot_round_trip(entries):
    s = producer_snapshot.decode(producer_snapshot.encode(entries))
    assert [asdict(e) for e in s.entries] == entries and s.findings == []


def test_txn_index_round_trip_and_partial_entry():
    e = [dict(producer_id=7, first_offset=5, last_offset=9, last_stable_offset=5)]
    idx = txn_index.decode(txn_index.encode(e) + b"\x00\x00", base_offset=0)
    assert list(idx.entries()) == [(0, 7, 5, 9, 5)]
    assert [(f.code, f.position) for f in idx.findings] == [("INDEX_PARTIAL_ENTRY", 34)]


@given(st.binary(max_size=400), st.sampled_from(sorted(SIDE_KINDS)))
@settings(max_examples=400)
def test_side_decoders_never_raise(data, kind):
    decoded = decode_file("x", FileKind(kind, 0), data)
    # whatever the bytes, a decoded value comes back, and every problem is a catalogued finding
    assert all(f.code in CATALOGUE for f in decoded.findings)


def test_mutated_real_side_files_never_raise():
    import random

    rnd = random.Random(3)
    for p in real_side_files()[:300]:
        data = bytearray(open(p, "rb").read()[:50_000])
        for _ in range(3):
            if data:
                data[rnd.randrange(len(data))] = rnd.randrange(256)
        decoded = decode_file(p, classify_name(p), bytes(data))
        assert all(f.code in CATALOGUE for f in decoded.findings)
