"""The controller's election model against the rules of Kafka's PartitionChangeBuilder and ReplicationControlManager.

Every expectation is derived by hand from the source at the release tag named
in the test (``org.apache.kafka:kafka-metadata`` sources, package
``org.apache.kafka.controller``), never from the model's own output.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kforensics.kraft.election import NO_LEADER, ControllerRules, Registration, change, predict, restart

V4_1 = (4, 1, 0)
V4_0 = (4, 0, 0)


def rules(**kw) -> ControllerRules:
    return ControllerRules(**{"release": V4_1, **kw})


def every(*brokers):
    return lambda r: r in brokers


def test_the_leader_comes_from_the_isr_in_replica_order():
    # electAnyLeader (4.1.0): targetReplicas.stream().filter(isValidNewLeader).findFirst(): replica order, not ISR
    # order; 3 is first in the replicas but outside the ISR
    reg = Registration(replicas=(3, 2, 1), isr=(1, 2), leader=NO_LEADER, leader_epoch=7)
    new, how = change(reg, rules(), [1, 2], every(1, 2, 3))
    assert (new.leader, how, new.leader_epoch, new.isr) == (2, "isr", 8, (1, 2))


def test_the_current_leader_stays_when_it_is_still_valid():
    # electAnyLeader: "Don't consider a new leader since the current leader meets all the constraints"; no
    # Leader field is set, so no epoch bump (the ISR shrink does not bump it from metadata 3.6-IV0)
    reg = Registration(replicas=(1, 2, 3), isr=(1, 2, 3), leader=2, leader_epoch=4)
    new, how = change(reg, rules(metadata_version=20), [1, 2], every(1, 2))
    assert (new.leader, how, new.leader_epoch, new.isr) == (2, None, 4, (1, 2))


def test_an_isr_shrink_bumps_the_epoch_only_before_metadata_3_6_iv0():
    # triggerLeaderEpochBumpForIsrShrinkIfNeeded + MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink
    # (!isAtLeast(IBP_3_6_IV0), feature level 12): KAFKA-15021
    reg = Registration(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, leader_epoch=5)
    old, _ = change(reg, rules(release=(3, 5, 0), metadata_version=11), [1, 2], every(1, 2))
    new, _ = change(reg, rules(release=(3, 6, 0), metadata_version=12), [1, 2], every(1, 2))
    assert (old.leader, old.leader_epoch) == (1, 6)
    assert (new.leader, new.leader_epoch) == (1, 5)


def test_with_the_isr_empty_an_eligible_leader_replica_leads_and_becomes_the_isr():
    # isValidNewLeader: "in ISR, or in ELR when the ISR is empty"; tryElection: a leader from the ELR becomes the
    # ISR alone and leaves the ELR
    reg = Registration(replicas=(1, 2, 3), isr=(), leader=NO_LEADER, leader_epoch=9, elr=(3, 2))
    new, how = change(reg, rules(elr=True, min_isr=2), [], every(2, 3))
    assert (new.leader, how, new.isr, new.elr, new.leader_epoch) == (2, "elr", (2,), (3,), 10)
    assert not new.recovering


def test_the_single_last_known_leader_is_elected_as_unclean_recovery():
    # canElectLastKnownLeader: ELR on, ISR and ELR empty, lastKnownElr of exactly one member; tryElection marks the
    # election unclean: ISR = [leader] and leaderRecoveryState RECOVERING
    reg = Registration(replicas=(1, 2, 3), isr=(), leader=NO_LEADER, leader_epoch=3, last_known_elr=(1,))
    new, how = change(reg, rules(elr=True, min_isr=2), [], every(1, 2, 3))
    assert (new.leader, how, new.isr, new.recovering) == (1, "last-known-elr", (1,), True)


def test_the_last_known_leader_must_be_alive_from_4_1_but_not_before():
    # 4.0.0 canElectLastKnownLeader only logs when isAcceptableLeader fails and returns true anyway; 4.1.0 returns
    # false: the partition stays offline
    reg = Registration(replicas=(1, 2, 3), isr=(), leader=NO_LEADER, leader_epoch=3, last_known_elr=(1,))
    dead = every(2, 3)
    old, how_old = change(reg, rules(release=V4_0, elr=True, min_isr=2), [], dead)
    new, how_new = change(reg, rules(release=V4_1, elr=True, min_isr=2), [], dead)
    assert (old.leader, how_old) == (1, "last-known-elr")
    assert (new.leader, how_new) == (NO_LEADER, None)


def test_two_last_known_members_are_not_a_recovery():
    # canElectLastKnownLeader: partition.lastKnownElr.length != 1 -> false
    reg = Registration(replicas=(1, 2, 3), isr=(), leader=NO_LEADER, leader_epoch=3, last_known_elr=(1, 2))
    new, how = change(reg, rules(elr=True, min_isr=2), [], every(1, 2, 3))
    assert (new.leader, how) == (NO_LEADER, None)


@pytest.mark.parametrize("unclean, expect", [(False, (NO_LEADER, None)), (True, (1, "unclean"))])
def test_an_unclean_pick_only_when_the_topic_enables_it(unclean, expect):
    # electAnyLeader: with Election.UNCLEAN (unclean.leader.election.enable for the topic) the first acceptable
    # replica in replica order; else NO_LEADER.  The ISR's only member, 3, is dead.
    reg = Registration(replicas=(1, 2, 3), isr=(3,), leader=NO_LEADER, leader_epoch=2)
    new, how = change(reg, rules(unclean=unclean), [3], every(1, 2))
    assert (new.leader, how) == expect
    if unclean:
        assert (new.isr, new.recovering, new.leader_epoch) == ((1,), True, 3)
    else:
        assert (new.isr, new.leader_epoch) == ((3,), 2)


def test_a_fenced_or_shutting_down_broker_is_skipped():
    # ClusterControlManager.isActive: registered, not fenced and not in controlled shutdown
    reg = Registration(replicas=(1, 2, 3), isr=(1, 2, 3), leader=NO_LEADER, leader_epoch=1)
    new, how = change(reg, rules(), [1, 2, 3], every(3))
    assert (new.leader, how) == (3, "isr")


def test_without_elr_the_isr_keeps_its_last_member():
    # build(): record.setIsr only when the target ISR is non-empty or ELR is enabled
    reg = Registration(replicas=(1, 2, 3), isr=(1,), leader=1, leader_epoch=4)
    new, how = change(reg, rules(), [], every(2, 3))
    assert (new.leader, new.isr, new.leader_epoch) == (NO_LEADER, (1,), 5)


def test_with_elr_a_fenced_isr_member_below_min_isr_moves_to_the_elr():
    # maybePopulateTargetElr: target ISR below min ISR -> ELR = (ELR + old ISR) - target ISR - unclean shutdowns
    reg = Registration(replicas=(1, 2, 3), isr=(1, 2), leader=1, leader_epoch=4)
    new, _ = change(reg, rules(elr=True, min_isr=2), [2], every(2, 3))
    assert (new.leader, new.isr, new.elr, new.leader_epoch) == (2, (2,), (1,), 5)


def test_an_unclean_shutdown_leaves_the_elr_at_registration():
    # The example: ISR [], ELR [2], LastKnownElr [1], min ISR 2.  Broker 2 crashed: registerBroker sees a
    # previous broker epoch that does not match (isCleanShutdown false) -> handleBrokerShutdown with ELR on removes
    # it from ELR (uncleanShutdownReplicas); ISR and ELR empty, the single last known leader 1 is alive -> 1 leads
    # (4.1.0), unclean recovery
    reg = Registration(replicas=(1, 2, 3), isr=(), leader=NO_LEADER, leader_epoch=6, elr=(2,), last_known_elr=(1,))
    crashed = restart(reg, rules(elr=True, min_isr=2), active=[], returning=[1, 2], clean_shutdown={})
    assert (crashed.leader, crashed.how, crashed.unclean) == (1, "last-known-elr", True)
    # broker 2 shut down cleanly: handled as fenced (it is in no ISR: nothing to do), then unfenced with the
    # partition leaderless -> 2 is valid (ISR empty, in ELR) -> 2 leads, clean
    clean = restart(reg, rules(elr=True, min_isr=2), active=[], returning=[1, 2], clean_shutdown={2: True})
    assert (clean.leader, clean.how, clean.unclean) == (2, "elr", False)


def test_a_whole_cluster_crash_without_elr_ends_with_the_last_isr_member_to_register():
    # A warm restart (every broker re-registers within its session timeout).  All three were active in the record.  Re-registering 1 (fenced handling) moves leadership to 2, 2's to 3, and
    # 3's leaves no acceptable ISR member: NO_LEADER with ISR [3] (kept: no ELR).  Unfencing 1 and 2 finds them
    # outside the ISR; unfencing 3 elects it.
    reg = Registration(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, leader_epoch=10)
    c = restart(reg, rules(), active=[1, 2, 3], returning=[1, 2, 3], clean_shutdown={1: True, 2: True, 3: True},
                cold=False)
    assert (c.leader, c.how, c.registration.isr) == (3, "isr", (3,))
    # epochs: 1 -> 2 (11), 2 -> 3 (12), 3 -> none (13), none -> 3 (14)
    assert c.leader_epoch == 14
    p = predict(reg, rules(), active=[1, 2, 3], returning=[1, 2, 3], clean_shutdown={1: True, 2: True, 3: True},
                cold=False)
    assert p.leader == 3 and set(p.alternatives) == {1, 2}  # whoever registers last leads: order-dependent


def test_a_broker_that_does_not_return_is_fenced_and_loses_leadership():
    reg = Registration(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, leader_epoch=10)
    c = restart(reg, rules(), active=[1, 2, 3], returning=[2, 3], clean_shutdown={2: True, 3: True}, cold=False)
    # register 2: ISR [1,3], leader 1 stays; register 3: ISR [1], leader 1 stays; fence 1: ISR stays [1] (no ELR),
    # leader none; unfence 2, 3: not in the ISR -> offline
    assert (c.leader, c.how) == (NO_LEADER, "offline")
    u = restart(reg, rules(unclean=True), active=[1, 2, 3], returning=[2, 3], clean_shutdown={2: True, 3: True},
                cold=False)
    assert (u.leader, u.how, u.unclean) == (2, "unclean", True)


def test_a_cold_restart_after_a_crash_with_elr_ends_in_unclean_recovery_of_the_last_leader():
    # Kafka 4.4.0 (ELR on, min ISR 2): the record has leader 2, ISR [2, 3], both brokers active, both killed.  The
    # controller comes back first: 2's session expires (fenced: ISR [3] < min ISR, so 2 joins the ELR; 3 leads),
    # then 3's (ISR empty: ELR [2, 3], no leader; the last known leader becomes [3]).  Broker 2 re-registers after
    # an unclean shutdown and leaves the ELR; unfenced, it is not eligible and the last known leader 3 is not alive
    # (4.1+): offline.  Broker 3 re-registers (leaves the ELR), is unfenced, and is elected as the single last
    # known leader: unclean recovery, RECOVERING.  Epochs: +1 (3 leads), +1 (none), +1 (3) = 4 from 1.
    reg = Registration(replicas=(1, 2, 3), isr=(2, 3), leader=2, leader_epoch=1)
    c = restart(reg, rules(release=(4, 4, 0), elr=True, min_isr=2), active=[2, 3], returning=[2, 3, 1])
    assert (c.leader, c.how, c.leader_epoch, c.registration.recovering) == (3, "last-known-elr", 4, True)


# ----------------------------------------------------------------------------- property: only what Kafka allows
regs = st.builds(
    lambda reps, isr_mask, leader_i, elr_mask, lke_i: (reps, isr_mask, leader_i, elr_mask, lke_i),
    st.permutations([1, 2, 3]), st.lists(st.booleans(), min_size=3, max_size=3), st.integers(-1, 2),
    st.lists(st.booleans(), min_size=3, max_size=3), st.integers(-1, 2))


@settings(max_examples=300, deadline=None)
@given(regs, st.booleans(), st.booleans(), st.integers(1, 3), st.sets(st.sampled_from([1, 2, 3])),
       st.sets(st.sampled_from([1, 2, 3])), st.sets(st.sampled_from([1, 2, 3])))
def test_the_chosen_leader_is_always_one_kafka_allows(shape, elr, unclean, min_isr, active, back, clean):
    reps, isr_mask, leader_i, elr_mask, lke_i = shape
    isr = tuple(r for r, m in zip(reps, isr_mask) if m)
    elr_set = tuple(r for r, m in zip(reps, elr_mask) if m and r not in isr) if elr else ()
    reg = Registration(tuple(reps), isr, reps[leader_i] if leader_i >= 0 and isr and reps[leader_i] in isr else -1,
                       5, elr_set, (reps[lke_i],) if lke_i >= 0 and elr and not isr else ())
    c = predict(reg, rules(elr=elr, unclean=unclean, min_isr=min_isr), active=active, returning=back,
                clean_shutdown={b: True for b in clean})
    assert c.leader == NO_LEADER or c.leader in back, "a leader must have come back"
    assert c.leader_epoch >= reg.leader_epoch
    if c.leader != NO_LEADER and not unclean and c.how not in ("last-known-elr",):
        # a clean election only ever picks a replica that was in the ISR or ELR at some point of the record
        assert c.leader in set(reg.isr) | set(reg.elr)
    if c.how == "last-known-elr":
        # the last known leader is set only with ELR on, from a replica that led or was in the ISR/ELR
        assert elr and c.leader in set(reg.isr) | set(reg.elr) | set(reg.last_known_elr) | {reg.leader}
    for order in itertools.permutations(sorted(b for b in back if b in reps)):
        o = restart(reg, rules(elr=elr, unclean=unclean, min_isr=min_isr), active=active, cold=True,
                    returning=[*order, *sorted(b for b in back if b not in reps)],
                    clean_shutdown={b: True for b in clean})
        assert o.leader in {c.leader, *c.alternatives}
