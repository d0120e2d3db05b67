"""``kforensics replay``: what truncation does on each follower, and what it costs consumers and transactions."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ..consumers.replay_impact import ReplayImpact, replay_impact  # noqa: F401 (the analysis; re-exported)
from ..errors import ExitCode
from .options import (
    format_option,
    kafka_version_option,
    metadata_option,
    min_severity_option,
)
from .replay_inputs import replay_input_options, resolve_replay_inputs, zookeeper_option
from .restart_options import alive_option, min_insync_replicas_option

if TYPE_CHECKING:
    from ..epoch.versions import KafkaVersion
    from ..severity import Severity


@click.command()
@replay_input_options
@click.option("--topic", help="Only this topic.")
@click.option("--partition", type=int, help="Only this partition.")
@kafka_version_option("Truncation rules to replay: 0.10, 0.11, 2.0.0, 2.0.1, 2.8, ... latest.")
@click.option("--leader", type=int, help="Broker to elect (default: the one the controller will choose, from its "
                                         "metadata log; without one, guessed: highest latest epoch, then longest "
                                         "log).")
@alive_option
@min_insync_replicas_option
@click.option("--what-if", is_flag=True, help="Replay with every replica as leader and compare what each loses.")
@click.option("--digests", is_flag=True,
              help="List key/value SHA-256 of every lost or forked record (reads them back).")
@metadata_option("A KRaft metadata log (dir or files) to take leaders and epochs from; found automatically "
                 "inside the brokers' log dirs.")
@zookeeper_option
@format_option()
@click.option("-v", "--verbose", is_flag=True,
              help="Text output: every partition in detail and every finding (by default partitions with nothing to "
                   "report, every replica OK and nothing truncated, are one line per topic, and findings below "
                   "medium are counted per code).")
@min_severity_option()
def replay(log_dirs: tuple[str, ...], broker_dirs: tuple[str, ...], scenario: str | None, topic: str | None,
           partition: int | None, kafka_version: KafkaVersion, leader: int | None, alive: tuple[int, ...] | None,
           running: tuple[int, ...] | None, restart_order: tuple[int, ...] | None, min_insync_replicas: int | None,
           what_if: bool, digests: bool,
           metadata: tuple[str, ...], zookeeper: tuple[str, ...], fmt: str, verbose: bool,
           min_severity: Severity | None, jobs: int | None) -> None:
    """Replay leader-epoch truncation across brokers: divergence, loss and fork verdicts.

    Each LOG_DIR is one broker's log dir (broker id from meta.properties), a
    directory or .tar/.tgz archive holding one broker's log dirs, or use
    --broker ID=DIR.  Where the brokers' log dirs hold __consumer_offsets and
    __transaction_state, the replay also says what it does to consumer groups
    (records they consumed that are gone; reset, skip or re-read) and to
    transactions (markers lost while the new leader keeps the data).

    \b
    Examples:
      kforensics replay /snap/b1 /snap/b2 /snap/b3
      kforensics replay --broker 1=/snap/b1 --broker 2=/snap/b2 --kafka-version 2.0.0 --what-if
      kforensics replay --scenario fixtures/scenarios/kip101-s2-two-hard-failures --kafka-version 0.10
      kforensics replay /snap/b1 /snap/b2 /snap/b3 --zookeeper /snap/zk --restart-order 3,1,2 --kafka-version 2.8
    """
    from ..replay.report import replay_all
    from ..verdict_rules import fails_replay
    from .replay_text import render_replay_text

    inputs = resolve_replay_inputs(log_dirs, broker_dirs, scenario, metadata)
    # the library's refusals (InputError, UsageError) are exit 2 with their sentence; anything else is a bug
    report = replay_all(inputs.brokers, kafka_version=kafka_version, topic=topic, partition=partition,
                        leader=leader, what_if=what_if, events=inputs.events, digests=digests,
                        metadata=inputs.metadata, alive=alive,
                        running=running or (), min_insync_replicas=min_insync_replicas, order=restart_order,
                        zookeeper=list(zookeeper), jobs=jobs)
    # a scenario's internal topics are in a second log dir per broker; otherwise the log dirs the replay read
    impact = replay_impact(report, inputs.impact_log_dirs(report))
    if fmt == "json":
        from .json_out import write_streamed
        from .replay_inputs import replay_document

        write_streamed(replay_document(report, impact, streamed=True), sys.stdout, jobs=jobs)
    else:
        render_replay_text(report, sys.stdout, digests=digests, impact=impact, verbose=verbose,
                           min_severity=min_severity)
    hit = fails_replay((v.code for p in report.partitions for r in p.replicas for v in r.verdicts),
                       (f.code for f in impact.findings))
    sys.exit(ExitCode.FINDINGS if hit else ExitCode.CLEAN)

