"""Where two replicas stop agreeing: ``first_difference``, ``missing_from``, ``compare`` (with compaction)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kforensics.replay.divergence import (
    Span,
    cleaned_below,
    compare,
    compared_from,
    divergence,
    first_difference,
    missing_from,
)
from kforensics.replay.replica import BatchLog, Replica


def log(*spec) -> BatchLog:
    """Rows from ``(base, last, epoch[, crc])``; the CRC defaults to one derived from the batch's offsets."""
    out = []
    for s in spec:
        b, last, e = s[:3]
        crc = s[3] if len(s) > 3 else 1000 + 7 * b + last
        out.append([b, last, e, crc, last - b + 1, 100, -1, 2])
    return BatchLog.from_rows(out)


def replica(broker: int, lg: BatchLog, **kw) -> Replica:
    return Replica(broker, lg, high_watermark=lg.end_offset, **kw)


BASE = [(0, 4, 0), (5, 9, 0), (10, 14, 1), (15, 19, 1)]


def bases(lg: BatchLog) -> list[int]:
    return lg.col("base_offset").tolist()


# ---------------------------------------------------------------- first_difference / missing_from


def test_equal_logs_have_no_difference():
    a, b = log(*BASE), log(*BASE)
    assert first_difference(a, b) is None
    assert len(missing_from(a, b)) == 0 and len(missing_from(b, a)) == 0


def test_a_prefix_is_not_a_difference_but_the_rest_is_missing_from_it():
    long, short = log(*BASE), log(*BASE[:2])
    assert first_difference(long, short) is None and first_difference(short, long) is None
    assert bases(missing_from(long, short)) == [10, 15]
    assert len(missing_from(short, long)) == 0


@pytest.mark.parametrize("changed", [
    (10, 14, 2),  # another epoch
    (10, 14, 1, 42),  # other bytes (another CRC)
    (10, 13, 1),  # another extent
])
def test_divergence_in_the_middle_is_found_at_the_first_differing_batch(changed):
    a = log(*BASE)
    b = log(*BASE[:2], changed, *BASE[3:])
    assert first_difference(a, b) == 10 and first_difference(b, a) == 10
    assert bases(missing_from(a, b)) == [10]
    assert missing_from(b, a).identity().tolist() == log(changed).identity().tolist()


def test_batches_split_differently_differ_from_the_first_split():
    a = log((0, 4, 0), (5, 9, 0))
    b = log((0, 4, 0), (5, 6, 0), (7, 9, 0))
    assert first_difference(a, b) == 5
    assert bases(missing_from(b, a)) == [5, 7]


def test_only_the_range_both_logs_cover_is_compared():
    # b ends at 7 with a batch a does not have; a's longer tail beyond 7 is not compared
    a = log((0, 4, 0), (5, 9, 0), (10, 14, 0))
    b = log((0, 4, 0), (5, 6, 0))
    assert first_difference(a, b) == 5
    # a batch of b that starts at or after a's end is outside the common range
    assert first_difference(log((0, 4, 0)), log((0, 4, 0), (5, 9, 3))) is None


def test_batches_below_the_cleaned_offset_are_not_compared():
    a = log((0, 4, 0, 1), (5, 9, 0), (10, 14, 1))
    b = log((0, 2, 0, 2), (4, 4, 0, 3), (5, 9, 0), (10, 14, 1))  # cleaned independently below 5
    assert first_difference(a, b) == 0
    assert first_difference(a, b, cleaned=5) is None
    assert len(missing_from(a, b, cleaned=5)) == 0 and len(missing_from(b, a, cleaned=5)) == 0
    # a batch reaching the cleaned offset is still compared, at its base offset
    assert first_difference(a, b, cleaned=4) == 0
    assert first_difference(a, log((0, 2, 0, 2), (3, 9, 0), (10, 14, 1)), cleaned=5) == 3


def test_empty_logs():
    assert first_difference(BatchLog.empty(), BatchLog.empty()) is None
    assert first_difference(log(*BASE), BatchLog.empty()) is None
    assert len(missing_from(BatchLog.empty(), log(*BASE))) == 0
    assert bases(missing_from(log(*BASE), BatchLog.empty())) == [0, 5, 10, 15]


# ---------------------------------------------------------------- cleaned_below / compare


