"""Dumping a file of batches (``.log``, KRaft snapshots): its entries and records as a stream of typed events.

Records are decoded lazily and handed out one at a time, so dumping a batch of
millions of records keeps one record in memory.  What kafka-dump-log reports
at the end (non-consecutive offsets, invalid bytes at the end) is collected in
:class:`SegmentDump` once the stream is consumed.

Records of Kafka's internal topics are decoded as kafka-dump-log's decoders
do (``--offsets-decoder``, ``--transaction-log-decoder``,
``--share-group-state-decoder``, ``--remote-log-metadata-decoder``): by the
topic of the partition directory the file is in, or forced by the flag's
decoder (:func:`internal_decoder`).  A record that does not decode (an
unknown record type or version, bytes that do not parse) is a finding placed
at its batch, with the record's offset and the byte within its key or value
as facts; the dump goes on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

import numpy as np

from ..checks.offsets import OffsetCheck, check_attributes
from ..findings import DecodeError, Finding, FindingLog
from ..formats.compression import CODECS
from ..formats.internal_topics import CoordinatorRecord, decoder_for_flag, decoder_for_topic
from ..formats.record_batch import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    MAGIC,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
)
from ..log.batch_table import COL, FLAG_RECOVERED, BatchTable
from ..log.file_kinds import METADATA_TOPIC, FileKind, classify_name, parse_partition_dir_name
from ..log.record_offsets import wrap_sequence
from ..log.records import DEFAULT_MAX_DECOMPRESSED, TIMESTAMP_TYPES, BatchEntry, EntryRecords, Record, batch_entry
from ..log.segment_reader import Batch, SegmentReader
from . import batch_groups
from .batch_groups import BatchGroup, runs
from .record_chunks import GROUP_BYTES, GROUP_RECORDS, Chunk, RecordChunks, decode_group, group_size

#: non-consecutive offset pairs kept (kafka-dump-log's report); the rest are counted
MAX_NON_CONSECUTIVE = 1000


@dataclass
class DumpOptions:
    deep: bool = False  # one event per record, not just per batch
    print_data: bool = False  # keep keys and payloads
    metadata: bool | None = None  # decode KRaft metadata records (None: by file name)
    max_bytes: int | None = None  # read only this many bytes of a log (kafka-dump-log --max-bytes)
    # decode an internal topic's records with this kafka-dump-log decoder flag (``--offsets-decoder`` ...);
    # None: by the topic of the file's partition directory
    decoder: str | None = None
    # hand out the records of plain v2 batches as chunks of columns (RecordChunkEvent), not one RecordEvent each:
    # for a renderer that formats rows itself (the CLI's); what a record decodes to is the same
    chunks: bool = False
    # with chunks: hand out runs of small clean v2 batches as one BatchGroupEvent each (their batch events included)
    groups: bool = False


@dataclass
class BatchEvent:
    entry: BatchEntry
    file: str
    # the last offset of the entry before, when this one does not start right after it (kafka-dump-log's
    # "non-consecutive offsets"); None for the first entry and for consecutive ones
    non_consecutive_after: int | None = None


@dataclass
class RecordEvent:
    entry: BatchEntry
    record: Record
    file: str
    metadata: dict[str, Any] | None = None  # the decoded KRaft metadata record
    internal: CoordinatorRecord | None = None  # the decoded internal-topic record (key and value)


@dataclass
class RecordChunkEvent:
    """The records of one v2 batch that is not a control batch, as chunks of decoded rows
    (:meth:`RecordChunks.chunks`): consume them before asking the stream for its next event (the batch's
    findings are collected then)."""

    entry: BatchEntry
    records: RecordChunks
    file: str


@dataclass
class BatchGroupEvent:
    """A run of batches and their records as columns (:class:`BatchGroup`), in place of their batch and record
    events; ``previous_last[i]`` is the last offset of the entry before batch ``i`` where ``non_consecutive[i]``
    (a :class:`BatchEvent`'s ``non_consecutive_after``)."""

    group: BatchGroup
    file: str
    non_consecutive: np.ndarray
    previous_last: np.ndarray


@dataclass
class SegmentDump:
    """What dumping one file of batches found besides its entries (filled as the events are consumed)."""

    file: str
    kind: FileKind
    size: int = 0
    batches: int = 0
    kafka_valid_bytes: int = 0
    trailing_invalid_bytes: int = 0  # bytes after the point Kafka's reader stops
    kafka_stop: str | None = None  # why Kafka's reader stops there (None: it reads to the end)
    kafka_stop_kind: str | None = None  # "partial" (its iterator ends quietly) or "corrupt" (it throws)
    recovered_batches: int = 0  # valid entries found after that point
    non_consecutive: list[tuple[int, int]] = field(default_factory=list)  # (last offset, next first offset)
    non_consecutive_count: int = 0  # all of them (the list keeps the first MAX_NON_CONSECUTIVE)
    findings: list[Finding] = field(default_factory=list)


def is_metadata_file(path: str, kind: FileKind, forced: bool | None) -> bool:
    """Whether records hold KRaft metadata: forced, a snapshot, or a segment of ``__cluster_metadata-0``."""
    if forced is not None:
        return forced
    if kind.kind in ("kraft_snapshot", "bootstrap_snapshot"):
        return True
    parent = parse_partition_dir_name(os.path.basename(os.path.dirname(os.path.abspath(path))))
    return parent is not None and parent.topic == METADATA_TOPIC


def partition_topic(path: str) -> str | None:
    """The topic of the partition directory ``path`` is in (None when its directory is not one)."""
    parent = parse_partition_dir_name(os.path.basename(os.path.dirname(os.path.abspath(path))))
    return None if parent is None else parent.topic


def internal_decoder(path: str, kind: FileKind, forced: str | None = None) -> ModuleType | None:
    """The decoder module for the records of ``path``: the one kafka-dump-log's flag ``forced`` names, else the
    internal topic's whose partition directory holds it (None: not an internal topic kforensics decodes)."""
    if forced is not None:
        return decoder_for_flag(forced)
    if kind.kind != "log":
        return None
    topic = partition_topic(path)
    return None if topic is None else decoder_for_topic(topic)


def dump_segment(path: Any, opts: DumpOptions, result: SegmentDump | None = None
                 ) -> Iterator[BatchEvent | RecordEvent | RecordChunkEvent | BatchGroupEvent]:
    """The events of one file of batches; ``result`` (when given) receives the summary as the stream ends."""
    label = str(path)
    kind = classify_name(label)
    result = result if result is not None else SegmentDump(label, kind)
    # a decoder flag wins over the file's name; KRaft metadata records are never an internal topic's
    meta = False if opts.decoder is not None and not opts.metadata else is_metadata_file(label, kind, opts.metadata)
    internal = None if meta else internal_decoder(label, kind, opts.decoder)
    deep = opts.deep or opts.print_data or bool(opts.metadata) or opts.decoder is not None
    log = FindingLog()
    reader = SegmentReader(path)
    prev_last: int | None = None
    # the header fields every entry is checked for as it is read (the same rules as scan's): offsets out of range,
    # codecs that do not exist; the order of batches is kafka-dump-log's non-consecutive report below
    ranges = OffsetCheck(lambda f: log.add(f) if f.code == "OFFSET_OUT_OF_RANGE" else None, None)
    cut = False  # --max-bytes stopped the reading before the reader's end: its summary covers only part
    read_end = 0  # where the entries read from the start, one after another, end
    recovered = 0  # entries read that Kafka's reader never reaches
    try:
        for table in reader.tables():
            stop = False
            if opts.max_bytes is not None:  # kafka-dump-log --max-bytes: the entries within the first N bytes
                within = table["position"] + table["size_in_bytes"] <= opts.max_bytes
                stop = not within.all()
                table = BatchTable(table.data[within])
            ranges.feed(table, label)
            check_attributes(table, label, log.add)
            grouped = opts.chunks and deep and not meta and internal is None
            items = (_runs(reader, table.data) if grouped and opts.groups
                     else _batches(reader, table.data.tolist(), grouped))
            for item in items:
                if isinstance(item, BatchGroup):
                    ev = _group_event(item, label, prev_last, result)
                    read_end = _read_end(item, read_end)
                    prev_last = int(item.batches[-1, COL["last_offset"]])
                    yield ev
                    continue
                b, decoded = item
                row = b.row
                if row[COL["position"]] == read_end:
                    read_end += row[COL["size_in_bytes"]]
                recovered += bool(b.recovered)
                yield from _entry_events(b, opts, deep, meta, internal, label, log, result, prev_last, decoded)
                prev_last = b.last_offset
            if stop:
                cut = True
                break
    finally:
        s = reader.summary
        result.size = s.size
        if cut:
            assert opts.max_bytes is not None  # only --max-bytes cuts the reading
            # as kafka-dump-log, within the first max_bytes only: where Kafka's reader stops there (if it does), and
            # the bytes within the limit after that point; nothing is said of the bytes past the limit
            inside = s.kafka_stop is not None and s.kafka_valid_bytes < opts.max_bytes
            result.kafka_valid_bytes = s.kafka_valid_bytes if inside else read_end
            result.trailing_invalid_bytes = min(s.size, opts.max_bytes) - s.kafka_valid_bytes if inside else 0
            result.kafka_stop, result.kafka_stop_kind = (s.kafka_stop, s.kafka_stop_kind) if inside else (None, None)
        else:
            result.kafka_valid_bytes = s.kafka_valid_bytes
            result.trailing_invalid_bytes = s.size - s.kafka_valid_bytes
            result.kafka_stop, result.kafka_stop_kind = s.kafka_stop, s.kafka_stop_kind
        result.recovered_batches = recovered if cut else s.recovered_batches
        log.extend(s.findings)
        result.findings = log.findings()


def _runs(reader: SegmentReader, data: np.ndarray) -> Iterator[BatchGroup | tuple[Batch, Chunk | None]]:
    """:func:`runs` of a table, each batch on its own as the shallow :class:`Batch`."""
    for item in runs(reader, data, DEFAULT_MAX_DECOMPRESSED):
        if isinstance(item, BatchGroup) and len(item.records) >= batch_groups.MIN_RUN_RECORDS:
            yield item
        elif isinstance(item, BatchGroup):  # a short run: its batches on their own, their records decoded
            rows, first = item.batches.tolist(), item.first_record.tolist()
            for j, row in enumerate(rows):
                raw = reader.entry_bytes(row[COL["position"]], row[COL["size_in_bytes"]])
                yield Batch(row, raw), (item.payload, item.records[first[j] : first[j + 1]])
        else:
            row = data[item].tolist()
            yield Batch(row, reader.entry_bytes(row[COL["position"]], row[COL["size_in_bytes"]])), None


def _read_end(g: BatchGroup, read_end: int) -> int:
    """Where the entries read one after another from the start end, after a run's."""
    pos, size = g.batches[:, COL["position"]], g.batches[:, COL["size_in_bytes"]]
    if pos[0] == read_end and (pos[1:] == (pos + size)[:-1]).all():
        return int(pos[-1] + size[-1])
    for p, n in zip(pos.tolist(), size.tolist()):
        read_end += n if p == read_end else 0
    return read_end


def _group_event(g: BatchGroup, label: str, prev_last: int | None, result: SegmentDump) -> BatchGroupEvent:
    """A run's event, with kafka-dump-log's non-consecutive offsets counted as :func:`_entry_events` counts
    them."""
    b = g.batches
    first, last = b[:, COL["base_offset"]], b[:, COL["last_offset"]]
    before = np.empty(len(b), dtype=np.int64)
    before[1:] = last[:-1]
    before[0] = last[0] if prev_last is None else prev_last  # no entry before: never non-consecutive
    with np.errstate(over="ignore"):
        jump = (first != before + 1) | (before == np.iinfo(np.int64).max)  # Python's sum does not wrap there
    if prev_last is None:
        jump[0] = False
    result.batches += len(b)
    hits = np.flatnonzero(jump)
    if len(hits):
        result.non_consecutive_count += len(hits)
        room = MAX_NON_CONSECUTIVE - len(result.non_consecutive)
        result.non_consecutive += list(zip(before[hits[:room]].tolist(), first[hits[:room]].tolist()))
    return BatchGroupEvent(g, label, jump, before)


def _batches(reader: SegmentReader, rows: list[list[int]], grouped: bool) -> Iterator[tuple[Batch, Chunk | None]]:
    """The entries of one table of the reader, each with its records when they were decoded in a group with
    others' (``grouped``: small v2 batches are, :func:`decode_group`)."""
    i = 0
    while i < len(rows):
        group: list[Batch] = []
        records = size = 0
        while i < len(rows) and records < GROUP_RECORDS and size < GROUP_BYTES:
            row = rows[i]
            b = Batch(row, reader.entry_bytes(row[COL["position"]], row[COL["size_in_bytes"]]))
            group.append(b)
            i += 1
            if not grouped:
                break
            records += group_size(b) or 0
            size += row[COL["size_in_bytes"]]
        yield from zip(group, decode_group(group, DEFAULT_MAX_DECOMPRESSED) if grouped else [None] * len(group))


def _entry_events(b: Batch, opts: DumpOptions, deep: bool, meta: bool, internal: Any, label: str,
                  log: FindingLog, result: SegmentDump, prev_last: int | None, records_of: Chunk | None = None
                  ) -> Iterator[BatchEvent | RecordEvent | RecordChunkEvent]:
    """One entry's batch event and, when deep, its record events (records decoded one at a time)."""
    entry = _v2_entry(b.row) if b.magic == MAGIC else batch_entry(b)
    result.batches += 1
    first = entry.base_offset if entry.base_offset is not None else entry.last_offset
    if deep and b.magic < 2 and b.raw is not None and entry.base_offset is None:
        base, count = EntryRecords(b).summary()
        entry.base_offset, entry.record_count = base, count
        first = base if base is not None else entry.last_offset
    after = None
    if prev_last is not None and first != prev_last + 1:
        after = prev_last
        result.non_consecutive_count += 1
        if len(result.non_consecutive) < MAX_NON_CONSECUTIVE:
            result.non_consecutive.append((prev_last, first))
    yield BatchEvent(entry, label, after)
    if not deep:
        return
    decoded = meta or internal is not None
    if opts.chunks and not decoded and b.magic == MAGIC and not b.attributes & CONTROL_BIT:
        chunks = RecordChunks(b, with_data=opts.print_data, file=label)
        chunks.decoded = records_of
        yield RecordChunkEvent(entry, chunks, label)
        log.extend(chunks.findings)  # the consumer has read the chunks by now
        return
    records = EntryRecords(b, with_data=opts.print_data or decoded, file=label)
    for r in records:
        md = _metadata(r, b.position, label, log) if meta and r.control is None else None
        rec = _internal(internal, r, b.position, label, log) if internal is not None and r.control is None else None
        if decoded and not opts.print_data:
            r.key = r.value = None
        yield RecordEvent(entry, r, label, md, rec)
    log.extend(records.findings)


def _internal(decoder: Any, r: Record, position: int, file: str, log: FindingLog) -> CoordinatorRecord:
    """An internal topic's record decoded; its findings placed at the batch, with the record's offset and the
    byte within its key or value (``facts["part"]``) as facts."""
    rec: CoordinatorRecord = decoder.decode(r.key, r.value)
    for f in rec.findings:
        part = f.facts.get("part", "value")
        log.add(replace(f, file=file, position=position,
                        facts={**f.facts, "offset": r.offset, f"{part}_position": f.position}))
    return rec


def _metadata(r: Record, position: int, file: str, log: FindingLog) -> dict[str, Any] | None:
    """The KRaft metadata record a record's value holds (kafka-dump-log --cluster-metadata-decoder)."""
    from ..formats.metadata_records import decode_metadata_record

    if r.value is None:
        return None
    try:
        return decode_metadata_record(r.value)
    except DecodeError as e:
        # placed at the batch; the position inside the record's value is a fact
        log.add(replace(e.finding, file=file, position=position,
                        facts={**e.finding.facts, "offset": r.offset, "value_position": e.position}))
        return {"error": e.message}


_C = [COL[n] for n in ("position", "size_in_bytes", "base_offset", "last_offset", "crc", "crc_computed",
                       "attributes", "base_timestamp", "max_timestamp", "partition_leader_epoch", "producer_id",
                       "producer_epoch", "base_sequence", "records_count", "flags")]


def _v2_entry(row: list[int]) -> BatchEntry:
    """:func:`~kforensics.log.records.batch_entry` of a v2 batch, field for field, from its row (the cost of a
    small batch: the same values without an attribute lookup each)."""
    pos, size, base, last, crc, crc_c, attrs, base_ts, max_ts, epoch, pid, pepoch, bseq, count, flags = \
        [row[i] for i in _C]
    return BatchEntry(
        position=pos, size_in_bytes=size, magic=MAGIC, base_offset=base, last_offset=last, next_offset=last + 1,
        count=count, crc=crc, is_valid=crc == crc_c, compression=CODECS.get(attrs & COMPRESSION_MASK,
                                                                            f"unknown({attrs & COMPRESSION_MASK})"),
        timestamp_type=TIMESTAMP_TYPES[bool(attrs & TIMESTAMP_TYPE_BIT)], base_timestamp=base_ts,
        max_timestamp=max_ts, delete_horizon_ms=base_ts if attrs & DELETE_HORIZON_BIT else None,
        partition_leader_epoch=epoch, is_transactional=bool(attrs & TRANSACTIONAL_BIT),
        is_control=bool(attrs & CONTROL_BIT), producer_id=pid, producer_epoch=pepoch, base_sequence=bseq,
        last_sequence=wrap_sequence(bseq, last - base) if bseq >= 0 else -1,
        record_count=count if count >= 0 else None, recovered=bool(flags & FLAG_RECOVERED))
