"""One log segment (``LogSegment``): the ``.log`` and its indexes, keyed by the base offset in their names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .file_kinds import FileKind
from .side_files import SideFile, read_side_file

if TYPE_CHECKING:
    from .segment_reader import SegmentReader


@dataclass
class LogSegment:
    """The files of one segment; any of them may be missing."""

    base_offset: int
    log: Any = None  # path of the .log
    offset_index: Any = None
    time_index: Any = None
    txn_index: Any = None
    leftovers: list[tuple[Any, FileKind]] = field(default_factory=list)

    def reader(self, **kw: Any) -> SegmentReader:
        """A streaming reader over the ``.log`` (see :class:`~kforensics.log.segment_reader.SegmentReader`)."""
        from .segment_reader import SegmentReader

        return SegmentReader(self.log, **kw)

    def read_offset_index(self) -> SideFile | None:
        return None if self.offset_index is None else read_side_file(self.offset_index, "offset_index",
                                                                     base_offset=self.base_offset)

    def read_time_index(self) -> SideFile | None:
        return None if self.time_index is None else read_side_file(self.time_index, "time_index",
                                                                   base_offset=self.base_offset)

    def read_txn_index(self) -> SideFile | None:
        return None if self.txn_index is None else read_side_file(self.txn_index, "txn_index",
                                                                  base_offset=self.base_offset)
