"""Mutations of every file kind: raw damage, and CRC-valid structural changes that reach the deep checks.

Every mutator takes the input bytes and a ``random.Random`` and returns a
:class:`Mutant`: the new bytes, a one-line description (enough to rebuild the
input from the seed) and whether it is *structural* (the framing and CRC were
kept valid on purpose, so a reader's CRC check passes and the deeper
validation is what is exercised).

Structural mutations of a segment pick one entry and change one thing inside
it through :mod:`tests.fuzz.wire`: a header field (sizes, counts, offsets,
attributes, timestamps, producer fields, magic), a record's field (length
prefix, varints, key/value/header lengths, offset deltas, over-long varints),
the record list (drop, duplicate, swap, truncate, append), a control key or
value, the compressed payload, a legacy wrapper's inner messages; then the
entry is re-encoded, recompressed with its codec, and its CRC recomputed.
"""

from __future__ import annotations

import random
import struct
import zlib
from dataclasses import dataclass

import crc32c

from . import wire

INTERESTING = {
    8: [0, 1, -1, 0x7F, -0x80, 0x20, 0x10, 0x08, 0x07, 0x05, 0x04],
    16: [0, 1, -1, 2, 0x7FFF, -0x8000, 6, 3],
    32: [0, 1, -1, -2, 2, 0x7FFFFFFF, -0x80000000, 0x7FFFFFFE, 0xFFFF, 1 << 24, 49, 60, 61, 13, 14, 21, 22],
    64: [0, 1, -1, -2, 2**63 - 1, -(2**63), 2**63 - 2, 2**31, 2**31 - 1, -(2**31), 2**32, 1 << 40],
}


@dataclass
class Mutant:
    data: bytes
    what: str
    structural: bool = False


def interesting(rng: random.Random, bits: int, current: int | None = None) -> int:
    pool = list(INTERESTING[bits])
    if current is not None:
        pool += [current + 1, current - 1, current * 2, -current]
    v = rng.choice(pool) if rng.random() < 0.85 else rng.randrange(2**bits) - 2 ** (bits - 1)
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return v if lo <= v <= hi else (v + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)


# ============================================================================= raw damage (any file)
def raw(data: bytes, rng: random.Random, rounds: int | None = None) -> Mutant:
    b = bytearray(data)
    notes = []
    for _ in range(rounds or rng.choice([1, 1, 1, 2, 3, 6])):
        op = rng.choice(["flip", "byte", "int", "cut", "zeros", "ones", "insert", "insert_zeros", "delete", "dup"])
        at = rng.randrange(len(b)) if b else 0
        if op == "flip" and b:
            b[at] ^= 1 << rng.randrange(8)
        elif op == "byte" and b:
            b[at] = rng.choice([0, 0xFF, 0x7F, 0x80, 0x01, rng.randrange(256)])
        elif op == "int" and len(b) >= 4:
            at = min(at, len(b) - 4)
            struct.pack_into(">i", b, at, interesting(rng, 32))
        elif op == "cut":
            del b[at:]
        elif op == "zeros":
            n = rng.choice([1, 4, 17, 61, 300, 5000])
            b[at : at + n] = bytes(len(b[at : at + n]))
        elif op == "ones":
            n = rng.choice([1, 8, 64, 700])
            b[at : at + n] = b"\xff" * len(b[at : at + n])
        elif op == "insert":
            b[at:at] = rng.randbytes(rng.choice([1, 2, 7, 40]))
        elif op == "insert_zeros":
            b[at:at] = bytes(rng.choice([1, 12, 17, 300]))
        elif op == "delete":
            del b[at : at + rng.choice([1, 3, 12, 100])]
        elif op == "dup" and b:
            n = rng.choice([8, 61, 200])
            b[at:at] = b[at : at + n]
        notes.append(f"{op}@{at}")
    return Mutant(bytes(b), "raw " + " ".join(notes))


