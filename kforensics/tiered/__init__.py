"""Tiered storage (KIP-405): the remote segments ``__remote_log_metadata`` records, joined with the local logs.

* :mod:`.metadata_partition` — which ``__remote_log_metadata`` partition a topic partition's records go to;
* :mod:`.remote_segments` — the records folded per topic partition as ``RemoteLogMetadataCache`` folds them;
* :mod:`.coverage` — a tiered partition's log start, local log start and remote coverage (``scan``);
* :mod:`.lineage` — which remote segments a leader's epoch lineage reaches, and what cleanup does with the rest;
* :mod:`.tier_state` — a follower below the leader's local log start (``TierStateMachine``) and the remote
  segments an election leaves outside the lineage (``replay``).

The rules and their sources: docs/tiered-storage.md.
"""
