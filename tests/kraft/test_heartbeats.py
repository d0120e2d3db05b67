"""The order in which a restarted controller fences the brokers it held active, against real Kafka.

Each case is a lab run (``lab/runs/campaign3`` and ``campaign4``, a cold restart: the controller alone until it fenced every broker
it held (4.4.0), or until the first broker registered (3.9.1)): the registrations of the frozen metadata log in
the order the log records them (broker id, broker epoch, fenced), and the order of the ``fenced: 1``
``BrokerRegistrationChangeRecord``s the restarted controller then wrote into its own metadata log.  The expected
orders are Kafka's, read from those records; none is in id order throughout.
"""

from __future__ import annotations

import pytest

from kforensics.kraft.cluster_state import BrokerRegistration, ClusterState
from kforensics.kraft.heartbeats import fence_order, fences_unprompted, timeline_order, tracker_order

#: (run, release, registrations in log order, the broker that registered first at the restart (3.9.1: its
#: registration is what starts the fencing, and it is not fenced), the fences Kafka wrote in order)
OBSERVED = [
    ("controller-kill-4.4.0-s137506472", (4, 4, 0), [(3, 21, False), (2, 23, True), (1, 24, False)], None, [3, 1]),
    ("leader-crash-4.4.0-s1015220939", (4, 4, 0), [(3, 19, False), (1, 21, False), (2, 22, True)], None, [3, 1]),
    ("network-partition-4.4.0-s1018022223", (4, 4, 0), [(1, 28, False), (2, 32, False), (3, 36, False)], None,
     [3, 1, 2]),
    ("power-loss-image-4.4.0-s323446306", (4, 4, 0), [(3, 17, False), (2, 18, True), (1, 19, False)], None, [1, 3]),
    ("unclean-election-4.4.0-s503221913", (4, 4, 0), [(3, 17, False), (2, 20, True), (1, 21, False)], None, [1, 3]),
    ("network-partition-4.4.0-s1059665904", (4, 4, 0), [(3, 18, False), (2, 21, False), (1, 23, True)], None,
     [2, 3]),
    ("unclean-election-4.4.0-s413874204", (4, 4, 0), [(2, 17, False), (1, 19, False), (3, 26, True)], None, [1, 2]),
    ("follower-freeze-3.9.1-s1009883194", (3, 9, 1), [(3, 17, False), (2, 20, False), (1, 22, False)], 3, [2, 1]),
    ("follower-freeze-3.9.1-s325606562", (3, 9, 1), [(3, 11, False), (2, 12, False), (1, 14, False)], 3, [2, 1]),
    ("crash-unclean-torn-3.9.1-s28278034", (3, 9, 1), [(1, 13, True), (3, 16, False), (2, 18, False)], 2, [3]),
    ("crc-flip-3.9.1-s91888745", (3, 9, 1), [(2, 11, False), (1, 12, True), (3, 13, False)], 3, [2]),
]


def _cluster(registrations: list[tuple[int, int, bool]]) -> ClusterState:
    c = ClusterState()
    for b, epoch, fenced in registrations:
        c.brokers[b] = BrokerRegistration(b, epoch, fenced)
    return c


@pytest.mark.parametrize("run, release, registrations, first, fenced", OBSERVED, ids=[o[0] for o in OBSERVED])
def test_the_order_kafka_fenced_the_brokers_it_held(run, release, registrations, first, fenced):
    order = [b for b in fence_order(_cluster(registrations), release) if b != first]
    assert order == fenced


def test_the_observations_are_not_id_order():
    """The cases above would not tell a model that fences by id from this one."""
    assert any(sorted(f) != f for *_, f in OBSERVED if len(f) > 1)
    assert any(sorted(f) == f for *_, f in OBSERVED if len(f) > 1)


def test_only_a_4x_controller_fences_on_its_own():
    assert fences_unprompted((4, 0, 0)) and fences_unprompted((4, 4, 0))
    assert not fences_unprompted((3, 9, 1))


def test_timeline_order_grows_its_table_as_kafka_does():
    """BaseHashTable (3.9.0) doubles from 2 slots when (size + 1) * 0.75 > length: one key stays alone, and the
    order of many keys is a permutation of them that does not depend on the order of insertion unless two share a
    slot."""
    assert timeline_order([7]) == [7]
    keys = list(range(1, 40))
    got = timeline_order(keys)
    assert sorted(got) == keys and got != keys


def test_tracker_order_is_the_bin_order_of_id_and_epoch():
    """ConcurrentHashMap bins of BrokerIdAndEpoch: 4.4.0's record hashes (3, 18) to 111 (bin 15) and (2, 21) to 83
    (bin 3), so 2 goes first, as the lab saw (network-partition-4.4.0-s1059665904); 4.0's Objects.hash puts 961
    more on both (1072: bin 0, 1044: bin 4), so 3 would have.  Insertion order does not matter across bins."""
    assert tracker_order([(3, 18), (2, 21)], (4, 4, 0)) == [2, 3] == tracker_order([(2, 21), (3, 18)], (4, 4, 0))
    assert tracker_order([(3, 18), (2, 21)], (4, 0, 0)) == [3, 2]
