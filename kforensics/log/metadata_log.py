"""The KRaft metadata log as files: where its copies and snapshots are, and their records in offset order.

Locating works on every source (directory, tar archive, remote filesystem)
through the log-dir objects; reading goes through the segment reader, so a
damaged metadata segment yields findings like any other segment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..findings import DecodeError, Finding, FindingLog, finding
from ..formats.record_batch import CONTROL_BIT
from .file_kinds import classify_name, is_metadata_dir, parse_partition_dir_name, snapshot_id
from .listing import Unreadable, as_path, unlisted_dir
from .log_dir import LogDir, find_log_dirs, open_log_dir
from .partition import PartitionLog, open_partition
from .records import EntryRecords
from .segment_reader import SegmentReader
from .side_files import FileRecord
from .sources import NotRegularFile, resolve


@dataclass(slots=True)
class MetadataEntry:
    """One record of a metadata log copy or snapshot: ``value`` is None for control records."""

    offset: int
    timestamp: int
    raft_epoch: int
    value: bytes | None
    file: str
    position: int
    control: dict[str, Any] | None = None  # a control record's decoded value


@dataclass
class MetadataSources:
    """The copies of a metadata log (one per broker), its snapshots and bootstrap files."""

    logs: dict[str, list[Any]] = field(default_factory=dict)  # metadata dir -> its segments, in offset order
    snapshots: list[Any] = field(default_factory=list)  # in (end offset, epoch) order
    bootstraps: list[Any] = field(default_factory=list)
    cluster_ids: dict[str, str | None] = field(default_factory=dict)  # metadata dir -> its broker's cluster id
    findings: list[Finding] = field(default_factory=list)

    def add_partition(self, pd: PartitionLog, cluster_id: str | None) -> None:
        label = str(pd.path)
        segs = [s.log for s in pd.sorted_segments() if s.log is not None]
        if segs or pd.kraft_snapshots:
            self.logs.setdefault(label, []).extend(segs)
            self.cluster_ids.setdefault(label, cluster_id)
        for p, kind in pd.kraft_snapshots:
            if not kind.leftover:
                self.snapshots.append(p)

    def add_log_dir(self, ld: LogDir) -> None:
        cluster = _cluster_id(ld)
        for pd in ld.partitions:
            if pd.is_metadata_log and pd.name.suffix is None:
                self.add_partition(pd, cluster)
        if "bootstrap_snapshot" in ld.root_files:
            self.bootstraps.append(ld.root_files["bootstrap_snapshot"])

    @property
    def empty(self) -> bool:
        return not (self.logs or self.snapshots or self.bootstraps)

    def sort(self) -> None:
        self.snapshots = sorted(set(self.snapshots), key=lambda p: (snapshot_id(p.name) or (-1, -1), str(p)))


def _cluster_id(ld: LogDir) -> str | None:
    sf = ld.read_root("meta_properties")
    return None if sf is None or sf.value is None else sf.value.cluster_id


def find_metadata_sources(inputs: list[Any]) -> MetadataSources:
    """Metadata log copies, snapshots and bootstrap files in ``inputs``.

    Each input is a log-dir object, a partition object, or a path (any
    source): a broker log dir, a corpus holding several, a
    ``__cluster_metadata-0`` dir, or one segment or snapshot file.  A path
    that does not exist raises ``FileNotFoundError`` (a usage error).
    """
    src = MetadataSources()
    for item in inputs:
        if isinstance(item, LogDir):
            src.add_log_dir(item)
        elif isinstance(item, PartitionLog):
            src.add_partition(item, None)
        else:
            p = resolve(item) if isinstance(item, str) else as_path(item)
            if not p.exists():
                raise FileNotFoundError(f"no such file or directory: {p}")
            if p.is_file():
                kind = classify_name(p.name)
                if kind.leftover:
                    continue
                if kind.kind == "kraft_snapshot":
                    src.snapshots.append(p)
                elif kind.kind == "bootstrap_snapshot":
                    src.bootstraps.append(p)
                elif kind.kind == "log":
                    src.logs.setdefault(str(p.parent), []).append(p)
            elif is_metadata_dir(p.name):
                unreadable: Unreadable = []
                name = parse_partition_dir_name(p.name)
                assert name is not None  # is_metadata_dir parsed it
                pd = open_partition(p, name, unreadable)
                for path, err in unreadable:
                    src.findings.append(unlisted_dir(path, err))
                parent = p.parent
                cluster = _cluster_id(open_log_dir(parent)) if parent is not None else None
                src.add_partition(pd, cluster)
            else:
                for d in find_log_dirs(p):
                    src.add_log_dir(open_log_dir(d))
    for d in src.logs:
        src.logs[d] = sorted(set(src.logs[d]), key=lambda f: (classify_name(f.name).base_offset or 0, f.name))
    src.sort()
    return src


def _unreadable(label: str, e: OSError) -> Finding:
    if isinstance(e, NotRegularFile):
        return finding("NOT_A_REGULAR_FILE", f"{e.strerror}: not opened", file=label)
    return finding("UNREADABLE_FILE", f"cannot read: {e.strerror or e}", file=label)


def read_metadata_entries(path: Any) -> tuple[list[MetadataEntry], dict[str, dict[str, Any]], list[Finding]]:
    """Every record of a metadata segment or snapshot in order (control records as offset placeholders),
    the control records seen by type, and the findings (a file that cannot be read is one of them)."""
    out: list[MetadataEntry] = []
    controls: dict[str, dict[str, Any]] = {}
    log = FindingLog()
    reader = SegmentReader(path)
    label = reader.label
    try:
        for b in reader.batches():
            if not b.is_valid:
                continue  # the reader reports the CRC mismatch; its content cannot be trusted
            recs = EntryRecords(b, with_data=True, file=label)
            control = bool(b.attributes & CONTROL_BIT)
            for r in recs:
                if r.control is not None or control:
                    c = r.control or {}
                    controls.setdefault(c.get("type", "UNKNOWN"), c)
                    out.append(MetadataEntry(r.offset, b.max_timestamp, b.partition_leader_epoch, None, label,
                                             b.position, c))
                elif r.value is None:
                    log.add(finding("NULL_METADATA_RECORD", f"metadata record at offset {r.offset} has a null value",
                                    file=label, position=b.position, offset=r.offset))
                else:
                    out.append(MetadataEntry(r.offset, b.max_timestamp, b.partition_leader_epoch, bytes(r.value),
                                             label, b.position))
            if recs.error is not None:
                log.add(recs.error)
    except OSError as e:
        log.add(_unreadable(label, e))
        return out, controls, log.findings()
    log.extend(reader.summary.findings)
    return out, controls, log.findings()


@dataclass
class MetadataFileRead:
    """A KRaft snapshot or bootstrap file as the scan reads it: custody, record count and findings."""

    path: str
    record: FileRecord | None
    records: int = 0
    findings: list[Finding] = field(default_factory=list)


def read_metadata_file(path: Any, *, decode: bool = True) -> MetadataFileRead:
    """Read a KRaft snapshot or ``bootstrap.checkpoint`` whole, streaming: its size and SHA-256 for the chain of
    custody, and what dump reports on it (framing and CRCs, record decoding, and with ``decode`` every metadata
    record through the metadata decoder).  Never raises for what the file holds or for a file that cannot be read.
    """
    from ..formats.metadata_records import decode_metadata_record

    log = FindingLog()
    reader = SegmentReader(path, sha256=True)
    label = reader.label
    out = MetadataFileRead(label, None)
    try:
        for b in reader.batches():
            if not b.is_valid:
                continue  # reported by the reader
            recs = EntryRecords(b, with_data=decode, file=label)
            for r in recs:
                out.records += 1
                if not decode or r.control is not None or b.attributes & CONTROL_BIT or r.value is None:
                    continue
                try:
                    decode_metadata_record(bytes(r.value))
                except DecodeError as e:
                    # the timeline's shape for the same record, so the two reads report it once
                    log.add(finding(e.code, f"offset {r.offset}: {e.message}", file=label, position=b.position,
                                    **{**e.finding.facts, "offset": r.offset}))
            if recs.error is not None:
                log.add(recs.error)
    except OSError as e:
        log.add(_unreadable(label, e))
        out.findings = log.findings()
        return out
    s = reader.summary
    log.extend(s.findings)
    name = getattr(path, "name", None) or str(path).rsplit("/", 1)[-1]
    out.record = FileRecord(label, classify_name(name).kind, s.size, s.sha256)
    out.findings = log.findings()
    return out
