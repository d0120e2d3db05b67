"""Scenario builder: declare brokers, elections, appends, replication, crashes and flushes; write log dirs.

Users reproduce a hypothesis as on-disk evidence and replay it:

    sb = ScenarioBuilder("my-incident", brokers=[1, 2, 3])
    sb.elect(1, epoch=0)
    sb.produce(3)                 # leader 1 appends 3 one-record batches in epoch 0
    sb.replicate(2); sb.replicate(3, up_to=2)
    sb.high_watermark(1, 3); sb.high_watermark(2, 3); sb.high_watermark(3, 2)
    sb.crash(3, keep_to=1)        # broker 3 loses what it had not flushed
    sb.then("elect", leader=2)    # replay events after the snapshot
    sb.then("follow", broker=1); sb.then("follow", broker=3)
    sb.expect("latest", {1: ["OK"], 2: ["OK"], 3: ["OK"]})
    sb.write("out/my-incident")   # broker-<id>/ log dirs + scenario.json

The snapshot is the brokers' disks at the moment replay starts; ``then``
events are what happens next (see :mod:`kforensics.replay.engine`).

Consumer groups and transactions: ``commit`` writes a group's offset commit
into its ``__consumer_offsets-N`` partition, ``produce_txn``/``end_txn`` write
transactional batches and their COMMIT/ABORT markers (transactions v1 or v2),
``transaction_state`` the coordinator's record into ``__transaction_state-N``;
``advance`` moves the producers' clock.  The internal partitions are written
on every broker (or those named), replicated and flushed (HW = log end), in
the broker's second log dir ``coordinators/broker-<id>/`` (JBOD), so that
``Scenario.brokers`` (the first log dirs) keeps one partition to replay and
``Scenario.log_dirs`` holds both; a crash or damage leaves them alone.
"""

from __future__ import annotations

from .builder import ScenarioBuilder
from .disk import DAMAGE_KINDS, INDEX_INTERVAL_BYTES, T0
from .loading import Scenario, load_scenario

__all__ = ["DAMAGE_KINDS", "INDEX_INTERVAL_BYTES", "T0", "Scenario", "ScenarioBuilder", "load_scenario"]
