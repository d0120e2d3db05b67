"""One fuzz input through kforensics' entry points, judged: no exception, sane findings, and a finding
wherever Kafka's own readers would refuse the input (the model in :mod:`tests.fuzz.kafka_model`).

Shared by the CI fuzz tests (``tests/fuzz/test_*.py``) and the long campaign
(``scripts/fuzz_campaign.py``).  :func:`make_input` turns (kind, seed index,
mutation seed) into files; :func:`run_input` writes them under a work dir and
drives them through the public API and, when asked, the CLI.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from . import corpus, kafka_model, mutate

#: finding codes that report each reason the model gives for a refusal
REASON_CODES = {
    "crc": {"CRC_MISMATCH"},
    "framing": {"TRUNCATED_BATCH", "TRAILING_BYTES", "ZERO_TAIL", "ZERO_GAP", "CORRUPT_RANGE", "IMPLAUSIBLE_SIZE"},
    "header_offsets": {"OFFSET_OUT_OF_RANGE"},
    "codec": {"UNKNOWN_CODEC", "INVALID_ATTRIBUTES", "CODEC_NOT_ALLOWED_FOR_MAGIC"},
    "count": {"RECORD_DECODE_ERROR"},
    "decompress": {"DECOMPRESSION_FAILED", "DECOMPRESSION_BOMB"},
    "records": {"RECORD_DECODE_ERROR"},
    "control": {"BAD_CONTROL_KEY", "BAD_CONTROL_VALUE"},
    "record_offsets": {"RECORD_OFFSET_OUT_OF_BATCH", "RECORD_OFFSETS_NOT_INCREASING"},
    "null_wrapper": {"NULL_WRAPPER_VALUE", "BAD_MESSAGE"},
    "message": {"BAD_MESSAGE"},
    "inner_set": {"BAD_INNER_MESSAGE_SET", "BAD_INNER_MESSAGE"},
    "inner_message": {"BAD_INNER_MESSAGE_SET", "BAD_INNER_MESSAGE", "BAD_MESSAGE", "INNER_MESSAGE_CRC_MISMATCH"},
    "inner_crc": {"INNER_MESSAGE_CRC_MISMATCH"},
}
#: refusals found from a batch's header (each must be reported); the rest are found decoding its records,
#: which stops at the first problem (one of them must be reported)
HEADER_REASONS = {"crc", "header_offsets", "framing"}
#: a v2 batch's deep problems that a preceding header problem may hide
SIDE_REFUSAL_CODES = {
    "partition_metadata": {"PARTITION_METADATA_MALFORMED", "PARTITION_METADATA_BAD_VERSION",
                           "PARTITION_METADATA_BAD_TOPIC_ID", "PARTITION_METADATA_NOT_UTF8"},
    "producer_snapshot": {"SNAPSHOT_BAD_VERSION", "SNAPSHOT_CRC_MISMATCH", "SNAPSHOT_TRUNCATED",
                          "SNAPSHOT_COUNT_MISMATCH"},
    "quorum_state": {"QUORUM_STATE_MALFORMED", "QUORUM_STATE_BAD_VERSION", "QUORUM_STATE_BAD_FIELD"},
    "index_sanity": {"INDEX_SANITY_CHECK_FAILED", "TXN_INDEX_BAD_VERSION", "TXN_INDEX_BEFORE_SEGMENT"},
}
CHECKPOINT_KINDS = ("replication_offset_checkpoint", "recovery_point_offset_checkpoint",
                    "log_start_offset_checkpoint", "cleaner_offset_checkpoint", "leader_epoch_checkpoint")


@dataclass
class Input:
    kind: str
    seed_name: str
    what: str
    files: dict[str, bytes | None] = field(default_factory=dict)  # None: a directory in the file's place
    structural: bool = False
    topic: str | None = None
    key: bytes | None = None
    value: bytes | None = None

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.files.values() if v) + len(self.key or b"") + len(self.value or b"")


@dataclass
class Outcome:
    crash: str | None = None  # an exception escaped (traceback)
    silent: list[str] = field(default_factory=list)  # Kafka refuses, no finding there
    misreported: list[str] = field(default_factory=list)  # a finding there, not one that names the refusal
    false_refusals: list[str] = field(default_factory=list)  # kforensics says Kafka refuses, the model does not
    problems: list[str] = field(default_factory=list)  # broken invariants (finding placement, exit codes, JSON)
    findings: int = 0
    refusals: int = 0  # entries (segments) or files the model says Kafka refuses: each checked for a finding

    @property
    def ok(self) -> bool:
        return self.crash is None and not self.silent and not self.misreported and not self.problems


# ============================================================================= inputs
def make_input(kind: str, seed_index: int, mseed: int, seeds: dict[str, list[corpus.Seed]] | None = None) -> Input:
    """The input named by (kind, seed index, mutation seed): deterministic."""
    seeds = seeds if seeds is not None else corpus.all_seeds()
    pool = seeds[kind]
    seed = pool[seed_index % len(pool)]
    rng = random.Random(mseed)
    if kind == "internal_record":
        if rng.random() < 0.5:
            key, kw = mutate.record_part(seed.key, rng)
            value, vw = seed.value, "value kept"
        else:
            key, kw = seed.key, "key kept"
            value, vw = mutate.record_part(seed.value, rng)
        return Input(kind, seed.name, f"{kw}; {vw}", {}, False, seed.topic, key, value)
    if kind == "log_dir":
        return _mutate_log_dir(seed, rng)
    files = dict(seed.files)
    name = seed.main
    m = mutate_file(kind, files[name], rng)
    files[name] = m.data
    return Input(kind, seed.name, m.what, files, m.structural)


def mutate_file(kind: str, data: bytes, rng: random.Random) -> mutate.Mutant:
    if kind in corpus.SEGMENT_KINDS:
        return mutate.segment(data, rng)
    if kind in mutate.ENTRY_LAYOUT:
        return mutate.binary(data, kind, rng)
    return mutate.text(data, rng, json_like=kind in ("quorum_state", "clean_shutdown"))


def kind_of_name(rel: str) -> str | None:
    name = rel.rsplit("/", 1)[-1]
    for kind, fname in corpus.SIDE_FILE_NAMES.items():
        if name == fname:
            return kind
    for suffix, kind in ((".index", "offset_index"), (".timeindex", "time_index"), (".txnindex", "txn_index"),
                         (".snapshot", "producer_snapshot")):
        if name.endswith(suffix):
            return kind
    if name.endswith(".log"):
        return "metadata_log" if rel.startswith(corpus.METADATA_DIR) else "log_v2"
    if name.endswith(".checkpoint"):
        return "kraft_snapshot"
    return None


def _mutate_log_dir(seed: corpus.Seed, rng: random.Random) -> Input:
    files: dict[str, bytes | None] = dict(seed.files)
    rel = rng.choice(sorted(files))
    r = rng.random()
    if r < 0.06:
        files[rel] = None
        what = f"{rel} is a directory"
    elif r < 0.12:
        del files[rel]
        what = f"{rel} removed"
    elif r < 0.16:
        files[rel] = b""
        what = f"{rel} emptied"
    elif r < 0.2:
        extra = rng.choice(["orders-0/00000000000000000000.log.deleted", "orders-0/x.swap", "stray-file",
                            "orders-1/00000000000000000050.index", "orders-0/00000000000000000010.log",
                            "orders-0-delete/00000000000000000000.log", "bad topic-0/00000000000000000000.log"])
        files[extra] = files.get(rel) or b""
        what = f"{extra} added"
    else:
        kind = kind_of_name(rel)
        m = mutate_file(kind, files[rel] or b"", rng) if kind else mutate.raw(files[rel] or b"", rng)
        files[rel] = m.data
        what = f"{rel}: {m.what}"
    return Input("log_dir", seed.name, what, files)


def write_files(root: Path, files: dict[str, bytes | None]) -> None:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if data is None:
            p.mkdir(exist_ok=True)
        else:
            p.write_bytes(data)


# ============================================================================= running
def run_input(inp: Input, workdir: Path, *, cli: bool = False, scan: bool = False, full: bool = True) -> Outcome:
    """Drive one input through kforensics; never raises (a crash is in the outcome).

    ``full=False`` is the campaign's bulk path: a segment goes through ``dump --deep`` as the front end consumes
    it (every finding serialised and judged against the model) but not also through the reader alone, the
    columnar path and the KRaft timeline, and only its findings are serialised, not every record."""
    out = Outcome()
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    try:
        if inp.kind == "internal_record":
            _internal(inp, out)
        else:
            write_files(workdir, inp.files)
            if inp.kind in corpus.SEGMENT_KINDS:
                _segment(inp, workdir, out, cli=cli, scan=scan, full=full)
            elif inp.kind == "log_dir":
                _log_dir(inp, workdir, out, cli=cli)
            else:
                _side_file(inp, workdir, out, cli=cli, scan=scan)
    except Exception:  # noqa: BLE001 - the point: nothing may escape
        out.crash = traceback.format_exc()
    return out


def _check_findings(findings, out: Outcome, label: str | None, size: int | None, where: str) -> None:
    from kforensics.catalogue import CATALOGUE
    from kforensics.serialize import to_jsonable

    for f in findings:
        out.findings += 1
        if f.code not in CATALOGUE:
            out.problems.append(f"{where}: unknown code {f.code}")
        if label is not None and f.file != label and f.code != "MORE_FINDINGS":
            out.problems.append(f"{where}: {f.code} placed in {f.file}, not {label}")
        if f.position is not None and size is not None and not 0 <= f.position <= size:
            out.problems.append(f"{where}: {f.code} at byte {f.position} outside the file ({size} bytes)")
        if f.line is not None and f.line < 1:
            out.problems.append(f"{where}: {f.code} at line {f.line}")
    json.dumps(to_jsonable(list(findings)), allow_nan=False)


# ----------------------------------------------------------------------------- segments
def _segment(inp: Input, root: Path, out: Outcome, *, cli: bool, scan: bool, full: bool = True) -> None:
    from kforensics.dump.segment import DumpOptions, SegmentDump, dump_segment
    from kforensics.log.file_kinds import classify_name
    from kforensics.log.records import EntryRecords, iter_record_tables
    from kforensics.log.segment_reader import SegmentReader
    from kforensics.serialize import to_jsonable

    rel = next(iter(inp.files))
    path = root / rel
    label = str(path)
    data = inp.files[rel] or b""
    size = len(data)
    if full:
        # the reader alone, then every entry decoded
        reader = SegmentReader(path, window=rng_window(inp))
        for b in reader.batches():
            if not (0 <= b.position and b.position + b.size_in_bytes <= size):
                out.problems.append(f"entry at {b.position}+{b.size_in_bytes} outside the file")
            dec = EntryRecords(b, file=label)
            for r in dec:
                json.dumps(to_jsonable(r), allow_nan=False)
            if dec.error is not None:
                _check_findings([dec.error], out, label, size, "records")
        _check_findings(reader.summary.findings, out, label, size, "reader")
        # the columnar deep path
        for _table, rt in iter_record_tables(SegmentReader(path)):
            _check_findings(rt.errors, out, label, size, "record tables")
    # dump --deep, as the front end consumes it
    result = SegmentDump(label, classify_name(label))
    for ev in dump_segment(path, DumpOptions(deep=True), result):
        if full:
            json.dumps(to_jsonable(ev), allow_nan=False)
    _check_findings(result.findings, out, label, size, "dump")
    judge_segment_findings(data, result.findings, out)
    if full and inp.kind in ("metadata_log", "kraft_snapshot"):
        from kforensics.kraft.timeline import build_timeline

        tl = build_timeline(root)
        _check_findings(tl.findings, out, None, None, "timeline")
        json.dumps(to_jsonable(tl), allow_nan=False)
    if scan:
        broker = root / "broker"
        part = broker / ("__cluster_metadata-0" if inp.kind in ("metadata_log", "kraft_snapshot") else "t-0")
        part.mkdir(parents=True)
        shutil.copyfile(path, part / path.name)
        _scan(broker, out)
    if cli:
        _cli(["dump", label], out)
        _cli(["dump", "--deep", "--format", "json", label], out, json_lines=True)
        _cli(["dump", "--print-data", label], out)


def rng_window(inp: Input) -> int:
    """Small windows on some inputs, so entries straddle the reader's window edges."""
    import zlib

    return (512, 4096, 1 << 20)[zlib.crc32(inp.what.encode()) % 3]


