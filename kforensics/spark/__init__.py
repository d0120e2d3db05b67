"""The multi-broker pipeline on Spark: the same scan and replay code, distributed.

Spark only distributes: the job (:mod:`.job`) runs its stages in order, each
calling the analysis the command line calls: :mod:`.plan` (the driver checks
the output and the inputs, and reads each log dir's root files), :mod:`.scan_task`
(executors scan partition dirs with :func:`kforensics.scan.partition.scan_partition`
and write the same tables as ``kforensics scan --out``), :mod:`.broker_checks`
(``scan``'s checks over a whole broker), :mod:`.impact` (committed offsets
and coordinator copies), :mod:`.replay` (each (cluster, topic, partition)
group replayed by :func:`kforensics.replay.group.replay_group` with its
cluster's KRaft timeline, as ``kforensics replay`` replays it), :mod:`.summary`
and :mod:`.publish`.  Apart: the Spark session (:mod:`.session`), filesystem
helpers (:mod:`.files`), tables and rows (:mod:`.schemas`), names (:mod:`.names`),
the replicas' windows (:mod:`.window`) and batch files (:mod:`.batch_files`).
"""
