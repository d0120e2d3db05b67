"""The consumer-offsets fold holds one object a group, not several (#22: 1 M groups took 1.5 GB for ``scan --out``).

Counted by what is kept (objects shared, bytes traced), never by time.
"""

from __future__ import annotations

import gc
import tracemalloc

from kforensics.consumers.committed_offsets import TOPIC, coordinator_copies, read_committed_offsets
from tests.hostile import builders

GROUPS = 5000


def test_a_single_copy_keeps_one_object_a_group(tmp_path):
    d = builders.consumer_offsets_dir(tmp_path, GROUPS, per_batch=500)
    copies = list(coordinator_copies({1: [d]}, TOPIC))
    gc.collect()
    tracemalloc.start()
    co = read_committed_offsets(copies)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(co.offsets) == GROUPS
    # the brokers holding each commit: one tuple shared by every commit of the copy (a list each cost 56 bytes)
    assert len({id(c.copies) for c in co.offsets}) == 1 and co.offsets[0].copies == (1,)
    # one topic string for all the groups' commits
    assert len({id(c.topic) for c in co.offsets}) == 1
    # a commit (a slotted object, its group name, its timestamp and log offset) and its slot in the list, plus the
    # reader's buffers (a few MB whatever the number of groups): well under the 600 bytes a group it took
    per_group_budget = 400
    assert held < GROUPS * per_group_budget + (6 << 20), held
