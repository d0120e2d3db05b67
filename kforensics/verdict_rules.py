"""The classes of verdict codes, and the rules built on them: the only place they are defined.

The codes themselves (with severity, meaning and what Kafka does) are the
catalogue's; this module groups them by what they mean for the records and
for the commands:

* :data:`LOSS` — the verdict's offsets are records this replica loses,
  discards or forks;
* :data:`ELECTION` — its offsets are records the elected leader lacks;
* :data:`IMPACT` — its offsets hold records the new leader does not serve,
  so consumer groups and transactions on the partition may be affected
  (:func:`affects_consumers` is "the affected rule");
* :data:`FAILS_REPLAY` / :data:`FAILING_FINDINGS` — what makes ``replay``
  (and the Spark job's replay) exit 1;
* :data:`ORDER` — from harmless to worst (a replica's worst verdict decides
  how it is shown).  ``NOT_JUDGED`` (evidence that could not be read) ranks
  above every verdict that is only a risk and below the certain losses.

A test fails when a second module defines a set of these codes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from .catalogue import CATALOGUE, VERDICTS

#: verdicts whose offsets are records this replica loses, discards or forks
LOSS: tuple[str, ...] = ("LOSS_COMMITTED", "POSSIBLY_COMMITTED", "DISCARD_UNCOMMITTED", "FORK", "LOST_TO_RECOVERY")
#: verdicts whose offsets are records the elected leader lacks (lost to the partition when it has any)
ELECTION: tuple[str, ...] = ("LEADER_LACKS_COMMITTED", "UNCLEAN_ELECTION", "COMMITTED_NOT_HELD",
                             "REMOTE_SEGMENTS_UNREACHABLE")
#: verdicts whose offsets hold records the new leader does not serve: consumers and transactions may notice
IMPACT: tuple[str, ...] = LOSS + ELECTION
#: verdicts that make ``replay`` exit 1: records that were (or may have been) committed are gone or forked, the
#: election lost data, or a replica cannot come back
FAILS_REPLAY: frozenset[str] = frozenset({
    "LOSS_COMMITTED", "FORK", "UNCLEAN_ELECTION", "POSSIBLY_COMMITTED", "LOST_TO_RECOVERY",
    "LEADER_LACKS_COMMITTED", "NOT_CONVERGING", "LOG_LOAD_FAILS", "COMMITTED_NOT_HELD",
    # records copied to remote storage outside the new leader's lineage: never served again
    "REMOTE_SEGMENTS_UNREACHABLE",
    # nobody leads: the partition is unavailable until an operator acts (nothing is lost yet)
    "NO_LEADER",
    # a replica whose evidence could not be read: exit 0 would tell the operator every replica is fine, and
    # exit 2 would throw away the partitions that were judged; 1 says "look at the verdicts"
    "NOT_JUDGED"})
#: verdicts that make ``replay`` exit 1 although they lose no record: the evidence was not read, or nobody leads
NO_LOSS_FAILING: frozenset[str] = frozenset({"NOT_JUDGED", "NO_LEADER"})
#: findings of the consumer and transaction impact that make ``replay`` exit 1: a group was delivered records that
#: no longer exist, will reset or skip records; a transaction's outcome is lost, or nobody will end it.  (A group
#: whose consumer detects the truncation, GROUP_TRUNCATION_DETECTED, re-reads: its lost records are
#: CONSUMED_RECORDS_LOST.)
FAILING_FINDINGS: frozenset[str] = frozenset({
    "CONSUMED_RECORDS_LOST", "GROUP_OFFSET_OUT_OF_RANGE", "GROUP_SKIPS_RECORDS", "TXN_MARKER_LOST",
    "TXN_HANGING", "TXN_COORDINATOR_DISAGREES"})
#: verdicts from harmless to worst
ORDER: tuple[str, ...] = ("OK", "NO_EPOCHS", "DISCARD_UNCOMMITTED", "POSSIBLY_COMMITTED", "LOST_TO_RECOVERY",
                          "LEADER_LACKS_COMMITTED", "UNCLEAN_ELECTION",
                          "REMOTE_SEGMENTS_UNREACHABLE", "NO_LEADER", "NOT_CONVERGING", "NOT_JUDGED",
                          "FORK", "COMMITTED_NOT_HELD", "LOSS_COMMITTED", "LOG_LOAD_FAILS")


class _Verdict(Protocol):
    code: str


class _Replica(Protocol):
    @property
    def verdicts(self) -> Iterable[_Verdict]: ...


class _Partition(Protocol):
    @property
    def replicas(self) -> Iterable[_Replica]: ...


def verdict_codes(partition: _Partition) -> set[str]:
    """Every verdict code any replica of ``partition`` got."""
    return {v.code for r in partition.replicas for v in r.verdicts}


def affects_consumers(partition: _Partition) -> bool:
    """The affected rule: whether the replay of ``partition`` leaves records the new leader does not serve."""
    return any(v.code in IMPACT for r in partition.replicas for v in r.verdicts)


def fails_replay(verdicts: Iterable[str], findings: Iterable[str] = ()) -> bool:
    """Whether these verdict codes (and impact finding codes) make ``replay`` exit 1."""
    return any(c in FAILS_REPLAY for c in verdicts) or any(c in FAILING_FINDINGS for c in findings)


def worst(codes: Iterable[str]) -> str:
    """The worst of some verdict codes, by :data:`ORDER`."""
    return max(codes, key=ORDER.index)


def _check() -> None:
    every = set(VERDICTS)
    for name, group in (("LOSS", LOSS), ("ELECTION", ELECTION), ("FAILS_REPLAY", FAILS_REPLAY), ("ORDER", ORDER),
                        ("NO_LOSS_FAILING", NO_LOSS_FAILING)):
        unknown = set(group) - every
        if unknown:
            raise AssertionError(f"{name} names codes that are no verdicts: {sorted(unknown)}")
    if set(ORDER) != every:
        raise AssertionError("every verdict has a place in ORDER")
    unknown = set(FAILING_FINDINGS) - set(CATALOGUE)
    if unknown:
        raise AssertionError(f"FAILING_FINDINGS names unknown codes: {sorted(unknown)}")


_check()
