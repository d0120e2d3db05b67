"""Deep decoding of real broker data: every record, and kafkalite's own expected decoded values."""

from __future__ import annotations

import glob
import re

import pytest

from tests.conftest import deep_entry, REALDATA, need_shared
from kforensics.log.segment_reader import SegmentReader

KAFKALITE = REALDATA / "asayers__kafkalite__1b639b2" / "tests" / "test-data"


def _rust_unescape(s: str) -> str:
    # the golden files are Rust Debug-formatted strings
    def sub(m):
        esc = m.group(1)
        if esc.startswith("u{"):
            return chr(int(esc[2:-1], 16))
        return {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}[esc]

    return re.sub(r"\\(u\{[0-9a-fA-F]+\}|.)", sub, s)


@pytest.mark.parametrize("topic", ["hamlet-gzip-0", "hamlet-none-0", "hamlet-snappy-0", "numbers-0"])
def test_kafkalite_v0_partitions_decode_to_the_expected_values(topic):
    need_shared(KAFKALITE)
    expected = []
    for line in (KAFKALITE / "golden" / topic).read_text(encoding="utf-8").splitlines():
        m = re.match(r'^(\d+): "(.*)"$', line)
        expected.append((int(m.group(1)), _rust_unescape(m.group(2))))
    got = []
    for seg in sorted((KAFKALITE / "fs-data" / topic).glob("*.log")):
        for b in SegmentReader(seg).batches():
            for r in deep_entry(b, with_data=True)["records"]:
                got.append((r["offset"], r["value"].decode("utf-8")))
    assert got == expected


def test_every_real_record_decodes_without_errors():
    need_shared(REALDATA)
    files = [p for p in glob.glob(str(REALDATA / "**" / "*"), recursive=True)
             if p.endswith((".log", ".checkpoint", ".bin")) and not p.endswith("-checkpoint")]
    records = 0
    for p in files:
        r = SegmentReader(p)
        for b in r.batches():
            d = deep_entry(b)
            assert d["records_error"] is None, (p, b.position, d["records_error"])
            assert d["is_valid"], (p, b.position)
            records += len(d["records"])
    assert records > 100_000
