"""Numbers in Kafka's text files, read the way Java reads them.

``Integer.parseInt`` and ``Long.parseLong`` accept an optional sign and ASCII
digits, nothing else (no blanks, no ``_``, no exponent), and only values in
the type's range.  Python's ``int()`` accepts far more, so a checkpoint or
meta.properties that Kafka refuses would otherwise read as valid.
"""

from __future__ import annotations

import re

_JAVA_INT = re.compile(r"[+-]?[0-9]+")
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def parse_int(token: str, bounds: tuple[int, int] = INT32) -> int | None:
    """``token`` as Java's parseInt/parseLong would read it (``bounds`` INT32 or INT64), None where it throws."""
    if not _JAVA_INT.fullmatch(token) or len(token) > 21:
        return None
    value = int(token)
    return value if bounds[0] <= value <= bounds[1] else None
