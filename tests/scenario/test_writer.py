"""LogDirWriter round trips: a broker dir written with kforensics' encoders scans back to what was declared."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kforensics.formats import checkpoint, legacy, meta_properties, partition_metadata
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log.log_dir import open_log_dir
from kforensics.log.segment_reader import SegmentReader
from kforensics.scenario.writer import LogDirWriter, PartitionWriter, segment_name
from kforensics.scan.broker import scan_log_dirs

T0 = 1_700_000_000_000
TOPIC_ID = base64.urlsafe_b64encode(uuid.UUID("5b4a2f3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b").bytes).decode().rstrip("=")


def v2(first: int, n: int, epoch: int, value: bytes = b"v" * 30) -> bytes:
    return build_batch([RecordData(first + j, T0 + first + j, b"k%d" % j, value) for j in range(n)],
                       partition_leader_epoch=epoch)


def write_orders(tmp_path: Path, sizes_epochs, segment_bytes: int = 400, **lw):
    """A broker with ``orders-0`` made of v2 batches of (records, epoch); returns writer, dir, batch bytes."""
    w = LogDirWriter(tmp_path / "broker", **lw)
    pw = w.partition("orders", 0, segment_bytes=segment_bytes, topic_id=TOPIC_ID)
    off, raws = 0, []
    for n, epoch in sizes_epochs:
        raws.append(v2(off, n, epoch))
        pw.append(raws[-1])
        off += n
    return w, pw, raws, off


def test_broker_dir_round_trips_through_the_scan(tmp_path):
    w, pw, raws, end = write_orders(tmp_path, [(1, 0), (2, 0), (3, 1), (1, 1), (2, 1), (3, 3), (1, 3), (2, 3), (3, 4)],
                                    clean_shutdown=True)
    w.high_watermarks[("orders", 0)] = end - 2
    w.recovery_points[("orders", 0)] = end
    w.log_start_offsets[("orders", 0)] = 0
    d = w.write()
    report = scan_log_dirs([d])
    assert report.all_findings() == []
    (p,) = report.partitions
    assert (p.dir_name, p.log_start_offset, p.log_end_offset, p.high_watermark, p.recovery_point) == (
        "orders-0", 0, end, end - 2, end)
    assert p.uncommitted == 2
    assert p.epoch_cache_written == p.epoch_cache_rebuilt == [(0, 0), (1, 3), (3, 9), (4, 15)]
    assert pw.epochs == [(0, 0), (1, 3), (3, 9), (4, 15)]
    assert [s.base_offset for s in p.segments] == [base for base, _ in pw.segments]
    assert (p.batch_count, p.record_count, p.topic_id) == (len(raws), end, TOPIC_ID)
    b = report.broker
    assert (b.node_id, b.cluster_id, b.meta_version) == (1, "kforensics-fixture-cluster", 0)
    assert b.clean_shutdown == {str(d): True}


def test_segments_roll_at_segment_bytes_and_hold_the_batches_in_order(tmp_path):
    w, pw, raws, end = write_orders(tmp_path, [(2, 0)] * 12, segment_bytes=500)
    d = w.write()
    part = d / "orders-0"
    logs = sorted(part.glob("*.log"))
    assert [x.name for x in logs] == [segment_name(base, ".log") for base, _ in pw.segments]
    assert len(logs) > 1
    assert all(x.stat().st_size <= 500 for x in logs)
    assert b"".join(x.read_bytes() for x in logs) == b"".join(raws)
    got = []
    for x in logs:
        r = SegmentReader(x)
        bs = [(b.base_offset, b.last_offset, b.crc, b.is_valid) for b in r.batches()]
        assert r.summary.findings == [] and bs[0][0] == int(x.stem)
        got += bs
    assert [g[0] for g in got] == list(range(0, end, 2)) and all(g[3] for g in got)


def test_side_files_decode_to_what_was_declared(tmp_path):
    w, pw, raws, end = write_orders(tmp_path, [(1, 2), (2, 2), (3, 5)], segment_bytes=1 << 20, node_id=7,
                                    cluster_id="c-1")
    w.high_watermarks[("orders", 0)] = 4
    w.recovery_points[("orders", 0)] = 6
    w.log_start_offsets[("orders", 0)] = 1
    w.cleaner_offsets[("orders", 0)] = 3
    d = w.write()
    mp = meta_properties.decode((d / "meta.properties").read_bytes())
    assert (mp.version, mp.node_id, mp.cluster_id, mp.findings) == (0, 7, "c-1", [])
    for name, want in (("replication-offset-checkpoint", 4), ("recovery-point-offset-checkpoint", 6),
                       ("log-start-offset-checkpoint", 1), ("cleaner-offset-checkpoint", 3)):
        cp = checkpoint.decode((d / name).read_bytes(), name.replace("-", "_"))
        assert cp.findings == [] and cp.offsets() == {("orders", 0): want}
    ep = checkpoint.decode((d / "orders-0" / "leader-epoch-checkpoint").read_bytes(), "leader_epoch_checkpoint")
    assert ep.epochs() == [(2, 0), (5, 3)]
    pm = partition_metadata.decode((d / "orders-0" / "partition.metadata").read_bytes())
    assert pm.topic_id == TOPIC_ID
    seg = open_log_dir(d).partitions[0].segments[0]
    idx = seg.read_offset_index().value
    # one entry per batch: (last offset, position)
    positions = [sum(len(r) for r in raws[:i]) for i in range(len(raws))]
    assert list(idx.entries()) == [(0, positions[0]), (2, positions[1]), (5, positions[2])]
    tidx = seg.read_time_index().value
    assert [tuple(e) for e in tidx.entries()] == [(T0 + 0, 0), (T0 + 2, 2), (T0 + 5, 5)]


def test_without_identity_or_checkpoints_the_dir_is_bare(tmp_path):
    w, pw, raws, end = write_orders(tmp_path, [(1, 0)], node_id=None)
    pw.write_epoch_checkpoint = False
    d = w.write(checkpoints=False)
    assert sorted(x.name for x in d.iterdir()) == ["orders-0"]
    assert not (d / "orders-0" / "leader-epoch-checkpoint").exists()
    assert open_log_dir(d).is_bare


def test_legacy_entries_keep_their_offsets_and_leave_no_epochs(tmp_path):
    w = LogDirWriter(tmp_path / "broker")
    pl = w.partition("legacy", 1)
    for i in range(3):
        pl.append(legacy.encode_message(offset=i, magic=1, key=b"k", value=b"v", timestamp=T0 + i))
    pl.append(legacy.encode_wrapper([(3, b"a", b"b", T0 + 3), (4, None, b"c", T0 + 4)], magic=1, codec=1))
    w.high_watermarks[("legacy", 1)] = 5
    w.recovery_points[("legacy", 1)] = 5
    assert pl.next_offset == 5 and pl.epochs == []
    report = scan_log_dirs([w.write()])
    (p,) = report.partitions
    assert (p.log_end_offset, p.high_watermark, p.batch_count) == (5, 5, 4)
    assert p.epoch_cache_written == [] and p.epoch_cache_rebuilt == []
    assert [f.code for f in report.all_findings()] == ["LEGACY_FORMAT"]


def test_epoch_checkpoint_follows_kafkas_assign_rule():
    pw = PartitionWriter("t", 0)
    for first, n, epoch in [(0, 2, 1), (2, 1, 1), (3, 1, 0), (4, 2, 5), (6, 1, -1), (7, 1, 5), (8, 1, 6)]:
        pw.append(v2(first, n, epoch))
    # only a higher epoch starts an entry; lower, equal and unset epochs change nothing
    assert pw.epochs == [(1, 0), (5, 4), (6, 8)]
    assert pw.next_offset == 9


@st.composite
def logs(draw):
    batches = draw(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 3)), min_size=1, max_size=15))
    epochs, cur = [], 0
    for n, bump in batches:  # epochs never go down, as a leader writes them
        cur += bump if draw(st.booleans()) else 0
        epochs.append((n, cur))
    return epochs, draw(st.integers(150, 1500))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=logs(), hw_back=st.integers(0, 5))
def test_random_logs_round_trip(tmp_path_factory, spec, hw_back):
    sizes_epochs, segment_bytes = spec
    w, pw, raws, end = write_orders(tmp_path_factory.mktemp("w"), sizes_epochs, segment_bytes=segment_bytes)
    hw = max(0, end - hw_back)
    w.high_watermarks[("orders", 0)] = hw
    w.recovery_points[("orders", 0)] = end
    report = scan_log_dirs([w.write()])
    assert report.all_findings() == []
    (p,) = report.partitions
    expected_epochs, last = [], None
    off = 0
    for n, e in sizes_epochs:
        if e != last:
            expected_epochs.append((e, off))
            last = e
        off += n
    assert (p.log_end_offset, p.high_watermark, p.record_count, p.batch_count) == (end, hw, end, len(raws))
    assert p.epoch_cache_written == p.epoch_cache_rebuilt == expected_epochs
    assert [s.base_offset for s in p.segments] == [base for base, _ in pw.segments]
