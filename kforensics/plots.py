"""Plots and tables for investigation notebooks (matplotlib, pandas): a front end, like the CLI.

Tested code, so notebooks stay thin: each function takes the typed results
the library produces (a :class:`~kforensics.scan.model.ScanReport`, a
:class:`~kforensics.replay.report.ReplayReport` or one of its partitions, the
Spark job's Parquet tables) and returns a matplotlib ``Figure`` or a pandas
``DataFrame``; nothing is shown or printed here.  The backend is left to the
environment: a notebook shows the figures inline, a script saves them.

Offsets are drawn as cells centred on their number (offset 3 spans 2.5–3.5),
so the ticks under them are whole offsets; positions *between* offsets (a
high watermark, a log end, where truncation or recovery cuts) are drawn on
the boundary before that offset.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter, MaxNLocator

from .catalogue import VERDICTS

# the fleet view (records and partitions lost or at risk by cluster and topic), kept in its own module; the
# notebooks reach it here, with the rest of the plots
from .plots_fleet import fleet_heatmap as fleet_heatmap
from .plots_fleet import fleet_losses_frame as fleet_losses_frame
from .plots_fleet import fleet_matrix as fleet_matrix
from .plots_fleet import fleet_partitions_frame as fleet_partitions_frame
from .plots_fleet import groups_by_topic_frame as groups_by_topic_frame
from .plots_fleet import loss_times as loss_times
from .plots_fleet import lost_batches_frame as lost_batches_frame
from .replay.engine import EpochRun, PartitionReplay, ReplicaOutcome
from .replay.report import ReplayReport
from .scan.model import ScanReport
from .severity import NAMES_WORST_FIRST as SEVERITY_ORDER
from .verdict_rules import ELECTION as ELECTION_VERDICTS
from .verdict_rules import LOSS as LOSS_VERDICTS
from .verdict_rules import ORDER as VERDICT_ORDER
from .verdict_rules import worst

VERDICT_COLORS = {"OK": "#4caf50", "NO_EPOCHS": "#9e9e9e", "DISCARD_UNCOMMITTED": "#ffeb3b",
                  "POSSIBLY_COMMITTED": "#ff9800", "LOST_TO_RECOVERY": "#795548", "LEADER_LACKS_COMMITTED": "#3f51b5",
                  "UNCLEAN_ELECTION": "#9c27b0", "NOT_CONVERGING": "#607d8b", "FORK": "#e91e63",
                  "LOSS_COMMITTED": "#d32f2f", "LOG_LOAD_FAILS": "#212121", "NOT_JUDGED": "#bdbdbd",
                  "NO_LEADER": "#00bcd4", "COMMITTED_NOT_HELD": "#880e4f",
                  "REMOTE_SEGMENTS_UNREACHABLE": "#6d4c41"}
SEVERITY_COLORS = {"critical": "#b71c1c", "high": "#f44336", "medium": "#ff9800", "low": "#ffeb3b",
                   "info": "#90caf9"}
assert set(VERDICT_COLORS) == set(VERDICTS), "every verdict has a colour"

_MARKS: dict[str, dict[str, Any]] = {"hw": dict(color="black", marker="v", linestyle="none", markersize=7),
          "cut": dict(color="red", linewidth=2.5),
          "recovery": dict(color=VERDICT_COLORS["LOST_TO_RECOVERY"], linewidth=2.5, linestyle=(0, (2, 1))),
          "unclean": dict(color=VERDICT_COLORS["UNCLEAN_ELECTION"], linewidth=1.5, linestyle="--")}


# ---------------------------------------------------------------- one broker (scan)

def partitions_frame(report: ScanReport) -> pd.DataFrame:
    """One row per partition: the facts a first look needs, worst finding included."""
    rows = []
    for p in report.partitions:
        worst = p.worst()
        rows.append({"partition": p.dir_name, "segments": len(p.segments), "batches": p.batch_count,
                     "log_start": p.log_start_offset, "leo": p.log_end_offset, "hw": p.high_watermark,
                     "uncommitted": p.uncommitted, "recovery_lost_records": p.recovery.lost_records,
                     "recovery_lost_committed": p.recovery.lost_committed_records,
                     "epochs_written": p.epoch_cache_written, "epochs_rebuilt": p.epoch_cache_rebuilt,
                     "findings": len(p.findings), "worst": None if worst is None else str(worst)})
    return pd.DataFrame(rows).sort_values("partition").reset_index(drop=True)


def _severity_column(values: pd.Series) -> pd.Categorical:
    return pd.Categorical(values, categories=SEVERITY_ORDER, ordered=True)


def findings_frame(report: ScanReport) -> pd.DataFrame:
    """Every finding, worst first (``severity`` is an ordered categorical: critical, high, medium, low, info)."""
    df = pd.DataFrame([{"severity": str(f.severity), "code": f.code, "file": f.file, "position": f.position,
                        "message": f.message} for f in report.all_findings()],
                      columns=["severity", "code", "file", "position", "message"])
    df["severity"] = _severity_column(df["severity"])
    return df.sort_values(["severity", "code", "file"]).reset_index(drop=True)


def severity_counts(findings: pd.DataFrame) -> pd.Series:
    """Findings per severity, worst first, every severity listed (0 when none)."""
    return findings["severity"].value_counts(sort=False).reindex(SEVERITY_ORDER, fill_value=0).rename("findings")


def findings_by_partition(report: ScanReport, ax: Axes | None = None) -> Figure:
    """Stacked bars of findings per partition (and the log dir's own), coloured by severity, worst first."""
    rows = [{"where": "(log dir, broker)", "severity": str(f.severity)} for f in report.findings]
    rows += [{"where": p.dir_name, "severity": str(f.severity)} for p in report.partitions for f in p.findings]
    fig = None
    if ax is None:
        n = len({r["where"] for r in rows})
        fig, ax = plt.subplots(figsize=(8, 1.2 + 0.3 * max(1, n)), layout="constrained")
    if not rows:
        _empty(ax, "no findings")
        return fig or cast(Figure, ax.figure)  # callers draw on a Figure's axes, not a SubFigure's
    df = pd.DataFrame(rows)
    df["severity"] = _severity_column(df["severity"])
    counts = df.groupby(["where", "severity"], observed=False).size().unstack("severity", fill_value=0)
    shown = [s for s in SEVERITY_ORDER if counts[s].sum()]
    counts = counts[shown]
    counts = counts.loc[sorted(counts.index, key=lambda w: (w != "(log dir, broker)", w))]
    left = pd.Series(0, index=counts.index)
    for sev in shown:
        ax.barh(range(len(counts)), counts[sev], left=left, color=SEVERITY_COLORS[sev], edgecolor="black",
                linewidth=0.3, label=sev)
        left = left + counts[sev]
    ax.set_yticks(range(len(counts)), list(counts.index), fontsize=8)
    ax.invert_yaxis()
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("findings")
    ax.set_title(f"findings per partition, broker {report.broker.node_id}")
    ax.legend(title="severity", loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return fig or cast(Figure, ax.figure)  # callers draw on a Figure's axes, not a SubFigure's


def epoch_cache_frame(report: ScanReport, dir_name: str) -> pd.DataFrame:
    """The leader-epoch cache of one partition, as written and as rebuilt from its batches, side by side."""
    p = next(x for x in report.partitions if x.dir_name == dir_name)
    written = dict(p.epoch_cache_written or [])
    rebuilt = dict(p.epoch_cache_rebuilt)
    epochs = sorted(set(written) | set(rebuilt))
    return pd.DataFrame({"epoch": epochs, "checkpoint_start": [written.get(e) for e in epochs],
                         "rebuilt_start": [rebuilt.get(e) for e in epochs]}, dtype="Int64")


# ---------------------------------------------------------------- replay (several brokers)

def worst_verdict(codes: list[str]) -> str:
    """The worst of a replica's verdict codes, by the verdicts' order."""
    return worst(codes)


def focus_partition(report: ReplayReport) -> PartitionReplay:
    """The partition most worth a look: the worst verdict, then the most replicas, then the longest log."""
    if not report.partitions:
        raise ValueError("the replay found no partition")

    def key(p: PartitionReplay) -> tuple[int, int, int, int]:
        worst = max(VERDICT_ORDER.index(worst_verdict([v.code for v in r.verdicts])) for r in p.replicas)
        leo = max(r.log_end_offset_before for r in p.replicas)
        return worst, len(p.replicas), leo, -p.partition

    return max(report.partitions, key=key)


def replicas_frame(p: PartitionReplay) -> pd.DataFrame:
    """One row per replica: its log end as found, at restart and after the replay, its HW and its verdicts."""
    rows = []
    for r in sorted(p.replicas, key=lambda r: r.broker_id):
        codes = [v.code for v in r.verdicts]
        rows.append({"broker": r.broker_id, "role": r.role, "leo_as_found": r.log_end_offset_before,
                     "leo_at_restart": r.log_end_offset_at_restart, "leo_after": r.log_end_offset_after,
                     "high_watermark": r.high_watermark, "worst": worst_verdict(codes), "verdicts": codes,
                     "records": sum(v.records for v in r.verdicts)})
    return pd.DataFrame(rows, columns=["broker", "role", "leo_as_found", "leo_at_restart", "leo_after",
                                       "high_watermark", "worst", "verdicts", "records"]).astype(
        {"leo_at_restart": "Int64", "high_watermark": "Int64"})


def verdicts_frame(p: PartitionReplay) -> pd.DataFrame:
    """One row per verdict of each replica: code, cause, offsets, records, detail and facts."""
    rows = [{"broker": r.broker_id, "role": r.role, "verdict": v.code, "cause": v.cause, "offsets": v.offsets,
             "records": v.records, "detail": v.detail, "facts": v.facts}
            for r in sorted(p.replicas, key=lambda r: r.broker_id) for v in r.verdicts]
    return pd.DataFrame(rows, columns=["broker", "role", "verdict", "cause", "offsets", "records", "detail", "facts"])


def elections_frame(p: PartitionReplay) -> pd.DataFrame:
    """The controller's record of this partition (empty when no KRaft metadata log was read)."""
    cols = ["metadata_offset", "record", "leader", "leader_epoch", "partition_epoch", "isr", "elr",
            "leader_recovery_state", "leader_changed", "unclean"]
    rows = [{"metadata_offset": e.offset, "record": e.record, "leader": e.leader, "leader_epoch": e.leader_epoch,
             "partition_epoch": e.partition_epoch, "isr": e.isr, "elr": e.elr,
             "leader_recovery_state": e.leader_recovery_state, "leader_changed": e.leader_changed,
             "unclean": e.unclean} for e in p.timeline or []]
    return pd.DataFrame(rows, columns=cols)


def _clip(runs: list[EpochRun], end: int) -> list[EpochRun]:
    """The runs of a log cut at ``end`` (recovery cuts the tail: the log at restart is a prefix)."""
    return [EpochRun(r.start, min(r.end, end - 1), r.epoch) for r in runs if r.start < end]


def _epoch_colors(epochs: list[int]) -> dict[int, Any]:
    """Light colours, one per epoch, so the saturated verdict colours drawn over them stay visible."""
    n = len(epochs)
    if n <= 11:
        light = [plt.get_cmap("Set3")(i) for i in (0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)]  # not its pale yellow
        return {e: light[i] for i, e in enumerate(epochs)}
    cmap = plt.get_cmap("Spectral")
    return {e: tuple(0.45 + 0.55 * c for c in cmap(i / (n - 1))[:3]) + (1.0,) for i, e in enumerate(epochs)}


def _epoch_label(e: int) -> str:
    return "no epoch (magic 0/1)" if e < 0 else f"epoch {e}"


def _shows_restart(r: ReplicaOutcome) -> bool:
    """Whether the log at restart differs from the log as found (or does not load)."""
    return (r.role == "offline" or r.log_end_offset_at_restart is None
            or r.log_end_offset_at_restart != r.log_end_offset_before
            or any(v.code == "LOST_TO_RECOVERY" for v in r.verdicts))


def unclean_elections(p: PartitionReplay) -> list[dict[str, Any]]:
    """Elections the controller's record marks unclean, each with the data offset where its epoch begins.

    The offset is where the elected replica's log ended when it was elected
    (the replay's election: the verdict's facts), else the first offset
    written in that epoch on any replica, else None (the logs show no trace).
    """
    out = []
    for e in p.timeline or []:
        if not (e.unclean and e.leader_changed):
            continue
        offset = None
        if e.leader_epoch == p.leader_epoch and e.leader == p.leader:
            leader = next((r for r in p.replicas if r.broker_id == p.leader), None)
            if leader is not None:
                facts = next((v.facts for v in leader.verdicts if v.code == "UNCLEAN_ELECTION"), {})
                offset = facts.get("log_end_offset", leader.log_end_offset_at_restart)
        if offset is None:
            starts = [run.start for r in p.replicas for run in r.log_before + r.log_after
                      if run.epoch == e.leader_epoch]
            offset = min(starts) if starts else None
        out.append({"metadata_offset": e.offset, "leader": e.leader, "leader_epoch": e.leader_epoch,
                    "offset": offset})
    return out


def replica_timeline(p: PartitionReplay, ax: Axes | None = None, *, offsets: tuple[int, int] | None = None) -> Figure:
    """Per replica its log as found, at restart (when recovery changes it) and after the replay, by epoch.

    Marks: each replica's checkpointed high watermark, where its recovery cuts
    at restart, where truncation cuts, the offsets each verdict covers
    (hatched in the verdict's colour), the replica's worst verdict (the strip
    on the right), and an election the controller's record shows as unclean.
    ``offsets`` (first, last) zooms on a range.
    """
    fig = None
    replicas = sorted(p.replicas, key=lambda r: r.broker_id)
    rows = _timeline_rows(replicas)
    if ax is None:
        fig, ax = plt.subplots(figsize=(11, 1.4 + 0.55 * len(rows) + 0.3 * len(replicas)), layout="constrained")
    epochs = sorted({run.epoch for _, _, runs in rows for run in runs})
    color = _epoch_colors(epochs)
    drawn = _draw_rows(ax, rows, color)
    used, hatched = _draw_replica_marks(ax, replicas, drawn)
    unclean = unclean_elections(p)
    _draw_unclean(ax, unclean, drawn)
    _set_timeline_axes(ax, p, offsets, drawn, unclean)
    worst_shown = _draw_worst_strip(ax, replicas, drawn.bounds)
    # the legend: every epoch, every verdict, every mark drawn
    handles: list[Any] = [Patch(facecolor=color[e], edgecolor="black", linewidth=0.3, label=_epoch_label(e))
                          for e in epochs]
    handles += _verdict_handles(replicas, worst_shown, hatched)
    handles += _mark_handles(replicas, used, unclean)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.04, 1.0), fontsize=8,
              ncol=1 if len(handles) <= 22 else 2, borderaxespad=0)
    return fig or cast(Figure, ax.figure)  # callers draw on a Figure's axes, not a SubFigure's


