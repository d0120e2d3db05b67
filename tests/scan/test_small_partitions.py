"""Small partition dirs scanned together (issue 26) give what scanning them one by one gives: finding for finding,
row for row, custody record for custody record.

The expected answer is the per-partition path's (``scan_log_dirs(batched=False)``), which every other test of the scan
holds to Kafka's code and the lab; here it is compared with the batched path on a log dir of varied small partitions
(healthy, damaged CRC, torn and zero tails, empty, compacted gaps, transactions, legacy codecs, indexes, missing and
damaged side files, epochs going back, several segments) and on every broker of the scenario fixtures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kforensics.formats import checkpoint, meta_properties, offset_index, partition_metadata
from kforensics.formats.control import encode_control_key, encode_end_txn_marker
from kforensics.formats.record_batch import RecordData, build_batch, encode_batch
from kforensics.scan import broker as broker_module
from kforensics.scan import partition as partition_module
from kforensics.scan.broker import scan_log_dirs
from kforensics.serialize import to_jsonable
from tests.conftest import ROOT

TS = 1_700_000_000_000
SEG0 = "00000000000000000000.log"


def _batches(offsets: list[int], epochs: list[int] | None = None, **kw) -> bytes:
    """One one-record batch per offset (``epochs``: each batch's leader epoch, 0 by default)."""
    epochs = epochs or [0] * len(offsets)
    return b"".join(build_batch([RecordData(o, TS + o, key=b"k%d" % o, value=b"v" * 20)], base_offset=o,
                                partition_leader_epoch=e, **kw) for o, e in zip(offsets, epochs))


def _marker(offset: int, pid: int, commit: bool = True) -> bytes:
    key = encode_control_key("COMMIT" if commit else "ABORT")
    return build_batch([RecordData(offset, TS + offset, key=key, value=encode_end_txn_marker(0))],
                       base_offset=offset, partition_leader_epoch=0, producer_id=pid, producer_epoch=0,
                       transactional=True, control=True)


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


def _partitions() -> dict[str, dict[str, bytes]]:
    """Partition dir name -> its files."""
    ten = _batches(list(range(10)))
    one = len(_batches([0]))
    epoch_cp = checkpoint.encode("leader_epoch_checkpoint", [(0, 0)])
    out: dict[str, dict[str, bytes]] = {}
    for i in range(6):  # healthy, identical checkpoints (one decode shared)
        out[f"ok-{i}"] = {SEG0: ten, "leader-epoch-checkpoint": epoch_cp}
    out["ok-epochs-0"] = {SEG0: _batches(list(range(8)), [0, 0, 1, 1, 1, 3, 3, 3]),
                          "leader-epoch-checkpoint": checkpoint.encode("leader_epoch_checkpoint", [(0, 0), (1, 2),
                                                                                                    (3, 5)])}
    out["stale-checkpoint-0"] = {SEG0: _batches(list(range(6)), [0, 0, 2, 2, 2, 2]),
                                 "leader-epoch-checkpoint": epoch_cp}
    out["epoch-back-0"] = {SEG0: _batches(list(range(6)), [2, 2, 1, 1, 3, 3]), "leader-epoch-checkpoint": epoch_cp}
    out["no-checkpoint-0"] = {SEG0: ten}
    out["bad-checkpoint-0"] = {SEG0: ten, "leader-epoch-checkpoint": b"0\nx\n0 0\n"}
    out["empty-checkpoint-0"] = {SEG0: ten, "leader-epoch-checkpoint": b""}
    out["metadata-0"] = {SEG0: ten, "leader-epoch-checkpoint": epoch_cp,
                         "partition.metadata": partition_metadata.encode("AAAAAAAAAAAAAAAAAAAAAA")}
    out["bad-metadata-0"] = {SEG0: ten, "leader-epoch-checkpoint": epoch_cp, "partition.metadata": b"version: 9\n"}
    out["crc-0"] = {SEG0: _flip(ten, 5 * one + 70), "leader-epoch-checkpoint": epoch_cp}
    out["crc-first-0"] = {SEG0: _flip(ten, 70), "leader-epoch-checkpoint": epoch_cp}
    out["torn-0"] = {SEG0: ten[:-9], "leader-epoch-checkpoint": epoch_cp}
    out["zero-tail-0"] = {SEG0: ten + bytes(200), "leader-epoch-checkpoint": epoch_cp}
    out["junk-tail-0"] = {SEG0: ten + b"\x01" * 5, "leader-epoch-checkpoint": epoch_cp}
    out["zero-gap-0"] = {SEG0: ten[:3 * one] + bytes(100) + ten[3 * one:], "leader-epoch-checkpoint": epoch_cp}
    out["empty-0"] = {SEG0: b"", "leader-epoch-checkpoint": epoch_cp}
    out["no-segment-0"] = {"leader-epoch-checkpoint": epoch_cp}
    out["compacted-0"] = {SEG0: _batches([0, 1, 4, 5, 9]), "leader-epoch-checkpoint": epoch_cp}
    out["going-back-0"] = {SEG0: _batches([0, 1, 2, 1, 3]), "leader-epoch-checkpoint": epoch_cp}
    out["below-name-0"] = {"00000000000000000005.log": ten, "leader-epoch-checkpoint": epoch_cp}
    out["named-above-0"] = {"00000000000000000003.log": _batches(list(range(3, 9))),
                            "leader-epoch-checkpoint": checkpoint.encode("leader_epoch_checkpoint", [(0, 3)])}
    out["idempotent-0"] = {SEG0: _batches(list(range(5)), producer_id=7, producer_epoch=0, base_sequence=0),
                           "leader-epoch-checkpoint": epoch_cp}
    txn = _batches([0, 1], producer_id=9, producer_epoch=0, transactional=True)
    out["txn-open-0"] = {SEG0: txn, "leader-epoch-checkpoint": epoch_cp}
    out["txn-done-0"] = {SEG0: txn + _marker(2, 9), "leader-epoch-checkpoint": epoch_cp}
    bad_codec = encode_batch(b"", base_offset=0, last_offset_delta=0, records_count=0, base_timestamp=TS,
                             max_timestamp=TS, attributes=7, partition_leader_epoch=0)
    out["bad-codec-0"] = {SEG0: bad_codec, "leader-epoch-checkpoint": epoch_cp}
    out["indexed-0"] = {SEG0: ten, "00000000000000000000.index": offset_index.encode([(4, 4 * one)], 0),
                        "leader-epoch-checkpoint": epoch_cp}
    out["bad-index-0"] = {SEG0: ten, "00000000000000000000.index": offset_index.encode([(4, 4 * one + 3)], 0),
                          "leader-epoch-checkpoint": epoch_cp}
    out["two-segments-0"] = {SEG0: _batches([0, 1, 2]), "00000000000000000003.log": _batches([3, 4]),
                             "leader-epoch-checkpoint": epoch_cp}
    out["snapshot-0"] = {SEG0: ten, "00000000000000000010.snapshot": b"\x00\x01", "leader-epoch-checkpoint": epoch_cp}
    out["unknown-file-0"] = {SEG0: ten, "notes.txt": b"x", "leader-epoch-checkpoint": epoch_cp}
    out["leftover-0"] = {SEG0: ten, "00000000000000000000.log.deleted": ten, "leader-epoch-checkpoint": epoch_cp}
    out["large-0"] = {SEG0: _batches(list(range(1200))), "leader-epoch-checkpoint": epoch_cp}
    out["__consumer_offsets-0"] = {SEG0: ten, "leader-epoch-checkpoint": epoch_cp}
    out["ok-1.abc-delete"] = {SEG0: ten}
    return out


def _fleet(root: Path) -> Path:
    d = root / "logdir"
    d.mkdir()
    (d / "meta.properties").write_bytes(meta_properties.encode(0, 1, "small-fleet"))
    hw, rp = [], []
    for name, files in _partitions().items():
        pd = d / name
        pd.mkdir()
        for f, data in files.items():
            (pd / f).write_bytes(data)
        if "-" in name and name.rsplit("-", 1)[1].isdigit():
            topic, part = name.rsplit("-", 1)
            # high watermarks at, below and above the log's end; some partitions not checkpointed
            if not topic.endswith("ok-3"):
                hw.append((topic, int(part), {"ok-1": 4, "ok-2": 40}.get(topic, 10)))
            rp.append((topic, int(part), 0))
    (d / "replication-offset-checkpoint").write_bytes(checkpoint.encode("replication_offset_checkpoint", hw))
    (d / "recovery-point-offset-checkpoint").write_bytes(checkpoint.encode("recovery_point_offset_checkpoint", rp))
    return d


class _Rows:
    """A batch sink keeping every row it is given, by partition dir and segment file, in order."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], list[list[int]]] = {}

    def __call__(self, pd, seg, t) -> None:
        self.rows.setdefault((pd.dir_name, seg.log.name), []).extend(t.data.tolist())


def _both(dirs: list[Path]) -> tuple[tuple[str, dict], tuple[str, dict]]:
    out = []
    for batched in (False, True):
        sink = _Rows()
        report = scan_log_dirs(dirs, batched=batched, batch_sink=sink)
        out.append((json.dumps(to_jsonable(report), sort_keys=True), sink.rows))
    return out[0], out[1]


def test_small_partitions_scanned_together_are_scanned_as_one_by_one(tmp_path, monkeypatch):
    d = _fleet(tmp_path)
    one_by_one, batched = _both([d])
    assert batched[0] == one_by_one[0]
    assert batched[1] == one_by_one[1]
    # the batched path took the healthy dirs together (and only what it can answer for): the damaged ones went
    # through scan_partition, the healthy ones did not
    scanned: list[str] = []
    real = partition_module.scan_partition

    def counting(pd, *a, **kw):
        scanned.append(pd.dir_name)
        return real(pd, *a, **kw)

    monkeypatch.setattr(broker_module, "scan_partition", counting)
    scan_log_dirs([d], batched=True)
    assert not {f"ok-{i}" for i in range(6)} & set(scanned)
    assert {"crc-0", "torn-0", "empty-0", "compacted-0", "txn-done-0", "two-segments-0", "large-0",
            "bad-codec-0", "below-name-0", "zero-tail-0"} <= set(scanned)


def test_a_healthy_partition_scanned_together_has_its_findings(tmp_path):
    """Not a comparison only: the batched path's own answer for a healthy dir without an index."""
    d = _fleet(tmp_path)
    report = scan_log_dirs([d], batched=True)
    p = next(p for p in report.partitions if p.dir_name == "ok-0")
    assert [f.code for f in p.findings] == ["INDEX_MISSING"]
    assert (p.batch_count, p.record_count, p.log_start_offset, p.log_end_offset) == (10, 10, 0, 10)
    assert p.epoch_cache_written == p.epoch_cache_rebuilt == [(0, 0)]
    assert [f.kind for f in p.files] == ["log", "leader_epoch_checkpoint"]


SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if p.is_dir())


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_scenario_brokers_scanned_together_are_scanned_as_one_by_one(scenario):
    for broker in sorted(scenario.glob("broker-*")):
        dirs = sorted(x for x in [broker, *broker.glob("logs-*")] if x.is_dir())
        one_by_one, batched = _both([broker])
        assert batched == one_by_one, (scenario.name, broker.name, dirs)
