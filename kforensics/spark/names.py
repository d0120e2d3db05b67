"""Names the Spark job gives and carries: names on disk as hex, file-name-safe part names, missing values.

Spark strings are UTF-8, while a name on disk may hold bytes that are not
(held by Python as surrogates): such names travel as hex between the driver
and the executors.  Every file a task writes is named by a *part* that is
the same for a retried attempt, so a retry replaces the failed attempt's file.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from typing import Any

import pandas as pd


def to_hex(text: str) -> str:
    """A name as it is on disk (undecodable bytes held as surrogates), losslessly as hex (Spark strings are UTF-8)."""
    if text.isascii():
        return text.encode("ascii").hex()  # most names: no surrogate to look for
    return text.encode("utf-8", "surrogateescape" if _escaped(text) else "surrogatepass").hex()


def from_hex(h: str) -> str:
    """The name :func:`to_hex` was given."""
    return bytes.fromhex(h).decode("utf-8", "surrogateescape")


def _escaped(text: str) -> bool:
    return any(0xDC80 <= ord(c) <= 0xDCFF for c in text) and not any(
        0xD800 <= ord(c) <= 0xDFFF and not 0xDC80 <= ord(c) <= 0xDCFF for c in text)


#: what :func:`safe` replaces
_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]")


def safe(text: str, limit: int = 100) -> str:
    """A file-name-safe form of ``text`` (distinct texts stay distinct: a changed one carries a hash)."""
    s = _UNSAFE.sub("_", text)
    if s == text and len(s) <= limit:
        return s
    return f"{s[:limit]}~{hashlib.sha1(text.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


def task_part(snapshot_id: str, dir_name: str) -> str:
    """The part name of one partition dir's table files (never hidden: readers skip names starting . or _)."""
    return f"s-{safe(snapshot_id)}--{safe(dir_name)}"


def snapshot_part(snapshot_id: str) -> str:
    """The part name of the files the driver writes about one snapshot (its root files, committed offsets)."""
    return f"d-{safe(snapshot_id)}"


def group_part(cluster: str | None, topic: str, partition: int | None) -> str:
    """The part name of one partition group's replay files."""
    key = json.dumps([cluster, topic, partition], default=str)
    return "g-" + hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def spark_task_part(prefix: str) -> str:
    """A part name for this Spark task's files: the same for a retried attempt (it replaces the failed one's)."""
    try:
        from pyspark import TaskContext

        tc = TaskContext.get()
    except ImportError:  # pragma: no cover - the function called outside Spark
        tc = None
    return f"{prefix}-{tc.partitionId():05d}" if tc is not None else f"{prefix}-{uuid.uuid4().hex[:12]}"


def present(v: Any) -> Any:
    """``v``, or None for a missing value (None, NaN, NA); numpy scalars become Python values.

    (Values come out of pandas frames and Spark rows: anything a cell holds.)
    """
    if v is None or isinstance(v, (str, bytes, dict, list, tuple)) or hasattr(v, "__len__"):
        return v
    if pd.isna(v):
        return None
    return v.item() if hasattr(v, "item") else v


def optional_int(v: Any) -> int | None:
    """A cell as an int, or None when it is missing."""
    v = present(v)
    return None if v is None else int(v)


def relative(root: object, path: object) -> str:
    """``path`` below ``root`` (both as their text), or ``path`` whole when it is not below it."""
    s, r = str(path), str(root)
    return s[len(r):].lstrip("/") if s.startswith(r) else s
