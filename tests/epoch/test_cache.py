"""Leader-epoch cache model: §7 branch logic per version, §7 examples, §11 S5 vectors, properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kforensics.epoch.cache import UNDEFINED, EpochEndOffset, LeaderEpochCache
from kforensics.epoch.diff import diff_caches
from kforensics.epoch import rebuild as rebuild_module
from kforensics.epoch.rebuild import epoch_transitions, rebuild_from_batches
from kforensics.epoch.versions import (
    KAFKA_0_10,
    KAFKA_0_11,
    KAFKA_2_0_0,
    KAFKA_2_0_1,
    LATEST,
    KafkaVersion,
    parse_kafka_version,
)

ALL_EPOCH_MODES = [KAFKA_0_11, KAFKA_2_0_0, KAFKA_2_0_1, LATEST]
SINCE_2_0_1 = [KAFKA_2_0_1, LATEST, parse_kafka_version("2.8"), parse_kafka_version("3.9")]


def cache(mapping: dict[int, int], mode: KafkaVersion = LATEST) -> LeaderEpochCache:
    return LeaderEpochCache(sorted(mapping.items()), mode)


def as_dict(c: LeaderEpochCache) -> dict[int, int]:
    return dict(c.entries)


# ---------------------------------------------------------------- versions


@pytest.mark.parametrize("text, has_epochs, with_epoch, k7415, on_fetch, cache_mode", [
    ("0.10", False, False, False, False, "none"),
    ("0.10.2.1", False, False, False, False, "none"),
    ("0.11", True, False, False, False, "0.11"),
    ("0.11.0.3", True, False, False, False, "0.11"),
    ("1.1", True, False, False, False, "0.11"),
    ("1.1.1", True, False, False, False, "0.11"),
    ("2.0", True, True, False, False, "2.0.0"),
    ("2.0.0", True, True, False, False, "2.0.0"),
    ("2.0.1", True, True, True, False, "2.0.1"),
    ("2.1", True, True, True, False, "2.0.1"),
    ("2.7.2", True, True, True, False, "2.0.1"),
    ("2.8", True, True, True, True, "2.0.1"),
    ("3.9", True, True, True, True, "2.0.1"),
    ("4.0.0-SNAPSHOT", True, True, True, True, "2.0.1"),
    ("latest", True, True, True, True, "2.0.1"),
    (" Latest ", True, True, True, True, "2.0.1"),
])
def test_parse_kafka_version_maps_releases_to_behaviour(text, has_epochs, with_epoch, k7415, on_fetch, cache_mode):
    v = parse_kafka_version(text)
    assert (v.has_epochs, v.answers_with_epoch, v.kafka_7415, v.truncate_on_fetch, v.cache_mode) == (
        has_epochs, with_epoch, k7415, on_fetch, cache_mode)
    assert v.monotonic_assign == v.leader_assigns_on_election == k7415


@pytest.mark.parametrize("text", ["", "two", "2", "2.x", "2.8.1.1", "latest2"])
def test_parse_kafka_version_rejects_garbage(text):
    with pytest.raises(ValueError):
        parse_kafka_version(text)


def test_parse_kafka_version_equality_ignores_label_and_passes_instances_through():
    assert parse_kafka_version("2.0") == KAFKA_2_0_0
    assert parse_kafka_version("v2.0.1") == KAFKA_2_0_1
    assert parse_kafka_version(KAFKA_0_11) is KAFKA_0_11
    assert str(parse_kafka_version("3.9")) == "3.9"


# ---------------------------------------------------------------- assign (§7 examples from {0:0, 2:10})


def test_assign_same_epoch_later_offset_is_a_no_op():
    c = cache({0: 0, 2: 10})
    r = c.assign(2, 15)
    assert not r and r.removed == ()
    assert as_dict(c) == {0: 0, 2: 10}


def test_assign_same_epoch_earlier_offset_moves_the_start_back():
    c = cache({0: 0, 2: 10})
    changed, removed = c.assign(2, 5)
    assert changed and removed == ((2, 10),)
    assert as_dict(c) == {0: 0, 2: 5}


def test_assign_new_epoch_at_same_offset_drops_the_empty_epoch():
    c = cache({0: 0, 2: 10})
    r = c.assign(3, 10)
    assert r.changed and r.removed == ((2, 10),) and not r.conflicting
    assert as_dict(c) == {0: 0, 3: 10}


def test_assign_older_epoch_at_later_offset_drops_newer_epochs():
    c = cache({0: 0, 2: 10})
    r = c.assign(1, 20)
    assert r.changed and r.removed == ((2, 10),) and r.conflicting
    assert as_dict(c) == {0: 0, 1: 20}


def test_assign_appends_a_newer_epoch_at_a_later_offset():
    c = cache({0: 0, 2: 10})
    assert c.assign(3, 12)
    assert as_dict(c) == {0: 0, 2: 10, 3: 12}


def test_assign_to_empty_cache_creates_the_first_entry():
    c = LeaderEpochCache()
    assert c.assign(4, 7)
    assert c.entries == [(4, 7)] and c.latest_epoch == 4


@pytest.mark.parametrize("mode", ALL_EPOCH_MODES)
@pytest.mark.parametrize("epoch, start", [(-1, 0), (0, -1), (-5, -5)])
def test_assign_rejects_negative_epoch_or_offset(mode, epoch, start):
    with pytest.raises(ValueError):
        LeaderEpochCache(mode=mode).assign(epoch, start)


@pytest.mark.parametrize("mode", [KAFKA_0_11, KAFKA_2_0_0])
@pytest.mark.parametrize("epoch, start", [(2, 5), (1, 20), (2, 15), (3, 9)])
def test_assign_before_2_0_1_ignores_entries_that_do_not_extend_the_cache(mode, epoch, start):
    c = cache({0: 0, 2: 10}, mode)
    r = c.assign(epoch, start)
    assert not r.changed and r.removed == ()
    assert as_dict(c) == {0: 0, 2: 10}


@pytest.mark.parametrize("mode", [KAFKA_0_11, KAFKA_2_0_0])
def test_assign_before_2_0_1_appends_newer_epoch_at_same_or_later_offset(mode):
    c = cache({0: 0, 2: 10}, mode)
    assert c.assign(3, 10)
    assert as_dict(c) == {0: 0, 2: 10, 3: 10}


# ---------------------------------------------------------------- truncation


def test_truncate_from_start_restarts_the_epoch_current_at_the_new_start():
    c = cache({0: 0, 1: 5, 2: 10})
    removed = c.truncate_from_start(7)
    assert removed == [(0, 0), (1, 5)]
    assert as_dict(c) == {1: 7, 2: 10}


def test_truncate_from_start_before_first_entry_changes_nothing():
    c = cache({3: 10, 4: 20})
    assert c.truncate_from_start(9) == []
    assert as_dict(c) == {3: 10, 4: 20}


def test_truncate_from_start_exactly_at_an_entry_keeps_that_entry():
    c = cache({0: 0, 1: 5, 2: 10})
    c.truncate_from_start(10)
    assert as_dict(c) == {2: 10}


def test_truncate_from_end_removes_entries_starting_at_or_after_the_end():
    c = cache({0: 0, 1: 5, 2: 10})
    assert c.truncate_from_end(5) == [(1, 5), (2, 10)]
    assert as_dict(c) == {0: 0}


def test_truncate_from_end_above_latest_start_changes_nothing():
    c = cache({0: 0, 1: 5})
    assert c.truncate_from_end(6) == []
    assert c.truncate_from_end(-1) == []
    assert as_dict(c) == {0: 0, 1: 5}


def test_truncate_from_end_at_leo_removes_the_leaders_empty_epoch():
    # 2.0.1+: a new leader records its epoch at its LEO; truncating to the LEO removes it again.
    c = cache({0: 0, 2: 1})
    assert c.truncate_from_end(1) == [(2, 1)]
    assert as_dict(c) == {0: 0}


# ---------------------------------------------------------------- end_offset_for branches


@pytest.mark.parametrize("mode", ALL_EPOCH_MODES)
def test_end_offset_for_undefined_epoch_is_undefined(mode):
    assert cache({0: 0, 2: 10}, mode).end_offset_for(-1, 20) == UNDEFINED


@pytest.mark.parametrize("mode", [KAFKA_2_0_0, *SINCE_2_0_1])
def test_end_offset_for_latest_epoch_returns_log_end_offset(mode):
    assert cache({0: 0, 2: 10}, mode).end_offset_for(2, 20) == (2, 20)


def test_end_offset_for_latest_epoch_on_0_11_returns_log_end_offset_only():
    assert cache({0: 0, 2: 10}, KAFKA_0_11).end_offset_for(2, 20) == (-1, 20)


@pytest.mark.parametrize("mode", ALL_EPOCH_MODES)
def test_end_offset_for_epoch_newer_than_cache_is_undefined(mode):
    assert cache({0: 0, 2: 10}, mode).end_offset_for(3, 20) == UNDEFINED


@pytest.mark.parametrize("mode", ALL_EPOCH_MODES)
def test_end_offset_for_any_epoch_on_empty_cache_is_undefined(mode):
    assert LeaderEpochCache(mode=mode).end_offset_for(0, 5) == UNDEFINED


@pytest.mark.parametrize("mode", SINCE_2_0_1)
def test_end_offset_for_epoch_below_first_returns_requested_and_first_start_since_2_0_1(mode):
    assert cache({2: 4, 3: 9}, mode).end_offset_for(1, 12) == (1, 4)


def test_end_offset_for_epoch_below_first_is_undefined_on_2_0_0():
    assert cache({2: 4, 3: 9}, KAFKA_2_0_0).end_offset_for(1, 12) == UNDEFINED


def test_end_offset_for_epoch_below_first_is_undefined_on_0_11():
    assert cache({2: 4, 3: 9}, KAFKA_0_11).end_offset_for(1, 12) == UNDEFINED


@pytest.mark.parametrize("mode", [KAFKA_2_0_0, *SINCE_2_0_1])
def test_end_offset_for_cached_epoch_returns_it_with_next_epoch_start(mode):
    assert cache({0: 0, 2: 10, 4: 15}, mode).end_offset_for(2, 20) == (2, 15)


@pytest.mark.parametrize("mode", [KAFKA_2_0_0, *SINCE_2_0_1])
def test_end_offset_for_absent_epoch_between_cached_returns_floor_epoch_and_next_start(mode):
    assert cache({0: 0, 2: 10, 4: 15}, mode).end_offset_for(3, 20) == (2, 15)


def test_end_offset_for_absent_epoch_between_cached_on_0_11_returns_next_start_only():
    assert cache({0: 0, 2: 10, 4: 15}, KAFKA_0_11).end_offset_for(3, 20) == (-1, 15)


def test_end_offset_for_without_epochs_before_0_11_is_always_undefined():
    assert cache({0: 0, 2: 10}, KAFKA_0_10).end_offset_for(2, 20) == UNDEFINED


def test_end_offset_for_returns_a_named_pair():
    answer = cache({0: 0}).end_offset_for(0, 3)
    assert isinstance(answer, EpochEndOffset) and answer.epoch == 0 and answer.end_offset == 3
    assert not answer.undefined and UNDEFINED.undefined


# ---------------------------------------------------------------- §11 S5 vectors

S5_LEADER = {1: 0, 3: 1, 5: 2}
S5_FOLLOWER = {0: 0, 2: 1, 4: 2}


@pytest.mark.parametrize("mode", SINCE_2_0_1)
@pytest.mark.parametrize("requested, answer", [(4, (3, 2)), (2, (1, 1)), (0, (0, 0))])
def test_s5_leader_answers_each_round_since_2_0_1(mode, requested, answer):
    assert cache(S5_LEADER, mode).end_offset_for(requested, 3) == answer


def test_s5_round_three_is_undefined_on_2_0_0():
    leader = cache(S5_LEADER, KAFKA_2_0_0)
    assert leader.end_offset_for(4, 3) == (3, 2)
    assert leader.end_offset_for(2, 3) == (1, 1)
    assert leader.end_offset_for(0, 3) == UNDEFINED


def test_s5_follower_rounds_replayed_by_hand():
    # The follower's own answers and truncations per round (§11 S5 table).
    follower, leader = cache(S5_FOLLOWER), cache(S5_LEADER)
    leo = 3
    expected = [((3, 2), (2, 2), 2, {0: 0, 2: 1}), ((1, 1), (0, 1), 1, {0: 0}), ((0, 0), (0, 1), 0, {})]
    request = follower.latest_epoch
    for leader_answer, own_answer, truncate_to, after in expected:
        got = leader.end_offset_for(request, 3)
        assert got == leader_answer
        own = follower.end_offset_for(got.epoch, leo)
        assert own == own_answer
        leo = min(got.end_offset, own.end_offset, leo) if own.epoch == got.epoch else min(got.end_offset, leo)
        assert leo == truncate_to
        follower.truncate_from_end(leo)
        assert as_dict(follower) == after
        request = follower.latest_epoch


@pytest.mark.parametrize("mode", SINCE_2_0_1)
def test_request_below_leaders_first_epoch_returns_requested_and_first_start_since_2_0_1(mode):
    assert cache({5: 100}, mode).end_offset_for(3, 150) == (3, 100)


@pytest.mark.parametrize("mode", [KAFKA_0_11, parse_kafka_version("1.1.1"), KAFKA_2_0_0])
def test_request_below_leaders_first_epoch_is_undefined_before_2_0_1(mode):
    assert cache({5: 100}, mode).end_offset_for(3, 150) == UNDEFINED


# ---------------------------------------------------------------- epoch_for_offset, plumbing


def test_epoch_for_offset_finds_the_last_entry_starting_at_or_before():
    c = cache({1: 5, 3: 10})
    assert [c.epoch_for_offset(o) for o in (4, 5, 9, 10, 99)] == [None, 1, 1, 3, 3]


def test_copy_is_independent_and_equality_compares_entries():
    a = cache({0: 0, 2: 10})
    b = a.copy()
    assert a == b and a is not b
    b.assign(3, 11)
    assert a != b and as_dict(a) == {0: 0, 2: 10}
    assert cache({0: 0}, KAFKA_0_11) == cache({0: 0}, LATEST)


def test_constructor_keeps_a_damaged_checkpoint_verbatim():
    c = LeaderEpochCache([(3, 10), (1, 20), (1, 20)])
    assert c.entries == [(3, 10), (1, 20), (1, 20)] and not c.is_monotonic
    assert cache({0: 0, 2: 10}).is_monotonic and LeaderEpochCache().is_monotonic


# ---------------------------------------------------------------- rebuild_from_batches


def test_rebuild_creates_one_entry_per_epoch_from_its_first_batch():
    batches = [(0, 0, 2), (0, 3, 2), (2, 7, 2), (2, 9, 2), (5, 12, 2)]
    c, notes = rebuild_from_batches(batches, "latest")
    assert c.entries == [(0, 0), (2, 7), (5, 12)] and notes == []


def test_rebuild_skips_batches_without_an_epoch():
    c, notes = rebuild_from_batches([(-1, 0, 2), (1, 4, 2)], LATEST)
    assert c.entries == [(1, 4)] and notes == []


@pytest.mark.parametrize("recovery", [False, True])
@pytest.mark.parametrize("mode", ALL_EPOCH_MODES)
@pytest.mark.parametrize("bad", [-2, -(2**63), -(2**63) + 4])
def test_rebuild_skips_batches_with_a_negative_base_offset(mode, recovery, bad):
    # the base offset is outside the CRC: a flipped sign bit must not reach assign (which raises ValueError)
    c, notes = rebuild_from_batches([(0, bad, 2), (0, 2, 2), (1, bad, 2), (1, 6, 2), (2, bad, 2)], mode,
                                    recovery=recovery)
    assert c.entries == [(0, 2), (1, 6)] and notes == []


def test_rebuild_with_hostile_epochs_and_offsets_does_not_raise():
    # epochs beyond int32 and offsets near int64 limits are stored as given; negative ones are skipped
    rows = [(2**40, 0, 2), (-(2**31), 5, 2), (3, -1, 2), (-7, -7, 1), (2**63 - 1, 2**63 - 1, 2)]
    c, notes = rebuild_from_batches(rows, LATEST)
    assert c.entries == [(2**63 - 1, 2**63 - 1)] and c.is_monotonic
    assert [n.code for n in notes] == ["EPOCH_CACHE_CLEARED_BY_LEGACY_BATCH"]
    assert notes[0].facts["dropped_entries"] == [[2**40, 0]]


def _transitions(rows, chunks=1):
    """``epoch_transitions`` over rows of ``(epoch, base, magic)``, read in ``chunks`` pieces."""
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    out, key = [], -3
    for part in np.array_split(arr, chunks):
        got, key = epoch_transitions(part[:, 0], part[:, 1], part[:, 2], key)
        out += got
    return out


@pytest.mark.parametrize("chunks", [1, 2, 5])
def test_transitions_keep_the_batch_after_one_with_a_negative_base_offset(chunks):
    # epoch 1 starts with a damaged batch: the next batch of epoch 1 must still be a row, or the rebuild loses it
    rows = [(0, 0, 2), (0, 2, 2), (1, -(2**63) + 4, 2), (1, 6, 2), (2, 8, 2)]
    got = _transitions(rows, chunks)
    assert got == [(0, 0, 2), (1, -(2**63) + 4, 2), (1, 6, 2), (2, 8, 2)]
    assert rebuild_from_batches(got, LATEST) == rebuild_from_batches(rows, LATEST)
    assert rebuild_from_batches(got, LATEST)[0].entries == [(0, 0), (1, 6), (2, 8)]


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(-5, 3) | st.integers(-(2**31), 2**31 - 1),
                               st.integers(-3, 6) | st.integers(-(2**63), 2**63 - 1), st.integers(0, 2)),
                     max_size=80), key=st.integers(-4, 3))
def test_property_few_rows_give_the_transitions_of_numpys_passes(rows, key):
    """Up to ``SMALL_ROWS`` rows are walked in Python: the same transitions and last key as the numpy passes that
    longer logs take (rows and keys that collide with the special keys included)."""
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    got = epoch_transitions(arr[:, 0], arr[:, 1], arr[:, 2], key)
    small, rebuild_module.SMALL_ROWS = rebuild_module.SMALL_ROWS, -1  # every length through numpy
    try:
        want = epoch_transitions(arr[:, 0], arr[:, 1], arr[:, 2], key)
    finally:
        rebuild_module.SMALL_ROWS = small
    assert got == want and all(type(x) is int for r in got[0] for x in r) and type(got[1]) is int


@st.composite
def damaged_logs(draw):
    """``(epoch, base, magic)`` rows of a log in offset order, some with a hostile (negative) base offset."""
    rows, offset = [], 0
    for _ in range(draw(st.integers(0, 30))):
        epoch = draw(st.integers(-(2**31), 2**31 - 1) | st.integers(-1, 5))
        magic = draw(st.sampled_from([2, 2, 2, 1, 0]))
        damaged = draw(st.integers(0, 4)) == 0
        rows.append((epoch, draw(st.integers(-(2**63), -1)) if damaged else offset, magic))
        offset += draw(st.integers(1, 5))
    return rows


@settings(max_examples=200, deadline=None)
@given(rows=damaged_logs(), mode=st.sampled_from(ALL_EPOCH_MODES), recovery=st.booleans(),
       chunks=st.integers(1, 4))
def test_property_rebuild_of_a_damaged_log_never_raises_and_its_transitions_suffice(rows, mode, recovery, chunks):
    full = rebuild_from_batches(rows, mode, recovery=recovery)
    assert all(e >= 0 and s >= 0 for e, s in full[0].entries)
    assert _transitions(rows, chunks) == _transitions(rows)
    # (notes may differ: the full rebuild repeats a backwards epoch's note for each of its batches)
    assert rebuild_from_batches(_transitions(rows, chunks), mode, recovery=recovery)[0] == full[0]


def test_rebuild_legacy_batch_clears_the_cache_and_is_reported():
    c, notes = rebuild_from_batches([(0, 0, 2), (1, 5, 2), (-1, 8, 1), (2, 9, 2)], LATEST)
    assert c.entries == [(2, 9)]
    assert [n.code for n in notes] == ["EPOCH_CACHE_CLEARED_BY_LEGACY_BATCH"]
    assert notes[0].facts == {"base_offset": 8, "magic": 1, "dropped_entries": [[0, 0], [1, 5]]}


def test_rebuild_legacy_only_log_has_an_empty_cache_and_no_notes():
    c, notes = rebuild_from_batches([(-1, 0, 0), (-1, 1, 1)], LATEST)
    assert not c and notes == []


def test_rebuild_epoch_going_backwards_drops_newer_entries_since_2_0_1():
    c, notes = rebuild_from_batches([(0, 0, 2), (3, 5, 2), (2, 9, 2)], LATEST)
    assert c.entries == [(0, 0), (2, 9)]
    assert [n.code for n in notes] == ["EPOCH_WENT_BACKWARDS"]
    assert notes[0].facts["base_offset"] == 9 and notes[0].facts["previous_epoch"] == 3
    assert notes[0].facts["applied"] is True and notes[0].facts["removed_entries"] == [[3, 5]]


def test_rebuild_epoch_going_backwards_is_ignored_before_2_0_1():
    c, notes = rebuild_from_batches([(0, 0, 2), (3, 5, 2), (2, 9, 2)], "1.1")
    assert c.entries == [(0, 0), (3, 5)]
    assert [n.code for n in notes] == ["EPOCH_WENT_BACKWARDS"] and notes[0].facts["applied"] is False


def test_rebuild_offsets_going_backwards_with_new_epoch_reports_dropped_entries():
    c, notes = rebuild_from_batches([(0, 0, 2), (1, 10, 2), (2, 5, 2)], LATEST)
    assert c.entries == [(0, 0), (2, 5)]
    assert [n.code for n in notes] == ["EPOCH_ASSIGN_DROPPED_ENTRIES"]


def test_rebuild_offsets_going_backwards_with_new_epoch_is_ignored_before_2_0_1():
    c, notes = rebuild_from_batches([(0, 0, 2), (1, 10, 2), (2, 5, 2)], KAFKA_2_0_0)
    assert c.entries == [(0, 0), (1, 10)]
    assert [n.code for n in notes] == ["EPOCH_ASSIGN_IGNORED"]


def test_rebuild_recovery_path_only_assigns_newer_epochs_and_keeps_legacy_batches():
    batches = [(0, 0, 2), (3, 5, 2), (2, 9, 2), (-1, 10, 1), (4, 11, 2)]
    c, notes = rebuild_from_batches(batches, LATEST, recovery=True)
    assert c.entries == [(0, 0), (3, 5), (4, 11)]
    assert [n.code for n in notes] == ["EPOCH_WENT_BACKWARDS"]


def test_rebuild_before_0_11_keeps_no_cache():
    c, notes = rebuild_from_batches([(0, 0, 2), (1, 4, 2)], "0.10")
    assert not c and notes == []


def test_rebuild_mode_is_carried_by_the_cache():
    c, _ = rebuild_from_batches([(1, 0, 2)], "2.0.0")
    assert c.mode == KAFKA_2_0_0


# ---------------------------------------------------------------- diff_caches


def codes(diffs):
    return [(d.code, d.facts.get("epoch")) for d in diffs]


def test_diff_identical_caches_is_empty():
    assert diff_caches(cache({0: 0, 2: 10}), cache({0: 0, 2: 10}), 20) == []


def test_diff_reports_checkpoint_entry_beyond_leo():
    d = diff_caches(cache({0: 0, 2: 10, 3: 25}), cache({0: 0, 2: 10}), 20)
    assert codes(d) == [("EPOCH_ENTRY_BEYOND_LEO", 3)]
    assert d[0].facts == {"epoch": 3, "start_offset": 25, "log_end_offset": 20}


def test_diff_reports_leaders_empty_epoch_at_leo_separately():
    assert codes(diff_caches(cache({0: 0, 2: 20}), cache({0: 0}), 20)) == [("EPOCH_EMPTY_AT_LEO", 2)]


def test_diff_reports_epochs_missing_from_either_side():
    d = diff_caches(cache({0: 0, 1: 5}), cache({0: 0, 2: 5}), 20)
    assert codes(d) == [("EPOCH_MISSING_FROM_LOG", 1), ("EPOCH_MISSING_FROM_CHECKPOINT", 2)]


def test_diff_reports_different_start_offsets():
    d = diff_caches(cache({0: 0, 2: 10}), cache({0: 0, 2: 12}), 20)
    assert codes(d) == [("EPOCH_START_DIFFERS", 2)]
    assert d[0].facts == {"epoch": 2, "checkpoint_start": 10, "rebuilt_start": 12}


def test_diff_reports_a_non_monotonic_checkpoint():
    d = diff_caches(LeaderEpochCache([(2, 10), (1, 12)]), cache({1: 12, 2: 10}), 20)
    assert codes(d)[0] == ("EPOCH_CHECKPOINT_NOT_MONOTONIC", None)


def test_diff_applies_log_start_offset_to_the_rebuilt_side():
    written, rebuilt = cache({1: 7, 2: 10}), cache({0: 0, 1: 5, 2: 10})
    assert codes(diff_caches(written, rebuilt, 20)) == [
        ("EPOCH_MISSING_FROM_CHECKPOINT", 0), ("EPOCH_START_DIFFERS", 1)]
    assert diff_caches(written, rebuilt, 20, log_start_offset=7) == []
    assert as_dict(rebuilt) == {0: 0, 1: 5, 2: 10}  # the caller's cache is untouched


def test_diff_accepts_plain_entry_lists():
    assert codes(diff_caches([(0, 0)], [(0, 0), (1, 4)], 9)) == [("EPOCH_MISSING_FROM_CHECKPOINT", 1)]


# ---------------------------------------------------------------- properties

epochs_st = st.integers(min_value=0, max_value=30)
offsets_st = st.integers(min_value=0, max_value=1000)
assigns_st = st.lists(st.tuples(epochs_st, offsets_st), max_size=40)
modes_st = st.sampled_from(ALL_EPOCH_MODES)


def strictly_increasing(entries):
    return all(a[0] < b[0] and a[1] < b[1] for a, b in zip(entries, entries[1:]))


@settings(max_examples=300, deadline=None)
@given(assigns=assigns_st, mode=st.sampled_from(SINCE_2_0_1))
def test_property_cache_stays_strictly_increasing_after_any_assigns(assigns, mode):
    c = LeaderEpochCache(mode=mode)
    for epoch, start in assigns:
        c.assign(epoch, start)
        assert strictly_increasing(c.entries)
    assert c.is_monotonic


@settings(max_examples=300, deadline=None)
@given(assigns=assigns_st, mode=st.sampled_from([KAFKA_0_11, KAFKA_2_0_0]))
def test_property_cache_before_2_0_1_only_grows_with_increasing_epochs(assigns, mode):
    # The old assign accepts a new epoch at the latest start, so offsets are only non-decreasing.
    c = LeaderEpochCache(mode=mode)
    for epoch, start in assigns:
        before = c.entries
        c.assign(epoch, start)
        assert c.entries[:len(before)] == before and len(c) - len(before) in (0, 1)
        assert all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(c.entries, c.entries[1:]))
    assert c.is_monotonic


def test_old_assign_lets_two_epochs_share_a_start_offset():
    c = cache({0: 0, 2: 10}, KAFKA_0_11)
    assert c.assign(3, 10) and c.is_monotonic
    assert not LeaderEpochCache(c.entries, LATEST).is_monotonic


@settings(max_examples=300, deadline=None)
@given(assigns=assigns_st, mode=modes_st, requested=st.integers(min_value=-1, max_value=35),
       slack=st.integers(min_value=0, max_value=50))
def test_property_end_offset_never_exceeds_leo(assigns, mode, requested, slack):
    c = LeaderEpochCache(mode=mode)
    for epoch, start in assigns:
        c.assign(epoch, start)
    leo = (c.latest_entry[1] if c else 0) + slack
    answer = c.end_offset_for(requested, leo)
    assert answer.end_offset <= leo
    if c.latest_epoch is not None:
        assert c.end_offset_for(c.latest_epoch, leo).end_offset == leo


@settings(max_examples=200, deadline=None)
@given(assigns=assigns_st, requested=epochs_st)
def test_property_versions_agree_where_the_reference_says_they_do(assigns, requested):
    # 2.0.0 differs from 2.0.1 only below the first cached epoch; 0.11 differs from 2.0.0 only in dropping the epoch.
    c = LeaderEpochCache(mode=KAFKA_2_0_1)
    for epoch, start in assigns:
        c.assign(epoch, start)
    leo = (c.latest_entry[1] if c else 0) + 1
    new = c.end_offset_for(requested, leo)
    v200 = LeaderEpochCache(c.entries, KAFKA_2_0_0).end_offset_for(requested, leo)
    v011 = LeaderEpochCache(c.entries, KAFKA_0_11).end_offset_for(requested, leo)
    if c and requested < c.earliest_entry[0]:
        assert v200 == UNDEFINED
    else:
        assert v200 == new
    assert v011.end_offset == v200.end_offset and v011.epoch == -1


batches_st = st.lists(
    st.tuples(st.integers(min_value=-1, max_value=20), offsets_st, st.sampled_from([2, 2, 2, 2, 1, 0])),
    max_size=40)


@settings(max_examples=300, deadline=None)
@given(batches=batches_st, mode=modes_st, recovery=st.booleans())
def test_property_rebuild_is_idempotent(batches, mode, recovery):
    c1, n1 = rebuild_from_batches(batches, mode, recovery=recovery)
    c2, n2 = rebuild_from_batches(batches, mode, recovery=recovery)
    assert c1 == c2 and n1 == n2
    assert c1.is_monotonic
    # Replaying the rebuilt cache's own entries as v2 batches gives the same cache, without notes.
    c3, n3 = rebuild_from_batches([(e, s, 2) for e, s in c1.entries], mode, recovery=recovery)
    assert c3 == c1 and n3 == []
    # A rebuilt cache never disagrees with itself.
    assert diff_caches(c1, c1, max((s for _, s in c1.entries), default=0) + 1) == []


@settings(max_examples=200, deadline=None)
@given(batches=st.lists(st.tuples(epochs_st, st.integers(min_value=1, max_value=5)), max_size=30))
def test_property_rebuild_of_a_well_ordered_log_matches_first_offset_of_each_epoch(batches):
    # Offsets strictly increasing and epochs non-decreasing: each epoch starts at its first batch.
    offset, epoch, triples, firsts = 0, 0, [], {}
    for step_epoch, gap in batches:
        epoch = max(epoch, step_epoch)
        triples.append((epoch, offset, 2))
        firsts.setdefault(epoch, offset)
        offset += gap
    for mode in ALL_EPOCH_MODES:
        c, notes = rebuild_from_batches(triples, mode)
        assert as_dict(c) == firsts and notes == []
