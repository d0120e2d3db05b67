"""Plots and tables for investigation notebooks (matplotlib, pandas).

Tested code, so notebooks stay thin: each function takes the documents and
tables the library produces (a replay document from :func:`kforensics.
analysis.replay_report.replay_all`, a :class:`~kforensics.analysis.scan.
ScanReport`, the Spark pipeline's Parquet tables) and returns a matplotlib
``Figure`` or a pandas ``DataFrame``.
"""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg", force=False)  # headless unless the notebook chose a backend

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from .analysis.replica import Replica  # noqa: E402
from .analysis.scan import ScanReport  # noqa: E402

VERDICT_ORDER = ["OK", "NO_EPOCHS", "DISCARD_UNCOMMITTED", "POSSIBLY_COMMITTED", "UNCLEAN_ELECTION", "FORK",
                 "LOSS_COMMITTED"]
VERDICT_COLORS = {"OK": "#4caf50", "NO_EPOCHS": "#9e9e9e", "DISCARD_UNCOMMITTED": "#ffeb3b",
                  "POSSIBLY_COMMITTED": "#ff9800", "UNCLEAN_ELECTION": "#9c27b0", "FORK": "#e91e63",
                  "LOSS_COMMITTED": "#d32f2f"}


def partitions_frame(report: ScanReport) -> pd.DataFrame:
    """One row per partition: the facts a first look needs, worst finding included."""
    rows = []
    for p in report.partitions:
        worst = max((f.severity for f in p.findings), default=None)
        rows.append({"partition": p.dir_name, "segments": len(p.segments), "batches": p.batch_count,
                     "log_start": p.log_start_offset, "leo": p.log_end_offset, "hw": p.high_watermark,
                     "uncommitted": p.uncommitted, "epochs_written": p.epoch_cache_written,
                     "epochs_rebuilt": p.epoch_cache_rebuilt, "findings": len(p.findings),
                     "worst": None if worst is None else str(worst)})
    return pd.DataFrame(rows).sort_values("partition").reset_index(drop=True)


def findings_frame(report: ScanReport) -> pd.DataFrame:
    return pd.DataFrame([{"severity": str(f.severity), "code": f.code, "file": f.file, "position": f.position,
                          "message": f.message} for f in report.all_findings()],
                        columns=["severity", "code", "file", "position", "message"])


def epoch_cache_frame(report: ScanReport, dir_name: str) -> pd.DataFrame:
    """The leader-epoch cache of one partition, as written and as rebuilt from its batches, side by side."""
    p = next(x for x in report.partitions if x.dir_name == dir_name)
    written = dict(p.epoch_cache_written or [])
    rebuilt = dict(p.epoch_cache_rebuilt)
    epochs = sorted(set(written) | set(rebuilt))
    return pd.DataFrame({"epoch": epochs, "checkpoint_start": [written.get(e) for e in epochs],
                         "rebuilt_start": [rebuilt.get(e) for e in epochs]})