def test_cleaned_below_needs_both_cleaners():
    a, b = replica(1, log(*BASE), cleaner_offset=8), replica(2, log(*BASE), cleaner_offset=5)
    assert cleaned_below(a, b) == 5 == cleaned_below(b, a)
    assert cleaned_below(a, replica(3, log(*BASE))) == -1
    assert cleaned_below(replica(3, log(*BASE)), replica(4, log(*BASE))) == -1


def test_compare_equal_replicas_agree_everywhere():
    d = compare(replica(1, log(*BASE)), replica(2, log(*BASE)))
    assert d.agree and d.first_divergent_offset is None
    assert (d.brokers, d.log_end_offsets, d.compacted_below) == ((1, 2), (20, 20), None)
    assert d.agreement == [Span(0, 20, "agree")]


def test_compare_prefix_agrees_and_names_the_longer_replica():
    d = compare(replica(1, log(*BASE[:2])), replica(2, log(*BASE)))
    assert d.agree and d.log_end_offsets == (10, 20)
    assert d.agreement == [Span(0, 10, "agree"), Span(10, 20, "only_on_2")]


def test_compare_divergence_in_the_middle():
    a = replica(1, log(*BASE))
    b = replica(2, log(*BASE[:2], (10, 14, 2), (15, 17, 2)))
    d = compare(a, b)
    assert not d.agree and d.first_divergent_offset == 10
    assert d.agreement == [Span(0, 10, "agree"), Span(10, 18, "differ"), Span(18, 20, "only_on_1")]


def test_compare_divergence_at_the_first_offset_has_no_agreeing_span():
    d = compare(replica(1, log((0, 4, 0))), replica(2, log((0, 4, 1))))
    assert d.first_divergent_offset == 0 and d.agreement == [Span(0, 5, "differ")]


def test_compare_with_compaction_ignores_independently_cleaned_batches():
    a = replica(1, log((0, 4, 0, 1), (5, 9, 0), (10, 14, 1)), cleaner_offset=5)
    b = replica(2, log((0, 2, 0, 2), (4, 4, 0, 3), (5, 9, 0), (10, 14, 1)), cleaner_offset=7)
    d = compare(a, b)
    assert d.agree and d.compacted_below == 5
    # nothing below the cleaned offset was compared, so the map starts there
    assert d.agreement == [Span(5, 15, "agree")]
    # without both cleaner offsets the same bytes are a divergence
    d = compare(replica(1, a.log, cleaner_offset=5), replica(2, b.log))
    assert d.first_divergent_offset == 0 and d.compacted_below is None


def test_compare_empty_replicas():
    d = compare(replica(1, BatchLog.empty()), replica(2, BatchLog.empty()))
    assert d.agree and d.log_end_offsets == (0, 0) and d.agreement == []


def test_compared_from_is_the_highest_of_the_cleaned_offset_and_both_log_starts():
    lg = log(*BASE)
    assert compared_from(replica(1, lg), replica(2, lg)) == 0
    assert compared_from(replica(1, lg, log_start=5), replica(2, lg, log_start=3)) == 5
    assert compared_from(replica(1, lg, log_start=3), replica(2, lg, log_start=5)) == 5
    assert compared_from(replica(1, lg, cleaner_offset=12, log_start=5), replica(2, lg, cleaner_offset=10)) == 10
    assert compared_from(replica(1, lg, cleaner_offset=12, log_start=5), replica(2, lg)) == 5  # one cleaner only


@pytest.mark.parametrize("swap", [False, True])
def test_segments_deleted_by_retention_on_one_replica_are_not_a_divergence(swap):
    # broker 1 deleted its first segment (log start 5); both hold the same batches from 5 on
    a = replica(1, log(*BASE[1:]), log_start=5)
    b = replica(2, log(*BASE))
    assert first_difference(a.log, b.log) == 0  # compared from offset 0, the deleted batch is a difference
    assert first_difference(a.log, b.log, compared_from(a, b)) is None
    assert len(missing_from(b.log, a.log, compared_from(a, b))) == 0
    d = compare(b, a) if swap else compare(a, b)
    assert d.first_divergent_offset is None and d.agree
    assert d.log_end_offsets == (20, 20) and d.compacted_below is None
    assert d.agreement == [Span(5, 20, "agree")]


def test_a_divergence_above_the_log_start_is_still_found():
    a = replica(1, log(*BASE[1:]), log_start=5)
    b = replica(2, log(*BASE[:2], (10, 14, 2), (15, 17, 2)))
    d = compare(a, b)
    assert d.first_divergent_offset == 10
    assert d.agreement == [Span(5, 10, "agree"), Span(10, 18, "differ"), Span(18, 20, "only_on_1")]
    assert bases(missing_from(a.log, b.log, compared_from(a, b))) == [10, 15]
    assert bases(missing_from(b.log, a.log, compared_from(a, b))) == [10, 15]


