"""The inputs ``replay`` and ``report`` share: broker log dirs, ``--broker ID=DIR`` or ``--scenario DIR``.

One declaration of the arguments (:func:`replay_input_options`) and one
resolution of them (:func:`resolve_replay_inputs`): the brokers to replay,
the scenario's events, the metadata logs, and the log dirs the consumer and
transaction analyses read, with the compiled kernels' cache checked against
every input before anything loads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def replay_input_options(fn: F) -> F:
    """``LOG_DIRS...``, ``--broker ID=DIR`` (repeatable) and ``--scenario DIR``, in this order; ``--jobs N``."""
    fn = click.option("--jobs", type=click.IntRange(min=1), default=None, metavar="N",
                      help="Read up to N brokers at once, each in a worker process, while this process reads "
                           "another; with N above 1 a fleet's JSON is also converted beside a helper process "
                           "(default: one per core; 1: one broker after another, no worker). The answer is "
                           "the same.")(fn)
    fn = click.option("--scenario", type=click.Path(exists=True, file_okay=False),
                      help="A scenario dir (broker-<id>/ dirs and scenario.json events) written by the scenario "
                           "builder.")(fn)
    fn = click.option("--broker", "broker_dirs", multiple=True, metavar="ID=DIR",
                      help="A broker's log dir with its id.")(fn)
    from .options import EVIDENCE_PATH, s3_endpoint_option

    fn = s3_endpoint_option()(fn)
    return click.argument("log_dirs", nargs=-1, type=EVIDENCE_PATH)(fn)


def zookeeper_option(fn: F) -> F:
    """``--zookeeper DIR`` (repeatable): a ZooKeeper-mode cluster's ZooKeeper data dir (symmetric with
    ``--metadata``); a data dir among LOG_DIRS is found without it."""
    from .options import EVIDENCE_PATH

    return click.option("--zookeeper", "zookeeper", multiple=True, type=EVIDENCE_PATH, metavar="DIR",
                        help="A ZooKeeper data dir (holding version-2/ with snapshot.* and log.*) of a ZooKeeper-mode "
                             "cluster: the controller's partition states name the leaders and epochs (found "
                             "automatically among LOG_DIRS); not with a KRaft metadata log.")(fn)


@dataclass
class ReplayInputs:
    """What the command line names, resolved for :func:`kforensics.replay.report.replay_all`."""

    brokers: Any  # list of log dirs, or broker id -> [log dirs]
    events: list[dict[str, Any]] | None
    metadata: list[Any]
    scenario: Any = None  # the loaded scenario, when --scenario was given

    def impact_log_dirs(self, report: Any) -> Any:
        """The log dirs holding the internal topics: a scenario's second log dir per broker, else those the
        replay read."""
        return self.scenario.log_dirs if self.scenario is not None else report.log_dirs

    @property
    def evidence(self) -> list[str]:
        """Every input location the command line names (for output refusal and the evidence list)."""
        return list(self._evidence)

    _evidence: tuple[str, ...] = ()


def resolve_replay_inputs(log_dirs: tuple[str, ...], broker_dirs: tuple[str, ...], scenario: str | None,
                          metadata: tuple[str, ...] | list[str]) -> ReplayInputs:
    """The brokers, events and metadata logs named by ``LOG_DIRS``, ``--broker`` or ``--scenario`` (click's
    usage errors when they clash), after checking that the kernels' cache is in none of them."""
    from ..log import kernels

    events = None
    metadata_files: list[str | Path] = list(metadata)
    brokers: dict[int, list[Path]] | dict[int, list[str]] | list[str]
    sc = None
    if scenario:
        from ..scenario import load_scenario

        sc = load_scenario(scenario)
        brokers, events = sc.brokers, sc.events or None
        metadata_files += sc.metadata
    elif broker_dirs:
        if log_dirs:
            raise click.UsageError("give either LOG_DIRS or --broker, not both")
        by_id: dict[int, list[str]] = {}
        for spec in broker_dirs:
            bid, _, d = spec.partition("=")
            if not bid.isdigit() or not d:
                raise click.BadParameter(f"{spec!r} is not ID=DIR", param_hint="--broker")
            if int(bid) in by_id:
                raise click.BadParameter(f"broker {bid} is given twice", param_hint="--broker")
            by_id[int(bid)] = [d]
        brokers = by_id
    else:
        if not log_dirs:
            raise click.UsageError("give broker log dirs, --broker ID=DIR or --scenario DIR")
        brokers = list(log_dirs)
    named = [*log_dirs, *(s.partition("=")[2] for s in broker_dirs), *metadata_files, *([scenario] if scenario else [])]
    # the compiled kernels' cache never in, on or above an input
    kernels.check_cache_location(named)
    return ReplayInputs(brokers, events, metadata_files, sc, tuple(dict.fromkeys(str(n) for n in named)))


def replay_document(report: Any, impact: Any, streamed: bool = False) -> dict[str, Any]:
    """The document ``replay --format json`` prints (JSON-able): the report, its impact and their findings;
    ``streamed``: its partitions left for :func:`.json_out.write_streamed` to convert one at a time."""
    from ..serialize import to_jsonable
    from .json_out import document

    doc = document("replay", report, ("partitions",) if streamed else ())
    doc["findings"] += to_jsonable(impact.findings)
    doc.update(to_jsonable(impact))
    return doc
