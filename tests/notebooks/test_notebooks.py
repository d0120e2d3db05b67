"""The investigation notebooks run top to bottom (their cells assert on what they show) and show their figures inline.

Each notebook runs in a fresh kernel with Jupyter's inline backend, whatever
``MPLBACKEND`` this process has (a headless test runner's ``Agg`` would hide
every figure); every cell that calls a figure function of
:mod:`kforensics.plots` must then hold ``image/png`` display data.
Parameters are injected after the cell tagged ``parameters``, as papermill does.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import REALDATA, ROOT, need_shared

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: a KRaft cluster of three brokers, each with the controller's metadata log (CATALOG.md, corpus 10)
HIAGE = REALDATA / "hiage__kafka-raft__c5f680e" / "data"
INLINE = "module://matplotlib_inline.backend_inline"


def figure_functions() -> set[str]:
    """The functions of kforensics.plots that return a matplotlib Figure."""
    from kforensics import plots

    return {name for name, fn in vars(plots).items()
            if callable(fn) and getattr(fn, "__module__", None) == plots.__name__
            and getattr(fn, "__annotations__", {}).get("return") == "Figure"}


def with_parameters(nb, **params):
    """The notebook with a cell setting ``params`` after its ``parameters`` cell (papermill's convention)."""
    import nbformat

    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", []))
    for name in params:
        assert re.search(rf"^{name} = ", nb.cells[at].source, re.M), f"{name} is not a parameter of the notebook"
    cell = nbformat.v4.new_code_cell("\n".join(f"{k} = {v!r}" for k, v in params.items()))
    cell.metadata["tags"] = ["injected-parameters"]
    cell.id = "injected-parameters"
    nb.cells.insert(at + 1, cell)
    return nb


def execute(path: Path, env: dict[str, str] | None = None, **params):
    """Run a notebook top to bottom in a fresh kernel with the inline backend (``env`` added to the kernel's
    environment); the executed notebook."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "notebooks are stored without outputs"
    if params:
        with_parameters(nb, **params)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute(env={**os.environ, **(env or {}), "MPLBACKEND": INLINE})
    return nb


def outputs_text(nb) -> str:
    parts = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            parts.append(o.get("text", "") or o.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def assert_figures_shown(nb) -> int:
    """Every cell calling a figure function shows as many PNGs as the figures it makes (at least one); the count."""
    figs = figure_functions()
    shown = 0
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        called = [n for n in re.findall(r"\bplots\.(\w+)\(", c.source) if n in figs]
        pngs = sum("image/png" in o.get("data", {}) for o in c.get("outputs", []))
        if called:
            assert pngs >= 1, f"no figure shown by the cell:\n{c.source}"
            if "for " not in c.source:
                assert pngs == len(called), f"{pngs} images for {len(called)} figure(s):\n{c.source}"
        shown += pngs
    return shown


def check_first_look(nb) -> None:
    """Severities are counted and listed worst first, not alphabetically."""
    text = outputs_text(nb)
    counts = re.search(r"^severity\n((?:\w+ +\d+\n)+)", text + "\n", re.M)
    assert counts, text
    assert [line.split()[0] for line in counts.group(1).splitlines()] == ["critical", "high", "medium", "low", "info"]


def check_incident(nb) -> None:
    """The bundled scenario's controller record shows the unclean election; the restart verdicts are shown."""
    text = outputs_text(nb)
    assert "the controller decides the elections" in text and "UNCLEAN_ELECTION" in text
    for code in ("LOST_TO_RECOVERY", "LEADER_LACKS_COMMITTED", "NOT_CONVERGING", "LOG_LOAD_FAILS"):
        assert code in text, code


CHECKS = {"01-first-look.ipynb": check_first_look, "02-incident.ipynb": check_incident}


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if "spark" not in p.name], ids=lambda p: p.name)
def test_notebook_runs_and_shows_its_figures(path):
    nb = execute(path)
    assert assert_figures_shown(nb) >= 1
    CHECKS.get(path.name, lambda nb: None)(nb)


