"""Which inputs ``timeline`` takes as a KRaft metadata log, and the refusal of those that are not one.

A metadata log is the ``__cluster_metadata-0`` partition (``KafkaRaftManager``'s log,
``MetadataLogConfig``), its snapshots and the bootstrap file.  A segment file given on its own
is taken as one only when nothing says otherwise: a segment inside another topic's partition
dir is that topic's, and a loose segment from which not one metadata record decodes is not a
metadata log either.  Replaying such a file would turn every record of an ordinary topic into a
BAD_METADATA_FRAME finding (or, for an empty file, say "no findings"), answers about a log that
was never given.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..log.file_kinds import classify_name, parse_partition_dir_name
from ..log.listing import as_path
from ..log.log_dir import LogDir
from ..log.partition import PartitionLog
from ..log.sources import resolve


def loose_segments(inputs: list[Any]) -> list[str]:
    """The segment files among ``inputs`` that lie outside any partition dir (so nothing says which log they are).

    Raises :class:`~kforensics.errors.InputError` for a segment inside another topic's partition dir.
    """
    loose = []
    for item in inputs:
        if isinstance(item, (LogDir, PartitionLog)):
            continue  # its metadata partition, if any, is chosen by name
        p = resolve(item) if isinstance(item, str) else as_path(item)
        if not p.exists() or not p.is_file() or classify_name(p.name).kind != "log":
            continue
        parent = p.parent
        owner = parse_partition_dir_name(parent.name) if parent is not None else None
        if owner is None:
            loose.append(str(p))
        elif not owner.is_metadata_log:
            raise InputError(f"{p} is a segment of partition {owner.partition} of topic {owner.topic!r}, not of the "
                             "KRaft metadata log (__cluster_metadata-0): timeline replays only the metadata log "
                             "(kforensics dump reads any segment)")
    return loose


def refuse_if_no_metadata(loose: list[str], inputs_count: int, records: int) -> None:
    """Refuse inputs that were only loose segments none of whose records decoded as metadata records."""
    if loose and len(loose) == inputs_count and records == 0:
        raise InputError(f"{', '.join(loose)}: not a KRaft metadata log (not one metadata record decodes from it, "
                         "and it is not in a __cluster_metadata-0 dir); timeline replays only the metadata log")
