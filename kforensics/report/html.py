"""The report as one self-contained HTML file: inline CSS, inline SVG figures, no script, nothing fetched.

Everything that comes from the evidence (file names, topic names, group
ids, messages) is escaped with :func:`html.escape`; the only unescaped
markup is this module's own and the SVG matplotlib wrote.
"""

from __future__ import annotations

from html import escape

from .model import Figure, Report, Section, Table, Text, cell

#: tables longer than this are folded in a <details> element
COLLAPSE_ROWS = 40

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:1.5em;
color:#212121;background:#fff;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #b71c1c;padding-bottom:.2em;margin-top:2em}
.sub{color:#555}.gen{color:#888;font-size:.85em}
nav ul{columns:3;list-style:none;padding:0}nav a{color:#0d47a1}
table{border-collapse:collapse;margin:.8em 0;font-size:.85em;min-width:24em}
th,td{border:1px solid #ccc;padding:.25em .45em;text-align:left;vertical-align:top;overflow-wrap:break-word}
td.long{word-break:break-all;min-width:16em}.scroll{overflow-x:auto}
th{background:#eceff1;position:sticky;top:0}tr:nth-child(even) td{background:#fafafa}
caption,.caption{text-align:left;font-weight:600;padding:.3em 0;margin:.8em 0 .2em}
details{margin:.8em 0}summary{cursor:pointer;font-weight:600}.note{color:#777;font-style:italic}
figure{margin:1em 0}figure svg{max-width:100%;height:auto}figcaption{color:#444;font-size:.9em}
td.num{text-align:right;font-variant-numeric:tabular-nums}
"""


def render_html(report: Report) -> str:
    """The whole document (UTF-8 text, ends with a newline)."""
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{escape(report.title)}</title>", f"<style>{_CSS}</style>", "</head>", "<body>",
           f"<h1>{escape(report.title)}</h1>", f'<p class="sub">{escape(report.subtitle)}</p>',
           f'<p class="gen">{escape(report.generated)}</p>', _toc(report)]
    for s in report.sections:
        out.append(_section(s))
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def _toc(report: Report) -> str:
    items = "".join(f'<li><a href="#{escape(s.id)}">{escape(s.title)}</a></li>' for s in report.sections)
    return f'<nav id="contents"><ul>{items}</ul></nav>'


def _section(s: Section) -> str:
    parts = [f'<section id="{escape(s.id)}">', f"<h2>{escape(s.title)}</h2>"]
    for b in s.blocks:
        if isinstance(b, Text):
            parts.append(f"<p>{escape(b.text)}</p>")
        elif isinstance(b, Table):
            parts.append(_table(b))
        elif isinstance(b, Figure):
            parts.append(_figure(b))
    parts.append("</section>")
    return "\n".join(parts)


def _table(t: Table) -> str:
    cap = f"<caption>{escape(t.caption)}</caption>" if t.caption else ""
    if not t.rows:
        return (f'<p class="caption">{escape(t.caption)}</p>' if t.caption else "") + '<p class="note">none</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in t.headers)
    rows = []
    for r in t.rows:
        tds = "".join(_td(c) for c in r)
        rows.append(f"<tr>{tds}</tr>")
    note = f'<p class="note">{escape(t.note)}</p>' if t.note else ""
    body = (f'<div class="scroll"><table>{cap}<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
            f"</table></div>{note}")
    if len(t.rows) > COLLAPSE_ROWS:
        # long lists (every file, every finding) folded: the page stays readable, printing unfolds nothing lost
        return f"<details><summary>{escape(t.caption or 'table')}: {len(t.rows)} rows</summary>{body}</details>"
    return body


def _td(c: object) -> str:
    """One cell: numbers right-aligned; long unbroken text (paths, digests) may break anywhere, words never."""
    if isinstance(c, int) and not isinstance(c, bool):
        return f'<td class="num">{escape(cell(c))}</td>'
    text = cell(c)
    if max((len(w) for w in text.split()), default=0) > 30:
        return f'<td class="long">{escape(text)}</td>'
    return f"<td>{escape(text)}</td>"


def _figure(f: Figure) -> str:
    # the SVG is matplotlib's own output (no evidence text reaches it unescaped: matplotlib escapes its text)
    svg = f.svg[f.svg.find("<svg"):] if "<svg" in f.svg else f.svg
    return f'<figure>{svg}<figcaption>{escape(f.caption)}</figcaption></figure>'