def _timeline_rows(replicas: list[ReplicaOutcome]) -> list[tuple[ReplicaOutcome, str, list[EpochRun]]]:
    """Each replica's rows: its log as found, at restart when recovery changes it, and after the replay."""
    rows: list[tuple[ReplicaOutcome, str, list[EpochRun]]] = []
    for r in replicas:
        rows.append((r, "as found", r.log_before))
        if _shows_restart(r):
            if r.log_end_offset_at_restart is None:
                rows.append((r, "at restart: does not load", []))
            else:
                rows.append((r, "at restart", _clip(r.log_before, r.log_end_offset_at_restart)))
        rows.append((r, "after replay", r.log_after))
    return rows


@dataclass
class _Drawn:
    """Where the rows of a replica timeline were drawn, and the offsets drawn (for the x range)."""

    ys: dict[tuple[int, str], float] = field(default_factory=dict)  # (broker, row kind) -> y
    labels: list[tuple[float, str]] = field(default_factory=list)
    bounds: list[tuple[float, float]] = field(default_factory=list)  # each replica's rows, for the verdict strip
    xs: list[float] = field(default_factory=list)
    y: float = 0.0  # the y below the last row


def _draw_rows(ax: Axes, rows: list[tuple[ReplicaOutcome, str, list[EpochRun]]], color: dict[int, Any]) -> _Drawn:
    """Each row's runs of epochs as bars (a log that does not load as a hatched box), with its label."""
    d = _Drawn()
    for i, (r, when, runs) in enumerate(rows):
        if i and rows[i - 1][0] is not r:
            d.y += 0.5
        y = d.y
        d.ys[(r.broker_id, when.split(":")[0])] = y
        for run in runs:
            ax.barh(y, run.end - run.start + 1, left=run.start - 0.5, height=0.7, color=color[run.epoch],
                    edgecolor="black", linewidth=0.3)
            d.xs += [run.start, run.end]
        if when.startswith("at restart:"):
            a = min((run.start for run in r.log_before), default=0)
            b = max((run.end for run in r.log_before), default=a)
            ax.add_patch(Rectangle((a - 0.5, y - 0.35), b - a + 1, 0.7, facecolor="#eeeeee", edgecolor="#424242",
                                   hatch="xx", linewidth=0.8))
        role = {"leader": "leader", "offline": "offline", "unknown": "not judged",
                "waiting": "no leader"}.get(r.role, "follower")
        d.labels.append((y, f"broker {r.broker_id} ({role})\n{when.split(':')[0]}"))
        if i + 1 == len(rows) or rows[i + 1][0] is not r:  # the replica's last row
            d.bounds.append((d.ys[(r.broker_id, "as found")] - 0.45, y + 0.45))
            if i + 1 < len(rows):
                ax.axhline(y + 0.75, color="#bdbdbd", linewidth=0.8)
        d.y += 1
    return d


