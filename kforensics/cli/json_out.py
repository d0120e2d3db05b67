"""The JSON documents the commands print: one serializer, a schema version and the tool's name."""

from __future__ import annotations

import json
import sys
from typing import Any

from .. import __version__
from ..serialize import to_jsonable

#: version of each command's published JSON Schema (docs/schemas/<command>.schema.json)
SCHEMA_VERSIONS = {"scan": 3, "replay": 3, "timeline": 2, "dump": 2, "spark": 1}


def document(command: str, result: Any) -> dict:
    doc = to_jsonable(result)
    return {"schema_version": SCHEMA_VERSIONS[command], "tool": {"name": "kforensics", "version": __version__},
            **doc}


def write_document(command: str, result: Any, out=None) -> None:
    (out or sys.stdout).write(json.dumps(document(command, result), ensure_ascii=False) + "\n")
