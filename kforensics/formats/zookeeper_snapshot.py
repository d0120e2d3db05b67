"""ZooKeeper's snapshot ``version-2/snapshot.<zxid>`` (``FileSnap``): the declarations of its parts, read in turn.

The file (``FileSnap.java``, ``SerializeUtils.java``, ``DataTree.java``, ``ReferenceCountedACLCache.java`` at tag
release-3.5.9; ``SnapStream.java`` at release-3.8.4)::

    FileHeader {magic "ZKSN", version 2, dbid}
    int count, then count sessions: {long id; int timeout}          (SerializeUtils.serializeSnapshot)
    int size, then size ACL cache entries: {long id; vector<ACL>}    (ReferenceCountedACLCache.serialize)
    nodes: {ustring path; DataNode {buffer data; long acl; StatPersisted stat}} ... until the path "/"
           (DataTree.serializeNode: depth first from "" (the root), children in no set order)
    long checksum: Adler32 of every byte before it; ustring "/"       (FileSnap.serialize; SnapStream.sealStream)
    3.6 on, when digests are enabled: ZxidDigest {long zxid; int digestVersion; long digest (a ustring in hex
    before digest version 2)}, then a second checksum (of every byte before it) and "/"

``SnapStream.isValidSnapshot`` takes a file as a candidate only when it holds at least 10 bytes and ends in the
int 1 and '/'; the newest candidate that reads whole with a matching checksum is the one loaded
(``FileSnap.deserialize``).  A name ending ``.gz`` or ``.snappy`` is a compressed stream (3.6 on).
"""

from __future__ import annotations

from construct import Int32sb, Int64sb, Struct

from .zookeeper_jute import ACL, STAT_PERSISTED, Buffer, UString, Vector, reader_of

SNAP_MAGIC = b"ZKSN"
COUNT = Int32sb
SESSION = Struct("id" / Int64sb, "timeout" / Int32sb)
ACL_CACHE_ENTRY = Struct("id" / Int64sb, "acls" / Vector(ACL))
PATH = UString
DATA_NODE = Struct("data" / Buffer, "acl" / Int64sb, "stat" / STAT_PERSISTED)
CHECKSUM = Int64sb
ZXID_DIGEST_HEAD = Struct("zxid" / Int64sb, "digest_version" / Int32sb)
#: the end of the node list (DataTree.serializeNodes) and of each seal (SnapStream.sealStream)
END_PATH = "/"
#: what a candidate snapshot ends in: the ustring "/" (int 1, then '/')
SEAL_TAIL = b"\x00\x00\x00\x01/"
MIN_SNAPSHOT_SIZE = 10
#: the readers derived from the declarations (:func:`~.zookeeper_jute.reader_of`)
READ_SESSION, READ_ACL_CACHE_ENTRY = reader_of(SESSION), reader_of(ACL_CACHE_ENTRY)
READ_DATA_NODE = reader_of(DATA_NODE)
