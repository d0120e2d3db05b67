"""The text of ``scan``: the answer, the partitions table, open transactions, the findings, one summary line.

The first line is the answer: whether the broker starts and what its next
start loses.  Findings at or above medium (or ``--min-severity``) are listed
one per line; the rest are counted per code with one example each.

On a terminal the table is drawn with rich when it fits the terminal with
every partition name and number on one line (framed if there is room, else
without the frame); elsewhere, or when it does not fit, it is plain aligned
text, so a pipe or a file gets every character.  Every value from the
evidence is printed as text, never interpreted as markup.
"""

from __future__ import annotations

import os
from typing import Any, TextIO

import click

from ..findings import Finding, Severity
from ..log.file_kinds import parse_partition_dir_name
from ..scan.model import PartitionScan, ScanReport
from .common import (
    LISTED_BY_DEFAULT,
    at_restart_text,
    by_listing,
    count_text,
    counted_lines,
    finding_line,
    number_ranges,
    plural,
    printable,
    severity_counts,
)

COLUMNS = ("partition", "segs", "batches", "log start", "LEO", "HW", "uncommitted", "at next start", "epochs",
           "findings")
_LEFT = {"partition", "at next start", "epochs"}
#: columns whose cells may wrap between words on a terminal; every other cell stays whole on one line
_WRAP = {"at next start", "epochs"}
MAX_EPOCHS = 4


def resolve_log_dirs(paths: tuple[str, ...]) -> list[Any]:
    """The log dirs to scan: each path is one, or a directory holding one broker's log dirs (searched).

    A directory holding log dirs of several brokers is a usage error naming them.
    """
    from ..scan.broker import InputError
    from ..scan.broker import resolve_log_dirs as resolve

    try:
        return resolve(list(paths))
    except InputError as e:  # any other error is the tool's: exit 3
        raise click.BadParameter(printable(str(e)), param_hint="LOG_DIRS") from None


def _s(v: Any) -> str:
    return "-" if v is None else str(v)


def _epochs(p: PartitionScan) -> str:
    cache = p.epoch_cache_written if p.epoch_cache_written is not None else p.epoch_cache_rebuilt
    shown = " ".join(f"{e}:{o}" for e, o in cache[-MAX_EPOCHS:])
    return ("… " if len(cache) > MAX_EPOCHS else "") + shown if cache else "-"


def next_start(p: PartitionScan) -> str:
    """What the next start does to the partition: which offsets go, how many records, committed or not."""
    from ..checks.watermarks import cost_text, recovery_cost

    r = p.recovery
    if r.note:
        return "deleted"
    if getattr(r, "unknown", None):  # evidence not read: no answer on what was read alone
        return f"unknown: {r.unknown}"
    cost = recovery_cost(r, high_watermark=p.high_watermark, log_start_offset=p.log_start_offset,
                         segments=p.segments)
    if cost is not None:
        return cost_text(cost)
    if r.load_fails or r.epoch_checkpoint_unreadable:
        return "log does not load"
    if r.damage_kept:
        return "damage kept (clean shutdown)" if r.clean_shutdown else "damage kept (below the recovery point)"
    if r.rebuilds_indexes:
        return f"rebuilds {len(r.rebuilds_indexes)} index(es)"
    return "recovered, no loss" if r.recovers else "-"


def idle(p: PartitionScan, threshold: Severity) -> bool:
    """Whether a partition holds no batch and has nothing to report: every segment read, nothing that its next
    start cuts or fails on, no open transaction, no finding at or above ``threshold``."""
    return (p.batch_count == 0 and p.complete and not p.open_transactions
            and next_start(p) in ("-", "recovered, no loss")
            and not any(f.severity >= threshold for f in p.findings))


def idle_line(partitions: list[PartitionScan], threshold: Severity) -> str:
    """One line for the partitions that hold no batch and have nothing to report at or above ``threshold``, by
    topic."""
    by_topic: dict[str, list[int]] = {}
    for p in partitions:
        by_topic.setdefault(p.topic, []).append(p.partition)
    topics = "; ".join(f"{printable(t)} {number_ranges(ns)}" for t, ns in sorted(by_topic.items()))
    verb = "holds" if len(partitions) == 1 else "hold"
    return (f"{plural(len(partitions), 'partition')} {verb} no batch, nothing cut at the next start and no finding "
            f"at {threshold} or above (--verbose lists them): {topics}")



