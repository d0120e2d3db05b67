"""The order in which a restarted controller fences the brokers it still holds active.

A controller that becomes active gives every broker its metadata log shows
unfenced a fresh session (``ClusterControlManager.activate``).  Brokers that
do not come back lose it after ``broker.session.timeout.ms`` and are fenced
one at a time, and the order matters: each fencing is a partition change,
and which broker leaves an ISR first decides who leads, who is left in the
ELR and who becomes the last known leader.  The order is not the ids': it is
the iteration order of the controller's own hash tables.

* Before 4.0 (``BrokerHeartbeatManager`` at 3.9.0): the brokers are touched
  in the iteration order of ``brokerRegistrations``, a ``TimelineHashMap``
  keyed by broker id, and the least recently touched is fenced first.  That
  table (``BaseHashTable`` at 3.9.0) puts an id in slot
  ``(id * -7046029254386353131) >>> (65 - log2(length))`` of a power-of-two
  array that doubles when ``(size + 1) * 0.75 > length`` (from 2), and its
  iterator walks the slots in order, a shared slot's entries last-in first.
* From 4.0 (``BrokerHeartbeatTracker``, new in 4.0.0): contact times are a
  ``ConcurrentHashMap`` keyed by ``BrokerIdAndEpoch``, and
  ``maybeRemoveExpired`` fences the first expired entry in that map's bin
  order (``spread(h) & (n - 1)``, a table of 16 bins doubled at three
  quarters full; a shared bin in insertion order).  The key's hash is
  ``Objects.hash(id, epoch)`` = 961 + 31 id + epoch while it is a class
  (4.0.0, 4.1.0) and a record's, 31 id + epoch (OpenJDK's ``ObjectMethods``),
  from 4.2.0, where it became ``record BrokerIdAndEpoch(int id, long epoch)``.

The lab checked both against the fence records a restarted 3.9.1 and 4.4.0
controller wrote (``lab/``, the restart's metadata log).
"""

from __future__ import annotations

from collections.abc import Iterable

from .cluster_state import ClusterState

_FIBONACCI = -7046029254386353131  # BaseHashTable.findSlot's multiplier
_M64 = (1 << 64) - 1
_M32 = (1 << 32) - 1


def _int32(x: int) -> int:
    x &= _M32
    return x - (1 << 32) if x >= 1 << 31 else x


def _timeline_slot(key: int, length: int) -> int:
    """``BaseHashTable.findSlot`` of an ``Integer`` key in a table of ``length`` slots."""
    log2size = length.bit_length()  # 32 - Integer.numberOfLeadingZeros(length)
    return ((_int32(key) * _FIBONACCI) & _M64) >> (65 - log2size)


def timeline_order(ids: Iterable[int]) -> list[int]:
    """The iteration order of a ``TimelineHashMap`` into which ``ids`` were inserted in this order."""
    keys = list(dict.fromkeys(ids))
    length = 2  # BaseHashTable.MIN_CAPACITY; expected size 0
    for size in range(len(keys)):
        if (size + 1) * 0.75 > length:
            length *= 2
    slots: dict[int, list[int]] = {}
    for k in keys:
        slots.setdefault(_timeline_slot(k, length), []).append(k)
    # CurrentIterator unpacks a slot and takes its entries from the end
    return [k for s in sorted(slots) for k in reversed(slots[s])]


def _chm_bin(broker: int, epoch: int, table: int, record: bool) -> int:
    """The ``ConcurrentHashMap`` bin of ``BrokerIdAndEpoch(broker, epoch)`` in a table of ``table`` bins
    (``record``: the key is a record, 4.2.0 and later)."""
    e = epoch & _M64
    base = 0 if record else 31  # a record's hash starts at 0; Objects.hash's array hash at 1
    h = _int32(31 * (base + _int32(broker)) + _int32(e ^ (e >> 32))) & _M32
    return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (table - 1)


def tracker_order(brokers: list[tuple[int, int]], release: tuple[int, int, int] = (4, 2, 0)) -> list[int]:
    """The iteration order of ``BrokerHeartbeatTracker``'s contact times: ``(id, epoch)`` pairs in insertion
    order, keyed as ``release`` keys them."""
    table = 16
    while len(brokers) >= table * 3 // 4:
        table *= 2
    record = release >= (4, 2, 0)
    bins: dict[int, list[int]] = {}
    for b, e in brokers:
        bins.setdefault(_chm_bin(b, e, table, record), []).append(b)
    return [b for k in sorted(bins) for b in bins[k]]


def fence_order(cluster: ClusterState, release: tuple[int, int, int]) -> tuple[int, ...]:
    """The brokers the metadata shows unfenced, in the order a restarted controller fences them when their
    sessions expire (``release``: the Kafka release the controller runs)."""
    held = [b for b in timeline_order(cluster.brokers) if not cluster.brokers[b].fenced]
    if release >= (4, 0, 0):
        return tuple(tracker_order([(b, cluster.brokers[b].epoch) for b in held], release))
    return tuple(held)


def fences_unprompted(release: tuple[int, int, int]) -> bool:
    """Whether the controller fences expired sessions on its own: from 4.0 a periodic task checks every
    ``broker.session.timeout.ms / 8`` (``QuorumController`` registers ``maybeFenceStaleBroker``); before, the check
    is scheduled only when some broker registers or heartbeats (``rescheduleMaybeFenceStaleBrokers`` at 3.9.0),
    so with every broker down nobody is fenced until the first one comes back."""
    return release >= (4, 0, 0)
