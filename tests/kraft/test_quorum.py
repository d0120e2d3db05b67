"""Copies of the metadata log resolved as Raft does (KafkaRaftClient, KIP-595 divergence, KIP-853 voters)."""

from __future__ import annotations

from kforensics.kraft.quorum import LogCopy, resolve


def test_a_deposed_leaders_tail_is_truncated_where_the_new_leaders_epoch_begins():
    # node 1 led epoch 3 and wrote offsets 100-119 that nobody fetched; node 2 was elected in epoch 4 and wrote its
    # own 100-129.  Raft's log matching: node 1 truncates to the end of epoch 3 in node 2's log (100) when it
    # fetches (diverging epoch in the fetch response): its 100-119 were never committed
    n1 = LogCopy("b1", ((1, 0), (3, 60)), 120, node_id=1, voters=(1, 2, 3))
    n2 = LogCopy("b2", ((1, 0), (3, 60), (4, 100)), 130, node_id=2, voters=(1, 2, 3))
    q = resolve([n1, n2])
    assert q.reference == "b2"
    v1, v2 = q.copies
    assert (v1.valid_end, v1.deposed) == (100, (100, 120))
    assert (v2.valid_end, v2.deposed) == (130, None)
    assert (v1.diverged_epoch, v1.reference_epoch) == (3, 4)
    # two of three voters hold 0-99, but not past the start of epoch 4 (100): LeaderState.maybeUpdateHighWatermark
    # (3.8.0) moves the high watermark only past the start of the leader's own epoch, so nothing is proved committed
    assert (q.committed_end, q.committed_by) == (0, "unknown")
    # node 3, a follower of node 2 that fetched up to 125: a majority now holds offsets of epoch 4, committed to 125
    n3 = LogCopy("b3", ((1, 0), (3, 60), (4, 100)), 125, node_id=3, voters=(1, 2, 3))
    q = resolve([n1, n2, n3])
    assert (q.committed_end, q.committed_by) == (125, "majority of voters [1, 2, 3]")


def test_the_longer_log_of_an_older_epoch_is_not_the_reference():
    # (last epoch, end offset) orders the copies: a leader is only elected with a log at least as up to date
    old = LogCopy("a", ((2, 0),), 500, node_id=1)
    new = LogCopy("b", ((2, 0), (5, 300)), 310, node_id=2)
    q = resolve([old, new], voters=[1, 2, 3])
    assert q.reference == "b"
    assert q.copies[0].deposed == (300, 500)


def test_a_copy_that_is_a_prefix_of_the_reference_does_not_diverge():
    short = LogCopy("a", ((1, 0), (2, 10)), 40, node_id=1)
    long = LogCopy("b", ((1, 0), (2, 10), (3, 80)), 90, node_id=2)
    q = resolve([short, long])
    assert q.copies[0].deposed is None and q.copies[0].valid_end == 40


def test_a_copy_whose_epoch_checkpoint_runs_past_its_log_lost_its_tail():
    # LeaderEpochFileCache.assign is called when a batch of a new epoch is appended: an entry (7, 13100) means the
    # node once held offset 13100; its segments now end at 13058
    cut = LogCopy("b3", ((5, 0), (6, 12000)), 13058, node_id=3, checkpoint=((5, 0), (6, 12000), (7, 13100)),
                  snapshot_ends=(13500,))
    q = resolve([cut])
    assert len(q.copies[0].missing) == 2
    assert "epoch 7" in q.copies[0].missing[0] and "13500" in q.copies[0].missing[1]
    assert (q.committed_end, q.committed_by) == (13500, "snapshot")


def test_older_segments_deleted_on_the_reference_are_not_a_divergence():
    # the reference's log starts at 1000 (a snapshot replaced its older segments): below it nothing is compared
    follower = LogCopy("a", ((1, 0), (2, 900)), 1100, node_id=1)
    leader = LogCopy("b", ((2, 1000), (3, 1200)), 1300, node_id=2, snapshot_ends=(1000,))
    q = resolve([follower, leader])
    assert q.copies[0].deposed is None and q.copies[0].valid_end == 1100


def test_without_voters_or_snapshots_the_committed_bound_is_unknown():
    q = resolve([LogCopy("a", ((1, 0),), 10)])
    assert (q.committed_end, q.committed_by) == (0, "unknown")


def test_the_majority_is_counted_among_the_voters_in_force_at_each_offset():
    # KIP-853: a VotersRecord takes effect when it is appended.  Voters {1, 2, 3} (quorum-state) until offset 50, then
    # {1, 4, 5}.  Nodes 1-3 hold 100, 60, 60 of one epoch: a majority of {1, 2, 3} holds 0-59, but those voters ruled
    # only below 50; nodes 4 and 5 are not given, so nothing of {1, 4, 5}'s reign is shown committed: 50
    copies = [LogCopy(f"n{i}", ((1, 0),), end, node_id=i, voters=(1, 2, 3)) for i, end in ((1, 100), (2, 60), (3, 60))]
    q = resolve(copies, voter_history=[(50, (1, 4, 5))])
    assert (q.committed_end, q.committed_by, q.voters) == (50, "majority of voters [1, 2, 3]", (1, 4, 5))
    # node 4 given, holding 0-79: {1, 4, 5}'s majority (1 and 4) holds 0-79, in its reign: 80
    q = resolve([*copies, LogCopy("n4", ((1, 0),), 80, node_id=4)], voter_history=[(50, (1, 4, 5))])
    assert (q.committed_end, q.committed_by) == (80, "majority of voters [1, 4, 5]")
