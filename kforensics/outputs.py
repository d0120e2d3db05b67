"""Where front ends may write: never inside, onto or above an input (evidence discipline for outputs).

An output equal to an input would overwrite it; inside it, it would add files
to the evidence; above it, ``--overwrite`` would delete it.  Local paths are
compared after resolving symlinks, URIs by scheme, host and normalised path,
and a path inside an archive by the archive itself.  Every front end that
writes (``scan --out``, ``spark --out``) calls :func:`refuse_output_in_evidence`
before it creates anything.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from typing import Any


class OutputRefused(ValueError):
    """An output location that would write into, onto or above evidence."""


def _norm(location: Any) -> tuple[str, str]:
    """(scheme + authority, normalised path) of a local path, a URI, or an archive/remote path object."""
    text = str(location)
    if "!/" in text:  # a path inside an archive: the archive file is the evidence
        text = text.split("!/", 1)[0]
    if "://" in text and not text.startswith("file://"):
        scheme, rest = text.split("://", 1)
        host, _, path = rest.partition("/")
        return f"{scheme}://{host}", posixpath.normpath("/" + path)
    if text.startswith("file://"):
        text = text[len("file://"):]
    return "", os.path.realpath(text)


def relation(output: Any, evidence: Any) -> str | None:
    """How an output location relates to an evidence location: "equal", "inside", "above" or None."""
    (so, po), (se, pe) = _norm(output), _norm(evidence)
    if so != se:
        return None
    if po == pe:
        return "equal"
    sep = "/" if so else os.sep
    if po.startswith(pe.rstrip(sep) + sep):
        return "inside"
    if pe.startswith(po.rstrip(sep) + sep):
        return "above"
    return None


def refuse_output_in_evidence(output: Any, inputs: Iterable[Any]) -> None:
    """Raise :class:`OutputRefused` when ``output`` is an input, inside one, or above one."""
    for ev in inputs:
        rel = relation(output, ev)
        if rel is not None:
            what = {"equal": "is", "inside": "is inside", "above": "contains"}[rel]
            raise OutputRefused(f"{output} {what} the evidence {ev}; write elsewhere (nothing is ever written "
                                "inside, onto or above evidence)")