# ============================================================================= segments
def segment(data: bytes, rng: random.Random) -> Mutant:
    """A segment (or KRaft snapshot) mutated: raw damage 30%, structural changes 70%."""
    fr = wire.frame(data)
    if not fr.entries or rng.random() < 0.3:
        return raw(data, rng)
    ents = fr.entries
    tail = data[ents[-1].position + ents[-1].size :]
    raws = [e.raw for e in ents]
    op = rng.random()
    if op < 0.08 and len(raws) > 1:
        i, j = rng.sample(range(len(raws)), 2)
        kind = rng.choice(["swap", "dup", "drop", "move"])
        if kind == "swap":
            raws[i], raws[j] = raws[j], raws[i]
        elif kind == "dup":
            raws.insert(j, raws[i])
        elif kind == "drop":
            del raws[i]
        else:
            raws.append(raws.pop(i))
        return Mutant(b"".join(raws) + tail, f"entries {kind} {i},{j}", True)
    i = rng.randrange(len(raws))
    e = ents[i]
    if e.magic == 2:
        new, what, fix_at = mutate_v2(e.raw, rng)
    else:
        new, what, fix_at = mutate_legacy(e.raw, rng)
    raws[i] = new
    out = bytearray(b"".join(raws) + tail)
    if fix_at is not None:  # a size change: the CRC is recomputed over the entry as it is now framed
        _fix_crc_in_file(out, sum(len(r) for r in raws[:i]), fix_at)
    return Mutant(bytes(out), f"entry {i} @{e.position}: {what}", True)


def _fix_crc_in_file(buf: bytearray, pos: int, magic: int) -> None:
    if pos + wire.HEADER_UP_TO_MAGIC > len(buf):
        return
    size = struct.unpack_from(">i", buf, pos + 8)[0]
    end = pos + wire.LOG_OVERHEAD + size
    if size < 0 or end > len(buf):
        return
    if magic == 2 and end >= pos + wire.V2_CRC_FROM:
        struct.pack_into(">I", buf, pos + wire.V2_CRC_AT, crc32c.crc32c(bytes(buf[pos + wire.V2_CRC_FROM : end])))
    elif magic < 2 and end >= pos + 16:
        struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16 : end])))


# ----------------------------------------------------------------------------- v2 batches
V2_MUTABLE = ["base_offset", "partition_leader_epoch", "attributes", "last_offset_delta", "base_timestamp",
              "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "records_count", "magic",
              "batch_length"]
V2_BITS = dict(zip(wire.V2_FIELDS, (64, 32, 32, 8, 32, 16, 32, 64, 64, 64, 16, 32, 32)))


def mutate_v2(raw_entry: bytes, rng: random.Random) -> tuple[bytes, str, int | None]:
    """(new entry, description, magic to fix the CRC for after framing, or None)."""
    h = wire.v2_header(raw_entry)
    section = raw_entry[wire.V2_HEADER_SIZE :]
    codec = h["attributes"] & 7
    r = rng.random()
    if r < 0.35:
        name = rng.choice(V2_MUTABLE)
        if name == "attributes":
            bit = rng.choice(["codec", "control", "txn", "ts", "horizon", "any"])
            a = h["attributes"]
            if bit == "codec":
                a = (a & ~7) | rng.randrange(8)
            elif bit == "control":
                a ^= 0x20
            elif bit == "txn":
                a ^= 0x10
            elif bit == "ts":
                a ^= 0x08
            elif bit == "horizon":
                a ^= 0x40
            else:
                a = interesting(rng, 16, a)
            h["attributes"] = a
            return wire.v2_build(h, section, keep_length=True), f"attributes {a:#x}", None
        value = interesting(rng, V2_BITS[name], h[name])
        if name == "magic":
            value = rng.choice([0, 1, 3, -1, 127, value])
        h[name] = value
        if name == "records_count" and rng.random() < 0.5:
            h[name] = h[name] + rng.choice([-1, 1])
        if name == "batch_length":
            value = rng.choice([h["batch_length"] + rng.choice([-1, 1, -8, 20]), 49, 48, 13, value])
            h[name] = value
            return wire.v2_build(h, section, keep_length=True, fix_crc=False), f"batch_length {value}", 2
        return wire.v2_build(h, section, keep_length=True), f"{name} {h[name]}", None
    if r < 0.45:  # the compressed (or plain) section itself
        sec = bytearray(section)
        what = "section"
        if codec and rng.random() < 0.3:
            plain = _try_decompress(codec, section)
            if plain is not None:
                new_codec = rng.choice([c for c in range(5) if c != codec])
                sec = bytearray(wire.compress(new_codec, plain, 2)) if rng.random() < 0.5 else bytearray(plain)
                h["attributes"] = (h["attributes"] & ~7) | (new_codec if rng.random() < 0.5 else codec)
                what = f"recoded {codec}->{h['attributes'] & 7}"
        else:
            m = raw(bytes(sec), rng, rounds=rng.choice([1, 1, 2]))
            sec, what = bytearray(m.data), f"section {m.what}"
        return wire.v2_build(h, bytes(sec)), what, None
    # records inside (decompressed, re-encoded, recompressed)
    plain = section if not codec else _try_decompress(codec, section)
    if plain is None:
        m = raw(section, rng, rounds=1)
        return wire.v2_build(h, m.data), f"section {m.what}", None
    recs = wire.parse_records(plain)
    if not recs:
        m = raw(plain, rng, rounds=rng.choice([1, 2]))
        body, what = m.data, f"records {m.what}"
    else:
        body, what, count = mutate_records(recs, h, rng)
        if count is not None:
            h["records_count"] = count
    sec = wire.compress(codec, body, 2) if codec else body
    return wire.v2_build(h, sec), what, None


