"""Plots and tables for investigation notebooks (matplotlib, pandas): a front end, like the CLI.

Tested code, so notebooks stay thin: each function takes the typed results
the library produces (a :class:`~kforensics.scan.model.ScanReport`, a
:class:`~kforensics.replay.report.ReplayReport` or one of its partitions, the
Spark job's Parquet tables) and returns a matplotlib ``Figure`` or a pandas
``DataFrame``.  The backend is left to the environment: a notebook shows the
figures inline, a script saves them.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from .catalogue import VERDICTS
from .replay.engine import PartitionReplay
from .replay.report import ReplayReport
from .scan.model import ScanReport

#: verdicts from harmless to worst (a replica's worst verdict decides its colour)
VERDICT_ORDER = ["OK", "NO_EPOCHS", "DISCARD_UNCOMMITTED", "POSSIBLY_COMMITTED", "LOST_TO_RECOVERY",
                 "LEADER_LACKS_COMMITTED", "UNCLEAN_ELECTION", "NOT_CONVERGING", "FORK", "LOSS_COMMITTED",
                 "LOG_LOAD_FAILS"]
VERDICT_COLORS = {"OK": "#4caf50", "NO_EPOCHS": "#9e9e9e", "DISCARD_UNCOMMITTED": "#ffeb3b",
                  "POSSIBLY_COMMITTED": "#ff9800", "LOST_TO_RECOVERY": "#795548", "LEADER_LACKS_COMMITTED": "#3f51b5",
                  "UNCLEAN_ELECTION": "#9c27b0", "NOT_CONVERGING": "#607d8b", "FORK": "#e91e63",
                  "LOSS_COMMITTED": "#d32f2f", "LOG_LOAD_FAILS": "#212121"}
LOSS_VERDICTS = ("LOSS_COMMITTED", "POSSIBLY_COMMITTED", "DISCARD_UNCOMMITTED", "FORK", "LOST_TO_RECOVERY")
SEVERITY_ORDER = ["critical", "high", "medium", "low", "info"]
assert set(VERDICT_ORDER) == set(VERDICTS), "every verdict has a place in the order"


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


def findings_frame(report: ScanReport) -> pd.DataFrame:
    """Every finding, worst first (severities in their order, not alphabetically)."""
    df = pd.DataFrame([{"severity": str(f.severity), "code": f.code, "file": f.file, "position": f.position,
                        "message": f.message} for f in report.all_findings()],
                      columns=["severity", "code", "file", "position", "message"])
    df["severity"] = pd.Categorical(df["severity"], categories=SEVERITY_ORDER, ordered=True)
    return df.sort_values(["severity", "code", "file"]).reset_index(drop=True)


def epoch_cache_frame(report: ScanReport, dir_name: str) -> pd.DataFrame:
    """The leader-epoch cache of one partition, as written and as rebuilt from its batches, side by side."""
    p = next(x for x in report.partitions if x.dir_name == dir_name)
    written = dict(p.epoch_cache_written or [])
    rebuilt = dict(p.epoch_cache_rebuilt)
    epochs = sorted(set(written) | set(rebuilt))
    return pd.DataFrame({"epoch": epochs, "checkpoint_start": [written.get(e) for e in epochs],
                         "rebuilt_start": [rebuilt.get(e) for e in epochs]})


def _worst(codes: list[str]) -> str:
    return max(codes, key=VERDICT_ORDER.index)


def replica_timeline(p: PartitionReplay, ax=None):
    """Per replica, the log as found and after the replay, coloured by epoch; HW, LEO, cuts and verdict ranges."""
    fig = None
    replicas = sorted(p.replicas, key=lambda r: r.broker_id)
    if ax is None:
        fig, ax = plt.subplots(figsize=(10, 1.5 + 1.3 * len(replicas)))
    epochs = sorted({run.epoch for r in replicas for run in r.log_before + r.log_after})
    cmap = plt.get_cmap("tab10")
    color = {e: cmap(i % 10) for i, e in enumerate(epochs)}
    labels, y = [], 0.0
    for r in replicas:
        for when, runs in (("as found", r.log_before), ("after replay", r.log_after)):
            for run in runs:
                ax.barh(y, run.end - run.start + 1, left=run.start, height=0.7, color=color.get(run.epoch, "grey"),
                        edgecolor="black", linewidth=0.3)
            if when == "as found":
                if r.high_watermark is not None:
                    ax.plot([r.high_watermark], [y + 0.45], marker="v", color="black")
                for v in r.verdicts:
                    for a, b in v.offsets:
                        if v.code in LOSS_VERDICTS:
                            ax.barh(y, b - a + 1, left=a, height=0.7, color="none",
                                    edgecolor=VERDICT_COLORS[v.code], hatch="//", linewidth=1.5)
                for d in r.decisions:
                    if d.truncate_to is not None:
                        ax.plot([d.truncate_to, d.truncate_to], [y - 0.4, y + 0.4], color="red", linewidth=2)
            role = " (leader)" if r.role == "leader" else ""
            labels.append((y, f"broker {r.broker_id}{role}\n{when}"))
            y += 1
        y += 0.4
    ax.set_yticks([t for t, _ in labels], [text for _, text in labels], fontsize=8)
    ax.invert_yaxis()
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("offset")
    ax.set_title(f"{p.topic}-{p.partition} (Kafka {p.kafka_version}): leader {p.leader} in epoch {p.leader_epoch}")
    handles = [Patch(color=color[e], label=f"epoch {e}") for e in epochs]
    shown = sorted({v.code for r in replicas for v in r.verdicts if v.code in LOSS_VERDICTS}, key=VERDICT_ORDER.index)
    handles += [Patch(facecolor="none", edgecolor=VERDICT_COLORS[c], hatch="//", label=c) for c in shown]
    handles += [plt.Line2D([], [], color="red", linewidth=2, label="truncated to"),
                plt.Line2D([], [], color="black", marker="v", linestyle="none", label="high watermark")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return fig or ax.figure


def verdict_matrix(report: ReplayReport) -> pd.DataFrame:
    """Worst verdict per (partition, broker)."""
    rows: dict[str, dict[int, str]] = {}
    for p in report.partitions:
        for r in p.replicas:
            rows.setdefault(f"{p.topic}-{p.partition}", {})[r.broker_id] = _worst([v.code for v in r.verdicts])
    return pd.DataFrame(rows).T.sort_index()


def divergence_map(report: ReplayReport, ax=None):
    """Partitions x brokers, coloured by each replica's worst verdict, with a legend of the verdicts shown."""
    m = verdict_matrix(report)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(3 + 0.9 * max(1, m.shape[1]), 1 + 0.35 * max(1, m.shape[0])))
    for i, (_, row) in enumerate(m.iterrows()):
        for j, code in enumerate(row.tolist()):
            if isinstance(code, str):
                ax.add_patch(plt.Rectangle((j, i), 1, 1, color=VERDICT_COLORS[code]))
    ax.set_xlim(0, max(1, m.shape[1]))
    ax.set_ylim(0, max(1, m.shape[0]))
    ax.set_xticks([j + 0.5 for j in range(m.shape[1])], [f"broker {c}" for c in m.columns])
    ax.set_yticks([i + 0.5 for i in range(m.shape[0])], list(m.index))
    ax.invert_yaxis()
    shown = sorted({c for c in m.values.ravel() if isinstance(c, str)}, key=VERDICT_ORDER.index)
    ax.legend(handles=[Patch(color=VERDICT_COLORS[c], label=c) for c in shown], loc="upper left",
              bbox_to_anchor=(1.0, 1.0), fontsize=8)
    ax.set_title("worst verdict per replica")
    return fig or ax.figure


