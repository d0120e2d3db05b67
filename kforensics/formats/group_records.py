"""The group coordinator's record types for the new rebalance protocols (``__consumer_offsets``).

KIP-848 consumer groups (types 3-8, 16), KIP-932 share groups (9-15) and
KIP-1071 streams groups (17-24), as key/value :class:`RecordPair` tables.
Keys are never flexible (one version, 0); every value here is flexible from
version 0.  Field names are camelCase as in Kafka's JSON form.  The schemas of
share and streams groups were declared "in development" (changed without
version bumps) until they shipped; these tables follow the newest stored
versions of the schema files (see :mod:`.group_coordinator` for the sources).
"""

from __future__ import annotations

from .internal_topics import RecordPair, key_type, value_type
from .message_schema import (
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    NULLABLE_STRING,
    STRING,
    UINT16,
    UUID,
    Decl,
    StructSpec,
    array,
    nullable_array,
    nullable_struct,
    struct,
    tagged,
)


def _pair(api_key: int, name: str, key_fields: tuple[Decl, ...], *value_fields: Decl) -> RecordPair:
    return RecordPair(key_type(api_key, f"{name}Key", *key_fields), value_type(api_key, f"{name}Value", 0,
                                                                                 *value_fields))


GROUP = ("groupId" / STRING,)
MEMBER = ("groupId" / STRING, "memberId" / STRING)


def _topic_partitions(*extra: Decl) -> StructSpec:
    return struct("topicId" / UUID, "partitions" / array(INT32), *extra)


def _topic_metadata(with_racks: bool) -> StructSpec:
    racks = ("partitionMetadata" / array(struct("partition" / INT32, "racks" / array(STRING))),) if with_racks else ()
    return struct("topicId" / UUID, "topicName" / STRING, "numPartitions" / INT32, *racks)


# --------------------------------------------------------------------------- KIP-848 consumer groups
CONSUMER_GROUP_PAIRS = [
    _pair(3, "ConsumerGroupMetadata", GROUP,
          "epoch" / INT32,
          tagged(0, "metadataHash" / INT64, default=0),  # 4.1, KIP-1101
          tagged(1, "creationTimeMs" / INT64, default=-1)),  # KIP-1282
    # not written since 4.1 (KIP-1101 replaced it by the metadata hash); still replayed
    _pair(4, "ConsumerGroupPartitionMetadata", GROUP,
          "topics" / array(_topic_metadata(with_racks=True))),
    _pair(5, "ConsumerGroupMemberMetadata", MEMBER,
          "instanceId" / NULLABLE_STRING,
          "rackId" / NULLABLE_STRING,
          "clientId" / STRING,
          "clientHost" / STRING,
          "subscribedTopicNames" / array(STRING),
          "subscribedTopicRegex" / NULLABLE_STRING,
          "rebalanceTimeoutMs" / INT32,
          "serverAssignor" / NULLABLE_STRING,
          # set for members that joined with the classic protocol (online upgrade of a group)
          tagged(0, "classicMemberMetadata" / nullable_struct(
              "sessionTimeoutMs" / INT32,
              "supportedProtocols" / array(struct("name" / STRING, "metadata" / BYTES))))),
    _pair(6, "ConsumerGroupTargetAssignmentMetadata", GROUP,
          "assignmentEpoch" / INT32,
          tagged(0, "assignmentTimestamp" / INT64, default=0)),  # 4.3, KIP-1263
    _pair(7, "ConsumerGroupTargetAssignmentMember", MEMBER,
          "topicPartitions" / array(_topic_partitions())),
    _pair(8, "ConsumerGroupCurrentMemberAssignment", MEMBER,
          "memberEpoch" / INT32,
          "previousMemberEpoch" / INT32,
          "state" / INT8,
          # KIP-1251: the epoch each partition was assigned in, aligned with partitions
          "assignedPartitions" / array(_topic_partitions(tagged(0, "assignmentEpochs" / nullable_array(INT32)))),
          "partitionsPendingRevocation" / array(_topic_partitions(
              tagged(0, "assignmentEpochs" / nullable_array(INT32))))),
    RecordPair(key_type(16, "ConsumerGroupRegularExpressionKey", "groupId" / STRING, "regularExpression" / STRING),
               value_type(16, "ConsumerGroupRegularExpressionValue", 0,
                          "topics" / array(STRING),
                          "version" / INT64,
                          "timestamp" / INT64)),
]

