"""Seeds for the fuzz harness: every file kind kforensics reads, from kforensics' own encoders (always
available) and from ../shared (segments Kafka's client library wrote, real broker files) when present.

A seed is one or more files under a relative path: a segment, a side file, a
whole broker log dir.  Seeds are deterministic: the same seeds in the same
order on every run, so a campaign input is named by (kind, seed, mutation
seed) alone.
"""

from __future__ import annotations

import base64
import os
import random
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from kforensics.formats import (
    checkpoint,
    clean_shutdown,
    legacy,
    meta_properties,
    offset_index,
    partition_metadata,
    producer_snapshot,
    quorum_state,
    time_index,
    txn_index,
)
from kforensics.formats.control import (
    encode_control_key,
    encode_end_txn_marker,
    encode_kraft_version,
    encode_leader_change,
    encode_snapshot_footer,
    encode_snapshot_header,
)
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.scenario.writer import LogDirWriter

from . import wire

ROOT = Path(__file__).resolve().parents[2]
#: ../shared beside the checkout; KF_FUZZ_SHARED names it when the code runs from elsewhere (a campaign snapshot)
SHARED = Path(os.environ.get("KF_FUZZ_SHARED") or ROOT.parent / "shared")
ORACLE = SHARED / "oracle" / "fixtures"
REALDATA = SHARED / "realdata"

T0 = 1_700_000_000_000
SEGMENT = "00000000000000000000.log"
METADATA_DIR = "__cluster_metadata-0"

#: file kinds -> the name a single-file seed is written under (side files are chosen by name, as Kafka names them)
SIDE_FILE_NAMES = {
    "offset_index": "00000000000000000000.index",
    "time_index": "00000000000000000000.timeindex",
    "txn_index": "00000000000000000000.txnindex",
    "replication_offset_checkpoint": "replication-offset-checkpoint",
    "recovery_point_offset_checkpoint": "recovery-point-offset-checkpoint",
    "log_start_offset_checkpoint": "log-start-offset-checkpoint",
    "cleaner_offset_checkpoint": "cleaner-offset-checkpoint",
    "leader_epoch_checkpoint": "leader-epoch-checkpoint",
    "meta_properties": "meta.properties",
    "partition_metadata": "partition.metadata",
    "producer_snapshot": "00000000000000000005.snapshot",
    "clean_shutdown": ".kafka_cleanshutdown",
    "quorum_state": "quorum-state",
}
SEGMENT_KINDS = ("log_v0", "log_v1", "log_v2", "control", "metadata_log", "kraft_snapshot")
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state", "__remote_log_metadata")
KINDS = SEGMENT_KINDS + tuple(SIDE_FILE_NAMES) + ("internal_record", "log_dir")


@dataclass
class Seed:
    kind: str
    name: str  # where it came from
    files: dict[str, bytes] = field(default_factory=dict)  # relative path -> bytes
    topic: str | None = None  # internal_record: the topic
    key: bytes | None = None  # internal_record
    value: bytes | None = None

    @property
    def main(self) -> str:
        """The file a mutation targets by default."""
        return next(iter(self.files))


# ----------------------------------------------------------------------------- values for any message layout
def sample_for(con, rng: random.Random, depth: int = 0, nullable: bool = True):
    """A value of a compiled message layout (kforensics.formats.message_schema), drawn from ``rng``."""
    from construct import Flag, FormatField

    from kforensics.formats.message_schema import Base64Bytes, Flexible, NonFlexible, NotNull, NullableStruct
    from kforensics.formats.protocol import ClassicArray, ClassicBytes, ClassicString, CompactArray, CompactBytes
    from kforensics.formats.protocol import CompactString, Uuid

    def maybe_null(make):
        return None if nullable and rng.random() < 0.15 else make()

    if isinstance(con, (Flexible, NonFlexible)):
        return {f.name: sample_for(f.subcon, rng, depth + 1) for f in con.fields}
    if isinstance(con, NullableStruct):
        return None if rng.random() < 0.2 else sample_for(con.subcon, rng, depth)
    if isinstance(con, NotNull):
        return sample_for(con.subcon, rng, depth, nullable=False)
    if isinstance(con, Base64Bytes):
        v = base64.b64encode(rng.randbytes(rng.randint(0, 10))).decode()
        return None if con.nullable and rng.random() < 0.15 else v
    if isinstance(con, Uuid):
        return base64.urlsafe_b64encode(rng.randbytes(16)).rstrip(b"=").decode()
    if isinstance(con, (CompactString, ClassicString)):
        return maybe_null(lambda: rng.choice(["", "g", "orders", "grp-1", "é", "topic.name_with-chars"]))
    if isinstance(con, (CompactBytes, ClassicBytes)):
        return maybe_null(lambda: rng.randbytes(rng.randint(0, 8)))
    if isinstance(con, (CompactArray, ClassicArray)):
        return maybe_null(lambda: [sample_for(con.subcon, rng, depth + 1) for _ in range(rng.randint(0, 2 if depth
                                                                                                     else 3))])
    if con is Flag:
        return rng.random() < 0.5
    if isinstance(con, FormatField):
        if con.fmtstr == ">d":
            return rng.choice([0.0, 1.5, -2.25])
        bits = 8 * con.length
        if con.fmtstr[-1].isupper():
            return rng.choice([0, 1, 2**bits - 1, rng.randrange(2**bits)])
        return rng.choice([0, 1, -1, 2 ** (bits - 1) - 1, -(2 ** (bits - 1)), rng.randrange(2**bits) - 2 ** (bits - 1)])
    if hasattr(con, "subcon"):
        return sample_for(con.subcon, rng, depth, nullable)
    raise TypeError(f"no sample for {con!r}")


