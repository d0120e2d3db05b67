"""Text renderers: escaping, finding lines, the scan table (plain and rich), summary lines."""

from __future__ import annotations

import io
import re
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kforensics.cli.common import (
    finding_line,
    payload_text,
    printable,
    severity_counts,
    stdout_is_terminal,
    summary_line,
)
from kforensics.cli.scan_text import COLUMNS, finding_topic, plain_table, render_scan_text
from kforensics.findings import Finding, Severity, finding
from kforensics.scan.model import BrokerIdentity, PartitionScan, ScanReport

CONTROL = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


# ---------------------------------------------------------------- printable / payload_text


@pytest.mark.parametrize("text,shown", [
    ("plain text", "plain text"),
    ("héllo wörld 日本 ✓", "héllo wörld 日本 ✓"),
    ("a\x00b", "a\\x00b"),
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("tab\tnew\nret\r", "tab\\tnew\\nret\\r"),
    ("del\x7f", "del\\x7f"),
    ("\x9b", "\\x9b"),  # C1 CSI
    ("zero\u200bwidth", "zero\\u200bwidth"),
    ("rtl\u202eoverride", "rtl\\u202eoverride"),
    ("line\u2028sep", "line\\u2028sep"),
    ("tag\U000e0001", "tag\\U000e0001"),
])
def test_printable_escapes_what_a_terminal_would_interpret(text, shown):
    assert printable(text) == shown


@given(st.text())
def test_printable_output_is_always_printable(text):
    out = printable(text)
    assert out.isprintable()
    assert "\x00" not in out and "\x1b" not in out
    if text.isprintable():
        assert out == text


@pytest.mark.parametrize("data,shown", [
    (None, "null"),
    (b"", ""),
    (b"hello", "hello"),
    ("héllo 日本".encode(), "héllo 日本"),
    ("a\u00a0b\u3000c".encode(), "a\u00a0b\u3000c"),  # spaces that are not ASCII stay spaces
    (b"a\x00b", "a\\x00b"),
    (b"\x1b[2J", "\\x1b[2J"),
    (b"\xff\xfe\x00", "\\xff\\xfe\\x00"),  # not UTF-8: byte escapes
    (b"\xffback\\slash", "\\xffback\\x5cslash"),  # ... where a backslash is escaped too
    (bytearray(b"ba"), "ba"),
    (memoryview(b"mv"), "mv"),
])
def test_payload_text_shows_printable_utf8_and_escapes_the_rest(data, shown):
    assert payload_text(data) == shown


@given(st.binary(max_size=64))
def test_payload_text_never_lets_a_control_character_through(data):
    out = payload_text(data)
    assert not any(unicodedata.category(ch) in CONTROL for ch in out)
    if not data:
        assert out == ""


@given(st.binary(max_size=64).filter(lambda b: not _utf8(b)))
def test_non_utf8_payloads_are_ascii_escapes_that_decode_back(data):
    out = payload_text(data)
    assert out.isascii()
    assert out.encode("ascii").decode("unicode_escape").encode("latin-1") == data


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# ---------------------------------------------------------------- finding_line


def test_finding_line_names_severity_code_file_and_byte():
    f = finding("CRC_MISMATCH", "CRC-32C mismatch: stored 1, computed 2", file="/d/orders-0/00.log", position=85,
                stored=1, computed=2)
    assert finding_line(f) == "HIGH CRC_MISMATCH /d/orders-0/00.log @ byte 85: CRC-32C mismatch: stored 1, computed 2"


def test_finding_line_at_byte_zero_and_on_a_text_line():
    assert "@ byte 0:" in finding_line(finding("ZERO_TAIL", "z", file="f.log", position=0))
    assert finding_line(Finding("UNKNOWN_FILE", Severity.LOW, "m", file="cp", line=3)) == "LOW UNKNOWN_FILE cp line 3: m"


