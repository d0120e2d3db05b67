"""``kforensics dump``: one file's contents as kafka-dump-log text or NDJSON objects."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

import click

from ..checks.files import out_of_range_name
from ..errors import ExitCode
from ..findings import Finding, Severity, finding
from ..log.file_kinds import classify_name
from ..log.partition import MAX_EPOCH, MAX_OFFSET
from .common import echo_findings, printable
from .json_out import dumps
from .options import EVIDENCE_FILE, s3_endpoint_option

if TYPE_CHECKING:  # the decoders are imported only when a file is dumped
    from ..formats.internal_topics import CoordinatorRecord


def _max_message_size(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """kafka-dump-log's ``--max-message-size`` is refused with what it did there and what to use instead."""
    if value is not None:
        raise click.BadParameter(
            "kafka-dump-log uses it only to size its read at each .index entry (a batch larger than it cannot be "
            "read there); kforensics reads every batch whole, whatever its size, so leave it out (--max-bytes limits "
            "how much of each .log is read)")


@click.command()
@click.argument("files", nargs=-1, required=True, type=EVIDENCE_FILE)
@s3_endpoint_option()
@click.option("--deep", "--deep-iteration", "deep", is_flag=True, help="One line per record, not just per batch.")
@click.option("--print-data", "--print-data-log", "print_data", is_flag=True,
              help="Print keys and payloads (implies --deep); bytes that are not printable text are escaped.")
@click.option("--skip-record-metadata", is_flag=True,
              help="Record lines show only key and payload (with --print-data).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: like kafka-dump-log; json: NDJSON, one object per batch, record, entry and finding.")
@click.option("--max-bytes", type=click.IntRange(min=0), default=None,
              help="Read only the batches within the first N bytes of each .log (kafka-dump-log --max-bytes).")
@click.option("--max-message-size", hidden=True, expose_value=False, callback=_max_message_size, is_eager=True)
@click.option("--verify-index-only", is_flag=True, help="For .index/.timeindex: check entries against the .log.")
@click.option("--index-sanity-check", is_flag=True, help="For .index/.timeindex: run Kafka's sanityCheck only.")
@click.option("--cluster-metadata-decoder", is_flag=True,
              help="Decode KRaft metadata records (on by default for __cluster_metadata segments and snapshots).")
@click.option("--offsets-decoder", "decoders", flag_value="--offsets-decoder", multiple=True,
              help="Decode records as __consumer_offsets records (on by default in a __consumer_offsets-N dir).")
@click.option("--transaction-log-decoder", "decoders", flag_value="--transaction-log-decoder", multiple=True,
              help="Decode records as __transaction_state records (on by default in a __transaction_state-N dir).")
@click.option("--share-group-state-decoder", "decoders", flag_value="--share-group-state-decoder", multiple=True,
              help="Decode records as __share_group_state records (on by default in a __share_group_state-N dir).")
@click.option("--remote-log-metadata-decoder", "decoders", flag_value="--remote-log-metadata-decoder",
              multiple=True, help="Decode records as __remote_log_metadata records (on by default in a "
                                  "__remote_log_metadata-N dir).")
@click.option("--schemas", "schema_dirs", multiple=True, type=click.Path(exists=True), metavar="LOG_DIR",
              help="With --print-data: decode keys and values framed for a Schema Registry with the schemas of the "
                   "_schemas topic in this log dir (repeatable; docs/salvage.md).")
