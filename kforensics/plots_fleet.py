"""The fleet view: records and partitions lost or at risk by cluster and topic, at any fleet size (a front end).

Tables in, frames and figures out, like :mod:`kforensics.plots` (which
re-exports these functions): the Spark job's (or ``scan --out``'s) Parquet
tables as pandas frames.  A fleet of a thousand topics stays one figure: the
topics losing most are drawn, the rest are one "others" row, and the
clusters likewise.  Records lost to a partition are the union over its
replicas of the offsets their impact verdicts name
(:data:`kforensics.verdict_rules.IMPACT`: records the new leader does not
serve); a partition is at risk when a verdict fails the replay
(:data:`~kforensics.verdict_rules.FAILS_REPLAY`) but nothing is counted lost.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .offset_ranges import span, union
from .verdict_rules import FAILS_REPLAY, IMPACT, ORDER

#: topics (rows) and clusters (columns) drawn by name; the rest are summed into "others"
TOP_TOPICS = 30
TOP_CLUSTERS = 12
NO_CLUSTER = "(no cluster id)"
_PARTITION_COLUMNS = ["cluster", "topic", "partition", "worst_verdict", "records_lost", "committed_lost",
                      "offsets_lost", "at_risk", "leader", "brokers"]


def union_count(ranges: list[list[int]]) -> int:
    """How many offsets the inclusive ``ranges`` cover together."""
    return span(union((int(r[0]), int(r[1])) for r in ranges))


def merge_ranges(ranges: list[list[int]]) -> list[list[int]]:
    """Inclusive offset ranges (as JSON holds them: lists) merged where they overlap or touch, sorted."""
    return [[a, b] for a, b in union((int(r[0]), int(r[1])) for r in ranges)]


def ranges_below(ranges: list[list[int]], bound: Any) -> list[list[int]]:
    """The parts of inclusive ``ranges`` below ``bound`` (exclusive); none when the bound is unknown."""
    if bound is None or pd.isna(bound):
        return []
    return [[a, min(b, int(bound) - 1)] for a, b in ranges if a < bound]


def _offsets(value: Any) -> list[list[int]]:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return []
    listed = json.loads(value) if isinstance(value, str) else value
    return [list(r) for r in listed or [] if len(r) == 2]


def _impact_ranges(v: pd.DataFrame) -> pd.DataFrame:
    """One row per inclusive offset range of the impact verdicts (key columns, ``a``, ``b``, ``records``)."""
    imp = v[v["verdict"].isin(IMPACT)]
    rows = []
    keys = ["cluster", "topic", "partition", "broker_id"]
    offsets = imp["offsets"] if "offsets" in imp else pd.Series([None] * len(imp), index=imp.index)
    records = imp["records"] if "records" in imp else pd.Series([None] * len(imp), index=imp.index)
    for key, o, n in zip(imp[keys].itertuples(index=False, name=None), offsets, records):
        listed = _offsets(o)
        rows += [(*key, a, b, n) for a, b in listed] or [(*key, None, None, n)]
    return pd.DataFrame(rows, columns=[*keys, "a", "b", "records"])


def fleet_partitions_frame(verdicts: pd.DataFrame) -> pd.DataFrame:
    """One row per (cluster, topic, partition) of the Spark ``verdicts`` table, the worst first: its worst
    verdict, the records it loses (and of them below the committed bound), the offsets, whether it is at risk."""
    if verdicts.empty:
        return pd.DataFrame(columns=_PARTITION_COLUMNS)
    key = ["cluster", "topic", "partition"]
    v = verdicts.assign(cluster=verdicts["cluster"].fillna(NO_CLUSTER),
                        _rank=verdicts["verdict"].map(ORDER.index),
                        _fails=verdicts["verdict"].isin(FAILS_REPLAY))
    g = v.groupby(key, sort=True, observed=True)
    out = g.agg(_rank=("_rank", "max"), _fails=("_fails", "any"), leader=("leader", "first"),
                committed_bound=("committed_bound", "max") if "committed_bound" in v else ("_rank", "size"))
    if "committed_bound" not in v:
        out["committed_bound"] = None
    brokers: dict[tuple[str, str, int], set[int]] = {}
    for c, t, p, b in zip(v["cluster"], v["topic"], v["partition"], v["broker_id"]):
        if not pd.isna(b):
            brokers.setdefault((c, t, p), set()).add(int(b))
    out["brokers"] = [sorted(brokers.get(k, ())) for k in out.index]
    # only the impact verdicts' offsets are parsed: a healthy fleet's millions of OK rows cost a groupby
    spans: dict[tuple[str, str, int], list[list[int]]] = {}
    counts: dict[tuple[str, str, int], int] = {}
    for c, t, p, _b, a, z, n in _impact_ranges(v).itertuples(index=False, name=None):
        if a is not None and not pd.isna(a):
            spans.setdefault((c, t, p), []).append([int(a), int(z)])
        counts[(c, t, p)] = max(counts.get((c, t, p), 0), 0 if n is None or pd.isna(n) else int(n))
    lost = {}
    for k, n in counts.items():
        ranges = merge_ranges(spans.get(k, []))
        lost[k] = (union_count(ranges) if ranges else n, ranges)
    idx = list(out.index)
    out["records_lost"] = [lost.get(k, (0, []))[0] for k in idx]
    out["offsets_lost"] = [lost.get(k, (0, []))[1] for k in idx]
    out["committed_lost"] = [union_count(ranges_below(o, cb)) for o, cb in zip(out["offsets_lost"],
                                                                                out["committed_bound"])]
    out["at_risk"] = (out["records_lost"] == 0) & out["_fails"]
    out["worst_verdict"] = [ORDER[i] for i in out["_rank"]]
    out["leader"] = [None if pd.isna(x) else int(x) for x in out["leader"]]
    out = out.reset_index()
    return (out.sort_values(["_rank", "records_lost", "cluster", "topic", "partition"],
                            ascending=[False, False, True, True, True], kind="stable")
            .reset_index(drop=True)[_PARTITION_COLUMNS])


def fleet_losses_frame(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per (cluster, topic): records lost, of them committed, partitions losing records and partitions at risk;
    the topics losing most first (only those with something lost or at risk)."""
    cols = ["cluster", "topic", "records_lost", "committed_lost", "partitions_lost", "partitions_at_risk"]
    parts = fleet_partitions_frame(verdicts)
    parts = parts[(parts["records_lost"] > 0) | parts["at_risk"]]
    if parts.empty:
        return pd.DataFrame(columns=cols)
    out = (parts.assign(lost=parts["records_lost"] > 0)
           .groupby(["cluster", "topic"], observed=True)
           .agg(records_lost=("records_lost", "sum"), committed_lost=("committed_lost", "sum"),
                partitions_lost=("lost", "sum"), partitions_at_risk=("at_risk", "sum")).reset_index())
    out[cols[2:]] = out[cols[2:]].astype("int64")
    return out.sort_values(["records_lost", "partitions_lost", "partitions_at_risk", "cluster", "topic"],
                           ascending=[False, False, False, True, True], kind="stable").reset_index(drop=True)[cols]


