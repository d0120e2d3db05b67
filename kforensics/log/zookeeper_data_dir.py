"""A ZooKeeper data dir read as evidence: the newest valid snapshot, then the logged transactions after it.

As ZooKeeper restores its database at start (``FileTxnSnapLog.restore``, ``FileSnap.deserialize``,
``FileTxnLog.getLogFiles`` and ``FileTxnIterator`` at tags release-3.5.9 and release-3.8.4): snapshots newest
first, the first that reads whole with a matching checksum wins; then the log that starts at or before the
snapshot's zxid and every later one, in zxid order, each entry after the snapshot's zxid applied in turn.  A log
ends at a zero length (the preallocated padding) or at a partial last entry; a checksum that does not match, an
entry that does not decode or a bad file header stop ZooKeeper from starting ("Unable to load database").

Read-only, through the log layer's path protocol (directories, archive members, remote files), one entry at a
time: memory holds the kept znodes (:mod:`.zookeeper_tree`), never a whole file.  Damage is a finding with the
file and byte position; the state read up to it is kept and said to be incomplete; a file not read is said so.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

from construct import ConstructError

from ..findings import DecodeError, Finding, finding
from ..formats import zookeeper_snapshot as snap
from ..formats.zookeeper_jute import FILE_HEADER, FILE_HEADER_SIZE, MAX_BUFFER, JuteReader
from ..formats.zookeeper_txn import END_OF_RECORD, ENTRY_FRAME, ENTRY_FRAME_SIZE, LOG_MAGIC, checksum, decode_txn
from .sources import file_size, open_binary
from .zookeeper_tree import Znode, ZnodeTree

VERSION_DIR = "version-2"
SNAPSHOT_PREFIX, LOG_PREFIX = "snapshot", "log"
#: the bytes scanned after a log's end for data that follows it (the rest of a 64 MiB preallocation is zeros)
_CHUNK = 1 << 20
_FRAME = struct.Struct(">qi")  # ENTRY_FRAME's layout, for the resynchronising search


@dataclass
class ZooKeeperData:
    """What a ZooKeeper data dir holds for Kafka's controller, and how it was read."""

    source: str
    tree: ZnodeTree = field(default_factory=ZnodeTree)
    snapshot: str | None = None  # the snapshot loaded (None: none valid, the logs replayed from the start)
    snapshot_zxid: int = -1
    files_read: list[str] = field(default_factory=list)
    not_read: dict[str, str] = field(default_factory=dict)  # file -> why it was not read
    findings: list[Finding] = field(default_factory=list)
    incomplete: bool = False  # damage stopped the reading: later transactions may be missing

    @property
    def last_zxid(self) -> int:
        return max(self.tree.last_zxid, self.snapshot_zxid)


class _Checked:
    """A read-only stream that counts its position and the Adler32 of every byte read (``CheckedInputStream``)."""

    def __init__(self, f: Any, start: int = 0):
        self.f, self.pos, self.adler = f, start, 1

    def read(self, n: int = -1) -> bytes:
        b: bytes = self.f.read(n) if n >= 0 else self.f.read()
        while 0 <= n and len(b) < n:
            more = self.f.read(n - len(b))
            if not more:
                break
            b += more
        self.pos += len(b)
        self.adler = zlib.adler32(b, self.adler)
        return b


def version_dir(path: Any) -> Any:
    """The ``version-2`` dir of a ZooKeeper data dir (``path`` itself or its child), None when it holds none."""
    for d in (path, path / VERSION_DIR):
        try:
            if d.name == VERSION_DIR and d.is_dir() and any(_zxid(c.name, (SNAPSHOT_PREFIX, LOG_PREFIX)) >= 0
                                                              for c in d.iterdir()):
                return d
        except OSError:
            continue
    return None


def _zxid(name: str, prefixes: tuple[str, ...]) -> int:
    """``Util.getZxidFromName``: the hex zxid after the prefix (a snapshot may end ``.gz``/``.snappy``); -1."""
    parts = name.split(".")
    if len(parts) < 2 or parts[0] not in prefixes:
        return -1
    try:
        return int(parts[1], 16)
    except ValueError:
        return -1