def judge_segment_findings(data: bytes, findings, out: Outcome) -> None:
    """Each refusal of the model must have a finding at its entry naming it."""
    refusals = kafka_model.judge_segment(data)
    out.refusals += len({r.position for r in refusals})
    more = {f.facts.get("finding_code") for f in findings if f.code == "MORE_FINDINGS"}
    by_entry: dict[int, list[kafka_model.Refusal]] = {}
    for r in refusals:
        by_entry.setdefault(r.position, []).append(r)
    for pos, rs in by_entry.items():
        end = pos + (rs[0].size or 0)
        inside = {f.code for f in findings if f.position is not None and pos <= f.position < max(end, pos + 1)}
        # a record decoded up to the batch's end may be reported at its last byte + 1
        at_end = {f.code for f in findings if f.position == end}
        header = [r for r in rs if r.reason in HEADER_REASONS]
        deep = [r for r in rs if r.reason not in HEADER_REASONS]
        for r in header:
            if r.reason == "framing":
                ok = {f.code for f in findings if f.position == pos} & REASON_CODES["framing"]
            else:
                ok = inside & REASON_CODES[r.reason]
            if not ok and not (REASON_CODES[r.reason] & more):
                _miss(out, inside, f"{r.reason} at {pos} ({r.detail})")
        if deep:
            wanted = set().union(*(REASON_CODES[r.reason] for r in deep))
            if not (inside | at_end) & wanted and not wanted & more:
                _miss(out, inside, "/".join(r.reason for r in deep) + f" at {pos} ({deep[0].detail})")


