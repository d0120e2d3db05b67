"""The JSON the commands print: one serializer, a schema version and the tool's name; always valid UTF-8."""

from __future__ import annotations

import json
import re
import sys
from typing import Any, TextIO

from .. import __version__
from ..serialize import to_jsonable

#: version of each command's published JSON Schema (docs/schemas/<command>.schema.json)
SCHEMA_VERSIONS = {"scan": 3, "replay": 3, "timeline": 2, "dump": 2, "spark": 1}

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(m: re.Match[str]) -> str:
    cp = ord(m.group())
    # an undecodable byte of a file name (surrogateescape) as the text \xNN, as the Parquet tables show it
    return f"\\\\x{cp - 0xDC00:02x}" if 0xDC80 <= cp <= 0xDCFF else f"\\\\u{cp:04x}"


def dumps(obj: Any) -> str:
    """``obj`` (already JSON-able) as one line of JSON that encodes as UTF-8 whatever the evidence's names hold."""
    text = json.dumps(obj, ensure_ascii=False)
    return _SURROGATE.sub(_escape_surrogate, text) if _SURROGATE.search(text) else text


def document(command: str, result: Any) -> dict[str, Any]:
    doc = to_jsonable(result)
    return {"schema_version": SCHEMA_VERSIONS[command], "tool": {"name": "kforensics", "version": __version__},
            **doc}


def write_document(command: str, result: Any, out: TextIO | None = None) -> None:
    (out or sys.stdout).write(dumps(document(command, result)) + "\n")
