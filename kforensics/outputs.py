"""Where front ends may write: never inside, onto or above an input (evidence discipline for outputs).

An output equal to an input would overwrite it; inside it, it would add files
to the evidence; above it, ``--overwrite`` would delete it.  Local paths
(relative or absolute, ``file://`` URIs included) are compared after
resolving ``..`` and symlinks; remote URIs by scheme, authority and
normalised path, where schemes that name one store are one scheme
(``s3``/``s3a``/``s3n``, ``gs``/``gcs``) and a URI without an authority
(``hdfs:///x``, the default namenode) may be any host of its scheme; a path
inside an archive by the archive itself.  When in doubt, the output is
refused.  Every front end that writes (``scan --out``, ``spark --out``) calls
:func:`refuse_output_in_evidence` before it creates anything.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable

from . import errors

# an output location that would write into, onto or above evidence (a usage error: exit 2)
OutputRefused = errors.OutputRefused


#: schemes that address the same store
_SAME_STORE = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfss": "abfs", "wasbs": "wasb"}


def _norm(location: object) -> tuple[str, str, str]:
    """(scheme, authority, normalised path) of a local path, a URI, or an archive/remote path object.

    A local path has the scheme ``""`` and its real path (symlinks and ``..`` resolved, relative to the
    working directory).
    """
    text = os.fspath(location) if isinstance(location, os.PathLike) else str(location)
    if "!/" in text:  # a path inside an archive: the archive file is the evidence
        text = text.split("!/", 1)[0]
    scheme, sep, rest = text.partition("://")
    if sep and scheme.lower() != "file" and "/" not in scheme:
        host, _, path = rest.partition("/")
        scheme = scheme.lower()
        return _SAME_STORE.get(scheme, scheme), host.lower(), posixpath.normpath("/" + path)
    if sep:  # file://PATH: PATH, as the writers read it (``kforensics.log.sources.split_uri``)
        text = rest
    return "", "", os.path.realpath(text)


def relation(output: object, evidence: object) -> str | None:
    """How an output location relates to an evidence location: "equal", "inside", "above" or None."""
    (so, ho, po), (se, he, pe) = _norm(output), _norm(evidence)
    if so != se or (ho and he and ho != he):
        return None
    if po == pe:
        return "equal"
    sep = "/" if so else os.sep
    if po.startswith(pe.rstrip(sep) + sep):
        return "inside"
    if pe.startswith(po.rstrip(sep) + sep):
        return "above"
    return None


def refuse_output_in_evidence(output: object, inputs: Iterable[object]) -> None:
    """Raise :class:`OutputRefused` when ``output`` is an input, inside one, or above one."""
    for ev in inputs:
        rel = relation(output, ev)
        if rel is not None:
            what = {"equal": "is", "inside": "is inside", "above": "contains"}[rel]
            raise OutputRefused(f"{output} {what} the evidence {ev}; write elsewhere (nothing is ever written "
                                "inside, onto or above evidence)")
