"""Kafka releases reduced to the replication behaviour kforensics models (``--kafka-version``).

* before 0.11 there is no leader-epoch cache at all (KIP-101 came in 0.11.0);
* 0.11.0 – 1.1.x answer epoch queries with an offset only, answer UNDEFINED
  for an epoch below the first cached one, and ``assign`` only appends;
* 2.0.0 (KIP-279) answers with ``(epoch, end offset)`` and loops;
* 2.0.1+ (KAFKA-7415) answers a request below the first cached epoch with
  ``(requested, first start)``, ``assign`` drops conflicting tail entries and
  a new leader records its epoch at its log end;
* 2.6.1+ (KAFKA-10706) a truncation to the log end still trims the cache;
* 2.8+ (KAFKA-10554) followers learn of divergence from fetch responses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import UsageError

# Stands in for "newer than every release we know about" when comparing.
_LATEST_RELEASE = (1 << 30, 0, 0)


@dataclass(frozen=True)
class KafkaVersion:
    """A Kafka release, reduced to the epoch-related behaviour it implies.

    ``release`` is ``(major, minor, patch)``; for the 0.x line Kafka's own
    numbering is used, so ``0.10.2.1`` is ``(0, 10, 2)``.  ``None`` means the
    newest behaviour.  ``label`` is only for display and is ignored by ``==``.
    """

    label: str = field(compare=False)
    release: tuple[int, int, int] | None

    def at_least(self, *release: int) -> bool:
        """Whether this version is the given release or newer."""
        want = tuple(release) + (0,) * (3 - len(release))
        have = self.release if self.release is not None else _LATEST_RELEASE
        return have >= want

    @property
    def has_epochs(self) -> bool:
        """Whether the broker keeps a leader-epoch cache at all (KIP-101, 0.11.0+)."""
        return self.at_least(0, 11, 0)

    @property
    def answers_with_epoch(self) -> bool:
        """Whether epoch queries are answered with ``(epoch, offset)`` rather than an offset (KIP-279, 2.0.0+)."""
        return self.at_least(2, 0, 0)

    @property
    def kafka_7415(self) -> bool:
        """Whether the KAFKA-7415 changes are in (2.0.1+): below-first answers, monotonic assign, leader self-assign."""
        return self.at_least(2, 0, 1)

    @property
    def monotonic_assign(self) -> bool:
        """Whether ``assign`` removes conflicting tail entries instead of ignoring the new one."""
        return self.kafka_7415

    @property
    def leader_assigns_on_election(self) -> bool:
        """Whether a new leader records its epoch at its LEO before writing anything in it."""
        return self.kafka_7415

    @property
    def kafka_10706(self) -> bool:
        """Whether truncating to an offset at or past the log end still trims the cache (2.6.1+, KAFKA-10706)."""
        return self.at_least(2, 6, 1)

    @property
    def initial_fetch_from_leo(self) -> bool:
        """Whether a new follower (with epochs) starts fetching at its log end: 0.11.0-1.0 and 2.8+.

        1.1-2.7 start at the high watermark (``ReplicaManager.makeFollowers``).
        """
        return not self.at_least(1, 1, 0) or self.truncate_on_fetch

    @property
    def truncate_on_fetch(self) -> bool:
        """Whether followers learn of divergence from fetch responses (KAFKA-10554, 2.8.0+)."""
        return self.at_least(2, 8, 0)

    @property
    def cache_mode(self) -> str:
        """The cache behaviour this version falls into: ``none``, ``0.11``, ``2.0.0`` or ``2.0.1``."""
        if not self.has_epochs:
            return "none"
        if not self.answers_with_epoch:
            return "0.11"
        if not self.kafka_7415:
            return "2.0.0"
        return "2.0.1"

    def __str__(self) -> str:
        return self.label

    def __json__(self) -> str:
        """JSON and tables show a version as the user gave it."""
        return self.label


KAFKA_0_10 = KafkaVersion("0.10", (0, 10, 0))
KAFKA_0_11 = KafkaVersion("0.11", (0, 11, 0))
KAFKA_2_0_0 = KafkaVersion("2.0.0", (2, 0, 0))
KAFKA_2_0_1 = KafkaVersion("2.0.1", (2, 0, 1))
LATEST = KafkaVersion("latest", None)

#: the release lines kforensics knows (major, minor); a patch release of a known line is accepted, anything else
#: is refused rather than modelled by guesswork (a "9.9" would otherwise silently get the newest rules)
KNOWN_LINES: tuple[tuple[int, int], ...] = (
    (0, 8), (0, 9), (0, 10), (0, 11), (1, 0), (1, 1),
    *((2, m) for m in range(9)), *((3, m) for m in range(10)), *((4, m) for m in range(5)),
)


def known_versions() -> str:
    """The known release lines as users type them, for a refusal's sentence."""
    return ", ".join(f"{a}.{b}" for a, b in KNOWN_LINES) + ", latest"


_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+][0-9a-z.\-]*)?$")


def parse_kafka_version(text: str | KafkaVersion) -> KafkaVersion:
    """Map a user's version string ("0.10", "1.1", "2.0.1", "3.9", "latest") to a :class:`KafkaVersion`.

    A two-part version means its ``.0`` release, so "2.0" behaves as 2.0.0.
    Suffixes such as ``-SNAPSHOT`` or ``-IV1`` are accepted and ignored.
    Raises :class:`~kforensics.errors.UsageError` (a ``ValueError``) for
    anything else, and for a release line kforensics does not know.
    """
    if isinstance(text, KafkaVersion):
        return text
    s = str(text).strip().lower()
    if s in ("latest", "trunk", "newest"):
        return LATEST
    m = _VERSION_RE.match(s)
    if not m:
        raise UsageError(f"not a Kafka version: {text!r} (known: {known_versions()})")
    major, minor, third, fourth = (None if g is None else int(g) for g in m.groups())
    assert major is not None and minor is not None  # the pattern requires both
    if major == 0:
        # 0.x releases were numbered 0.<minor>.<patch>.<fix>; the fourth part never changed epoch behaviour.
        release = (0, minor, third or 0)
    else:
        if fourth is not None:
            raise UsageError(f"not a Kafka version: {text!r} (too many parts)")
        release = (major, minor, third or 0)
    if (release[0], release[1]) not in KNOWN_LINES:
        raise UsageError(f"unknown Kafka version {text!r} (known: {known_versions()})")
    return KafkaVersion(s.lstrip("v"), release)


def as_version(mode: str | KafkaVersion | None) -> KafkaVersion:
    """``mode`` as a :class:`KafkaVersion` (None means the newest behaviour)."""
    return LATEST if mode is None else parse_kafka_version(mode)