def read_zookeeper_dir(path: Any) -> ZooKeeperData:
    """Read one ZooKeeper data dir (or its ``version-2``) as ZooKeeper restores it."""
    vd = version_dir(path)
    out = ZooKeeperData(str(path))
    if vd is None:
        out.incomplete = True
        out.findings.append(finding("ZOOKEEPER_FILE_NOT_READ", "no version-2 dir holding snapshot.* or log.* files: "
                                    "nothing of ZooKeeper's state was read", file=path))
        return out
    files = sorted(vd.iterdir(), key=lambda c: str(c.name))
    snaps = sorted((f for f in files if _zxid(f.name, (SNAPSHOT_PREFIX,)) >= 0),
                   key=lambda f: _zxid(f.name, (SNAPSHOT_PREFIX,)), reverse=True)
    logs = sorted((f for f in files if _zxid(f.name, (LOG_PREFIX,)) >= 0), key=lambda f: _zxid(f.name, (LOG_PREFIX,)))
    _load_snapshot(out, snaps)
    _replay_logs(out, logs)
    if out.incomplete:
        out.findings.append(finding("ZOOKEEPER_STATE_INCOMPLETE", f"ZooKeeper's state was read up to zxid "
                                    f"{out.last_zxid:#x}: damage stopped the reading, so a later transaction may "
                                    "have changed what Kafka's controller reads", file=vd, zxid=out.last_zxid))
    return out


def _load_snapshot(out: ZooKeeperData, snaps: list[Any]) -> None:
    """The newest snapshot that reads whole (``FileSnap.deserialize``); those it supersedes are not read."""
    for i, f in enumerate(snaps):
        zxid = _zxid(f.name, (SNAPSHOT_PREFIX,))
        if not str(f.name).count(".") == 1:
            out.not_read[str(f)] = "a compressed snapshot (.gz/.snappy): not supported"
            out.findings.append(finding("ZOOKEEPER_FILE_NOT_READ", "compressed snapshots are not read", file=f))
            out.incomplete = True
            continue
        tree = ZnodeTree()
        problem = _read_snapshot(f, tree)
        if problem is None:
            out.tree, out.snapshot, out.snapshot_zxid = tree, str(f), zxid
            out.tree.last_zxid = zxid
            out.files_read.append(str(f))
            for older in snaps[i + 1:]:
                out.not_read[str(older)] = f"superseded by {f.name}: ZooKeeper loads the newest valid snapshot"
            return
        out.findings.append(problem)
        out.incomplete = True
    if snaps:
        out.not_read.update({str(f): "damaged" for f in snaps if str(f) not in out.not_read})


def _read_snapshot(f: Any, tree: ZnodeTree) -> Finding | None:
    """Read one snapshot into ``tree``; the finding that makes it invalid, or None."""
    try:
        size = file_size(f)
        if size < snap.MIN_SNAPSHOT_SIZE:
            return _snap_damage(f, 0, f"{size} bytes: too short to be a snapshot (SnapStream.isValidSnapshot)")
        with open_binary(f) as fh:
            fh.seek(size - len(snap.SEAL_TAIL))
            if fh.read(len(snap.SEAL_TAIL)) != snap.SEAL_TAIL:
                return _snap_damage(f, size - len(snap.SEAL_TAIL), "does not end in the string \"/\": not a "
                                    "complete snapshot (SnapStream.isValidSnapshot)")
            fh.seek(0)
            return _read_snapshot_body(f, _Checked(fh), tree)
    except OSError as e:
        return finding("ZOOKEEPER_FILE_NOT_READ", f"cannot be read: {e}", file=f)


def _read_snapshot_body(f: Any, s: _Checked, tree: ZnodeTree) -> Finding | None:
    """Header, sessions, ACL cache, nodes and the checksum, in turn (every loop is bounded by a count read, or
    by the stream's end)."""
    at = 0
    r = JuteReader(s)
    try:
        header = FILE_HEADER.parse(r.take(FILE_HEADER_SIZE))
        if header.magic != snap.SNAP_MAGIC:
            return _snap_damage(f, 0, f"magic {header.magic!r}, not {snap.SNAP_MAGIC!r}")
        at = s.pos
        for _ in range(r.read_int()):
            at = s.pos
            sess = snap.READ_SESSION(r)
            tree.sessions[sess["id"]] = sess["timeout"]
        at = s.pos
        for _ in range(r.read_int()):
            at = s.pos
            snap.READ_ACL_CACHE_ENTRY(r)
        at = s.pos
        path = r.read_ustring()
        while path != snap.END_PATH:
            node = snap.READ_DATA_NODE(r)
            if path is not None:
                st = node["stat"]
                tree.put(path, Znode(node["data"], st["ephemeral_owner"], st["czxid"], st["mzxid"], st["version"]))
            at = s.pos
            path = r.read_ustring()
        at, computed = s.pos, s.adler
        stored = r.read_long()
    except ConstructError as e:
        return _snap_damage(f, at, f"does not decode from byte {at} ({type(e).__name__}): ZooKeeper skips it")
    if stored != computed:
        return _snap_damage(f, at, f"checksum mismatch: stored {stored}, computed {computed} (Adler32): "
                            "ZooKeeper skips it (\"CRC corruption in snapshot\")", stored=stored, computed=computed)
    return None


