"""The part of ZooKeeper's data tree Kafka's controller reads, rebuilt as ZooKeeper rebuilds its whole tree.

ZooKeeper loads a snapshot and applies the logged transactions after it
(``FileTxnSnapLog.restore``/``processTransaction`` and ``DataTree.processTxn``
at tags release-3.5.9 and release-3.8.4): a create of a node that exists, or
whose parent is missing, fails and is ignored; a delete or setData of a node
that does not exist likewise; a closeSession deletes the session's ephemeral
nodes (``killSession``); a multi applies its operations in order unless one
of them is an error; createSession and closeSession add and remove the
session in the session table.  The snapshot is fuzzy (written while
transactions went on), so replaying those after its zxid is idempotent by
the same rules.

Only the znodes Kafka's controller reads are kept (:func:`kept`), so memory
grows with the cluster's topics and partitions, not with what else the
ensemble holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..formats.zookeeper_txn import Txn

#: the subtrees of Kafka's znodes the controller reads (kafka.zk.ZkData at 2.8.2: BrokerIdsZNode, TopicsZNode,
#: ConfigEntityZNode, ControllerZNode, ControllerEpochZNode, AdminZNode)
KEPT_PREFIXES = ("/brokers/", "/config/topics/", "/config/brokers/", "/admin/")
KEPT_PATHS = frozenset({"/brokers", "/controller", "/controller_epoch", "/config/topics", "/config/brokers"})
#: ``EphemeralType``: an owner with the high byte 0xff is a container or TTL node, not a session
_SPECIAL_OWNER = 0xFF << 56


def kept(path: str | None) -> bool:
    """Whether ``path`` is one of the znodes kept (Kafka's, under the root ``/``; any chroot is not handled)."""
    return path is not None and (path in KEPT_PATHS or path.startswith(KEPT_PREFIXES))


@dataclass
class Znode:
    """One kept znode: its data and the parts of its stat that say who owns it and when it changed."""

    data: bytes | None
    ephemeral_owner: int = 0  # the session of an ephemeral node; 0 for a persistent one
    czxid: int = 0
    mzxid: int = 0
    version: int = 0

    @property
    def ephemeral(self) -> bool:
        owner = self.ephemeral_owner & ((1 << 64) - 1)
        return owner != 0 and owner & _SPECIAL_OWNER != _SPECIAL_OWNER


@dataclass
class ZnodeTree:
    """The kept znodes by path, and the session table (session id -> timeout in ms)."""

    nodes: dict[str, Znode] = field(default_factory=dict)
    sessions: dict[int, int] = field(default_factory=dict)
    last_zxid: int = 0

    def put(self, path: str, node: Znode) -> None:
        """A node read from a snapshot."""
        if kept(path):
            self.nodes[path] = node

    def apply(self, txn: Txn) -> None:
        """One logged transaction, as ``processTransaction`` and ``DataTree.processTxn`` apply it."""
        self.last_zxid = max(self.last_zxid, txn.zxid)
        if txn.op == "createSession":
            self.sessions[txn.client_id] = int(txn.record.get("timeout", 0))
        elif txn.op == "closeSession":
            self.sessions.pop(txn.client_id, None)
            self._kill_session(txn.client_id)
        elif txn.op == "multi":
            if any(s.op == "error" for s in txn.subs):
                return  # a failed multi: every operation is an error (processTxn's "failed")
            for sub in txn.subs:
                self._apply_op(sub)
        else:
            self._apply_op(txn)

    def _apply_op(self, txn: Txn) -> None:
        rec = txn.record
        path = rec.get("path")
        if not kept(path):
            return
        assert isinstance(path, str)
        if txn.op in ("create", "create2", "createContainer", "createTTL"):
            if path not in self.nodes:  # NodeExists is ignored: the node keeps what it holds
                owner = txn.client_id if txn.op in ("create", "create2") and rec.get("ephemeral") else 0
                self.nodes[path] = Znode(rec.get("data"), owner, txn.zxid, txn.zxid, 0)
        elif txn.op in ("delete", "deleteContainer"):
            self.nodes.pop(path, None)
            prefix = path + "/"
            for p in [p for p in self.nodes if p.startswith(prefix)]:
                del self.nodes[p]  # ZooKeeper deletes only leaves; a kept child left behind is stale
        elif txn.op in ("setData", "reconfig"):
            node = self.nodes.get(path)
            if node is not None:
                node.data, node.mzxid, node.version = rec.get("data"), txn.zxid, node.version + 1

    def _kill_session(self, session: int) -> None:
        for p in [p for p, n in self.nodes.items() if n.ephemeral_owner == session]:
            del self.nodes[p]

    def data(self, path: str) -> bytes | None:
        node = self.nodes.get(path)
        return None if node is None else node.data

    def children(self, path: str) -> list[str]:
        """The names of the kept children of ``path``."""
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix):].split("/", 1)[0] for p in self.nodes if p.startswith(prefix)})
