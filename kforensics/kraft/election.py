"""The KRaft controller's leader election, as it runs when brokers come back after an incident.

A model of Kafka's ``PartitionChangeBuilder`` (metadata module) and of the
calls ``ReplicationControlManager`` makes of it when a broker re-registers,
is fenced, or is unfenced.  Rules, as read at the release tags (the sources
jars of ``org.apache.kafka:kafka-metadata``, ``controller/`` package):

* **Who may lead** (``electAnyLeader``, 3.7.0 … 4.3.1): the current leader
  if it is still valid; else the first replica, in replica order, that is in
  the target ISR (or, the ISR being empty, in the ELR) and acceptable (an
  active broker: registered, unfenced, not in controlled shutdown —
  ``ClusterControlManager.isActive``); else the single last known ELR member
  (``canElectLastKnownLeader``: ELR on, ISR and ELR empty, exactly one
  member; from 4.1.0 only when that broker is acceptable — 3.7.0 … 4.0.x
  elect it even when it is not); else, when ``unclean.leader.election.enable``
  holds for the topic, the first acceptable replica (unclean); else nobody.
* **What an election changes** (``tryElection``): a leader taken from the ELR
  becomes the ISR alone and leaves the ELR; an unclean (or last-known) leader
  becomes the ISR alone and the partition enters RECOVERING (before 4.0 only
  when metadata.version ≥ 3.2-IV0, ``isLeaderRecoverySupported``).  Every
  record that sets a leader (a new one, or none) bumps the leader epoch.
* **ELR upkeep** (``maybePopulateTargetElr``): with ELR on and the target ISR
  below ``min.insync.replicas``, replicas leaving the ISR join the ELR unless
  they shut down uncleanly; at or above min ISR the ELR is emptied.  Without
  ELR the ISR never becomes empty (the last member stays).
* **Epoch bump on ISR shrink** (``triggerLeaderEpochBumpForIsrShrinkIfNeeded``):
  only below metadata.version 3.6-IV0 (level 12; KAFKA-15021).
* **At a restart** (``ClusterControlManager.registerBroker``,
  ``ReplicationControlManager.handleBrokerShutdown``, ``handleBrokerFenced``,
  ``handleBrokerUnfenced``): a returning broker re-registers fenced; with ELR
  on and an unclean shutdown (its ``.kafka_cleanshutdown`` does not name the
  broker epoch of its last registration) it is removed from ISR and ELR,
  otherwise, from 4.0.0, it is handled as fenced (removed from the ISR);
  before 4.0 (``handleBrokerUncleanShutdown``, 3.9.1) only the first case
  changes anything.  A broker that
  was active but does not return is fenced when its session expires.  Each
  returning broker, once unfenced, is offered the partitions without a leader.

The outcome can depend on the order in which brokers come back; the model
runs every order of the partition's returning replicas and says when they
disagree.  Not modelled: reassignments in flight (adding/removing replicas),
offline log directories (``LeaderAcceptor``'s directory check), preferred
leader elections run later by the controller's balancer.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

NO_LEADER = -1
#: whether a broker may lead now (``isAcceptableLeader``: active, not the broker being removed)
Acceptable = Callable[[int], bool]
#: metadata.version levels that change the rules (MetadataVersion.java)
MV_3_2_IV0 = 3  # leader recovery state (KIP-704)
MV_3_6_IV0 = 12  # no leader epoch bump on ISR shrink (KAFKA-15021)
#: most orders of returning replicas tried per partition (replication factors above 6 sample the first ones)
MAX_ORDERS = 720


@dataclass(frozen=True)
class Registration:
    """A partition's registration in the controller's metadata (the last PartitionRecord/ChangeRecord fold)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    recovering: bool = False


@dataclass(frozen=True)
class ControllerRules:
    """What decides an election besides the registration: release, features and configs (read or defaulted)."""

    release: tuple[int, int, int] = (1 << 30, 0, 0)  # the controller's Kafka release; newest when unknown
    elr: bool = False  # eligible leader replicas (KIP-966) in force
    unclean: bool = False  # unclean.leader.election.enable for the topic
    min_isr: int = 1  # min.insync.replicas for the topic
    metadata_version: int | None = None  # metadata.version feature level (None: unknown, taken as current)
    provenance: dict[str, str] = field(default_factory=dict)  # rule -> where its value came from

    def at_least(self, *release: int) -> bool:
        return self.release >= tuple(release) + (0,) * (3 - len(release))

    @property
    def lke_needs_alive(self) -> bool:
        """Whether the last known leader must be acceptable to be elected (4.1.0 on; 3.7–4.0 elect it anyway)."""
        return self.at_least(4, 1)

    @property
    def recovery_state(self) -> bool:
        """Whether an unclean election marks the partition RECOVERING (4.0 on; before, from metadata 3.2-IV0)."""
        return self.at_least(4, 0) or self.metadata_version is None or self.metadata_version >= MV_3_2_IV0

    @property
    def bump_on_isr_shrink(self) -> bool:
        """Whether an ISR shrink bumps the leader epoch (metadata.version below 3.6-IV0, KAFKA-15021)."""
        return self.metadata_version is not None and self.metadata_version < MV_3_6_IV0