def _try_decompress(codec: int, data: bytes) -> bytes | None:
    try:
        return wire.decompress_java(codec, data, 2)
    except wire.CodecError:
        return None


CONTROL_KEYS = [b"", b"\x00", b"\x00\x00\x00", b"\xff\xff\x00\x00", b"\xff\xff\x00\x01", b"\x00\x00\x00\x07",
                b"\x00\x01\x00\x01", b"\x00\x00\xff\xff", b"\x00\x00\x00\x01\xff", b"\x00\x00\x00\x02"]
CONTROL_VALUES = [b"", b"\x00\x00", b"\x00\x00\x00\x00\x00", b"\xff\xff\x00\x00\x00\x05", b"\x00\x00\x00\x00\x00\x05",
                  b"\x00\x01\xff\xff\xff\xff\x00", b"\x00\x00\x01\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00\x00\x00"]


def mutate_records(recs: list[wire.RecordTokens], h: dict, rng: random.Random
                   ) -> tuple[bytes, str, int | None]:
    """Re-encoded records with one change; the records count to store (None: keep the header's)."""
    op = rng.random()
    n = len(recs)
    i = rng.randrange(n)
    rec = recs[i]
    what = ""
    if op < 0.45:
        ints = [j for j, (_, v) in enumerate(rec.tokens) if not isinstance(v, (bytes, bytearray))]
        j = rng.choice(ints)
        name, cur = rec.tokens[j]
        before = len(rec.body())
        if name == "offset_delta":
            v = rng.choice([-1, h["last_offset_delta"] + 1, 0, cur - 1, 2**31 - 1, -(2**31),
                            recs[i - 1].tokens[2][1] if i else cur + 1])
        elif name == "timestamp_delta":
            v = interesting(rng, 64, cur)
        elif name == "attributes":
            v = rng.choice([1, 0xFF, 0x80])
        else:
            v = rng.choice([-1, -2, -(2**31), 2**31 - 1, cur + 1, cur - 1, 0, 1 << 20])
        rec.tokens[j][1] = v if rng.random() < 0.9 else (cur, rng.randint(1, 6))  # or an over-long encoding
        # a consistent length prefix half the time; otherwise the old one, which now lies
        rec.length = None if rng.random() < 0.5 else before
        what = f"record {i} {name} {rec.tokens[j][1]} length {rec.length}"
    elif op < 0.55:
        cur = len(rec.body())
        rec.length = rng.choice([cur + 1, cur - 1, -1, 0, 2**31 - 1, (cur, 5)])
        what = f"record {i} length {rec.length}"
    elif op < 0.7:
        j = next((k for k, t in enumerate(rec.tokens) if t[0] == "key"), None)
        kv = next((k for k, t in enumerate(rec.tokens) if t[0] == "value"), None)
        key = rng.choice(CONTROL_KEYS)
        value = rng.choice(CONTROL_VALUES)
        toks = [t for t in rec.tokens if t[0] not in ("key_length", "key", "value_length", "value")]
        head, rest = toks[:3], toks[3:]
        new = head + [["key_length", len(key)], ["key", key], ["value_length", len(value)], ["value", value]] + rest
        if rng.random() < 0.2:
            new = head + [["key_length", -1], ["value_length", len(value)], ["value", value]] + rest
        if rng.random() < 0.2:
            new = head + [["key_length", len(key)], ["key", key], ["value_length", -1]] + rest
        rec.tokens = new
        rec.length = None
        what = f"record {i} control key {key.hex()} value {value.hex()} (was {j},{kv})"
    elif op < 0.85:
        kind = rng.choice(["drop", "dup", "swap", "reverse", "headers"])
        if kind == "drop" and n > 1:
            del recs[i]
        elif kind == "dup":
            recs.insert(i, wire.RecordTokens([list(t) for t in rec.tokens], rec.length))
        elif kind == "swap" and n > 1:
            j = rng.randrange(n)
            recs[i], recs[j] = recs[j], recs[i]
        elif kind == "reverse":
            recs.reverse()
        else:
            hc = next(k for k, t in enumerate(rec.tokens) if t[0] == "header_count")
            extra = rng.choice([[["header_key_length", -1], ["header_value_length", 0]],
                                [["header_key_length", 3], ["header_key", b"abc"], ["header_value_length", -5]],
                                [["header_key_length", 200]]])
            rec.tokens[hc][1] += 1
            rec.tokens[hc + 1 : hc + 1] = extra
            rec.length = None
        what = f"records {kind} {i}"
    else:
        body = b"".join(r.encode() for r in recs)
        kind = rng.choice(["truncate", "append", "zeros", "garbage"])
        if kind == "truncate":
            body = body[: rng.randrange(len(body) + 1)]
        elif kind == "append":
            body += rng.choice([b"\x00", b"\x02\x00", recs[-1].encode(), rng.randbytes(5)])
        elif kind == "zeros":
            body = body + bytes(rng.choice([1, 10]))
        else:
            at = rng.randrange(len(body) + 1)
            body = body[:at] + rng.randbytes(rng.choice([1, 3])) + body[at:]
        return body, f"records body {kind}", (len(recs) if rng.random() < 0.3 else None)
    body = b"".join(r.encode() for r in recs)
    return body, what, (len(recs) if rng.random() < 0.5 else None)


