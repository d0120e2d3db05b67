"""The fleet report's drill-down: one section per worst partition (linked from the contents), with each
replica's log before and after the replay and the offsets each verdict names, drawn from the ``verdicts``
table alone (the tables hold no batch runs: the full replica timeline is ``kforensics replay`` on its
snapshots, or notebook 02)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..verdict_rules import ORDER
from .model import Section, ranges_text

#: partitions drilled into, the worst first
DRILL = 8


def _int(value: Any) -> int | str:
    return "-" if value is None or pd.isna(value) else int(value)


def _offsets(value: Any) -> list[list[int]]:
    try:
        return [list(r) for r in json.loads(value)] if isinstance(value, str) else []
    except ValueError:
        return []


#: the verdicts table's columns the drill-down reads, and what stands in where a table lacks one
_DEFAULTS: dict[str, Any] = {"log_end_offset_before": 0, "log_end_offset_after": 0, "role": "-", "detail": "",
                             "records": 0, "offsets": "[]", "leader_how": None}


def _complete(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with every column the drill-down reads (tables written by older runs may lack some)."""
    return rows.assign(**{c: d for c, d in _DEFAULTS.items() if c not in rows.columns})


def partition_verdicts_figure(rows: pd.DataFrame, title: str) -> Figure:
    """Per replica: its log as found (grey), after the replay (outline) and each verdict's offsets (coloured)."""
    from ..plots import VERDICT_COLORS

    rows = _complete(rows)
    brokers = sorted({int(b) for b in rows["broker_id"].dropna()})
    fig = Figure(figsize=(9.0, 0.9 + 0.55 * max(1, len(brokers))), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    shown: dict[str, Any] = {}
    for y, b in enumerate(brokers):
        mine = rows[rows["broker_id"] == b]
        before = int(mine["log_end_offset_before"].fillna(0).max())
        after = int(mine["log_end_offset_after"].fillna(0).max())
        ax.barh(y, before, height=0.5, color="#e0e0e0", edgecolor="none")
        ax.barh(y, after, height=0.5, fill=False, edgecolor="#424242", linewidth=0.8)
        marked = [r for r in mine.itertuples() if _offsets(r.offsets)]
        lane = 0.44 / max(1, len(marked))  # each verdict in its own lane: overlapping ranges stay visible
        for k, r in enumerate(marked):
            for a, z in _offsets(r.offsets):
                shown[r.verdict] = ax.barh(y - 0.22 + lane * (k + 0.5), z - a + 1, left=a, height=lane * 0.9,
                                           color=VERDICT_COLORS.get(r.verdict, "#000000"))
    ax.set_yticks(range(len(brokers)), [f"broker {b}" + (" (leader)" if (rows[rows["broker_id"] == b]["role"]
                                                                          == "leader").any() else "")
                                        for b in brokers], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("offset")
    ax.set_title(title, fontsize=9)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if shown:
        ax.legend([shown[k] for k in sorted(shown, key=ORDER.index)], sorted(shown, key=ORDER.index), fontsize=7,
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def drill_sections(verdicts: pd.DataFrame, worst: pd.DataFrame) -> list[Section]:
    """One section per partition among the first :data:`DRILL` of ``worst`` (the fleet's worst partitions)."""
    from .figures import svg_figure

    out = []
    for i, p in enumerate(worst.head(DRILL).itertuples()):
        rows = verdicts[(verdicts["cluster"].fillna("") == ("" if p.cluster is None else p.cluster))
                        & (verdicts["topic"] == p.topic) & (verdicts["partition"] == p.partition)]
        if rows.empty:
            rows = verdicts[(verdicts["topic"] == p.topic) & (verdicts["partition"] == p.partition)]
        rows = _complete(rows)
        name = f"{p.topic}-{p.partition}"
        s = Section(f"partition-{i + 1}", f"Worst partition {i + 1}: {name} ({p.cluster}), {p.worst_verdict}")
        how = next((h for h in rows["leader_how"].dropna()), "-")
        s.text(f"Leader {p.leader} ({how}); {int(p.records_lost)} records lost, offsets "
               f"{ranges_text(p.offsets_lost)}.")
        s.blocks.append(svg_figure(partition_verdicts_figure(rows, f"{name}: each replica's log as found (grey), "
                                                                   "after the replay (outline), verdicts (colour)"),
                                   f"The replicas of {name} and what each verdict names"))
        s.table(["broker", "role", "verdict", "offsets", "records", "log end before", "after", "detail"],
                [[int(r.broker_id), r.role, r.verdict, ranges_text(_offsets(r.offsets)), _int(r.records),
                  _int(r.log_end_offset_before), _int(r.log_end_offset_after), r.detail]
                 for r in rows.sort_values(["broker_id", "verdict"]).itertuples()],
                caption=f"Verdicts of {name}")
        out.append(s)
    return out
