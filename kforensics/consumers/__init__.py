"""Consumer groups against the evidence: committed offsets, and what a replay does to the groups.

* :mod:`.committed_offsets`: the committed offset per group and partition, from ``__consumer_offsets``;
* :mod:`.fetch_position`: what a consumer does at a committed position (OFFSET_OUT_OF_RANGE, KIP-320 validation);
* :mod:`.impact`: per replayed partition, each group that consumed records that are gone and what it does next;
* :mod:`.read_committed`: transactions whose markers the replay loses (read_committed consumers saw them end).
"""
