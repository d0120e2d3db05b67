"""Salvage: the records a replay says a replica loses and no surviving replica keeps, read back from the evidence.

``records.py`` finds them (the replay's loss verdicts, read back from the
replicas' segments and matched by content against the new leader's log),
``export.py`` writes them (Parquet, JSON lines in kcat's ``-J`` envelope),
``produce.py`` puts them back with an idempotent producer and a ledger of
what was acknowledged.  Read-only on the evidence, typed results, no
rendering.
"""
