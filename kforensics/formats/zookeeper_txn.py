"""ZooKeeper's transaction log ``version-2/log.<zxid>`` (``FileTxnLog``) and the transactions it holds.

The file (``FileTxnLog.java``, ``Util.java``, ``SerializeUtils.java`` at tags release-3.5.9 and
release-3.8.4)::

    FileHeader {magic "ZKLG", version 2, dbid}
    entry*: long checksum   Adler32 of the txn bytes alone (FileTxnLog.append: crc.update(buf))
            int  length     of the txn bytes; 0 ends the log (the file is preallocated with zeros)
            byte[length]    TxnHeader, then the record of its type (and, from 3.6, a TxnDigest)
            byte 0x42       'B', end of record; another byte: "Last transaction was partial", the log ends

Records (``zookeeper.jute``, module ``org.apache.zookeeper.txn``)::

    TxnHeader {long clientId; int cxid; long zxid; long time; int type}
    CreateTxn {ustring path; buffer data; vector<ACL> acl; boolean ephemeral; int parentCVersion}
    CreateTxnV0 {ustring path; buffer data; vector<ACL> acl; boolean ephemeral}   (read when CreateTxn runs out)
    CreateTTLTxn {ustring path; buffer data; vector<ACL> acl; int parentCVersion; long ttl}
    CreateContainerTxn {ustring path; buffer data; vector<ACL> acl; int parentCVersion}
    DeleteTxn {ustring path}   SetDataTxn {ustring path; buffer data; int version}
    CheckVersionTxn {ustring path; int version}   SetACLTxn {ustring path; vector<ACL> acl; int version}
    CreateSessionTxn {int timeOut}   CloseSessionTxn {vector<ustring> paths2Delete} (3.6 on)
    ErrorTxn {int err}   Txn {int type; buffer data}   MultiTxn {vector<Txn> txns}
    TxnDigest {int version; long treeDigest}   (3.6 on, after the record, when digests are enabled)

A closeSession carries no record before 3.6 and a ``CloseSessionTxn`` after (``zookeeper.closeSessionTxn.enabled``,
on by default); which one a file holds is told by what is left after the header.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass, field
from typing import Any

from construct import ConstructError, Int32sb, Int64sb, Struct

from ..findings import DecodeError
from .zookeeper_jute import ACL, Boolean, Buffer, JuteReader, UString, Vector, reader_of

LOG_MAGIC = b"ZKLG"
LOG_VERSION = 2
#: the frame before the txn bytes: checksum and length
ENTRY_FRAME = Struct("checksum" / Int64sb, "length" / Int32sb)
ENTRY_FRAME_SIZE = ENTRY_FRAME.sizeof()
END_OF_RECORD = 0x42

TXN_HEADER = Struct("client_id" / Int64sb, "cxid" / Int32sb, "zxid" / Int64sb, "time" / Int64sb, "type" / Int32sb)
TXN_HEADER_SIZE = TXN_HEADER.sizeof()
TXN_DIGEST = Struct("version" / Int32sb, "tree_digest" / Int64sb)
TXN_DIGEST_SIZE = TXN_DIGEST.sizeof()

CREATE = Struct("path" / UString, "data" / Buffer, "acl" / Vector(ACL), "ephemeral" / Boolean,
                "parent_cversion" / Int32sb)
CREATE_V0 = Struct("path" / UString, "data" / Buffer, "acl" / Vector(ACL), "ephemeral" / Boolean)
CREATE_TTL = Struct("path" / UString, "data" / Buffer, "acl" / Vector(ACL), "parent_cversion" / Int32sb,
                    "ttl" / Int64sb)
CREATE_CONTAINER = Struct("path" / UString, "data" / Buffer, "acl" / Vector(ACL), "parent_cversion" / Int32sb)
DELETE = Struct("path" / UString)
SET_DATA = Struct("path" / UString, "data" / Buffer, "version" / Int32sb)
CHECK_VERSION = Struct("path" / UString, "version" / Int32sb)
SET_ACL = Struct("path" / UString, "acl" / Vector(ACL), "version" / Int32sb)
CREATE_SESSION = Struct("timeout" / Int32sb)
CLOSE_SESSION = Struct("paths_to_delete" / Vector(UString))
ERROR = Struct("err" / Int32sb)
SUB_TXN = Struct("type" / Int32sb, "data" / Buffer)
MULTI = Struct("txns" / Vector(SUB_TXN))

#: ``ZooDefs.OpCode`` of the transactions a log holds
OP_NAMES = {1: "create", 2: "delete", 5: "setData", 7: "setACL", 13: "check", 14: "multi", 15: "create2",
            16: "reconfig", 19: "createContainer", 20: "deleteContainer", 21: "createTTL", -10: "createSession",
            -11: "closeSession", -1: "error"}
#: the record of each type (``SerializeUtils.deserializeTxn``; reconfig is a SetDataTxn)
RECORDS: dict[str, Any] = {
    "create": CREATE, "create2": CREATE, "createTTL": CREATE_TTL, "createContainer": CREATE_CONTAINER,
    "delete": DELETE, "deleteContainer": DELETE, "setData": SET_DATA, "reconfig": SET_DATA, "setACL": SET_ACL,
    "check": CHECK_VERSION, "createSession": CREATE_SESSION, "error": ERROR, "multi": MULTI,
}


#: the readers derived from the declarations (:func:`~.zookeeper_jute.reader_of`)
_READ = {op: reader_of(decl) for op, decl in RECORDS.items()}
_READ_HEADER, _READ_DIGEST = reader_of(TXN_HEADER), reader_of(TXN_DIGEST)
_READ_V0, _READ_CLOSE = reader_of(CREATE_V0), reader_of(CLOSE_SESSION)


@dataclass
class Txn:
    """One transaction: its header, its operation and the record's fields (sub-transactions for a multi)."""

    client_id: int  # the session
    cxid: int
    zxid: int
    time: int
    op: str  # OP_NAMES' name
    record: dict[str, Any] = field(default_factory=dict)
    subs: list[Txn] = field(default_factory=list)  # a multi's operations, in order
    digest: tuple[int, int] | None = None  # (version, treeDigest) when the entry carries one


