"""The source of ``records_columns``: the records of many batches decoded, and each row finished, in one pass.

Generated like the rest of the kernels (:mod:`.codegen`, which includes it):
the record table's columns are read off the ``Record`` declaration there and
handed in, so every column number below comes from it.
"""

from __future__ import annotations

#: columns of the per-batch input of ``records_columns``, in order
BATCH_INFO = ("start", "end", "count", "shift", "base_offset", "last_offset_delta", "base_timestamp", "max_timestamp",
              "log_append_time")


def gen_records_columns(rec_cols: tuple[str, ...]) -> str:
    """Source of ``records_columns``: ``records_many`` with what the caller would do row by row done here too.

    Each batch's record positions are shifted (to file positions, or to its
    records section), each record's absolute offset and timestamp computed
    with Java's long arithmetic (base + delta wraps), and each batch's first
    record offset delta outside ``0..lastOffsetDelta`` and first delta not
    above the one before noted (record index, -1 for none): one pass over
    the rows while they are in cache, instead of a numpy pass per column.
    """
    col = {name: i for i, name in enumerate(rec_cols)}
    info = {name: i for i, name in enumerate(BATCH_INFO)}
    L = [
        "def records_columns(buf, info, out, batch_out, abs_out, status_out):",
        "    # info: one row per batch (BATCH_INFO); abs_out: (rows, 2) offset, timestamp; status_out: (batches, 3)",
        "    # decode status, first record outside the batch's deltas, first record not above the one before",
        "    k = 0",
        "    for b in range(info.shape[0]):",
        f"        c = info[b, {info['count']}]",
        "        if c > 0 and k + c > out.shape[0]:",
        "            return b, k",
        f"        n, p, st = records(buf, info[b, {info['start']}], info[b, {info['end']}], c, out[k:])",
        f"        shift = info[b, {info['shift']}]",
        f"        base = info[b, {info['base_offset']}]",
        f"        last = info[b, {info['last_offset_delta']}]",
        f"        bts = info[b, {info['base_timestamp']}]",
        f"        lat = info[b, {info['log_append_time']}] != 0",
        f"        mts = info[b, {info['max_timestamp']}]",
        "        outside = -1",
        "        behind = -1",
        "        prev = 0",
        "        for j in range(n):",
        "            row = out[k + j]",
    ]
    L += [f"            row[{col[name]}] += shift" for name in ("position", "key_pos", "value_pos", "headers_pos")]
    L += [
        f"            d = row[{col['offset_delta']}]",
        "            if outside < 0 and (d < 0 or d > last):",
        "                outside = j",
        "            if behind < 0 and j > 0 and d <= prev:",
        "                behind = j",
        "            prev = d",
        "            batch_out[k + j] = b",
        "            abs_out[k + j, 0] = base + d",
        "            if lat:",
        "                abs_out[k + j, 1] = mts",
        "            else:",
        f"                abs_out[k + j, 1] = bts + row[{col['timestamp_delta']}]",
        "        status_out[b, 0] = st",
        "        status_out[b, 1] = outside",
        "        status_out[b, 2] = behind",
        "        k += n",
        "    return info.shape[0], k",
    ]
    return "\n".join(L) + "\n"