def _miss(out: Outcome, codes: set[str], text: str) -> None:
    if codes:
        out.misreported.append(f"{text}: reported as {sorted(codes)}")
    else:
        out.silent.append(text)


# ----------------------------------------------------------------------------- side files
def _side_file(inp: Input, root: Path, out: Outcome, *, cli: bool, scan: bool) -> None:
    from kforensics.dump.files import dump_file
    from kforensics.log.side_files import read_side_file
    from kforensics.serialize import to_jsonable

    rel = next(iter(inp.files))
    path = root / rel
    label = str(path)
    data = inp.files[rel] or b""
    sf = read_side_file(path, inp.kind)
    _check_findings(sf.findings, out, label, len(data), "side file")
    if inp.kind not in mutate.ENTRY_LAYOUT or inp.kind == "producer_snapshot":  # indexes: arrays, rendered by dump
        json.dumps(to_jsonable(sf.value), allow_nan=False)
    if inp.kind in ("offset_index", "time_index"):
        # verified against a log beside it, as kafka-dump-log --verify-index-only does
        (root / "00000000000000000000.log").write_bytes(corpus.v2_segment(0, 1))
        d = dump_file(path, verify_index=True, sanity_check=True)
        _check_findings(d.findings, out, None, None, "verify")
    codes = {f.code for f in sf.findings}
    if inp.kind in CHECKPOINT_KINDS:
        refused = kafka_model.judge_checkpoint(data, inp.kind)
        out.refusals += bool(refused)
        says = sf.value is not None and sf.value.kafka_refuses
        if refused and not says:
            _miss(out, codes, f"checkpoint refused at line {refused[0].line} ({refused[0].detail})")
        elif says and not refused:
            out.false_refusals.append(f"checkpoint: {sorted(codes)}")
    elif inp.kind == "partition_metadata":
        refused = kafka_model.judge_partition_metadata(data)
        out.refusals += bool(refused)
        if refused and not codes & SIDE_REFUSAL_CODES["partition_metadata"]:
            _miss(out, codes, f"partition.metadata refused at line {refused[0].line} ({refused[0].detail})")
    elif inp.kind == "producer_snapshot":
        refused = kafka_model.judge_producer_snapshot(data)
        out.refusals += bool(refused)
        if refused and not codes & SIDE_REFUSAL_CODES["producer_snapshot"]:
            _miss(out, codes, f"snapshot refused ({refused[0].detail})")
    elif inp.kind == "quorum_state":
        refused = kafka_model.judge_quorum_state(data)
        out.refusals += bool(refused)
        if refused and not codes & SIDE_REFUSAL_CODES["quorum_state"]:
            _miss(out, codes, f"quorum-state refused ({refused[0].detail})")
    elif inp.kind in ("offset_index", "time_index", "txn_index"):
        refused = kafka_model.judge_index(data, inp.kind)
        out.refusals += bool(refused)
        if refused:
            d = dump_file(path, sanity_check=True)
            dcodes = {f.code for f in d.findings}
            if not dcodes & SIDE_REFUSAL_CODES["index_sanity"]:
                _miss(out, dcodes, f"index sanity check fails ({refused[0].detail})")
    if scan:
        broker = root / "broker"
        where = broker / ("t-0" if rel[0].isdigit() or rel in ("leader-epoch-checkpoint", "partition.metadata")
                          else "")
        where.mkdir(parents=True, exist_ok=True)
        (broker / "t-0").mkdir(exist_ok=True)
        (broker / "t-0" / "00000000000000000000.log").write_bytes(corpus.v2_segment(1, 0))
        shutil.copyfile(path, where / rel)
        _scan(broker, out)
    if cli:
        _cli(["dump", label], out)
        _cli(["dump", "--format", "json", label], out, json_lines=True)
        if inp.kind in ("offset_index", "time_index"):
            _cli(["dump", "--verify-index-only", label], out)
            _cli(["dump", "--index-sanity-check", label], out)