# ----------------------------------------------------------------------------- legacy messages
def mutate_legacy(raw_entry: bytes, rng: random.Random) -> tuple[bytes, str, int | None]:
    f = wire.legacy_fields(raw_entry)
    if f is None:
        m = raw(raw_entry[16:], rng, rounds=1)
        return raw_entry[:16] + m.data, f"legacy raw {m.what}", 1
    magic = f["magic"]
    codec = f["attributes"] & 7
    r = rng.random()
    kw = dict(offset=f["offset"], magic=magic, attributes=f["attributes"], key=f["key"], value=f["value"],
              timestamp=f["timestamp"], trailing=f["trailing"])
    if r < 0.4:
        name = rng.choice(["offset", "attributes", "timestamp", "key_length", "value_length", "size", "magic",
                           "trailing"])
        if name == "offset":
            kw["offset"] = interesting(rng, 64, f["offset"])
        elif name == "attributes":
            kw["attributes"] = rng.choice([(f["attributes"] & ~7) | rng.randrange(8), f["attributes"] ^ 0x08,
                                           interesting(rng, 8)])
        elif name == "timestamp" and magic == 1:
            kw["timestamp"] = interesting(rng, 64, f["timestamp"])
        elif name in ("key_length", "value_length"):
            cur = f[name]
            length = len(raw_entry)
            kw[name] = rng.choice([-1, -2, cur + 1, cur - 1, 2**31 - 1, -(2**31), length, 0])
        elif name == "size":
            size = struct.unpack_from(">i", raw_entry, 8)[0]
            kw["size"] = rng.choice([size - 1, size + 1, 14, 13, 21, 22, interesting(rng, 32, size)])
            return wire.legacy_build(**kw, fix_crc=False), f"size {kw['size']}", 1
        elif name == "magic":
            kw["magic"] = 1 - magic if magic in (0, 1) else 0
            if kw["magic"] == 1 and kw["timestamp"] is None:
                kw["timestamp"] = -1
            if rng.random() < 0.5:  # the bytes stay, only the magic byte changes: fields shift
                b = bytearray(raw_entry)
                b[16] = rng.choice([1 - magic, 2, 3, 0xFF])
                b[12:16] = struct.pack(">I", zlib.crc32(bytes(b[16:])))
                return bytes(b), f"magic byte {b[16]}", None
        else:
            kw["trailing"] = f["trailing"] + rng.choice([b"\x00", b"junk", bytes(8)])
        return wire.legacy_build(**kw), f"{name} {kw.get(name)}", None
    if codec == 0 or f["value"] is None or codec > 3:
        m = raw(raw_entry[16:], rng, rounds=1)
        b = bytearray(raw_entry[:16] + m.data)
        return bytes(b), f"legacy body {m.what}", 1
    try:
        inner = wire.decompress_java(codec, f["value"], magic)
    except wire.CodecError:
        inner = None
    if inner is None or r < 0.5:
        m = raw(f["value"], rng, rounds=1)
        kw["value"] = m.data
        return wire.legacy_build(**kw), f"wrapper payload {m.what}", None
    msgs = _inner_messages(inner)
    what = "inner"
    if not msgs or rng.random() < 0.15:
        m = raw(inner, rng, rounds=1)
        new_inner = m.data
        what = f"inner raw {m.what}"
    else:
        j = rng.randrange(len(msgs))
        g = wire.legacy_fields(msgs[j])
        op = rng.choice(["offset", "crc", "magic", "codec", "key_length", "drop", "dup", "swap", "partial", "empty",
                         "size", "timestamp"])
        if op in ("drop", "dup", "swap", "partial", "empty") or g is None:
            if op == "drop":
                del msgs[j]
            elif op == "dup":
                msgs.insert(j, msgs[j])
            elif op == "swap" and len(msgs) > 1:
                k = rng.randrange(len(msgs))
                msgs[j], msgs[k] = msgs[k], msgs[j]
            elif op == "partial":
                msgs.append(msgs[j][: rng.randrange(1, len(msgs[j]))])
            elif op == "empty":
                msgs = []
        else:
            ikw = dict(offset=g["offset"], magic=g["magic"], attributes=g["attributes"], key=g["key"],
                       value=g["value"], timestamp=g["timestamp"], trailing=g["trailing"])
            fix = True
            if op == "offset":
                ikw["offset"] = rng.choice([-1, g["offset"] + 100, g["offset"] - 1, 0, 2**63 - 1,
                                            struct.unpack_from(">q", msgs[j - 1])[0] if j else -5])
            elif op == "crc":
                fix = False
            elif op == "magic":
                ikw["magic"] = 1 - g["magic"]
                if ikw["magic"] == 1:
                    ikw["timestamp"] = 5
            elif op == "codec":
                ikw["attributes"] = rng.randrange(1, 8)
            elif op == "key_length":
                ikw["key_length"] = rng.choice([-2, 100, 2**31 - 1])
            elif op == "size":
                ikw["size"] = rng.choice([13, 200, 4])
            elif op == "timestamp" and g["magic"] == 1:
                ikw["timestamp"] = interesting(rng, 64)
            msgs[j] = wire.legacy_build(**ikw, fix_crc=fix, crc=g["crc"] ^ 1)
        new_inner = b"".join(msgs)
        what = f"inner {op} {j}"
    kw["value"] = wire.compress(codec, new_inner, magic)
    if rng.random() < 0.3 and magic == 1:
        kw["offset"] = rng.choice([0, kw["offset"] - 1, kw["offset"] + 5])
        what += f" wrapper offset {kw['offset']}"
    return wire.legacy_build(**kw), what, None


