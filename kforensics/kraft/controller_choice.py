"""Who leads each partition after the restart, and why: the controller's record, its predicted choice, or nobody.

The election model (:mod:`.election`) applied to the evidence: the
partition's last registration in the metadata log (:mod:`.timeline`), the
brokers, features and configs the log records (:mod:`.cluster_state`), the
brokers that come back (every broker whose evidence was given, unless the
operator says otherwise) and how each shut down (its ``.kafka_cleanshutdown``
marker naming the broker epoch of its last registration: the controller takes
the shutdown as clean only then, ``ClusterControlManager.registerBroker`` at
4.1.0, the ``previousBrokerEpoch`` check).

The answer says how it was reached, so that a prediction is never shown as
the controller's record:

* ``controller-record`` — the metadata names a leader and the model keeps it
  (that broker comes back and stays eligible); its epoch may be bumped by the
  restart's fencing and unfencing;
* ``predicted`` — the record leaves the partition leaderless, or its leader
  does not come back or loses eligibility: the rule that picked the leader is
  in ``rule`` (``isr``, ``elr``, ``last-known-elr``, ``unclean``);
* ``offline`` — no replica is eligible: nobody leads;
* ``given`` (``--leader`` or a scenario's events) and ``guessed`` (no metadata
  log: the replica with the highest epoch, then the longest log) are set by
  the replay, not here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import UsageError
from .cluster_state import ClusterState
from .election import NO_LEADER, Choice, ControllerRules, Registration, predict, restart
from .heartbeats import fence_order, fences_unprompted

NEWEST = (1 << 30, 0, 0)

#: how a leader was reached (see the module docstring); the replay's front ends show it beside the leader
HOWS = ("controller-record", "predicted", "offline", "given", "guessed")


@dataclass(frozen=True)
class RestartEvidence:
    """What the election at the restart reads besides the partition's registration."""

    cluster: ClusterState
    brokers: tuple[int, ...]  # brokers whose evidence was given
    alive: tuple[int, ...] | None = None  # brokers the operator says come back (None: every broker given)
    shutdown_epochs: Mapping[int, frozenset[int]] = field(default_factory=dict)  # broker -> epochs its markers name
    release: tuple[int, int, int] | None = None  # the Kafka release (``--kafka-version``); None: the newest
    running: tuple[int, ...] = ()  # brokers the operator says never stopped (``--running``): active throughout
    order: tuple[int, ...] | None = None  # the order the operator starts them in (``--restart-order``)

    @property
    def returning(self) -> tuple[int, ...]:
        """The brokers that restart, less those that never stopped: in the order given (``--restart-order``; the
        ones it does not name after, in id order), else in id order."""
        back = set(self.alive if self.alive is not None else self.brokers) - set(self.running)
        first = [b for b in dict.fromkeys(self.order or ()) if b in back]
        return (*first, *sorted(back - set(first)))

    def clean_shutdowns(self) -> dict[int, bool]:
        """Per returning broker, whether the controller will take its last shutdown as clean: its marker names the
        broker epoch of the registration the metadata log holds."""
        out = {}
        for b in self.returning:
            reg = self.cluster.brokers.get(b)
            out[b] = reg is not None and reg.epoch in self.shutdown_epochs.get(b, frozenset())
        return out


@dataclass
class LeaderElection:
    """Who leads a partition after the restart, how that was reached, and what it assumed."""

    leader: int  # -1: nobody (offline)
    leader_epoch: int  # the epoch the model gives it (-1 when unknown)
    how: str  # one of HOWS
    rule: str | None = None  # the rule that picked a predicted leader: isr | elr | last-known-elr | unclean
    unclean: bool = False
    record_leader: int | None = None  # the metadata's last word (-1: leaderless), None without metadata
    record_epoch: int | None = None
    record_offset: int | None = None
    returning: list[int] = field(default_factory=list)
    returning_given: bool = False  # the operator named them (--alive); else every broker given
    running: list[int] = field(default_factory=list)  # brokers that never stopped (--running)
    order_given: bool = False  # ``returning`` is the order the operator starts them in (--restart-order)
    alternatives: list[int] = field(default_factory=list)  # leaders other return orders give
    steps: list[str] = field(default_factory=list)  # the controller's actions the model ran
    assumptions: dict[str, str] = field(default_factory=dict)  # rule -> value and where it came from
    detail: str = ""

    @property
    def offline(self) -> bool:
        """Nobody leads: the controller's rules elect no one (not a guessed or given leader whose id is unknown,
        which the replay numbers -1, -2, ...)."""
        return self.how == "offline"


