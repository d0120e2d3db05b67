"""Every name Kafka gives a file or directory in a log dir is classified, and every other name is unknown."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kforensics.log.file_kinds import (
    FILE_NAMES,
    LEFTOVER_SUFFIXES,
    MAX_PARTITION,
    PARTITION_FILES,
    ROOT_FILES,
    SEGMENT_SUFFIXES,
    FileKind,
    PartitionName,
    classify_name,
    is_metadata_dir,
    parse_partition_dir_name,
    segment_name,
    snapshot_id,
)

UID = "0123456789abcdef0123456789ABCDEF"


# ---------------------------------------------------------------- segment parts and snapshots


@pytest.mark.parametrize("suffix,kind", [
    (".log", "log"),
    (".index", "offset_index"),
    (".timeindex", "time_index"),
    (".txnindex", "txn_index"),
    (".snapshot", "producer_snapshot"),
])
def test_segment_parts_carry_the_offset_of_their_name(suffix, kind):
    assert classify_name(f"00000000000000000042{suffix}") == FileKind(kind, 42)
    assert classify_name(f"/some/dir/orders-0/{segment_name(2**40 + 7, suffix)}") == FileKind(kind, 2**40 + 7)
    # a segment-like suffix on a non-standard name is still that kind, with no offset
    assert classify_name(f"0000000000000000042{suffix}") == FileKind(kind, None)
    assert classify_name(f"copy-of-00000000000000000042{suffix}") == FileKind(kind, None)


def test_segment_name_is_twenty_digits():
    assert segment_name(42, ".log") == "00000000000000000042.log"
    assert segment_name(9_223_372_036_854_775_807, ".index") == "09223372036854775807.index"


def test_kraft_snapshots_carry_end_offset_and_epoch():
    assert classify_name("00000000000000017073-0000000004.checkpoint") == FileKind("kraft_snapshot", 17073, 4)
    assert snapshot_id("00000000000000017073-0000000004.checkpoint") == (17073, 4)
    # a name that is not <20 digits>-<10 digits> is still a snapshot by its suffix, without an id
    assert classify_name("17073-4.checkpoint") == FileKind("kraft_snapshot")
    assert snapshot_id("17073-4.checkpoint") is None
    assert snapshot_id("00000000000000017073.log") is None


def test_bootstrap_checkpoint_is_not_a_kraft_snapshot():
    assert classify_name("bootstrap.checkpoint") == FileKind("bootstrap_snapshot")


@pytest.mark.parametrize("kind", ["log", "kraft_snapshot", "bootstrap_snapshot"])
def test_batch_kinds_hold_record_batches(kind):
    assert FileKind(kind).is_batches


@pytest.mark.parametrize("kind", ["offset_index", "time_index", "txn_index", "producer_snapshot",
                                  "leader_epoch_checkpoint", "unknown"])
def test_other_kinds_do_not(kind):
    assert not FileKind(kind).is_batches


# ---------------------------------------------------------------- side files


@pytest.mark.parametrize("name,kind", sorted(ROOT_FILES.items()))
def test_root_files_are_named(name, kind):
    assert classify_name(name) == FileKind(kind)


@pytest.mark.parametrize("name,kind", sorted(PARTITION_FILES.items()))
def test_partition_files_are_named(name, kind):
    assert classify_name(name) == FileKind(kind)


def test_every_root_file_kafka_writes_is_known():
    assert set(ROOT_FILES) == {"replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                               "log-start-offset-checkpoint", "cleaner-offset-checkpoint", "meta.properties",
                               ".kafka_cleanshutdown", ".lock", "bootstrap.checkpoint"}
    assert set(PARTITION_FILES) == {"leader-epoch-checkpoint", "partition.metadata", "quorum-state"}


# ---------------------------------------------------------------- leftovers of interrupted operations


@pytest.mark.parametrize("leftover", LEFTOVER_SUFFIXES)
def test_leftovers_keep_the_kind_and_offset_of_what_they_were(leftover):
    assert classify_name(f"00000000000000000100.log{leftover}") == FileKind("log", 100, leftover=leftover)
    assert classify_name(f"00000000000000000100.index{leftover}") == FileKind("offset_index", 100, leftover=leftover)
    assert classify_name(f"00000000000000000100.snapshot{leftover}") == FileKind("producer_snapshot", 100,
                                                                                 leftover=leftover)
    assert classify_name(f"leader-epoch-checkpoint{leftover}") == FileKind("leader_epoch_checkpoint",
                                                                           leftover=leftover)
    assert classify_name(f"replication-offset-checkpoint{leftover}") == FileKind("replication_offset_checkpoint",
                                                                                 leftover=leftover)


def test_kafka_leftover_names():
    # the cleaner's swap files, Kafka's checkpoint temp files, a partial KRaft snapshot
    assert classify_name("00000000000000000000.log.cleaned") == FileKind("log", 0, leftover=".cleaned")
    assert classify_name("00000000000000000000.timeindex.swap") == FileKind("time_index", 0, leftover=".swap")
    assert classify_name("recovery-point-offset-checkpoint.tmp") == FileKind("recovery_point_offset_checkpoint",
                                                                            leftover=".tmp")
    assert classify_name("00000000000000017073-0000000004.checkpoint.part") == FileKind(
        "kraft_snapshot", 17073, 4, leftover=".part")
    assert classify_name("00000000000000017073-0000000004.checkpoint.deleted") == FileKind(
        "kraft_snapshot", 17073, 4, leftover=".deleted")


@pytest.mark.parametrize("leftover", LEFTOVER_SUFFIXES)
def test_a_bare_leftover_suffix_is_unknown_not_a_leftover(leftover):
    assert classify_name(leftover) == FileKind("unknown")


def test_a_leftover_of_an_unknown_file_is_still_a_leftover():
    assert classify_name("notes.txt.tmp") == FileKind("unknown", leftover=".tmp")


# ---------------------------------------------------------------- unknown


@pytest.mark.parametrize("name", ["notes.txt", "server.properties", "00000000000000000000", "lost+found",
                                  "00000000000000000000.LOG", "leader-epoch-checkpoint.bak", ".DS_Store",
                                  "meta.properties~", "00000000000000000000.log.bak"])
def test_names_kafka_does_not_use_are_unknown(name):
    assert classify_name(name) == FileKind("unknown")


@given(st.text(alphabet=st.characters(blacklist_characters="/\x00"), min_size=1, max_size=30))
def test_every_name_gets_exactly_one_kind(name):
    k = classify_name(name)
    known = {"unknown", "kraft_snapshot", *SEGMENT_SUFFIXES.values(), *FILE_NAMES.values()}
    assert k.kind in known
    if k.leftover is not None:
        assert name.endswith(k.leftover) and name != k.leftover
    if k.base_offset is not None:
        assert name.startswith(f"{k.base_offset:020d}")


# ---------------------------------------------------------------- partition directory names


@pytest.mark.parametrize("name,expected", [
    ("orders-0", PartitionName("orders", 0)),
    ("my-topic-12", PartitionName("my-topic", 12)),
    ("payments.v1-events-2", PartitionName("payments.v1-events", 2)),
    ("__consumer_offsets-49", PartitionName("__consumer_offsets", 49)),
    ("__cluster_metadata-0", PartitionName("__cluster_metadata", 0)),
    (f"orders-3.{UID}-delete", PartitionName("orders", 3, "delete", UID)),
    (f"orders-3.{UID}-future", PartitionName("orders", 3, "future", UID)),
    (f"my-topic-7.{UID}-stray", PartitionName("my-topic", 7, "stray", UID)),
    (f"orders-{MAX_PARTITION}", PartitionName("orders", 2**31 - 1)),
])
def test_partition_dir_names_split_at_the_last_dash(name, expected):
    assert parse_partition_dir_name(name) == expected


@pytest.mark.parametrize("name", [
    "orders", "orders-", "-0", "orders-x", "orders-1a", "orders-1.abc-delete",
    f"orders-1.{UID}-deleted", f"orders-1.{UID[:-1]}-delete", f"orders-{UID}-delete",
    "orders-2147483648", f"orders-2147483648.{UID}-delete", "orders-99999999999999999999",
    "remote-log-index-cache", "lost+found",
])
def test_names_that_are_not_partition_dirs(name):
    assert parse_partition_dir_name(name) is None


def test_only_the_live_metadata_log_is_a_metadata_dir():
    assert is_metadata_dir("__cluster_metadata-0")
    assert parse_partition_dir_name("__cluster_metadata-0").is_metadata_log
    assert not is_metadata_dir(f"__cluster_metadata-0.{UID}-delete")
    assert not is_metadata_dir("__consumer_offsets-0")
    assert not is_metadata_dir("__cluster_metadata")


@given(topic=st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True), partition=st.integers(0, 2**31 - 1),
       suffix=st.sampled_from([None, "delete", "future", "stray"]))
def test_partition_dir_names_round_trip(topic, partition, suffix):
    name = f"{topic}-{partition}" + (f".{UID}-{suffix}" if suffix else "")
    assert parse_partition_dir_name(name) == PartitionName(topic, partition, suffix, UID if suffix else None)