def test_finding_line_has_no_python_repr():
    f = Finding("UNKNOWN_FILE", Severity.MEDIUM, "odd", file=None, position=None, line=None,
                facts={"a": {"b": None}, "c": [1, None]})
    line = finding_line(f)
    assert line.startswith("MEDIUM UNKNOWN_FILE")
    assert "None" not in line and "{" not in line and "'" not in line and "[1" not in line
    assert line.endswith(": odd")


def test_finding_line_escapes_file_and_message():
    f = finding("UNKNOWN_FILE", "bad\nname\x1b[2J", file="/d/evil\x1bname")
    line = finding_line(f)
    assert "\x1b" not in line and "\n" not in line
    assert "/d/evil\\x1bname" in line and "bad\\nname\\x1b[2J" in line


# ---------------------------------------------------------------- summary_line


def test_summary_line_counts_by_severity_from_worst():
    fs = [finding("ZERO_TAIL", "a"), finding("CRC_MISMATCH", "b"), finding("UNKNOWN_FILE", "c"),
          finding("UNKNOWN_FILE", "d"), Finding("X", Severity.CRITICAL, "e")]
    counts = severity_counts(fs)
    assert list(counts) == ["critical", "high", "medium", "low", "info"]
    assert counts == {"critical": 1, "high": 1, "medium": 1, "low": 2, "info": 0}
    assert summary_line(counts) == "summary: 5 findings (1 critical, 1 high, 1 medium, 2 low)"
    assert summary_line(severity_counts([])) == "summary: no findings"
    assert summary_line({"info": 2}, noun="verdicts") == "summary: 2 verdicts (2 info)"


# ---------------------------------------------------------------- render_scan_text


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def report(names: list[str], findings: list[Finding], cluster: str = "c-1") -> ScanReport:
    parts = []
    for name in names:
        topic, _, n = name.rpartition("-")
        p = PartitionScan(log_dir="/d", dir_name=name, topic=topic, partition=int(n), log_start_offset=0,
                          log_end_offset=10, high_watermark=8, batch_count=3,
                          epoch_cache_written=[(0, 0), (1, 5)])
        parts.append(p)
    return ScanReport(BrokerIdentity(node_id=1, cluster_id=cluster, log_dirs=["/d"]), parts, findings, [])


MARKUP = ["[/x]", "[bold]", "[link=file:///etc/passwd]x[/link]", "[red]", "\\[escaped]"]


