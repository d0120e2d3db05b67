"""Helpers of the report tests: run the commands, parse the HTML's sections and the Markdown's tables."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from tests.conftest import ROOT

GENERATED = re.compile(r"^.*Generated \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ by kforensics .*$", re.M)


def kforensics(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kforensics", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def replay_json(*inputs: str) -> dict:
    r = kforensics("replay", *inputs, "--format", "json")
    assert r.returncode in (0, 1), r.stderr[-2000:]
    return json.loads(r.stdout)


def report(out_dir: Path, stem: str, *inputs: str) -> tuple[str, str, subprocess.CompletedProcess]:
    html, md = out_dir / f"{stem}.html", out_dir / f"{stem}.md"
    r = kforensics("report", *inputs, "--out", str(html), "--markdown", str(md))
    assert r.returncode in (0, 1), r.stderr[-2000:]
    return html.read_text(encoding="utf-8"), md.read_text(encoding="utf-8"), r


def without_generation_line(text: str) -> str:
    lines = GENERATED.findall(text)
    assert len(lines) == 1, f"exactly one generation line, got {lines}"
    return GENERATED.sub("", text)


class Sections(HTMLParser):
    """Every element id, the section ids, whether any script, stylesheet link or remote reference is present."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.sections: list[str] = []
        self.remote: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "section":
            self.sections.append(a.get("id"))
        if tag in ("script", "link", "iframe", "img", "object", "embed"):
            self.remote.append(f"<{tag}>")
        for k in ("src", "href", "xlink:href"):
            v = a.get(k) or ""
            # in-page anchors and inline data (the SVG's embedded raster of a heatmap) need no network
            if k in a and not v.startswith(("#", "data:")):
                self.remote.append(f"{tag} {k}={v[:80]}")


def parse_html(text: str) -> Sections:
    p = Sections()
    p.feed(text)
    p.close()
    return p


def md_unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def md_tables(md: str) -> dict[str, list[dict[str, str]]]:
    """Every Markdown table under its bold caption (or its section's title), as rows of header -> cell."""
    out: dict[str, list[dict[str, str]]] = {}
    caption = None
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            caption = md_unescape(line[3:])
        elif line.startswith("**") and line.endswith("**"):
            caption = md_unescape(line[2:-2])
        elif line.startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|-") or \
                line.startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            headers = _cells(line)
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("| "):
                rows.append(dict(zip(headers, _cells(lines[i]))))
                i += 1
            out[caption] = rows
            continue
        i += 1
    return out


def _cells(line: str) -> list[str]:
    parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [md_unescape(p.strip()) for p in parts]