def rows(report: ScanReport, topics: set[str], skip: Any = None) -> list[list[str]]:
    """The table's rows, one per partition of ``topics`` (every topic when empty), except those ``skip`` says."""
    out = []
    for p in sorted(report.partitions, key=lambda p: (p.topic, p.partition, p.dir_name)):
        if topics and p.topic not in topics:
            continue
        if skip is not None and skip(p):
            continue
        worst = p.worst()
        out.append([printable(p.dir_name), str(len(p.segments)), str(p.batch_count), _s(p.log_start_offset),
                    _s(p.log_end_offset) + ("" if p.complete else "?"), _s(p.high_watermark),
                    # with a segment unread the log end is unknown, and so is what lies above the HW
                    _s(p.uncommitted) if p.complete else "?",
                    next_start(p), _epochs(p), f"{len(p.findings)}" + (f" ({worst})" if worst is not None else "")])
    return out


def tiered_lines(report: ScanReport, topics: set[str]) -> list[str]:
    """One line per tiered partition (KIP-405): its log start, local log start, remote coverage and gaps."""
    out = []
    for p in sorted(report.partitions, key=lambda p: (p.topic, p.partition, p.dir_name)):
        t = p.tiered
        if t is None or (topics and p.topic not in topics):
            continue
        remote = ", ".join(f"{a}-{b}" for a, b in t.remote_ranges) or "nothing copied"
        if not t.metadata_read:
            remote = "unknown (no __remote_log_metadata)"
        extra = [f"{n} {what}" for n, what in ((t.copying, "copying"), (t.deleting, "deleting")) if n]
        gaps = f"; gap {', '.join(f'{a}-{b}' for a, b in t.gaps)}" if t.gaps else ""
        out.append(f"  {printable(p.dir_name)}: log start {t.log_start_offset}, local log start "
                   f"{_s(t.local_log_start_offset)}, remote {remote}"
                   + (f" ({', '.join(extra)})" if extra else "") + gaps)
    return out


def transaction_lines(report: ScanReport, topics: set[str]) -> list[str]:
    """One line per partition with transactions open at its log end: its last stable offset (where read_committed
    consumers stop) and each open transaction, hanging or not."""
    out = []
    for p in sorted(report.partitions, key=lambda p: (p.topic, p.partition, p.dir_name)):
        if (topics and p.topic not in topics) or not p.open_transactions:
            continue
        out.append(f"  {printable(p.dir_name)}: LSO {_s(p.last_stable_offset)} (HW {_s(p.high_watermark)}, "
                   f"LEO {_s(p.log_end_offset)})")
        for t in p.open_transactions:
            age = f", {t.age_ms} ms old" if t.age_ms is not None else ""
            coord = f", coordinator: {printable(t.coordinator_state)}" if t.coordinator_state else ""
            then = at_restart_text(t.at_restart, t.coordinator_timeout_at)
            out.append(f"    {'HANGING' if t.hanging else 'open'}: producer {t.producer_id} (epoch {t.producer_epoch}) "
                       f"from offset {t.first_offset} to {t.last_offset}, {t.records} record(s){age}{coord}{then}")
    return out


def plain_table(header: tuple[str, ...], body: list[list[str]], left: set[str]) -> list[str]:
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(header)]

    def line(cells: tuple[str, ...] | list[str]) -> str:
        return "  ".join(c.ljust(w) if h in left else c.rjust(w) for c, w, h in zip(cells, widths, header)).rstrip()

    return [line(header)] + [line(r) for r in body]


def _column_widths(header: tuple[str, ...], body: list[list[str]]) -> tuple[list[int], list[int]]:
    """Per column, the narrowest width that cuts nothing (header words and wrapping cells may wrap) and the widest."""
    from rich.cells import cell_len

    mins, maxs = [], []
    for i, col in enumerate(header):
        cells = [r[i] for r in body]
        if col in _WRAP:
            cell_min = max((cell_len(w) for c in cells for w in c.split()), default=0)
        else:
            cell_min = max((cell_len(c) for c in cells), default=0)
        mins.append(max([cell_min, 1] + [cell_len(w) for w in col.split()]))
        maxs.append(max([cell_len(col)] + [cell_len(c) for c in cells]))
    return mins, maxs