def test_incident_notebook_on_real_kraft_snapshots():
    """02 on three real KRaft brokers (a parent dir; each has the controller's metadata log): the controller decides."""
    need_shared(HIAGE)
    nb = execute(ROOT / "notebooks" / "02-incident.ipynb", LOG_DIRS=str(HIAGE), KAFKA_VERSION="3.3")
    text = outputs_text(nb)
    assert "3 brokers" in text
    assert "the controller decides the elections" in text
    assert "in detail: test1-4" in text  # every replica OK: the replicated partition with the longest log
    assert "PartitionRecord" in text  # the controller's record of that partition is shown
    assert "60 partitions, 80 replicas replayed" in text  # 10 partitions on all three brokers, 50 on one
    assert assert_figures_shown(nb) >= 4


def test_incident_notebook_on_a_restart_scenario():
    nb = execute(ROOT / "notebooks" / "02-incident.ipynb", SCENARIO="clean-election-leader-lost-tail")
    text = outputs_text(nb)
    assert "LOST_TO_RECOVERY" in text and "verdicts match the scenario" in text


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if "spark" in p.name], ids=lambda p: p.name)
def test_spark_notebook_runs_shows_its_figure_and_cleans_up(path, tmp_path):
    if shutil.which("java") is None:
        pytest.skip("no java: Spark needs Java 17 (scripts/setup.sh installs it)")
    nb = execute(path, env={"TMPDIR": str(tmp_path)})  # the kernel's temporary dirs go here
    assert assert_figures_shown(nb) >= 1
    text = outputs_text(nb)
    assert str(tmp_path) in text, "the output went to a temporary dir"
    assert not list(tmp_path.glob("kforensics-spark-*")), "the notebook leaves its temporary output behind"
    assert "UNCLEAN_ELECTION" in text and "controller's record" in text


def test_notebooks_are_parameterised_and_thin():
    """Each notebook has one parameters cell of plain assignments, and no matplotlib of its own (plots.py draws)."""
    for path in NOTEBOOKS:
        import nbformat

        nb = nbformat.read(path, as_version=4)
        cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(cells) == 1, path.name
        tree = ast.parse(cells[0].source)
        assert all(isinstance(n, ast.Assign) for n in tree.body), path.name
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert "matplotlib" not in code and "plt." not in code, path.name
        assert "kforensics-spark-" not in code or "TemporaryDirectory" in code, path.name


# ---------------------------------------------------------------- plots.py: rendered and read back

def _scenario_replay(name: str):
    from kforensics.replay.report import replay_all
    from kforensics.scenario import load_scenario

    sc = load_scenario(ROOT / "fixtures" / "scenarios" / name)
    return replay_all(sc.brokers, events=sc.events or None, metadata=sc.metadata)


def _png(fig, path: Path):
    """The figure rendered to a PNG, read back as an RGB array (and closed)."""
    import matplotlib.pyplot as plt
    import numpy as np
    from PIL import Image

    fig.savefig(path, dpi=80)
    plt.close(fig)
    img = np.asarray(Image.open(path).convert("RGB"))
    assert img.shape[1] > 300 and img.shape[0] > 100
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 5, "not a blank canvas"
    return img


