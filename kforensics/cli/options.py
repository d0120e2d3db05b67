"""Options every command shares, parsed once at the edge: ``--kafka-version``, ``--format``, ``--fail-on``,
``--metadata``.

Each option is one click parameter type (what a value may be, parsed into
the library's type) and one decorator (its name, default and help), so the
commands declare them alike and the library never sees a string where it
takes a parsed value: a :class:`~kforensics.epoch.versions.KafkaVersion`, a
:class:`~kforensics.severity.Severity`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..epoch.versions import KafkaVersion, parse_kafka_version
from ..errors import UsageError
from ..severity import Severity

F = TypeVar("F", bound=Callable[..., Any])

#: the output formats of the commands' standard output
FORMATS = ("text", "json")


class KafkaVersionType(click.ParamType[KafkaVersion]):
    """A Kafka release (``0.10``, ``2.0.1``, ``3.9``, ``latest``) parsed into a :class:`KafkaVersion`."""

    name = "version"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> KafkaVersion:
        if isinstance(value, KafkaVersion):
            return value
        try:
            return parse_kafka_version(value)
        except UsageError as e:
            self.fail(str(e), param, ctx)


class SeverityType(click.ParamType[Severity]):
    """A severity name (``info`` … ``critical``) parsed into a :class:`Severity`."""

    name = "severity"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Severity:
        if isinstance(value, Severity):
            return value
        try:
            return Severity.parse(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


KAFKA_VERSION = KafkaVersionType()
SEVERITY = SeverityType()


def kafka_version_option(help_text: str = "Kafka behaviour to model (epoch cache and truncation rules)."
                         ) -> Callable[[F], F]:
    """``--kafka-version``: the rules of which Kafka release to model (a :class:`KafkaVersion`)."""
    return click.option("--kafka-version", type=KAFKA_VERSION, default="latest", show_default=True, help=help_text)


def format_option(help_text: str | None = None) -> Callable[[F], F]:
    """``--format text|json`` (as ``fmt``)."""
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
                        help=help_text)


def fail_on_option(help_text: str = "Exit 1 when a finding is at or above this severity.") -> Callable[[F], F]:
    """``--fail-on SEVERITY`` (a :class:`Severity`, default high)."""
    return click.option("--fail-on", type=SEVERITY, default="high", show_default=True, help=help_text)


def min_severity_option() -> Callable[[F], F]:
    """``--min-severity SEVERITY``: text output lists only findings at or above it (the summary counts all)."""
    return click.option("--min-severity", type=SEVERITY, default=None,
                        help="Text output: list only findings at or above this severity (default: medium; the rest "
                             "are counted per code; the summary counts all).")


def metadata_option(help_text: str, metavar: str = "PATH", local_only: bool = True) -> Callable[[F], F]:
    """``--metadata`` (repeatable): KRaft metadata logs to take leaders and epochs from."""
    kind: click.ParamType[str] = click.Path(exists=True) if local_only else click.STRING
    return click.option("--metadata", "metadata", multiple=True, type=kind, metavar=metavar, help=help_text)


class EvidencePathType(click.ParamType[str]):
    """An evidence location: a local path that exists (a directory or file as the command takes), or an
    ``s3://bucket/prefix`` URI whose bucket and key or prefix the store says are there (one request).

    A store URI that is missing, refused or unreachable is a usage error (exit 2) naming why, before anything
    is read; the bytes then fetched from the store are reported on standard error when the command ends.
    """

    name = "path"

    def __init__(self, dir_okay: bool = True, file_okay: bool = True):
        self.local = click.Path(exists=True, dir_okay=dir_okay, file_okay=file_okay)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from ..log.object_store import is_store_uri

        if not is_store_uri(value):
            return str(self.local.convert(value, param, ctx))
        from ..log.object_store import check_exists

        try:
            check_exists(value)
        except UsageError as e:
            self.fail(str(e), param, ctx)
        _report_fetched_at_exit(ctx)
        return str(value)


EVIDENCE_PATH = EvidencePathType()
EVIDENCE_FILE = EvidencePathType(dir_okay=False)
EVIDENCE_DIR = EvidencePathType(file_okay=False)

def _report_fetched_at_exit(ctx: click.Context | None) -> None:
    """Once per command: say on standard error what was fetched from the store when the command ends (its standard
    output stays what a local run prints)."""
    root = ctx.find_root() if ctx is not None else None
    if root is None or root.meta.get("kforensics.store_report"):
        return
    root.meta["kforensics.store_report"] = True

    def report() -> None:
        from ..log.object_store import SETTINGS, endpoint

        s = SETTINGS.summary()
        if s["objects_read"]:
            click.echo(f"object store {endpoint() or 'AWS S3'}: {s['bytes_fetched']} bytes fetched in {s['reads']} "
                       f"reads of {s['objects_read']} objects", err=True)

    root.call_on_close(report)


def s3_endpoint_option() -> Callable[[F], F]:
    """``--s3-endpoint URL``: the endpoint of an S3-compatible store for ``s3://`` evidence (read before the paths)."""

    def set_endpoint(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        from ..log.object_store import configure

        try:
            configure(value)
        except UsageError as e:
            raise click.BadParameter(str(e), ctx, param) from None

    return click.option("--s3-endpoint", metavar="URL", is_eager=True, expose_value=False, callback=set_endpoint,
                        help="Endpoint of an S3-compatible store (MinIO, Ceph, s3proxy) for s3://bucket/prefix "
                             "evidence; default: $KFORENSICS_S3_ENDPOINT, else $AWS_ENDPOINT_URL_S3 / "
                             "$AWS_ENDPOINT_URL, else AWS.  Credentials come from the AWS environment variables or "
                             "profile files, never from the command line.")
