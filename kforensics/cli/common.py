"""What every command shares: finding lines, text escaping, summary lines, the exit-code rule."""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Iterable
from datetime import UTC

import click

from ..errors import ExitCode
from ..findings import Finding, Severity
from ..severity import NAMES_WORST_FIRST


def printable(text: str) -> str:
    """``text`` safe for a terminal: control and other non-printing characters become escapes (an undecodable
    byte of a file name, held as a surrogate, becomes ``\\xNN``)."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable():
            out.append(ch)
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif 0xDC80 <= ord(ch) <= 0xDCFF:
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")  # an undecodable byte of a file name, as JSON and Parquet show it
        else:
            cp = ord(ch)
            out.append(f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}")
    return "".join(out)


def payload_text(data: bytes | None) -> str:
    """A key or payload for a text line: UTF-8 text when it is printable, escapes for everything else."""
    if data is None:
        return "null"
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x5C else f"\\x{b:02x}" for b in bytes(data))
    if all(ch.isprintable() or unicodedata.category(ch) == "Zs" for ch in text):
        return text
    return printable(text)


def _where(f: Finding) -> list[str]:
    where = [printable(f.file)] if f.file else []
    if f.position is not None:
        where.append(f"@ byte {f.position}")
    elif f.line is not None:
        where.append(f"line {f.line}")
    return where


def finding_line(f: Finding) -> str:
    """One finding as text: ``SEVERITY CODE where: message`` (``SEVERITY CODE: message`` when it is in no file)."""
    return " ".join([str(f.severity).upper(), f.code, *_where(f)]) + f": {printable(f.message)}"


def severity_counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Findings per severity name, worst first (every severity, zeros included)."""
    counts = {s: 0 for s in NAMES_WORST_FIRST}
    for f in findings:
        counts[str(f.severity)] += 1
    return counts


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 finding``, ``2 findings``, ``0 findings`` (``nouns`` when the plural is not ``noun + "s"``)."""
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def count_text(counts: dict[str, int], noun: str = "finding") -> str:
    """``2 findings (1 high, 1 low)``, ``1 finding (1 low)`` or ``no findings``."""
    total = sum(counts.values())
    if not total:
        return f"no {noun}s"
    parts = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    return f"{plural(total, noun)} ({parts})"


def summary_line(counts: dict[str, int], noun: str = "finding") -> str:
    """``summary: 2 findings (1 high, 1 low)``, ``summary: 1 finding (1 low)`` or ``summary: no findings``."""
    return "summary: " + count_text(counts, noun.removesuffix("s"))


#: text lists findings at or above this severity by default and counts the rest per code: below it are the notes
#: (odd but harmless, or facts), which a healthy cluster may show on every partition
LISTED_BY_DEFAULT = Severity.MEDIUM


def by_listing(findings: Iterable[Finding], threshold: Severity) -> tuple[list[Finding], list[Finding]]:
    """``findings`` split into those listed (at or above ``threshold``, worst first) and those only counted."""
    ordered = sorted(findings, key=lambda f: (-int(f.severity), f.file or "", f.position or 0))
    return [f for f in ordered if f.severity >= threshold], [f for f in ordered if f.severity < threshold]


def counted_lines(findings: list[Finding], flag: str) -> list[str]:
    """Findings that are not listed, counted per code with one example each, and how to list them.

    ``flag`` is the option that lists them (``--min-severity``; its value is
    the lowest severity counted).  One line says how many and what lists
    them; then one line per code, worst and most frequent first:
    ``  17 INFO EPOCH_EMPTY_AT_LEO, e.g. FILE: message``.
    """
    if not findings:
        return []
    groups: dict[tuple[Severity, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.severity, f.code), []).append(f)
    lowest, top = min(f.severity for f in findings), max(f.severity for f in findings)
    which = f"at {lowest}" if lowest == top else f"at {lowest} to {top}"
    out = [f"{plural(len(findings), 'finding')} {which}, counted by code ({flag} {lowest} lists them):"]
    for (sev, code), fs in sorted(groups.items(), key=lambda kv: (-int(kv[0][0]), -len(kv[1]), kv[0][1])):
        where = " ".join(_where(fs[0]))
        out.append(f"  {len(fs)} {str(sev).upper()} {code}, e.g. {where + ': ' if where else ''}"
                   f"{printable(fs[0].message)}")
    return out


def parse_fail_on(value: str, option: str = "--fail-on") -> Severity:
    try:
        return Severity.parse(value)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint=option) from None


def exit_for(findings: Iterable[Finding], threshold: Severity) -> int:
    """1 when any finding is at or above ``threshold``, else 0."""
    return ExitCode.FINDINGS if any(f.severity >= threshold for f in findings) else ExitCode.CLEAN


def echo_findings(findings: Iterable[Finding]) -> None:
    for f in findings:
        click.echo(finding_line(f), err=True)


def stdout_is_terminal() -> bool:
    """Whether standard output is a terminal (not a pipe or a file)."""
    return sys.stdout.isatty()


def number_ranges(ns: Iterable[int]) -> str:
    """Partition numbers as a reader scans them: ``0-4, 7, 9-10``."""
    values = sorted(set(ns))
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ", ".join(out)


def at_restart_text(at_restart: str, timeout_at: int | None) -> str:
    """What a restart does to an open transaction, for its line (``OpenTransaction.at_restart``), or nothing when
    that is not known."""
    if at_restart == "aborted once timed out" and timeout_at is not None:
        from datetime import datetime

        when = datetime.fromtimestamp(timeout_at / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        return f"; at a restart: the coordinator aborts it once timed out ({when} UTC)"
    return "" if at_restart == "unknown" else f"; at a restart: {at_restart}"

