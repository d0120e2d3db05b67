"""The fleet view stays one readable figure at 200 brokers × 2 000 partitions, and its numbers are the tables'."""

from __future__ import annotations

import json
import math

import matplotlib
import pytest

matplotlib.use("Agg")

from kforensics import plots  # noqa: E402
from kforensics.plots_fleet import merge_ranges, union_count  # noqa: E402
from tests.report.fleet_data import synthetic_fleet  # noqa: E402


@pytest.fixture(scope="module")
def fleet():
    return synthetic_fleet(brokers=200, partitions=2000, clusters=10)


def _no_overlap(labels, renderer, axis: str) -> None:
    """Consecutive tick labels are apart: horizontal labels by their extents, rotated ones by the distance
    between their anchors across the text's direction against the text's height."""
    shown = [t for t in labels if t.get_visible() and t.get_text()]
    assert shown
    if axis == "y" or shown[0].get_rotation() == 0:
        boxes = sorted((t.get_window_extent(renderer) for t in shown), key=lambda b: (b.y0, b.x0))
        for a, b in zip(boxes, boxes[1:]):
            assert not a.overlaps(b), (a, b)
        return
    angle = math.radians(shown[0].get_rotation())
    height = shown[0].get_fontsize() * shown[0].figure.dpi / 72
    xs = sorted(t.get_window_extent(renderer).x1 for t in shown)  # right-aligned: each label's anchor end
    for a, b in zip(xs, xs[1:]):
        assert (b - a) * math.sin(angle) >= height, (a, b, height)


def test_the_fleet_figure_is_one_readable_figure(fleet):
    verdicts, _batches, _impact = fleet
    assert verdicts["broker_id"].nunique() == 200
    assert len(verdicts[["cluster", "topic", "partition"]].drop_duplicates()) == 2000
    fig = plots.fleet_heatmap(verdicts)
    w, h = fig.get_size_inches()
    # one figure a page shows whole and at its own size (12 in: the report's width), whatever the fleet's size
    assert w <= 12 and h <= 12, (w, h)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    heat, bars = fig.axes[0], fig.axes[1]
    assert len(heat.get_yticklabels()) <= plots.fleet_matrix(verdicts)[0].shape[0] <= 30
    _no_overlap(heat.get_yticklabels(), renderer, "y")
    _no_overlap(heat.get_xticklabels(), renderer, "x")
    _no_overlap(bars.get_xticklabels(), renderer, "x")
    labels = [t.get_text() for t in heat.get_yticklabels()]
    assert labels[-1].startswith("others (") and "topics)" in labels[-1]
    # every label inside the figure: nothing cut at its edges
    fig_box = fig.bbox
    for t in heat.get_yticklabels() + heat.get_xticklabels():
        b = t.get_window_extent(renderer)
        assert b.x0 >= fig_box.x0 - 1 and b.y0 >= fig_box.y0 - 1, t.get_text()


def test_the_fleet_numbers_are_the_verdicts(fleet):
    verdicts, batches, impact = fleet
    want = {}
    for (c, t, p), g in verdicts[verdicts["verdict"] == "LOSS_COMMITTED"].groupby(["cluster", "topic", "partition"]):
        want[(c, t, p)] = union_count(merge_ranges([r for o in g["offsets"] for r in json.loads(o)]))
    parts = plots.fleet_partitions_frame(verdicts)
    got = {(r.cluster, r.topic, r.partition): r.records_lost for r in parts.itertuples() if r.records_lost}
    assert got == want
    assert list(parts["records_lost"][: len(want)]) == sorted(want.values(), reverse=True)  # the worst first
    losses = plots.fleet_losses_frame(verdicts)
    assert losses["records_lost"].sum() == sum(want.values())
    records, counts = plots.fleet_matrix(verdicts)
    assert records.values.sum() == sum(want.values())  # "others" keeps what it does not name
    assert counts.values.sum() == losses["partitions_lost"].sum() + losses["partitions_at_risk"].sum()
    lb = plots.lost_batches_frame(verdicts, batches)
    assert len(lb) == len(batches) and lb["records"].sum() == batches["records_count"].sum()
    g = plots.groups_by_topic_frame(impact)
    assert g["consumed_lost_records"].sum() == impact["consumed_lost_records"].sum()