def _draw_replica_marks(ax: Axes, replicas: list[ReplicaOutcome], d: _Drawn) -> tuple[set[str], bool]:
    """The high watermarks, recovery and truncation cuts, and the offsets each verdict covers.

    Returns the kinds of cut drawn and whether any verdict's offsets were hatched (for the legend).
    """
    used: set[str] = set()
    hatched = False
    for r in replicas:
        found = d.ys[(r.broker_id, "as found")]
        before_election = d.ys.get((r.broker_id, "at restart"), found)
        if r.role == "offline":
            before_election = found
        after = d.ys[(r.broker_id, "after replay")]
        if r.high_watermark is not None:
            ax.plot([r.high_watermark - 0.5], [found - 0.47], zorder=5, **_MARKS["hw"])
            d.xs.append(r.high_watermark)
        if r.log_end_offset_at_restart is not None and (
                r.log_end_offset_at_restart < r.log_end_offset_before
                or any(v.code == "LOST_TO_RECOVERY" for v in r.verdicts)):
            x = r.log_end_offset_at_restart - 0.5
            ax.plot([x, x], [found - 0.5, found + 0.5], zorder=5, **_MARKS["recovery"])
            d.xs.append(r.log_end_offset_at_restart)
            used.add("recovery")
        for dec in r.decisions:
            if dec.truncate_to is not None and dec.truncate_to < dec.leo_before:
                x = dec.truncate_to - 0.5
                ax.plot([x, x], [before_election - 0.5, before_election + 0.5], zorder=5, **_MARKS["cut"])
                d.xs.append(dec.truncate_to)
                used.add("cut")
        for v in r.verdicts:
            if not v.offsets:
                continue
            row = (found if v.code == "LOST_TO_RECOVERY" else after if v.code == "FORK" else before_election)
            for a, b in v.offsets:
                ax.add_patch(Rectangle((a - 0.5, row - 0.35), b - a + 1, 0.7, facecolor="none",
                                       edgecolor=VERDICT_COLORS[v.code], hatch="///", linewidth=1.5))
                d.xs += [a, b]
                hatched = True
    return used, hatched


