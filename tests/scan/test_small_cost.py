"""The cheaper per-partition paths of issue 26 answer as the plain ones: ``scan --out``'s rows built from fields equal
``to_jsonable``'s, the memoised epoch rebuild and comparison equal the direct calls, the replay's columns made in place
equal the stacked ones, and a fleet's tables equal with the batched path on and off.

The expected answers are the general paths' (``serialize.to_jsonable``/``dumps``, ``rebuild_from_batches`` and
``diff_caches``, ``np.stack`` of the columns, ``scan_log_dirs(batched=False)``), which the rest of the suite holds to
Kafka's code and the lab; the fleet is ``test_small_partitions``' varied one (healthy, damaged, torn, transactional,
indexed, epochs going back, several segments).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from kforensics.epoch.cache import LeaderEpochCache
from kforensics.epoch.diff import diff_caches
from kforensics.epoch.rebuild import rebuild_from_batches
from kforensics.epoch.versions import parse_kafka_version
from kforensics.log.batch_table import COL, NCOLS, BatchTable
from kforensics.replay.inputs import replay_columns
from kforensics.replay.replica import COLUMNS
from kforensics.scan import partition as partition_module
from kforensics.scan.broker import scan_log_dirs
from kforensics.serialize import dumps, to_jsonable
from kforensics.tables import schemas
from kforensics.tables.report_tables import jsonable_row, partitions_rows
from kforensics.tables.scan_tables import ScanParquet
from tests.conftest import ROOT
from tests.scan.test_small_partitions import _fleet

VERSIONS = [parse_kafka_version(v) for v in ("2.0", "2.8", "3.9")]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    return _fleet(tmp_path_factory.mktemp("fleet"))


def test_rows_from_fields_are_to_jsonable(fleet):
    report = scan_log_dirs([fleet])
    seen = 0
    for p in report.partitions:
        for obj in [*p.segments, *p.files, p.recovery]:
            assert jsonable_row(obj) == to_jsonable(obj)
            seen += 1
        assert json.loads(partitions_rows(report)[report.partitions.index(p)]["recovery"]) == to_jsonable(p.recovery)
        assert partitions_rows(report)[report.partitions.index(p)]["recovery"] == dumps(p.recovery)
    assert seen > 3 * len(report.partitions)
    # each partition's checkpoint JSON, encoded once per distinct checkpoint, is json.dumps' of it
    assert [r["epoch_cache_written"] for r in partitions_rows(report)] == [
        None if p.epoch_cache_written is None else json.dumps(p.epoch_cache_written) for p in report.partitions]
    assert len({r["epoch_cache_written"] for r in partitions_rows(report)}) > 3
    # a type with its own JSON form goes through it
    assert jsonable_row(report.partitions[0]) == to_jsonable(report.partitions[0])


@pytest.mark.parametrize("typ", [schemas.pa.list_(schemas.pa.int64()), schemas.pa.list_(schemas.pa.int32()),
                                 schemas.pa.bool_(), schemas.pa.float64(), schemas.pa.list_(schemas.pa.string())],
                         ids=str)
def test_columns_fit_as_each_value_fits(typ):
    values = [[], [0, 1, 2], None, [2**31, -1], [2**63], [True, 1], (1, 2), [1, None], [-(2**31) - 1], [1.0],
              True, False, 1.5, ["a", "\udcff"]]
    is_list = schemas.pa.types.is_list(typ)
    values = [v for v in values if v is None or isinstance(v, (list, tuple)) == is_list]
    assert schemas.fit_column(values, typ) == [schemas.fit(v, typ) for v in values]


def test_scan_out_tables_are_those_of_the_per_partition_path(fleet, tmp_path):
    tables = {}
    for batched in (False, True):
        out = tmp_path / str(batched)
        w = ScanParquet(out, {"cluster": "c", "broker_id": 1})
        report = scan_log_dirs([fleet], batched=batched, batch_sink=w.batches)
        w.finish(report)
        tables[batched] = {f.stem: pq.read_table(f) for f in out.glob("*.parquet")}
    assert set(tables[True]) == set(tables[False])
    for name, t in tables[False].items():
        assert tables[True][name].equals(t), name
    assert tables[True]["segments"].num_rows > 30


def _epoch_cases():
    rows = [(0, 0, 2), (1, 3, 2), (3, 7, 2)]
    back = [(2, 0, 2), (1, 2, 2), (3, 4, 2)]
    legacy = [(0, 0, 2), (-1, 3, 1), (2, 5, 2)]
    for written in ([(0, 0)], [(0, 0), (1, 3), (3, 7)], [(0, 0), (2, 9)], [(1, 5), (0, 6)], []):
        for batches in (rows, back, legacy, []):
            for leo, lso in ((10, 0), (8, 4), (None, None), (7, 7)):
                yield written, batches, leo, lso


@pytest.mark.parametrize("mode", VERSIONS, ids=lambda v: v.label)
def test_memoised_epoch_rebuild_and_comparison_are_the_direct_calls(mode):
    for written, batches, leo, lso in _epoch_cases():
        for _ in range(2):  # the second time from memory
            rebuilt, notes = partition_module._rebuilt(list(batches), mode)
            direct, direct_notes = rebuild_from_batches(batches, mode)
            assert (rebuilt.entries, rebuilt.mode, notes) == (direct.entries, direct.mode, direct_notes)
            got = partition_module._differences(written, rebuilt, leo, lso, mode)
            want = diff_caches(LeaderEpochCache(written, mode=mode), direct, leo, log_start_offset=lso)
            assert list(got) == want
            rebuilt.truncate_from_start(10**6)  # the caller's copy: memory is not changed by it
    long = [(e, e * 2, 2) for e in range(40)]
    assert partition_module._rebuilt(long, VERSIONS[-1])[0].entries == rebuild_from_batches(long)[0].entries


def test_fleet_scans_the_same_with_the_memo_off(fleet, monkeypatch):
    on = json.dumps(to_jsonable(scan_log_dirs([fleet])), sort_keys=True)
    monkeypatch.setattr(partition_module, "_MEMO_ROWS", -1)
    assert json.dumps(to_jsonable(scan_log_dirs([fleet])), sort_keys=True) == on


def _stacked(t: BatchTable, segment: int) -> np.ndarray:
    """The replay's columns as they were made before (one column each, stacked)."""
    cols = []
    for name in COLUMNS:
        if name == "base_offset":
            cols.append(t.first_offsets())
        elif name == "crc_valid":
            cols.append(t.crc_valid().astype(np.int64))
        elif name == "segment":
            cols.append(np.full(len(t), segment, dtype=np.int64))
        else:
            cols.append(t[name])
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("order", ["C", "F"])
def test_replay_columns_in_place_are_the_stacked_ones(order):
    rng = np.random.default_rng(26)
    data = np.asarray(rng.integers(-5, 2**40, size=(37, NCOLS)), order=order)
    data[::3, COL["crc_computed"]] = data[::3, COL["crc"]]  # some valid, most not
    data[::4, COL["base_offset"]] = -1  # legacy wrappers: the first offset is the last
    got = replay_columns(BatchTable(data), 3)
    assert got.dtype == np.int64 and got.flags.f_contiguous
    assert np.array_equal(got, _stacked(BatchTable(data), 3))
    assert replay_columns(BatchTable(data[:0]), 0).shape == (0, len(COLUMNS))