def _inner_messages(inner: bytes) -> list[bytes]:
    out, p = [], 0
    while len(inner) - p >= wire.LOG_OVERHEAD:
        size = struct.unpack_from(">i", inner, p + 8)[0]
        if size < wire.RECORD_OVERHEAD_V0 or p + wire.LOG_OVERHEAD + size > len(inner):
            break
        out.append(inner[p : p + wire.LOG_OVERHEAD + size])
        p += wire.LOG_OVERHEAD + size
    return out


# ============================================================================= text files
NUMBER_TOKENS = ["2_4", "9223372036854775808", "-9223372036854775809", "9223372036854775807", "2147483648",
                 "-2147483649", "2147483647", "+1", "-0", " 1", "1 ", "\uff11", "\u0663", "0x10", "1e3", "", "\t",
                 "NaN", "null", "1" * 30, "0" * 25 + "7", "9" * 5000, "-", "+", "\u00a01", "1.0", "٣٢", "\U0001d7cf"]
JSON_VALUES = ["[" * 100 + "]" * 100, "[" * 5000, "9" * 100_000, "1e999", "-0", "1.5", "true", "null", '"x"',
               "{}", "[]", '{"a":' * 40 + "1" + "}" * 40, "18446744073709551616", "-9223372036854775809",
               "NaN", "Infinity", '"\\ud800"', "2147483648"]