def _draw_unclean(ax: Axes, unclean: list[dict[str, Any]], d: _Drawn) -> None:
    """A vertical line at each unclean election's offset, and a star on its leader's row after the replay."""
    for u in unclean:
        if u["offset"] is None:
            continue
        x = u["offset"] - 0.5
        ax.axvline(x, zorder=4, **_MARKS["unclean"])
        leader_row = d.ys.get((u["leader"], "after replay"))
        if leader_row is not None:
            ax.plot([x], [leader_row], marker="*", markersize=16, color=VERDICT_COLORS["UNCLEAN_ELECTION"],
                    markeredgecolor="black", linestyle="none", zorder=6)
        d.xs.append(u["offset"])


def _set_timeline_axes(ax: Axes, p: PartitionReplay, offsets: tuple[int, int] | None, d: _Drawn,
                       unclean: list[dict[str, Any]]) -> None:
    """Whole offsets under the cells (no scientific notation or offset text), the rows' labels and the title."""
    lo: float
    hi: float
    if offsets is not None:
        lo, hi = offsets
    else:
        lo, hi = (min(d.xs), max(d.xs)) if d.xs else (0, 1)
    pad = max(0.6, 0.02 * (hi - lo))
    ax.set_xlim(lo - pad, hi + pad)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=2))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{int(round(x))}"))
    ax.set_yticks([t for t, _ in d.labels], [text for _, text in d.labels], fontsize=8)
    ax.set_ylim(d.y - 0.3, -0.8)
    ax.set_xlabel("offset")
    title = f"{p.topic}-{p.partition}, Kafka {p.kafka_version}: " + leader_title(p)
    if any(u["leader_epoch"] == p.leader_epoch for u in unclean):
        title += ", unclean"
    ax.set_title(title, fontsize=10)


