"""Build a report from the replay's inputs or from Parquet tables, and write it as HTML and Markdown."""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import Any

from .. import __version__
from .model import Report


def generation_line() -> str:
    """The one line that differs between two runs on the same evidence."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"Generated {now} by kforensics {__version__}"


def build_from_replay(doc: dict[str, Any], rep: Any, evidence: list[str], *,
                      title: str | None = None, salvage: Any = None,
                      salvage_command: str | None = None) -> tuple[Report, bool]:
    """The report of a replay: ``doc`` is the document ``replay --format json`` prints, ``rep`` the typed
    ReplayReport, ``evidence`` the inputs as named, ``salvage`` the salvage summary (None: not run); and whether
    ``replay`` would exit 1 on it."""
    from ..verdict_rules import fails_replay
    from .evidence import evidence_files
    from .from_replay import ReplayEvidence, read_lost_times, replay_sections

    ev = ReplayEvidence(doc, evidence_files(evidence), rep, salvage=salvage)
    if salvage_command:
        ev.salvage_command = salvage_command
    read_lost_times(ev)
    clusters = sorted({b.get("cluster_id") for b in doc.get("brokers") or [] if b.get("cluster_id")})
    report = Report(title or "Incident report" + (f": {', '.join(clusters)}" if clusters else ""),
                    f"kforensics replay of {len(doc.get('brokers') or [])} brokers with Kafka "
                    f"{doc.get('kafka_version')} rules; inputs: {', '.join(evidence)}",
                    replay_sections(ev), generation_line())
    codes = [v["code"] for p in doc.get("partitions") or [] for r in p["replicas"] for v in r["verdicts"]]
    return report, fails_replay(codes, (f["code"] for f in doc.get("findings") or []))


def build_from_tables(path: str, *, title: str | None = None) -> tuple[Report, bool]:
    """The report of the Parquet tables in ``path`` (``scan --out`` or ``spark --out``), and whether their
    verdicts and impact fail a replay."""
    from .from_tables import load_tables, table_sections

    t = load_tables(path)
    sections, failing = table_sections(t)
    report = Report(title or "Fleet report", f"kforensics tables in {path}: {', '.join(sorted(t.present))}",
                    sections, generation_line())
    return report, failing


def write_report(report: Report, *, html_path: str | None = None, markdown_path: str | None = None) -> None:
    """Write the report's HTML and/or Markdown (UTF-8, written whole then renamed into place)."""
    from .html import render_html
    from .markdown import render_markdown

    if html_path:
        _write(html_path, render_html(report))
    if markdown_path:
        _write(markdown_path, render_markdown(report))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _write(path: str, text: str) -> None:
    # an undecodable byte of a file name (surrogateescape) as the text \xNN, as the JSON and tables show it
    text = _SURROGATE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}" if ord(m.group()) >= 0xDC80
                          else f"\\u{ord(m.group()):04x}", text)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    os.replace(tmp, path)