@dataclass(frozen=True)
class Step:
    """One controller action at the restart and the registration it leaves."""

    action: str  # "register B (clean|unclean shutdown)", "fence B", "unfence B"
    registration: Registration
    how: str | None = None  # how a leader was chosen by this step (see Choice.how), None if the leader stayed


@dataclass(frozen=True)
class Choice:
    """Who leads after the restart, and why."""

    leader: int  # NO_LEADER when the partition stays offline
    leader_epoch: int
    how: str  # controller-record | isr | elr | last-known-elr | unclean | offline
    unclean: bool
    registration: Registration
    steps: tuple[Step, ...] = ()
    order: tuple[int, ...] = ()  # the order of returning replicas this choice assumes
    alternatives: tuple[int, ...] = ()  # other leaders other return orders give (order-dependent when any)
    #: per leader some return order gives (this one's included), the first order's choice
    by_leader: tuple[tuple[int, Choice], ...] = ()

    def for_leader(self, leader: int) -> Choice | None:
        """The choice of an order that gives ``leader`` (None when no order tried does)."""
        return next((c for b, c in self.by_leader if b == leader), None)


def _elect(reg: Registration, isr: list[int], elr: list[int], acceptable: Acceptable,
           rules: ControllerRules) -> tuple[int, str, bool]:
    """``electAnyLeader``: (leader, how, unclean) for the target ISR/ELR."""
    def valid(r: int) -> bool:
        return (r in isr or (not isr and r in elr)) and acceptable(r)

    if reg.leader != NO_LEADER and valid(reg.leader):
        return reg.leader, "controller-record", False
    for r in reg.replicas:
        if valid(r):
            return r, ("isr" if r in isr else "elr"), False
    if (rules.elr and not isr and not elr and len(reg.last_known_elr) == 1
            and (acceptable(reg.last_known_elr[0]) or not rules.lke_needs_alive)):
        return reg.last_known_elr[0], "last-known-elr", True
    if rules.unclean:
        for r in reg.replicas:
            if acceptable(r):
                return r, "unclean", True
    return NO_LEADER, "offline", False


def _target_elr(reg: Registration, isr: list[int], unclean_shutdown: Sequence[int],
                rules: ControllerRules) -> tuple[list[int], list[int]]:
    """``maybePopulateTargetElr``: the target ELR and last known ELR before the election."""
    if not rules.elr:
        return list(reg.elr), list(reg.last_known_elr)
    if len(isr) >= rules.min_isr:
        return [], []
    candidates = list(dict.fromkeys([*reg.elr, *reg.isr]))
    elr = [r for r in candidates if r not in isr and r not in unclean_shutdown]
    lke = [r for r in dict.fromkeys([*candidates, *reg.last_known_elr]) if r not in isr and r not in elr]
    return elr, lke


def change(reg: Registration, rules: ControllerRules, target_isr: Iterable[int], acceptable: Acceptable,
           unclean_shutdown: Sequence[int] = ()) -> tuple[Registration, str | None]:
    """``PartitionChangeBuilder.build`` for an ISR change with an election: the new registration, and how a new
    leader was chosen (None when the leader stays)."""
    isr = list(target_isr)
    elr, lke = _target_elr(reg, isr, unclean_shutdown, rules)
    leader, chosen, unclean = _elect(reg, isr, elr, acceptable, rules)
    how: str | None = chosen
    new_leader: int | None = None  # the record's Leader field: None = no change
    record_isr: list[int] | None = None
    recovering = reg.recovering
    if leader != reg.leader:
        if leader in elr:
            isr, elr = [leader], [r for r in elr if r != leader]
        new_leader = leader
        if unclean:
            record_isr = [leader]
            recovering = recovering or rules.recovery_state
    else:
        how = None
    if record_isr is not None or not rules.elr:
        elr, lke = [], []  # maybeUpdateRecordElr: an unclean election (or no ELR) clears them
    if record_isr is None and (isr or rules.elr) and tuple(isr) != reg.isr:
        record_isr = isr
    if (new_leader is None and record_isr is not None and rules.bump_on_isr_shrink
            and not set(reg.isr) <= set(record_isr)):
        new_leader = reg.leader  # KAFKA-15021: an ISR shrink bumps the epoch before metadata 3.6-IV0
    lke = _last_known_leader(reg, rules, new_leader, record_isr, lke)
    final = Registration(reg.replicas, tuple(record_isr if record_isr is not None else reg.isr),
                         reg.leader if new_leader is None else new_leader,
                         reg.leader_epoch + (new_leader is not None), tuple(elr), tuple(lke), recovering)
    return final, how