def _fit(mins: list[int], maxs: list[int], room: int) -> list[int] | None:
    """Column widths within ``room`` cells, none below its minimum (None when that is impossible).

    The spare room goes first to the columns that need the least of it to show whole.
    """
    if sum(mins) > room:
        return None
    widths = list(mins)
    spare = room - sum(widths)
    for i in sorted(range(len(widths)), key=lambda i: maxs[i] - mins[i]):
        add = min(spare, maxs[i] - widths[i])
        widths[i] += add
        spare -= add
    return widths


def rich_table(header: tuple[str, ...], body: list[list[str]], left: set[str], width: int) -> Any | None:
    """The table for a terminal ``width`` cells wide, or None when it cannot show every name and number whole.

    Each column gets a fixed width, so rich never shrinks one below what its
    cells need: a partition name or a number is never cut, folded or elided.
    Framed when that fits, else without the frame (columns two spaces apart).
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    mins, maxs = _column_widths(header, body)
    n = len(header)
    styles = (
        # a border around and between the columns, one space of padding on each side of a cell
        (dict(box=box.HEAVY_HEAD), 3 * n + 1),
        # a rule under the header only: one padding space and one separator between columns
        (dict(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True), 2 * (n - 1)),
    )
    for style, chrome in styles:
        widths = _fit(mins, maxs, width - chrome)
        if widths is None:
            continue
        t = Table(title="partitions", **style)
        for col, w in zip(header, widths):
            t.add_column(Text(col, overflow="fold", no_wrap=False), justify="left" if col in left else "right",
                         width=w, overflow="fold", no_wrap=col not in _WRAP)
        for r in body:
            t.add_row(*(Text(c) for c in r))
        return t
    return None


def _partition_dir_of(file: str, log_dirs: list[str]) -> str | None:
    """The name of the partition directory ``file`` is (or is in): the first component below a known log dir.

    For a file under none of them, the name of its parent directory, or else its own.
    """
    path = file.replace(os.sep, "/").rstrip("/")
    for d in log_dirs:
        prefix = d.replace(os.sep, "/").rstrip("/")
        if path == prefix:
            return None  # the log dir itself
        if path.startswith(prefix + "/"):
            return path[len(prefix) + 1 :].split("/", 1)[0]
    parts = [x for x in path.split("/") if x]
    for name in parts[-2:]:
        if parse_partition_dir_name(name) is not None:
            return name
    return None


def finding_topic(f: Finding, log_dirs: list[str]) -> str | None:
    """The topic whose partition directory a finding is in (None for the broker's files, or no file)."""
    name = _partition_dir_of(f.file, log_dirs) if f.file else None
    parsed = parse_partition_dir_name(name) if name else None
    return parsed.topic if parsed is not None else None


def answer_line(report: ScanReport, topics: set[str], findings: list[Finding]) -> str:
    """What matters first: the broker does not start, N partitions lose records at the next start, or nothing is
    lost (and whether any finding is at medium or above)."""
    from ..checks.watermarks import recovery_cost

    shown = [p for p in sorted(report.partitions, key=lambda p: (p.topic, p.partition, p.dir_name))
             if not topics or p.topic in topics]
    # LogLoader throws on such a log: LogManager.loadLogs fails and the broker does not start (LOG_LOAD_FAILS)
    stuck = [p for p in shown if p.recovery.load_fails or p.recovery.epoch_checkpoint_unreadable]
    if stuck:
        return (f"answer: the broker will not start: {plural(len(stuck), 'log')} cannot load "
                f"({_names(stuck)})")
    losing = []
    for p in shown:
        cost = None if p.recovery.note else recovery_cost(p.recovery, high_watermark=p.high_watermark,
                                                           log_start_offset=p.log_start_offset, segments=p.segments)
        if cost is not None and cost.first_offset is not None:
            losing.append((p, cost))
    serious = [f for f in findings if f.severity >= LISTED_BY_DEFAULT]
    unread = [p for p in shown if getattr(p.recovery, "unknown", None)]
    unknown = f"; unknown for {plural(len(unread), 'partition')} not read ({_names(unread)})" if unread else ""
    if unread and not losing:
        return f"answer: unknown: {plural(len(unread), 'partition')} could not be read ({_names(unread)})"
    if losing:
        records = sum(c.records for _, c in losing)
        committed = sum(c.committed_records for _, c in losing)
        verb = "loses" if len(losing) == 1 else "lose"
        return (f"answer: {plural(len(losing), 'partition')} {verb} records at the next start "
                f"({_names([p for p, _ in losing])}): {plural(records, 'readable record')}, {committed} committed"
                f"{unknown}")
    if serious:
        worst = max(f.severity for f in serious)
        return (f"answer: nothing lost at the next start, but {plural(len(serious), 'finding')} at medium or above "
                f"(worst {worst})")
    return "answer: nothing lost at the next start; no finding at medium or above"


def _names(partitions: list[PartitionScan], limit: int = 4) -> str:
    names = [printable(p.dir_name) for p in partitions]
    return ", ".join(names[:limit]) + (f", … ({len(names) - limit} more)" if len(names) > limit else "")


def render_scan_text(report: ScanReport, out: TextIO, *, min_severity: Severity | None = None,
                     topics: set[str] | None = None, verbose: bool = False) -> None:
    """The scan as text: answer, table, transactions, findings at or above ``min_severity`` one per line and the
    rest counted per code, summary.

    By default findings at or above medium are listed, and partitions that
    hold no batch and have nothing to report (:func:`idle`) are one line;
    ``verbose`` lists every partition and (unless ``min_severity``) every
    finding.
    """
    topics = topics or set()
    threshold = min_severity if min_severity is not None else Severity.INFO if verbose else LISTED_BY_DEFAULT
    b = report.broker
    findings = list(report.all_findings())
    if topics:
        # the topic of the finding's partition directory, compared whole: "orders" is not "orders-events"
        log_dirs = sorted({*b.log_dirs, *(p.log_dir for p in report.partitions)}, key=len, reverse=True)
        findings = [f for f in findings if f.file is None or finding_topic(f, log_dirs) in topics]
    out.write(answer_line(report, topics, findings) + "\n")
    out.write(f"broker {_s(b.node_id)}  cluster {printable(b.cluster_id or '-')}  log dirs: "
              f"{', '.join(printable(d) for d in b.log_dirs)}\n")
    shown = [p for p in report.partitions if not topics or p.topic in topics]
    quiet = [] if verbose else [p for p in shown if idle(p, threshold)]
    body = rows(report, topics, skip=(lambda p: idle(p, threshold)) if quiet else None)
    if body:
        _write_table(out, body)
    if quiet:
        out.write(idle_line(quiet, threshold) + "\n")
    tiered = tiered_lines(report, topics)
    if tiered:
        out.write("\ntiered storage (log start, local log start, what remote storage holds)\n")
        for line in tiered:
            out.write(line + "\n")
    txn = transaction_lines(report, topics)
    if txn:
        hanging = sum(t.hanging for p in report.partitions if not topics or p.topic in topics
                      for t in p.open_transactions)
        out.write(f"\ntransactions open at the log end ({sum(line.startswith('    ') for line in txn)}, "
                  f"{hanging} hanging; read_committed consumers stop at the LSO)\n")
        for line in txn:
            out.write(line + "\n")
    listed, counted = by_listing(findings, threshold)
    if listed:
        out.write(f"\n{plural(len(listed), 'finding')}" + (f" at or above {threshold}" if threshold > Severity.INFO
                                                          else "") + "\n")
        for f in listed:
            out.write(finding_line(f) + "\n")
    if counted:
        out.write("\n")
        for line in counted_lines(counted, "--min-severity"):
            out.write(line + "\n")
    out.write(f"summary: {plural(len(shown), 'partition')}; {count_text(severity_counts(findings))}\n")


def _write_table(out: TextIO, body: list[list[str]]) -> None:
    """The partitions table: rich on a terminal where every name and number fits whole, else plain aligned text."""
    table = None
    if out.isatty():
        from rich.console import Console

        console = Console(file=out, highlight=False)
        table = rich_table(COLUMNS, body, _LEFT, console.width)
        if table is not None:
            console.print(table)
    if table is None:  # a pipe, a file, or a terminal too narrow for whole names: every character, aligned
        out.write("partitions\n")
        for line in plain_table(COLUMNS, body, _LEFT):
            out.write(line + "\n")
