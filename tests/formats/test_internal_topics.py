"""The registry of internal-topic decoders, the shared record shape, and the catalogue codes they use."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kforensics.catalogue import CATALOGUE
from kforensics.findings import Severity
from kforensics.formats import (
    group_coordinator,
    internal_topics,
    remote_log_metadata,
    share_coordinator,
    transaction_log,
)
from kforensics.formats.internal_topics import CoordinatorRecord, decoder_for_flag, decoder_for_topic

MODULES = [group_coordinator, transaction_log, share_coordinator, remote_log_metadata]


def test_topics_and_flags_choose_the_decoders():
    assert decoder_for_topic("__consumer_offsets") is group_coordinator
    assert decoder_for_topic("__transaction_state") is transaction_log
    assert decoder_for_topic("__share_group_state") is share_coordinator
    assert decoder_for_topic("__remote_log_metadata") is remote_log_metadata
    assert decoder_for_topic("orders") is None and decoder_for_topic("__cluster_metadata") is None
    assert decoder_for_flag("--offsets-decoder") is group_coordinator
    assert decoder_for_flag("--transaction-log-decoder") is transaction_log
    assert decoder_for_flag("--share-group-state-decoder") is share_coordinator
    assert decoder_for_flag("--remote-log-metadata-decoder") is remote_log_metadata
    with pytest.raises(KeyError):
        decoder_for_flag("--cluster-metadata-decoder")
    for t in internal_topics.INTERNAL_TOPICS:
        mod = decoder_for_topic(t.topic)
        assert (mod.TOPIC, mod.FLAG) == (t.topic, t.flag)


def test_decode_dispatches_by_topic():
    kb, vb = transaction_log.encode("TransactionLogKey", 0, {"transactionalId": "t"}, None)
    r = internal_topics.decode("__transaction_state", kb, vb)
    assert isinstance(r, CoordinatorRecord) and r.decoder == "transaction-log" and r.tombstone
    assert internal_topics.decode("orders", kb, vb) is None


def test_records_are_frozen_and_slotted():
    r = group_coordinator.decode(None, None)
    with pytest.raises(AttributeError):
        r.tombstone = True  # type: ignore[misc]
    assert not hasattr(r, "__dict__")
    assert [f.code for f in r.findings] == ["INTERNAL_RECORD_MISSING_KEY"] and r.kafka_key() is None


@pytest.mark.parametrize("code, severity", [
    ("INTERNAL_RECORD_UNKNOWN_TYPE", Severity.LOW),
    ("INTERNAL_RECORD_UNKNOWN_VERSION", Severity.MEDIUM),
    ("INTERNAL_RECORD_DECODE_ERROR", Severity.MEDIUM),
    ("INTERNAL_RECORD_TRAILING_BYTES", Severity.LOW),
    ("INTERNAL_RECORD_MISSING_KEY", Severity.MEDIUM),
    ("CONSUMER_PROTOCOL_UNDECODED", Severity.LOW),
])
def test_the_codes_are_catalogued(code, severity):
    assert CATALOGUE[code].severity == severity and CATALOGUE[code].area.startswith("internal topics")


@pytest.mark.parametrize("mod", MODULES, ids=[m.NAME for m in MODULES])
@settings(max_examples=200, deadline=None)
@given(key=st.none() | st.binary(max_size=30), value=st.none() | st.binary(max_size=50))
def test_no_decoder_raises_on_any_bytes(mod, key, value):
    r = mod.decode(key, value)
    assert isinstance(r, CoordinatorRecord) and r.decoder == mod.NAME
    for f in r.findings:
        assert f.code in CATALOGUE and f.facts["part"] in ("key", "value")
        assert f.position is None or 0 <= f.position <= len((key if f.facts["part"] == "key" else value) or b"")


def test_an_unknown_type_is_reported_by_every_coordinator():
    for mod in (group_coordinator, transaction_log, share_coordinator):
        r = mod.decode(b"\x7f\xff", b"\x00\x00")
        assert (r.type_id, r.key_type, r.value) == (32767, None, None)
        assert [(f.code, f.position, f.facts["part"]) for f in r.findings] == [
            ("INTERNAL_RECORD_UNKNOWN_TYPE", 0, "key")]


def test_encoding_refuses_caller_mistakes():
    with pytest.raises(ValueError):
        group_coordinator.encode("NoSuchKey", 0, {}, None)
    with pytest.raises(ValueError):
        group_coordinator.encode("OffsetCommitKey", 9, {"group": "g", "topic": "t", "partition": 0}, {})
    with pytest.raises(ValueError):
        transaction_log.encode("TransactionLogKey", 0, {"transactionalId": "t"}, {"producerId": 1})
    with pytest.raises(ValueError):
        remote_log_metadata.encode("RemotePartitionDeleteMetadataRecord", 1, {})
