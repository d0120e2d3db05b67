"""What an archive member and a consumer group cost once indexed (#22: 400 000 members and 1 M groups took more
than the 300 MB and 500 MB bounds).

Counted by the bytes the index keeps (tracemalloc), never by time: an archive
member held an object, a name and three integers (about 470 bytes), a group a
slotted object, a key tuple and integer objects (about 300 bytes).
"""

from __future__ import annotations

import gc
import io
import tarfile
import tracemalloc

from kforensics.consumers.committed_offsets import TOPIC, coordinator_copies, read_committed_offsets
from kforensics.log.sources import TarArchive, TarPath
from tests.hostile import builders

MEMBERS = 20_000
GROUPS = 5_000


def test_an_archive_member_is_a_few_machine_words(tmp_path):
    path = tmp_path / "members.tar"
    with tarfile.open(path, "w") as tar:
        for i in range(MEMBERS):
            info = tarfile.TarInfo(f"kafka-logs/many-0/{1000 + i:020d}.index")
            info.mtime = 1_700_000_000
            tar.addfile(info, io.BytesIO(b""))
        info = tarfile.TarInfo("./kafka-logs/many-0/00000000000000000000.log")  # a name the tree does not spell
        info.size = 5
        tar.addfile(info, io.BytesIO(b"hello"))
    gc.collect()
    tracemalloc.start()
    archive = TarArchive(str(path))
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    try:
        # the member's name in its directory (about 80 bytes), its slot there and three integers: ~250 bytes
        assert held < MEMBERS * 320, held / MEMBERS
        root = TarPath(archive)
        seg = root / "kafka-logs" / "many-0" / "00000000000000000000.log"
        assert seg.is_file() and seg.stat().st_size == 5
        with seg.open_binary() as fh:
            assert fh.read() == b"hello"
        assert archive.entry(seg.parts).name == "./kafka-logs/many-0/00000000000000000000.log"
        assert len(list((root / "kafka-logs" / "many-0").iterdir())) == MEMBERS + 1
    finally:
        archive.close()


def test_a_consumer_group_is_a_row_of_columns(tmp_path):
    d = builders.consumer_offsets_dir(tmp_path, GROUPS, per_batch=500)
    copies = list(coordinator_copies({1: [d]}, TOPIC))
    gc.collect()
    tracemalloc.start()
    co = read_committed_offsets(copies)
    snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, "*/kforensics/consumers/*")])
    tracemalloc.stop()
    held = sum(s.size for s in snap.statistics("filename"))
    # a key (~70 bytes), its slot and row number, and a row of columns: ~230 bytes
    assert held < GROUPS * 260, held / GROUPS
    assert len(co.offsets) == GROUPS
    first, last = co.offsets[0], co.offsets[-1]
    assert (first.group, first.topic, first.partition, first.offset) == ("group-00000000", "orders", 0, 5)
    assert last.group == f"group-{GROUPS - 1:08d}" and last.copies == (1,) and last.leader_epoch == 0


def test_group_keys_sort_and_select_as_the_tuples_do():
    from kforensics.consumers.committed_offsets import CommittedOffset
    from kforensics.consumers.offset_store import OffsetStore, OffsetView, key_bytes, key_of

    keys = [("g", "t", 0), ("g", "t", 1), ("g\x00", "t", 0), ("g", "t\x00", 0), ("ga", "t", -5), ("", "", 2**31 - 1),
            ("\udc80x", "t", 0), ("g", "tt", 0), ("g", "", 0), ("g", "t", -(2**31))]
    store = OffsetStore()
    for g, t, p in keys:
        assert key_of(key_bytes(g, t, p)) == (g, t, p)
        store.put(key_bytes(g, t, p), CommittedOffset(g, t, p, 1, None, "", 0))
    view = OffsetView(store)
    assert [c.key for c in view] == sorted(keys)  # as a list of CommittedOffset sorted by key was
    for _, t, p in keys:
        assert [c.key for c in view.for_partition(t, p)] == sorted(k for k in keys if (k[1], k[2]) == (t, p))
