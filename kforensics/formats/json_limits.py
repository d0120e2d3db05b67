"""Reading the small JSON files Kafka writes (``quorum-state``, ``.kafka_cleanshutdown``) with limits.

Evidence may be planted: a file of ten thousand nested brackets or a number
of a million digits must yield a finding, not a RecursionError or minutes of
conversion.  Nesting is measured before parsing and numbers are parsed only
within Java's ``long`` range, which is all Kafka's own reader accepts; a
float too large for a double (``1e999``) is refused rather than read as an
infinity that no JSON output could carry.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .java_text import INT64, parse_int

MAX_DEPTH = 32


def _depth(text: str) -> int:
    depth = top = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            top = max(top, depth)
        elif ch in "]}":
            depth -= 1
    return top


def _int(token: str) -> int:
    value = parse_int(token, INT64)
    if value is None:
        raise ValueError(f"number {token[:24]} is out of range for a Java long")
    return value


def _float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise ValueError(f"number {token[:24]} is out of range for a double")
    return value


def loads(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` with a nesting limit and Java-long integers; raises ``ValueError`` (never anything else)."""
    depth = _depth(text)
    if depth > max_depth:
        raise ValueError(f"JSON nested {depth} deep (more than {max_depth})")
    try:
        return json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_refuse_constant)
    except RecursionError:  # pragma: no cover - guarded by the depth check
        raise ValueError("JSON nested too deeply") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
