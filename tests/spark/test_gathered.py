"""A Spark scan task gathers its dirs' report rows as runs of tuples (``report_runs``) and makes a table of them
when it holds enough (``Gathered``): the same tables, rows in the same order, as the dicts of those rows give
(``table``), whatever the runs' columns; the rows a task reads per dir (findings, the partition row) are the
table's."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforensics.scan.broker import scan_log_dirs
from kforensics.scan.model import ScanReport
from kforensics.spark import scan_task
from kforensics.tables.report_tables import REPORT_ROWS, report_runs, run_rows, runs_table
from kforensics.tables.schemas import fit_rows, table

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "brokers"
CONTEXT = {"snapshot_id": "s-1", "snapshot_time": 5, "cluster": "c", "broker_id": 7}


def _dir_reports() -> list[ScanReport]:
    """A report per partition dir of the fixtures, as the scan tasks make them (the dir's own findings)."""
    out = []
    for d in sorted(p for p in FIXTURES.glob("*") if p.is_dir()):
        report = scan_log_dirs([d])
        out += [ScanReport(report.broker, [p], list(p.findings), p.files) for p in report.partitions]
    out.append(ScanReport(report.broker, [], list(report.findings), [], report.checkpoints))  # root rows
    assert len(out) > 10
    return out


def test_runs_are_each_tables_rows():
    for report in _dir_reports():
        runs = report_runs(report, CONTEXT)
        assert list(runs) == list(REPORT_ROWS)
        for name, make in REPORT_ROWS.items():
            assert run_rows(runs[name]) == make(report, CONTEXT), name
            assert runs_table(name, runs[name]).to_pylist() == table(name, make(report, CONTEXT)).to_pylist()


@pytest.mark.parametrize("gather", [1, 3, 4096])
def test_gathered_tables_are_the_tables_of_the_rows_in_order(gather, monkeypatch, tmp_path):
    monkeypatch.setattr(scan_task, "GATHER_ROWS", gather)
    g = scan_task.Gathered()
    rows: dict[str, list] = {name: [] for name in REPORT_ROWS}
    for i, report in enumerate(_dir_reports()):
        context = {**CONTEXT, "broker_id": i % 3} if i % 2 else {**CONTEXT, "extra": i}  # runs' columns change
        g.add(report_runs(report, context))
        for name, make in REPORT_ROWS.items():
            rows[name] += make(report, context)
    written = {}
    monkeypatch.setattr(scan_task.table_files, "write", lambda name, t, *a: written.setdefault(name, t))
    g.write(str(tmp_path), "part")
    for name, want in rows.items():
        if want:
            assert written[name].to_pylist() == table(name, want).to_pylist(), name
        else:
            assert name not in written


def test_a_dirs_findings_and_partition_row_are_the_tables():
    for report in _dir_reports():
        runs = scan_task.report_rows(report, CONTEXT)
        found = scan_task.finding_rows(runs)
        assert found == fit_rows("findings", REPORT_ROWS["findings"](report, CONTEXT))
        assert run_rows(runs["partitions"]) == REPORT_ROWS["partitions"](report, CONTEXT)
