"""Committed offsets from __consumer_offsets: latest by log order, tombstones delete, transactional commits wait
for their marker, copies merge; every real broker's partitions read completely."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kforensics.consumers.committed_offsets import coordinator_copies, read_committed_offsets
from kforensics.formats.control import encode_control_key, encode_end_txn_marker
from kforensics.formats.group_coordinator import encode
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log.file_kinds import parse_partition_dir_name
from kforensics.log.partition import open_partition
from kforensics.scenario.writer import LogDirWriter
from kforensics.serialize import dumps
from kforensics.transactions.internal_log import coordinator_partition
from tests.conftest import REALDATA, need_shared

KEYS = [("g1", "orders", 0), ("g1", "orders", 1), ("g2", "orders", 0)]


def commit_value(offset: int, version: int = 3) -> dict:
    if version == 1:
        return {"offset": offset, "metadata": "m", "commitTimestamp": 1000 + offset, "expireTimestamp": -1}
    return {"offset": offset, "leaderEpoch": offset % 3 - 1, "metadata": "m", "commitTimestamp": 1000 + offset}


def batches_of(ops: list[tuple]) -> list[bytes]:
    """ops: ("commit", key i, offset, version) / ("tombstone", key i) / ("txn", pid, key i, offset) /
    ("marker", pid, kind) / ("group", name) (group metadata, ignored); one record per batch."""
    out = []
    for off, op in enumerate(ops):
        pid, txn, control = -1, False, False
        if op[0] == "commit":
            g, t, p = KEYS[op[1]]
            k, v = encode("OffsetCommitValue", op[3], {"group": g, "topic": t, "partition": p}, commit_value(op[2],
                                                                                                          op[3]))
        elif op[0] == "tombstone":
            g, t, p = KEYS[op[1]]
            k, v = encode("OffsetCommitKey", None, {"group": g, "topic": t, "partition": p}, None)
        elif op[0] == "txn":
            g, t, p = KEYS[op[2]]
            k, v = encode("OffsetCommitValue", 3, {"group": g, "topic": t, "partition": p}, commit_value(op[3]))
            pid, txn = op[1], True
        elif op[0] == "marker":
            k, v = encode_control_key(op[2]), encode_end_txn_marker(0)
            pid, txn, control = op[1], True, True
        else:
            k, v = encode("GroupMetadataKey", None, {"group": op[1]}, None)
        out.append(build_batch([RecordData(off, 1000 + off, k, v)], partition_leader_epoch=0, producer_id=pid,
                               producer_epoch=0 if pid >= 0 else -1, transactional=txn, control=control))
    return out


def reference(ops: list[tuple]) -> dict:
    """The coordinator's load (GroupMetadataManager.doLoadGroupsAndOffsets / OffsetMetadataManager.replay):
    key -> (offset, record offset)."""
    loaded: dict = {}
    pending: dict = {}
    for off, op in enumerate(ops):
        if op[0] == "commit":
            loaded[KEYS[op[1]]] = (op[2], off)
        elif op[0] == "tombstone":
            loaded.pop(KEYS[op[1]], None)
            for p in pending.values():
                p.pop(KEYS[op[1]], None)
        elif op[0] == "txn":
            pending.setdefault(op[1], {})[KEYS[op[2]]] = (op[3], off)
        elif op[0] == "marker":
            p = pending.pop(op[1], {})
            if op[2] == "COMMIT":
                for key, val in p.items():
                    if key not in loaded or loaded[key][1] < val[1]:
                        loaded[key] = val
    return loaded


def write(root: Path, batches: list[bytes], partition: int = 7, broker_id: int = 1):
    lw = LogDirWriter(root, node_id=broker_id, cluster_id="t")
    pw = lw.partition("__consumer_offsets", partition)
    for b in batches:
        pw.append(b)
    lw.write()
    d = root / pw.dir_name
    return open_partition(d, parse_partition_dir_name(d.name), [])


OPS = st.lists(st.one_of(
    st.tuples(st.just("commit"), st.integers(0, 2), st.integers(0, 1000), st.sampled_from([1, 3])),
    st.tuples(st.just("tombstone"), st.integers(0, 2)),
    st.tuples(st.just("txn"), st.integers(1, 2), st.integers(0, 2), st.integers(0, 1000)),
    st.tuples(st.just("marker"), st.integers(1, 2), st.sampled_from(["COMMIT", "ABORT"])),
    st.tuples(st.just("group"), st.sampled_from(["g1", "g2"]))), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, cut=st.integers(0, 30))
def test_latest_wins_tombstones_delete_transactional_commits_wait_for_commit(tmp_path_factory, ops, cut):
    root = tmp_path_factory.mktemp("co")
    batches = batches_of(ops)
    full = write(root / "b1", batches)
    got = read_committed_offsets([(1, full)])
    want = reference(ops)
    assert {c.key: (c.offset, c.log_offset) for c in got.offsets} == want
    for c in got.offsets:
        assert c.file.endswith(".log") and c.position is not None and c.coordinator_partition == 7
        assert c.leader_epoch is None or c.leader_epoch >= 0
    # a shorter copy (a follower behind) changes nothing: per key the record at the highest log offset wins
    short = write(root / "b2", batches[: min(cut, len(batches))], broker_id=2)
    for copies in ([(1, full), (2, short)], [(2, short), (1, full)]):
        merged = read_committed_offsets(copies)
        assert {c.key: (c.offset, c.log_offset) for c in merged.offsets} == want
        for c in merged.offsets:
            assert 1 in c.copies
    dumps(got)


def test_keep_filters_and_counts(tmp_path):
    ops = [("commit", 0, 5, 3), ("commit", 2, 9, 1), ("tombstone", 0), ("txn", 1, 1, 4), ("marker", 1, "ABORT"),
           ("txn", 2, 1, 6)]
    co = read_committed_offsets([(1, write(tmp_path, batches_of(ops)))])
    assert [(c.group, c.offset, c.leader_epoch, c.value_version) for c in co.offsets] == [("g2", 9, None, 1)]
    assert (co.records, co.tombstones, co.aborted_commits, co.pending_commits) == (5, 1, 1, 1)
    assert not read_committed_offsets([(1, write(tmp_path / "b", batches_of(ops)))],
                                      keep=lambda g, t, p: g == "g1").offsets


def test_undecodable_records_become_findings_at_their_batch(tmp_path):
    bad = build_batch([RecordData(0, 1, b"\x00\x01\x00", b"\x00\x03garbage")], partition_leader_epoch=0)
    good = build_batch([RecordData(1, 1, *encode("OffsetCommitValue", 3, {"group": "g1", "topic": "orders",
                                                                         "partition": 0}, commit_value(5)))],
                       partition_leader_epoch=0)
    co = read_committed_offsets([(1, write(tmp_path, [bad, good]))])
    assert [c.offset for c in co.offsets] == [5]
    assert co.findings and all(f.file.endswith(".log") and f.position == 0 for f in co.findings)


def test_every_real_consumer_offsets_partition_reads(realdata_dir):
    seen = 0
    for corpus in sorted(p for p in realdata_dir.iterdir() if p.is_dir() and not p.name.startswith("_")):
        copies = coordinator_copies({None: [corpus]}, "__consumer_offsets")
        if not copies:
            continue
        co = read_committed_offsets(copies)
        seen += len(copies)
        assert not [f for f in co.findings if f.severity >= f.severity.MEDIUM], (corpus.name, co.findings[:3])
        for c in co.offsets:
            # Kafka placed each group's commits in partition abs(hash(group)) % 50
            assert c.coordinator_partition == coordinator_partition(c.group), (corpus.name, c)
            assert c.offset >= 0 and c.file and c.position is not None and c.log_offset >= 0
        dumps(co)
    assert seen >= 400


def test_real_commit_values_by_version():
    corpus = need_shared(REALDATA / "xpxwo100__bullShit__3ba36dd")  # Kafka 0.10.1: magic v1, value v1
    (c,) = read_committed_offsets(coordinator_copies({0: [corpus]}, "__consumer_offsets")).offsets
    assert (c.group, c.topic, c.partition, c.offset, c.leader_epoch, c.value_version) == ("GroupA", "foo", 0, 204,
                                                                                          None, 1)
    corpus = need_shared(REALDATA / "cesaralcancio__study-kafka__66aa23e")  # Kafka 2.7: value v3 with epochs
    co = read_committed_offsets(coordinator_copies({None: [corpus]}, "__consumer_offsets"))
    assert {c.value_version for c in co.offsets} == {3} and any(c.leader_epoch is not None for c in co.offsets)
