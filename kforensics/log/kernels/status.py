"""The status codes the kernels return, and what a record-decoding status means in words.

The generated source embeds these numbers (:mod:`.codegen`) and the readers
compare against them (``log/segment_reader.py``, ``log/records.py``), so
both sides take them from here.
"""

from __future__ import annotations

# walk statuses
ST_NEED_MORE = 0  # the next entry is not wholly in the buffer (or the buffer is full of rows)
ST_SIZE_TOO_SMALL = 1  # size field below the v0 minimum: Kafka throws here
ST_BAD_MAGIC = 2
ST_TOO_SMALL_FOR_MAGIC = 3  # size below the minimum for this magic
ST_FULL = 4  # output table full

# resync statuses
RESYNC_FOUND = 0  # a whole entry whose CRC matches
RESYNC_NEED_MORE = 1  # a plausible entry that the buffer does not hold whole
RESYNC_UNCHECKED = 2  # a plausible whole entry whose CRC the kernel could not compute

# record decode statuses
RS_OK = 0
RS_TRUNCATED = 1  # a field runs past the end of the records section
RS_BAD_VARINT = 2
RS_NEGATIVE_LENGTH = 3
RS_LENGTH_MISMATCH = 4  # bytes consumed differ from the record's length prefix
RS_TRAILING_BYTES = 5  # bytes left after recordsCount records
RS_TOO_FEW = 6  # section ended before recordsCount records
RS_NEGATIVE_COUNT = 7
RS_FULL = 8  # the output table is full: call again from where it stopped

RECORD_STATUS_TEXT = {
    RS_TRUNCATED: "record field runs past the end of the batch",
    RS_BAD_VARINT: "varint longer than Kafka allows",
    RS_NEGATIVE_LENGTH: "negative length field",
    RS_LENGTH_MISMATCH: "record length prefix does not match its fields",
    RS_TRAILING_BYTES: "bytes left after the declared number of records (Incorrect declared batch size)",
    RS_TOO_FEW: "records section ends before the declared number of records",
    RS_NEGATIVE_COUNT: "negative records count",
}