def _replay_document(brokers, metadata, events) -> str:
    from kforensics.replay.report import replay_all

    report = replay_all(brokers, events=events or None, metadata=metadata)
    return (json.dumps(to_jsonable(report.partitions), sort_keys=True)
            + json.dumps(to_jsonable(report.findings), sort_keys=True))


def _with_metadata_in_a_log_dir(tmp_path):
    """A scenario whose controller's metadata log is copied into broker 1's log dir (found there, not given)."""
    import shutil

    from kforensics.scenario.loading import load_scenario

    src = ROOT / "fixtures" / "scenarios" / "clean-election-leader-lost-tail"
    sc = load_scenario(src)
    dst = tmp_path / "copy"
    shutil.copytree(src, dst)
    shutil.copytree(dst / "controller" / "__cluster_metadata-0", dst / "broker-1" / "__cluster_metadata-0")
    return load_scenario(dst), sc


REPLAYED = [ROOT / "fixtures" / "tiered" / n for n in ("tiered-remote-local-gap", "tiered-unclean-orphans-remote")] + [
    ROOT / "fixtures" / "scenarios" / n for n in ("clean-election-leader-lost-tail", "healthy-3-brokers")]


@pytest.mark.parametrize("sdir", REPLAYED, ids=lambda p: p.name)
def test_replay_inputs_known_from_the_scans_are_those_listed_again(sdir, monkeypatch):
    """The metadata logs and remote log metadata among the log dirs, known from what the scans listed, give the
    replay that listing the log dirs again gives (the report's own second look, forced); the scans slimmed once the
    replicas are made give the replay the whole scans give."""
    from kforensics.replay import report as report_module
    from kforensics.scenario.loading import load_scenario

    sc = load_scenario(sdir)
    fast = _replay_document(sc.brokers, sc.metadata, sc.events)
    monkeypatch.setattr(report_module, "_scanned", lambda *a, **k: True)
    assert _replay_document(sc.brokers, sc.metadata, sc.events) == fast
    # and with every scan kept whole while the groups are replayed (not slimmed to what the replay reads)
    full = report_module.load_replicas
    monkeypatch.setattr(report_module, "load_replicas", lambda *a, **k: full(*a, **{**k, "slim": False}))
    assert _replay_document(sc.brokers, sc.metadata, sc.events) == fast


