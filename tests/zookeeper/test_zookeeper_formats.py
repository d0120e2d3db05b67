"""ZooKeeper's jute records and transaction log entries, from bytes built by hand after ZooKeeper's layouts.

The bytes are packed here with ``struct``, field by field, as ``BinaryOutputArchive`` writes them
(zookeeper-jute at tags release-3.5.9 and release-3.8.4: int 4 bytes and long 8 bytes big-endian, boolean 1 byte,
ustring/buffer an int length then the bytes (-1 null), vector an int count then the elements) for the records of
``zookeeper.jute`` (module org.apache.zookeeper.txn), and framed as ``FileTxnLog.append`` frames an entry
(long Adler32 of the txn bytes, int length, the bytes, 'B').
"""

from __future__ import annotations

import io
import struct
import zlib

import pytest

from kforensics.findings import DecodeError
from kforensics.formats import zookeeper_txn as zt
from kforensics.formats.zookeeper_jute import ACL, STAT_PERSISTED, JuteReader, reader_of


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def ustr(s: str | None) -> bytes:
    return i32(-1) if s is None else i32(len(s.encode())) + s.encode()


def buf(b: bytes | None) -> bytes:
    return i32(-1) if b is None else i32(len(b)) + b


WORLD = i32(1) + i32(31) + ustr("world") + ustr("anyone")  # vector<ACL> of ZooDefs.Ids.OPEN_ACL_UNSAFE


def header(session: int, zxid: int, op: int) -> bytes:
    """TxnHeader {long clientId; int cxid; long zxid; long time; int type}."""
    return i64(session) + i32(7) + i64(zxid) + i64(1_700_000_000_000) + i32(op)


STATE = b'{"controller_epoch":3,"leader":2,"version":1,"leader_epoch":4,"isr":[2,1]}'


def test_create_with_its_ephemeral_flag_and_parent_cversion():
    # CreateTxn {ustring path; buffer data; vector<ACL> acl; boolean ephemeral; int parentCVersion}; op 1 = create
    raw = header(0x1000, 0x8A, 1) + ustr("/brokers/ids/2") + buf(b"{}") + WORLD + b"\x01" + i32(5)
    t = zt.decode_txn(raw)
    assert (t.op, t.client_id, t.zxid, t.cxid) == ("create", 0x1000, 0x8A, 7)
    assert t.record["path"] == "/brokers/ids/2" and t.record["data"] == b"{}"
    assert t.record["ephemeral"] is True and t.record["parent_cversion"] == 5
    assert t.record["acl"] == [{"perms": 31, "id": {"scheme": "world", "id": "anyone"}}]
    assert t.digest is None


def test_a_create_without_parent_cversion_is_read_as_version_0():
    # SerializeUtils.deserializeTxn: a CreateTxn that runs out of bytes is read again as CreateTxnV0
    raw = header(1, 2, 1) + ustr("/a") + buf(b"x") + WORLD + b"\x00"
    t = zt.decode_txn(raw)
    assert t.record["path"] == "/a" and t.record["parent_cversion"] == -1 and t.record["ephemeral"] is False


def test_set_data_with_a_digest_after_it():
    # SetDataTxn {ustring path; buffer data; int version}; 3.6+: TxnDigest {int version; long treeDigest} follows
    raw = header(1, 0x90, 5) + ustr("/brokers/topics/t/partitions/0/state") + buf(STATE) + i32(3) + i32(2) + i64(99)
    t = zt.decode_txn(raw)
    assert t.op == "setData" and t.record["data"] == STATE and t.record["version"] == 3
    assert t.digest == (2, 99)


