"""What every command shares: finding lines, text escaping, summary lines, the exit-code rule."""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Iterable

import click

from ..findings import Finding, Severity
from . import EXIT_CLEAN, EXIT_FINDINGS

SEVERITIES = [str(s) for s in Severity]


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


def finding_line(f: Finding) -> str:
    """One finding as text: ``SEVERITY CODE where: message`` (``SEVERITY CODE: message`` when it is in no file)."""
    where = [printable(f.file)] if f.file else []
    if f.position is not None:
        where.append(f"@ byte {f.position}")
    elif f.line is not None:
        where.append(f"line {f.line}")
    return " ".join([str(f.severity).upper(), f.code, *where]) + f": {printable(f.message)}"


def severity_counts(findings: Iterable[Finding]) -> dict[str, int]:
    counts = {s: 0 for s in reversed(SEVERITIES)}
    for f in findings:
        counts[str(f.severity)] += 1
    return counts


def summary_line(counts: dict[str, int], noun: str = "findings") -> str:
    """``summary: 2 findings (1 high, 1 low)`` or ``summary: no findings``."""
    total = sum(counts.values())
    if not total:
        return f"summary: no {noun}"
    parts = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    return f"summary: {total} {noun} ({parts})"


def parse_fail_on(value: str, option: str = "--fail-on") -> Severity:
    try:
        return Severity.parse(value)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint=option) from None


def exit_for(findings: Iterable[Finding], threshold: Severity) -> int:
    """1 when any finding is at or above ``threshold``, else 0."""
    return EXIT_FINDINGS if any(f.severity >= threshold for f in findings) else EXIT_CLEAN


def echo_findings(findings: Iterable[Finding]) -> None:
    for f in findings:
        click.echo(finding_line(f), err=True)


def raised_in(e: BaseException, *modules: str) -> bool:
    """Whether ``e`` was raised by code of one of ``modules`` itself (not by something they called)."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_globals.get("__name__") in modules


def stdout_is_terminal() -> bool:
    """Whether standard output is a terminal (not a pipe or a file)."""
    return sys.stdout.isatty()
