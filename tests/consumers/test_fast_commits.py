"""The struct reader of offset commits gives what the schema decoder gives, or leaves the record to it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kforensics.consumers.committed_offsets import _fast_decode
from kforensics.formats.group_coordinator import decode, encode

names = st.text(max_size=20)
longs = st.integers(-(1 << 63), (1 << 63) - 1)


@settings(max_examples=300)
@given(st.sampled_from([0, 1, 2, 3, None]), names, names, st.integers(-(1 << 31), (1 << 31) - 1), longs, names,
       longs, longs, st.integers(-(1 << 31), (1 << 31) - 1))
def test_the_fast_reader_agrees_with_the_schema_decoder(version, group, topic, partition, offset, metadata, ts,
                                                         expire, epoch):
    value = {"offset": offset, "metadata": metadata, "commitTimestamp": ts}
    if version == 1:
        value["expireTimestamp"] = expire
    if version == 3:
        value["leaderEpoch"] = epoch
    k, v = encode("OffsetCommitValue" if version is not None else "OffsetCommitKey", version,
                  {"group": group, "topic": topic, "partition": partition}, value if version is not None else None)
    fast, slow = _fast_decode(k, v), decode(k, v)
    assert fast is not None and not slow.findings
    assert (fast.key_type, fast.key, fast.value, fast.value_version, fast.tombstone) == \
        (slow.key_type, slow.key, slow.value, slow.value_version, slow.tombstone)


@given(st.binary(max_size=40), st.one_of(st.none(), st.binary(max_size=60)))
def test_bytes_the_fast_reader_takes_decode_the_same_with_the_schema(key, value):
    fast = _fast_decode(key, value)
    if fast is None:
        return
    slow = decode(key, value)
    assert (fast.key_type, fast.key, fast.value, fast.value_version, fast.tombstone) == \
        (slow.key_type, slow.key, slow.value, slow.value_version, slow.tombstone)
    assert not slow.findings
