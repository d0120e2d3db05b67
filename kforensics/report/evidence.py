"""The evidence list: every input file with its size and SHA-256, and what could not be read (chain of custody).

Local inputs only are walked (directories recursively, archives as the one
file they are); a path that is not a regular file is listed and never
opened (a FIFO would block, a device would read forever); a file that
cannot be opened or read is listed with the reason.  Paths are shown as
they were given, so the list is the same wherever the report is made.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass

PIECE = 1 << 20


@dataclass
class EvidenceFile:
    """One input file: its path as given, size and SHA-256, or why it was not read."""

    path: str
    size: int | None
    sha256: str | None
    problem: str | None = None


def evidence_files(inputs: list[str]) -> list[EvidenceFile]:
    """Every file under ``inputs`` (paths as given), sorted by path; remote URIs are listed unread."""
    seen: dict[str, EvidenceFile] = {}
    for top in inputs:
        if "://" in top and not top.startswith("file://"):
            seen.setdefault(top, EvidenceFile(top, None, None, "remote: not hashed by the report"))
            continue
        for path in _walk(top.removeprefix("file://")):
            if path not in seen:
                seen[path] = _one(path)
    return [seen[k] for k in sorted(seen)]


def _walk(top: str) -> list[str]:
    try:
        st = os.lstat(top)
    except OSError:
        return [top]
    if not stat.S_ISDIR(st.st_mode):
        return [top]
    out: list[str] = []
    unlisted = out.append  # a directory os.walk cannot list is listed itself (its problem shown by _one)
    for root, dirs, files in os.walk(top, onerror=lambda e: unlisted(str(e.filename))):
        dirs.sort()
        out += [os.path.join(root, f) for f in sorted(files)]
        # a symlink to a directory is listed, not followed (os.walk does not follow; it shows up in dirs)
        out += [os.path.join(root, d) for d in dirs if os.path.islink(os.path.join(root, d))]
    return out


def _one(path: str) -> EvidenceFile:
    try:
        st = os.lstat(path)
    except OSError as e:
        return EvidenceFile(path, None, None, f"cannot be listed: {e.strerror or e}")
    if stat.S_ISDIR(st.st_mode):
        return EvidenceFile(path, None, None, "directory that cannot be listed")
    if not stat.S_ISREG(st.st_mode):
        kind = "symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        return EvidenceFile(path, st.st_size, None, f"{kind}: not read")
    from ..log.sources import open_binary

    h = hashlib.sha256()
    try:
        # the log layer's read-only opener: O_NONBLOCK and a check that it is still a regular file once open
        with open_binary(path) as fh:
            while chunk := fh.read(PIECE):
                h.update(chunk)
    except OSError as e:
        return EvidenceFile(path, st.st_size, None, f"cannot be read: {e.strerror or e}")
    return EvidenceFile(path, st.st_size, h.hexdigest())
