"""The report as Markdown for tickets: the same sections, tables and numbers as the HTML; figures by caption."""

from __future__ import annotations

from .model import Figure, Report, Table, Text, cell


def _md(text: str) -> str:
    """Text safe inside a Markdown table cell or paragraph: pipes, backslashes and markup characters escaped."""
    out = text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    for ch in "`*_<>[]":
        out = out.replace(ch, "\\" + ch)
    return out


def render_markdown(report: Report) -> str:
    """The whole document (ends with a newline)."""
    out = [f"# {_md(report.title)}", "", _md(report.subtitle), "", report.generated, "", "## Contents", ""]
    out += [f"- [{_md(s.title)}](#{s.id})" for s in report.sections]
    for s in report.sections:
        out += ["", f'<a id="{s.id}"></a>', "", f"## {_md(s.title)}", ""]
        for b in s.blocks:
            if isinstance(b, Text):
                out += [_md(b.text), ""]
            elif isinstance(b, Table):
                out += _table(b)
            elif isinstance(b, Figure):
                out += [f"*Figure (in the HTML report): {_md(b.caption)}*", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _table(t: Table) -> list[str]:
    out = []
    if t.caption:
        out += [f"**{_md(t.caption)}**", ""]
    if not t.rows:
        return out + ["none", ""]
    out.append("| " + " | ".join(_md(h) for h in t.headers) + " |")
    out.append("|" + "|".join("---:" if _numeric(t, i) else "---" for i in range(len(t.headers))) + "|")
    out += ["| " + " | ".join(_md(cell(c)) for c in r) + " |" for r in t.rows]
    if t.note:
        out += ["", f"*{_md(t.note)}*"]
    out.append("")
    return out


def _numeric(t: Table, i: int) -> bool:
    vals = [r[i] for r in t.rows if i < len(r) and r[i] is not None]
    return bool(vals) and all(isinstance(v, int) and not isinstance(v, bool) for v in vals)