def _snap_damage(f: Any, position: int, why: str, **facts: Any) -> Finding:
    return finding("ZOOKEEPER_SNAPSHOT_DAMAGED", f"snapshot {why}", file=f, position=position, **facts)


def _replay_logs(out: ZooKeeperData, logs: list[Any]) -> None:
    """The logs from the one that starts at or before the snapshot's zxid (``FileTxnLog.getLogFiles``)."""
    start = max((z for z in (_zxid(f.name, (LOG_PREFIX,)) for f in logs) if z <= max(out.snapshot_zxid, 0)),
                default=0)
    for k, f in enumerate(logs):
        if _zxid(f.name, (LOG_PREFIX,)) < start:
            out.not_read[str(f)] = "before the snapshot: ZooKeeper does not read it"
            continue
        if not _read_log(out, f):
            for later in logs[k + 1:]:
                out.not_read[str(later)] = "after damage in an earlier log: ZooKeeper would not start"
                out.findings.append(finding("ZOOKEEPER_FILE_NOT_READ", "not applied: an earlier log is damaged "
                                            "(ZooKeeper stops loading there)", file=later))
            return


def _read_log(out: ZooKeeperData, f: Any) -> bool:
    """Apply one log's entries after the snapshot's zxid; False when damage stops the reading."""
    try:
        size = file_size(f)
        with open_binary(f) as fh:
            head = fh.read(FILE_HEADER_SIZE)
            if len(head) < FILE_HEADER_SIZE:
                out.findings.append(finding("ZOOKEEPER_LOG_TORN_TAIL", f"{len(head)} bytes: the log ends before "
                                            "its file header; ZooKeeper reads no transaction from it", file=f,
                                            position=0))
                out.files_read.append(str(f))
                return True
            if FILE_HEADER.parse(head).magic != LOG_MAGIC:
                return _log_damage(out, f, 0, f"file header magic {head[:4]!r}, not {LOG_MAGIC!r} (\"invalid magic "
                                   "number\")")
            out.files_read.append(str(f))
            return _read_entries(out, f, fh, size)
    except OSError as e:
        out.not_read[str(f)] = f"unreadable: {e}"
        out.findings.append(finding("ZOOKEEPER_FILE_NOT_READ", f"cannot be read: {e}", file=f))
        out.incomplete = True
        return False


def _read_entries(out: ZooKeeperData, f: Any, fh: Any, size: int) -> bool:
    """The entry loop: each turn reads at least a frame, so it ends at the end of the file."""
    pos = FILE_HEADER_SIZE
    while True:
        frame = fh.read(ENTRY_FRAME_SIZE)
        if len(frame) < ENTRY_FRAME_SIZE:
            if frame.strip(b"\0"):
                _torn(out, f, pos, f"{len(frame)} bytes after the last entry: a partial entry frame")
            return True
        parsed = ENTRY_FRAME.parse(frame)
        crc, length = parsed.checksum, parsed.length
        if length == 0:
            return _after_end(out, f, fh, pos, crc)
        if length < 0 or length > MAX_BUFFER:
            return _log_damage(out, f, pos, f"entry length {length} is not a length ZooKeeper reads "
                               f"(\"Unreasonable length\", at most {MAX_BUFFER})")
        body = fh.read(length + 1)
        if len(body) < length + 1:
            _torn(out, f, pos, f"the last entry declares {length} bytes but only {len(body)} remain (a torn write)")
            return True
        txn_bytes = body[:length]
        if body[length] != END_OF_RECORD:
            return _log_damage(out, f, pos, f"entry does not end in 'B' (byte {body[length]}): ZooKeeper ends this "
                               "log there (\"Last transaction was partial\") and never applies what follows in it",
                               stops=False)
        if crc != checksum(txn_bytes):
            return _log_damage(out, f, pos, f"checksum mismatch: stored {crc}, computed {checksum(txn_bytes)} "
                               "(Adler32): ZooKeeper refuses to load the log", stored=crc,
                               computed=checksum(txn_bytes))
        try:
            txn = decode_txn(txn_bytes)
        except DecodeError as e:
            return _log_damage(out, f, pos + ENTRY_FRAME_SIZE + (e.finding.position or 0), e.finding.message)
        if txn.zxid > out.snapshot_zxid:
            out.tree.apply(txn)
        pos += ENTRY_FRAME_SIZE + length + 1


