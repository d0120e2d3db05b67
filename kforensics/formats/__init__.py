"""File formats: pure decode/encode of every Kafka on-disk file kind.

One module per Kafka concept; each binary layout is declared once with
Construct and is the single source of truth (fast paths are derived from it).
No I/O policy lives here: functions take bytes/buffers and return values or
raise :class:`kforensics.findings.DecodeError`.
"""