def dump(files: tuple[str, ...], deep: bool, print_data: bool, skip_record_metadata: bool, fmt: str,
         max_bytes: int | None, verify_index_only: bool, index_sanity_check: bool, cluster_metadata_decoder: bool,
         decoders: tuple[str, ...], schema_dirs: tuple[str, ...]) -> None:
    """Decode Kafka files: segments, indexes, checkpoints, snapshots, metadata files.

    The kind of each FILE is chosen by its name, as Kafka names files.  Damage
    is reported on stderr (text) or as finding objects (json), and the dump
    goes on past it.  Records of Kafka's internal topics (consumer offsets,
    transaction state, share-group state, remote log metadata) are decoded by
    the topic of the file's partition directory when records are shown
    (--deep), or forced with kafka-dump-log's decoder flags (which imply
    --deep); a record that does not decode is a finding.

    \b
    Examples:
      kforensics dump 00000000000000000000.log
      kforensics dump --deep --print-data 00000000000000000000.log
      kforensics dump --deep __consumer_offsets-7/00000000000000000000.log
      kforensics dump --offsets-decoder copy-of-offsets/00000000000000000000.log
      kforensics dump --verify-index-only 00000000000000000000.index
      kforensics dump --format json leader-epoch-checkpoint meta.properties
    """
    chosen = sorted(set(decoders)) + (["--cluster-metadata-decoder"] if cluster_metadata_decoder else [])
    if len(chosen) > 1:
        raise click.UsageError(f"give one decoder, not {' and '.join(chosen)}")
    opts = dict(deep=deep or print_data or skip_record_metadata, print_data=print_data,
                metadata=True if cluster_metadata_decoder else None, max_bytes=max_bytes,
                decoder=decoders[0] if decoders else None)
    findings: list[Finding] = []
    out = sys.stdout
    payloads = None
    if schema_dirs and print_data:
        from ..payloads.decoders import PayloadDecoder
        from ..payloads.registry import read_registry

        registry = read_registry(schema_dirs)
        findings += registry.findings
        payloads = PayloadDecoder(registry)
    if any(classify_name(p).is_batches for p in files):
        from ..log import kernels

        kernels.check_cache_location(files)  # the compiled kernels' cache never in, on or above an input
    for path in files:
        kind = classify_name(path)
        if (kind.base_offset or 0) > MAX_OFFSET or (kind.epoch or 0) > MAX_EPOCH:
            # Kafka (and kafka-dump-log) cannot parse the name: the offsets it gives every entry are meaningless
            findings.append(out_of_range_name(path, kind))
            continue
        try:
            if kind.is_batches:
                findings += _dump_batches(path, opts, fmt, skip_record_metadata, out, payloads)
            else:
                findings += _dump_other(path, fmt, verify_index_only, index_sanity_check, out)
        except BrokenPipeError:
            raise
        except OSError as e:
            # the file could not be read (a FIFO, a vanished file, an I/O error): a finding, and the next file
            findings.append(_unreadable(path, e))
    if payloads is not None:
        findings += payloads.findings()
    if fmt == "json":
        from ..serialize import to_jsonable

        for f in findings:
            out.write(dumps({"kind": "finding", **to_jsonable(f)}) + "\n")
    else:
        out.flush()  # the dump before the findings, on a terminal and in a 2>&1 file alike
        echo_findings(findings)
    out.flush()
    sys.exit(ExitCode.FINDINGS if any(f.severity > Severity.INFO for f in findings) else ExitCode.CLEAN)


def decoded_object(rec: CoordinatorRecord) -> dict[str, Any]:
    """An internal-topic record in NDJSON: its decoder, record types, and key and payload as kafka-dump-log's
    decoder gives them (``{"type": ..., "data": {...}}``, ``{"version": ..., "data": {...}}``; ``"<DELETE>"`` for a
    tombstone; null where they do not decode: the finding objects say why)."""
    return {"decoder": rec.decoder, "type_id": rec.type_id, "key_type": rec.key_type, "value_type": rec.value_type,
            "value_version": rec.value_version, "tombstone": rec.tombstone, "key": rec.kafka_key(),
            "payload": rec.kafka_payload()}


def _source(path: str) -> Any:
    """What the file is read from: the path, or the object an ``s3://`` URI names (read with ranged requests)."""
    from ..log.object_store import StorePath, is_store_uri

    return StorePath.from_uri(path) if is_store_uri(path) else path


def _absolute(path: str) -> str:
    """The path as kafka-dump-log names it on stderr (absolute); a store URI as it is."""
    from ..log.object_store import is_store_uri

    return path if is_store_uri(path) else os.path.abspath(path)


def _unreadable(path: str, e: OSError) -> Finding:
    from ..log.sources import NotRegularFile

    if isinstance(e, NotRegularFile):
        return finding("NOT_A_REGULAR_FILE", f"{e.strerror}: not opened", file=path)
    return finding("UNREADABLE_FILE", f"cannot read: {e.strerror or e}", file=path)


def _registry_decode(payloads: Any, topic: str) -> Callable[[bool, bytes | None], str | None] | None:
    """``--schemas``: a key or value framed for a Schema Registry as JSON text (None: print its bytes)."""
    if payloads is None:
        return None

    def decode(is_key: bool, data: bytes | None) -> str | None:
        return None if data is None else payloads(topic, is_key, data)[0]

    return decode


def _decoded_fields(decode: Callable[[bool, bytes | None], str | None], key: bytes | None, value: bytes | None
                    ) -> dict[str, Any]:
    """``key_decoded``/``value_decoded`` of a record's JSON object, for what decodes."""
    out: dict[str, Any] = {}
    for name, is_key, data in (("key_decoded", True, key), ("value_decoded", False, value)):
        text = decode(is_key, data)
        if text is not None:
            out[name] = json.loads(text)
    return out


