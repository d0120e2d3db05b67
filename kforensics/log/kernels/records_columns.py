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
    L += _finish_rows(col, "shift")
    L += [
        "        status_out[b, 0] = st",
        "        status_out[b, 1] = outside",
        "        status_out[b, 2] = behind",
        "        k += n",
        "    return info.shape[0], k",
    ]
    return "\n".join(L) + "\n"


def gen_records_plain(rec_cols: tuple[str, ...], batch_cols: dict[str, int], header_size: int, magic: int,
                      codec_mask: int, timestamp_type_bit: int, min_record_size: int, ok: int, too_few: int) -> str:
    """Source of ``records_plain``: ``records_columns`` for the uncompressed v2 batches of a chunk, reading the
    batch table itself (no per-batch input built column by column in numpy).

    ``records_plain(buf, bt, file_pos, held_end, rows_cap, room, out, batch_out, abs_out, status_out, j0)`` walks the
    batch table ``bt`` from row ``j0``, decodes every v2 batch without compression whose bytes ``buf`` holds
    (``buf[0]`` is file position ``file_pos``, ``held_end`` the file position past the bytes held), bounds each
    batch's rows by its bytes (one more than fit is asked for when it claims more: reported as too few), and
    returns ``(next row, rows written, batches with something to report, stop, compressed batches held)``;
    stop 0: the table is done, 1: row ``next`` has more records than ``rows_cap`` (the caller decodes it
    alone), 2: the rows would pass ``room`` (or the first batch's rows, when more) before row ``next``.
    ``status_out`` rows of batches not decoded here are -1.
    """
    col = {name: i for i, name in enumerate(rec_cols)}
    b = batch_cols
    L = [
        "def records_plain(buf, bt, file_pos, held_end, rows_cap, room, out, batch_out, abs_out, status_out, j0):",
        "    k = 0",
        "    lim = -1",
        "    bad = 0",
        "    packed = 0",
        "    for b in range(j0, bt.shape[0]):",
        "        status_out[b, 0] = -1",
        "        status_out[b, 1] = -1",
        "        status_out[b, 2] = -1",
        f"        pos = bt[b, {b['position']}]",
        f"        size = bt[b, {b['size_in_bytes']}]",
        f"        if bt[b, {b['magic']}] != {magic} or pos < file_pos or pos + size > held_end:",
        "            continue",
        f"        if bt[b, {b['attributes']}] & {codec_mask} != 0:",
        "            packed += 1",
        "            continue",
        f"        start = pos - file_pos + {header_size}",
        "        end = pos - file_pos + size",
        f"        counts = bt[b, {b['records_count']}]",
        f"        fit = min(max(counts, 0), (end - start) // {min_record_size} + 1)",
        "        cnt = fit + 1 if counts > fit else counts",
        "        c = min(cnt, fit)",
        "        if fit > rows_cap:",
        "            return b, k, bad, 1, packed",
        "        if lim < 0:",
        "            lim = max(room, fit, 1)  # the first batch always fits",
        "        if c > 0 and k + c > lim:",
        "            return b, k, bad, 2, packed",
        "        n, p, st = records(buf, start, end, c, out[k:])",
        f"        base = bt[b, {b['base_offset']}]",
        f"        last = bt[b, {b['last_offset']}] - base",
        f"        bts = bt[b, {b['base_timestamp']}]",
        f"        lat = bt[b, {b['attributes']}] & {timestamp_type_bit} != 0",
        f"        mts = bt[b, {b['max_timestamp']}]",
        "        outside = -1",
        "        behind = -1",
        "        prev = 0",
        "        for j in range(n):",
        "            row = out[k + j]",
    ]
    L += _finish_rows(col, "file_pos")
    L += [
        f"        if cnt > fit and st == {ok}:",
        f"            st = {too_few}",
        "        status_out[b, 0] = st",
        "        status_out[b, 1] = outside",
        "        status_out[b, 2] = behind",
        f"        if st != {ok} or outside >= 0 or behind >= 0:",
        "            bad += 1",
        "        k += n",
        "    return bt.shape[0], k, bad, 0, packed",
    ]
    return "\n".join(L) + "\n"


def _finish_rows(col: dict[str, int], shift: str) -> list[str]:
    """Lines finishing a batch's ``n`` rows at ``out[k:]``: positions shifted by ``shift``, each row's batch,
    offset and timestamp, and the first delta outside the batch and first not increasing noted."""
    L = [f"            row[{col[name]}] += {shift}" for name in ("position", "key_pos", "value_pos", "headers_pos")]
    return L + [
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
    ]
