"""The records of one metadata segment or snapshot, streamed, and the choice of one cluster's metadata dirs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..findings import FindingLog, finding
from ..formats.record_batch import CONTROL_BIT
from ..log.metadata_log import MetadataEntry, MetadataSources
from ..log.records import EntryRecords
from ..log.segment_reader import SegmentReader
from ..log.sources import NotRegularFile
from .timeline_model import Timeline

_Rec = MetadataEntry


def read_records(path: Any, tl: Timeline, controls: dict[str, Any], *, data: bool = True,
             report: bool = True) -> Iterator[_Rec]:
    """The records of one metadata segment or snapshot in file order, one at a time: control records as offset
    placeholders (``controls`` receives the first of each type), data records with their value.

    Nothing is kept: a batch claiming millions of records costs its decompressed bytes and one record at a
    time.  ``data=False`` reads the control batches only (a snapshot's header and footer); ``report=False``
    reports nothing (a second read of a file already reported).
    """
    log = tl.log if report else FindingLog()
    reader = SegmentReader(path)
    label = reader.label
    if report:
        tl.sources.append(str(path))
    try:
        for b in reader.batches():
            if not b.is_valid:
                continue  # the reader reports the CRC mismatch; its content cannot be trusted
            control = bool(b.attributes & CONTROL_BIT)
            if not data and not control:
                continue
            recs = EntryRecords(b, with_data=True, file=label)
            for r in recs:
                if r.control is not None or control:
                    c = r.control or {}
                    controls.setdefault(c.get("type", "UNKNOWN"), c)
                    yield _Rec(r.offset, b.max_timestamp, b.partition_leader_epoch, None, label, b.position, c)
                elif r.value is None:
                    log.add(finding("NULL_METADATA_RECORD", f"metadata record at offset {r.offset} has a null value",
                                    file=label, position=b.position, offset=r.offset))
                else:
                    yield _Rec(r.offset, b.max_timestamp, b.partition_leader_epoch, bytes(r.value), label,
                               b.position)
            log.extend(recs.findings)
    except OSError as e:
        if isinstance(e, NotRegularFile):
            log.add(finding("NOT_A_REGULAR_FILE", f"{e.strerror}: not opened", file=label))
        else:
            log.add(finding("UNREADABLE_FILE", f"cannot read: {e.strerror or e}", file=label))
        return
    log.extend(reader.summary.findings)


def one_cluster(src: MetadataSources, tl: Timeline) -> None:
    """Keep the files of one cluster (the one with most metadata dirs) when log dirs of several were given."""
    dirs = set(src.logs) | {str(p.parent) for p in src.snapshots}
    clusters: dict[str, list[str]] = {}
    for d in sorted(dirs):
        cid = src.cluster_ids.get(d)
        if cid is not None:
            clusters.setdefault(cid, []).append(d)
    if len(clusters) <= 1:
        return
    chosen = sorted(clusters, key=lambda c: (-len(clusters[c]), c))[0]
    others = {d for c, ds in clusters.items() if c != chosen for d in ds}
    src.logs = {d: segs for d, segs in src.logs.items() if d not in others}
    src.snapshots = [p for p in src.snapshots if str(p.parent) not in others]
    tl.log.add(finding("METADATA_CLUSTERS_DIFFER", f"metadata logs of {len(clusters)} clusters were given; only "
                       f"cluster {chosen}'s are replayed", clusters=dict(sorted(clusters.items())), chosen=chosen))