def _last_known_leader(reg: Registration, rules: ControllerRules, new_leader: int | None,
                       record_isr: list[int] | None, lke: list[int]) -> list[int]:
    """``maybeUpdateLastKnownLeader`` (the balanced-recovery form, always on): the last known ELR kept, set or
    cleared.  4.2.0 changed when it is set and cleared."""
    if not rules.elr:
        return lke
    kept = list(reg.last_known_elr)
    if rules.at_least(4, 2):
        if new_leader == NO_LEADER and not reg.last_known_elr:
            return [reg.leader]
        if new_leader is not None and new_leader >= 0 and reg.last_known_elr:
            return []
        return kept
    if record_isr is not None and not record_isr and reg.last_known_elr != (reg.leader,):
        return [reg.leader]
    if new_leader is not None and (new_leader >= 0 or (reg.leader != NO_LEADER and new_leader != NO_LEADER)) \
            and reg.last_known_elr:
        return []
    return kept


def restart(reg: Registration, rules: ControllerRules, *, active: Iterable[int], returning: Sequence[int],
            clean_shutdown: dict[int, bool] | None = None, cold: bool = True,
            running: Iterable[int] = (), fenced_first: bool = False, fence_order: Sequence[int] = ()) -> Choice:
    """The leader after the brokers in ``returning`` come back, in that order.

    ``active``: brokers the metadata shows registered, unfenced and not in
    controlled shutdown when the evidence was taken.  ``running``: brokers
    that never stopped (only the controllers, or other brokers, went down):
    they keep heartbeating, so the controller holds them active throughout —
    unfenced first if the record shows them fenced — and they neither
    re-register nor lose their session.  ``clean_shutdown``:
    per returning broker, whether the controller will take its shutdown as
    clean (unknown brokers: unclean).  ``cold`` (the usual restart after an
    outage): the controller is back before the brokers; the first broker back
    registers, every broker the controller still takes as active loses its
    session, then each broker is unfenced before the next comes back;
    ``fenced_first``: the sessions expire before the first broker registers
    (a controller from 4.0 fences on its own, :func:`.heartbeats.fences_unprompted`,
    and the brokers were started after that).  The brokers are fenced one at a
    time in ``fence_order`` (the controller's heartbeat table,
    :func:`.heartbeats.fence_order`; absent there: by id).  Not ``cold``: the
    brokers all register within their session timeout, the absent ones are
    fenced after, and the returning ones are unfenced in order.
    """
    clean = clean_shutdown or {}
    staying = set(running) - set(returning)
    live = set(active)
    steps: list[Step] = []
    state = {"how": "controller-record" if reg.leader != NO_LEADER else "offline"}

    def apply(action: str, new: Registration, how: str | None) -> Registration:
        steps.append(Step(action, new, how))
        if how is not None:
            state["how"] = how
        return new

    rank = {b: i for i, b in enumerate(fence_order)}

    def expire(r: Registration, brokers: Iterable[int]) -> Registration:
        # one at a time, in the order of the controller's heartbeat table (heartbeats.fence_order), else by id
        for b in sorted(set(brokers) - staying, key=lambda b: (rank.get(b, len(rank)), b)):
            live.discard(b)
            r = _fence(r, rules, b, live, apply, f"fence {b} (session expired)")
        return r

    for b in sorted(staying - live):
        # a broker still running that the record shows fenced heartbeats and is unfenced once caught up
        reg = _unfence(reg, rules, b, live, apply)
    live |= staying
    if cold and fenced_first:
        # the brokers start only once the controller has fenced every broker it held active (their sessions expired)
        reg = expire(reg, live | ({reg.leader} - {NO_LEADER}))
        for b in returning:
            reg = _register(reg, rules, b, clean.get(b, False), live, apply)
            reg = _unfence(reg, rules, b, live, apply)
    elif cold:
        # the first broker back registers within the others' session timeout; their sessions expire while it
        # catches up; each later broker comes back once the one before is unfenced
        first, rest = (returning[0], list(returning[1:])) if returning else (None, [])
        if first is not None:
            reg = _register(reg, rules, first, clean.get(first, False), live, apply)
        reg = expire(reg, live | ({reg.leader} - {NO_LEADER, first}))
        if first is not None:
            reg = _unfence(reg, rules, first, live, apply)
        for b in rest:
            reg = _register(reg, rules, b, clean.get(b, False), live, apply)
            reg = _unfence(reg, rules, b, live, apply)
    else:
        for b in returning:
            reg = _register(reg, rules, b, clean.get(b, False), live, apply)
        # active in the record (or its leader) but not coming back: its session expires and it is fenced
        reg = expire(reg, (live | ({reg.leader} - {NO_LEADER})) - set(returning))
        for b in returning:
            reg = _unfence(reg, rules, b, live, apply)
    how_final = state["how"]
    # an unclean election on the way (a last known leader elected, then fenced and elected again from the ELR)
    # leaves the partition RECOVERING: what it lost then is lost whatever rule elects the final leader
    unclean = reg.leader != NO_LEADER and any(s.how in ("unclean", "last-known-elr") for s in steps)
    return Choice(reg.leader, reg.leader_epoch, how_final if reg.leader != NO_LEADER else "offline", unclean,
                  reg, tuple(steps), tuple(returning))