# --------------------------------------------------------------------------- KIP-932 share groups
SHARE_GROUP_PAIRS = [
    # written by the 4.0 preview only (later replaced by the metadata hash)
    _pair(9, "ShareGroupPartitionMetadata", GROUP,
          "topics" / array(_topic_metadata(with_racks=True))),
    _pair(10, "ShareGroupMemberMetadata", MEMBER,
          "rackId" / NULLABLE_STRING,
          "clientId" / STRING,
          "clientHost" / STRING,
          "subscribedTopicNames" / array(STRING)),
    _pair(11, "ShareGroupMetadata", GROUP,
          "epoch" / INT32,
          "metadataHash" / INT64),
    _pair(12, "ShareGroupTargetAssignmentMetadata", GROUP,
          "assignmentEpoch" / INT32),
    _pair(13, "ShareGroupTargetAssignmentMember", MEMBER,
          "topicPartitions" / array(_topic_partitions())),
    _pair(14, "ShareGroupCurrentMemberAssignment", MEMBER,
          "memberEpoch" / INT32,
          "previousMemberEpoch" / INT32,
          "state" / INT8,
          "assignedPartitions" / array(_topic_partitions())),
    _pair(15, "ShareGroupStatePartitionMetadata", GROUP,
          "initializingTopics" / array(struct("topicId" / UUID, "topicName" / STRING, "partitions" / array(INT32),
                                              "createTimestamp" / INT64)),
          "initializedTopics" / array(struct("topicId" / UUID, "topicName" / STRING, "partitions" / array(INT32),
                                             "createTimestamp" / INT64)),
          "deletingTopics" / array(struct("topicId" / UUID, "topicName" / STRING))),
]

# --------------------------------------------------------------------------- KIP-1071 streams groups
_KEY_VALUE = struct("key" / STRING, "value" / STRING)
_TASKS = array(struct("subtopologyId" / STRING, "partitions" / array(INT32)))
_TOPIC_INFO = struct("name" / STRING, "partitions" / INT32, "replicationFactor" / INT16,
                     "topicConfigs" / array(_KEY_VALUE))

STREAMS_GROUP_PAIRS = [
    _pair(17, "StreamsGroupMetadata", GROUP,
          "epoch" / INT32,
          "metadataHash" / INT64,
          tagged(0, "validatedTopologyEpoch" / INT32, default=-1),
          tagged(1, "lastAssignmentConfigs" / nullable_array(_KEY_VALUE))),
    _pair(18, "StreamsGroupPartitionMetadata", GROUP,
          "topics" / array(_topic_metadata(with_racks=False))),
    _pair(19, "StreamsGroupMemberMetadata", MEMBER,
          "instanceId" / NULLABLE_STRING,
          "rackId" / NULLABLE_STRING,
          "clientId" / STRING,
          "clientHost" / STRING,
          "rebalanceTimeoutMs" / INT32,
          "topologyEpoch" / INT32,
          "processId" / STRING,
          "userEndpoint" / nullable_struct("host" / STRING, "port" / UINT16),
          "clientTags" / array(_KEY_VALUE)),
    _pair(20, "StreamsGroupTargetAssignmentMetadata", GROUP,
          "assignmentEpoch" / INT32,
          tagged(0, "assignmentTimestamp" / INT64, default=0)),  # KIP-1263
    _pair(21, "StreamsGroupTargetAssignmentMember", MEMBER,
          "activeTasks" / _TASKS,
          "standbyTasks" / _TASKS,
          "warmupTasks" / _TASKS),
    _pair(22, "StreamsGroupCurrentMemberAssignment", MEMBER,
          "memberEpoch" / INT32,
          "previousMemberEpoch" / INT32,
          "state" / INT8,
          "activeTasks" / _TASKS,
          "standbyTasks" / _TASKS,
          "warmupTasks" / _TASKS,
          "activeTasksPendingRevocation" / _TASKS,
          "standbyTasksPendingRevocation" / _TASKS,
          "warmupTasksPendingRevocation" / _TASKS),
    _pair(23, "StreamsGroupTopology", GROUP,
          "epoch" / INT32,
          "subtopologies" / array(struct(
              "subtopologyId" / STRING,
              "sourceTopics" / array(STRING),
              "sourceTopicRegex" / array(STRING),
              "stateChangelogTopics" / array(_TOPIC_INFO),
              "repartitionSinkTopics" / array(STRING),
              "repartitionSourceTopics" / array(_TOPIC_INFO),
              # indexes into the subtopology's topic arrays
              "copartitionGroups" / array(struct("sourceTopics" / array(INT16),
                                                 "sourceTopicRegex" / array(INT16),
                                                 "repartitionSourceTopics" / array(INT16)))))),
    _pair(24, "StreamsGroupTargetAssignmentResolvedTopicIds", GROUP,
          "assignmentEpoch" / INT32,
          "resolvedTopicIdsBySubtopology" / array(struct("subtopologyId" / STRING, "topicIds" / array(UUID)))),
]
