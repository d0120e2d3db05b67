"""``fit_rows`` (the Spark scan tasks' rows, a partition dir at a time) fits each value as :func:`fit` does, column
by column: every table, rows with in-range, out-of-range and odd values, missing columns, undecodable names."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kforensics.tables.schemas import SCHEMAS, fit, fit_rows, fit_values

ODD = {pa.types.is_integer: [0, -1, 2 ** 31, 2 ** 63, True, 1.5, "7", None],
       pa.types.is_string: ["a", "é", "t\udcff", 5, None, b"x"],
       pa.types.is_list: [[1, 2], [2 ** 70], ["a"], [], None],
       pa.types.is_boolean: [True, False, None]}


def _values(typ: pa.DataType) -> list:
    for test, values in ODD.items():
        if test(typ):
            return values
    return [None, 1, "x"]


@pytest.mark.parametrize("n", [1, 4, 5, 12], ids=lambda n: f"{n}-rows")  # a value or a column at a time
@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_fit_rows_fits_each_value_as_fit_does(name, n):
    fields = list(SCHEMAS[name])
    rows = [{f.name: _values(f.type)[(i + j) % len(_values(f.type))] for j, f in enumerate(fields) if (i + j) % 5}
            for i in range(n)]
    want = [{f.name: fit(r.get(f.name), f.type) for f in fields} for r in rows]
    got = fit_rows(name, rows)
    assert got == want
    assert [list(r) for r in got] == [[f.name for f in fields]] * len(rows)  # every column, in order
    assert fit_rows(name, []) == []


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_fit_values_fits_the_columns_asked_as_fit_does(name):
    fields = list(SCHEMAS[name])
    row = {f.name: _values(f.type)[j % len(_values(f.type))] for j, f in enumerate(fields)}
    asked = [f.name for f in fields][::2]
    want = {f.name: fit(row[f.name], f.type) for f in fields if f.name in asked}
    assert fit_values(name, row, asked) == want
    assert list(fit_values(name, row, asked)) == asked
