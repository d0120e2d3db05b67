"""The JSON the commands print: one serializer, a schema version and the tool's name; always valid UTF-8."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO

from .. import __version__
from ..forked import helped_map, may_fork
from ..serialize import public_fields, to_jsonable

#: version of each command's published JSON Schema (docs/schemas/<command>.schema.json)
SCHEMA_VERSIONS = {"scan": 3, "replay": 3, "timeline": 2, "dump": 2, "spark": 1}

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(m: re.Match[str]) -> str:
    cp = ord(m.group())
    # an undecodable byte of a file name (surrogateescape) as the text \xNN, as the Parquet tables show it
    return f"\\\\x{cp - 0xDC00:02x}" if 0xDC80 <= cp <= 0xDCFF else f"\\\\u{cp:04x}"


#: to_jsonable made a tree of fresh lists and dicts: no cycle to look for (0.07 s of a fleet replay's 35 MB); made
#: once, as ``json.dumps`` with these options makes an encoder per call (0.04 s of 30 000 items' 0.22 s)
_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False)


def dumps(obj: Any) -> str:
    """``obj`` (already JSON-able) as one line of JSON that encodes as UTF-8 whatever the evidence's names hold."""
    text = _ENCODER.encode(obj)
    if text.isascii():
        return text  # no surrogate to look for (the search cost 0.15 s over a fleet replay's 35 MB)
    return _SURROGATE.sub(_escape_surrogate, text) if _SURROGATE.search(text) else text


class Items:
    """A list in a document that :func:`write_streamed` converts and writes an item at a time."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


def document(command: str, result: Any, streamed: tuple[str, ...] = ()) -> dict[str, Any]:
    """The command's document: its schema version, the tool, then ``result``'s fields (or its ``__json__``); those
    named in ``streamed`` are left as :class:`Items` for :func:`write_streamed` (a fleet's partitions: never all
    JSON-able at once)."""
    if streamed:
        own = getattr(result, "__json__", None)
        fields = own() if own is not None else {n: getattr(result, n) for n in public_fields(result)}
        doc = {n: Items(v) if n in streamed else to_jsonable(v) for n, v in fields.items()}
    else:
        doc = to_jsonable(result)
    return {"schema_version": SCHEMA_VERSIONS[command], "tool": {"name": "kforensics", "version": __version__},
            **doc}


def write_streamed(doc: dict[str, Any], out: TextIO, jobs: int | None = None) -> None:
    """``doc`` and a newline, the same bytes as ``dumps(doc)`` would give, with each :class:`Items` value
    converted and written an item at a time: neither the whole document's values nor its text are held at once
    (a replay of 30 000 partitions: 35 MB of JSON).  ``jobs`` (None: one per core): whether a forked helper may
    convert a fleet's items beside this process (:func:`_texts`)."""
    out.write("{")
    for i, (key, value) in enumerate(doc.items()):
        out.write((", " if i else "") + dumps(key) + ": ")
        if isinstance(value, Items):
            out.write("[")
            for j, text in enumerate(_texts(value.items, jobs)):
                out.write((", " if j else "") + text)
            out.write("]")
        else:
            out.write(dumps(value))
    out.write("}\n")


#: a streamed list of this many items or more is converted by this process and a forked helper in turn, runs of
#: :data:`HELPED_RUN` items each (a replay of 3 x 10 000 partitions: 1.0 s of JSON, 0.6 s so)
HELPED_FROM = 2_000
HELPED_RUN = 500


def _text(item: Any) -> str:
    return dumps(to_jsonable(item))


def _texts(items: Iterable[Any], jobs: int | None) -> Iterator[str]:
    """Each item's JSON text, in order; a fleet's list (:data:`HELPED_FROM`) converted beside a forked helper where
    ``jobs`` allows one (:func:`kforensics.forked.helped_map`: the same texts)."""
    if isinstance(items, Sequence) and len(items) >= HELPED_FROM and may_fork(jobs):
        return helped_map(_text, items, HELPED_RUN)
    return map(_text, items)


def write_document(command: str, result: Any, out: TextIO | None = None) -> None:
    (out or sys.stdout).write(dumps(document(command, result)) + "\n")
