"""The ``__remote_log_metadata`` partition of a topic partition's records.

``TopicBasedRemoteLogMetadataManager`` sends every record of a user topic
partition to one metadata partition, chosen by
``RemoteLogMetadataTopicPartitioner.metadataPartition``:
``Utils.toPositive(Utils.murmur2(toBytes(hash))) % numMetadataTopicPartitions``
with ``hash = Objects.hash(topicId.leastSignificantBits,
topicId.mostSignificantBits, partition)`` as 4 big-endian bytes (storage,
3.6.0 and 3.9.0); the record key is null (``ProducerManager.publishMessage``).
``remote.log.metadata.topic.num.partitions`` defaults to 50
(``TopicBasedRemoteLogMetadataManagerConfig``, 3.9.0).
"""

from __future__ import annotations

from ..formats.protocol import str_to_uuid

DEFAULT_PARTITIONS = 50
_M32 = 0xFFFFFFFF


def _int32(x: int) -> int:
    x &= _M32
    return x - (1 << 32) if x >= 1 << 31 else x


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (32-bit MurmurHash2, seed 0x9747b28c), as a signed int."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & _M32
    for i in range(length // 4):
        k = int.from_bytes(data[4 * i: 4 * i + 4], "little")
        k = (k * m) & _M32
        k ^= k >> r
        k = (k * m) & _M32
        h = (h * m) & _M32
        h ^= k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & _M32
    h ^= h >> 13
    h = (h * m) & _M32
    h ^= h >> 15
    return _int32(h)


def _long_hash(v: int) -> int:
    """``Long.hashCode``: the two halves xored, as an int."""
    v &= (1 << 64) - 1
    return _int32(v ^ (v >> 32))


def _objects_hash(*values: int) -> int:
    """``Objects.hash(Long, Long, Integer)``: 31 * h + each element's hash code, from 1."""
    h = 1
    for i, v in enumerate(values):
        h = _int32(31 * h + (_long_hash(v) if i < 2 else _int32(v)))
    return h


def metadata_partition(topic_id: str, partition: int, partitions: int = DEFAULT_PARTITIONS) -> int:
    """The ``__remote_log_metadata`` partition holding ``topic_id``'s ``partition`` records."""
    raw = str_to_uuid(topic_id)  # Kafka's text form of a Uuid
    most, least = int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")
    h = _objects_hash(_signed64(least), _signed64(most), partition)
    return (murmur2((h & _M32).to_bytes(4, "big")) & 0x7FFFFFFF) % partitions


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v