def groups_by_topic_frame(consumer_impact: pd.DataFrame) -> pd.DataFrame:
    """Per (cluster, topic): the consumer groups affected, the records they consumed that are gone, and what
    they do when they resume (outcome: groups), from the ``consumer_impact`` table; most records first."""
    cols = ["cluster", "topic", "groups", "partitions", "consumed_lost_records", "outcomes"]
    if consumer_impact is None or consumer_impact.empty:
        return pd.DataFrame(columns=cols)
    ci = consumer_impact.assign(cluster=consumer_impact["cluster"].fillna(NO_CLUSTER))
    rows = []
    for (cluster, topic), g in ci.groupby(["cluster", "topic"], sort=True, observed=True):
        outcomes = g.groupby("outcome", observed=True)["group"].nunique().sort_index()
        rows.append({"cluster": cluster, "topic": topic, "groups": sorted(set(g["group"])),
                     "partitions": int(g["partition"].nunique()),
                     "consumed_lost_records": int(g["consumed_lost_records"].fillna(0).sum()),
                     "outcomes": ", ".join(f"{o}: {n}" for o, n in outcomes.items())})
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(["consumed_lost_records", "cluster", "topic"], ascending=[False, True, True],
                           kind="stable").reset_index(drop=True)


def _top_with_others(totals: pd.Series, n: int, what: str) -> tuple[list[str], dict[str, str]]:
    """The ``n`` largest labels of ``totals`` (ties by name) and a mapping of every label to itself or to
    ``others (k <what>)``."""
    order = sorted(totals.index, key=lambda k: (-totals[k], str(k)))
    keep = order[:n] if len(order) <= n else order[:n - 1]
    rest = [k for k in order if k not in set(keep)]
    other = f"others ({len(rest)} {what})"
    return keep + ([other] if rest else []), {k: (k if k in set(keep) else other) for k in order}