#: how the leader was reached, as a plot's title says it
_HOW_TITLE = {"controller-record": "the controller's record", "predicted": "predicted by the controller's rules",
              "given": "given", "guessed": "guessed: no metadata log"}


def leader_title(p: PartitionReplay) -> str:
    """``broker 2 leads epoch 7 (predicted by the controller's rules: isr)`` or ``nobody leads (offline)``."""
    e = p.election
    if e is not None and e.offline:
        return f"nobody leads (offline, epoch {p.leader_epoch})"
    head = f"broker {p.leader} leads epoch {p.leader_epoch}"
    if e is None:
        return head
    return head + f" ({_HOW_TITLE.get(e.how, e.how)}" + (f": {e.rule})" if e.rule else ")")


def _draw_worst_strip(ax: Axes, replicas: list[ReplicaOutcome], bounds: list[tuple[float, float]]) -> list[str]:
    """The strip right of the axes: each replica's worst verdict.  Returns the verdicts shown."""
    strip = ax.inset_axes((1.005, 0.0, 0.018, 1.0))
    strip.set_ylim(ax.get_ylim())
    strip.set_xlim(0, 1)
    strip.set_axis_off()
    worst_shown = []
    for r, (top, bottom) in zip(replicas, bounds):
        w = worst_verdict([v.code for v in r.verdicts])
        worst_shown.append(w)
        strip.add_patch(Rectangle((0, top), 1, bottom - top, facecolor=VERDICT_COLORS[w], edgecolor="black",
                                  linewidth=0.5))
    return worst_shown