# ----------------------------------------------------------------------------- synthetic segments
def _records(rng: random.Random, first: int, n: int, gaps: bool = False) -> list[RecordData]:
    out, off = [], first
    for i in range(n):
        key = rng.choice([None, b"", b"k%d" % i, rng.randbytes(rng.randint(1, 12))])
        value = rng.choice([None, b"", b"value %d" % i, rng.randbytes(rng.randint(1, 40))])
        headers = rng.choice([[], [("h", b"v")], [("trace", None), (b"\xff", b"x" * 3)]])
        out.append(RecordData(off, T0 + rng.randint(-50, 500), key, value, headers))
        off += 1 + (rng.randint(0, 3) if gaps else 0)
    return out


def v2_segment(codec: int, seed: int = 0) -> bytes:
    rng = random.Random(seed * 31 + codec)
    out, off = [], 0
    for b in range(4):
        recs = _records(rng, off, rng.randint(1, 5), gaps=b == 2)
        kw = {}
        if b == 1:
            kw = dict(producer_id=7, producer_epoch=1, base_sequence=10)
        if b == 3:
            kw = dict(log_append_time=T0 + 999)
        out.append(build_batch(recs, codec=codec, partition_leader_epoch=b // 2, **kw))
        off = recs[-1].offset + 1
    out.append(build_batch([], base_offset=off, last_offset=off, codec=codec))  # an empty batch (compaction)
    return b"".join(out)


def legacy_segment(magic: int, codec: int, seed: int = 0) -> bytes:
    rng = random.Random(seed * 17 + magic * 5 + codec)
    out, off = [], 0
    for b in range(4):
        if codec == 0:
            key = rng.choice([None, b"k", rng.randbytes(5)])
            value = rng.choice([None, b"", b"v" * rng.randint(1, 30)])
            out.append(legacy.encode_message(offset=off, magic=magic, key=key, value=value,
                                             timestamp=T0 + b if magic else -1))
            off += 1
        else:
            n = rng.randint(1, 4)
            inner = [(off + i, rng.choice([None, b"k%d" % i]), b"value %d" % i, T0 + i) for i in range(n)]
            out.append(legacy.encode_wrapper(inner, magic=magic, codec=codec))
            off += n
    return b"".join(out)


def control_segment(seed: int = 0) -> bytes:
    """Transactional data batches closed by COMMIT and ABORT markers, and KRaft control records."""
    out = []
    pid = 42
    for i, kind in enumerate(("COMMIT", "ABORT")):
        base = i * 3
        out.append(build_batch([RecordData(base, T0, b"k", b"v"), RecordData(base + 1, T0, b"k2", b"v2")],
                               producer_id=pid, producer_epoch=0, base_sequence=base, transactional=True,
                               partition_leader_epoch=0))
        out.append(build_batch([RecordData(base + 2, T0, encode_control_key(kind), encode_end_txn_marker(5))],
                               producer_id=pid, producer_epoch=0, transactional=True, control=True,
                               partition_leader_epoch=0))
    kraft = [("LEADER_CHANGE", encode_leader_change(1, [1, 2, 3], [1, 2])),
             ("SNAPSHOT_HEADER", encode_snapshot_header(T0)), ("SNAPSHOT_FOOTER", encode_snapshot_footer()),
             ("KRAFT_VERSION", encode_kraft_version(1))]
    for j, (kind, value) in enumerate(kraft):
        out.append(build_batch([RecordData(6 + j, T0, encode_control_key(kind), value)], control=True,
                               partition_leader_epoch=1))
    return b"".join(out)


def metadata_values(seed: int = 0) -> list[bytes]:
    from kforensics.formats.metadata_records import encode_metadata_record

    tid = "AAAAAAAAAAAAAAAAAAAABw"
    part = {"partitionId": 0, "topicId": tid, "replicas": [1, 2, 3], "isr": [1, 2, 3], "removingReplicas": [],
            "addingReplicas": [], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0}
    vals = [encode_metadata_record("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 7}),
            encode_metadata_record("TopicRecord", 0, {"name": "t", "topicId": tid}),
            encode_metadata_record("PartitionRecord", 0, part),
            encode_metadata_record("PartitionChangeRecord", 0, {"partitionId": 0, "topicId": tid, "isr": [1, 2]}),
            encode_metadata_record("PartitionChangeRecord", 0, {"partitionId": 0, "topicId": tid, "leader": 2}),
            encode_metadata_record("PartitionChangeRecord", 0, {"partitionId": 0, "topicId": tid, "leader": 3,
                                                                "isr": [3]})]
    rng = random.Random(seed)
    from kforensics.formats.metadata_records import RECORD_TYPES

    for t in rng.sample(RECORD_TYPES, 4):
        v = rng.randint(0, t.max_version)
        try:
            vals.append(encode_metadata_record(t.name, v, sample_for(t.layout(v), rng)))
        except ValueError:
            pass
    return vals


def metadata_log(seed: int = 0) -> bytes:
    vals = metadata_values(seed)
    return b"".join(build_batch([RecordData(i, T0 + i, None, v)], partition_leader_epoch=1)
                    for i, v in enumerate(vals))


def kraft_snapshot(seed: int = 0) -> tuple[str, bytes]:
    vals = metadata_values(seed)
    end = len(vals) + 1
    ts = T0 + end
    data = (build_batch([RecordData(0, ts, encode_control_key("SNAPSHOT_HEADER"), encode_snapshot_header(ts))],
                        control=True, partition_leader_epoch=1)
            + build_batch([RecordData(1 + i, ts, None, v) for i, v in enumerate(vals)], partition_leader_epoch=1)
            + build_batch([RecordData(1 + len(vals), ts, encode_control_key("SNAPSHOT_FOOTER"),
                                      encode_snapshot_footer())], control=True, partition_leader_epoch=1))
    return f"{METADATA_DIR}/{end:020d}-{1:010d}.checkpoint", data


# ----------------------------------------------------------------------------- synthetic side files
def side_file_seeds() -> dict[str, list[bytes]]:
    tid = "AAAAAAAAAAAAAAAAAAAABw"
    entries = [dict(producer_id=7, epoch=1, last_sequence=9, last_offset=20, offset_delta=2, timestamp=T0,
                    coordinator_epoch=3, current_txn_first_offset=-1),
               dict(producer_id=8, epoch=0, last_sequence=1, last_offset=-1, offset_delta=0, timestamp=T0 + 1,
                    coordinator_epoch=-1, current_txn_first_offset=12)]
    return {
        "offset_index": [offset_index.encode([(5, 0), (9, 4096), (20, 9000)], 0),
                         offset_index.encode([(5, 0), (9, 4096)], 0, preallocate_to=64)],
        "time_index": [time_index.encode([(T0, 5), (T0 + 10, 9), (T0 + 20, 20)], 0),
                       time_index.encode([(T0, 5)], 0, preallocate_to=48)],
        "txn_index": [txn_index.encode([dict(producer_id=7, first_offset=2, last_offset=5, last_stable_offset=2),
                                        dict(producer_id=8, first_offset=6, last_offset=9, last_stable_offset=6)])],
        "replication_offset_checkpoint": [checkpoint.encode("replication_offset_checkpoint",
                                                            [("orders", 0, 20), ("orders", 1, 7), ("t", 0, 0)])],
        "recovery_point_offset_checkpoint": [checkpoint.encode("recovery_point_offset_checkpoint",
                                                               [("orders", 0, 18), ("__consumer_offsets", 3, 5)])],
        "log_start_offset_checkpoint": [checkpoint.encode("log_start_offset_checkpoint", [("orders", 0, 2)])],
        "cleaner_offset_checkpoint": [checkpoint.encode("cleaner_offset_checkpoint", [("__consumer_offsets", 3, 9)])],
        "leader_epoch_checkpoint": [checkpoint.encode("leader_epoch_checkpoint", [(0, 0), (1, 5), (4, 17)])],
        "meta_properties": [meta_properties.encode(0, 1, "abcdefghijklmnopqrstuv"),
                            meta_properties.encode(1, 3, "abcdefghijklmnopqrstuv", "AAAAAAAAAAAAAAAAAAAABw")],
        "partition_metadata": [partition_metadata.encode(tid)],
        "producer_snapshot": [producer_snapshot.encode(entries), producer_snapshot.encode([])],
        "clean_shutdown": [clean_shutdown.encode(11), clean_shutdown.encode(None)],
        "quorum_state": [quorum_state.encode(1, 5, -1, 0), quorum_state.encode(1, 5, 2, 1),
                         b'{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,"appliedOffset":0,'
                         b'"currentVoters":[{"voterId":1}],"data_version":0}',
                         b'{"leaderId":1,"leaderEpoch":7,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
                         b'"data_version":1}'],
    }


# ----------------------------------------------------------------------------- internal-topic records
def internal_record_seeds(rng: random.Random) -> list[tuple[str, bytes | None, bytes | None]]:
    from kforensics.formats import group_coordinator, remote_log_metadata, share_coordinator, transaction_log

    out = []
    for topic, mod in (("__consumer_offsets", group_coordinator), ("__transaction_state", transaction_log),
                       ("__share_group_state", share_coordinator)):
        for pair in mod.PAIRS:
            versions = list(pair.value.versions) if pair.value is not None else [None]
            for v in versions:
                for _ in range(2):
                    key = sample_for(pair.key.layout(0), rng, nullable=False)
                    value = None if v is None else sample_for(pair.value.layout(v), rng)
                    try:
                        kb, vb = mod.encode(pair.key.name, v, key, value)
                    except ValueError:
                        continue
                    out.append((topic, kb, vb))
                    out.append((topic, kb, None))  # a tombstone
    for rt in remote_log_metadata.RECORD_TYPES if hasattr(remote_log_metadata, "RECORD_TYPES") else []:
        for _ in range(2):
            try:
                kb, vb = remote_log_metadata.encode(rt.name, 0, sample_for(rt.layout(0), rng))
            except (ValueError, TypeError):
                continue
            out.append(("__remote_log_metadata", kb, vb))
    return out


# ----------------------------------------------------------------------------- a broker log dir
def log_dir_seed(seed: int = 0, kraft: bool = False) -> dict[str, bytes]:
    """A small broker log dir written by kforensics' writer, as relative path -> bytes."""
    import tempfile

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="kf-seed-") as tmp:
        w = LogDirWriter(Path(tmp) / "broker", meta_version=1 if kraft else 0, clean_shutdown=seed % 2 == 1)
        off = 0
        pw = w.partition("orders", 0, topic_id="AAAAAAAAAAAAAAAAAAAABw", segment_bytes=900)
        for b in range(6):
            recs = _records(rng, off, rng.randint(1, 3))
            pw.append(build_batch(recs, codec=rng.choice([0, 0, 1, 3]), partition_leader_epoch=b // 3))
            off = recs[-1].offset + 1
        w.high_watermarks[("orders", 0)] = off - 1
        w.recovery_points[("orders", 0)] = off - 2
        w.log_start_offsets[("orders", 0)] = 0
        legacy_pw = w.partition("old", 0, write_epoch_checkpoint=False)
        legacy_pw.append(legacy_segment(1, 1, seed))
        w.high_watermarks[("old", 0)] = 4
        w.cleaner_offsets[("old", 0)] = 2
        root = w.write()
        (root / "orders-0" / "00000000000000000005.snapshot").write_bytes(side_file_seeds()["producer_snapshot"][0])
        if kraft:
            md = root / METADATA_DIR
            md.mkdir()
            (md / SEGMENT).write_bytes(metadata_log(seed))
            name, snap = kraft_snapshot(seed)
            (root / name).write_bytes(snap)
            (md / "quorum-state").write_bytes(quorum_state.encode(1, 1, -1, 1))
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ----------------------------------------------------------------------------- from ../shared
def _cut_at_entry(data: bytes, limit: int) -> bytes:
    """The entries of a segment that end within ``limit`` bytes (whole entries only)."""
    if len(data) <= limit:
        return data
    end = 0
    for e in wire.frame(data).entries:
        if e.position + e.size > limit:
            break
        end = e.position + e.size
    return data[: end or limit]


def shared_seeds(limit: int = 24_000) -> list[Seed]:
    """Segments from the oracle (every magic and codec, Kafka's client library) and small real broker files."""
    out: list[Seed] = []
    if ORACLE.exists():
        for p in sorted((ORACLE / "logs").glob("*/*.log")):
            data = _cut_at_entry(p.read_bytes(), limit)
            magics = {e.magic for e in wire.frame(data).entries}
            kind = "control" if "control" in p.parent.name or "transactions" in p.parent.name else \
                f"log_v{max(magics) if magics else 2}"
            out.append(Seed(kind, f"oracle:{p.parent.name}/{p.name}", {SEGMENT: data}))
    if REALDATA.exists():
        side = {v: k for k, v in SIDE_FILE_NAMES.items()}
        picked: dict[str, int] = {}
        for p in sorted(REALDATA.rglob("*")):
            if not p.is_file() or "_vectors" in p.parts or "_manifests" in p.parts:
                continue
            name = p.name
            kind = side.get(name)
            rel = None
            if name.endswith(".index"):
                kind = "offset_index"
            elif name.endswith(".timeindex"):
                kind = "time_index"
            elif name.endswith(".snapshot"):
                kind = "producer_snapshot"
            elif name.endswith(".checkpoint") and "-" in name:
                kind, rel = "kraft_snapshot", f"{METADATA_DIR}/{name}"
            elif name.endswith(".log"):
                kind = "metadata_log" if p.parent.name == METADATA_DIR else "log_v2"
                rel = f"{METADATA_DIR}/{SEGMENT}" if kind == "metadata_log" else SEGMENT
            if kind is None or picked.get(kind, 0) >= 6:
                continue
            if kind not in ("metadata_log", "log_v2") and p.stat().st_size > 4 * limit:
                continue
            with open(p, "rb") as fh:
                data = fh.read(4 * limit)
            if kind in ("metadata_log", "log_v2"):
                # a metadata log's records are decoded one by one: a third of the limit keeps a few hundred
                data = _cut_at_entry(data, limit // 3 if kind == "metadata_log" else limit)
                if not data:
                    continue
                magics = {e.magic for e in wire.frame(data).entries}
                if kind == "log_v2" and magics:
                    kind = f"log_v{max(magics)}"
            picked[kind] = picked.get(kind, 0) + 1
            rel = rel or SIDE_FILE_NAMES.get(kind, name)
            out.append(Seed(kind, f"realdata:{p.relative_to(REALDATA)}", {rel: data}))
    return out


# ----------------------------------------------------------------------------- all seeds
@lru_cache(maxsize=1)
def all_seeds() -> dict[str, list[Seed]]:
    """Every seed by kind (synthetic first, then ../shared's when present)."""
    by: dict[str, list[Seed]] = {k: [] for k in KINDS}
    for codec in range(5):
        for s in range(2):
            by["log_v2"].append(Seed("log_v2", f"v2-codec{codec}-{s}", {SEGMENT: v2_segment(codec, s)}))
    for magic in (0, 1):
        for codec in range(4):
            for s in range(2):
                by[f"log_v{magic}"].append(Seed(f"log_v{magic}", f"v{magic}-codec{codec}-{s}",
                                                {SEGMENT: legacy_segment(magic, codec, s)}))
    by["control"].append(Seed("control", "control", {SEGMENT: control_segment()}))
    for s in range(3):
        by["metadata_log"].append(Seed("metadata_log", f"metadata-{s}", {f"{METADATA_DIR}/{SEGMENT}": metadata_log(s)}))
        name, data = kraft_snapshot(s)
        by["kraft_snapshot"].append(Seed("kraft_snapshot", f"snapshot-{s}", {name: data}))
    for kind, datas in side_file_seeds().items():
        for i, data in enumerate(datas):
            by[kind].append(Seed(kind, f"{kind}-{i}", {SIDE_FILE_NAMES[kind]: data}))
    for i, (topic, k, v) in enumerate(internal_record_seeds(random.Random(12))):
        by["internal_record"].append(Seed("internal_record", f"{topic}-{i}", {}, topic, k, v))
    for s in range(2):
        by["log_dir"].append(Seed("log_dir", f"broker-{s}", log_dir_seed(s, kraft=s == 1)))
    for seed in shared_seeds():
        by[seed.kind].append(seed)
    return by


def seeds_from(source: str) -> dict[str, list[Seed]]:
    """The seeds of one source: ``synthetic`` (kforensics' encoders), ``shared`` (../shared), or ``all``."""
    by = all_seeds()
    if source == "all":
        return by
    shared = source == "shared"
    out = {k: [s for s in v if s.name.startswith(("oracle:", "realdata:")) == shared] for k, v in by.items()}
    return {k: v for k, v in out.items() if v}


def int16(v: int) -> bytes:
    return struct.pack(">h", v)