@pytest.mark.parametrize("tty", [False, True])
def test_rich_markup_in_evidence_renders_verbatim(tty, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # a wide terminal: the table has room for every column
    fs = [finding("UNKNOWN_FILE", f"message {m}", file=f"/d/{m}") for m in MARKUP]
    out = FakeTTY() if tty else io.StringIO()
    render_scan_text(report(["[/x]-0", "[bold]-1"], fs, cluster="[/x]"), out, verbose=True)
    text = out.getvalue()
    for m in MARKUP:
        assert f"message {m}" in text and f"/d/{m}" in text
    assert "[/x]-0" in text and "[bold]-1" in text
    assert text.splitlines()[1] == "broker 1  cluster [/x]  log dirs: /d"
    assert text.rstrip("\n").endswith("summary: 2 partitions; 5 findings (5 low)")


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _terminal_lines(text: str) -> list[str]:
    return [ANSI.sub("", line) for line in text.splitlines()]


def _row(lines: list[str], name: str) -> list[str]:
    """The cells of the table row of partition ``name`` (the frame's characters dropped)."""
    (row,) = [line for line in lines if re.search(rf"(^|[ │┃]){re.escape(name)} ", line)]
    return [c for c in row.split() if c not in "│┃"]


ROW_CELLS = ["0", "3", "0", "10", "8", "2", "-", "0:0", "1:5", "0"]


def test_terminal_table_keeps_partition_names_on_an_80_column_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = FakeTTY()
    render_scan_text(report(["orders-0", "t-1"], []), out)
    lines = _terminal_lines(out.getvalue())
    assert all(len(line) <= 80 for line in lines), lines
    # every cell whole on the partition's line: the name, the LEO (10), the epochs
    assert _row(lines, "orders-0") == ["orders-0", *ROW_CELLS]
    assert _row(lines, "t-1") == ["t-1", *ROW_CELLS]
    assert "…" not in out.getvalue()
    assert lines[-1] == "summary: 2 partitions; no findings"


@pytest.mark.parametrize("columns", [40, 60, 79, 80, 90, 104, 105, 132, 200])
@pytest.mark.parametrize("names", [
    ["orders-0", "t-1"],
    ["payments.settlement.v2-12", "orders-0"],
    ["日本語のトピック-3", "x-0"],
    ["t" * 70 + "-0"],
])
def test_terminal_table_never_cuts_a_partition_name_or_a_number(monkeypatch, columns, names):
    monkeypatch.setenv("COLUMNS", str(columns))
    out = FakeTTY()
    r = report(names, [])
    r.partitions[0].log_end_offset = 1234567890123
    render_scan_text(r, out)
    text = out.getvalue()
    lines = _terminal_lines(text)
    assert "…" not in text
    plain = "partitions" in lines and lines[lines.index("partitions") + 1].split()[:2] == ["partition", "segs"]
    if not plain:  # the rich table fits the terminal: no line is wider
        from rich.cells import cell_len

        assert all(cell_len(line) <= columns for line in lines), lines
    # names and numbers whole on the partition's line (only "at next start" and the epochs may wrap)
    assert _row(lines, names[0])[:7] == [names[0], "0", "3", "0", "1234567890123", "8", "1234567890115"]
    for name in names[1:]:
        assert _row(lines, name)[:7] == [name, *ROW_CELLS[:6]]
    assert text.count("0:0") == text.count("1:5") == len(names)


def test_terminal_table_is_framed_when_the_terminal_is_wide_enough(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    out = FakeTTY()
    render_scan_text(report(["orders-0"], []), out)
    lines = _terminal_lines(out.getvalue())
    assert any(line.startswith("┏") for line in lines)
    header = [c for c in next(line for line in lines if line.startswith("┃")).split("┃") if c.strip()]
    assert [c.strip() for c in header] == list(COLUMNS)
    assert _row(lines, "orders-0") == ["orders-0", *ROW_CELLS]


def test_a_terminal_too_narrow_for_the_table_gets_the_plain_table(monkeypatch):
    monkeypatch.setenv("COLUMNS", "50")
    out = FakeTTY()
    name = "a-rather-long-topic-name-0"
    render_scan_text(report([name], []), out)
    lines = out.getvalue().splitlines()
    assert lines[2] == "partitions" and lines[3].split()[:2] == ["partition", "segs"]
    (row,) = [line for line in lines if line.startswith(name + "  ")]
    assert row.split() == [name, *ROW_CELLS]


def test_plain_table_never_truncates_a_long_partition_name():
    name = "t" * 148 + "-0"
    assert len(name) == 150
    out = io.StringIO()
    render_scan_text(report([name], []), out)
    lines = out.getvalue().splitlines()
    assert lines[2] == "partitions"
    (row,) = [line for line in lines if name in line]
    assert row.startswith(name + "  ")
    assert lines[-1] == "summary: 1 partition; no findings"


def test_plain_table_aligns_columns_to_the_widest_cell():
    lines = plain_table(("partition", "LEO"), [["a-0", "5"], ["long-topic-1", "12345"]], {"partition"})
    assert lines == ["partition       LEO", "a-0               5", "long-topic-1  12345"]


def test_partition_row_shows_offsets_epochs_and_findings():
    out = io.StringIO()
    r = report(["orders-0"], [])
    r.partitions[0].findings = [finding("CRC_MISMATCH", "x", file="/d/orders-0/0.log", position=3)]
    render_scan_text(r, out)
    (row,) = [line for line in out.getvalue().splitlines() if line.startswith("orders-0")]
    assert row.split() == ["orders-0", "0", "3", "0", "10", "8", "2", "-", "0:0", "1:5", "1", "(high)"]


def test_min_severity_filters_the_list_but_not_the_summary():
    fs = [finding("CRC_MISMATCH", "high one", file="/d/a"), finding("UNKNOWN_FILE", "low one", file="/d/b")]
    out = io.StringIO()
    render_scan_text(report(["orders-0"], fs), out, min_severity=Severity.HIGH)
    text = out.getvalue()
    assert "1 finding at or above high" in text
    assert "HIGH CRC_MISMATCH /d/a: high one" in text.splitlines()
    # the low one is counted with its example, not listed
    assert "LOW UNKNOWN_FILE /d/b: low one" not in text.splitlines()
    assert "  1 LOW UNKNOWN_FILE, e.g. /d/b: low one" in text.splitlines()
    assert text.splitlines()[-1] == "summary: 1 partition; 2 findings (1 high, 1 low)"


def test_topic_filter_keeps_the_topics_partitions_and_broker_level_findings():
    fs = [finding("UNKNOWN_FILE", "in orders", file="/d/orders-0/x"), finding("UNKNOWN_FILE", "at the root")]
    out = io.StringIO()
    render_scan_text(report(["orders-0", "payments-0"], fs), out, topics={"orders"}, verbose=True)
    text = out.getvalue()
    assert "in orders" in text and "at the root" in text
    assert [line.split()[0] for line in text.splitlines() if line.startswith(("orders-", "payments-"))] == ["orders-0"]


def test_topic_filter_does_not_list_findings_of_a_topic_that_only_shares_a_prefix():
    fs = [finding("UNKNOWN_FILE", "in orders", file="/d/orders-0/x"),
          finding("UNKNOWN_FILE", "in orders-events", file="/d/orders-events-0/x")]
    out = io.StringIO()
    render_scan_text(report(["orders-0", "orders-events-0"], fs), out, topics={"orders"}, min_severity=Severity.LOW)
    lines = out.getvalue().splitlines()
    assert "LOW UNKNOWN_FILE /d/orders-0/x: in orders" in lines
    assert not any("orders-events" in line for line in lines)
    assert lines[-1] == "summary: 1 partition; 1 finding (1 low)"
    # and the other way round
    out = io.StringIO()
    render_scan_text(report(["orders-0", "orders-events-0"], fs), out, topics={"orders-events"},
                     min_severity=Severity.LOW)
    lines = out.getvalue().splitlines()
    assert "LOW UNKNOWN_FILE /d/orders-events-0/x: in orders-events" in lines
    assert not any(": in orders" == line[-len(": in orders"):] for line in lines)
    assert lines[-1] == "summary: 1 partition; 1 finding (1 low)"


@pytest.mark.parametrize("file,topic", [
    ("/d/orders-0/00000000000000000000.log", "orders"),
    ("/d/orders-0", "orders"),  # the partition directory itself
    ("/d/orders-events-12/leader-epoch-checkpoint", "orders-events"),
    ("/d/orders-0/junk-7", "orders"),  # an unknown file that looks like a partition dir
    ("/d/orders-3.0123456789abcdef0123456789abcdef-delete/00000000000000000000.log", "orders"),
    ("/d/orders-3.0123456789abcdef0123456789abcdef-future", "orders"),
    ("/d/replication-offset-checkpoint", None),  # the log dir's own files belong to no topic
    ("/d", None),
    ("/data/kafka-logs-1/replication-offset-checkpoint", None),  # a log dir named like a partition dir
    ("/data/kafka-logs-1", None),
    ("/data/kafka-logs-1/orders-0/x", "orders"),
    ("/snap.tgz!/data/kafka-logs-1/orders-0/00000000000000000000.index", "orders"),
    ("/elsewhere/orders-events-0/x", "orders-events"),  # under no known log dir: its parent directory
    ("/elsewhere/orders-events-0/junk-7", "orders-events"),
    ("/elsewhere/orders-events-0", "orders-events"),
])
def test_finding_topic_is_the_topic_of_the_partition_directory(file, topic):
    log_dirs = ["/snap.tgz!/data/kafka-logs-1", "/data/kafka-logs-1", "/d"]
    assert finding_topic(finding("UNKNOWN_FILE", "x", file=file), log_dirs) == topic
    assert finding_topic(finding("UNKNOWN_FILE", "x"), log_dirs) is None


def test_topic_filter_keeps_findings_of_deleted_and_future_directories_of_the_topic():
    fs = [finding("UNKNOWN_FILE", "deleted orders", file="/d/orders-1.0123456789abcdef0123456789abcdef-delete/x"),
          finding("UNKNOWN_FILE", "root file", file="/d/cleaner-offset-checkpoint")]
    out = io.StringIO()
    render_scan_text(report(["orders-0"], fs), out, topics={"orders"}, min_severity=Severity.LOW)
    text = out.getvalue()
    assert "LOW UNKNOWN_FILE /d/orders-1.0123456789abcdef0123456789abcdef-delete/x: deleted orders\n" in text
    assert "root file" not in text


# ---------------------------------------------------------------- stdout_is_terminal


@pytest.mark.parametrize("stream,expected", [(FakeTTY(), True), (io.StringIO(), False)])
def test_stdout_is_terminal_asks_sys_stdout(monkeypatch, stream, expected):
    monkeypatch.setattr(sys, "stdout", stream)
    assert stdout_is_terminal() is expected


def test_topic_filter_on_a_scanned_log_dir_lists_only_that_topics_findings(tmp_path):
    from kforensics.formats.record_batch import RecordData, build_batch
    from kforensics.scenario.writer import LogDirWriter
    from kforensics.scan.broker import scan_log_dirs

    # a log dir named like a partition dir, two topics sharing a prefix, each with 3 torn bytes after its batch
    w = LogDirWriter(tmp_path / "kafka-logs-1")
    for topic in ("orders", "orders-events"):
        w.partition(topic, 0).append(build_batch([RecordData(0, 1_700_000_000_000, b"k", b"v")],
                                                 partition_leader_epoch=0))
        w.high_watermarks[(topic, 0)] = w.recovery_points[(topic, 0)] = 1
    d = w.write()
    segs = {t: d / f"{t}-0" / "00000000000000000000.log" for t in ("orders", "orders-events")}
    ends = {t: seg.stat().st_size for t, seg in segs.items()}
    for seg in segs.values():
        seg.write_bytes(seg.read_bytes() + b"\x01\x02\x03")
    report = scan_log_dirs([d])
    for topic in segs:
        out = io.StringIO()
        render_scan_text(report, out, topics={topic})
        lines = out.getvalue().splitlines()
        where = f"{segs[topic]} @ byte {ends[topic]}:"
        assert [line.split(":")[0] + ":" for line in lines if line.startswith(("HIGH ", "MEDIUM "))] == [
            f"HIGH RECOVERY_WOULD_TRUNCATE {where}", f"MEDIUM TRAILING_BYTES {where}"]
        assert [line.split()[0] for line in lines if line.startswith("orders")] == [f"{topic}-0"]
        assert lines[-1] == "summary: 1 partition; 2 findings (1 high, 1 medium)"


def test_finding_line_without_a_file_has_no_stray_space_before_the_colon():
    # HEAD: "CRITICAL COMMITTED_DATA_LOST : broker 2: ..." and timeline's "INFO METADATA_RECORDS_SUPERSEDED : ..."
    f = Finding("COMMITTED_DATA_LOST", Severity.CRITICAL, "broker 2: 3 batch(es) lost")
    assert finding_line(f) == "CRITICAL COMMITTED_DATA_LOST: broker 2: 3 batch(es) lost"
    assert finding_line(Finding("X", Severity.INFO, "m", line=4)) == "INFO X line 4: m"
    assert finding_line(Finding("X", Severity.LOW, "m", position=7)) == "LOW X @ byte 7: m"