def _verdict_handles(replicas: list[ReplicaOutcome], worst_shown: list[str], hatched: bool) -> list[Any]:
    """The legend's verdicts (in the verdicts' order, the worst shown marked) and the hatching."""
    codes = {v.code for r in replicas for v in r.verdicts}
    handles: list[Any] = [Patch(facecolor=VERDICT_COLORS[c], label=c + (" (worst)" if c in worst_shown else ""))
                          for c in sorted(codes, key=VERDICT_ORDER.index)]
    if hatched:
        handles.append(Patch(facecolor="none", edgecolor="black", hatch="///", label="offsets a verdict covers"))
    return handles


def _mark_handles(replicas: list[ReplicaOutcome], used: set[str], unclean: list[dict[str, Any]]) -> list[Any]:
    """The legend's marks: high watermark, the cuts drawn, a log that does not load, each unclean election."""
    handles: list[Any] = [Line2D([], [], label="high watermark (checkpoint)", **_MARKS["hw"])]
    if "recovery" in used:
        handles.append(Line2D([], [], label="recovery cuts at restart", **_MARKS["recovery"]))
    if "cut" in used:
        handles.append(Line2D([], [], label="truncation cuts", **_MARKS["cut"]))
    if any(r.role == "offline" for r in replicas):
        handles.append(Patch(facecolor="#eeeeee", edgecolor="#424242", hatch="xx", label="log does not load"))
    for u in unclean:
        where = "" if u["offset"] is None else f" at offset {u['offset']}"
        handles.append(Line2D([], [], marker="*", markersize=12, color=VERDICT_COLORS["UNCLEAN_ELECTION"],
                              markeredgecolor="black", linestyle="--",
                              label=f"unclean election{where}: broker {u['leader']}, epoch {u['leader_epoch']}\n"
                                    f"(controller's record, metadata offset {u['metadata_offset']})"))
    return handles


