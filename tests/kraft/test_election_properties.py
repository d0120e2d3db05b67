"""Across random registrations and restarts, the predicted leader is always one Kafka's rules allow.

The rules checked (PartitionChangeBuilder.electAnyLeader / canElectLastKnownLeader at 4.1.0): a clean election
picks a member of the ISR, or of the ELR when the ISR is empty; the last known leader only with ELR on, as the
single LastKnownElr member (the recorded one, or an in-sync replica that lost its place during the restart: the
ISR and ELR only shrink, and maybeUpdateLastKnownLeader records who left last; before 4.1.0 it need not have come
back); anyone else only with unclean.leader.election.enable.  A restart never adds a broker
to the ISR (a returning broker is not caught up until a leader serves it), so whoever leads cleanly was in the
recorded ISR or ELR.  And the leader is a broker that came back or never stopped (but for that last-known-leader
case); a recorded leader that never stopped keeps leading (it is never fenced, so electAnyLeader keeps the current
leader while it stays valid).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kforensics.kraft.cluster_state import BrokerRegistration, ClusterState
from kforensics.kraft.controller_choice import RestartEvidence, controller_choice
from kforensics.kraft.election import NO_LEADER
from kforensics.kraft.timeline import TimelineEntry

BROKERS = [1, 2, 3, 4]


@st.composite
def cases(draw):
    replicas = draw(st.permutations(BROKERS).map(lambda p: p[:3]))
    isr = draw(st.lists(st.sampled_from(replicas), unique=True, max_size=3))
    elr_on = draw(st.booleans())
    elr = draw(st.lists(st.sampled_from([r for r in replicas if r not in isr] or [0]), unique=True,
                        max_size=2)) if elr_on else []
    elr = [r for r in elr if r]
    lke = draw(st.lists(st.sampled_from(replicas), unique=True, max_size=1)) if elr_on and not isr else []
    leader = draw(st.sampled_from(isr)) if isr and draw(st.booleans()) else NO_LEADER
    cluster = ClusterState()
    for b in BROKERS:
        cluster.brokers[b] = BrokerRegistration(b, 100 + b, fenced=draw(st.booleans()),
                                                in_controlled_shutdown=draw(st.booleans()))
    if elr_on:
        cluster.features["eligible.leader.replicas.version"] = 1
    unclean = draw(st.booleans())
    cluster.configs[(2, "t")] = {"unclean.leader.election.enable": str(unclean).lower(),
                                 "min.insync.replicas": str(draw(st.integers(1, 3)))}
    alive = tuple(sorted(draw(st.lists(st.sampled_from(BROKERS), unique=True, min_size=1))))
    markers = {b: frozenset({100 + b}) for b in alive if draw(st.booleans())}
    release = draw(st.sampled_from([(3, 7, 0), (3, 9, 1), (4, 0, 0), (4, 1, 0), (4, 2, 0), None]))
    running = tuple(sorted(draw(st.lists(st.sampled_from(alive), unique=True, max_size=len(alive) - 1))))
    entry = TimelineEntry(0, 0, leader, 5, 0, isr, replicas, elr, lke)
    return entry, RestartEvidence(cluster, tuple(BROKERS), alive, markers, release, running), unclean, elr_on


@settings(max_examples=400, deadline=None)
@given(cases())
def test_the_predicted_leader_is_one_kafkas_rules_allow(case):
    entry, evidence, unclean, elr_on = case
    e = controller_choice(entry, "t", evidence)
    if e.leader == NO_LEADER:
        assert e.how == "offline" and e.rule is None
        return
    before_4_1 = evidence.release is not None and evidence.release < (4, 1, 0)
    if not (e.rule == "last-known-elr" and before_4_1):  # 3.7-4.0 elect the last known leader even when absent
        assert e.leader in evidence.returning + evidence.running, "only a broker that is back (or never left) leads"
    if entry.leader in evidence.running:
        assert e.leader == entry.leader and not e.unclean, "a leader that never stopped is never fenced"
    assert e.leader in entry.replicas
    if e.rule == "unclean":
        assert unclean and e.unclean
    elif e.unclean:
        # the last known leader was elected on the way (maybe fenced and elected again from the ELR since): the
        # recorded one, or an in-sync replica that lost its place at the restart
        assert unclean or (elr_on and e.leader in set(entry.last_known_elr) | set(entry.isr) | set(entry.elr))
    else:
        assert e.rule != "last-known-elr"
        assert e.leader in set(entry.isr) | set(entry.elr), "a clean election stays within the ISR and ELR"
    for alt in e.alternatives:
        assert alt == NO_LEADER or alt in entry.replicas  # another order may leave it offline