def text(data: bytes, rng: random.Random, json_like: bool = False) -> Mutant:
    """Line and token level damage to a text file (checkpoints, properties, JSON)."""
    if rng.random() < 0.15:
        return raw(data, rng)
    s = data.decode("utf-8", errors="surrogateescape")
    lines = s.split("\n")
    op = rng.random()
    if json_like and op < 0.5:
        import re

        spans = [m.span() for m in re.finditer(r'-?\d+|"[^"]*"|true|false|null|\[|\{', s)]
        if spans:
            a, b = rng.choice(spans)
            v = rng.choice(JSON_VALUES + NUMBER_TOKENS)
            s = s[:a] + v + s[b:]
            return Mutant(s.encode("utf-8", errors="surrogateescape"), f"json value {v[:20]!r}@{a}")
    if op < 0.55:
        j = rng.randrange(len(lines))
        toks = lines[j].split(" ")
        k = rng.randrange(len(toks))
        toks[k] = rng.choice(NUMBER_TOKENS) if rng.random() < 0.8 else toks[k] + rng.choice(NUMBER_TOKENS)
        lines[j] = " ".join(toks)
        what = f"line {j + 1} token {k} {toks[k][:20]!r}"
    elif op < 0.7:
        j = rng.randrange(len(lines) + 1)
        extra = rng.choice(["", " ", "x", "t 0", "t 0 5 6", "0 0", "junk line", "a\x00b", "\ufeff0", "t 1 2"])
        lines.insert(j, extra)
        what = f"insert line {j + 1} {extra!r}"
    elif op < 0.8 and len(lines) > 1:
        j = rng.randrange(len(lines))
        if rng.random() < 0.5:
            del lines[j]
            what = f"delete line {j + 1}"
        else:
            lines.insert(j, lines[j])
            what = f"duplicate line {j + 1}"
    elif op < 0.88:
        sep = rng.choice(["\r\n", "\r", "\n\n", "\t", "  "])
        what = f"line ends {sep!r}"
        return Mutant(sep.join(lines).encode("utf-8", errors="surrogateescape"), what)
    else:
        b = bytearray("\n".join(lines).encode("utf-8", errors="surrogateescape"))
        at = rng.randrange(len(b) + 1)
        junk = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x00", b"\xe2\x82"])
        b[at:at] = junk
        return Mutant(bytes(b), f"bytes {junk.hex()}@{at}")
    return Mutant("\n".join(lines).encode("utf-8", errors="surrogateescape"), what)