def checksum(txn_bytes: bytes) -> int:
    """The entry's checksum as ``FileTxnLog`` computes it: Adler32 of the txn bytes."""
    return zlib.adler32(txn_bytes)


def _record(op: str, stream: io.BytesIO, remaining: int) -> dict[str, Any] | None:
    """The record of ``op`` read from ``stream`` (None: the type carries none here)."""
    if op == "closeSession":
        return _close_session(stream, remaining)
    read = _READ.get(op)
    if read is None:
        raise DecodeError("ZOOKEEPER_LOG_DAMAGED", f"unknown transaction type {op}", None)
    start = stream.tell()
    try:
        return dict(read(JuteReader(stream)))
    except ConstructError:
        if op != "create":
            raise
        stream.seek(start)  # a create written before parentCVersion existed (SerializeUtils: "perhaps V0")
        return {**_READ_V0(JuteReader(stream)), "parent_cversion": -1}


def _close_session(stream: io.BytesIO, remaining: int) -> dict[str, Any] | None:
    """A closeSession's ``CloseSessionTxn`` when the entry holds one: the bytes left are the record (and maybe a
    digest); else none (before 3.6, or the record disabled), what is left being a digest or nothing."""
    if remaining <= 0:
        return None
    start = stream.tell()
    try:
        rec: dict[str, Any] = _READ_CLOSE(JuteReader(stream))
        if remaining - (stream.tell() - start) in (0, TXN_DIGEST_SIZE):
            return rec
    except ConstructError:
        pass
    stream.seek(start)
    return None


def decode_txn(txn_bytes: bytes) -> Txn:
    """The transaction in one entry's bytes (``SerializeUtils.deserializeTxn``); :class:`DecodeError` when they do
    not decode (positions relative to ``txn_bytes``)."""
    stream = io.BytesIO(txn_bytes)
    try:
        h = _READ_HEADER(JuteReader(stream))
    except ConstructError:
        raise DecodeError("ZOOKEEPER_LOG_DAMAGED", f"{len(txn_bytes)} bytes cannot hold a TxnHeader "
                          f"({TXN_HEADER_SIZE} bytes)", 0) from None
    op = OP_NAMES.get(h["type"], f"type {h['type']}")
    txn = Txn(h["client_id"], h["cxid"], h["zxid"], h["time"], op)
    try:
        rec = _record(op, stream, len(txn_bytes) - stream.tell())
        txn.record = rec or {}
        if op == "multi":
            txn.subs = [_sub_txn(txn, s) for s in txn.record.get("txns") or []]
    except ConstructError as e:
        raise DecodeError("ZOOKEEPER_LOG_DAMAGED", f"zxid {txn.zxid:#x}: the {op} record does not decode "
                          f"({type(e).__name__})", stream.tell(), zxid=txn.zxid) from None
    if len(txn_bytes) - stream.tell() >= TXN_DIGEST_SIZE:
        d = _READ_DIGEST(JuteReader(stream))
        txn.digest = (d["version"], d["tree_digest"])
    return txn


def _sub_txn(parent: Txn, sub: Any) -> Txn:
    """One operation of a multi, with the multi's header (``DataTree.processTxn``)."""
    op = OP_NAMES.get(sub["type"], f"type {sub['type']}")
    read = _READ.get(op)
    if read is None or op == "multi":
        raise DecodeError("ZOOKEEPER_LOG_DAMAGED", f"zxid {parent.zxid:#x}: a multi holds an operation of "
                          f"{op}", None, zxid=parent.zxid)
    return Txn(parent.client_id, parent.cxid, parent.zxid, parent.time, op,
               dict(read(JuteReader(io.BytesIO(sub["data"] or b"")))))


def encode_txn(txn: Txn) -> bytes:
    """The entry bytes of ``txn`` (header and record; a multi from its ``subs``): for tests and tools."""
    type_of = {v: k for k, v in OP_NAMES.items()}
    out = TXN_HEADER.build({"client_id": txn.client_id, "cxid": txn.cxid, "zxid": txn.zxid, "time": txn.time,
                            "type": type_of[txn.op]})
    if txn.op == "multi":
        subs = [{"type": type_of[s.op], "data": RECORDS[s.op].build(s.record)} for s in txn.subs]
        out += MULTI.build({"txns": subs})
    elif txn.op == "closeSession":
        out += CLOSE_SESSION.build(txn.record) if txn.record else b""
    else:
        out += RECORDS[txn.op].build(txn.record)
    if txn.digest is not None:
        out += TXN_DIGEST.build({"version": txn.digest[0], "tree_digest": txn.digest[1]})
    return out


def encode_entry(txn_bytes: bytes) -> bytes:
    """One log entry around ``txn_bytes``: checksum, length, the bytes, 'B' (``FileTxnLog.append``)."""
    return ENTRY_FRAME.build({"checksum": checksum(txn_bytes), "length": len(txn_bytes)}) + txn_bytes + b"B"
