"""``--alive`` and ``--running``: the brokers that come back before the controller elects, and those that never
stopped (``replay``, ``salvage`` and ``spark``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def _ids(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    parts = [v.strip() for v in value.split(",") if v.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise click.BadParameter(f"{value!r} is not a comma-separated list of broker ids")
    return tuple(sorted({int(p) for p in parts}))


def alive_option(fn: F) -> F:
    """``--alive 1,2,3`` (default: every broker whose evidence is given) and ``--running 1,2`` (default: none)."""
    fn = click.option(
        "--running", callback=_ids, metavar="IDS",
        help="Brokers that never stopped, comma-separated (default: none): only the controllers or other brokers "
             "went down.  They stay active through the restart, neither registering again nor losing their "
             "session, so the controller can elect them the moment another leader is fenced.")(fn)
    return click.option(
        "--alive", callback=_ids, metavar="IDS",
        help="Brokers that come back before the controller elects, comma-separated (default: every broker whose "
             "evidence is given); the others rejoin later as followers.  Decides the leader the controller's "
             "rules predict when its record leaves a partition leaderless or its leader does not return.")(fn)


def _positive(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and value < 1:
        raise click.BadParameter(f"{value} is not a replica count (1 or more)")
    return value


def min_insync_replicas_option(fn: F) -> F:
    """``--min-insync-replicas N``: overrides the metadata log's config for the acknowledgement classes."""
    return click.option(
        "--min-insync-replicas", "min_insync_replicas", type=int, callback=_positive, metavar="N",
        help="The min.insync.replicas the acknowledgement classes apply to every replayed topic (default: each "
             "topic's config in the metadata log, else Kafka's default 1); the report says it was given.")(fn)
