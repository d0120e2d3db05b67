"""Numbers in Kafka's text files, read the way Java reads them.

``Integer.parseInt`` and ``Long.parseLong`` accept an optional sign and
decimal digits, nothing else (no blanks, no ``_``, no exponent), and only
values in the type's range.  Their digits are ``Character.digit``'s: any
Unicode decimal digit of the Basic Multilingual Plane (``٣``, ``４``; one
beyond it, such as ``𝟏``, is two UTF-16 surrogates to Java, no digit), and
any number of leading zeros.
Python's ``int()`` accepts far more (blanks, ``_``), and a few thousand
digits make it raise, so a checkpoint or meta.properties that Kafka refuses
would read as valid, and one Kafka reads could look refused.
"""

from __future__ import annotations

import unicodedata

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def parse_int(token: str, bounds: tuple[int, int] = INT32) -> int | None:
    """``token`` as Java's parseInt/parseLong would read it (``bounds`` INT32 or INT64), None where it throws."""
    if len(token) < 10 and token.isascii() and token.isdigit():
        return int(token)  # the common case: a few ASCII digits, within every bound
    if not token:
        return None
    negative = token[0] == "-"
    body = token[1:] if token[0] in "+-" else token
    if not body or not body.isdecimal():
        return None
    if not body.isascii():
        if any(c > "\uffff" for c in body):
            return None  # Java reads a string as UTF-16 chars: a digit beyond the BMP is two surrogates, no digit
        body = "".join(str(unicodedata.decimal(c)) for c in body)
    body = body.lstrip("0") or "0"
    if len(body) > 20:  # past any long: never converted, whatever its length
        return None
    value = -int(body) if negative else int(body)
    return value if bounds[0] <= value <= bounds[1] else None