Apply = Callable[[str, Registration, str | None], Registration]


def _register(reg: Registration, rules: ControllerRules, b: int, clean: bool, live: set[int],
              apply: Apply) -> Registration:
    """``registerBroker`` of a new incarnation: fenced until it catches up, its last shutdown handled first."""
    live.discard(b)
    if not rules.at_least(4, 0) and not (rules.elr and not clean):
        return reg  # before 4.0 only an unclean shutdown with ELR on is handled (handleBrokerUncleanShutdown, 3.9.1)
    if rules.elr and not clean:
        if b not in reg.isr and b not in reg.elr:
            return reg  # handleBrokerShutdown visits only the partitions with b in their ISR or ELR
        new, how = change(reg, rules, [r for r in reg.isr if r != b], _excluding(b, live), unclean_shutdown=[b])
        return apply(f"register {b} (unclean shutdown)", new, how)
    return _fence(reg, rules, b, live, apply, f"register {b} ({'clean' if clean else 'unclean'} shutdown)")


def _unfence(reg: Registration, rules: ControllerRules, b: int, live: set[int], apply: Apply) -> Registration:
    """``handleBrokerUnfenced``: ``b`` is active again and is offered the partitions without a leader."""
    live.add(b)
    if reg.leader != NO_LEADER:
        return reg
    new, how = change(reg, rules, reg.isr, lambda r: r in live)
    return apply(f"unfence {b}", new, how)


def _excluding(b: int, live: set[int]) -> Acceptable:
    """``isAcceptableLeader`` while ``b`` is being removed: active now, and not ``b``."""
    return lambda r: r != b and r in live


def _fence(reg: Registration, rules: ControllerRules, b: int, live: set[int], apply: Apply,
           action: str) -> Registration:
    """``handleBrokerFenced`` / a clean ``handleBrokerShutdown``: ``b`` leaves the ISR and cannot lead."""
    if b not in reg.isr and b != reg.leader:
        return reg
    new, how = change(reg, rules, [r for r in reg.isr if r != b], _excluding(b, live))
    return apply(action, new, how)



def predict(reg: Registration, rules: ControllerRules, *, active: Iterable[int], returning: Iterable[int],
            clean_shutdown: dict[int, bool] | None = None, cold: bool = True,
            running: Iterable[int] = (), fence_order: Sequence[int] = ()) -> Choice:
    """:func:`restart` over every order in which the partition's returning replicas may come back (``running``
    brokers stay up throughout and are not part of any order).

    The choice reported is the one for the returning brokers in ascending id
    order; ``alternatives`` lists the other leaders some other order gives.
    """
    active = set(active)
    running = frozenset(running)
    back = sorted(set(returning) - running)
    mine = [b for b in back if b in reg.replicas]
    others = [b for b in back if b not in reg.replicas]
    base = restart(reg, rules, active=active, returning=back, clean_shutdown=clean_shutdown, cold=cold,
                   running=running, fence_order=fence_order)
    seen: dict[int, Choice] = {base.leader: base}
    for order in itertools.islice(itertools.permutations(mine), MAX_ORDERS):
        c = restart(reg, rules, active=active, returning=[*order, *others], clean_shutdown=clean_shutdown,
                    cold=cold, running=running, fence_order=fence_order)
        seen.setdefault(c.leader, c)
    return replace(base, alternatives=tuple(sorted(set(seen) - {base.leader})), by_leader=tuple(sorted(seen.items())))
