"""The catalogue of finding and verdict codes: one entry per code, the only place codes are defined.

Each entry gives the code's default severity, one line of meaning, what
Kafka itself does about the condition, and whether it can occur in a healthy
cluster (``healthy``: Kafka produces it in normal operation, so on its own it
says nothing is wrong; every other code means damage, loss or a setup Kafka
does not produce).  ``docs/findings.md`` is generated
from this table (:func:`markdown`), and a test fails when the package uses a
code the table lacks or the document is stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .severity import Severity

INFO, LOW, MEDIUM, HIGH, CRITICAL = Severity.INFO, Severity.LOW, Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL


@dataclass(frozen=True)
class CodeInfo:
    """One catalogue entry."""

    code: str
    severity: Severity
    meaning: str
    kafka: str  # what Kafka does about it
    area: str
    kind: str = "finding"  # "finding" or "verdict"
    healthy: bool = False  # whether a healthy cluster (nothing lost, nothing damaged) can show it


_ENTRIES: list[CodeInfo] = []


class _Add(Protocol):
    def __call__(self, code: str, severity: Severity, meaning: str, kafka: str, *, healthy: bool = False) -> None: ...


def _area(area: str, kind: str = "finding") -> _Add:
    def add(code: str, severity: Severity, meaning: str, kafka: str, *, healthy: bool = False) -> None:
        _ENTRIES.append(CodeInfo(code, severity, meaning, kafka, area, kind, healthy))

    return add


# ----------------------------------------------------------------------------- segments
_ = _area("segments (.log, KRaft snapshots)")
_("CRC_MISMATCH", HIGH, "a batch's stored CRC differs from the CRC computed over its bytes",
  "the batch is invalid: log recovery truncates the log at it, consumers fail with CorruptRecordException")
_("ZERO_TAIL", MEDIUM, "the file ends in zero bytes (preallocation, or a crash before the data was written)",
  "the reader stops at the first size-0 entry; recovery truncates the zeros", healthy=True)
_("ZERO_GAP", HIGH, "a range of zero bytes with valid batches after it",
  "the reader and recovery stop at the gap: everything after it is dropped at the next unclean start")
_("TRUNCATED_BATCH", HIGH, "the last entry declares more bytes than the file holds (a torn write)",
  "the reader stops silently before it; recovery truncates it")
_("IMPLAUSIBLE_SIZE", HIGH, "an entry's size field runs past the end of the file although valid entries follow",
  "the reader stops there; recovery truncates at it and deletes later segments")
_("CORRUPT_RANGE", HIGH, "bytes that frame no entry (bad size or magic) before valid entries resume",
  "CorruptRecordException: recovery truncates at the first such byte")
_("TRAILING_BYTES", MEDIUM, "fewer bytes after the last entry than an entry header needs",
  "the reader stops; kafka-dump-log reports them as invalid bytes at the end")
_("INVALID_ATTRIBUTES", HIGH, "a CRC-valid batch declares a compression codec that does not exist for its magic",
  "CompressionType.forId throws: the batch cannot be read")
_("OFFSET_NOT_INCREASING", HIGH, "a batch does not start after the previous batch's last offset",
  "appends refuse it; recovery may fail rebuilding the index and empty the segment")
_("OFFSET_GAP", INFO, "offsets are missing between two batches",
  "normal after compaction; above the cleaner offset it means lost batches", healthy=True)
_("SEGMENT_BELOW_NAME", MEDIUM, "a segment's first batch starts below the offset in its file name",
  "lookups by offset go to the wrong segment")
_("OFFSET_OUT_OF_RANGE", HIGH, "a batch's offsets are negative or its last offset is below its base offset",
  "the batch is invalid; recovery truncates at it")
_("LEGACY_FORMAT", INFO, "message format v0/v1 batches: no leader epochs",
  "followers fall back to high-watermark truncation for this partition", healthy=True)
_("BATCH_NOT_DECODED", INFO, "an entry too large to hold in memory: its CRC was checked by streaming",
  "nothing: Kafka reads it as any other batch", healthy=True)
_("NOT_A_REGULAR_FILE", MEDIUM, "a path named like a Kafka file is not a regular file (FIFO, device, socket)",
  "Kafka would fail or block on it; kforensics does not open it")

# ----------------------------------------------------------------------------- records
_ = _area("records (deep decoding)")
_("RECORD_DECODE_ERROR", HIGH, "records inside a CRC-valid batch do not decode (lengths, varints, counts)",
  "InvalidRecordException when the batch is iterated: consumers fail on it")
_("DECOMPRESSION_FAILED", HIGH, "a batch's compressed records do not decompress",
  "KafkaException when the batch is iterated")
_("DECOMPRESSION_BOMB", MEDIUM, "a batch decompresses to more than the configured limit; not decoded",
  "Kafka would decompress it in full")
_("UNKNOWN_CODEC", HIGH, "a compression codec id Kafka does not know", "Unknown compression type id: unreadable")
_("CODEC_NOT_ALLOWED_FOR_MAGIC", HIGH, "zstd in a v0/v1 message", "Kafka rejects the wrapper")
_("NULL_WRAPPER_VALUE", HIGH, "a compressed legacy wrapper with a null value", "the wrapper holds no records")
_("BAD_INNER_MESSAGE", HIGH, "a legacy wrapper holds a compressed or different-magic inner message",
  "InvalidRecordException")
_("BAD_INNER_MESSAGE_SET", HIGH, "a legacy wrapper's inner message set is damaged or empty",
  "iteration stops with an exception")
_("INNER_MESSAGE_CRC_MISMATCH", HIGH, "an inner message of a legacy wrapper fails its CRC-32",
  "consumers that check CRCs fail on it")
_("BAD_MESSAGE", HIGH, "a legacy message's key or value length overruns the message", "InvalidRecordException")
_("BAD_CONTROL_KEY", HIGH, "a control record key shorter than 4 bytes or with a negative version",
  "Kafka rejects the control record")
_("BAD_CONTROL_VALUE", HIGH, "a control record value that does not decode for its type",
  "Kafka rejects the control record")
_("RECORD_OFFSET_OUT_OF_BATCH", MEDIUM, "a record (or inner message) whose offset lies outside its batch's "
  "offsets", "no writer produces it; consumers see a record at an offset the batch does not cover, and the leader's "
  "validation refuses such a batch")
_("RECORD_OFFSETS_NOT_INCREASING", MEDIUM, "records (or inner messages) of one batch whose offsets do not increase",
  "no writer produces it (compaction keeps the order); the leader's validation refuses it, consumers see "
  "duplicate or out-of-order offsets")

# ----------------------------------------------------------------------------- indexes
_ = _area("indexes (.index, .timeindex, .txnindex)")
_("INDEX_PREALLOCATED_TAIL", INFO, "zero slots after the entries: a preallocated index of an active segment",
  "normal; trimmed at roll or clean close", healthy=True)
_("INDEX_DATA_AFTER_PADDING", LOW, "non-zero index entries after the padding", "Kafka treats every slot as an entry")
_("INDEX_PARTIAL_ENTRY", LOW, "the index length is not a multiple of its entry size",
  "sanityCheck fails; the index is rebuilt when the segment is recovered")
_("INDEX_NOT_INCREASING", MEDIUM, "index entries whose offsets do not increase",
  "binary searches go wrong until the index is rebuilt")
_("INDEX_ENTRY_OUT_OF_RANGE", MEDIUM, "index entries below the base offset or with negative positions",
  "lookups go wrong until the index is rebuilt")
_("INDEX_POINTS_WRONG", MEDIUM, "index entries that point to no batch start, or past the end of the log",
  "lookups read from the wrong place until the index is rebuilt")
_("INDEX_OFFSET_MISMATCH", INFO, "index entries at a batch start that name another offset than the batch's last",
  "normal for follower appends before KAFKA-806 (one entry per append, not per batch)", healthy=True)
_("TIMEINDEX_POINTS_WRONG", LOW, "time-index entries that name no batch's last offset",
  "time lookups land near, not at, the batch; rebuilt on recovery")
_("TIMEINDEX_TIMESTAMP_MISMATCH", LOW, "a time-index timestamp differs from its batch's max timestamp",
  "time lookups may return a later offset")
_("TIMEINDEX_OUT_OF_ORDER", LOW, "time-index timestamps that do not increase", "sanityCheck fails; rebuilt on recovery")
_("INDEX_SANITY_CHECK_FAILED", LOW, "Kafka's sanityCheck of this index fails",
  "before 2.3 the broker rebuilt the index at startup; since then it rebuilds it only when recovering the segment")
_("INDEX_WITHOUT_LOG", LOW, "an index file whose .log is missing (more than 10 in one partition: one finding counts "
  "them, the first by name as its file)", "deleted at startup")
_("INDEX_MISSING", LOW, "a segment without its .index",
  "the segment is recovered (re-read) at startup; normal for a segment written since the last start (the index file "
  "is created on first use, LazyIndex; LogLoader calls its absence an error only after a clean shutdown or below the "
  "recovery point, 3.3.1)", healthy=True)
_("TXN_INDEX_BAD_VERSION", MEDIUM, "a .txnindex entry with a version other than 0",
  "CorruptIndexException; the segment is recovered")
_("TXN_INDEX_BEFORE_SEGMENT", MEDIUM, "a .txnindex entry whose last offset is below the segment's base offset",
  "sanityCheck fails; the segment is recovered")
_("TXN_INDEX_NOT_INCREASING", MEDIUM, ".txnindex entries whose last offsets do not increase",
  "aborted-transaction lookups go wrong; rebuilt on recovery")
_("TXN_INDEX_VERSION_QUIRK", LOW, "a .txnindex version that is not 0 as written but passes as Kafka reads it "
  "(its first byte only)", "accepted")
_("TXN_INDEX_BAD_RANGE", LOW, "a .txnindex entry whose first offset is after its last", "consumers skip a wrong range")

# ----------------------------------------------------------------------------- checkpoints and side files
_ = _area("checkpoints and side files")
_("CHECKPOINT_BAD_VERSION", HIGH, "a checkpoint's version line is not the expected version",
  "IOException: the HW and leader-epoch files take the log dir offline; the recovery-point, log-start and cleaner "
  "files (MEDIUM) are ignored with a warning")
_("CHECKPOINT_BAD_COUNT", HIGH, "a checkpoint's count line is not a number", "IOException, as for a bad version")
_("CHECKPOINT_COUNT_MISMATCH", HIGH, "a checkpoint holds another number of entries than it declares",
  "IOException, as for a bad version")
_("CHECKPOINT_MALFORMED_LINE", HIGH, "a checkpoint entry line with the wrong fields or a number out of range",
  "IOException, as for a bad version")
_("CHECKPOINT_NEGATIVE", LOW, "a negative offset or epoch in a checkpoint",
  "offset checkpoints carry an impossible value; in a leader-epoch checkpoint (HIGH) the cache refuses it")
_("CHECKPOINT_NOT_UTF8", HIGH, "a checkpoint holds bytes that are not UTF-8", "the read fails, as for a bad version")
_("CHECKPOINT_DUPLICATE", LOW, "the same partition appears twice in an offset checkpoint", "the last line wins")
_("CHECKPOINT_BAD_TOPIC_NAME", LOW, "an offset checkpoint names a topic that is not a legal topic name",
  "the entry never matches a partition")
_("CHECKPOINT_ENTRY_WITHOUT_PARTITION", LOW, "a root checkpoint names a partition with no directory here",
  "ignored")
_("META_PROPERTIES_MALFORMED", MEDIUM, "a meta.properties line that is not key=value", "Properties.load skips it")
_("META_PROPERTIES_BAD_VERSION", HIGH, "meta.properties with a version other than 0 or 1",
  "the broker refuses to start")
_("META_PROPERTIES_BAD_ID", HIGH, "meta.properties with a broker or node id that is not a number",
  "the broker refuses to start")
_("META_PROPERTIES_MISSING_KEY", MEDIUM, "meta.properties without a required key", "the broker refuses to start")
_("PARTITION_METADATA_MALFORMED", HIGH, "partition.metadata that does not parse (a line is not 'key: value')",
  "the read fails and the log dir goes offline (KafkaStorageException)")
_("PARTITION_METADATA_NOT_UTF8", HIGH, "partition.metadata holding bytes that are not UTF-8",
  "the log dir goes offline")
_("PARTITION_METADATA_BAD_VERSION", HIGH, "partition.metadata with a negative version", "the log dir goes offline")
_("PARTITION_METADATA_BAD_TOPIC_ID", HIGH, "partition.metadata with an invalid or all-zero topic id",
  "the log dir goes offline")
_("PARTITION_METADATA_UNKNOWN_VERSION", LOW, "partition.metadata with a version above 0", "accepted, as a downgrade")
_("PARTITION_METADATA_UNEXPECTED_KEY", LOW, "a partition.metadata line names another key than Kafka writes",
  "ignored: Kafka does not look at the names")
_("PARTITION_METADATA_TRAILING_NEWLINE", LOW, "partition.metadata ending in a newline, which Kafka never writes",
  "accepted")
_("PARTITION_METADATA_EXTRA_LINES", LOW, "lines after the topic id in partition.metadata", "ignored")
_("QUORUM_STATE_MALFORMED", MEDIUM, "quorum-state that is not a JSON object",
  "the controller fails to start its Raft client")
_("QUORUM_STATE_BAD_VERSION", MEDIUM, "quorum-state with a data_version other than 0 or 1", "refused at startup")
_("QUORUM_STATE_BAD_FIELD", MEDIUM, "a quorum-state field of its data_version that is missing or out of its range",
  "the JSON converter refuses it: the controller fails to start its Raft client")
_("CLEAN_SHUTDOWN_MALFORMED", LOW, "a .kafka_cleanshutdown marker that is not the expected JSON",
  "the broker treats the shutdown as unclean and recovers")
_("SNAPSHOT_BAD_VERSION", MEDIUM, "a producer-state snapshot with a version other than 1",
  "CorruptSnapshotException: the snapshot is deleted and producer state rebuilt from the log")
_("SNAPSHOT_CRC_MISMATCH", MEDIUM, "a producer-state snapshot whose CRC does not match",
  "CorruptSnapshotException: deleted, producer state rebuilt from the log")
_("SNAPSHOT_TRUNCATED", MEDIUM, "a producer-state snapshot shorter than its entries", "CorruptSnapshotException")
_("SNAPSHOT_COUNT_MISMATCH", MEDIUM, "a producer-state snapshot whose entry count disagrees with its length",
  "CorruptSnapshotException")
_("SNAPSHOT_BEYOND_LEO", MEDIUM, "a producer-state snapshot taken beyond the log end offset", "deleted at load")
_("SNAPSHOT_ENTRY_BEYOND_LOG", MEDIUM, "producer entries naming offsets at or beyond the log end",
  "the snapshot is stale; producer state is rebuilt from the log")
_("FILE_TOO_LARGE", MEDIUM, "a file larger than kforensics reads of its kind: not read, so what it holds is unknown",
  "Kafka reads it whole (no such cap): nothing is concluded from the file")
_("UNREADABLE_FILE", HIGH, "a file that cannot be read (permissions, I/O error)",
  "the log dir goes offline (KafkaStorageException)")
_("UNREADABLE_DIR", HIGH, "a directory that cannot be listed", "the log dir goes offline")

# ----------------------------------------------------------------------------- log dirs
_ = _area("log dirs")
_("UNKNOWN_FILE", LOW, "a file or directory Kafka does not keep in a log dir", "ignored", healthy=True)
_("OFFSET_NAME_OUT_OF_RANGE", HIGH, "a segment, index or snapshot file whose name's offset does not fit a long; "
  "not read", "loading the log throws (Long.parseLong fails on the name): the log dir goes offline")
_("LEFTOVER_FILE", LOW, "a .deleted, .cleaned, .swap, .tmp or .part file left by an interrupted operation",
  "deleted, or for .swap renamed into place, at startup", healthy=True)
_("NO_META_PROPERTIES", LOW, "no meta.properties: the broker identity is unknown",
  "a pre-0.10 broker, or not a whole log dir", healthy=True)
_("CHECKPOINTS_ABSENT", LOW, "root checkpoint files are absent", "missing high watermarks start at 0", healthy=True)
_("NO_HW_ENTRY", LOW, "no replication-offset-checkpoint entry for this partition", "the HW starts at 0", healthy=True)
_("NO_SEGMENTS", INFO, "a partition directory with no segment", "an empty log is created at the log start offset")
_("NO_EPOCH_CHECKPOINT", LOW, "v2 batches with leader epochs but no leader-epoch-checkpoint",
  "the cache starts empty; the next truncation falls back to the high watermark")
_("BROKER_ID_CONFLICT", HIGH, "the log dirs of one broker disagree on its id", "the broker refuses to start")
_("CLUSTER_ID_CONFLICT", HIGH, "the log dirs of one broker disagree on the cluster id", "the broker refuses to start")
_("DUPLICATE_PARTITION", HIGH, "the same partition in two log dirs of one broker",
  "the broker refuses to start (duplicate log directories)")
_("DUPLICATE_LOG_DIR", MEDIUM, "the same log dir given twice", "scanned once")
_("TOPIC_NAME_FROM_TOPIC_ID", INFO, "a -delete/-stray directory name holds a truncated topic; the topic id names it",
  "nothing: the name is cosmetic", healthy=True)
_("NO_LOG_DIR", HIGH, "no broker log dir found in a snapshot", "nothing to load")
_("ARCHIVE_MEMBERS_IGNORED", MEDIUM, "archive members with absolute, escaping or link names (never followed)",
  "not applicable: archives are not Kafka's")
_("ARCHIVE_DUPLICATE_MEMBER", MEDIUM, "several archive members with one name (or a file and a directory): one is "
  "found by the name, every copy is hashed among the files", "not applicable: archives are not Kafka's")
_("ARCHIVE_TRUNCATED", HIGH, "an archive that ends early: the members before the cut are read, the rest are missing",
  "not applicable: the evidence is incomplete")
_("ARCHIVE_DAMAGED", HIGH, "an archive (or a member's data in it) that cannot be read past a damaged point",
  "not applicable: findings past that point in the member are the archive's damage, not the broker's")
_("SHORT_READ", HIGH, "a file, archive member or remote file whose data ended before the size it had when opened "
  "(it shrank while read, or the copy is cut): read up to that byte, the rest unknown",
  "not applicable: the evidence changed while read or is incomplete")
_("SNAPSHOT_UNREADABLE", HIGH, "a whole snapshot (archive, filesystem) could not be read", "not applicable")
_("SCAN_FAILED", HIGH, "an internal error while scanning this partition; the job went on",
  "not applicable: report it as a kforensics bug")
_("REPLAY_FAILED", HIGH, "an internal error while replaying this partition group (Spark); the other groups went "
  "on, and this one has no verdicts", "not applicable: report it as a kforensics bug")
_("MORE_FINDINGS", INFO, "more findings of one code in one file than are listed", "not applicable", healthy=True)

# ----------------------------------------------------------------------------- watermarks and recovery
_ = _area("watermarks and recovery")
_("HW_ABOVE_LEO", HIGH, "the checkpointed high watermark is above the log end offset",
  "committed records are missing from this replica; the HW is clamped to the LEO at startup")
_("HW_BELOW_LOG_START", MEDIUM, "the high watermark is below the log start offset", "clamped to the log start")
_("RECOVERY_POINT_ABOVE_LEO", MEDIUM, "the recovery point is above the log end offset",
  "flushed records are missing; the recovery point is lowered to the LEO")
_("RECOVERY_WOULD_TRUNCATE", HIGH, "without a clean-shutdown marker, log recovery truncates this partition",
  "LogLoader recovers from the recovery point, cuts at the first invalid batch and deletes later segments")
_("CORRUPTION_NOT_RECOVERED", HIGH, "damage that the next start keeps: behind a clean-shutdown marker, or in a "
  "segment below the recovery point's", "recovery does not read it, so Kafka serves the damaged batches as they are")
_("LOG_LOAD_FAILS", CRITICAL, "a log Kafka cannot load: the marker skips recovery and the active segment holds "
  "a range its reader refuses", "LogManager.loadLogs fails and the broker does not start")

# ----------------------------------------------------------------------------- leader epochs
_ = _area("leader epochs")
_("EPOCH_CACHE_CLEARED_BY_LEGACY_BATCH", MEDIUM, "a v0/v1 batch follows v2 batches",
  "appending it empties the epoch cache: the next leader change falls back to HW truncation")
_("EPOCH_WENT_BACKWARDS", MEDIUM, "a batch carries an older epoch than the batch before it",
  "the append path assigns it and drops newer entries; recovery ignores it")
_("EPOCH_ASSIGN_DROPPED_ENTRIES", MEDIUM, "an epoch conflicts with cached entries, which are removed",
  "assign keeps the cache increasing by dropping the conflicting tail")
_("EPOCH_ASSIGN_IGNORED", MEDIUM, "an epoch does not extend the cache and is ignored (before 2.0.1)",
  "the entry is lost from the cache")
_("EPOCH_CHECKPOINT_NOT_MONOTONIC", MEDIUM, "leader-epoch checkpoint entries not increasing",
  "conflicting entries are dropped at load")
_("EPOCH_ENTRY_BEYOND_LEO", LOW, "a checkpoint epoch starts after the log end offset",
  "dropped at load (truncateFromEnd); typically an unflushed truncation")
_("EPOCH_EMPTY_AT_LEO", INFO, "a checkpoint epoch starts at the LEO with no batch: elected, nothing written yet",
  "kept; the leader answers for it", healthy=True)
_("EPOCH_MISSING_FROM_LOG", LOW, "a checkpoint epoch that no batch carries",
  "kept; removed by retention, compaction or truncation (the log cleaner never touches the epoch cache)",
  healthy=True)
_("EPOCH_MISSING_FROM_CHECKPOINT", LOW, "batches carry an epoch the checkpoint does not list",
  "the cache lacks it until the segment is recovered")
_("EPOCH_START_DIFFERS", LOW, "an epoch starts at another offset in the checkpoint than in the log",
  "truncation answers use the checkpoint's offset; normal after compaction, which removes an epoch's first batches "
  "and leaves the epoch cache as it was", healthy=True)

# ----------------------------------------------------------------------------- KRaft metadata
_ = _area("KRaft metadata")
_("BAD_METADATA_FRAME", MEDIUM, "a metadata record whose frame header is unreadable or of an unknown version",
  "the controller fails to replay the log")
_("UNKNOWN_METADATA_RECORD", MEDIUM, "a metadata record type or version this tool does not know",
  "a newer controller's record; older brokers fail on it")
_("METADATA_RECORD_DECODE_ERROR", MEDIUM, "a metadata record body that does not decode",
  "the controller fails to replay the log")
_("NULL_METADATA_RECORD", MEDIUM, "a metadata record with a null value", "the controller fails to replay the log")
_("METADATA_CLUSTERS_DIFFER", HIGH, "metadata logs of several clusters were given; one is replayed",
  "not applicable")
_("METADATA_REPLICAS_DIVERGE", MEDIUM, "copies of the metadata log hold different records at one offset in the "
  "same Raft epoch", "Raft's log matching rules it out: a damaged copy, or copies of two clusters")
_("METADATA_TAIL_DEPOSED", LOW, "a copy of the metadata log holds a tail written by a deposed leader, diverging from "
  "the reference lineage", "the node truncates it when it next fetches from the leader (KafkaRaftClient, diverging "
  "epoch); it was never committed and is not replayed")
_("METADATA_LOG_INCOMPLETE", MEDIUM, "a copy of the metadata log ends before what its own leader-epoch checkpoint, "
  "snapshots or its node's partitions (batches of a later leader epoch) show it held", "the node restarts from what "
  "its segments hold and fetches the rest from the leader; grants in the missing part are unknown to the timeline")
_("METADATA_UNCOMMITTED", INFO, "metadata records past the committed bound the copies show (snapshot, or a majority "
  "of voters past the start of the leader's epoch)", "brokers apply only committed metadata", healthy=True)
_("METADATA_HISTORY_INCOMPLETE", INFO, "the metadata log starts after offset 0 with no snapshot before it",
  "not applicable: older partitions are unknown until a change names them")
_("METADATA_RECORDS_SUPERSEDED", INFO, "metadata records with no known state to apply to; a later snapshot covers them",
  "not applicable", healthy=True)
_("METADATA_LOG_GAP", MEDIUM, "metadata offsets missing with no snapshot covering them", "not applicable")
_("METADATA_TRANSACTION_OPEN", INFO, "the metadata log ends inside a metadata transaction",
  "the open transaction's records are not applied", healthy=True)
_("METADATA_TRANSACTION_ABORTED", INFO, "a metadata transaction was aborted", "its records are discarded", healthy=True)
_("METADATA_TRANSACTION_NESTED", LOW, "a metadata transaction begins inside another", "the controller fails")
_("METADATA_TRANSACTION_TOO_LARGE", LOW, "a metadata transaction holds more records than the timeline holds",
  "Kafka applies it at its end; the timeline replays it as it is read (an abort after the limit is not undone)")
_("SNAPSHOT_INCOMPLETE", MEDIUM, "a KRaft snapshot without its header or footer", "not loaded")
_("SNAPSHOT_DISAGREES_WITH_LOG", MEDIUM, "a KRaft snapshot differs from the log replayed up to its offset",
  "the snapshot wins at load")
_("CHANGE_WITHOUT_PARTITION", LOW, "a PartitionChangeRecord for a partition never registered",
  "the controller fails to replay it")
_("CLEAR_ELR_UNKNOWN_TOPIC", LOW, "a ClearElrRecord names an unknown topic", "ignored")
_("TOPIC_ID_UNNAMED", LOW, "a partition record for a topic id no TopicRecord named", "the controller fails")
_("EPOCH_NOT_GRANTED", HIGH, "a replica holds a leader epoch the controller never granted to a leader",
  "impossible under a working controller: damage or a foreign cluster's data")
_("GRANT_NOT_SEEN", INFO, "the broker was elected in an epoch its leader-epoch checkpoint lacks; LOW when its "
  "batches carry that epoch or a later one (it appended, so Kafka recorded the epoch)",
  "an entry is written on append, and from 2.0.1 at the election at the log end; a broker that never appended in "
  "the epoch drops that entry when it truncates to its log end as a follower or loads the log", healthy=True)
_("TOPIC_ID_MISMATCH", MEDIUM, "the replica's topic id is not the one the controller gave the topic",
  "a leftover of a deleted and re-created topic: Kafka marks it stray")
_("REPLICA_NOT_ASSIGNED", LOW, "the controller's replica set of this partition leaves this broker out",
  "KRaft brokers mark the directory -stray")
_("REPLICA_OF_DELETED_TOPIC", LOW, "the controller deleted this topic after its last registration",
  "the directory is deleted at startup")
_("PARTITION_NOT_IN_METADATA", LOW, "a partition on disk that the controller never registered", "marked stray")

# ----------------------------------------------------------------------------- internal topics
# ----------------------------------------------------------------------------- ZooKeeper (ZooKeeper-mode clusters)
_ = _area("ZooKeeper data dir (ZooKeeper-mode controller state)")
_("ZOOKEEPER_LOG_DAMAGED", HIGH, "a ZooKeeper transaction log entry that does not read: checksum mismatch, bad "
  "length, a missing end-of-record byte, bytes that do not decode, or data after the zeros that end the log",
  "ZooKeeper refuses to load its database at a bad checksum or entry; it ends the log silently at a missing "
  "end-of-record byte or at zeros, so what follows is lost to Kafka's controller")
_("ZOOKEEPER_LOG_TORN_TAIL", LOW, "a ZooKeeper transaction log ends in a partial entry (a torn write)",
  "ZooKeeper ends the log before it: the transaction was never acknowledged")
_("ZOOKEEPER_SNAPSHOT_DAMAGED", MEDIUM, "a ZooKeeper snapshot that is incomplete, does not decode or whose checksum "
  "does not match", "ZooKeeper skips it and loads the next older valid snapshot (and the logs after it)")
_("ZOOKEEPER_STATE_INCOMPLETE", MEDIUM, "damage stopped the reading of ZooKeeper's data dir: the controller state "
  "read may miss later changes", "ZooKeeper does not start on this data dir until it is repaired")
_("ZOOKEEPER_FILE_NOT_READ", MEDIUM, "a file of ZooKeeper's data dir that was not read (unreadable, compressed, or "
  "after damage in an earlier log)", "not applicable")
_("ZOOKEEPER_ZNODE_UNREADABLE", MEDIUM, "a Kafka znode whose JSON does not decode as Kafka writes it",
  "Kafka's controller fails on it or skips the partition")

_ = _area("internal topics (__consumer_offsets, __transaction_state, __share_group_state, __remote_log_metadata)")
# (entries for the internal-topic decoders go here)
_("INTERNAL_RECORD_UNKNOWN_TYPE", LOW, "an internal-topic record type this tool does not know (a newer broker's)",
  "the coordinator skips unknown record types; kafka-dump-log prints 'Unknown record type'")
_("INTERNAL_RECORD_UNKNOWN_VERSION", MEDIUM, "an internal-topic value version this tool does not know",
  "a newer broker's value: an older coordinator fails to load the partition")
_("INTERNAL_RECORD_DECODE_ERROR", MEDIUM, "an internal-topic key or value that does not decode by its schema",
  "the coordinator fails to load the partition; kafka-dump-log prints 'Error at offset ..., skipping'")
_("INTERNAL_RECORD_TRAILING_BYTES", LOW, "bytes left after a decoded internal-topic key or value",
  "ignored: Kafka's readers stop at the end of the schema")
_("INTERNAL_RECORD_MISSING_KEY", MEDIUM, "an internal-topic record with a null key",
  "the coordinator cannot load it; kafka-dump-log aborts with 'message had a missing key'")
_("CONSUMER_PROTOCOL_UNDECODED", LOW, "a classic group member's subscription or assignment that is not the consumer "
  "protocol", "kept as raw bytes: the coordinator never parses them; kafka-dump-log prints them as base64",
  healthy=True)

# ----------------------------------------------------------------------------- transactions
_ = _area("transactions (markers, last stable offset, .txnindex, __transaction_state)")
_("TXN_OPEN", INFO, "a transaction open at the log end: data batches of a producer with no marker after them",
  "read_committed consumers stop at its first offset (the last stable offset) until the coordinator writes the "
  "marker, or aborts it at its timeout", healthy=True)
_("TXN_HANGING", HIGH, "an open transaction nobody will end: older than the maximum transaction timeout by the "
  "partition's own clock, or one the coordinator (__transaction_state) no longer has for this partition",
  "the last stable offset stays at its first offset: read_committed consumers stall and the cleaner stops there, "
  "until it is aborted by hand (kafka-transactions.sh abort, KIP-664)")
_("TXN_MARKER_LOST", HIGH, "a COMMIT or ABORT marker in a range the replay truncates or loses, while its "
  "transaction's data survives on the new leader", "read_committed consumers saw the transaction end; on the new "
  "leader it is open again and the coordinator, which completed it, never rewrites the marker: it hangs")
_("TXN_PRODUCER_EPOCH_WENT_BACKWARDS", MEDIUM, "a transactional batch or marker with a producer epoch below one its "
  "producer already wrote (a marker one epoch above its data is normal: transactions v2, or a fenced producer)",
  "the leader refuses it (InvalidProducerEpochException); a follower appends it with a warning")
_("TXN_COORDINATOR_EPOCH_WENT_BACKWARDS", MEDIUM, "a marker whose coordinator epoch is below an earlier marker's "
  "for the same producer", "the leader refuses it (TransactionCoordinatorFencedException): a zombie coordinator")
_("TXN_INDEX_MISSING_ABORT", HIGH, "an aborted transaction (ABORT marker after data) that the segment's .txnindex "
  "does not list", "read_committed consumers receive the aborted records as if committed; rebuilt only when "
  "the segment is recovered")
_("TXN_INDEX_UNKNOWN_ABORT", MEDIUM, "a .txnindex entry with no ABORT marker at its last offset",
  "read_committed consumers drop that producer's records in the range")
_("TXN_INDEX_ENTRY_DIFFERS", LOW, "a .txnindex entry whose first offset or last stable offset differs from what "
  "the log gives", "read_committed consumers skip a different range than the transaction's")
_("TXN_COORDINATOR_DISAGREES", HIGH, "a marker whose outcome (COMMIT/ABORT) differs from the coordinator's decided "
  "state for the same producer epoch", "this partition shows another outcome than the transaction's other "
  "partitions: atomicity is broken")

# ----------------------------------------------------------------------------- consumer groups
_ = _area("consumer groups (committed offsets against the replayed log)")
_("CONSUMED_RECORDS_LOST", HIGH, "records below a group's committed offset (so delivered to it) that no longer "
  "exist on the new leader", "gone: the group processed records that the partition no longer holds")
_("GROUP_OFFSET_OUT_OF_RANGE", HIGH, "a group's committed offset beyond the new leader's log end (or below its "
  "start) that KIP-320 validation does not catch, or whose leader epoch the new leader cannot place",
  "the consumer's fetch fails with OFFSET_OUT_OF_RANGE (or validation finds no end offset) and it resets per "
  "auto.offset.reset (earliest: re-reads; latest: skips; none: OffsetOutOfRangeException)")
_("GROUP_TRUNCATION_DETECTED", MEDIUM, "a group's committed offset carries a leader epoch whose end on the new "
  "leader is below it (KIP-320)", "the consumer (2.3+, broker 2.3+) seeks back to that end offset and re-reads "
  "from there (with auto.offset.reset=none: LogTruncationException)")
_("GROUP_COMMIT_INVALID", MEDIUM, "a committed offset below 0: no position a consumer can fetch from",
  "the consumer takes it for no committed offset and resets per auto.offset.reset, before the incident as after")
_("GROUP_SKIPS_RECORDS", HIGH, "the new leader holds other records below a group's committed offset than those it "
  "consumed", "the group never receives them: its fetch position is beyond them, and nothing tells it")

# ----------------------------------------------------------------------------- replay (findings)
_ = _area("replay")
_("UNCLEAN_ELECTION", HIGH, "the controller's record shows a leader elected outside the last ISR (or RECOVERING)",
  "records only the unclean leader lacked are lost on every replica")
_("LOG_MATCHING_VIOLATED", CRITICAL, "after replay a follower's log is not a prefix of the leader's",
  "a permanent fork: consumers see different records at the same offsets")
_("COMMITTED_DATA_LOST", CRITICAL, "batches below the committed bound were truncated and not fetched back",
  "committed records are gone from every replica")
_("LEADER_EPOCH_OVERFLOW", HIGH, "the next leader epoch would not fit Kafka's int32 (an epoch of 2147483647 on disk)",
  "the controller's leaderEpoch + 1 overflows: no valid epoch follows, so the election's epoch is unknown")
_("PARTITION_NOT_REPLAYED", INFO, "a partition replay leaves out, and why (the KRaft metadata log: Raft, not ISR)",
  "-", healthy=True)
_("METADATA_COPIES_DIFFER", INFO, "one node's copy of the metadata log holds records another node's lacks",
  "a lagging voter catches up; a voter's uncommitted tail is truncated to the leader's log (Raft)", healthy=True)

# ----------------------------------------------------------------------------- salvage
_ = _area("salvage and payloads")
_("SALVAGE_BATCH_NOT_READ", HIGH, "a batch a loss verdict names no longer reads back where the replay found it "
  "(the file changed or the copy is cut): its records are not salvaged", "-")
_("SALVAGE_NOT_SENT", HIGH, "a salvaged record the broker did not acknowledge when put back (the delivery error "
  "is given); a later run sends it again", "-")
_("SALVAGE_LEADER_UNSETTLED", MEDIUM, "the salvage follows the leader the replay predicts for the brokers' return "
  "(no --restart-order given), and another order of return elects another broker or nobody: what is lost, so "
  "what is salvaged, depends on which broker the controller has back first", "the controller elects from the brokers "
  "it has unfenced when the recorded leader is fenced (PartitionChangeBuilder)")
_("SALVAGE_LEDGER_DAMAGED", MEDIUM, "a line of the salvage ledger (what earlier runs had acknowledged) does not "
  "parse; the records it named may be sent again", "-")
_("PAYLOAD_UNDECODABLE", LOW, "a key or value framed for the Schema Registry (magic byte 0, schema id) does not "
  "decode with its schema, or its schema is not in the evidence's _schemas topic: it stays bytes",
  "nothing: brokers never decode payloads; a consumer's deserializer fails on it")
_("SCHEMA_UNREADABLE", LOW, "a record of the _schemas topic does not parse as a Schema Registry schema record",
  "nothing: the Schema Registry skips or fails on it when it loads")

# ----------------------------------------------------------------------------- verdicts
_ = _area("replay verdicts", "verdict")
_("OK", INFO, "the replica ends as a prefix of the leader; nothing it held is lost", "-", healthy=True)
_("DISCARD_UNCOMMITTED", LOW, "records above every known high watermark were truncated and not fetched back",
  "normal: uncommitted records of a former leader", healthy=True)
_("POSSIBLY_COMMITTED", HIGH, "records below the committed bound but above this replica's own HW were truncated",
  "committed when another replica's HW says so")
_("LOSS_COMMITTED", CRITICAL, "records below this replica's own high watermark were truncated and not fetched back",
  "committed data lost")
_("FORK", CRITICAL, "after truncation the replica keeps records that differ from the leader's at the same offsets",
  "a permanent, silent divergence")
_("NO_EPOCHS", LOW, "the replica has no leader epochs: truncation fell back to its high watermark",
  "pre-KIP-101 behaviour for this replica", healthy=True)
_("LOST_TO_RECOVERY", HIGH, "records this broker's own log recovery cuts at restart (damaged or torn batches)",
  "LogLoader truncates at the first invalid batch and deletes later segments")
_("LEADER_LACKS_COMMITTED", HIGH, "the new leader lacks records below another replica's high watermark",
  "followers truncate to the leader: records only they held are lost")
_("NOT_CONVERGING", HIGH, "follower truncation repeats without converging (the rounds are listed), or the "
  "follower cannot append what the leader serves", "the follower loops, or retries forever, and never catches up")
_("LOG_LOAD_FAILS", CRITICAL, "this broker cannot load the partition's log at startup, so it takes no part",
  "the broker does not start until the damage or the marker is removed")
_("UNCLEAN_ELECTION", HIGH, "this replica was elected leader outside the last ISR (the controller's record shows it)",
  "records only the former ISR held are lost")
_("NOT_JUDGED", HIGH, "this replica's evidence could not be read (a segment or its directory), so what the "
  "replay does to it is unknown", "-: kforensics could not read what Kafka would load")
_("NO_LEADER", HIGH, "the controller elects no leader at the restart: no replica is eligible (ISR, ELR, last known "
  "leader) among the brokers that come back, and unclean election is off",
  "the partition stays offline (produce and fetch fail) until an eligible replica returns or unclean election is "
  "enabled; nothing is truncated meanwhile")
_("COMMITTED_NOT_HELD", CRITICAL, "offsets below the committed bound (a checkpointed high watermark) that no "
  "replica holds on disk: committed, then lost before the evidence was taken (unflushed, or files missing)",
  "the leader serves from its log end: consumers past it reset, and the committed records are gone everywhere")
_("REMOTE_SEGMENTS_UNREACHABLE", HIGH, "copied remote segments (tiered storage) outside the new leader's epoch "
  "lineage: their records are never served again although their bytes stay in remote storage until cleanup",
  "RemoteLogManager.isRemoteSegmentWithinLeaderEpochs excludes them from reads and retention; the cleanup of "
  "3.6.0-4.1.0 deletes one only when all its epochs are below the leader's earliest (else it stays unreferenced)")


# ----------------------------------------------------------------------------- tiered storage (KIP-405)
_ = _area("tiered storage (__remote_log_metadata)")
_("REMOTE_LOCAL_GAP", HIGH, "offsets of a tiered partition above its log start and below its local log start that "
  "no copied remote segment holds",
  "a fetch there (consumer or follower) finds no remote segment: consumers get an error, a follower below the "
  "leader's local log start cannot build its state from remote storage and retries for ever")
_("REMOTE_SEGMENT_COPYING", INFO, "__remote_log_metadata leaves a remote segment in COPY_SEGMENT_STARTED",
  "not served until COPY_SEGMENT_FINISHED; a copy that never finishes is left for the cleanup", healthy=True)
_("REMOTE_SEGMENT_DELETING", LOW, "__remote_log_metadata leaves a remote segment in DELETE_SEGMENT_STARTED",
  "no longer served; the leader's cleanup retries the deletion (4.0+) or leaves it", healthy=True)
_("REMOTE_METADATA_NOT_APPLIED", MEDIUM, "a __remote_log_metadata record RemoteLogMetadataCache does not apply (an "
  "update of an unknown segment, a state transition it refuses, a snapshot record in the topic)",
  "the cache drops the record (or the consumer task logs an error) and keeps the segment's earlier state")
_("TIERED_METADATA_ABSENT", LOW, "a tiered partition's local log starts above its log start and no "
  "__remote_log_metadata is in the evidence: its remote coverage cannot be checked",
  "-: the metadata lives in __remote_log_metadata partitions, on the brokers that host them", healthy=True)


def _index(kind: str) -> dict[str, CodeInfo]:
    out: dict[str, CodeInfo] = {}
    for e in _ENTRIES:
        if e.kind == kind:
            if e.code in out:
                raise RuntimeError(f"the catalogue lists {kind} code {e.code} twice")
            out[e.code] = e
    return out


#: finding codes (what :func:`kforensics.findings.finding` accepts)
CATALOGUE: dict[str, CodeInfo] = _index("finding")
#: verdict codes of the replay
VERDICTS: dict[str, CodeInfo] = _index("verdict")


def markdown() -> str:
    """``docs/findings.md``: every code by area, with severity, meaning and what Kafka does."""
    out = ["# Finding and verdict codes", "",
           "Generated from `kforensics/catalogue.py` (`python -m kforensics.catalogue > docs/findings.md`); "
           "a test fails when it is stale.", "",
           "Severity is the default; a finding is graded higher or lower only where the context changes what "
           "Kafka does, and its message says why.", "",
           "*Healthy* says whether the code can occur in a healthy cluster (nothing lost, nothing damaged): Kafka "
           "produces it in normal operation.  A test runs `scan` and `replay` over the healthy real corpora and "
           "fails on any finding at low or above whose code is not.", ""]
    areas: dict[str, list[CodeInfo]] = {}
    for e in _ENTRIES:
        areas.setdefault(e.area, []).append(e)
    for area, entries in areas.items():
        out += [f"## {area[0].upper()}{area[1:]}", "", "| code | severity | healthy | meaning | what Kafka does |",
                "| --- | --- | --- | --- | --- |"]
        for e in entries:
            out.append(f"| `{e.code}` | {e.severity} | {'yes' if e.healthy else 'no'} | {e.meaning} | {e.kafka} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    print(markdown(), end="")