def check_restart_order(order: tuple[int, ...] | None, brokers: Iterable[int], alive: tuple[int, ...] | None,
                        running: tuple[int, ...]) -> None:
    """Refuse a ``--restart-order`` that names a broker with no evidence, one ``--alive`` leaves out, one that never
    stopped (``--running``), or one twice."""
    if order is None:
        return
    given = set(brokers)
    for b in order:
        if b not in given:
            raise UsageError(f"--restart-order names broker {b}, which is not one of the brokers given "
                             f"({_ids(given)})")
        if alive is not None and b not in alive:
            raise UsageError(f"--restart-order names broker {b}, which --alive leaves out ({_ids(alive)})")
        if b in running:
            raise UsageError(f"--restart-order names broker {b}, which --running says never stopped")
    if len(set(order)) != len(order):
        raise UsageError(f"--restart-order names a broker twice ({', '.join(map(str, order))})")


def registration_of(entry: Any) -> Registration:
    """The election model's registration from a timeline entry (the partition's last)."""
    return Registration(tuple(entry.replicas), tuple(entry.isr), entry.leader, entry.leader_epoch,
                        tuple(entry.elr), tuple(entry.last_known_elr), entry.leader_recovery_state == 1)


def controller_rules(cluster: ClusterState, topic: str, replicas: int,
                     release: tuple[int, int, int] | None) -> ControllerRules:
    """The rules in force for ``topic``: release, ELR feature, unclean election and min.insync.replicas."""
    unclean, unclean_from = cluster.topic_config(topic, "unclean.leader.election.enable")
    min_isr, min_isr_from = cluster.topic_config(topic, "min.insync.replicas")
    try:
        min_isr_n = int(min_isr)
    except ValueError:
        min_isr_n, min_isr_from = 1, f"{min_isr_from} ({min_isr!r} is no number: Kafka's default 1 taken)"
    elr = cluster.elr_enabled
    provenance = {
        "release": "--kafka-version" if release is not None else "the newest rules (no --kafka-version)",
        "eligible.leader.replicas": f"{'on' if elr else 'off'} ("
        + ("eligible.leader.replicas.version feature record" if elr is not None else
           "no feature record: off, as before Kafka 3.7's KIP-966") + ")",
        "unclean.leader.election.enable": f"{unclean} ({unclean_from})",
        "min.insync.replicas": f"{min_isr_n} ({min_isr_from})",
        "metadata.version": (str(cluster.metadata_version) if cluster.metadata_version is not None else
                             "unknown (no feature record): taken as current"),
    }
    return ControllerRules(release=release or NEWEST, elr=bool(elr), unclean=unclean.strip().lower() == "true",
                           min_isr=max(1, min(min_isr_n, replicas)),
                           metadata_version=cluster.metadata_version, provenance=provenance)


def controller_choice(entry: Any, topic: str, evidence: RestartEvidence) -> LeaderElection:
    """The leader the controller gives the partition whose last registration is ``entry`` when the brokers come
    back (every return order of its replicas is tried; ``alternatives`` lists leaders other orders give)."""
    reg = registration_of(entry)
    rules = controller_rules(evidence.cluster, topic, len(reg.replicas), evidence.release)
    returning = evidence.returning
    fences = fence_order(evidence.cluster, rules.release)
    if evidence.order is not None:
        # the order of return is given (each broker started once the one before is unfenced): the controller's rules
        # settle the leader; a controller from 4.0 has fenced the brokers it held before the first one is back
        choice = restart(reg, rules, active=evidence.cluster.active_brokers(), returning=returning,
                         clean_shutdown=evidence.clean_shutdowns(), running=evidence.running,
                         fenced_first=fences_unprompted(rules.release), fence_order=fences)
    else:
        choice = predict(reg, rules, active=evidence.cluster.active_brokers(), returning=returning,
                         clean_shutdown=evidence.clean_shutdowns(), running=evidence.running, fence_order=fences)
        choice = _likeliest(choice, reg, returning, evidence.running)
    if choice.leader == NO_LEADER:
        how, rule = "offline", None
    elif choice.leader == reg.leader and not choice.unclean:
        how, rule = "controller-record", None  # the same broker leads again, maybe in a later epoch
    else:
        how, rule = "predicted", choice.how
    assumptions = dict(rules.provenance)
    assumptions["returning brokers"] = (f"{_ids(returning)} (--alive)" if evidence.alive is not None else
                                        f"{_ids(returning)} (every broker whose evidence was given)")
    assumptions["restart"] = ("cold: the controller is back first; brokers it still holds active are fenced when "
                              "their sessions expire, then each broker registers and is unfenced in turn")
    if evidence.order is not None:
        assumptions["restart order"] = f"{', '.join(map(str, returning))} (--restart-order)"
    if evidence.running:
        assumptions["restart"] += (f"; brokers {_ids(evidence.running)} never stopped (--running): active throughout, "
                                   "they neither register again nor lose their session")
    clean = evidence.clean_shutdowns()
    assumptions["clean shutdowns"] = (_ids(b for b in returning if clean.get(b)) or "none") + \
        " (a .kafka_cleanshutdown marker naming the broker epoch of the last registration)"
    return LeaderElection(choice.leader, choice.leader_epoch, how, rule, choice.unclean, entry.leader,
                          entry.leader_epoch, entry.offset, list(returning), evidence.alive is not None,
                          list(evidence.running), evidence.order is not None, list(choice.alternatives),
                          [s.action for s in choice.steps],
                          assumptions, _detail(how, rule, choice.leader, choice.leader_epoch, reg, rules,
                                               (*returning, *evidence.running)))


