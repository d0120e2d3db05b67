"""Inputs cost a constant times their size (#22): archives are inflated once, members are indexed compactly.

Counted, not timed: the bytes the gzip reader inflates, and the objects the
archive index keeps, so a slow machine cannot make these pass or fail.
"""

from __future__ import annotations

import gzip
import json
import tarfile
import tracemalloc

from tests.hostile import builders
from tests.hostile.helpers import run


def test_a_padded_archive_stored_in_reverse_order_is_inflated_once(tmp_path, monkeypatch):
    # HEAD: every backward seek re-inflated the stream from its start: 150 MiB of zeros before 30 partitions
    # stored in reverse order took 111 s (here: 16 MiB and 10 partitions, hundreds of MiB inflated).
    archive = builders.padded_reversed_tgz(tmp_path, pad=16 << 20, copies=5)
    with tarfile.open(archive) as tar:
        size = sum(512 + -(-m.size // 512) * 512 for m in tar.getmembers()) + 1024
    inflated = [0]
    real = gzip._GzipReader.read

    def counting(self, n=-1):
        data = real(self, n)
        inflated[0] += len(data)
        return data

    monkeypatch.setattr(gzip._GzipReader, "read", counting)
    r = run("scan", archive, "--format", "json")
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.stdout)
    assert len(doc["partitions"]) == 10
    assert inflated[0] <= 2 * size + (1 << 20), (inflated[0], size)


def test_many_tiny_members_cost_a_compact_index(tmp_path):
    # HEAD: a TarInfo per member (and tarfile's own list of them): 400 000 members took 651 MB.
    from kforensics.log.sources import TarArchive

    archive = builders.many_members_tgz(tmp_path, 50_000)
    tracemalloc.start()
    a = TarArchive(str(archive))
    held, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(a.root.children["kafka-logs"].children["many-0"].children) == 50_000
    assert held < 50_000 * 600, held  # a few hundred bytes a member (names, offsets, the tree's dicts)
    a.close()
