"""Publishing a run: the staged tables replace the previous run's in the output, or nothing is left behind.

A run writes everything under a staging directory inside the output; only
when every stage has ended are the wanted tables moved into place (each
already laid out by cluster and topic, so publishing only moves
directories).  An output directory never holds a mix of two runs.
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..log.sources import split_uri
from ..tables.scan_tables import write_table
from . import files
from .files import FileSystem
from .schemas import TABLE_SCHEMAS, TABLES


@dataclass
class Staging:
    """Where a run stages its tables: ``path`` on ``filesystem``, inside ``out``."""

    uri: str
    filesystem: FileSystem
    path: str


@contextmanager
def staged(out: str) -> Iterator[Staging]:
    """A staging directory inside ``out`` for the run's tables, removed when the run ends; a run that does not
    finish leaves nothing behind (an output it created is removed when empty)."""
    filesystem, out_path = split_uri(out)
    uri = posixpath.join(out.rstrip("/"), f".staging-{uuid.uuid4().hex[:12]}")
    staging_fs, staging_path = split_uri(uri)
    created = not files.exists(filesystem, out_path)
    try:
        yield Staging(uri, staging_fs, staging_path)
    except BaseException:
        files.rmtree(staging_fs, staging_path)
        if created and not files.listdir(filesystem, out_path):
            files.rmtree(filesystem, out_path)  # nothing is left behind by a run that did not finish
        raise
    finally:
        files.rmtree(staging_fs, staging_path)


def complete(staging: Staging) -> None:
    """Every table there, if empty, so that any reader finds its schema."""
    for name, schema in TABLE_SCHEMAS.items():
        d = f"{staging.path}/{name}"
        if not [p for p in files.listdir(staging.filesystem, d) if p.startswith("cluster=")]:
            files.mkdirs(staging.filesystem, d)
            write_table(schema.empty_table(), f"{d}/empty.parquet", staging.filesystem)


def publish(staging: Staging, out: str, wanted: tuple[str, ...]) -> None:
    """The staged tables (laid out by cluster and topic as they were written) replace the previous run's tables
    in ``out`` (nothing else: :func:`kforensics.spark.plan.check_output` refused anything else)."""
    filesystem, out_path = split_uri(out)
    for name in files.listdir(filesystem, out_path):
        if name in TABLES:
            files.rmtree(filesystem, posixpath.join(out_path, name))
    for name in wanted:
        src = posixpath.join(staging.path, name)
        if files.exists(staging.filesystem, src):
            files.move(filesystem, src, posixpath.join(out_path, name))
