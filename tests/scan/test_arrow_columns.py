"""The scan tables' columns built from Arrow buffers (issue 26) against ``pa.array`` of the same values.

``scan --out`` builds its tables without ``pa.array`` (which imports pandas); each column must be the one
``pa.array`` builds, nulls, extremes, non-ASCII text and lists included, and the tables the same.
"""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from kforensics.tables.arrow_columns import bools, column, ints
from kforensics.tables.schemas import SCHEMAS, fit, fit_column, table

INT_TYPES = [pa.int8(), pa.int32(), pa.int64()]


def _values(typ: pa.DataType, rnd: random.Random, n: int) -> list:
    if pa.types.is_integer(typ):
        half = {8: 2**7, 32: 2**31, 64: 2**63}[typ.bit_width]
        pool = [None, 0, -1, 1, half - 1, -half, rnd.randrange(-half, half)]
    elif pa.types.is_boolean(typ):
        pool = [None, True, False]
    elif pa.types.is_string(typ):
        pool = [None, "", "orders-0", "é€𝄞", "x" * 300, "\udcff-undecodable"]
    else:
        pool = [None, [], [1, None, 2**62], [-(2**31)], [0] * 40]
    return [rnd.choice(pool) for _ in range(n)]


@pytest.mark.parametrize("typ", INT_TYPES + [pa.bool_(), pa.string(), pa.list_(pa.int64()), pa.list_(pa.int32())])
@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_a_column_is_what_pa_array_builds(typ, n):
    rnd = random.Random(f"{typ}{n}")
    values = [fit(v, typ) for v in _values(typ, rnd, n)]
    built = column(values, typ)
    expected = pa.array(values, typ)
    built.validate(full=True)
    assert built.type == typ and built.equals(expected)
    assert built.null_count == expected.null_count


@pytest.mark.parametrize("typ", INT_TYPES + [pa.string(), pa.list_(pa.int32()), pa.bool_()])
def test_fit_column_is_fit_of_each_value(typ):
    rnd = random.Random(str(typ))
    values = _values(typ, rnd, 500)
    if not pa.types.is_list(typ):
        values += [True, 3.5, "7", b"x", np.int64(5)]
    assert fit_column(values, typ) == [fit(v, typ) for v in values]


def test_numpy_columns_are_pa_array_of_them():
    rnd = np.random.default_rng(7)
    data = rnd.integers(-(2**62), 2**62, 1000)
    valid = rnd.random(1000) > 0.2
    assert ints(data).equals(pa.array(data))
    assert ints(data, pa.int64(), valid).equals(pa.array(data, mask=~valid))
    assert ints(data.astype(np.int32), pa.int32()).equals(pa.array(data.astype(np.int32)))
    flags = data % 3 == 0
    assert bools(flags).equals(pa.array(flags))
    assert bools(flags, valid).equals(pa.array(flags, mask=~valid))


def test_a_report_table_is_the_one_pa_array_builds():
    rnd = random.Random(3)
    for name in ("partitions", "segments", "findings", "files", "epochs"):
        schema = SCHEMAS[name]
        rows = [{f.name: _values(f.type, rnd, 1)[0] for f in schema} for _ in range(50)]
        expected = pa.Table.from_arrays([pa.array([fit(r[f.name], f.type) for r in rows], f.type) for f in schema],
                                        schema=schema)
        assert table(name, rows).equals(expected), name


def test_scan_tables_are_built_without_pandas(tmp_path):
    """The point of building from buffers: a ``scan --out`` process never imports pandas."""
    from tests.conftest import ROOT

    code = ("import sys\nfrom kforensics.scan.broker import scan_log_dirs\n"
            "from kforensics.tables.scan_tables import ScanParquet\n"
            f"out = ScanParquet({str(tmp_path / 'out')!r})\n"
            f"out.finish(scan_log_dirs([{str(ROOT / 'fixtures' / 'brokers' / 'damaged')!r}], batch_sink=out.batches))\n"
            "print('pandas' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "False"