def test_multi_holds_its_operations_in_order():
    # MultiTxn {vector<Txn> txns}, Txn {int type; buffer data}: Kafka's controller writes its updates as a multi
    # with a check of the controller epoch znode's version first (KafkaZkClient, MultiRequest with CheckOp)
    check = ustr("/controller_epoch") + i32(2)
    delete = ustr("/admin/delete_topics/x")
    set_data = ustr("/brokers/topics/t/partitions/0/state") + buf(STATE) + i32(1)
    raw = header(9, 0x91, 14) + i32(3) + i32(13) + buf(check) + i32(2) + buf(delete) + i32(5) + buf(set_data)
    t = zt.decode_txn(raw)
    assert t.op == "multi" and [s.op for s in t.subs] == ["check", "delete", "setData"]
    assert t.subs[0].record == {"path": "/controller_epoch", "version": 2}
    assert t.subs[2].record["data"] == STATE and all(s.zxid == 0x91 and s.client_id == 9 for s in t.subs)


@pytest.mark.parametrize("body,paths", [
    (b"", None),  # before 3.6: no record
    (i32(1) + ustr("/brokers/ids/1"), ["/brokers/ids/1"]),  # CloseSessionTxn {vector<ustring> paths2Delete}
    (i32(0) + i32(1) + i64(5), []),  # an empty CloseSessionTxn and a TxnDigest
    (i32(1) + i64(5), None),  # no record, a TxnDigest alone (closeSessionTxn disabled)
])
def test_close_session_with_or_without_its_paths(body, paths):
    t = zt.decode_txn(header(0x55, 3, -11) + body)
    assert t.op == "closeSession" and t.record.get("paths_to_delete") == paths


def test_create_session_and_error():
    assert zt.decode_txn(header(0x55, 1, -10) + i32(6000)).record == {"timeout": 6000}  # CreateSessionTxn
    assert zt.decode_txn(header(0x55, 2, -1) + i32(-110)).record == {"err": -110}  # ErrorTxn (NodeExists)


def test_bytes_that_do_not_decode_are_a_decode_error_with_a_position():
    with pytest.raises(DecodeError) as e:
        zt.decode_txn(header(1, 2, 5) + ustr("/a") + i32(1 << 30))  # a buffer length past jute.maxbuffer
    assert e.value.code == "ZOOKEEPER_LOG_DAMAGED" and e.value.finding.position is not None
    with pytest.raises(DecodeError):
        zt.decode_txn(b"\x00" * 10)  # shorter than a TxnHeader (28 bytes)
    with pytest.raises(DecodeError):
        zt.decode_txn(header(1, 2, 77))  # no such operation


def test_an_entry_is_framed_with_the_adler32_of_its_txn_bytes():
    txn = header(1, 2, -10) + i32(6000)
    entry = zt.encode_entry(txn)
    assert entry == i64(zlib.adler32(txn)) + i32(len(txn)) + txn + b"B"
    assert zt.encode_txn(zt.decode_txn(txn)) == txn


def test_the_fast_readers_agree_with_the_declarations():
    # one declaration each: reader_of derives the fast path from it; construct's parser is the reference
    stat = i64(1) + i64(2) + i64(3) + i64(4) + i32(5) + i32(6) + i32(7) + i64(0x100018D76ED0003) + i64(8)
    assert reader_of(STAT_PERSISTED)(JuteReader(io.BytesIO(stat))) == {
        k: v for k, v in STAT_PERSISTED.parse(stat).items() if not k.startswith("_")}
    acl = i32(31) + ustr("digest") + ustr("u:p")
    assert reader_of(ACL)(JuteReader(io.BytesIO(acl)))["id"]["id"] == ACL.parse(acl).id.id == "u:p"
    for op, decl in zt.RECORDS.items():
        if op in ("multi", "createSession", "error"):
            continue
        sample = {"path": "/p", "data": b"d", "acl": [], "ephemeral": False, "parent_cversion": 1, "ttl": 9,
                  "version": 4}
        raw = decl.build({k: sample[k] for k in (sc.name for sc in decl.subcons)})
        fast = reader_of(decl)(JuteReader(io.BytesIO(raw)))
        slow = {k: (list(v) if isinstance(v, list) else v) for k, v in decl.parse(raw).items() if not k.startswith("_")}
        assert fast == slow, op