def test_loss_times_have_time_on_the_axis(fleet):
    import matplotlib.dates as mdates

    verdicts, batches, _ = fleet
    fig = plots.loss_times(plots.lost_batches_frame(verdicts, batches))
    ax = fig.axes[0]
    assert isinstance(ax.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)
    assert fig.get_size_inches()[0] <= 12


def test_empty_tables_give_a_figure_that_says_so():
    import pandas as pd

    fig = plots.fleet_heatmap(pd.DataFrame(columns=["cluster", "topic", "partition", "broker_id", "verdict",
                                                    "offsets", "records", "leader", "committed_bound"]))
    assert "no partition" in fig.axes[0].texts[0].get_text()


def test_a_report_on_tables(tmp_path, fleet):
    """``report --tables`` over Spark-style table dirs: every section, the fleet figures inline."""
    from tests.report.helpers import kforensics, parse_html, without_generation_line

    verdicts, batches, impact = fleet
    out = tmp_path / "tables"
    for name, df in (("verdicts", verdicts), ("batches", batches), ("consumer_impact", impact)):
        (out / name).mkdir(parents=True)
        df.to_parquet(out / name / "part-0.parquet")
    html = []
    for i in range(2):
        r = kforensics("report", "--tables", str(out), "--out", str(tmp_path / f"f{i}.html"), "--markdown",
                       str(tmp_path / f"f{i}.md"))
        assert r.returncode == 1, r.stderr[-2000:]
        html.append((tmp_path / f"f{i}.html").read_text(encoding="utf-8"))
    p = parse_html(html[0])
    drill = [f"partition-{i}" for i in range(1, 9)]  # the worst partitions in detail, linked from the contents
    assert p.sections == ["summary", "fleet", *drill, "evidence", "elections", "verdicts", "forks", "consumers",
                          "transactions", "restart", "findings"]
    assert html[0].count("<svg") >= 2 + len(drill) and not p.remote
    assert all(f'href="#{d}"' in html[0] for d in drill)
    assert without_generation_line(html[0]) == without_generation_line(html[1])
    md = (tmp_path / "f0.md").read_text(encoding="utf-8")
    assert "others (" in md or "partitions shown" in md


def test_a_report_on_scan_tables(tmp_path):
    """``report --tables`` over ``scan --out``: what each partition's next start cuts is the partitions table's."""
    import pandas as pd

    from tests.report.helpers import kforensics, md_tables, parse_html

    out = tmp_path / "scan"
    r = kforensics("scan", "fixtures/brokers/damaged", "--out", str(out))
    assert r.returncode in (0, 1), r.stderr[-2000:]
    r = kforensics("report", "--tables", str(out), "--out", str(tmp_path / "s.html"), "--markdown",
                   str(tmp_path / "s.md"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "restart" in parse_html((tmp_path / "s.html").read_text(encoding="utf-8")).sections
    parts = pd.read_parquet(out / "partitions.parquet")
    cut = parts[(parts["recovery_lost_records"].fillna(0) > 0) | parts["recovery_lost_first_offset"].notna()]
    shown = md_tables((tmp_path / "s.md").read_text(encoding="utf-8"))["What a restart will do"]
    assert sorted((x["partition dir"], x["records lost"]) for x in shown) == sorted(
        (d, str(int(n))) for d, n in zip(cut["dir_name"], cut["recovery_lost_records"].fillna(0)))
    files = pd.read_parquet(out / "files.parquet")
    listed = next(v for k, v in md_tables((tmp_path / "s.md").read_text(encoding="utf-8")).items()
                  if k.startswith("Files read"))
    assert sorted(x["SHA-256"] for x in listed) == sorted(files["sha256"].fillna("-"))
