"""Dump: one file's contents as typed values, file kind by file kind (the front ends render them)."""