def _likeliest(choice: Choice, reg: Registration, returning: tuple[int, ...], running: tuple[int, ...] = ()) -> Choice:
    """Of the outcomes the orders of return give, the one the replay follows (the others stay listed).

    Which order happens, and whether sessions expire before the brokers register again, turn on timing the
    evidence does not hold.  So: a leader the record names that comes back stays leader (the lab saw Kafka keep
    it where the model, assuming every session expires first, moved leadership on; the model's outcomes are
    listed as alternatives); else a clean election (ISR or ELR) when some order gives one (the ascending
    order's first); else the ascending order's outcome.  A leader the model takes from the brokers that never
    stopped turns on no timing (they are active throughout, and from 4.0 the old leader's registration after an
    unclean shutdown removes it from the ISR at once): the model's choice stands.
    """
    possible = {choice.leader, *choice.alternatives}
    if choice.leader in running and not choice.alternatives:
        return choice
    if reg.leader != NO_LEADER and reg.leader in returning:
        pick = choice.for_leader(reg.leader)
        if pick is None:  # no order keeps it when every session expires first: the record stands, epoch unknown
            pick = Choice(reg.leader, reg.leader_epoch, "controller-record", False, reg)
    elif choice.unclean or choice.leader == NO_LEADER:
        pick = next((c for b, c in choice.by_leader if b != NO_LEADER and not c.unclean), choice)
    else:
        pick = choice
    if pick.leader == choice.leader:
        return choice
    return replace(pick, alternatives=tuple(sorted(possible - {pick.leader})), by_leader=choice.by_leader)


def _ids(brokers: Iterable[int]) -> str:
    return ", ".join(map(str, sorted(brokers)))


def _detail(how: str, rule: str | None, leader: int, epoch: int, reg: Registration, rules: ControllerRules,
            returning: tuple[int, ...]) -> str:
    """One sentence: why this broker (or nobody) leads."""
    said = (f"the metadata's last record leaves it leaderless (epoch {reg.leader_epoch})" if reg.leader == NO_LEADER
            else f"the metadata's last record names broker {reg.leader} (epoch {reg.leader_epoch})")
    if how == "controller-record":
        again = ("" if reg.leader_epoch == epoch else
                 f" (in epoch {epoch}: the restart fences and unfences it, and each new registration bumps the epoch)")
        return f"{said}, which comes back and leads again{again}"
    if how == "offline":
        why = (f"no replica of ISR [{_ids(reg.isr)}]" + (f" or ELR [{_ids(reg.elr)}]" if rules.elr else "")
               + f" comes back among brokers [{_ids(returning)}]")
        if not rules.unclean:
            why += ", and unclean leader election is off"
        return f"{said}; the controller elects nobody: {why}"
    reasons = {
        "isr": "the first replica in replica order that is in the ISR and active",
        "elr": "the ISR is empty: the first eligible leader replica (ELR) that is active",
        "last-known-elr": "ISR and ELR are empty: the single last known leader (unclean recovery, KIP-966)",
        "unclean": "no ISR member comes back: an unclean election (unclean.leader.election.enable is on)",
    }
    text = f"{said}; the controller's rules elect broker {leader}: {reasons.get(rule or '', rule)}"
    if leader not in returning:
        # canElectLastKnownLeader before 4.1.0 does not ask whether the broker is alive
        text += (f"; broker {leader} has not come back, so the partition has a leader that is not there and stays "
                 "unavailable until it returns (releases before 4.1 elect the last known leader without checking)")
    return text


def marker_epochs(log_dirs: Iterable[Any]) -> frozenset[int]:
    """The broker epochs the ``.kafka_cleanshutdown`` markers of one broker's log dirs name (log dirs as opened
    ones or paths; a marker that is absent, empty (before 3.7) or unreadable names none)."""
    from ..log.log_dir import open_log_dir

    out = set()
    for d in log_dirs:
        ld = d if hasattr(d, "read_root") else open_log_dir(d)
        try:
            marker = ld.read_root("clean_shutdown")
        except OSError:
            continue  # unreadable: the scan reports it; the controller would not see a clean shutdown either
        epoch = getattr(getattr(marker, "value", None), "broker_epoch", None)
        if isinstance(epoch, int):
            out.add(epoch)
    return frozenset(out)