def _after_end(out: ZooKeeperData, f: Any, fh: Any, pos: int, crc: int) -> bool:
    """A zero length ends the log (``Util.readTxnBytes``: the preallocated padding); bytes other than zeros after
    it are entries ZooKeeper will never read: said with where valid entries resume."""
    if crc != 0:
        return _log_damage(out, f, pos, f"an entry of length 0 with checksum {crc}: ZooKeeper ends this log here",
                           stops=False)
    at = pos + ENTRY_FRAME_SIZE
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            return True
        if chunk.count(0) == len(chunk):
            at += len(chunk)
            continue
        first = at + len(chunk) - len(chunk.lstrip(b"\0"))
        resumes = _resync(fh, max(pos + 1, first - 8), first)
        where = (f"valid entries resume at byte {resumes}" if resumes is not None else
                 f"non-zero bytes follow at byte {first} (no valid entry found after them)")
        return _log_damage(out, f, pos, f"zero bytes end the log at byte {pos}, but {where}: ZooKeeper ends this "
                           "log at the zeros and never applies what follows in it", stops=False,
                           resumes_at=resumes if resumes is not None else first)


def _resync(fh: Any, start: int, first: int) -> int | None:
    """The first position from ``start`` where a whole entry with a matching checksum lies, searched over a window
    of the file from there (None: none in it).  An entry's checksum is a long holding a 32-bit Adler32, so its
    first four bytes are zeros: the search starts a few bytes before the first non-zero byte."""
    fh.seek(start)
    window = fh.read(_CHUNK)
    for i in range(0, max(0, len(window) - ENTRY_FRAME_SIZE)):
        crc, length = _FRAME.unpack_from(window, i)
        end = i + ENTRY_FRAME_SIZE + length
        if 0 < length <= MAX_BUFFER and end < len(window) and window[end] == END_OF_RECORD \
                and crc == checksum(window[i + ENTRY_FRAME_SIZE:end]):
            return start + i
        if start + i > first + _CHUNK // 2:
            break
    return None


def _torn(out: ZooKeeperData, f: Any, pos: int, why: str) -> None:
    out.findings.append(finding("ZOOKEEPER_LOG_TORN_TAIL", f"{why}: ZooKeeper ends the log before it, as it does "
                                "with an entry that was never acknowledged", file=f, position=pos))


def _log_damage(out: ZooKeeperData, f: Any, pos: int, why: str, stops: bool = True, **facts: Any) -> bool:
    """Damage at ``pos``.  ``stops``: ZooKeeper refuses to load the database there, so the state read is
    incomplete and no later log is applied; else ZooKeeper itself ends this log there and goes on with the next
    (what it loads is what is read here; what it drops is lost to Kafka's controller)."""
    out.findings.append(finding("ZOOKEEPER_LOG_DAMAGED", why, file=f, position=pos, **facts))
    out.incomplete = out.incomplete or stops
    return not stops


def zookeeper_root(spec: Any) -> Any:
    """The path a spec names when it is a ZooKeeper data dir (a dir holding ``version-2/`` with snapshot or log
    files, or that ``version-2`` itself; local, in an archive or remote; or a dir or archive whose only entry is
    such a dir, as ``tar czf zookeeper.tgz zookeeper`` makes); None when it is not one."""
    from .listing import as_path
    from .sources import resolve

    try:
        p = resolve(spec) if isinstance(spec, str) else as_path(spec)
        if version_dir(p) is not None:
            return p
        entries = list(p.iterdir()) if p.is_dir() else []
        only = entries[0] if len(entries) == 1 and entries[0].is_dir() else None
        return only if only is not None and version_dir(only) is not None else None
    except (OSError, ValueError):
        return None


def found_zookeeper_dir(spec: Any) -> bool:
    """Whether an input given as evidence (not named as ZooKeeper's) is a ZooKeeper data dir: asked of local
    directories only, so that telling them apart never indexes an archive or lists a remote store twice (an archive
    or a URI of one is named with ``--zookeeper``)."""
    import os

    local = isinstance(spec, (str, os.PathLike)) and "://" not in str(spec) and os.path.isdir(spec)
    return local and zookeeper_root(spec) is not None
