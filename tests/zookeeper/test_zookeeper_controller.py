"""The ZooKeeper-era controller at a restart, rule by rule from Kafka's source (core/src/main/scala/kafka/controller
at tags 2.8.2 and 3.9.0-rc3) and Scala 2.13's collections (scala-library 2.13.5: Hashing.improve, ChampCommon).
"""

from __future__ import annotations

from kforensics.kraft.controller_choice import RestartEvidence
from kforensics.log.zookeeper_data_dir import ZooKeeperData
from kforensics.zookeeper.controller import PartitionRun, Restart, champ_order, run_restart
from kforensics.zookeeper.election import with_zookeeper, zookeeper_choice
from kforensics.zookeeper.partition_state import PartitionState, ZooKeeperCluster


def test_offline_replicas_come_in_scala_hashmap_order():
    # replicas.groupBy(_.replica) builds an immutable.HashMap (IterableOps.groupBy, 2.13.5): iterated by the low 5
    # bits of Hashing.improve(id): 0 -> 0, 5 -> 1, 1 -> 7, 6 -> 8, 2 -> 14, 7 -> 18, 3 -> 20, 4 -> 29
    assert champ_order([3, 1, 2]) == [1, 2, 3]
    assert champ_order([1, 5]) == [5, 1]
    assert champ_order(range(8)) == [0, 5, 1, 6, 2, 7, 3, 4]
    assert sorted(champ_order(range(100))) == list(range(100))  # colliding ids go to sub-nodes, none lost


def _run(assignment, leader, epoch, isr, order, unclean=False, **kw):
    p = PartitionRun(tuple(assignment), PartitionState(leader, epoch, tuple(isr), 3), unclean)
    run_restart(p, Restart(tuple(order), everyone=frozenset(assignment), **kw))
    return p


def test_failover_takes_the_dead_out_of_the_isr_then_elects_unclean():
    # the lab's unclean-election-2.8.2, events-0: leader 2 (epoch 4, ISR [2, 1]), broker 3 back first.  Failover:
    # doRemoveReplicasFromIsr for 1 (epoch 5), for 2 (the leader: NoLeader; the last ISR member stays; epoch 6);
    # offlinePartitionLeaderElection: no live ISR member, unclean on: 3 with ISR [3] (epoch 7) -- Kafka's 3, 7
    p = _run([3, 2, 1], 2, 4, [2, 1], [3, 1, 2], unclean=True)
    assert (p.state.leader, p.state.leader_epoch, p.state.isr) == (3, 7, (3,))
    assert p.rule == "unclean" and p.unclean


def test_without_unclean_election_the_partition_waits_for_an_isr_member():
    # no live ISR member and unclean off: no leader (the state is left as it is) until broker 2 starts
    # (onBrokerStartup -> triggerOnlinePartitionStateChange), which leads with the live part of the ISR
    p = _run([3, 2, 1], 2, 4, [2], [3, 1, 2])
    assert (p.state.leader, p.state.leader_epoch, p.state.isr) == (2, 6, (2,))
    assert p.rule == "isr" and not p.unclean
    p = _run([3, 2, 1], 2, 4, [2], [3, 1])  # broker 2 never comes back
    assert (p.state.leader, p.state.leader_epoch) == (-1, 5)


def test_a_live_leader_is_left_alone_but_dead_isr_members_still_cost_an_epoch_each():
    p = _run([1, 2, 3], 1, 9, [1, 2, 3], [1, 2, 3])
    assert (p.state.leader, p.state.leader_epoch, p.state.isr) == (1, 11, (1,))
    assert p.rule is None


def test_a_running_controller_handles_the_expired_brokers_then_their_return():
    # onBrokerFailure: the partitions it led are elected first (ISR's live part), then its replicas leave the ISRs
    p = _run([2, 1, 3], 2, 4, [2, 1, 3], [2], running=frozenset({1, 3}), controller_running=True,
             expiring=frozenset({2}))
    assert (p.state.leader, p.state.leader_epoch, p.state.isr) == (1, 5, (1, 3))


def _cluster(states: dict, assignments: dict, registered: dict, controller: int | None) -> ZooKeeperCluster:
    return ZooKeeperCluster(ZooKeeperData("zk"), assignments=assignments, states=states, registered=registered,
                            controller=controller)


def test_the_answer_is_the_replays_leader_election_and_says_the_record_is_zookeepers():
    zk = _cluster({("t", 0): PartitionState(-1, 4, (3,), 3, 0x8A)}, {"t": {0: (2, 1, 3)}}, {1: 11, 2: 12}, 2)
    ev = with_zookeeper(RestartEvidence(zk.configs, (1, 2, 3), order=(3, 1, 2)), zk)
    e = zookeeper_choice("t", 0, ev)
    assert (e.leader, e.leader_epoch, e.how, e.rule) == (3, 5, "predicted", "isr")
    assert (e.record_leader, e.record_epoch, e.order_given, e.alternatives) == (-1, 4, True, [])
    assert "ZooKeeper" in e.detail and "/brokers/topics/t/partitions/0/state" in e.assumptions["controller's record"]
    assert e.assumptions["unclean.leader.election.enable"].startswith("false (Kafka's default")
    assert zookeeper_choice("t", 1, ev) is None  # a partition ZooKeeper does not know: the replay guesses


def test_without_the_order_every_order_is_tried():
    zk = _cluster({("t", 0): PartitionState(2, 4, (2, 1), 3)}, {"t": {0: (3, 2, 1)}}, {}, None)
    e = zookeeper_choice("t", 0, with_zookeeper(RestartEvidence(zk.configs, (1, 2, 3)), zk))
    # the record's leader keeps it when it is back first; other orders give broker 1 (first back, in the ISR)
    # or leave it offline until an ISR member returns (unclean off): the KRaft path's rule picks the record's
    assert (e.leader, e.how, e.order_given) == (2, "controller-record", False)
    assert e.alternatives == [1]
    zk.configs.configs[(2, "t")] = {"unclean.leader.election.enable": "true"}
    e = zookeeper_choice("t", 0, with_zookeeper(RestartEvidence(zk.configs, (1, 2, 3)), zk))
    assert 3 in e.alternatives and e.assumptions["unclean.leader.election.enable"] == "true (topic config of t)"