def fleet_matrix(verdicts: pd.DataFrame, *, top_topics: int = TOP_TOPICS,
                 top_clusters: int = TOP_CLUSTERS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(records lost, partitions lost or at risk) as topic × cluster matrices: the topics and clusters losing
    most by name, the rest summed into an "others" row and column."""
    df = fleet_losses_frame(verdicts)
    if df.empty:
        return pd.DataFrame(), pd.DataFrame()
    weight = df["records_lost"] * 1_000_000 + df["partitions_lost"] + df["partitions_at_risk"]
    rows, row_of = _top_with_others(df.assign(w=weight).groupby("topic")["w"].sum(), top_topics, "topics")
    cols, col_of = _top_with_others(df.assign(w=weight).groupby("cluster")["w"].sum(), top_clusters, "clusters")
    d = df.assign(row=df["topic"].map(row_of), col=df["cluster"].map(col_of),
                  parts=df["partitions_lost"] + df["partitions_at_risk"])
    records = d.pivot_table(index="row", columns="col", values="records_lost", aggfunc="sum", fill_value=0)
    parts = d.pivot_table(index="row", columns="col", values="parts", aggfunc="sum", fill_value=0)
    return records.reindex(index=rows, columns=cols, fill_value=0), parts.reindex(index=rows, columns=cols,
                                                                                    fill_value=0)


def fleet_heatmap(verdicts: pd.DataFrame, *, top_topics: int = TOP_TOPICS,
                  top_clusters: int = TOP_CLUSTERS) -> Figure:
    """Topics × clusters coloured by records lost (log scale; each cell: records, and partitions lost or at
    risk in brackets), beside ranked bars of each topic row's partitions lost and at risk.  One figure at any
    fleet size: at most ``top_topics`` rows and ``top_clusters`` columns, the rest in "others"."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    records, parts = fleet_matrix(verdicts, top_topics=top_topics, top_clusters=top_clusters)
    if records.empty:
        fig, ax = plt.subplots(figsize=(8, 1.6), layout="constrained")
        ax.text(0.5, 0.5, "no partition loses records or is at risk", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    nr, nc = records.shape
    fig, (ax, bars) = plt.subplots(1, 2, figsize=(min(12.0, 5.0 + 0.6 * nc + 2.5), max(3.2, 1.8 + 0.3 * nr)),
                                   layout="constrained", gridspec_kw={"width_ratios": [max(nc, 2), 3]},
                                   sharey=True)
    vmax = max(1, int(records.values.max()))
    im = ax.imshow(records.values.clip(min=0.5), aspect="auto", cmap="Reds", norm=LogNorm(vmin=0.5, vmax=vmax),
                   interpolation="nearest")
    for i in range(nr):
        for j in range(nc):
            n, k = int(records.iat[i, j]), int(parts.iat[i, j])
            if n or k:
                dark = n > 0 and n >= vmax ** 0.6
                ax.text(j, i, f"{_short(n)}\n({k})" if nr <= 40 else _short(n), ha="center", va="center",
                        fontsize=6.5, color="white" if dark else "black")
    ax.set_xticks(range(nc), [_clip(c, 28) for c in records.columns], rotation=40, ha="right",
                  rotation_mode="anchor", fontsize=7.5)
    ax.set_yticks(range(nr), [_clip(t, 32) for t in records.index], fontsize=7.5)
    ax.set_xlabel("cluster")
    ax.set_title("records lost by topic and cluster (partitions lost or at risk)", fontsize=9, loc="left")
    cb = fig.colorbar(im, ax=ax, shrink=0.8, pad=0.01, label="records lost")
    # decades only, as plain counts: log minor labels (2×10⁰, 3×10⁰ ...) pile up on a short bar
    cb.ax.yaxis.set_major_locator(LogLocator(base=10))
    cb.ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: _short(int(y)) if y >= 1 else ""))
    cb.ax.yaxis.set_minor_formatter(NullFormatter())
    _partition_bars(bars, verdicts, records.index)
    return fig


