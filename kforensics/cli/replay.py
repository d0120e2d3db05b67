"""``kforensics replay``: what truncation does on each follower, and what it costs consumers and transactions."""

from __future__ import annotations

import sys

import click

from ..consumers.replay_impact import ReplayImpact, replay_impact  # noqa: F401 (the analysis; re-exported)
from ..errors import ExitCode
from .options import format_option, kafka_version_option, metadata_option, min_severity_option


@click.command()
@click.argument("log_dirs", nargs=-1, type=click.Path(exists=True))
@click.option("--broker", "broker_dirs", multiple=True, metavar="ID=DIR", help="A broker's log dir with its id.")
@click.option("--scenario", type=click.Path(exists=True, file_okay=False),
              help="A scenario dir (broker-<id>/ dirs and scenario.json events) written by the scenario builder.")
@click.option("--topic", help="Only this topic.")
@click.option("--partition", type=int, help="Only this partition.")
@kafka_version_option("Truncation rules to replay: 0.10, 0.11, 2.0.0, 2.0.1, 2.8, ... latest.")
@click.option("--leader", type=int, help="Broker to elect (default: the controller's record, else highest latest "
                                         "epoch, then longest log).")
@click.option("--what-if", is_flag=True, help="Replay with every replica as leader and compare what each loses.")
@click.option("--digests", is_flag=True, help="List key/value SHA-256 of every lost or forked record (reads them back).")
@metadata_option("A KRaft metadata log (dir or files) to take leaders and epochs from; found automatically "
                 "inside the brokers' log dirs.")
@format_option()
@click.option("-v", "--verbose", is_flag=True,
              help="Text output: every partition in detail and every finding (by default partitions with nothing to "
                   "report, every replica OK and nothing truncated, are one line per topic, and findings below "
                   "medium are counted per code).")
@min_severity_option()
def replay(log_dirs, broker_dirs, scenario, topic, partition, kafka_version, leader, what_if, digests, metadata, fmt,
           verbose, min_severity):
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
    """
    from ..log import kernels
    from ..replay.report import replay_all
    from ..verdict_rules import fails_replay
    from .replay_text import render_replay_text

    events = None
    metadata = list(metadata)
    if scenario:
        from ..scenario import load_scenario

        sc = load_scenario(scenario)
        brokers, events = sc.brokers, sc.events or None
        metadata += sc.metadata
    elif broker_dirs:
        if log_dirs:
            raise click.UsageError("give either LOG_DIRS or --broker, not both")
        brokers = {}
        for spec in broker_dirs:
            bid, _, d = spec.partition("=")
            if not bid.isdigit() or not d:
                raise click.BadParameter(f"{spec!r} is not ID=DIR", param_hint="--broker")
            if int(bid) in brokers:
                raise click.BadParameter(f"broker {bid} is given twice", param_hint="--broker")
            brokers[int(bid)] = [d]
    else:
        if not log_dirs:
            raise click.UsageError("give broker log dirs, --broker ID=DIR or --scenario DIR")
        brokers = list(log_dirs)
    # the compiled kernels' cache never in, on or above an input
    kernels.check_cache_location([*log_dirs, *(s.partition("=")[2] for s in broker_dirs), *metadata,
                                  *([scenario] if scenario else [])])
    # the library's refusals (InputError, UsageError) are exit 2 with their sentence; anything else is a bug
    report = replay_all(brokers, kafka_version=kafka_version, topic=topic, partition=partition, leader=leader,
                        what_if=what_if, events=events, digests=digests, metadata=metadata)
    # a scenario's internal topics are in a second log dir per broker; otherwise the log dirs the replay read
    impact = replay_impact(report, sc.log_dirs if scenario else report.log_dirs)
    if fmt == "json":
        from ..serialize import to_jsonable
        from .json_out import document, dumps

        doc = document("replay", report)
        doc["findings"] += to_jsonable(impact.findings)
        doc.update(to_jsonable(impact))
        sys.stdout.write(dumps(doc) + "\n")
    else:
        render_replay_text(report, sys.stdout, digests=digests, impact=impact, verbose=verbose,
                           min_severity=min_severity)
    hit = fails_replay((v.code for p in report.partitions for r in p.replicas for v in r.verdicts),
                       (f.code for f in impact.findings))
    sys.exit(ExitCode.FINDINGS if hit else ExitCode.CLEAN)

