"""The log layer: streaming segment reading and the log-dir model (read-only)."""
