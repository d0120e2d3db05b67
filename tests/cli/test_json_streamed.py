"""``replay``, ``scan`` and ``timeline --format json`` write their documents a list item at a time (#26: on 3 x 10 000
partitions the whole document's values and its 35 MB text were held at once, and replay peaked at 331 MB; a broker's
scan of 10 000 small dirs held 27 MB of text and peaked at 181 MB against 120 MB for its text output); the bytes are
those of the document written whole."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pytest

from kforensics.cli.json_out import document, dumps, write_streamed
from kforensics.cli.replay_inputs import replay_document
from kforensics.consumers.replay_impact import replay_impact
from kforensics.replay.report import replay_all
from kforensics.scenario import load_scenario
from tests.conftest import ROOT

SCENARIOS = ["unclean-leader-election", "transaction-marker-lost", "consumer-group-skips-forked-records",
             "damaged-batches-leader-zero-unclean", "healthy-3-brokers"]


def streamed_text(doc: dict) -> str:
    out = io.StringIO()
    write_streamed(doc, out)
    return out.getvalue()


@pytest.mark.parametrize("name", SCENARIOS)
def test_streamed_replay_document_is_the_whole_ones_bytes(name):
    sc = load_scenario(ROOT / "fixtures" / "scenarios" / name)
    rep = replay_all(sc.brokers, events=sc.events, metadata=sc.metadata)
    impact = replay_impact(rep, sc.log_dirs)
    whole = dumps(replay_document(rep, impact)) + "\n"
    assert streamed_text(replay_document(rep, impact, streamed=True)) == whole
    assert '"partitions": [{' in whole  # partitions were there to stream


@dataclass
class _Result:
    name: str
    partitions: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    _private: int = 0


@pytest.mark.parametrize("parts", [[], [{"a": 1}], [{"a": "\udcff\u00e9"}, b"\xff\x00", (1, 2)]])
def test_streamed_lists_empty_one_and_undecodable_names(parts):
    """No partition, one, and values the evidence may hold: an undecodable file name (surrogate escape), bytes,
    a tuple: the same text as written whole."""
    r = _Result("x\udc80", parts, [1])
    assert streamed_text(document("replay", r, ("partitions",))) == dumps(document("replay", r)) + "\n"


@pytest.mark.parametrize("name", ["healthy", "damaged", "damaged-clean"])
def test_streamed_scan_document_is_the_whole_ones_bytes(name):
    from kforensics.cli.scan import _SCAN_LISTS
    from kforensics.scan.broker import scan_log_dirs

    report = scan_log_dirs([ROOT / "fixtures" / "brokers" / name])
    whole = dumps(document("scan", report)) + "\n"
    assert streamed_text(document("scan", report, _SCAN_LISTS)) == whole
    for key in _SCAN_LISTS:
        assert f'"{key}": [' in whole  # each list streamed is one of the document's


def _fleet(root, n: int):
    from tests.scan.test_memory_bounded import _log_dir

    return _log_dir(root, 3, partitions=n)


def _cli_scan_peak(monkeypatch, log_dir, fmt: str) -> int:
    """Peak bytes traced while the CLI's scan writes its output (the scan itself done beforehand, the same for
    both formats), to a sink that keeps nothing."""
    import tracemalloc

    from kforensics.cli import scan as scan_cli
    from kforensics.epoch.versions import LATEST
    from kforensics.scan import broker
    from kforensics.severity import Severity

    report = broker.scan_log_dirs([log_dir])
    monkeypatch.setattr(broker, "scan_log_dirs", lambda *a, **k: report)
    sink = io.TextIOWrapper(io.BufferedWriter(_NullRaw()), encoding="utf-8")
    monkeypatch.setattr("sys.stdout", sink)
    tracemalloc.start()
    try:
        with pytest.raises(SystemExit):
            scan_cli._scan((str(log_dir),), fmt, None, Severity.HIGH, LATEST, None, (), False)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


class _NullRaw(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        return len(b)


def test_scan_json_of_a_fleet_is_not_held_whole(tmp_path, monkeypatch):
    """2 000 small partition dirs: the JSON document (about 5 MB of text, more as values) costs no more memory to
    write than the text table of the same scan does."""
    log_dir = _fleet(tmp_path, 2_000)
    text = _cli_scan_peak(monkeypatch, log_dir, "text")
    as_json = _cli_scan_peak(monkeypatch, log_dir, "json")
    assert as_json < text + 2_000_000, (as_json, text)


def _timeline_inputs(real: bool) -> list:
    if not real:
        return sorted((ROOT / "fixtures" / "scenarios").glob("*/controller"))
    from tests.conftest import REALDATA, need_shared

    logs = [p for p in need_shared(REALDATA).rglob("__cluster_metadata-0") if p.is_dir()]
    # the four smallest metadata logs (seconds, not tens of them; they hold several topics)
    return sorted(p.parent for p in sorted(logs, key=lambda p: sum(f.stat().st_size for f in p.iterdir()))[:4])


@pytest.mark.parametrize("real", [False, True], ids=["scenarios", "realdata"])
def test_timeline_json_is_the_whole_documents_bytes(real):
    """``timeline --format json`` writes its partitions one at a time: the bytes of the whole document, and with
    ``--topic`` those of the whole document's partitions of that topic only."""
    from click.testing import CliRunner

    from kforensics.cli.timeline import timeline
    from kforensics.kraft.timeline import build_timeline
    from kforensics.log.sources import resolve

    dirs = _timeline_inputs(real)
    assert dirs
    filtered = 0
    for d in dirs:
        tl = build_timeline([resolve(str(d))])
        whole = document("timeline", tl)
        topics = sorted({p["topic"] for p in whole["partitions"]})
        for topic in [None, *topics[:1]]:
            want = dict(whole, partitions=[p for p in whole["partitions"] if topic in (None, p["topic"])])
            got = CliRunner().invoke(timeline, [str(d), "--format", "json", *(["--topic", topic] if topic else [])])
            assert got.exit_code == 0, got.output
            assert got.output == dumps(want) + "\n"
            filtered += topic is not None and len(topics) > 1
    assert filtered or not real  # the real metadata logs hold several topics: the filter is exercised