def _has_color(img, hex_color: str, at_least: int = 20) -> bool:
    import numpy as np

    rgb = np.array([int(hex_color[i : i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(img.astype(int) - rgb).sum(axis=2) <= 6).sum()) >= at_least


def _legend(fig) -> list[str]:
    labels = []
    for ax in fig.axes:
        if ax.get_legend() is not None:
            labels += [t.get_text() for t in ax.get_legend().get_texts()]
    labels += [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    return labels


def _integer_ticks(ax) -> bool:
    lo, hi = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    return bool(ticks) and all(float(t).is_integer() for t in ticks) and all(re.fullmatch(r"-?\d+", x)
                                                                              for x in labels)


def test_timeline_marks_the_unclean_election_from_the_controllers_record(tmp_path):
    from kforensics import plots

    p = _scenario_replay("unclean-leader-election").partitions[0]
    assert p.timeline, "the scenario's controller log is read"
    assert plots.unclean_elections(p) == [{"metadata_offset": 5, "leader": 3, "leader_epoch": 1, "offset": 2}]
    fig = plots.replica_timeline(p)
    ax = fig.axes[0]
    fig.canvas.draw()
    assert _integer_ticks(ax)
    legend = _legend(fig)
    assert [x for x in legend if x.startswith("epoch")] == ["epoch 0", "epoch 1"]  # every epoch, not only 0
    assert "UNCLEAN_ELECTION (worst)" in legend and "LOSS_COMMITTED (worst)" in legend
    assert any(x.startswith("unclean election at offset 2: broker 3, epoch 1") for x in legend)
    assert "truncation cuts" in legend and "high watermark (checkpoint)" in legend
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows == [f"broker {b} ({role})\n{when}" for b, role in ((1, "follower"), (2, "follower"), (3, "leader"))
                    for when in ("as found", "after replay")]  # nobody's recovery cuts: no restart row
    assert "unclean" in ax.get_title()
    img = _png(fig, tmp_path / "unclean.png")
    assert _has_color(img, plots.VERDICT_COLORS["UNCLEAN_ELECTION"], 200)  # the strip, the star, the line
    assert _has_color(img, plots.VERDICT_COLORS["LOSS_COMMITTED"], 200)


def test_timeline_shows_the_log_at_restart_when_recovery_cuts(tmp_path):
    from kforensics import plots

    p = _scenario_replay("damaged-batches-leader-zero-unclean").partitions[0]
    fig = plots.replica_timeline(p)
    ax = fig.axes[0]
    rows = [t.get_text().replace("\n", " ") for t in ax.get_yticklabels()]
    assert rows == ["broker 1 (leader) as found", "broker 1 (leader) at restart", "broker 1 (leader) after replay",
                    "broker 2 (follower) as found", "broker 2 (follower) after replay",
                    "broker 3 (follower) as found", "broker 3 (follower) after replay"]
    legend = _legend(fig)
    assert {"LOST_TO_RECOVERY", "LEADER_LACKS_COMMITTED (worst)", "LOSS_COMMITTED (worst)", "OK (worst)",
            "recovery cuts at restart"} <= set(legend)
    # the log at restart is the log as found cut at the recovered log end (2): bars end where recovery cuts
    restart_y = ax.get_yticks()[1]
    bars = [b for b in ax.patches if b.get_y() < restart_y < b.get_y() + b.get_height() and b.get_facecolor()[3] == 1
            and b.get_hatch() is None]
    assert max(b.get_x() + b.get_width() for b in bars) == pytest.approx(1.5)
    img = _png(fig, tmp_path / "restart.png")
    assert _has_color(img, plots.VERDICT_COLORS["LOST_TO_RECOVERY"], 30)


def test_timeline_offline_replica_and_every_epoch(tmp_path):
    from kforensics import plots

    p = _scenario_replay("damaged-batches-follower-zero-marker").partitions[0]
    fig = plots.replica_timeline(p)
    rows = [t.get_text().replace("\n", " ") for t in fig.axes[0].get_yticklabels()]
    assert "broker 2 (offline) at restart" in rows
    assert "log does not load" in _legend(fig) and "LOG_LOAD_FAILS (worst)" in _legend(fig)
    _png(fig, tmp_path / "offline.png")
    p = _scenario_replay("three-round-truncation").partitions[0]
    epochs = sorted({run.epoch for r in p.replicas for run in r.log_before + r.log_after})
    assert len(epochs) >= 4
    fig = plots.replica_timeline(p)
    assert [x for x in _legend(fig) if x.startswith("epoch")] == [f"epoch {e}" for e in epochs]
    fig.canvas.draw()
    assert _integer_ticks(fig.axes[0])
    _png(fig, tmp_path / "epochs.png")


def test_divergence_map_colours_by_worst_verdict(tmp_path):
    import dataclasses

    from kforensics import plots

    doc = _scenario_replay("clean-election-leader-lost-tail")
    m = plots.verdict_matrix(doc)
    assert list(m.columns) == [1, 2, 3]
    assert m.loc["orders-0"].tolist() == ["LEADER_LACKS_COMMITTED", "LOSS_COMMITTED", "LOSS_COMMITTED"]
    fig = plots.divergence_map(doc)
    assert _legend(fig) == ["LEADER_LACKS_COMMITTED", "LOSS_COMMITTED"]  # in VERDICT_ORDER
    img = _png(fig, tmp_path / "map.png")
    assert _has_color(img, plots.VERDICT_COLORS["LEADER_LACKS_COMMITTED"], 200)
    # many partitions: the worst are kept, and the title says so
    ok = _scenario_replay("healthy-3-brokers").partitions[0]
    many = dataclasses.replace(doc, partitions=[dataclasses.replace(ok, partition=i) for i in range(1, 60)]
                               + doc.partitions)
    fig = plots.divergence_map(many, max_rows=10)
    ax = fig.axes[0]
    assert len(ax.get_yticklabels()) == 10 and "orders-0" in [t.get_text() for t in ax.get_yticklabels()]
    assert "10 of 60 partitions" in ax.get_title()
    _png(fig, tmp_path / "many.png")


def test_losses_plot_splits_clusters_and_draws_no_bar_for_verdicts_that_lose_nothing(tmp_path):
    import pandas as pd

    from kforensics import plots

    rows = [  # cluster, topic, partition, broker, verdict, records, offsets
        ("a", "orders", 0, 1, "OK", 0, "[]"), ("a", "orders", 0, 2, "LOSS_COMMITTED", 3, "[[2, 4]]"),
        ("a", "orders", 1, 2, "LOSS_COMMITTED", 1, "[[7, 7]]"), ("a", "orders", 0, 3, "NO_EPOCHS", 0, "[]"),
        ("a", "orders", 0, 3, "FORK", 2, "[[5, 6]]"),
        ("b", "orders", 0, 1, "OK", 0, "[]"), ("b", "orders", 0, 1, "UNCLEAN_ELECTION", 0, "[]"),
        ("b", "orders", 0, 2, "LEADER_LACKS_COMMITTED", 2, "[[3, 4]]"),
        ("b", "orders", 0, 3, "LOST_TO_RECOVERY", 0, "[[3, 3]]"),  # a torn batch: no record counted, still lost
        ("b", "orders", 0, 4, "NOT_CONVERGING", 0, "[[2, 2]]"), ("b", "orders", 0, 5, "LOG_LOAD_FAILS", 0, "[]"),
        ("healthy", "orders", 0, 1, "OK", 0, "[]"), ("healthy", "orders", 0, 2, "NO_EPOCHS", 0, "[]"),
    ]
    verdicts = pd.DataFrame(rows, columns=["cluster", "topic", "partition", "broker_id", "verdict", "records",
                                           "offsets"])
    lf = plots.losses_frame(verdicts)
    assert set(lf.cluster) == {"a", "b"}
    assert not set(lf.verdict) & {"OK", "NO_EPOCHS", "UNCLEAN_ELECTION", "NOT_CONVERGING", "LOG_LOAD_FAILS"}
    assert lf[(lf.cluster == "a") & (lf.verdict == "LOSS_COMMITTED")].replicas.tolist() == [2]
    fig = plots.losses_by_topic_and_broker(verdicts)
    panels = [ax for ax in fig.axes if ax.get_title(loc="left")]
    assert [ax.get_title(loc="left") for ax in panels] == ["cluster a", "cluster b"]
    bars = {ax.get_title(loc="left"): [b for b in ax.patches if b.get_width() > 0] for ax in panels}
    assert len(bars["cluster a"]) == 2  # broker 2: LOSS_COMMITTED (2 replicas); broker 3: FORK
    assert sorted(b.get_width() for b in bars["cluster a"]) == [1, 2]
    assert len(bars["cluster b"]) == 2  # broker 2: LEADER_LACKS_COMMITTED; broker 3: LOST_TO_RECOVERY
    assert [t.get_text() for t in panels[0].get_yticklabels()] == ["orders / broker 2", "orders / broker 3"]
    assert _legend(fig) == ["LOST_TO_RECOVERY", "LEADER_LACKS_COMMITTED", "FORK", "LOSS_COMMITTED"]
    img = _png(fig, tmp_path / "losses.png")
    assert _has_color(img, plots.VERDICT_COLORS["LOSS_COMMITTED"], 200)
    assert not _has_color(img, plots.VERDICT_COLORS["OK"], 1)  # (NO_EPOCHS grey is too close to the axes greys)
    # nothing lost anywhere: no bars, a sentence instead
    fig = plots.losses_by_topic_and_broker(verdicts[verdicts.cluster == "healthy"])
    assert not [b for ax in fig.axes for b in ax.patches]
    _png(fig, tmp_path / "none.png")


def test_findings_plot_and_frames_order_severities_worst_first(tmp_path):
    from kforensics import plots
    from kforensics.scan.broker import scan_log_dirs

    report = scan_log_dirs([ROOT / "fixtures" / "brokers" / "damaged"])
    findings = plots.findings_frame(report)
    assert list(findings["severity"].cat.categories) == ["critical", "high", "medium", "low", "info"]
    assert findings["severity"].cat.codes.is_monotonic_increasing
    assert list(plots.severity_counts(findings).index) == ["critical", "high", "medium", "low", "info"]
    fig = plots.findings_by_partition(report)
    ax = fig.axes[0]
    assert _legend(fig) == ["critical", "high", "medium", "low", "info"]
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert names[0] == "(log dir, broker)" and names[1:] == sorted(names[1:])
    assert sum(b.get_width() for b in ax.patches) == len(findings)
    img = _png(fig, tmp_path / "findings.png")
    assert _has_color(img, plots.SEVERITY_COLORS["critical"], 100)


def test_plots_stay_a_pure_front_end():
    """plots.py takes typed results and returns figures and frames: it neither shows, prints nor picks a backend."""
    source = (ROOT / "kforensics" / "plots.py").read_text(encoding="utf-8")
    for forbidden in ("plt.show", "matplotlib.use", "print(", "savefig", "MPLBACKEND", "display("):
        assert forbidden not in source, forbidden
    assert figure_functions() >= {"replica_timeline", "divergence_map", "losses_by_topic_and_broker",
                                  "findings_by_partition"}


def test_timeline_ticks_are_whole_offsets_far_from_zero(tmp_path):
    """Offsets in the millions: whole numbers under the cells, no scientific notation or offset text."""
    from kforensics import plots
    from kforensics.replay.engine import EpochRun, PartitionReplay, ReplicaOutcome
    from kforensics.replay.verdicts import Verdict

    base = 1_734_780
    runs = [EpochRun(base, base + 2, 7), EpochRun(base + 3, base + 4, 9)]
    replicas = [ReplicaOutcome(1, "leader", base + 5, base + 5, base + 5, [], base + 5, log_before=runs,
                               log_after=runs),
                ReplicaOutcome(2, "follower", base + 3, base + 5, base + 3, [], base + 3, log_before=runs[:1],
                               log_after=runs)]
    for r in replicas:
        r.verdicts = [Verdict("OK")]
    p = PartitionReplay("t", 0, "latest", 1, 9, base + 5, replicas, [], [])
    fig = plots.replica_timeline(p)
    ax = fig.axes[0]
    fig.canvas.draw()
    assert _integer_ticks(ax)
    assert str(base + 2) in [t.get_text() for t in ax.get_xticklabels()]
    assert not ax.xaxis.get_offset_text().get_text()
    assert [x for x in _legend(fig) if x.startswith("epoch")] == ["epoch 7", "epoch 9"]
    _png(fig, tmp_path / "far.png")