def test_log_start_inside_a_batch_compares_that_batch():
    # DeleteRecords moved broker 1's log start into the batch 5..9, which it keeps
    a = replica(1, log(*BASE[1:]), log_start=7)
    d = compare(a, replica(2, log(*BASE)))
    assert d.agree and d.agreement == [Span(7, 20, "agree")]
    # the straddling batch differs: the divergence is reported from the log start, where the comparison begins
    d = compare(a, replica(2, log(BASE[0], (5, 9, 3), *BASE[2:])))
    assert d.first_divergent_offset == 7
    assert d.agreement == [Span(7, 20, "differ")]


def test_a_replica_whose_log_starts_after_the_others_end_has_nothing_in_common():
    a = replica(1, log(*BASE[:1]))  # offsets 0..4
    b = replica(2, log(*BASE[2:]), log_start=10)  # offsets 10..19
    d = compare(a, b)
    assert d.agree and d.agreement == [Span(10, 20, "only_on_2")]
    # an empty replica whose log starts at 10 and one ending at 5: nothing to compare, no empty span
    d = compare(a, replica(2, BatchLog.empty(), log_start=10))
    assert d.agree and d.log_end_offsets == (5, 10) and d.agreement == []


def test_divergence_compares_every_pair_in_broker_order():
    r3, r1, r2 = replica(3, log(*BASE[:3])), replica(1, log(*BASE)), replica(2, log(*BASE[:2], (10, 14, 5)))
    ds = divergence([r3, r1, r2])
    assert [d.brokers for d in ds] == [(1, 2), (1, 3), (2, 3)]
    assert [d.first_divergent_offset for d in ds] == [10, None, 10]


# ---------------------------------------------------------------- properties


@st.composite
def split_logs(draw):
    """Two logs that share a prefix of batches and then go their own ways."""
    n = draw(st.integers(0, 6))
    common, off = [], 0
    for _ in range(n):
        size = draw(st.integers(1, 4))
        common.append((off, off + size - 1, 0))
        off += size
    tails = []
    for epoch in (1, 2):
        t, o = [], off
        for _ in range(draw(st.integers(0, 4))):
            size = draw(st.integers(1, 4))
            t.append((o, o + size - 1, epoch))
            o += size
        tails.append(t)
    return common, tails[0], tails[1], off


@given(split_logs())
def test_first_difference_is_where_the_shared_prefix_ends(spec):
    common, ta, tb, split = spec
    a, b = log(*common, *ta), log(*common, *tb)
    expected = split if ta and tb else None  # a log that stops at the split is a prefix of the other
    assert first_difference(a, b) == expected == first_difference(b, a)
    assert bases(missing_from(a, b)) == [x[0] for x in ta]
    d = compare(replica(1, a), replica(2, b))
    assert d.first_divergent_offset == expected
    # the spans tile the offsets from the lowest log start to the highest log end without gaps
    ends = (a.end_offset or 0, b.end_offset or 0)
    if d.agreement:
        assert d.agreement[0].start == 0 and d.agreement[-1].end == max(ends)
        assert all(x.end == y.start for x, y in zip(d.agreement, d.agreement[1:]))


@given(split_logs(), st.data())
def test_retention_on_either_replica_changes_nothing_above_both_log_starts(spec, data):
    common, ta, tb, split = spec
    a, b = log(*common, *ta), log(*common, *tb)
    # one replica has deleted its batches below a log start inside the common prefix (or at its end)
    start = data.draw(st.integers(0, split))
    kept = a.select(a.col("last_offset") >= start)
    ra, rb = replica(1, kept, log_start=start), replica(2, b)
    if data.draw(st.booleans()):
        ra, rb = rb, ra
    d = compare(ra, rb)
    expected = split if ta and tb else None
    assert d.first_divergent_offset == expected
    ends = (ra.log_end_offset, rb.log_end_offset)
    if d.agreement:
        # the spans tile the offsets from where the comparison starts to the highest log end without gaps
        assert d.agreement[0].start == start and d.agreement[-1].end == max(ends)
        assert all(x.end == y.start for x, y in zip(d.agreement, d.agreement[1:]))
    else:
        assert max(ends) <= start