def _partition_bars(ax: Axes, verdicts: pd.DataFrame, rows: pd.Index) -> None:
    """Per topic row: partitions losing records and partitions at risk, stacked horizontal bars."""
    from matplotlib.ticker import MaxNLocator

    df = fleet_losses_frame(verdicts)
    named = {t for t in rows if not str(t).startswith("others (")}
    row_of = {t: (t if t in named else next(r for r in rows if str(r).startswith("others ("))) for t in df["topic"]}
    d = df.assign(row=df["topic"].map(row_of)).groupby("row")[["partitions_lost", "partitions_at_risk"]].sum()
    d = d.reindex(rows, fill_value=0)
    y = range(len(rows))
    ax.barh(y, d["partitions_lost"], color="#d32f2f", label="losing records")
    ax.barh(y, d["partitions_at_risk"], left=d["partitions_lost"], color="#9e9e9e", label="at risk")
    total = d["partitions_lost"] + d["partitions_at_risk"]
    named_max = max([int(total[r]) for r in rows if r in named] or [1])
    # the "others" row can hold hundreds of topics: the axis is scaled to the named rows and the longer bars are
    # cut at its edge, each row's count written at its end so no bar hides another
    edge = max(named_max * 1.35, 1.5)
    ax.set_xlim(0, edge)
    for i, r in enumerate(rows):
        n = int(total[r])
        if n:
            ax.text(min(n, edge * 0.8), i, f" {n}" + (" ›" if n > edge else ""), va="center", fontsize=6.5,
                    color="white" if n > edge else "black", ha="left" if n <= edge else "right")
    ax.set_xlabel("partitions per topic row")
    # above the panel, where no bar can be: at the bottom it would cover the "others" row
    ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.0), frameon=False, ncols=2)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
    ax.tick_params(axis="y", left=False)


def lost_batches_frame(verdicts: pd.DataFrame, batches: pd.DataFrame) -> pd.DataFrame:
    """The batches holding lost records (impact verdicts' offsets on that replica), with their timestamps: one
    row per batch (cluster, topic, partition, broker_id, first and last offset, records, base and max
    timestamp in ms)."""
    cols = ["cluster", "topic", "partition", "broker_id", "first_offset", "last_offset", "records",
            "base_timestamp", "max_timestamp"]
    if verdicts.empty or batches is None or batches.empty:
        return pd.DataFrame(columns=cols)
    keys = ["cluster", "topic", "partition", "broker_id"]
    ranges = _impact_ranges(verdicts.assign(cluster=verdicts["cluster"].fillna(NO_CLUSTER))).dropna(
        subset=["a", "b"])
    if ranges.empty:
        return pd.DataFrame(columns=cols)
    b = batches.assign(cluster=batches["cluster"].fillna(NO_CLUSTER))
    b = b.assign(first_offset=b["base_offset"].where(b["base_offset"] >= 0, b["last_offset"]))
    for k in ("partition", "broker_id"):  # the tables' int32 against the ranges' int64
        b[k], ranges[k] = b[k].astype("int64"), ranges[k].astype("int64")
    m = b.merge(ranges.drop(columns="records"), on=keys, how="inner")
    m = m[(m["first_offset"] <= m["b"]) & (m["last_offset"] >= m["a"])]
    m = m.drop_duplicates(subset=[*keys, "first_offset", "last_offset"]).rename(columns={"records_count": "records"})
    return m.sort_values([*keys, "first_offset"], kind="stable").reset_index(drop=True)[cols]


def loss_times(lost_batches: pd.DataFrame, *, top_clusters: int = 8) -> Figure:
    """When the lost records were written: records per time bin (UTC, by each batch's max timestamp), stacked
    by cluster (the clusters losing most by name, the rest as "others")."""
    import matplotlib.pyplot as plt

    d = lost_batches[lost_batches["max_timestamp"] >= 0] if not lost_batches.empty else lost_batches
    fig, ax = plt.subplots(figsize=(10, 3.2), layout="constrained")
    if d.empty:
        ax.text(0.5, 0.5, "no timestamp known for the lost records", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    totals = d.groupby("cluster")["records"].sum()
    names, col_of = _top_with_others(totals, top_clusters, "clusters")
    when = pd.to_datetime(d["max_timestamp"], unit="ms", utc=True).dt.tz_localize(None)
    series = [when[d["cluster"].map(col_of) == n] for n in names]
    weights = [d["records"][d["cluster"].map(col_of) == n].clip(lower=1) for n in names]
    ax.hist(series, bins=min(60, max(5, len(d) // 2)), weights=weights, stacked=True, label=names)
    import matplotlib.dates as mdates

    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]  # matplotlib.dates is not annotated
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    ax.set_xlabel("written at (UTC, the batch's max timestamp)")
    ax.set_ylabel("records lost")
    ax.set_title("when the lost records were written", fontsize=9, loc="left")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def _short(n: int) -> str:
    """A count in at most five characters: 950, 12k, 3.4M."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.0f}k" if n >= 10_000 else f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def _clip(label: Any, width: int) -> str:
    """A tick label of at most ``width`` characters (the middle elided): topic names can be long."""
    text = str(label)
    return text if len(text) <= width else text[: width // 2 - 1] + "…" + text[-(width - width // 2):]
