"""``--alive``, ``--running`` and ``--restart-order``: the brokers that come back before the controller elects, those
that never stopped, and the order they are started in (``replay``, ``salvage`` and ``spark``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def _listed(value: str) -> tuple[int, ...]:
    """The broker ids of ``1,2,3``, in the order given."""
    parts = [v.strip() for v in value.split(",") if v.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise click.BadParameter(f"{value!r} is not a comma-separated list of broker ids")
    return tuple(int(p) for p in parts)


def _ids(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...] | None:
    return None if value is None else tuple(sorted(set(_listed(value))))


def _order(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    ids = _listed(value)
    if len(set(ids)) != len(ids):
        raise click.BadParameter(f"{value!r} names a broker twice")
    return ids  # in the order given: that is the point


def alive_option(fn: F) -> F:
    """``--alive 1,2,3`` (default: every broker whose evidence is given), ``--running 1,2`` (default: none) and
    ``--restart-order 2,1,3`` (default: every order tried)."""
    fn = click.option(
        "--restart-order", "restart_order", callback=_order, metavar="IDS",
        help="The order the brokers are started in, comma-separated: the controller first, then each broker once "
             "the one before is unfenced (brokers not named come after, in id order).  The controller's rules "
             "then settle each leader; without it every order is tried, the likeliest followed and the others' "
             "leaders listed.")(fn)
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
