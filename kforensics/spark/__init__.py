"""The multi-broker pipeline on Spark: the same scan and replay code, distributed.

Spark only distributes: the driver plans (lists snapshots, reads each log dir's
root files), executors scan partition dirs with
:func:`kforensics.scan.partition.scan_partition` and write the same tables as
``kforensics scan --out``, and each (cluster, topic, partition) group is
replayed by :func:`kforensics.replay.group.replay_group` with its cluster's
KRaft timeline, as ``kforensics replay`` replays it.
"""
