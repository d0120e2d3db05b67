"""Follower truncation per Kafka version, ``ReplicaState.truncate_to`` and ``catch_up``, on small hand-built replicas."""

from __future__ import annotations

import numpy as np
import pytest

from kforensics.epoch.versions import KAFKA_0_10, KAFKA_0_11, KAFKA_2_0_0, KAFKA_2_0_1, LATEST, parse_kafka_version
from kforensics.replay.replica import FETCHED, BatchLog, Replica
from kforensics.replay.truncation import Decision, ReplicaState, catch_up, truncate_follower

KAFKA_2_8 = parse_kafka_version("2.8")
EPOCH_LOOP_MODES = [KAFKA_0_11, KAFKA_2_0_0, KAFKA_2_0_1, parse_kafka_version("2.7")]
FETCH_MODES = [KAFKA_2_8, parse_kafka_version("3.9"), LATEST]


def rows(spec, magic: int = 2):
    """BatchLog rows from ``(base, last, epoch)``: crc, count, size, producer id and magic filled in."""
    return [[b, last, e, 1000 + 7 * b + e, last - b + 1, 100, -1, magic] for b, last, e in spec]


def replica(broker: int, spec, *, hw=None, epochs=None, magic: int = 2, **kw) -> Replica:
    return Replica(broker, BatchLog.from_rows(rows(spec, magic)), high_watermark=hw, epoch_checkpoint=epochs, **kw)


def state(r: Replica, mode) -> ReplicaState:
    """The replay's starting state for a replica (as the engine builds it)."""
    return ReplicaState(r, r.log, r.epoch_cache(mode), r.high_watermark or 0, r.log_end_offset, mode)


def bases(st: ReplicaState) -> list[int]:
    return st.log.col("base_offset").tolist()


# The leader kept epoch 0 up to offset 10, then epoch 2; the follower wrote 8..11 in epoch 1, which the leader
# never had.
LEADER = dict(spec=[(0, 3, 0), (4, 7, 0), (8, 9, 0), (10, 14, 2)], hw=15, epochs=[(0, 0), (2, 10)])
FOLLOWER = dict(spec=[(0, 3, 0), (4, 7, 0), (8, 9, 1), (10, 11, 1)], hw=5, epochs=[(0, 0), (1, 8)])


def pair(mode, leader=LEADER, follower=FOLLOWER):
    lead = replica(1, leader["spec"], hw=leader["hw"], epochs=leader["epochs"])
    fol = replica(2, follower["spec"], hw=follower["hw"], epochs=follower["epochs"])
    return state(fol, mode), state(lead, mode)


# ---------------------------------------------------------------- ReplicaState.truncate_to


def test_truncating_inside_a_batch_cuts_at_the_start_of_that_batch():
    f, _ = pair(LATEST)
    assert f.truncate_to(9, "why") == 8
    assert bases(f) == [0, 4] and f.leo == 8
    ((gone, why),) = f.removed
    assert gone.col("base_offset").tolist() == [8, 10] and why == "why"
    assert f.cache.entries == [(0, 0)]  # the epoch that started at 8 went with its batches
    assert f.hw == 5


def test_truncating_at_a_batch_boundary_keeps_everything_below():
    f, _ = pair(LATEST)
    assert f.truncate_to(10, "x") == 10
    assert bases(f) == [0, 4, 8] and f.cache.entries == [(0, 0), (1, 8)]


def test_truncating_at_or_beyond_the_log_end_changes_nothing():
    f, _ = pair(LATEST)
    for offset in (12, 13, 1000):
        assert f.truncate_to(offset, "x") == 12
    assert bases(f) == [0, 4, 8, 10] and f.removed == [] and f.cache.entries == [(0, 0), (1, 8)]


def test_truncating_to_zero_empties_the_log_and_the_cache():
    f, _ = pair(LATEST)
    assert f.truncate_to(0, "x") == 0
    assert len(f.log) == 0 and f.cache.entries == [] and f.hw == 0


