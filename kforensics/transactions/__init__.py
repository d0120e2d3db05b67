"""Transactions on a partition's log: open transactions, markers, the last stable offset, aborted ranges.

* :mod:`.model`: the typed results;
* :mod:`.producer_state`: the streaming tracker over batch headers (what
  ``ProducerStateManager`` keeps of transactions);
* :mod:`.txn_index`: the log's aborted transactions against the ``.txnindex``;
* :mod:`.coordinator`: the transaction coordinator's view (``__transaction_state``)
  and its cross-check with the markers;
* :mod:`.partition`: one partition directory read end to end.
"""