# ============================================================================= binary side files
ENTRY_LAYOUT = {
    "offset_index": (8, [(0, 32), (4, 32)]),
    "time_index": (12, [(0, 64), (8, 32)]),
    "txn_index": (34, [(0, 16), (2, 64), (10, 64), (18, 64), (26, 64)]),
    "producer_snapshot": (46, [(0, 64), (8, 16), (10, 32), (14, 64), (22, 32), (26, 64), (34, 32), (38, 64)]),
}


def binary(data: bytes, kind: str, rng: random.Random) -> Mutant:
    """Field-level damage to fixed-entry files; a producer snapshot's CRC is recomputed half the time."""
    size, fields = ENTRY_LAYOUT[kind]
    head = 10 if kind == "producer_snapshot" else 0
    b = bytearray(data)
    op = rng.random()
    n = (len(b) - head) // size
    if op < 0.2 or n == 0:
        m = raw(data, rng)
        b, what = bytearray(m.data), m.what
    elif op < 0.65:
        i = rng.randrange(n)
        off, bits = rng.choice(fields)
        at = head + i * size + off
        fmt = {16: ">h", 32: ">i", 64: ">q"}[bits]
        cur = struct.unpack_from(fmt, b, at)[0]
        v = interesting(rng, bits, cur)
        struct.pack_into(fmt, b, at, v)
        what = f"entry {i} field@{off} {v}"
    elif op < 0.8:
        kind_op = rng.choice(["dup", "swap", "drop", "partial", "ff_tail", "zero_tail"])
        ents = [bytes(b[head + i * size : head + (i + 1) * size]) for i in range(n)]
        rest = bytes(b[head + n * size :])
        i = rng.randrange(n)
        if kind_op == "dup":
            ents.insert(i, ents[i])
        elif kind_op == "swap":
            j = rng.randrange(n)
            ents[i], ents[j] = ents[j], ents[i]
        elif kind_op == "drop":
            del ents[i]
        elif kind_op == "partial":
            rest += ents[i][: rng.randrange(1, size)]
        elif kind_op == "ff_tail":
            rest += b"\xff" * size * rng.choice([1, 3, 100])
        else:
            rest += bytes(size * rng.choice([1, 5]))
        b = bytearray(bytes(b[:head]) + b"".join(ents) + rest)
        what = f"entries {kind_op} {i}"
    else:
        if kind == "producer_snapshot" and len(b) >= 10:
            field = rng.choice([(0, ">h", 16), (6, ">i", 32)])
            struct.pack_into(field[1], b, field[0], interesting(rng, field[2]))
            what = f"header@{field[0]}"
        else:
            m = raw(data, rng, rounds=1)
            b, what = bytearray(m.data), m.what
    structural = False
    if kind == "producer_snapshot" and len(b) >= 10 and rng.random() < 0.5:
        struct.pack_into(">I", b, 2, crc32c.crc32c(bytes(b[6:])))
        structural = True
        what += " (crc fixed)"
    return Mutant(bytes(b), what, structural)


# ============================================================================= internal-topic records
def record_part(part: bytes | None, rng: random.Random) -> tuple[bytes | None, str]:
    if part is None:
        return (rng.randbytes(rng.randint(0, 6)), "from null") if rng.random() < 0.5 else (None, "null")
    r = rng.random()
    if r < 0.15:
        return None, "nulled"
    if r < 0.35 and len(part) >= 2:
        return struct.pack(">h", interesting(rng, 16)) + part[2:], "type/version"
    if r < 0.55 and len(part) > 2:
        b = bytearray(part)
        at = rng.randrange(2, len(b))
        b[at] = rng.choice([0xFF, 0x80, 0x00, 0x7F, 0xFE])
        return bytes(b), f"byte@{at}"
    m = raw(part, rng, rounds=rng.choice([1, 2]))
    return m.data, m.what