def test_truncating_into_a_compaction_gap_ends_the_log_at_the_offset():
    r = replica(1, [(0, 2, 0), (5, 7, 0)], hw=8, epochs=[(0, 0)])
    st = state(r, LATEST)
    assert st.truncate_to(4, "x") == 4
    assert bases(st) == [0] and st.hw == 4


def test_high_watermark_is_lowered_to_the_new_log_end():
    r = replica(1, [(0, 3, 0), (4, 7, 0)], hw=8, epochs=[(0, 0)])
    st = state(r, LATEST)
    st.truncate_to(6, "x")
    assert (st.leo, st.hw) == (4, 4)


# ---------------------------------------------------------------- 0.10: high-watermark truncation


def test_before_kip101_a_follower_truncates_to_its_high_watermark_ignoring_epochs():
    f, lead = pair(KAFKA_0_10)
    assert f.cache.entries == []  # 0.10 keeps no epoch cache, whatever the checkpoint says
    d = truncate_follower(f, lead, KAFKA_0_10, fetch=False)
    assert (d.path, d.truncate_to, d.leo_before, d.leo_after) == ("pre-kip-101", 5, 12, 4)
    assert d.rounds == [] and "high watermark 5" in d.reasoning[0]
    assert bases(f) == [0]  # the batch 4..7 holds offset 5: it goes whole


@pytest.mark.parametrize("mode", EPOCH_LOOP_MODES + FETCH_MODES)
def test_a_follower_without_epochs_falls_back_to_its_high_watermark(mode):
    f, lead = pair(mode, follower=dict(spec=[(0, 3, -1), (4, 7, -1), (8, 11, -1)], hw=8, epochs=None))
    assert f.cache.latest_epoch is None
    d = truncate_follower(f, lead, mode, fetch=False)
    assert (d.path, d.truncate_to, d.leo_after) == ("hw", 8, 8)
    assert bases(f) == [0, 4]


# ---------------------------------------------------------------- 0.11: one round, offset-only answers


def test_kafka_0_11_asks_once_and_truncates_to_the_offset_the_leader_answers():
    f, lead = pair(KAFKA_0_11)
    d = truncate_follower(f, lead, KAFKA_0_11, fetch=False)
    assert (d.path, d.truncate_to, d.leo_after) == ("epoch-loop", 10, 10)
    assert d.rounds == [{"asked_epoch": 1, "leader_answer": [-1, 10], "truncate_to": 10, "complete": True}]
    # the offset-only answer keeps 8..9 of epoch 1, which the leader never had: the weakness KIP-279 fixed
    assert bases(f) == [0, 4, 8] and f.cache.entries == [(0, 0), (1, 8)]


def test_kafka_0_11_truncates_to_the_high_watermark_when_the_leader_does_not_know_the_epoch():
    # the follower's epoch 3 is newer than anything the leader cached
    f, lead = pair(KAFKA_0_11, follower=dict(spec=[(0, 3, 0), (4, 7, 3)], hw=4, epochs=[(0, 0), (3, 4)]))
    d = truncate_follower(f, lead, KAFKA_0_11, fetch=False)
    assert d.rounds[0]["leader_answer"] == [-1, -1]
    assert (d.truncate_to, d.leo_after) == (4, 4) and bases(f) == [0]


# ---------------------------------------------------------------- 2.0.x: KIP-279 answers (epoch, offset)


@pytest.mark.parametrize("mode", [KAFKA_2_0_0, KAFKA_2_0_1, parse_kafka_version("2.7")])
def test_kip279_truncates_to_the_end_of_the_last_common_epoch_in_one_complete_round(mode):
    f, lead = pair(mode)
    d = truncate_follower(f, lead, mode, fetch=False)
    assert (d.path, d.truncate_to, d.leo_after) == ("epoch-loop", 8, 8)
    assert d.rounds == [{"asked_epoch": 1, "leader_answer": [0, 10], "follower_answer": [0, 8],
                         "truncate_to": 8, "complete": True}]
    assert bases(f) == [0, 4] and f.cache.entries == [(0, 0)]


