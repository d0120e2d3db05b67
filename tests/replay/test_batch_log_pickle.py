"""A replica's batch columns survive pickling (the Spark job moves small replicas between its stages): the same
values, still int64, one contiguous writable column after another, whatever slice of a log was pickled."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from kforensics.replay.replica import COLUMNS, BatchLog


def _log(n: int) -> BatchLog:
    rng = np.random.default_rng(n)
    return BatchLog.from_rows(rng.integers(-1, 1 << 40, size=(n, len(COLUMNS))).tolist())


@pytest.mark.parametrize("view", ["whole", "empty", "one", "every_other", "tail", "c_order"])
def test_a_batch_log_comes_back_from_pickling_as_it_was(view):
    log = _log(37)
    data = {"whole": log.data, "empty": log.data[:0], "one": log.data[5:6], "every_other": log.data[::2],
            "tail": log.data[30:], "c_order": np.ascontiguousarray(log.data)}[view]
    before = BatchLog(data)
    after = pickle.loads(pickle.dumps(before, protocol=pickle.HIGHEST_PROTOCOL))
    assert after.data.shape == before.data.shape == (len(data), len(COLUMNS))
    assert after.data.dtype == np.int64 and np.array_equal(after.data, before.data)
    assert after.data.flags.writeable and (len(after) <= 1 or after.data.flags.f_contiguous)
    after.data[:, 0] += 1  # its own memory: the pickled log is untouched
    assert np.array_equal(before.data, data)
