"""Shared helpers: partition directories written from batch lists, and a reference model of Kafka's
transaction rules (written from ProducerAppendInfo / ProducerStateManager, independent of the package)."""

from __future__ import annotations

from pathlib import Path

from kforensics.formats.control import encode_control_key, encode_end_txn_marker
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log.file_kinds import parse_partition_dir_name
from kforensics.log.partition import open_partition
from kforensics.scenario.writer import LogDirWriter

T0 = 1_700_000_000_000


def data_batch(offset: int, pid: int = -1, epoch: int = -1, *, txn: bool = False, ts: int | None = None,
               key: bytes | None = None, value: bytes | None = b"v", records: int = 1) -> bytes:
    recs = [RecordData(offset + i, (ts if ts is not None else T0 + offset) + i, key or f"k{offset + i}".encode(),
                       value) for i in range(records)]
    return build_batch(recs, partition_leader_epoch=0, producer_id=pid, producer_epoch=epoch,
                       base_sequence=0 if pid >= 0 else -1, transactional=txn)


def marker_batch(offset: int, pid: int, epoch: int, kind: str = "COMMIT", coordinator_epoch: int = 0,
                 ts: int | None = None) -> bytes:
    return build_batch([RecordData(offset, ts if ts is not None else T0 + offset, encode_control_key(kind),
                                   encode_end_txn_marker(coordinator_epoch))],
                       partition_leader_epoch=0, producer_id=pid, producer_epoch=epoch, transactional=True,
                       control=True)


def write_partition(root: Path, topic: str, partition: int, batches: list[bytes], *, broker_id: int = 1,
                    txn_index: bytes | None = None):
    """A log dir holding one partition of these batches; its PartitionLog."""
    lw = LogDirWriter(root, node_id=broker_id, cluster_id="t")
    pw = lw.partition(topic, partition)
    for b in batches:
        pw.append(b)
    lw.write()
    d = root / pw.dir_name
    if txn_index is not None:
        (d / "00000000000000000000.txnindex").write_bytes(txn_index)
    return open_partition(d, parse_partition_dir_name(d.name), [])


def reference(ops: list[tuple]) -> dict:
    """What Kafka's rules give for a log of ops: ("data", pid, epoch) / ("marker", pid, epoch, kind) / ("plain",),
    one offset each.  Returns open (pid -> first), aborted [(pid, first, last, lso)], markers [(offset, pid, kind,
    first or None)], lso (no HW), epoch_backwards offsets."""
    ongoing: dict[int, int] = {}
    epochs: dict[int, int] = {}
    aborted, markers, backwards = [], [], []
    for off, op in enumerate(ops):
        if op[0] == "plain":
            continue
        pid, epoch = op[1], op[2]
        if pid in epochs and epoch < epochs[pid]:
            backwards.append(off)
        else:
            epochs[pid] = epoch
        if op[0] == "data":
            ongoing.setdefault(pid, off)
            continue
        first = ongoing.pop(pid, None)
        markers.append((off, pid, op[3], first))
        if op[3] == "ABORT" and first is not None:
            aborted.append((pid, first, off, min(ongoing.values(), default=off + 1)))
    end = len(ops)
    return {"open": dict(ongoing), "aborted": aborted, "markers": markers, "backwards": backwards,
            "lso": min(list(ongoing.values()) + [end])}


def batches_of(ops: list[tuple]) -> list[bytes]:
    out = []
    for off, op in enumerate(ops):
        if op[0] == "plain":
            out.append(data_batch(off))
        elif op[0] == "data":
            out.append(data_batch(off, op[1], op[2], txn=True))
        else:
            out.append(marker_batch(off, op[1], op[2], op[3]))
    return out