# the leader's cache starts at epoch 3 (its older epochs are gone); the follower only ever saw epoch 1
BELOW_FIRST = dict(leader=dict(spec=[(5, 9, 3)], hw=10, epochs=[(3, 5)]),
                   follower=dict(spec=[(0, 2, 1), (3, 4, 1), (5, 7, 1)], hw=3, epochs=[(1, 0)]))


@pytest.mark.parametrize("mode", [KAFKA_0_11, KAFKA_2_0_0])
def test_before_kafka_7415_an_epoch_below_the_leaders_first_is_undefined_so_the_high_watermark_rules(mode):
    f, lead = pair(mode, **BELOW_FIRST)
    d = truncate_follower(f, lead, mode, fetch=False)
    assert d.rounds[0]["leader_answer"] == [-1, -1] and d.rounds[0]["complete"] is True
    assert (d.truncate_to, d.leo_after) == (3, 3) and bases(f) == [0]


@pytest.mark.parametrize("mode", [KAFKA_2_0_1, parse_kafka_version("2.7")])
def test_since_kafka_7415_an_epoch_below_the_leaders_first_ends_at_the_leaders_first_start(mode):
    f, lead = pair(mode, **BELOW_FIRST)
    d = truncate_follower(f, lead, mode, fetch=False)
    assert d.rounds == [{"asked_epoch": 1, "leader_answer": [1, 5], "follower_answer": [1, 8],
                         "truncate_to": 5, "complete": True}]
    assert (d.truncate_to, d.leo_after) == (5, 5) and bases(f) == [0, 3]


# ---------------------------------------------------------------- 2.8+: divergence learnt from fetch


@pytest.mark.parametrize("mode", FETCH_MODES)
def test_since_2_8_the_diverging_epoch_of_a_fetch_response_truncates_the_follower(mode):
    f, lead = pair(mode)
    d = truncate_follower(f, lead, mode, fetch=False)
    assert (d.path, d.truncate_to, d.leo_after) == ("diverging-epoch", 8, 8)
    assert d.rounds[0] == {"fetch_offset": 12, "last_fetched_epoch": 1, "leader_answer": [0, 10],
                           "follower_answer": [0, 8], "truncate_to": 8}
    # the follower fetches again from its new end and finds no divergence
    assert d.rounds[-1] == {"fetch_offset": 8, "last_fetched_epoch": 0, "leader_answer": [0, 10]}
    assert "no divergence" in d.reasoning[-1]
    assert bases(f) == [0, 4] and f.cache.entries == [(0, 0)]


@pytest.mark.parametrize("mode", FETCH_MODES)
def test_since_2_8_a_follower_that_is_a_prefix_of_the_leader_is_not_truncated(mode):
    f, lead = pair(mode, follower=dict(spec=[(0, 3, 0), (4, 7, 0)], hw=4, epochs=[(0, 0)]))
    d = truncate_follower(f, lead, mode, fetch=False)
    assert (d.path, d.truncate_to, d.leo_before, d.leo_after) == ("diverging-epoch", None, 8, 8)
    assert d.rounds == [{"fetch_offset": 8, "last_fetched_epoch": 0, "leader_answer": [0, 10]}]
    assert bases(f) == [0, 4] and f.removed == []