# ----------------------------------------------------------------------------- internal topics
def _internal(inp: Input, out: Outcome) -> None:
    from kforensics.formats.internal_topics import decode
    from kforensics.serialize import to_jsonable

    rec = decode(inp.topic, inp.key, inp.value)
    if rec is None:
        out.problems.append(f"{inp.topic}: no decoder")
        return
    for f in rec.findings:
        part = f.facts.get("part")
        data = inp.key if part == "key" else inp.value
        _check_findings([f], out, None, len(data) if data is not None else 0, "internal")
    json.dumps(to_jsonable(rec), allow_nan=False)
    for fn in ("kafka_key", "kafka_payload"):
        getter = getattr(rec, fn, None)
        if getter is not None:
            json.dumps(getter(), ensure_ascii=False, allow_nan=False)


# ----------------------------------------------------------------------------- log dirs
def _log_dir(inp: Input, root: Path, out: Outcome, *, cli: bool) -> None:
    _scan(root, out)
    if any(k.startswith(corpus.METADATA_DIR) for k in inp.files):
        from kforensics.kraft.timeline import build_timeline
        from kforensics.serialize import to_jsonable

        tl = build_timeline(root)
        _check_findings(tl.findings, out, None, None, "timeline")
        json.dumps(to_jsonable(tl), allow_nan=False)
    if cli:
        _cli(["scan", str(root)], out)
        _cli(["scan", "--format", "json", str(root)], out, json_doc=True)
        outdir = root.parent / (root.name + "-out")
        if outdir.exists():
            shutil.rmtree(outdir)
        _cli(["scan", "--out", str(outdir), str(root)], out)
        if any(k.startswith(corpus.METADATA_DIR) and v is not None for k, v in inp.files.items()):
            _cli(["timeline", str(root)], out)