def replica_timeline(replicas: list[Replica], partition_doc: dict[str, Any], ax=None):
    """Who wrote which offsets in which epoch, per replica; HW, LEO and the replayed truncation marked."""
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(10, 1.2 + 0.8 * len(replicas)))
    epochs = sorted({int(e) for r in replicas for e in r.log.col("epoch").tolist()})
    cmap = plt.get_cmap("tab10")
    color = {e: cmap(i % 10) for i, e in enumerate(epochs)}
    outcome = {r["broker_id"]: r for r in partition_doc["replicas"]}
    for y, rep in enumerate(sorted(replicas, key=lambda r: r.broker_id)):
        for base, last, epoch in zip(rep.log.col("base").tolist(), rep.log.col("last").tolist(),
                                     rep.log.col("epoch").tolist()):
            ax.barh(y, last - base + 1, left=base, color=color[int(epoch)], edgecolor="black", linewidth=0.3)
        o = outcome.get(rep.broker_id, {})
        if rep.high_watermark is not None:
            ax.plot([rep.high_watermark], [y + 0.42], marker="v", color="black")
        ax.plot([rep.log_end_offset], [y], marker="|", markersize=18, color="black")
        after = o.get("log_end_offset_after")
        for v in o.get("verdicts", []):
            for a, b in v.get("offsets", []):
                if v["code"] in ("LOSS_COMMITTED", "POSSIBLY_COMMITTED", "DISCARD_UNCOMMITTED", "FORK"):
                    ax.barh(y, b - a + 1, left=a, color="none", edgecolor=VERDICT_COLORS[v["code"]], hatch="//",
                            linewidth=1.5)
        cuts = [d["truncate_to"] for d in o.get("decisions", []) if d.get("truncate_to") is not None]
        for c in cuts:
            ax.axvline(c, ymin=(y + 0.1) / len(replicas), ymax=(y + 0.9) / len(replicas), color="red", linewidth=2)
        label = f"broker {rep.broker_id}" + (" (leader)" if o.get("role") == "leader" else "")
        if after is not None:
            label += f"\nLEO {rep.log_end_offset}->{after}"
        ax.text(-0.01, y, label, transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize=8)
    ax.set_yticks([])
    ax.set_xlabel("offset")
    ax.set_title(f"{partition_doc['topic']}-{partition_doc['partition']}: epochs by offset "
                 f"(v HW, | LEO, red: truncation, hatched: verdict ranges)")
    ax.legend(handles=[Patch(color=color[e], label=f"epoch {e}") for e in epochs], loc="upper left",
              bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return fig or ax.figure


def verdict_matrix(doc: dict[str, Any]) -> pd.DataFrame:
    """Worst verdict per (partition, broker) from a replay document."""
    rows = {}
    for p in doc["partitions"]:
        key = f"{p['topic']}-{p['partition']}"
        for r in p["replicas"]:
            codes = [v["code"] for v in r["verdicts"]]
            rows.setdefault(key, {})[r["broker_id"]] = max(codes, key=VERDICT_ORDER.index)
    return pd.DataFrame(rows).T.sort_index()


def divergence_map(doc: dict[str, Any], ax=None):
    """Partitions x brokers, coloured by each replica's worst verdict."""
    m = verdict_matrix(doc)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(2 + 0.8 * max(1, m.shape[1]), 1 + 0.35 * max(1, m.shape[0])))
    for i, (_, row) in enumerate(m.iterrows()):
        for j, code in enumerate(row.tolist()):
            if isinstance(code, str):
                ax.add_patch(plt.Rectangle((j, i), 1, 1, color=VERDICT_COLORS[code]))
                ax.text(j + 0.5, i + 0.5, code.replace("_", "\n"), ha="center", va="center", fontsize=6)
    ax.set_xlim(0, max(1, m.shape[1]))
    ax.set_ylim(0, max(1, m.shape[0]))
    ax.set_xticks([j + 0.5 for j in range(m.shape[1])], [f"broker {c}" for c in m.columns])
    ax.set_yticks([i + 0.5 for i in range(m.shape[0])], list(m.index))
    ax.invert_yaxis()
    ax.set_title("worst verdict per replica")
    return fig or ax.figure


def lost_records_frame(doc: dict[str, Any]) -> pd.DataFrame:
    """Every lost, discarded or forked record range (with digests when the replay was run with them)."""
    rows = []
    for p in doc["partitions"]:
        for r in p["replicas"]:
            for v in r["verdicts"]:
                if v["code"] in ("LOSS_COMMITTED", "POSSIBLY_COMMITTED", "DISCARD_UNCOMMITTED", "FORK"):
                    details = v.get("records_detail") or [None]
                    for d in details:
                        rows.append({"partition": f"{p['topic']}-{p['partition']}", "broker": r["broker_id"],
                                     "verdict": v["code"], "offsets": v["offsets"], "records": v["records"],
                                     "bytes": v["bytes"], "producer_ids": v["producer_ids"],
                                     "offset": None if d is None else d["offset"],
                                     "key_sha256": None if d is None else d["key_sha256"],
                                     "value_sha256": None if d is None else d["value_sha256"]})
    return pd.DataFrame(rows, columns=["partition", "broker", "verdict", "offsets", "records", "bytes",
                                       "producer_ids", "offset", "key_sha256", "value_sha256"])


def losses_by_topic_and_broker(verdicts: pd.DataFrame, ax=None):
    """Stacked bars of non-OK verdict records per topic and broker (from the Spark ``verdicts`` table)."""
    bad = verdicts[verdicts["verdict"] != "OK"].copy()
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4))
    if bad.empty:
        ax.text(0.5, 0.5, "no losses, forks or discards", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig or ax.figure
    bad["who"] = bad["topic"] + " / broker " + bad["broker_id"].astype(str)
    pivot = bad.pivot_table(index="who", columns="verdict", values="partition", aggfunc="count", fill_value=0)
    pivot.plot.barh(stacked=True, ax=ax, color=[VERDICT_COLORS.get(c, "grey") for c in pivot.columns])
    ax.set_xlabel("partitions")
    ax.set_title("verdicts other than OK, per topic and broker")
    return fig or ax.figure