@pytest.mark.parametrize("mode", FETCH_MODES)
def test_since_2_8_an_epoch_the_leader_cannot_answer_is_offset_out_of_range_to_the_leaders_end(mode):
    # the follower's epoch 5 is newer than the leader's; the leader's log is shorter
    f, lead = pair(mode, leader=dict(spec=[(0, 5, 1)], hw=6, epochs=[(1, 0)]),
                   follower=dict(spec=[(0, 5, 1), (6, 9, 5)], hw=6, epochs=[(1, 0), (5, 6)]))
    d = truncate_follower(f, lead, mode, fetch=False)
    assert d.rounds[0]["leader_answer"] == [-1, -1]
    assert (d.path, d.truncate_to, d.leo_after) == ("offset-out-of-range", 6, 6)
    assert bases(f) == [0]


def test_an_equal_follower_is_left_alone_in_every_epoch_mode():
    for mode in EPOCH_LOOP_MODES + FETCH_MODES:
        f, lead = pair(mode, follower=LEADER)
        d = truncate_follower(f, lead, mode, fetch=False)
        assert (d.leo_before, d.leo_after) == (15, 15), mode
        assert f.removed == [] and len(f.log) == 4, mode


# ---------------------------------------------------------------- catch_up (fetching before 2.8)


@pytest.mark.parametrize("mode", [KAFKA_0_10, KAFKA_0_11, KAFKA_2_0_1, LATEST])
def test_fetch_beyond_the_leaders_end_is_offset_out_of_range_and_truncates_to_it(mode):
    lead = state(replica(1, [(0, 4, 0), (5, 9, 0)], hw=10, epochs=[(0, 0)]), mode)
    f = state(replica(2, [(0, 4, 0), (5, 9, 0), (10, 14, 1)], hw=10, epochs=[(0, 0), (1, 10)]), mode)
    d = Decision(2, 1, "none", None, f.leo, f.leo)
    notes = catch_up(f, lead, mode, d)
    assert "OFFSET_OUT_OF_RANGE" in notes[0] and len(notes) == 1
    assert (f.leo, f.hw, bases(f)) == (10, 10, [0, 5])
    ((gone, why),) = f.removed
    assert gone.col("base_offset").tolist() == [10] and "out of range" in why
    assert (d.path, d.truncate_to, d.leo_after) == ("offset-out-of-range", 10, 10)


def test_fetch_out_of_range_keeps_an_earlier_decision_path():
    lead = state(replica(1, [(0, 4, 0)], hw=5, epochs=[(0, 0)]), LATEST)
    f = state(replica(2, [(0, 4, 0), (5, 9, 0)], hw=5, epochs=[(0, 0)]), LATEST)
    d = Decision(2, 1, "diverging-epoch", 7, 10, 10)
    catch_up(f, lead, LATEST, d)
    assert (d.path, d.truncate_to, d.leo_after) == ("diverging-epoch", 5, 5)


def test_fetch_appends_the_leaders_batches_as_copies_not_on_this_disk():
    lead_log = BatchLog.from_rows(rows([(0, 3, 0), (4, 7, 2), (8, 9, 3)]))
    lead_log.col("segment")[:] = 0  # on the leader's disk, in its first segment
    lead_log.col("position")[:] = [0, 100, 200]
    lead_r = Replica(1, lead_log, high_watermark=9, epoch_checkpoint=[(0, 0), (2, 4), (3, 8)])
    lead = state(lead_r, LATEST)
    f = state(replica(2, [(0, 3, 0)], hw=4, epochs=[(0, 0)]), LATEST)
    notes = catch_up(f, lead, LATEST)
    assert notes == ["fetched 2 batches (4..9) from the leader"]
    assert bases(f) == [0, 4, 8] and f.leo == 10 and f.hw == 9
    (new,) = f.appended
    assert new.col("segment").tolist() == [FETCHED, FETCHED] and new.col("position").tolist() == [-1, -1]
    assert lead.log.col("position").tolist() == [0, 100, 200]  # the leader's own rows are untouched
    assert f.cache.entries == [(0, 0), (2, 4), (3, 8)]
    np.testing.assert_array_equal(f.log.identity(), lead.log.identity())