def verdict_matrix(report: ReplayReport) -> pd.DataFrame:
    """Worst verdict per (partition, broker)."""
    rows: dict[str, dict[int, str]] = {}
    for p in report.partitions:
        for r in p.replicas:
            rows.setdefault(f"{p.topic}-{p.partition}", {})[r.broker_id] = worst_verdict([v.code for v in r.verdicts])
    m = pd.DataFrame(rows).T.sort_index()
    return m[sorted(m.columns)] if len(m.columns) else m


def divergence_map(report: ReplayReport, ax: Axes | None = None, *, max_rows: int = 40) -> Figure:
    """Partitions x brokers, coloured by each replica's worst verdict, with a legend of the verdicts shown.

    At most ``max_rows`` partitions are drawn, the worst first (the title says
    how many were left out).
    """
    m = verdict_matrix(report)
    total = m.shape[0]
    if total > max_rows:
        worst = m.apply(lambda row: max(VERDICT_ORDER.index(c) for c in row if isinstance(c, str)), axis=1)
        keep = worst.sort_values(ascending=False, kind="stable").index[:max_rows]
        m = m.loc[sorted(keep)]
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(3.5 + 0.9 * max(1, m.shape[1]), 1.2 + 0.3 * max(1, m.shape[0])),
                               layout="constrained")
    for i, (_, row) in enumerate(m.iterrows()):
        for j, code in enumerate(row.tolist()):
            if isinstance(code, str):
                ax.add_patch(Rectangle((j, i), 1, 1, facecolor=VERDICT_COLORS[code], edgecolor="white"))
    ax.set_xlim(0, max(1, m.shape[1]))
    ax.set_ylim(0, max(1, m.shape[0]))
    ax.set_xticks([j + 0.5 for j in range(m.shape[1])], [f"broker {c}" for c in m.columns])
    ax.set_yticks([i + 0.5 for i in range(m.shape[0])], list(m.index), fontsize=8)
    ax.invert_yaxis()
    shown = sorted({c for c in m.values.ravel() if isinstance(c, str)}, key=VERDICT_ORDER.index)
    ax.legend(handles=[Patch(facecolor=VERDICT_COLORS[c], label=c) for c in shown], loc="upper left",
              bbox_to_anchor=(1.0, 1.0), fontsize=8)
    title = "worst verdict per replica"
    if total > m.shape[0]:
        title += f" ({m.shape[0]} of {total} partitions, the worst)"
    ax.set_title(title, fontsize=10)
    return fig or cast(Figure, ax.figure)  # callers draw on a Figure's axes, not a SubFigure's


def lost_records_frame(report: ReplayReport) -> pd.DataFrame:
    """Every lost, discarded or forked record range (one row per record when the replay read digests)."""
    rows = []
    for p in report.partitions:
        for r in p.replicas:
            for v in r.verdicts:
                if v.code not in LOSS_VERDICTS:
                    continue
                for d in v.digests if v.digests else [None]:
                    rows.append({"partition": f"{p.topic}-{p.partition}", "broker": r.broker_id, "verdict": v.code,
                                 "cause": v.cause, "offsets": v.offsets, "records": v.records, "bytes": v.bytes,
                                 "producer_ids": v.producer_ids, "offset": None if d is None else d.offset,
                                 "key_sha256": None if d is None else d.key_sha256,
                                 "value_sha256": None if d is None else d.value_sha256})
    return pd.DataFrame(rows, columns=["partition", "broker", "verdict", "cause", "offsets", "records", "bytes",
                                       "producer_ids", "offset", "key_sha256", "value_sha256"])