def _dump_batches(path: str, options: dict[str, Any], fmt: str, skip_metadata: bool, out: TextIO,
                  payloads: Any = None) -> list[Finding]:
    # the segment machinery (numpy, the compiled kernels) is imported only when a file of batches is dumped
    from ..dump.segment import (
        BatchEvent,
        BatchGroupEvent,
        DumpOptions,
        RecordChunkEvent,
        SegmentDump,
        dump_segment,
        partition_topic,
    )
    from .dump_text import batch_line, damaged_ranges, record_line, stop_lines

    decode = _registry_decode(payloads, partition_topic(path) or "")
    raw = _takes_bytes(out)
    # records a chunk of rows at a time unless a registry's schemas decode them (that path is per record)
    opts = DumpOptions(**options, chunks=decode is None, groups=decode is None)
    result = SegmentDump(path, classify_name(path))
    file_json = dumps(path)
    if fmt == "text":
        _text_header(path, result.kind, out)
    recovered: list[list[int]] = []  # runs of entries found after the point Kafka's reader stops
    for ev in dump_segment(_source(path), opts, result):
        if isinstance(ev, BatchEvent) and ev.entry.recovered:
            e = ev.entry
            first = e.base_offset if e.base_offset is not None else e.last_offset
            end = e.position + e.size_in_bytes
            if recovered and recovered[-1][1] == e.position:
                recovered[-1][1], recovered[-1][3] = end, e.last_offset
                recovered[-1][4] += 1
            else:
                recovered.append([e.position, end, first, e.last_offset, 1])
        if isinstance(ev, BatchGroupEvent):  # a run of batches: its lines built a column at a time
            _emit(out, _group_lines(ev, fmt, opts.print_data, skip_metadata, file_json, raw))
        elif isinstance(ev, RecordChunkEvent):
            for piece in _chunk_lines(ev, path, fmt, opts.print_data, skip_metadata, file_json, raw):
                _emit(out, piece)
        elif fmt == "text":
            if isinstance(ev, BatchEvent):
                out.write(batch_line(ev.entry) + "\n")
            else:
                out.write(record_line(ev.entry, ev.record, opts.print_data, ev.metadata, skip_metadata,
                                      ev.internal, decode) + "\n")
        elif isinstance(ev, BatchEvent):
            # the entry's fields are plain values (what to_jsonable would give them)
            out.write(dumps({"kind": "batch", "file": path, **{k: getattr(ev.entry, k) for k in _entry_fields()},
                             "non_consecutive": ev.non_consecutive_after is not None,
                             "previous_last_offset": ev.non_consecutive_after}) + "\n")
        else:
            out.write(_record_json(path, ev.entry, ev.record, opts.print_data, ev.metadata, ev.internal, decode)
                      + "\n")
    if fmt == "text":
        if result.non_consecutive:
            out.flush()  # the dump's lines reach a terminal or a 2>&1 file before what stderr says of them
            click.echo(f"Non-consecutive offsets in {printable(_absolute(path))}", err=True)
            for a, b in result.non_consecutive[:1000]:
                click.echo(f"  {a} is followed by {b}", err=True)
            if result.non_consecutive_count > len(result.non_consecutive):
                click.echo(f"  ... {result.non_consecutive_count - len(result.non_consecutive)} more", err=True)
        if opts.max_bytes is None:  # as kafka-dump-log: with --max-bytes the rest of the file was not read
            for line in stop_lines(result, [(a, b, c, d, n) for a, b, c, d, n in recovered], os.path.basename(path)):
                out.write(line + "\n")
    else:
        out.write(dumps({"kind": "summary", "file": path, "size": result.size, "batches": result.batches,
                         "kafka_valid_bytes": result.kafka_valid_bytes,
                         "trailing_invalid_bytes": result.trailing_invalid_bytes,
                         "kafka_stop": result.kafka_stop, "kafka_stop_kind": result.kafka_stop_kind,
                         "recovered_batches": result.recovered_batches,
                         "damaged_ranges": [{k: r[k] for k in ("code", "position", "end", "length")}
                                            for r in damaged_ranges(result)],
                         "non_consecutive": [list(p) for p in result.non_consecutive],
                         "non_consecutive_count": result.non_consecutive_count,
                         "max_bytes": opts.max_bytes}) + "\n")
    return result.findings