def test_fetch_of_legacy_batches_assigns_no_epochs():
    lead = state(replica(1, [(0, 3, -1), (4, 7, -1)], hw=8, magic=1), LATEST)
    f = state(replica(2, [], hw=0), LATEST)
    catch_up(f, lead, LATEST)
    assert f.leo == 8 and f.cache.entries == []


def test_fetch_when_nothing_is_new_only_moves_the_high_watermark():
    lead = state(replica(1, [(0, 4, 0)], hw=5, epochs=[(0, 0)]), LATEST)
    f = state(replica(2, [(0, 4, 0)], hw=2, epochs=[(0, 0)]), LATEST)
    assert catch_up(f, lead, LATEST) == []
    assert (f.leo, f.hw, f.appended) == (5, 5, [])


# ---------------------------------------------------------------- loops that do not end, stalls


def with_cache(r: Replica, mode, entries) -> ReplicaState:
    st = state(r, mode)
    st.cache = type(st.cache)(entries, mode=mode)
    return st


@pytest.mark.parametrize("mode", [KAFKA_2_0_1, parse_kafka_version("2.6.0")])
def test_before_kafka_10706_a_round_that_truncates_to_the_log_end_repeats_forever(mode):
    # docs/replay-at-restart.md 4.4.2: a checkpoint whose offsets do not increase, loaded as stored
    f = with_cache(replica(1, [(0, 0, 1), (1, 1, 3), (2, 2, 3)], hw=0), mode, [(1, 0), (5, 9), (3, 1)])
    lead = with_cache(replica(2, [(0, 0, 1), (1, 1, 2), (2, 2, 2)], hw=0), mode, [(1, 0), (2, 1), (6, 3)])
    d = truncate_follower(f, lead, mode)
    assert not d.converged and d.stalled_at is None
    assert d.repeating == [{"asked_epoch": 3, "leader_answer": [2, 3], "follower_answer": [1, 9],
                            "truncate_to": 3, "complete": False}]
    assert f.leo == 3 and f.removed == [] and f.appended == []  # it never gets to fetch


# docs/replay-at-restart.md 4.4.2: a running follower (not restarted) that was briefly leader in epoch 4 and
# wrote nothing in it; the leader in epoch 5 never had its epoch 2
RUNNING = dict(follower=dict(spec=[(0, 0, 1), (1, 1, 1), (2, 2, 2)], hw=0, epochs=[(1, 0), (2, 2), (4, 3)]),
               leader=dict(spec=[(0, 0, 1), (1, 1, 1), (2, 2, 3), (3, 3, 3)], hw=0, epochs=[(1, 0), (3, 2), (5, 4)]))


def test_before_kafka_10706_the_unused_epoch_entry_repeats_the_same_round_forever():
    f, lead = pair(KAFKA_2_0_1, **RUNNING)
    d = truncate_follower(f, lead, KAFKA_2_0_1)
    assert not d.converged
    assert d.repeating == [{"asked_epoch": 4, "leader_answer": [3, 4], "follower_answer": [2, 3],
                            "truncate_to": 3, "complete": False}]


def test_with_kafka_10706_the_truncation_to_the_log_end_trims_the_entry_and_the_follower_converges():
    mode = parse_kafka_version("2.6.1")
    f, lead = pair(mode, **RUNNING)
    d = truncate_follower(f, lead, mode)
    assert d.converged and [r["asked_epoch"] for r in d.rounds] == [4, 2]
    assert bases(f) == [0, 1, 2, 3] and f.log.col("partition_leader_epoch").tolist() == [1, 1, 3, 3]


