"""The transaction version of a marker (KIP-890), and whether it ends a fenced producer's transaction.

A marker on disk does not say which transaction version wrote it: the
``EndTxnMarker`` control value is version 0 only, ``{version, coordinator
epoch}``, at 4.0.0 and at 4.1.0 (``EndTransactionMarker``, clients; the
``EndTxnMarker`` message, validVersions 0, at 4.1.0), and
``WriteTxnMarkersRequest`` carries none either.  The coordinator keeps it
per transactional id (``TransactionLogValue.ClientTransactionVersion``,
tagged field 2 of v1, transaction-coordinator 4.0.0).  The log shows it
through the producer epochs (core ``kafka.coordinator.transaction``, 4.0.0):

* transactions v2 (``TransactionVersion.supportsEpochBump``, level 2) bump the
  producer epoch at every commit or abort before the markers are written
  (``TransactionMetadata.prepareAbortOrCommit``): the marker is one above its
  data, and the producer's next transaction uses the bumped epoch;
* before v2 (levels 0 and 1) the epoch is bumped only to fence a producer
  (``prepareFenceProducerEpoch``: a transaction that timed out,
  ``abortTimedOutTransactions``, or an ``InitProducerId`` while it was
  ``Ongoing``), and the transaction is then aborted with the bumped epoch:
  an ABORT one above its data; a COMMIT is never above its data;
* under v2 a fence bumps once (``prepareFenceProducerEpoch``) and the abort
  bumps again (``TransactionCoordinator.endTransaction``: the fenced epoch,
  then ``prepareAbortOrCommit``): an ABORT two above its data.

So, marker epoch minus data epoch: 0 — before v2 ("0-1"); 1 on a COMMIT —
v2; 1 on an ABORT — v2, or a fence before v2 (the coordinator's record
decides); 2 on an ABORT — v2, fenced.  A marker with no data before it on
this log (an empty transaction) shows nothing.
"""

from __future__ import annotations

from typing import Any

#: the transaction version from which the coordinator bumps the producer epoch at every commit and abort
EPOCH_BUMP_VERSION = 2
BEFORE_V2 = "0-1"


def from_epochs(control_type: str, bump: int | None) -> tuple[str | None, str]:
    """(transaction version, basis) of a marker from its epoch bump over its data; None when the epochs do not
    decide."""
    if bump is None:
        return None, "no data of its producer before it on this log"
    if bump == 0:
        return BEFORE_V2, "marker epoch equals its data's: no bump at the end, so before transactions v2"
    if bump == 1 and control_type == "COMMIT":
        return "2", "a COMMIT one epoch above its data: only transactions v2 bump at a commit"
    if bump == 2 and control_type == "ABORT":
        return "2", "an ABORT two epochs above its data: a fence then the abort's bump, transactions v2"
    if bump == 1 and control_type == "ABORT":
        return None, "an ABORT one epoch above its data: transactions v2, or a fenced producer before v2"
    return None, f"epoch bump {bump} on a {control_type} fits no transaction version"


def settle_by_next_transaction(marker: Any, next_epoch: int) -> None:
    """An ABORT one epoch above its data that the epochs left open is transactions v2 when its producer's next
    transaction starts at exactly the marker's epoch: under v2 the producer goes on with the bumped epoch
    (``prepareAbortOrCommit``), while a producer fenced before v2 must call ``InitProducerId`` again, which
    bumps once more (``TransactionMetadata.prepareIncrementProducerEpoch``, 4.0.0)."""
    if marker is None or marker.transaction_version is not None or marker.control_type != "ABORT":
        return
    if marker.epoch_bump == 1 and next_epoch == marker.producer_epoch:
        marker.transaction_version = "2"
        marker.transaction_version_basis = ("an ABORT one epoch above its data, and the producer's next "
                                            "transaction goes on in the marker's epoch: transactions v2")


def from_coordinator(state: Any) -> tuple[str, str]:
    """(transaction version, basis) from the coordinator's record of the producer's transactional id."""
    v = int(getattr(state, "client_transaction_version", 0) or 0)
    return str(v), (f"the coordinator's record of transactional id {state.transactional_id!r} "
                    f"(ClientTransactionVersion {v})")


def open_version(txn: Any, last_marker: Any, state: Any) -> None:
    """An open transaction's transaction version (its producer's last marker here, else the coordinator's record);
    a hanging one under v2 says what that rules out: the leader verifies every transactional write with the
    coordinator under v2 whatever ``transaction.partition.verification.enable`` says (``ReplicaManager.
    maybeSendPartitionsToTransactionCoordinator``, 4.0.0), so no late write after the transaction ended opened it.
    """
    if last_marker is not None and last_marker.transaction_version is not None:
        txn.transaction_version = last_marker.transaction_version
    elif state is not None:
        txn.transaction_version = from_coordinator(state)[0]
    if txn.hanging and txn.transaction_version == "2":
        txn.why += ("; under transactions v2 the leader verifies a transaction's first write with the coordinator, "
                    "so this is no late write after its end: its marker was lost (truncation) or the coordinator's "
                    "state was")


def fenced(marker: Any) -> bool | None:
    """Whether ``marker`` ends a transaction the coordinator aborted by fencing its producer; None when the
    epochs and the transaction version do not decide."""
    bump = marker.epoch_bump
    if bump is None or marker.control_type not in ("COMMIT", "ABORT"):
        return None
    tv = marker.transaction_version
    if marker.control_type == "COMMIT" or bump == 0:
        return False
    if bump >= 2:
        return True
    # an ABORT one above its data
    if tv == "2":
        return False
    if tv in ("0", "1", BEFORE_V2):
        return True
    return None


def count(markers: list[Any]) -> dict[str, int]:
    """Markers per transaction version (``unknown`` when not known)."""
    out: dict[str, int] = {}
    for m in markers:
        key = m.transaction_version or "unknown"
        out[key] = out.get(key, 0) + 1
    return out