def _scan(root: Path, out: Outcome) -> None:
    from kforensics.scan.broker import scan_log_dirs
    from kforensics.serialize import to_jsonable

    report = scan_log_dirs([root])
    _check_findings(report.all_findings(), out, None, None, "scan")
    json.dumps(to_jsonable(report), allow_nan=False)


# ----------------------------------------------------------------------------- the command line
def _cli(args: list[str], out: Outcome, *, json_lines: bool = False, json_doc: bool = False) -> None:
    from click.testing import CliRunner

    from kforensics.cli import main

    os.environ.pop("KFORENSICS_DEBUG", None)
    r = CliRunner().invoke(main, args, catch_exceptions=True)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        out.crash = "".join(traceback.format_exception(r.exception))
        return
    if r.exit_code not in (0, 1, 2):
        out.crash = f"kforensics {' '.join(args)}: exit {r.exit_code}\n{r.output[-2000:]}"
        return
    if r.exit_code == 2:
        out.problems.append(f"kforensics {args[0]}: exit 2 (usage or I/O error) on evidence: {r.output[-300:]}")
    stdout = r.stdout if hasattr(r, "stdout") else r.output
    try:
        if json_lines:
            for line in stdout.splitlines():
                if line.strip():
                    json.loads(line)
        if json_doc and r.exit_code in (0, 1):
            json.loads(stdout)
    except ValueError as e:
        out.problems.append(f"kforensics {' '.join(args[:-1])}: output is not JSON: {e}")