def test_a_metadata_log_among_the_log_dirs_is_found_without_a_second_listing(tmp_path, monkeypatch):
    from kforensics.replay import report as report_module

    sc, _ = _with_metadata_in_a_log_dir(tmp_path)
    fast = _replay_document(sc.brokers, None, sc.events)
    assert report_module._scanned(report_module.load_replicas(sc.brokers), "__cluster_metadata", suffixed=True)
    monkeypatch.setattr(report_module, "_scanned", lambda *a, **k: True)
    assert _replay_document(sc.brokers, None, sc.events) == fast


def test_a_slim_load_keeps_the_replicas_and_what_the_replay_reads_of_the_scans():
    from kforensics.replay.inputs import load_replicas
    from kforensics.scenario.loading import load_scenario
    from kforensics.tiered.evidence import scan_view

    sc = load_scenario(ROOT / "fixtures" / "tiered" / "tiered-remote-local-gap")
    whole, slim = load_replicas(sc.brokers), load_replicas(sc.brokers, slim=True)
    assert whole.groups.keys() == slim.groups.keys()
    for key, replicas in whole.groups.items():
        for a, b in zip(replicas, slim.groups[key]):
            assert np.array_equal(a.log.data, b.log.data) and a.source == b.source and a.recovery == b.recovery
    assert [r.partitions for r in whole.reports] == whole.scans
    for w, s, kept in zip(whole.reports, slim.reports, slim.scans):
        assert s.broker == w.broker and s.findings == w.findings and not (s.partitions or s.files or s.checkpoints)
        assert [(p.dir_name, vars(scan_view(p))) for p in w.partitions] == [
            (v.dir_name, {"path": v.path, "tiered": v.tiered, "segments": v.segments}) for v in kept]
        assert any(v.tiered is not None for v in kept)


def test_a_replay_lets_go_of_each_groups_replicas_once_it_is_replayed(fleet, monkeypatch):
    """A fleet's results take the place of its replicas: when a group is replayed, no replica of the groups
    replayed before it is held any more (the report is the same: every scenario's replay in the replay tests)."""
    import gc
    import weakref

    from kforensics.replay import report as report_module

    done: list[weakref.ref] = []
    held_before: list[int] = []
    replay = report_module.replay_group

    def watching(t, p, replicas, **kw):
        gc.collect()
        held_before.append(sum(r() is not None for r in done))
        out = replay(t, p, replicas, **kw)
        done.extend(weakref.ref(r) for r in replicas)
        return out

    monkeypatch.setattr(report_module, "replay_group", watching)
    report = report_module.replay_all([fleet])
    assert len(report.partitions) >= 20 and len(held_before) == len(report.partitions)
    assert held_before == [0] * len(held_before)