@pytest.mark.parametrize("mode", FETCH_MODES)
def test_since_2_8_a_leader_whose_epochs_go_backwards_sends_the_follower_round_in_a_cycle(mode):
    # docs/replay-at-restart.md 4.4.1: leader 0:5 1:5 2:3 with cache {5:0, 7:3}; an empty follower
    lead = with_cache(replica(1, [(0, 0, 5), (1, 1, 5), (2, 2, 3)], hw=3), mode, [(5, 0), (7, 3)])
    f = state(replica(2, [], hw=0), mode)
    d = truncate_follower(f, lead, mode)
    assert not d.converged
    assert d.repeating == [
        {"fetch_offset": 0, "last_fetched_epoch": None, "appended": [0, 2]},
        {"fetch_offset": 3, "last_fetched_epoch": 3, "leader_answer": [3, 0], "follower_answer": [3, 3],
         "truncate_to": 0},
    ]


def test_before_2_8_the_same_leader_is_simply_copied():
    lead = with_cache(replica(1, [(0, 0, 5), (1, 1, 5), (2, 2, 3)], hw=3), KAFKA_2_0_1, [(5, 0), (7, 3)])
    f = state(replica(2, [], hw=0), KAFKA_2_0_1)
    d = truncate_follower(f, lead, KAFKA_2_0_1)
    assert d.converged and f.leo == 3 and f.cache.entries == [(3, 2)]  # the append path drops 5:0 for 3:2


@pytest.mark.parametrize("mode", [KAFKA_0_10, KAFKA_0_11, KAFKA_2_0_1, LATEST])
def test_a_follower_stalls_before_the_leaders_first_damaged_batch(mode):
    lead_r = replica(1, [(0, 0, 0), (1, 1, 0), (2, 2, 0), (3, 3, 0)], hw=4, epochs=[(0, 0)])
    lead_r.log.col("crc_valid")[2] = 0
    lead = state(lead_r, mode)
    f = state(replica(2, [(0, 0, 0)], hw=1, epochs=[(0, 0)]), mode)
    d = truncate_follower(f, lead, mode)
    assert not d.converged and d.stalled_at == 2
    assert bases(f) == [0, 1]  # it took what came before the damage, and no more


def test_a_follower_stalls_where_the_leader_kept_unreadable_bytes():
    lead = state(replica(1, [(0, 0, 0), (1, 1, 0), (3, 3, 0)], hw=4, epochs=[(0, 0)]), LATEST)
    lead.read_fails_from = 2  # zeros where offset 2 was
    f = state(replica(2, [], hw=0), LATEST)
    d = truncate_follower(f, lead, LATEST)
    assert not d.converged and d.stalled_at == 2 and bases(f) == [0, 1]


def test_a_follower_already_past_the_damage_is_not_held_up_by_it():
    lead_r = replica(1, [(0, 0, 0), (1, 1, 0), (2, 2, 0)], hw=3, epochs=[(0, 0)])
    lead_r.log.col("crc_valid")[1] = 0
    lead = state(lead_r, LATEST)
    f = state(replica(2, [(0, 0, 0), (1, 1, 0), (2, 2, 0)], hw=3, epochs=[(0, 0)]), LATEST)
    d = truncate_follower(f, lead, LATEST)
    assert d.converged and d.stalled_at is None


def test_after_an_append_the_next_fetch_names_the_epoch_of_the_last_appended_batch():
    lead = state(replica(1, [(0, 0, 0), (1, 1, 2), (2, 2, 4)], hw=3, epochs=[(0, 0), (2, 1), (4, 2)]), LATEST)
    f = state(replica(2, [(0, 0, 0)], hw=1, epochs=[(0, 0)]), LATEST)
    d = truncate_follower(f, lead, LATEST)
    assert [(r["fetch_offset"], r["last_fetched_epoch"]) for r in d.rounds] == [(1, 0), (3, 4)]
    assert d.rounds[0]["appended"] == [1, 2] and d.converged


def test_truncation_removes_kept_damage_and_its_read_failure():
    st = state(replica(1, [(0, 0, 0), (1, 1, 0), (2, 2, 0)], hw=3, epochs=[(0, 0)]), LATEST)
    st.read_fails_from = 2
    st.truncate_to(2, "x")
    assert st.read_fails_from is None
