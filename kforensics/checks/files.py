"""Files in a log dir or partition dir that are not what Kafka keeps there: leftovers, unknown, not regular."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..findings import Finding, finding
from ..log.file_kinds import FileKind

_FATE = {
    ".deleted": "deletes it",
    ".cleaned": "deletes it",
    ".swap": "renames it into place or deletes it",
    ".tmp": "ignores it (an interrupted checkpoint write)",
    ".part": "deletes it (a snapshot that was never completed)",
}


def check_listing(*, leftovers: list[tuple[Any, FileKind]], unknown: list[Any],
                  not_regular: list[tuple[Any, str]], where: str,
                  out_of_range: Sequence[tuple[Any, FileKind]] = ()) -> list[Finding]:
    """Findings for what a directory listing holds besides Kafka's own files (``where``: "log dir" or "partition")."""
    out = [finding("LEFTOVER_FILE", f"{k.leftover} file left by an interrupted operation; Kafka "
                                    f"{_FATE.get(k.leftover or '', 'leaves it')} at startup",
                   file=p, leftover=k.leftover, kind=k.kind) for p, k in leftovers]
    out += [finding("UNKNOWN_FILE", f"a file or directory Kafka does not keep in a {where}", file=p) for p in unknown]
    out += [finding("NOT_A_REGULAR_FILE", f"{what}: not opened", file=p, what=what) for p, what in not_regular]
    out += [out_of_range_name(p, k) for p, k in out_of_range]
    return out


def out_of_range_name(path: Any, kind: FileKind) -> Finding:
    """A segment, index or snapshot file whose name's offset (a long) or epoch (an int) Kafka cannot parse."""
    what = (f"offset {kind.base_offset}, beyond a long" if (kind.base_offset or 0) >= 2**63 else
            f"epoch {kind.epoch}, beyond an int")
    return finding("OFFSET_NAME_OUT_OF_RANGE", f"the {kind.kind} file's name holds {what}: Kafka cannot load the "
                   "log; not read", file=path, kind=kind.kind, name_offset=kind.base_offset, name_epoch=kind.epoch)