def _text_header(path: str, kind: Any, out: TextIO) -> None:
    """kafka-dump-log's first lines for a file of batches."""
    out.write(f"Dumping {printable(path)}\n")
    if kind.kind == "log":
        out.write(f"Log starting offset: {kind.base_offset if kind.base_offset is not None else 0}\n")
    elif kind.kind == "kraft_snapshot":
        out.write(f"Snapshot end offset: {kind.base_offset}, epoch: {kind.epoch}\n")
    elif kind.kind == "bootstrap_snapshot":
        out.write("KRaft bootstrap snapshot\n")


def _group_lines(ev: Any, fmt: str, print_data: bool, skip_metadata: bool, file_json: str, raw: bool
                 ) -> str | list[bytes | memoryview]:
    """A run of batches' text or NDJSON (pyarrow is imported only when a run is dumped)."""
    from .dump_columns import group_json, group_text

    if fmt == "text":
        return group_text(ev, print_data, skip_metadata, raw)
    return group_json(ev, print_data, file_json, raw)


def _chunk_lines(ev: Any, path: str, fmt: str, print_data: bool, skip_metadata: bool, file_json: str, raw: bool
                 ) -> Iterator[str | list[bytes | memoryview]]:
    """A batch's records, a chunk of rows at a time, as text or NDJSON."""
    from .dump_text import record_chunk_json, record_chunk_lines

    if fmt == "text":
        return record_chunk_lines(ev.entry, ev.records, print_data, skip_metadata, raw)
    return record_chunk_json(ev.entry, ev.records, print_data, file_json,
                             functools.partial(_record_json, path, ev.entry, print_data=print_data), raw)


def _takes_bytes(out: TextIO) -> bool:
    """Whether lines may go to ``out`` as UTF-8 bytes, past its text layer: a binary buffer under it and UTF-8
    the encoding it writes (the native renderer's lines are that; any other encoding gets text)."""
    import codecs

    try:
        return hasattr(out, "buffer") and codecs.lookup(out.encoding).name == "utf-8"
    except (LookupError, TypeError, AttributeError):
        return False


def _emit(out: TextIO, piece: str | list[bytes | memoryview]) -> None:
    """Write lines given as text or as UTF-8 byte strings (those straight to the binary buffer, after the text
    written before them)."""
    if isinstance(piece, str):
        out.write(piece)
    elif piece:
        out.flush()
        out.buffer.writelines(piece)


@functools.cache
def _entry_fields() -> tuple[str, ...]:
    """The fields of a batch's JSON object, in :class:`BatchEntry`'s order."""
    import dataclasses

    from ..log.record_types import BatchEntry

    return tuple(f.name for f in dataclasses.fields(BatchEntry))


def _record_json(path: str, entry: Any, record: Any, print_data: bool, metadata: dict[str, Any] | None = None,
                 internal: CoordinatorRecord | None = None,
                 decode: Callable[[bool, bytes | None], str | None] | None = None) -> str:
    """One record's NDJSON object (without its newline)."""
    from ..serialize import to_jsonable

    rec = to_jsonable(record)
    if not print_data:
        rec.pop("key", None)
        rec.pop("value", None)
    obj = {"kind": "record", "file": path, "batch_position": entry.position, **rec}
    if metadata is not None:
        obj["metadata"] = metadata
    if internal is not None:
        obj["decoded"] = decoded_object(internal)
    elif decode is not None and print_data:
        obj.update(_decoded_fields(decode, record.key, record.value))
    return dumps(obj)


def _dump_other(path: str, fmt: str, verify: bool, sanity: bool, out: TextIO) -> list[Finding]:
    from ..dump.files import dump_file
    from .dump_text import file_lines

    d = dump_file(_source(path), verify_index=verify, sanity_check=sanity)
    if fmt == "text":
        out.write(f"Dumping {printable(path)}\n")
        if d.kind.kind == "unknown":
            out.write(f"Ignoring unknown file {printable(path)}\n")
        elif d.value is not None:
            for line in file_lines(d, verify, sanity):
                out.write(line + "\n")
        # kafka-dump-log's own report of entries whose offset is not the batch's there, on stderr after the file
        pairs = [p for f in d.findings if f.code in ("INDEX_POINTS_WRONG", "INDEX_OFFSET_MISMATCH")
                 for p in f.facts.get("mismatches", [])] if verify else []
        if pairs:
            out.flush()
            click.echo(f"Mismatches in :{printable(_absolute(path))}", err=True)
            for index_offset, log_offset in sorted(pairs, key=lambda p: p[0]):
                click.echo(f"  Index offset: {index_offset}, log offset: {'-' if log_offset is None else log_offset}",
                           err=True)
    elif d.value is not None:
        from .dump_text import file_objects

        for obj in file_objects(d, verify, sanity):
            out.write(dumps(obj) + "\n")
    return d.findings