def lost_records_frame(report: ReplayReport) -> pd.DataFrame:
    """Every lost, discarded or forked record range (one row per record when the replay read digests)."""
    rows = []
    for p in report.partitions:
        for r in p.replicas:
            for v in r.verdicts:
                if v.code not in LOSS_VERDICTS:
                    continue
                for d in v.digests or [None]:
                    rows.append({"partition": f"{p.topic}-{p.partition}", "broker": r.broker_id, "verdict": v.code,
                                 "cause": v.cause, "offsets": v.offsets, "records": v.records, "bytes": v.bytes,
                                 "producer_ids": v.producer_ids, "offset": None if d is None else d.offset,
                                 "key_sha256": None if d is None else d.key_sha256,
                                 "value_sha256": None if d is None else d.value_sha256})
    return pd.DataFrame(rows, columns=["partition", "broker", "verdict", "cause", "offsets", "records", "bytes",
                                       "producer_ids", "offset", "key_sha256", "value_sha256"])


def losses_by_topic_and_broker(verdicts: pd.DataFrame, ax=None):
    """Stacked bars of replicas with a loss verdict, per cluster, topic and broker (the Spark ``verdicts`` table)."""
    bad = verdicts[verdicts["verdict"].isin(LOSS_VERDICTS)].copy()
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4))
    if bad.empty:
        ax.text(0.5, 0.5, "no losses, forks or discards", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig or ax.figure
    bad["who"] = (bad["cluster"].fillna("?") + " / " + bad["topic"] + " / broker " + bad["broker_id"].astype(str))
    pivot = bad.pivot_table(index="who", columns="verdict", values="partition", aggfunc="count", fill_value=0)
    pivot.plot.barh(stacked=True, ax=ax, color=[VERDICT_COLORS.get(c, "grey") for c in pivot.columns])
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("replicas")
    ax.set_title("replicas with a loss verdict, per cluster, topic and broker")
    return fig or ax.figure