def _loses(verdict: str, records: Any, offsets: Any) -> bool:
    """Whether a row of the ``verdicts`` table costs records: a loss verdict, or a leader lacking some."""
    if verdict in LOSS_VERDICTS:
        return True
    if verdict in ELECTION_VERDICTS:
        listed = json.loads(offsets) if isinstance(offsets, str) else offsets
        return bool((records is not None and not pd.isna(records) and records > 0) or listed)
    return False


def losses_frame(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Replicas per (cluster, topic, broker, verdict) among the verdicts that cost records (never OK, NO_EPOCHS,
    NOT_CONVERGING or LOG_LOAD_FAILS: they lose nothing), from the Spark ``verdicts`` table."""
    cols = ["cluster", "topic", "broker_id", "verdict", "replicas", "records"]
    if verdicts.empty:
        return pd.DataFrame(columns=cols)
    offsets = verdicts["offsets"] if "offsets" in verdicts else pd.Series([None] * len(verdicts), index=verdicts.index)
    records = verdicts["records"] if "records" in verdicts else pd.Series([0] * len(verdicts), index=verdicts.index)
    keep = [_loses(v, n, o) for v, n, o in zip(verdicts["verdict"], records, offsets)]
    bad = verdicts[keep].assign(cluster=lambda d: d["cluster"].fillna("(no cluster id)"),
                                records=records[keep].fillna(0).astype("int64"))
    if bad.empty:
        return pd.DataFrame(columns=cols)
    out = (bad.groupby(["cluster", "topic", "broker_id", "verdict"], observed=True)
           .agg(replicas=("partition", "count"), records=("records", "sum")).reset_index())
    return out[cols]


def losses_by_topic_and_broker(verdicts: pd.DataFrame) -> Figure:
    """One panel per cluster: per topic and broker, the replicas with each verdict that costs records, stacked and
    coloured by verdict (the Spark ``verdicts`` table); verdicts that lose nothing have no bar."""
    df = losses_frame(verdicts)
    if df.empty:
        fig, ax = plt.subplots(figsize=(8, 2), layout="constrained")
        _empty(ax, "no replica loses, discards or forks records")
        return fig
    clusters = sorted(df["cluster"].unique())
    sizes = [df[df.cluster == c][["topic", "broker_id"]].drop_duplicates().shape[0] for c in clusters]
    fig, axes = plt.subplots(len(clusters), 1, squeeze=False, sharex=True, layout="constrained",
                             figsize=(9, 0.9 * len(clusters) + 0.32 * sum(sizes)),
                             gridspec_kw={"height_ratios": [s + 0.8 for s in sizes]})
    shown = sorted(df["verdict"].unique(), key=VERDICT_ORDER.index)
    for ax, cluster in zip(axes[:, 0], clusters):
        part = df[df.cluster == cluster]
        pivot = part.pivot_table(index=["topic", "broker_id"], columns="verdict", values="replicas", aggfunc="sum",
                                 fill_value=0)
        pivot = pivot[[c for c in shown if c in pivot.columns]]
        labels = [f"{t} / broker {b}" for t, b in pivot.index]
        left = pd.Series(0, index=pivot.index)
        for code in pivot.columns:
            ax.barh(range(len(pivot)), pivot[code], left=left, color=VERDICT_COLORS[code], edgecolor="black",
                    linewidth=0.3)
            left = left + pivot[code]
        ax.set_yticks(range(len(pivot)), labels, fontsize=8)
        ax.set_ylim(len(pivot) - 0.5, -0.5)
        ax.set_title(f"cluster {cluster}", fontsize=9, loc="left")
    last = axes[-1, 0]
    last.xaxis.set_major_locator(MaxNLocator(integer=True))
    last.set_xlabel("replicas with the verdict (stacked: a replica counts once per verdict)")
    fig.suptitle("verdicts that cost records, per cluster, topic and broker", fontsize=10)
    fig.legend(handles=[Patch(facecolor=VERDICT_COLORS[c], label=c) for c in shown], loc="outside right upper",
               fontsize=8)
    return fig


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
