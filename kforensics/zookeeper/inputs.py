"""ZooKeeper data dirs among a replay's inputs: told apart from broker log dirs, read, and one chosen."""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..findings import finding
from ..log.zookeeper_data_dir import found_zookeeper_dir, zookeeper_root
from .partition_state import ZooKeeperCluster, read_zookeeper_cluster


def split_zookeeper_dirs(brokers: Any) -> tuple[Any, list[Any]]:
    """``brokers`` less the ZooKeeper data dirs among them (a list of inputs only: ``--broker ID=DIR`` names a
    broker; local directories only, :func:`~kforensics.log.zookeeper_data_dir.found_zookeeper_dir`), and those
    data dirs."""
    if not isinstance(brokers, list):
        return brokers, []
    zk = [b for b in brokers if found_zookeeper_dir(b)]
    return [b for b in brokers if all(b is not z for z in zk)], zk


def read_zookeeper_inputs(specs: list[Any]) -> ZooKeeperCluster:
    """ZooKeeper's state from the data dirs given: with several (the servers of an ensemble), the one read to the
    highest zxid, as ZooKeeper's leader election prefers the server with the most recent history (``FastLeaderElection
    .totalOrderPredicate``: epoch, then zxid); the others are said not read."""
    read = []
    for spec in specs:
        root = zookeeper_root(spec)
        if root is None:
            raise InputError(f"{spec} is not a ZooKeeper data dir (no version-2 dir holding snapshot.* or log.* "
                             "files)")
        read.append(read_zookeeper_cluster(root))
    best = max(read, key=lambda c: (not c.incomplete, c.data.last_zxid))
    for other in read:
        if other is not best:
            best.findings.append(finding("ZOOKEEPER_FILE_NOT_READ", f"another server's data dir: {best.source} is "
                                         f"read to a later zxid ({best.data.last_zxid:#x} against "
                                         f"{other.data.last_zxid:#x}) and is the one taken", file=other.source))
    return best


def refuse_both(metadata: list[Any], zookeeper: list[Any]) -> None:
    """A KRaft metadata log and a ZooKeeper data dir together: refused (a cluster's controller is one or the
    other; after a migration the KRaft metadata log is the record)."""
    if metadata and zookeeper:
        raise InputError("both a KRaft metadata log and a ZooKeeper data dir were given: a cluster's leaders are "
                         "recorded by one controller; give the metadata log (KRaft, or after a migration) or the "
                         "ZooKeeper data dir (ZooKeeper mode), not both")
